"""Claims G1-G4 (the GPU twin on contour-6 Pathfinder-16) and G1s-G4s, G6s (on the short contour),
exactly as pre-registered in ``docs/preregistration/2026-12-04-gpu-twin.md`` (before any GPU run).

verify reads the promoted evidence ``evidence/lra/gpu/<setting>.json``
(:class:`~spt_theory.evidence.lra_schema.TwinEvidence`, ``python -m spt_theory.lra gpu promote``),
never trains.  Without it a claim recorded as not run yet is INCONCLUSIVE "not run yet" (a record
that ran and lost its evidence is an ERROR).

- An arm's accuracy: test accuracy at its best validation evaluation within T, the plan's steps
  (SPT's counted; ties at their mean); contrasts paired over the seeds and the 10,000 shared test
  examples, 95% (:func:`spt_theory.stats.paired_difference`).
- **G1 / G1s**: SPT - scratch; PASS lo > 0, FAIL hi < 3.5.  **G4 / G4s**: proximity init - scratch,
  the same rule.  **G2 / G2s**: frozen - scratch; PASS inside [-3, 3], FAIL wholly outside;
  INCONCLUSIVE while either arm is not at its plateau or scratch is not 5 points above chance.
  **G3 / G3s**: (hybrid - scratch) - 0.5 (SPT - scratch); PASS lo > 0, FAIL hi < 0; only after a
  G1 (G1s) PASS.  **G6s** (gate): the proximity init at >= 88% on at least 6 of the 8 seeds PASS,
  on at most 2 FAIL; G1s-G4s only after a G6s PASS.
- A cut run (its deadline) or a stopped one (a signal or an error on the lent machine) is a pilot:
  every claim INCONCLUSIVE, its intervals at the step reached printed.  A claim whose arm the plan
  dropped, or one of whose arms has a diverged run (a non-finite train loss), is INCONCLUSIVE.
- The evidence must be its registration's design (:func:`spt_theory.lra.gpu.twin_conform.conform`:
  sizes, model, optimiser, seeds 500-507, arms, steps, evaluations, the registered data's
  fingerprint): the first field that differs is an ERROR row naming it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from spt_theory import stats
from spt_theory.checks import lra_sequential as base
from spt_theory.checks import lra_short_contour as short
from spt_theory.claims import records
from spt_theory.claims.registry import Context, Measurement, claim, undecided
from spt_theory.evidence import EvidenceError, lra_schema, require, schema
from spt_theory.lra.curves import best_correctness, best_within
from spt_theory.lra.gpu.twin_conform import conform
from spt_theory.lra.gpu.twin_plan import MIN_SEEDS
from spt_theory.lra.gpu.twin_plan import REGISTERED as REGISTERED  # the document the G claims are registered in

PRE = "pre-registered 2026-12-04 (before any GPU run)"
SUPPORT, BOUND, CHANCE_MARGIN, GATE_BAR = short.SUPPORT, short.BOUND, short.CHANCE_MARGIN, short.GATE_BAR
"""The G claims repeat the CPU short-contour rules (written there, once)."""
CHANCE = 50.0
GATE_PASS, GATE_FAIL = 6, 2
"""G6s: PASS with at least 6 of the 8 seeds at the bar, FAIL with at most 2."""
LEVEL = 0.95


@dataclass(frozen=True)
class Contrast:
    """A G claim: its setting, the arms' weights, its rule, and the claims that must PASS first."""

    setting: str
    weights: tuple[tuple[str, float], ...]
    rule: str
    """``gain`` (PASS lo > 0, FAIL hi < SUPPORT), ``share`` (PASS lo > 0, FAIL hi < 0), ``equal``
    (inside / wholly outside [-BOUND, BOUND], plateau and chance criteria), ``gate`` (G6s)."""
    after: tuple[str, ...] = ()
    threshold: str = ""
    limits: tuple[float, ...] = ()
    """The constants the threshold words state (:attr:`spt_theory.claims.registry.Claim.limits`)."""


def _gain(arm: str) -> tuple[tuple[str, float], ...]:
    return ((arm, 1.0), ("scratch", -1.0))


HYBRID = (("hybrid_qk", 1.0), ("spt", -0.5), ("scratch", -0.5))
GAIN = f"PASS lo > 0, FAIL hi < {SUPPORT:g} pts at the plan's steps; {MIN_SEEDS} seeds, {LEVEL:.0%}"
GAIN_LIMITS = (0.0, SUPPORT, MIN_SEEDS, LEVEL)
EQUAL = (f"|frozen - scratch| <= {BOUND:g} at the plan's steps, both at plateau, scratch >= "
         f"{CHANCE + CHANCE_MARGIN:g}%; {MIN_SEEDS} seeds, {LEVEL:.0%}")
EQUAL_LIMITS = (BOUND, CHANCE + CHANCE_MARGIN, MIN_SEEDS, LEVEL)
SHARE = "(hybrid - scratch) - 0.5 (SPT - scratch): PASS lo > 0, FAIL hi < 0; after a {} PASS"
SHARE_LIMITS = (-HYBRID[1][1], 0.0)
GATE_LIMITS = (GATE_BAR, GATE_PASS, MIN_SEEDS, GATE_FAIL)
CLAIMS = {
    "G1": Contrast("contour6", _gain("spt"), "gain", threshold=f"SPT - scratch: {GAIN}", limits=GAIN_LIMITS),
    "G2": Contrast("contour6", _gain("frozen_qk"), "equal", threshold=EQUAL, limits=EQUAL_LIMITS),
    "G3": Contrast("contour6", HYBRID, "share", ("G1",), SHARE.format("G1"), SHARE_LIMITS),
    "G4": Contrast("contour6", _gain("proximity"), "gain", threshold=f"proximity - scratch: {GAIN}",
                   limits=GAIN_LIMITS),
    "G6s": Contrast("short", (("proximity", 1.0),), "gate",
                    threshold=f"proximity init >= {GATE_BAR:g}%: PASS on >= {GATE_PASS} of {MIN_SEEDS} seeds, "
                              f"FAIL on <= {GATE_FAIL}", limits=GATE_LIMITS),
    "G1s": Contrast("short", _gain("spt"), "gain", ("G6s",), f"SPT - scratch: {GAIN}; after a G6s PASS", GAIN_LIMITS),
    "G2s": Contrast("short", _gain("frozen_qk"), "equal", ("G6s",), f"{EQUAL}; after a G6s PASS", EQUAL_LIMITS),
    "G3s": Contrast("short", HYBRID, "share", ("G6s", "G1s"), SHARE.format("G6s and G1s"), SHARE_LIMITS),
    "G4s": Contrast("short", _gain("proximity"), "gain", ("G6s",), f"proximity - scratch: {GAIN}; after a G6s PASS",
                    GAIN_LIMITS),
}


def evidence_path(ctx: Context, setting: str) -> Path:
    return Path(ctx.lra_evidence) / "gpu" / f"{setting}.json"


def load(ctx: Context, setting: str) -> dict | None:
    """The promoted twin result of ``setting``, or None where nothing stands at its path yet; a
    folder, FIFO, device or dangling link there is an EvidenceError (:func:`schema.load`), never
    "not run"."""
    path, settings = evidence_path(ctx, setting), ctx.settings()  # what the evidence will be held to
    if not path.exists() and not path.is_symlink():
        return None
    found = schema.load(path, lra_schema.TwinEvidence, settings)
    require(found["setting"] == setting, path, "setting", repr(setting))
    faults = conform(found)  # the registration's design, field by field (as lra.decide.conform)
    if faults:
        raise EvidenceError(f"{path}: {faults[0]}" + (f" (and {len(faults) - 1} more)" if len(faults) > 1 else ""))
    return found


def _runs(found: dict, arm: str) -> dict[int, dict]:
    return {run["seed"]: run for run in found["runs"] if run["arm"] == arm}


def _correct(found: dict, path: Path, arm: str, budget: int | None) -> dict[int, np.ndarray]:
    out = {}
    for seed, run in _runs(found, arm).items():
        value = best_correctness(run["curve"], budget, path, f"run ({arm}, {seed})")
        if value is None:
            raise EvidenceError(f"{path}: run ({arm}, {seed}): no evaluation within {budget} steps")
        out[seed] = value
    return out


def _accuracy(found: dict, arm: str, budget: int | None) -> dict[int, float]:
    out = {}
    for seed, run in _runs(found, arm).items():
        value = best_within(run["curve"], budget)
        if value is None:
            raise EvidenceError(f"run ({arm}, {seed}): no evaluation within {budget} steps")
        out[seed] = 100 * value
    return out


def judge(found: dict, path: Path, contrast: Contrast, budget: int | None) -> tuple[str, list[str], dict, str | None]:
    """The verdict of ``contrast`` on ``found`` read at ``budget`` steps (None: every evaluation)."""
    if contrast.rule == "gate":
        values = _accuracy(found, "proximity", budget)
        reached = sum(v >= GATE_BAR for v in values.values())
        result = "PASS" if reached >= GATE_PASS else "FAIL" if reached <= GATE_FAIL else "INCONCLUSIVE"
        lines = [f"proximity init: {reached} of {len(values)} seeds >= {GATE_BAR:g}% ("
                 + ", ".join(f"{s} {v:.1f}%" for s, v in sorted(values.items())) + f") -> {result}"]
        why = None if result != "INCONCLUSIVE" else f"{reached} of {len(values)} seeds at the bar: between the rules"
        return result, lines, {"proximity": values, "at_bar": reached}, why
    arms = [(weight, _correct(found, path, arm, budget)) for arm, weight in contrast.weights]
    iv = stats.paired_difference(arms, LEVEL)
    if contrast.rule == "gain":
        window = (0.0, SUPPORT)
        result = base.window_verdict(iv, window)
        why = None if result != "INCONCLUSIVE" else f"the interval spans 0 and {SUPPORT:g}"
    elif contrast.rule == "share":
        window = (0.0, 0.0)
        result = base.window_verdict(iv, window)
        why = None if result != "INCONCLUSIVE" else "the interval spans 0"
    else:
        window = (-BOUND, BOUND)
        result = stats.within(iv, BOUND)
        why = None if result != "INCONCLUSIVE" else f"the interval crosses ±{BOUND:g}"
    names = " ".join(f"{'+' if w > 0 else '-'} {abs(w):g} {arm}" for arm, w in contrast.weights).lstrip("+ ")
    means = {arm: float(np.mean(list(_accuracy(found, arm, budget).values()))) for arm, _ in contrast.weights}
    means.setdefault("scratch", float(np.mean(list(_accuracy(found, "scratch", budget).values()))))
    lines = [f"{names}: {iv.text(against=window)} -> {result} [{iv.method}]",
             "means over seeds " + ", ".join(f"{k} {v:.1f}%" for k, v in means.items())]
    details = {"interval": iv.as_dict(), "means": means}
    if contrast.rule == "equal" and budget is not None:
        flat = {arm: short.plateaued(_runs(found, arm).values(), budget) for arm in ("scratch", "frozen_qk")}
        lines.append("plateau: " + ", ".join(f"{k} rose {v[1]:+.1f} pts in the last quarter" for k, v in flat.items()))
        details["plateau"] = flat
        if not all(ok for ok, _ in flat.values()):
            result, why = "INCONCLUSIVE", "not at plateau: " + ", ".join(k for k, v in flat.items() if not v[0])
        elif means["scratch"] < CHANCE + CHANCE_MARGIN:
            result, why = "INCONCLUSIVE", f"scratch not {CHANCE_MARGIN:g} pts above chance"
    return result, lines, details, why


def verdict_of(ctx: Context, claim_id: str) -> tuple[str, list[str], dict, str | None] | None:
    """The verdict of ``claim_id`` (module doc), or None without evidence."""
    contrast = CLAIMS[claim_id]
    found = load(ctx, contrast.setting)
    if found is None:
        return None
    path = evidence_path(ctx, contrast.setting)
    plan, cut = found["plan"], found["cut"]
    dropped = [arm for arm, _ in contrast.weights if arm not in plan["arms"]]
    if dropped:
        return ("INCONCLUSIVE", [f"arms planned: {', '.join(plan['arms'])}"], {"dropped": dropped},
                f"arm {', '.join(dropped)} dropped by the registered shrinking")
    arms = [arm for arm, _ in contrast.weights]
    diverged = sorted((r["arm"], r["seed"], r["diverged"]) for r in found["runs"]
                      if r["arm"] in arms and r.get("diverged") is not None)
    if diverged:
        return ("INCONCLUSIVE", [f"run ({a}, {s}) diverged at step {step} (train loss not finite)"
                                 for a, s, step in diverged], {"diverged": [list(d) for d in diverged]},
                f"{len(diverged)} run(s) of its arms diverged (a NaN or infinite train loss): "
                + ", ".join(f"({a}, {s})" for a, s, _ in diverged[:3]))
    stopped = found.get("stopped")
    if stopped is not None:
        why = (f"stopped by {stopped['by']} in its {stopped['phase']} phase at step {stopped['step']} of "
               f"{stopped['planned']}: a stopped run is read as a pilot")
        if stopped["step"] == 0:
            return "INCONCLUSIVE", [stopped["why"]], {"stopped": stopped}, why
        result, lines, details, _ = judge(found, path, contrast, None)
        return ("INCONCLUSIVE", [f"pilot reading at the step reached (judged by nothing): {line}" for line in lines],
                {**details, "stopped": stopped, "pilot_verdict": result}, why)
    if cut is not None:
        why = f"cut at {cut['phase']} step {cut['step']} of {cut['planned']}: a cut run is read as a pilot"
        if cut["phase"] == "pretraining":
            return "INCONCLUSIVE", [cut["why"]], {"cut": cut}, why
        result, lines, details, _ = judge(found, path, contrast, None)
        return ("INCONCLUSIVE", [f"pilot reading at the step reached (judged by nothing): {line}" for line in lines],
                {**details, "cut": cut, "pilot_verdict": result}, why)
    for gate in contrast.after:
        judged = verdict_of(ctx, gate)
        if judged is None or judged[0] != "PASS":
            state = "has no evidence" if judged is None else f"is {judged[0]}"
            return "INCONCLUSIVE", [], {"gate": gate}, f"not read: {gate} {state}, and the registration reads it " \
                                                        f"only after a {gate} PASS"
    return judge(found, path, contrast, plan["steps"])


def check(ctx: Context, claim_id: str) -> Measurement:
    contrast = CLAIMS[claim_id]
    path = evidence_path(ctx, contrast.setting)
    judged = verdict_of(ctx, claim_id)
    record = records.RECORDS.get(claim_id)
    if judged is None and (record is None or record.ran):
        raise EvidenceError(f"{path}: missing (the record rests on it: {record.evidence if record else 'no record'})")
    if judged is None:
        return undecided("not run", contrast.threshold,
                         f"not run yet: no GPU has run the twin ({contrast.setting}; docs/gpu.md, then "
                         "python -m spt_theory.lra gpu promote OUT)", evidence=str(path))
    result, lines, details, why = judged
    details.update(evidence=str(path))
    return Measurement(result, contrast.threshold, result == "PASS", details, lines=tuple(lines),
                       inconclusive=(why or "undecided") if result == "INCONCLUSIVE" else None)


def _register(claim_id: str, method: str):
    @claim(claim_id, section="GPU twin (pre-registered)", method=f"{PRE}; {method}", limits=CLAIMS[claim_id].limits)
    def check_claim(ctx: Context) -> Measurement:
        return check(ctx, claim_id)

    check_claim.__name__ = f"check_{claim_id.lower()}"
    return check_claim


PAIRED = "paired seeds x test examples, 95% t"
check_g1 = _register("G1", PAIRED)
check_g2 = _register("G2", f"{PAIRED}, plateau criterion")
check_g3 = _register("G3", PAIRED)
check_g4 = _register("G4", PAIRED)
check_g6s = _register("G6s", "seeds at the bar (a gate)")
check_g1s = _register("G1s", PAIRED)
check_g2s = _register("G2s", f"{PAIRED}, plateau criterion")
check_g3s = _register("G3s", PAIRED)
check_g4s = _register("G4s", PAIRED)
