"""Figure ``pretrain_sweep``: finetuned accuracy and band mass against SPT epochs (E9)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from spt_theory.figures.context import FigureContext, save, seeds_label, summary
from spt_theory.figures.registry import figure
from spt_theory.figures.style import COLUMN_WIDTH, FONT_SIZE, OKABE_ITO, RECIPE_COLOUR, STYLE, new_figure
from spt_theory.probes import uniform_band_mass


def sweep_name(ctx: FigureContext, epochs: int) -> str:
    return "spt" if epochs == ctx.budget.pretrain_epochs else f"sweep_{epochs}"


@figure("E9", "finetuned accuracy and band mass against SPT epochs")
def pretrain_sweep(ctx: FigureContext) -> list[Path]:
    ft = ctx.budget.finetune_epochs
    points = []
    if ctx.budget.scratch_epochs >= ft:  # 0 SPT epochs: epoch ft of the scratch run (constant lr)
        points.append({"spt_epochs": 0, "recipe": f"scratch (epoch {ft})",
                       "test_accuracy_percent": summary([100 * r.history[0][ft - 1]["test_accuracy"] for r in ctx.runs("scratch")]),
                       "band_mass_after_spt": summary([ctx.init_metrics(s)["band_mass"] for s in ctx.seeds])})
    for e in ctx.sweep:
        results = ctx.runs(sweep_name(ctx, e))
        points.append({"spt_epochs": e, "recipe": sweep_name(ctx, e),
                       "test_accuracy_percent": summary([100 * r.final["test_accuracy"] for r in results]),
                       "band_mass_after_spt": summary([r.history[0][-1]["band_mass"] for r in results])})
    fig, (top, bottom) = new_figure(COLUMN_WIDTH, 3.6, 2, 1, sharex=True)
    x = np.array([p["spt_epochs"] for p in points])
    with plt.rc_context(STYLE):
        for ax, key, colour in ((top, "test_accuracy_percent", RECIPE_COLOUR["spt"]),
                                (bottom, "band_mass_after_spt", OKABE_ITO["green"])):
            mean = np.array([p[key]["mean"] for p in points])
            std = np.array([p[key]["std"] for p in points])
            ax.errorbar(x, mean, yerr=std, marker="o", color=colour, capsize=2, lw=1.2, label="mean ± sd")
            for xi, p in zip(x, points):
                ax.scatter([xi] * len(p[key]["per_seed"]), p[key]["per_seed"], s=6, color="black", zorder=3,
                           label="single seed" if xi == x[0] else None)
        top.axhline(50, color=RECIPE_COLOUR["grey"], ls="--", lw=1, label="chance")
        top.set_ylim(40, 102)
        top.set_ylabel(f"test accuracy (%)\nafter {ft} finetune epochs")
        top.legend(loc="upper left", fontsize=FONT_SIZE)
        top.set_title(f"mean ± sd over seeds {seeds_label(ctx)}; 0 SPT epochs =\n"
                      f"scratch run at epoch {ft} (same supervised budget)")
        uniform = uniform_band_mass(ctx.data.length)
        bottom.axhline(uniform, color=RECIPE_COLOUR["grey"], ls=":", lw=1, label=f"uniform ({uniform:.3f})")
        bottom.set_ylabel("band mass after SPT\n(attention within |i-j|≤2)")
        bottom.set_ylim(0, None)
        bottom.legend(loc="upper left", fontsize=FONT_SIZE)
        bottom.set_xlabel("SPT (masked-token pretraining) epochs")
        bottom.set_xticks(x)
    record = {**ctx.header("pretrain_sweep", ["E9"]), "finetune_epochs": ft, "points": points,
              "runs": ctx.sources("scratch", *(sweep_name(ctx, e) for e in ctx.sweep))}
    return save(ctx, "pretrain_sweep", fig, record)
