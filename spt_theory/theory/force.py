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
inside J; :func:`~spt_theory.theory.force_model.real_model_force` measures the real model's
difference).  Then u_i = u(x_i, i) is per-token and F is a sum of products of per-position
functions over pairs (i, k) and, through gbar, triples (i, j, k): E_y[F] is exact from the walk's
two- and three-point laws.

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
Cost O(V n^2 d) per head: n = 400, 4 heads in ~5 s on one busy core.
:func:`~spt_theory.theory.force_model.enumerated_force` is the check: the same object by float64
autograd through a softmax, summed over all V^n sequences.

``readout="linear"``: the idealised readout Psi(o) = o (u = w), the setting of T1-T5.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from spt_theory.core.model import Encoder
from spt_theory.theory.force_model import features


def comoving(f: Tensor, s: int) -> Tensor:
    r"""``f'[c, t] = f[(c + s t) mod V, t]``: the feature at comoving token ``c`` (the walk of sign ``s``).

    Parameters
    ----------
    f : Tensor [V, n, ...]
        A per-(token, position) feature.
    s : int
        The step sign: +1 (class 1) or -1 (class 0).

    Returns
    -------
    Tensor [V, n, ...]
        ``f`` re-indexed by the comoving token.

    References
    ----------
    proofs/T9_exact_force.md (i).

    Examples
    --------
    >>> comoving(torch.arange(3)[:, None].expand(3, 4), 1).tolist()  # token (c + t) mod 3
    [[0, 1, 2, 0], [1, 2, 0, 1], [2, 0, 1, 2]]
    """
    V, n = f.shape[:2]
    idx = (torch.arange(V)[:, None] + s * torch.arange(n)[None, :]) % V  # [V, n]
    return f[idx, torch.arange(n)[None, :]]


def kernels(n: int, p: float) -> dict[str, Tensor]:
    r"""``P[t, t'] = p^|t-t'|`` (``0^0 = 1``) and its triangular parts, the walk's two-point kernels.

    Parameters
    ----------
    n : int
        Positions.
    p : float
        Step probability.

    Returns
    -------
    dict[str, Tensor]
        ``P``, ``lower`` (``t' <= t``), ``strict_lower`` (``t' < t``), ``strict_upper`` (``t' > t``),
        each [position, position] float64.

    References
    ----------
    proofs/T9_exact_force.md (i).

    Examples
    --------
    >>> kernels(3, 0.5)["P"].tolist()
    [[1.0, 0.5, 0.25], [0.5, 1.0, 0.5], [0.25, 0.5, 1.0]]
    """
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
    r"""Exact ``E[F^h | y]`` on the walk task for both classes, by the comoving-frame cumulants.

    Parameters
    ----------
    model : Encoder
        A 1-layer, mean-pooled, linear-head, 2-class model (not changed).
    vocab, length : int
        The walk's ``V`` and ``n``.
    p : float
        Step probability.
    readout : {"model", "linear"}
        See :func:`~spt_theory.theory.force_model.features`.

    Returns
    -------
    Tensor [class, head, d+1, d+1], float64
        ``E[F^h | y]``, class ``y = 0, 1``; the last index is the bias entry of ``chi^`` (the last
        column is 0: a key-side constant does not change the softmax).

    Notes
    -----
    Exact for the module's object, not for ``model.py``: the Jacobian after attention is frozen at
    ``o_0`` (first order in ``W_V (m(x) - E m)``) and ``W_Q = W_K = 0``; ``readout="linear"`` is the
    idealised readout of T1-T5.  :func:`~spt_theory.theory.force_model.real_model_force` measures the difference.

    References
    ----------
    proofs/T9_exact_force.md (ii).

    Examples
    --------
    The recursion equals the exact sum over all ``V^n`` walks (any weights; a seeded tiny model):

    >>> from spt_theory.core.model import Encoder, ModelConfig
    >>> from spt_theory.theory.force_model import enumerated_force
    >>> _ = torch.manual_seed(0)
    >>> model = Encoder(ModelConfig(vocab_size=4, recon_classes=3, max_len=4, d_model=8, n_heads=2, d_ff=16))
    >>> E = expected_force(model, 3, 4, 0.5)
    >>> E.shape
    torch.Size([2, 2, 9, 9])
    >>> torch.allclose(E, enumerated_force(model.double(), 3, 4, 0.5), rtol=0, atol=1e-12)
    True
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
    r"""The label force ``B^h = E[F^h | 1] - E[F^h | 0]``; the label gradient on ``M^h`` is ``-B^h / 4``.

    Parameters
    ----------
    model, vocab, length, p, readout
        As in :func:`expected_force`.

    Returns
    -------
    Tensor [head, d+1, d+1], float64
        ``B^h``.

    References
    ----------
    proofs/T9_exact_force.md; proofs/T8_plateau_law.md (its ``B``, rate ``sigma_1(B) / (4 sqrt(d_h))``).

    Examples
    --------
    With ``p = 0`` the tokens are i.i.d. in both classes and there is no force:

    >>> from spt_theory.core.model import Encoder, ModelConfig
    >>> _ = torch.manual_seed(0)
    >>> model = Encoder(ModelConfig(vocab_size=4, recon_classes=3, max_len=4, d_model=8, n_heads=2, d_ff=16))
    >>> float(label_force(model, 3, 4, 0.0).abs().max()) < 1e-15
    True
    """
    E = expected_force(model, vocab, length, p, readout)
    return E[1] - E[0]


def top_directions(B: Tensor) -> Tensor:
    r"""Per head ``h``, the top singular pair ``u_1 v_1^T`` of ``B^h`` placed in head ``h``, zeros elsewhere.

    Parameters
    ----------
    B : Tensor [head, D, D]
        :func:`label_force`.

    Returns
    -------
    Tensor [head, head, D, D]
        Entry ``[h]`` is a direction for :func:`~spt_theory.theory.force_model.sampled_projections`.

    References
    ----------
    proofs/T9_exact_force.md.

    Examples
    --------
    >>> top_directions(torch.diag(torch.tensor([1.0, 3.0]))[None]).abs().tolist()
    [[[[0.0, 0.0], [0.0, 1.0]]]]
    """
    U, _, Vh = torch.linalg.svd(B)
    H = B.shape[0]
    out = torch.zeros(H, *B.shape, dtype=B.dtype)
    for h in range(H):
        out[h, h] = torch.outer(U[h, :, 0], Vh[h, 0])
    return out


def top_singular(B: Tensor) -> Tensor:
    r"""``sigma_1(B^h)`` per head: T8's rate is ``sigma_1 / (4 sqrt(d_h))``.

    Parameters
    ----------
    B : Tensor [head, D, D]
        :func:`label_force`.

    Returns
    -------
    Tensor [head]
        The largest singular value of each head's ``B^h``.

    References
    ----------
    proofs/T9_exact_force.md; proofs/T8_plateau_law.md.

    Examples
    --------
    >>> top_singular(torch.diag(torch.tensor([1.0, -3.0]))[None]).tolist()
    [3.0]
    """
    return torch.linalg.matrix_norm(B, ord=2)


def loglog_fit(ns: list[int], values: list[float]) -> float:
    r"""Least-squares slope of ``ln value`` against ``ln n``: the exponent of ``value ~ n^slope``.

    Parameters
    ----------
    ns : list[int]
        Sequence lengths.
    values : list[float]
        Positive values, one per ``n``.

    Returns
    -------
    float
        The slope.

    References
    ----------
    proofs/T9_exact_force.md (``sigma_1(B) ~ n^(-1.62)``).

    Examples
    --------
    >>> round(loglog_fit([1, 2, 4], [1.0, 0.25, 0.0625]), 12)
    -2.0
    """
    xs = torch.tensor([math.log(n) for n in ns], dtype=torch.float64)
    ys = torch.tensor([math.log(v) for v in values], dtype=torch.float64)
    xc = xs - xs.mean()
    return float((xc * (ys - ys.mean())).sum() / (xc ** 2).sum())
