"""Claims E1-E9: the synthetic experiments on the walk-direction task.

Every trained run comes from :func:`spt_theory.walk.experiments.run` and is cached by config hash, so
the claims share runs (E3, E4, E6 and E9 all reuse one SPT pretraining per seed) and a second
verify only reloads.  Each figure is the mean over ``ctx.seeds``; ``details`` has every seed's
value and the spread (sample standard deviation).  Thresholds were set from measurements over
seeds 0-2 of the design's budget (E8: seeds 0-9; see the comment beside each) and are printed
with the figure; which were written before their data and which were moved is in
:data:`spt_theory.claims.records.REGISTRATIONS` (E6, E7, E8 moved after their first results).

Quick mode runs E1-E4 and E7-E10 (about 2250 training steps: E9 reads E3's SPT length only); E5 and E6
(2000 steps each) run with ``--full`` or ``--only E5 E6``.
"""

from __future__ import annotations

import math
import statistics

from spt_theory.analysis.baselines import diagonal_concentration_rule, train_bag_of_pairs, train_bag_of_tokens
from spt_theory.analysis.gradient_shares import gradient_proximity_shares
from spt_theory.analysis.probes import pe_toeplitz_fit, uniform_band_mass
from spt_theory.claims.registry import Context, Measurement, at_least, at_most, claim
from spt_theory.walk.experiments import RunResult, WalkData, built_data, initial_model, recipe, run
from synthetic.walk import generate_walk

WALK = WalkData()
CHANCE = 0.5
"""The walk task's chance accuracy (two balanced classes)."""
E1_MAX_GAP = 0.04
"""E1: |acc - chance| at most 4 points (2000 test examples give a binomial std of 0.011 at 50%)."""
E1_CONTROL_MIN = 0.7
"""E1's leaky control must reach this, or the baseline could not have seen a histogram difference."""
E1B_MLP_MIN, E1B_LINEAR_GAP, E1B_RULE_MIN = 0.8, 0.04, 0.9
"""E1b: the pair MLP at least 0.8; the linear readout within 0.04 of chance; the quadratic rule at least 0.9."""
E2_MAX = 0.6
"""E2: scratch's mean accuracy after its 8 epochs at most this (seeds 0-2: 0.483-0.488)."""
E3_MIN = 0.95
"""E3: SPT then finetune at least this (seeds 0-2: 0.986-1.000)."""
E4_SPT_MIN, E4_SCRATCH_MAX = 5.0, 1.5
"""E4: band mass over uniform at least 5x after SPT (the design's), at most 1.5x after scratch."""
E6_QK_MIN, E6_MLP_MAX = 0.8, 0.2
"""E6: the share of SPT's gain the W_Q, W_K hybrid recovers (at least), the MLP hybrid (at most)."""
E7_R2_MIN, E7_OVER_BASELINE, E7_PEAK_OFFSET, E7_PEAKED_SHARE = 0.5, 3.0, 2, 0.5
"""E7: R2 of the Toeplitz fit at least 0.5 and 3x the larger of init's and scratch's; at least half
of the heads peak within 2 offsets of the diagonal."""
E8_MAX = 0.33
"""E8: the supervised over the reconstruction proximity share at most this (seeds 0-9: 0.05-0.25)."""

NO_TRANSFORMER = "fixed-feature baselines on the walk data (bag of tokens / of (token, position) pairs), no Transformer"


def runs(ctx: Context, name: str) -> list[RunResult]:
    """The named recipe trained (or loaded) for every seed of the context."""
    return [run(ctx.build(recipe, name, WALK, seed), ctx.cache_dir, progress=ctx.progress)
            for seed in ctx.seeds]


def summary(values: list[float]) -> dict:
    """Per-seed values, mean and sample standard deviation (0 for one seed)."""
    return {"per_seed": [round(v, 4) for v in values], "mean": round(statistics.fmean(values), 4),
            "std": round(statistics.stdev(values), 4) if len(values) > 1 else 0.0}


def final_accuracies(ctx: Context, name: str) -> list[float]:
    return [r.final["test_accuracy"] for r in runs(ctx, name)]


@claim("E1", section="Design, walk task (T6)",
       method="histogram MLP, 30 epochs; leak control", fixed=NO_TRANSFORMER,
       limits=(CHANCE, E1_MAX_GAP, E1_CONTROL_MIN))
def check_e1(ctx: Context) -> Measurement:
    data = built_data(WALK)
    accs = [train_bag_of_tokens(data.x_train, data.y_train, data.x_test, data.y_test, WALK.vocab,
                                seed=seed)["test_accuracy"] for seed in ctx.seeds]
    # negative control: the same baseline on a walk whose class-1 fresh tokens lean to token 0
    leak = [generate_walk(WALK.vocab, WALK.length, WALK.p, size, seed, leak=0.1)
            for size, seed in ((WALK.n_train, 10), (WALK.n_test, 11))]
    control = train_bag_of_tokens(*leak[0], *leak[1], WALK.vocab)["test_accuracy"]
    mean = statistics.fmean(accs)
    m = at_most(abs(mean - CHANCE), E1_MAX_GAP, accuracy=summary(accs), leaky_control_accuracy=round(control, 4))
    return Measurement(mean, f"|acc - {CHANCE:g}| <= {E1_MAX_GAP:g} (control >= {E1_CONTROL_MIN:g})",
                       m.passed and control >= E1_CONTROL_MIN, m.details)


@claim("E1b", section="Theory T7 (scope of T6)",
       method="pair one-hot MLP / linear, 10 ep; quadratic rule", fixed=NO_TRANSFORMER,
       limits=(E1B_MLP_MIN, CHANCE, E1B_LINEAR_GAP, E1B_RULE_MIN))
def check_e1b(ctx: Context) -> Measurement:
    r"""What a model without token interactions (uniform attention) can read: mean-pooled one-hot
    (token, position) features, all that a per-token map can pool (T7).  A nonlinear readout
    separates the classes; a linear one does not (T7: equal class means), nor does any function of
    the token histogram (E1); the quadratic rule of :func:`diagonal_concentration_rule` needs no training."""
    data = built_data(WALK)
    mlp = [train_bag_of_pairs(data.x_train, data.y_train, data.x_test, data.y_test, WALK.vocab,
                              seed=seed)["test_accuracy"]
           for seed in ctx.seeds]
    linear = train_bag_of_pairs(data.x_train, data.y_train, data.x_test, data.y_test, WALK.vocab,
                                hidden=None)["test_accuracy"]
    rule = float((diagonal_concentration_rule(data.x_test, WALK.vocab) == data.y_test).float().mean())
    mean = statistics.fmean(mlp)
    # seed 0: MLP 0.948 test accuracy after 10 epochs (0.960 after 30), quadratic rule 0.985, linear
    # readout 0.5 +- one binomial std (0.011)
    ok = mean >= E1B_MLP_MIN and abs(linear - CHANCE) <= E1B_LINEAR_GAP and rule >= E1B_RULE_MIN
    return Measurement(mean, "MLP >= .8, |linear-.5| <= .04, rule >= .9", ok,
                       {"mlp_accuracy": summary(mlp), "linear_readout_accuracy": round(linear, 4),
                        "quadratic_rule_accuracy": round(rule, 4), "features": WALK.vocab * WALK.length})


@claim("E2", section="Paper: SPT vs scratch",
       method="1 layer, 8 epochs, AdamW 1e-3", limits=(E2_MAX,))
def check_e2(ctx: Context) -> Measurement:
    """Within the design's scratch budget (8 epochs, 1000 steps).  Not beyond it: E11b trains the
    same run on for 128 epochs, and it leaves chance after about 20 (E11, E11b)."""
    accs = final_accuracies(ctx, "scratch")
    # seeds 0-2: 0.483-0.488 (the design's prototype: 0.49)
    return at_most(statistics.fmean(accs), E2_MAX, accuracy=summary(accs))


@claim("E3", section="Paper: SPT vs scratch",
       method="SPT 4 epochs (15% mask), finetune 3", limits=(E3_MIN,))
def check_e3(ctx: Context) -> Measurement:
    accs = final_accuracies(ctx, "spt")
    # seeds 0-2: 0.986-1.000 (the design's prototype: 0.997)
    return at_least(statistics.fmean(accs), E3_MIN, accuracy=summary(accs))


@claim("E4", section="Paper: proximity attention",
       method="share of attention within |i-j| <= 2", limits=(E4_SPT_MIN, E4_SCRATCH_MAX))
def check_e4(ctx: Context) -> Measurement:
    uniform = uniform_band_mass(WALK.length)
    spt = [r.history[0][-1]["band_mass"] / uniform for r in runs(ctx, "spt")]
    scratch = [r.final["band_mass"] / uniform for r in runs(ctx, "scratch")]
    # seeds 0-2: 8.8-9.8x after SPT, 0.94-0.96x after scratch (the design asks for >= 5x)
    ok = statistics.fmean(spt) >= E4_SPT_MIN and statistics.fmean(scratch) <= E4_SCRATCH_MAX
    return Measurement(statistics.fmean(spt), f"SPT >= {E4_SPT_MIN:g}x, scratch <= {E4_SCRATCH_MAX:g}x", ok,
                       {"uniform_band_mass": round(uniform, 5), "spt_ratio": summary(spt),
                        "scratch_ratio": summary(scratch)})


E5_MAX_GAP = 0.05
"""|frozen - scratch| with the last-token readout: 'about as good, sometimes better' as a two-sided
bound of 5 points (4.5 binomial sd on 2000 test sequences at 75%).  Written before the frozen runs."""
E5_MIN_SCRATCH = 0.6
"""The setting must be one where supervised training partly learns (else frozen = scratch is a tie
at chance, which cannot fail: the mean-pooled model's 0.487 / 0.488 of the earlier E5).  Set when
the last-token scratch accuracy (0.74, X4's run) was already known: E5 is "post"
(:data:`spt_theory.claims.records.REGISTRATIONS`)."""


@claim("E5", section="Paper: frozen attention",
       method="last-token readout, W_Q,W_K frozen vs trained, 8 ep", quick=False,
       limits=(E5_MAX_GAP, E5_MIN_SCRATCH))
def check_e5(ctx: Context) -> Measurement:
    """The paper: frozen random attention is about as good as trained attention, sometimes better.
    Tested where supervised training partly learns: the last-token readout (X4), whose scratch
    runs reach about 0.74.  Two-sided: the gap frozen - scratch must lie in [-0.05, 0.05]."""
    from spt_theory.walk.paper_runs import last_token_spec

    frozen, scratch = ([run(ctx.build(last_token_spec, name, seed, WALK), ctx.cache_dir,
                            progress=ctx.progress).final["test_accuracy"] for seed in ctx.seeds]
                       for name in ("frozen", "scratch"))
    return frozen_vs_trained(frozen, scratch)


def frozen_vs_trained(frozen: list[float], scratch: list[float]) -> Measurement:
    """E5's decision: ``|mean(frozen) - mean(scratch)| <= E5_MAX_GAP`` and ``mean(scratch) >= E5_MIN_SCRATCH``."""
    gap = statistics.fmean(frozen) - statistics.fmean(scratch)
    ok = abs(gap) <= E5_MAX_GAP and statistics.fmean(scratch) >= E5_MIN_SCRATCH
    return Measurement(gap, f"|gap| <= {E5_MAX_GAP:g}, scratch >= {E5_MIN_SCRATCH:g}", ok,
                       {"frozen_accuracy": summary(frozen), "scratch_accuracy": summary(scratch),
                        "per_seed_gap": [round(f - s, 4) for f, s in zip(frozen, scratch)]})


def recovered_gain(ctx: Context, name: str) -> list[float]:
    """(acc_run - acc_scratch) / (acc_spt - acc_scratch), per seed."""
    spt, scratch = final_accuracies(ctx, "spt"), final_accuracies(ctx, "scratch")
    return [(a - s) / (b - s) for a, b, s in zip(final_accuracies(ctx, name), spt, scratch)]


@claim("E6", section="Paper: hybrid init",
       method="SPT groups kept, rest fresh, finetune 8 ep", quick=False, limits=(E6_QK_MIN, E6_MLP_MAX))
def check_e6(ctx: Context) -> Measurement:
    names = ("hybrid_qk", "hybrid_mlp") + (("hybrid_qk_vo",) if ctx.full else ())
    recovered = {name: recovered_gain(ctx, name) for name in names}
    qk, mlp = statistics.fmean(recovered["hybrid_qk"]), statistics.fmean(recovered["hybrid_mlp"])
    # seeds 0-2: qk 0.99-1.03 (solved by finetune epoch 6-7), mlp -0.01-0.02
    return Measurement(qk, f"qk >= {E6_QK_MIN:g}, mlp <= {E6_MLP_MAX:g}", qk >= E6_QK_MIN and mlp <= E6_MLP_MAX,
                       {f"recovered_{name[7:]}": summary(v) for name, v in recovered.items()})


@claim("E7", section="Paper: PE cancellation", method="diagonal-mean fit of P W_Q W_K^T P^T",
       limits=(E7_R2_MIN, E7_OVER_BASELINE, E7_PEAK_OFFSET, E7_PEAKED_SHARE))
def check_e7(ctx: Context) -> Measurement:
    after = [pe_toeplitz_fit(r.model, max_offset=E7_PEAK_OFFSET) for r in runs(ctx, "pretrain")]
    before = [pe_toeplitz_fit(initial_model(r.spec))["r2"] for r in runs(ctx, "pretrain")]
    scratch = [pe_toeplitz_fit(r.model)["r2"] for r in runs(ctx, "scratch")]
    r2 = statistics.fmean(f["r2"] for f in after)
    baseline = max(statistics.fmean(before), statistics.fmean(scratch))
    peaked = [f["heads_peaked_near"] / len(f["heads"]) for f in after]
    # seeds 0-2: R2 0.56-0.69 after SPT, 0.15-0.17 at init, 0.12-0.21 after scratch; every head
    # peaks at offset 0.  A strict "close to Toeplitz" (R2 >= 0.9) does not hold: 30-45% of the
    # PE-PE variance after SPT is not a function of i - j.
    ok = r2 >= E7_R2_MIN and r2 >= E7_OVER_BASELINE * baseline and statistics.fmean(peaked) >= E7_PEAKED_SHARE
    return Measurement(r2, "R2>=.5, >=3x init/scratch, peak<=2", ok,
                       {"r2_after_spt": summary([f["r2"] for f in after]), "r2_at_init": summary(before),
                        "r2_after_scratch": summary(scratch),
                        "share_heads_peaked_within_2": summary(peaked),
                        "peak_offsets": [[h["peak_offset"] for h in f["heads"]] for f in after]})


@claim("E8", section="Theory T3/T5, full model",
       method="proximity share of E[dL/dS], sup / rec", limits=(E8_MAX,))
def check_e8(ctx: Context) -> Measurement:
    data = built_data(WALK)
    shares = [gradient_proximity_shares(initial_model(ctx.build(recipe, "init", WALK, seed)),
                                        data.x_test[:256], data.y_test[:256], data.mask_id, seed=seed)
              for seed in ctx.seeds]
    ratio = [s["supervised"]["expected"] / s["spt"]["expected"] for s in shares]
    # seeds 0-9 (one seed each): ratio 0.05-0.25, mean 0.13; the supervised share itself is below
    # the random-matrix level (0.006 vs 0.013).  A gradient with no preference would give about 1.
    return at_most(statistics.fmean(ratio), E8_MAX, ratio_sup_over_rec=summary(ratio),
                   **{f"{obj}_{kind}_share": summary([s[obj][kind] for s in shares])
                      for obj in ("supervised", "spt") for kind in ("expected", "per_example")},
                   random_matrix_share=summary([s["random"] for s in shares]))


E9_SOLVED = 0.95
E9_PAPER_EPOCHS = 10
"""The paper: about 10 epochs of SPT give most of the gain (sometimes one)."""


@claim("E9", section="Paper: pretraining length",
       method="SPT 1/4-8 ep (log grid; quick: 4), ft 3", limits=(E9_PAPER_EPOCHS, E9_SOLVED))
def check_e9(ctx: Context) -> Measurement:
    """Finetuned accuracy (3 supervised epochs) against SPT length on a log grid of optimizer steps
    (:data:`spt_theory.walk.paper_runs.SPT_LENGTH_STEPS`; quick mode only E3's 4 epochs, which decide the
    threshold at no extra training; ``--full`` the whole grid).  Measured: the
    shortest SPT length (epochs) whose mean finetuned accuracy reaches 0.95.  Passes iff that is at
    most the paper's ~10 epochs; ``details`` say where the step lies (last length at chance, first
    solved) and whether one epoch is enough (the paper's "sometimes one")."""
    from spt_theory.walk.paper_runs import BUDGET, spt_length_spec, spt_length_steps, steps_per_epoch

    per_epoch = steps_per_epoch(WALK)
    grid = spt_length_steps(WALK) if ctx.full else (BUDGET.pretrain_epochs * per_epoch,)
    curve = {steps: [run(ctx.build(spt_length_spec, steps, seed, WALK), ctx.cache_dir, progress=ctx.progress
                         ).final["test_accuracy"] for seed in ctx.seeds] for steps in grid}
    means = {steps: statistics.fmean(v) for steps, v in curve.items()}
    solved = [steps for steps in grid if means[steps] >= E9_SOLVED]
    first = solved[0] / per_epoch if solved else math.inf
    at_chance = [steps for steps in grid if means[steps] <= 0.6 and (not solved or steps < solved[0])]
    return Measurement(first, f"<= {E9_PAPER_EPOCHS} SPT epochs to {E9_SOLVED:g}", first <= E9_PAPER_EPOCHS,
                       {"accuracy_by_spt_epochs": {f"{s / per_epoch:.3g}": summary(v) for s, v in curve.items()},
                        "steps_per_epoch": per_epoch,
                        "last_at_chance_epochs": round(at_chance[-1] / per_epoch, 3) if at_chance else None,
                        "first_solved_epochs": round(first, 3) if solved else None,
                        "one_epoch_enough": bool(means[per_epoch] >= E9_SOLVED) if per_epoch in means else None})
