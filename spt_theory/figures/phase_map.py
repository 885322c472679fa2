"""SPT epochs needed and scratch accuracy as p, n, V move one at a time (E13, E14)."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib
import numpy as np

from spt_theory.figures.context import FigureContext, save, seeds_label, summary
from spt_theory.figures.registry import figure
from spt_theory.figures.style import (
    FONT_SIZE,
    GREY,
    PAGE_WIDTH,
    RECIPE_COLOUR,
    STYLE,
    chance_line,
    new_figure,
    seed_dots,
)
from spt_theory.util.plotting import plt
from spt_theory.walk import paper_runs
from spt_theory.walk.experiments import RunResult, RunSpec
from spt_theory.walk.paper_runs import median_budget, point_label

FACTORS = (("p", "p", "step probability p"), ("n", "length", "length n"), ("V", "vocab", "vocabulary V"))


def phase_points(ctx: FigureContext) -> dict[str, dict]:
    """Per phase point of ``ctx.data`` (:func:`spt_theory.walk.paper_runs.phase_map`): scratch accuracy,
    the SPT epochs needed per seed (None: not solved by the largest) and every run's provenance."""
    sources: dict[str, list[dict]] = {}

    def train_run(spec: RunSpec) -> RunResult:
        label = point_label(spec.data)
        first = spec.stages[0]
        name = f"SPT {first.epochs} ep {label}" if first.objective == "spt" else f"scratch {label}"
        sources.setdefault(label, []).append(ctx.source(name, spec.seed, spec))
        return ctx.result(name, spec.seed, spec)

    out = {}
    for label, point in paper_runs.phase_map(ctx.seeds, train_run, ctx.data, ctx.budget, **ctx.model).items():
        budgets = [f["budget"] for f in point["found"]]
        median = median_budget(budgets)
        out[label] = {"walk": point["walk"],
                      "scratch_accuracy": summary([r.final["test_accuracy"] for r in point["scratch"]]),
                      "spt_epochs_needed": budgets, "median_spt_epochs_needed": None if math.isinf(median) else median,
                      "not_solved": [b is None for b in budgets],
                      "accuracy_by_spt_epochs": [f["accuracy_by_spt_epochs"] for f in point["found"]],
                      "runs": sources[label]}
    return out


@figure("E13, E14", "SPT epochs needed and scratch accuracy as p, n, V move")
def phase_map(ctx: FigureContext) -> list[Path]:
    """Top: SPT epochs needed to reach 0.95 after the finetune (least of 1, 2, 4, 8; log axis;
    '> 8' above), median over seeds (bar) and seeds (dots); bottom: scratch test accuracy (mean,
    dots: seeds); one column per task parameter moved, the others at the default."""
    points = phase_points(ctx)
    ladder = paper_runs.SPT_LADDER
    top_value = 2 * ladder[-1]
    fig, axes = new_figure(PAGE_WIDTH * 0.75, 3.3, 2, 3, sharey="row", squeeze=False)
    rng = np.random.default_rng(0)
    with plt.rc_context(STYLE):
        for c, (symbol, field_name, title) in enumerate(FACTORS):
            line = paper_runs.factor_line(paper_runs.phase_points(ctx.data), ctx.data, field_name)
            xs = list(range(len(line)))
            top, bottom = axes[0, c], axes[1, c]
            for xi, walk in zip(xs, line):
                p = points[point_label(walk)]
                need = [top_value if b is None else b for b in p["spt_epochs_needed"]]
                jitter = rng.uniform(-0.12, 0.12, len(need))
                top.scatter(xi + jitter, need, s=8, color=RECIPE_COLOUR["spt"], zorder=3,
                            label="single seed" if (c, xi) == (0, 0) else None)
                median = p["median_spt_epochs_needed"] or top_value
                top.plot([xi - 0.25, xi + 0.25], [median, median], color="black", lw=1.2,
                         label="median" if (c, xi) == (0, 0) else None)
                acc = p["scratch_accuracy"]
                bottom.bar(xi, 100 * acc["mean"], 0.6, color=RECIPE_COLOUR["scratch"], alpha=0.8)
                seed_dots(bottom, xi, [100 * a for a in acc["per_seed"]])
            ticks = [f"{getattr(w, field_name):g}" + ("*" if w == ctx.data else "") for w in line]
            for ax in (top, bottom):
                ax.set_xticks(xs, ticks)
            top.set_title(f"{title} moved")
            bottom.set_xlabel(f"{symbol} (* = default)")
            chance_line(bottom)
            top.axhline(1.5 * ladder[-1], color=GREY, lw=0.5)
        axes[0, 0].set_yscale("log", base=2)
        axes[0, 0].set_yticks(list(ladder) + [top_value], [f"{e:g}" for e in ladder] + [f"> {ladder[-1]:g}"])
        axes[0, 0].yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        axes[0, 0].set_ylim(ladder[0] / 1.5, top_value * 1.5)
        axes[0, 0].set_ylabel(f"SPT epochs to {paper_runs.SOLVED:g}\n(finetune {ctx.budget.finetune_epochs} ep)")
        fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", ncols=2,
                   fontsize=FONT_SIZE - 1)
        axes[1, 0].set_ylim(0, 102)
        axes[1, 0].set_ylabel(f"scratch test acc. (%)\n({ctx.budget.scratch_epochs} ep)")
        fig.suptitle(f"seeds {seeds_label(ctx)}; default V={ctx.data.vocab}, n={ctx.data.length}, p={ctx.data.p:g}")
    record = {**ctx.header("phase_map", ["E13", "E14"]), "spt_ladder": list(ladder), "solved": paper_runs.SOLVED,
              "not_solved_drawn_at": top_value,
              "points": {label: {**p, "walk": {"vocab": p["walk"].vocab, "length": p["walk"].length, "p": p["walk"].p}}
                         for label, p in points.items()}}
    return save(ctx, "phase_map", fig, record)
