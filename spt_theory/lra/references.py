"""Reference entropies of masked reconstruction: what an SPT checkpoint's masked loss is read against.

SPT's masked validation loss (nats per masked position, :meth:`spt_theory.lra.inputs.LRATask.
reconstruction_loss`) means little alone.  Three count models, fitted on the training split and
scored, like SPT, on the masked positions of the validation split (Bernoulli mask of the task's
ratio, one seeded draw), give it a scale.  Counts are add-``ALPHA`` smoothed over the vocabulary
(tokens: the task's real tokens; pixels: the 256 intensities).

- ``marginal``: cross-entropy of the training marginal (unigram; for pixels the pixel-marginal):
  a model that learned nothing about context.
- ``neighbour``: cross-entropy of p(x_i | c_i), c_i the state of the immediate neighbours under
  the same mask: for tokens the left and right tokens (``<mask>`` if masked, ``<pad>`` past the
  ends); for pixels the 4 grid neighbours, each its intensity in ``LEVELS`` equal bins or masked
  (or absent at the border).  What local context alone tells, i.e. what proximity-biased attention
  can recover; a model may go below it by reading further.
- ``type`` (ListOps): the expected entropy of a token given its type (digit, operator, ``]``),
  sum over types of P(type) H(token | type): a model told every token's type.  Digits and
  operators are drawn uniformly by the grammar, so no model goes below it.

:func:`references` returns them with the share of the marginal-to-neighbour gap any loss closes
(:func:`gap_closed`).
"""

from __future__ import annotations

import math

import torch

ALPHA = 0.1
LEVELS = 4
MASK_SEED = 12345
MAX_EXAMPLES = 20000
"""Counts come from at most the first this many training (and validation) examples: a count model
of 17 x 17 or 6^4 contexts is settled long before, and full-size LRA splits stay cheap."""


def _mask(shape: tuple[int, ...], ratio: float, seed: int) -> torch.Tensor:
    return torch.rand(shape, generator=torch.Generator().manual_seed(seed)) < ratio


def _cross_entropy(target_train, context_train, target_val, context_val, classes: int) -> float:
    """Mean -log p(target | context) on the validation pairs under add-ALPHA smoothed counts."""
    contexts = int(max(context_train.max(), context_val.max())) + 1
    counts = torch.bincount(context_train * classes + target_train, minlength=contexts * classes)
    counts = counts.view(contexts, classes).double() + ALPHA
    p = counts[context_val, target_val] / counts[context_val].sum(1)
    return float(-p.log().mean())


def _token_contexts(x: torch.Tensor, mask: torch.Tensor, pad_id: int, mask_id: int, vocab: int) -> torch.Tensor:
    """(left, right) neighbour state of every position, as one id."""
    shown = torch.where(mask, torch.full_like(x, mask_id), x)
    padded = torch.nn.functional.pad(shown, (1, 1), value=pad_id)
    return padded[:, :-2] * vocab + padded[:, 2:]


def _pixel_contexts(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(up, down, left, right) neighbour states of every pixel, each a level, masked or absent, as one id."""
    side = math.isqrt(x.shape[1])
    states = LEVELS + 2  # levels, masked, absent
    level = torch.where(mask, torch.full_like(x, LEVELS), x * LEVELS // 256).view(-1, side, side)
    padded = torch.nn.functional.pad(level, (1, 1, 1, 1), value=LEVELS + 1)
    ids = torch.zeros_like(level)
    for dy, dx in ((0, 1), (2, 1), (1, 0), (1, 2)):
        ids = ids * states + padded[:, dy:dy + side, dx:dx + side]
    return ids.reshape(len(x), -1)


def references(x_train: torch.Tensor, x_val: torch.Tensor, ratio: float, tokens: bool,
               pad_id: int | None = None, mask_id: int | None = None, vocab: int = 256,
               types: dict[str, list[int]] | None = None) -> dict:
    """The reference entropies (module doc) of one task's data; ``types``: token ids by type."""
    x_train, x_val = x_train[:MAX_EXAMPLES].cpu(), x_val[:MAX_EXAMPLES].cpu()
    m_train, m_val = _mask(tuple(x_train.shape), ratio, MASK_SEED), _mask(tuple(x_val.shape), ratio, MASK_SEED + 1)
    real_train: torch.Tensor
    if tokens:
        if pad_id is None or mask_id is None:
            raise ValueError("the references of a token task need its pad_id and mask_id")
        c_train = _token_contexts(x_train, m_train, pad_id, mask_id, vocab)
        c_val = _token_contexts(x_val, m_val, pad_id, mask_id, vocab)
        real_train, scored = x_train != pad_id, m_val & (x_val != pad_id)
    else:
        c_train, c_val = _pixel_contexts(x_train, m_train), _pixel_contexts(x_val, m_val)
        real_train, scored = torch.ones_like(x_train, dtype=torch.bool), m_val
    t_train, t_val = x_train[real_train], x_val[scored]
    zeros = lambda t: torch.zeros_like(t)  # noqa: E731
    found = {"marginal": _cross_entropy(t_train, zeros(t_train), t_val, zeros(t_val), vocab),
             "neighbour": _cross_entropy(t_train, c_train[real_train], t_val, c_val[scored], vocab),
             "mask_ratio": ratio, "alpha": ALPHA, "scored_positions": int(scored.sum())}
    if types is not None:
        counts = torch.bincount(t_train, minlength=vocab).double()
        total, entropy = counts.sum(), 0.0
        for ids in types.values():
            c = counts[ids]
            entropy += float(c.sum() / total) * float(-(c[c > 0] / c.sum() * (c[c > 0] / c.sum()).log()).sum())
        found["type"] = entropy
    return found


def token_types(tokens: tuple[str, ...]) -> dict[str, list[int]] | None:
    """ListOps token ids by type (digit, operator, ``]``); None for a vocabulary without ``]``."""
    if "]" not in tokens:
        return None
    return {"digit": [i for i, t in enumerate(tokens) if t.isdigit()],
            "operator": [i for i, t in enumerate(tokens) if t.startswith("[")],
            "close": [tokens.index("]")]}


def gap_closed(loss: float, refs: dict) -> float:
    """Share of the marginal-to-neighbour gap that ``loss`` closes: 0 at the marginal, 1 at the
    neighbour model (above 1: below it)."""
    return (refs["marginal"] - loss) / (refs["marginal"] - refs["neighbour"])
