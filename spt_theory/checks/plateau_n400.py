r"""Claims P6, P7: the out-of-sample plateau prediction at n = 400 against the runs at n = 400.

The prediction (``evidence/plateau/prediction_n400.json``, computed by
:mod:`spt_theory.checks.plateau_prediction` from the grid's n = 25-200 runs only) was committed in
bd8a28f (2026-12-02), before any run at n = 400.  Each claim reads it through its schema, never a
number restated here, and the committed grid (``evidence/plateau/plateau_runs.json``) for the runs
at n = 400 (:data:`spt_theory.plateau.PREDICTED`, trained by
:data:`spt_theory.plateau.PREDICTED_COMMAND`):

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

from spt_theory import evidence, plateau
from spt_theory.checks import plateau as law
from spt_theory.checks import plateau_prediction as pp
from spt_theory.claims import records
from spt_theory.claims.registry import Context, Measurement, claim

GROUP = "Plateau law, out of sample"
ALTERNATIVE_NAMES = {"gradient_flow": "gradient flow under (A0), T ∝ 1/beta_n",
                     "a0_noise": "T8's noise law under (A0), T ∝ n s(n)",
                     "sign_regime": "sign regime, T flat in n"}


def prediction_of(ctx: Context) -> dict:
    """The committed prediction of ``ctx``'s evidence (EvidenceError: an ERROR row)."""
    return pp.load(ctx.evidence_root / evidence.PLATEAU / pp.NAME, ctx.model_settings)


def runs_at(summary: dict, kind: str, length: int) -> dict[int, dict]:
    """The AdamW default-init runs of ``kind`` at ``length``, per seed (of several, the largest cap)."""
    out: dict[int, dict] = {}
    for row in summary["runs"]:
        if (row["kind"] == kind and row["length"] == length and row["optimiser"] == "adamw"
                and row["qk_scale"] == 1.0 and (row["seed"] not in out or row["cap"] > out[row["seed"]]["cap"])):
            out[row["seed"]] = row
    return dict(sorted(out.items()))


def judge(summary: dict, tree: dict, kind: str, key: str) -> Measurement:
    """All seeds of the prediction inside its single-seed interval (module doc)."""
    prediction, target, seeds = tree["predictions"][key], tree["target_length"], tree["seeds"]
    lo, hi = prediction["interval"]
    threshold = f"all {len(seeds)} seeds in [{lo:.0f}, {hi:.0f}]"
    runs = runs_at(summary, kind, target)
    per_seed = {}
    for seed, row in runs.items():
        value, capped = row["value"], row["capped"]
        if capped:
            where = "outside" if value > hi else "undecided"
        else:
            where = "inside" if lo <= value <= hi else "outside"
        per_seed[seed] = {"value": value, "capped": capped, "where": where}
    outside = [s for s, r in per_seed.items() if r["where"] == "outside"]
    inside = [s for s, r in per_seed.items() if r["where"] == "inside"]
    lines = [f"prediction ({records.PREDICTION_400}, {tree['date']}, from n = "
             f"{', '.join(map(str, tree['fit_lengths']))} only): {prediction['steps']:.0f} steps, single-seed "
             f"interval [{lo:.0f}, {hi:.0f}] ({prediction['law']}); its standard error from the seeds "
             f"{prediction['log_standard_error']:.3f} in ln T, one seed's scatter {prediction['log_seed_sd']:.3f}"]
    for alt in prediction["alternatives"]:
        name = ALTERNATIVE_NAMES.get(alt["law"], alt["law"])
        lines.append(f"alternative: {name}, {alt['steps']:.0f} steps: " +
                     ("excluded (outside the interval)" if alt["excluded"] else
                      "NOT excluded (inside the interval): this window cannot separate the law from it"))
    measured = " / ".join((">= " if r["capped"] else "") + f"{r['value']:g}" for r in per_seed.values()) or "no run"
    details = {"prediction": {k: prediction[k] for k in ("law", "steps", "interval", "log_standard_error",
                                                        "log_seed_sd", "alternatives")},
               "per_seed": per_seed, "rule": tree["registration_rule"], "target_length": target}
    if outside:
        return Measurement(measured, threshold, False, details, lines=tuple(lines))
    if len(inside) == len(seeds) and set(inside) == set(seeds):
        return Measurement(measured, threshold, True, details, lines=tuple(lines))
    if not runs:
        reason = (f"no n = {target} run yet (prediction committed in {records.PREDICTION_400}; "
                  f"run: {plateau.PREDICTED_COMMAND})")
    else:
        reason = (f"{len(inside)} of {len(seeds)} seeds at n = {target} inside, none outside, "
                  f"{len(seeds) - len(inside)} not decided (run: {plateau.PREDICTED_COMMAND})")
    return Measurement(measured, threshold, False, details, inconclusive=reason,
                       lines=(f"INCONCLUSIVE: {reason}", *lines))


@claim("P6", section=GROUP, method="escape (acc>=.6) n 400, 3 seeds vs bd8a28f")
def check_p6(ctx: Context) -> Measurement:
    tree, summary = prediction_of(ctx), law.grid_of(ctx)
    return judge(summary, tree, "scratch", "adamw_escape")


@claim("P7", section=GROUP, method="SPT steps to 95% n 400, 3 seeds vs bd8a28f")
def check_p7(ctx: Context) -> Measurement:
    tree, summary = prediction_of(ctx), law.grid_of(ctx)
    return judge(summary, tree, "spt", "spt_steps_to_95")
