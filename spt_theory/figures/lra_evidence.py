"""Figure ``lra_evidence``: the committed LRA sweeps redrawn: accuracy per cell, attention proximity,
and (sweeps that recorded per-epoch curves) accuracy against optimiser steps, ``lra/steps`` (L1-L4)."""

from __future__ import annotations

from pathlib import Path

from spt_theory.evidence import schema
from spt_theory.figures.context import FigureContext, FigureSkipped, held_to_record
from spt_theory.figures.registry import figure
from spt_theory.figures.style import drawable_text
from spt_theory.util.files import is_number, prepare_output, read_json_hashed, require, write_json

PLAIN_AXES = ("freeze", "keep", "pretrain_task", "layers", "pretrain_epochs")
"""The axes of a cell the steps figure reads to tell plain scratch / SPT cells from ablations."""
CURVE_KEYS = ("step", "test_accuracy")
"""What the steps figure reads of each curve point."""


def _numbers(values, positive: bool = False) -> bool:
    return (isinstance(values, list) and bool(values) and all(map(is_number, values))
            and (not positive or all(v > 0 for v in values)))


def check_drawable(summary, path: Path) -> bool:
    """Every field the sweep figure (:func:`spt_theory.lra.sweep.draw`) reads, of the type it
    draws, and, for a summary whose first cell's runs kept their curves, the steps figure's
    (:func:`spt_theory.lra.curves.draw`); returns whether it goes into the steps figure.  An
    InputError naming the file and the field otherwise (a string where a number is drawn would
    otherwise become a categorical axis)."""
    from spt_theory.lra.curves import ARM_COLOURS, check_runs, proximity_metric
    from spt_theory.lra.sweep import proximity_of

    require(isinstance(summary, dict), path, "(top level)", "an object")
    require(drawable_text(summary.get("task")), path, "task", "a string the figures' font can draw")
    require(isinstance(summary.get("seeds"), list) and all(type(seed) is int for seed in summary["seeds"]), path,
            "seeds", "an array of integers")
    data, config = summary.get("data"), summary.get("config")
    require(isinstance(data, dict) and is_number(data.get("width")) and is_number(data.get("n_train")), path,
            "data", "an object with numbers width and n_train")
    require(isinstance(config, dict) and type(config.get("num_classes")) is int and config["num_classes"] >= 1,
            path, "config.num_classes", "a positive integer")
    rows = summary.get("cells")
    require(isinstance(rows, list) and rows and all(isinstance(row, dict) for row in rows), path, "cells",
            "a non-empty array of objects")
    metric = proximity_of(rows)
    for i, row in enumerate(rows):
        where, cell, accuracy = f"cells[{i}]", row.get("cell"), row.get("test_accuracy")
        require(drawable_text(row.get("label")) and isinstance(cell, dict) and isinstance(cell.get("recipe"), str),
                path, where, "an object with a label the figures' font can draw and a cell with a string recipe")
        require(isinstance(accuracy, dict) and is_number(accuracy.get("mean")) and is_number(accuracy.get("std"))
                and _numbers(accuracy.get("per_seed")), path, f"{where}.test_accuracy",
                "an object with numbers mean and std and a non-empty list of numbers per_seed")
        for key in (metric, "spt_" + metric):
            if key == metric or row.get(key):
                require(isinstance(row.get(key), dict) and _numbers(row[key].get("per_seed"), positive=True), path,
                        f"{where}.{key}.per_seed", "a non-empty list of positive numbers")
    runs = rows[0].get("runs")
    if not (isinstance(runs, list) and runs and isinstance(runs[0], dict) and "curve" in runs[0]):
        return False
    require(config.get("masking") in ("pixel", "token"), path, "config.masking", "'pixel' or 'token'")
    metric = proximity_metric(summary)
    for i, row in enumerate(rows):
        require(all(axis in row["cell"] for axis in PLAIN_AXES), path, f"cells[{i}].cell",
                "an object with the axes " + ", ".join(PLAIN_AXES))
        if row["cell"]["recipe"] in ARM_COLOURS:
            check_runs(path, f"cells[{i}]", row.get("runs"), CURVE_KEYS, metric)
    controls = summary.get("controls", {})
    require(isinstance(controls, dict), path, "controls", "an object")
    for kind, entry in controls.items():
        trained = isinstance(entry, dict) and "runs" in entry
        require(isinstance(entry, dict) and (kind in ARM_COLOURS if trained else
                                             drawable_text(kind) and is_number(entry.get("test_accuracy"))),
                path, f"controls.{kind}", "a trained control of a known kind (runs) or a test_accuracy number "
                "under a name the figures' font can draw")
        if trained:
            check_runs(path, f"controls.{kind}", entry["runs"], CURVE_KEYS, metric)
    return True


@figure("L1-L4", "committed LRA sweeps: accuracy per cell, attention proximity")
def lra_evidence(ctx: FigureContext) -> list[Path]:
    """The committed LRA sweeps (``ctx.lra_evidence/<name>.json``, written by ``lra sweep``) redrawn
    from their JSON into ``ctx.out/lra/<name>.png, .pdf``, without retraining: accuracy per cell
    and the proximity of its attention; and ``ctx.out/lra/steps``: test accuracy and proximity
    against optimiser steps of every sweep whose runs recorded their curves
    (:func:`spt_theory.lra.curves.draw`).  Where they are read does not follow ``--out``."""
    from spt_theory.lra import curves
    from spt_theory.lra.sweep import draw
    files = sorted(ctx.lra_evidence.glob("*.json"))
    if not files:
        raise FigureSkipped(f"no committed LRA sweep under {ctx.lra_evidence}")
    summaries, digests = {}, {}
    for path in files:  # read once: what is held to its record is what is drawn
        summaries[path], digests[path] = read_json_hashed(path)
    unregistered = held_to_record(ctx, digests=digests)
    for path, summary in summaries.items():  # made at other model settings (--set): refused, as verify does
        if isinstance(summary, dict) and ("model_defaults" in summary or isinstance(summary.get("config"), dict)):
            schema.check_model_settings(summary, str(path), ctx.asked)
    with_curves = [summary for path, summary in summaries.items() if check_drawable(summary, path)]
    prepare_output(ctx.out / "lra", folder=True)  # every file read and checked: nothing is half-drawn
    paths = []
    for path, summary in summaries.items():
        paths += draw(summary, ctx.out / "lra" / path.stem)
    if with_curves:
        paths += curves.draw(with_curves, ctx.out / "lra" / "steps")
    record = plotted(summaries)
    if unregistered:  # a user's own sweeps: drawn, never taken for the recorded evidence
        record["unregistered"] = list(unregistered)
    paths.append(write_json(ctx.out / "lra" / "lra_evidence.json", record))
    return paths


def plotted(summaries: dict[Path, dict]) -> dict:
    """Every number the figures draw, by sweep: per cell its per-seed test accuracy and attention
    proximity (the sweep figure), per run its curve of (step, test accuracy) and its proximity
    points (the steps figure), and the sha256 of the file drawn (``figures/lra/lra_evidence.json``;
    a test holds the committed one equal to a redraw from the committed evidence)."""
    import hashlib

    from spt_theory.lra.sweep import proximity_of

    out = {}
    for path, summary in summaries.items():
        metric = proximity_of(summary["cells"])
        cells = {}
        for row in summary["cells"]:
            runs = row.get("runs", [])  # a summary without per-run records draws its stats only
            cells[row["label"]] = {
                "test_accuracy": ([run["test_accuracy"] for run in runs] if runs
                                  else list(row.get("test_accuracy", {}).get("per_seed", []))),
                metric: [run.get(metric) for run in runs],
                "curves": {str(run["seed"]): [[p["step"], p["test_accuracy"]] for p in run.get("curve", [])]
                           for run in runs},
                "proximity": {str(run["seed"]): [[p["step"], p.get(metric)] for p in run.get("proximity", [])]
                              for run in runs}}
        out[path.stem] = {"sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "metric": metric, "cells": cells}
    return {"figure": "lra_evidence", "sweeps": out}
