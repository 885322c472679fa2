"""Figure ``lra_evidence``: the committed LRA sweeps redrawn: accuracy per cell, attention proximity,
and (sweeps that recorded per-epoch curves) accuracy against optimiser steps, ``lra/steps`` (L1-L4)."""

from __future__ import annotations

from pathlib import Path

from spt_theory.figures.context import FigureContext, FigureSkipped
from spt_theory.figures.registry import figure
from spt_theory.io import InputError, prepare_output, read_json


@figure("L1-L4", "committed LRA sweeps: accuracy per cell, attention proximity")
def lra_evidence(ctx: FigureContext) -> list[Path]:
    """The committed LRA sweeps (``ctx.lra_evidence/<name>.json``, written by ``lra sweep``) redrawn
    from their JSON into ``ctx.out/lra/<name>.png, .pdf``, without retraining: accuracy per cell
    and the proximity of its attention; and ``ctx.out/lra/steps``: test accuracy and proximity
    against optimiser steps of every sweep whose runs recorded their curves
    (:func:`spt_theory.lra.steps.draw`).  Where they are read does not follow ``--out``."""
    from spt_theory.lra import steps
    from spt_theory.lra.sweep import draw
    summaries = sorted(ctx.lra_evidence.glob("*.json"))
    if not summaries:
        raise FigureSkipped(f"no committed LRA sweep under {ctx.lra_evidence}")
    prepare_output(ctx.out / "lra", folder=True)
    paths, with_curves = [], []
    for path in summaries:
        summary = read_json(path)
        try:
            paths += draw(summary, ctx.out / "lra" / path.stem)
            runs = summary["cells"][0].get("runs", [])
            if runs and "curve" in runs[0]:
                with_curves.append(summary)
        except (KeyError, TypeError, AttributeError, IndexError) as err:
            raise InputError(f"{path}: not an LRA sweep summary ({type(err).__name__}: {err})") from None
    if with_curves:
        paths += steps.draw(with_curves, ctx.out / "lra" / "steps")
    return paths
