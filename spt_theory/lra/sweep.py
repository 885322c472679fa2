"""``python -m spt_theory.lra sweep``: the paper's ablations on one LRA task as one resumable grid.

A *cell* fixes the axes below; every cell runs for every seed (cached stages are reloaded, so a
killed sweep resumes and a finished one only re-reads), each run is probed
(:mod:`spt_theory.lra.probe`), and the sweep writes one summary JSON (mean ± sd over seeds per
cell, with every seed's value and result file) and one figure.

Axes (``--grid AXIS=V1,V2`` takes the product; ``--cell AXIS=V,AXIS=V`` adds one cell) and their
meanings are :data:`AXES` (listed at the end of ``sweep --help``).  Groups in a value are joined
by ``+`` (``freeze=qk+vo``), values of a grid axis by commas (``--grid freeze=none,qk+vo``: two
cells); the sweep says its cells before it starts.

An axis that means nothing for a recipe (``keep``, ``pretrain_epochs``, ``pretrain_task`` for
``scratch``) is refused in a ``--cell`` and in a grid whose every recipe is ``scratch``; in a grid
that also has ``spt`` cells, its scratch combinations are one scratch cell.  Duplicates are run
once.  The summary ``OUT/sweeps/<task>-<name>.json`` of another grid (other cells, seeds,
options, task config or data; where the folders are does not count) is never overwritten: give
another ``--name``.  One sweep of a name runs at a time: a second is refused while it runs.

``finetune_epochs`` sets a cell's supervised epochs (default ``--finetune-epochs``): scratch for
as many optimiser steps as SPT and finetuning together is the equal-step comparison.
``--control KIND`` (repeatable) adds the learnability controls of :mod:`spt_theory.lra.controls`
on the same data: ``cnn`` / ``lstm`` / ``bag`` trained with a scratch cell's supervised stage for
the most supervised epochs of any cell (the equal-step scratch budget) at every seed (cached like
the cells), ``majority`` and ``shortcut`` computed once; they go into the summary's ``controls``.  \
The summary also holds the reference
entropies of the task's masked reconstruction (:mod:`spt_theory.lra.references`) beside every
SPT cell's masked validation loss, and every run's test accuracy against optimiser steps (SPT's
steps counted before finetuning's) with, where epoch checkpoints were kept
(``SPT_KEEP_CHECKPOINTS=all``), the proximity of the attention at each of them
(:mod:`spt_theory.lra.curves`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

from spt_theory.lra.controls import TRAINED
from spt_theory.lra.curves import run_steps
from spt_theory.lra.probe import probe_result
from spt_theory.lra.runner import LRARun, RunOptions, options_json, versions
from spt_theory.lra.sweep_cells import DEFAULTS, cell_options, label
from spt_theory.util.files import InputError, prepare_output, read_json, write_json
from spt_theory.util.locks import directory_lock
from spt_theory.util.tables import table


def run_cell(base: RunOptions, cell: dict, seed: int, runtime, probe_limit: int | None,
             data_cache: dict) -> dict:
    """Train (or reload) one cell at one seed and probe it; the figures the summary keeps."""
    run = LRARun(cell_options(base, cell, seed), runtime, data_cache)
    if cell["recipe"] == "scratch":
        result = run.supervised(None)
    else:
        run.check_transfer()
        result = run.supervised(run.pretrain())
    steps = run_steps(run, result, probe_limit)
    probe = probe_result(result, probe_limit, data_cache, runtime, progress=base.progress, out=base.out,
                         data_dir=base.data_dir, pretrain_data_dir=base.pretrain_data_dir)
    stats = {p["checkpoint"]: p["layers"][0] for p in probe["probes"]}
    trained = stats["scratch" if cell["recipe"] == "scratch" else "finetuned"]
    record = {"seed": seed, "test_accuracy": result["metrics"]["test_accuracy"],
              "val_accuracy": result["metrics"]["val_accuracy"], "best_epoch": result["metrics"]["best_epoch"],
              "train_seconds": result["metrics"]["train_seconds"], "cache": result["cache"],
              "band_ratio": trained["band_ratio"], "init_band_ratio": stats["init"]["band_ratio"]}
    if "grid_ratio" in trained:
        record.update(grid_ratio=trained["grid_ratio"], init_grid_ratio=stats["init"]["grid_ratio"])
    if "grid2d_ratio" in trained:  # 2026-12-05: true 2-D neighbours (absent from earlier probes)
        record.update(grid2d_ratio=trained["grid2d_ratio"], init_grid2d_ratio=stats["init"]["grid2d_ratio"])
    if "spt" in stats:
        record["spt_band_ratio"] = stats["spt"]["band_ratio"]
        if "grid_ratio" in stats["spt"]:
            record["spt_grid_ratio"] = stats["spt"]["grid_ratio"]
        if "grid2d_ratio" in stats["spt"]:
            record["spt_grid2d_ratio"] = stats["spt"]["grid2d_ratio"]
        record["pretrain_seconds"] = result["pretrain"]["train_seconds"]
        record["spt_val_loss"] = result["pretrain"]["best_val_loss"]
    return {**record, **steps}


def spread(values: list[float]) -> dict:
    """Per-seed values, their mean and sample standard deviation (0 for one value)."""
    return {"per_seed": [round(v, 5) for v in values], "mean": round(statistics.fmean(values), 5),
            "std": round(statistics.stdev(values), 5) if len(values) > 1 else 0.0}


def summary_path(base: RunOptions, name: str) -> Path:
    """Where the summary of sweep ``name`` on ``base.task`` goes: ``out/sweeps/<task>-<name>.json``;
    InputError for a name that would lead out of ``out/sweeps`` (a path separator, ``..``, empty)."""
    if not name or name in (".", "..") or any(c in name for c in "/\\\0") or ".." in name:
        raise InputError(f"--name {name!r}: a plain name (no '/', '\\' or '..'): the summary goes to "
                         f"{base.out / 'sweeps'}/<task>-<name>.json")
    return base.out / "sweeps" / f"{base.task}-{name}.json"


RUN_MECHANICS = ("progress", "checkpoint_every")
"""Options that do not change what a sweep computes (a rerun may change them)."""
PATHS = ("out", "data_dir", "pretrain_data_dir")
"""Options that say where, not what: a sweep copied elsewhere, or its data named another way, is
the same sweep (its data are compared by content, the fingerprint)."""


def grid_of(task: str, cells_run: list[dict], seeds, options: dict, config: dict, fingerprint: str) -> dict:
    """What makes two sweeps the same grid: task, cells, seeds, options (run mechanics and paths
    aside), the task config and the fingerprint of the task's data."""
    cells_run = [{k: v for k, v in cell.items() if not (k == "init" and v == DEFAULTS["init"])}
                 for cell in cells_run]  # summaries from before the init axis compare as before
    grid = {"task": task, "cells": cells_run, "seeds": list(seeds),
            "options": {k: v for k, v in options.items() if k not in (*RUN_MECHANICS, *PATHS, "seed")},
            "config": config, "data": fingerprint}
    return json.loads(json.dumps(grid))  # as a summary file holds it (lists, not tuples)


def check_summary(path: Path, base: RunOptions, grid_cells: list[dict], seeds, config: dict,
                  fingerprint: str) -> None:
    """Before any work: InputError if ``path`` holds the summary of another grid (it would be
    overwritten)."""
    if path.exists():
        try:
            old = json.loads(path.read_text())
            before = grid_of(old["task"], [row["cell"] for row in old["cells"]], old["seeds"], old["options"],
                             old["config"], old["data"]["fingerprint"])
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as err:
            raise InputError(f"{path}: exists and is not a sweep summary ({type(err).__name__}); "
                             f"give the sweep another name (lra sweep --name) or folder (--out)") from None
        if before != grid_of(base.task, grid_cells, seeds, options_json(base), config, fingerprint):
            raise InputError(f"{path} holds another sweep ({len(before['cells'])} cells, seeds "
                             f"{' '.join(map(str, before['seeds']))}): give the sweep another name "
                             "(lra sweep --name) or folder (--out) to keep both")


def summary_lock(path: Path):
    """The lock of the summary ``path``, held for a whole sweep; InputError if another process holds it."""
    return directory_lock(path, busy=f"{path}: another sweep of this name is running: wait for it to end, "
                                     "or run under another name (lra sweep --name) or folder (--out)")


def sweep(base: RunOptions, grid_cells: list[dict], seeds: list[int], runtime, name: str,
          probe_limit: int | None = None, controls: tuple[str, ...] = ()) -> dict:
    """Run every cell at every seed; write and return the summary (:func:`summary_path`)."""
    seeds = list(seeds)  # parsed once, by --seeds (core.args.Seeds)
    if not seeds:
        raise InputError("--seeds: at least one seed")
    start = time.perf_counter()
    data_cache: dict = {}
    run = LRARun(base, runtime, data_cache)
    data, fingerprint, _, _ = run.setup_target()  # bad data or config stop here, before anything is written
    path = summary_path(base, name)
    with contextlib.ExitStack() as held:
        if runtime.main:
            prepare_output(path)  # checked before any training; a created folder said
            held.enter_context(summary_lock(path))  # until the summary is written: one sweep of a name at a time
        check_summary(path, base, grid_cells, seeds, dataclasses.asdict(run.config), fingerprint)
        if runtime.main:
            print(f"sweep {path.stem}: {len(grid_cells)} cells x {len(seeds)} seeds: "
                  + " | ".join(label(c) for c in grid_cells), file=sys.stderr, flush=True)
        by_cell: list[list[dict]] = [[] for _ in grid_cells]
        for kind in controls:
            LRARun(replace(base, model=kind) if kind in TRAINED else base, runtime, data_cache).check_control(kind)
        trained: dict[str, list[dict]] = {kind: [] for kind in controls if kind in TRAINED}
        longest = replace(base, finetune_epochs=max(cell_options(base, cell, 0).finetune_epochs for cell in grid_cells))
        for seed in seeds:  # seed by seed, so an interrupted sweep has whole seeds to show
            for records, cell in zip(by_cell, grid_cells):
                records.append(run_cell(base, cell, seed, runtime, probe_limit, data_cache))
            for kind, records in trained.items():
                records.append(run_control(longest, kind, seed, runtime, data_cache))
        rows = []
        for cell, records in zip(grid_cells, by_cell):
            row = {"label": label(cell), "cell": cell, "runs": records}
            for metric in ("test_accuracy", "band_ratio", "grid_ratio", "grid2d_ratio", "spt_band_ratio",
                           "spt_grid_ratio", "spt_grid2d_ratio",
                           "spt_val_loss"):
                if metric in records[0]:
                    row[metric] = spread([r[metric] for r in records])
            rows.append(row)
        summary = {"task": base.task, "name": name, "seeds": seeds, "options": options_json(base),
                   "config": dataclasses.asdict(run.config),
                   "data": run.describe_data(data, fingerprint, run.config, base.data_dir), "cells": rows,
                   "references": run.reference_entropies(),
                   "controls": {**{kind: {"test_accuracy": spread([r["test_accuracy"] for r in records]),
                                          "epochs": longest.finetune_epochs, "runs": records}
                                   for kind, records in trained.items()},
                                **run.baselines(tuple(k for k in controls if k not in TRAINED))},
                   "sweep_seconds": round(time.perf_counter() - start, 1), "versions": versions(),
                   "written": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        write_json(path, summary)
        return summary


def run_control(base: RunOptions, kind: str, seed: int, runtime, data_cache: dict) -> dict:
    """Train (or reload) the trainable control ``kind`` at ``seed`` with a scratch cell's stage."""
    run = LRARun(replace(base, seed=seed, model=kind), runtime, data_cache)
    result = run.supervised(None)
    return {"seed": seed, "test_accuracy": result["metrics"]["test_accuracy"],
            "val_accuracy": result["metrics"]["val_accuracy"], "best_epoch": result["metrics"]["best_epoch"],
            "train_seconds": result["metrics"]["train_seconds"], "cache": result["cache"],
            **run_steps(run, result, None)}


def format_summary(summary: dict) -> str:
    """The results table: one row per cell, mean ± sd over seeds."""
    proximity = proximity_of(summary["cells"])
    what = "2-D neighbours / uniform" if proximity == "grid_ratio" else "band mass / uniform"

    def spread(stats: dict, scale: float = 1.0) -> str:
        return f"{scale * stats['mean']:.2f} ± {scale * stats['std']:.2f}"

    rows = []
    for row in summary["cells"]:
        spt = row.get("spt_" + proximity)
        rows.append([row["label"], spread(row["test_accuracy"], 100), spread(row[proximity]),
                     spread(spt) if spt else ""])
    for kind, entry in summary.get("controls", {}).items():
        acc = entry["test_accuracy"]
        # one run: its decimal point under the means'
        rows.append(["control " + kind, spread(acc, 100) if "runs" in entry
                     else f"{100 * acc:.2f}" + " " * len(" ± 0.00"), "", ""])
    lines = [f"{summary['task']}: seeds {summary['seeds']}, {summary['data']['n_train']} train / "
             f"{summary['data']['n_test']} test examples",
             table(rows, ["cell", "test acc % (mean ± sd)", what + " (trained)", "(SPT ckpt)"], align="<>>>",
                   rule=True)]
    refs = summary.get("references")
    if refs:
        losses = [f"{row['label']} {row['spt_val_loss']['mean']:.3f}" for row in summary["cells"]
                  if "spt_val_loss" in row]
        lines.append("masked val loss at the SPT checkpoint (nats): " + ", ".join(losses) + "; references: " +
                     ", ".join(f"{k} {refs[k]:.3f}" for k in ("marginal", "neighbour", "type") if k in refs))
    return "\n".join(lines)


def draw(summary: dict, path: Path) -> list[Path]:
    """The sweep's figure: test accuracy per cell (mean ± sd, dots: seeds) and the proximity of
    its attention (band mass or 2-D neighbour share over its uniform value) after training and,
    for SPT cells, at the SPT checkpoint.  Writes ``path`` as PNG and PDF (fixed metadata: an
    unchanged summary redrawn gives the same bytes)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    from spt_theory.util.plotting import plt, save_figure  # matplotlib on the Agg backend

    rows = summary["cells"]
    proximity = proximity_of(rows)
    legend = {"after supervised training", "SPT checkpoint"}  # each label once
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 0.5 * len(rows) + 2.2), sharey=True)
    ys = list(range(len(rows)))[::-1]
    for y, row in zip(ys, rows):
        acc = row["test_accuracy"]
        colour = "#4c72b0" if row["cell"]["recipe"] == "spt" else "#777777"
        left.errorbar(100 * acc["mean"], y, xerr=100 * acc["std"], fmt="D", color=colour, ms=6, capsize=3)
        left.plot([100 * v for v in acc["per_seed"]], [y - 0.18] * len(acc["per_seed"]), "k.", ms=4)
        left.annotate(f"{100 * acc['mean']:.1f} ± {100 * acc['std']:.1f}", (100 * acc["mean"], y + 0.22),
                      ha="center", fontsize=7)
        ratio = row[proximity]
        right.plot(ratio["per_seed"], [y + 0.12] * len(ratio["per_seed"]), "o", color="#4c72b0", ms=4,
                   label=_once(legend, "after supervised training"))
        spt = row.get("spt_" + proximity)
        if spt:
            right.plot(spt["per_seed"], [y - 0.12] * len(spt["per_seed"]), "s", color="#dd8452", ms=4,
                       label=_once(legend, "SPT checkpoint"))
    left.set_yticks(ys, [row["label"] for row in rows], fontsize=8)
    left.set_xlabel("test accuracy (%)")
    chance = 100 / summary["config"]["num_classes"]
    left.axvline(chance, color="k", lw=0.8, ls=":")
    right.axvline(1.0, color="k", lw=0.8, ls=":")
    ratios = [v for row in rows for key in (proximity, "spt_" + proximity) if key in row
              for v in row[key]["per_seed"]]
    scale = "log" if max(ratios) / min(ratios) > 8 else "linear"  # a log axis only for a wide range
    if scale == "log":
        right.set_xscale("log")
        right.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        right.xaxis.set_minor_formatter(NullFormatter())
    right.set_xlabel(("2-D neighbour share" if proximity == "grid_ratio" else "band mass |i-j|<=2")
                     + " / uniform" + (" (log)" if scale == "log" else ""))
    right.legend(fontsize=7, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=2, frameon=False)
    fig.suptitle(f"{summary['task']}: {len(summary['seeds'])} seeds, width {summary['data']['width']}, "
                 f"{summary['data']['n_train']} train; diamonds: mean ± sd, dots: seeds; dotted: chance / "
                 f"uniform", fontsize=9)
    fig.tight_layout()
    written = [save_figure(fig, path.with_suffix(suffix), dpi=130) for suffix in (".png", ".pdf")]
    plt.close(fig)
    return written


def proximity_of(rows: list[dict]) -> str:
    """The proximity the sweep figure draws: the 2-D neighbour share where a cell has it, else band mass."""
    return "grid_ratio" if any("grid_ratio" in row for row in rows) else "band_ratio"


def _once(labels: set[str], text: str) -> str | None:
    """``text`` the first time it is asked for (a legend entry), None after."""
    if text in labels:
        labels.discard(text)
        return text
    return None


def promote_sweep(path: Path) -> Path:
    """``sweep --promote``: the summary at ``path`` as the committed sweep evidence
    ``evidence/lra/<task>.json`` (what claims L1-L4 read): machine paths scrubbed, the schema's
    version and the model defaults added where the summary lacks them, validated by
    :class:`~spt_theory.evidence.sweep_schema.SweepSummary` before anything is written (EvidenceError
    naming the field otherwise)."""
    import json

    from spt_theory import evidence
    from spt_theory.evidence import schema, sweep_schema

    found = evidence.scrub_paths(read_json(path))
    found.setdefault("schema_version", schema.SCHEMA_VERSION)
    found.setdefault("model_defaults", schema.model_defaults())
    name = f"{found['task']}.json"
    schema.parse(json.dumps(found), sweep_schema.SweepSummary, str(path))
    staged = write_json(path.with_name(f"promoted-{name}"), found)
    return evidence.promote(staged, evidence.LRA, name)
