"""Figure ``plateau_law`` (P1-P7, T9): escape step against n, log-log, from the committed plateau
grid, the n = 400 prediction, and the exact force against n.

Reads the committed ``evidence/plateau/plateau_runs.json`` and ``gradient_rms.json`` (written by
``python -m spt_theory.plateau``, promoted with ``--promote``) and ``prediction_n400.json``
(written by ``python -m spt_theory.checks.plateau_prediction``), no training.

Left panel: per grid row (AdamW at the default init and at init / 10, SGD, SPT's steps to 95%) the
seeds (small dots; a capped run as an upward triangle at its cap, a lower bound) and the geometric
mean over seeds (large markers, open where a seed is capped), with the law's predictions of
:func:`spt_theory.checks.plateau_table.predicted_curves` as lines; at n = 400 the pre-registered
single-seed intervals of P6 (AdamW) and P7 (SPT) as bands with their point predictions and the
alternatives (small x), and the runs at n = 400 (none yet: the panel says so).

Right panel: sigma_1 of the exact first-order label force (T9, :mod:`spt_theory.theory.force`) of
the design model at init against n, per init seed, as stored in the prediction's ``inputs`` (computed
by ``spt_theory.theory.force``; ``tests/checks/test_plateau_prediction.py`` recomputes every value), with the
fitted exponent (``force.loglog_fit``, mean and sd over seeds) and T8's beta_n for comparison.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import matplotlib

from spt_theory.checks import plateau_extrapolation, plateau_grid, plateau_table
from spt_theory.checks import plateau_prediction as pp
from spt_theory.checks.force import P
from spt_theory.figures.context import FigureContext, held_to_record, save
from spt_theory.figures.registry import figure
from spt_theory.figures.style import FONT_SIZE, OKABE_ITO, PAGE_WIDTH, RECIPE_COLOUR, STYLE, new_figure
from spt_theory.theory import force
from spt_theory.theory.per_token import pair_coupling_bound
from spt_theory.util.plotting import plt

ROWS = (("AdamW", ("scratch", "adamw", 1.0), RECIPE_COLOUR["scratch"], "o"),
        ("AdamW, W_Q,W_K init / 10", ("scratch", "adamw", 0.1), OKABE_ITO["orange"], "s"),
        ("SGD (momentum .9, lr .3)", ("scratch", "sgd", 1.0), OKABE_ITO["purple"], "D"),
        ("SPT steps to 95%", ("spt", "adamw", 1.0), RECIPE_COLOUR["spt"], "X"))
LINES = (("adamw", "T8 AdamW: n s(n)", RECIPE_COLOUR["scratch"], "-"),
         ("adamw_small_p3", "P3 (fixed rate)", OKABE_ITO["orange"], ":"),
         ("adamw_small_p3b", "P3b (scale-free)", OKABE_ITO["orange"], "--"),
         ("sgd_at_least", "P4 SGD bound", OKABE_ITO["purple"], ":"),
         ("spt", "T8 SPT: n s_rec(n)", RECIPE_COLOUR["spt"], "-"))


BANDS = (("adamw_escape", "scratch", "P6: AdamW at n = 400", RECIPE_COLOUR["scratch"]),
         ("spt_steps_to_95", "spt", "P7: SPT at n = 400", RECIPE_COLOUR["spt"]))


def _force_panel(ax, tree: dict) -> dict:
    """sigma_1(n) per seed with its log-log fit, and beta_n scaled to the seeds' mean at n = 25."""
    lengths = sorted(int(n) for n in next(iter(tree["inputs"]["sigma_1"].values())))
    per_seed, fits = {}, []
    for i, (seed, by_n) in enumerate(sorted(tree["inputs"]["sigma_1"].items())):
        values = [by_n[str(n)] for n in lengths]
        fits.append(force.loglog_fit(lengths, values))
        per_seed[seed] = values
        ax.plot(lengths, values, marker=".", lw=0.6, color=OKABE_ITO["blue"], alpha=0.35 + 0.2 * i,
                label=f"seed {seed}: n^{fits[-1]:.2f}")
    alpha, sd = statistics.fmean(fits), statistics.stdev(fits)
    mean = [plateau_grid.geometric_mean([v[i] for v in per_seed.values()]) for i in range(len(lengths))]
    p = P
    beta = [pair_coupling_bound(n, p) for n in lengths]
    beta_scaled = [mean[0] * b / beta[0] for b in beta]
    beta_exponent = force.loglog_fit(lengths, beta)
    ax.plot(lengths, beta_scaled, ls="--", color="0.4", lw=0.9, label=f"T8 bound beta_n: n^{beta_exponent:.2f}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("sequence length n")
    ax.set_ylabel("sigma_1 of the label force at init")
    ax.set_title(f"T9 exact force: n^({alpha:.2f} ± {sd:.2f})")
    ax.legend(loc="lower left", fontsize=FONT_SIZE - 2.5)
    return {"lengths": lengths, "sigma_1_per_seed": per_seed, "exponent_per_seed": fits, "exponent": alpha,
            "exponent_seed_sd": sd, "beta_n_exponent": beta_exponent, "beta_n_scaled": beta_scaled}


def _prediction_band(ax, tree: dict, summary: dict) -> list[dict]:
    """At n = 400: each prediction's single-seed interval (a band), its point, its alternatives, and
    the runs at n = 400 (P6, P7's evidence); 'no run yet' where there is none."""
    target = tree["target_length"]
    drawn: list[dict[str, Any]] = []
    for i, (key, kind, label, colour) in enumerate(BANDS):
        pred = tree["predictions"][key]
        lo, hi = pred["interval"]
        x = target * (0.94 + 0.12 * i)
        ax.fill_between([x * 0.96, x * 1.04], lo, hi, color=colour, alpha=0.25, lw=0, label=label + " (interval)")
        ax.plot([x], [pred["steps"]], marker="_", ms=8, color=colour)
        for alt in pred["alternatives"]:
            ax.plot([x], [alt["steps"]], marker="x", ms=3.5, color="0.3" if alt["excluded"] else "red", ls="none")
        runs = plateau_extrapolation.runs_at(summary, kind, target)
        values = [r["value"] for r in runs.values()]
        if values:
            ax.scatter([x] * len(values), values, s=10, color=colour, zorder=5,
                       marker="^" if any(r["capped"] for r in runs.values()) else "o")
        drawn.append({"prediction": key, "steps": pred["steps"], "interval": [lo, hi],
                      "alternatives": pred["alternatives"], "measured": {str(s): r["value"] for s, r in runs.items()}})
    if not any(d["measured"] for d in drawn):
        ax.annotate(f"n = {target}: no run yet", (target, tree["predictions"]["spt_steps_to_95"]["interval"][0]),
                    xytext=(0, -14), textcoords="offset points", ha="center", fontsize=FONT_SIZE - 2.5)
    return drawn


@figure("P1-P7, T9", "plateau law: escape step against n (log-log), per optimiser and init, SPT beside; "
                      "the n = 400 prediction bands; the exact force against n")
def plateau_law(ctx: FigureContext) -> list[Path]:
    """Escape step (first step with test accuracy >= 0.6) of scratch runs and SPT steps to 95%
    against the length n, log-log; lines: the law's predictions (module doc)."""
    runs_path, rms_path, tree_path = (ctx.evidence_root / "plateau" / name
                                      for name in ("plateau_runs.json", "gradient_rms.json", pp.NAME))
    summary = plateau_grid.load(runs_path, ctx.model)
    rms = plateau_grid.load(rms_path, ctx.model)
    tree = pp.load(tree_path, ctx.model)
    held_to_record(ctx, runs_path, rms_path, tree_path)
    predicted = plateau_table.predicted_curves(summary, rms)
    fig, (ax, ax_force) = new_figure(PAGE_WIDTH, 3.2, 1, 2, width_ratios=[1.35, 1])
    drawn: list[dict[str, Any]] = []
    with plt.rc_context(STYLE):
        bands = _prediction_band(ax, tree, summary)
        force_drawn = _force_panel(ax_force, tree)
        for label, (kind, optimiser, scale), colour, marker in ROWS:
            cells = plateau_grid.cells(summary, kind, optimiser, scale)
            if not cells:
                continue
            for n, cell in cells.items():
                ax.scatter([n] * len(cell["values"]), cell["values"], s=6, color=colour,
                           marker="^" if cell["capped"] else ".", zorder=3)
            means = {n: plateau_grid.geometric_mean(c["values"]) for n, c in cells.items()}
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
        ticker = matplotlib.ticker
        ax.set_xticks(sorted({n for row in drawn for n in row["per_seed"]} | {tree["target_length"]}))
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        ax.set_xlabel("sequence length n")
        ax.set_ylabel("optimizer steps")
        ax.legend(loc="upper left", fontsize=FONT_SIZE - 2.5, ncol=2)
        ax.set_title("escape: test acc >= 0.6; dots: seeds (^ capped); x: alternatives (red: not excluded)",
                     fontsize=FONT_SIZE - 1)
        for axis in (ax_force,):
            axis.set_xticks(force_drawn["lengths"])
            axis.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            axis.xaxis.set_minor_formatter(ticker.NullFormatter())
    record = {"figure": "plateau_law", "claims": ["P1", "P2", "P3", "P3b", "P4", "P5", "P6", "P7", "T9"],
              "sources": ["evidence/plateau/plateau_runs.json", "evidence/plateau/gradient_rms.json",
                          "evidence/plateau/prediction_n400.json"], "rows": drawn,
              "predicted": predicted, "criteria": summary["criteria"], "n400": bands, "exact_force": force_drawn}
    return save(ctx, "plateau_law", fig, record)
