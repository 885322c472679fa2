"""``python -m spt_theory.figures``: regenerate the figures of spt-theory into ``figures/``.

Every figure is drawn from runs trained by :func:`spt_theory.experiments.run` (the same recipes,
data and cache as ``python -m spt_theory.verify``): a run whose config hash is already in the
cache is only reloaded, a missing one is trained (with a progress bar).  Each figure is written as
``NAME.png`` (300 dpi) and ``NAME.pdf``, next to ``NAME.json`` holding every plotted number, the
seeds and the config hash and stage keys of every run it used.  Files are written atomically.

Figures (claims they support in brackets):

  attention_maps     head-averaged attention of one test sequence: init, scratch, SPT, finetuned (E4)
  training_curves    band mass and test accuracy per epoch: scratch vs SPT then finetune (E2-E4)
  gradient_blindness proximity share of the score gradients at init; T3 control off uniform (T3, T5, E8)
  pe_toeplitz        PE-PE scores as a function of i - j before and after SPT, Toeplitz R^2 (E7)
  ablations          final test accuracy: scratch, SPT, frozen, hybrid inits, controls (E2-E6, X1-X5)
  pretrain_sweep     finetuned accuracy and band mass against SPT epochs (E9)
  lra_table          LRA results table from the runner's result JSONs (skipped when there are none)

Examples::

    python -m spt_theory.figures                         # all figures, seeds 0 1 2, cache ./runs
    python -m spt_theory.figures --only pe_toeplitz ablations
    python -m spt_theory.figures --fresh                 # retrain everything into a new cache
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from matplotlib.colors import LogNorm  # noqa: E402

from spt_theory.cpu import set_intra_op_threads  # noqa: E402
from spt_theory.cache import config_hash  # noqa: E402
from spt_theory.experiments import (Budget, RunResult, RunSpec, WalkData, initial_model, recipe, run,  # noqa: E402
                                    control_recipe, stage_cache, stage_key, walk_metrics)
from spt_theory.io import InputError, StorageError, atomic_write, write_json  # noqa: E402
from spt_theory.probes import (attention_patterns, band_mass, diagonal_profile,  # noqa: E402
                               gradient_proximity_shares, pe_score_block, toeplitz_fit,
                               uniform_band_mass)
from spt_theory.training import Dataset  # noqa: E402

# ----------------------------------------------------------------------------- style
OKABE_ITO = {"black": "#000000", "orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73",
             "yellow": "#F0E442", "blue": "#0072B2", "vermillion": "#D55E00", "purple": "#CC79A7"}
"""Okabe & Ito's colour-blind-safe palette."""
PALETTE = [OKABE_ITO[k] for k in ("blue", "orange", "green", "vermillion", "purple", "sky", "yellow", "black")]
RECIPE_COLOUR = {"scratch": OKABE_ITO["vermillion"], "spt": OKABE_ITO["blue"], "frozen": OKABE_ITO["orange"],
                 "hybrid_qk": OKABE_ITO["green"], "hybrid_qk_vo": OKABE_ITO["sky"],
                 "hybrid_mlp": OKABE_ITO["purple"], "reconstruction": OKABE_ITO["blue"],
                 "supervised": OKABE_ITO["vermillion"], "grey": "#7f7f7f"}
COLUMN_WIDTH = 3.5  # inches: one column of a two-column paper
PAGE_WIDTH = 7.0
FONT_SIZE = 8
STYLE = {
    "font.size": FONT_SIZE, "axes.titlesize": FONT_SIZE, "axes.labelsize": FONT_SIZE,
    "xtick.labelsize": FONT_SIZE, "ytick.labelsize": FONT_SIZE, "legend.fontsize": FONT_SIZE,
    "figure.titlesize": FONT_SIZE, "legend.frameon": False, "axes.spines.top": False,
    "axes.spines.right": False, "axes.prop_cycle": matplotlib.cycler(color=PALETTE),
    "lines.linewidth": 1.2, "lines.markersize": 3.5, "savefig.dpi": 300, "pdf.fonttype": 42,
    "image.cmap": "viridis", "axes.linewidth": 0.6, "xtick.major.width": 0.6, "ytick.major.width": 0.6,
}

# defaults of the command line; tests monkeypatch these to tiny sizes
DEFAULT_DATA = WalkData()
DEFAULT_BUDGET = Budget()
DEFAULT_MODEL: dict = {}
DEFAULT_SWEEP = (1, 2, 4, 8)
DEFAULT_T3_COUNT = 16
T3_EPS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)  # the grid of the T3 check's control (a)
LRA_RESULTS = Path("runs/lra/results")


class FigureSkipped(Exception):
    """A figure whose inputs do not exist (e.g. no LRA results): reported, not an error."""


# ----------------------------------------------------------------------------- runs
@dataclass
class FigureContext:
    """Where figures read their runs and write their files; runs are memoised per (recipe, seed)."""

    data: WalkData = DEFAULT_DATA
    budget: Budget = DEFAULT_BUDGET
    model: dict = field(default_factory=dict)
    seeds: tuple[int, ...] = (0, 1, 2)
    cache_dir: Path = Path("runs")
    out: Path = Path("figures")
    progress: bool = True
    sweep: tuple[int, ...] = DEFAULT_SWEEP
    t3_count: int = DEFAULT_T3_COUNT
    lra_results: Path = LRA_RESULTS
    probe_size: int = 256
    _runs: dict = field(default_factory=dict, repr=False)
    _dataset: Dataset | None = field(default=None, repr=False)

    def dataset(self) -> Dataset:
        if self._dataset is None:
            self._dataset = self.data.build()
        return self._dataset

    def spec(self, name: str, seed: int) -> RunSpec:
        return recipe(name, self.data, seed, self.budget, **self.model)

    def result(self, name: str, seed: int, spec: RunSpec | None = None) -> RunResult:
        """One run, trained or loaded from the cache (said on stdout when it has to train)."""
        key = (name, seed)
        if key not in self._runs:
            spec = spec or self.spec(name, seed)
            missing = [k for k, s in enumerate(spec.stages)
                       if s.epochs > 0 and not stage_cache(spec, k, self.cache_dir).has(s.epochs)]
            if missing:
                print(f"  training {name} seed {seed} (stages {missing} not cached in {self.cache_dir})",
                      flush=True)
            self._runs[key] = run(spec, self.cache_dir, progress=self.progress, data=self.dataset())
        return self._runs[key]

    def runs(self, name: str) -> list[RunResult]:
        return [self.result(name, seed) for seed in self.seeds]

    def source(self, name: str, seed: int, spec: RunSpec | None = None) -> dict:
        """Provenance of a run: recipe, seed, config hash of the full spec, cache key of each stage."""
        spec = spec or self.spec(name, seed)
        return {"recipe": name, "seed": seed, "config_hash": config_hash(spec),
                "stage_keys": [stage_key(spec, k) for k in range(len(spec.stages))],
                "stage_epochs": [s.epochs for s in spec.stages]}

    def sources(self, *names: str) -> list[dict]:
        return [self.source(name, seed) for name in names for seed in self.seeds]

    def init_metrics(self, seed: int) -> dict:
        """Test accuracy, band mass and attention distance of the model at init (epoch 0)."""
        key = ("init-metrics", seed)
        if key not in self._runs:
            self._runs[key] = walk_metrics(self.dataset())(initial_model(self.spec("scratch", seed)))
        return self._runs[key]

    def header(self, figure: str, claims: list[str]) -> dict:
        return {"figure": figure, "claims": claims, "seeds": list(self.seeds),
                "data": dataclasses.asdict(self.data), "budget": dataclasses.asdict(self.budget),
                "model_overrides": dict(self.model), "cache_dir": str(self.cache_dir),
                "torch": str(torch.__version__), "matplotlib": matplotlib.__version__}


def summary(values: list[float]) -> dict:
    """Per-seed values, mean, sample standard deviation (0 for one seed), min and max.

    NaN values (a probe undefined on some seed) are kept in ``per_seed`` and left out of the
    statistics; all NaN gives NaN statistics.
    """
    values = [float(v) for v in values]
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return {"per_seed": values, "mean": math.nan, "std": math.nan, "min": math.nan, "max": math.nan}
    return {"per_seed": values, "mean": statistics.fmean(finite),
            "std": statistics.stdev(finite) if len(finite) > 1 else 0.0,
            "min": min(finite), "max": max(finite)}


def _seeds(ctx: FigureContext) -> str:
    return ", ".join(str(s) for s in ctx.seeds)


def save(ctx: FigureContext, name: str, fig, record: dict) -> list[Path]:
    """Write NAME.png, NAME.pdf and NAME.json into ``ctx.out`` atomically."""
    paths = [ctx.out / f"{name}.png", ctx.out / f"{name}.pdf"]
    atomic_write(paths[0], lambda tmp: fig.savefig(tmp, format="png", dpi=300,
                                                   metadata={"Software": None}))
    atomic_write(paths[1], lambda tmp: fig.savefig(tmp, format="pdf",
                                                   metadata={"CreationDate": None, "Creator": None}))
    plt.close(fig)
    paths.append(write_json(ctx.out / f"{name}.json", record))
    return paths


def _figure(width: float, height: float, nrows: int = 1, ncols: int = 1, **kw):
    with plt.rc_context(STYLE):
        return plt.subplots(nrows, ncols, figsize=(width, height), layout="constrained", **kw)


def _rounded(x, digits: int = 6):
    if isinstance(x, torch.Tensor):
        x = x.detach().double().cpu().numpy()
    if isinstance(x, np.ndarray):
        return np.round(x, digits).tolist()
    return x


# ----------------------------------------------------------------------------- 1 attention maps
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
    for key, title, name in stages:
        model = initial_model(ctx.spec("scratch", seed)) if name is None else ctx.result(name, seed).model
        pattern = attention_patterns(model, x)[0][0]  # (heads, n, n)
        mean = pattern.mean(0)
        acc = ctx.init_metrics(seed)["test_accuracy"] if name is None else ctx.result(name, seed).final["test_accuracy"]
        maps.append(mean)
        record_panels.append({"panel": key, "band_mass_this_sequence": band_mass(pattern),
                              "band_mass_per_head": [band_mass(pattern[h]) for h in range(len(pattern))],
                              "test_accuracy_of_model": acc,
                              "source": ctx.source("scratch" if name is None else name, seed),
                              "attention_head_mean": _rounded(mean, 6)})
    n = maps[0].shape[-1]
    vmax = max(float(m.max()) for m in maps)
    vmin = min(1e-3, 0.1 / n)
    fig, axes = _figure(COLUMN_WIDTH, 3.75, 2, 2, sharex=True, sharey=True)
    with plt.rc_context(STYLE):
        for ax, mean, (key, title, _), panel in zip(axes.flat, maps, stages, record_panels):
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


# ----------------------------------------------------------------------------- 2 training curves
def _curves(ctx: FigureContext) -> dict:
    """Per-seed epoch curves: x (cumulative epochs, 0 = init), band mass, test accuracy."""
    out = {}
    for name in ("scratch", "spt"):
        per_seed = []
        for seed in ctx.seeds:
            result = ctx.result(name, seed)
            records = [ctx.init_metrics(seed)] + [r for stage in result.history for r in stage]
            per_seed.append({"seed": seed, "epoch": list(range(len(records))),
                             "band_mass": [r["band_mass"] for r in records],
                             "test_accuracy": [r["test_accuracy"] for r in records]})
        out[name] = per_seed
    return out


def training_curves(ctx: FigureContext) -> list[Path]:
    curves = _curves(ctx)
    n = ctx.data.length
    boundary = ctx.budget.pretrain_epochs
    labels = {"scratch": "supervised from scratch", "spt": "SPT, then finetune"}
    fig, (top, bottom) = _figure(COLUMN_WIDTH, 3.6, 2, 1, sharex=True)
    plotted = {}
    with plt.rc_context(STYLE):
        for name, per_seed in curves.items():
            x = np.array(per_seed[0]["epoch"])
            plotted[name] = {"epoch": x.tolist()}
            for ax, metric, scale in ((top, "band_mass", 1.0), (bottom, "test_accuracy", 100.0)):
                values = scale * np.array([s[metric] for s in per_seed])
                mean = values.mean(0)
                ax.plot(x, mean, marker="o", color=RECIPE_COLOUR[name], label=labels[name])
                ax.fill_between(x, values.min(0), values.max(0), color=RECIPE_COLOUR[name], alpha=0.25, lw=0)
                plotted[name][metric] = {"mean": mean.tolist(), "min": values.min(0).tolist(),
                                         "max": values.max(0).tolist(), "per_seed": values.tolist()}
        uniform = uniform_band_mass(n)
        top.axhline(uniform, color=RECIPE_COLOUR["grey"], ls=":", lw=1)
        last = max(len(per_seed[0]["epoch"]) for per_seed in curves.values()) - 1
        top.text(last, uniform * 1.15 + 0.01, f"uniform ({uniform:.3f})", ha="right", va="bottom",
                 color=RECIPE_COLOUR["grey"])
        bottom.axhline(50, color=RECIPE_COLOUR["grey"], ls=":", lw=1, label="chance (50%)")
        for ax in (top, bottom):
            ax.axvline(boundary, color="black", ls="--", lw=0.8)
        top.text(boundary - 0.15, 0.97, "SPT", transform=top.get_xaxis_transform(), ha="right", va="top")
        top.text(boundary + 0.15, 0.97, "finetune", transform=top.get_xaxis_transform(), ha="left", va="top")
        top.set_ylabel("band mass\n(attention within |i-j|≤2)")
        top.set_ylim(0, None)
        bottom.set_ylabel("test accuracy (%)")
        bottom.set_ylim(40, 102)
        bottom.set_xlabel("epoch (0 = init; SPT run: SPT, then supervised)")
        bottom.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        bottom.legend(loc="upper left", fontsize=FONT_SIZE)
        top.set_title(f"mean over seeds {_seeds(ctx)} (shaded: min to max)")
    record = {**ctx.header("training_curves", ["E2", "E3", "E4"]),
              "x": "cumulative training epochs; 0 = init; SPT run: epochs 1..%d SPT, then finetune" % boundary,
              "uniform_band_mass": uniform, "curves": plotted, "per_seed": curves,
              "runs": ctx.sources("scratch", "spt")}
    return save(ctx, "training_curves", fig, record)


# ----------------------------------------------------------------------------- 3 gradient blindness
def gradient_shares(ctx: FigureContext) -> list[dict]:
    """E8's measurement per seed: proximity share of E[dL/dS] and per-example dL/dS at init."""
    data = ctx.dataset()
    k = min(ctx.probe_size, len(data.x_test))
    return [gradient_proximity_shares(initial_model(ctx.spec("init", seed)), data.x_test[:k],
                                      data.y_test[:k], data.mask_id, seed=seed) for seed in ctx.seeds]


def t3_off_uniform(count: int) -> dict:
    """The T3 check's control (a): normalised blind projection at S = r1^T + eps X, fitted slope."""
    from spt_theory.checks.harness import single_threaded
    from spt_theory.checks.theory import off_uniform_growth
    with single_threaded():
        return off_uniform_growth(list(T3_EPS), count)


def gradient_blindness(ctx: FigureContext) -> list[Path]:
    shares = gradient_shares(ctx)
    growth = t3_off_uniform(ctx.t3_count)
    fig, (left, right) = _figure(COLUMN_WIDTH, 4.4, 2, 1)
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
        left.set_title(f"(a) full model at init, walk task; seeds {_seeds(ctx)}\n"
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
              "panel_b": {"what": "spt_theory.checks.theory.off_uniform_growth: mean normalised "
                                  "|<dL_sup/dS, P>| over random instances (n 3-16) at S = r1^T + eps X, "
                                  "P random circulant; log-log least-squares fit",
                          **growth}}
    return save(ctx, "gradient_blindness", fig, record)


# ----------------------------------------------------------------------------- 4 PE Toeplitz
def pe_profiles(model) -> dict:
    blocks = pe_score_block(model)  # (heads, n, n)
    heads = []
    for t in blocks:
        deltas, f = diagonal_profile(t)
        fit = toeplitz_fit(t)
        heads.append({"delta": deltas.tolist(), "profile": _rounded(f, 5), **fit})
    return {"heads": heads, "r2_mean": statistics.fmean(h["r2"] for h in heads)}


def pe_toeplitz(ctx: FigureContext) -> list[Path]:
    seed = ctx.seeds[0]
    before = {s: pe_profiles(initial_model(ctx.spec("pretrain", s))) for s in ctx.seeds}
    after = {s: pe_profiles(ctx.result("pretrain", s).model) for s in ctx.seeds}
    n = ctx.data.length
    fig, axes = _figure(COLUMN_WIDTH, 4.4, 2, 1, sharex=True)
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
                         f"(mean of heads, seeds {_seeds(ctx)}); curves: seed {seed}\n"
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
                      "(spt_theory.probes.pe_score_block, diagonal_profile, toeplitz_fit)",
              "seed_plotted": seed,
              "r2_mean_at_init": summary([p["r2_mean"] for p in before.values()]),
              "r2_mean_after_spt": summary([p["r2_mean"] for p in after.values()]),
              "before": {str(s): p for s, p in before.items()}, "after": {str(s): p for s, p in after.items()},
              "runs": ctx.sources("pretrain")}
    return save(ctx, "pe_toeplitz", fig, record)


# ----------------------------------------------------------------------------- 5 ablations
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
    mode, those that :mod:`spt_theory.checks.controls` defines; [] without that module."""
    b = ctx.budget
    entries = [("X1 ALiBi bias, scratch", "alibi", f"{b.scratch_epochs} ep"),
               ("X2 proximity init $W_Q, W_K$", f"proxinit_{b.finetune_epochs}", f"{b.finetune_epochs} ep"),
               ("X3 no PE, SPT + finetune", "nope", f"{b.pretrain_epochs}+{b.finetune_epochs} ep"),
               ("X4 CLS readout, scratch", "cls", f"{b.scratch_epochs} ep"),
               ("X5 SPT on symmetric walk", "xspt_symmetric", f"{b.pretrain_epochs}+{b.finetune_epochs} ep")]
    known = []
    for label, name, epochs in entries:
        try:
            control_spec(ctx, name, ctx.seeds[0])
        except (ImportError, AttributeError, ValueError):  # no controls module, or not this run
            continue
        known.append((f"{label} ({epochs})", name))
    return known


def control_spec(ctx: FigureContext, name: str, seed: int) -> RunSpec:
    """A control run as :func:`spt_theory.checks.controls.control_spec` builds it, on ``ctx``'s
    data, budget and model (identical spec, hence cache key, for the default context)."""
    return control_recipe(name, ctx.data, seed, ctx.budget, **ctx.model)


def ablations(ctx: FigureContext) -> list[Path]:
    controls = control_entries(ctx)
    rows, sources = [], []
    for label, name in ablation_entries(ctx.budget) + controls:
        accs = []
        is_control = (label, name) in controls
        for seed in ctx.seeds:
            spec = control_spec(ctx, name, seed) if is_control else ctx.spec(name, seed)
            accs.append(100 * ctx.result(name, seed, spec).final["test_accuracy"])
            sources.append(ctx.source(name, seed, spec))
        rows.append({"label": label, "recipe": name, "control": is_control,
                     "test_accuracy_percent": summary(accs)})
    height = 0.9 + 0.32 * len(rows)
    fig, ax = _figure(COLUMN_WIDTH, height)
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
        fig.suptitle(f"mean ± sd over seeds {_seeds(ctx)} (dots: single seeds);\nhybrid: groups "
                     f"from SPT ({ctx.budget.pretrain_epochs} ep), rest fresh, then supervised")
    record = {**ctx.header("ablations", ["E2", "E3", "E5", "E6"] + (["X1-X5"] if controls else [])),
              "bars": rows, "runs": sources}
    return save(ctx, "ablations", fig, record)


# ----------------------------------------------------------------------------- 6 pretraining sweep
def sweep_name(ctx: FigureContext, epochs: int) -> str:
    return "spt" if epochs == ctx.budget.pretrain_epochs else f"sweep_{epochs}"


def pretrain_sweep(ctx: FigureContext) -> list[Path]:
    ft = ctx.budget.finetune_epochs
    points = []
    if ctx.budget.scratch_epochs >= ft:  # 0 SPT epochs: epoch ft of the scratch run (constant lr)
        points.append({"spt_epochs": 0, "recipe": f"scratch (epoch {ft})",
                       "test_accuracy_percent": summary([100 * r.history[0][ft - 1]["test_accuracy"] for r in ctx.runs("scratch")]),
                       "band_mass_after_spt": summary([ctx.init_metrics(s)["band_mass"] for s in ctx.seeds])})
    for e in ctx.sweep:
        results = ctx.runs(sweep_name(ctx, e))
        points.append({"spt_epochs": e, "recipe": sweep_name(ctx, e),
                       "test_accuracy_percent": summary([100 * r.final["test_accuracy"] for r in results]),
                       "band_mass_after_spt": summary([r.history[0][-1]["band_mass"] for r in results])})
    fig, (top, bottom) = _figure(COLUMN_WIDTH, 3.6, 2, 1, sharex=True)
    x = np.array([p["spt_epochs"] for p in points])
    with plt.rc_context(STYLE):
        for ax, key, colour in ((top, "test_accuracy_percent", RECIPE_COLOUR["spt"]),
                                (bottom, "band_mass_after_spt", OKABE_ITO["green"])):
            mean = np.array([p[key]["mean"] for p in points])
            std = np.array([p[key]["std"] for p in points])
            ax.errorbar(x, mean, yerr=std, marker="o", color=colour, capsize=2, lw=1.2, label="mean ± sd")
            for xi, p in zip(x, points):
                ax.scatter([xi] * len(p[key]["per_seed"]), p[key]["per_seed"], s=6, color="black", zorder=3,
                           label="single seed" if xi == x[0] else None)
        top.axhline(50, color=RECIPE_COLOUR["grey"], ls="--", lw=1, label="chance")
        top.set_ylim(40, 102)
        top.set_ylabel(f"test accuracy (%)\nafter {ft} finetune epochs")
        top.legend(loc="upper left", fontsize=FONT_SIZE)
        top.set_title(f"mean ± sd over seeds {_seeds(ctx)}; 0 SPT epochs =\n"
                      f"scratch run at epoch {ft} (same supervised budget)")
        uniform = uniform_band_mass(ctx.data.length)
        bottom.axhline(uniform, color=RECIPE_COLOUR["grey"], ls=":", lw=1, label=f"uniform ({uniform:.3f})")
        bottom.set_ylabel("band mass after SPT\n(attention within |i-j|≤2)")
        bottom.set_ylim(0, None)
        bottom.legend(loc="upper left", fontsize=FONT_SIZE)
        bottom.set_xlabel("SPT (masked-token pretraining) epochs")
        bottom.set_xticks(x)
    record = {**ctx.header("pretrain_sweep", ["E9"]), "finetune_epochs": ft, "points": points,
              "runs": ctx.sources("scratch", *(sweep_name(ctx, e) for e in ctx.sweep))}
    return save(ctx, "pretrain_sweep", fig, record)


# ----------------------------------------------------------------------------- 7 LRA table
def lra_rows(results: list[dict]) -> list[dict]:
    """One row per (task, recipe, setting): seeds, mean and sd of the test accuracy, LRA reference."""
    from spt_theory.lra import report
    groups: dict[tuple, list[dict]] = {}
    for r in results:
        groups.setdefault((r["task"], r["kind"], report.setting(r)), []).append(r)
    order = list(report.TASKS) if hasattr(report, "TASKS") else []
    rows = []
    for (task, kind, setting), rs in sorted(groups.items(), key=lambda kv: (
            order.index(kv[0][0]) if kv[0][0] in order else 99, kv[0][2], kv[0][1])):
        accs = [100 * float(r["metrics"]["test_accuracy"]) for r in rs]
        stats = summary(accs)
        rows.append({"task": task, "recipe": kind, "setting": setting, "seeds": sorted(r["seed"] for r in rs),
                     "test_accuracy_percent": stats, "reference_percent": report.REFERENCE[task],
                     "at_reference_setting": all(report.at_reference_setting(r) for r in rs),
                     "files": sorted(r.get("cache", "") for r in rs)})
    return rows


def lra_table(ctx: FigureContext) -> list[Path]:
    from spt_theory.lra import report
    try:
        results = report.load_results(ctx.lra_results)
    except InputError as err:
        raise FigureSkipped(f"no LRA results: {err}") from None
    rows = lra_rows(results)
    header = ["task", "recipe", "setting", "seeds", "test acc %", "LRA ref %", "Δ ref"]
    cells = []
    for r in rows:
        s = r["test_accuracy_percent"]
        acc = f"{s['mean']:.2f}" + (f" ± {s['std']:.2f}" if len(r["seeds"]) > 1 else "")
        cells.append([r["task"], r["recipe"], r["setting"], ",".join(map(str, r["seeds"])), acc,
                      f"{r['reference_percent']:.2f}",
                      f"{s['mean'] - r['reference_percent']:+.2f}" if r["at_reference_setting"] else "-"])
    gains = report.gains(results)
    height = 0.55 + 0.2 * (len(cells) + 1) + 0.16 * min(len(gains), 12)
    fig, ax = _figure(PAGE_WIDTH, height)
    with plt.rc_context(STYLE):
        ax.axis("off")
        table = ax.table(cellText=cells, colLabels=header, loc="upper center", cellLoc="left",
                         colLoc="left", edges="horizontal")
        table.auto_set_font_size(False)
        table.set_fontsize(FONT_SIZE)
        table.auto_set_column_width(list(range(len(header))))
        for (row, _), cell in table.get_celld().items():
            cell.set_height(0.2 / height)
            if row == 0:
                cell.set_text_props(weight="bold")
        note = ("LRA ref: Transformer from scratch (Tay et al.); test acc at the best validation epoch; "
                "± sd over seeds; Δ ref only at the reference's setting (release data, paper config).")
        if gains:
            shown = gains[:12] + ([f"... {len(gains) - 12} more in lra_table.json"] if len(gains) > 12 else [])
            note = "SPT vs scratch (same data, model, seed, supervised stage):\n" + "\n".join(shown) + "\n" + note
        fig.text(0.01, 0.01, note, ha="left", va="bottom", fontsize=FONT_SIZE)
    record = {**ctx.header("lra_table", ["LRA confirmation"]), "results_dir": str(ctx.lra_results),
              "rows": rows, "gains": gains}
    return save(ctx, "lra_table", fig, record)


# ----------------------------------------------------------------------------- 8 LRA evidence
def lra_evidence(ctx: FigureContext) -> list[Path]:
    """The committed LRA sweeps (``OUT/lra/<task>.json``, written by ``lra sweep``) redrawn from
    their JSON, without retraining: accuracy per cell and the proximity of its attention."""
    from spt_theory.lra.sweep import draw
    summaries = sorted((ctx.out / "lra").glob("*.json"))
    if not summaries:
        raise FigureSkipped(f"no committed LRA sweep under {ctx.out / 'lra'}")
    paths = []
    for path in summaries:
        try:
            summary = json.loads(path.read_text())
            paths += draw(summary, path.with_suffix(""))
        except (json.JSONDecodeError, KeyError, TypeError) as err:
            raise InputError(f"{path}: not an LRA sweep summary ({type(err).__name__}: {err})") from None
    return paths


# ----------------------------------------------------------------------------- registry and CLI
@dataclass(frozen=True)
class Figure:
    name: str
    draw: Callable[[FigureContext], list[Path]]
    claims: str
    shows: str


FIGURES = {f.name: f for f in (
    Figure("attention_maps", attention_maps, "E4", "head-averaged attention of one sequence: init, scratch, SPT, finetuned"),
    Figure("training_curves", training_curves, "E2-E4", "band mass and test accuracy per epoch, scratch vs SPT then finetune"),
    Figure("gradient_blindness", gradient_blindness, "T3, T5, E8", "proximity share of the score gradients at init; T3 off-uniform control"),
    Figure("pe_toeplitz", pe_toeplitz, "E7", "PE-PE scores against i - j before / after SPT, Toeplitz R^2"),
    Figure("ablations", ablations, "E2, E3, E5, E6, X1-X5", "final test accuracy of scratch, SPT, frozen, hybrid inits, controls"),
    Figure("pretrain_sweep", pretrain_sweep, "E9", "finetuned accuracy and band mass against SPT epochs"),
    Figure("lra_table", lra_table, "LRA", "LRA result table (skipped when no result JSON exists)"),
    Figure("lra_evidence", lra_evidence, "L1-L4", "committed LRA sweeps: accuracy per cell, attention proximity"),
)}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m spt_theory.figures", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", nargs="+", metavar="NAME", choices=list(FIGURES),
                   help="draw only these figures (default: all): " + ", ".join(FIGURES))
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], metavar="S",
                   help="seeds to average over (default: 0 1 2)")
    p.add_argument("--cache-dir", type=Path, default=Path("runs"), metavar="DIR",
                   help="run cache shared with verify (default: ./runs)")
    p.add_argument("--fresh", action="store_true",
                   help="retrain every run into a new cache DIR/fresh-<timestamp> (the old cache is kept)")
    p.add_argument("--out", type=Path, default=Path("figures"), metavar="DIR",
                   help="where PNG, PDF and JSON go (default: ./figures)")
    p.add_argument("--lra-results", type=Path, default=LRA_RESULTS, metavar="DIR",
                   help=f"LRA result JSONs for lra_table (default: {LRA_RESULTS})")
    p.add_argument("--threads", type=int, metavar="N",
                   help="torch intra-op threads (default: torch's choice); 1 is much faster for "
                        "these small models on a busy machine")
    p.add_argument("--no-progress", action="store_true", help="hide training progress bars")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if any(s < 0 for s in args.seeds):
        print("error: --seeds: seeds must be non-negative integers", file=sys.stderr)
        return 2
    if args.threads is not None:
        if args.threads < 1:
            print("error: --threads: must be >= 1", file=sys.stderr)
            return 2
        set_intra_op_threads(args.threads)
    cache_dir = args.cache_dir / time.strftime("fresh-%Y%m%d-%H%M%S") if args.fresh else args.cache_dir
    ctx = FigureContext(data=DEFAULT_DATA, budget=DEFAULT_BUDGET, model=dict(DEFAULT_MODEL),
                        seeds=tuple(dict.fromkeys(args.seeds)), cache_dir=cache_dir, out=args.out,
                        progress=not args.no_progress, sweep=DEFAULT_SWEEP, t3_count=DEFAULT_T3_COUNT,
                        lra_results=args.lra_results)
    print(f"figures -> {ctx.out}/  (runs cache {ctx.cache_dir}, seeds {' '.join(map(str, ctx.seeds))})", flush=True)
    start = time.perf_counter()
    failed: list[str] = []
    for name in args.only or FIGURES:
        t0 = time.perf_counter()
        try:
            paths = FIGURES[name].draw(ctx)
        except FigureSkipped as why:
            print(f"{name}: skipped ({why})", flush=True)
            continue
        except StorageError as err:  # read-only or full cache / output folder: the rest would fail too
            print(f"error: {err}", file=sys.stderr, flush=True)
            return 2
        except Exception as err:  # one broken figure must not stop the others
            print(f"error: {name}: {type(err).__name__}: {err}", file=sys.stderr, flush=True)
            failed.append(name)
            continue
        print(f"{name}: {', '.join(p.name for p in paths)}  ({time.perf_counter() - t0:.1f} s)", flush=True)
    print(f"done in {time.perf_counter() - start:.1f} s" + (f"; FAILED: {' '.join(failed)}" if failed else ""),
          flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
