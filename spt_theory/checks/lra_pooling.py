"""Claims of the pooling factorial (short-contour Pathfinder-16, mean vs max readout), exactly as
pre-registered in ``docs/preregistration/2026-12-05-pooling-factorial.md`` before any of its runs.

verify reads the evidence ``evidence/lra/decide/<x>.json`` of the experiments ``l6f``, ``fmean``,
``fmax`` and ``fdepth`` (:mod:`spt_theory.lra.decide`), never trains; the shared machinery is
:mod:`spt_theory.checks.lra_sequential`'s and :mod:`spt_theory.checks.lra_short_contour`'s.

- **L6f** (kind ``gate``): max pooling, ``init=proximity2d``, seeds 600-603, best within 3,000 steps;
  PASS iff at least 3 of the 4 seeds reach 88.0%, else FAIL.  Every other claim waits for its PASS.
- **L1f**: D = SPT - scratch under mean pooling at 12,000 steps; PASS lo > 0, FAIL hi < 3.5; looks
  600-603, 600-605 (99%), 600-607 (95%).
- **L1fr**: seeds reaching 80% within 12,000 steps, SPT vs scratch under mean pooling
  (:func:`spt_theory.stats.reach_test`): PASS p < 0.05, FAIL scratch reaches it on at least as
  many seeds; 8 seeds.
- **L9f**: I = (SPT - scratch)_mean - (SPT - scratch)_max, every arm at its best within 8,000 steps;
  PASS lo > 0, FAIL hi < 2; 8 seeds, 95%.
- **L4f**: (hybrid - scratch) - 0.5 (SPT - scratch), mean, 12,000 steps, 600-605, 95%: PASS lo > 0,
  FAIL hi < 0.
- **L3f**: frozen - scratch, mean, 12,000 steps, 600-605, 95%: inside [-3, 3] PASS, wholly outside
  FAIL; INCONCLUSIVE while an arm is not at its plateau or scratch is not 5 points above chance.
- **L2f**: log(true 2-D neighbour ratio of the SPT checkpoint / of scratch's), mean, 600-607, 95%:
  PASS lo > log 2, FAIL hi < log 1.25.
- **L8f**: D = SPT - proximity2d, mean, 12,000 steps, 600-603, 95%: PASS lo > 0, FAIL hi < 0.
- **L7f**: 2 layers, D = SPT - scratch, mean, 12,000 steps, 600-605, 95%: PASS lo > 0, FAIL hi < 3.5.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path

from spt_theory import stats
from spt_theory.checks import lra_sequential as base
from spt_theory.checks import lra_short_contour as short
from spt_theory.claims import records
from spt_theory.claims.registry import Context, Measurement, undecided
from spt_theory.evidence import EvidenceError
from spt_theory.lra import designs

MEAN_T = designs.EXPERIMENTS["fmean"].arms["recipe=spt"]
MAX_T = designs.EXPERIMENTS["fmax"].arms["recipe=spt"]
COMMON = 8_000
"""L9f: both poolings read at their best validation evaluation within this many steps."""
GATE_T = 3_000
GATE_BAR = short.GATE_BAR  # the rules below repeat the short-contour ones: written there
GATE_SEEDS_NEEDED = 3
SUPPORT = short.SUPPORT
INTERACTION_SUPPORT = 2.0
REACH_BAR = 80.0
REACH_LEVEL = 0.05
PRE = "pre-registered 2026-12-05"
LOOKS = designs.EXPERIMENTS["fmean"].looks
SIX, FOUR, EIGHT = tuple(range(600, 606)), tuple(range(600, 604)), tuple(range(600, 608))
LEVEL = short.LEVEL
DEPTH = 2
"""L7f: the deeper arm's layers."""


def arm(epochs: int, what: str) -> str:
    """The ``--cell`` spec of an arm of a pooling of ``epochs`` supervised epochs."""
    return {"scratch": f"recipe=scratch,finetune_epochs={epochs}", "spt": "recipe=spt", "hybrid": "recipe=spt,keep=qk",
            "frozen": f"recipe=scratch,freeze=qk,finetune_epochs={epochs}",
            "proximity": f"recipe=scratch,init=proximity2d,finetune_epochs={epochs}"}[what]


MEAN = {what: arm(24, what) for what in ("scratch", "spt", "hybrid", "frozen", "proximity")}
MAX = {what: arm(16, what) for what in ("scratch", "spt", "hybrid", "frozen", "proximity")}
DEEP = {what: f"{arm(24, what)},layers={DEPTH}" for what in ("scratch", "spt")}
"""L7f's arms (``fdepth``): mean pooling's scratch and SPT, :data:`DEPTH` layers."""


def _needs(rows: dict, seeds, path: Path) -> None:
    have = base.seeds_in(*rows.values())
    missing = [s for s in seeds if s not in have]
    if missing:
        raise _Waits(f"the look waits for seeds {' '.join(map(str, missing))}")


class _Waits(Exception):
    """A one-look claim whose seeds are not all in yet (INCONCLUSIVE, the seeds named)."""


def judge_gate(found: dict, path: Path):
    row = short._row(found, "recipe=scratch,init=proximity2d,finetune_epochs=6", path)
    seeds = designs.EXPERIMENTS["l6f"].seeds
    have = base.seeds_in(row)
    values = {s: base.accuracy(row, s, GATE_T) for s in seeds if s in have}
    lines = ["max pooling, proximity2d: " + ", ".join(f"seed {s} {v:.1f}%" for s, v in values.items())
             + f" (bar {GATE_BAR:g}% = one-hop ceiling 98.0% - 10; {GATE_SEEDS_NEEDED} of {len(seeds)} needed)"]
    passed = sum(v >= GATE_BAR for v in values.values())
    details = {"proximity": values, "bar": GATE_BAR, "passed": passed}
    if passed >= GATE_SEEDS_NEEDED:
        return "PASS", lines, details, None
    if passed + len(seeds) - len(values) < GATE_SEEDS_NEEDED:
        return "FAIL", lines, details, None
    return "INCONCLUSIVE", lines, details, f"{len(values)} of {len(seeds)} seeds in"


def _difference(found: dict, path: Path, weights: list[tuple[float, str]], seeds, budget: int, level: float = LEVEL):
    rows = {spec: short._row(found, spec, path) for _, spec in weights}
    _needs(rows, seeds, path)
    return stats.paired_difference([(w, base.correct(rows[spec], path, seeds, budget)) for w, spec in weights], level)


def judge_l1f(found: dict, path: Path):
    scratch, spt = (short._row(found, MEAN[a], path) for a in ("scratch", "spt"))

    def interval(seeds, level):
        return stats.paired_difference([(1, base.correct(spt, path, seeds, MEAN_T)),
                                        (-1, base.correct(scratch, path, seeds, MEAN_T))], level)

    return base.sequential(base.seeds_in(scratch, spt), interval, WINDOWS["L1f"], LOOKS)


def judge_l1fr(found: dict, path: Path):
    rows = {a: short._row(found, MEAN[a], path) for a in ("spt", "scratch")}
    _needs(rows, EIGHT, path)
    reached = {a: {s: base.accuracy(row, s, MEAN_T) >= REACH_BAR for s in EIGHT} for a, row in rows.items()}
    test = stats.reach_test(reached["spt"], reached["scratch"])
    result = ("PASS" if test.p_value < REACH_LEVEL else
              "FAIL" if test.only_a <= test.only_b else "INCONCLUSIVE")
    return result, [f"SPT vs scratch, bar {REACH_BAR:g}% within {MEAN_T} steps: {test.text()} -> {result}"], \
        {"reach": dataclasses.asdict(test)}, None if result != "INCONCLUSIVE" else "p >= 0.05 with SPT ahead"


def judge_l4f(found: dict, path: Path):
    iv = _difference(found, path, [(1, MEAN["hybrid"]), (-base.SHARE, MEAN["spt"]), (base.SHARE - 1, MEAN["scratch"])],
                     SIX, MEAN_T)
    return base.one_look(iv, 0.0, 0.0, "(hybrid - scratch) - 0.5 (SPT - scratch)")


def judge_l3f(found: dict, path: Path):
    return short._frozen(found, path, MEAN["scratch"], MEAN["frozen"], SIX, MEAN_T, 50.0)


def judge_l8f(found: dict, path: Path):
    iv = _difference(found, path, [(1, MEAN["spt"]), (-1, MEAN["proximity"])], FOUR, MEAN_T)
    return base.one_look(iv, 0.0, 0.0, "SPT - proximity2d")


def judge_l7f(found: dict, path: Path):
    iv = _difference(found, path, [(1, DEEP["spt"]), (-1, DEEP["scratch"])], SIX, MEAN_T)
    return base.one_look(iv, 0.0, SUPPORT, "2 layers, SPT - scratch")


def judge_l2f(found: dict, path: Path):
    spt, scratch = short._row(found, MEAN["spt"], path), short._row(found, MEAN["scratch"], path)
    _needs({"spt": spt, "scratch": scratch}, EIGHT, path)
    by_seed = {run["seed"]: run for run in scratch["runs"]}
    ratios = {}
    for run in spt["runs"]:
        values = (run.get("spt_grid2d_ratio"), by_seed[run["seed"]].get("grid2d_ratio"))
        if not all(isinstance(v, (int, float)) and v > 0 for v in values):
            raise EvidenceError(f"{path}: seed {run['seed']}: spt_grid2d_ratio or grid2d_ratio missing or not positive")
        ratios[run["seed"]] = math.log(values[0] / values[1])
    iv = stats.t_interval({s: ratios[s] for s in EIGHT}, LEVEL)
    result = base.window_verdict(iv, (short.PROXIMAL, short.NOT_PROXIMAL))
    lines = [f"log(SPT / scratch true 2-D neighbour attention) {iv.text(unit='', digits=2)}: x{math.exp(iv.value):.1f} "
             f"[x{math.exp(iv.low):.2f}, x{math.exp(iv.high):.2f}] -> {result}"]
    return result, lines, {"ratio": iv.as_dict()}, None if result != "INCONCLUSIVE" else "the interval spans x1.25 - x2"


def judge_l9f(mean: dict, mean_path: Path, high: dict, max_path: Path):
    rows = {("mean", a): short._row(mean, MEAN[a], mean_path) for a in ("spt", "scratch")}
    rows.update({("max", a): short._row(high, MAX[a], max_path) for a in ("spt", "scratch")})
    _needs(rows, EIGHT, mean_path)
    where = {"mean": mean_path, "max": max_path}
    arms = {key: base.correct(row, where[key[0]], EIGHT, COMMON) for key, row in rows.items()}
    iv = stats.paired_difference([(1, arms["mean", "spt"]), (-1, arms["mean", "scratch"]),
                                  (-1, arms["max", "spt"]), (1, arms["max", "scratch"])], LEVEL)
    gain_max = stats.paired_difference([(1, arms["max", "spt"]), (-1, arms["max", "scratch"])], LEVEL)
    result, lines, details, why = base.one_look(iv, 0.0, INTERACTION_SUPPORT,
                                            f"SPT's gain under mean - under max at {COMMON} steps")
    lines.append(f"SPT - scratch under max pooling at {COMMON} steps (descriptive): {gain_max.text()}")
    return result, lines, details, why


def _load(ctx: Context, experiment: str) -> tuple[dict | None, Path]:
    """:func:`lra_sequential.load`, with absence left to :func:`check` (an experiment of several claims:
    it holds the claim's own record to it)."""
    path = Path(ctx.lra_evidence) / "decide" / f"{experiment}.json"
    if not path.exists() and not path.is_symlink():
        return None, path
    return base.load(ctx, experiment)


def verdict(ctx: Context, claim_id: str):
    """(result, lines, details, why) of ``claim_id``, None where its evidence has not been made."""
    if claim_id == "L9f":
        (mean, mean_path), (high, max_path) = _load(ctx, "fmean"), _load(ctx, "fmax")
        return None if mean is None or high is None else judge_l9f(mean, mean_path, high, max_path)
    experiment, judge = CLAIMS[claim_id]
    found, path = _load(ctx, experiment)
    return None if found is None else judge(found, path)


CLAIMS: dict[str, tuple[str, Callable]] = {
    "L6f": ("l6f", judge_gate), "L1f": ("fmean", judge_l1f), "L1fr": ("fmean", judge_l1fr),
    "L4f": ("fmean", judge_l4f), "L3f": ("fmean", judge_l3f), "L2f": ("fmean", judge_l2f),
    "L8f": ("fmean", judge_l8f), "L7f": ("fdepth", judge_l7f)}
"""Each one-experiment claim: (its experiment, its judge); L9f reads fmean and fmax."""
WINDOWS = {"L1f": (0.0, SUPPORT), "L7f": (0.0, SUPPORT), "L9f": (0.0, INTERACTION_SUPPORT), "L4f": (0.0, 0.0),
           "L8f": (0.0, 0.0), "L3f": (-short.BOUND, short.BOUND), "L2f": (short.NOT_PROXIMAL, short.PROXIMAL)}
"""The window each interval claim is drawn against (the verdicts figure): its refutation and support
boundaries, or the band an equivalence claim must lie in."""
THRESHOLDS = {claim_id: records.TABLE[claim_id].threshold for claim_id in (*CLAIMS, "L9f")}
"""Each claim's threshold in words, as its row holds it (written once)."""


def check(ctx: Context, claim_id: str) -> Measurement:
    ctx.settings()  # what the evidence will be held to (verify --set): read before any evidence is
    threshold = THRESHOLDS[claim_id]
    experiments = ("fmean", "fmax") if claim_id == "L9f" else (CLAIMS[claim_id][0],)
    where = ", ".join(str(Path(ctx.lra_evidence) / "decide" / f"{x}.json") for x in experiments)
    if claim_id != "L6f":
        gate = verdict(ctx, "L6f")
        if gate is None or gate[0] != "PASS":
            why = ("not run yet: gate L6f has no evidence (registered to run after an L6f PASS)" if gate is None else
                   f"not run: gate L6f is {gate[0]}, and the registration runs it only after a PASS")
            return undecided("not run", threshold, why, evidence=where)
    try:
        judged = verdict(ctx, claim_id)
    except _Waits as waiting:
        return undecided("waiting", threshold, str(waiting), evidence=where)
    if judged is None:
        record = records.RECORDS.get(claim_id)
        if record is not None and record.ran:
            raise EvidenceError(f"{where}: missing (the record rests on it)")
        return undecided("not run", threshold, f"not run yet: {base.command(experiments[0])}", evidence=where)
    result, lines, details, why = judged
    details.update(evidence=where)
    if claim_id in WINDOWS:
        details = base.drawn_interval(details, WINDOWS[claim_id])
    return Measurement(result, threshold, result == "PASS", details, lines=tuple(lines),
                       inconclusive=(why or "undecided") if result == "INCONCLUSIVE" else None)


LIMITS = {
    "L6f": (GATE_SEEDS_NEEDED, len(designs.EXPERIMENTS["l6f"].seeds), GATE_BAR, GATE_T),
    "L1f": (0.0, SUPPORT, MEAN_T, *base.looks_limits(LOOKS)),
    "L1fr": (REACH_BAR, MEAN_T, REACH_LEVEL, len(EIGHT)),
    "L9f": (COMMON, 0.0, INTERACTION_SUPPORT, len(EIGHT), LEVEL),
    "L4f": (base.SHARE, 0.0, MEAN_T, len(SIX), LEVEL),
    "L3f": (short.BOUND, MEAN_T, short.CHANCE_MARGIN, len(SIX), LEVEL),
    "L2f": (short.PROXIMAL_RATIO, short.NOT_PROXIMAL_RATIO, len(EIGHT), LEVEL),
    "L8f": (MEAN_T, 0.0, len(FOUR), LEVEL),
    "L7f": (DEPTH, 0.0, SUPPORT, MEAN_T, len(SIX), LEVEL),
}
"""The numbers each claim's threshold words state, as the judges above hold them (the words are
the row's: :data:`THRESHOLDS`)."""


def _register(claim_id: str, method: str):
    return base.register(claim_id, "LRA pooling factorial (pre-registered)", f"{PRE}; {method}", check, claim_id,
                         LIMITS[claim_id])


check_l6f = _register("L6f", "3-of-4-seeds rule (a gate)")
check_l1f = _register("L1f", "paired seeds x test examples, sequential t")
check_l1fr = _register("L1fr", "McNemar's exact test on the seeds")
check_l9f = _register("L9f", "paired seeds x test examples, 4-arm contrast, 95% t")
check_l4f = _register("L4f", "paired seeds x test examples, 95% t")
check_l3f = _register("L3f", "paired seeds x test examples, 95% t, plateau criterion")
check_l2f = _register("L2f", "t over seeds of log ratios")
check_l8f = _register("L8f", "paired seeds x test examples, 95% t")
check_l7f = _register("L7f", "paired seeds x test examples, 95% t")
