r"""Sympy derivations for the losses that read rows of ``A V``: T5 (reconstruction) and X4 (one token).

T5: ``L_rec(S) = sum_{i masked} l_i(y_i)``, ``Y = A V``, one undefined sympy ``Function`` ``l_i`` per
masked row and ``R_ij = g_i^T v_j``; X4: ``L_row(S) = l(y_r)``, row ``r`` of ``A V`` (CLS or last token),
``beta_j = grad l(y_r)^T v_j``.  And, for general ``n`` (symbolic sums with ``KroneckerDelta``), the
softmax backward at uniform attention that T2, T5 and X4 share.  The machinery is
:mod:`~spt_theory.theory.symbolic_base`, the closed forms :mod:`~spt_theory.theory.gradients` and
:mod:`~spt_theory.theory.readout`; :func:`~spt_theory.theory.symbolic.verify_lemma` runs these
functions.  The setting is the lemmas' own, rows of
``A V`` fed straight into the losses (``proofs/README.md``, Scope).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import sympy as sp

from spt_theory.theory.symbolic_base import (
    GradientSymbols,
    constant_rows,
    expand_entries,
    pooled,
    softmax_rows,
    symbol_matrix,
)


def uniform_rec_score_gradient(n: int, d: int, masked: Sequence[int]) -> tuple[sp.Matrix, sp.Matrix]:
    r"""``dL_rec/dS`` derived by sympy at constant rows, and ``R_ij = g_i^T v_j`` (0 for unmasked ``i``).

    ``L_rec = sum_{i in masked} l_i(y_i)`` with one undefined function ``l_i`` per masked row;
    ``g_i = grad l_i`` at the uniform-attention output ``y_i = (1/n) V^T 1``.

    Parameters
    ----------
    n, d : int
        Tokens and value width.
    masked : sequence of int
        The reconstructed rows.

    Returns
    -------
    derived : sympy.Matrix [n, n]
        ``dL_rec/dS``, expanded.
    R : sympy.Matrix [n, n]
        ``R_ij = g_i^T v_j``.

    References
    ----------
    proofs/T5_reconstruction_sees_proximity.md.

    Examples
    --------
    >>> derived, R = uniform_rec_score_gradient(2, 1, [0])
    >>> derived.tolist()
    [[D0_l0[0]*v_00/4 - D0_l0[0]*v_10/4, -D0_l0[0]*v_00/4 + D0_l0[0]*v_10/4], [0, 0]]
    """
    S, V = symbol_matrix("s", n, n), symbol_matrix("v", n, d)
    Y = softmax_rows(S) * V
    losses = {i: sp.Function(f"l{i}") for i in masked}
    L = sum(losses[i](*Y[i, :]) for i in masked)
    names = GradientSymbols()
    derived = names.freeze(sp.Matrix(n, n, lambda i, j: sp.diff(L, S[i, j])).xreplace(constant_rows(S)))
    y_uniform = pooled(sp.ones(n, n) / n, V)
    G = sp.Matrix([names.gradient(losses[i], y_uniform) if i in losses else [0] * d for i in range(n)])
    return expand_entries(derived), G * V.T


def t5_reconstruction_gradient(n: int, d: int, masked: Sequence[int]) -> sp.Matrix:
    r"""T5: ``dL_rec/dS - (1/n)(R - R 1 1^T / n)`` at constant rows, ``R_ij = g_i^T v_j``.

    Parameters
    ----------
    n, d : int
        Tokens and value width.
    masked : sequence of int
        The reconstructed rows.

    Returns
    -------
    sympy.Matrix [n, n]
        ``dL_rec/dS`` minus T5's closed form: identically 0.

    References
    ----------
    proofs/T5_reconstruction_sees_proximity.md.

    Examples
    --------
    >>> t5_reconstruction_gradient(3, 1, [0, 2]).is_zero_matrix
    True
    """
    derived, R = uniform_rec_score_gradient(n, d, masked)
    closed = (R - R * sp.ones(n, 1) * sp.ones(1, n) / n) / n
    return expand_entries(derived - closed)


def general_softmax_backward_at_uniform() -> sp.Expr:
    r"""General ``n``: ``sum_j U_ij (1/n)(delta_jk - 1/n) - (1/n)(U_ik - (1/n) sum_j U_ij)``, ``1 <= k <= n``.

    ``dA_ij/dS_ik = A_ij (delta_jk - A_ik)`` with ``A = 1/n``; with ``U = dL/dA`` this is the
    softmax backward, so ``dL/dS = (1/n)(U - U 1 1^T / n)`` for every ``n``: T2 (``U = 1 b^T``)
    and T5 (``U = R``).

    Returns
    -------
    sympy.Expr
        The residual, simplified: 0.

    References
    ----------
    proofs/T2_uniform_gradient.md (general n); proofs/T5_reconstruction_sees_proximity.md.

    Examples
    --------
    >>> general_softmax_backward_at_uniform()
    0
    """
    n = sp.Symbol("n", integer=True, positive=True)
    i, j = sp.symbols("i j", integer=True)
    k = sp.Symbol("k", integer=True, positive=True)
    U = sp.IndexedBase("U")
    backward = sp.Sum(U[i, j] * (sp.KroneckerDelta(j, k) - 1 / n) / n, (j, 1, n)).doit()
    closed = (U[i, k] - sp.Sum(U[i, j], (j, 1, n)) / n) / n
    return sp.simplify(sp.refine(backward - closed, sp.Q.le(k, n)))


def general_row_sums() -> sp.Expr:
    r"""General ``n``: ``sum_k sum_j U_ij (1/n)(delta_jk - 1/n)``, the row sums of ``dL/dS`` at uniform attention.

    Zero because ``sum_k (delta_jk - 1/n) = 0``: a constant shift of a row of ``S`` does not
    change the softmax.

    Returns
    -------
    sympy.Expr
        The row sum, simplified: 0.

    References
    ----------
    proofs/T2_uniform_gradient.md.

    Examples
    --------
    >>> general_row_sums()
    0
    """
    n = sp.Symbol("n", integer=True, positive=True)
    i = sp.Symbol("i", integer=True)
    j, k = sp.symbols("j k", integer=True, positive=True)
    U = sp.IndexedBase("U")
    inner = sp.Sum(U[i, j] * (sp.KroneckerDelta(j, k) - 1 / n) / n, (k, 1, n)).doit()
    return sp.simplify(sp.refine(sp.Sum(inner, (j, 1, n)).doit(), sp.Q.le(j, n)))


def _row_loss(S: sp.Matrix, V: sp.Matrix, r: int) -> tuple[sp.Expr, list[sp.Expr], sp.Function]:
    r"""``l(y_r)`` with ``y_r`` = row ``r`` of ``softmax_rows(S) V`` (X4), the readout, and ``l``."""
    y = list(softmax_rows(S)[r, :] * V)
    l = sp.Function("l")
    return l(*y), y, l


def x4_row_score_gradient(n: int, d: int, r: int) -> sp.Matrix:
    r"""X4 (a) at a generic point: ``dL/dS - e_r (A_r o (beta - (A_r . beta) 1))^T``, ``beta_j = grad l(y_r)^T v_j``.

    Parameters
    ----------
    n, d : int
        Tokens and value width (``V`` is ``n x d``, ``S`` generic symbols).
    r : int
        The readout row (0: CLS, ``n - 1``: last token).

    Returns
    -------
    sympy.Matrix [n, n]
        ``dL_row/dS`` minus X4 (1): identically 0.

    References
    ----------
    proofs/X4_readout_blindness.md (a).

    Examples
    --------
    >>> x4_row_score_gradient(2, 1, 0).is_zero_matrix
    True
    """
    S, V = symbol_matrix("s", n, n), symbol_matrix("v", n, d)
    L, y, l = _row_loss(S, V, r)
    names = GradientSymbols()
    derived = names.freeze(sp.Matrix(n, n, lambda i, j: sp.diff(L, S[i, j])))
    A = softmax_rows(S)
    beta = V * sp.Matrix(names.gradient(l, y))
    mean = sum(A[r, k] * beta[k] for k in range(n))
    closed = sp.Matrix(n, n, lambda i, j: A[r, j] * (beta[j] - mean) if i == r else 0)
    return (derived - closed).applyfunc(sp.cancel)


@cache
def uniform_row_score_gradient(n: int, d: int, r: int) -> tuple[sp.Matrix, tuple[sp.Expr, ...]]:
    r"""``dL_row/dS`` derived by sympy at constant rows ``S_ij = r_i``, and ``beta_j = grad l(y_r)^T v_j``.

    ``grad l`` is evaluated at the uniform-attention readout ``y_r = (1/n) V^T 1``.  Cached.

    Parameters
    ----------
    n, d : int
        Tokens and value width.
    r : int
        The readout row.

    Returns
    -------
    derived : sympy.ImmutableMatrix [n, n]
        ``dL_row/dS``, expanded.
    beta : tuple of n sympy.Expr
        ``beta_j``.

    References
    ----------
    proofs/X4_readout_blindness.md (b).

    Examples
    --------
    Only row ``r`` is non-zero, ``(1/n)(beta_j - mean(beta))``:

    >>> derived, beta = uniform_row_score_gradient(2, 1, 0)
    >>> derived.tolist()
    [[D0_l[0]*v_00/4 - D0_l[0]*v_10/4, -D0_l[0]*v_00/4 + D0_l[0]*v_10/4], [0, 0]]
    >>> beta
    (D0_l[0]*v_00, D0_l[0]*v_10)
    """
    S, V = symbol_matrix("s", n, n), symbol_matrix("v", n, d)
    L, _, l = _row_loss(S, V, r)
    names = GradientSymbols()
    derived = names.freeze(sp.Matrix(n, n, lambda i, j: sp.diff(L, S[i, j])).xreplace(constant_rows(S)))
    beta = V * sp.Matrix(names.gradient(l, pooled(sp.ones(n, n) / n, V)))
    return sp.ImmutableMatrix(expand_entries(derived)), tuple(beta)


def x4_row_uniform_gradient(n: int, d: int, r: int) -> sp.Matrix:
    r"""X4 (b): ``dL_row/dS - (1/n) e_r (beta - mean(beta) 1)^T`` at constant rows.

    Parameters
    ----------
    n, d, r
        As in :func:`uniform_row_score_gradient`.

    Returns
    -------
    sympy.Matrix [n, n]
        ``dL_row/dS`` minus X4 (2): identically 0.

    References
    ----------
    proofs/X4_readout_blindness.md (b).

    Examples
    --------
    >>> x4_row_uniform_gradient(3, 1, 2).is_zero_matrix
    True
    """
    derived, beta = uniform_row_score_gradient(n, d, r)
    mean = sum(beta) / n
    closed = sp.Matrix(n, n, lambda i, j: (beta[j] - mean) / n if i == r else 0)
    return expand_entries(derived - closed)


def x4_row_projection(n: int, d: int, r: int) -> sp.Expr:
    r"""X4 (c): ``<dL_row/dS, P> - (1/n) (beta - mean(beta) 1)^T P_r`` for a generic symbolic ``P``.

    Parameters
    ----------
    n, d, r
        As in :func:`uniform_row_score_gradient`.

    Returns
    -------
    sympy.Expr
        The projection minus X4 (c)'s closed form: identically 0.

    References
    ----------
    proofs/X4_readout_blindness.md (c).

    Examples
    --------
    >>> x4_row_projection(3, 1, 0)
    0
    """
    derived, beta = uniform_row_score_gradient(n, d, r)
    P = symbol_matrix("p", n, n)
    mean = sum(beta) / n
    projection = sum(derived[i, j] * P[i, j] for i in range(n) for j in range(n))
    return sp.expand(projection - sum((beta[j] - mean) * P[r, j] for j in range(n)) / n)


def x4_circulant_projection(n: int, d: int, r: int) -> sp.Expr:
    r"""X4 (c), the contrast with T3: ``<dL_row/dS, P>`` for the circulant ``P_ij = k(min(|i-j|, n-|i-j|))``.

    With generic kernel symbols ``k``.  Not identically 0 (for ``n >= 3``): a row readout sees
    circulant patterns, which T3 proves blind for mean pooling.

    Parameters
    ----------
    n, d, r
        As in :func:`uniform_row_score_gradient`.

    Returns
    -------
    sympy.Expr
        The projection (not a residual: generically non-zero).

    References
    ----------
    proofs/X4_readout_blindness.md (c); proofs/T3_blind_directions.md.

    Examples
    --------
    >>> x4_circulant_projection(3, 1, 0) == 0
    False
    """
    derived, _ = uniform_row_score_gradient(n, d, r)
    k = sp.symbols(f"k_0:{n // 2 + 1}")
    return sp.expand(sum(derived[i, j] * k[min(abs(i - j), n - abs(i - j))] for i in range(n) for j in range(n)))
