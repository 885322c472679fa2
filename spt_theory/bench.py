"""``python -m spt_theory.bench``: training throughput against torch's own Transformer layer.

Both models have identical sizes and optimiser (AdamW): token embedding + sinusoidal PE, pre-LN
layers (one unless a size says otherwise) with GELU MLP, final LayerNorm, mean pooling, linear
head.  The reference uses ``torch.nn.TransformerEncoderLayer(norm_first=True, activation="gelu",
dropout=0, batch_first=True)``.  Each step reads its loss back before the backward pass, as the
training loop does.  All models
are timed interleaved over repetitions in one process (so load on the machine hits them alike)
and reported as median and interquartile range; the speedup is the ratio of medians, and the
quartiles of the per-repetition ratios (each from adjacent timings) show its spread.

Besides the toolkit's model (``spt_theory``) two ablations are timed with it, each removing one
of its speed-ups: ``torch_linear`` (``F.linear``, i.e. MKL, instead of the oneDNN linear of
:mod:`spt_theory.cpu`) and ``no_table`` (the first block's Q, K, V computed per token instead of
per (token, position) table row).  One more row, in every CPU case, is a bound rather than a
model: ``attention_free`` (attention's output replaced by V, so the row is the step without any
attention kernel, the fastest any attention kernel could make it: :class:`AttentionFreeEncoder`).
The allocator tuning of :func:`spt_theory.cpu.tune_allocator` is process-wide, so it applies to
all models, the reference included.

Achieved GFLOP/s counts the matmul FLOPs of one training step (backward = 2x forward,
:func:`train_step_flops`), per layer:

    forward per sequence = 2 n (3 d^2 + d^2 + 2 d d_ff) + 2 * 2 n^2 d     (projections, MLP, QK^T and AV)

at the padded length n the kernels compute, and is compared with the measured peak of a square
float32 matmul on the same machine: the fastest of torch's own (MKL) and oneDNN's over the sizes
512, 1024 and 2048 (each kernel's best reported).

**LRA-shaped case** (``lra_masked`` in the default run; ``--lra`` runs only such cases): lengths
of ListOps trees drawn by the ListOps generator (seeded), one length-sorted bucket cut into
batches (:func:`spt_theory.training.epoch_batches`), each padded to its longest, padded keys
masked (``Encoder(x, valid=mask)``; the reference gets the same mask as ``src_key_padding_mask``)
and both pooled by the mean over the real tokens.  Each repetition times one pass over all the
batches; tokens/s counts real tokens.  ``--device cuda`` times the same code at the ListOps and
Pathfinder shapes of the GPU confirmation (1 layer; ListOps: width 512, 8 heads, FF 2048, batch 32,
lengths 500-2000; Pathfinder: width 128, 8 heads, FF 128, batch 32, 1024 pixels as tokens) under
bf16 autocast, timed with CUDA events after warm-up, against the card's bf16 dense peak
(:data:`BF16_DENSE_PEAK_TFLOPS`).
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from spt_theory import cpu
from spt_theory.io import write_json
from spt_theory.model import Attention, Encoder, ModelConfig, sinusoidal_table
from spt_theory.training import Runtime, epoch_batches
from synthetic.listops import sample_trees, tree_length
from synthetic.prog import prog
from synthetic.walk import generate_walk

BF16_DENSE_PEAK_TFLOPS = {"H200": 989.0, "A100": 312.0}
"""Dense (no sparsity) bf16 Tensor Core peaks by device-name substring.  H200: NVIDIA H200 Tensor
Core GPU datasheet, "BF16 Tensor Core 1,979 TFLOPS" (SXM, quoted with sparsity) / 2; A100: NVIDIA
A100 datasheet, "BF16 Tensor Core 312 TFLOPS" (dense)."""


def forward_flops(n: int, d_model: int, d_ff: int, layers: int = 1, out_per_token: int = 0) -> float:
    """Matmul FLOPs of one sequence's forward pass at length ``n``: per layer the Q, K, V and
    output projections 2 n 4 d^2, the MLP 2 n 2 d d_ff, QK^T and AV 2 * 2 n^2 d (summed over
    heads); plus a per-token output layer of ``out_per_token`` features (the SPT decoder)."""
    d = d_model
    return float(layers * (2 * n * (4 * d * d + 2 * d * d_ff) + 4 * n * n * d) + 2 * n * d * out_per_token)


def train_step_flops(widths, d_model: int, d_ff: int, layers: int = 1, out_per_token: int = 0) -> float:
    """FLOPs of one training step over sequences of (padded) lengths ``widths``: backward is
    twice the forward, so 3x :func:`forward_flops` per sequence."""
    return 3.0 * sum(forward_flops(n, d_model, d_ff, layers, out_per_token) for n in widths)


def listops_lengths(count: int, min_len: int, max_len: int, seed: int = 0) -> list[int]:
    """Lengths of ``count`` ListOps trees (``min_len < length < max_len``) from the generator."""
    trees = itertools.islice(sample_trees(random.Random(seed), min_len, max_len), count)
    return [tree_length(tree) for tree in trees]


@dataclass(frozen=True)
class BenchSize:
    name: str
    n: int
    d_model: int
    n_heads: int
    d_ff: int
    batch: int
    vocab: int = 16
    layers: int = 1
    min_len: int | None = None
    """Variable lengths: ListOps trees with ``min_len < length < n``, padded per batch to its
    longest, padded keys masked (None: every sequence ``n`` long, no mask)."""
    batches: int = 1
    """Batches one pass cycles through (one length-sorted bucket cut into batches)."""
    classes: int = 2

    @property
    def masked(self) -> bool:
        return self.min_len is not None

    def model_config(self) -> ModelConfig:
        return ModelConfig(vocab_size=self.vocab + 1, recon_classes=self.vocab, max_len=self.n,
                           d_model=self.d_model, n_heads=self.n_heads, d_ff=self.d_ff, n_layers=self.layers,
                           n_classes=self.classes)

    def lengths(self, seed: int = 0) -> torch.Tensor:
        """Real lengths of the ``batch * batches`` sequences of a pass."""
        count = self.batch * self.batches
        if not self.masked:
            return torch.full((count,), self.n, dtype=torch.int64)
        return torch.tensor(listops_lengths(count, self.min_len, self.n, seed))

    def pass_indices(self, lengths: torch.Tensor, seed: int = 0) -> list[torch.Tensor]:
        """The batches of a pass: one length-sorted bucket when lengths vary, as training cuts them."""
        generator = torch.Generator().manual_seed(seed)
        return epoch_batches(len(lengths), self.batch, generator, lengths if self.masked else None)

    def widths(self, seed: int = 0) -> list[int]:
        """Padded width of each batch of a pass."""
        lengths = self.lengths(seed)
        return [int(lengths[index].max()) for index in self.pass_indices(lengths, seed)]

    def step_flops(self, out_per_token: int = 0, widths: list[int] | None = None) -> float:
        """Matmul FLOPs of one forward + backward training step, the mean over a pass's batches."""
        widths = self.widths() if widths is None else widths
        steps = [train_step_flops([w] * self.batch, self.d_model, self.d_ff, self.layers, out_per_token)
                 for w in widths]
        return sum(steps) / len(steps)


SYNTHETIC = BenchSize("synthetic", n=100, d_model=64, n_heads=4, d_ff=256, batch=256)
LRA_LIKE = BenchSize("lra_like", n=1024, d_model=128, n_heads=4, d_ff=512, batch=16)
LRA_MASKED = BenchSize("lra_masked", n=500, min_len=125, d_model=128, n_heads=4, d_ff=512, batch=16,
                       batches=4, vocab=16, classes=10)
"""ListOps-like on the CPU: lengths 125-500 (ListOps' 500-2000 / 4), width 128."""
LISTOPS_GPU = BenchSize("listops", n=2000, min_len=500, d_model=512, n_heads=8, d_ff=2048, batch=32,
                        batches=8, vocab=16, classes=10)
PATHFINDER_GPU = BenchSize("pathfinder", n=1024, d_model=128, n_heads=8, d_ff=128, batch=32, batches=4,
                           vocab=256, classes=2)
LISTOPS_TINY = BenchSize("listops", n=40, min_len=5, d_model=16, n_heads=2, d_ff=32, batch=4, batches=2,
                         vocab=16, classes=10)
PATHFINDER_TINY = BenchSize("pathfinder", n=1024, d_model=16, n_heads=2, d_ff=32, batch=2, batches=1,
                            vocab=256, classes=2)
LRA_SIZES = {"cpu": (LRA_MASKED,), "cuda": (LISTOPS_GPU, PATHFINDER_GPU), "tiny": (LISTOPS_TINY, PATHFINDER_TINY)}
"""The ``--lra`` cases by device (``tiny``: the GPU script's CPU test sizes, shapes as its runs)."""


class TorchLayerModel(nn.Module):
    """The reference: the same model built from ``nn.TransformerEncoderLayer`` (``n_layers`` of
    them), pooled by the toolkit's own :meth:`Encoder.pool` (the mean over the real tokens)."""

    pool = Encoder.pool
    with_cls = Encoder.with_cls

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
        return self.head(self.pool(self.ln_final(h), valid))


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


def wall_clock():
    """Start a wall-clock timer; the returned function gives the seconds since."""
    start = time.perf_counter()
    return lambda: time.perf_counter() - start


def cuda_clock():
    """Start a CUDA-event timer on the current stream; the returned function records the end
    event, waits for it and gives the seconds of GPU time between the two events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()

    def stop() -> float:
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3

    return stop


def clock_for(device: torch.device):
    """CUDA events on a CUDA device, the wall clock elsewhere."""
    return cuda_clock if device.type == "cuda" else wall_clock


def interleaved_times(steps: dict, repetitions: int, inner: int, warmup: int = 2,
                      clock=wall_clock) -> dict[str, list[float]]:
    """Seconds per call of each closure, the closures alternating within every repetition."""
    for _ in range(warmup):
        for step in steps.values():
            step()
    times = {name: [] for name in steps}
    for _ in range(repetitions):
        for name, step in steps.items():
            stop = clock()
            for _ in range(inner):
                step()
            times[name].append(stop() / inner)
    return times


def quartiles(values: list[float]) -> dict:
    q1, median, q3 = statistics.quantiles(values, n=4) if len(values) > 1 else (values[0],) * 3
    return {"median": median, "q1": q1, "q3": q3}


def matmul_peak_gflops(sizes: tuple[int, ...] = (512, 1024, 2048), repetitions: int = 5) -> dict[str, float]:
    """Per kernel, the best over ``sizes`` of the median GFLOP/s of a size x size float32 matmul:
    torch's ``a @ b`` (MKL on x86) and, where available, oneDNN's (:func:`spt_theory.cpu.linear`)."""
    peaks: dict[str, float] = {}
    for size in sizes:
        a, b = torch.randn(size, size), torch.randn(size, size)
        kernels = {"torch_mm": lambda a=a, b=b: a @ b}
        if cpu.onednn_available():
            kernels["onednn"] = lambda a=a, b=b: cpu.linear(a, b)
        for name, kernel in kernels.items():
            kernel()
            times = []
            for _ in range(repetitions):
                start = time.perf_counter()
                kernel()
                times.append(time.perf_counter() - start)
            peaks[name] = max(peaks.get(name, 0.0), 2 * size**3 / statistics.median(times) / 1e9)
    return peaks


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
    makers = {"spt_theory": lambda: ours, "torch_linear": lambda: Encoder(cfg), "no_table": lambda: UntabulatedEncoder(cfg),
              "attention_free": lambda: AttentionFreeEncoder(cfg),
              "torch_layer": lambda: TorchLayerModel(cfg)}
    models = {}
    for name in names:
        model = makers[name]()
        if isinstance(model, Encoder) and model is not ours:
            model.load_state_dict(ours.state_dict())
        models[name] = model.to(device)
    return models


def compare(size: BenchSize, repetitions: int, inner: int | None = None, peak: float | None = None,
            models: tuple[str, ...] = MODELS, device: str | torch.device = "cpu", autocast: bool | None = None) -> dict:
    """Throughput of ``models`` at ``size``, interleaved.  ``inner``: steps per repetition
    (default one pass over the batches).  ``autocast``: bf16 autocast (default: on CUDA only);
    on CUDA the steps are timed with CUDA events.  ``peak``: the GFLOP/s that ``peak_fraction``
    divides by (None: omitted)."""
    device = torch.device(device)
    if device.type == "cuda" and set(models) & set(CPU_ABLATIONS):
        raise ValueError(f"the CPU ablations {CPU_ABLATIONS} are not timed on CUDA")
    runtime = Runtime(device, autocast=device.type == "cuda" if autocast is None else autocast)
    batches = make_batches(size, device)
    built = build_models(size, models, device)
    steps = {name: training_step(model, batches, ABLATION_CONTEXTS.get(name, runtime.autocast_context))
             for name, model in built.items()}
    inner = inner or len(batches)
    times = interleaved_times(steps, repetitions, inner, warmup=max(2, 2 * len(batches)),
                              clock=clock_for(device))
    widths = [x.shape[1] for x, _, _ in batches]
    flops = size.step_flops(widths=widths)
    tokens = sum(x.numel() if valid is None else int(valid.sum()) for x, _, valid in batches) / len(batches)
    out = {"size": size.__dict__, "step_gflop": flops / 1e9, "widths": widths, "real_tokens_per_step": tokens,
           "device": str(device), "autocast_bf16": runtime.autocast, "inner": inner,
           "table_used": built["spt_theory"].tabulates_first_qkv(batches[0][0])}
    for name, t in times.items():
        q = quartiles(t)
        gflops = flops / q["median"] / 1e9
        out[name] = {"seconds_per_step": q, "sequences_per_second": size.batch / q["median"],
                     "tokens_per_second": tokens / q["median"], "gflops": gflops,
                     "peak_fraction": None if peak is None else gflops / peak}
    reference = out["torch_layer"]["seconds_per_step"]["median"]
    for name in times:
        out[name]["speedup_vs_torch_layer"] = reference / out[name]["seconds_per_step"]["median"]
        out[name]["paired_speedup"] = quartiles([r / t for r, t in zip(times["torch_layer"], times[name])])
    out["speedup_vs_torch_layer"] = out["spt_theory"]["speedup_vs_torch_layer"]
    return out


def device_peak_gflops(device: torch.device) -> tuple[str, float | None]:
    """(device name, its bf16 dense peak in GFLOP/s from :data:`BF16_DENSE_PEAK_TFLOPS`, or None)."""
    name = torch.cuda.get_device_name(device)
    for key, tflops in BF16_DENSE_PEAK_TFLOPS.items():
        if key in name:
            return name, 1e3 * tflops
    return name, None


def generator_throughput(size: int = 100_000) -> float:
    """Walk-task sequences (V=16, n=100) generated per second."""
    start = time.perf_counter()
    generate_walk(16, 100, 0.5, size, seed=0)
    return size / (time.perf_counter() - start)


def verify_wall_time() -> float:
    """Wall time of a quick ``python -m spt_theory.verify`` from an empty run cache."""
    with tempfile.TemporaryDirectory() as cache:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "spt_theory.verify", "--cache-dir", cache, "--no-progress"],
                       check=False, stdout=subprocess.DEVNULL)
        return time.perf_counter() - start


def machine_facts() -> dict:
    """What a reader needs to weigh the numbers: the CPU's model name, the kernel set torch chose
    (``get_cpu_capability``), cores, the 1-minute load average when the bench started, the date."""
    name = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            name = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), name)
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {"cpu": name, "capability": torch.backends.cpu.get_cpu_capability(), "cores": os.cpu_count(),
            "load_average_1min": load, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def print_case(name: str, r: dict, models: tuple[str, ...], scale: float = 1.0) -> None:
    """The rows of one size: ms/step, its IQR, tokens/s, GFLOP/s / ``scale``, share of the peak, speedup."""
    for model in models:
        m = r[model]
        q = m["seconds_per_step"]
        fraction = "-" if m["peak_fraction"] is None else f"{m['peak_fraction']:.1%}"
        print(f"{name:<10} {model:<12} {1e3 * q['median']:>9.2f} {1e3 * q['q1']:>7.2f}-{1e3 * q['q3']:<7.2f} "
              f"{m['tokens_per_second']:>10.0f} {m['gflops'] / scale:>9.1f} {fraction:>6} "
              f"{m['speedup_vs_torch_layer']:>8.2f}x")
    paired = r["spt_theory"]["paired_speedup"]
    print(f"{name:<10} speedup vs torch layer: {r['speedup_vs_torch_layer']:.2f}x (ratio of medians; "
          f"per-repetition ratios {paired['q1']:.2f}-{paired['q3']:.2f})"
          + ("" if r["table_used"] or "no_table" not in models else "; batch < 2 x vocab: no_table is the same model"))


def header(unit: str) -> str:
    return (f"{'size':<10} {'model':<12} {'ms/step':>9} {'IQR':>15} {'tokens/s':>10} {unit:>9} {'peak':>6}"
            f" {'vs torch':>9}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=prog("python -m spt_theory.bench"), description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", type=Path, metavar="PATH", help="write the results as JSON")
    p.add_argument("--repetitions", type=int, default=7, help="interleaved repetitions (default 7)")
    p.add_argument("--lra", action="store_true",
                   help="only the LRA-shaped cases (variable lengths, key-padding mask) of --device")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cpu (default; float32) or cuda (bf16 autocast, CUDA events; implies --lra)")
    p.add_argument("--tiny", action="store_true", help="with --lra: tiny sizes (a check that it runs)")
    p.add_argument("--verify", action="store_true",
                   help="also time a quick verify from an empty cache (minutes)")
    args = p.parse_args(argv)
    if args.repetitions < 2:
        print("error: --repetitions: must be >= 2", file=sys.stderr)
        return 2
    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda: no CUDA device is available to this torch build", file=sys.stderr)
        return 2
    lra_only = args.lra or args.device == "cuda" or args.tiny
    device = torch.device(args.device)
    results = {"threads": torch.get_num_threads(), "torch": str(torch.__version__), "device": args.device,
               "machine": machine_facts(), "argv": sys.argv[1:] if argv is None else list(argv)}
    facts = results["machine"]
    load = "unknown" if facts["load_average_1min"] is None else f"{facts['load_average_1min']:.2f}"
    print(f"{facts['cpu']} ({facts['capability']}, {facts['cores']} cores), 1-min load {load} at the start, "
          f"{facts['date']}, torch {torch.__version__}")
    if device.type == "cuda":
        name, peak = device_peak_gflops(device)
        results.update(device_name=name, bf16_dense_peak_gflops=peak)
        print(f"{name}: bf16 dense peak " + (f"{peak / 1e3:.0f} TFLOP/s" if peak else "unknown (not in "
              "BF16_DENSE_PEAK_TFLOPS): no peak fraction") + "; bf16 autocast, CUDA events")
    else:
        results["allocator_tuned"] = cpu.tune_allocator()
        peaks = matmul_peak_gflops()
        peak = max(peaks.values())
        results.update(matmul_peaks_gflops=peaks, matmul_peak_gflops=peak)
        print(f"float32 matmul peak ({torch.get_num_threads()} threads, best of 512^2-2048^2): "
              + ", ".join(f"{name} {value:.1f} GFLOP/s" for name, value in peaks.items())
              + f"; fractions below are of {peak:.1f}")
    scale = 1e3 if device.type == "cuda" else 1.0
    print(header("TFLOP/s" if device.type == "cuda" else "GFLOP/s"))
    cases = [] if lra_only else [(SYNTHETIC, 3, MODELS), (LRA_LIKE, 1, MODELS)]
    lra_models = LRA_CPU_MODELS if args.device == "cpu" and not args.tiny else LRA_MODELS
    cases += [(size, None, lra_models) for size in LRA_SIZES["tiny" if args.tiny else args.device]]
    for size, inner, models in cases:
        r = compare(size, args.repetitions, inner, peak, models, device)
        results[size.name] = r
        print_case(size.name, r, models, scale)
    if not lra_only:
        results["speedup_vs_torch_layer"] = results["synthetic"]["speedup_vs_torch_layer"]
        results["peak_fraction"] = results["synthetic"]["spt_theory"]["peak_fraction"]
        results["peak_fraction_lra_like"] = results["lra_like"]["spt_theory"]["peak_fraction"]
        results["generator_sequences_per_second"] = generator_throughput()
        print(f"walk generator: {results['generator_sequences_per_second']:.0f} sequences/s (n=100)")
    if args.verify:
        results["verify_quick_seconds"] = verify_wall_time()
        print(f"verify (quick, empty cache): {results['verify_quick_seconds']:.1f} s")
    if args.json:
        write_json(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
