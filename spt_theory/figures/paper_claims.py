"""The figures of the paper's claims (E4, E5, E5b, E7, E8-E14, X5b, X6): one family in one module,
one registered function per figure (they share the run helpers below).

Each function takes a :class:`~spt_theory.figures.context.FigureContext` and writes ``NAME.png``,
``NAME.pdf`` and ``NAME.json`` (every number drawn, and the recipe or spec label, seed, config
hash and stage keys of every run used) through :func:`spt_theory.figures.context.save`.  The runs are
the specs of :mod:`spt_theory.walk.paper_runs` and of the recipes, built on the context's data,
budget and model, so at the default context they are the very runs (same cache keys) of
``verify --full`` and ``python -m spt_theory.paper_runs``; a missing run is trained.

  score_gradients    E[dL_sup/dS], E[dL_rec/dS] at init; X6's supervised proximity share in training
  pe_scores          PE-PE score blocks per head at init / scratch / SPT, residual of the Toeplitz fit
  offset_profile     attention share by offset i - j per head: scratch, SPT, finetuned, uniform
  supervised_curves  test / training accuracy, training loss per supervised epoch
  scratch_steps      scratch with more data or more steps vs SPT, per supervised step
  spt_length         finetuned accuracy and band mass at the end of SPT against SPT length
  phase_map          SPT epochs needed and scratch accuracy as p, n, V move one at a time
  paper_checks       final accuracy: frozen attention (E5, E5b), data and steps (E11, E11b), depth (E12), SPT source (X5b)
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from pathlib import Path

import matplotlib
import numpy as np
import torch

from spt_theory.analysis import probes
from spt_theory.analysis.probes import (
    attention_patterns,
    offset_mass,
    pe_score_block,
    toeplitz_fit,
    toeplitz_part,
    uniform_band_mass,
    uniform_pattern,
)
from spt_theory.checks.controls import chance_share, share_trajectory
from spt_theory.claims import records
from spt_theory.figures.context import FigureContext, rounded, save, seeds_label, summary
from spt_theory.figures.registry import figure
from spt_theory.figures.style import (
    COLUMN_WIDTH,
    FONT_SIZE,
    OKABE_ITO,
    PAGE_WIDTH,
    RECIPE_COLOUR,
    STYLE,
    new_figure,
    plt,
)
from spt_theory.theory.lemmas import proximity_directions
from spt_theory.walk import paper_runs
from spt_theory.walk.experiments import Budget, RunResult, RunSpec, initial_model
from spt_theory.walk.paper_runs import median_budget, point_label

GREY = RECIPE_COLOUR["grey"]
DIVERGING = "RdBu_r"
OFFSET_RANGE = 20
"""offset_profile draws offsets i - j in [-20, 20] (or the whole sequence when shorter)."""


def trained(ctx: FigureContext, label: str, build: Callable[[int], RunSpec]) -> tuple[list[RunResult], list[dict]]:
    """``build(seed)`` trained or loaded for every seed of ``ctx``, and each run's provenance."""
    specs = [build(seed) for seed in ctx.seeds]
    return ctx.results(label, specs), [ctx.source(label, spec.seed, spec) for spec in specs]


def _seed_dots(ax, x: float, values: list[float], label: str | None = None) -> None:
    ax.scatter([x] * len(values), values, s=6, color="black", zorder=3, label=label)


def _chance(ax, level: float = 50.0, text: str = "chance") -> None:
    ax.axhline(level, color=GREY, ls="--", lw=0.8, label=text)


def _log_y(ax) -> None:
    """Log y axis with plain tick labels (0.008, not 8 x 10^-3); minor ticks 2, 3, 5 x 10^k are
    labelled only when the axis spans at most about 1.5 decades."""
    ax.set_yscale("log")

    def minor(v: float, _) -> str:
        lo, hi = ax.get_ylim()
        return f"{v:g}" if hi / lo < 30 and round(v / 10 ** math.floor(math.log10(v))) in (2, 3, 5) else ""

    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(minor))


# ----------------------------------------------------------------------------- score gradients
def init_gradients(ctx: FigureContext, seed: int) -> dict[str, torch.Tensor]:
    """Layer-0 E[dL/dS] at init for L_sup and L_rec (15% masking), mean over the first
    ``ctx.probe_size`` test sequences and over heads, shape (n, n)."""
    data = ctx.dataset()
    k = min(ctx.probe_size, len(data.x_test))
    model = initial_model(ctx.spec("init", seed))
    return {objective: probes.score_gradients(model, data.x_test[:k], data.y_test[:k], objective=objective,
                                       mask_id=data.mask_id, generator=torch.Generator().manual_seed(seed)
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
    trajectories = {name: [share_trajectory(r, ctx.cache_dir, x, y, directions) for r in ctx.runs(name)]
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
        _log_y(bottom)
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
                                  "(spt_theory.checks.controls.share_trajectory), over the share of a "
                                  "Gaussian matrix (controls.chance_share): as claim X6",
                          "chance_share": chance, "curves": curves},
              "runs": ctx.sources("init", "scratch", "spt")}
    return save(ctx, "score_gradients", fig, record)


# ----------------------------------------------------------------------------- PE-PE scores
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
        stats = {stage: summary([statistics.fmean(r[stage]) for r in r2.values()]) for stage in ("init", "scratch", "spt")}
        fig.suptitle(f"maps: seed {seed}; Toeplitz R² (mean of heads), mean ± sd over seeds {seeds_label(ctx)}:\n"
                     + ", ".join(f"{k.replace('spt', 'SPT')} {v['mean']:.2f} ± {v['std']:.2f}" for k, v in stats.items()))
    record = {**ctx.header("pe_scores", ["E7"]), "seed_plotted": seed,
              "what": "T_h = (P g) W_Q^h W_K^h^T (P g)^T / sqrt(d_h) (probes.pe_score_block); residual = "
                      "T_h - F_h, F_h the diagonal-mean (Toeplitz) fit (probes.toeplitz_part); R^2 of "
                      "probes.toeplitz_fit",
              "colour_scale_abs_max": scale, "r2_mean_of_heads": stats,
              "r2_per_head": {str(s): v for s, v in r2.items()},
              "matrices_seed_plotted": {stage: rounded(t, 4) for stage, t in blocks.items()},
              "runs": ctx.sources("init", "scratch", "pretrain")}
    return save(ctx, "pe_scores", fig, record)


# ----------------------------------------------------------------------------- offset profile
def offset_shares(model, x: torch.Tensor) -> torch.Tensor:
    """Attention share at offset i - j = -(n-1)..(n-1) per head, (heads, 2n - 1), mean over the
    queries of ``x`` (:func:`spt_theory.analysis.probes.offset_mass` is indexed by j - i, hence the flip)."""
    sums, queries = offset_mass(attention_patterns(model, x)[0])
    return (sums / queries).flip(-1).double()


@figure("E4", "attention share by offset per head: scratch, SPT, finetuned, uniform")
def offset_profile(ctx: FigureContext) -> list[Path]:
    """Attention share by offset i - j (|i - j| <= 20), per head, averaged over the first
    ``ctx.probe_size`` test sequences; lines: mean over seeds of scratch, after SPT (``pretrain``)
    and SPT + finetune (``spt``), shaded min to max over seeds; dotted: uniform attention."""
    data = ctx.dataset()
    k = min(ctx.probe_size, len(data.x_test))
    x = data.x_test[:k]
    n = x.shape[1]
    reach = min(OFFSET_RANGE, n - 1)
    window = slice(n - 1 - reach, n + reach)
    offsets = np.arange(-reach, reach + 1)
    b = ctx.budget
    lines = (("scratch", f"scratch ({b.scratch_epochs} ep)"), ("pretrain", f"after SPT ({b.pretrain_epochs} ep)"),
             ("spt", f"SPT + finetune ({b.finetune_epochs} ep)"))
    colours = {"scratch": RECIPE_COLOUR["scratch"], "pretrain": OKABE_ITO["green"], "spt": RECIPE_COLOUR["spt"]}
    shares = {name: torch.stack([offset_shares(r.model, x)[:, window] for r in ctx.runs(name)])
              for name, _ in lines}  # (seeds, heads, offsets)
    uniform_sums, queries = offset_mass(uniform_pattern(torch.ones(1, n, dtype=torch.bool)))
    uniform = (uniform_sums[0] / queries)[window].double()
    heads = shares["scratch"].shape[1]
    cols = min(heads, 2)
    rows = math.ceil(heads / cols)
    fig, axes = new_figure(COLUMN_WIDTH, 1.35 * rows + 0.9, rows, cols, sharex=True, sharey=True, squeeze=False)
    with plt.rc_context(STYLE):
        for h, ax in enumerate(axes.flat):
            if h >= heads:
                ax.remove()
                continue
            for name, label in lines:
                values = shares[name][:, h].numpy()
                ax.plot(offsets, values.mean(0), color=colours[name], lw=1, label=label)
                ax.fill_between(offsets, values.min(0), values.max(0), color=colours[name], alpha=0.25, lw=0)
            ax.plot(offsets, uniform.numpy(), color=GREY, ls=":", lw=1, label="uniform")
            _log_y(ax)
            ax.set_title(f"head {h + 1}", pad=2)
        for ax in axes[-1]:
            ax.set_xlabel("offset i - j")
        for ax in axes[:, 0]:
            ax.set_ylabel("attention share")
        fig.legend(*axes.flat[0].get_legend_handles_labels(), loc="outside lower center", ncols=2,
                   fontsize=FONT_SIZE - 1)
        fig.suptitle(f"layer 0, mean over {k} test sequences and seeds {seeds_label(ctx)};\n"
                     "shaded: min to max over seeds")
    record = {**ctx.header("offset_profile", ["E4"]), "probe": f"x_test[:{k}]",
              "what": "share of each query's attention on the key at offset i - j, mean over queries "
                      "(probes.offset_mass), layer 0, per head",
              "offsets_i_minus_j": offsets.tolist(), "uniform": rounded(uniform, 6),
              "uniform_band_mass": uniform_band_mass(n),
              "shares": {name: {"mean": rounded(v.mean(0), 6), "min": rounded(v.min(0).values, 6),
                                "max": rounded(v.max(0).values, 6), "per_seed": rounded(v, 6)}
                         for name, v in shares.items()},
              "runs": ctx.sources("scratch", "pretrain", "spt")}
    return save(ctx, "offset_profile", fig, record)


# ----------------------------------------------------------------------------- supervised curves
@figure("E2, E3, E10", "test / train accuracy, train loss per supervised epoch")
def supervised_curves(ctx: FigureContext) -> list[Path]:
    """Test accuracy, training accuracy (first 2000 training sequences) and training loss (mean
    over the epoch's steps) after every supervised epoch: scratch vs SPT then finetune for the
    scratch budget (:data:`spt_theory.walk.paper_runs.FULL_SPT_KEEP`); mean over seeds, shaded min to max."""
    b = ctx.budget
    names = (("scratch", "scratch"), (paper_runs.FULL_SPT_KEEP, f"SPT {b.pretrain_epochs} ep, then finetune"))
    colours = {"scratch": RECIPE_COLOUR["scratch"], paper_runs.FULL_SPT_KEEP: RECIPE_COLOUR["spt"]}
    metrics = (("test_accuracy", "test accuracy (%)", 100.0), ("train_accuracy", "training accuracy (%)", 100.0),
               ("loss", "training loss", 1.0))
    fig, axes = new_figure(COLUMN_WIDTH, 4.6, 3, 1, sharex=True)
    curves = {}
    with plt.rc_context(STYLE):
        for name, label in names:
            histories = [r.history[-1] for r in ctx.runs(name)]
            epochs = [e["epoch"] for e in histories[0]]
            curves[name] = {"label": label, "supervised_epoch": epochs}
            for ax, (key, _, scale) in zip(axes, metrics):
                values = scale * np.array([[e[key] for e in h] for h in histories])
                ax.plot(epochs, values.mean(0), marker="o", color=colours[name], label=label)
                ax.fill_between(epochs, values.min(0), values.max(0), color=colours[name], alpha=0.25, lw=0)
                curves[name][key] = {"mean": values.mean(0).tolist(), "min": values.min(0).tolist(),
                                     "max": values.max(0).tolist(), "per_seed": values.tolist()}
        for ax, (key, ylabel, _) in zip(axes, metrics):
            ax.set_ylabel(ylabel)
            if key == "loss":
                _chance(ax, math.log(2), "chance (ln 2)")
            else:
                _chance(ax)
                ax.set_ylim(40, 102)
        axes[0].legend(loc="center right", fontsize=FONT_SIZE - 1)
        axes[2].text(0.01, math.log(2), "ln 2", color=GREY, ha="left", va="bottom",
                     transform=axes[2].get_yaxis_transform())
        axes[-1].set_xlabel("supervised epoch")
        axes[-1].xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        axes[0].set_title(f"mean over seeds {seeds_label(ctx)} (shaded: min to max)")
    record = {**ctx.header("supervised_curves", ["E2", "E3", "E10"]),
              "what": "per supervised epoch: test accuracy (whole test set), training accuracy on the "
                      "first 2000 training sequences, training loss = mean over the epoch's steps",
              "curves": curves, "runs": ctx.sources("scratch", paper_runs.FULL_SPT_KEEP)}
    return save(ctx, "supervised_curves", fig, record)


# ----------------------------------------------------------------------------- scratch: data vs steps
def step_curve(results: list[RunResult], key: str, scale: float, budget: Budget) -> dict:
    """Per epoch of the runs' last stage: the supervised optimizer steps at its end (``step``) and
    ``scale`` times ``key``, mean / min / max over the runs and per run."""
    per_epoch = paper_runs.steps_per_epoch(results[0].spec.data, budget)
    values = scale * np.array([[e[key] for e in r.history[-1]] for r in results])
    return {"step": [e["epoch"] * per_epoch for e in results[0].history[-1]], "mean": values.mean(0).tolist(),
            "min": values.min(0).tolist(), "max": values.max(0).tolist(), "per_seed": values.tolist()}


@figure("E11, E11b, E10", "scratch with more data or more steps vs SPT, per supervised step")
def scratch_steps(ctx: FigureContext) -> list[Path]:
    """Test accuracy (top) and band mass (bottom: attention share within |i-j| <= 2, dotted: its
    uniform value) after every epoch against the supervised optimizer steps so far (log axis):
    scratch on the 1x data for the E11b budget (the largest data scale times the scratch epochs),
    scratch with more labelled data for the scratch epochs (E11), and SPT then finetune for the
    scratch budget, whose SPT steps (unsupervised) are not counted.  Mean over seeds, shaded min to max."""
    d, b, m = ctx.data, ctx.budget, ctx.model
    largest = ctx.data_scales[-1]
    lines = [(f"1x data, {largest * b.scratch_epochs} ep (E11b)", RECIPE_COLOUR["scratch"], "-",
              lambda s: paper_runs.step_matched_scratch_spec(s, d, b, largest, **m)),
             *((f"{k}x data, {b.scratch_epochs} ep (E11)", RECIPE_COLOUR["frozen"], ":" if k < largest else "--",
                lambda s, k=k: paper_runs.scaled_scratch_spec(k, s, d, b, **m)) for k in ctx.data_scales),
             (f"SPT {b.pretrain_epochs} ep, then finetune", RECIPE_COLOUR["spt"], "-",
              lambda s: ctx.spec(paper_runs.FULL_SPT_KEEP, s))]
    fig, axes = new_figure(COLUMN_WIDTH, 3.8, 2, 1, sharex=True)
    curves, sources = [], []
    with plt.rc_context(STYLE):
        for label, colour, style, build in lines:
            results, runs = trained(ctx, label, build)
            sources += runs
            curve = {"label": label}
            for ax, (key, scale) in zip(axes, (("test_accuracy", 100.0), ("band_mass", 1.0))):
                c = curve[key] = step_curve(results, key, scale, b)
                ax.plot(c["step"], c["mean"], ls=style, color=colour, label=label, lw=1.2)
                ax.fill_between(c["step"], c["min"], c["max"], color=colour, alpha=0.2, lw=0)
            curves.append(curve)
        _chance(axes[0])
        axes[0].set_ylim(40, 102)
        axes[0].set_ylabel("test accuracy (%)")
        axes[1].axhline(uniform_band_mass(d.length), color=GREY, ls=":", lw=0.8)
        axes[1].set_ylabel("band mass |i-j| <= 2")
        axes[1].set_xscale("log")
        axes[1].set_xlabel("supervised optimizer steps")
        axes[0].legend(loc="upper left", fontsize=FONT_SIZE - 2)
        axes[0].set_title(f"mean over seeds {seeds_label(ctx)} (shaded: min to max)")
    record = {**ctx.header("scratch_steps", ["E11", "E11b", "E10"]), "curves": curves,
              "uniform_band_mass": uniform_band_mass(d.length), "runs": sources}
    return save(ctx, "scratch_steps", fig, record)


# ----------------------------------------------------------------------------- SPT length
@figure("E9", "finetuned accuracy and band mass against SPT length (log axis)")
def spt_length(ctx: FigureContext) -> list[Path]:
    """Finetuned test accuracy (``finetune_epochs`` supervised epochs) and band mass at the end of
    SPT against the SPT length ``ctx.spt_lengths`` (epochs, run in optimizer steps by
    :func:`spt_theory.walk.paper_runs.spt_length_spec`), log axis; dots: seeds, line: mean."""
    per_epoch = paper_runs.steps_per_epoch(ctx.data, ctx.budget)
    steps = tuple(dict.fromkeys(paper_runs.spt_length_steps(ctx.data, ctx.budget, ctx.spt_lengths)))
    points, sources = [], []
    for k in steps:
        results, runs = trained(ctx, f"spt_length_{k}_steps", lambda seed, k=k: paper_runs.spt_length_spec(
            k, seed, ctx.data, ctx.budget, **ctx.model))
        sources += runs
        points.append({"spt_steps": k, "spt_epochs": k / per_epoch,
                       "test_accuracy_percent": summary([100 * r.final["test_accuracy"] for r in results]),
                       "band_mass_after_spt": summary([r.history[0][-1]["band_mass"] for r in results])})
    x = np.array([p["spt_epochs"] for p in points])
    fig, (top, bottom) = new_figure(COLUMN_WIDTH, 3.8, 2, 1, sharex=True)
    with plt.rc_context(STYLE):
        for ax, key, colour in ((top, "test_accuracy_percent", RECIPE_COLOUR["spt"]),
                                (bottom, "band_mass_after_spt", OKABE_ITO["green"])):
            ax.plot(x, [p[key]["mean"] for p in points], marker="o", color=colour, label="mean")
            for xi, p in zip(x, points):
                _seed_dots(ax, xi, p[key]["per_seed"], "single seed" if xi == x[0] else None)
        _chance(top)
        top.axhline(100 * paper_runs.SOLVED, color="black", ls=":", lw=0.8, label=f"{100 * paper_runs.SOLVED:g}%")
        top.set_ylim(40, 102)
        top.set_ylabel(f"test accuracy (%) after\n{ctx.budget.finetune_epochs} finetune epochs")
        top.legend(loc="upper left", fontsize=FONT_SIZE - 1)
        top.set_title(f"seeds {seeds_label(ctx)}; SPT in optimizer steps ({per_epoch} per epoch)")
        uniform = uniform_band_mass(ctx.data.length)
        bottom.axhline(uniform, color=GREY, ls=":", lw=1, label=f"uniform ({uniform:.3f})")
        bottom.set_ylim(0, None)
        bottom.set_ylabel("band mass at end of SPT\n(attention within |i-j|≤2)")
        bottom.legend(loc="upper left", fontsize=FONT_SIZE - 1)
        bottom.set_xscale("log", base=2)
        bottom.set_xticks([2.0 ** e for e in range(math.floor(math.log2(x.min())), math.ceil(math.log2(x.max())) + 1)])
        bottom.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        bottom.set_xlim(x.min() / 1.3, x.max() * 1.3)
        bottom.set_xlabel("SPT length (epochs, log scale)")
    record = {**ctx.header("spt_length", ["E9"]), "steps_per_epoch": per_epoch,
              "finetune_epochs": ctx.budget.finetune_epochs, "solved_line": paper_runs.SOLVED,
              "uniform_band_mass": uniform, "points": points, "runs": sources}
    return save(ctx, "spt_length", fig, record)


# ----------------------------------------------------------------------------- phase map
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
            xs = np.arange(len(line))
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
                _seed_dots(bottom, xi, [100 * a for a in acc["per_seed"]])
            ticks = [f"{getattr(w, field_name):g}" + ("*" if w == ctx.data else "") for w in line]
            for ax in (top, bottom):
                ax.set_xticks(xs, ticks)
            top.set_title(f"{title} moved")
            bottom.set_xlabel(f"{symbol} (* = default)")
            _chance(bottom)
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


# ----------------------------------------------------------------------------- paper checks
PAPER_CHECK_CLAIMS = (("E5", "E5b"), ("E11", "E11b"), ("E12",), ("X5b",))
"""The claims of each panel of :func:`paper_checks`, in the order of :func:`paper_check_groups`."""


def paper_check_groups(ctx: FigureContext) -> list[tuple[str, list[tuple[str, str, Callable[[int], RunSpec]]]]]:
    """(panel title, [(bar label, colour, spec of a seed)]) of :func:`paper_checks`."""
    d, b, m = ctx.data, ctx.budget, ctx.model
    scratch, spt, frozen = RECIPE_COLOUR["scratch"], RECIPE_COLOUR["spt"], RECIPE_COLOUR["frozen"]
    return [
        ("E5 last token | E5b ALiBi", [
            ("last\ntrained", scratch, lambda s: paper_runs.last_token_spec("scratch", s, d, b, **m)),
            ("last\nfrozen", frozen, lambda s: paper_runs.last_token_spec("frozen", s, d, b, **m)),
            ("ALiBi\ntrained", scratch, lambda s: paper_runs.alibi_spec("scratch", s, d, b, **m)),
            ("ALiBi\nfrozen", frozen, lambda s: paper_runs.alibi_spec("frozen", s, d, b, **m))]),
        ("E11 / E11b scratch", [
            (f"1x\n({d.n_train})", scratch, lambda s: ctx.spec("scratch", s)),
            *((f"{k}x", scratch, lambda s, k=k: paper_runs.scaled_scratch_spec(k, s, d, b, **m))
              for k in ctx.data_scales),
            (f"1x,\n{ctx.data_scales[-1] * b.scratch_epochs} ep", scratch,
             lambda s: paper_runs.step_matched_scratch_spec(s, d, b, ctx.data_scales[-1], **m))]),
        ("E12 layers (L): scratch, SPT", [
            (f"{layers}L\n{'SPT' if name == 'spt' else 'scr.'}", spt if name == "spt" else scratch,
             lambda s, n=name, layers=layers: paper_runs.depth_spec(n, layers, s, d, b, **m))
            for layers in (1, *ctx.depths) for name in ("scratch", "spt")]),
        ("X5b SPT data", [
            ("walk", spt, lambda s: ctx.spec("spt", s)),
            ("i.i.d.\ntokens", frozen, lambda s: paper_runs.negative_spec("uniform", s, d, b, **m)),
            ("shuffled\nwalk", frozen, lambda s: paper_runs.negative_spec("shuffled", s, d, b, **m))]),
    ]


@figure("E5, E5b, E11, E11b, E12, X5b", "final accuracy: frozen attention, data scale, depth, SPT source")
def paper_checks(ctx: FigureContext) -> list[Path]:
    """Final test accuracy (bars: mean ± sd over seeds, dots: seeds) of E5 / E5b (W_Q, W_K trained
    vs frozen at init, with the last-token readout / with ALiBi and the mean-pooled readout), E11
    (scratch with 1x and more labelled sequences, same epochs), E11b (1x data for as many steps as
    the largest of them), E12 (scratch vs SPT + finetune at 1 and more layers) and X5b (SPT on the
    walk, on i.i.d. tokens, on the walk with positions shuffled, each then finetuned)."""
    b = ctx.budget
    groups = paper_check_groups(ctx)
    fig, axes = new_figure(COLUMN_WIDTH, 4.2, 2, 2, sharey=True, squeeze=False)
    panels, sources = [], []
    with plt.rc_context(STYLE):
        for ax, (title, bars), claim_ids in zip(axes.flat, groups, PAPER_CHECK_CLAIMS):
            rows = []
            for i, (label, colour, build) in enumerate(bars):
                results, runs = trained(ctx, f"{title}: {label}".replace("\n", " "), build)
                sources += runs
                stats = summary([100 * r.final["test_accuracy"] for r in results])
                ax.bar(i, stats["mean"], 0.65, yerr=stats["std"] if len(ctx.seeds) > 1 else None, color=colour,
                       capsize=2, error_kw={"lw": 0.8})
                _seed_dots(ax, i, stats["per_seed"])
                rows.append({"label": label.replace("\n", " "), "test_accuracy_percent": stats,
                             "supervised_epochs": results[0].spec.stages[-1].epochs,
                             "config_hashes": [r["config_hash"] for r in runs]})
            _chance(ax)
            ax.set_xticks(range(len(bars)), [label for label, _, _ in bars], fontsize=FONT_SIZE - 1)
            verdicts = records.on_record(claim_ids)
            ax.set_title(f"{title}\n{verdicts}", pad=3, fontsize=FONT_SIZE - 1)
            panels.append({"panel": title, "claims": list(claim_ids), "verdicts_on_record": verdicts, "bars": rows})
        axes[0, 0].set_ylim(0, 105)
        for ax in axes[:, 0]:
            ax.set_ylabel("final test accuracy (%)")
        fig.suptitle(f"mean ± sd over seeds {seeds_label(ctx)} (dots: seeds);\nscratch {b.scratch_epochs} ep, "
                     f"SPT {b.pretrain_epochs} + finetune {b.finetune_epochs} ep")
    record = {**ctx.header("paper_checks", ["E5", "E5b", "E11", "E11b", "E12", "X5b"]), "panels": panels, "runs": sources}
    return save(ctx, "paper_checks", fig, record)
