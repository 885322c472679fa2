"""``python -m spt_theory.lra.gpu_confirm`` (run by ``scripts/lra_gpu_confirm.sh``): the budgeted
one-GPU confirmation of SPT on generated ListOps and Pathfinder-32, 1-layer models, one seed.

Steps, each a subprocess of the interpreter ``--python`` (stderr shown as it comes; a failing step
prints its error and the run stops with exit status 2):

1. ``bench``: ``python -m spt_theory.bench --device cuda --lra``: ms/step, tokens/s and TFLOP/s of
   our model against ``nn.TransformerEncoderLayer`` at the ListOps and Pathfinder shapes.
2. ``data``: ``listops_workers`` processes draw ListOps trees (lengths 500-2000) while ``workers``
   processes draw Pathfinder-32 images (contour length 14), one seed each, merged into the release
   layout with one provenance marker per task (a tree drawn twice is kept once).  Reused when
   ``OUT/data`` already holds data of the same sizes.
3. ``sweep`` per task: ``python -m spt_theory.lra sweep`` with the cells scratch, spt (and
   ``spt,keep=qk`` for ListOps), seed 0, ``--layers 1``: trains, probes every checkpoint (init,
   scratch, SPT, finetuned) and writes ``OUT/sweeps/<task>-gpu.{json,png,pdf}``.
4. ``report``: ``python -m spt_theory.lra report`` -> ``OUT/report.txt``.

**Step caps.**  The runner caps a stage by ``--max-steps`` only, so the plan turns seconds into
steps: what is left of the budget after the measured bench and data steps and the estimated fixed
costs (process starts, data reading, probes) is multiplied by ``SAFETY`` and split evenly over
the training stages (4 for ListOps, 3 for Pathfinder); a task's cap is the most steps whose
training, per-epoch evaluations and checkpoints fit its share.  Seconds per step are FLOPs per
step (:func:`spt_theory.bench.train_step_flops`; SPT adds the decoder) over the achieved FLOP/s the
bench measured for our model at that task's shape.  The plan is redone before each sweep with the
time actually left; a sweep slower than planned slows the next task's steps by the same factor.  ``--dry-run`` makes the same plan on the CPU with an assumed achieved rate
(``ASSUMED_PEAK_FRACTION`` of the H200's bf16 dense peak, plus ``ASSUMED_STEP_OVERHEAD`` per step)
and data generation and reading rates measured on this CPU (one process, in CPU seconds), the
generation spread over the GPU machine's ``GPU_MACHINE_CORES``.
The caps are saved in ``OUT/plan.json``; a rerun reuses them, so cached stages resume.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from spt_theory.bench import BF16_DENSE_PEAK_TFLOPS, LRA_SIZES, BenchSize, forward_flops
from spt_theory.io import InputError, atomic_write, write_json
from spt_theory.lra.configs import config_for, one_layer, tiny

BUDGET_SECONDS = 600.0
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


class StepFailed(Exception):
    """A step's process exited with a non-zero status."""


def say(message: str) -> None:
    print(f"[lra-gpu] {message}", file=sys.stderr, flush=True)


def run_step(name: str, command: list[str], stdout=None) -> None:
    """Run ``command`` (stderr shown); StepFailed naming the step and its status if it fails."""
    say(f"{name}: {shlex.join(command)}")
    status = subprocess.run(command, stdout=stdout).returncode
    if status != 0:
        raise StepFailed(f"step {name} failed with exit status {status}: {shlex.join(command)}")


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
    warm-up, and the total.  ``fixed_seconds``: measured seconds of the steps already run
    (``bench``, ``data``, a task's whole sweep); ``caps``: step caps to keep (an earlier run's, or
    those of a task already run); ``slowdown``: the factor by which a finished sweep took longer
    than planned, applied to the seconds per step of the tasks still to run."""
    rows = []
    fixed_seconds = fixed_seconds or {}
    caps = caps or {}
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
                     "measured" if "data" in fixed_seconds else "CPU rates measured here (CPU seconds), one process a core"))
    report = _row("report", "lra report -> report.txt", 0.0, ASSUMED_PROCESS_START, "assumed start")
    costs = {task: task_costs(task, sizes, rates, slowdown) for task in TASKS if task not in fixed_seconds}
    spent = (rows[0]["seconds"] + rows[1]["seconds"] + report["seconds"]
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
    rows.append(report)
    total = sum(row["seconds"] for row in rows)
    return {"rows": rows, "tasks": tasks, "total_seconds": total, "budget_seconds": budget,
            "rates": asdict(rates), "sizes": {k: v for k, v in asdict(sizes).items() if k != "shapes"},
            "shapes": {name: asdict(s) for name, s in sizes.shapes.items()}, "slowdown": slowdown}


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

    from spt_theory.lra.readers import LISTOPS_VOCAB, PIXEL_VOCAB
    from spt_theory.lra.task import LRATask
    from spt_theory.model import Encoder

    config = one_layer(tiny(config_for(task)) if tiny_sizes else config_for(task))
    vocab = LISTOPS_VOCAB if task == "listops" else PIXEL_VOCAB
    with torch.device("meta"):
        model = Encoder(LRATask(config, vocab).model_config(config, config.max_length))
    return 3 * 4 * sum(p.numel() for p in model.parameters())


def _row(step: str, what: str, flops: float, seconds: float, basis: str) -> dict:
    return {"step": step, "what": what, "tflop": flops / 1e12, "seconds": seconds, "basis": basis}


def format_plan(p: dict) -> str:
    lines = [f"{'step':<22} {'TFLOP':>9} {'est. s':>8}  what [basis]", "-" * 100]
    for row in p["rows"]:
        lines.append(f"{row['step']:<22} {row['tflop']:>9.2f} {row['seconds']:>8.1f}  {row['what']} [{row['basis']}]")
    lines.append("-" * 100)
    verdict = "fits" if p["total_seconds"] <= p["budget_seconds"] else "DOES NOT FIT"
    lines.append(f"{'total':<22} {'':>9} {p['total_seconds']:>8.1f}  {verdict} in the budget of "
                 f"{p['budget_seconds']:.0f} s (an estimate until it has run on a GPU)")
    return "\n".join(lines)


def assumed_rates(sizes: Sizes) -> Rates:
    """The dry run's rates: ASSUMED_PEAK_FRACTION of the H200 bf16 dense peak; CPU rates measured."""
    peak = BF16_DENSE_PEAK_TFLOPS["H200"] * 1e12
    generation = measure_cpu_rates(sizes)
    return Rates(flops={t: ASSUMED_PEAK_FRACTION * peak for t in TASKS}, step_overhead=ASSUMED_STEP_OVERHEAD,
                 basis=f"assumed {ASSUMED_PEAK_FRACTION:.0%} of H200 bf16 peak "
                       f"{BF16_DENSE_PEAK_TFLOPS['H200']:.0f} TFLOP/s + {1e3 * ASSUMED_STEP_OVERHEAD:.0f} ms/step",
                 **generation)


def measured_rates(bench: dict, sizes: Sizes, generation: dict) -> Rates:
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
    from synthetic import listops, pathfinder
    from spt_theory.lra.data import load_task_data

    low, high = sizes.listops_lengths
    counts = {"train": trees, "val": 4, "test": 4}
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
            "trees_read_per_second": trees_read, "images_read_per_second": images_read}


# ------------------------------------------------------------------------------ the steps

def shares(total: int, parts: int) -> list[int]:
    """``total`` cut into ``parts`` near-equal counts (the first ones one larger)."""
    return [total // parts + (k < total % parts) for k in range(parts)]


def generate_data(python: str, data: Path, sizes: Sizes) -> None:
    """ListOps and Pathfinder-32 under ``data`` (release layout), unless already there: every
    process draws its part with its own seed, then the parts are merged."""
    done = data / ".complete"
    wanted = json.dumps({k: v for k, v in asdict(sizes).items() if k != "shapes"}, sort_keys=True)
    if done.exists() and done.read_text() == wanted:
        say(f"data: reusing {data}")
        return
    listops_dir, pf_dir, parts = data / "listops-1000", data / "pathfinder32", data / ".parts"
    done.unlink(missing_ok=True)
    for folder in (listops_dir, pf_dir, parts):
        shutil.rmtree(folder, ignore_errors=True)
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
    processes = {}
    environment = {**os.environ, "TQDM_MININTERVAL": "10"}  # 16 progress bars: fewer updates
    for name, command in commands.items():
        say(f"{name}: {shlex.join(command)}")
        processes[name] = subprocess.Popen(command, env=environment)
    statuses = {name: process.wait() for name, process in processes.items()}
    for name, status in statuses.items():
        if status != 0:
            raise StepFailed(f"step {name} failed with exit status {status}: {shlex.join(commands[name])}")
    merge_listops([parts / f"listops-{k}" for k in range(sizes.listops_workers)], listops_dir)
    merge_pathfinder([parts / f"pathfinder-{k}" for k in range(sizes.workers)], pf_dir)
    shutil.rmtree(parts)
    atomic_write(done, lambda tmp: tmp.write_text(wanted))


def merge_listops(parts: list[Path], target: Path) -> Path:
    """Concatenate each split of the parts into ``target`` (trees distinct across all splits: a
    tree drawn by two processes is kept once, where it came first) with one provenance marker."""
    from synthetic.listops import SPLITS, write_split
    from synthetic.provenance import read_marker, write_marker

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
    from synthetic.provenance import read_marker, write_marker

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
    command += ["--seeds", "0", "--name", "gpu", "--epochs", str(task_plan["epochs"]),
                "--finetune-epochs", str(task_plan["epochs"]), "--max-steps", str(task_plan["max_steps"]),
                "--set", f"warmup_steps={task_plan['warmup_steps']}", "--probe-limit", str(sizes.probe_limit),
                "--checkpoint-every", str(task_plan["steps_per_epoch"]), "--no-progress"]
    return command + (["--tiny"] if sizes.tiny else [])


def confirm(python: str, out: Path, sizes: Sizes, budget: float) -> None:
    """Bench, data, then each task's sweep with the plan redone before it, and the report."""
    start = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    bench_json = out / "bench.json"
    repetitions = 2 if sizes.tiny else BENCH_REPETITIONS
    bench = [python, "-m", "spt_theory.bench", "--lra", "--repetitions", str(repetitions),
             "--json", str(bench_json)] + (["--tiny"] if sizes.tiny else ["--device", "cuda"])
    run_step("bench", bench)
    fixed = {"bench": time.perf_counter() - start}
    generate_data(python, out / "data", sizes)
    generation = measure_cpu_rates(sizes)  # reading rates for the plan's fixed costs
    fixed["data"] = time.perf_counter() - start - fixed["bench"]
    plan_path = out / "plan.json"
    earlier = json.loads(plan_path.read_text()) if plan_path.exists() else None
    same_sizes = earlier and earlier.get("sizes") == {k: v for k, v in asdict(sizes).items() if k != "shapes"}
    caps = {t: v["max_steps"] for t, v in earlier["tasks"].items()} if same_sizes else {}
    say("step caps " + (f"reused from {plan_path} (cached stages resume)" if caps else "derived from the bench"))
    rates = measured_rates(json.loads(bench_json.read_text()), sizes, generation)
    slowdown = 1.0
    for task in TASKS:
        p = plan(sizes, rates, fixed, budget, caps, repetitions, slowdown)
        write_json(plan_path, p)
        say(f"plan before the {task} sweep ({time.perf_counter() - start:.0f} s in):\n" + format_plan(p))
        sweep_start = time.perf_counter()
        run_step(f"sweep {task}", sweep_command(python, task, out, p["tasks"][task], sizes))
        fixed[task] = time.perf_counter() - sweep_start
        caps[task] = p["tasks"][task]["max_steps"]
        slowdown = max(slowdown, fixed[task] / p["tasks"][task]["planned_seconds"])
    p = plan(sizes, rates, fixed, budget, caps, repetitions, slowdown)
    write_json(plan_path, p)
    with tempfile.TemporaryFile("w+") as table:
        run_step("report", [python, "-m", "spt_theory.lra", "report", "--results", str(out / "results")], stdout=table)
        table.seek(0)
        text = table.read()
    atomic_write(out / "report.txt", lambda tmp: tmp.write_text(text))
    print(text, end="")
    say(f"done in {time.perf_counter() - start:.0f} s of the budget of {budget:.0f} s; bench {bench_json}, "
        f"sweeps {out / 'sweeps'}, table {out / 'report.txt'}, plan {plan_path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/lra_gpu_confirm.sh", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="?", type=Path, default=Path("runs/lra-gpu"),
                        help="output folder (default runs/lra-gpu)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan with FLOPs and estimated seconds")
    parser.add_argument("--tiny", action="store_true", help="tiny data, models and step caps, on the CPU (tests)")
    parser.add_argument("--budget", type=float, default=BUDGET_SECONDS, help="seconds of GPU time (600)")
    parser.add_argument("--python", default=sys.executable, help="interpreter of every step (default: this one)")
    args = parser.parse_args(argv)
    sizes = TINY if args.tiny else FULL
    try:
        if args.budget <= 0:
            raise InputError(f"--budget must be > 0, got {args.budget}")
        if args.dry_run:
            p = plan(sizes, assumed_rates(sizes), budget=args.budget)
            print(format_plan(p))
            if p["total_seconds"] > args.budget:
                raise InputError(f"the plan takes {p['total_seconds']:.0f} s, over the budget of {args.budget:.0f} s")
            return 0
        if not args.tiny:
            import torch
            if not torch.cuda.is_available():
                raise InputError("no CUDA device visible to torch (--tiny: the pipeline on the CPU; "
                                 "--dry-run: the plan)")
        confirm(args.python, args.out, sizes, args.budget)
    except (InputError, StepFailed) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
