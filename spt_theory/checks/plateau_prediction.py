r"""The out-of-sample plateau prediction at n = 400 (T8 (e), ``proofs/T8_plateau_law.md``).

The AdamW escape law rebuilt on the exact label force (T9) and the measured noise scale: on the
plateau AdamW's drift is eta E[g] / s(n) with E[g] ∝ sigma_1(B(n)) (the exact force, not T8's 1/n),
so the escape step is

    T_A(n) = C s(n) / sigma_1(n)          (C: one constant, anchored on n = 25-200),

and SPT's steps to 95% follow T8 (d), T_SPT(n) = C' n s_rec(n) (T9 does not compute the
reconstruction force; (A0) is kept for it).  :func:`predict` computes both from the committed grid
(only the lengths of :data:`FIT_LENGTHS`) and the quantities measured at init
(:func:`measure_inputs`: sigma_1 by ``spt_theory.theory.force`` at every n, seeds 0-2; the gradient RMS
at n = 400, the same measurement as ``gradient_rms.json``'s): no run at n = 400 enters it.

Anchor, spread and interval, per law L(n) (s / sigma_1, or n s_rec):

- ln C = the mean over the 12 runs (n = 25-200, seeds 0-2) of ln T - ln L(n), L(n) from the means
  over the init seeds (s: arithmetic, as :func:`spt_theory.checks.plateau.noise_scale`; sigma_1:
  geometric);
- the prediction's standard error (log space) from the seeds: the same prediction made from each
  seed alone (its runs, its own s and sigma_1), spread over the 3 seeds / sqrt 3;
- tau, one seed's scatter: the pooled within-n standard deviation of ln T over n = 25-200 (8 df);
  for SPT with the quantisation of its grid (steps of sqrt 2: sd ln sqrt2 / sqrt 12) added in
  quadrature, since the measured SPT steps are grid points;
- interval for a **single seed**: exp(ln T_pred ± 2 sqrt(tau^2 + SE^2)); the rule is that all three
  seeds at n = 400 fall inside it (about 0.95^3 = 0.86 if the law is right and the seeds are independent).

Alternatives, anchored the same way on the same runs: gradient flow under (A0), L = 1/beta_n(p)
(T ∝ n^0.94-0.97; P2's law), and T8's AdamW law under (A0), L = n s(n) (P1's); for SPT the sign
regime, L = 1 (T8: "sign descent escapes in ~a*/eta steps at any n"), and gradient flow.

``python -m spt_theory.checks.plateau_prediction [--out PATH] [--promote]`` measures the inputs and
writes the prediction JSON (``--promote``: into the committed evidence, ``prediction_n400.json``).
"""

from __future__ import annotations

import argparse
import datetime
import math
import statistics
import sys
from pathlib import Path

from spt_theory import evidence
from spt_theory.checks import plateau_grid
from spt_theory.checks.force import VOCAB, P, design_model
from spt_theory.evidence import schema
from spt_theory.plateau import design
from spt_theory.plateau.runs import gradient_rms
from spt_theory.theory import force
from spt_theory.theory.per_token import pair_coupling_bound

FIT_LENGTHS = (25, 50, 100, 200)
"""The lengths the laws are anchored on (the committed grid; nothing at n = 400)."""
TARGET = 400
FORCE_LENGTHS = (*FIT_LENGTHS, TARGET)
SEEDS = design.SEEDS
DATE = "2026-12-02"
WIDTH = 2.0
"""Half-width of the single-seed interval in units of sqrt(tau^2 + SE^2) (log space)."""
SPT_QUANTUM = math.log(math.sqrt(2)) / math.sqrt(12)
"""sd of the rounding of a continuous step count up to the SPT grid (ratio sqrt 2 between points)."""
RULE = "holds if all three seeds at n = 400 fall inside the interval"
NAME = "prediction_n400.json"
PREDICTION = design.EVIDENCE / NAME
OUT = Path("runs/plateau") / NAME


# ------------------------------------------------------------------------------------ inputs at init
def measure_inputs(seeds: tuple[int, ...] = SEEDS) -> dict:
    """What the laws need at init (no training): sigma_1 of the largest head of the exact force
    (``force.label_force``, design model, V = 16, p = 1/2) at every n of :data:`FORCE_LENGTHS` and
    seed, and the gradient RMS of both losses at n = 400 (:func:`spt_theory.plateau.runs.gradient_rms`, 16 batches)."""
    sigma = {str(seed): {str(n): float(force.top_singular(force.label_force(design_model(n, seed), VOCAB, n, P)).max())
                         for n in FORCE_LENGTHS} for seed in seeds}
    rms = {objective: [gradient_rms(TARGET, objective, seed) for seed in seeds]
           for objective in ("supervised", "spt")}
    return {"sigma_1": sigma, "noise_scale_n400": rms}


def sigma_1(inputs: dict, seed: int | None = None) -> dict[int, float]:
    """sigma_1(n): one seed's, or the geometric mean over the seeds."""
    table = inputs["sigma_1"]
    if seed is not None:
        return {int(n): v for n, v in table[str(seed)].items()}
    ns = sorted({int(n) for by_n in table.values() for n in by_n})
    return {n: plateau_grid.geometric_mean([by_n[str(n)] for by_n in table.values()]) for n in ns}


def force_exponent(inputs: dict) -> dict:
    """T9's measured exponent of sigma_1 ∝ n^alpha from the stored force: per seed, mean, sd."""
    per_seed = [force.loglog_fit(list(FORCE_LENGTHS), [sigma_1(inputs, int(s))[n] for n in FORCE_LENGTHS])
                for s in inputs["sigma_1"]]
    return {"exponent": statistics.fmean(per_seed), "seed_sd": statistics.stdev(per_seed), "per_seed": per_seed}


def noise(rms: dict, inputs: dict, objective: str, seed: int | None = None) -> dict[int, float]:
    """s(n) at n = 25-200 (``gradient_rms.json``) and 400 (measured at init): the mean over seeds, or one seed's."""
    values = {int(n): v for n, v in rms["rms"][objective].items() if int(n) in FIT_LENGTHS}
    values[TARGET] = inputs["noise_scale_n400"][objective]
    if seed is not None:
        return {n: v[SEEDS.index(seed)] for n, v in values.items()}
    return {n: statistics.fmean(v) for n, v in values.items()}


# ------------------------------------------------------------------------------------ the laws
def laws(rms: dict, inputs: dict, p: float, seed: int | None = None) -> dict[str, dict[int, float]]:
    """L(n) at every n of :data:`FORCE_LENGTHS`, up to a constant, per law (module doc)."""
    s, s_rec, sig = noise(rms, inputs, "supervised", seed), noise(rms, inputs, "spt", seed), sigma_1(inputs, seed)
    ns = FORCE_LENGTHS
    return {"exact_force": {n: s[n] / sig[n] for n in ns},
            "gradient_flow": {n: 1 / pair_coupling_bound(n, p) for n in ns},
            "a0_noise": {n: n * s[n] for n in ns},
            "spt_noise": {n: n * s_rec[n] for n in ns},
            "sign_regime": {n: 1.0 for n in ns}}


def fit_runs(summary: dict, kind: str, fit: tuple[int, ...] = FIT_LENGTHS) -> dict[int, list[float]]:
    """The per-seed values of the AdamW default-init rows (``scratch`` or ``spt``) at the lengths
    ``fit`` only; ValueError if one is capped or missing (an anchor on a lower bound is no anchor)."""
    cells = {n: c for n, c in plateau_grid.cells(summary, kind).items() if n in fit}
    if sorted(cells) != list(fit) or any(c["capped"] for c in cells.values()):
        raise ValueError(f"{kind}: the anchor needs every n of {fit} with 3 uncapped seeds")
    return {n: list(c["values"]) for n, c in cells.items()}


def anchored(values: dict[int, list[float]], L: dict[int, float], target: int = TARGET) -> float:
    """ln T(target) = mean over runs of (ln T - ln L(n)) + ln L(target)."""
    offsets = [math.log(v) - math.log(L[n]) for n, vs in values.items() for v in vs]
    return statistics.fmean(offsets) + math.log(L[target])


def within_n_sd(values: dict[int, list[float]]) -> float:
    """Pooled within-n sd of ln T (one seed's scatter about its n's geometric mean)."""
    rss = sum((math.log(v) - statistics.fmean(math.log(u) for u in vs)) ** 2 for vs in values.values() for v in vs)
    dof = sum(len(vs) - 1 for vs in values.values())
    return math.sqrt(rss / dof)


def one_prediction(summary: dict, rms: dict, inputs: dict, kind: str, main: str, alternatives: tuple[str, ...],
                   quantum: float = 0.0, fit: tuple[int, ...] = FIT_LENGTHS, target: int = TARGET) -> dict:
    """The prediction of law ``main`` for the ``kind`` rows at ``target`` from the runs at ``fit``
    (module doc; the registered one: n = 25-200 to 400; the backtest: n = 25-100 to 200)."""
    p = summary["data"]["p"]
    values = fit_runs(summary, kind, fit)
    centre = anchored(values, laws(rms, inputs, p)[main], target)
    per_seed = [anchored({n: [vs[i]] for n, vs in values.items()}, laws(rms, inputs, p, seed)[main], target)
                for i, seed in enumerate(SEEDS)]
    se = statistics.stdev(per_seed) / math.sqrt(len(per_seed))
    tau = math.sqrt(within_n_sd(values) ** 2 + quantum ** 2)
    half = WIDTH * math.sqrt(tau ** 2 + se ** 2)
    lo, hi = math.exp(centre - half), math.exp(centre + half)
    all_laws = laws(rms, inputs, p)
    offset = centre - math.log(all_laws[main][target])
    in_sample = {str(n): plateau_grid.geometric_mean(vs) / math.exp(offset + math.log(all_laws[main][n]))
                 for n, vs in values.items()}
    alts = []
    for name in alternatives:
        value = math.exp(anchored(values, all_laws[name], target))
        alts.append({"law": name, "steps": value, "excluded": not lo <= value <= hi})
    return {"law": main, "steps": math.exp(centre), "interval": [lo, hi], "log_standard_error": se,
            "log_seed_sd": tau, "log_half_width": half, "per_seed_anchor_steps": [math.exp(v) for v in per_seed],
            f"law_ratio_{target}_over_{max(fit)}": all_laws[main][target] / all_laws[main][max(fit)],
            "in_sample_measured_over_law": in_sample,
            "fit_values": {str(n): vs for n, vs in values.items()}, "alternatives": alts}


def predict(summary: dict, rms: dict, inputs: dict) -> dict:
    """Both predictions at n = 400 from the grid's n = 25-200 runs and the inputs at init; each
    says what a run at n = 400 needs to decide it (a cap, or SPT grid points, above the interval)."""
    adamw = one_prediction(summary, rms, inputs, "scratch", "exact_force", ("gradient_flow", "a0_noise"))
    spt = one_prediction(summary, rms, inputs, "spt", "spt_noise", ("sign_regime", "gradient_flow"), SPT_QUANTUM)
    adamw["decides_with_cap_at_least"] = math.ceil(adamw["interval"][1])
    spt["spt_grid_points_inside"] = [g for g in design.SPT_GRID if spt["interval"][0] <= g <= spt["interval"][1]]
    spt["decides_with_spt_grid_up_to_at_least"] = math.ceil(spt["interval"][1])
    return {"adamw_escape": adamw, "spt_steps_to_95": spt}


def record(summary: dict, rms: dict, inputs: dict) -> dict:
    """The prediction JSON (schema :class:`spt_theory.evidence.schema.PlateauPrediction`)."""
    return {"schema_version": schema.SCHEMA_VERSION,
            "what": "pre-registered plateau prediction at n = 400 from the law anchored on n = 25-200 "
                    "(spt_theory.checks.plateau_prediction)",
            "date": DATE, "registration_rule": RULE, "target_length": TARGET, "fit_lengths": list(FIT_LENGTHS),
            "seeds": list(SEEDS), "interval_rule": f"single seed: exp(ln T ± {WIDTH:g} sqrt(tau^2 + SE^2))",
            "inputs": inputs, "force_exponent": force_exponent(inputs),
            "predictions": predict(summary, rms, inputs), "model_defaults": schema.model_defaults()}


def load(path: Path, settings=None) -> dict:
    """The prediction JSON at ``path``, validated and held to the model ``settings``; EvidenceError
    if missing, not of the format or made at other settings."""
    return schema.load(path, schema.PlateauPrediction, settings)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m spt_theory.checks.plateau_prediction",
                                description="Measure the inputs at init and write the n = 400 prediction.")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--promote", action="store_true", help=f"copy it into the committed evidence ({NAME})")
    args = p.parse_args(argv)
    summary = plateau_grid.load(design.SUMMARY)
    if any(r["length"] == TARGET for r in summary["runs"]):
        print(f"refused: the committed grid already has runs at n = {TARGET}", file=sys.stderr)
        return 2
    out = record(summary, plateau_grid.load(design.GRADIENT_RMS), measure_inputs())
    from spt_theory.util.files import write_json

    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json(args.out, out)
    print(f"wrote {args.out} ({datetime.date.today()})")
    if args.promote:
        print(f"promoted -> {evidence.promote(args.out, evidence.PLATEAU, NAME)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
