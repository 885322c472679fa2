"""Figure ``gradient_blindness``: proximity share of the score gradients at init; T3 control off uniform
(T3, T5, E8)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from spt_theory.analysis.gradient_shares import gradient_proximity_shares
from spt_theory.figures.context import FigureContext, save, seeds_label, summary
from spt_theory.figures.registry import figure
from spt_theory.figures.style import COLUMN_WIDTH, FONT_SIZE, RECIPE_COLOUR, STYLE, new_figure
from spt_theory.util.plotting import plt
from spt_theory.walk.experiments import initial_model

T3_EPS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
"""The grid of the T3 check's control (a)."""


def gradient_shares(ctx: FigureContext) -> list[dict]:
    """E8's measurement per seed: proximity share of E[dL/dS] and per-example dL/dS at init."""
    data = ctx.dataset()
    k = min(ctx.probe_size, len(data.x_test))
    return [gradient_proximity_shares(initial_model(ctx.spec("init", seed)), data.x_test[:k],
                                      data.y_test[:k], data.mask_id, seed=seed) for seed in ctx.seeds]


def t3_off_uniform(count: int) -> dict:
    """The T3 check's control (a): normalised blind projection at S = r1^T + eps X, fitted slope."""
    from spt_theory.analysis.lemma_harness import single_threaded
    from spt_theory.analysis.lemma_measures_t3 import off_uniform_growth
    with single_threaded():
        return off_uniform_growth(list(T3_EPS), count)


@figure("T3, T5, E8", "proximity share of the score gradients at init; T3 off-uniform control")
def gradient_blindness(ctx: FigureContext) -> list[Path]:
    shares = gradient_shares(ctx)
    growth = t3_off_uniform(ctx.t3_count)
    fig, (left, right) = new_figure(COLUMN_WIDTH, 4.4, 2, 1)
    bars = {}
    with plt.rc_context(STYLE):
        groups = (("expected", "batch-mean\ngradient E[∂L/∂S]"), ("per_example", "per-example\ngradient ∂L/∂S"))
        objectives = (("supervised", "supervised"), ("spt", "reconstruction (SPT)"))
        width = 0.36
        for j, (obj, label) in enumerate(objectives):
            colour = RECIPE_COLOUR["supervised" if obj == "supervised" else "reconstruction"]
            for i, (kind, _) in enumerate(groups):
                values = [s[obj][kind] for s in shares]
                stats = summary(values)
                pos = i + (j - 0.5) * width
                left.bar(pos, stats["mean"], width, yerr=stats["std"] if len(values) > 1 else None,
                         color=colour, capsize=2, label=label if i == 0 else None, error_kw={"lw": 0.8})
                left.scatter([pos] * len(values), values, s=6, color="black", zorder=3,
                             label="single seed" if (i, j) == (0, 0) else None)
                bars[f"{obj}_{kind}"] = stats
        chance = summary([s["random"] for s in shares])
        bars["random_matrix"] = chance
        left.axhline(chance["mean"], color=RECIPE_COLOUR["grey"], ls="--", lw=1, label="random matrix")
        left.set_xticks(range(len(groups)), [g for _, g in groups])
        left.set_yscale("log")
        left.set_ylabel("share of ‖∂L/∂S‖ on proximity\ndirections (|i-j| = 1, 2)")
        ratio = summary([s["supervised"]["expected"] / s["spt"]["expected"] for s in shares])
        left.set_title(f"(a) full model at init, walk task; seeds {seeds_label(ctx)}\n"
                       f"batch mean: sup / rec = {ratio['mean']:.2f} ± {ratio['std']:.2f} (mean ± sd)")
        ymin, ymax = left.get_ylim()
        left.set_ylim(ymin / 2, ymax * 40)
        handles, labels = left.get_legend_handles_labels()
        order = [labels.index(k) for k in ("supervised", "reconstruction (SPT)", "single seed", "random matrix")]
        left.legend([handles[i] for i in order], [labels[i] for i in order], loc="upper right",
                    fontsize=FONT_SIZE, ncols=2, columnspacing=0.8, handlelength=1.5)

        eps = np.array(growth["eps"])
        proj = np.array(growth["mean_normalised_projection"])
        fitted = growth["coefficient"] * eps ** growth["loglog_slope"]
        right.loglog(eps, proj, "o", color=RECIPE_COLOUR["supervised"],
                     label=f"mean of {ctx.t3_count} random instances")
        right.loglog(eps, fitted, "-", color="black", lw=0.8,
                     label=f"fit ∝ ε^{growth['loglog_slope']:.2f} (0 at ε = 0)")
        right.set_xlabel("distance from uniform attention ε   (S = r1ᵀ + εX)")
        right.set_ylabel("|⟨∂L_sup/∂S, P⟩| (normalised)\nP circulant (blind direction)")
        right.set_title("(b) T3 control: blind only at uniform attention")
        right.legend(loc="upper left", fontsize=FONT_SIZE)
    record = {**ctx.header("gradient_blindness", ["T3", "T5", "E8"]),
              "panel_a": {"what": "||Proj_prox(G)||_F / ||G||_F of the layer-0 score gradient at init, "
                                  "G = batch mean (expected) or per example; proximity directions "
                                  "1{|i-j|=k}, k=1,2 row-centred; random = Gaussian matrix (chance)",
                          "probe": f"x_test[:{min(ctx.probe_size, len(ctx.dataset().x_test))}]",
                          "bars": bars, "ratio_sup_over_rec_expected": ratio, "per_seed": shares,
                          "runs": ctx.sources("init")},
              "panel_b": {"what": "spt_theory.analysis.lemma_measures_t3.off_uniform_growth: mean normalised "
                                  "|<dL_sup/dS, P>| over random instances (n 3-16) at S = r1^T + eps X, "
                                  "P random circulant; log-log least-squares fit",
                          **growth}}
    return save(ctx, "gradient_blindness", fig, record)
