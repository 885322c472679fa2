"""The 2026-12-04 registration (docs/preregistration/2026-12-04-lra-short-contour.md): the gate L6s,
the gain L1s with its looks, the proximity claims L2s / L2b, the plateau criterion of L3s / L3p, and
every claim after the gate waiting for it."""

import copy

import pytest
from test_lra_sequential import _evidence

from spt_theory.checks import lra_sequential
from spt_theory.checks import lra_short_contour as rules
from spt_theory.claims.registry import Context
from spt_theory.evidence import EvidenceError
from spt_theory.lra import designs

PROXIMITY = rules.PROXIMITY


def _write(tmp_path, found):
    (tmp_path / "decide").mkdir(exist_ok=True)
    (tmp_path / "decide" / f"{found['experiment']}.json").write_text(__import__("json").dumps(found))


def _judge(tmp_path, found):
    _write(tmp_path, found)
    return rules.check(Context(lra_evidence=tmp_path), found["experiment"])


def test_the_gate_is_the_both_seeds_rule_at_its_bar(tmp_path):
    assert _judge(tmp_path, _evidence("l6s", {PROXIMITY: {400: 90.0, 401: 88.5}})).verdict == "PASS"
    assert _judge(tmp_path, _evidence("l6s", {PROXIMITY: {400: 72.7, 401: 72.0}})).verdict == "FAIL"
    m = _judge(tmp_path, _evidence("l6s", {PROXIMITY: {400: 90.0, 401: 80.0}}))
    assert m.verdict == "INCONCLUSIVE" and "disagree" in m.inconclusive


def test_every_claim_after_the_gate_waits_for_it_and_closes_when_it_fails(tmp_path):
    for experiment in ("l1s", "l2s", "l3s", "l4s", "l7s"):  # the gate ran (its record): its evidence gone is an ERROR
        with pytest.raises(EvidenceError, match="l6s.json: missing"):
            rules.check(Context(lra_evidence=tmp_path), experiment)
    _write(tmp_path, _evidence("l6s", {PROXIMITY: {400: 72.7, 401: 72.0}}))
    for experiment in ("l1s", "l2s", "l3s", "l4s", "l7s"):
        m = rules.check(Context(lra_evidence=tmp_path), experiment)
        assert m.inconclusive.startswith("not run: gate L6s is FAIL"), m.inconclusive
        assert any("setting's gate L6s: FAIL" in line for line in m.lines)


def _gains(gains, scratch=70.0):
    seeds = range(300, 300 + len(gains))
    return {rules.SCRATCH: {s: scratch for s in seeds}, "recipe=spt": {s: scratch + g for s, g in zip(seeds, gains)}}


def test_l1s_passes_fails_and_waits(tmp_path):
    _write(tmp_path, _evidence("l6s", {PROXIMITY: {400: 90.0, 401: 89.0}}))
    m = _judge(tmp_path, _evidence("l1s", _gains([9, 10, 11, 10])))
    assert m.verdict == "PASS" and "stopped at look 1" in "\n".join(m.lines)
    assert _judge(tmp_path, _evidence("l1s", _gains([0.5, -0.5, 0.3, -0.3]))).verdict == "FAIL"
    m = _judge(tmp_path, _evidence("l1s", _gains([8, -6, 9, -5])))
    assert m.verdict == "INCONCLUSIVE" and "look 2 waits for seeds 304 305" in m.inconclusive


def test_the_plateau_criterion_reads_the_last_quarter(tmp_path):
    found = _evidence("l3s", {rules.SCRATCH: {s: 70.0 for s in range(300, 308)},
                              rules.FROZEN: {s: 70.0 + (s % 2) * 0.2 for s in range(300, 308)}})
    row = copy.deepcopy(found["cells"][0])
    for run in row["runs"]:
        for point in run["curve"]:
            point["val_accuracy"] = 0.7 + 0.001 * min(point["epoch"], 20)  # flat from epoch 20 of 40
    flat, _ = rules.plateaued(row["runs"], rules.T)
    rising = copy.deepcopy(row)
    for run in rising["runs"]:
        for point in run["curve"]:
            point["val_accuracy"] = min(0.99, 0.5 + point["step"] / 40_000)  # still climbing at the end
    late, rise = rules.plateaued(rising["runs"], rules.T)
    assert flat and not late and rise > 1.0


def test_proximity_is_a_log_ratio_interval_against_x2_and_x1_25(tmp_path):
    found = _evidence("l1b", {designs.CONTOUR6_SCRATCH: {s: 55.0 for s in range(100, 108)},
                              "recipe=spt": {s: 55.0 for s in range(100, 108)}})
    for ratio, verdict in ((8.0, "PASS"), (1.0, "FAIL")):
        edited = copy.deepcopy(found)
        for row in edited["cells"]:
            for run in row["runs"]:
                run["grid_ratio"] = 1.0 + 0.01 * (run["seed"] % 3)
                if row["cell"]["recipe"] == "spt":
                    run["spt_grid_ratio"] = ratio * (1.0 + 0.02 * (run["seed"] % 2))
        assert rules.judge_l2b(edited, tmp_path / "l1b.json")[0] == verdict
    with pytest.raises(EvidenceError, match="spt_grid_ratio"):
        rules.judge_l2b(found, tmp_path / "l1b.json")


def test_the_committed_gate_and_l2b_give_their_records():
    assert rules.check(Context(), "l6s").verdict == "FAIL"
    assert rules.check(Context(), "l2b").verdict == "PASS"
    assert lra_sequential.gate_line(Context(), "l1b").startswith("setting's gate L6: FAIL")
