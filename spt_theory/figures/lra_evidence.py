"""Figure ``lra_evidence``: the committed LRA sweeps redrawn: accuracy per cell, attention proximity (L1-L4)."""

from __future__ import annotations

import json
from pathlib import Path

from spt_theory.figures.context import FigureContext, FigureSkipped
from spt_theory.figures.registry import figure
from spt_theory.io import InputError


@figure("L1-L4", "committed LRA sweeps: accuracy per cell, attention proximity")
def lra_evidence(ctx: FigureContext) -> list[Path]:
    """The committed LRA sweeps (``OUT/lra/<task>.json``, written by ``lra sweep``) redrawn from
    their JSON, without retraining: accuracy per cell and the proximity of its attention."""
    from spt_theory.lra.sweep import draw
    summaries = sorted((ctx.out / "lra").glob("*.json"))
    if not summaries:
        raise FigureSkipped(f"no committed LRA sweep under {ctx.out / 'lra'}")
    paths = []
    for path in summaries:
        try:
            summary = json.loads(path.read_text())
            paths += draw(summary, path.with_suffix(""))
        except (json.JSONDecodeError, KeyError, TypeError) as err:
            raise InputError(f"{path}: not an LRA sweep summary ({type(err).__name__}: {err})") from None
    return paths
