"""Claims L1b, L4b, L3b, L6: the LRA designs that decide on a CPU, exactly as pre-registered
(``docs/preregistration/2026-12-02-lra-decide.md``, commit 8650b85, before any of their runs).

verify reads the evidence ``evidence/lra/decide/<x>.json`` that ``python -m spt_theory.lra decide
collect --experiment <x> --promote`` writes (:mod:`spt_theory.lra.decide`), never trains.  The
design runs over several sessions, so a missing file is INCONCLUSIVE ("no run yet", with the
command), not an error; a file that is there but malformed is an ERROR.  Accuracies: test accuracy
at the best validation evaluation within the budget, ties at their mean
(:func:`spt_theory.lra.curves.best_points_within`); differences paired over seeds and the shared
test examples (:func:`spt_theory.stats.paired_difference`, Satterthwaite df).

- **L1b** (Pathfinder-16): D = SPT - scratch at 8,000 total steps.  PASS iff lo > 0; FAIL iff
  hi < 3.5 (and not PASS); else INCONCLUSIVE.  Sequential looks (:data:`LOOKS`): seeds 100-103 and
  100-105 at 99%, 100-107 at 95%; a look is taken only when all its seeds are in; the design stops
  at the first look that decides.
- **L4b**: E = (hybrid - scratch) - 0.5 (SPT - scratch); PASS iff lo > 0, FAIL iff hi < 0; the same
  looks.  Exploratory below a 5.8-point gain (printed).
- **L3b** (ListOps): D = frozen - scratch at 1,570 and 3,140 supervised steps, each arm off its own
  curve, 6 seeds (100-105), 95%.  Per budget PASS iff inside [-3, 3], FAIL iff wholly outside, else
  INCONCLUSIVE, and INCONCLUSIVE while scratch's mean is not 5 points above the majority class.
  FAIL if either budget fails, PASS if both pass.
- **L6** (Pathfinder-16): proximity init, seeds 200 and 201, best within 10,000 steps.  PASS iff
  both >= 75%, FAIL iff both <= 69%, else INCONCLUSIVE; the 2-layer arm (seed 200) printed only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from spt_theory import stats
from spt_theory.claims import records
from spt_theory.claims.registry import Context, Measurement, claim, undecided
from spt_theory.evidence import EvidenceError, schema, sweep_schema
from spt_theory.lra import decide, designs
from spt_theory.lra.curves import best_correctness, best_within
from spt_theory.lra.sweep_cells import cells as parse_cells
from spt_theory.lra.sweep_cells import find_cell

LOOKS = designs.EXPERIMENTS["l1b"].looks
"""L1b / L4b's sequential looks: (seeds, level)."""
SUPPORT = 3.5
"""L1b: the support region's lower end (points); the refutation region is D <= 0."""
L4B_EXPLORATORY = 5.8
SHARE = 0.5
"""L4b: the share of SPT's gain the hybrid must keep, E = (hybrid - scratch) - SHARE (SPT - scratch)."""
"""L4b: below this SPT gain (points) the design has < 80% power: exploratory."""
L3B_SEEDS = designs.EXPERIMENTS["l3b"].seeds
L3B_BUDGETS = designs.EXPERIMENTS["l3b"].budgets
L3B_BOUND = 3.0
L3B_LEVEL = 0.95
CHANCE_MARGIN = 5.0
L6_SEEDS = designs.EXPERIMENTS["l6"].seeds
L6_BUDGET = designs.EXPERIMENTS["l6"].arms["recipe=scratch,init=proximity,finetune_epochs=20"]
ROOM, LIMIT = 75.0, 69.0
PRE = "pre-registered 2026-12-02 (8650b85)"


def command(experiment: str) -> str:
    """How the evidence of ``experiment`` is made (the lead runs it; ``figures/README.md``)."""
    return (f"python -m spt_theory.lra decide run --experiment {experiment} --data-dir D --out OUT --threads 1, "
            f"then decide collect --experiment {experiment} --out OUT --promote")


def claim_id(experiment: str) -> str:
    """The claim an experiment's evidence is judged for: ``l1b`` -> ``L1b``."""
    return experiment[:2].upper() + experiment[2:]


def load(ctx: Context, experiment: str) -> tuple[dict | None, Path]:
    """(the evidence of ``experiment``, its path); None only where nothing is at the path and the
    claim's record says its runs have not been made (``Record.ran`` False).  EvidenceError if a
    record rests on it and it is missing, if it is not a regular file, malformed, or differs in any
    field from its registration (:func:`spt_theory.lra.decide.conform`)."""
    path = Path(ctx.lra_evidence) / "decide" / f"{experiment}.json"
    if not path.exists() and not path.is_symlink():
        record = records.RECORDS.get(claim_id(experiment))
        if record is None or record.ran:
            raise EvidenceError(f"{path}: missing (the record of {claim_id(experiment)} rests "
                                "on it; no evidence, no verdict)")
        return None, path
    found = schema.load(path, sweep_schema.DecideEvidence, ctx.settings())
    decide.conform(designs.EXPERIMENTS[experiment], found, str(path))
    return found, path


def cell(found: dict, spec: str) -> dict | None:
    """The cell of the evidence that the ``--cell`` spec ``spec`` runs (None if absent)."""
    return find_cell(found, **{k: v for k, v in parse_cells([], [spec])[0].items()})


def correct(row: dict, path: Path, seeds, budget: int) -> dict[int, np.ndarray]:
    """Per seed of ``seeds``: the per-example correctness at the best validation evaluation within
    ``budget`` total steps (ties: their mean)."""
    runs = {run["seed"]: run for run in row["runs"]}
    found = {}
    for seed in seeds:
        value = best_correctness(runs[seed]["curve"], budget, path, f"{row['label']} seed {seed}")
        if value is None:
            raise EvidenceError(f"{path}: {row['label']} seed {seed}: no evaluation within {budget} steps")
        found[seed] = value
    return found


def accuracy(row: dict, seed: int, budget: int) -> float:
    """Test accuracy (%) of ``row``'s run at ``seed`` at its best validation evaluation within ``budget``."""
    run = next(r for r in row["runs"] if r["seed"] == seed)
    value = best_within(run["curve"], budget)
    if value is None:
        raise EvidenceError(f"{row['label']} seed {seed}: no evaluation within {budget} steps")
    return 100 * value


def seeds_in(*rows: dict | None) -> set[int]:
    """The seeds every one of ``rows`` has a run for."""
    present = [row for row in rows if row is not None]
    if len(present) < len(rows):
        return set()
    return set.intersection(*({run["seed"] for run in row["runs"]} for row in present))


# ------------------------------------------------------------------------------------ sequential looks
def window_verdict(iv: stats.Interval, window: tuple[float, float]) -> str:
    """PASS where ``iv`` lies wholly above ``window[0]``, FAIL where wholly below ``window[1]``, else
    INCONCLUSIVE: the rule of every interval claim of a support window (refuted at or below the
    first bound, supported at or above the second).

    >>> L9f = stats.Interval(4.6, -0.0006, 9.2, 2.0, 7.4, 0.95, "t")  # 2026-12-06: short of 0 by 0.0006
    >>> window_verdict(L9f, (0.0, 2.0)), window_verdict(L9f, (-0.001, 2.0)), window_verdict(L9f, (0.0, 9.3))
    ('INCONCLUSIVE', 'PASS', 'FAIL')
    """
    low, high = window
    return "PASS" if iv.low > low else "FAIL" if iv.high < high else "INCONCLUSIVE"


def sequential(have: set[int], interval, window: tuple[float, float], looks=LOOKS) \
        -> tuple[str, list[str], dict, str | None]:
    """Take the ``looks`` (default :data:`LOOKS`) whose seeds are all in ``have``, in order, stopping at
    the first that decides.  ``interval(seeds, level) -> Interval``; each look is judged against
    ``window`` = (low, high) by :func:`window_verdict`.  Returns (verdict, lines, details, why INCONCLUSIVE or None)."""
    lines: list[str] = []
    taken: list[dict[str, Any]] = []
    for number, (seeds, level) in enumerate(looks, 1):
        missing = [s for s in seeds if s not in have]
        if missing:
            lines.append(f"look {number} ({len(seeds)} seeds, {level:.0%}) not taken: seeds "
                         f"{' '.join(map(str, missing))} not in")
            why = f"goes on: look {number} waits for seeds {' '.join(map(str, missing))}"
            return "INCONCLUSIVE", lines, {"looks": taken}, why
        iv = interval(seeds, level)
        result = window_verdict(iv, window)
        taken.append({"look": number, "seeds": list(seeds), "level": level, "verdict": result,
                      "interval": iv.as_dict()})
        lines.append(f"look {number} ({len(seeds)} seeds {seeds[0]}-{seeds[-1]}, {level:.0%}): "
                     f"{iv.text(against=window)} -> {result} [{iv.method}]")
        if result != "INCONCLUSIVE":
            lines.append(f"stopped at look {number}: it decides ({result})")
            return result, lines, {"looks": taken}, None
    lines.append("design complete: the last look did not decide")
    return "INCONCLUSIVE", lines, {"looks": taken}, "design complete, no look decided (the interval spans both regions)"


def one_look(iv: stats.Interval, low: float, high: float, what: str) -> tuple[str, list[str], dict, str | None]:
    """A claim of one look: PASS when ``iv`` lies wholly above ``low``, FAIL wholly below ``high``.

    Returns (verdict, lines, details, why INCONCLUSIVE or None); the line prints the interval's ends
    with the digits that keep them apart from ``low`` and ``high``, the details hold it as
    ``difference`` (what :func:`drawn_interval` reads)."""
    result = window_verdict(iv, (low, high))
    line = f"{what}: {iv.text(against=(low, high))} -> {result} [{iv.method}]"
    why = None if result != "INCONCLUSIVE" else "the interval spans the window"
    return result, [line], {"difference": iv.as_dict()}, why


WINDOWS = {"l1b": (0.0, SUPPORT), "l4b": (0.0, 0.0), "l3b": (-L3B_BOUND, L3B_BOUND)}
"""The window each interval claim is drawn against (``figures --only verdicts``): its refutation
and support boundaries (L1b: refuted D <= 0, supported D >= 3.5; L3b: inside ±3)."""


def drawn_interval(details: dict, window: tuple[float, float]) -> dict:
    """``details`` with the interval the verdict read (the last look taken, or the last budget)
    and the claim's window, for the verdicts figure."""
    if details.get("looks"):
        iv = details["looks"][-1]["interval"]
    elif details.get("budgets"):  # the budget that decided (a FAIL decides the claim), else the last
        budgets = list(details["budgets"].values())
        iv = next((b for b in budgets if b["verdict"] == "FAIL"), budgets[-1])["difference"]
    elif details.get("difference"):
        iv = details["difference"]
    elif details.get("ratio"):  # a log-ratio claim (L2s, L2b, L2f)
        iv = details["ratio"]
    else:
        return details
    return {**details, "interval": list(iv["interval"]), "window": list(window)}


SETTING_GATE = {"l1b": "l6", "l4b": "l6", "l6": None, "l3b": None, "l1s": "l6s", "l2s": "l6s", "l3s": "l6s",
                "l4s": "l6s", "l7s": "l6s", "l6s": None, "l3p": None, "l2b": "l6"}
"""The capacity gate of each decided claim's setting (Pathfinder-16 contour 6: L6; the short contour:
L6s; ListOps: none registered)."""


def gate_line(ctx: Context, experiment: str) -> str | None:
    """``setting's gate L6: FAIL (...)``: whether the setting a claim is judged in could show the
    mechanism at all (None for a gate itself)."""
    if experiment in ("l6", "l6s"):
        return None
    gate = SETTING_GATE.get(experiment)
    if gate is None:
        return "setting's gate: none registered (ListOps: a 1-layer model's ceiling was not measured)"
    name = claim_id(gate)
    try:
        found, path = load(ctx, gate)
    except EvidenceError:  # the gate's own row is the ERROR; this line only informs
        return f"setting's gate {name}: its evidence is missing or not as registered (see its row)"
    if found is None:
        return f"setting's gate {name}: not run yet"
    verdict = JUDGES[gate](found, path)[0]
    meaning = ("the mechanism has room here" if verdict == "PASS" else
               "no 1-layer model reached the bar here: the verdict says little about the paper's claim")
    return f"setting's gate {name}: {verdict} ({meaning})"


def _result(measured: str, threshold: str, verdict: str, details: dict, lines, reason) -> Measurement:
    return Measurement(measured, threshold, verdict == "PASS", details, lines=tuple(lines),
                       inconclusive=(reason or "undecided") if verdict == "INCONCLUSIVE" else None)


def judge_l1b(found: dict, path: Path) -> tuple[str, list[str], dict, str | None]:
    scratch, spt = cell(found, designs.CONTOUR6_SCRATCH), cell(found, "recipe=spt")
    total = designs.EXPERIMENTS["l1b"].arms["recipe=spt"]

    def interval(seeds, level):
        assert spt is not None and scratch is not None  # seeds_in: a look is taken only with both arms in
        return stats.paired_difference([(1, correct(spt, path, seeds, total)),
                                        (-1, correct(scratch, path, seeds, total))],
                                       level)

    return sequential(seeds_in(scratch, spt), interval, WINDOWS["l1b"])


def judge_l4b(found: dict, path: Path) -> tuple[str, list[str], dict, str | None]:
    scratch, spt, hybrid = (cell(found, s) for s in (designs.CONTOUR6_SCRATCH, "recipe=spt", "recipe=spt,keep=qk"))
    total = designs.EXPERIMENTS["l4b"].arms["recipe=spt"]
    gains = {}

    def interval(seeds, level):
        rows = {"scratch": scratch, "spt": spt, "hybrid": hybrid}
        arms = {name: correct(row, path, seeds, total) for name, row in rows.items()
                if row is not None}  # seeds_in: a look is taken only with every arm in
        gains[len(seeds)] = stats.paired_difference([(1, arms["spt"]), (-1, arms["scratch"])], level)
        return stats.paired_difference([(1, arms["hybrid"]), (-SHARE, arms["spt"]),
                                        (SHARE - 1, arms["scratch"])], level)

    result, lines, details, why = sequential(seeds_in(scratch, spt, hybrid), interval, WINDOWS["l4b"])
    if gains:
        k, gain = max(gains.items())
        exploratory = gain.value < L4B_EXPLORATORY
        lines.append(f"SPT gain at the last look {gain.text()}: "
                     + (f"below {L4B_EXPLORATORY:g} pts, L4b is exploratory (an INCONCLUSIVE is expected)"
                        if exploratory else f">= {L4B_EXPLORATORY:g} pts, powered"))
        details["gain"] = {**gain.as_dict(), "seeds": k, "exploratory": exploratory}
    return result, lines, details, why


def judge_l3b(found: dict, path: Path) -> tuple[str, list[str], dict, str | None]:
    scratch = cell(found, "recipe=scratch,finetune_epochs=20")
    frozen = cell(found, "recipe=scratch,freeze=qk,finetune_epochs=20")
    missing = [s for s in L3B_SEEDS if s not in seeds_in(scratch, frozen)]
    if missing:
        return "INCONCLUSIVE", [f"the one look (6 seeds, 95%) not taken: seeds {' '.join(map(str, missing))} not in"], \
            {}, f"look waits for seeds {' '.join(map(str, missing))}"
    assert scratch is not None and frozen is not None  # seeds_in: both present, else every seed is missing
    majority = 100 * found["controls"]["majority"]["test_accuracy"] if "majority" in found.get("controls", {}) else None
    if majority is None:
        raise EvidenceError(f"{path}: controls.majority: missing (the chance gate needs it)")
    lines, verdicts, details = [], {}, {"majority": majority, "budgets": {}}
    for budget in L3B_BUDGETS:
        d = stats.paired_difference([(1, correct(frozen, path, L3B_SEEDS, budget)),
                                     (-1, correct(scratch, path, L3B_SEEDS, budget))], L3B_LEVEL)
        base = float(np.mean([accuracy(scratch, s, budget) for s in L3B_SEEDS]))
        result = stats.within(d, L3B_BOUND)
        gate = base < majority + CHANCE_MARGIN
        if gate:
            result = "INCONCLUSIVE"
        verdicts[budget] = result
        lines.append(f"{budget} supervised steps: frozen - scratch {d.text()} -> {result} (scratch {base:.1f}%, "
                     f"majority {majority:.1f}%" + (f"; scratch not {CHANCE_MARGIN:g} pts above chance" if gate else "")
                     + f") [{d.method}]")
        details["budgets"][str(budget)] = {"difference": d.as_dict(), "scratch": base, "verdict": result,
                                           "near_chance": gate}
    values = set(verdicts.values())
    result = "FAIL" if "FAIL" in values else "PASS" if values == {"PASS"} else "INCONCLUSIVE"
    why = None if result != "INCONCLUSIVE" else "not both budgets decide: " + ", ".join(
        f"{b} {v}" for b, v in verdicts.items())
    return result, lines, details, why


def judge_l6(found: dict, path: Path) -> tuple[str, list[str], dict, str | None]:
    proximity = cell(found, "recipe=scratch,init=proximity,finetune_epochs=20")
    deeper = cell(found, "recipe=scratch,layers=2,finetune_epochs=20")
    have = seeds_in(proximity)
    values = {} if proximity is None else {s: accuracy(proximity, s, L6_BUDGET) for s in L6_SEEDS if s in have}
    lines = ["proximity init: " + ", ".join(f"seed {s} {v:.1f}%" for s, v in values.items())]
    if deeper is not None and 200 in seeds_in(deeper):
        lines.append(f"2-layer scratch (descriptive, not judged): seed 200 {accuracy(deeper, 200, L6_BUDGET):.1f}%")
    details = {"proximity": values}
    missing = [s for s in L6_SEEDS if s not in values]
    if missing:
        return "INCONCLUSIVE", lines, details, f"seeds {' '.join(map(str, missing))} not in"
    if all(v >= ROOM for v in values.values()):
        return "PASS", lines, details, None
    if all(v <= LIMIT for v in values.values()):
        return "FAIL", lines, details, None
    return "INCONCLUSIVE", lines, details, f"seeds disagree or lie between {LIMIT:g}% and {ROOM:g}%"


THRESHOLDS = {"l1b": f"PASS lo > 0, FAIL hi < {SUPPORT:g} pts; looks 4, 6 seeds 99%, 8 seeds 95%",
              "l4b": "(hybrid - scratch) - 0.5 gain: PASS lo > 0, FAIL hi < 0; L1b's looks",
              "l3b": f"|frozen - scratch| <= {L3B_BOUND:g} at 1570 and 3140 steps, 95%, 6 seeds",
              "l6": f"proximity init: both seeds >= {ROOM:g}% (FAIL: both <= {LIMIT:g}%)"}
JUDGES = {"l1b": judge_l1b, "l4b": judge_l4b, "l3b": judge_l3b, "l6": judge_l6}
"""Every decided experiment's judge, by name: these, and the short-contour setting's, which
:mod:`spt_theory.checks.lra_short_contour` adds with :func:`add_judges` (a gate line reads any setting's gate)."""


def add_judges(judges: dict) -> None:
    """Register the judges of another setting's experiments (each name once)."""
    twice = sorted(set(judges) & set(JUDGES))
    if twice:
        raise ValueError(f"judges registered twice: {', '.join(twice)}")
    JUDGES.update(judges)


GATES = {"l4b": "l1b"}
"""The design that must PASS before this one runs (pre-registered: L4b only after an L1b PASS)."""


def gate_closed(ctx: Context, experiment: str) -> str | None:
    """Why ``experiment`` is not to run (its gate's evidence is in and did not PASS), else None."""
    gate = GATES.get(experiment)
    if gate is None:
        return None
    found, path = load(ctx, gate)
    if found is None:
        return None
    result, *_ = JUDGES[gate](found, path)
    if result == "PASS":
        return None
    name = {x: claim_id(x) for x in (gate, experiment)}
    return (f"not run: {name[gate]} is {result} on its evidence, and the pre-registration runs "
            f"{name[experiment]} only after an {name[gate]} PASS")


def check(ctx: Context, experiment: str) -> Measurement:
    found, path = load(ctx, experiment)
    threshold = THRESHOLDS[experiment]
    if found is None:
        closed = gate_closed(ctx, experiment)
        if closed:
            m = undecided("not run (gate)", threshold, closed, evidence=str(path))
            gate = gate_line(ctx, experiment)
            return dataclasses.replace(m, lines=(*m.lines, gate)) if gate else m
        return undecided("no run yet", threshold, f"no run yet: {command(experiment)}", evidence=str(path))
    result, lines, details, why = JUDGES[experiment](found, path)
    gate = gate_line(ctx, experiment)
    lines = [*lines, gate] if gate else lines
    details.update(evidence=str(path), seeds=found["seeds"], fingerprint=found["data"]["fingerprint"])
    if experiment in WINDOWS:
        details = drawn_interval(details, WINDOWS[experiment])
    measured = f"{result} on seeds {' '.join(map(str, found['seeds']))}"
    return _result(measured, threshold, result, details, lines, why)


def looks_limits(looks=LOOKS) -> tuple[float, ...]:
    """The numbers sequential ``looks`` state: each look's seed count and level."""
    return tuple(x for seeds, level in looks for x in (len(seeds), level))


def register(claim_id: str, section: str, method: str, check_of: Callable[[Context, str], Measurement], key: str,
             limits: tuple[float, ...]) -> Callable[[Context], Measurement]:
    """Register ``check_of(ctx, key)`` as the check ``check_<key>`` of ``claim_id`` (a claim of a
    pre-registered design whose module judges several claims with one function)."""
    @claim(claim_id, section=section, method=method, limits=limits)
    def check_claim(ctx: Context) -> Measurement:
        return check_of(ctx, key)

    check_claim.__name__ = f"check_{key.lower()}"
    return check_claim


@claim("L1b", section="LRA decide (pre-registered)", method=f"{PRE}; paired seeds x test examples, sequential t",
       limits=(0.0, SUPPORT, *looks_limits()))
def check_l1b(ctx: Context) -> Measurement:
    return check(ctx, "l1b")


@claim("L4b", section="LRA decide (pre-registered)", method=f"{PRE}; paired seeds x test examples, sequential t",
       limits=(SHARE, 0.0, L4B_EXPLORATORY))
def check_l4b(ctx: Context) -> Measurement:
    return check(ctx, "l4b")


@claim("L3b", section="LRA decide (pre-registered)", method=f"{PRE}; paired seeds x test examples, 95% t",
       limits=(L3B_BOUND, *L3B_BUDGETS, L3B_LEVEL, len(L3B_SEEDS)))
def check_l3b(ctx: Context) -> Measurement:
    return check(ctx, "l3b")


@claim("L6", section="LRA decide (pre-registered)", method=f"{PRE}; both-seeds rule", limits=(ROOM, LIMIT, L6_BUDGET))
def check_l6(ctx: Context) -> Measurement:
    return check(ctx, "l6")
