r"""Measurements behind the lemma checks T1-T5 and X4 (:mod:`spt_theory.checks.theory`): what a
change of ``S`` does to the loss, how far a score gradient is from a lemma's structure, the
rank-one distance of T4's band, T5's rank counter-cases, and X4's off-row changes and aligned rows.
T3's projections on blind patterns and Toeplitz kernels are :mod:`spt_theory.analysis.lemma_measures_t3`.

Each function returns numbers; the thresholds they are held to are the claims' own, in
:mod:`spt_theory.checks.theory`.  Instances are :mod:`spt_theory.analysis.lemma_instances`, autograd
references :mod:`spt_theory.analysis.lemma_harness`; closed forms in :mod:`spt_theory.theory` (``gradients``,
``patterns``, ``blind_directions``, ``rank_one``, ``readout``).
"""

from __future__ import annotations

import math
import random

import torch
from torch import Tensor

from spt_theory.analysis.lemma_harness import rec_autograd, row_autograd, sup_autograd
from spt_theory.analysis.lemma_instances import Instance, RowLoss
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
    r"""T1 (ii): the relative change of ``L_sup`` when ``A`` changes by a ``Delta`` with zero row sums.

    ``|L_sup(A + Delta) - L_sup(A)| / (|L| + |grad l(z)|_1 max|V|)``, ``Delta`` as in
    :func:`_column_preserving_change`; the denominator is the loss's rounding scale (the absolute
    change when it is 0: zero values and a zero loss).

    Parameters
    ----------
    inst : Instance
        The problem (its ``S``, ``V``, ``pooled_loss``).
    gen : torch.Generator
        Draws ``Delta``.
    keep_columns : bool
        ``Delta`` with zero column sums too (T1: no change), or not (the negative control).

    Returns
    -------
    float
        The relative change.

    References
    ----------
    proofs/T1_column_sums.md (ii).

    Examples
    --------
    >>> from spt_theory.analysis.lemma_instances import random_instance
    >>> gen = torch.Generator().manual_seed(0)
    >>> inst = random_instance(gen, n=6, d=3, kind="bce")
    >>> loss_after_attention_change(inst, gen, True) < 1e-12, loss_after_attention_change(inst, gen, False) > 1e-6
    (True, True)
    """
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
    ``sigma2`` (0 iff rank <= 1), and ``column_sum_error = ||G^T 1 - (b - mean(b) 1)||`` with
    ``b_j = (1/n) grad l(z)^T v_j`` computed here from ``V`` and ``grad l(z)`` (T2: column ``k`` sums
    to ``b_k - mean(b)``).  Row sums are not a condition: ``G 1 = 0`` for the score gradient of
    *every* softmax, at every ``S``.

    Parameters
    ----------
    G : Tensor [n, n]
        A score gradient.
    V : Tensor [n, d]
        Values.
    grad_z : Tensor [d]
        ``grad l(z)``.
    scale : Tensor []
        The error scale (:func:`~spt_theory.analysis.lemma_harness.softmax_backward_scale`).

    Returns
    -------
    dict[str, float]
        ``row_spread``, ``sigma2``, ``column_sum_error``.

    References
    ----------
    proofs/T2_uniform_gradient.md.

    Examples
    --------
    >>> f64 = torch.float64
    >>> V, grad_z = torch.tensor([[1.0], [3.0]], dtype=f64), torch.tensor([2.0], dtype=f64)  # b - mean(b) = (-1, 1)
    >>> G = torch.tensor([[-0.5, 0.5], [-0.5, 0.5]], dtype=f64)  # T2: (1/n) 1 (b - mean(b) 1)^T
    >>> {k: round(v, 12) for k, v in uniform_gradient_structure(G, V, grad_z, torch.tensor(1.0)).items()}
    {'row_spread': 0.0, 'sigma2': 0.0, 'column_sum_error': 0.0}
    """
    n = G.shape[0]
    b = V @ grad_z / n
    divisor = float(scale) if float(scale) > 0 else 1.0  # absolute figures when the scale is 0
    return {"row_spread": float((G - G[0]).norm()) / divisor,
            "sigma2": float(torch.linalg.svdvals(G)[1]) / divisor if n > 1 else 0.0,
            "column_sum_error": float((G.sum(dim=0) - (b - b.mean())).norm()) / divisor}

# --------------------------------------------------------------------------- T4

def rank_one_residual(X: Tensor) -> float:
    r"""``||X - sigma_1 u_1 v_1^T||_F / ||X||_F``: the best rank-one approximation's error, measured directly.

    Built from the full SVD, an implementation independent of
    :func:`~spt_theory.theory.rank_one.rank_one_distance`, which uses Eckart-Young's
    ``sqrt(1 - sigma_1^2 / ||X||_F^2)``.

    Parameters
    ----------
    X : Tensor [m, n]
        Any non-zero matrix.

    Returns
    -------
    float
        In ``[0, 1]``; 0 iff ``X`` has rank one.

    References
    ----------
    proofs/T4_rank_one_update.md.

    Examples
    --------
    >>> round(rank_one_residual(torch.eye(2, dtype=torch.float64)) ** 2, 12)  # sqrt(1 - 1/2)
    0.5
    """
    U, sigma, Vh = torch.linalg.svd(X)
    return float((X - sigma[0] * torch.outer(U[:, 0], Vh[0])).norm() / X.norm())


def band_rank_one_figures() -> dict:
    r"""T4's band: ``rank_one_distance`` of ``B = band_mask(n, w)`` (and of ``B C``) against
    :func:`rank_one_residual` and against the proven lower bound, over fixed and drawn ``(n, w)``.

    The bound is ``sqrt(1 - (2w+1)^2 / ||B||_F^2)``, ``||B||_F^2 = (2w+1) n - w (w+1)``; a random outer
    product's distance (0) is the control.

    Returns
    -------
    dict
        ``max_abs_err_vs_residual``, ``min_margin_over_bound`` (>= 0 when the bound holds),
        ``outer_product_distance`` and ``cases`` (per ``(n, w)``: the distance, the bound and
        :func:`~spt_theory.theory.rank_one.rank_for_energy` at 90%).

    References
    ----------
    proofs/T4_rank_one_update.md.
    """
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
    :func:`~spt_theory.theory.gradients.rec_score_grad_uniform` drops those rows; with this input a
    closed form that ignores ``masked`` is off by O(1).

    Parameters
    ----------
    G : Tensor [n, d]
        The rows ``g_i``.
    masked : Tensor [n], bool
        The reconstructed rows.
    gen : torch.Generator
        Draws the noise.

    Returns
    -------
    Tensor [n, d]
        ``G`` at masked rows, noise elsewhere.

    References
    ----------
    proofs/T5_reconstruction_sees_proximity.md.

    Examples
    --------
    >>> G, masked = torch.ones(3, 2), torch.tensor([True, False, True])
    >>> out = with_unmasked_noise(G, masked, torch.Generator().manual_seed(0))
    >>> bool((out[masked] == 1).all()), bool((out[1] != 1).all())
    (True, True)
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

    Parameters
    ----------
    n, d : int
        Tokens and value width (every other row masked).
    seed : int
        Seeds ``V`` and the heads.

    Returns
    -------
    dict
        ``one target, 3-class CE`` and ``distinct targets, binary CE`` (``sigma_2 / sigma_1``, ~1e-16),
        ``two targets, 3-class CE`` (``{"sigma2/sigma1", "sigma3/sigma1"}``: O(1) and ~1e-16).

    References
    ----------
    proofs/T5_reconstruction_sees_proximity.md.

    Examples
    --------
    >>> r = rank_counter_cases()
    >>> r["one target, 3-class CE"] < 1e-12, r["distinct targets, binary CE"] < 1e-12
    (True, True)
    >>> r["two targets, 3-class CE"]["sigma2/sigma1"] > 0.1, r["two targets, 3-class CE"]["sigma3/sigma1"] < 1e-12
    (True, True)
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
    r"""X4 (a): change ``S`` by an O(1) random matrix that is zero on row ``r``.

    Parameters
    ----------
    inst : Instance
        The problem.
    r : int
        The readout row.
    gen : torch.Generator
        Draws the change.

    Returns
    -------
    dict[str, float]
        ``row``: the relative change of ``L_row`` (0 by X4 (a)); ``mean_pool``: of the mean-pooled
        ``L_sup`` (not 0: the control).

    References
    ----------
    proofs/X4_readout_blindness.md (a).

    Examples
    --------
    >>> from spt_theory.analysis.lemma_instances import random_instance
    >>> gen = torch.Generator().manual_seed(0)
    >>> change = off_row_change(random_instance(gen, n=6, d=3, kind="bce"), 0, gen)
    >>> change["row"], change["mean_pool"] > 1e-6
    (0.0, True)
    """
    delta = torch.randn(inst.S.shape, generator=gen, dtype=torch.float64)
    delta[r] = 0
    before, after = row_autograd(inst, r), row_autograd(inst, r, inst.S + delta)
    sup_before = sup_autograd(inst)
    sup_after = float(inst.pooled_loss(gradients.pooled_output(inst.S + delta, inst.V).unsqueeze(0))[0])
    return {"row": abs(float(after.loss - before.loss)) / (abs(float(before.loss)) + 1e-300),
            "mean_pool": abs(sup_after - float(sup_before.loss)) / (abs(float(sup_before.loss)) + 1e-300)}


def aligned_row(n: int, P: Tensor, r: int) -> dict[str, float]:
    r"""The equality case of X4 (4): values ``v_j = P_rj - mean(P_r)`` (``d = 1``, MSE loss).

    Parameters
    ----------
    n : int
        Tokens.
    P : Tensor [n, n], float64
        A pattern.
    r : int
        The readout row.

    Returns
    -------
    dict[str, float]
        ``ratio_to_bound``, ``|<dL_row/dS, P>|`` over the bound (1 when attained); ``cosine`` and
        ``max_cosine_formula``, :func:`~spt_theory.theory.readout.row_max_cosine` (equal when attained).

    References
    ----------
    proofs/X4_readout_blindness.md (4).

    Examples
    --------
    >>> from spt_theory.theory.patterns import band_mask
    >>> a = aligned_row(5, band_mask(5, 1).double(), 0)
    >>> round(a["ratio_to_bound"], 12), round(a["cosine"] - a["max_cosine_formula"], 12)
    (1.0, 0.0)
    """
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
