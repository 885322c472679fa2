"""Claims L6s, L1s, L2s, L3s, L4s, L7s (short-contour Pathfinder-16), L3p (ListOps at its plateau)
and L2b (L2 from the L1b checkpoints), exactly as pre-registered in
``docs/preregistration/2026-12-04-lra-short-contour.md`` (before any of their runs).

verify reads the evidence ``evidence/lra/decide/<x>.json`` (:mod:`spt_theory.lra.decide`), never
trains.  The shared machinery (loading, best-validation correctness, sequential looks) is
:mod:`spt_theory.checks.lra_sequential`'s.

- **L6s** (kind ``gate``): proximity init, seeds 400 and 401, best within T steps; PASS iff both
  >= 88.0% (the audit's one-hop ceiling 98.0% - 10), FAIL iff both below, else INCONCLUSIVE.  Every
  other short-contour claim runs only after an L6s PASS.
- **L1s**: D = SPT - scratch at T; PASS iff lo > 0, FAIL iff hi < 3.5; looks 300-303, 300-305 (99%),
  300-307 (95%).
- **L4s**: (hybrid - scratch) - 0.5 (SPT - scratch); PASS lo > 0, FAIL hi < 0; L1s's looks; only
  after an L1s PASS.
- **L2s** / **L2b**: R = log(grid ratio of the SPT checkpoint / of scratch's final checkpoint) per
  seed, 95% t: PASS iff lo > log 2, FAIL iff hi < log 1.25.
- **L3s** / **L3p**: frozen - scratch at T (each at its best validation evaluation), 95% t: PASS iff
  inside [-3, 3], FAIL iff wholly outside; INCONCLUSIVE while an arm is not at its plateau (best
  validation over the budget's last quarter more than 1 point above the first three quarters', on
  the mean over seeds) or scratch is not 5 points above chance.
- **L7s**: 2 layers, D = SPT - scratch at T, 6 seeds (300-305), 95%: PASS iff lo > 0, FAIL iff
  hi < 3.5.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from spt_theory import stats
from spt_theory.checks import lra_sequential as base
from spt_theory.claims import records
from spt_theory.claims.registry import Context, Measurement, undecided
from spt_theory.evidence import EvidenceError
from spt_theory.lra import designs

T = designs.CONTOUR3_ARMS["recipe=spt"]
"""The short-contour budget (optimiser steps per arm, SPT's counted)."""
GATE_BAR = 88.0
"""L6s: the one-hop ceiling of the registered data (bag of 3x3 patterns, 98.0%) minus 10 points."""
SUPPORT = base.SUPPORT  # each rule below repeats a 2026-12-02 one (lra_sequential): written there
LOOKS = designs.EXPERIMENTS["l1s"].looks
L7S_LOOK = designs.EXPERIMENTS["l7s"].looks
BOUND, CHANCE_MARGIN = base.L3B_BOUND, base.CHANCE_MARGIN
PLATEAU_RISE = 1.0
"""Plateau criterion: best validation over the budget's last quarter at most this many points above
the best over its first three quarters (on the mean over seeds of best-so-far validation)."""
PROXIMAL_RATIO, NOT_PROXIMAL_RATIO = 2.0, 1.25
"""L2s / L2b: PASS when SPT's neighbour attention is at least twice scratch's, FAIL below 1.25 times."""
PROXIMAL, NOT_PROXIMAL = math.log(PROXIMAL_RATIO), math.log(NOT_PROXIMAL_RATIO)
LEVEL = 0.95
"""The level of every one-look interval here (L2s, L2b, L3s, L3p)."""
PRE = "pre-registered 2026-12-04"
SCRATCH = designs.CONTOUR3_SCRATCH
FROZEN = f"recipe=scratch,freeze=qk,finetune_epochs={designs.CONTOUR3_EPOCHS}"
PROXIMITY = f"recipe=scratch,init=proximity,finetune_epochs={designs.CONTOUR3_EPOCHS}"
LISTOPS_SCRATCH, LISTOPS_FROZEN = "recipe=scratch,finetune_epochs=60", "recipe=scratch,freeze=qk,finetune_epochs=60"
L3P_BUDGET = designs.EXPERIMENTS["l3p"].arms[LISTOPS_SCRATCH]


def _row(found: dict, spec: str, path: Path) -> dict:
    row = base.cell(found, spec)
    if row is None:
        raise EvidenceError(f"{path}: cells: the registered arm {spec} is missing")
    return row


def judge_l6s(found: dict, path: Path):
    proximity = _row(found, PROXIMITY, path)
    seeds = designs.EXPERIMENTS["l6s"].seeds
    have = base.seeds_in(proximity)
    values = {s: base.accuracy(proximity, s, T) for s in seeds if s in have}
    lines = ["proximity init: " + ", ".join(f"seed {s} {v:.1f}%" for s, v in values.items())
             + f" (bar {GATE_BAR:g}% = one-hop ceiling 98.0% - 10)"]
    details = {"proximity": values, "bar": GATE_BAR}
    missing = [s for s in seeds if s not in values]
    if missing:
        raise EvidenceError(f"{path}: cells ({proximity['label']}): registered seeds {' '.join(map(str, missing))} "
                            "missing")
    if all(v >= GATE_BAR for v in values.values()):
        return "PASS", lines, details, None
    if all(v < GATE_BAR for v in values.values()):
        return "FAIL", lines, details, None
    return "INCONCLUSIVE", lines, details, "the two seeds disagree"


def _gain(found: dict, path: Path, spt_spec: str, scratch_spec: str, looks, budget: int = T):
    scratch, spt = _row(found, scratch_spec, path), _row(found, spt_spec, path)

    def interval(seeds, level):
        return stats.paired_difference([(1, base.correct(spt, path, seeds, budget)),
                                        (-1, base.correct(scratch, path, seeds, budget))], level)

    result, lines, details, why = base.sequential(base.seeds_in(scratch, spt), interval, (0.0, SUPPORT), looks)
    have = sorted(base.seeds_in(scratch, spt))
    if have:
        means = {name: float(np.mean([base.accuracy(row, s, budget) for s in have])) for name, row in
                 (("scratch", scratch), ("SPT", spt))}
        lines.append("means over seeds " + ", ".join(f"{k} {v:.1f}%" for k, v in means.items())
                     + (f"; scratch clears the gate's bar {GATE_BAR:g}% too" if means["scratch"] >= GATE_BAR else ""))
        details["means"] = means
    return result, lines, details, why


def judge_l1s(found: dict, path: Path):
    return _gain(found, path, "recipe=spt", SCRATCH, LOOKS)


def judge_l7s(found: dict, path: Path):
    return _gain(found, path, "recipe=spt,layers=2",
                 f"recipe=scratch,layers=2,finetune_epochs={designs.CONTOUR3_EPOCHS}", L7S_LOOK)


def judge_l4s(found: dict, path: Path):
    scratch, spt, hybrid = (_row(found, s, path) for s in (SCRATCH, "recipe=spt", "recipe=spt,keep=qk"))

    def interval(seeds, level):
        arms = [base.correct(row, path, seeds, T) for row in (hybrid, spt, scratch)]
        return stats.paired_difference([(1, arms[0]), (-base.SHARE, arms[1]), (base.SHARE - 1, arms[2])], level)

    return base.sequential(base.seeds_in(scratch, spt, hybrid), interval, WINDOWS["l4s"], LOOKS)


def proximity_ratios(found: dict, path: Path, spt_spec: str, scratch_spec: str) -> dict[int, float]:
    """Per seed: log(grid ratio after SPT / grid ratio of scratch's final checkpoint)."""
    spt, scratch = _row(found, spt_spec, path), _row(found, scratch_spec, path)
    by_seed = {run["seed"]: run for run in scratch["runs"]}
    ratios = {}
    for run in spt["runs"]:
        other = by_seed.get(run["seed"])
        if other is None:
            raise EvidenceError(f"{path}: seed {run['seed']}: an SPT run without its scratch run")
        for name, value in (("spt_grid_ratio", run.get("spt_grid_ratio")), ("grid_ratio", other.get("grid_ratio"))):
            if not isinstance(value, (int, float)) or not value > 0:
                raise EvidenceError(f"{path}: seed {run['seed']}: {name} missing or not positive")
        ratios[run["seed"]] = math.log(run["spt_grid_ratio"] / other["grid_ratio"])
    return ratios


def judge_proximity(found: dict, path: Path, spt_spec: str, scratch_spec: str, seeds) -> tuple:
    ratios = proximity_ratios(found, path, spt_spec, scratch_spec)
    missing = [s for s in seeds if s not in ratios]
    if missing:
        raise EvidenceError(f"{path}: registered seeds {' '.join(map(str, missing))} missing")
    iv = stats.t_interval({s: ratios[s] for s in seeds}, LEVEL)
    result = base.window_verdict(iv, (PROXIMAL, NOT_PROXIMAL))
    lines = [f"log(SPT / scratch neighbour attention) {iv.text(unit='', digits=2)}: x{math.exp(iv.value):.1f} "
             f"[x{math.exp(iv.low):.2f}, x{math.exp(iv.high):.2f}] -> {result}",
             "per seed: " + ", ".join(f"{s} x{math.exp(v):.1f}" for s, v in sorted(ratios.items()))]
    why = None if result != "INCONCLUSIVE" else "the interval spans x1.25 - x2"
    return result, lines, {"ratio": iv.as_dict()}, why


def judge_l2s(found: dict, path: Path):
    return judge_proximity(found, path, "recipe=spt", SCRATCH, designs.CONTOUR3_SEEDS)


def judge_l2b(found: dict, path: Path):
    return judge_proximity(found, path, "recipe=spt", designs.CONTOUR6_SCRATCH, designs.EXPERIMENTS["l1b"].seeds)


def plateaued(runs: Iterable[dict], budget: int) -> tuple[bool, float]:
    """Whether an arm is at its plateau at ``budget`` (module doc: on the mean over its ``runs`` of
    best-so-far validation accuracy, the best over the last quarter at most :data:`PLATEAU_RISE`
    points above the best over the first three quarters), and the rise (points).  ``runs`` are the
    registered seeds' runs only: a seed promoted for another claim must not move it."""
    curves = [[p for p in run["curve"] if p["step"] <= budget] for run in runs]
    cut = 0.75 * budget
    early = np.mean([max(p["val_accuracy"] for p in c if p["step"] <= cut) for c in curves])
    late = np.mean([max(p["val_accuracy"] for p in c) for c in curves])
    rise = 100 * float(late - early)
    return rise < PLATEAU_RISE, rise


def _frozen(found: dict, path: Path, scratch_spec: str, frozen_spec: str, seeds, budget: int, chance: float):
    scratch, frozen = _row(found, scratch_spec, path), _row(found, frozen_spec, path)
    missing = [s for s in seeds if s not in base.seeds_in(scratch, frozen)]  # an arm missing is conform's ERROR
    if missing:
        have = sorted(base.seeds_in(scratch, frozen))
        means = {name: float(np.mean([base.accuracy(row, s, budget) for s in have]))
                 for name, row in (("scratch", scratch), ("frozen", frozen))}
        return "INCONCLUSIVE", [f"the one look (95%, {len(seeds)} seeds) waits: seeds {' '.join(map(str, have))} in "
                                f"(scratch {means['scratch']:.1f}%, frozen {means['frozen']:.1f}%, descriptive)"], \
            {"seeds_in": have, "means": means}, f"the look waits for seeds {' '.join(map(str, missing))}"
    d = stats.paired_difference([(1, base.correct(frozen, path, seeds, budget)),
                                 (-1, base.correct(scratch, path, seeds, budget))], LEVEL)
    mean = float(np.mean([base.accuracy(scratch, s, budget) for s in seeds]))
    flat = {name: plateaued([run for run in row["runs"] if run["seed"] in seeds], budget)
            for name, row in (("scratch", scratch), ("frozen", frozen))}
    result = stats.within(d, BOUND)
    lines = [f"frozen - scratch {d.text()} -> {result} (scratch {mean:.1f}%, chance {chance:.1f}%) [{d.method}]",
             "plateau: " + ", ".join(f"{k} rose {v[1]:+.1f} pts in the last quarter" for k, v in flat.items())]
    why = None
    if not all(ok for ok, _ in flat.values()):
        result, why = "INCONCLUSIVE", "not at plateau: " + ", ".join(k for k, v in flat.items() if not v[0])
    elif mean < chance + CHANCE_MARGIN:
        result, why = "INCONCLUSIVE", f"scratch not {CHANCE_MARGIN:g} pts above chance"
    elif result == "INCONCLUSIVE":
        why = "the interval crosses ±3"
    return result, lines, {"difference": d.as_dict(), "scratch": mean, "plateau": flat}, why


def judge_l3s(found: dict, path: Path):
    return _frozen(found, path, SCRATCH, FROZEN, designs.CONTOUR3_SEEDS, T, 50.0)


def judge_l3p(found: dict, path: Path):
    majority = found.get("controls", {}).get("majority")
    if majority is None:
        raise EvidenceError(f"{path}: controls.majority: missing (the chance gate needs it)")
    return _frozen(found, path, LISTOPS_SCRATCH, LISTOPS_FROZEN, designs.EXPERIMENTS["l3p"].seeds, L3P_BUDGET,
                   100 * majority["test_accuracy"])


WINDOWS = {"l1s": (0.0, SUPPORT), "l7s": (0.0, SUPPORT), "l4s": (0.0, 0.0), "l3s": (-BOUND, BOUND),
           "l3p": (-BOUND, BOUND), "l2s": (NOT_PROXIMAL, PROXIMAL), "l2b": (NOT_PROXIMAL, PROXIMAL)}
"""The window each interval claim is drawn against (the verdicts figure): refutation and support
boundaries, or the band an equivalence claim must lie in."""
JUDGES = {"l6s": judge_l6s, "l1s": judge_l1s, "l4s": judge_l4s, "l3s": judge_l3s, "l7s": judge_l7s,
          "l3p": judge_l3p}
base.add_judges(JUDGES)  # the gate line of any claim reads L6s by its judge
READS = {"l2s": ("l1s", judge_l2s), "l2b": ("l1b", judge_l2b)}
"""Claims computed from another experiment's evidence: (that experiment, judge)."""
GATES = {"l1s": ("l6s",), "l3s": ("l6s",), "l7s": ("l6s",), "l2s": ("l6s",), "l4s": ("l6s", "l1s")}
"""What must PASS before an experiment runs (the registration)."""
THRESHOLDS = {
    "l6s": f"proximity init: both seeds >= {GATE_BAR:g}% at {T} steps (FAIL: both below)",
    "l1s": f"PASS lo > 0, FAIL hi < {SUPPORT:g} pts at {T} steps; looks 4, 6 seeds (99%), 8 (95%)",
    "l4s": "(hybrid - scratch) - 0.5 gain: PASS lo > 0, FAIL hi < 0; L1s's looks",
    "l2s": "log(SPT / scratch grid ratio): PASS lo > log 2, FAIL hi < log 1.25; 8 seeds, 95%",
    "l2b": "log(SPT / scratch grid ratio): PASS lo > log 2, FAIL hi < log 1.25; L1b's 8 seeds, 95%",
    "l3s": f"|frozen - scratch| <= {BOUND:g} at {T} steps, both at plateau, 95%, 8 seeds",
    "l3p": f"|frozen - scratch| <= {BOUND:g} at {L3P_BUDGET} steps, both at plateau, 95%, 6 seeds; chance gate",
    "l7s": f"2 layers: PASS lo > 0, FAIL hi < {SUPPORT:g} pts at {T} steps; 6 seeds, 95%",
}


def verdict_of(ctx: Context, experiment: str) -> tuple[str, list[str], dict, str | None] | None:
    """The verdict of ``experiment`` from its evidence, or None where none is committed."""
    source, judge = READS.get(experiment, (experiment, JUDGES.get(experiment)))
    found, path = base.load(ctx, source)
    if found is None:
        return None
    if judge is None:
        raise ValueError(f"no judge of experiment {experiment!r}")
    return judge(found, path)


def closed_gate(ctx: Context, experiment: str) -> str | None:
    """Why ``experiment`` does not run (a gate of it has evidence that did not PASS), else None."""
    for gate in GATES.get(experiment, ()):
        judged = verdict_of(ctx, gate)
        if judged is None:
            return (f"not run: its gate {base.claim_id(gate)} has no evidence yet (registered to run after an "
                    f"{base.claim_id(gate)} PASS)")
        if judged[0] != "PASS":
            return f"not run: gate {base.claim_id(gate)} is {judged[0]}, and the registration runs it only after a PASS"
    return None


def check(ctx: Context, experiment: str) -> Measurement:
    threshold = THRESHOLDS[experiment]
    source = READS.get(experiment, (experiment,))[0]
    path = Path(ctx.lra_evidence) / "decide" / f"{source}.json"
    judged = verdict_of(ctx, experiment)
    record = records.RECORDS.get(base.claim_id(experiment))
    if judged is None and (record is None or record.ran):
        raise EvidenceError(f"{path}: missing (the record rests on it: {record.evidence if record else 'no record'})")
    if judged is None:
        closed = closed_gate(ctx, experiment)
        m = undecided("not run", threshold, closed or f"not run yet: {base.command(source)}", evidence=str(path))
        gate = base.gate_line(ctx, experiment)
        return dataclasses.replace(m, lines=(*m.lines, gate)) if gate else m
    result, lines, details, why = judged
    gate = base.gate_line(ctx, experiment)
    lines = [*lines, gate] if gate else lines
    details.update(evidence=str(path))
    if experiment in WINDOWS:
        details = base.drawn_interval(details, WINDOWS[experiment])
    return Measurement(f"{result}", threshold, result == "PASS", details, lines=tuple(lines),
                       inconclusive=(why or "undecided") if result == "INCONCLUSIVE" else None)


LIMITS = {
    "l6s": (GATE_BAR, T),
    "l1s": (0.0, SUPPORT, *base.looks_limits(LOOKS)),
    "l4s": (base.SHARE, 0.0),
    "l2s": (PROXIMAL_RATIO, NOT_PROXIMAL_RATIO, len(designs.CONTOUR3_SEEDS), LEVEL),
    "l2b": (PROXIMAL_RATIO, NOT_PROXIMAL_RATIO, len(designs.EXPERIMENTS["l1b"].seeds), LEVEL),
    "l3s": (BOUND, T, LEVEL, len(designs.CONTOUR3_SEEDS)),
    "l3p": (BOUND, L3P_BUDGET, LEVEL, len(designs.EXPERIMENTS["l3p"].seeds)),
    "l7s": (0.0, SUPPORT, *base.looks_limits(L7S_LOOK)),
}
"""The numbers each claim's threshold words state, as the judges above hold them."""


def _register(claim_id: str, experiment: str, method: str):
    return base.register(claim_id, "LRA short contour (pre-registered)", f"{PRE}; {method}", check, experiment,
                         LIMITS[experiment])


check_l6s = _register("L6s", "l6s", "both-seeds rule (a gate)")
check_l1s = _register("L1s", "l1s", "paired seeds x test examples, sequential t")
check_l2s = _register("L2s", "l2s", "t over seeds of log ratios")
check_l3s = _register("L3s", "l3s", "paired seeds x test examples, 95% t, plateau criterion")
check_l4s = _register("L4s", "l4s", "paired seeds x test examples, sequential t")
check_l7s = _register("L7s", "l7s", "paired seeds x test examples, 95% t")
check_l3p = _register("L3p", "l3p", "paired seeds x test examples, 95% t, plateau criterion")
check_l2b = _register("L2b", "l2b", "t over seeds of log ratios")
