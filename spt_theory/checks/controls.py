r"""Claims X1-X6: mechanism controls beyond the paper.

The paper's explanation: label supervision through a mean-pooled readout is blind to proximity
directions of the attention scores at uniform attention (T1-T3), masked reconstruction sees them
(T5), so SPT turns the sinusoidal PE into proximity attention and fine-tuning builds on it.  Each
control changes one ingredient and says what the explanation predicts:

- X1  a built-in proximity bias (ALiBi) makes attention non-uniform from the start: supervised
      training from scratch should then learn the task without SPT;
- X2  the same proximity put into W_Q, W_K by hand (:func:`spt_theory.core.inits.proximity_init`)
      should stand in for SPT;
- X3  without positional encoding there is no proximity for SPT to create (band mass stays near
      uniform) and the task stays unsolved after SPT then finetune;
- X4  a single-token readout (CLS / last): the lemma of ``proofs/X4_readout_blindness.md``
      (checked like T1-T5, :func:`spt_theory.checks.theory.x4_theory`) and training from
      scratch with that readout;
- X5  SPT on *other* sequences (symmetric walk, p = 0.8, permuted token ids) should still help,
      since what transfers is position-based proximity, not the data's content;
- X6  the share of the supervised score gradient in the proximity subspace along the cached
      scratch and SPT trajectories (per-epoch checkpoints): blind while attention is uniform,
      not once SPT has made it local.

Runs come from :func:`spt_theory.walk.experiments.run` (cached by config hash, shared with E1-E9: X6
and the comparisons read the ``scratch`` and ``spt`` runs of claims E2/E3).  Every figure is the
mean over ``ctx.seeds`` with per-seed values and spread in ``details``.  Quick mode runs the
cheapest run that still tests each prediction; ``--full`` adds the rest (see each claim).
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from torch import Tensor

from spt_theory.analysis.gradient_shares import chance_share, share_trajectory
from spt_theory.analysis.lemma_harness import single_threaded
from spt_theory.analysis.probes import diagonal_profile, pe_score_block, uniform_band_mass
from spt_theory.checks import theory as lemmas
from spt_theory.checks import walk
from spt_theory.checks.walk import CHANCE, summary
from spt_theory.claims.registry import Context, Measurement, claim
from spt_theory.core.model import Encoder
from spt_theory.theory import patterns
from spt_theory.training.recipes import Budget
from spt_theory.walk.experiments import (
    RunResult,
    RunSpec,
    built_data,
    control_recipe,
    initial_model,
    run,
    run_checkpoints,
    walk_metrics,
)

BUDGET = Budget()
"""The epoch budget of every control run (the design's: scratch 8, SPT 4, finetune 3)."""



# Thresholds, set from runs of seeds 0-2 at the design's budget (8000 / 2000 sequences, n = 100,
# V = 16); the measured range is beside each.  Accuracy bars are those of E1-E4 (chance +- 0.04 on
# 2000 test sequences, "solved" = 0.95 as for SPT in E3), not fitted to the control runs.
X1_THRESHOLD = 0.95       # ALiBi scratch, 8 ep: seeds 0-4 = 1.000 / 0.669 / 0.997 / 1.000 / 0.534
                          # (mean 0-2: 0.889): a plateau at chance, left at epoch 6 / 8 / 5 / 7 / 8;
                          # plain scratch never leaves it within 8 epochs (E2).  FAILS: see report
X2_THRESHOLD = 0.95       # proxinit: 1.000 on seeds 0-2 from epoch 1 on (3 ep quick, 8 full)
X3_MAX_ACC_GAP = 0.04     # no PE, SPT 4 + ft 3: |acc - 0.5| = 0.006 / 0.001 / 0.014
X3_MAX_BAND_RATIO = 1.5   # no PE, band mass after SPT / uniform: 0.99 / 0.99 / 0.99
X4_MAX_ACC_GAP = 0.04     # CLS scratch, 8 ep: 0.487 / 0.487 / 0.487 (it flips between the two
                          # constant predictions, 0.487 / 0.512); last token: 0.749 / 0.738 / 0.739
X5_THRESHOLD = 0.9        # worst source's mean, ft 3: symmetric 0.968 / 0.953 / 0.997, p = 0.8
                          # 0.996 / 0.993 / 0.997, permuted ids 0.987 / 0.991 / 0.996 (ft 8: all
                          # >= 0.998; SPT on the walk data itself 0.978 / 0.986 / 0.998; scratch 0.49)
X6_SCRATCH_MAX = 2.0      # scratch trajectory, max share / chance: 0.73 / 1.19 / 0.64 (128
                          # sequences, quick); 1.22 / 0.93 / 0.83 (256, full)
X6_SPT_MIN = 3.0          # SPT trajectory, mean share / chance over the finetune epochs:
                          # 5.8 / 4.3 / 5.6 (quick); 5.3 / 4.6 / 5.4 (full)


def control_spec(name: str, seed: int, **settings) -> RunSpec:
    """A control run (:data:`spt_theory.walk.experiments.CONTROL_RUNS`) or any recipe, on the walk
    data, with the model ``settings`` (the control's own architecture wins over them)."""
    return control_recipe(name, walk.WALK, seed, BUDGET, **settings)


def control_runs(ctx: Context, name: str) -> list[RunResult]:
    """The named control run trained (or loaded) for every seed of the context."""
    return [run(ctx.build(control_spec, name, seed), ctx.cache_dir, progress=ctx.progress)
            for seed in ctx.seeds]


def final_accuracies(ctx: Context, name: str) -> list[float]:
    return [r.final["test_accuracy"] for r in control_runs(ctx, name)]


def accuracy_curves(results: list[RunResult], stage: int = -1) -> list[list[float]]:
    """Per seed, the test accuracy after each epoch of ``stage``."""
    return [[round(e["test_accuracy"], 3) for e in r.history[stage]] for r in results]


def _mean(values: list[float]) -> float:
    return statistics.fmean(values)


# ----------------------------------------------------------------------------- X1
def first_epoch_above(result: RunResult, level: float = 0.9) -> int | None:
    """The first epoch of the last stage whose test accuracy reaches ``level`` (None if none)."""
    return next((e["epoch"] for e in result.history[-1] if e["test_accuracy"] >= level), None)


@claim("X1", section="Controls: built-in proximity",
       method="attention_bias=alibi, supervised 8 epochs", quick=False, limits=(X1_THRESHOLD,))
def check_x1(ctx: Context) -> Measurement:
    results = control_runs(ctx, "alibi")
    accs = [r.final["test_accuracy"] for r in results]
    uniform = uniform_band_mass(walk.WALK.length)
    return Measurement(_mean(accs), f">= {X1_THRESHOLD:g}", _mean(accs) >= X1_THRESHOLD,
                       {"accuracy": summary(accs), "accuracy_by_epoch": accuracy_curves(results),
                        "first_epoch_acc_ge_0.9": [first_epoch_above(r) for r in results],
                        "seeds_solved_ge_0.95": sum(a >= 0.95 for a in accs),
                        "band_mass_ratio_to_uniform": summary([r.final["band_mass"] / uniform for r in results]),
                        "scratch_accuracy_same_budget": summary(final_accuracies(ctx, "scratch"))})


# ----------------------------------------------------------------------------- X2
def pe_peak_offsets(model: Encoder) -> list[int]:
    """Per head, the signed offset ``j - i`` at which the PE-PE score profile peaks."""
    peaks = []
    for t in pe_score_block(model):
        deltas, f = diagonal_profile(t)
        peaks.append(-int(deltas[f.argmax()]))  # diagonal_profile's delta is i - j
    return peaks


@claim("X2", section="Controls: proximity init",
       method="PE-rotation init, supervised 3 ep (8 full)", limits=(X2_THRESHOLD,))
def check_x2(ctx: Context) -> Measurement:
    name = "proxinit" if ctx.full else f"proxinit_{BUDGET.finetune_epochs}"
    results = control_runs(ctx, name)
    accs = [r.final["test_accuracy"] for r in results]
    data = built_data(walk.WALK)
    at_init = [walk_metrics(data)(initial_model(r.spec)) for r in results]
    uniform = uniform_band_mass(walk.WALK.length)
    ok = _mean(accs) >= X2_THRESHOLD
    return Measurement(_mean(accs), f">= {X2_THRESHOLD:g}", ok,
                       {"accuracy": summary(accs), "supervised_epochs": results[0].spec.stages[0].epochs,
                        "accuracy_by_epoch": accuracy_curves(results),
                        "accuracy_at_init": summary([m["test_accuracy"] for m in at_init]),
                        "band_mass_ratio_at_init": summary([m["band_mass"] / uniform for m in at_init]),
                        "pe_peak_offsets_at_init": [pe_peak_offsets(initial_model(r.spec)) for r in results],
                        "spt_accuracy_same_supervised_budget": summary(walk.final_accuracies(ctx, "spt"))
                        if Budget() == BUDGET else "n/a"})


# ----------------------------------------------------------------------------- X3
@claim("X3", section="Controls: no positional encoding",
       method="positional=none, SPT 4 ep + finetune 3", quick=False,
       limits=(CHANCE, X3_MAX_ACC_GAP, X3_MAX_BAND_RATIO))
def check_x3(ctx: Context) -> Measurement:
    results = control_runs(ctx, "nope")
    uniform = uniform_band_mass(walk.WALK.length)
    ratio = [r.history[0][-1]["band_mass"] / uniform for r in results]
    accs = [r.final["test_accuracy"] for r in results]
    ok = _mean(ratio) <= X3_MAX_BAND_RATIO and abs(_mean(accs) - CHANCE) <= X3_MAX_ACC_GAP
    return Measurement(_mean(accs), f"|acc-{CHANCE:g}| <= {X3_MAX_ACC_GAP:g}, band <= {X3_MAX_BAND_RATIO:g}x", ok,
                       {"accuracy": summary(accs), "band_mass_ratio_after_spt": summary(ratio),
                        "band_mass_ratio_after_finetune": summary([r.final["band_mass"] / uniform for r in results]),
                        "uniform_band_mass": round(uniform, 5)})


# ----------------------------------------------------------------------------- X4
@claim("X4", section="Controls: readout (X4 lemma)",
       method="sympy + autograd float64; cls 8 ep (+last full)", quick=False, limits=(CHANCE, X4_MAX_ACC_GAP))
def check_x4(ctx: Context) -> Measurement:
    with single_threaded():
        conditions, details = lemmas.x4_theory(ctx)
    readouts = ("cls", "last") if ctx.full else ("cls",)
    training: dict[str, Any] = {}
    for name in readouts:
        results = control_runs(ctx, name)
        training[name] = {"accuracy": summary([r.final["test_accuracy"] for r in results]),
                          "accuracy_by_epoch": accuracy_curves(results)}
    # the best any classifier can do from one neighbouring pair (x_{i-1}, x_i) of the walk: (1 + p) / 2
    training["one_pair_bayes_accuracy"] = (1 + walk.WALK.p) / 2
    cls = training["cls"]["accuracy"]["mean"]
    ok = all(conditions.values()) and abs(cls - CHANCE) <= X4_MAX_ACC_GAP
    return Measurement(cls, f"theory & |cls acc-{CHANCE:g}| <= {X4_MAX_ACC_GAP:g}", ok,
                       {"conditions": conditions, "training_from_scratch": training, **details})


# ----------------------------------------------------------------------------- X5
def x5_sources(ctx: Context) -> tuple[str, ...]:
    return ("symmetric", "p08", "perm") if ctx.full else ("symmetric",)


@claim("X5", section="Controls: cross-data SPT",
       method="SPT 4 ep on other data, finetune 3 (8 full)", quick=False, limits=(X5_THRESHOLD,))
def check_x5(ctx: Context) -> Measurement:
    by_source, long = {}, {}
    for source in x5_sources(ctx):
        by_source[source] = final_accuracies(ctx, f"xspt_{source}")
        if ctx.full:
            long[source] = summary(final_accuracies(ctx, f"xspt_{source}_long"))
    uniform = uniform_band_mass(walk.WALK.length)
    band = {s: summary([r.history[0][-1]["band_mass"] / uniform for r in control_runs(ctx, f"xspt_{s}")])
            for s in by_source}
    worst = min(_mean(v) for v in by_source.values())
    ok = worst >= X5_THRESHOLD
    return Measurement(worst, f"every source >= {X5_THRESHOLD:g}", ok,
                       {"accuracy_finetune_3": {s: summary(v) for s, v in by_source.items()},
                        "accuracy_finetune_8": long or "full mode only",
                        "band_mass_ratio_after_spt": band,
                        "scratch_accuracy": summary(final_accuracies(ctx, "scratch"))})


# ----------------------------------------------------------------------------- X6
def run_trajectory(result: RunResult, cache_dir: Path, x: Tensor, y: Tensor, directions: Tensor) -> list[dict]:
    """The supervised share (:func:`spt_theory.analysis.gradient_shares.share_trajectory`) at init and after
    every epoch of every stage of a cached walk run."""
    return share_trajectory(initial_model(result.spec), run_checkpoints(result.spec, cache_dir), x, y, directions)


@claim("X6", section="Controls: blindness over training", method="E[dL_sup/dS] share, per-epoch checkpoints",
       limits=(X6_SPT_MIN, X6_SCRATCH_MAX))
def check_x6(ctx: Context) -> Measurement:
    data = built_data(walk.WALK)
    size = 256 if ctx.full else 128
    x, y = data.x_test[:size], data.y_test[:size]
    directions = patterns.proximity_directions(x.shape[1], 2, circular=False)
    chance = chance_share(directions)
    with single_threaded():
        scratch = [run_trajectory(r, ctx.cache_dir, x, y, directions) for r in control_runs(ctx, "scratch")]
        spt = [run_trajectory(r, ctx.cache_dir, x, y, directions) for r in control_runs(ctx, "spt")]
    scratch_max = [max(p["expected"] for p in t) / chance for t in scratch]
    spt_finetune = [statistics.fmean(p["expected"] for p in t if p["stage"] == 1) / chance for t in spt]
    spt_init = [t[0]["expected"] / chance for t in spt]
    ok = _mean(scratch_max) <= X6_SCRATCH_MAX and _mean(spt_finetune) >= X6_SPT_MIN
    curve = lambda ts: [[round(p["expected"] / chance, 2) for p in t] for t in ts]  # noqa: E731
    return Measurement(_mean(spt_finetune), f"SPT >= {X6_SPT_MIN:g}x, scratch <= {X6_SCRATCH_MAX:g}x chance", ok,
                       {"chance_share": round(chance, 5),
                        "scratch_max_over_chance": summary(scratch_max),
                        "spt_finetune_mean_over_chance": summary(spt_finetune),
                        "init_over_chance": summary(spt_init),
                        "scratch_curve_over_chance (init, ep 1..8)": curve(scratch),
                        "spt_curve_over_chance (init, pretrain 1..4, finetune 1..3)": curve(spt),
                        "per_example_share_scratch_end": summary([t[-1]["per_example"] for t in scratch]),
                        "per_example_share_spt_end": summary([t[-1]["per_example"] for t in spt]),
                        "batch": size})
