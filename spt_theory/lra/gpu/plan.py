"""The plan of the one-GPU confirmation (:mod:`spt_theory.lra.gpu.confirm`, whose help explains
the budget and the step caps): its tunables, the data sizes of each mode, the rates the plan's
seconds come from (assumed, measured by the bench, measured on this CPU), the planner
(:func:`plan`, each step's timeout :func:`step_timeout`) and its table (:func:`format_plan`)."""

from __future__ import annotations

import functools
import math
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from spt_theory.bench.cases import BF16_DENSE_PEAK_TFLOPS, LRA_SIZES, BenchSize, forward_flops
from spt_theory.lra.configs import one_layer, tiny
from spt_theory.lra.tasks import config_for
from spt_theory.util.files import InputError

BUDGET_SECONDS = 300.0
OVERRUN = 1.5
STEP_GRACE = 20.0
"""A step is cut at ``OVERRUN`` x its planned seconds + ``STEP_GRACE`` (or at the budget's end)."""
FINISH_SECONDS = 5.0
"""Seconds kept at the budget's end for the report, the summary and the export."""
MIN_STEP_SECONDS = 2.0
"""A step with less time than this left before the budget's end is skipped."""
ASSUMED_SCRIPT_START = 5.0
"""Seconds to start this script's interpreter and import torch (no CUDA context), before the CPU
rates are measured."""
ASSUMED_PEAK_FRACTION = 0.25
"""Achieved share of the bf16 dense peak assumed by ``--dry-run`` (1-layer models, widths 128-512)."""
ASSUMED_STEP_OVERHEAD = 1e-3
"""Seconds per optimizer step assumed by ``--dry-run`` on top of the FLOPs (kernel launches, AdamW)."""
ASSUMED_PROCESS_START = 10.0
"""Seconds to start one step's interpreter: import torch, create the CUDA context."""
ASSUMED_DISK_BYTES_PER_SECOND = 5e8
"""Checkpoint writes (one a stage and epoch)."""
ASSUMED_PROBE_GFLOPS = 10_000.0
"""float32 GFLOP/s of the probes, which run on the GPU through the explicit attention path (no bf16,
no fused kernel): about 15% of the H200's 67 TFLOP/s float32 peak."""
GPU_MACHINE_CORES = 16
SAFETY = 0.85
"""Share of the time left that the training stages are planned to fill."""
BENCH_REPETITIONS = 5
TASKS = ("listops", "pathfinder")
CELLS = {"listops": ("recipe=scratch", "recipe=spt", "recipe=spt,keep=qk"),
         "pathfinder": ("recipe=scratch", "recipe=spt")}
SWEEP_NAME = "gpu"
FIGURES = tuple(f"{task}-{SWEEP_NAME}.{suffix}" for task in TASKS for suffix in ("png", "pdf"))
"""The sweep figures the export takes (at most gpu_export.MAX_FIGURES)."""
STAGES = {"listops": ("scratch", "pretrain", "spt", "spt keep=qk"), "pathfinder": ("scratch", "pretrain", "spt")}
PROBED_CHECKPOINTS = {"listops": 8, "pathfinder": 5}
"""init + scratch; init + SPT + finetuned per spt cell."""


@dataclass(frozen=True)
class Sizes:
    """Data sizes, bench shapes and caps of one mode (full on a GPU, or tiny on a CPU for tests)."""

    listops: tuple[int, int, int]
    listops_lengths: tuple[int, int]
    pathfinder_images: int
    listops_workers: int
    workers: int
    """Pathfinder processes (ListOps and Pathfinder generate at once, one process a core)."""
    probe_limit: int
    shapes: dict
    tiny: bool = False
    max_steps: int | None = None
    """An upper bound on every step cap (tiny: the tests' few steps)."""


FULL = Sizes(listops=(20000, 1000, 1000), listops_lengths=(500, 2000), pathfinder_images=20000, listops_workers=4,
             workers=GPU_MACHINE_CORES - 4,
             probe_limit=16, shapes={s.name: s for s in LRA_SIZES["cuda"]})
TINY = Sizes(listops=(24, 8, 8), listops_lengths=(5, 40), pathfinder_images=40, listops_workers=1, workers=2,
             probe_limit=8,
             shapes={s.name: s for s in LRA_SIZES["tiny"]}, tiny=True, max_steps=3)


# ------------------------------------------------------------------------------ the plan

@dataclass(frozen=True)
class Rates:
    """What the plan's seconds come from: achieved FLOP/s and per-step overhead per task on the
    GPU, and the data generation and reading rates (per process)."""

    flops: dict
    step_overhead: float
    trees_per_second: float
    images_per_second: float
    trees_read_per_second: float
    images_read_per_second: float
    measure_seconds: float
    """Wall seconds this process took to measure the four CPU rates (part of the start)."""
    basis: str


@functools.cache
def stage_flops(task: str, shape: BenchSize, stage: str) -> float:
    """FLOPs of one training step of ``stage`` at ``shape``: SPT adds the per-token decoder."""
    decoder = config_for(task).vocab_size if stage == "pretrain" else 0
    return shape.step_flops(out_per_token=decoder)


@functools.cache
def mean_length(shape: BenchSize) -> int:
    """The mean real length of the bench's sequences at ``shape`` (ListOps: the generator's)."""
    return round(float(shape.lengths().float().mean()))


def eval_flops(task: str, shape: BenchSize, sizes: Sizes, stage: str) -> float:
    """FLOPs of one epoch's evaluation: validation and test accuracy, or the validation masked loss."""
    _, n_val, n_test = split_sizes(task, sizes)
    count = n_val if stage == "pretrain" else n_val + n_test
    return count * forward_flops(mean_length(shape), shape.d_model, shape.d_ff, shape.layers)


def split_sizes(task: str, sizes: Sizes) -> tuple[int, int, int]:
    """(train, val, test) examples: the ListOps files, Pathfinder's 80/10/10 split of its images."""
    if task == "listops":
        return sizes.listops
    n = sizes.pathfinder_images
    return n - 2 * (n // 10), n // 10, n // 10


def plan(sizes: Sizes, rates: Rates, fixed_seconds: dict | None = None, budget: float = BUDGET_SECONDS,
         caps: dict | None = None, repetitions: int = BENCH_REPETITIONS, slowdown: float = 1.0) -> dict:
    """The plan: rows (step, what, TFLOP, seconds, basis), each task's step cap, epochs and
    warm-up, the steps with their planned seconds and timeouts (:func:`plan_steps`), and the
    total.  ``fixed_seconds``: measured seconds of the steps already run (``start``, ``bench``,
    ``data``, a task's whole sweep); ``caps``: step caps to keep (an earlier run's, or
    those of a task already run); ``slowdown``: the factor by which a finished sweep took longer
    than planned, applied to the seconds per step of the tasks still to run."""
    rows = []
    fixed_seconds = fixed_seconds or {}
    caps = caps or {}
    rows.append(_row("start", "this script: interpreter, torch import, the CPU rates measured", 0.0,
                     fixed_seconds.get("start", ASSUMED_SCRIPT_START + rates.measure_seconds),
                     "measured" if "start" in fixed_seconds else "assumed start + the rates' measuring here"))
    bench_steps = {name: (repetitions + 2) * s.batches for name, s in sizes.shapes.items()}  # warm-up: 2 passes
    bench_est = ASSUMED_PROCESS_START + sum(
        2 * bench_steps[t] * (stage_flops(t, sizes.shapes[t], "scratch") / rates.flops[t] + rates.step_overhead)
        for t in TASKS)
    rows.append(_row("bench", f"ours vs TransformerEncoderLayer, 2 shapes x {repetitions} passes",
                     sum(2 * bench_steps[t] * stage_flops(t, sizes.shapes[t], "scratch") for t in TASKS),
                     fixed_seconds.get("bench", bench_est), "measured" if "bench" in fixed_seconds else rates.basis))
    n_trees = sum(sizes.listops)
    trees = n_trees / (rates.trees_per_second * sizes.listops_workers)
    images = sizes.pathfinder_images / (rates.images_per_second * sizes.workers)
    rows.append(_row("data", f"ListOps {n_trees} trees ({sizes.listops_workers} x {rates.trees_per_second:.0f}/s) || "
                     f"Pathfinder {sizes.pathfinder_images} images ({sizes.workers} x {rates.images_per_second:.1f}/s)",
                     0.0, fixed_seconds.get("data", max(trees, images)),
                     "measured" if "data" in fixed_seconds else "CPU rates measured here (CPU seconds), one process "
                                                                "a core"))
    finish = _row("finish", "report, summary.json and the export, in this process", 0.0, FINISH_SECONDS,
                  "kept at the budget's end")
    costs = {task: task_costs(task, sizes, rates, slowdown) for task in TASKS if task not in fixed_seconds}
    spent = (sum(row["seconds"] for row in rows) + finish["seconds"]
             + sum(fixed_seconds[t] for t in TASKS if t in fixed_seconds)
             + sum(c["start"] + c["probe"] for c in costs.values()))
    n_stages = sum(len(STAGES[t]) for t in costs)
    available = max(0.0, SAFETY * (budget - spent))
    tasks = {}
    for task in TASKS:
        if task in fixed_seconds:
            rows.append(_row(f"{task} sweep", f"{caps[task]} steps a stage, whole sweep", 0.0, fixed_seconds[task],
                             "measured"))
            tasks[task] = {"max_steps": caps[task], "measured_seconds": fixed_seconds[task]}
            continue
        c, shape = costs[task], sizes.shapes[task]
        if task in caps:
            cap = caps[task]
        else:  # the task's share of the time, k stages: cap * per_step_all + constant = share
            share = available * len(STAGES[task]) / n_stages
            cap = max(1, math.floor((share - c["constant"]) / c["per_step_all"]))
            cap = cap if sizes.max_steps is None else min(cap, sizes.max_steps)
        epochs = max(1, math.ceil(cap * shape.batch / split_sizes(task, sizes)[0]))
        rows.append(_row(f"{task} start", "interpreter, CUDA context, data read once (training and probes)",
                         0.0, c["start"], "assumed start + read rate measured here"))
        for stage in STAGES[task]:
            flops = cap * stage_flops(task, shape, stage) + epochs * eval_flops(task, shape, sizes, stage)
            seconds = cap * c["per_step"][stage] + epochs * c["per_epoch"][stage]
            rows.append(_row(f"{task} {stage}", f"{cap} steps x {stage_flops(task, shape, stage) / 1e12:.3f} "
                             f"TFLOP + {epochs} evaluations and checkpoints", flops, seconds,
                             rates.basis + (f" x {slowdown:.2f} (slowdown of the sweep before)"
                                            if slowdown != 1 else "")))
        rows.append(_row(f"{task} probes", f"{PROBED_CHECKPOINTS[task]} checkpoints x {sizes.probe_limit} test "
                         "examples, on the GPU", c["probe_flops"], c["probe"],
                         f"assumed {ASSUMED_PROBE_GFLOPS / 1e3:.0f} TFLOP/s float32"))
        planned = sum(row["seconds"] for row in rows if row["step"].startswith(task + " "))
        tasks[task] = {"max_steps": cap, "epochs": epochs, "warmup_steps": max(1, cap // 10),
                       "steps_per_epoch": math.ceil(split_sizes(task, sizes)[0] / shape.batch),
                       "seconds_per_step": c["per_step"], "planned_seconds": planned}
    rows.append(finish)
    total = sum(row["seconds"] for row in rows)
    return {"rows": rows, "tasks": tasks, "steps": plan_steps(rows, budget), "total_seconds": total,
            "budget_seconds": budget,
            "rates": asdict(rates), "sizes": {k: v for k, v in asdict(sizes).items() if k != "shapes"},
            "shapes": {name: asdict(s) for name, s in sizes.shapes.items()}, "slowdown": slowdown}


STEPS = ("start", "bench", "data", *(f"sweep {task}" for task in TASKS), "finish")


def step_of(row: str) -> str:
    """The step a plan row belongs to ("listops pretrain" -> "sweep listops")."""
    first = row.split()[0]
    return f"sweep {first}" if first in TASKS else row


def step_timeout(planned: float, left: float) -> float:
    """Seconds a step planned to take ``planned`` may run with ``left`` seconds of the budget left:
    ``OVERRUN`` x ``planned`` + ``STEP_GRACE``, but never into the last ``FINISH_SECONDS``."""
    return min(OVERRUN * planned + STEP_GRACE, left - FINISH_SECONDS)


def plan_steps(rows: list[dict], budget: float) -> list[dict]:
    """Each step's planned seconds (its rows') and its timeout (None for the start and the finish,
    which run in this process) were the steps before it to take their planned seconds."""
    steps, elapsed = [], 0.0
    for name in STEPS:
        seconds = sum(row["seconds"] for row in rows if step_of(row["step"]) == name)
        timeout = None if name in ("start", "finish") else step_timeout(seconds, budget - elapsed)
        steps.append({"step": name, "planned_seconds": seconds, "timeout_seconds": timeout})
        elapsed += seconds
    return steps


def planned_seconds(p: dict, step: str) -> float:
    return next(s["planned_seconds"] for s in p["steps"] if s["step"] == step)


def task_costs(task: str, sizes: Sizes, rates: Rates, slowdown: float = 1.0) -> dict:
    """Seconds of one task's sweep: ``start`` (process, reading the data once: training and the
    probes share it on the GPU), ``probe``, and per stage ``per_step`` (a training step) and ``per_epoch``
    (evaluation and checkpoint); ``per_step_all`` and ``constant``: the sweep's stages as
    cap * per_step_all + constant, an epoch counted as cap * batch / train examples + 1."""
    shape = sizes.shapes[task]
    examples = sum(split_sizes(task, sizes))
    read_rate = rates.trees_read_per_second if task == "listops" else rates.images_read_per_second
    probe = (PROBED_CHECKPOINTS[task] * sizes.probe_limit
             * forward_flops(mean_length(shape), shape.d_model, shape.d_ff, shape.layers))
    checkpoint = checkpoint_bytes(task, sizes.tiny) / ASSUMED_DISK_BYTES_PER_SECOND
    per_step = {st: slowdown * (stage_flops(task, shape, st) / rates.flops[task] + rates.step_overhead)
                for st in STAGES[task]}
    per_epoch = {st: slowdown * eval_flops(task, shape, sizes, st) / rates.flops[task] + checkpoint
                 for st in STAGES[task]}
    epochs_per_step = shape.batch / split_sizes(task, sizes)[0]
    return {"start": ASSUMED_PROCESS_START + examples / read_rate, "probe_flops": probe,
            "probe": probe / (ASSUMED_PROBE_GFLOPS * 1e9), "per_step": per_step, "per_epoch": per_epoch,
            "per_step_all": sum(per_step[st] + epochs_per_step * per_epoch[st] for st in STAGES[task]),
            "constant": sum(per_epoch.values())}


@functools.cache
def checkpoint_bytes(task: str, tiny_sizes: bool) -> int:
    """Bytes of one training checkpoint of the sweep's 1-layer model: float32 weights and AdamW's
    two moments."""
    import torch

    from spt_theory.core.model import Encoder
    from spt_theory.lra.inputs import LRATask
    from spt_theory.lra.readers.common import LISTOPS_VOCAB, PIXEL_VOCAB

    config = one_layer(tiny(config_for(task)) if tiny_sizes else config_for(task))
    vocab = LISTOPS_VOCAB if task == "listops" else PIXEL_VOCAB
    with torch.device("meta"):
        model = Encoder(LRATask(config, vocab).model_config(config, config.max_length))
    return 3 * 4 * sum(p.numel() for p in model.parameters())


def _row(step: str, what: str, flops: float, seconds: float, basis: str) -> dict:
    return {"step": step, "what": what, "tflop": flops / 1e12, "seconds": seconds, "basis": basis}


def format_plan(p: dict) -> str:
    """The plan's rows, its total against the budget, and each step's planned seconds and timeout."""
    lines = [f"{'step':<22} {'TFLOP':>9} {'est. s':>8}  what [basis]", "-" * 100]
    for row in p["rows"]:
        lines.append(f"{row['step']:<22} {row['tflop']:>9.2f} {row['seconds']:>8.1f}  {row['what']} [{row['basis']}]")
    lines.append("-" * 100)
    verdict = "fits" if p["total_seconds"] <= p["budget_seconds"] else "DOES NOT FIT"
    lines.append(f"{'total':<22} {'':>9} {p['total_seconds']:>8.1f}  {verdict} in the budget of "
                 f"{p['budget_seconds']:.0f} s (an estimate until it has run on a GPU)")
    lines.append("steps (cut at the timeout; the timeouts as if every step before took its plan): " + ", ".join(
        f"{s['step']} {s['planned_seconds']:.0f} s" + ("" if s["timeout_seconds"] is None else
                                                       f" (timeout {s['timeout_seconds']:.0f} s)")
        for s in p["steps"]))
    return "\n".join(lines)


def assumed_rates(generation: dict) -> Rates:
    """The dry run's rates: ASSUMED_PEAK_FRACTION of the H200 bf16 dense peak; the CPU rates
    ``generation`` (:func:`measure_cpu_rates`)."""
    peak = BF16_DENSE_PEAK_TFLOPS["H200"] * 1e12
    return Rates(flops={t: ASSUMED_PEAK_FRACTION * peak for t in TASKS}, step_overhead=ASSUMED_STEP_OVERHEAD,
                 basis=f"assumed {ASSUMED_PEAK_FRACTION:.0%} of H200 bf16 peak "
                       f"{BF16_DENSE_PEAK_TFLOPS['H200']:.0f} TFLOP/s + {1e3 * ASSUMED_STEP_OVERHEAD:.0f} ms/step",
                 **generation)


def measured_rates(bench: dict, generation: dict) -> Rates:
    """Rates from the bench JSON: our model's FLOPs per step over its median seconds per step."""
    flops = {}
    for task in TASKS:
        if task not in bench:
            raise InputError(f"bench JSON: no {task!r} case")
        flops[task] = 1e9 * bench[task]["step_gflop"] / bench[task]["spt_theory"]["seconds_per_step"]["median"]
    return Rates(flops=flops, step_overhead=0.0, basis="bench-measured FLOP/s of our model", **generation)


def measure_cpu_rates(sizes: Sizes, trees: int = 48, images: int = 24) -> dict:
    """Rates per process of this CPU (a few seconds): ListOps trees and Pathfinder images drawn
    and written, and read back by the LRA readers.  Timed in this process's CPU time, so other
    load on the machine does not count (one generator process a core on the GPU machine)."""
    from spt_theory.lra.data import load_task_data
    from synthetic import listops, pathfinder

    low, high = sizes.listops_lengths
    counts = {"train": trees, "val": 4, "test": 4}
    wall = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        start = time.process_time()
        for name, rows in listops.generate_splits(counts, low, high, seed=12345).items():
            listops.write_split(root / f"listops-1000/basic_{name}.tsv", rows)
        trees_per_second = sum(counts.values()) / (time.process_time() - start)
        start = time.process_time()
        pathfinder.write_dataset(root / "pathfinder32", images, seed=12345)
        images_per_second = images / (time.process_time() - start)
        start = time.process_time()
        load_task_data(config_for("listops"), root)
        trees_read = sum(counts.values()) / (time.process_time() - start)
        start = time.process_time()
        load_task_data(config_for("pathfinder"), root)
        images_read = images / (time.process_time() - start)
    return {"trees_per_second": trees_per_second, "images_per_second": images_per_second,
            "trees_read_per_second": trees_read, "images_read_per_second": images_read,
            "measure_seconds": time.perf_counter() - wall}
