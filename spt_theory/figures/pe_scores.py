"""PE-PE score blocks per head at init / scratch / SPT and the residual of the Toeplitz fit (E7)."""

from __future__ import annotations

import statistics
from pathlib import Path

import torch

from spt_theory.analysis.probes import (
    pe_score_block,
    toeplitz_fit,
    toeplitz_part,
)
from spt_theory.figures.context import FigureContext, rounded, save, seeds_label, summary
from spt_theory.figures.registry import figure
from spt_theory.figures.style import DIVERGING, FONT_SIZE, PAGE_WIDTH, STYLE, new_figure
from spt_theory.util.plotting import plt
from spt_theory.walk.experiments import initial_model


def pe_blocks(ctx: FigureContext, seed: int) -> dict[str, torch.Tensor]:
    """PE-PE score blocks (heads, n, n) at init, after scratch and after SPT (``pretrain``), and
    the residual of the SPT block's Toeplitz fit."""
    blocks = {"init": pe_score_block(initial_model(ctx.spec("pretrain", seed))),
              "scratch": pe_score_block(ctx.result("scratch", seed).model),
              "spt": pe_score_block(ctx.result("pretrain", seed).model)}
    blocks = {k: v.detach().double().cpu() for k, v in blocks.items()}
    blocks["residual"] = torch.stack([t - toeplitz_part(t) for t in blocks["spt"]])
    return blocks


@figure("E7", "PE-PE score blocks per head: init, scratch, SPT; residual of the Toeplitz fit")
def pe_scores(ctx: FigureContext) -> list[Path]:
    """PE-PE scores P W_Q W_K^T P^T / sqrt(d_h) of every head (rows) at init, after scratch, after
    SPT, and SPT minus its Toeplitz (diagonal-mean) fit; columns share a symmetric scale, the
    residual column the SPT column's.  Panel text: that head's Toeplitz R^2 (residual: 1 - R^2)."""
    seed = ctx.seeds[0]
    per_seed = {s: pe_blocks(ctx, s) for s in ctx.seeds}
    r2 = {s: {stage: [toeplitz_fit(t)["r2"] for t in b[stage]] for stage in ("init", "scratch", "spt")}
          for s, b in per_seed.items()}
    blocks = per_seed[seed]
    heads, n = blocks["spt"].shape[0], blocks["spt"].shape[-1]
    b = ctx.budget
    columns = (("init", "at init"), ("scratch", f"after scratch\n({b.scratch_epochs} ep)"),
               ("spt", f"after SPT\n({b.pretrain_epochs} ep)"), ("residual", "SPT minus\nToeplitz fit"))
    scale = {stage: float(blocks[stage].abs().max()) for stage in ("init", "scratch", "spt")}
    scale["residual"] = scale["spt"]
    fig, axes = new_figure(PAGE_WIDTH * 0.72, 1.25 * heads + 1.0, heads, 4, sharex=True, sharey=True, squeeze=False)
    with plt.rc_context(STYLE):
        for c, (stage, title) in enumerate(columns):
            for h in range(heads):
                ax = axes[h, c]
                im = ax.imshow(blocks[stage][h].numpy(), cmap=DIVERGING, vmin=-scale[stage], vmax=scale[stage],
                               interpolation="nearest")
                value = 1 - r2[seed]["spt"][h] if stage == "residual" else r2[seed][stage][h]
                ax.text(0.03, 0.04, f"{'1-R²' if stage == 'residual' else 'R²'} {value:.2f}", transform=ax.transAxes,
                        fontsize=FONT_SIZE - 1, va="bottom",
                        bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1})
                ax.set_xticks([0, n - 1])
                ax.set_yticks([0, n - 1])
                if c == 0:
                    ax.set_ylabel(f"head {h + 1}\nposition i")
            axes[0, c].set_title(title)
            axes[-1, c].set_xlabel("position j")
            fig.colorbar(im, ax=axes[:, c], location="bottom", shrink=0.85, pad=0.01).ax.tick_params(
                labelsize=FONT_SIZE - 2)
        stats = {stage: summary([statistics.fmean(r[stage]) for r in r2.values()])
                 for stage in ("init", "scratch", "spt")}
        fig.suptitle(f"maps: seed {seed}; Toeplitz R² (mean of heads), mean ± sd over seeds {seeds_label(ctx)}:\n"
                     + ", ".join(f"{k.replace('spt', 'SPT')} {v['mean']:.2f} ± {v['std']:.2f}"
                                 for k, v in stats.items()))
    record = {**ctx.header("pe_scores", ["E7"]), "seed_plotted": seed,
              "what": "T_h = (P g) W_Q^h W_K^h^T (P g)^T / sqrt(d_h) (probes.pe_score_block); residual = "
                      "T_h - F_h, F_h the diagonal-mean (Toeplitz) fit (probes.toeplitz_part); R^2 of "
                      "probes.toeplitz_fit",
              "colour_scale_abs_max": scale, "r2_mean_of_heads": stats,
              "r2_per_head": {str(s): v for s, v in r2.items()},
              "matrices_seed_plotted": {stage: rounded(t, 4) for stage, t in blocks.items()},
              "runs": ctx.sources("init", "scratch", "pretrain")}
    return save(ctx, "pe_scores", fig, record)
