"""Test accuracy and band mass per supervised step: scratch with more data or more steps vs SPT (E11, E11b, E10)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from spt_theory.analysis.probes import (
    uniform_band_mass,
)
from spt_theory.figures.context import FigureContext, save, seeds_label, trained
from spt_theory.figures.registry import figure
from spt_theory.figures.style import COLUMN_WIDTH, FONT_SIZE, GREY, RECIPE_COLOUR, STYLE, chance_line, new_figure
from spt_theory.training.recipes import Budget
from spt_theory.util.plotting import plt
from spt_theory.walk import paper_runs
from spt_theory.walk.experiments import RunResult


def step_curve(results: list[RunResult], key: str, scale: float, budget: Budget) -> dict:
    """Per epoch of the runs' last stage: the supervised optimizer steps at its end (``step``) and
    ``scale`` times ``key``, mean / min / max over the runs and per run."""
    per_epoch = paper_runs.steps_per_epoch(results[0].spec.data, budget)
    values = scale * np.array([[e[key] for e in r.history[-1]] for r in results])
    return {"step": [e["epoch"] * per_epoch for e in results[0].history[-1]], "mean": values.mean(0).tolist(),
            "min": values.min(0).tolist(), "max": values.max(0).tolist(), "per_seed": values.tolist()}


@figure("E11, E11b, E10", "scratch with more data or more steps vs SPT, per supervised step")
def scratch_steps(ctx: FigureContext) -> list[Path]:
    """Test accuracy (top) and band mass (bottom: attention share within |i-j| <= 2, dotted: its
    uniform value) after every epoch against the supervised optimizer steps so far (log axis):
    scratch on the 1x data for the E11b budget (the largest data scale times the scratch epochs),
    scratch with more labelled data for the scratch epochs (E11), and SPT then finetune for the
    scratch budget, whose SPT steps (unsupervised) are not counted.  Mean over seeds, shaded min to max."""
    d, b, m = ctx.data, ctx.budget, ctx.model
    largest = ctx.data_scales[-1]
    lines = [(f"1x data, {largest * b.scratch_epochs} ep (E11b)", RECIPE_COLOUR["scratch"], "-",
              lambda s: paper_runs.step_matched_scratch_spec(s, d, b, largest, **m)),
             *((f"{k}x data, {b.scratch_epochs} ep (E11)", RECIPE_COLOUR["frozen"], ":" if k < largest else "--",
                lambda s, k=k: paper_runs.scaled_scratch_spec(k, s, d, b, **m)) for k in ctx.data_scales),
             (f"SPT {b.pretrain_epochs} ep, then finetune", RECIPE_COLOUR["spt"], "-",
              lambda s: ctx.spec(paper_runs.FULL_SPT_KEEP, s))]
    fig, axes = new_figure(COLUMN_WIDTH, 3.8, 2, 1, sharex=True)
    curves, sources = [], []
    with plt.rc_context(STYLE):
        for label, colour, style, build in lines:
            results, runs = trained(ctx, label, build)
            sources += runs
            curve: dict[str, Any] = {"label": label}
            for ax, (key, scale) in zip(axes, (("test_accuracy", 100.0), ("band_mass", 1.0))):
                c = curve[key] = step_curve(results, key, scale, b)
                ax.plot(c["step"], c["mean"], ls=style, color=colour, label=label, lw=1.2)
                ax.fill_between(c["step"], c["min"], c["max"], color=colour, alpha=0.2, lw=0)
            curves.append(curve)
        chance_line(axes[0])
        axes[0].set_ylim(40, 102)
        axes[0].set_ylabel("test accuracy (%)")
        axes[1].axhline(uniform_band_mass(d.length), color=GREY, ls=":", lw=0.8)
        axes[1].set_ylabel("band mass |i-j| <= 2")
        axes[1].set_xscale("log")
        axes[1].set_xlabel("supervised optimizer steps")
        axes[0].legend(loc="upper left", fontsize=FONT_SIZE - 2)
        axes[0].set_title(f"mean over seeds {seeds_label(ctx)} (shaded: min to max)")
    record = {**ctx.header("scratch_steps", ["E11", "E11b", "E10"]), "curves": curves,
              "uniform_band_mass": uniform_band_mass(d.length), "runs": sources}
    return save(ctx, "scratch_steps", fig, record)
