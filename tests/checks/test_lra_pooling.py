"""The 2026-12-05 registration (docs/preregistration/2026-12-05-pooling-factorial.md): the gate L6f
(3 of 4 seeds), every claim waiting for it, L1f's looks, the co-primary count L1fr, and the
interaction L9f read from both poolings at a common step count."""

import json

from test_lra_sequential import _evidence

from spt_theory.checks import lra_pooling as rules
from spt_theory.claims.registry import Context

GATE = "recipe=scratch,init=proximity2d,finetune_epochs=6"


def _write(tmp_path, found):
    (tmp_path / "decide").mkdir(exist_ok=True)
    (tmp_path / "decide" / f"{found['experiment']}.json").write_text(json.dumps(found))


def _gate(tmp_path, values):
    _write(tmp_path, _evidence("l6f", {GATE: dict(zip(range(600, 604), values))}))
    return rules.check(Context(lra_evidence=tmp_path), "L6f")


def test_the_gate_is_three_of_four_seeds_at_the_bar(tmp_path):
    assert _gate(tmp_path, [95.0, 93.0, 88.0, 70.0]).verdict == "PASS"
    assert _gate(tmp_path, [95.0, 87.9, 80.0, 70.0]).verdict == "FAIL"


def test_every_claim_waits_for_the_gate_and_closes_when_it_fails(tmp_path):
    for claim_id in ("L1f", "L1fr", "L9f", "L4f", "L3f", "L2f", "L8f", "L7f"):
        m = rules.check(Context(lra_evidence=tmp_path), claim_id)
        assert m.inconclusive.startswith("not run yet: gate L6f has no evidence"), m.inconclusive
    _gate(tmp_path, [95.0, 80.0, 80.0, 70.0])
    m = rules.check(Context(lra_evidence=tmp_path), "L9f")
    assert m.inconclusive.startswith("not run: gate L6f is FAIL")


def _arms(pooling, gains, scratch, seeds=range(600, 608)):
    """Scratch and SPT as given; hybrid, frozen and proximity2d at scratch's level on their seeds."""
    arms = rules.MEAN if pooling == "mean" else rules.MAX
    at = {"hybrid": rules.SIX, "frozen": rules.SIX, "proximity": rules.FOUR}
    return {arms["scratch"]: {s: scratch for s in seeds},
            arms["spt"]: {s: scratch + g for s, g in zip(seeds, gains)},
            **{arms[a]: {s: scratch for s in seeds if s in at[a]} for a in at}}


def test_l1f_passes_at_its_first_look(tmp_path):
    _gate(tmp_path, [95.0, 95.0, 95.0, 95.0])
    _write(tmp_path, _evidence("fmean", _arms("mean", [22, 24, 21, 23], 62.0, range(600, 604))))
    m = rules.check(Context(lra_evidence=tmp_path), "L1f")
    assert m.verdict == "PASS" and "stopped at look 1" in "\n".join(m.lines)
    # the verdicts figure draws the interval of the look that decided against the claim's window
    assert m.details["interval"] == m.details["looks"][0]["interval"]["interval"]
    assert m.details["window"] == [0.0, rules.SUPPORT]


def test_the_reach_count_is_an_exact_test_over_eight_seeds(tmp_path):
    _gate(tmp_path, [95.0, 95.0, 95.0, 95.0])
    _write(tmp_path, _evidence("fmean", _arms("mean", [22] * 8, 62.0)))
    assert rules.check(Context(lra_evidence=tmp_path), "L1fr").verdict == "PASS"  # 8 of 8 against 0 of 8
    _write(tmp_path, _evidence("fmean", _arms("mean", [22] * 8, 81.0)))  # both arms reach 80% everywhere
    assert rules.check(Context(lra_evidence=tmp_path), "L1fr").verdict == "FAIL"
    _write(tmp_path, _evidence("fmean", _arms("mean", [22] * 4, 62.0, range(600, 604))))
    m = rules.check(Context(lra_evidence=tmp_path), "L1fr")
    assert m.verdict == "INCONCLUSIVE" and "waits for seeds 604 605 606 607" in m.inconclusive


def test_the_interaction_contrasts_the_gains_of_both_poolings(tmp_path):
    _gate(tmp_path, [95.0, 95.0, 95.0, 95.0])
    _write(tmp_path, _evidence("fmax", _arms("max", [19, 20, 18, 19, 21, 19, 20, 18], 75.0)))
    _write(tmp_path, _evidence("fmean", _arms("mean", [23, 24, 22, 23, 25, 23, 24, 22], 61.0)))
    m = rules.check(Context(lra_evidence=tmp_path), "L9f")
    assert m.verdict == "PASS", m.lines
    assert abs(m.details["difference"]["value"] - 4.0) < 0.05
    _write(tmp_path, _evidence("fmean", _arms("mean", [19, 20, 18, 19, 21, 19, 20, 18], 61.0)))
    assert rules.check(Context(lra_evidence=tmp_path), "L9f").verdict == "FAIL"  # no interaction


def test_the_plateau_criterion_reads_the_registered_seeds_only(tmp_path):
    """L3f is registered on 600-605; scratch's 606-607 (promoted for L1fr, L2f, L9f) must not move
    its plateau criterion, even where they still climb in their last quarter."""
    _gate(tmp_path, [95.0, 95.0, 95.0, 95.0])
    found = _evidence("fmean", _arms("mean", [22] * 8, 62.0))
    scratch = next(row for row in found["cells"] if row["label"] == rules.MEAN["scratch"])
    for run in scratch["runs"]:
        if run["seed"] >= 606:
            for point in run["curve"]:
                point["val_accuracy"] = 0.5 + 0.01 * max(0, point["epoch"] - 20)  # +4 pts in the last quarter
            run["val_accuracy"] = run["curve"][-1]["val_accuracy"]
    _write(tmp_path, found)
    m = rules.check(Context(lra_evidence=tmp_path), "L3f")
    assert m.verdict == "PASS", m.lines
    assert "scratch rose +0.6 pts in the last quarter" in "\n".join(m.lines)
