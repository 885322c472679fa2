"""Test / training accuracy and training loss per supervised epoch: scratch vs SPT (E2, E3, E10)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np

from spt_theory.figures.context import FigureContext, save, seeds_label
from spt_theory.figures.registry import figure
from spt_theory.figures.style import COLUMN_WIDTH, FONT_SIZE, GREY, RECIPE_COLOUR, STYLE, chance_line, new_figure
from spt_theory.util.plotting import plt
from spt_theory.walk import paper_runs


@figure("E2, E3, E10", "test / train accuracy, train loss per supervised epoch")
def supervised_curves(ctx: FigureContext) -> list[Path]:
    """Test accuracy, training accuracy (first 2000 training sequences) and training loss (mean
    over the epoch's steps) after every supervised epoch: scratch vs SPT then finetune for the
    scratch budget (:data:`spt_theory.walk.paper_runs.FULL_SPT_KEEP`); mean over seeds, shaded min to max."""
    b = ctx.budget
    names = (("scratch", "scratch"), (paper_runs.FULL_SPT_KEEP, f"SPT {b.pretrain_epochs} ep, then finetune"))
    colours = {"scratch": RECIPE_COLOUR["scratch"], paper_runs.FULL_SPT_KEEP: RECIPE_COLOUR["spt"]}
    metrics = (("test_accuracy", "test accuracy (%)", 100.0), ("train_accuracy", "training accuracy (%)", 100.0),
               ("loss", "training loss", 1.0))
    fig, axes = new_figure(COLUMN_WIDTH, 4.6, 3, 1, sharex=True)
    curves: dict[str, dict[str, Any]] = {}
    with plt.rc_context(STYLE):
        for name, label in names:
            histories = [r.history[-1] for r in ctx.runs(name)]
            epochs = [e["epoch"] for e in histories[0]]
            curves[name] = {"label": label, "supervised_epoch": epochs}
            for ax, (key, _, scale) in zip(axes, metrics):
                values = scale * np.array([[e[key] for e in h] for h in histories])
                ax.plot(epochs, values.mean(0), marker="o", color=colours[name], label=label)
                ax.fill_between(epochs, values.min(0), values.max(0), color=colours[name], alpha=0.25, lw=0)
                curves[name][key] = {"mean": values.mean(0).tolist(), "min": values.min(0).tolist(),
                                     "max": values.max(0).tolist(), "per_seed": values.tolist()}
        for ax, (key, ylabel, _) in zip(axes, metrics):
            ax.set_ylabel(ylabel)
            if key == "loss":
                chance_line(ax, math.log(2), "chance (ln 2)")
            else:
                chance_line(ax)
                ax.set_ylim(40, 102)
        axes[0].legend(loc="center right", fontsize=FONT_SIZE - 1)
        axes[2].text(0.01, math.log(2), "ln 2", color=GREY, ha="left", va="bottom",
                     transform=axes[2].get_yaxis_transform())
        axes[-1].set_xlabel("supervised epoch")
        axes[-1].xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        axes[0].set_title(f"mean over seeds {seeds_label(ctx)} (shaded: min to max)")
    record = {**ctx.header("supervised_curves", ["E2", "E3", "E10"]),
              "what": "per supervised epoch: test accuracy (whole test set), training accuracy on the "
                      "first 2000 training sequences, training loss = mean over the epoch's steps",
              "curves": curves, "runs": ctx.sources("scratch", paper_runs.FULL_SPT_KEEP)}
    return save(ctx, "supervised_curves", fig, record)
