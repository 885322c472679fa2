r"""Lemma T6 by exact enumeration: the class-conditional histogram laws of a sequence law
``P(x | y)`` and the best accuracy of any bag-of-tokens readout, in exact fractions.

Used by claim T6 (:mod:`spt_theory.checks.theory`) with the walk's law
(``synthetic.walk.sequence_probability``) and its leaking control :func:`step_rate_control`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from fractions import Fraction

from synthetic.walk import sequence_probability


def class_histogram_distributions(vocab: int, length: int,
                                  probability: Callable[[tuple[int, ...], int], Fraction]
                                  ) -> dict[int, dict[tuple[int, ...], Fraction]]:
    """``{y: {histogram: P(histogram | y)}}`` by enumeration, for any exact ``P(x | y)``.

    With ``walk.sequence_probability`` this reproduces ``walk.histogram_distributions``; it also
    takes the leaking control generator of T6.

    Parameters
    ----------
    vocab : int
        Tokens ``V``; sequences are ``[0, V)^length``.
    length : int
        Sequence length ``n`` (``V^n`` sequences are enumerated).
    probability : callable ``(x, y) -> Fraction``
        ``P(x | y)`` for a sequence ``x`` (tuple of ints) and a class ``y`` in ``{0, 1}``.

    Returns
    -------
    dict[int, dict[tuple[int, ...], Fraction]]
        For ``y`` in ``{0, 1}``: histogram ``(count of token 0, ..., count of token V-1)`` to its
        probability given ``y``.

    References
    ----------
    proofs/T6_bag_invariance.md.

    Examples
    --------
    >>> uniform = class_histogram_distributions(2, 2, lambda x, y: Fraction(1, 4))
    >>> uniform[0] == uniform[1] == {(2, 0): Fraction(1, 4), (1, 1): Fraction(1, 2), (0, 2): Fraction(1, 4)}
    True
    """
    dist: dict[int, dict[tuple[int, ...], Fraction]] = {0: {}, 1: {}}
    for x in itertools.product(range(vocab), repeat=length):
        hist = tuple(x.count(v) for v in range(vocab))
        for y in (0, 1):
            dist[y][hist] = dist[y].get(hist, Fraction(0)) + probability(x, y)
    return dist


def bag_bayes_accuracy(dist: dict[int, dict[tuple[int, ...], Fraction]]) -> Fraction:
    r"""Best accuracy of any function of the histogram, equal priors: ``(1/2) sum_h max_y P(h | y)``.

    Exactly 1/2 iff the two class-conditional histogram distributions are identical.

    Parameters
    ----------
    dist : dict[int, dict[tuple[int, ...], Fraction]]
        The class-conditional histogram laws (:func:`class_histogram_distributions`).

    Returns
    -------
    Fraction
        The Bayes accuracy of a bag-of-tokens readout, exact.

    References
    ----------
    proofs/T6_bag_invariance.md.

    Examples
    --------
    The walk's two classes give the same histogram law (T6):

    >>> walk = lambda x, y: sequence_probability(x, y, 3, Fraction(1, 2))
    >>> bag_bayes_accuracy(class_histogram_distributions(3, 3, walk))
    Fraction(1, 2)
    """
    hists = set(dist[0]) | set(dist[1])
    return sum((max(dist[0].get(h, Fraction(0)), dist[1].get(h, Fraction(0))) for h in hists),
               Fraction(0)) / 2


def step_rate_control(vocab: int, p: Fraction, p_class0: Fraction) -> Callable[[tuple[int, ...], int], Fraction]:
    r"""T6 negative control: class 0 walks backwards with step probability ``p_class0 != p``.

    The label now changes how often the walk steps, which changes how many distinct tokens a
    sequence holds: a bag sees it.

    Parameters
    ----------
    vocab : int
        Tokens ``V``.
    p : Fraction
        Class 1's step probability (the walk's).
    p_class0 : Fraction
        Class 0's step probability.

    Returns
    -------
    callable ``(x, y) -> Fraction``
        ``P(x | y)`` of the control.

    References
    ----------
    proofs/T6_bag_invariance.md.

    Examples
    --------
    >>> control = step_rate_control(3, Fraction(1, 2), Fraction(1, 4))
    >>> bag_bayes_accuracy(class_histogram_distributions(3, 3, control))
    Fraction(167, 288)
    """
    return lambda x, y: sequence_probability(x, y, vocab, p if y == 1 else p_class0)
