"""Many 1-layer Pathfinder Encoders as one stacked model: the GPU twin's ensemble (issue 51).

Every parameter of ``M`` members lives in one flat leaf tensor ``theta`` of shape ``[M, P]``; a
forward splits it (one ``split``, whose backward is one ``cat``) into views with a member axis,
``[M, ...]``, and runs the :class:`~spt_theory.core.model.Encoder`'s arithmetic with batched
matrix products (``baddbmm``) and **one** ``scaled_dot_product_attention`` call for every member,
the members folded into its batch axis.  So a step is the same few dozen kernels whatever ``M``;
on a GPU they grow with ``M`` in size, not in number.

What member ``i`` computes is what ``Encoder`` ``i`` computes alone (``tests/lra/test_gpu_twin.py``
trains ``M`` plain Encoders one by one on the same batches and holds every member to them, in
float64, for every arm): pre-LN block ``h + Attn(LN h)``, ``h + W_2 GELU(W_1 LN h)``, final LN,
the member's own pooling (mean or max over the positions: its Encoder's ``cfg.pooling``, so one
ensemble may hold members of both readouts), linear head; the decoder for SPT.  ``[W_Q; W_K; W_V]``
lie next to each other in ``theta`` (so the Q, K, V projection is one ``baddbmm`` without a ``cat``), as
:meth:`~spt_theory.core.model.Attention.project` concatenates them.

**Optimizer.**  AdamW (torch's update, decoupled weight decay 0.01, as
:func:`spt_theory.training.optim.make_optimizer`) over ``theta``, written out as a handful of
elementwise kernels on ``[M, P]``.  A member's fixed parameters (its ``fixed`` groups: ``qk`` for
the frozen arm, the decoder in supervised training, the head in SPT) are 0 in a ``live`` mask
``[M, P]`` made once: their gradient is masked (so their moments stay 0 and Adam's step is 0) and
so is their weight decay, so they never move, as a parameter outside the plain optimizer would not.
Nothing is copied back per step.  A member whose steps are done leaves the ensemble
(:meth:`Stacked.keep`: one ``index_select`` of ``theta`` and the moments).

**Data on the device.**  Once per epoch one ``rand`` + ``argsort`` draws every data stream's order
(a stream per seed, shared by every arm of that seed: paired comparisons), and for SPT one
``rand`` draws every mask of the epoch; a step gathers its batch by index on the device.

The learning rate warms up linearly over ``warmup_steps`` then stays (the twin's schedule).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math

import torch
import torch.nn.functional as F

from spt_theory.core.model import Encoder

PIXEL_MAX = 255.0
BETAS = (0.9, 0.999)
EPS = 1e-8
EVAL_CHUNK = 500
QKV = ("blocks.0.attn.qk", "blocks.0.attn.v")
POOLINGS = ("mean", "max")
"""The readouts a member may have (``ModelConfig.pooling``): mean or max over the positions."""


def pixels(x: torch.Tensor, mask: torch.Tensor | None = None, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The model's two-channel input ``[v (1 - m), m]`` of pixel ids ``x`` (uint8), ``v = x / 255``,
    ``mask`` positions masked (:func:`spt_theory.core.objectives.mask_continuous`)."""
    values = x.to(dtype) / PIXEL_MAX
    if mask is None:
        return torch.stack([values, torch.zeros_like(values)], dim=-1)
    m = mask.to(dtype)
    return torch.stack([values * (1 - m), m], dim=-1)


def layout(model: Encoder) -> list[tuple[str, tuple[int, ...]]]:
    """The parameters of ``model`` in ``theta``'s order: its own order, except that W_V follows
    W_Q W_K and b_V follows b_Q b_K (the fused projection's layout)."""
    cfg = model.cfg
    if not (cfg.n_layers == 1 and cfg.vocab_size == 0 and cfg.pooling in POOLINGS and cfg.head == "linear"
            and cfg.positional == "sinusoidal" and cfg.attention_bias == "none"):
        raise ValueError("the stacked model is the twin's: 1 layer, continuous input, mean or max pooling, linear "
                         "head, sinusoidal positions, no attention bias")
    shapes = {name: tuple(p.shape) for name, p in model.named_parameters()}
    order = [n for n in shapes if not n.startswith(QKV[1] + ".")]
    for kind in ("weight", "bias"):
        order.insert(order.index(f"{QKV[0]}.{kind}") + 1, f"{QKV[1]}.{kind}")
    return [(name, shapes[name]) for name in order]


def units(parameters: list[tuple[str, tuple[int, ...]]]) -> list[tuple[str, tuple[int, ...]]]:
    """The pieces ``theta`` is split into for a forward: the parameters, with W_Q W_K and W_V as one
    ``qkv.weight`` (3d, d) and their biases as one ``qkv.bias`` (3d)."""
    out: list[tuple[str, tuple[int, ...]]] = []
    for name, shape in parameters:
        if name.startswith(QKV[1] + "."):
            kind = name.rsplit(".", 1)[1]
            before = out.pop()
            out.append((f"qkv.{kind}", (before[1][0] + shape[0], *shape[1:])))
        else:
            out.append((name, shape))
    return out


def _linear(p: dict[str, torch.Tensor], u: torch.Tensor, name: str) -> torch.Tensor:
    return torch.baddbmm(p[f"{name}.bias"][:, None, :], u, p[f"{name}.weight"].transpose(1, 2))


def _norm(p: dict[str, torch.Tensor], u: torch.Tensor, name: str) -> torch.Tensor:
    d = u.shape[-1]
    return F.layer_norm(u, (d,)) * p[f"{name}.weight"][:, None, :] + p[f"{name}.bias"][:, None, :]


class Stacked:
    """``models`` (plain Encoders of one config) trained as one with ``objective`` ``"supervised"``
    or ``"spt"``.

    Member ``i``'s readout is its model's ``cfg.pooling`` (mean or max); every other setting of the
    models' configs must be the same. ``streams[i]``: the data stream (seed) member ``i`` reads;
    members of one stream see the same batches (and, in SPT, the same masks). ``fixed[i]``: the
    parameter groups of member ``i`` that never move (``Encoder.group_of`` names). ``seed``: the device
    generator's seed for the data orders and masks. ``dtype``: of ``theta`` (float32; float64 in the
    tests). ``autocast``: bfloat16 matrix products on CUDA. ``attention``: ``"default"`` (torch picks
    the fused kernel) or ``"math"`` (the plain softmax path), for the bench's comparison."""

    def __init__(self, models: list[Encoder], streams: list[int], objective: str, lr: float, *,
                 fixed: list[tuple[str, ...]] | None = None, warmup_steps: int = 1, weight_decay: float = 0.01,
                 mask_ratio: float = 0.5, n_train: int, batch: int, seed: int = 0,
                 device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32, autocast: bool = False,
                 attention: str = "default"):
        if objective not in ("supervised", "spt"):
            raise ValueError(f"objective must be supervised or spt, got {objective!r}")
        if len(streams) != len(models) or not models:
            raise ValueError("one stream per model, at least one model")
        self.cfg = models[0].cfg
        others = [m.cfg for m in models if dataclasses.replace(m.cfg, pooling=self.cfg.pooling) != self.cfg]
        if others:
            raise ValueError("the members' configs differ in more than their pooling")
        self.layout = layout(models[0])
        self.poolings = [m.cfg.pooling for m in models]
        self.units = units(self.layout)
        self.sizes = [math.prod(shape) for _, shape in self.units]
        self.device, self.dtype = torch.device(device), dtype
        self.objective, self.lr, self.warmup_steps = objective, lr, max(1, warmup_steps)
        self.weight_decay, self.mask_ratio = weight_decay, mask_ratio
        self.autocast = autocast and self.device.type == "cuda"
        self.attention = attention
        self.n_train, self.batch = n_train, batch
        self.steps_per_epoch = n_train // batch
        if self.steps_per_epoch < 1:
            raise ValueError(f"{n_train} training examples make no batch of {batch}")
        with torch.no_grad():
            rows = [torch.cat([dict(m.named_parameters())[name].detach().reshape(-1) for name, _ in self.layout])
                    for m in models]
            self.theta = torch.stack(rows).to(self.device, dtype).requires_grad_(True)
        self.m1 = torch.zeros_like(self.theta, requires_grad=False)
        self.m2 = torch.zeros_like(self.theta, requires_grad=False)
        fixed = [tuple(f) for f in (fixed or [()] * len(models))]
        live = torch.ones(len(models), sum(self.sizes), dtype=dtype)
        offset = 0
        for name, size in ((name, math.prod(shape)) for name, shape in self.layout):
            for i, groups in enumerate(fixed):
                if Encoder.group_of(name) in groups:
                    live[i, offset:offset + size] = 0
            offset += size
        self.live = live.to(self.device)
        self.pe = models[0].pe.to(self.device, dtype)
        self.streams = torch.tensor(streams, device=self.device)
        self.max_pooled = torch.tensor([p == "max" for p in self.poolings], device=self.device)
        self.n_streams = max(streams) + 1
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        self.step_count = 0
        self._epoch_step = self.steps_per_epoch  # a new epoch at the first step
        self.epoch_index: torch.Tensor | None = None
        self.epoch_masks: torch.Tensor | None = None

    @property
    def loss_dtype(self) -> torch.dtype:
        """The losses' dtype: float32 from bfloat16 logits under autocast, else ``theta``'s."""
        return torch.float32 if self.autocast else self.dtype

    @property
    def members(self) -> int:
        return self.theta.shape[0]

    # ------------------------------------------------------------------------------ parameters
    def views(self, theta: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Every piece of :func:`units` as a view of ``theta`` with the member axis first, ``[M, *shape]``."""
        theta = self.theta if theta is None else theta
        parts = theta.split(self.sizes, dim=1)
        return {name: part.view(theta.shape[0], *shape) for (name, shape), part in zip(self.units, parts)}

    def parameters(self) -> dict[str, torch.Tensor]:
        """Every parameter of the Encoder (its ``named_parameters`` names), ``[M, *shape]``, detached."""
        out, offset = {}, 0
        theta = self.theta.detach()
        for name, shape in self.layout:
            size = math.prod(shape)
            out[name] = theta[:, offset:offset + size].view(theta.shape[0], *shape)
            offset += size
        return out

    def parameters_of(self, i: int) -> dict[str, torch.Tensor]:
        """Member ``i``'s parameters (``named_parameters`` names), copies on their device and dtype."""
        return {name: value[i].clone() for name, value in self.parameters().items()}

    def member_state(self, i: int) -> dict[str, torch.Tensor]:
        """Member ``i``'s parameters as an Encoder's state (names of ``named_parameters``), on the CPU."""
        return {name: value[i].to("cpu", torch.float32).clone() for name, value in self.parameters().items()}

    def member(self, i: int, template: Encoder) -> Encoder:
        """Member ``i`` as a plain Encoder: a copy of ``template`` holding its parameters."""
        import copy

        model = copy.deepcopy(template)
        with torch.no_grad():
            for name, value in self.parameters().items():
                model.get_parameter(name).copy_(value[i])
        return model

    def keep(self, indices: list[int]) -> None:
        """Only the members ``indices`` stay (in that order): the others' steps are done."""
        index = torch.tensor(indices, device=self.device)
        with torch.no_grad():
            self.theta = self.theta.detach().index_select(0, index).requires_grad_(True)
            self.m1, self.m2, self.live = (t.index_select(0, index) for t in (self.m1, self.m2, self.live))
        self.streams = self.streams.index_select(0, index)
        self.max_pooled = self.max_pooled.index_select(0, index)
        self.poolings = [self.poolings[i] for i in indices]
        if self.epoch_index is not None:
            self.epoch_index = self.epoch_index.index_select(0, index)
        if self.epoch_masks is not None:
            self.epoch_masks = self.epoch_masks.index_select(0, index)

    # ------------------------------------------------------------------------------ forward
    def _attention(self):
        if self.attention == "math":
            from torch.nn.attention import SDPBackend, sdpa_kernel

            return sdpa_kernel([SDPBackend.MATH])
        return contextlib.nullcontext()

    def _embed(self, x_in: torch.Tensor, p: dict[str, torch.Tensor]) -> tuple[torch.Tensor, tuple]:
        """h_0 ``[M, B n, d]`` of ``x_in`` and the Q, K, V of the block, each ``[M B, heads, n, d_h]``."""
        m, d, heads = p["embed.weight"].shape[0], self.cfg.d_model, self.cfg.n_heads
        b, n = x_in.shape[-3], x_in.shape[-2]
        rows = x_in.reshape(-1, b * n, x_in.shape[-1])  # [M or 1, B n, 2]
        h = torch.matmul(rows, p["embed.weight"].transpose(1, 2)) + p["embed.bias"][:, None, :]
        h = (h.view(m, b, n, d) + self.pe[:n].to(h.dtype)).view(m, b * n, d)
        qkv = _linear(p, _norm(p, h, "blocks.0.ln_attn"), "qkv")
        dh = d // heads
        return h, tuple(qkv.view(m, b, n, 3, heads, dh).permute(3, 0, 1, 4, 2, 5).reshape(3, m * b, heads, n, dh)
                        .unbind(0))

    def encode(self, x_in: torch.Tensor, p: dict[str, torch.Tensor]) -> torch.Tensor:
        """LN(h_1) of every member, ``[M, B, n, d]``; ``x_in`` ``[M, B, n, 2]`` (each member its own
        batch) or ``[B, n, 2]`` (every member the same examples)."""
        m, d, heads = self.members, self.cfg.d_model, self.cfg.n_heads
        b, n = x_in.shape[-3], x_in.shape[-2]
        h, (q, k, v) = self._embed(x_in, p)
        with self._attention():
            y = F.scaled_dot_product_attention(q, k, v)
        y = y.view(m, b, heads, n, d // heads).permute(0, 1, 3, 2, 4).reshape(m, b * n, d)
        h = h + _linear(p, y, "blocks.0.attn.out")
        u = _norm(p, h, "blocks.0.ln_mlp")
        h = h + _linear(p, F.gelu(_linear(p, u, "blocks.0.mlp.0")), "blocks.0.mlp.2")
        return _norm(p, h, "ln_final").view(m, b, n, d)

    def pool(self, h: torch.Tensor) -> torch.Tensor:
        """Every member's readout of ``h`` ``[M, B, n, d]``: the mean over the positions, or the max
        (``Encoder.pool``'s ``max(dim).values``: the gradient to the argmax), by member."""
        kinds = set(self.poolings)  # a Python list: no device sync per step
        if kinds == {"mean"}:
            return h.mean(dim=2)
        if kinds == {"max"}:
            return h.max(dim=2).values
        return torch.where(self.max_pooled[:, None, None], h.max(dim=2).values, h.mean(dim=2))

    def logits(self, x_in: torch.Tensor, p: dict[str, torch.Tensor]) -> torch.Tensor:
        """Class logits ``[M, B, classes]``."""
        z = self.pool(self.encode(x_in, p))
        return torch.baddbmm(p["head.bias"][:, None, :], z, p["head.weight"].transpose(1, 2))

    def reconstruction(self, x_in: torch.Tensor, p: dict[str, torch.Tensor]) -> torch.Tensor:
        """Per-position reconstruction logits ``[M, B, n, 256]``."""
        h = self.encode(x_in, p)
        m, b, n, d = h.shape
        out = torch.baddbmm(p["decoder.bias"][:, None, :], h.reshape(m, b * n, d), p["decoder.weight"].transpose(1, 2))
        return out.view(m, b, n, -1)

    # ------------------------------------------------------------------------------ training
    def _new_epoch(self) -> None:
        """Every stream's order of the training set for one epoch (whole batches only), and every
        member's SPT masks for it: drawn on the device, once."""
        draws = torch.rand(self.n_streams, self.n_train, generator=self.generator, device=self.device)
        order = draws.argsort(dim=1)[:, :self.steps_per_epoch * self.batch]
        order = order.view(self.n_streams, self.steps_per_epoch, self.batch)
        self.epoch_index = order.index_select(0, self.streams)
        if self.objective == "spt":
            n = self.pe.shape[0]
            masks = torch.rand(self.n_streams, self.steps_per_epoch, self.batch, n, generator=self.generator,
                               device=self.device) < self.mask_ratio
            self.epoch_masks = masks.index_select(0, self.streams)
        self._epoch_step = 0

    def next_batch(self) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Every member's next batch indices ``[M, B]`` and, in SPT, masks ``[M, B, n]``."""
        if self._epoch_step >= self.steps_per_epoch:
            self._new_epoch()
        j = self._epoch_step
        self._epoch_step += 1
        assert self.epoch_index is not None  # _new_epoch ran: _epoch_step starts at steps_per_epoch
        index = self.epoch_index[:, j]
        return index, None if self.epoch_masks is None else self.epoch_masks[:, j]

    def losses(self, x: torch.Tensor, y: torch.Tensor | None, mask: torch.Tensor | None) -> torch.Tensor:
        """Every member's loss on its batch ``x`` ``[M, B, n]`` (CE of the labels ``y`` ``[M, B]``, or
        the mean CE over its masked positions ``mask``)."""
        p = self.views()
        with torch.autocast(self.device.type, torch.bfloat16, enabled=self.autocast):
            if self.objective == "supervised":
                if y is None:
                    raise ValueError("a supervised loss needs the labels")
                out = self.logits(pixels(x, dtype=self.dtype), p).to(self.loss_dtype)
                return F.cross_entropy(out.flatten(0, 1), y.flatten(), reduction="none").view(y.shape).mean(1)
            if mask is None:
                raise ValueError("an SPT loss needs the masks")
            out = self.reconstruction(pixels(x, mask, self.dtype), p).to(self.loss_dtype)
            each = F.cross_entropy(out.flatten(0, 2), x.long().flatten(), reduction="none").view(mask.shape)
            weights = mask.to(each.dtype)
            return (each * weights).sum((1, 2)) / weights.sum((1, 2)).clamp(min=1.0)

    def step(self, x_train: torch.Tensor, y_train: torch.Tensor) -> torch.Tensor:
        """One AdamW step of every member on its next batch; the members' losses (on the device)."""
        index, mask = self.next_batch()
        x = x_train[index]
        y = y_train[index] if self.objective == "supervised" else None
        losses = self.losses(x, y, mask)
        self.theta.grad = None
        losses.sum().backward()
        self._adamw()
        return losses.detach()

    @torch.no_grad()
    def _adamw(self) -> None:
        self.step_count += 1
        t = self.step_count
        lr = self.lr * min(1.0, t / self.warmup_steps)
        beta1, beta2 = BETAS
        if self.theta.grad is None:
            raise RuntimeError("no gradient: backward() has not run")
        grad = self.theta.grad * self.live
        self.theta.mul_(1 - lr * self.weight_decay * self.live)
        self.m1.lerp_(grad, 1 - beta1)
        self.m2.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = (self.m2.sqrt() / math.sqrt(1 - beta2 ** t)).add_(EPS)
        self.theta.addcdiv_(self.m1, denom, value=-lr / (1 - beta1 ** t))

    # ------------------------------------------------------------------------------ evaluation
    @torch.no_grad()
    def correct(self, x: torch.Tensor, y: torch.Tensor, chunk: int = EVAL_CHUNK) -> torch.Tensor:
        """``[M, N]`` bools: member ``i`` classifies example ``j`` right (every member, the same examples)."""
        p = self.views()
        out = []
        with torch.autocast(self.device.type, torch.bfloat16, enabled=self.autocast), self._attention():
            for start in range(0, len(y), chunk):
                pred = self.logits(pixels(x[start:start + chunk], dtype=self.dtype), p).argmax(-1)
                out.append(pred == y[start:start + chunk])
        return torch.cat(out, dim=1)

    @torch.no_grad()
    def grid2d_ratios(self, x: torch.Tensor, members: list[int], chunk: int = 50) -> list[float]:
        """The true 2-D neighbour attention over uniform of each of ``members`` on the images ``x``
        (``[N, n]``, a square grid), in float32 without autocast: the mass a head puts on the query's
        up, down, left and right pixels (no row wrap), averaged over heads, queries and images, over
        that of uniform attention (:mod:`spt_theory.lra.probe`'s ``grid2d_ratio``)."""
        n = x.shape[-1]
        side = math.isqrt(n)
        index = torch.arange(n, device=self.device)
        row, col = index // side, index % side
        near = ((row[:, None] - row[None, :]).abs() + (col[:, None] - col[None, :]).abs()) == 1
        uniform = float(near.sum()) / n ** 2
        views = self.views()
        out = []
        for i in members:
            p = {name: value[i:i + 1].float() for name, value in views.items()}
            total = 0.0
            for start in range(0, len(x), chunk):
                _, (q, k, _) = self._embed(pixels(x[start:start + chunk], dtype=torch.float32), p)
                pattern = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
                total += float((pattern * near).sum()) / pattern.shape[1]
            out.append(total / (len(x) * n) / uniform)
        return out

    @torch.no_grad()
    def masked_loss(self, x: torch.Tensor, seed: int = 0) -> list[float]:
        """Every member's masked reconstruction loss on ``x`` (one fixed mask draw, shared)."""
        mask = torch.rand(x.shape, generator=torch.Generator().manual_seed(seed)).to(x.device) < self.mask_ratio
        p = self.views()
        with torch.autocast(self.device.type, torch.bfloat16, enabled=self.autocast):
            out = self.reconstruction(pixels(x, mask, self.dtype), p).to(self.loss_dtype)
            each = F.cross_entropy(out.flatten(0, 2), x.long().expand(self.members, *x.shape).flatten(),
                                   reduction="none").view(self.members, *x.shape)
        weights = mask.to(each.dtype)
        values = (each * weights).sum((1, 2)) / weights.sum().clamp(min=1.0)
        return [float(v) if math.isfinite(float(v)) else math.inf for v in values]
