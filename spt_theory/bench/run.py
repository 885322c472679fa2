"""``python -m spt_theory.bench``: the cases timed, the table printed, the JSON written."""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from spt_theory.bench.cases import LRA_LIKE, LRA_SIZES, SYNTHETIC, BenchSize
from spt_theory.bench.models import (
    ABLATION_CONTEXTS,
    CPU_ABLATIONS,
    LRA_CPU_MODELS,
    LRA_MODELS,
    MODELS,
    build_models,
    make_batches,
    training_step,
)
from spt_theory.bench.timing import clock_for, device_peak_gflops, interleaved_times, matmul_peak_gflops, quartiles
from spt_theory.core import args as cli_args
from spt_theory.core import cpu
from spt_theory.core.args import at_least
from spt_theory.core.model import Encoder
from spt_theory.training.runtime import Runtime
from spt_theory.util.files import InputError, announce, prepare_output, write_json
from spt_theory.util.interrupts import interruptible
from spt_theory.util.prog import prog
from spt_theory.util.tables import line
from synthetic.walk import generate_walk


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
    ours = built["spt_theory"]
    out: dict[str, Any] = {
        "size": size.__dict__, "step_gflop": flops / 1e9, "widths": widths, "real_tokens_per_step": tokens,
        "device": str(device), "autocast_bf16": runtime.autocast, "inner": inner,
        "table_used": isinstance(ours, Encoder) and ours.tabulates_first_qkv(batches[0][0])}
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
        print(row_line([name, model, f"{1e3 * q['median']:.2f}", f"{1e3 * q['q1']:>7.2f}-{1e3 * q['q3']:<7.2f}",
                        f"{m['tokens_per_second']:.0f}", f"{m['gflops'] / scale:.1f}", fraction,
                        f"{m['speedup_vs_torch_layer']:.2f}x"]))
    paired = r["spt_theory"]["paired_speedup"]
    print(f"{name:<10} speedup vs torch layer: {r['speedup_vs_torch_layer']:.2f}x (ratio of medians; "
          f"per-repetition ratios {paired['q1']:.2f}-{paired['q3']:.2f})"
          + ("" if r["table_used"] or "no_table" not in models else "; batch < 2 x vocab: no_table is the same model"))


WIDTHS = (10, 12, 9, 15, 10, 9, 6, 9)
"""The table's columns (printed a row at a time, as each size is timed): size, model, ms/step,
its IQR, tokens/s, GFLOP/s (TFLOP/s on CUDA), share of the peak, speedup vs the torch layer."""


def row_line(cells) -> str:
    return line(cells, WIDTHS, "<<>>>>>>", " ")


def header(unit: str) -> str:
    return row_line(["size", "model", "ms/step", "IQR", "tokens/s", unit, "peak", "vs torch"])


@interruptible
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=prog("python -m spt_theory.bench"), description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", type=Path, metavar="PATH", help="write the results as JSON")
    p.add_argument("--repetitions", type=at_least(2), default=7, help="interleaved repetitions (default 7)")
    p.add_argument("--lra", action="store_true",
                   help="only the LRA-shaped cases (variable lengths, key-padding mask) of --device")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cpu (default; float32) or cuda (bf16 autocast, CUDA events; implies --lra)")
    p.add_argument("--tiny", action="store_true", help="with --lra: tiny sizes (a check that it runs)")
    p.add_argument("--verify", action="store_true",
                   help="also time a quick verify from an empty cache (minutes)")
    cli_args.add_no_progress(p)
    args = p.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda: no CUDA device is available to this torch build", file=sys.stderr)
        return 2
    try:  # the output before any timing: a path that cannot be written (or the evidence) is one line
        cli_args.refuse_evidence_outputs(args)
        if args.json:
            prepare_output(args.json)
        return _run(args, argv)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace, argv: list[str] | None) -> int:
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
    cases: list[tuple[BenchSize, int | None, tuple[str, ...]]] = (
        [] if lra_only else [(SYNTHETIC, 3, MODELS), (LRA_LIKE, 1, MODELS)])
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
        announce(write_json(args.json, results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
