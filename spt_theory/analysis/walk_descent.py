r"""T5 on walk data: the descent direction of the reconstruction loss at uniform attention.

One-hot values of masked walk sequences (:func:`masked_walk`), the linear decoder SPT trains first
while the scores are still uniform (:func:`fit_uniform_decoder`), and the coordinates of
``-dL_rec/dS`` on the proximity directions with 95% intervals (:func:`walk_descent`,
:func:`walk_monte_carlo`), which claim T5 (:mod:`spt_theory.checks.theory`) holds to its threshold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from spt_theory import stats
from spt_theory.theory import gradients, patterns
from synthetic.walk import generate_walk


@dataclass(frozen=True)
class MaskedWalk:
    """Walk sequences, their mask, and one-hot values of the model input (mask token = ``vocab``)."""

    tokens: Tensor
    masked: Tensor
    values: Tensor


def masked_walk(vocab: int, length: int, p: float, mask_rate: float, size: int, seed: int) -> MaskedWalk:
    """``size`` walk sequences with each position masked independently with probability ``mask_rate``.

    Parameters
    ----------
    vocab : int
        Tokens ``V`` (the mask token is ``V``).
    length : int
        Sequence length ``n``.
    p : float
        The walk's step probability.
    mask_rate : float
        Probability that a position is masked.
    size : int
        Sequences.
    seed : int
        Seeds the walk (``seed``) and the mask (``seed + 1``).

    Returns
    -------
    MaskedWalk
        ``tokens : Tensor [size, n]``, ``masked : Tensor [size, n], bool`` and
        ``values : Tensor [size, n, V + 1], float64`` (one-hot of the input, masked tokens as ``V``).

    References
    ----------
    proofs/T5_reconstruction_sees_proximity.md.

    Examples
    --------
    >>> data = masked_walk(4, 5, 0.5, 0.3, 2, seed=0)
    >>> tuple(data.values.shape), bool((data.values.sum(dim=-1) == 1).all())
    ((2, 5, 5), True)
    """
    x, _ = generate_walk(vocab, length, p, size, seed)
    masked = torch.rand(size, length, generator=torch.Generator().manual_seed(seed + 1)) < mask_rate
    values = F.one_hot(torch.where(masked, vocab, x), vocab + 1).to(torch.float64)
    return MaskedWalk(x, masked, values)


def _decoder_gradients(data: MaskedWalk, weight: Tensor, bias: Tensor) -> Tensor:
    r"""``g_i = grad_y CE(W y + c, x_i)`` at the uniform-attention output ``y_i = mean_j v_j``."""
    Y = data.values.mean(dim=1, keepdim=True).expand_as(data.values).clone().requires_grad_(True)
    loss = F.cross_entropy((Y @ weight.T + bias)[data.masked], data.tokens[data.masked], reduction="sum")
    (grad,) = torch.autograd.grad(loss, Y)
    return grad


def fit_uniform_decoder(data: MaskedWalk, vocab: int) -> tuple[Tensor, Tensor]:
    r"""The linear decoder ``(W, c)`` minimising masked-token CE when attention is uniform.

    At uniform attention every masked position sees ``y = mean_j v_j`` (the bag of unmasked tokens),
    so this is multinomial logistic regression of the masked token on the bag: the decoder SPT
    trains first, while the scores are still uniform.

    Parameters
    ----------
    data : MaskedWalk
        The sequences to fit on (:func:`masked_walk`).
    vocab : int
        Tokens ``V``.

    Returns
    -------
    weight : Tensor [V, V + 1], float64
        ``W``.
    bias : Tensor [V], float64
        ``c``.

    References
    ----------
    proofs/T5_reconstruction_sees_proximity.md.
    """
    weight = torch.zeros(vocab, data.values.shape[-1], dtype=torch.float64, requires_grad=True)
    bias = torch.zeros(vocab, dtype=torch.float64, requires_grad=True)
    bag = data.values.mean(dim=1, keepdim=True).expand_as(data.values)[data.masked]
    target = data.tokens[data.masked]
    opt = torch.optim.LBFGS([weight, bias], max_iter=100, line_search_fn="strong_wolfe")

    def closure() -> Tensor:
        opt.zero_grad()
        loss = F.cross_entropy(bag @ weight.T + bias, target) + 1e-4 * (weight ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return weight.detach(), bias.detach()


def confidence_interval(samples: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Per column: mean and the Student-t 95% interval ``mean -+ t(0.975, N - 1) sd / sqrt(N)``
    (:func:`spt_theory.stats.t_quantile`).

    Parameters
    ----------
    samples : Tensor [N, K]
        ``N`` samples of ``K`` figures.

    Returns
    -------
    mean, low, high : Tensor [K]
        The mean and the interval's ends.

    References
    ----------
    proofs/T5_reconstruction_sees_proximity.md.

    Examples
    --------
    >>> [[round(v, 4) for v in t.tolist()] for t in confidence_interval(torch.tensor([[0.0], [2.0]]))]
    [[1.0], [-11.7062], [13.7062]]
    """
    n = samples.shape[0]
    mean, half = samples.mean(dim=0), stats.t_quantile(0.95, n - 1) * samples.std(dim=0) / math.sqrt(n)
    return mean, mean - half, mean + half


def walk_descent(data: MaskedWalk, weight: Tensor, bias: Tensor, max_offset: int) -> dict:
    r"""The reconstruction descent direction ``-dL_rec/dS`` at uniform attention on walk data.

    Per sequence, its coordinates ``<-dL_rec/dS, D_k>`` on the (non-circular) proximity directions
    with a 95% interval of their mean, and the proximity share of the mean direction.

    Parameters
    ----------
    data : MaskedWalk
        Masked walk sequences (:func:`masked_walk`).
    weight : Tensor [V, V + 1], float64
        The decoder's ``W``.
    bias : Tensor [V], float64
        The decoder's ``c``.
    max_offset : int
        Proximity directions ``D_1 .. D_K``, ``K = max_offset``.

    Returns
    -------
    dict
        ``mean``, ``ci95_low``, ``ci95_high`` (lists of ``K`` floats) and
        ``proximity_share_of_mean_direction`` (float in [0, 1]).

    References
    ----------
    proofs/T5_reconstruction_sees_proximity.md.
    """
    descent = -gradients.rec_score_grad_uniform(data.values, _decoder_gradients(data, weight, bias), data.masked)
    directions = patterns.proximity_directions(data.tokens.shape[1], max_offset, circular=False)
    mean, low, high = confidence_interval(patterns.proximity_coordinates(descent, directions))
    return {"mean": mean.tolist(), "ci95_low": low.tolist(), "ci95_high": high.tolist(),
            "proximity_share_of_mean_direction": float(patterns.proximity_share(descent.mean(dim=0), directions))}


def walk_monte_carlo(full: bool = False, vocab: int = 16, length: int = 32, p: float = 0.5,
                     mask_rate: float = 0.15, max_offset: int = 3) -> dict:
    r"""T5 on walk data: the expected descent direction of ``L_rec`` on the proximity directions.

    One-hot values of the input tokens (mask token = ``vocab``), a linear decoder for masked-token
    CE fitted at uniform attention (:func:`fit_uniform_decoder`), and, as a contrast, the identity
    decoder (predict the token you see), whose descent direction favours *equal* tokens, which the
    walk makes rarer near the diagonal.  ``full``: the sample sizes of ``verify --full`` (8000 sequences
    to fit, 20000 for the Monte Carlo), else 2000 and 4000.

    Parameters
    ----------
    full : bool
        The sample sizes of ``verify --full``.
    vocab, length : int
        Tokens ``V`` and sequence length ``n``.
    p : float
        The walk's step probability.
    mask_rate : float
        Probability that a position is masked.
    max_offset : int
        Proximity directions ``K``.

    Returns
    -------
    dict
        ``task`` (the settings and sample sizes), ``fitted_decoder`` and ``identity_decoder`` (each
        as :func:`walk_descent` returns it).

    References
    ----------
    proofs/T5_reconstruction_sees_proximity.md.
    """
    fit_size, mc_size = (8000, 20000) if full else (2000, 4000)
    weight, bias = fit_uniform_decoder(masked_walk(vocab, length, p, mask_rate, fit_size, seed=50), vocab)
    data = masked_walk(vocab, length, p, mask_rate, mc_size, seed=51)
    identity = torch.cat([torch.eye(vocab), torch.zeros(vocab, 1)], dim=1).to(torch.float64)
    return {"task": {"vocab": vocab, "length": length, "p": p, "mask_rate": mask_rate,
                     "fit_sequences": fit_size, "mc_sequences": mc_size, "offsets": list(range(1, max_offset + 1))},
            "fitted_decoder": walk_descent(data, weight, bias, max_offset),
            "identity_decoder": walk_descent(data, identity, torch.zeros(vocab, dtype=torch.float64), max_offset)}
