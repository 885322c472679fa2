"""Figure ``attention_maps``: head-averaged attention of one test sequence: init, scratch, SPT, finetuned (E4)."""

from __future__ import annotations

from pathlib import Path

from matplotlib.colors import LogNorm

from spt_theory.analysis.probes import attention_patterns, band_mass, uniform_band_mass
from spt_theory.figures.context import FigureContext, rounded, save
from spt_theory.figures.registry import figure
from spt_theory.figures.style import COLUMN_WIDTH, FONT_SIZE, STYLE, new_figure
from spt_theory.util.plotting import plt
from spt_theory.walk.experiments import initial_model


@figure("E4", "head-averaged attention of one sequence: init, scratch, SPT, finetuned")
def attention_maps(ctx: FigureContext) -> list[Path]:
    """Head-averaged attention of the first test sequence at four points of training (seed 0)."""
    seed = ctx.seeds[0]
    data = ctx.dataset()
    x = data.x_test[:1]
    stages = [("init", "at init (random)", None),
              ("scratch", f"supervised from scratch\n({ctx.budget.scratch_epochs} ep)", "scratch"),
              ("pretrain", f"after SPT\n({ctx.budget.pretrain_epochs} ep, no labels)", "pretrain"),
              ("spt", f"SPT, then finetune\n({ctx.budget.finetune_epochs} supervised ep)", "spt")]
    maps, record_panels = [], []
    for key, _title, name in stages:
        model = initial_model(ctx.spec("scratch", seed)) if name is None else ctx.result(name, seed).model
        pattern = attention_patterns(model, x)[0][0]  # (heads, n, n)
        mean = pattern.mean(0)
        acc = ctx.init_metrics(seed)["test_accuracy"] if name is None else ctx.result(name, seed).final["test_accuracy"]
        maps.append(mean)
        record_panels.append({"panel": key, "band_mass_this_sequence": band_mass(pattern),
                              "band_mass_per_head": [band_mass(pattern[h]) for h in range(len(pattern))],
                              "test_accuracy_of_model": acc,
                              "source": ctx.source("scratch" if name is None else name, seed),
                              "attention_head_mean": rounded(mean, 6)})
    n = maps[0].shape[-1]
    vmax = max(float(m.max()) for m in maps)
    vmin = min(1e-3, 0.1 / n)
    fig, axes = new_figure(COLUMN_WIDTH, 3.75, 2, 2, sharex=True, sharey=True)
    with plt.rc_context(STYLE):
        for ax, mean, (_key, title, _), panel in zip(axes.flat, maps, stages, record_panels):
            im = ax.imshow(mean.clamp_min(vmin).numpy(), norm=LogNorm(vmin=vmin, vmax=vmax), cmap="viridis",
                           interpolation="nearest", origin="upper")
            ax.set_title(title, pad=3)
            ax.text(0.03, 0.04, f"band {panel['band_mass_this_sequence']:.2f}", transform=ax.transAxes,
                    fontsize=FONT_SIZE, va="bottom", bbox={"facecolor": "white", "edgecolor": "none",
                                                           "alpha": 0.85, "pad": 1.2})
            ticks = [0, n // 2, n - 1]
            ax.set_xticks(ticks)
            ax.set_yticks(ticks)
        for ax in axes[1]:
            ax.set_xlabel("key position j")
        for ax in axes[:, 0]:
            ax.set_ylabel("query position i")
        bar = fig.colorbar(im, ax=axes, shrink=0.8, pad=0.02)
        bar.set_label("attention weight $A_{ij}$ (mean of heads)")
        fig.suptitle(f"test sequence 0 (label {int(data.y_test[0])}), seed {seed}; band = attention\n"
                     f"share within |i-j|≤2 for this sequence (uniform: {uniform_band_mass(n):.3f})")
    record = {**ctx.header("attention_maps", ["E4"]), "seed": seed, "example": "x_test[0]",
              "label": int(data.y_test[0]), "heads": "mean over heads",
              "colour_scale": {"norm": "log", "vmin": vmin, "vmax": vmax},
              "uniform_band_mass": uniform_band_mass(n), "panels": record_panels}
    return save(ctx, "attention_maps", fig, record)
