"""Claims G1-G4, G1s-G4s, G6s (spt_theory/checks/gpu_twin.py) and the promotion of a GPU twin's
result (python -m spt_theory.lra gpu promote): without a GPU result every G claim is INCONCLUSIVE
"not run yet", as recorded; a fake full-size result (what a lent H200 would bring back) gives
verdicts by the registered rules; a cut one is a pilot; the strict format refuses every fault the
registration names (a CPU or tiny run, fewer than 8 seeds, a test accuracy that is not its curve's
last point or its bits, a curve that does not end at its steps, no shrink history)."""

import json
from pathlib import Path

import numpy as np
import pytest

from spt_theory import evidence
from spt_theory.checks import gpu_twin
from spt_theory.claims import records
from spt_theory.claims.registry import REGISTRY, Context
from spt_theory.evidence import EvidenceError, correctness
from spt_theory.lra.__main__ import main as lra_main
from spt_theory.lra.gpu import promote
from spt_theory.lra.gpu.twin_plan import ARMS, PRETRAINED, SETTINGS, assumed_rates, plan

G = ("G1", "G2", "G3", "G4", "G6s", "G1s", "G2s", "G3s", "G4s")
N_TEST = 10_000


def _bits(p: float, shared: np.ndarray, shift: float) -> np.ndarray:
    return shared < p + shift


def fake_result(folder: Path, setting: str, accuracy: dict[str, float], cut_step: int | None = None) -> Path:
    """summary.json and group-0.json as a complete (or, with ``cut_step``, cut) full-size GPU run of
    ``setting`` would leave them: 8 seeds x 5 arms, 10,000 test examples; arm ``a`` classifies
    example i of seed s right iff u_si < accuracy[a] + a small seed shift (u shared by the arms:
    paired), its validation accuracy rising to a plateau by 60% of the steps."""
    sizes = SETTINGS[setting]
    p = plan(sizes, assumed_rates(sizes), 1e9)
    fingerprint = "ab" * 32
    cut = None if cut_step is None else {"phase": "supervised", "step": cut_step, "planned": p["steps"],
                                         "why": "the next evaluation would end past the deadline"}
    runs = []
    for arm in ARMS:
        for seed in p["seeds"]:
            rng = np.random.default_rng(seed)
            shared, shift = rng.random(N_TEST), rng.normal(0, 0.01)
            offset = p["spt_steps"] if arm in PRETRAINED else 0
            last = p["finetune_steps"] if arm in PRETRAINED else p["steps"]
            reached = last if cut_step is None else min(last, cut_step)
            curve = []
            for e in (e for e in p["eval_steps"] if e <= reached):
                share = min(1.0, (e + offset) / (0.6 * p["steps"]))
                bits = _bits(0.5 + (accuracy[arm] - 0.5) * share, shared, shift)
                curve.append({"step": e + offset, "train_loss": 0.4, "val_accuracy": round(0.5 + 0.3 * share, 3)
                              + 1e-5 * e / p["steps"], "test_accuracy": float(bits.mean()),
                              "test_correct": correctness.encode(bits)})
            done = cut_step is None or last <= cut_step
            run = {"arm": arm, "seed": seed, "complete": done, "steps": p["steps"], "offset": offset, "curve": curve}
            if done:
                run["test_accuracy"] = curve[-1]["test_accuracy"]
            runs.append(run)
    summary = {"kind": "gpu-twin", "design": "issue 51", "setting": setting, "registered": gpu_twin.REGISTERED,
               "tiny": False, "started": 1.0e9, "wall_seconds": 540.0,
               "versions": {"python": "3.12.3", "torch": "2.11.0", "cuda": "13.0"},
               "device": {"kind": "cuda", "name": "NVIDIA H200", "count": 1},
               "phases": {"start": 12.0, "data": 1.5, "bench": 9.0, "plan_at": 23.0, "train": 480.0, "end": 505.0},
               "complete": cut is None, "cut": cut,
               "data": {"fingerprint": fingerprint, "source": "carried: twin-short.npz", "n_train": 16000,
                        "n_val": 2000, "n_test": N_TEST},
               "bench": {"attention": "default", "model_steps_per_second": {"default": 9000.0, "math": 4000.0}},
               "plan": p, "groups_done": [] if cut else [0]}
    group = {"group": 0, "seeds": p["seeds"], "arms": p["arms"], "runs": runs, "cut": cut, "data": fingerprint,
             "config": p["sizes"]}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "group-0.json").write_text(json.dumps(group))
    return folder


def _context(tmp_path: Path, *folders: Path) -> Context:
    root = tmp_path / "evidence-lra"
    for folder in folders:
        found = promote.collect(folder)
        (root / "gpu").mkdir(parents=True, exist_ok=True)
        (root / "gpu" / f"{found['setting']}.json").write_text(json.dumps(found))
    return Context(progress=False, lra_evidence=root)


STRONG = {"scratch": 0.80, "spt": 0.90, "hybrid_qk": 0.89, "frozen_qk": 0.801, "proximity": 0.93}
"""A result where SPT helps (10 points), the hybrid keeps most of it, frozen = scratch, proximity helps."""
FLAT = {"scratch": 0.80, "spt": 0.799, "hybrid_qk": 0.80, "frozen_qk": 0.70, "proximity": 0.79}
"""SPT = scratch, frozen 10 points below, proximity no better."""


def test_without_a_gpu_result_every_g_claim_is_inconclusive_not_run_yet_as_recorded(tmp_path):
    ctx = Context(progress=False, lra_evidence=tmp_path / "empty")
    for claim_id in G:
        m = REGISTRY[claim_id].check(ctx)
        record = records.RECORDS[claim_id]
        assert m.verdict == "INCONCLUSIVE" and "not run yet" in m.inconclusive and m.measured == "not run"
        assert record.verdict == "inconclusive" and not record.ran
        assert m.threshold == records.TABLE[claim_id].threshold  # the table states what the check prints


def test_a_g_record_rests_on_evidence_exactly_when_its_settings_result_is_committed():
    for claim_id in G:
        committed = evidence.path(evidence.LRA, "gpu", f"{gpu_twin.CLAIMS[claim_id].setting}.json").exists()
        assert records.RECORDS[claim_id].ran == committed, claim_id


def test_a_full_size_result_gives_verdicts_by_the_registered_rules(tmp_path):
    ctx = _context(tmp_path, fake_result(tmp_path / "short", "short", STRONG),
                   fake_result(tmp_path / "contour6", "contour6", FLAT))
    verdicts = {claim_id: REGISTRY[claim_id].check(ctx) for claim_id in G}
    assert {k: v.verdict for k, v in verdicts.items()} == {
        "G6s": "PASS", "G1s": "PASS", "G2s": "PASS", "G3s": "PASS", "G4s": "PASS",
        "G1": "FAIL", "G2": "FAIL", "G3": "INCONCLUSIVE", "G4": "FAIL"}
    assert "G1 is FAIL" in verdicts["G3"].inconclusive
    g1s = verdicts["G1s"].details["interval"]
    assert 9 < g1s["value"] < 11 and g1s["interval"][0] > 0 and g1s["df"] <= 7
    assert "8 of 8 seeds >= 88%" in verdicts["G6s"].lines[0]
    assert "plateau" in verdicts["G2s"].lines[-1]


def test_the_short_claims_wait_for_their_gate(tmp_path):
    weak = {**STRONG, "proximity": 0.70}  # the proximity init does not reach 88%: G6s FAIL
    ctx = _context(tmp_path, fake_result(tmp_path / "short", "short", weak))
    assert REGISTRY["G6s"].check(ctx).verdict == "FAIL"
    for claim_id in ("G1s", "G2s", "G3s", "G4s"):
        m = REGISTRY[claim_id].check(ctx)
        assert m.verdict == "INCONCLUSIVE" and "G6s is FAIL" in m.inconclusive


def test_a_cut_result_is_read_as_a_pilot_never_as_a_complete_one(tmp_path):
    sizes = SETTINGS["short"]
    p = plan(sizes, assumed_rates(sizes), 1e9)
    step = p["eval_steps"][3]
    ctx = _context(tmp_path, fake_result(tmp_path / "short", "short", STRONG, cut_step=step))
    found = gpu_twin.load(ctx, "short")
    assert not found["complete"] and found["cut"]["step"] == step
    for claim_id in ("G6s", "G1s", "G2s", "G3s", "G4s"):
        m = REGISTRY[claim_id].check(ctx)
        assert m.verdict == "INCONCLUSIVE" and f"cut at supervised step {step}" in m.inconclusive, claim_id
        assert all(line.startswith("pilot reading") for line in m.lines) and m.lines
    assert REGISTRY["G1s"].check(ctx).details["pilot_verdict"] == "PASS"  # printed, judged by nothing


def test_a_dropped_arm_leaves_its_claims_inconclusive(tmp_path):
    folder = fake_result(tmp_path / "c6", "contour6", STRONG)
    summary, group = (json.loads((folder / n).read_text()) for n in ("summary.json", "group-0.json"))
    summary["plan"]["arms"] = group["arms"] = ["scratch", "spt", "hybrid_qk", "proximity"]
    summary["plan"]["shrunk"] = ["steps 40000 -> 10000 with arms scratch, spt, hybrid_qk, frozen_qk, proximity",
                                 "at the floor (10000 steps) it does not fit: arm frozen_qk dropped"]
    group["runs"] = [r for r in group["runs"] if r["arm"] != "frozen_qk"]
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "group-0.json").write_text(json.dumps(group))
    ctx = _context(tmp_path, folder)
    m = REGISTRY["G2"].check(ctx)
    assert m.verdict == "INCONCLUSIVE" and "frozen_qk dropped" in m.inconclusive
    assert REGISTRY["G1"].check(ctx).verdict == "PASS"


def _fault(kind: str, summary: dict, group: dict) -> str:
    run = group["runs"][0]
    if kind == "cpu":
        summary["device"]["kind"] = "cpu"
        return "device.kind"
    if kind == "tiny":
        summary["tiny"] = True
        return "tiny"
    if kind == "seven_seeds":
        summary["plan"]["seeds"] = group["seeds"] = summary["plan"]["seeds"][:7]
        group["runs"] = [r for r in group["runs"] if r["seed"] in group["seeds"]]
        return "at least 8"
    if kind == "accuracy_not_last_point":
        run["test_accuracy"] = 0.99
        return "not its curve's last point"
    if kind == "accuracy_not_its_bits":
        run["curve"][-1]["test_accuracy"] = run["test_accuracy"] = 0.99
        return "test_correct"
    if kind == "curve_short_of_its_steps":
        run["curve"].pop()
        run["test_accuracy"] = run["curve"][-1]["test_accuracy"]
        return "does not end at its steps"
    if kind == "no_shrink_history":
        del summary["plan"]["shrunk"]
        return "shrunk"
    if kind == "incomplete_without_cut":
        run["complete"] = False
        run.pop("test_accuracy")
        return "complete"
    if kind == "missing_run":
        group["runs"].pop()
        return "runs"
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["cpu", "tiny", "seven_seeds", "accuracy_not_last_point", "accuracy_not_its_bits",
                                  "curve_short_of_its_steps", "no_shrink_history", "incomplete_without_cut",
                                  "missing_run"])
def test_the_strict_format_refuses_what_the_registration_does_not_admit(kind, tmp_path):
    folder = fake_result(tmp_path / "c6", "contour6", STRONG)
    promote.collect(folder)  # the unbroken result is admitted
    summary, group = (json.loads((folder / n).read_text()) for n in ("summary.json", "group-0.json"))
    words = _fault(kind, summary, group)
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "group-0.json").write_text(json.dumps(group))
    with pytest.raises(EvidenceError, match=words):
        promote.collect(folder)


def test_promote_writes_the_package_evidence_once_and_replaces_it_only_when_asked(tmp_path, monkeypatch, capsys):
    package = tmp_path / "package-evidence"
    monkeypatch.setattr(evidence, "root", lambda: package)
    folder = fake_result(tmp_path / "OUT", "short", STRONG)
    assert lra_main(["gpu", "promote", str(folder)]) == 0
    written = package / "lra" / "gpu" / "short.json"
    found = json.loads(written.read_text())
    assert found["setting"] == "short" and found["schema_version"] == 1 and len(found["runs"]) == 40
    capsys.readouterr()
    assert lra_main(["gpu", "promote", str(folder)]) == 2
    assert "--replace" in capsys.readouterr().err
    assert lra_main(["gpu", "promote", str(folder), "--replace"]) == 0
    assert lra_main(["gpu", "promote", str(tmp_path / "nowhere")]) == 2
