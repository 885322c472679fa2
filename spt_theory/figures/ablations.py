"""Figure ``ablations``: final test accuracy: scratch, SPT, frozen, hybrid inits, controls (E2-E6, X1-X5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from spt_theory.figures.context import FigureContext, save, seeds_label, summary
from spt_theory.figures.registry import figure
from spt_theory.figures.style import COLUMN_WIDTH, FONT_SIZE, OKABE_ITO, RECIPE_COLOUR, STYLE, new_figure
from spt_theory.training.recipes import Budget
from spt_theory.util.plotting import plt
from spt_theory.walk.experiments import RunSpec, control_recipe


def ablation_entries(budget: Budget) -> list[tuple[str, str]]:
    """(label, recipe) of the ablation bars: the design's runs, then the registry's controls."""
    b = budget
    entries = [(f"scratch ({b.scratch_epochs} ep)", "scratch"),
               (f"SPT {b.pretrain_epochs} + finetune {b.finetune_epochs} ep", "spt"),
               (f"frozen $W_Q, W_K$ ({b.scratch_epochs} ep)", "frozen"),
               (f"hybrid $W_Q, W_K$ ({b.scratch_epochs} ep)", "hybrid_qk"),
               (f"hybrid Q, K, V, O ({b.scratch_epochs} ep)", "hybrid_qk_vo"),
               (f"hybrid MLP ({b.scratch_epochs} ep)", "hybrid_mlp")]
    return entries


def control_entries(ctx: FigureContext) -> list[tuple[str, str]]:
    """(label, run name) of the mechanism controls (claims X1-X5) that ``verify`` trains in quick
    mode (:func:`control_spec`)."""
    b = ctx.budget
    entries = [("X1 ALiBi bias, scratch", "alibi", f"{b.scratch_epochs} ep"),
               ("X2 proximity init $W_Q, W_K$", f"proxinit_{b.finetune_epochs}", f"{b.finetune_epochs} ep"),
               ("X3 no PE, SPT + finetune", "nope", f"{b.pretrain_epochs}+{b.finetune_epochs} ep"),
               ("X4 CLS readout, scratch", "cls", f"{b.scratch_epochs} ep"),
               ("X5 SPT on symmetric walk", "xspt_symmetric", f"{b.pretrain_epochs}+{b.finetune_epochs} ep")]
    return [(f"{label} ({epochs})", name) for label, name, epochs in entries]


def control_spec(ctx: FigureContext, name: str, seed: int) -> RunSpec:
    """A control run as :func:`spt_theory.checks.controls.control_spec` builds it
    (:func:`spt_theory.walk.experiments.control_recipe`), on ``ctx``'s
    data, budget and model (identical spec, hence cache key, for the default context)."""
    return control_recipe(name, ctx.data, seed, ctx.budget, **ctx.model)


@figure("E2, E3, E5, E6, X1-X5", "final test accuracy of scratch, SPT, frozen, hybrid inits, controls")
def ablations(ctx: FigureContext) -> list[Path]:
    controls = control_entries(ctx)
    rows: list[dict[str, Any]] = []
    sources: list[dict] = []
    for label, name in ablation_entries(ctx.budget) + controls:
        is_control = (label, name) in controls
        specs = [control_spec(ctx, name, seed) if is_control else ctx.spec(name, seed) for seed in ctx.seeds]
        accs = [100 * r.final["test_accuracy"] for r in ctx.results(name, specs)]
        sources += [ctx.source(name, spec.seed, spec) for spec in specs]
        rows.append({"label": label, "recipe": name, "control": is_control,
                     "test_accuracy_percent": summary(accs)})
    height = 0.9 + 0.32 * len(rows)
    fig, ax = new_figure(COLUMN_WIDTH, height)
    with plt.rc_context(STYLE):
        y = np.arange(len(rows))[::-1]
        for yi, row in zip(y, rows):
            stats = row["test_accuracy_percent"]
            colour = OKABE_ITO["yellow"] if row["control"] else RECIPE_COLOUR.get(row["recipe"], OKABE_ITO["yellow"])
            ax.barh(yi, stats["mean"], 0.65, xerr=stats["std"] if len(ctx.seeds) > 1 else None,
                    color=colour, capsize=2, error_kw={"lw": 0.8})
            ax.scatter(stats["per_seed"], [yi] * len(stats["per_seed"]), s=6, color="black", zorder=3)
            ax.text(2, yi, f"{stats['mean']:.1f}", va="center", ha="left", fontsize=FONT_SIZE)
        if controls:
            ax.axhline(y[len(rows) - len(controls)] + 0.5, color="black", lw=0.5)
        ax.axvline(50, color=RECIPE_COLOUR["grey"], ls="--", lw=1)
        ax.text(51.5, y[0] + 0.55, "chance", ha="left", va="bottom", color=RECIPE_COLOUR["grey"])
        ax.set_yticks(y, [r["label"] for r in rows])
        ax.set_xlim(0, 100)
        ax.set_ylim(y[-1] - 0.6, y[0] + 1.1)
        ax.set_xlabel("final test accuracy (%)")
        fig.suptitle(f"mean ± sd over seeds {seeds_label(ctx)} (dots: single seeds);\nhybrid: groups "
                     f"from SPT ({ctx.budget.pretrain_epochs} ep), rest fresh, then supervised")
    record = {**ctx.header("ablations", ["E2", "E3", "E5", "E6"] + (["X1-X5"] if controls else [])),
              "bars": rows, "runs": sources}
    return save(ctx, "ablations", fig, record)
