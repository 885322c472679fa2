r"""Measurements behind the checks of lemma T3 (:mod:`spt_theory.checks.theory`): projections of the
supervised score gradient on blind patterns, at and off uniform attention, and on Toeplitz kernels
with the boundary term, the bound and its equality cases.

Each function returns numbers; the thresholds they are held to are the claims' own.  Instances and
autograd references are :mod:`spt_theory.analysis.lemma_instances` and
:mod:`spt_theory.analysis.lemma_harness`; closed forms :mod:`spt_theory.theory.patterns` and
:mod:`spt_theory.theory.blind_directions`.  The other lemmas' measures are
:mod:`spt_theory.analysis.lemma_measures`.  ``proofs/T3_blind_directions.md``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import Tensor

from spt_theory.analysis.lemma_harness import sup_autograd
from spt_theory.analysis.lemma_instances import Instance, RowLoss, random_instances
from spt_theory.theory import blind_directions, patterns


def blind_patterns(n: int, gen: torch.Generator) -> dict[str, Tensor]:
    r"""Patterns with equal column sums, blind by T3 (a): a random circulant, the circular band, a column-centred ``P``.

    Parameters
    ----------
    n : int
        Tokens.
    gen : torch.Generator
        Draws the random circulant's kernel and the matrix that is column-centred.

    Returns
    -------
    dict[str, Tensor]
        ``random circulant``, ``circular band w=2``, ``column-centred``: each [n, n] float64.

    References
    ----------
    proofs/T3_blind_directions.md (a).

    Examples
    --------
    >>> P = blind_patterns(5, torch.Generator().manual_seed(0))
    >>> [bool(torch.allclose(p.sum(0), p.sum(0)[0].expand(5), atol=1e-12)) for p in P.values()]
    [True, True, True]
    """
    X = torch.randn(n, n, generator=gen, dtype=torch.float64)
    kernel = torch.randn(n // 2 + 1, generator=gen, dtype=torch.float64)
    return {"random circulant": patterns.circulant_kernel(n, kernel),
            "circular band w=2": patterns.circulant_kernel(n, [1.0, 1.0, 1.0]),
            "column-centred": X - X.mean(dim=0, keepdim=True)}


def normalised_projection(G: Tensor, P: Tensor, scale: Tensor) -> float:
    r"""``|<G, P>| / (scale ||P||_F)``: a score gradient's projection on a pattern, relative to the error scale.

    Parameters
    ----------
    G : Tensor [n, n]
        A score gradient.
    P : Tensor [n, n]
        A pattern.
    scale : Tensor []
        The error scale of ``G``.

    Returns
    -------
    float
        0 for a pattern T3 proves blind (up to rounding, ~1e-16).

    References
    ----------
    proofs/T3_blind_directions.md (1).

    Examples
    --------
    >>> round(normalised_projection(torch.ones(2, 2), torch.eye(2), torch.tensor(2.0)), 6)  # 2 / (2 sqrt 2)
    0.707107
    """
    return abs(float(blind_directions.blind_projection(G, P))) / (float(scale) * float(P.norm()))


def off_uniform_growth(eps_grid: list[float], count: int) -> dict:
    r"""Control (a) of T3: ``|<dL_sup/dS, P>|`` for a circulant ``P`` at ``S = r 1^T + eps X``.

    Averages the normalised projection over ``count`` instances per ``eps`` and fits
    ``log proj = log C + e log eps``; the lemma holds only at ``eps = 0``, so ``e ~ 1`` and ``C > 0``.

    Parameters
    ----------
    eps_grid : list[float]
        The distances from uniform attention, all > 0.
    count : int
        Instances per ``eps`` (the same instances, directions ``X`` and kernels at every ``eps``).

    Returns
    -------
    dict
        ``eps``, ``mean_normalised_projection`` (one per ``eps``), ``loglog_slope`` (``e``) and
        ``coefficient`` (``C``).

    References
    ----------
    proofs/T3_blind_directions.md (Verified by, control (a)).
    """
    gen = torch.Generator().manual_seed(31)
    base = list(random_instances(count, seed=30, min_n=3, max_n=16, max_d=4))
    directions = [torch.randn(inst.S.shape, generator=gen, dtype=torch.float64) for inst in base]
    kernels = [patterns.circulant_kernel(inst.S.shape[0], torch.randn(inst.S.shape[0] // 2 + 1, generator=gen,
                                                                    dtype=torch.float64)) for inst in base]
    means = []
    for eps in eps_grid:
        values = []
        for inst, X, P in zip(base, directions, kernels):
            auto = sup_autograd(inst, inst.S + eps * X)
            values.append(normalised_projection(auto.grad_S, P, auto.scale))
        means.append(sum(values) / len(values))
    logs = [(math.log(e), math.log(m) if m > 0 else -math.inf) for e, m in zip(eps_grid, means)]
    mx = sum(a for a, _ in logs) / len(logs)
    my = sum(b for _, b in logs) / len(logs)
    exponent = sum((a - mx) * (b - my) for a, b in logs) / sum((a - mx) ** 2 for a, _ in logs)
    return {"eps": eps_grid, "mean_normalised_projection": means, "loglog_slope": exponent,
            "coefficient": math.exp(my - exponent * mx) if math.isfinite(my) else 0.0}


def toeplitz_boundary_cases(count: int, seed: int) -> Iterator[tuple[Instance, Tensor]]:
    r"""Uniform-attention instances paired with non-circulant Toeplitz kernels (band, decaying, random), for T3 (b).

    Parameters
    ----------
    count, seed : int
        How many pairs, and their seed (``n`` in [8, 100]).

    Returns
    -------
    Iterator[tuple[Instance, Tensor]]
        ``(instance, kernel)``; ``kernel`` [w+1] float64 holds ``k(0..w)``.

    References
    ----------
    proofs/T3_blind_directions.md (b), control (c).
    """
    gen = torch.Generator().manual_seed(seed)
    for index, inst in enumerate(random_instances(count, seed=seed, min_n=8, max_n=100)):
        n = inst.S.shape[0]
        kernels = ([1.0, 1.0, 1.0], [0.5 ** m for m in range(n)],
                   torch.randn(min(n, 6), generator=gen, dtype=torch.float64).tolist())
        yield inst, torch.tensor(kernels[index % 3], dtype=torch.float64)


@dataclass(frozen=True)
class ToeplitzProjection:
    r"""T3 (b) at one instance: the autograd projection on a Toeplitz ``P``, the closed form, the bound (2), the scale.

    Parameters
    ----------
    measured : float
        ``<dL_sup/dS, P>`` by autograd.
    predicted : float
        ``-(1/n) (b - mean(b) 1)^T delta``.
    bound : float
        ``(1/n) ||b - mean(b) 1|| ||delta - mean(delta) 1||``.
    scale : float
        The error scale of the score gradient.

    References
    ----------
    proofs/T3_blind_directions.md (b), (2).
    """

    measured: float
    predicted: float
    bound: float
    scale: float


def toeplitz_projection(inst: Instance, kernel: Tensor) -> ToeplitzProjection:
    r"""Measure and predict the projection of the supervised gradient on ``toeplitz_kernel(n, kernel)``.

    Parameters
    ----------
    inst : Instance
        A uniform-attention problem.
    kernel : Tensor [w+1]
        ``k(0..w)``.

    Returns
    -------
    ToeplitzProjection
        ``measured`` equals ``predicted`` to rounding, and ``|measured| <= bound``.

    References
    ----------
    proofs/T3_blind_directions.md (b).

    Examples
    --------
    >>> from spt_theory.analysis.lemma_instances import random_instance
    >>> inst = random_instance(torch.Generator().manual_seed(0), n=6, d=3, kind="bce")
    >>> t = toeplitz_projection(inst, torch.tensor([1.0, 0.5], dtype=torch.float64))
    >>> abs(t.measured - t.predicted) < 1e-12 * t.scale, abs(t.measured) <= t.bound
    (True, True)
    """
    auto = sup_autograd(inst)
    P = patterns.toeplitz_kernel(inst.S.shape[0], kernel)
    return ToeplitzProjection(float(blind_directions.blind_projection(auto.grad_S, P)),
                              float(blind_directions.toeplitz_boundary_projection(inst.V, auto.grad_readout, kernel)),
                              float(blind_directions.toeplitz_projection_bound(inst.V, auto.grad_readout, kernel)),
                              float(auto.scale))


def aligned_toeplitz(n: int, kernel: Tensor) -> dict[str, float]:
    r"""The equality case of the T3 bound: values ``v_j = delta_j`` (``d = 1``, MSE loss).

    Parameters
    ----------
    n : int
        Tokens.
    kernel : Tensor [w+1]
        ``k(0..w)``.

    Returns
    -------
    dict[str, float]
        ``ratio_to_bound``, ``|<dL_sup/dS, P>| / bound`` (1 when the bound is attained); ``cosine``
        between ``dL_sup/dS`` and ``P`` and ``max_cosine_formula``,
        :func:`~spt_theory.theory.blind_directions.toeplitz_max_cosine` (equal when (3) is attained).

    References
    ----------
    proofs/T3_blind_directions.md (2), (3).

    Examples
    --------
    >>> r = aligned_toeplitz(8, torch.tensor([1.0, 1.0, 1.0], dtype=torch.float64))
    >>> round(r["ratio_to_bound"], 12), round(r["cosine"] - r["max_cosine_formula"], 12)
    (1.0, 0.0)
    """
    delta = patterns.toeplitz_column_sum_deviation(n, kernel)
    inst = Instance(torch.zeros(n, n, dtype=torch.float64), delta.unsqueeze(1),
                    RowLoss("mse", torch.empty(0), torch.empty(0), torch.tensor([[-1.0]], dtype=torch.float64)),
                    RowLoss("mse", torch.empty(0), torch.empty(0), torch.zeros(n, 1, dtype=torch.float64)),
                    torch.ones(n, dtype=torch.bool))
    auto = sup_autograd(inst)
    P = patterns.toeplitz_kernel(n, kernel)
    projection = abs(float(blind_directions.blind_projection(auto.grad_S, P)))
    bound = blind_directions.toeplitz_projection_bound(inst.V, auto.grad_readout, kernel)
    return {"ratio_to_bound": projection / float(bound),
            "cosine": projection / float(auto.grad_S.norm() * P.norm()),
            "max_cosine_formula": float(blind_directions.toeplitz_max_cosine(n, kernel))}


def band_cosine_bound(n: int, w: int) -> float:
    r"""T3 (3) for the band ``k = 1`` on offsets ``0..w``, in closed form.

    ``sqrt(w (w+1) (2w+1) / 3) / sqrt(n ((2w+1) n - w (w+1)))``: it uses ``||delta||`` for
    ``||delta - mean(delta) 1||``, so it bounds
    :func:`~spt_theory.theory.blind_directions.toeplitz_max_cosine` from above.

    Parameters
    ----------
    n : int
        Tokens.
    w : int
        Band half-width.

    Returns
    -------
    float
        The bound on ``|cos(dL_sup/dS, P)|``, about ``sqrt(w (w+1) / 3) / n``.

    References
    ----------
    proofs/T3_blind_directions.md (3).

    Examples
    --------
    >>> round(band_cosine_bound(100, 2), 3)  # the proof's 0.014 for w = 2, n = 100
    0.014
    """
    return math.sqrt(w * (w + 1) * (2 * w + 1) / 3) / math.sqrt(n * ((2 * w + 1) * n - w * (w + 1)))
