r"""Claims P6, P7: the out-of-sample plateau prediction at n = 400 against the runs at n = 400.

The prediction (``evidence/plateau/prediction_n400.json``, computed by
:mod:`spt_theory.checks.plateau_prediction` from the grid's n = 25-200 runs only) was committed in
bd8a28f (2026-12-02), before any run at n = 400.  Each claim reads it through its schema, never a
number restated here, and the committed grid (``evidence/plateau/plateau_runs.json``) for the runs
at n = 400 (:data:`spt_theory.plateau.design.PREDICTED`, trained by
:data:`spt_theory.plateau.design.PREDICTED_COMMAND`):

- **P6**: AdamW's escape step (first evaluation with test accuracy >= 0.6) at n = 400, the exact-force
  law T_A ∝ s(n) / sigma_1(n); alternatives gradient flow under (A0) (T ∝ 1/beta_n) and T8's noise
  law under (A0) (T ∝ n s(n)), both outside the interval;
- **P7**: SPT's steps to 95% at n = 400, T_SPT ∝ n s_rec(n); alternatives the sign regime (T flat in
  n: outside) and gradient flow (inside: P7's interval cannot separate the law from gradient flow).

Rule (registered with the prediction): the claim holds if all three seeds fall inside the
single-seed interval.  One seed outside refutes it (a capped run whose cap is above the interval
is outside); while fewer than three seeds are in and none is outside it is INCONCLUSIVE, and with no
run at n = 400 (now) INCONCLUSIVE with the command that runs them.
"""

from __future__ import annotations

import math
import statistics

from spt_theory import evidence, stats
from spt_theory.checks import plateau_grid
from spt_theory.checks import plateau_prediction as pp
from spt_theory.claims import records
from spt_theory.claims.registry import Context, Measurement, claim
from spt_theory.plateau import design

GROUP = "Plateau law, out of sample"
ALTERNATIVE_NAMES = {"gradient_flow": "gradient flow under (A0), T ∝ 1/beta_n",
                     "a0_noise": "T8's noise law under (A0), T ∝ n s(n)",
                     "sign_regime": "sign regime, T flat in n",
                     "straight_line": "straight-line trend of the measured values (T = a + b n, no law)"}


def prediction_of(ctx: Context) -> dict:
    """The committed prediction of ``ctx``'s evidence (EvidenceError: an ERROR row)."""
    return pp.load(ctx.evidence_root / evidence.PLATEAU / pp.NAME, ctx.settings())


def runs_at(summary: dict, kind: str, length: int) -> dict[int, dict]:
    """The AdamW default-init runs of ``kind`` at ``length``, per seed (of several, the largest cap)."""
    out: dict[int, dict] = {}
    for row in summary["runs"]:
        if (row["kind"] == kind and row["length"] == length and row["optimiser"] == "adamw"
                and row["qk_scale"] == 1.0 and (row["seed"] not in out or row["cap"] > out[row["seed"]]["cap"])):
            out[row["seed"]] = row
    return dict(sorted(out.items()))


def place(runs: dict[int, dict], lo: float, hi: float) -> dict[int, dict]:
    """Per seed: its value, whether capped, and where it falls against [lo, hi] (a capped run is
    outside only if its cap is above the interval, else undecided)."""
    per_seed = {}
    for seed, row in runs.items():
        value, capped = row["value"], row["capped"]
        where = ("outside" if value > hi else "undecided") if capped else ("inside" if lo <= value <= hi else "outside")
        per_seed[seed] = {"value": value, "capped": capped, "where": where}
    return per_seed


def trend(summary: dict, kind: str, target: int, window: tuple[float, float],
          fit: tuple[int, ...] = pp.FIT_LENGTHS) -> dict:
    """The straight-line trend of the measured values, T = a + b n by least squares over the runs at
    ``fit`` (every seed), carried to ``target``: the alternative that assumes no law at all; with
    whether the claim's ``window`` (lo, hi) excludes it."""
    cells = {n: c for n, c in plateau_grid.cells(summary, kind).items() if n in fit}
    xs = [n for n, c in cells.items() for _ in c["values"]]
    ys = [v for c in cells.values() for v in c["values"]]
    b = stats.slope_interval(xs, ys)
    a = statistics.fmean(ys) - b.value * statistics.fmean(xs)
    steps = a + b.value * target
    return {"law": "straight_line", "steps": steps, "slope": b.as_dict(), "fit_lengths": sorted(cells),
            "excluded": not window[0] <= steps <= window[1]}


def judge(summary: dict, tree: dict, kind: str, key: str) -> Measurement:
    """All seeds of the prediction inside its single-seed interval (module doc)."""
    prediction, target, seeds = tree["predictions"][key], tree["target_length"], tree["seeds"]
    lo, hi = prediction["interval"]
    runs = runs_at(summary, kind, target)
    line = [trend(summary, kind, target, (lo, hi))]
    lines = [f"prediction ({records.PREDICTION_400}, {tree['date']}, from n = "
             f"{', '.join(map(str, tree['fit_lengths']))} only): {prediction['steps']:.0f} steps, single-seed "
             f"interval [{lo:.0f}, {hi:.0f}] ({prediction['law']}); its standard error from the seeds "
             f"{prediction['log_standard_error']:.3f} in ln T, one seed's scatter {prediction['log_seed_sd']:.3f}"]
    lines.append(interval_method(prediction, len(tree["fit_lengths"]), len(seeds)))
    lines += alternative_lines(prediction["alternatives"])
    lines += alternative_lines(line, "added 2026-12-02 after the n = 25-200 data, not in the registration: ")
    if not runs:
        reason = (f"no n = {target} run yet (prediction committed in {records.PREDICTION_400}; "
                  f"run: {design.PREDICTED_COMMAND})")
    else:
        reason = None
    return decide(place(runs, lo, hi), seeds, lo, hi, lines, reason,
                  {"prediction": {k: prediction[k] for k in ("law", "steps", "interval", "log_standard_error",
                                                             "log_seed_sd", "alternatives")},
                   "straight_line": line[0], "rule": tree["registration_rule"], "target_length": target})


def interval_method(prediction: dict, lengths: int, seeds: int) -> str:
    """How the registered single-seed interval was made, its degrees of freedom, and the same
    interval with Student's t for tau's df in place of the registered 2 (printed; the verdict
    reads the registered interval)."""
    df = lengths * (seeds - 1)
    centre, half = math.log(prediction["steps"]), prediction["log_half_width"] / pp.WIDTH
    q = stats.t_quantile(0.95, df)
    return (f"interval method (registered): exp(ln T ± {pp.WIDTH:g} sqrt(tau^2 + SE^2)), tau pooled within n "
            f"({df} df), SE from {seeds} seeds ({seeds - 1} df); with t(0.975, {df}) = {q:.2f} in place of "
            f"{pp.WIDTH:g}: [{math.exp(centre - q * half):.0f}, {math.exp(centre + q * half):.0f}] (not the rule)")


def alternative_lines(alternatives: list[dict], prefix: str = "") -> list[str]:
    return [f"alternative: {prefix}{ALTERNATIVE_NAMES.get(alt['law'], alt['law'])}, {alt['steps']:.0f} steps: "
            + ("excluded (outside the interval)" if alt["excluded"] else
               "NOT excluded (inside the interval): this window cannot separate the law from it")
            for alt in alternatives]


def decide(per_seed: dict[int, dict], seeds: list[int], lo: float, hi: float, lines: list[str],
           reason: str | None, details: dict) -> Measurement:
    """The registered rule: one seed outside refutes; all seeds inside hold; else INCONCLUSIVE."""
    threshold = f"all {len(seeds)} seeds in [{lo:.0f}, {hi:.0f}]"
    outside = [s for s, r in per_seed.items() if r["where"] == "outside"]
    inside = [s for s, r in per_seed.items() if r["where"] == "inside"]
    measured = " / ".join((">= " if r["capped"] else "") + f"{r['value']:g}" for r in per_seed.values()) or "no run"
    details = {**details, "per_seed": per_seed}
    if outside:
        lines = [f"seed {', '.join(map(str, outside))} outside: the rule is refuted"
                 + (" (the other seeds need not run)" if len(per_seed) < len(seeds) else ""), *lines]
        return Measurement(measured, threshold, False, details, lines=tuple(lines))
    if set(inside) == set(seeds):
        return Measurement(measured, threshold, True, details, lines=tuple(lines))
    if reason is None:
        reason = (f"{len(inside)} of {len(seeds)} seeds at n = {details['target_length']} inside, none outside, "
                  f"{len(seeds) - len(inside)} not decided (run: {design.PREDICTED_COMMAND})")
    return Measurement(measured, threshold, False, details, inconclusive=reason,
                       lines=(f"INCONCLUSIVE: {reason}", *lines))


BACKTEST_FIT = (25, 50, 100)
BACKTEST_TARGET = 200
LAWS = {"scratch": ("exact_force", ("gradient_flow", "a0_noise"), 0.0),
        "spt": ("spt_noise", ("sign_regime", "gradient_flow"), pp.SPT_QUANTUM)}


def backtest(ctx: Context, kind: str) -> Measurement:
    """The procedure of P6 / P7 (:func:`spt_theory.checks.plateau_prediction.one_prediction`, the
    registered inputs at init) anchored on n = 25-100 only, predicting the grid's runs at n = 200,
    judged by the same rule: all three seeds inside the single-seed interval."""
    tree, summary, rms = prediction_of(ctx), plateau_grid.grid_of(ctx), plateau_grid.rms_of(ctx)
    main, alternatives, quantum = LAWS[kind]
    prediction = pp.one_prediction(summary, rms, tree["inputs"], kind, main, alternatives, quantum,
                                   fit=BACKTEST_FIT, target=BACKTEST_TARGET)
    lo, hi = prediction["interval"]
    cell = plateau_grid.cells(summary, kind, lengths=(BACKTEST_TARGET,)).get(BACKTEST_TARGET)
    runs = {} if cell is None else {s: {"value": v, "capped": cell["capped"]}
                                    for s, v in zip(summary["seeds"], cell["values"])}
    line = [trend(summary, kind, BACKTEST_TARGET, (lo, hi), BACKTEST_FIT)]
    ratios = prediction["in_sample_measured_over_law"]
    lines = [f"the same procedure from n = {', '.join(map(str, BACKTEST_FIT))} only: {prediction['steps']:.0f} steps "
             f"at n = {BACKTEST_TARGET}, single-seed interval [{lo:.0f}, {hi:.0f}] ({main})",
             interval_method(prediction, len(BACKTEST_FIT), len(summary["seeds"])),
             "in sample, measured / law: " + ", ".join(f"n {n} {r:.2f}" for n, r in ratios.items()),
             *alternative_lines(prediction["alternatives"]), *alternative_lines(line)]
    reason = None if runs else f"no whole row at n = {BACKTEST_TARGET} in the grid"
    return decide(place(runs, lo, hi), list(summary["seeds"]), lo, hi, lines, reason,
                  {"prediction": prediction, "straight_line": line[0], "target_length": BACKTEST_TARGET})


@claim("P6", section=GROUP, method="escape (acc>=.6) n 400, 3 seeds vs bd8a28f")
def check_p6(ctx: Context) -> Measurement:
    tree, summary = prediction_of(ctx), plateau_grid.grid_of(ctx)
    return judge(summary, tree, "scratch", "adamw_escape")


@claim("P7", section=GROUP, method="SPT steps to 95% n 400, 3 seeds vs bd8a28f")
def check_p7(ctx: Context) -> Measurement:
    tree, summary = prediction_of(ctx), plateau_grid.grid_of(ctx)
    return judge(summary, tree, "spt", "spt_steps_to_95")


@claim("P6b", section=GROUP, method="P6's procedure from n 25-100, judged at n 200", limits=(len(pp.SEEDS),))
def check_p6b(ctx: Context) -> Measurement:
    return backtest(ctx, "scratch")


@claim("P7b", section=GROUP, method="P7's procedure from n 25-100, judged at n 200", limits=(len(pp.SEEDS),))
def check_p7b(ctx: Context) -> Measurement:
    return backtest(ctx, "spt")
