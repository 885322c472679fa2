"""Claim L5: on Pathfinder-16, SPT leaves the 50% plateau in at most half of scratch's steps.

verify reads the committed race evidence (``spt_theory/evidence/race/pathfinder16.json``, written
by ``python -m spt_theory.lra race``; :mod:`spt_theory.lra.race`), never trains it.  Rules,
registered 2026-12-02 before any run of the race
(``docs/preregistration/2026-12-02-lra-verdicts-and-escape-race.md``):

- T = total steps (SPT's 3,000 counted) to the first evaluation with validation accuracy >=
  :data:`ESCAPE` (70%), capped at :data:`CAP` (an arm that never gets there counts as the cap).
- Supported (PASS): SPT reaches 70% on every seed with T_SPT <= T_scratch / 2, paired by seed.
- Refuted (FAIL): scratch reaches 70% at or before SPT on at least :data:`REFUTING_SEEDS` seeds.
- Otherwise INCONCLUSIVE, in particular when no arm leaves :data:`PLATEAU` (60%) on any seed.

A seed is decided when both its arms finished, or both stayed >= 70% for :data:`EARLY_STOP`
steps (the registered early stop).  Until every seed is decided the verdict is the one the decided
seeds already force (FAIL once two seeds refute), else INCONCLUSIVE ("race incomplete").
Secondary (reported, not judged): SPT - scratch at 5k, 10k and 20k steps, and at the seconds and
FLOPs scratch had spent by then.
"""

from __future__ import annotations

from typing import Any

from spt_theory.claims.registry import Context, Measurement, claim
from spt_theory.evidence import RACE, lra_schema, require, schema
from spt_theory.lra import race

ESCAPE = 0.70
PLATEAU = 0.60
CAP = race.TOTAL_STEPS
REFUTING_SEEDS = 2
EARLY_STOP = 1000


def load_race(root, settings=None) -> dict:
    """The race evidence under the evidence folder ``root``, validated, held to the model
    ``settings`` (EvidenceError otherwise) and the registered race (:func:`check_registered`)."""
    path = root / RACE / race.NAME
    found = schema.load(path, lra_schema.RaceEvidence, settings)
    check_registered(found, path)
    return found


def check_registered(found: dict, path) -> None:
    """EvidenceError naming the field unless ``found`` is the registered race, whole: its task,
    seeds, data fingerprint and rules (total steps, SPT's pretraining steps) those registered, and
    both arms of every seed present (a race with an arm left out is not the race)."""
    rules = found["rules"]
    require(found["task"] == race.TASK, path, "task", repr(race.TASK))
    require(found["seeds"] == list(race.SEEDS), path, "seeds", f"the registered seeds {list(race.SEEDS)}")
    require(found["data"]["fingerprint"] == race.FINGERPRINT, path, "data.fingerprint",
            f"the registered data's {race.FINGERPRINT}")
    require(rules.get("total_steps") == CAP, path, "rules.total_steps", f"the registered {CAP}")
    pretrain = rules.get("pretrain_steps")
    require(type(pretrain) is int and 0 < pretrain < CAP, path, "rules.pretrain_steps", f"an integer in (0, {CAP})")
    arms = {(a["seed"], a["arm"]): a for a in found["arms"]}
    for seed in race.SEEDS:
        for arm in ("scratch", "spt"):
            require((seed, arm) in arms, path, "arms", f"both arms of every seed (no {arm} arm of seed {seed})")
            want = pretrain if arm == "spt" else 0
            require(arms[seed, arm]["pretrain_steps"] == want, path, f"arms ({arm} seed {seed}).pretrain_steps",
                    f"{want}, the registered rules'")


def within_cap(arm: dict) -> dict:
    """``arm`` read only up to the registered cap (:data:`CAP` total steps): evaluations past it
    are never read (a curve run on past the cap cannot change the verdict)."""
    return {**arm, "curve": [p for p in arm["curve"] if p["step"] <= CAP]}


def evidence(ctx: Context) -> dict:
    """The committed race evidence (EvidenceError: an ERROR row)."""
    return load_race(ctx.evidence_root, ctx.settings())


def decided(arms: dict[str, dict]) -> bool:
    """Both arms of a seed finished, or both stayed above the escape line for EARLY_STOP steps."""
    if set(arms) != {"scratch", "spt"}:
        return False
    return all(a["finished"] for a in arms.values()) or all(
        race.stayed_above(a["curve"], ESCAPE, EARLY_STOP) for a in arms.values())


def judge(found: dict) -> tuple[str, str, dict, str | None]:
    """(verdict, measured text, details, reason if INCONCLUSIVE) of the race evidence ``found``."""
    seeds = found["seeds"]
    by_seed = {s: {a["arm"]: within_cap(a) for a in found["arms"] if a["seed"] == s and within_cap(a)["curve"]}
               for s in seeds}
    rows, supports, refutes, left_plateau = {}, 0, 0, False
    for s, arms in by_seed.items():
        row: dict[str, Any] = {"decided": decided(arms)}
        for name, arm in arms.items():
            row[name] = race.escape_step(arm["curve"], ESCAPE)
            row[f"{name}_steps_run"] = arm["curve"][-1]["step"]
            left_plateau |= any(p["val_accuracy"] >= PLATEAU for p in arm["curve"])
        if row["decided"]:
            t_scratch = CAP if row["scratch"] is None else row["scratch"]
            t_spt = CAP if row["spt"] is None else row["spt"]
            row["supports"] = row["spt"] is not None and t_spt <= t_scratch / 2
            row["refutes"] = row["scratch"] is not None and t_scratch <= t_spt
            supports += row["supports"]
            refutes += row["refutes"]
            row["secondary"] = race.secondary(arms["scratch"], arms["spt"])
        rows[s] = row
    done = [s for s in seeds if rows[s]["decided"]]
    text = "; ".join(f"seed {s}: T scratch {_steps(rows[s].get('scratch'), rows[s].get('scratch_steps_run'))}, "
                     f"SPT {_steps(rows[s].get('spt'), rows[s].get('spt_steps_run'))}"
                     + ("" if rows[s]["decided"] else " (running)") for s in seeds)
    details = {"seeds": rows, "decided": done, "escape": ESCAPE, "cap": CAP}
    if refutes >= REFUTING_SEEDS:
        return "FAIL", text, details, None
    if len(done) < len(seeds):
        return "INCONCLUSIVE", text, details, f"race incomplete: {len(done)} of {len(seeds)} seeds decided"
    if supports == len(seeds):
        return "PASS", text, details, None
    if not left_plateau:
        return "INCONCLUSIVE", text, details, (f"no arm left the plateau ({PLATEAU:.0%}) on any seed; next: "
                                               "the same race with 2 layers (or width 128)")
    return "INCONCLUSIVE", text, details, f"neither rule met ({supports} seeds support, {refutes} refute)"


def _steps(found: int | None, run: int | None) -> str:
    if found is not None:
        return str(found)
    return "-" if run is None else f"> {run}"


@claim("L5", section="LRA escape race (pre-registered)", method="committed race, seeds 0-2, 20k steps")
def check_l5(ctx: Context) -> Measurement:
    from spt_theory.checks.lra_sequential import gate_line

    verdict, text, details, reason = judge(evidence(ctx))
    threshold = f"T_SPT <= T_scratch / 2 on every seed (refuted: scratch first on >= {REFUTING_SEEDS})"
    lines = ((f"INCONCLUSIVE: {reason}",) if reason else ()) + (gate_line(ctx, "l1b") or "",)
    return Measurement(text, threshold, verdict == "PASS", details, inconclusive=reason, lines=lines)
