"""What the one-GPU confirmation (:mod:`spt_theory.lra.gpu.confirm`) leaves behind: the numbers
``summary.json`` reads off the run folder (device, versions, the bench, every training stage, the
sweeps), and the export into one folder (``$OUT`` on the lent GPU machine) within what that
machine returns (:data:`LIMITS`):

==================  =================================================================================
``summary.json``    every number of the run (written last, listing the files beside it)
``report.txt``      the report table (``python -m spt_theory.lra report``)
``results.tar.gz``  the run folder's ``bench.json``, ``plan.json``, ``results/``, ``probes/``,
                    ``sweeps/*.json`` and the steps' ``logs/``: no data, no checkpoints
figures             the sweep figures, at most :data:`MAX_FIGURES`
==================  =================================================================================
"""

from __future__ import annotations

import functools
import json
import platform
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

from spt_theory.evidence import lra_schema, schema
from spt_theory.training.loop import stage_steps
from spt_theory.util.files import InputError, atomic_write, make_dirs, write_json

MIB = 2**20
LIMITS: dict[str, Any] = {"files": 8, "bytes_per_file": 16 * MIB, "bytes": 64 * MIB, "folders_down": 2,
                          "name": r"[A-Za-z0-9._-]+"}
"""What the lent GPU machine returns from ``$OUT``: at most 8 files, each at most 16 MiB and 64 MiB
together, no more than 2 folders down, each name of letters, digits, '.', '_' and '-' alone."""
MAX_FIGURES = 4
FIXED_FILES = ("summary.json", "report.txt", "results.tar.gz")
PACKED = ("bench.json", "plan.json", "results/**/*.json", "probes/**/*.json", "sweeps/*.json", "logs/*.log")
"""The run folder's files that ``results.tar.gz`` holds (glob patterns)."""


def check_export_folder(export: Path, run_dir: Path, names: tuple[str, ...]) -> None:
    """InputError unless ``export`` can take the export of ``run_dir``: neither folder inside the
    other, and nothing in ``export`` yet but files of an earlier export (``names``)."""
    a, b = export.resolve(), run_dir.resolve()
    if a == b or a.is_relative_to(b) or b.is_relative_to(a):
        raise InputError(f"export folder {export} and run folder {run_dir}: one may not hold the other "
                         "(the run folder's data and checkpoints would not come back)")
    if export.exists() and not export.is_dir():
        raise InputError(f"export folder {export}: not a folder")
    if export.is_dir():
        foreign = sorted(p.name for p in export.iterdir() if p.name not in names)
        if foreign:
            raise InputError(f"export folder {export} holds {len(foreign)} entries not of this export "
                             f"(e.g. {foreign[0]!r}): give an empty folder")


def git_commit(root: Path) -> str | None:
    """The commit checked out at ``root``, or None (no git, or a copy of the tree without .git)."""
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def run_versions() -> dict:
    """The runner's versions plus where ``spt_theory`` was imported from, cuDNN and the commit."""
    import torch

    import spt_theory
    from spt_theory.lra.runner import versions

    package = Path(spt_theory.__file__).resolve().parent
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {**versions(), "cudnn": cudnn, "spt_theory_path": str(package), "git_commit": git_commit(package.parent)}


def device_info() -> dict:
    """The device the sweeps train on: the first CUDA device (name, count, capability, memory,
    bf16 dense peak), else this CPU."""
    import os

    import torch

    from spt_theory.bench.timing import device_peak_gflops

    if not torch.cuda.is_available():
        return {"kind": "cpu", "name": platform.processor() or platform.machine(), "count": os.cpu_count(),
                "bf16_dense_peak_tflops": None}
    properties = torch.cuda.get_device_properties(0)
    name, peak = device_peak_gflops(torch.device("cuda", 0))
    return {"kind": "cuda", "name": name, "count": torch.cuda.device_count(),
            "capability": f"{properties.major}.{properties.minor}",
            "memory_gib": round(properties.total_memory / 2**30, 1),
            "multiprocessors": properties.multi_processor_count,
            "bf16_dense_peak_tflops": None if peak is None else peak / 1e3}


def bench_numbers(bench: dict, tasks: tuple[str, ...]) -> dict:
    """Per task of the bench JSON: our model's and ``nn.TransformerEncoderLayer``'s TFLOP/s, share
    of the peak, ms per step and real tokens/s, and the speedup; ``peak``: what the share is of."""
    if "bf16_dense_peak_gflops" in bench:
        peak = {"what": f"bf16 dense peak of {bench.get('device_name')}",
                "tflops": None if bench["bf16_dense_peak_gflops"] is None else bench["bf16_dense_peak_gflops"] / 1e3}
    else:
        peak = {"what": "float32 matmul peak measured on this CPU", "tflops": bench["matmul_peak_gflops"] / 1e3}
    numbers: dict[str, Any] = {"peak": peak, "device": bench.get("device_name", bench.get("device"))}
    for task in tasks:
        case = bench[task]
        numbers[task] = {"speedup_vs_torch_layer": case["speedup_vs_torch_layer"],
                         "step_tflop": case["step_gflop"] / 1e3, "autocast_bf16": case["autocast_bf16"]}
        for model in ("spt_theory", "torch_layer"):
            m = case[model]
            numbers[task][model] = {"tflops": m["gflops"] / 1e3, "share_of_peak": m["peak_fraction"],
                                    "ms_per_step": 1e3 * m["seconds_per_step"]["median"],
                                    "tokens_per_second": m["tokens_per_second"]}
    return numbers


def stage_rows(results: Path) -> list[dict]:
    """One row per finished training stage under ``results``: task, kind (scratch, pretrain, or
    spt: the finetuning after SPT), its settings, optimizer steps, epochs, training seconds and
    its metrics."""
    rows = []
    for path in sorted(results.rglob("*.json")) if results.is_dir() else []:
        result = json.loads(path.read_text())
        stage, options = result["stages"][-1], result["options"]
        rows.append({"task": result["task"], "kind": result["kind"], "seed": result["seed"],
                     "freeze": options["freeze"], "keep": options["keep"] if result["kind"] == "spt" else None,
                     "steps": stage_steps(result["data"]["n_train"], stage["epochs"], stage["batch_size"],
                                          options["max_steps"]),
                     "epochs_run": result["metrics"]["epochs_run"], "seconds": result["metrics"]["train_seconds"],
                     "metrics": result["metrics"], "file": str(path.relative_to(results.parent))})
    return rows


def sweep_numbers(sweeps: Path, name: str, tasks: tuple[str, ...]) -> dict:
    """Per task with a finished sweep ``<task>-<name>.json``: its cells (mean ± sd over seeds and
    every seed's run), seconds and data."""
    numbers = {}
    for task in tasks:
        path = sweeps / f"{task}-{name}.json"
        if path.exists():
            summary = json.loads(path.read_text())
            numbers[task] = {key: summary[key] for key in ("seeds", "cells", "sweep_seconds", "data")}
    return numbers


def pack(run_dir: Path, target: Path) -> list[str]:
    """``results.tar.gz`` of the :data:`PACKED` files of ``run_dir``; the members' names."""
    members = sorted({p for pattern in PACKED for p in run_dir.glob(pattern) if p.is_file()})
    names = [str(p.relative_to(run_dir)) for p in members]

    def write(tmp: Path) -> None:
        with tarfile.open(tmp, "w:gz") as archive:
            for path, name in zip(members, names):
                archive.add(path, arcname=name)

    atomic_write(target, write)
    return names


def export(run_dir: Path, folder: Path, summary: dict, figures: list[Path]) -> dict:
    """Export the run into ``folder``: ``report.txt``, ``results.tar.gz``, those of ``figures`` (at
    most :data:`MAX_FIGURES`) that exist, then ``summary.json`` with an ``export`` entry listing
    them.  A file over the size limits is left out and listed so (16 MiB of the total are kept for
    the summary); files of an earlier export not written now are removed.  Returns the entry."""
    if len(figures) > MAX_FIGURES:
        raise ValueError(f"at most {MAX_FIGURES} figures, got {len(figures)}")
    make_dirs(folder)
    written = []
    for source in [run_dir / "report.txt", *figures]:
        if source.exists():
            atomic_write(folder / source.name, functools.partial(shutil.copyfile, source))
            written.append(source.name)
    members = pack(run_dir, folder / "results.tar.gz")
    written.insert(1 if "report.txt" in written else 0, "results.tar.gz")
    total, kept, left_out = 0, [], []
    for name in written:
        size = (folder / name).stat().st_size
        if size > LIMITS["bytes_per_file"] or total + size > LIMITS["bytes"] - LIMITS["bytes_per_file"]:
            (folder / name).unlink()
            left_out.append({"name": name, "bytes": size, "why": "over the size limits"})
        else:
            total += size
            kept.append({"name": name, "bytes": size})
    ours = set(FIXED_FILES) | {f.name for f in figures}
    for stale in ours - {k["name"] for k in kept} - {"summary.json"}:
        (folder / stale).unlink(missing_ok=True)
    entry = {"folder": str(folder), "files": kept + [{"name": "summary.json", "bytes": None}],
             "left_out": left_out, "packed": members, "limits": LIMITS}
    summary = {**summary, "export": entry}
    schema.parse(json.dumps(summary), lra_schema.GPUSummary, "summary.json")
    write_json(folder / "summary.json", summary)
    return entry
