"""The models the benchmark times side by side: the toolkit's, its ablations, the attention-free
bound and torch's own layer; their batches and one training step."""

from __future__ import annotations

import itertools
from contextlib import nullcontext

import torch
from torch import nn

from spt_theory.bench.cases import BenchSize
from spt_theory.core import cpu
from spt_theory.core.model import Attention, Encoder, ModelConfig, sinusoidal_table


class TorchLayerModel(nn.Module):
    """The reference: the same model built from ``nn.TransformerEncoderLayer`` (``n_layers`` of
    them), pooled by the toolkit's own :meth:`Encoder.pool` (the mean over the real tokens)."""

    pool = Encoder.pool
    with_cls = Encoder.with_cls
    pe: torch.Tensor

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg, self.cls = cfg, None
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.register_buffer("pe", sinusoidal_table(cfg.max_len, cfg.d_model), persistent=False)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(cfg.d_model, cfg.n_heads, cfg.d_ff, dropout=0.0, activation="gelu",
                                       batch_first=True, norm_first=True) for _ in range(cfg.n_layers))
        self.ln_final = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.n_classes)

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """``valid`` (batch, n): True at real tokens; padded keys masked (``src_key_padding_mask``)."""
        h = self.embed(x) + self.pe[: x.shape[1]]
        padding = None if valid is None else ~valid
        for layer in self.layers:
            h = layer(h, src_key_padding_mask=padding)
        return self.head(self.pool(self.ln_final(h), valid))  # type: ignore[misc]  # Encoder.pool reads cfg, cls only


class UntabulatedEncoder(Encoder):
    """The toolkit's model without the first-block (token, position) table (an ablation)."""

    def tabulates_first_qkv(self, x: torch.Tensor) -> bool:
        return False


class ValueAttention(Attention):
    """Attention whose output is its value projection, Y = V W_O^T: no scores, no softmax."""

    def forward(self, qkv: torch.Tensor, bias=None, cache: dict | None = None, name: str = "attn") -> torch.Tensor:
        return self.out(qkv[..., 2 * (qkv.shape[-1] // 3):])


class AttentionFreeEncoder(Encoder):
    """The toolkit's model with every attention replaced by :class:`ValueAttention` (a bound).

    The Q, K, V projections are still computed, so its step time is the toolkit's step less the
    attention kernel's forward and backward: no attention kernel can make the step faster."""

    def __init__(self, cfg: ModelConfig):
        super().__init__(cfg)
        for block in self.blocks:
            block.attn = ValueAttention(cfg)


def training_step(model: nn.Module, batches: list[tuple], context=nullcontext):
    """A closure doing one AdamW step of supervised CE on the next (x, y, valid) of ``batches``
    (cycling), inside ``context()``.  The loss is read back before the backward pass, as the
    training loop does (its divergence check), so on a GPU every step waits for its forward pass."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    cycle = itertools.cycle(batches)

    def step():
        x, y, valid = next(cycle)
        with context():
            loss = nn.functional.cross_entropy(model(x, valid=valid), y)
            loss.item()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

    return step


MODELS = ("spt_theory", "torch_linear", "no_table", "attention_free", "torch_layer")
LRA_MODELS = ("spt_theory", "torch_layer")
LRA_CPU_MODELS = ("spt_theory", "attention_free", "torch_layer")
"""The LRA-shaped case on the CPU: the two models and the attention-free bound."""
CPU_ABLATIONS = ("torch_linear", "no_table", "attention_free")
ABLATION_CONTEXTS = {"torch_linear": cpu.torch_linear}


def make_batches(size: BenchSize, device: torch.device, seed: int = 0) -> list[tuple]:
    """(x, y, valid) of each batch of a pass: tokens 1..vocab with <pad> = 0 after each real
    length and ``valid`` True at real tokens when lengths vary; tokens 0..vocab-1 and ``valid``
    None otherwise."""
    generator = torch.Generator().manual_seed(seed)
    lengths = size.lengths(seed)
    low = 1 if size.masked else 0
    batches = []
    for index in size.pass_indices(lengths, seed):
        real = lengths[index]
        valid = torch.arange(int(real.max())) < real[:, None]
        x = torch.randint(low, size.vocab + low, tuple(valid.shape), generator=generator) * valid
        y = torch.randint(0, size.classes, (len(index),), generator=generator)
        batches.append((x.to(device), y.to(device), valid.to(device) if size.masked else None))
    return batches


def build_models(size: BenchSize, names: tuple[str, ...], device: torch.device) -> dict[str, nn.Module]:
    """The models ``names`` at ``size`` on ``device``; the toolkit's three share one init."""
    cfg = size.model_config()
    torch.manual_seed(0)
    ours = Encoder(cfg)
    makers = {"spt_theory": lambda: ours, "torch_linear": lambda: Encoder(cfg),
              "no_table": lambda: UntabulatedEncoder(cfg),
              "attention_free": lambda: AttentionFreeEncoder(cfg),
              "torch_layer": lambda: TorchLayerModel(cfg)}
    models = {}
    for name in names:
        model = makers[name]()
        if isinstance(model, Encoder) and model is not ours:
            model.load_state_dict(ours.state_dict())
        models[name] = model.to(device)
    return models
