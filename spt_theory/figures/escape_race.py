"""Figure ``escape_race`` (L5): validation accuracy against optimiser steps in the Pathfinder-16
escape race, redrawn from the committed race evidence (``evidence/race/pathfinder16.json``), no
training.  Thin lines: every seed of scratch and of SPT then finetune (SPT's 3,000 pretraining
steps counted, the shaded span); large markers: each arm's escape (first evaluation at >= 70%
validation accuracy, the dotted line); the top axis gives the seconds scratch had spent by then.
"""

from __future__ import annotations

from pathlib import Path

from spt_theory.checks import race as rules
from spt_theory.figures.context import FigureContext, held_to_record, save
from spt_theory.figures.registry import figure
from spt_theory.figures.style import COLUMN_WIDTH, RECIPE_COLOUR, STYLE, new_figure
from spt_theory.lra import race
from spt_theory.lra.race import escape_step
from spt_theory.util.plotting import plt

STYLES = {0: "-", 1: "--", 2: ":"}


@figure("L5", "escape race on Pathfinder-16: accuracy against steps, escapes marked")
def escape_race(ctx: FigureContext) -> list[Path]:
    """Validation accuracy of both arms and every seed against total optimiser steps (module doc)."""
    found = rules.load_race(ctx.evidence_root, ctx.model)
    held_to_record(ctx, ctx.evidence_root / rules.RACE / race.NAME)
    fig, ax = new_figure(COLUMN_WIDTH, 2.8)
    drawn = []
    with plt.rc_context(STYLE):
        for arm in found["arms"]:
            colour = RECIPE_COLOUR["spt" if arm["arm"] == "spt" else "scratch"]
            steps = [p["step"] for p in arm["curve"]]
            ax.plot(steps, [100 * p["val_accuracy"] for p in arm["curve"]], color=colour, lw=0.9,
                    ls=STYLES.get(arm["seed"], "-"), label=f"{arm['arm']} seed {arm['seed']}")
            escape = escape_step(arm["curve"], rules.ESCAPE)
            if escape is not None:
                point = next(p for p in arm["curve"] if p["step"] == escape)
                ax.plot([escape], [100 * point["val_accuracy"]], "o", color=colour, ms=4)
            drawn.append({"seed": arm["seed"], "arm": arm["arm"], "escape": escape, "steps": steps})
        spans = [a["pretrain_steps"] for a in found["arms"] if a["arm"] == "spt"]
        if spans:
            ax.axvspan(0, max(spans), color=RECIPE_COLOUR["spt"], alpha=0.07, lw=0)
        ax.axhline(100 * rules.ESCAPE, color="k", lw=0.7, ls=":")
        ax.axhline(50, color="0.6", lw=0.6)
        ax.set_xlim(0, rules.CAP)
        ax.set_ylim(45, 100)
        ax.annotate("escape: val >= 70%", (rules.CAP, 100 * rules.ESCAPE), ha="right", va="bottom", fontsize=6)
        ax.set_xlabel("optimiser steps (SPT's counted)")
        ax.set_ylabel("validation accuracy (%)")
        ax.legend(fontsize=5.5, ncol=2, loc="upper left", title="Pathfinder-16", title_fontsize=6)
        scratch = [a for a in found["arms"] if a["arm"] == "scratch"]
        if scratch and scratch[0]["curve"]:
            curve = scratch[0]["curve"]
            per_step = curve[-1]["seconds"] / curve[-1]["step"]
            top = ax.secondary_xaxis("top", functions=(lambda s: s * per_step, lambda t: t / per_step))
            top.set_xlabel(f"seconds (scratch seed {scratch[0]['seed']}'s pace)")
    record = {"figure": "escape_race", "claims": ["L5"], "sources": ["evidence/race/pathfinder16.json"],
              "escape": rules.ESCAPE, "arms": drawn}
    return save(ctx, "escape_race", fig, record)
