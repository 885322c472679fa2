"""Figure ``plateau_law`` (P1-P5): escape step against n, log-log, from the committed plateau grid.

Reads the committed ``evidence/plateau/plateau_runs.json`` and ``gradient_rms.json`` (written by
``python -m spt_theory.plateau``, promoted with ``--promote``), no training: per grid row (AdamW at the default init and at
init / 10, SGD, SPT's steps to 95%) the seeds (small dots; a capped run as an upward triangle at its
cap, a lower bound) and the geometric mean over seeds (large markers, open where a seed is
capped), with the law's predictions
of :func:`spt_theory.checks.plateau.predicted_curves` as lines.
"""

from __future__ import annotations

from pathlib import Path

from spt_theory.checks import plateau as law
from spt_theory.figures.context import FigureContext, save
from spt_theory.figures.registry import figure
from spt_theory.figures.style import COLUMN_WIDTH, FONT_SIZE, OKABE_ITO, RECIPE_COLOUR, STYLE, new_figure, plt

ROWS = (("AdamW", ("scratch", "adamw", 1.0), RECIPE_COLOUR["scratch"], "o"),
        ("AdamW, W_Q,W_K init / 10", ("scratch", "adamw", 0.1), OKABE_ITO["orange"], "s"),
        ("SGD (momentum .9, lr .3)", ("scratch", "sgd", 1.0), OKABE_ITO["purple"], "D"),
        ("SPT steps to 95%", ("spt", "adamw", 1.0), RECIPE_COLOUR["spt"], "X"))
LINES = (("adamw", "T8 AdamW: n s(n)", RECIPE_COLOUR["scratch"], "-"),
         ("adamw_small_p3", "P3 (fixed rate)", OKABE_ITO["orange"], ":"),
         ("adamw_small_p3b", "P3b (scale-free)", OKABE_ITO["orange"], "--"),
         ("sgd_at_least", "P4 SGD bound", OKABE_ITO["purple"], ":"),
         ("spt", "T8 SPT: n s_rec(n)", RECIPE_COLOUR["spt"], "-"))


@figure("P1-P5", "plateau law: escape step against n (log-log), per optimiser and init, SPT beside")
def plateau_law(ctx: FigureContext) -> list[Path]:
    """Escape step (first step with test accuracy >= 0.6) of scratch runs and SPT steps to 95%
    against the length n, log-log; lines: the law's predictions (module doc)."""
    summary = law.load(ctx.evidence_root / "plateau" / "plateau_runs.json")
    rms = law.load(ctx.evidence_root / "plateau" / "gradient_rms.json")
    predicted = law.predicted_curves(summary, rms)
    fig, ax = new_figure(COLUMN_WIDTH, 3.0)
    drawn = []
    with plt.rc_context(STYLE):
        for label, (kind, optimiser, scale), colour, marker in ROWS:
            cells = law.cells(summary, kind, optimiser, scale)
            if not cells:
                continue
            for n, cell in cells.items():
                ax.scatter([n] * len(cell["values"]), cell["values"], s=6, color=colour,
                           marker="^" if cell["capped"] else ".", zorder=3)
            means = {n: law.geometric_mean(c["values"]) for n, c in cells.items()}
            for capped in (False, True):
                ns = [n for n, c in cells.items() if c["capped"] == capped]
                if ns:
                    ax.plot(ns, [means[n] for n in ns], marker=marker, ls="none", color=colour, zorder=4,
                            mfc="none" if capped else colour, label=label + (" (capped)" if capped else ""))
            drawn.append({"row": label, "per_seed": {n: c["values"] for n, c in cells.items()},
                          "capped": {n: c["capped"] for n, c in cells.items()}, "geometric_mean": means})
        for key, label, colour, style in LINES:
            if key in predicted:
                line = predicted[key]
                ax.plot(list(line), list(line.values()), ls=style, color=colour, lw=0.9, label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ticker = plt.matplotlib.ticker
        ax.set_xticks(sorted({n for row in drawn for n in row["per_seed"]}))
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        ax.set_xlabel("sequence length n")
        ax.set_ylabel("optimizer steps")
        ax.legend(loc="upper left", fontsize=FONT_SIZE - 2.5, ncol=2)
        ax.set_title("escape: test acc >= 0.6; dots: seeds (^ capped)")
    record = {"figure": "plateau_law", "claims": ["P1", "P2", "P3", "P3b", "P4", "P5"],
              "sources": ["evidence/plateau/plateau_runs.json", "evidence/plateau/gradient_rms.json"], "rows": drawn,
              "predicted": predicted, "criteria": summary["criteria"]}
    return save(ctx, "plateau_law", fig, record)
