r"""The sympy machinery of the lemmas' derivations: symbol matrices, the row softmax, mean pooling,
constant rows, and one symbol per derivative of an undefined loss.

The derivations (T1-T5 in :mod:`~spt_theory.theory.symbolic`, X4 in
:mod:`~spt_theory.theory.symbolic_readout`) build ``S``, ``V``, ``A``, ``H``, ``M`` from one symbol per
entry (:func:`symbol_matrix`), differentiate an undefined sympy ``Function`` ``l`` through them, and
replace the derivatives of ``l`` that sympy leaves behind by plain symbols (:class:`GradientSymbols`),
so that a residual is 0 exactly when the closed form is right (:func:`is_zero`).  Notation as in
``proofs/README.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

import sympy as sp

Residual: TypeAlias = "sp.Expr | sp.Matrix"
"""What a derivation returns: an expression or a matrix that is identically 0 when the lemma holds."""


def symbol_matrix(name: str, rows: int, cols: int) -> sp.Matrix:
    r"""A matrix with one independent symbol ``{name}_{i}{j}`` per entry.

    Parameters
    ----------
    name : str
        The symbols' stem.
    rows, cols : int
        The shape.

    Returns
    -------
    sympy.Matrix [rows, cols]
        Entry ``(i, j)`` is the symbol ``{name}_{i}{j}``.

    References
    ----------
    proofs/README.md (notation).

    Examples
    --------
    >>> symbol_matrix("v", 2, 1).tolist()
    [[v_00], [v_10]]
    """
    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}_{i}{j}"))


def softmax_rows(S: sp.Matrix) -> sp.Matrix:
    r"""Row softmax ``A_ij = exp(S_ij) / sum_k exp(S_ik)`` of a symbolic matrix.

    Parameters
    ----------
    S : sympy.Matrix [m, n]
        Scores.

    Returns
    -------
    sympy.Matrix [m, n]
        ``A``.

    References
    ----------
    proofs/README.md (notation).

    Examples
    --------
    >>> softmax_rows(sp.zeros(2, 2)).tolist()  # constant rows: uniform attention
    [[1/2, 1/2], [1/2, 1/2]]
    """
    n = S.shape[1]
    return sp.Matrix(S.shape[0], n, lambda i, j: sp.exp(S[i, j]) / sum(sp.exp(S[i, k]) for k in range(n)))


def pooled(A: sp.Matrix, V: sp.Matrix) -> list[sp.Expr]:
    r"""The mean-pooled attention output ``z = (1/n) 1^T A V``.

    Parameters
    ----------
    A : sympy.Matrix [n, n]
        Attention.
    V : sympy.Matrix [n, d]
        Values.

    Returns
    -------
    list[sympy.Expr], length d
        The entries of ``z``.

    References
    ----------
    proofs/T1_column_sums.md.

    Examples
    --------
    >>> pooled(sp.ones(2, 2) / 2, symbol_matrix("v", 2, 1))
    [v_00/2 + v_10/2]
    """
    n = A.shape[0]
    return list(sp.ones(1, n) * A * V / n)


class GradientSymbols:
    r"""One symbol ``D<arg>_<f>[k]`` per derivative ``d f / d arg`` at an evaluation point.

    sympy writes the chain rule through an undefined ``f`` as
    ``Subs(Derivative(f(..., xi, ...), xi), xi, point)``; :meth:`freeze` replaces each by the
    symbol of its (function, argument index, full expanded argument tuple), and :meth:`gradient`
    hands out the symbols of ``grad f`` at a given point for the closed forms.  A derivative
    evaluated at a point other than the closed form's gets a different symbol, so such a mistake
    leaves a non-zero residual.

    References
    ----------
    proofs/README.md (the sympy column of the table).

    Examples
    --------
    >>> x, l = sp.Symbol("x"), sp.Function("l")
    >>> names = GradientSymbols()
    >>> names.freeze(sp.diff(l(x ** 2), x)) - 2 * x * names.gradient(l, [x ** 2])[0]
    0
    """

    def __init__(self) -> None:
        self._table: dict[tuple, sp.Symbol] = {}

    def _symbol(self, func: Any, index: int, args: Sequence[sp.Expr]) -> sp.Symbol:
        key = (func, index, tuple(sp.expand(a) for a in args))
        if key not in self._table:
            self._table[key] = sp.Symbol(f"D{index}_{func}[{len(self._table)}]")
        return self._table[key]

    def gradient(self, func: Any, point: Sequence[sp.Expr]) -> list[sp.Symbol]:
        r"""The symbols of ``grad func`` at ``point``, one per argument.

        Parameters
        ----------
        func : sympy.Function
            An undefined function.
        point : sequence of sympy.Expr
            Its arguments.

        Returns
        -------
        list[sympy.Symbol], length len(point)
            ``d func / d arg_k`` at ``point``.
        """
        return [self._symbol(func, k, point) for k in range(len(point))]

    def freeze(self, expr: Residual) -> Residual:
        r"""Replace every derivative of an undefined function in ``expr`` by its symbol.

        Parameters
        ----------
        expr : sympy.Expr or sympy.Matrix
            A derivative sympy took by the chain rule.

        Returns
        -------
        sympy.Expr or sympy.Matrix
            ``expr`` with its ``Subs(Derivative(...))`` and ``Derivative(...)`` terms replaced.
        """
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


def constant_rows(S: sp.Matrix) -> dict[sp.Symbol, sp.Symbol]:
    r"""The substitution ``S_ij -> r_i``: every row constant, i.e. uniform attention with any row offsets.

    Parameters
    ----------
    S : sympy.Matrix [n, m]
        A matrix of symbols (:func:`symbol_matrix`).

    Returns
    -------
    dict[sympy.Symbol, sympy.Symbol]
        ``{S_ij: r_i}``.

    References
    ----------
    proofs/T2_uniform_gradient.md (uniform attention).

    Examples
    --------
    >>> constant_rows(symbol_matrix("s", 1, 2))
    {s_00: r_0, s_01: r_0}
    """
    return {S[i, j]: sp.Symbol(f"r_{i}") for i in range(S.shape[0]) for j in range(S.shape[1])}


def expand_entries(X: Residual) -> Residual:
    r"""``sympy.expand`` of an expression, or of every entry of a matrix.

    Parameters
    ----------
    X : sympy.Expr or sympy.Matrix
        A residual.

    Returns
    -------
    sympy.Expr or sympy.Matrix
        ``X`` expanded (same shape).

    References
    ----------
    proofs/README.md.

    Examples
    --------
    >>> x = sp.Symbol("x")
    >>> expand_entries(sp.Matrix([[(x + 1) ** 2 - x ** 2]]))
    Matrix([[2*x + 1]])
    """
    return X.applyfunc(sp.expand) if isinstance(X, sp.MatrixBase) else sp.expand(X)


def is_zero(residual: Residual | Sequence[sp.Expr]) -> bool:
    r"""True iff every entry of the residual is identically 0 (already simplified or expanded).

    Parameters
    ----------
    residual : sympy.Expr, sympy.Matrix, or a list or tuple of them
        What a derivation returns.

    Returns
    -------
    bool
        For a matrix sympy's ``is_zero_matrix is True``, for an expression ``== 0``: no
        simplification here.

    References
    ----------
    proofs/README.md.

    Examples
    --------
    >>> is_zero([sp.Integer(0), sp.zeros(1, 3)]), is_zero(sp.Matrix([[0, sp.Symbol("x")]]))
    (True, False)
    """
    if isinstance(residual, sp.MatrixBase):
        return residual.is_zero_matrix is True
    if isinstance(residual, (list, tuple)):
        return all(is_zero(r) for r in residual)
    return residual == 0
