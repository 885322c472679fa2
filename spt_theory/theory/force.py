r"""The exact first-order label force on M for the real model at uniform attention (lemma T9).

Object (the one of T8 (a), ``proofs/T9_exact_force.md``).  Head h of the 1-layer ``model.py`` has
scores ``S^h = chi^ M^h chi^^T`` with ``chi^_i = [LN_1(E x_i + P_i); 1]`` (d + 1 entries) and
``M^h = [W_Q^h, b_Q^h]^T [W_K^h, b_K^h] / sqrt(d_h)``.  With a linear head and equal class priors
the label part of the expected CE loss is exactly ``-(1/4) w^T (E[z | 1] - E[z | 0])``,
``w = W_1 - W_0`` (T7 (ii)), so its gradient in M is ``-(1/4) B`` with the **label force**

    B^h = E[F^h | y = 1] - E[F^h | y = 0],   F^h(x) = d(w^T z(x)) / dM^h   at W_Q = W_K = 0,

every other parameter at its initial value.  At uniform attention ``d y_i^h / dS_ik = (v_k - vbar) / n``:

    F^h(x) = (1/n^2) sum_{i,k} (ut_i . (g_k - gbar)) chi^_i chi^_k^T,
    ut_i = W_O^h^T u_i,  g_k = W_V^h chi_k,  gbar = (1/n) sum_j g_j,  u_i = J_i^T w,

J_i = d Psi(x_i, i, o) / d o the Jacobian of the per-token map after attention (T7: residual, LN_2,
MLP, LN_f) at the attention output o.  In the model ``o(x) = b_O + W_O (W_V m(x) + b_V)`` depends
on the whole sequence; this module freezes it at its mean, ``o_0 = b_O + W_O (W_V m_0 + b_V)``,
``m_0 = E m(x)`` (the **one simplification**: first order in the fluctuation of the value path
inside J; :func:`sampled_force` measures the real model's difference).  Then u_i = u(x_i, i)
is per-token and F is a sum of products of per-position functions over pairs (i, k) and, through
gbar, triples (i, j, k): E_y[F] is exact from the walk's two- and three-point laws.

Walk in the comoving frame ``c_t = x_t - s t (mod V)`` (s = +1 class 1, -1 class 0): c stays
with probability p and is fresh uniform otherwise, so positions t < t' share c with probability
p^(t'-t) and, for per-position functions with centred versions f~ (mean over the V tokens),

    Cov(f_t, g_t') = p^|t-t'| <f~ g~>,   kappa_3(f_t1, g_t2, h_t3) = p^(max - min) <f~ g~ h~>,

``<.> = (1/V) sum_c`` at the comoving token c (coincident positions included).  With the sums
X = sum a_t (a = chi^ ut^T), Y = sum g_t, Z = sum chi^_t, W = sum g_t chi^_t^T:

    E[F] = E[X W] / n^2 - E[X Y Z^T] / n^3,   E[XW] = EX EW + Cov(X, W),
    E[X Y Z^T] = kappa_3 + EX Cov(Y, Z) + Cov(X EY, Z) + Cov(X, Y) EZ^T + EX EY EZ^T,

each sum over positions a dense n x n kernel (``# [token, position, position]``); the triple sum
over the middle index is ``sum_t p^(max-min) f_t = p^|t1-t3| (P_max + N_min)`` (:func:`_middle`).
Cost O(V n^2 d) per head: n = 400, 4 heads in ~5 s on one busy core.  :func:`enumerated_force` is the check: the
same object by float64 autograd through a softmax, summed over all V^n sequences.

``readout="linear"``: the idealised readout Psi(o) = o (u = w), the setting of T1-T5.
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
    r"""Per-(token, position) inputs of the force, float64.

    Parameters
    ----------
    model: a 1-layer, mean-pooled, linear-head :class:`Encoder` (any W_Q, W_K: they are not read).
    vocab, length: the walk's V and n.
    readout: ``model`` (u = J^T w at o_0) or ``linear`` (u = w).

    Returns
    -------
    ``chi_hat`` [V, n, d+1], ``u`` [V, n, d], ``w_out`` [H, d, d_h] (W_O^h), ``w_v`` [H, d_h, d]
    (W_V^h), ``o0`` [d].
    """
    if readout not in READOUTS:
        raise ValueError(f"readout must be one of {READOUTS}, got {readout!r}")
    if length > model.pe.shape[0]:
        raise ValueError(f"length {length} exceeds the model's positional table ({model.pe.shape[0]})")
    model = copy.deepcopy(model).double()
    h, chi = per_token.token_features(model, vocab, length)  # [V, n, d]
    h, chi = h.detach(), chi.detach()
    o0 = per_token.value_mean(model, chi.mean(dim=(0, 1))).detach()  # [d]
    w = (model.head.weight[1] - model.head.weight[0]).detach()
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


def comoving(f: Tensor, s: int) -> Tensor:
    r"""``f'[c, t] = f[(c + s t) mod V, t]`` for ``f`` [V, n, ...]: the feature at comoving token c."""
    V, n = f.shape[:2]
    idx = (torch.arange(V)[:, None] + s * torch.arange(n)[None, :]) % V  # [V, n]
    return f[idx, torch.arange(n)[None, :]]


def kernels(n: int, p: float) -> dict[str, Tensor]:
    r"""``P[t, t'] = p^|t-t'|`` and its parts: ``lower`` (t' <= t), ``strict_lower`` (t' < t),
    ``strict_upper`` (t' > t), each [n, n] float64 (0^0 = 1)."""
    t = torch.arange(n, dtype=torch.float64)
    P = torch.tensor(p, dtype=torch.float64) ** (t[:, None] - t[None, :]).abs()  # [position, position]
    return {"P": P, "lower": P.tril(), "strict_lower": P.tril(-1), "strict_upper": P.triu(1)}


def _middle(phi: Tensor, k: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
    r"""``(P_t, N_t)`` with ``sum_t2 p^(max(t1,t2,t3) - min(...)) phi_t2 = p^|t1-t3| (P_max + N_min)``.

    ``P_t = C_t + sum_{t'>t} p^(t'-t) phi_t'``, ``N_t = sum_{t'<t} p^(t-t') phi_t' - C_{t-1}``,
    ``C`` the cumulative sum; ``phi`` [..., n, k] along dim -2.
    """
    C = phi.cumsum(dim=-2)
    return C + k["strict_upper"] @ phi, k["strict_lower"] @ phi - (C - phi)


def _class_moments(a_parts: tuple[Tensor, Tensor], g: Tensor, e: Tensor, s: int,
                   k: dict[str, Tensor], means: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
    r"""The class-``s`` parts of ``E[X W]`` and ``E[X Y Z^T]`` (see the module doc), one head.

    ``a_parts = (chi_hat, ut)`` [V, n, D], [V, n, d_h]; ``g`` [V, n, d_h]; ``e`` = chi_hat [V, n, D].
    """
    chi, ut = (comoving(t, s) for t in a_parts)
    g, e = comoving(g, s), comoving(e, s)
    gc, ec = g - means["g"], e - means["e"]  # centred: sum over c is 0 at every t
    V = g.shape[0]
    P = k["P"]
    # E[X W] = EX EW + Cov(X, W);  <a_t b_t'> = chi_t (ut_t . g_t') chi_t'^T
    K = P * (ut @ g.transpose(-1, -2))  # [token, position, position]
    cov_xw = (chi.transpose(-1, -2) @ K @ chi).sum(0) / V - means["Ea_P_Eb"]
    xw = means["EX"] @ means["EW"] + cov_xw
    # E[X Y Z^T]: pair covariances of the sums
    Pec = P @ ec  # [V, n, D]
    cov_yz = (gc.transpose(-1, -2) @ Pec).sum(0) / V  # [d_h, D]
    f = chi * (ut @ means["EY"])[..., None]  # X EY per position [V, n, D]
    fc = f - f.mean(0)
    cov_xey_z = (fc.transpose(-1, -2) @ Pec).sum(0) / V  # [D, D]
    cov_xy = (chi * (ut * (P @ gc)).sum(-1, keepdim=True)).sum((0, 1)) / V  # [D]
    # kappa_3, part A: <a g~ e~> with the middle (g) index summed, rank one in a
    Pg, Ng = _middle(gc, k)  # [V, n, d_h]
    UP, UN = ut @ Pg.transpose(-1, -2), ut @ Ng.transpose(-1, -2)  # [token, position, position]
    dP, dN = (ut * Pg).sum(-1), (ut * Ng).sum(-1)  # [V, n]
    K3 = P * ((UP + dN[..., None]).triu() + (dP[..., None] + UN).tril(-1))
    part_a = (chi.transpose(-1, -2) @ K3 @ ec).sum(0) / V
    # part B: -Ea_t1 <g~ e~>, the t1 index summed: p^|t2-t3| (Pa_max + Na_min)
    Pa, Na = means["Pa"], means["Na"]  # [n, D, d_h]
    lo = k["lower"] @ gc  # sum_{t2 <= t} p^(t-t2) g~_t2
    part_b = (torch.einsum("tae,cte,ctb->ab", Pa, lo, ec)
              + torch.einsum("cta,ctb->ab", k["lower"] @ torch.einsum("tae,cte->cta", Na, gc), ec)
              + torch.einsum("tae,cte,ctb->ab", Pa, gc, k["strict_lower"] @ ec)
              + torch.einsum("tae,cte,ctb->ab", Na, k["strict_upper"] @ gc, ec)) / V
    xyz = (part_a - part_b + means["EX"] @ cov_yz + cov_xey_z + torch.outer(cov_xy, means["EZ"])
           + torch.outer(means["EX"] @ means["EY"], means["EZ"]))
    return xw, xyz


def expected_force(model: Encoder, vocab: int, length: int, p: float, readout: str = "model") -> Tensor:
    r"""Exact ``E[F^h | y]`` on the walk task, shape [2, H, d+1, d+1] (class y = 0, 1).

    Parameters
    ----------
    model: 1-layer mean-pooled linear-head :class:`Encoder`; vocab, length, p: the walk (V, n, p).
    readout: see :func:`features`.

    Returns
    -------
    float64 [class, head, D, D], D = d + 1 (the last index is the bias entry of chi^; the last column is 0).
    """
    feats = features(model, vocab, length, readout)
    chi, u = feats["chi_hat"], feats["u"]
    n, V = length, vocab
    k = kernels(n, p)
    out = []
    for h in range(feats["w_out"].shape[0]):
        ut = u @ feats["w_out"][h]  # [V, n, d_h]
        g = chi[..., :-1] @ feats["w_v"][h].T  # [V, n, d_h]
        Ea = torch.einsum("cta,cte->tae", chi, ut) / V  # [n, D, d_h]
        Eb = torch.einsum("cte,ctb->teb", g, chi) / V  # [n, d_h, D]
        Pa, Na = _middle(Ea.flatten(1), k)
        means = {"g": g.mean(0), "e": chi.mean(0), "EX": Ea.sum(0), "EW": Eb.sum(0),
                 "EY": g.mean(0).sum(0), "EZ": chi.mean(0).sum(0),
                 "Ea_P_Eb": torch.einsum("tae,teb->ab", Ea, (k["P"] @ Eb.flatten(1)).view_as(Eb)),
                 "Pa": Pa.view_as(Ea), "Na": Na.view_as(Ea)}
        per_class = []
        for s in (-1, 1):
            xw, xyz = _class_moments((chi, ut), g, chi, s, k, means)
            per_class.append(xw / n ** 2 - xyz / n ** 3)
        out.append(torch.stack(per_class))
    return torch.stack(out, dim=1)


def label_force(model: Encoder, vocab: int, length: int, p: float, readout: str = "model") -> Tensor:
    r"""``B^h = E[F^h | 1] - E[F^h | 0]``, [H, d+1, d+1] float64 (the label gradient on M^h is -B^h / 4)."""
    E = expected_force(model, vocab, length, p, readout)
    return E[1] - E[0]


# --------------------------------------------------------------------------- checks of the formula

def linearised_scores_grad(feats: dict[str, Tensor], x: Tensor, model: Encoder) -> tuple[Tensor, Tensor]:
    r"""Per-sequence ``d(w^T z_lin)/dS`` at S = 0 by autograd through a softmax, and chi^ of x.

    ``z_lin = (1/n) sum_i [Psi(x_i, i, o_0) + J_i (o_i - o_0)]``: only ``u_i . o_i`` depends on S.
    Returns ``dS`` [batch, head, query, key] and ``chi_hat`` [batch, n, D].
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
    r"""``F^h = chi^^T dS^h chi^`` per sequence: [batch, head, D, D] from dS [batch, head, query, key]."""
    return chi_hat[:, None].transpose(-1, -2) @ dS @ chi_hat[:, None]


def enumerated_force(model: Encoder, vocab: int, length: int, p: float, readout: str = "model",
                     chunk: int = 4096) -> Tensor:
    r"""``E[F^h | y]`` by exact enumeration of all V^n sequences, float64 autograd (tiny V^n only).

    Returns [class, head, D, D] like :func:`expected_force`.
    """
    model = model.double()
    feats = features(model, vocab, length, readout)
    seqs = per_token.all_sequences(vocab, length)
    probs = per_token.class_laws(lambda x, y: sequence_probability(x, y, vocab, p), seqs)  # [2, N]
    total = 0
    for start in range(0, len(seqs), chunk):
        x = seqs[start:start + chunk]
        dS, chi = linearised_scores_grad(feats, x, model)
        F = force_of_scores_grad(dS, chi)  # [batch, head, D, D]
        total = total + torch.einsum("yb,bhij->yhij", probs[:, start:start + chunk], F)
    return total


def real_model_force(model: Encoder, x: Tensor, uniform: bool = True) -> Tensor:
    r"""Per-sequence ``d(w^T z)/dM^h`` of ``model.py`` itself (float64): at W_Q = W_K = 0
    (``uniform``, the value path o(x) sequence-dependent inside J) or at the model's own W_Q, W_K
    (the real init, attention not uniform).  [batch, head, D, D]."""
    model = copy.deepcopy(model).double()
    if uniform:
        model = per_token.zero_scores(model)
    _, cache = model.run_with_cache(x)
    w = model.head.weight[1] - model.head.weight[0]
    (cache["pooled"] @ w).sum().backward()
    dS = cache["blocks.0.attn.scores"].grad  # [batch, head, query, key]
    model.zero_grad(set_to_none=True)
    chi = model.blocks[0].ln_attn(cache["embed"]).detach()
    chi_hat = torch.cat([chi, torch.ones(*chi.shape[:2], 1, dtype=chi.dtype)], dim=-1)
    return force_of_scores_grad(dS, chi_hat)


def enumerated_real_force(model: Encoder, vocab: int, length: int, p: float, uniform: bool = True) -> Tensor:
    r""":func:`real_model_force` averaged exactly over all V^n sequences per class, [class, head, D, D]."""
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
    directions: [K, H, D, D]; the projection is ``sum_{h,i,j} D_k[h,i,j] F^h_ij``.
    kinds: any of ``linearised`` (this module's object, autograd through a softmax), ``uniform``
        (model.py at W_Q = W_K = 0, o(x) sequence-dependent) and ``init`` (model.py at its own W_Q, W_K).

    Returns
    -------
    ``{kind: [class, size, K]}`` float64.
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
    r"""Mean and standard error over dim -2 (the samples) of [..., size, K]."""
    return samples.mean(-2), samples.std(-2) / math.sqrt(samples.shape[-2])


def top_directions(B: Tensor) -> Tensor:
    r"""Per head h, ``u_1 v_1^T`` of ``B^h`` placed in head h (zeros elsewhere): [H, H, D, D]."""
    U, _, Vh = torch.linalg.svd(B)
    H = B.shape[0]
    out = torch.zeros(H, *B.shape, dtype=B.dtype)
    for h in range(H):
        out[h, h] = torch.outer(U[h, :, 0], Vh[h, 0])
    return out


def top_singular(B: Tensor) -> Tensor:
    r"""``sigma_1(B^h)`` per head, [H] (T8's rate is sigma_1 / (4 sqrt(d_h)))."""
    return torch.linalg.matrix_norm(B, ord=2)


def loglog_fit(ns: list[int], values: list[float]) -> float:
    r"""Least-squares slope of ln value against ln n."""
    xs = torch.tensor([math.log(n) for n in ns], dtype=torch.float64)
    ys = torch.tensor([math.log(v) for v in values], dtype=torch.float64)
    xc = xs - xs.mean()
    return float((xc * (ys - ys.mean())).sum() / (xc ** 2).sum())
