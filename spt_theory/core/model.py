"""The Transformer encoder used by every experiment, in one file.

    h_0 = E(x) + P                      token embedding (or a linear map of continuous channels)
                                        plus fixed sinusoidal positional encoding P
    h_l = h_{l-1} + Attn(LN(h_{l-1}))   pre-LN residual attention, for l = 1..L
    h_l = h_l + MLP(LN(h_l))            MLP(u) = W_2 GELU(W_1 u)
    z   = pool(LN(h_L))                 mean (default), max, first token (CLS) or last token
    logits = head(z)                    linear or 2-layer MLP;  decoder(LN(h_L)) for reconstruction

Two-document inputs (LRA Retrieval, head ``pair_mlp``): x holds a pair per example, each document
is encoded and pooled on its own to u and v, and logits = W_2 GELU(W_1 [u, v, u - v, u * v]).

Attention of one head: S = (h W_Q)(h W_K)^T / sqrt(d_h) + B, A = row-softmax(S), Y = A (h W_V),
with B an optional fixed bias (ALiBi-style distance penalty B_ij = -m |i - j|).

Padding: every forward takes an optional ``valid`` mask (batch, n), True at real tokens.  Padded
keys are then masked in attention (B_ij = -inf where j is padding; each row keeps its real keys,
so padded queries stay finite and never reach a real position) and the pooled vector ignores them:
``mean`` is (1 / |R|) sum_{i in R} h_i over the real positions R, ``max`` the max over R, ``last``
the last real position; ``mean_all`` is the mean over all n positions, padding included (the
official LRA Pathfinder readout).  A padded batch thus gives the outputs of its unpadded examples.

Speed (:mod:`spt_theory.core.cpu`): linear layers are :class:`spt_theory.core.cpu.Linear` (``nn.Linear``
computed by oneDNN on the CPU), embeddings are read with :func:`spt_theory.core.cpu.gather_rows`, and
for token input the first block's Q, K, V, LN(E_v + P_t) W_QKV^T, depends only on the token v and
the position t, so it is computed once per (v, t) and gathered (:func:`spt_theory.core.cpu.tabulated`,
``Encoder.first_qkv``) when that pays.

Layout of W_Q, W_K: the ``qk`` layer's weight is [W_Q; W_K] (2 d x d), and rows h d_h .. (h+1) d_h
of each half belong to head h.  :meth:`Attention.split_query_key` and :meth:`Attention.split_heads`
are the only places that know it; probes, checks and initialisations read W_Q^h, W_K^h through them.

Two attention paths compute the same thing: the fused ``scaled_dot_product_attention`` when nobody
asks for the weights, and the explicit softmax path when a probe passes a ``cache`` dict.  With a
cache every intermediate is stored by name (TransformerLens style), e.g.
``blocks.0.attn.scores`` (batch, heads, n, n, pre-softmax, with ``retain_grad`` so probes read
dL/dS after ``backward``), ``blocks.0.attn.pattern``, ``blocks.0.resid_post``, ``pooled``.

Parameters come in named groups (:data:`PARAMETER_GROUPS`) so training can freeze groups and
transplant them from a checkpoint: ``qk`` (W_Q, W_K), ``vo`` (W_V, W_O), ``mlp``, ``norm``
(LayerNorms), ``embed`` (input encoder), ``head`` (classifier), ``decoder`` (reconstruction).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

from spt_theory.core.cpu import Linear, gather_rows, linear, table_pays, tabulated
from spt_theory.util.files import ConfigError

PARAMETER_GROUPS = ("qk", "vo", "mlp", "norm", "embed", "head", "decoder")
POOLINGS = ("mean", "mean_all", "max", "cls", "last")
HEADS = ("linear", "mlp", "pair_mlp")
POSITIONALS = ("sinusoidal", "none")
ATTENTION_BIASES = ("none", "alibi")


MAX_PARAMETERS = 200_000_000
"""The largest model a config may describe: 4 float32 copies (weights, gradients, AdamW's moments)
of 2e8 parameters are 3.2 GB; larger sizes are typos (``--set d_ff=1000000000``), refused in one line."""


@dataclass(frozen=True)
class ModelConfig:
    """Sizes and choices of the encoder.

    ``vocab_size`` > 0: token input with that many embedding rows (specials such as ``<mask>``
    included); ``vocab_size`` == 0: continuous input with ``in_channels`` channels per position.
    ``recon_classes`` > 0: the reconstruction decoder predicts that many classes (masked-token CE);
    0: it predicts ``in_channels``-independent scalars (masked L1 on the first channel).
    """

    vocab_size: int = 17
    in_channels: int = 0
    n_classes: int = 2
    recon_classes: int = 16
    max_len: int = 128
    d_model: int = 64
    n_heads: int = 4
    d_ff: int = 256
    n_layers: int = 1
    pooling: str = "mean"
    head: str = "linear"
    positional: str = "sinusoidal"
    attention_bias: str = "none"

    def __post_init__(self):
        checks = [
            (self.d_model > 0 and self.n_heads > 0, "d_model and n_heads must be positive"),
            (self.d_model % max(self.n_heads, 1) == 0,
             f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})"),
            ((self.vocab_size > 0) != (self.in_channels > 0),
             "exactly one of vocab_size (tokens) and in_channels (continuous input) must be > 0"),
            (self.n_layers >= 1, f"n_layers must be >= 1, got {self.n_layers}"),
            (self.max_len >= 1, f"max_len must be >= 1, got {self.max_len}"),
            (self.n_classes >= 1 and self.d_ff >= 1, "n_classes and d_ff must be >= 1"),
            (self.pooling in POOLINGS, f"pooling must be one of {POOLINGS}, got {self.pooling!r}"),
            (self.head in HEADS, f"head must be one of {HEADS}, got {self.head!r}"),
            (self.positional in POSITIONALS,
             f"positional must be one of {POSITIONALS}, got {self.positional!r}"),
            (self.attention_bias in ATTENTION_BIASES,
             f"attention_bias must be one of {ATTENTION_BIASES}, got {self.attention_bias!r}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
        if self.parameter_count() > MAX_PARAMETERS:
            raise ConfigError(f"{self.parameter_count():,} parameters (d_model {self.d_model}, d_ff {self.d_ff}, "
                              f"n_layers {self.n_layers}): more than this toolkit trains ({MAX_PARAMETERS:,}; with "
                              "gradients and AdamW's two moments that is 4 copies in memory)")

    def parameter_count(self) -> int:
        """About how many parameters the encoder has (embedding, layers, heads; exact to the norms'
        and biases' small terms), computed without building it."""
        d, f = self.d_model, self.d_ff
        embed = (self.vocab_size or self.in_channels) * d + self.max_len * d
        layer = 4 * d * d + 2 * d * f + 9 * d + f
        heads = d * self.n_classes + d * max(self.recon_classes, 1) + d * d
        return embed + self.n_layers * layer + heads

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads


MODEL_SETTINGS = ("d_model", "n_heads", "d_ff", "n_layers", "pooling", "head", "positional", "attention_bias")
"""The fields of :class:`ModelConfig` that ``--set FIELD=VALUE`` may change
(:func:`spt_theory.core.args.parse_model_settings`); the others are sized by the data.  The LRA
task configs (:class:`spt_theory.lra.configs.LRAConfig`) spell their model fields the same way."""


def configured(settings: Mapping[str, object] | None = None, **fields) -> ModelConfig:
    """A :class:`ModelConfig` with ``fields``, every other field from ``settings`` (the model
    settings a command was given with ``--set``, passed down as a value:
    :attr:`spt_theory.claims.registry.Context.model_settings`, ``FigureContext.model``) or else
    :class:`ModelConfig`'s default.  The evidence is held to it
    (:func:`spt_theory.evidence.schema.check_model_settings`).  ConfigError on a field that is not
    one of :data:`MODEL_SETTINGS` in ``settings``."""
    settings = dict(settings or {})
    unknown = sorted(set(settings) - set(MODEL_SETTINGS))
    if unknown:
        raise ConfigError(f"not a model setting: {', '.join(unknown)} (settings: {', '.join(MODEL_SETTINGS)})")
    return ModelConfig(**{**settings, **fields})


def sinusoidal_table(length: int, d_model: int) -> torch.Tensor:
    """P[t, 2i] = sin(t / 10000^(2i/d)), P[t, 2i+1] = cos(t / 10000^(2i/d)), shape (length, d)."""
    position = torch.arange(length, dtype=torch.float64).unsqueeze(1)
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    table = torch.zeros(length, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(position * freq)
    table[:, 1::2] = torch.cos(position * freq[: d_model // 2])
    return table.float()


def alibi_bias(length: int, n_heads: int) -> torch.Tensor:
    """B[h, i, j] = -m_h |i - j| with geometric slopes m_h = 2^(-8 (h+1) / H), shape (H, n, n)."""
    slopes = torch.pow(2.0, -8.0 * torch.arange(1, n_heads + 1) / n_heads)
    distance = (torch.arange(length)[:, None] - torch.arange(length)[None, :]).abs()
    return -slopes[:, None, None] * distance


def attention_mask(bias: torch.Tensor | None, valid: torch.Tensor | None) -> torch.Tensor | None:
    """What attention adds to its scores: the fixed ``bias`` (heads, n, n) and, where ``valid``
    (batch, n) is given, -inf at padded keys: a bool mask (batch, 1, 1, n) without a bias, else
    the float bias (batch, heads, n, n) with -inf at padded keys."""
    if valid is None:
        return bias
    keys = valid[:, None, None, :]
    return keys if bias is None else bias.masked_fill(~keys, -math.inf)


class Attention(nn.Module):
    """Multi-head self-attention with separate W_Q W_K (group ``qk``) and W_V W_O (group ``vo``).

    The projections are applied as one fused matmul with the concatenated weight [W_Q; W_K; W_V]
    (:meth:`project`); :meth:`forward` takes its output, (batch, n, 3 d).
    """

    n_heads: int
    d_head: int
    qk: Linear
    v: Linear
    out: Linear

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.n_heads, self.d_head = cfg.n_heads, cfg.d_head
        self.qk = Linear(cfg.d_model, 2 * cfg.d_model)
        self.v = Linear(cfg.d_model, cfg.d_model)
        self.out = Linear(cfg.d_model, cfg.d_model)

    def split_query_key(self, t: torch.Tensor, dim: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """The W_Q and W_K parts (views) of a tensor laid out like ``qk.weight`` along ``dim``: the
        weight, the bias, their gradients (dim 0), or a transposed weight (dim 1)."""
        query, key = t.chunk(2, dim=dim)
        return query, key

    def split_heads(self, t: torch.Tensor, dim: int = -1) -> torch.Tensor:
        """``t`` with its ``dim`` of size d viewed as (heads, d_h): head h owns d_h h .. d_h (h+1)."""
        return t.unflatten(dim, (self.n_heads, self.d_head))

    def project(self, u: torch.Tensor) -> torch.Tensor:
        """[Q, K, V] = u [W_Q; W_K; W_V]^T + [b_Q, b_K, b_V], shape (..., 3 d)."""
        return linear(u, torch.cat([self.qk.weight, self.v.weight]), torch.cat([self.qk.bias, self.v.bias]))

    def forward(self, qkv: torch.Tensor, bias: torch.Tensor | None = None,
                cache: dict | None = None, name: str = "attn") -> torch.Tensor:
        """``bias``: added to the scores, float (broadcast to (batch, heads, n, n)), or a bool mask
        with True where attention is allowed (:func:`attention_mask`)."""
        b, n, d = qkv.shape[0], qkv.shape[1], qkv.shape[2] // 3
        # split, not unbind: the backward then concatenates dQ, dK, dV in place of stack + copy
        q, k, v = (self.split_heads(t).transpose(1, 2) for t in qkv.split(d, dim=-1))
        if cache is None:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        else:
            scores = q @ k.transpose(-1, -2) / math.sqrt(self.d_head)
            if bias is not None:
                scores = (scores.masked_fill(~bias, -math.inf) if bias.dtype == torch.bool
                          else scores + bias)
            if scores.requires_grad:
                scores.retain_grad()
            pattern = scores.softmax(dim=-1)
            y = pattern @ v
            cache[f"{name}.q"], cache[f"{name}.k"], cache[f"{name}.v"] = q, k, v
            cache[f"{name}.scores"], cache[f"{name}.pattern"] = scores, pattern
        return self.out(y.transpose(1, 2).reshape(b, n, d))


class Block(nn.Module):
    """Pre-LN block: h + Attn(LN(h)), then h + W_2 GELU(W_1 LN(h))."""

    ln_attn: nn.LayerNorm
    attn: Attention
    ln_mlp: nn.LayerNorm
    mlp: nn.Sequential

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.ln_attn = nn.LayerNorm(cfg.d_model)
        self.attn = Attention(cfg)
        self.ln_mlp = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(Linear(cfg.d_model, cfg.d_ff), nn.GELU(), Linear(cfg.d_ff, cfg.d_model))

    def forward(self, h, bias=None, cache: dict | None = None, name: str = "blocks.0",
                qkv: torch.Tensor | None = None):
        """``qkv``: the attention projection of LN(h) when the caller already has it."""
        if qkv is None:
            qkv = self.attn.project(self.ln_attn(h))
        h = h + self.attn(qkv, bias, cache, f"{name}.attn")
        h = h + self.mlp(self.ln_mlp(h))
        if cache is not None:
            cache[f"{name}.resid_post"] = h
        return h


class Blocks(nn.ModuleList):
    """The encoder's blocks: an ``nn.ModuleList`` (same state dict) whose items are :class:`Block`
    for the type checker too."""

    if TYPE_CHECKING:
        def __getitem__(self, index: int) -> Block: ...  # type: ignore[override]  # no slices here

        def __iter__(self) -> Iterator[Block]: ...


class Encoder(nn.Module):
    """Input encoder, positional encoding, blocks, pooling, classifier head, reconstruction decoder."""

    cfg: ModelConfig
    pe: torch.Tensor
    bias: torch.Tensor | None
    blocks: Blocks
    embed: nn.Embedding | Linear
    head: Linear | nn.Sequential

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.embed = (nn.Embedding(cfg.vocab_size, d) if cfg.vocab_size
                      else Linear(cfg.in_channels, d))
        self.cls = nn.Parameter(torch.zeros(d)) if cfg.pooling == "cls" else None
        positions = cfg.max_len + (cfg.pooling == "cls")
        pe = sinusoidal_table(positions, d) if cfg.positional == "sinusoidal" else torch.zeros(positions, d)
        self.register_buffer("pe", pe, persistent=False)
        if cfg.attention_bias == "alibi":
            self.register_buffer("bias", alibi_bias(positions, cfg.n_heads), persistent=False)
        else:
            self.bias = None
        self.blocks = Blocks(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_final = nn.LayerNorm(d)
        features = 4 * d if cfg.head == "pair_mlp" else d
        self.head = (Linear(d, cfg.n_classes) if cfg.head == "linear" else
                     nn.Sequential(Linear(features, d), nn.GELU(), Linear(d, cfg.n_classes)))
        self.decoder = Linear(d, cfg.recon_classes if cfg.recon_classes else 1)
        self.reset_parameters()

    def reset_parameters(self, groups: tuple[str, ...] = PARAMETER_GROUPS) -> None:
        """(Re-)initialise the parameters of ``groups`` with torch's defaults for each layer:
        Linear W ~ U(-1/sqrt(3 d_in), 1/sqrt(3 d_in)) (Kaiming, a = sqrt 5), b ~ U(+-1/sqrt(d_in));
        Embedding ~ N(0, 1); LayerNorm gain 1, shift 0; the CLS token 0."""
        for name, module in self.named_modules():
            own = [f"{name}.{p}" if name else p for p, _ in module.named_parameters(recurse=False)]
            if module is not self and own and self.group_of(own[0]) in groups:
                module.reset_parameters()
        if self.cls is not None and "embed" in groups:
            with torch.no_grad():
                self.cls.zero_()

    # ----------------------------------------------------------------- parameter groups
    @staticmethod
    def group_of(parameter_name: str) -> str:
        """The group a parameter belongs to, from its name."""
        if ".attn.qk." in parameter_name:
            return "qk"
        if ".attn.v." in parameter_name or ".attn.out." in parameter_name:
            return "vo"
        if ".mlp." in parameter_name:
            return "mlp"
        if ".ln_" in parameter_name or parameter_name.startswith("ln_"):
            return "norm"
        for prefix, group in (("embed", "embed"), ("cls", "embed"), ("head", "head"),
                              ("decoder", "decoder")):
            if parameter_name.startswith(prefix):
                return group
        raise KeyError(f"parameter {parameter_name!r} belongs to no group")

    def named_group_parameters(self, group: str):
        if group not in PARAMETER_GROUPS:
            raise ValueError(f"unknown parameter group {group!r}; groups: {PARAMETER_GROUPS}")
        return [(n, p) for n, p in self.named_parameters() if self.group_of(n) == group]

    # ----------------------------------------------------------------- forward
    def tabulates_first_qkv(self, x: torch.Tensor) -> bool:
        """Whether :meth:`encode` computes the first block's Q, K, V by table (see the module doc)."""
        return (self.cfg.vocab_size > 0 and self.cls is None and x.dim() == 2
                and table_pays(self.cfg.vocab_size, x.shape[0]))

    def first_qkv(self, x: torch.Tensor) -> torch.Tensor:
        """Q, K, V of the first block from the table T[v n + t] = LN(E_v + P_t) W_QKV^T, gathered
        at row x_bt n + t for every (b, t); equals ``blocks[0].attn.project(LN(E[x] + P))``."""
        block = self.blocks[0]
        return tabulated(lambda u: block.attn.project(block.ln_attn(u)), self.embed.weight, self.pe, x)

    def encode(self, x: torch.Tensor, cache: dict | None = None,
               valid: torch.Tensor | None = None) -> torch.Tensor:
        """Hidden states LN(h_L), shape (batch, n, d) (n + 1 with a CLS token); ``valid``
        (batch, n): True at real tokens, padded keys masked in attention (module doc)."""
        h = gather_rows(self.embed.weight, x) if self.cfg.vocab_size else self.embed(x)
        if self.cls is not None:
            h = torch.cat([self.cls.expand(h.shape[0], 1, -1), h], dim=1)
            valid = None if valid is None else self.with_cls(valid)
        n = h.shape[1]
        if n > self.pe.shape[0]:
            raise ValueError(f"sequence length {n} exceeds the positional table ({self.pe.shape[0]})")
        h = h + self.pe[:n]
        bias = attention_mask(None if self.bias is None else self.bias[:, :n, :n], valid)
        if cache is not None:
            cache["embed"] = h
        qkv = self.first_qkv(x) if cache is None and self.tabulates_first_qkv(x) else None
        for i, block in enumerate(self.blocks):
            h = block(h, bias, cache, f"blocks.{i}", qkv if i == 0 else None)
        h = self.ln_final(h)
        if cache is not None:
            cache["final"] = h
        return h

    def with_cls(self, valid: torch.Tensor) -> torch.Tensor:
        """``valid`` with the CLS position (always real) prepended, when the model has one."""
        return valid if self.cls is None else F.pad(valid, (1, 0), value=True)

    def pool(self, h: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """z = (1/|R|) sum_{i in R} h_i (mean), (1/n) sum_i h_i (mean_all), max_{i in R} h_i, h_0
        (CLS) or h_{max R} (last), with R the real positions (all n when ``valid`` is None)."""
        pooling = self.cfg.pooling
        if pooling == "cls":
            return h[:, 0]
        if valid is None or pooling == "mean_all":
            if pooling in ("mean", "mean_all"):
                return h.mean(dim=1)
            return h.max(dim=1).values if pooling == "max" else h[:, -1]
        valid = self.with_cls(valid)
        if pooling == "mean":
            weights = valid.to(h.dtype).unsqueeze(-1)
            return (h * weights).sum(dim=1) / weights.sum(dim=1)
        if pooling == "max":
            return h.masked_fill(~valid.unsqueeze(-1), -math.inf).max(dim=1).values
        last = valid.shape[1] - 1 - valid.flip(1).to(torch.int8).argmax(dim=1)
        return h[torch.arange(len(h), device=h.device), last]

    def forward(self, x: torch.Tensor, cache: dict | None = None,
                valid: torch.Tensor | None = None) -> torch.Tensor:
        """Class logits, shape (batch, n_classes); ``valid`` as in :meth:`encode` ((batch, 2, n)
        for pairs).

        With the ``pair_mlp`` head ``x`` is (batch, 2, n, ...): both documents are encoded as one
        batch of 2 * batch sequences, pooled to u, v, and the head sees [u, v, u - v, u * v].
        """
        pair = self.cfg.head == "pair_mlp"
        if pair:
            x, valid = x.flatten(0, 1), None if valid is None else valid.flatten(0, 1)
        z = self.pool(self.encode(x, cache, valid), valid)
        if pair:
            u, v = z.unflatten(0, (-1, 2)).unbind(1)
            z = torch.cat([u, v, u - v, u * v], dim=-1)
        if cache is not None:
            cache["pooled"] = z
        return self.head(z)

    def reconstruct(self, x: torch.Tensor, cache: dict | None = None,
                    valid: torch.Tensor | None = None) -> torch.Tensor:
        """Per-position reconstruction outputs, shape (batch, n, recon_classes or 1)."""
        h = self.encode(x, cache, valid)
        if self.cls is not None:
            h = h[:, 1:]
        return self.decoder(h)

    def run_with_cache(self, x: torch.Tensor, reconstruct: bool = False,
                       valid: torch.Tensor | None = None) -> tuple[torch.Tensor, dict]:
        """Forward through the explicit attention path; returns (output, cache of named activations)."""
        cache: dict = {}
        out = (self.reconstruct(x, cache, valid) if reconstruct else self.forward(x, cache, valid))
        return out, cache
