"""``python -m spt_theory.lra.gpu.twin`` (``scripts/lra_gpu_confirm.sh``): the GPU twin of the
CPU designs on 1-layer Pathfinder-16 (docs/gpu.md, issues 51 and 57): 8 seeds x {scratch, SPT then
finetune, W_Q W_K hybrid, frozen W_Q W_K, proximity init} as one stacked ensemble
(:mod:`spt_theory.lra.gpu.stacked`), in the setting ``--setting`` (``contour6`` or ``short``), ended
by itself inside ``--wall`` seconds counted from the script's start (``--started``).

Order: the folders and the carried data are checked (one line, nothing made or changed when one is
refused, a read-only export folder included), ``summary.json`` is written (phase ``start``), a
deadline check, the data (carried with ``--data FILE.npz``, made beforehand by ``--make-data
FILE.npz``, or generated here by ``workers`` processes, image ``i`` of a split drawn from the stream
``(seed, i)``; before CUDA starts, and ended when not done inside the wall), their fingerprint
held to the registered one (``twin_plan.FINGERPRINTS``), a deadline check, the bench
(:func:`~spt_theory.lra.gpu.twin_train.bench`: both attention paths, the faster runs), the plan
(:mod:`spt_theory.lra.gpu.twin_plan`: what fits in the time left), the training
(:func:`~spt_theory.lra.gpu.twin_train.train_group`, cut at an evaluation when the next would end
past the deadline).

Results stream to the run folder and the export folder (``$OUT`` or ``--export``), each file
rewritten atomically (never through a link): ``summary.json`` (versions, device, ``phase`` and the
phases' seconds, data, bench, plan, ``cut``, ``stopped``, ``complete``; written from the start and
after every phase), ``group-0.json`` (per arm and seed the curve of validation and test accuracy
with the per-example test correctness; every arm x seed from its first write) and ``log.txt``.  A
run stopped by an error, SIGINT or SIGTERM records ``stopped`` in both (the phase, how, the step of
the last evaluation written) with every evaluation kept, and exits 1, 130 or 143.  This module and
what it imports need nothing the GPU image lacks (no pydantic: ``preflight``); the formats and the
registration are checked where pydantic is, when the result is promoted (``python -m
spt_theory.lra gpu promote``).

A run folder holding an earlier run of this script is refused unless ``--restart`` (start over) or
``--reuse-data`` (start over with its data); one holding anything else, or a link, is refused.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import platform
import signal
import sys
import time
from pathlib import Path

import numpy as np

from spt_theory.lra.gpu.twin_data import SPLITS, check_data, fingerprint, from_data_dir, generate, save_data
from spt_theory.lra.gpu.twin_folders import OWN, Output, check_folders, claim_all
from spt_theory.lra.gpu.twin_plan import (
    FINGERPRINTS,
    FINISH_SECONDS,
    SETTINGS,
    WALL_SECONDS,
    Sizes,
    data_settings,
    dry_run,
    empty_runs,
    format_plan,
    plan,
    sizes_of,
    training_budget,
)
from spt_theory.util.files import OWNED, InputError, links_between
from spt_theory.util.interrupts import EXIT_STATUS, Interrupted

__all__ = ["OWN", "OWNED", "Output", "main"]


def interrupted_line(signum: int) -> str:
    """The line a twin stopped by ``signum`` prints: what is on disk, and that it cannot resume."""
    return (f"interrupted by {signal.Signals(signum).name}: every file written is whole, with every evaluation "
            "done so far; a twin run cannot resume: rerun with --restart to start over (or --reuse-data to start "
            "over with the data it made)")


def stoppable(main):
    """``main`` with SIGINT and SIGTERM as a clean stop: :func:`interrupted_line`, status 130 / 143."""
    @functools.wraps(main)
    def command(*args, **kwargs) -> int:
        handled = [s for s in EXIT_STATUS if signal.getsignal(s) is not signal.SIG_IGN]
        previous = {s: signal.getsignal(s) or signal.SIG_DFL for s in handled}

        def stop(signum, frame):
            for s in handled:
                signal.signal(s, signal.SIG_IGN)  # the unwinding is not itself interrupted
            raise Interrupted(signum)

        try:
            for s in handled:
                signal.signal(s, stop)
            return main(*args, **kwargs)
        except KeyboardInterrupt as error:
            signum = getattr(error, "signum", signal.SIGINT)
            print(interrupted_line(signum), file=sys.stderr, flush=True)
            return EXIT_STATUS[signum]
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    return command


# ------------------------------------------------------------------------------ data
def versions() -> dict:
    import torch

    return {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
            "cuda": torch.version.cuda, "platform": platform.platform()}


def device_info(device: str) -> dict:
    import torch

    if device != "cuda":
        return {"kind": "cpu", "name": platform.processor() or platform.machine(), "count": os.cpu_count()}
    properties = torch.cuda.get_device_properties(0)
    return {"kind": "cuda", "name": torch.cuda.get_device_name(0), "count": torch.cuda.device_count(),
            "capability": f"{properties.major}.{properties.minor}",
            "memory_gib": round(properties.total_memory / 2**30, 1)}


# ------------------------------------------------------------------------------ the command line
def _seconds(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0, got {text}")
    return value


def _epoch(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a time in seconds since the epoch, got {text}")
    return value


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="scripts/lra_gpu_confirm.sh", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="?", type=Path, default=Path("runs/gpu-twin"), help="run folder (runs/gpu-twin)")
    parser.add_argument("--setting", choices=sorted(SETTINGS), default="contour6",
                        help="contour6 (issue 42's Pathfinder-16), short (contour 3, balanced) or factorial (the "
                             "pooling factorial on the CPU factorial's data, carried); default contour6")
    parser.add_argument("--dry-run", action="store_true", help="print the plan at the assumed throughput")
    parser.add_argument("--tiny", action="store_true", help="tiny sizes on the CPU (tests)")
    parser.add_argument("--wall", type=_seconds, default=WALL_SECONDS,
                        help=f"seconds from the script's start by which everything is done ({WALL_SECONDS:.0f})")
    parser.add_argument("--started", type=_epoch,
                        help="when the script started (seconds since the epoch; default: now)")
    parser.add_argument("--data", type=Path, help="a carried data set (.npz, made by --make-data)")
    parser.add_argument("--make-data", type=Path, metavar="FILE",
                        help="only make the setting's data set into FILE (.npz) on this machine, to carry")
    parser.add_argument("--from-data-dir", type=Path, metavar="DIR",
                        help="with --make-data, for --setting factorial: convert the CPU factorial's registered data "
                             "folder DIR (the decide runs' --data-dir)")
    parser.add_argument("--workers", type=int, help="processes generating the data (default: the setting's)")
    parser.add_argument("--export", type=Path, help="export folder (default $OUT)")
    g = parser.add_mutually_exclusive_group()
    g.add_argument("--restart", action="store_true", help="start over in a run folder holding an earlier run")
    g.add_argument("--reuse-data", action="store_true",
                   help="start over in a run folder holding an earlier run, with its data.npz")
    return parser.parse_args(argv)


@stoppable
def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    started = args.started if args.started is not None else time.time()
    sizes = sizes_of(args.setting, args.tiny)
    try:
        if started > time.time() + 5:
            raise InputError(f"--started {started:.0f} is in the future")
        if args.data is not None and args.reuse_data:
            raise InputError("--data and --reuse-data: give one data set (nothing was changed)")
        if args.workers is not None and args.workers < 1:
            raise InputError(f"--workers must be >= 1, got {args.workers}")
        if args.dry_run:
            p = dry_run(sizes, args.wall, carried=args.data is not None)
            print(format_plan(p))
            return 0 if p["inside"] else 2
        if args.make_data is not None:
            return make_data(sizes, args.make_data, args.workers or sizes.workers, args.from_data_dir)
        if args.from_data_dir is not None:
            raise InputError("--from-data-dir goes with --make-data FILE.npz (nothing was changed)")
        if sizes.data_source == "decide" and args.data is None and not args.reuse_data and not sizes.tiny:
            raise InputError(f"--setting {sizes.setting} trains on the CPU design's data, carried: make them "
                             "here with --make-data FILE.npz --from-data-dir DIR, then --data FILE.npz (nothing "
                             "was changed)")
        export = args.export or (Path(os.environ["OUT"]) if os.environ.get("OUT") else None)
        return run(args, sizes, export, started)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def make_data(sizes: Sizes, path: Path, workers: int, data_dir: Path | None = None) -> int:
    if path.suffix != ".npz":
        raise InputError(f"--make-data {path}: the name must end in .npz")
    link = links_between(path.parent, path)
    if link is not None or path.is_dir():
        raise InputError(f"--make-data {path}: a link or a folder: nothing was written")
    if sizes.data_source == "decide" and data_dir is None and not sizes.tiny:
        raise InputError(f"--make-data for --setting {sizes.setting}: give --from-data-dir DIR, the CPU design's data")
    start = time.time()
    data = from_data_dir(sizes, data_dir) if data_dir is not None else generate(sizes, workers)
    save_data(path, data, sizes)
    print(f"wrote {path}: {sizes.setting} data, {sum(len(v) for k, v in data.items() if k.startswith('y'))} images "
          f"in {time.time() - start:.1f} s, fingerprint {fingerprint(data)[:16]}", file=sys.stderr)
    return 0


STOPPED_BY_ERROR = 1
"""Exit status of a run stopped by an error (recorded in ``summary.json``: ``stopped``)."""


def stop_record(phase: str, by: str, why: str, step: int, planned: int | None, started: float) -> dict:
    """What ``summary.json`` and ``group-0.json`` say of a run stopped before its end by a signal
    (``by``: SIGINT, SIGTERM) or an error (``by``: error): the phase, the supervised step of the
    last evaluation written (0: none), the planned steps, and when (seconds from the start)."""
    return {"phase": phase, "by": by, "why": why[:500], "step": step, "planned": planned,
            "at": round(time.time() - started, 2)}


def reached(runs: list[dict]) -> int:
    """The supervised step of the last evaluation in ``runs`` (0: none)."""
    return max((r["curve"][-1]["step"] - r["offset"] for r in runs if r["curve"]), default=0)


def run(args: argparse.Namespace, sizes: Sizes, export: Path | None, started: float) -> int:
    """The twin (module doc); 0 when complete, 3 when cut by the deadline, 2 when refused, 1 when
    stopped by an error, 130 / 143 when stopped by SIGINT / SIGTERM (:func:`stoppable`).

    ``summary.json`` is written once the folders are made and after every phase (``phase``,
    ``phases``); a stop (an error, SIGINT, SIGTERM) is recorded in it and in ``group-0.json``
    (``stopped``), with every evaluation already written kept."""
    out = args.out
    states = check_folders(out, export, args.restart, args.reuse_data)
    carried = check_data(args.data, sizes) if args.data is not None else None
    if args.reuse_data:
        carried = check_data(out / "data.npz", sizes)

    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")  # is_available() without starting CUDA: fork-safe
    import torch

    device = "cuda" if not sizes.tiny and torch.cuda.is_available() else "cpu"
    if not sizes.tiny and device != "cuda":
        raise InputError("no CUDA device visible to torch (--tiny: the pipeline on the CPU; --dry-run: the plan)")
    keep: tuple[str, ...] = ("data.npz",) if args.reuse_data else ()
    folders: list[tuple[Path, str, tuple[str, ...]]] = [(out, states["run"], keep)]
    if export is not None:
        folders.append((export, states["export"], ()))
    claim_all(folders)
    output = Output(out, export)
    wall = args.wall
    summary: dict = {"kind": "gpu-twin", "design": "issue 56" if sizes.poolings else "issue 51",
                     "setting": sizes.setting, "registered": sizes.registered,
                     "tiny": sizes.tiny, "started": started, "wall_seconds": wall, "versions": versions(),
                     "device": {"kind": device}, "phase": "start", "phases": {"start": round(time.time() - started, 2)},
                     "complete": False, "cut": None, "stopped": None}
    latest: dict = {}  # "group": the last group-0.json written (a copy, swapped in whole): what a stop keeps

    def write_group(runs: list[dict], cut: dict | None, stopped: dict | None = None) -> None:
        made = json.loads(json.dumps(
            {"group": 0, "seeds": summary["plan"]["seeds"], "arms": summary["plan"]["arms"], "runs": runs, "cut": cut,
             "stopped": stopped, "data": summary["data"]["fingerprint"], "config": summary["plan"]["sizes"]}))
        latest["group"] = made  # one assignment: a signal sees the previous copy or this one, never a part
        output.write("group-0.json", made)

    def stop(by: str, why: str) -> None:
        """Record the stop in both files (signals are ignored meanwhile: :func:`stoppable`)."""
        p = summary.get("plan")
        group = latest.get("group")
        if group and group.get("cut"):  # stopped while finishing a cut run: the cut is what it is
            summary["cut"], summary["complete"] = group["cut"], False
            summary["phases"]["end"] = round(time.time() - started, 2)
            output.write("summary.json", summary)
            return
        runs = group["runs"] if group else (empty_runs(p) if p else None)
        step = reached(runs or [])
        summary["stopped"] = stop_record(summary["phase"], by, why, step, p["steps"] if p else None, started)
        summary["complete"] = False
        summary["phases"]["end"] = round(time.time() - started, 2)
        if p is not None and runs is not None:
            for record in runs:  # a run whose last evaluation was written before the stop is complete
                last = record["steps"] - record["offset"]
                if record["curve"] and record["curve"][-1]["step"] - record["offset"] >= last:
                    record["complete"], record["test_accuracy"] = True, record["curve"][-1]["test_accuracy"]
            write_group(runs, None, summary["stopped"])
        output.write("summary.json", summary)

    def phase(name: str) -> None:
        summary["phase"] = name
        output.write("summary.json", summary)

    def in_time(before: str) -> None:
        """The deadline check before a phase: refused (nothing trained) when no training fits."""
        left = training_budget(wall, time.time() - started)
        if left <= 0:
            raise InputError(f"the deadline check before the {before}: {time.time() - started:.0f} s of the "
                             f"{wall:.0f}-s wall are gone, nothing could be trained in time (nothing trained)")

    try:
        phase("start")
        in_time("data")
        phase("data")
        t = time.time()
        if carried is not None:
            data, source = carried, "reused from the run folder" if args.reuse_data else f"carried: {args.data.name}"
        else:
            timeout = max(1.0, started + wall - FINISH_SECONDS - time.time())
            data, source = generate(sizes, args.workers or sizes.workers, timeout), "generated here"
            save_data(out / "data.npz", data, sizes)
        made = fingerprint(data)
        summary["data"] = {"fingerprint": made, "source": source, "settings": data_settings(sizes),
                           **{f"n_{s}": len(data[f"y_{s}"]) for s in SPLITS}}
        summary["phases"]["data"] = round(time.time() - t, 2)
        output.say(f"data: {source}, {made[:16]}, {summary['phases']['data']} s")
        if not sizes.tiny and made != FINGERPRINTS[sizes.setting]:
            raise InputError(f"the data's fingerprint {made[:16]}... is not the registered {sizes.setting} data's "
                             f"{FINGERPRINTS[sizes.setting][:16]}... (twin_plan.FINGERPRINTS): not trained; carry the "
                             "data made on the CPU (--make-data, then --data)")
        from spt_theory.lra.gpu.twin_train import Deadline, bench, proximity2d_states, train_group

        inits = None
        if "proximity2d" in sizes.arms:  # fitted before the bench: the plan sees the seconds they took
            phase("inits")
            t = time.time()
            inits = proximity2d_states(sizes, list(range(sizes.first_seed, sizes.first_seed + sizes.seeds)))
            summary["phases"]["inits"] = round(time.time() - t, 2)
            output.say(f"proximity2d inits of {sizes.seeds} seeds: {summary['phases']['inits']} s")

        summary["device"] = device_info(device)  # CUDA starts here, after the data's processes
        in_time("bench")
        phase("bench")
        tensors = {k: torch.from_numpy(np.ascontiguousarray(v).astype(np.uint8 if k.startswith("x") else np.int64))
                   .to(device) for k, v in data.items()}
        t = time.time()
        measured = bench(sizes, tensors, device)
        summary["phases"]["bench"] = round(time.time() - t, 2)
        rates = measured.pop("rates")
        summary["bench"] = {**measured, "rates": rates.__dict__}
        output.say(f"bench: {measured['seconds_per_step']} s a step; {measured['attention']} attention runs "
                   f"({summary['phases']['bench']} s)")
        elapsed = time.time() - started
        p = plan(sizes, rates, training_budget(wall, elapsed))
        summary["plan"], summary["phases"]["plan_at"] = p, round(elapsed, 2)
        output.say("plan:\n" + format_plan(p))
        phase("plan")
        if not p["fits"]:
            raise InputError("the plan does not fit the time left even at the floor with scratch and SPT: nothing "
                             "trained")
        write_group(empty_runs(p), None)  # every run, none evaluated yet: a kill in pretraining still says so
        phase("train")
        t = time.time()
        cut = train_group(sizes, p, tensors, device, write_group, output.say,
                          Deadline(started + wall - FINISH_SECONDS), measured["attention"], inits=inits)
        summary["phases"]["train"] = round(time.time() - t, 2)
        summary["cut"], summary["complete"] = cut, cut is None
        summary["groups_done"] = [] if cut else [0]
        summary["phases"]["end"] = round(time.time() - started, 2)
        phase("end")
    except InputError as error:  # a refusal after the folders were made: said in the summary too
        summary["refused"] = str(error)
        summary["phases"]["end"] = round(time.time() - started, 2)
        output.write("summary.json", summary)
        raise
    except KeyboardInterrupt as error:
        stop(signal.Signals(getattr(error, "signum", signal.SIGINT)).name, "stopped by a signal")
        raise
    except Exception as error:
        why = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        stop("error", why)
        print(f"error: the run stopped in its {summary['phase']} phase: {why}; every evaluation done is "
              "written (summary.json: stopped)", file=sys.stderr)
        return STOPPED_BY_ERROR
    if cut:
        output.say(f"cut at step {cut['step']} of {cut['planned']} ({cut['phase']}) at {summary['phases']['end']} s "
                   f"of {wall:.0f} s: every evaluation done is written")
        return 3
    output.say(f"done: {len(p['seeds'])} seeds x {len(p['arms'])} arms x {p['steps']} steps, "
               f"{summary['phases']['end']} s of {wall:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
