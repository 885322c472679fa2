"""Figure ``training_curves``: band mass and test accuracy per epoch: scratch vs SPT then finetune (E2-E4)."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np

from spt_theory.analysis.probes import uniform_band_mass
from spt_theory.figures.context import FigureContext, save, seeds_label
from spt_theory.figures.registry import figure
from spt_theory.figures.style import COLUMN_WIDTH, FONT_SIZE, RECIPE_COLOUR, STYLE, new_figure
from spt_theory.util.plotting import plt


def _curves(ctx: FigureContext) -> dict:
    """Per-seed epoch curves: x (cumulative epochs, 0 = init), band mass, test accuracy."""
    out = {}
    for name in ("scratch", "spt"):
        per_seed = []
        for seed in ctx.seeds:
            result = ctx.result(name, seed)
            records = [ctx.init_metrics(seed)] + [r for stage in result.history for r in stage]
            per_seed.append({"seed": seed, "epoch": list(range(len(records))),
                             "band_mass": [r["band_mass"] for r in records],
                             "test_accuracy": [r["test_accuracy"] for r in records]})
        out[name] = per_seed
    return out


@figure("E2-E4", "band mass and test accuracy per epoch, scratch vs SPT then finetune")
def training_curves(ctx: FigureContext) -> list[Path]:
    curves = _curves(ctx)
    n = ctx.data.length
    boundary = ctx.budget.pretrain_epochs
    labels = {"scratch": "supervised from scratch", "spt": "SPT, then finetune"}
    fig, (top, bottom) = new_figure(COLUMN_WIDTH, 3.6, 2, 1, sharex=True)
    plotted = {}
    with plt.rc_context(STYLE):
        for name, per_seed in curves.items():
            x = np.array(per_seed[0]["epoch"])
            plotted[name] = {"epoch": x.tolist()}
            for ax, metric, scale in ((top, "band_mass", 1.0), (bottom, "test_accuracy", 100.0)):
                values = scale * np.array([s[metric] for s in per_seed])
                mean = values.mean(0)
                ax.plot(x, mean, marker="o", color=RECIPE_COLOUR[name], label=labels[name])
                ax.fill_between(x, values.min(0), values.max(0), color=RECIPE_COLOUR[name], alpha=0.25, lw=0)
                plotted[name][metric] = {"mean": mean.tolist(), "min": values.min(0).tolist(),
                                         "max": values.max(0).tolist(), "per_seed": values.tolist()}
        uniform = uniform_band_mass(n)
        top.axhline(uniform, color=RECIPE_COLOUR["grey"], ls=":", lw=1)
        last = max(len(per_seed[0]["epoch"]) for per_seed in curves.values()) - 1
        top.text(last, uniform * 1.15 + 0.01, f"uniform ({uniform:.3f})", ha="right", va="bottom",
                 color=RECIPE_COLOUR["grey"])
        bottom.axhline(50, color=RECIPE_COLOUR["grey"], ls=":", lw=1, label="chance (50%)")
        for ax in (top, bottom):
            ax.axvline(boundary, color="black", ls="--", lw=0.8)
        top.text(boundary - 0.15, 0.97, "SPT", transform=top.get_xaxis_transform(), ha="right", va="top")
        top.text(boundary + 0.15, 0.97, "finetune", transform=top.get_xaxis_transform(), ha="left", va="top")
        top.set_ylabel("band mass\n(attention within |i-j|≤2)")
        top.set_ylim(0, None)
        bottom.set_ylabel("test accuracy (%)")
        bottom.set_ylim(40, 102)
        bottom.set_xlabel("epoch (0 = init; SPT run: SPT, then supervised)")
        bottom.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        bottom.legend(loc="upper left", fontsize=FONT_SIZE)
        top.set_title(f"mean over seeds {seeds_label(ctx)} (shaded: min to max)")
    record = {**ctx.header("training_curves", ["E2", "E3", "E4"]),
              "x": f"cumulative training epochs; 0 = init; SPT run: epochs 1..{boundary:d} SPT, then finetune",
              "uniform_band_mass": uniform, "curves": plotted, "per_seed": curves,
              "runs": ctx.sources("scratch", "spt")}
    return save(ctx, "training_curves", fig, record)
