r"""The real model (``model.py``) at uniform attention: a per-token map plus the value path's mean.

Lemma T7 (``proofs/T7_per_token_blindness.md``).  With ``W_Q = W_K = 0`` every score row is
constant, ``A = 1 1^T / n``, and the 1-layer encoder with mean pooling and a linear head is

    h_i = E x_i + P_i,   chi_i = LN_1(h_i),   a(x) = b_O + W_O (W_V m(x) + b_V),   m(x) = (1/n) sum_j chi_j,
    f_i = Psi(x_i, i, a) = LN_f(r_i + MLP(LN_2(r_i))),   r_i = h_i + a,
    z = (1/n) sum_i f_i,   logits = W z + c,   L = CE(logits, y).

Every token sees the same ``a(x)``; apart from it the model is a per-token map ``(x_i, i) -> f_i``.
The *label-dependent part* of the expected gradient is what the labels add beyond a task with the
same inputs and labels drawn independently of them:

    Delta := E_task[grad L] - E_{y indep. of x}[grad L] = -(1/4) (W_1 - W_0)^T (E[dz/dtheta | 1] - E[dz/dtheta | 0])

(for the body; binary labels with equal priors, rows ``W_y`` of the head; for the head itself
``Delta_W = -(1/4) (e_1 - e_0) (E[z | 1] - E[z | 0])^T``).  Both expectations are computed here by
exact enumeration of all ``V^n`` sequences, in float64, for every parameter of the model:
``Delta = grad sum_{x,y} w(x, y) L(x, y)`` with ``w(x, y) = (P(x | y) - P(x | 1 - y)) / 4``.

At ``W_V = 0`` the value path is the constant ``a = b_O + W_O b_V`` and the only parameter whose
``dz/dtheta`` is not a mean of per-token terms is ``W_V`` itself:
``dz/dW_V = (1/n) sum_i d_a Psi(x_i, i, a) W_O (.) m(x)``, a sum over pairs ``(i, j)``.  Its
label-dependent part is then, exactly,

    Delta_{W_V} = -(1/(4 n^2)) sum_{i != j} sum_{a, b} [P_1(x_i = a, x_j = b) - P_0(x_i = a, x_j = b)]
                  W_O^T u(a, i) chi(b, j)^T,
    u(a, i) = d_a Psi(a, i, a)^T (W_1 - W_0),

with the walk's pair law (:func:`walk_pair_law`)
``P_y(x_i = a, x_j = b) = (1/V) [p^{|j-i|} 1{b = a + s_y (j - i)} + (1 - p^{|j-i|}) / V]``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from fractions import Fraction

import torch
import torch.nn.functional as F
from torch import Tensor

from spt_theory.core.model import Encoder

Law = Callable[[tuple[int, ...], int], Fraction | float]
"""``(x, y) -> P(x | y)``."""


def label_direction(model: Encoder) -> Tensor:
    r"""``w_1 - w_0``: the direction of the logit of class 1 over class 0 in a linear head.

    Parameters
    ----------
    model : Encoder
        A model with a linear head (``head="linear"``); ValueError for another head.

    Returns
    -------
    Tensor [d_model]
        The difference of the head's two rows (gradients flow through it).

    References
    ----------
    proofs/T7_per_token_blindness.md, proofs/T9_exact_force.md (the readout direction).
    """
    head = model.head
    if not isinstance(head, torch.nn.Linear):
        raise ValueError(f"the label direction needs a linear head, got {type(head).__name__}")
    return head.weight[1] - head.weight[0]


def zero_scores(model: Encoder, biases: bool = False) -> Encoder:
    r"""Set ``W_Q = W_K = 0`` in every block (in place), so that attention is uniform.

    Scores ``q_i^T k_j / sqrt(d_h)`` with constant keys ``k_j = b_K`` are constant along each row.

    Parameters
    ----------
    model : Encoder
        The model, changed in place.
    biases : bool
        Also set ``b_Q = b_K = 0``: the point ``M = 0`` of the factored scores (T4b).

    Returns
    -------
    Encoder
        ``model`` itself.

    References
    ----------
    proofs/T7_per_token_blindness.md.
    """
    with torch.no_grad():
        for block in model.blocks:
            block.attn.qk.weight.zero_()
            if biases:
                block.attn.qk.bias.zero_()
    return model


def all_sequences(vocab: int, length: int) -> Tensor:
    """Every sequence of ``length`` tokens in ``[0, vocab)``, in ``itertools.product`` order.

    Parameters
    ----------
    vocab : int
        Tokens ``V``.
    length : int
        Sequence length ``n``.

    Returns
    -------
    Tensor [V^n, n], long
        The sequences, one a row.

    References
    ----------
    proofs/T7_per_token_blindness.md.

    Examples
    --------
    >>> all_sequences(2, 2).tolist()
    [[0, 0], [0, 1], [1, 0], [1, 1]]
    """
    return torch.tensor(list(itertools.product(range(vocab), repeat=length)), dtype=torch.long)


def class_laws(law: Law, sequences: Tensor) -> Tensor:
    """``P(x | y)`` of both classes over the given sequences.

    Parameters
    ----------
    law : callable ``(x, y) -> float``
        ``P(x | y)`` for a sequence ``x`` (tuple of ints) and a class ``y`` in ``{0, 1}``.
    sequences : Tensor [N, n], long
        The sequences (:func:`all_sequences`).

    Returns
    -------
    Tensor [2, N], float64
        Row ``y`` holds ``P(x | y)``.

    References
    ----------
    proofs/T7_per_token_blindness.md.

    Examples
    --------
    >>> class_laws(lambda x, y: 0.25, all_sequences(2, 2)).sum(dim=-1).tolist()
    [1.0, 1.0]
    """
    rows = [tuple(int(t) for t in x) for x in sequences]
    return torch.tensor([[float(law(x, y)) for x in rows] for y in (0, 1)], dtype=torch.float64)


def expected_gradients(model: Encoder, sequences: Tensor, probs: Tensor) -> dict[str, dict[str, Tensor]]:
    r"""Exact ``E_task[grad L]`` and its label-dependent part ``Delta`` for every named parameter.

    ``probs`` is ``(2, N)``, ``P(x | y)`` over ``sequences``; labels have prior 1/2.
    ``E = grad sum_x (P_0 L_0 + P_1 L_1) / 2`` and ``Delta = grad sum_x (P_0 - P_1)(L_0 - L_1) / 4``
    with ``L_y = CE(model(x), y)`` (see the module docstring).

    Parameters
    ----------
    model : Encoder
        A 2-class model (float64 for exact figures).
    sequences : Tensor [N, n], long
        Every sequence (:func:`all_sequences`).
    probs : Tensor [2, N], float64
        ``P(x | y)`` (:func:`class_laws`).

    Returns
    -------
    dict[str, dict[str, Tensor]]
        For every parameter name, ``{"mean": E[grad L], "delta": Delta}``, each shaped like the
        parameter (zeros where the loss does not reach it).

    References
    ----------
    proofs/T7_per_token_blindness.md.
    """
    params = dict(model.named_parameters())
    logits = model(sequences)
    losses = [F.cross_entropy(logits, torch.full((len(sequences),), y), reduction="none") for y in (0, 1)]
    total = ((probs[0] * losses[0] + probs[1] * losses[1]) / 2).sum()
    label_part = ((probs[0] - probs[1]) * (losses[0] - losses[1]) / 4).sum()
    mean = torch.autograd.grad(total, list(params.values()), retain_graph=True, allow_unused=True)
    delta = torch.autograd.grad(label_part, list(params.values()), allow_unused=True)
    zero = [torch.zeros_like(p) for p in params.values()]
    return {name: {"mean": m if m is not None else z, "delta": d if d is not None else z}
            for name, m, d, z in zip(params, mean, delta, zero)}


def walk_pair_law(vocab: int, p: float, y: int, gap: int) -> Tensor:
    r"""``P_y(x_i = a, x_{i+gap} = b)`` of the walk task: the pair law at distance ``gap``.

    ``(1/V) [p^gap 1{b = a + s_y gap (mod V)} + (1 - p^gap) / V]`` with ``s_1 = +1``, ``s_0 = -1``
    (all ``gap`` steps taken, or a fresh uniform token in between).

    Parameters
    ----------
    vocab : int
        Tokens ``V``.
    p : float
        Step probability.
    y : int
        Class, 0 or 1.
    gap : int
        Distance ``j - i >= 1``.

    Returns
    -------
    Tensor [V, V], float64
        Entry ``[a, b]``; the entries sum to 1.

    References
    ----------
    proofs/T7_per_token_blindness.md.

    Examples
    --------
    >>> (walk_pair_law(3, 0.5, 1, 1) * 18).tolist()  # p/V on b = a + 1, (1 - p)/V^2 everywhere
    [[1.0, 4.0, 1.0], [1.0, 1.0, 4.0], [4.0, 1.0, 1.0]]
    """
    s = 1 if y == 1 else -1
    a = torch.arange(vocab)
    hit = ((a.unsqueeze(1) + s * gap) % vocab == a.unsqueeze(0)).to(torch.float64)
    return (p ** gap * hit + (1 - p ** gap) / vocab) / vocab


def token_features(model: Encoder, vocab: int, length: int) -> tuple[Tensor, Tensor]:
    r"""``h(a, i) = E_a + P_i`` and ``chi(a, i) = LN_1(h(a, i))`` for every (token, position) pair.

    Parameters
    ----------
    model : Encoder
        The model (its first block's ``LN_1``).
    vocab : int
        Tokens ``V``.
    length : int
        Positions ``n``.

    Returns
    -------
    h : Tensor [V, n, d_model]
        Embedding plus positional encoding.
    chi : Tensor [V, n, d_model]
        Its LayerNorm, the input of the value path.

    References
    ----------
    proofs/T7_per_token_blindness.md.
    """
    h = model.embed.weight[:vocab, None, :] + model.pe[:length]
    return h, model.blocks[0].ln_attn(h)


def value_mean(model: Encoder, m: Tensor) -> Tensor:
    r"""``a = b_O + W_O (W_V m + b_V)``: the attention output every token receives at uniform attention.

    Parameters
    ----------
    model : Encoder
        The model (its first block's attention).
    m : Tensor [..., d_model]
        The mean ``m(x) = (1/n) sum_j chi_j`` of the value path's inputs.

    Returns
    -------
    Tensor [..., d_model]
        ``a(x)``.

    References
    ----------
    proofs/T7_per_token_blindness.md.
    """
    attn = model.blocks[0].attn
    return attn.out(attn.v(m))


def per_token_map(model: Encoder, h: Tensor, a: Tensor) -> Tensor:
    r"""``Psi = LN_f(r + MLP(LN_2(r)))``, ``r = h + a``: the encoder output of a token at uniform attention.

    Parameters
    ----------
    model : Encoder
        The model (its first block's MLP and the final LayerNorm).
    h : Tensor [..., d_model]
        ``E x_i + P_i`` (:func:`token_features`).
    a : Tensor [..., d_model]
        The attention output (:func:`value_mean`), broadcast against ``h``.

    Returns
    -------
    Tensor [..., d_model]
        ``f_i``.

    References
    ----------
    proofs/T7_per_token_blindness.md.
    """
    block = model.blocks[0]
    r = h + a
    return model.ln_final(r + block.mlp(block.ln_mlp(r)))


def readout_vjp(model: Encoder, vocab: int, length: int) -> Tensor:
    r"""``u(a, i) = d_a Psi(a, i, a_bar)^T (W_1 - W_0)`` for every (token, position) pair, at ``W_V = 0``.

    At ``W_V = 0`` the attention output ``a_bar = b_O + W_O b_V`` is the same for every sequence.

    Parameters
    ----------
    model : Encoder
        A 2-class model with ``W_V = 0``.
    vocab : int
        Tokens ``V``.
    length : int
        Positions ``n``.

    Returns
    -------
    Tensor [V, n, d_model]
        ``u``.

    References
    ----------
    proofs/T7_per_token_blindness.md.
    """
    h, chi = token_features(model, vocab, length)
    a = value_mean(model, torch.zeros_like(chi[0, 0])).detach().expand_as(h).clone().requires_grad_(True)
    direction = label_direction(model)
    (u,) = torch.autograd.grad((per_token_map(model, h.detach(), a) @ direction).sum(), a)
    return u


def predicted_value_weight_delta(model: Encoder, vocab: int, length: int, p: float) -> Tensor:
    r"""T7 (ii): the exact ``Delta_{W_V}`` at ``W_V = W_Q = W_K = 0`` from the walk's pair law.

    ``-(1/(4 n^2)) sum_{i != j} sum_{a,b} (P_1 - P_0)(x_i = a, x_j = b) W_O^T u(a, i) chi(b, j)^T``
    (the ``i = j`` terms cancel: both classes have uniform marginals).

    Parameters
    ----------
    model : Encoder
        A 2-class, 1-layer model with ``W_V = W_Q = W_K = 0``.
    vocab : int
        Tokens ``V``.
    length : int
        Positions ``n``.
    p : float
        The walk's step probability.

    Returns
    -------
    Tensor [d_model, d_model]
        ``Delta_{W_V}``, shaped like ``W_V``.

    References
    ----------
    proofs/T7_per_token_blindness.md.
    """
    u = readout_vjp(model, vocab, length)
    _, chi = token_features(model, vocab, length)
    w_out = model.blocks[0].attn.out.weight
    left = u @ w_out  # rows W_O^T u(a, i), shape (V, n, d)
    total = torch.zeros(w_out.shape[1], chi.shape[-1], dtype=u.dtype)
    for i in range(length):
        for j in range(length):
            if i == j:
                continue
            lo, hi = min(i, j), max(i, j)
            diff = walk_pair_law(vocab, p, 1, hi - lo) - walk_pair_law(vocab, p, 0, hi - lo)  # (x_lo, x_hi)
            pair = diff if i == lo else diff.T  # indexed (x_i, x_j)
            total += torch.einsum("ab,ad,be->de", pair.to(u.dtype), left[:, i], chi.detach()[:, j])
    return -total / (4 * length ** 2)


def pair_coupling_bound(length: int, p: float) -> float:
    r"""``(1/n^2) sum_{i != j} 2 p^{|i-j|} = (4/n^2) sum_{k=1}^{n-1} (n - k) p^k <= 4 p / ((1 - p) n)``.

    ``2 p^{|i-j|}`` is the total variation ``sum_{a,b} |P_1 - P_0|`` of the two classes' pair laws
    at distance ``|i - j|`` (at most; 0 when ``2 |i-j| = 0 mod V``), so
    ``||Delta_{W_V}||_F <= (1/4) * this * max ||W_O^T u(a, i)|| * max ||chi(b, j)||``; T8 calls it
    ``beta_n(p)``.

    Parameters
    ----------
    length : int
        Positions ``n``.
    p : float
        Step probability, in [0, 1).

    Returns
    -------
    float
        ``beta_n(p)``.

    References
    ----------
    proofs/T7_per_token_blindness.md, proofs/T8_plateau_law.md.

    Examples
    --------
    >>> pair_coupling_bound(2, 0.5)  # (4/4) * 1 * 0.5
    0.5
    >>> pair_coupling_bound(10, 0.5) <= 4 * 0.5 / (0.5 * 10)
    True
    """
    return 4 * sum((length - k) * p ** k for k in range(1, length)) / length ** 2
