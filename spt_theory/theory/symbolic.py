r"""Sympy derivations of lemmas T1-T5 and X4 (no autograd): each function returns a residual that is 0.

Explicit small ``n``: every entry of ``S``, ``V``, ``A``, ``H``, ``M`` is its own symbol, the loss
``l`` is an undefined sympy ``Function`` (so the result holds for every differentiable loss), and
sympy differentiates ``l(z(S))`` by the chain rule.  For the lemmas at uniform attention the
derivative is evaluated at constant rows ``S_ij = r_i`` (symbols ``r_i``) *before* simplifying,
which keeps ``n = 5`` fast.  The derivatives of ``l`` that sympy leaves behind are replaced by one
symbol per (function, argument, evaluation point); a derivative evaluated at a point other than the
closed form's gets a different symbol, so such a mistake leaves a non-zero residual.  Here: the
mean-pooled ``L_sup`` (T1-T4) and :func:`verify_lemma`; the losses that read rows of ``A V`` (T5, X4)
and the general-``n`` derivations are :mod:`~spt_theory.theory.symbolic_rows`; the
machinery is :mod:`~spt_theory.theory.symbolic_base`.

General ``n`` (symbolic sums with ``KroneckerDelta``): the softmax backward at uniform attention is
``(1/n)`` times the row-centring of the upstream gradient, which is T2 (upstream ``1 b^T``) and T5
(upstream ``R``); and its rows sum to zero.

The setting is the lemmas' own: the readout of ``A V`` fed straight into ``l``.  What carries over to
``model.py`` (residual, LayerNorms, MLP) is claims T2b, T4b and T7 (``proofs/README.md``, Scope).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

import sympy as sp

from spt_theory.theory.symbolic_base import (
    GradientSymbols,
    Residual,
    constant_rows,
    expand_entries,
    is_zero,
    pooled,
    softmax_rows,
    symbol_matrix,
)
from spt_theory.theory.symbolic_rows import (
    general_row_sums,
    general_softmax_backward_at_uniform,
    t5_reconstruction_gradient,
    x4_row_projection,
    x4_row_score_gradient,
    x4_row_uniform_gradient,
)


def t1_column_sum_invariance(n: int, d: int) -> sp.Expr:
    r"""T1 (ii): ``l(z(A + Delta)) - l(z(A))`` for generic ``A`` and any ``Delta`` with ``Delta^T 1 = 0``.

    ``Delta``'s last row is minus the sum of the others (the general zero-column-sum matrix).

    Parameters
    ----------
    n, d : int
        Tokens and value width (``V`` is ``n x d``).

    Returns
    -------
    sympy.Expr
        The residual, identically 0: ``z`` is unchanged, so ``l``'s arguments are equal.

    References
    ----------
    proofs/T1_column_sums.md (ii).

    Examples
    --------
    >>> t1_column_sum_invariance(2, 1)
    0
    """
    A, V = symbol_matrix("a", n, n), symbol_matrix("v", n, d)
    free = symbol_matrix("e", n - 1, n)
    delta = free.col_join(-sp.ones(1, n - 1) * free)
    l = sp.Function("l")
    return l(*[sp.expand(z) for z in pooled(A + delta, V)]) - l(*[sp.expand(z) for z in pooled(A, V)])


def t1_rows_of_attention_gradient(n: int, d: int) -> sp.Matrix:
    r"""T1 (i): ``dL/dA - 1 (first row of dL/dA)``: all rows of ``dL_sup/dA`` are equal (``= b^T``).

    Parameters
    ----------
    n, d : int
        Tokens and value width.

    Returns
    -------
    sympy.Matrix [n, n]
        Each row of ``dL/dA`` minus the first: identically 0.

    References
    ----------
    proofs/T1_column_sums.md (i).

    Examples
    --------
    >>> is_zero(t1_rows_of_attention_gradient(3, 1))
    True
    """
    A, V = symbol_matrix("a", n, n), symbol_matrix("v", n, d)
    L = sp.Function("l")(*pooled(A, V))
    grad = sp.Matrix(n, n, lambda i, j: sp.diff(L, A[i, j]))
    return grad - sp.ones(n, 1) * grad[0, :]


def t1_score_gradient(n: int, d: int) -> sp.Matrix:
    r"""T1 (iii) at a generic point: ``dL/dS - A o (1 b^T - (A b) 1^T)``, ``b_j = (1/n) grad l(z)^T v_j``.

    Parameters
    ----------
    n, d : int
        Tokens and value width (cost grows fast: :func:`verify_lemma` runs ``n <= 3``).

    Returns
    -------
    sympy.Matrix [n, n]
        ``dL/dS`` minus T1 (iii), after ``cancel``: identically 0.

    References
    ----------
    proofs/T1_column_sums.md (iii).

    Examples
    --------
    >>> is_zero(t1_score_gradient(2, 1))
    True
    """
    S, V = symbol_matrix("s", n, n), symbol_matrix("v", n, d)
    A = softmax_rows(S)
    z = pooled(A, V)
    l = sp.Function("l")
    names = GradientSymbols()
    derived = names.freeze(sp.Matrix(n, n, lambda i, j: sp.diff(l(*z), S[i, j])))
    b = V * sp.Matrix(names.gradient(l, z)) / n
    Ab = A * b
    closed = sp.Matrix(n, n, lambda i, j: A[i, j] * (b[j] - Ab[i]))
    return (derived - closed).applyfunc(sp.cancel)


@cache
def uniform_sup_score_gradient(n: int, d: int) -> tuple[sp.Matrix, tuple[sp.Expr, ...]]:
    r"""``dL_sup/dS`` derived by sympy at constant rows ``S_ij = r_i``, and ``b_j = (1/n) grad l(z)^T v_j``.

    ``grad l`` is evaluated at the uniform-attention output ``z = (1/n) V^T 1``.  Cached.

    Parameters
    ----------
    n, d : int
        Tokens and value width.

    Returns
    -------
    derived : sympy.ImmutableMatrix [n, n]
        ``dL_sup/dS``, expanded.
    b : tuple of n sympy.Expr
        ``b_j``, in the symbols ``D<k>_l[.]`` of ``grad l(z)``.

    References
    ----------
    proofs/T2_uniform_gradient.md.

    Examples
    --------
    Every row is ``(1/n)(b - mean(b) 1)^T`` (T2):

    >>> derived, b = uniform_sup_score_gradient(2, 1)
    >>> derived.row(0).tolist(), derived.row(1) == derived.row(0)
    ([[D0_l[0]*v_00/8 - D0_l[0]*v_10/8, -D0_l[0]*v_00/8 + D0_l[0]*v_10/8]], True)
    >>> b
    (D0_l[0]*v_00/2, D0_l[0]*v_10/2)
    """
    S, V = symbol_matrix("s", n, n), symbol_matrix("v", n, d)
    l = sp.Function("l")
    L = l(*pooled(softmax_rows(S), V))
    names = GradientSymbols()
    derived = names.freeze(sp.Matrix(n, n, lambda i, j: sp.diff(L, S[i, j])).xreplace(constant_rows(S)))
    b = V * sp.Matrix(names.gradient(l, pooled(sp.ones(n, n) / n, V))) / n
    return sp.ImmutableMatrix(expand_entries(derived)), tuple(b)


def t2_uniform_gradient(n: int, d: int) -> sp.Matrix:
    r"""T2: ``dL_sup/dS - (1/n) 1 (b - mean(b) 1)^T`` at constant rows ``S_ij = r_i``.

    Parameters
    ----------
    n, d : int
        Tokens and value width.

    Returns
    -------
    sympy.Matrix [n, n]
        ``dL_sup/dS`` minus T2's closed form: identically 0.

    References
    ----------
    proofs/T2_uniform_gradient.md.

    Examples
    --------
    >>> is_zero(t2_uniform_gradient(2, 1))
    True
    """
    derived, b = uniform_sup_score_gradient(n, d)
    mean = sum(b) / n
    closed = sp.Matrix(n, n, lambda i, j: (b[j] - mean) / n)
    return expand_entries(derived - closed)


def sup_projection_at_uniform(n: int, d: int, P: sp.Matrix) -> sp.Expr:
    r"""``<dL_sup/dS, P>`` at uniform attention, with ``dL_sup/dS`` from :func:`uniform_sup_score_gradient`.

    Parameters
    ----------
    n, d : int
        Tokens and value width.
    P : sympy.Matrix [n, n]
        A score pattern.

    Returns
    -------
    sympy.Expr
        The projection, expanded (0 for the patterns T3 proves blind).

    References
    ----------
    proofs/T3_blind_directions.md (1).

    Examples
    --------
    >>> sup_projection_at_uniform(2, 1, sp.ones(2, 2))  # equal column sums: blind
    0
    """
    derived, _ = uniform_sup_score_gradient(n, d)
    return sp.expand(sum(derived[i, j] * P[i, j] for i in range(n) for j in range(n)))


def t3_circulant_projection(n: int, d: int) -> sp.Expr:
    r"""T3 (a): ``<dL_sup/dS, P>`` for the circulant ``P_ij = k(min(|i-j|, n-|i-j|))`` with generic ``k``.

    Parameters
    ----------
    n, d : int
        Tokens and value width.

    Returns
    -------
    sympy.Expr
        The projection, identically 0 (a circulant has equal column sums).

    References
    ----------
    proofs/T3_blind_directions.md (a).

    Examples
    --------
    >>> t3_circulant_projection(3, 1)
    0
    """
    k = sp.symbols(f"k_0:{n // 2 + 1}")
    return sup_projection_at_uniform(n, d, sp.Matrix(n, n, lambda i, j: k[min(abs(i - j), n - abs(i - j))]))


def t3_toeplitz_boundary(n: int, d: int) -> sp.Expr:
    r"""T3 (b): ``<dL_sup/dS, P> - (-(1/n) (b - mean(b) 1)^T delta)`` for Toeplitz ``P_ij = k(|i-j|)``.

    ``delta_j = T(j) + T(n-1-j)``, ``T(m) = sum_{r>m} k(r)``: the boundary deviation of the column
    sums (``c_j = F - delta_j``), with generic kernel symbols ``k``.

    Parameters
    ----------
    n, d : int
        Tokens and value width.

    Returns
    -------
    sympy.Expr
        The projection minus the boundary term: identically 0.

    References
    ----------
    proofs/T3_blind_directions.md (b).

    Examples
    --------
    >>> t3_toeplitz_boundary(3, 1)
    0
    """
    _, b = uniform_sup_score_gradient(n, d)
    k = sp.symbols(f"k_0:{n}")

    def tail(m: int) -> sp.Expr:
        return sum(k[m + 1:], sp.Integer(0))

    mean = sum(b) / n
    boundary = sum((b[j] - mean) * (tail(j) + tail(n - 1 - j)) for j in range(n)) / n
    projection = sup_projection_at_uniform(n, d, sp.Matrix(n, n, lambda i, j: k[abs(i - j)]))
    return sp.expand(projection + boundary)


def t4_bilinear_gradient(n: int, dh: int, d: int) -> tuple[sp.Matrix, list[sp.Expr]]:
    r"""T4 at ``M = 0``: ``dL/dM - (1/n)(H^T 1)((b - mean(b) 1)^T H)`` and the 2x2 minors of ``dL/dM``.

    ``S = H M H^T`` with generic ``H`` (``n x dh``) and ``M``; all minors vanish iff rank <= 1.

    Parameters
    ----------
    n : int
        Tokens.
    dh : int
        Columns of ``H`` (``M`` is ``dh x dh``).
    d : int
        Value width.

    Returns
    -------
    residual : sympy.Matrix [dh, dh]
        Identically 0.
    minors : list[sympy.Expr]
        The ``C(dh, 2)^2`` 2x2 minors, each identically 0.

    Notes
    -----
    ``H`` here is generic; in ``model.py`` it is ``[LN_1(E x + P), 1]`` and the steps are on the factors
    ``W_Q``, ``W_K``, not on ``M``: claim T4b states what holds there.

    References
    ----------
    proofs/T4_rank_one_update.md.

    Examples
    --------
    >>> residual, minors = t4_bilinear_gradient(2, dh=2, d=1)
    >>> is_zero(residual), is_zero(minors), len(minors)
    (True, True, 1)
    """
    H, M, V = symbol_matrix("h", n, dh), symbol_matrix("m", dh, dh), symbol_matrix("v", n, d)
    l = sp.Function("l")
    L = l(*pooled(softmax_rows(H * M * H.T), V))
    names = GradientSymbols()
    zero = {M[i, j]: sp.Integer(0) for i in range(dh) for j in range(dh)}
    derived = names.freeze(sp.Matrix(dh, dh, lambda i, j: sp.diff(L, M[i, j])).xreplace(zero))
    b = V * sp.Matrix(names.gradient(l, pooled(sp.ones(n, n) / n, V))) / n
    centred = b - sp.ones(n, 1) * (sum(b) / n)
    closed = H.T * sp.ones(n, 1) * (centred.T * H) / n
    derived = expand_entries(derived)
    minors = [sp.expand(derived[i, j] * derived[k, m] - derived[i, m] * derived[k, j])
              for i in range(dh) for k in range(i + 1, dh) for j in range(dh) for m in range(j + 1, dh)]
    return expand_entries(derived - closed), minors


def _t4(n: int) -> list:
    residual, minors = t4_bilinear_gradient(n, dh=2, d=1)
    return [residual, minors]


def _lemma_cases(lemma: str, ns: Sequence[int]) -> dict[str, Callable[[], Residual | list]]:
    d = 2
    cases: dict[str, dict[str, Callable]] = {
        "T1": {**{f"invariance n={n}": (lambda n=n: t1_column_sum_invariance(n, d)) for n in ns},
               **{f"equal rows dL/dA n={n}": (lambda n=n: t1_rows_of_attention_gradient(n, d)) for n in ns},
               **{f"dL/dS generic S n={n}": (lambda n=n: t1_score_gradient(n, d)) for n in ns if n <= 3}},
        "T2": {**{f"n={n}": (lambda n=n: t2_uniform_gradient(n, d)) for n in ns},
               "general n softmax backward": general_softmax_backward_at_uniform,
               "general n row sums": general_row_sums},
        "T3": {**{f"circulant n={n}": (lambda n=n: t3_circulant_projection(n, d)) for n in ns},
               **{f"toeplitz boundary n={n}": (lambda n=n: t3_toeplitz_boundary(n, d)) for n in ns}},
        "T4": {f"n={n}": (lambda n=n: _t4(n)) for n in ns if n <= 4},
        "T5": {**{f"n={n}": (lambda n=n: t5_reconstruction_gradient(n, d, range(0, n, 2))) for n in ns},
               "general n softmax backward": general_softmax_backward_at_uniform},
        "X4": {**{f"dL/dS generic S n={n} r={r}": (lambda n=n, r=r: x4_row_score_gradient(n, d, r))
                  for n in ns if n <= 3 for r in sorted({0, n - 1})},
               **{f"uniform n={n} r={r}": (lambda n=n, r=r: x4_row_uniform_gradient(n, d, r))
                  for n in ns for r in sorted({0, n - 1})},
               **{f"projection n={n} r={r}": (lambda n=n, r=r: x4_row_projection(n, d, r))
                  for n in ns if n <= 4 for r in sorted({0, n - 1})},
               "general n softmax backward": general_softmax_backward_at_uniform},
    }
    if lemma not in cases:
        raise ValueError(f"no symbolic derivation for lemma {lemma!r} (have {', '.join(cases)})")
    return cases[lemma]


def verify_lemma(lemma: str, ns: Sequence[int] = (2, 3, 4, 5)) -> dict[str, bool]:
    r"""Run every symbolic derivation of ``lemma`` ("T1".."T5", "X4"): ``{case: residual is 0}``.

    The generic-point softmax cases (T1, X4) run for ``n <= 3``, T4 and X4's projection for
    ``n <= 4`` (cost grows fast).

    Parameters
    ----------
    lemma : {"T1", "T2", "T3", "T4", "T5", "X4"}
        The lemma.
    ns : sequence of int
        The explicit ``n`` (value width ``d = 2``; T4: ``dh = 2``, ``d = 1``).

    Returns
    -------
    dict[str, bool]
        One entry per case.

    Raises
    ------
    ValueError
        A lemma with no symbolic derivation.

    References
    ----------
    proofs/README.md (the sympy column); the lemma's own file.

    Examples
    --------
    >>> verify_lemma("T3", ns=(2,))
    {'circulant n=2': True, 'toeplitz boundary n=2': True}
    """
    return {name: is_zero(case()) for name, case in _lemma_cases(lemma, ns).items()}
