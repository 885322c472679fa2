r"""Sympy derivations of lemmas T1-T5 (no autograd): each function returns a residual that is 0.

Explicit small ``n``: every entry of ``S``, ``V``, ``A``, ``H``, ``M`` is its own symbol, the loss
``l`` is an undefined sympy ``Function`` (so the result holds for every differentiable loss), and
sympy differentiates ``l(z(S))`` by the chain rule.  For the lemmas at uniform attention the
derivative is evaluated at constant rows ``S_ij = r_i`` (symbols ``r_i``) *before* simplifying,
which keeps ``n = 5`` fast.  The derivatives of ``l`` that sympy leaves behind are replaced by one
symbol per (function, argument, evaluation point); a derivative evaluated at a point other than the
closed form's gets a different symbol, so such a mistake leaves a non-zero residual.

General ``n`` (symbolic sums with ``KroneckerDelta``): the softmax backward at uniform attention is
``(1/n)`` times the row-centring of the upstream gradient, which is T2 (upstream ``1 b^T``) and T5
(upstream ``R``); and its rows sum to zero.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

import sympy as sp

Residual = sp.Expr | sp.Matrix


def _symbols(name: str, rows: int, cols: int) -> sp.Matrix:
    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}_{i}{j}"))


def softmax_rows(S: sp.Matrix) -> sp.Matrix:
    r"""``A_ij = exp(S_ij) / sum_k exp(S_ik)``."""
    n = S.shape[1]
    return sp.Matrix(S.shape[0], n, lambda i, j: sp.exp(S[i, j]) / sum(sp.exp(S[i, k]) for k in range(n)))


def _pooled(A: sp.Matrix, V: sp.Matrix) -> list[sp.Expr]:
    r"""``z = (1/n) 1^T A V`` as a list of ``d`` expressions."""
    n = A.shape[0]
    return list(sp.ones(1, n) * A * V / n)


class _GradientSymbols:
    r"""One symbol ``D<arg>_<f>[k]`` per derivative ``d f / d arg`` at an evaluation point.

    sympy writes the chain rule through an undefined ``f`` as
    ``Subs(Derivative(f(..., xi, ...), xi), xi, point)``; :meth:`freeze` replaces each by the
    symbol of its (function, argument index, full expanded argument tuple), and :meth:`gradient`
    hands out the symbols of ``grad f`` at a given point for the closed forms.
    """

    def __init__(self):
        self._table: dict[tuple, sp.Symbol] = {}

    def _symbol(self, func, index: int, args: Sequence[sp.Expr]) -> sp.Symbol:
        key = (func, index, tuple(sp.expand(a) for a in args))
        if key not in self._table:
            self._table[key] = sp.Symbol(f"D{index}_{func}[{len(self._table)}]")
        return self._table[key]

    def gradient(self, func, point: Sequence[sp.Expr]) -> list[sp.Symbol]:
        return [self._symbol(func, k, point) for k in range(len(point))]

    def freeze(self, expr: Residual) -> Residual:
        def from_subs(e: sp.Subs) -> sp.Symbol:
            (var,), (value,) = e.variables, e.point
            call = e.expr.expr
            args = [value if a == var else a for a in call.args]
            return self._symbol(call.func, call.args.index(var), args)

        def from_derivative(e: sp.Derivative) -> sp.Symbol:
            (var,) = e.variables
            return self._symbol(e.expr.func, e.expr.args.index(var), e.expr.args)

        expr = expr.replace(lambda e: isinstance(e, sp.Subs), from_subs)
        return expr.replace(lambda e: isinstance(e, sp.Derivative), from_derivative)


def _constant_rows(S: sp.Matrix) -> dict[sp.Symbol, sp.Symbol]:
    """``S_ij -> r_i``: every row constant, i.e. uniform attention with arbitrary row offsets."""
    return {S[i, j]: sp.Symbol(f"r_{i}") for i in range(S.shape[0]) for j in range(S.shape[1])}


def _expand(X: Residual) -> Residual:
    return X.applyfunc(sp.expand) if isinstance(X, sp.MatrixBase) else sp.expand(X)


def t1_column_sum_invariance(n: int, d: int) -> sp.Expr:
    r"""T1: ``l(z(A + Delta)) - l(z(A))`` for generic ``A`` and any ``Delta`` with ``Delta^T 1 = 0``.

    ``Delta``'s last row is minus the sum of the others (the general zero-column-sum matrix).
    """
    A, V = _symbols("a", n, n), _symbols("v", n, d)
    free = _symbols("e", n - 1, n)
    delta = free.col_join(-sp.ones(1, n - 1) * free)
    l = sp.Function("l")
    return l(*[sp.expand(z) for z in _pooled(A + delta, V)]) - l(*[sp.expand(z) for z in _pooled(A, V)])


def t1_rows_of_attention_gradient(n: int, d: int) -> sp.Matrix:
    r"""T1: ``dL/dA - 1 (first row of dL/dA)``: all rows of ``dL_sup/dA`` are equal (``= b^T``)."""
    A, V = _symbols("a", n, n), _symbols("v", n, d)
    L = sp.Function("l")(*_pooled(A, V))
    grad = sp.Matrix(n, n, lambda i, j: sp.diff(L, A[i, j]))
    return grad - sp.ones(n, 1) * grad[0, :]


def t1_score_gradient(n: int, d: int) -> sp.Matrix:
    r"""T1 at a generic point: ``dL/dS - A o (1 b^T - (A b) 1^T)``, ``b_j = (1/n) grad l(z)^T v_j``."""
    S, V = _symbols("s", n, n), _symbols("v", n, d)
    A = softmax_rows(S)
    z = _pooled(A, V)
    l = sp.Function("l")
    names = _GradientSymbols()
    derived = names.freeze(sp.Matrix(n, n, lambda i, j: sp.diff(l(*z), S[i, j])))
    b = V * sp.Matrix(names.gradient(l, z)) / n
    Ab = A * b
    closed = sp.Matrix(n, n, lambda i, j: A[i, j] * (b[j] - Ab[i]))
    return (derived - closed).applyfunc(sp.cancel)


@cache
def uniform_sup_score_gradient(n: int, d: int) -> tuple[sp.Matrix, tuple[sp.Expr, ...]]:
    r"""``dL_sup/dS`` derived by sympy at constant rows ``S_ij = r_i``, and ``b_j = (1/n) grad l(z)^T v_j``.

    ``grad l`` is evaluated at the uniform-attention output ``z = (1/n) V^T 1``.
    """
    S, V = _symbols("s", n, n), _symbols("v", n, d)
    l = sp.Function("l")
    L = l(*_pooled(softmax_rows(S), V))
    names = _GradientSymbols()
    derived = names.freeze(sp.Matrix(n, n, lambda i, j: sp.diff(L, S[i, j])).xreplace(_constant_rows(S)))
    b = V * sp.Matrix(names.gradient(l, _pooled(sp.ones(n, n) / n, V))) / n
    return sp.ImmutableMatrix(_expand(derived)), tuple(b)


def t2_uniform_gradient(n: int, d: int) -> sp.Matrix:
    r"""T2: ``dL_sup/dS - (1/n) 1 (b - mean(b) 1)^T`` at constant rows ``S_ij = r_i``."""
    derived, b = uniform_sup_score_gradient(n, d)
    mean = sum(b) / n
    closed = sp.Matrix(n, n, lambda i, j: (b[j] - mean) / n)
    return _expand(derived - closed)


def sup_projection_at_uniform(n: int, d: int, P: sp.Matrix) -> sp.Expr:
    r"""``<dL_sup/dS, P>`` with ``dL_sup/dS`` from :func:`uniform_sup_score_gradient`."""
    derived, _ = uniform_sup_score_gradient(n, d)
    return sp.expand(sum(derived[i, j] * P[i, j] for i in range(n) for j in range(n)))


def t3_circulant_projection(n: int, d: int) -> sp.Expr:
    r"""T3: ``<dL_sup/dS, P>`` for the circulant ``P_ij = k(min(|i-j|, n-|i-j|))``, generic ``k``."""
    k = sp.symbols(f"k_0:{n // 2 + 1}")
    return sup_projection_at_uniform(n, d, sp.Matrix(n, n, lambda i, j: k[min(abs(i - j), n - abs(i - j))]))


def t3_toeplitz_boundary(n: int, d: int) -> sp.Expr:
    r"""T3: ``<dL_sup/dS, P> - (-(1/n) (b - mean(b) 1)^T delta)`` for Toeplitz ``P_ij = k(|i-j|)``.

    ``delta_j = T(j) + T(n-1-j)``, ``T(m) = sum_{r>m} k(r)``: the boundary deviation of the column
    sums (``c_j = F - delta_j``), with generic kernel symbols ``k``.
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
    """
    H, M, V = _symbols("h", n, dh), _symbols("m", dh, dh), _symbols("v", n, d)
    l = sp.Function("l")
    L = l(*_pooled(softmax_rows(H * M * H.T), V))
    names = _GradientSymbols()
    zero = {M[i, j]: sp.Integer(0) for i in range(dh) for j in range(dh)}
    derived = names.freeze(sp.Matrix(dh, dh, lambda i, j: sp.diff(L, M[i, j])).xreplace(zero))
    b = V * sp.Matrix(names.gradient(l, _pooled(sp.ones(n, n) / n, V))) / n
    centred = b - sp.ones(n, 1) * (sum(b) / n)
    closed = H.T * sp.ones(n, 1) * (centred.T * H) / n
    derived = _expand(derived)
    minors = [sp.expand(derived[i, j] * derived[k, m] - derived[i, m] * derived[k, j])
              for i in range(dh) for k in range(i + 1, dh) for j in range(dh) for m in range(j + 1, dh)]
    return _expand(derived - closed), minors


def uniform_rec_score_gradient(n: int, d: int, masked: Sequence[int]) -> tuple[sp.Matrix, sp.Matrix]:
    r"""``dL_rec/dS`` derived by sympy at constant rows, and ``R_ij = g_i^T v_j`` (0 for unmasked ``i``).

    ``L_rec = sum_{i in masked} l_i(y_i)`` with one undefined function ``l_i`` per masked row;
    ``g_i = grad l_i`` at the uniform-attention output ``y_i = (1/n) V^T 1``.
    """
    S, V = _symbols("s", n, n), _symbols("v", n, d)
    Y = softmax_rows(S) * V
    losses = {i: sp.Function(f"l{i}") for i in masked}
    L = sum(losses[i](*Y[i, :]) for i in masked)
    names = _GradientSymbols()
    derived = names.freeze(sp.Matrix(n, n, lambda i, j: sp.diff(L, S[i, j])).xreplace(_constant_rows(S)))
    y_uniform = _pooled(sp.ones(n, n) / n, V)
    G = sp.Matrix([names.gradient(losses[i], y_uniform) if i in losses else [0] * d for i in range(n)])
    return _expand(derived), G * V.T


def t5_reconstruction_gradient(n: int, d: int, masked: Sequence[int]) -> sp.Matrix:
    r"""T5: ``dL_rec/dS - (1/n)(R - R 1 1^T / n)`` at constant rows, ``R_ij = g_i^T v_j``."""
    derived, R = uniform_rec_score_gradient(n, d, masked)
    closed = (R - R * sp.ones(n, 1) * sp.ones(1, n) / n) / n
    return _expand(derived - closed)


def general_softmax_backward_at_uniform() -> sp.Expr:
    r"""General ``n``: ``sum_j U_ij (1/n)(delta_jk - 1/n) - (1/n)(U_ik - (1/n) sum_j U_ij)``, ``1 <= k <= n``.

    ``dA_ij/dS_ik = A_ij (delta_jk - A_ik)`` with ``A = 1/n``; with ``U = dL/dA`` this is the
    softmax backward, so ``dL/dS = (1/n)(U - U 1 1^T / n)`` for every ``n``: T2 (``U = 1 b^T``)
    and T5 (``U = R``).
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
    r"""X4 (a) at a generic point: ``dL/dS - e_r (A_r o (beta - (A_r . beta) 1))^T``, ``beta_j = grad l(y_r)^T v_j``."""
    S, V = _symbols("s", n, n), _symbols("v", n, d)
    L, y, l = _row_loss(S, V, r)
    names = _GradientSymbols()
    derived = names.freeze(sp.Matrix(n, n, lambda i, j: sp.diff(L, S[i, j])))
    A = softmax_rows(S)
    beta = V * sp.Matrix(names.gradient(l, y))
    mean = sum(A[r, k] * beta[k] for k in range(n))
    closed = sp.Matrix(n, n, lambda i, j: A[r, j] * (beta[j] - mean) if i == r else 0)
    return (derived - closed).applyfunc(sp.cancel)


@cache
def uniform_row_score_gradient(n: int, d: int, r: int) -> tuple[sp.Matrix, tuple[sp.Expr, ...]]:
    r"""``dL_row/dS`` derived by sympy at constant rows ``S_ij = r_i``, and ``beta_j = grad l(y_r)^T v_j``
    with ``grad l`` at the uniform-attention readout ``y_r = (1/n) V^T 1``."""
    S, V = _symbols("s", n, n), _symbols("v", n, d)
    L, _, l = _row_loss(S, V, r)
    names = _GradientSymbols()
    derived = names.freeze(sp.Matrix(n, n, lambda i, j: sp.diff(L, S[i, j])).xreplace(_constant_rows(S)))
    beta = V * sp.Matrix(names.gradient(l, _pooled(sp.ones(n, n) / n, V)))
    return sp.ImmutableMatrix(_expand(derived)), tuple(beta)


def x4_row_uniform_gradient(n: int, d: int, r: int) -> sp.Matrix:
    r"""X4 (b): ``dL_row/dS - (1/n) e_r (beta - mean(beta) 1)^T`` at constant rows."""
    derived, beta = uniform_row_score_gradient(n, d, r)
    mean = sum(beta) / n
    closed = sp.Matrix(n, n, lambda i, j: (beta[j] - mean) / n if i == r else 0)
    return _expand(derived - closed)


def x4_row_projection(n: int, d: int, r: int) -> sp.Expr:
    r"""X4 (c): ``<dL_row/dS, P> - (1/n) (beta - mean(beta) 1)^T P_r`` for a generic symbolic ``P``."""
    derived, beta = uniform_row_score_gradient(n, d, r)
    P = _symbols("p", n, n)
    mean = sum(beta) / n
    projection = sum(derived[i, j] * P[i, j] for i in range(n) for j in range(n))
    return sp.expand(projection - sum((beta[j] - mean) * P[r, j] for j in range(n)) / n)


def x4_circulant_projection(n: int, d: int, r: int) -> sp.Expr:
    r"""X4 (c), the contrast with T3: ``<dL_row/dS, P>`` for the circulant ``P_ij = k(min(|i-j|, n-|i-j|))``
    with generic ``k``.  Not identically 0 (for ``n >= 3``): a row readout sees circulant patterns."""
    derived, _ = uniform_row_score_gradient(n, d, r)
    k = sp.symbols(f"k_0:{n // 2 + 1}")
    return sp.expand(sum(derived[i, j] * k[min(abs(i - j), n - abs(i - j))] for i in range(n) for j in range(n)))


def is_zero(residual: Residual | Sequence[sp.Expr]) -> bool:
    """True iff every entry of the residual is identically 0 (already simplified/expanded)."""
    if isinstance(residual, sp.MatrixBase):
        return residual.is_zero_matrix is True
    if isinstance(residual, (list, tuple)):
        return all(is_zero(r) for r in residual)
    return residual == 0


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
    """Run every symbolic derivation of ``lemma`` ("T1".."T5", "X4"): ``{case: residual is 0}``.

    T1's generic-point softmax case runs for ``n <= 3`` and T4 for ``n <= 4`` (cost grows fast).
    """
    return {name: is_zero(case()) for name, case in _lemma_cases(lemma, ns).items()}
