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
from spt_theory.lra.gpu.twin_plan import (
    ARMS,
    FINGERPRINTS,
    PRETRAINED,
    SETTINGS,
    assumed_rates,
    data_settings,
    group_seconds,
    plan,
)

G = ("G1", "G2", "G3", "G4", "G6s", "G1s", "G2s", "G3s", "G4s")
N_TEST = 10_000


def _bits(p: float, shared: np.ndarray, shift: float) -> np.ndarray:
    return shared < p + shift


def fake_result(folder: Path, setting: str, accuracy: dict[str, float], cut_step: int | None = None,
                stopped_step: int | None = None, diverged: tuple[str, int] | None = None,
                budget: float = 1e9) -> Path:
    """summary.json and group-0.json as a complete (or, with ``cut_step``, cut) full-size GPU run of
    ``setting`` would leave them: 8 seeds x 5 arms, 10,000 test examples; arm ``a`` classifies
    example i of seed s right iff u_si < accuracy[a] + a small seed shift (u shared by the arms:
    paired), its validation accuracy rising to a plateau by 60% of the steps.  ``stopped_step``: stopped
    by SIGTERM after the evaluation at that supervised step (0: before any); ``diverged``: the run
    (arm, seed) whose train loss is NaN from its second evaluation on (null, as the run writes it)."""
    sizes = SETTINGS[setting]
    p = plan(sizes, assumed_rates(sizes), budget)
    fingerprint = FINGERPRINTS[setting]  # the registered data's
    cut = None if cut_step is None else {"phase": "supervised", "step": cut_step, "planned": p["steps"],
                                         "why": "the next evaluation would end past the deadline"}
    stopped = None if stopped_step is None else {"phase": "train", "by": "SIGTERM", "why": "stopped by a signal",
                                                 "step": stopped_step, "planned": p["steps"], "at": 300.0}
    stop = cut_step if stopped_step is None else stopped_step
    runs = []
    for arm in p["arms"]:
        for seed in p["seeds"]:
            rng = np.random.default_rng(seed)
            shared, shift = rng.random(N_TEST), rng.normal(0, 0.01)
            offset = p["spt_steps"] if arm in PRETRAINED else 0
            last = p["finetune_steps"] if arm in PRETRAINED else p["steps"]
            reached = last if stop is None else min(last, stop)
            curve = []
            for e in (e for e in p["eval_steps"] if e <= reached):
                share = min(1.0, (e + offset) / (0.6 * p["steps"]))
                bits = _bits(0.5 + (accuracy[arm] - 0.5) * share, shared, shift)
                curve.append({"step": e + offset, "train_loss": 0.4, "val_accuracy": round(0.5 + 0.3 * share, 3)
                              + 1e-5 * e / p["steps"], "test_accuracy": float(bits.mean()),
                              "test_correct": correctness.encode(bits)})
            done = stop is None or last <= stop
            run = {"arm": arm, "seed": seed, "complete": done, "steps": p["steps"], "offset": offset, "curve": curve}
            if diverged == (arm, seed):
                run["diverged"] = curve[1]["step"]
                for point in curve[1:]:
                    point["train_loss"] = None
            if done:
                run["test_accuracy"] = curve[-1]["test_accuracy"]
            runs.append(run)
    summary = {"kind": "gpu-twin", "design": "issue 51", "setting": setting, "registered": gpu_twin.REGISTERED,
               "tiny": False, "started": 1.0e9, "wall_seconds": 540.0,
               "versions": {"python": "3.12.3", "torch": "2.11.0", "cuda": "13.0"},
               "device": {"kind": "cuda", "name": "NVIDIA H200", "count": 1},
               "phases": {"start": 12.0, "data": 1.5, "bench": 9.0, "plan_at": 23.0, "train": 480.0, "end": 505.0},
               "complete": cut is None and stopped is None, "cut": cut, "stopped": stopped,
               "data": {"fingerprint": fingerprint, "source": "carried: twin-short.npz", "n_train": 16000,
                        "n_val": 2000, "n_test": N_TEST, "settings": data_settings(sizes)},
               "bench": {"attention": "default", "model_steps_per_second": {"default": 9000.0, "math": 4000.0}},
               "plan": p, "groups_done": [] if cut or stopped else [0]}
    group = {"group": 0, "seeds": p["seeds"], "arms": p["arms"], "runs": runs, "cut": cut, "stopped": stopped,
             "data": fingerprint, "config": p["sizes"]}
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
    """A plan shrunk as registered: at the floor (10,000 steps) the five arms do not fit, frozen W_Q
    W_K is dropped, the four left fit at the floor."""
    sizes = SETTINGS["contour6"]
    four = tuple(a for a in ARMS if a != "frozen_qk")
    budget = group_seconds(sizes, assumed_rates(sizes), four, sizes.floor_steps)["total"] + 1
    folder = fake_result(tmp_path / "c6", "contour6", STRONG, budget=budget)
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["plan"]["arms"] == list(four) and summary["plan"]["steps"] == sizes.floor_steps
    assert any("frozen_qk dropped" in line for line in summary["plan"]["shrunk"])
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
    other = fake_result(tmp_path / "OUT2", "short", FLAT)  # another result of the setting
    capsys.readouterr()
    assert lra_main(["gpu", "promote", str(other)]) == 2
    assert "--replace" in capsys.readouterr().err
    assert json.loads(written.read_text()) == found
    assert lra_main(["gpu", "promote", str(other), "--replace"]) == 0
    assert json.loads(written.read_text()) != found
    assert lra_main(["gpu", "promote", str(tmp_path / "nowhere")]) == 2



# ------------------------------------------------------------------------------ issue 57: bound to the registration
def _edit(folder: Path, change) -> Path:
    summary, group = (json.loads((folder / n).read_text()) for n in promote.FILES)
    change(summary, group)
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "group-0.json").write_text(json.dumps(group))
    return folder


def _fingerprint(summary, group):
    summary["data"]["fingerprint"] = group["data"] = "ab" * 32


def _seeds_0_7(summary, group):
    summary["plan"]["seeds"] = group["seeds"] = list(range(8))
    for run in group["runs"]:
        run["seed"] -= 500


def _width_16(summary, group):
    summary["plan"]["sizes"]["d_model"] = group["config"]["d_model"] = 16


def _lr_10(summary, group):
    summary["plan"]["sizes"]["lr"] = 10.0


def _relabelled(summary, group):
    summary["setting"] = summary["plan"]["setting"] = "contour6"


def _registered_elsewhere(summary, group):
    summary["registered"] = "docs/my-notes.md"


FORGERIES = {"fingerprint": (_fingerprint, "data.fingerprint"), "seeds_0_7": (_seeds_0_7, "plan.seeds"),
             "width_16": (_width_16, "plan.sizes.d_model"), "lr_10": (_lr_10, "plan.sizes.lr"),
             "short_relabelled_contour6": (_relabelled, "data.fingerprint"),
             "registered_elsewhere": (_registered_elsewhere, "registered")}
"""Results the format admits but the registration does not: each is refused naming its field."""


@pytest.mark.parametrize("kind", sorted(FORGERIES))
def test_a_forged_result_is_refused_by_promote_in_one_line_and_nothing_is_written(kind, tmp_path, monkeypatch,
                                                                                 capsys):
    package = tmp_path / "package-evidence"
    monkeypatch.setattr(evidence, "root", lambda: package)
    change, field = FORGERIES[kind]
    folder = _edit(fake_result(tmp_path / "OUT", "short", STRONG), change)
    promote.collect(folder, strict=False)  # the format alone admits it
    capsys.readouterr()
    assert lra_main(["gpu", "promote", str(folder)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and f"field {field}:" in err[0], err
    assert "registration" in err[0] and not package.exists()


@pytest.mark.parametrize("kind", sorted(FORGERIES))
def test_a_forged_result_in_the_evidence_is_an_error_row_naming_its_field(kind, tmp_path):
    change, field = FORGERIES[kind]
    folder = _edit(fake_result(tmp_path / "OUT", "short", STRONG), change)
    found = promote.collect(folder, strict=False)
    root = tmp_path / "evidence-lra"
    (root / "gpu").mkdir(parents=True)
    (root / "gpu" / f"{found['setting']}.json").write_text(json.dumps(found))
    ctx = Context(progress=False, lra_evidence=root)
    claim_id = "G6s" if found["setting"] == "short" else "G1"
    with pytest.raises(EvidenceError, match=f"field {field}:"):
        REGISTRY[claim_id].check(ctx)


def test_verify_gives_an_error_row_for_a_forged_result(tmp_path, capsys):
    from spt_theory.verify import main as verify_main

    folder = _edit(fake_result(tmp_path / "OUT", "short", STRONG), _seeds_0_7)
    found = promote.collect(folder, strict=False)
    root = tmp_path / "evidence-lra"
    (root / "gpu").mkdir(parents=True)
    (root / "gpu" / "short.json").write_text(json.dumps(found))
    code = verify_main(["--only", "G6s", "--lra-evidence", str(root), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1 and "ERROR" in out and "plan.seeds" in out, out


def test_promote_prints_the_record_line_with_the_files_hash(tmp_path, monkeypatch, capsys):
    import hashlib

    package = tmp_path / "package-evidence"
    monkeypatch.setattr(evidence, "root", lambda: package)
    assert lra_main(["gpu", "promote", str(fake_result(tmp_path / "OUT", "short", STRONG))]) == 0
    written = package / "lra" / "gpu" / "short.json"
    out = capsys.readouterr().out.strip().splitlines()
    digest = hashlib.sha256(written.read_bytes()).hexdigest()
    assert len(out) == 1 and out[0].strip().startswith(f'"lra/gpu/short.json": ("{digest}", "'), out


def test_a_stopped_run_is_promoted_and_read_as_a_pilot(tmp_path, monkeypatch):
    """Stopped by SIGTERM after an evaluation (the run records it, every evaluation kept): promoted
    as what it is, every G row INCONCLUSIVE with the pilot reading printed; stopped before any
    evaluation: INCONCLUSIVE with nothing read."""
    sizes = SETTINGS["short"]
    p = plan(sizes, assumed_rates(sizes), 1e9)
    step = p["eval_steps"][3]
    package = tmp_path / "package-evidence"
    monkeypatch.setattr(evidence, "root", lambda: package)
    assert lra_main(["gpu", "promote", str(fake_result(tmp_path / "OUT", "short", STRONG, stopped_step=step))]) == 0
    ctx = _context(tmp_path, fake_result(tmp_path / "short", "short", STRONG, stopped_step=step))
    for claim_id in ("G6s", "G1s", "G2s", "G3s", "G4s"):
        m = REGISTRY[claim_id].check(ctx)
        assert m.verdict == "INCONCLUSIVE" and f"stopped by SIGTERM in its train phase at step {step}" in m.inconclusive
        assert m.lines and all(line.startswith("pilot reading") for line in m.lines)
    ctx = _context(tmp_path / "b", fake_result(tmp_path / "b" / "short", "short", STRONG, stopped_step=0))
    m = REGISTRY["G6s"].check(ctx)
    assert m.verdict == "INCONCLUSIVE" and "at step 0" in m.inconclusive


def test_a_pretraining_cut_with_every_run_and_no_evaluation_is_inconclusive(tmp_path):
    folder = fake_result(tmp_path / "OUT", "short", STRONG)
    sizes = SETTINGS["short"]
    p = plan(sizes, assumed_rates(sizes), 1e9)
    cut = {"phase": "pretraining", "step": 900, "planned": p["spt_steps"], "why": "pretraining would end late"}

    def pretraining_cut(summary, group):
        summary["cut"] = group["cut"] = cut
        summary["complete"] = False
        for run in group["runs"]:
            run.update(complete=False, curve=[])
            run.pop("test_accuracy", None)

    ctx = _context(tmp_path, _edit(folder, pretraining_cut))
    for claim_id in ("G6s", "G1s"):
        m = REGISTRY[claim_id].check(ctx)
        assert m.verdict == "INCONCLUSIVE" and "cut at pretraining step 900" in m.inconclusive


def test_a_diverged_member_leaves_its_arms_rows_inconclusive_and_the_others_judged(tmp_path):
    ctx = _context(tmp_path, fake_result(tmp_path / "c6", "contour6", FLAT, diverged=("frozen_qk", 503)))
    m = REGISTRY["G2"].check(ctx)
    assert m.verdict == "INCONCLUSIVE" and "diverged" in m.inconclusive and "(frozen_qk, 503)" in m.inconclusive
    assert REGISTRY["G1"].check(ctx).verdict == "FAIL" and REGISTRY["G4"].check(ctx).verdict == "FAIL"
    found = json.loads((tmp_path / "evidence-lra" / "gpu" / "contour6.json").read_text())
    run = next(r for r in found["runs"] if (r["arm"], r["seed"]) == ("frozen_qk", 503))
    assert run["curve"][0]["train_loss"] == 0.4 and run["curve"][-1]["train_loss"] is None


# ------------------------------------------------------------------------------ issue 57: promote's own robustness
def _promote_line(args, capsys) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = lra_main(["gpu", "promote", *args])
    return code, capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize("encoding", ["utf-16", "latin-1-bytes"])
def test_a_group_file_that_is_not_utf8_is_one_line(encoding, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(evidence, "root", lambda: tmp_path / "package-evidence")
    folder = fake_result(tmp_path / "OUT", "short", STRONG)
    text = (folder / "group-0.json").read_text()
    raw = text.encode("utf-16") if encoding == "utf-16" else text.replace('"scratch"', '"scr\u00e4tch"', 1).encode(
        "latin-1")
    (folder / "group-0.json").write_bytes(raw)
    code, err = _promote_line([str(folder)], capsys)
    assert code == 2 and len(err) == 1 and err[0].startswith("error:") and "group-0.json" in err[0], err
    assert "UTF-8" in err[0]


@pytest.mark.parametrize("held", ["[1]", '{"data": 1}', '{"data": {"fingerprint": 7}}', "not json"])
def test_a_target_holding_something_else_is_one_line_and_kept(held, tmp_path, monkeypatch, capsys):
    package = tmp_path / "package-evidence"
    monkeypatch.setattr(evidence, "root", lambda: package)
    target = package / "lra" / "gpu" / "short.json"
    target.parent.mkdir(parents=True)
    target.write_text(held)
    code, err = _promote_line([str(fake_result(tmp_path / "OUT", "short", STRONG))], capsys)
    assert code == 2 and len(err) == 1 and err[0].startswith("error:") and "--replace" in err[0], err
    assert target.read_text() == held


def test_a_fifo_at_the_target_is_one_line_never_a_hang(tmp_path, monkeypatch, capsys):
    import os
    import signal

    package = tmp_path / "package-evidence"
    monkeypatch.setattr(evidence, "root", lambda: package)
    target = package / "lra" / "gpu" / "short.json"
    target.parent.mkdir(parents=True)
    os.mkfifo(target)
    folder = fake_result(tmp_path / "OUT", "short", STRONG)

    def hung(signum, frame):
        raise AssertionError("promote hung on the FIFO")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        for extra in ([], ["--replace"]):
            code, err = _promote_line([str(folder), *extra], capsys)
            assert code == 2 and len(err) == 1 and "not a regular file" in err[0], err
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert target.is_fifo()


def test_a_failed_promote_leaves_nothing_behind(tmp_path, monkeypatch, capsys):
    """Refused (a forged field) or failing at the write (a read-only evidence folder): no file of
    the promote anywhere, neither the target nor a staged or temporary copy."""
    import os

    package = tmp_path / "package-evidence"
    monkeypatch.setattr(evidence, "root", lambda: package)
    monkeypatch.chdir(tmp_path)
    folder = fake_result(tmp_path / "OUT", "short", STRONG)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    forged = _edit(fake_result(tmp_path / "OUT2", "short", STRONG), _lr_10)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert _promote_line([str(forged)], capsys)[0] == 2
    real_replace = os.replace

    def read_only(src, dst, *args, **kwargs):
        if str(dst).startswith(str(package)):
            raise OSError(30, "Read-only file system")
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", read_only)
    code, err = _promote_line([str(folder)], capsys)
    assert code == 2 and len(err) == 1 and err[0].startswith("error:"), err
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert [p for p in after if p not in before and p.suffix in (".json", ".tmp")] == []
    assert not list(package.rglob("*.json")) and not list(package.rglob("*.tmp"))


def test_re_promoting_identical_data_leaves_the_file_unchanged_byte_for_byte(tmp_path, monkeypatch, capsys):
    package = tmp_path / "package-evidence"
    monkeypatch.setattr(evidence, "root", lambda: package)
    folder = fake_result(tmp_path / "OUT", "short", STRONG)
    assert lra_main(["gpu", "promote", str(folder)]) == 0
    written = package / "lra" / "gpu" / "short.json"
    stamp = (written.read_bytes(), written.stat().st_mtime_ns, written.stat().st_ino)
    for extra in ([], ["--replace"]):
        code, err = _promote_line([str(folder), *extra], capsys)
        assert code == 0 and any("unchanged" in line for line in err), err
        assert (written.read_bytes(), written.stat().st_mtime_ns, written.stat().st_ino) == stamp
