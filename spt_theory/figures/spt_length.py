"""Finetuned accuracy and band mass at the end of SPT against SPT length, log axis (E9)."""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np

from spt_theory.analysis.probes import (
    uniform_band_mass,
)
from spt_theory.figures.context import FigureContext, save, seeds_label, summary, trained
from spt_theory.figures.registry import figure
from spt_theory.figures.style import (
    COLUMN_WIDTH,
    FONT_SIZE,
    GREY,
    OKABE_ITO,
    RECIPE_COLOUR,
    STYLE,
    chance_line,
    new_figure,
    seed_dots,
)
from spt_theory.util.plotting import plt
from spt_theory.walk import paper_runs
from spt_theory.walk.experiments import RunSpec


def _spec(ctx: FigureContext, steps: int, seed: int) -> RunSpec:
    return paper_runs.spt_length_spec(steps, seed, ctx.data, ctx.budget, **ctx.model)


@figure("E9", "finetuned accuracy and band mass against SPT length (log axis)")
def spt_length(ctx: FigureContext) -> list[Path]:
    """Finetuned test accuracy (``finetune_epochs`` supervised epochs) and band mass at the end of
    SPT against the SPT length ``ctx.spt_lengths`` (epochs, run in optimizer steps by
    :func:`spt_theory.walk.paper_runs.spt_length_spec`), log axis; dots: seeds, line: mean."""
    per_epoch = paper_runs.steps_per_epoch(ctx.data, ctx.budget)
    steps = tuple(dict.fromkeys(paper_runs.spt_length_steps(ctx.data, ctx.budget, ctx.spt_lengths)))
    points: list[dict[str, Any]] = []
    sources: list[dict] = []
    for k in steps:
        results, runs = trained(ctx, f"spt_length_{k}_steps", functools.partial(_spec, ctx, k))
        sources += runs
        points.append({"spt_steps": k, "spt_epochs": k / per_epoch,
                       "test_accuracy_percent": summary([100 * r.final["test_accuracy"] for r in results]),
                       "band_mass_after_spt": summary([r.history[0][-1]["band_mass"] for r in results])})
    x = np.array([p["spt_epochs"] for p in points])
    fig, (top, bottom) = new_figure(COLUMN_WIDTH, 3.8, 2, 1, sharex=True)
    with plt.rc_context(STYLE):
        for ax, key, colour in ((top, "test_accuracy_percent", RECIPE_COLOUR["spt"]),
                                (bottom, "band_mass_after_spt", OKABE_ITO["green"])):
            ax.plot(x, [p[key]["mean"] for p in points], marker="o", color=colour, label="mean")
            for xi, p in zip(x, points):
                seed_dots(ax, xi, p[key]["per_seed"], "single seed" if xi == x[0] else None)
        chance_line(top)
        top.axhline(100 * paper_runs.SOLVED, color="black", ls=":", lw=0.8, label=f"{100 * paper_runs.SOLVED:g}%")
        top.set_ylim(40, 102)
        top.set_ylabel(f"test accuracy (%) after\n{ctx.budget.finetune_epochs} finetune epochs")
        top.legend(loc="upper left", fontsize=FONT_SIZE - 1)
        top.set_title(f"seeds {seeds_label(ctx)}; SPT in optimizer steps ({per_epoch} per epoch)")
        uniform = uniform_band_mass(ctx.data.length)
        bottom.axhline(uniform, color=GREY, ls=":", lw=1, label=f"uniform ({uniform:.3f})")
        bottom.set_ylim(0, None)
        bottom.set_ylabel("band mass at end of SPT\n(attention within |i-j|≤2)")
        bottom.legend(loc="upper left", fontsize=FONT_SIZE - 1)
        bottom.set_xscale("log", base=2)
        bottom.set_xticks([2.0 ** e for e in range(math.floor(math.log2(x.min())), math.ceil(math.log2(x.max())) + 1)])
        bottom.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        bottom.set_xlim(x.min() / 1.3, x.max() * 1.3)
        bottom.set_xlabel("SPT length (epochs, log scale)")
    record = {**ctx.header("spt_length", ["E9"]), "steps_per_epoch": per_epoch,
              "finetune_epochs": ctx.budget.finetune_epochs, "solved_line": paper_runs.SOLVED,
              "uniform_band_mass": uniform, "points": points, "runs": sources}
    return save(ctx, "spt_length", fig, record)
