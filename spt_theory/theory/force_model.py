r"""The T9 force read off ``model.py`` by autograd: its inputs, and the checks of :mod:`~spt_theory.theory.force`.

:func:`features` gives the per-(token, position) inputs of the closed form (``chi^``, ``u``, ``W_O^h``,
``W_V^h``, ``o_0``).  The rest computes the force by float64 autograd through a softmax, without cumulants:

- :func:`linearised_scores_grad`, :func:`force_of_scores_grad`: ``F^h(x)`` of the closed form's object
  (Jacobian after attention frozen at ``o_0``, ``W_Q = W_K = 0``) for given sequences, and
  :func:`enumerated_force`, its exact sum over all ``V^n`` walks: the check of
  :func:`~spt_theory.theory.force.expected_force`;
- :func:`real_model_force`, :func:`enumerated_real_force`: ``model.py`` itself, at uniform attention or
  at its own init, which measure the two simplifications;
- :func:`sampled_projections`, :func:`mean_and_error`: Monte Carlo over sampled walks, for ``n`` too
  large to enumerate.

``proofs/T9_exact_force.md``.
"""

from __future__ import annotations

import copy
import math

import torch
from torch import Tensor

from spt_theory.core.model import Encoder
from spt_theory.theory import per_token
from synthetic.walk import sequence_probability

READOUTS = ("model", "linear")


def features(model: Encoder, vocab: int, length: int, readout: str = "model") -> dict[str, Tensor]:
    r"""Per-(token, position) inputs of the force, float64: ``chi^``, ``u`` and each head's ``W_O^h``, ``W_V^h``.

    Parameters
    ----------
    model : Encoder
        A 1-layer, mean-pooled, linear-head, 2-class model (copied to float64, not changed; its
        ``W_Q``, ``W_K`` are not read).
    vocab, length : int
        The walk's ``V`` and ``n`` (``n`` at most the model's positional table).
    readout : {"model", "linear"}
        ``u = J^T w`` with ``J`` the Jacobian of the map after attention at ``o_0``, or ``u = w``.

    Returns
    -------
    dict[str, Tensor]
        ``chi_hat`` [V, n, d+1] (``[LN_1(E a + P_t); 1]``), ``u`` [V, n, d], ``w_out`` [H, d, d_h]
        (``W_O^h``), ``w_v`` [H, d_h, d] (``W_V^h``) and ``o0`` [d].

    References
    ----------
    proofs/T9_exact_force.md.
    """
    if readout not in READOUTS:
        raise ValueError(f"readout must be one of {READOUTS}, got {readout!r}")
    if length > model.pe.shape[0]:
        raise ValueError(f"length {length} exceeds the model's positional table ({model.pe.shape[0]})")
    model = copy.deepcopy(model).double()
    h, chi = per_token.token_features(model, vocab, length)  # [V, n, d]
    h, chi = h.detach(), chi.detach()
    o0 = per_token.value_mean(model, chi.mean(dim=(0, 1))).detach()  # [d]
    w = per_token.label_direction(model).detach()
    if readout == "linear":
        u = w.expand_as(chi).clone()
    else:
        o = o0.expand_as(h).clone().requires_grad_(True)
        (u,) = torch.autograd.grad((per_token.per_token_map(model, h, o) @ w).sum(), o)
    attn = model.blocks[0].attn
    H, dh = attn.n_heads, attn.d_head
    w_out = attn.out.weight.detach().unflatten(1, (H, dh)).permute(1, 0, 2)  # [H, d, d_h]
    w_v = attn.v.weight.detach().unflatten(0, (H, dh))  # [H, d_h, d]
    ones = torch.ones(*chi.shape[:2], 1, dtype=chi.dtype)
    return {"chi_hat": torch.cat([chi, ones], dim=-1), "u": u.detach(), "w_out": w_out, "w_v": w_v, "o0": o0}

# --------------------------------------------------------------------------- checks of the formula

def linearised_scores_grad(feats: dict[str, Tensor], x: Tensor, model: Encoder) -> tuple[Tensor, Tensor]:
    r"""Per-sequence ``d(w^T z_lin)/dS`` at ``S = 0`` by float64 autograd through a softmax, and ``chi^``.

    ``z_lin = (1/n) sum_i [Psi(x_i, i, o_0) + J_i (o_i - o_0)]``: only ``u_i . o_i`` depends on ``S``.

    Parameters
    ----------
    feats : dict[str, Tensor]
        :func:`features` of ``model``.
    x : Tensor [batch, n], long
        Sequences.
    model : Encoder
        The model (its first block's ``W_V``, ``W_O``).

    Returns
    -------
    dS : Tensor [batch, head, query, key], float64
        The score gradient.
    chi_hat : Tensor [batch, n, d+1], float64
        ``chi^`` of each position.

    References
    ----------
    proofs/T9_exact_force.md.
    """
    n = x.shape[1]
    pos = torch.arange(n)
    chi = feats["chi_hat"][x, pos]  # [batch, n, D]
    u = feats["u"][x, pos]  # [batch, n, d]
    attn = model.blocks[0].attn
    H = attn.n_heads
    S = torch.zeros(x.shape[0], H, n, n, dtype=torch.float64, requires_grad=True)  # [batch, head, query, key]
    v = attn.v(chi[..., :-1].to(attn.v.weight.dtype)).double().unflatten(-1, (H, attn.d_head)).transpose(1, 2)
    y = S.softmax(-1) @ v  # [batch, head, query, d_h]
    o = attn.out(y.transpose(1, 2).flatten(2).to(attn.out.weight.dtype)).double()  # [batch, n, d]
    (dS,) = torch.autograd.grad((u * o).sum() / n, S)
    return dS, chi


def force_of_scores_grad(dS: Tensor, chi_hat: Tensor) -> Tensor:
    r"""``F^h = chi^^T dS^h chi^`` per sequence: a score gradient pulled back to ``M^h``.

    Parameters
    ----------
    dS : Tensor [batch, head, query, key]
        ``d(w^T z)/dS``.
    chi_hat : Tensor [batch, n, d+1]
        ``chi^``.

    Returns
    -------
    Tensor [batch, head, d+1, d+1]
        ``F^h(x)``.

    References
    ----------
    proofs/T9_exact_force.md.

    Examples
    --------
    >>> force_of_scores_grad(torch.ones(1, 1, 2, 2), torch.tensor([[[1.0], [2.0]]])).tolist()
    [[[[9.0]]]]
    """
    return chi_hat[:, None].transpose(-1, -2) @ dS @ chi_hat[:, None]


def enumerated_force(model: Encoder, vocab: int, length: int, p: float, readout: str = "model",
                     chunk: int = 4096) -> Tensor:
    r"""``E[F^h | y]`` by exact enumeration of all ``V^n`` walks (tiny ``V^n`` only): the check of the closed form.

    Parameters
    ----------
    model, vocab, length, p, readout
        As in :func:`~spt_theory.theory.force.expected_force`; ``model`` is cast to float64 in place.
    chunk : int
        Sequences per autograd call.

    Returns
    -------
    Tensor [class, head, d+1, d+1], float64
        ``E[F^h | y]``.

    References
    ----------
    proofs/T9_exact_force.md (Verified by).
    """
    model = model.double()
    feats = features(model, vocab, length, readout)
    seqs = per_token.all_sequences(vocab, length)
    probs = per_token.class_laws(lambda x, y: sequence_probability(x, y, vocab, p), seqs)  # [2, N]
    total = torch.zeros((), dtype=torch.float64)
    for start in range(0, len(seqs), chunk):
        x = seqs[start:start + chunk]
        dS, chi = linearised_scores_grad(feats, x, model)
        F = force_of_scores_grad(dS, chi)  # [batch, head, D, D]
        total = total + torch.einsum("yb,bhij->yhij", probs[:, start:start + chunk], F)
    return total


def real_model_force(model: Encoder, x: Tensor, uniform: bool = True) -> Tensor:
    r"""Per-sequence ``d(w^T z)/dM^h`` of ``model.py`` itself, float64 (no frozen Jacobian).

    Parameters
    ----------
    model : Encoder
        The model (copied, not changed).
    x : Tensor [batch, n], long
        Sequences.
    uniform : bool
        At ``W_Q = W_K = 0`` (the value path ``o(x)`` sequence-dependent inside ``J``), or at the
        model's own ``W_Q``, ``W_K`` (the real init: attention not uniform).

    Returns
    -------
    Tensor [batch, head, d+1, d+1], float64
        ``F^h(x)``.

    References
    ----------
    proofs/T9_exact_force.md (where the computation is simpler than ``model.py``).
    """
    model = copy.deepcopy(model).double()
    if uniform:
        model = per_token.zero_scores(model)
    _, cache = model.run_with_cache(x)
    w = per_token.label_direction(model)
    (cache["pooled"] @ w).sum().backward()
    dS = cache["blocks.0.attn.scores"].grad  # [batch, head, query, key]
    model.zero_grad(set_to_none=True)
    chi = model.blocks[0].ln_attn(cache["embed"]).detach()
    chi_hat = torch.cat([chi, torch.ones(*chi.shape[:2], 1, dtype=chi.dtype)], dim=-1)
    return force_of_scores_grad(dS, chi_hat)


def enumerated_real_force(model: Encoder, vocab: int, length: int, p: float, uniform: bool = True) -> Tensor:
    r""":func:`real_model_force` averaged exactly over all ``V^n`` walks of each class.

    Parameters
    ----------
    model, vocab, length, p
        As in :func:`~spt_theory.theory.force.expected_force`.
    uniform : bool
        As in :func:`real_model_force`.

    Returns
    -------
    Tensor [class, head, d+1, d+1], float64
        ``E[F^h | y]`` of ``model.py``.

    References
    ----------
    proofs/T9_exact_force.md.
    """
    seqs = per_token.all_sequences(vocab, length)
    probs = per_token.class_laws(lambda x, y: sequence_probability(x, y, vocab, p), seqs)
    return torch.einsum("yb,bhij->yhij", probs, real_model_force(model, seqs, uniform))


def sampled_projections(model: Encoder, vocab: int, length: int, p: float, directions: Tensor, size: int,
                        seed: int, kinds: tuple[str, ...] = ("linearised",), chunk: int = 500) -> dict[str, Tensor]:
    r"""Per-sequence ``<D_k, F(x)>`` on ``size`` sampled walks per class, for Monte Carlo checks.

    Both classes use the same generator draws (fresh tokens, step mask; only the step sign
    differs: common random numbers), and every kind sees the same sequences, so differences
    between classes and between kinds can be averaged pairwise.

    Parameters
    ----------
    model, vocab, length, p
        As in :func:`~spt_theory.theory.force.expected_force` (readout ``model``).
    directions : Tensor [K, head, d+1, d+1]
        ``D_k``; the projection is ``sum_{h,i,j} D_k[h, i, j] F^h_ij``.
    size, seed : int
        Walks per class and the walks' seed.
    kinds : tuple of {"linearised", "uniform", "init"}
        :func:`linearised_scores_grad` (this module's object), and :func:`real_model_force` at
        ``W_Q = W_K = 0`` or at the model's own ``W_Q``, ``W_K``.
    chunk : int
        Walks per autograd call.

    Returns
    -------
    dict[str, Tensor]
        ``{kind: [class, size, K]}``, float64.

    References
    ----------
    proofs/T9_exact_force.md (Measured: Monte Carlo).
    """
    from synthetic.walk import generate_walk

    model = copy.deepcopy(model).double()
    feats = features(model, vocab, length)
    directions = directions.to(torch.float64)
    out: dict[str, list] = {kind: [[], []] for kind in kinds}
    for y in (0, 1):
        x, _ = generate_walk(vocab, length, p, size, seed, labels=torch.full((size,), y))
        for start in range(0, size, chunk):
            xb = x[start:start + chunk]
            for kind in kinds:
                if kind == "linearised":
                    F = force_of_scores_grad(*linearised_scores_grad(feats, xb, model))
                else:
                    F = real_model_force(model, xb, uniform=kind == "uniform")
                out[kind][y].append(torch.einsum("bhij,khij->bk", F, directions))  # [batch, K]
    return {kind: torch.stack([torch.cat(parts) for parts in per_class]) for kind, per_class in out.items()}


def mean_and_error(samples: Tensor) -> tuple[Tensor, Tensor]:
    r"""Mean and standard error over the samples.

    Parameters
    ----------
    samples : Tensor [..., size, K]
        Samples along dim -2.

    Returns
    -------
    mean, error : Tensor [..., K]
        The mean and ``std / sqrt(size)``.

    References
    ----------
    proofs/T9_exact_force.md (Monte Carlo z-scores).

    Examples
    --------
    >>> [round(float(t), 6) for t in mean_and_error(torch.tensor([[1.0], [2.0], [3.0]]))]
    [2.0, 0.57735]
    """
    return samples.mean(-2), samples.std(-2) / math.sqrt(samples.shape[-2])
