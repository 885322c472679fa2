"""The committed plateau evidence as claims P1-P7 read it: the grid
(``spt_theory/evidence/plateau/plateau_runs.json``: the escape steps and SPT steps of every run of
:func:`spt_theory.plateau.design.grid`, written by ``python -m spt_theory.plateau``) and the gradient RMS
(``evidence/plateau/gradient_rms.json``: the noise scale s(n), measured before the grid), each
validated by its schema and held to the model settings (:func:`load`); one grid row's per-seed
values by length (:func:`cells`) and their geometric mean."""

from __future__ import annotations

import math
import statistics

from spt_theory import evidence
from spt_theory.claims.registry import Context
from spt_theory.evidence import require, schema
from spt_theory.plateau import design


def load(path, settings=None):
    """The plateau evidence ``path`` (the grid or the gradient RMS), validated by its schema and
    held to the model ``settings``; EvidenceError (an ERROR row) if missing, unreadable, not of the
    format, made at other settings, or a grid that is not whole (:func:`check_whole`)."""
    model = schema.GradientRMS if path.name == design.GRADIENT_RMS.name else schema.PlateauRuns
    found = schema.load(path, model, settings)
    if model is schema.PlateauRuns:
        check_whole(found, path)
    return found


def check_whole(grid: dict, path) -> None:
    """EvidenceError unless the grid holds every run of the registered grid (``plateau.grid``,
    n = 25-200: the rows the claims read) and says it is not partial; the n = 400 runs are added as
    they finish (P6, P7 decide on what is there)."""
    require(grid.get("partial", False) is False, path, "partial", "false (a partial grid is no evidence)")
    found = {(r["kind"], r["length"], r["seed"], r["optimiser"], r["qk_scale"], r["cap"]) for r in grid["runs"]}
    for run in design.grid(design.LENGTHS):
        key = (run.kind, run.length, run.seed, run.optimiser, run.qk_scale, run.cap)
        require(key in found, path, "runs", f"the whole registered grid (no {run.kind} n = {run.length} "
                f"{run.optimiser} scale {run.qk_scale:g} cap {run.cap} seed {run.seed})")


def grid_of(ctx: Context) -> dict:
    """The committed plateau grid of ``ctx``'s evidence."""
    return load(ctx.evidence_root / evidence.PLATEAU / design.SUMMARY.name, ctx.settings())


def rms_of(ctx: Context) -> dict:
    """The committed gradient RMS of ``ctx``'s evidence."""
    return load(ctx.evidence_root / evidence.PLATEAU / design.GRADIENT_RMS.name, ctx.settings())


def geometric_mean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def cells(summary: dict, kind: str, optimiser: str = "adamw", scale: float = 1.0,
          lengths: tuple[int, ...] = design.LENGTHS) -> dict[int, dict]:
    """Per n of ``lengths`` (the grid's: P1-P5 judge n = 25-200 only, the runs at n = 400 are P6's
    and P7's): the per-seed values and whether any is capped, of the runs of one grid row; only the
    lengths where every seed of ``summary["seeds"]`` has finished (a row is whole or absent), and
    of several whole rows at one n (a longer cap run later) the one with the largest cap."""
    groups: dict[tuple[int, int], dict] = {}
    for row in summary["runs"]:
        if (row["kind"] == kind and row["optimiser"] == optimiser and row["qk_scale"] == scale
                and row["length"] in lengths):
            cell = groups.setdefault((row["length"], row["cap"]), {"values": [], "capped": False})
            cell["values"].append(row["value"])
            cell["capped"] |= row["capped"]
    whole = len(summary.get("seeds", design.SEEDS))
    out = {n: c for (n, _), c in sorted(groups.items()) if len(c["values"]) == whole}
    return dict(sorted(out.items()))
