"""Many small Pathfinder-16 Transformers trained at once: one batched ensemble on one device.

The models are ordinary :class:`~spt_theory.core.model.Encoder` s, their parameters stacked
(``torch.func.stack_module_state``) and trained in one forward and backward pass per step
(``vmap`` of ``grad`` of the model's own forward through ``functional_call``), so member ``i``
computes exactly what ``Encoder`` ``i`` would alone (``tests/lra/test_gpu_confirm.py`` checks one
step against the plain model).  Each member reads its own batches: the data order of its seed
(the same seed, the same order in every arm: paired comparisons), and its own mask draws.

AdamW (the training loop's, :func:`spt_theory.training.optim.make_optimizer`: weight decay 0.01
on every parameter) is elementwise, so one AdamW over the stacked tensors is one AdamW per
member.  A member's *fixed* parameters (its ``freeze`` groups, or all of it once its steps are
done) are put back after every step, so they never move, weight decay included.

Evaluation: every member's predictions on the same examples, as per-example correctness (a
bool per example, kept as the evidence keeps it: :func:`spt_theory.evidence.correctness.encode`).
"""

from __future__ import annotations

import copy
import math
import warnings

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad_and_value, stack_module_state, vmap

from spt_theory.core.cpu import torch_linear
from spt_theory.core.model import Encoder
from spt_theory.core.objectives import mask_continuous
from spt_theory.training.loop import stage_seed

warnings.filterwarnings("ignore",
                        message="There is a performance drop because we have not yet implemented the batching")
# the CPU's attention kernel has no vmap batching rule: members are then looped (tiny runs only)

PIXEL_MAX = 255.0
EVAL_CHUNK = 1000


def masked_mean_ce(logits: torch.Tensor, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """:func:`~spt_theory.core.objectives.masked_token_loss` (the mean CE over masked positions)
    without data-dependent indexing, so that ``vmap`` takes it."""
    each = F.cross_entropy(logits.float().flatten(0, -2), x.long().flatten(), reduction="none")
    weights = mask.flatten().to(each.dtype)
    return (each * weights).sum() / weights.sum().clamp(min=1.0)


class _Both(nn.Module):
    """An encoder whose forward is its classifier or, with ``spt``, its reconstruction."""

    def __init__(self, encoder: Encoder):
        super().__init__()
        self.m = encoder

    def forward(self, x: torch.Tensor, spt: bool = False) -> torch.Tensor:
        return self.m.reconstruct(x) if spt else self.m(x)


def pixels(x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """The model's two-channel input of pixel ids ``x`` (uint8), ``mask`` positions masked."""
    values = x.float() / PIXEL_MAX
    return mask_continuous(values, torch.zeros_like(values, dtype=torch.bool) if mask is None else mask)


class Ensemble:
    """``models`` trained together with one objective (``"supervised"`` or ``"spt"``).

    ``fixed[i]``: parameter groups of member ``i`` that never move (``Encoder.group_of`` names);
    ``seeds[i]``: the seed of member ``i``'s data order and masks."""

    def __init__(self, models: list[Encoder], seeds: list[int], objective: str, lr: float, *,
                 fixed: list[tuple[str, ...]] | None = None, warmup_steps: int = 1, weight_decay: float = 0.01,
                 mask_ratio: float = 0.5, device: torch.device | str = "cpu", autocast: bool = False):
        self.device = torch.device(device)
        self.objective, self.lr, self.warmup_steps, self.mask_ratio = objective, lr, max(1, warmup_steps), mask_ratio
        self.autocast = autocast and self.device.type == "cuda"
        wrapped = [_Both(m).to(self.device) for m in models]
        self.base = copy.deepcopy(wrapped[0]).to("meta")
        self._template = copy.deepcopy(models[0]).to("cpu")
        params, self.buffers = stack_module_state(wrapped)
        self.params = {k: v.detach().clone() for k, v in params.items()}
        self.seeds, self.n = list(seeds), len(models)
        self.fixed = [tuple(f) for f in (fixed or [()] * self.n)]
        self.done = [False] * self.n
        self.optimizer = torch.optim.AdamW(list(self.params.values()), lr=lr, weight_decay=weight_decay)
        self.step_count = 0
        self._generators = [torch.Generator().manual_seed(stage_seed(s, 0 if objective == "spt" else 1)) for s in seeds]
        self._orders: list[torch.Tensor | None] = [None] * self.n
        self._position = [0] * self.n
        self._kept = self._fixed_values()

    # ------------------------------------------------------------------------------ members
    def member(self, i: int) -> Encoder:
        """Member ``i`` as a plain Encoder (a copy of its current parameters, on the CPU)."""
        model = copy.deepcopy(self._template)
        with torch.no_grad():
            for name, value in self.params.items():
                model.get_parameter(name[len("m."):]).copy_(value[i])
        return model

    def _fixed_names(self, i: int) -> list[str]:
        if self.done[i]:
            return list(self.params)
        return [k for k in self.params if Encoder.group_of(k[len("m."):]) in self.fixed[i]]

    def _fixed_values(self) -> dict:
        return {(k, i): self.params[k][i].clone() for i in range(self.n) for k in self._fixed_names(i)}

    def finish(self, i: int) -> None:
        """Member ``i`` has run its steps: from now on it never moves."""
        self.done[i] = True
        self._kept = self._fixed_values()

    # ------------------------------------------------------------------------------ training
    def _batch_indices(self, n_train: int, batch: int) -> torch.Tensor:
        rows = []
        for i in range(self.n):
            order = self._orders[i]
            if order is None or self._position[i] + batch > n_train:
                order = self._orders[i] = torch.randperm(n_train, generator=self._generators[i])
                self._position[i] = 0
            rows.append(order[self._position[i]:self._position[i] + batch])
            self._position[i] += batch
        return torch.stack(rows).to(self.device)

    def _loss(self, params, buffers, x, y, mask):
        if self.objective == "supervised":
            return F.cross_entropy(functional_call(self.base, (params, buffers), (pixels(x),)).float(), y)
        logits = functional_call(self.base, (params, buffers), (pixels(x, mask),), {"spt": True})
        return masked_mean_ce(logits, x, mask)

    def step(self, x_train: torch.Tensor, y_train: torch.Tensor, batch: int) -> torch.Tensor:
        """One optimizer step of every member on its next batch; the members' losses."""
        index = self._batch_indices(len(y_train), batch)
        x, y = x_train[index], y_train[index]
        mask = torch.stack([torch.rand(x.shape[1:], generator=g) < self.mask_ratio
                            for g in self._generators]).to(self.device)
        lr = self.lr * min(1.0, (self.step_count + 1) / self.warmup_steps)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        with torch_linear(), torch.autocast(self.device.type, torch.bfloat16, enabled=self.autocast):
            grads, losses = vmap(grad_and_value(self._loss))(self.params, self.buffers, x, y, mask)
        for name, tensor in self.params.items():
            tensor.grad = grads[name].to(tensor.dtype)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        with torch.no_grad():
            for (name, i), value in self._kept.items():
                self.params[name][i].copy_(value)
        self.step_count += 1
        return losses.detach()

    # ------------------------------------------------------------------------------ evaluation
    @torch.no_grad()
    def correct(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """(members, examples) bools: member i classifies example j right."""
        def logits(p, b, xx):
            return functional_call(self.base, (p, b), (pixels(xx),))

        out = []
        with torch_linear(), torch.autocast(self.device.type, torch.bfloat16, enabled=self.autocast):
            for start in range(0, len(y), EVAL_CHUNK):
                xx = x[start:start + EVAL_CHUNK]
                pred = vmap(logits, in_dims=(0, 0, None))(self.params, self.buffers, xx).argmax(-1)
                out.append(pred == y[start:start + EVAL_CHUNK])
        return torch.cat(out, dim=1)

    @torch.no_grad()
    def masked_loss(self, x: torch.Tensor, seed: int = 0) -> list[float]:
        """Every member's masked reconstruction loss on ``x`` (one fixed mask draw)."""
        mask = (torch.rand(x.shape, generator=torch.Generator().manual_seed(seed)) < self.mask_ratio).to(x.device)

        def loss(p, b):
            logits = functional_call(self.base, (p, b), (pixels(x, mask),), {"spt": True})
            return masked_mean_ce(logits, x, mask)

        with torch_linear(), torch.autocast(self.device.type, torch.bfloat16, enabled=self.autocast):
            values = vmap(loss)(self.params, self.buffers)
        return [float(v) if math.isfinite(float(v)) else math.inf for v in values]
