"""The plateau grid's summary (:func:`summarise`: every finished run of
:func:`~spt_theory.plateau.design.grid`, ``CACHE_DIR/plateau_runs.json``) and ``--promote``: a
complete grid's summary, or the n = 400 runs merged, into the committed evidence
``spt_theory/evidence/plateau/plateau_runs.json`` that the claims P1-P7
(:mod:`spt_theory.checks.plateau`) and the figure ``plateau_law`` read."""

from __future__ import annotations

import dataclasses
import platform
from pathlib import Path

import torch

from spt_theory import evidence
from spt_theory.evidence import schema
from spt_theory.plateau.design import (
    BATCH,
    ESCAPE,
    EVAL_SIZE,
    FINETUNE_CAP,
    LENGTHS,
    PREDICTED,
    PREDICTED_SPT_CAP,
    SEEDS,
    SGD_MOMENTUM,
    SOLVED,
    SPT_GRID,
    SUMMARY,
    PlateauRun,
    eval_every,
    grid,
    spt_grid,
)
from spt_theory.util.files import InputError, read_json, write_json
from spt_theory.walk.experiments import WalkData


def summarise(root: Path, path: Path = SUMMARY, lengths: tuple[int, ...] = LENGTHS, model: dict | None = None) -> dict:
    """The summary of every finished run of :func:`grid` in ``root``: per run its config, seed,
    ``value`` (escape step, or SPT steps to 95%; a capped run's cap, or the largest SPT length,
    as a lower bound with ``capped``), the finetune steps and the seconds; written to ``path``.
    With ``model`` (``--set`` settings) the grid's runs made with them, named in ``model_settings``."""
    rows, seconds = [], 0.0
    settings = model or {}
    for r in (r.with_model(settings) for r in grid(lengths)):
        record_path = r.cache(root).dir / "run.json"
        if not record_path.exists():
            continue
        out = read_json(record_path)
        value = out["spt_steps_to_95"] if r.kind == "spt" else out["escape_step"]
        lower = r.cap if r.cap else SPT_GRID[-1]
        rows.append({**r.fields(), "lr": r.lr, "key": r.cache(root).key,
                     "value": lower if value is None else value,
                     "capped": value is None, "finetune_steps_to_95": out.get("finetune_steps_to_95"),
                     "tried": out.get("tried"), "seconds": out["seconds"]})
        seconds += out["seconds"]
    record = {"schema_version": schema.SCHEMA_VERSION,
              "what": "plateau-law grid (spt_theory.plateau): scratch escape steps, SPT steps to 95%",
              "criteria": {"escape_accuracy": ESCAPE, "solved": SOLVED, "eval_size": EVAL_SIZE,
                           "eval_every": {str(n): eval_every(n) for n in lengths}, "finetune_cap": FINETUNE_CAP,
                           "spt_grid": list(SPT_GRID),
                           **({"spt_grid_n400": list(spt_grid(PlateauRun("spt", PREDICTED, 0, cap=PREDICTED_SPT_CAP)))}
                              if PREDICTED in lengths else {})},
              "data": dataclasses.asdict(WalkData()), "batch": BATCH, "sgd_momentum": SGD_MOMENTUM,
              "seeds": list(SEEDS), "torch": str(torch.__version__), "python": platform.python_version(),
              "grid_seconds": round(seconds, 1), "runs": rows, "partial": len(rows) < len(grid(lengths)),
              "model_defaults": schema.model_defaults(), **({"model_settings": settings} if settings else {})}
    write_json(path, record)
    return record


def promote_summary(root: Path, summary_path: Path, lengths: tuple[int, ...]) -> int:
    """``--promote``: the summary of a complete grid (every run of :func:`grid` finished in
    ``root``) into the committed evidence; a partial one is refused (exit 2), nothing changed.
    With ``--lengths 400`` alone: :func:`promote_predicted`."""
    if lengths == (PREDICTED,):
        return promote_predicted(root, summary_path)
    record = summarise(root, summary_path, lengths)
    if record["partial"] or lengths != LENGTHS:
        raise InputError(f"--promote: {summary_path} is a partial grid ({len(record['runs'])} of "
                         f"{len(grid(LENGTHS))} runs): nothing was promoted")
    print(f"promoted {summary_path} -> {evidence.promote(summary_path, evidence.PLATEAU, SUMMARY.name)}")
    return 0


def promote_predicted(root: Path, summary_path: Path, committed: Path = SUMMARY) -> int:
    """``--lengths 400 --promote``: the n = 400 runs finished in ``root`` merged into the committed
    grid (its other rows unchanged, any earlier n = 400 rows replaced), so that they can be
    committed as they land (P6, P7 decide on what is there); refused (exit 2) when none has finished."""
    record = summarise(root, summary_path, (PREDICTED,))
    if not record["runs"]:
        raise InputError(f"--promote: no run at n = {PREDICTED} has finished in {root}: nothing was promoted")
    tree = read_json(committed)
    tree["runs"] = [r for r in tree["runs"] if r["length"] != PREDICTED] + record["runs"]
    tree["criteria"]["eval_every"][str(PREDICTED)] = eval_every(PREDICTED)
    tree["criteria"]["spt_grid_n400"] = record["criteria"]["spt_grid_n400"]
    tree["predicted_seconds"] = record["grid_seconds"]
    merged = summary_path.with_name(f"merged_{summary_path.name}")
    write_json(merged, tree)
    schema.load(merged, schema.PlateauRuns)
    print(f"promoted {len(record['runs'])} of {len(grid((PREDICTED,)))} runs at n = {PREDICTED} "
          f"-> {evidence.promote(merged, evidence.PLATEAU, committed.name)}")
    return 0

