"""E[dL_sup/dS], E[dL_rec/dS] at init and X6's supervised proximity share in training (T3, T5, E8, X6)."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
import torch

from spt_theory.analysis import gradient_shares
from spt_theory.analysis.gradient_shares import chance_share, share_trajectory
from spt_theory.figures.context import FigureContext, rounded, save, seeds_label
from spt_theory.figures.registry import figure
from spt_theory.figures.style import COLUMN_WIDTH, DIVERGING, FONT_SIZE, GREY, RECIPE_COLOUR, STYLE, log_y, new_figure
from spt_theory.theory.patterns import proximity_directions
from spt_theory.util.plotting import plt
from spt_theory.walk.experiments import initial_model, run_checkpoints


def init_gradients(ctx: FigureContext, seed: int) -> dict[str, torch.Tensor]:
    """Layer-0 E[dL/dS] at init for L_sup and L_rec (15% masking), mean over the first
    ``ctx.probe_size`` test sequences and over heads, shape (n, n)."""
    data = ctx.dataset()
    k = min(ctx.probe_size, len(data.x_test))
    model = initial_model(ctx.spec("init", seed))
    return {objective: gradient_shares.score_gradients(model, data.x_test[:k], data.y_test[:k], objective=objective,
                                                       mask_id=data.mask_id,
                                                       generator=torch.Generator().manual_seed(seed)
                                                       ).mean((0, 1)).double()
            for objective in ("supervised", "spt")}


def rank_one_share(g: torch.Tensor) -> float:
    """sigma_1^2 / sum sigma_k^2: the share of ||G||_F^2 in its best rank-one approximation."""
    s = torch.linalg.svdvals(g)
    return float(s[0] ** 2 / (s ** 2).sum())


@figure("T3, T5, E8, X6", "E[dL_sup/dS], E[dL_rec/dS] at init; supervised proximity share in training")
def score_gradients(ctx: FigureContext) -> list[Path]:
    """(a) E[dL_sup/dS] and (b) E[dL_rec/dS] at init (seed ``ctx.seeds[0]``), each on its own
    symmetric diverging scale; (c) X6: proximity share of the supervised E[dL_sup/dS] at init and
    after every epoch of the scratch and SPT-then-finetune runs, over the random-matrix share."""
    seed = ctx.seeds[0]
    grads = init_gradients(ctx, seed)
    data = ctx.dataset()
    k = min(ctx.probe_size, len(data.x_test))
    x, y = data.x_test[:k], data.y_test[:k]
    directions = proximity_directions(x.shape[1], 2, circular=False)
    chance = chance_share(directions)
    trajectories = {name: [share_trajectory(initial_model(r.spec), run_checkpoints(r.spec, ctx.cache_dir), x, y,
                                            directions)
                        for r in ctx.runs(name)]
                    for name in ("scratch", "spt")}
    fig, axes = new_figure(COLUMN_WIDTH, 5.0, 2, 2, height_ratios=(1, 1.05))
    panels = {}
    with plt.rc_context(STYLE):
        n = x.shape[1]
        for ax, (objective, title) in zip(axes[0], (("supervised", "(a) E[∂L_sup/∂S]"),
                                                    ("spt", "(b) E[∂L_rec/∂S]"))):
            g = grads[objective]
            vmax = float(g.abs().max())
            im = ax.imshow(g.numpy(), cmap=DIVERGING, vmin=-vmax, vmax=vmax, interpolation="nearest")
            share = rank_one_share(g)
            ax.set_title(f"{title}\nrank-1 share {share:.3f}", pad=3)
            ax.set_xticks([0, n - 1])
            ax.set_yticks([0, n - 1])
            ax.set_xlabel("key j", labelpad=0)
            bar = fig.colorbar(im, ax=ax, location="bottom", shrink=0.9, pad=0.02, format="%.0e")
            bar.ax.tick_params(labelsize=FONT_SIZE - 2, rotation=30)
            panels[objective] = {"colour_scale": [-vmax, vmax], "rank_one_share": share,
                                 "row_spread_over_norm": float((g - g.mean(0)).norm() / g.norm()),
                                 "matrix": rounded(g, 9)}
        axes[0, 0].set_ylabel("query i")
        gs = axes[1, 0].get_gridspec()
        for ax in axes[1]:
            ax.remove()
        bottom = fig.add_subplot(gs[1, :])
        curves = {}
        labels = {"scratch": f"scratch ({ctx.budget.scratch_epochs} supervised ep)",
                  "spt": f"SPT {ctx.budget.pretrain_epochs} ep, then finetune {ctx.budget.finetune_epochs}"}
        for name, per_seed in trajectories.items():
            ratios = np.array([[p["expected"] / chance for p in t] for t in per_seed])
            epochs = np.arange(ratios.shape[1])
            bottom.plot(epochs, ratios.mean(0), marker="o", color=RECIPE_COLOUR[name], label=labels[name])
            for row in ratios:
                bottom.scatter(epochs, row, s=4, color=RECIPE_COLOUR[name], alpha=0.6, lw=0)
            curves[name] = {"epoch": epochs.tolist(), "stage": [p["stage"] for p in per_seed[0]],
                            "share_over_chance_mean": ratios.mean(0).tolist(),
                            "share_over_chance_per_seed": ratios.tolist(),
                            "per_example_share_per_seed": [[p["per_example"] for p in t] for t in per_seed]}
        bottom.axhline(1, color=GREY, ls="--", lw=0.8, label="chance (Gaussian matrix)")
        bottom.axvline(ctx.budget.pretrain_epochs, color="black", ls=":", lw=0.8)
        for dx, ha, text in ((-0.1, "right", "SPT run: SPT"), (0.1, "left", "finetune")):
            bottom.text(ctx.budget.pretrain_epochs + dx, 0.03, text, ha=ha, va="bottom",
                        transform=bottom.get_xaxis_transform())
        log_y(bottom)
        bottom.set_xlabel("epoch (0 = init)")
        bottom.set_ylabel("proximity share of\nE[∂L_sup/∂S] / chance")
        bottom.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        bottom.set_title(f"(c) X6: mean over seeds {seeds_label(ctx)} (dots: seeds)", pad=3)
        fig.legend(*bottom.get_legend_handles_labels(), loc="outside lower center", ncols=2,
                   fontsize=FONT_SIZE - 1)
        fig.suptitle(f"layer 0 at init (seed {seed}), mean over {k} test\nsequences and heads; "
                     "each map on its own scale")
    record = {**ctx.header("score_gradients", ["T3", "T5", "E8", "X6"]), "seed": seed,
              "probe": f"x_test[:{k}]", "mask_ratio_reconstruction": 0.15,
              "panels_a_b": panels,
              "panel_c": {"what": "||Proj_prox(E[dL_sup/dS])||_F / ||E[dL_sup/dS]||_F, mean of heads "
                                  "(spt_theory.analysis.gradient_shares.share_trajectory), over the share of a "
                                  "Gaussian matrix (gradient_shares.chance_share): as claim X6",
                          "chance_share": chance, "curves": curves},
              "runs": ctx.sources("init", "scratch", "spt")}
    return save(ctx, "score_gradients", fig, record)
