r"""Measurements behind the lemma checks T1-T5 and X4 (:mod:`spt_theory.checks.theory`): what a
change of ``S`` does to the loss, how far a score gradient is from a lemma's structure, projections
on blind patterns off uniform attention and on Toeplitz kernels with their equality cases, the
rank-one distance of T4's band, T5's rank counter-cases, and X4's off-row changes and aligned rows.

Each function returns numbers; the thresholds they are held to are the claims' own, in
:mod:`spt_theory.checks.theory`.  Instances and autograd references are
:mod:`spt_theory.analysis.lemma_harness`; closed forms in :mod:`spt_theory.theory` (``gradients``,
``patterns``, ``blind_directions``, ``rank_one``, ``readout``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import Tensor

from spt_theory.analysis.lemma_harness import (
    Instance,
    RowLoss,
    random_instances,
    rec_autograd,
    row_autograd,
    sup_autograd,
)
from spt_theory.theory import blind_directions, gradients, patterns, rank_one, readout

# --------------------------------------------------------------------------- T1, T2

def _column_preserving_change(A: Tensor, gen: torch.Generator, keep_columns: bool) -> Tensor:
    r"""A small ``Delta`` with zero row sums (``A + Delta`` stays a positive attention matrix).

    ``keep_columns``: ``Delta = C X C`` (``C = I - 1 1^T / n``), so also zero column sums;
    otherwise ``Delta = X C``, whose column sums are generically non-zero (negative control).
    """
    n = A.shape[0]
    C = torch.eye(n, dtype=A.dtype) - 1.0 / n
    X = torch.randn(n, n, generator=gen, dtype=A.dtype)
    delta = C @ X @ C if keep_columns else X @ C
    return delta * (0.5 * A.min() / delta.abs().max())


def loss_after_attention_change(inst: Instance, gen: torch.Generator, keep_columns: bool) -> float:
    r"""``|L_sup(A + Delta) - L_sup(A)| / (|L| + |grad l(z)|_1 max|V|)``, ``Delta`` as in
    :func:`_column_preserving_change`; the denominator is the loss's rounding scale (the absolute
    change when it is 0: zero values and a zero loss)."""
    before = sup_autograd(inst)
    A = gradients.attention(inst.S)
    changed = torch.log(A + _column_preserving_change(A, gen, keep_columns))
    after = float(inst.pooled_loss(gradients.pooled_output(changed, inst.V).unsqueeze(0))[0])
    scale = abs(float(before.loss)) + float(before.grad_readout.abs().sum() * inst.V.abs().max())
    change = abs(after - float(before.loss))
    return change / scale if scale > 0 else change


def uniform_gradient_structure(G: Tensor, V: Tensor, grad_z: Tensor, scale: Tensor) -> dict[str, float]:
    r"""How far a score gradient ``G`` is from the structure T2 states, relative to ``scale``.

    ``row_spread = ||G - 1 G_0||_F`` (0 iff all rows are equal; absolute figures if ``scale`` is 0),
    ``sigma2`` (0 iff rank <= 1), and
    ``column_sum_error = ||G^T 1 - (b - mean(b) 1)||`` with ``b_j = (1/n) grad l(z)^T v_j`` computed
    here from ``V`` and ``grad l(z)`` (T2: column ``k`` sums to ``b_k - mean(b)``).  Row sums are not
    a condition: ``G 1 = 0`` for the score gradient of *every* softmax, at every ``S``.
    """
    n = G.shape[0]
    b = V @ grad_z / n
    scale = float(scale) if float(scale) > 0 else 1.0  # absolute figures when the scale is 0
    return {"row_spread": float((G - G[0]).norm()) / scale,
            "sigma2": float(torch.linalg.svdvals(G)[1]) / scale if n > 1 else 0.0,
            "column_sum_error": float((G.sum(dim=0) - (b - b.mean())).norm()) / scale}

# --------------------------------------------------------------------------- T3

def blind_patterns(n: int, gen: torch.Generator) -> dict[str, Tensor]:
    """Patterns with equal column sums: a random circulant, the circular band, a column-centred P."""
    X = torch.randn(n, n, generator=gen, dtype=torch.float64)
    kernel = torch.randn(n // 2 + 1, generator=gen, dtype=torch.float64)
    return {"random circulant": patterns.circulant_kernel(n, kernel),
            "circular band w=2": patterns.circulant_kernel(n, [1.0, 1.0, 1.0]),
            "column-centred": X - X.mean(dim=0, keepdim=True)}


def normalised_projection(G: Tensor, P: Tensor, scale: Tensor) -> float:
    return abs(float(blind_directions.blind_projection(G, P))) / (float(scale) * float(P.norm()))


def off_uniform_growth(eps_grid: list[float], count: int) -> dict:
    r"""Control (a): ``|<dL_sup/dS, P>|`` for a circulant ``P`` at ``S = r 1^T + eps X``.

    Averages the normalised projection over ``count`` instances per ``eps`` and fits
    ``log proj = log C + e log eps``; the lemma holds only at eps = 0, so ``e ~ 1`` and ``C > 0``.
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
    """Uniform-attention instances paired with non-circulant Toeplitz kernels (band, decaying, random)."""
    gen = torch.Generator().manual_seed(seed)
    for index, inst in enumerate(random_instances(count, seed=seed, min_n=8, max_n=100)):
        n = inst.S.shape[0]
        kernels = ([1.0, 1.0, 1.0], [0.5 ** m for m in range(n)],
                   torch.randn(min(n, 6), generator=gen, dtype=torch.float64).tolist())
        yield inst, torch.tensor(kernels[index % 3], dtype=torch.float64)


@dataclass(frozen=True)
class ToeplitzProjection:
    """Autograd ``<dL_sup/dS, P>`` for a Toeplitz ``P``, the T3 boundary term, the bound, the scale."""

    measured: float
    predicted: float
    bound: float
    scale: float


def toeplitz_projection(inst: Instance, kernel: Tensor) -> ToeplitzProjection:
    """Measure and predict the projection of the supervised gradient on ``toeplitz_kernel(n, kernel)``."""
    auto = sup_autograd(inst)
    P = patterns.toeplitz_kernel(inst.S.shape[0], kernel)
    return ToeplitzProjection(float(blind_directions.blind_projection(auto.grad_S, P)),
                              float(blind_directions.toeplitz_boundary_projection(inst.V, auto.grad_readout, kernel)),
                              float(blind_directions.toeplitz_projection_bound(inst.V, auto.grad_readout, kernel)),
                              float(auto.scale))


def aligned_toeplitz(n: int, kernel: Tensor) -> dict[str, float]:
    r"""The equality case of the T3 bound: values ``v_j = delta_j`` (d = 1, MSE loss).

    Returns ``|<dL_sup/dS, P>| / bound`` (1 when the bound is attained) and the cosine between
    ``dL_sup/dS`` and ``P`` next to :func:`blind_directions.toeplitz_max_cosine`.
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
    r"""T3 (3) for the band ``k = 1`` on offsets ``0..w``, written out:
    ``sqrt(w (w+1) (2w+1) / 3) / sqrt(n ((2w+1) n - w (w+1)))`` (uses ``||delta||`` for
    ``||delta - mean(delta) 1||``, so it bounds :func:`blind_directions.toeplitz_max_cosine` from above)."""
    return math.sqrt(w * (w + 1) * (2 * w + 1) / 3) / math.sqrt(n * ((2 * w + 1) * n - w * (w + 1)))

# --------------------------------------------------------------------------- T4

def rank_one_residual(X: Tensor) -> float:
    r"""``||X - sigma_1 u_1 v_1^T||_F / ||X||_F``: the best rank-one approximation built from the full
    SVD and its error measured directly (an implementation independent of
    :func:`rank_one.rank_one_distance`, which uses Eckart-Young's ``sqrt(1 - sigma_1^2 / ||X||_F^2)``)."""
    U, sigma, Vh = torch.linalg.svd(X)
    return float((X - sigma[0] * torch.outer(U[:, 0], Vh[0])).norm() / X.norm())


def band_rank_one_figures() -> dict:
    r"""T4's band: ``rank_one_distance`` of ``B = band_mask(n, w)`` (and of ``B C``) against
    :func:`rank_one_residual` and against the proven lower bound ``sqrt(1 - (2w+1)^2 / ||B||_F^2)``,
    ``||B||_F^2 = (2w+1) n - w (w+1)``, over fixed and drawn ``(n, w)``; and the distance of a
    random outer product (0)."""
    rng = random.Random(43)
    sizes = [(100, 2), (20, 1), (64, 4)] + [(rng.randint(8, 128), rng.randint(1, 3)) for _ in range(5)]
    errs, margins, per_size = [], [], {}
    for n, w in sizes:
        B = patterns.band_mask(n, w)
        bound = math.sqrt(1 - (2 * w + 1) ** 2 / ((2 * w + 1) * n - w * (w + 1)))
        for name, X in (("band", B), ("row-centred band", gradients.row_centre(B))):
            distance = float(rank_one.rank_one_distance(X))
            errs.append(abs(distance - rank_one_residual(X)))
            if name == "band":
                margins.append(distance - bound)
            per_size[f"{name} n={n} w={w}"] = {"rank_one_distance": distance, "proven_lower_bound": bound,
                                               "rank_for_90pct_energy": rank_one.rank_for_energy(X, 0.9)}
    gen = torch.Generator().manual_seed(44)
    outer = torch.outer(torch.randn(12, generator=gen, dtype=torch.float64),
                        torch.randn(9, generator=gen, dtype=torch.float64))
    return {"max_abs_err_vs_residual": max(errs), "min_margin_over_bound": min(margins),
            "outer_product_distance": float(rank_one.rank_one_distance(outer)), "cases": per_size}

# --------------------------------------------------------------------------- T5

def with_unmasked_noise(G: Tensor, masked: Tensor, gen: torch.Generator) -> Tensor:
    r"""``G`` with Gaussian noise of ``G``'s size written into the unmasked rows.

    Autograd's ``g_i`` are already 0 at unmasked rows, so passing them unchanged would never test that
    :func:`gradients.rec_score_grad_uniform` drops those rows; with this input a closed form that ignores
    ``masked`` is off by O(1).
    """
    noise = torch.randn(G.shape, generator=gen, dtype=G.dtype) * (G.norm() / G.numel() ** 0.5 + 1.0)
    return torch.where(masked.unsqueeze(-1), G, noise)


def rank_counter_cases(n: int = 12, d: int = 6, seed: int = 63) -> dict:
    r"""T5's rank at uniform attention: ``rank(dL_rec/dS) = dim span{g_i : i masked}`` (generically).

    At uniform attention every ``y_i`` is the same bag mean ``y``, so a CE head gives
    ``g_i = W^T (q(y) - e_{t_i})``: one vector per distinct target, and ``q - e_0``, ``q - e_1`` are
    parallel for 2 classes.  Counter-cases (``sigma_2 / sigma_1`` of the score gradient): all masked
    targets equal (3-class CE) and a binary CE head with distinct targets are rank one; two distinct
    targets under 3-class CE give rank exactly two (``sigma_3 / sigma_1 ~ 0``).
    """
    gen = torch.Generator().manual_seed(seed)
    f64 = torch.float64
    V = torch.randn(n, d, generator=gen, dtype=f64)
    masked = torch.arange(n) % 2 == 0
    S = torch.zeros(n, n, dtype=f64)

    def sigmas(kind: str, classes: int, target: Tensor) -> Tensor:
        weight = (torch.randn(classes, d, generator=gen, dtype=f64) if kind == "ce"
                  else torch.randn(d, generator=gen, dtype=f64))
        bias = torch.randn(classes if kind == "ce" else (), generator=gen, dtype=f64)
        loss = RowLoss(kind, weight, bias, target if kind == "ce" else target.to(f64))
        grad = rec_autograd(Instance(S, V, loss, loss, masked)).grad_S
        s = torch.linalg.svdvals(grad)
        return s / s[0]

    one = sigmas("ce", 3, torch.full((n,), 2))
    binary = sigmas("bce", 2, torch.arange(n) % 4 // 2)
    two = sigmas("ce", 3, torch.arange(n) % 4 // 2)
    return {"one target, 3-class CE": float(one[1]), "distinct targets, binary CE": float(binary[1]),
            "two targets, 3-class CE": {"sigma2/sigma1": float(two[1]), "sigma3/sigma1": float(two[2])}}

# --------------------------------------------------------------------------- X4 single-token readout

def off_row_change(inst: Instance, r: int, gen: torch.Generator) -> dict[str, float]:
    r"""Change ``S`` by an O(1) random matrix that is zero on row ``r``: the relative change of
    ``L_row`` (0 by X4 (a)) and, as the control, of the mean-pooled ``L_sup`` (not 0)."""
    delta = torch.randn(inst.S.shape, generator=gen, dtype=torch.float64)
    delta[r] = 0
    before, after = row_autograd(inst, r), row_autograd(inst, r, inst.S + delta)
    sup_before = sup_autograd(inst)
    sup_after = float(inst.pooled_loss(gradients.pooled_output(inst.S + delta, inst.V).unsqueeze(0))[0])
    return {"row": abs(float(after.loss - before.loss)) / (abs(float(before.loss)) + 1e-300),
            "mean_pool": abs(sup_after - float(sup_before.loss)) / (abs(float(sup_before.loss)) + 1e-300)}


def aligned_row(n: int, P: Tensor, r: int) -> dict[str, float]:
    r"""The equality case of X4 (4): values ``v_j = P_rj - mean(P_r)`` (d = 1, MSE loss): the ratio of
    ``|<dL_row/dS, P>|`` to the bound and the cosine next to :func:`readout.row_max_cosine`."""
    values = (P[r] - P[r].mean()).unsqueeze(1)
    inst = Instance(torch.zeros(n, n, dtype=torch.float64), values,
                    RowLoss("mse", torch.empty(0), torch.empty(0), torch.tensor([[-1.0]], dtype=torch.float64)),
                    RowLoss("mse", torch.empty(0), torch.empty(0), torch.zeros(n, 1, dtype=torch.float64)),
                    torch.ones(n, dtype=torch.bool))
    auto = row_autograd(inst, r)
    projection = abs(float(blind_directions.blind_projection(auto.grad_S, P)))
    return {"ratio_to_bound": projection / float(readout.row_projection_bound(inst.V, auto.grad_readout, P, r)),
            "cosine": projection / float(auto.grad_S.norm() * P.norm()),
            "max_cosine_formula": float(readout.row_max_cosine(P, r))}
