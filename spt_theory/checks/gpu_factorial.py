"""Claims G6f, G1f, G1fr, G9f, G4f, G3f, G2f, G8f: the pooling factorial on the GPU twin, exactly as
pre-registered in ``docs/preregistration/2026-12-05-gpu-pooling-factorial.md`` (before any run).

verify reads the promoted evidence ``evidence/lra/gpu/factorial.json``
(:class:`~spt_theory.evidence.lra_schema.TwinEvidence`, held to the design field by field by
:func:`spt_theory.lra.gpu.twin_conform.conform`), never trains.  Without it a claim recorded as not
run is INCONCLUSIVE "not run" (a record that ran and lost its evidence is an ERROR).  The arms are
the members ``<pooling>.<arm>``; an arm's accuracy is its test accuracy at its best validation
evaluation within the steps read; contrasts are paired over the 8 seeds and the shared test
examples, 95% (:func:`spt_theory.stats.paired_difference`), one look.

- **G6f** (gate): ``max.proximity2d`` >= 88% within 3,000 steps on at least 6 of 8 seeds PASS, else
  FAIL; every other claim is read only after its PASS.
- **G1f**: ``mean.spt - mean.scratch`` at 12,000; PASS lo > 0, FAIL hi < 3.5.
- **G1fr**: seeds reaching 80% within 12,000, SPT vs scratch (mean), :func:`spt_theory.stats.reach_test`:
  PASS p < 0.05, FAIL scratch reaches it on at least as many seeds.
- **G9f**: (SPT - scratch) mean - (SPT - scratch) max, every arm within 8,000; PASS lo > 0, FAIL hi < 2.
- **G4f**: (hybrid - scratch) - 0.5 (SPT - scratch), mean, 12,000; PASS lo > 0, FAIL hi < 0.
- **G3f**: frozen - scratch, mean, 12,000: inside [-3, 3] PASS, wholly outside FAIL; INCONCLUSIVE
  while an arm is not at its plateau or scratch is not 5 points above chance.
- **G2f**: log(``spt_grid2d_ratio`` / scratch's ``grid2d_ratio``), mean, t over the seeds: PASS lo >
  log 2, FAIL hi < log 1.25.
- **G8f**: SPT - proximity2d, mean, 12,000; PASS lo > 0, FAIL hi < 0.
- A cut or stopped run is a pilot (every claim INCONCLUSIVE, its readings printed, judged by nothing);
  a dropped arm or a diverged run of a claim's arms makes it INCONCLUSIVE.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from spt_theory import stats
from spt_theory.checks import gpu_twin as twin
from spt_theory.checks import lra_sequential as base
from spt_theory.checks.lra_pooling import COMMON, GATE_BAR, GATE_T, INTERACTION_SUPPORT, REACH_BAR, REACH_LEVEL, SUPPORT
from spt_theory.checks.lra_short_contour import NOT_PROXIMAL, NOT_PROXIMAL_RATIO, PROXIMAL, PROXIMAL_RATIO, plateaued
from spt_theory.claims import records
from spt_theory.claims.registry import Context, Measurement, claim, undecided
from spt_theory.evidence import EvidenceError
from spt_theory.lra.gpu.twin_plan import FACTORIAL

SETTING = "factorial"
REGISTERED = FACTORIAL.registered
PRE = "pre-registered 2026-12-05 (before any run of the design)"
MEAN_T, MAX_T = dict(FACTORIAL.poolings)["mean"], dict(FACTORIAL.poolings)["max"]
GATE_SEEDS_NEEDED = 6
"""G6f: of the twin's 8 seeds (the CPU gate L6f: 3 of 4); every other number is the CPU design's."""
SEEDS = FACTORIAL.seeds
LEVEL = 0.95
Judged = tuple[str, list[str], dict, str | None]


def _difference(found: dict, path: Path, weights: list[tuple[float, str]], budget: int | None) -> stats.Interval:
    return stats.paired_difference([(w, twin._correct(found, path, arm, budget)) for w, arm in weights], LEVEL)


def _t(budget: int, found: dict) -> int | None:
    """``budget``, or None (every evaluation: a pilot's reading) for a cut or stopped run."""
    return None if found.get("cut") or found.get("stopped") else budget


def judge_gate(found: dict, path: Path) -> Judged:
    values = twin._accuracy(found, "max.proximity2d", GATE_T)
    reached = sum(v >= GATE_BAR for v in values.values())
    result = "PASS" if reached >= GATE_SEEDS_NEEDED else "FAIL"
    lines = [f"max pooling, proximity2d within {GATE_T} steps: {reached} of {len(values)} seeds >= {GATE_BAR:g}% ("
             + ", ".join(f"{s} {v:.1f}%" for s, v in sorted(values.items())) + f") -> {result}"]
    return result, lines, {"proximity2d": values, "at_bar": reached}, None


def judge_g1f(found: dict, path: Path) -> Judged:
    iv = _difference(found, path, [(1, "mean.spt"), (-1, "mean.scratch")], _t(MEAN_T, found))
    return base.one_look(iv, 0.0, SUPPORT, f"mean pooling, SPT - scratch at {MEAN_T} steps")


def judge_g1fr(found: dict, path: Path) -> Judged:
    reached = {arm: {s: v >= REACH_BAR for s, v in twin._accuracy(found, f"mean.{arm}", _t(MEAN_T, found)).items()}
               for arm in ("spt", "scratch")}
    test = stats.reach_test(reached["spt"], reached["scratch"])
    result = "PASS" if test.p_value < REACH_LEVEL else "FAIL" if test.only_a <= test.only_b else "INCONCLUSIVE"
    return result, [f"SPT vs scratch (mean), bar {REACH_BAR:g}% within {MEAN_T} steps: {test.text()} -> {result}"], \
        {"reach": dataclasses.asdict(test)}, None if result != "INCONCLUSIVE" else "p >= 0.05 with SPT ahead"


def judge_g9f(found: dict, path: Path) -> Judged:
    t = _t(COMMON, found)
    arms = {arm: twin._correct(found, path, arm, t) for arm in ("mean.spt", "mean.scratch", "max.spt", "max.scratch")}
    iv = stats.paired_difference([(1, arms["mean.spt"]), (-1, arms["mean.scratch"]), (-1, arms["max.spt"]),
                                  (1, arms["max.scratch"])], LEVEL)
    gain_max = stats.paired_difference([(1, arms["max.spt"]), (-1, arms["max.scratch"])], LEVEL)
    result, lines, details, why = base.one_look(iv, 0.0, INTERACTION_SUPPORT,
                                            f"SPT's gain under mean - under max at {COMMON} steps")
    lines.append(f"SPT - scratch under max pooling at {COMMON} steps (descriptive): {gain_max.text()}")
    return result, lines, details, why


def judge_g4f(found: dict, path: Path) -> Judged:
    iv = _difference(found, path, [(1, "mean.hybrid_qk"), (-base.SHARE, "mean.spt"), (base.SHARE - 1, "mean.scratch")],
                     _t(MEAN_T, found))
    return base.one_look(iv, 0.0, 0.0, f"(hybrid - scratch) - {base.SHARE:g} (SPT - scratch), mean pooling")


def judge_g3f(found: dict, path: Path) -> Judged:
    t = _t(MEAN_T, found)
    iv = _difference(found, path, [(1, "mean.frozen_qk"), (-1, "mean.scratch")], t)
    result = stats.within(iv, twin.BOUND)
    why = None if result != "INCONCLUSIVE" else f"the interval crosses ±{twin.BOUND:g}"
    scratch = float(np.mean(list(twin._accuracy(found, "mean.scratch", t).values())))
    lines = [f"frozen - scratch (mean pooling): {iv.text()} -> {result} [{iv.method}]"]
    details: dict = {"interval": iv.as_dict(), "scratch_mean": scratch}
    if t is not None:
        flat = {arm: plateaued(twin._runs(found, arm).values(), t) for arm in ("mean.scratch", "mean.frozen_qk")}
        lines.append("plateau: " + ", ".join(f"{k} rose {v[1]:+.1f} pts in the last quarter" for k, v in flat.items()))
        details["plateau"] = flat
        if not all(ok for ok, _ in flat.values()):
            result, why = "INCONCLUSIVE", "not at plateau: " + ", ".join(k for k, v in flat.items() if not v[0])
        elif scratch < twin.CHANCE + twin.CHANCE_MARGIN:
            result, why = "INCONCLUSIVE", f"scratch not {twin.CHANCE_MARGIN:g} pts above chance"
    return result, lines, details, why


def judge_g2f(found: dict, path: Path) -> Judged:
    spt, scratch = twin._runs(found, "mean.spt"), twin._runs(found, "mean.scratch")
    ratios = {}
    for seed, run in sorted(spt.items()):
        spt_ratio, scratch_ratio = run.get("spt_grid2d_ratio"), scratch.get(seed, {}).get("grid2d_ratio")
        if not (isinstance(spt_ratio, (int, float)) and isinstance(scratch_ratio, (int, float))
                and spt_ratio > 0 and scratch_ratio > 0):
            raise EvidenceError(f"{path}: seed {seed}: spt_grid2d_ratio or grid2d_ratio missing or not positive "
                                "(a scratch run probed at its last step)")
        ratios[seed] = math.log(spt_ratio / scratch_ratio)
    iv = stats.t_interval(ratios, LEVEL)
    result = base.window_verdict(iv, (PROXIMAL, NOT_PROXIMAL))
    lines = [f"log(SPT / scratch true 2-D neighbour attention) {iv.text(unit='', digits=2)}: x{math.exp(iv.value):.1f} "
             f"[x{math.exp(iv.low):.2f}, x{math.exp(iv.high):.2f}] -> {result}"]
    return result, lines, {"ratio": iv.as_dict()}, None if result != "INCONCLUSIVE" else "the interval spans x1.25 - x2"


def judge_g8f(found: dict, path: Path) -> Judged:
    iv = _difference(found, path, [(1, "mean.spt"), (-1, "mean.proximity2d")], _t(MEAN_T, found))
    return base.one_look(iv, 0.0, 0.0, "SPT - proximity2d, mean pooling")


CLAIMS: dict[str, tuple[tuple[str, ...], Callable[[dict, Path], Judged]]] = {
    "G6f": (("max.proximity2d",), judge_gate),
    "G1f": (("mean.spt", "mean.scratch"), judge_g1f),
    "G1fr": (("mean.spt", "mean.scratch"), judge_g1fr),
    "G9f": (("mean.spt", "mean.scratch", "max.spt", "max.scratch"), judge_g9f),
    "G4f": (("mean.hybrid_qk", "mean.spt", "mean.scratch"), judge_g4f),
    "G3f": (("mean.frozen_qk", "mean.scratch"), judge_g3f),
    "G2f": (("mean.spt", "mean.scratch"), judge_g2f),
    "G8f": (("mean.spt", "mean.proximity2d"), judge_g8f),
}
"""Each claim: the arms it reads and its judge."""


def verdict_of(ctx: Context, claim_id: str, found: dict | None = None) -> Judged | None:
    """The verdict of ``claim_id`` (module doc), or None without evidence."""
    found = twin.load(ctx, SETTING) if found is None else found
    if found is None:
        return None
    path = twin.evidence_path(ctx, SETTING)
    return judge(found, path, claim_id, lambda: verdict_of(ctx, "G6f", found))


def judge(found: dict, path: Path, claim_id: str, gate: Callable[[], Judged | None] | None = None) -> Judged:
    """``claim_id`` on the factorial result ``found`` (``gate``: G6f's verdict, for the others)."""
    arms, judge_claim = CLAIMS[claim_id]
    dropped = [arm for arm in arms if arm not in found["plan"]["arms"]]
    if dropped:
        return ("INCONCLUSIVE", [f"arms planned: {', '.join(found['plan']['arms'])}"], {"dropped": dropped},
                f"arm {', '.join(dropped)} dropped by the registered shrinking")
    diverged = sorted((r["arm"], r["seed"], r["diverged"]) for r in found["runs"]
                      if r["arm"] in arms and r.get("diverged") is not None)
    if diverged:
        return ("INCONCLUSIVE", [f"run ({a}, {s}) diverged at step {step} (train loss not finite)"
                                 for a, s, step in diverged], {"diverged": [list(d) for d in diverged]},
                f"{len(diverged)} run(s) of its arms diverged: " + ", ".join(f"({a}, {s})" for a, s, _ in diverged[:3]))
    ended = found.get("stopped") or found.get("cut")
    if ended is not None:
        how = "stopped by " + ended["by"] if found.get("stopped") else "cut"
        why = f"{how} in its {ended['phase']} phase at step {ended['step']} of {ended['planned']}: read as a pilot"
        if ended["step"] == 0 or ended["phase"] == "pretraining":
            return "INCONCLUSIVE", [ended["why"]], {"ended": ended}, why
        try:
            result, lines, details, _ = judge_claim(found, path)
        except EvidenceError as error:  # a pilot's reading may lack what the full run has (a probe)
            return "INCONCLUSIVE", [f"no pilot reading: {error}"], {"ended": ended}, why
        return ("INCONCLUSIVE", [f"pilot reading at the step reached (judged by nothing): {line}" for line in lines],
                {**details, "ended": ended, "pilot_verdict": result}, why)
    if claim_id != "G6f" and gate is not None:
        judged = gate()
        if judged is None or judged[0] != "PASS":
            state = "has no evidence" if judged is None else f"is {judged[0]}"
            return "INCONCLUSIVE", [], {"gate": "G6f"}, f"not read: gate G6f {state}, and the registration reads " \
                                                          "it only after a G6f PASS"
    return judge_claim(found, path)


THRESHOLDS = {claim_id: records.TABLE[claim_id].threshold for claim_id in CLAIMS}
"""Each claim's threshold in words, as its row holds it."""


def check(ctx: Context, claim_id: str) -> Measurement:
    threshold = THRESHOLDS[claim_id]
    path = twin.evidence_path(ctx, SETTING)
    judged = verdict_of(ctx, claim_id)
    record = records.RECORDS.get(claim_id)
    if judged is None and (record is None or record.ran):
        raise EvidenceError(f"{path}: missing (the record rests on it: {record.evidence if record else 'no record'})")
    if judged is None:
        return undecided("not run", threshold,
                         "not run yet: no GPU has run the factorial (docs/gpu.md: --setting factorial, then "
                         "python -m spt_theory.lra gpu promote OUT)", evidence=str(path))
    result, lines, details, why = judged
    details.update(evidence=str(path))
    return Measurement(result, threshold, result == "PASS", details, lines=tuple(lines),
                       inconclusive=(why or "undecided") if result == "INCONCLUSIVE" else None)


LIMITS = {
    "G6f": (GATE_SEEDS_NEEDED, SEEDS, GATE_BAR, GATE_T),
    "G1f": (0.0, SUPPORT, MEAN_T, SEEDS, LEVEL),
    "G1fr": (REACH_BAR, MEAN_T, REACH_LEVEL, SEEDS),
    "G9f": (COMMON, 0.0, INTERACTION_SUPPORT, SEEDS, LEVEL),
    "G4f": (base.SHARE, 0.0, MEAN_T, SEEDS, LEVEL),
    "G3f": (twin.BOUND, MEAN_T, twin.CHANCE_MARGIN, SEEDS, LEVEL),
    "G2f": (PROXIMAL_RATIO, NOT_PROXIMAL_RATIO, SEEDS, LEVEL),
    "G8f": (MEAN_T, 0.0, SEEDS, LEVEL),
}
"""The numbers each claim's threshold words state, as the judges above hold them (the words are
the row's: :data:`THRESHOLDS`)."""


def _register(claim_id: str, method: str):
    @claim(claim_id, section="GPU pooling factorial (pre-registered)", method=f"{PRE}; {method}",
           limits=LIMITS[claim_id])
    def check_claim(ctx: Context) -> Measurement:
        return check(ctx, claim_id)

    check_claim.__name__ = f"check_{claim_id.lower()}"
    return check_claim


PAIRED = "paired seeds x test examples, 95% t"
check_g6f = _register("G6f", "6-of-8-seeds rule (a gate)")
check_g1f = _register("G1f", PAIRED)
check_g1fr = _register("G1fr", "McNemar's exact test on the seeds")
check_g9f = _register("G9f", f"{PAIRED}, 4-arm contrast")
check_g4f = _register("G4f", PAIRED)
check_g3f = _register("G3f", f"{PAIRED}, plateau criterion")
check_g2f = _register("G2f", "t over seeds of log ratios")
check_g8f = _register("G8f", PAIRED)
