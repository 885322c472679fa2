"""Figure ``pe_toeplitz``: PE-PE scores as a function of i - j before and after SPT, Toeplitz R^2 (E7)."""

from __future__ import annotations

import statistics
from pathlib import Path

from spt_theory.analysis.probes import diagonal_profile, pe_score_block, toeplitz_fit
from spt_theory.figures.context import FigureContext, rounded, save, seeds_label, summary
from spt_theory.figures.registry import figure
from spt_theory.figures.style import COLUMN_WIDTH, FONT_SIZE, PALETTE, RECIPE_COLOUR, STYLE, new_figure
from spt_theory.util.plotting import plt
from spt_theory.walk.experiments import initial_model


def pe_profiles(model) -> dict:
    blocks = pe_score_block(model)  # (heads, n, n)
    heads = []
    for t in blocks:
        deltas, f = diagonal_profile(t)
        fit = toeplitz_fit(t)
        heads.append({"delta": deltas.tolist(), "profile": rounded(f, 5), **fit})
    return {"heads": heads, "r2_mean": statistics.fmean(h["r2"] for h in heads)}


@figure("E7", "PE-PE scores against i - j before / after SPT, Toeplitz R^2")
def pe_toeplitz(ctx: FigureContext) -> list[Path]:
    seed = ctx.seeds[0]
    before = {s: pe_profiles(initial_model(ctx.spec("pretrain", s))) for s in ctx.seeds}
    after = {s: pe_profiles(ctx.result("pretrain", s).model) for s in ctx.seeds}
    n = ctx.data.length
    fig, axes = new_figure(COLUMN_WIDTH, 4.4, 2, 1, sharex=True)
    with plt.rc_context(STYLE):
        for ax, label, profiles in ((axes[0], "(a) at init", before),
                                    (axes[1], f"(b) after SPT ({ctx.budget.pretrain_epochs} ep)", after)):
            for h, head in enumerate(profiles[seed]["heads"]):
                ax.plot(head["delta"], head["profile"], color=PALETTE[h % len(PALETTE)], lw=1,
                        label=f"head {h + 1}: R² {head['r2']:.2f}")
            peaks = ", ".join(str(head["peak_offset"]) for head in profiles[seed]["heads"])
            ax.axvline(0, color=RECIPE_COLOUR["grey"], lw=0.5, ls=":")
            r2 = summary([p["r2_mean"] for p in profiles.values()])
            ax.set_title(f"{label}: Toeplitz R² {r2['mean']:.2f} ± {r2['std']:.2f}\n"
                         f"(mean of heads, seeds {seeds_label(ctx)}); curves: seed {seed}\n"
                         f"|i-j| of each head's maximum: {peaks}")
            ax.set_ylabel("PE-PE score f(i-j)\n(logit units)")
            ax.legend(loc="upper center", fontsize=FONT_SIZE, handlelength=1.2, borderaxespad=0.1, ncols=2,
                      columnspacing=1.0, handletextpad=0.4)
        axes[1].set_xlabel("offset i - j (positions)")
        axes[1].set_xlim(-(n - 1), n - 1)
        for ax in axes:  # leave room for the legend above the curves
            lo, hi = ax.get_ylim()
            ax.set_ylim(lo, hi + 0.45 * (hi - lo))
    record = {**ctx.header("pe_toeplitz", ["E7"]),
              "what": "diagonal means f(d) of T_h = (P g) W_Q^h W_K^h^T (P g)^T / sqrt(d_h) per head "
                      "(spt_theory.analysis.probes.pe_score_block, diagonal_profile, toeplitz_fit)",
              "seed_plotted": seed,
              "r2_mean_at_init": summary([p["r2_mean"] for p in before.values()]),
              "r2_mean_after_spt": summary([p["r2_mean"] for p in after.values()]),
              "before": {str(s): p for s, p in before.items()}, "after": {str(s): p for s, p in after.items()},
              "runs": ctx.sources("pretrain")}
    return save(ctx, "pe_toeplitz", fig, record)
