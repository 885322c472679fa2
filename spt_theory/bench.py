"""``python -m spt_theory.bench``: training throughput against torch's own Transformer layer.

Both models have identical sizes and optimiser (AdamW): token embedding + sinusoidal PE, one
pre-LN layer with GELU MLP, final LayerNorm, mean pooling, linear head.  The reference uses
``torch.nn.TransformerEncoderLayer(norm_first=True, activation="gelu", dropout=0)``.  All models
are timed interleaved over repetitions in one process (so load on the machine hits them alike)
and reported as median and interquartile range; the speedup is the ratio of medians, and the
quartiles of the per-repetition ratios (each from adjacent timings) show its spread.

Besides the toolkit's model (``spt_theory``) two ablations are timed with it, each removing one
of its speed-ups: ``torch_linear`` (``F.linear``, i.e. MKL, instead of the oneDNN linear of
:mod:`spt_theory.cpu`) and ``no_table`` (the first block's Q, K, V computed per token instead of
per (token, position) table row).  The allocator tuning of :func:`spt_theory.cpu.tune_allocator`
is process-wide, so it applies to all models, the reference included.

Achieved GFLOP/s counts the matmul FLOPs of one training step (backward = 2x forward):

    forward per sequence = 2 n (3 d^2 + d^2 + 2 d d_ff) + 2 * 2 n^2 d     (projections, MLP, QK^T and AV)

and is compared with the measured peak of a large float32 matmul on the same machine: the faster
of torch's own (MKL) and oneDNN's, both reported.
"""

from __future__ import annotations

import argparse
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
from spt_theory.model import Encoder, ModelConfig, sinusoidal_table
from synthetic.walk import generate_walk


@dataclass(frozen=True)
class BenchSize:
    name: str
    n: int
    d_model: int
    n_heads: int
    d_ff: int
    batch: int
    vocab: int = 16

    def model_config(self) -> ModelConfig:
        return ModelConfig(vocab_size=self.vocab + 1, recon_classes=self.vocab, max_len=self.n,
                           d_model=self.d_model, n_heads=self.n_heads, d_ff=self.d_ff)

    def step_flops(self) -> float:
        """Matmul FLOPs of one forward + backward training step over the batch."""
        n, d, f = self.n, self.d_model, self.d_ff
        forward = 2 * n * (4 * d * d + 2 * d * f) + 4 * n * n * d
        return 3.0 * forward * self.batch


SYNTHETIC = BenchSize("synthetic", n=100, d_model=64, n_heads=4, d_ff=256, batch=256)
LRA_LIKE = BenchSize("lra_like", n=1024, d_model=128, n_heads=4, d_ff=512, batch=16)


class TorchLayerModel(nn.Module):
    """The reference: the same model built from ``nn.TransformerEncoderLayer``."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.register_buffer("pe", sinusoidal_table(cfg.max_len, cfg.d_model), persistent=False)
        self.layer = nn.TransformerEncoderLayer(cfg.d_model, cfg.n_heads, cfg.d_ff, dropout=0.0,
                                                activation="gelu", batch_first=True, norm_first=True)
        self.ln_final = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.ln_final(self.layer(self.embed(x) + self.pe[: x.shape[1]])).mean(1))


class UntabulatedEncoder(Encoder):
    """The toolkit's model without the first-block (token, position) table (an ablation)."""

    def tabulates_first_qkv(self, x: torch.Tensor) -> bool:
        return False


def training_step(model: nn.Module, x: torch.Tensor, y: torch.Tensor, context=nullcontext):
    """A closure doing one AdamW step of supervised CE on (x, y), inside ``context()``."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def step():
        with context():
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

    return step


def interleaved_times(steps: dict, repetitions: int, inner: int, warmup: int = 2) -> dict[str, list[float]]:
    """Seconds per call of each closure, the closures alternating within every repetition."""
    for _ in range(warmup):
        for step in steps.values():
            step()
    times = {name: [] for name in steps}
    for _ in range(repetitions):
        for name, step in steps.items():
            start = time.perf_counter()
            for _ in range(inner):
                step()
            times[name].append((time.perf_counter() - start) / inner)
    return times


def quartiles(values: list[float]) -> dict:
    q1, median, q3 = statistics.quantiles(values, n=4) if len(values) > 1 else (values[0],) * 3
    return {"median": median, "q1": q1, "q3": q3}


def matmul_peak_gflops(size: int = 2048, repetitions: int = 5) -> dict[str, float]:
    """Median GFLOP/s of a size x size float32 matmul: torch's ``a @ b`` (MKL on x86) and, where
    available, oneDNN's (:func:`spt_theory.cpu.linear`)."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    kernels = {"torch_mm": lambda: a @ b}
    if cpu.onednn_available():
        kernels["onednn"] = lambda: cpu.linear(a, b)
    peaks = {}
    for name, kernel in kernels.items():
        kernel()
        times = []
        for _ in range(repetitions):
            start = time.perf_counter()
            kernel()
            times.append(time.perf_counter() - start)
        peaks[name] = 2 * size**3 / statistics.median(times) / 1e9
    return peaks


MODELS = ("spt_theory", "torch_linear", "no_table", "torch_layer")


def compare(size: BenchSize, repetitions: int, inner: int, peak: float) -> dict:
    """Throughput of this toolkit's encoder, its two ablations and the torch-layer model at ``size``."""
    cfg = size.model_config()
    torch.manual_seed(0)
    ours = Encoder(cfg)
    untabulated = UntabulatedEncoder(cfg)
    untabulated.load_state_dict(ours.state_dict())
    torch_linear = Encoder(cfg)
    torch_linear.load_state_dict(ours.state_dict())
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, size.vocab, (size.batch, size.n), generator=gen)
    y = torch.randint(0, 2, (size.batch,), generator=gen)
    steps = {"spt_theory": training_step(ours, x, y),
             "torch_linear": training_step(torch_linear, x, y, cpu.torch_linear),
             "no_table": training_step(untabulated, x, y),
             "torch_layer": training_step(TorchLayerModel(cfg), x, y)}
    times = interleaved_times(steps, repetitions, inner)
    out = {"size": size.__dict__, "step_gflop": size.step_flops() / 1e9,
           "table_used": ours.tabulates_first_qkv(x)}
    for name, t in times.items():
        q = quartiles(t)
        out[name] = {"seconds_per_step": q, "sequences_per_second": size.batch / q["median"],
                     "gflops": size.step_flops() / q["median"] / 1e9,
                     "peak_fraction": size.step_flops() / q["median"] / 1e9 / peak}
    reference = out["torch_layer"]["seconds_per_step"]["median"]
    for name in times:
        out[name]["speedup_vs_torch_layer"] = reference / out[name]["seconds_per_step"]["median"]
        out[name]["paired_speedup"] = quartiles([r / t for r, t in zip(times["torch_layer"], times[name])])
    out["speedup_vs_torch_layer"] = out["spt_theory"]["speedup_vs_torch_layer"]
    return out


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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m spt_theory.bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", type=Path, metavar="PATH", help="write the results as JSON")
    p.add_argument("--repetitions", type=int, default=7, help="interleaved repetitions (default 7)")
    p.add_argument("--verify", action="store_true",
                   help="also time a quick verify from an empty cache (minutes)")
    args = p.parse_args(argv)
    if args.repetitions < 2:
        print("error: --repetitions: must be >= 2", file=sys.stderr)
        return 2
    allocator_tuned = cpu.tune_allocator()
    peaks = matmul_peak_gflops()
    peak = max(peaks.values())
    results = {"threads": torch.get_num_threads(), "torch": str(torch.__version__),
               "allocator_tuned": allocator_tuned, "matmul_peaks_gflops": peaks, "matmul_peak_gflops": peak}
    print(f"float32 matmul peak ({torch.get_num_threads()} threads, 2048^2): "
          + ", ".join(f"{name} {value:.1f} GFLOP/s" for name, value in peaks.items())
          + f"; fractions below are of {peak:.1f}")
    print(f"{'size':<10} {'model':<12} {'ms/step':>9} {'IQR':>15} {'seq/s':>9} {'GFLOP/s':>8} {'peak':>6}"
          f" {'vs torch':>9}")
    for size, inner in ((SYNTHETIC, 3), (LRA_LIKE, 1)):
        r = compare(size, args.repetitions, inner, peak)
        results[size.name] = r
        for name in MODELS:
            m = r[name]
            q = m["seconds_per_step"]
            print(f"{size.name:<10} {name:<12} {1e3 * q['median']:>9.1f} "
                  f"{1e3 * q['q1']:>7.1f}-{1e3 * q['q3']:<7.1f} {m['sequences_per_second']:>9.0f} "
                  f"{m['gflops']:>8.1f} {m['peak_fraction']:>6.1%} {m['speedup_vs_torch_layer']:>8.2f}x")
        paired = r["spt_theory"]["paired_speedup"]
        print(f"{size.name:<10} speedup vs torch layer: {r['speedup_vs_torch_layer']:.2f}x (ratio of medians; "
              f"per-repetition ratios {paired['q1']:.2f}-{paired['q3']:.2f})"
              + ("" if r["table_used"] else "; batch < 2 x vocab: no_table is the same model"))
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
