"""``python -m spt_theory.lra.gpu_confirm`` (run by ``scripts/lra_gpu_confirm.sh``): the budgeted
one-GPU confirmation of SPT on generated ListOps and Pathfinder-32, 1-layer models, one seed.

Steps (:mod:`spt_theory.lra.gpu_steps`: every process of the interpreter ``--python`` in its own
process group, its output shown on stderr as it comes and kept in ``OUT/logs/<process>.log``):

0. ``start``: this process's start and the data rates measured on this CPU (for the plan).
1. ``bench``: ``python -m spt_theory.bench --device cuda --lra``: ms/step, tokens/s and TFLOP/s of
   our model against ``nn.TransformerEncoderLayer`` at the ListOps and Pathfinder shapes.
2. ``data``: ``listops_workers`` processes draw ListOps trees (lengths 500-2000) while ``workers``
   processes draw Pathfinder-32 images (contour length 14), one seed each, merged into the release
   layout with one provenance marker per task (a tree drawn twice is kept once).  Reused when
   ``OUT/data`` already holds data of the same sizes.
3. ``sweep <task>``: ``python -m spt_theory.lra sweep`` with the cells scratch, spt (and
   ``spt,keep=qk`` for ListOps), seed 0, ``--layers 1``: trains, probes every checkpoint (init,
   scratch, SPT, finetuned) and writes ``OUT/sweeps/<task>-gpu.{json,png,pdf}``.
4. ``report``, in this process: the report table of ``OUT/results`` -> ``OUT/report.txt``; then
   ``OUT/summary.json`` (every number of the run) and, with ``$OUT`` set or ``--export DIR``, the
   export there (:mod:`spt_theory.lra.gpu_export`: at most 7 files within the limits of what the
   lent GPU machine returns).

**Budget.**  The run is planned to fit ``--budget`` seconds (``BUDGET_SECONDS``, data generation
included, counted from the script's start), so that a rerun and the machine's starts still fit a
15-minute lease.  Every step has a timeout, :func:`step_timeout`: ``OVERRUN`` x its planned seconds
+ ``STEP_GRACE``, never past the budget's end less ``FINISH_SECONDS`` (kept for the report and the
export); a step whose timeout would be under ``MIN_STEP_SECONDS`` is skipped.  A step that fails or
overruns (cut: its processes stopped) is recorded and the run goes on where it can: without the
bench the plan keeps the dry run's assumed rates, without data the sweeps are skipped, one task's
sweep does not need the other's.  The report, summary and export always happen; the exit status
is 0 when every step finished, else 2 (one ``error:`` line per step that did not).

**Step caps.**  The runner caps a stage by ``--max-steps`` only, so the plan turns seconds into
steps: what is left of the budget after the measured start, bench and data steps and the
estimated fixed costs (process starts, data reading, probes, the finish) is multiplied by
``SAFETY`` and split evenly over the training stages (4 for ListOps, 3 for Pathfinder); a task's
cap is the most steps whose training, per-epoch evaluations and checkpoints fit its share.
Seconds per step are FLOPs per step (:func:`spt_theory.bench.cases.train_step_flops`; SPT adds the
decoder) over the achieved FLOP/s the bench measured for our model at that task's shape.  The
plan is redone before each sweep with the time actually left; a sweep slower than planned slows
the next task's steps by the same factor.  ``--dry-run`` makes the same plan on the CPU with an
assumed achieved rate (``ASSUMED_PEAK_FRACTION`` of the H200's bf16 dense peak, plus
``ASSUMED_STEP_OVERHEAD`` per step) and data generation and reading rates measured on this CPU
(one process, in CPU seconds), the generation spread over the GPU machine's ``GPU_MACHINE_CORES``.
The caps are saved in ``OUT/plan.json``; a rerun reuses them, so cached stages resume.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

from spt_theory.bench.cases import BF16_DENSE_PEAK_TFLOPS, LRA_SIZES, BenchSize, forward_flops
from spt_theory.lra import gpu_export
from spt_theory.lra.configs import config_for, one_layer, tiny
from spt_theory.lra.gpu_steps import Step, run_step, say
from spt_theory.lra.report import format_report, load_results
from spt_theory.util.io import InputError, StorageError, atomic_write, make_dirs, prepare_output, write_json
from spt_theory.util.provenance import make_owned, owned_folder

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
                             rates.basis + (f" x {slowdown:.2f} (slowdown of the sweep before)" if slowdown != 1 else "")))
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
    from spt_theory.lra.readers import LISTOPS_VOCAB, PIXEL_VOCAB
    from spt_theory.lra.task import LRATask

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


# ------------------------------------------------------------------------------ the steps

def shares(total: int, parts: int) -> list[int]:
    """``total`` cut into ``parts`` near-equal counts (the first ones one larger)."""
    return [total // parts + (k < total % parts) for k in range(parts)]


def data_wanted(sizes: Sizes) -> str:
    """What ``data/.complete`` holds once the data of ``sizes`` is there."""
    return json.dumps({k: v for k, v in asdict(sizes).items() if k != "shapes"}, sort_keys=True)


def data_commands(python: str, parts: Path, sizes: Sizes) -> dict[str, list[str]]:
    """The generator processes of the data step: each draws its part under ``parts`` with its own seed."""
    low, high = sizes.listops_lengths
    counts = [shares(n, sizes.listops_workers) for n in sizes.listops]
    commands = {}
    for k, (train, val, test) in enumerate(zip(*counts)):
        commands[f"data listops {k}"] = [
            python, "-m", "synthetic.listops", "--out", str(parts / f"listops-{k}"), "--train", str(train),
            "--val", str(val), "--test", str(test), "--min-len", str(low), "--max-len", str(high), "--seed", str(k)]
    for k, n in enumerate(shares(sizes.pathfinder_images, sizes.workers)):
        commands[f"data pathfinder {k}"] = [
            python, "-m", "synthetic.pathfinder", "--out", str(parts / f"pathfinder-{k}"), "--n", str(n),
            "--seed", str(k + 1), "--per-folder", str(n), "--size", "32", "--contour-length", "14"]
    return commands


GENERATORS = ("synthetic.listops", "synthetic.pathfinder")


def made_here(data: Path, folder: Path) -> str | None:
    """None if the data step may replace ``folder``, else why not (one line): the confined-write
    rule of :func:`spt_theory.util.provenance.owned_folder` from the run folder down (no link on the way; a
    folder this step made, marked :data:`~spt_theory.util.files.OWNED`, an empty one, or one the
    project's generators marked).  A user's own data, or a link to it, is never touched."""
    return owned_folder(folder, data.parent, GENERATORS)


def generate_data(python: str, data: Path, sizes: Sizes, timeout: float, logs: Path,
                  planned: float | None = None) -> Step:
    """The data step: ListOps and Pathfinder-32 under ``data`` (release layout), unless already
    there: the processes of :func:`data_commands` at once, then their parts merged.  It replaces
    only folders it made itself (:func:`made_here`); a foreign one fails the step, untouched."""
    done = data / ".complete"
    if done.exists() and done.read_text() == data_wanted(sizes):
        say(f"data: reusing {data}")
        return Step("data", "ok", planned_seconds=planned, message=f"reused {data}")
    start = time.perf_counter()
    listops_dir, pf_dir, parts = data / "listops-1000", data / "pathfinder32", data / ".parts"
    made = (data, listops_dir, pf_dir, parts)
    refused = next((why for why in (made_here(data, folder) for folder in made[1:]) if why), None)
    refused = refused or (f"{data} is a link: nothing was changed" if data.is_symlink() else None)
    if refused:
        return Step("data", "failed", planned_seconds=planned,
                    message=f"{refused} (move it away or choose another --out)")
    make_dirs(data)
    done.unlink(missing_ok=True)
    for folder in made[1:]:
        make_owned(folder, data.parent, GENERATORS)
    environment = {**os.environ, "TQDM_MININTERVAL": "10"}  # 16 progress bars: fewer updates
    step = run_step("data", data_commands(python, parts, sizes), timeout, logs, planned, environment)
    if step.ok:
        try:
            merge_listops([parts / f"listops-{k}" for k in range(sizes.listops_workers)], listops_dir)
            merge_pathfinder([parts / f"pathfinder-{k}" for k in range(sizes.workers)], pf_dir)
        except InputError as error:
            step.status, step.message = "failed", f"merging the parts: {error}"
        else:
            shutil.rmtree(parts)
            atomic_write(done, lambda tmp: tmp.write_text(data_wanted(sizes)))
    step.seconds = round(time.perf_counter() - start, 2)
    return step


def merge_listops(parts: list[Path], target: Path) -> Path:
    """Concatenate each split of the parts into ``target`` (trees distinct across all splits: a
    tree drawn by two processes is kept once, where it came first) with one provenance marker."""
    from spt_theory.util.provenance import read_marker, write_marker
    from synthetic.listops import SPLITS, write_split

    seen, dropped, seeds, settings = set(), 0, [], {}
    rows = {split: [] for split in SPLITS}
    for part in parts:
        marker = read_marker(part)
        if marker is None:
            raise InputError(f"{part}: not a finished synthetic.listops folder")
        settings = marker["settings"]
        seeds.append(settings["seed"])
        for split in SPLITS:
            lines = (part / f"basic_{split}.tsv").read_text(encoding="utf-8").splitlines()[1:]
            for line in lines:
                source, label = line.split("\t")
                if source in seen:
                    dropped += 1
                    continue
                seen.add(source)
                rows[split].append((source, int(label)))
    for split, split_rows in rows.items():
        write_split(target / f"basic_{split}.tsv", split_rows)
    write_marker(target, "synthetic.listops", {**settings, **{split: len(r) for split, r in rows.items()},
                                               "seed": seeds, "duplicates_dropped": dropped,
                                               "merged": f"{len(parts)} processes, one seed each"})
    return target


def merge_pathfinder(parts: list[Path], target: Path) -> Path:
    """Move each part's ``imgs/0`` to ``imgs/<k>`` of one release layout, rewrite its metadata
    lines, and leave one provenance marker listing every part's seed."""
    from spt_theory.util.provenance import read_marker, write_marker

    root = target / "curv_contour_length_14"
    (root / "imgs").mkdir(parents=True, exist_ok=True)
    seeds, total, settings = [], 0, {}
    for k, part in enumerate(parts):
        source = part / "curv_contour_length_14"
        marker = read_marker(source)
        if marker is None or len(list((source / "imgs").iterdir())) != 1:
            raise InputError(f"{source}: not one finished synthetic.pathfinder folder")
        settings = marker["settings"]
        seeds.append(settings["seed"])
        total += settings["n"]
        lines = (source / "metadata/0.npy").read_text().splitlines(keepends=True)
        if not all(line.startswith("imgs/0 ") for line in lines):
            raise InputError(f"{source}/metadata/0.npy: a line not under imgs/0")
        (source / "imgs/0").rename(root / f"imgs/{k}")
        text = "".join(f"imgs/{k} " + line[len("imgs/0 "):] for line in lines)
        atomic_write(root / f"metadata/{k}.npy", lambda tmp, text=text: tmp.write_text(text))
    write_marker(root, "synthetic.pathfinder", {**settings, "n": total, "seed": seeds,
                                                "merged": f"{len(parts)} processes, one seed each"})
    return root


def sweep_command(python: str, task: str, out: Path, task_plan: dict, sizes: Sizes) -> list[str]:
    """The sweep of ``task``: its cells, seed 0, 1 layer, the plan's caps; a checkpoint per epoch
    only (``--checkpoint-every`` an epoch's steps)."""
    command = [python, "-m", "spt_theory.lra", "sweep", "--task", task, "--data-dir", str(out / "data"),
               "--out", str(out), "--layers", "1"]
    for cell in CELLS[task]:
        command += ["--cell", cell]
    command += ["--seeds", "0", "--name", SWEEP_NAME, "--epochs", str(task_plan["epochs"]),
                "--finetune-epochs", str(task_plan["epochs"]), "--max-steps", str(task_plan["max_steps"]),
                "--set", f"warmup_steps={task_plan['warmup_steps']}", "--probe-limit", str(sizes.probe_limit),
                "--checkpoint-every", str(task_plan["steps_per_epoch"]), "--no-progress"]
    return command + (["--tiny"] if sizes.tiny else [])


@dataclass
class Confirmation:
    """One run of the confirmation: its settings, the steps run so far (:class:`Step`) and the
    plans made; ``started``: the wall-clock time (``time.time()``) the budget counts from."""

    python: str
    out: Path
    sizes: Sizes
    budget: float
    started: float
    steps: list = field(default_factory=list)
    plans: dict = field(default_factory=dict)
    """The plans made, by when: at the ``start`` (assumed rates: the bench's and data's timeouts),
    before each ``sweep <task>``, and the ``final`` one with every step measured."""

    @property
    def repetitions(self) -> int:
        return 2 if self.sizes.tiny else BENCH_REPETITIONS

    def elapsed(self) -> float:
        return time.time() - self.started

    def timeout(self, name: str, planned: float) -> float | None:
        """The timeout of the step ``name`` (:func:`step_timeout`), or None, the step recorded as
        skipped, when less than ``MIN_STEP_SECONDS`` of the budget would be left for it."""
        timeout = step_timeout(planned, self.budget - self.elapsed())
        if timeout < MIN_STEP_SECONDS:
            self.skip(name, f"{self.budget - self.elapsed():.0f} s of the budget left", planned)
            return None
        return timeout

    def launch(self, name: str, commands: dict, planned: float) -> Step | None:
        """Run the step ``name`` under its timeout (None: skipped); recorded either way."""
        timeout = self.timeout(name, planned)
        if timeout is None:
            return None
        self.steps.append(run_step(name, commands, timeout, self.out / "logs", planned))
        return self.steps[-1]

    def skip(self, name: str, why: str, planned: float | None = None) -> None:
        self.steps.append(Step(name, "skipped", planned_seconds=planned, message=why))
        say(self.steps[-1].error_line())

    def bench(self, first: dict, generation: dict) -> Rates:
        """The bench step; the rates it measured, or the assumed ones when it did not finish."""
        bench_json = self.out / "bench.json"
        bench_json.unlink(missing_ok=True)
        command = [self.python, "-m", "spt_theory.bench", "--lra", "--repetitions", str(self.repetitions),
                   "--json", str(bench_json)] + (["--tiny"] if self.sizes.tiny else ["--device", "cuda"])
        step = self.launch("bench", {"bench": command}, planned_seconds(first, "bench"))
        if step is not None and step.ok:
            try:
                return measured_rates(json.loads(bench_json.read_text()), generation)
            except (InputError, KeyError, ValueError, OSError) as error:
                step.status, step.message = "failed", f"{bench_json}: not a bench of both tasks ({error!r})"
                say(step.error_line())
        rates = assumed_rates(generation)
        say(f"the plan keeps the assumed rates ({rates.basis})")
        return rates

    def run(self) -> None:
        """The steps start, bench, data and the sweeps, each recorded in ``steps``."""
        sizes, out = self.sizes, self.out
        generation = measure_cpu_rates(sizes)
        fixed = {"start": self.elapsed()}
        first = self.plans["start"] = plan(sizes, assumed_rates(generation), fixed, self.budget)
        self.steps.append(Step("start", "ok", seconds=round(fixed["start"], 2),
                               planned_seconds=ASSUMED_SCRIPT_START + generation["measure_seconds"]))
        rates = self.bench(first, generation)
        fixed["bench"] = self.steps[-1].seconds
        timeout = self.timeout("data", planned_seconds(first, "data"))
        if timeout is not None:
            self.steps.append(generate_data(self.python, out / "data", sizes, timeout, out / "logs",
                                            planned_seconds(first, "data")))
        fixed["data"] = self.steps[-1].seconds
        if not self.steps[-1].ok:
            for task in TASKS:
                self.skip(f"sweep {task}", "no data: the data step did not finish")
            return
        plan_path = out / "plan.json"
        earlier = json.loads(plan_path.read_text()) if plan_path.exists() else None
        same_sizes = earlier and earlier.get("sizes") == {k: v for k, v in asdict(sizes).items() if k != "shapes"}
        caps = {t: v["max_steps"] for t, v in earlier["tasks"].items()} if same_sizes else {}
        say("step caps " + (f"reused from {plan_path} (cached stages resume)" if caps else "derived from the bench"))
        slowdown = 1.0
        for task in TASKS:
            name = f"sweep {task}"
            p = self.plans[name] = plan(sizes, rates, fixed, self.budget, caps, self.repetitions, slowdown)
            write_json(plan_path, p)
            say(f"plan before the {task} sweep ({self.elapsed():.0f} s in):\n" + format_plan(p))
            step = self.launch(name, {name: sweep_command(self.python, task, out, p["tasks"][task], sizes)},
                               p["tasks"][task]["planned_seconds"])
            fixed[task] = 0.0 if step is None else step.seconds
            caps[task] = p["tasks"][task]["max_steps"]
            slowdown = max(slowdown, fixed[task] / p["tasks"][task]["planned_seconds"])
        self.plans["final"] = plan(sizes, rates, fixed, self.budget, caps, self.repetitions, slowdown)
        write_json(plan_path, self.plans["final"])

    def report(self) -> str | None:
        """The report step, in this process: ``OUT/report.txt`` from the result JSONs (None if none)."""
        start = time.perf_counter()
        try:
            text = format_report(load_results(self.out / "results")) + "\n"
        except InputError as error:
            self.steps.append(Step("report", "failed", seconds=round(time.perf_counter() - start, 2),
                                   message=str(error)))
            say(self.steps[-1].error_line())
            return None
        atomic_write(self.out / "report.txt", lambda tmp: tmp.write_text(text))
        self.steps.append(Step("report", "ok", seconds=round(time.perf_counter() - start, 2)))
        return text

    def summary(self, argv: list[str], report: str | None) -> dict:
        """Every number of the run: config, seed, device, versions, the bench, each step and each
        training stage (planned against actual), the sweeps, the plans and the report."""
        bench_json = self.out / "bench.json"
        bench = _read(lambda: json.loads(bench_json.read_text())) if bench_json.exists() else None
        total = self.elapsed()
        return {"what": "one-GPU confirmation of SPT on generated ListOps and Pathfinder-32 "
                        "(scripts/lra_gpu_confirm.sh)",
                "complete": all(step.ok for step in self.steps), "mode": "tiny" if self.sizes.tiny else "full",
                "argv": argv, "seed": 0, "budget_seconds": self.budget, "total_seconds": round(total, 1),
                "within_budget": total <= self.budget,
                "config": {"sizes": {k: v for k, v in asdict(self.sizes).items() if k != "shapes"},
                           "cells": CELLS, "layers": 1, "seeds": [0], "overrun": OVERRUN, "step_grace": STEP_GRACE,
                           "finish_seconds": FINISH_SECONDS},
                "device": gpu_export.device_info(), "versions": gpu_export.run_versions(),
                "bench": None if bench is None else _read(gpu_export.bench_numbers, bench, TASKS),
                "steps": [asdict(step) for step in self.steps],
                "stages": _read(gpu_export.stage_rows, self.out / "results"),
                "sweeps": _read(gpu_export.sweep_numbers, self.out / "sweeps", SWEEP_NAME, TASKS),
                "plans": self.plans, "report": report, "written": time.strftime("%Y-%m-%dT%H:%M:%S%z")}

    def finish(self, argv: list[str], export: Path | None) -> int:
        """Report, ``OUT/summary.json`` and the export; 0 when every step finished, else 2."""
        report = self.report()
        summary = self.summary(argv, report)
        write_json(self.out / "summary.json", summary)
        if export is not None:
            entry = gpu_export.export(self.out, export, summary, [self.out / "sweeps" / f for f in FIGURES])
            say(f"exported {len(entry['files'])} files to {export}"
                + (f"; left out: {entry['left_out']}" if entry["left_out"] else ""))
        if report is not None:
            print(report, end="")
        say(f"done in {self.elapsed():.0f} s of the budget of {self.budget:.0f} s; summary {self.out / 'summary.json'}")
        failed = [step for step in self.steps if not step.ok]
        for step in failed:
            print(step.error_line(), file=sys.stderr)
        return 2 if failed else 0


def _read(numbers, *args):
    """``numbers(*args)``, or what went wrong where the run's files do not hold what it reads
    (the summary is written whatever a step left)."""
    try:
        return numbers(*args)
    except (KeyError, TypeError, ValueError, OSError) as error:
        return {"error": repr(error)}


def _terminated(number: int, frame) -> None:
    raise SystemExit(128 + number)


def confirm(python: str, out: Path, sizes: Sizes, budget: float, export: Path | None, started: float,
            argv: list[str]) -> int:
    """The run: its steps, then the finish, which happens whatever a step (or this script) did.
    SIGTERM ends it at once (exit status 143, no finish), the running step's processes stopped."""
    run = Confirmation(python, out, sizes, budget, started)
    out.mkdir(parents=True, exist_ok=True)
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        run.run()
    except Exception:  # a fault of this script: recorded, and the finish still exports what ran
        run.steps.append(Step("script", "failed", message="a fault of the script itself (traceback in output_tail)",
                              output_tail=traceback.format_exc()[-2000:]))
        say(traceback.format_exc())
    finally:
        signal.signal(signal.SIGTERM, previous)
    return run.finish(argv, export)


def check_folders(out: Path, export: Path | None) -> None:
    """Before the first step: the run folder and the export folder are folders (or can be made)
    and writable (a probe file created and removed in each); InputError otherwise."""
    for what, folder in (("export folder", export), ("run folder", out)):
        if folder is None:
            continue
        if folder.exists() and not folder.is_dir():
            raise InputError(f"{what} {folder}: not a folder")
        try:
            prepare_output(folder, folder=True)
        except StorageError as error:
            raise InputError(f"{what}: {error}") from None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="scripts/lra_gpu_confirm.sh", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="?", type=Path, default=Path("runs/lra-gpu"),
                        help="run folder: data, checkpoints, results (default runs/lra-gpu)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan with FLOPs and estimated seconds")
    parser.add_argument("--tiny", action="store_true", help="tiny data, models and step caps, on the CPU (tests)")
    parser.add_argument("--budget", type=float, default=BUDGET_SECONDS,
                        help=f"seconds of GPU time, data generation included ({BUDGET_SECONDS:.0f})")
    parser.add_argument("--export", type=Path, metavar="DIR",
                        help="export folder: summary.json, report.txt, results.tar.gz, figures (default $OUT)")
    parser.add_argument("--python", default=sys.executable, help="interpreter of every step (default: this one)")
    parser.add_argument("--started", type=float, metavar="EPOCH_SECONDS",
                        help="when the budget starts (time since the epoch; the script passes its own start)")
    args = parser.parse_args(argv)
    started = time.time() if args.started is None else args.started
    sizes = TINY if args.tiny else FULL
    try:
        if not args.budget > 0:
            raise InputError(f"--budget must be > 0, got {args.budget}")
        if args.dry_run:
            if args.export is not None:
                raise InputError("--export does nothing with --dry-run (it runs nothing)")
            p = plan(sizes, assumed_rates(measure_cpu_rates(sizes)), budget=args.budget)
            print(format_plan(p))
            if p["total_seconds"] > args.budget:
                raise InputError(f"the plan takes {p['total_seconds']:.0f} s, over the budget of {args.budget:.0f} s")
            return 0
        export = args.export or (Path(os.environ["OUT"]) if os.environ.get("OUT") else None)
        if export is not None:
            gpu_export.check_export_folder(export, args.out, gpu_export.FIXED_FILES + FIGURES)
        if not args.tiny:
            import torch
            if not torch.cuda.is_available():
                raise InputError("no CUDA device visible to torch (--tiny: the pipeline on the CPU; "
                                 "--dry-run: the plan)")
        check_folders(args.out, export)
        return confirm(args.python, args.out, sizes, args.budget, export, started, argv)
    except (InputError, StorageError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
