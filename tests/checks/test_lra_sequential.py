"""The pre-registered decide experiments (docs/preregistration/2026-12-02-lra-decide.md): claims L1b,
L4b, L3b, L6 can PASS, FAIL and be INCONCLUSIVE on synthetic evidence; a look waits for all its seeds;
the sequential design stops at the first look that decides; no evidence is "no run yet", malformed
evidence an error; and ``lra decide run / collect`` work end to end on tiny data."""

import copy
import json

import numpy as np
import pytest

from spt_theory.checks import lra_sequential as rules
from spt_theory.claims.registry import Context
from spt_theory.evidence import EvidenceError, correctness, schema, sweep_schema
from spt_theory.lra import decide, designs
from spt_theory.lra.__main__ import main
from spt_theory.lra.sweep_cells import cells as parse_cells
from spt_theory.util.files import InputError
from synthetic import listops, pathfinder

N = 1000


def _correct(rng, accuracy: float) -> np.ndarray:
    right = np.zeros(N, dtype=bool)
    right[rng.choice(N, int(round(accuracy * N / 100)), replace=False)] = True
    return right


def _run(seed, right, steps, per_epoch, pretrain=0):
    value = correctness.encode(right)
    acc = correctness.accuracy_of(value)
    curve = [{"epoch": e, "step": pretrain + e * per_epoch, "val_accuracy": 0.5 + e / 1000, "test_accuracy": acc,
              "test_correct": value} for e in range(1, (steps - pretrain) // per_epoch + 1)]
    return {"seed": seed, "test_accuracy": acc, "val_accuracy": curve[-1]["val_accuracy"], "best_epoch": len(curve),
            "curve": curve, "pretrain_steps": pretrain, "steps_per_epoch": per_epoch}


def registered_fields(experiment: str) -> dict:
    """The fields of evidence of ``experiment`` that its registration fixes (as a collect makes them)."""
    spec = designs.EXPERIMENTS[experiment]
    config = {{"n_heads": "heads", "d_ff": "ff"}.get(k, k): v for k, v in decide.expected_config(spec).items()}
    options = {"task": spec.task, "layers": 1, "pretrain_epochs": spec.pretrain_epochs,
               "finetune_epochs": spec.finetune_epochs or 1, "tiny": False, "model": "transformer",
               "pretrain_task": None, "max_steps": None, "freeze": [], "overrides": [list(p) for p in spec.overrides]}
    data = {"fingerprint": spec.fingerprint or "f", "width": 256, **spec.data_sizes}
    return {"registered": spec.registered, "options": options, "config": {"task": spec.task, **config},
            "data": data, "data_source": {"origin": "generated", **copy.deepcopy(spec.source)}}


def _evidence(experiment, arms, task="pathfinder", majority=0.5):
    """Evidence of ``experiment`` with ``arms`` = {cell spec: {seed: accuracy (%)}}; the arms of one
    seed share their errors (each arm's correct examples include those of every lower-accuracy arm)."""
    per_epoch = 157 if task == "listops" else 500
    spec = designs.EXPERIMENTS[experiment]
    N = spec.data_sizes["n_test"]  # noqa: N806
    seeds = sorted({s for values in arms.values() for s in values})
    rows = {text: [] for text in arms}
    for seed in seeds:
        order = np.random.default_rng(seed).permutation(N)
        for text, values in arms.items():
            if seed in values:
                right = np.zeros(N, dtype=bool)
                right[order[:int(round(values[seed] * N / 100))]] = True
                pretrain = 3000 if "spt" in text else 0
                rows[text].append(_run(seed, right, spec.arms[text], per_epoch, pretrain))
    cells = [{"label": text, "cell": parse_cells([], [text])[0], "runs": runs,
              "test_accuracy": {"per_seed": [r["test_accuracy"] for r in runs],
                                "mean": float(np.mean([r["test_accuracy"] for r in runs]))}}
             for text, runs in rows.items() if runs]
    fields = registered_fields(experiment)
    fields["config"].update(masking="pixel" if task == "pathfinder" else "token",
                            num_classes=2 if task == "pathfinder" else 10)
    found = {"schema_version": 1, "experiment": experiment, "task": task, **fields,
             "tiny": False, "seeds": seeds,
             "controls": {"majority": {"test_accuracy": majority}}, "cells": cells,
             "sweeps": {str(s): {"name": decide.sweep_name(experiment, s)} for s in seeds},
             "model_defaults": schema.model_defaults()}
    schema.parse(json.dumps(found), sweep_schema.DecideEvidence, "test evidence")
    return found


def _check(tmp_path, found):
    (tmp_path / "decide").mkdir(exist_ok=True)
    (tmp_path / "decide" / f"{found['experiment']}.json").write_text(json.dumps(found))
    return rules.check(Context(lra_evidence=tmp_path), found["experiment"])


def _l1b(gains, seeds=None, scratch=55.0):
    seeds = seeds or range(100, 100 + len(gains))
    return {designs.CONTOUR6_SCRATCH: {s: scratch for s in seeds},
            "recipe=spt": {s: scratch + g for s, g in zip(seeds, gains)}}


def test_absent_evidence_is_an_error_where_a_record_rests_on_it_and_malformed_evidence_too(tmp_path):
    """L1b, L3b, L6 ran: their evidence missing is an ERROR, not 'no run yet'; L4b never ran, but its
    verdict rests on L1b's evidence, so with that gone it is an ERROR too (issue 50, item 5)."""
    for experiment in ("l1b", "l3b", "l6", "l4b"):
        with pytest.raises(EvidenceError, match="l1b.json: missing" if experiment == "l4b" else f"{experiment}.json"):
            rules.check(Context(lra_evidence=tmp_path), experiment)
    (tmp_path / "decide").mkdir()
    (tmp_path / "decide" / "l6.json").write_text("{}")
    with pytest.raises(EvidenceError, match="l6.json"):
        rules.check(Context(lra_evidence=tmp_path), "l6")


def test_l1b_passes_fails_and_is_inconclusive(tmp_path):
    m = _check(tmp_path, _evidence("l1b", _l1b([9, 10, 11, 10])))
    assert m.verdict == "PASS" and "stopped at look 1" in "\n".join(m.lines)
    m = _check(tmp_path, _evidence("l1b", _l1b([0.5, -0.5, 0.3, -0.3])))
    assert m.verdict == "FAIL" and m.details["looks"][0]["level"] == 0.99
    m = _check(tmp_path, _evidence("l1b", _l1b([8, -6, 9, -5])))
    assert m.verdict == "INCONCLUSIVE" and "look 2 waits for seeds 104 105" in m.inconclusive


def test_l4b_without_evidence_names_its_gate_l1b_once_l1b_is_in(tmp_path):
    _check(tmp_path, _evidence("l1b", _l1b([0.5, -0.5, 0.3, -0.3])))  # L1b FAIL: L4b is not to run
    m = rules.check(Context(lra_evidence=tmp_path), "l4b")
    assert m.verdict == "INCONCLUSIVE" and m.inconclusive.startswith("not run: L1b is FAIL")
    _check(tmp_path, _evidence("l1b", _l1b([9, 10, 11, 10])))  # L1b PASS: L4b waits for its run
    m = rules.check(Context(lra_evidence=tmp_path), "l4b")
    assert m.inconclusive.startswith("no run yet: python -m spt_theory.lra decide run --experiment l4b")


def test_evidence_made_at_other_model_settings_is_an_error_naming_both(tmp_path):
    found = _evidence("l1b", _l1b([9, 10, 11, 10]))
    _check(tmp_path, found)
    made = found["model_defaults"]["d_model"]
    with pytest.raises(EvidenceError, match=f"made at d_model={made}; asked for d_model={made // 2}"):
        rules.check(Context(lra_evidence=tmp_path, model_settings={"d_model": made // 2}), "l1b")


def test_a_look_with_a_missing_seed_is_not_taken(tmp_path):
    m = _check(tmp_path, _evidence("l1b", _l1b([9, 10, 11, 10, 9], seeds=[100, 101, 102, 104, 105])))
    assert m.verdict == "INCONCLUSIVE" and m.details["looks"] == []
    assert "look 1 (4 seeds, 99%) not taken: seeds 103 not in" in m.lines[0]


def test_sequential_stopping(tmp_path):
    """Look 1 (4 seeds, 99%) cannot decide a 3-point gain that look 2 (6 seeds) decides: the design
    stops there, look 3 is not taken although seeds 106, 107 are in; without a decision it goes on to 8."""
    m = _check(tmp_path, _evidence("l1b", _l1b([4, 2, 4, 2, 3, 3, 9, 9])))
    looks = m.details["looks"]
    assert [look["verdict"] for look in looks] == ["INCONCLUSIVE", "PASS"] and m.verdict == "PASS"
    assert any("stopped at look 2" in line for line in m.lines)
    m = _check(tmp_path, _evidence("l1b", _l1b([8, -6, 9, -5, 7, -4, 1, 2])))
    assert [look["level"] for look in m.details["looks"]] == [0.99, 0.99, 0.95]
    assert m.verdict == "INCONCLUSIVE" and "design complete" in m.inconclusive


def _l4b(gains, recovered):
    arms = _l1b(gains)
    arms["recipe=spt,keep=qk"] = {s: 55.0 + r * g for s, g, r in zip(range(100, 104), gains, recovered)}
    return arms


def test_l4b_passes_fails_and_is_inconclusive(tmp_path):
    m = _check(tmp_path, _evidence("l4b", _l4b([10, 11, 9, 10], [1, 1, 1, 1])))
    assert m.verdict == "PASS" and m.details["gain"]["exploratory"] is False
    assert _check(tmp_path, _evidence("l4b", _l4b([10, 11, 9, 10], [0, 0, 0, 0]))).verdict == "FAIL"
    m = _check(tmp_path, _evidence("l4b", _l4b([3, 4, 2, 3], [1.5, -0.5, 1.2, 0])))
    assert m.verdict == "INCONCLUSIVE" and "exploratory" in "\n".join(m.lines)


def _l3b(scratch, frozen):
    return {"recipe=scratch,finetune_epochs=20": {s: scratch for s in range(100, 106)},
            "recipe=scratch,freeze=qk,finetune_epochs=20": {s: frozen + (s % 2) * 0.4 for s in range(100, 106)}}


def test_l3b_passes_fails_and_is_inconclusive(tmp_path):
    m = _check(tmp_path, _evidence("l3b", _l3b(40.0, 40.0), "listops", majority=0.2))
    assert m.verdict == "PASS" and set(m.details["budgets"]) == {"1570", "3140"}
    assert _check(tmp_path, _evidence("l3b", _l3b(40.0, 30.0), "listops", majority=0.2)).verdict == "FAIL"
    m = _check(tmp_path, _evidence("l3b", _l3b(23.0, 23.0), "listops", majority=0.2))  # near chance
    assert m.verdict == "INCONCLUSIVE" and all(b["near_chance"] for b in m.details["budgets"].values())
    arms = _l3b(40.0, 40.0)
    del arms["recipe=scratch,freeze=qk,finetune_epochs=20"][105]  # a registered arm missing at a seed: ERROR
    with pytest.raises(EvidenceError, match=r"freeze=qk,finetune_epochs=20\) seed 105 must be present"):
        _check(tmp_path, _evidence("l3b", arms, "listops", majority=0.2))
    arms = {cell: {s: v for s, v in values.items() if s != 105} for cell, values in _l3b(40.0, 40.0).items()}
    m = _check(tmp_path, _evidence("l3b", arms, "listops", majority=0.2))  # a seed not in yet: the look waits
    assert m.verdict == "INCONCLUSIVE" and "105" in m.inconclusive


def _l6(a, b=None):
    proximity = {200: a} if b is None else {200: a, 201: b}
    return {"recipe=scratch,init=proximity,finetune_epochs=20": proximity,
            "recipe=scratch,layers=2,finetune_epochs=20": {200: 70.0}}


def test_l6_the_both_seeds_rule(tmp_path):
    m = _check(tmp_path, _evidence("l6", _l6(80.0, 76.0)))
    assert m.verdict == "PASS" and any("2-layer" in line and "70.0%" in line for line in m.lines)
    assert _check(tmp_path, _evidence("l6", _l6(60.0, 69.0))).verdict == "FAIL"
    assert _check(tmp_path, _evidence("l6", _l6(80.0, 65.0))).verdict == "INCONCLUSIVE"
    assert _check(tmp_path, _evidence("l6", _l6(72.0, 73.0))).verdict == "INCONCLUSIVE"
    assert "201 not in" in _check(tmp_path, _evidence("l6", _l6(80.0))).inconclusive


def test_registered_steps_are_checked(tmp_path):
    found = _evidence("l6", _l6(80.0, 76.0))
    run = found["cells"][0]["runs"][0]
    run["curve"].pop()  # a run cut short of its registered steps
    run["best_epoch"], run["val_accuracy"] = len(run["curve"]), run["curve"][-1]["val_accuracy"]
    with pytest.raises(EvidenceError, match="registered 10000 steps"):
        _check(tmp_path, found)


def test_merge_keeps_seeds_and_refuses_other_data():
    one, two = _evidence("l6", {**_l6(80.0)}), _evidence("l6", {"recipe=scratch,init=proximity,finetune_epochs=20":
                                                                {201: 76.0}})
    merged = decide.merge(two, one)
    assert merged["seeds"] == [200, 201] and [len(c["runs"]) for c in merged["cells"]] == [2, 1]
    with pytest.raises(InputError, match="field data differs"):
        decide.merge({**two, "data": {**two["data"], "fingerprint": "g"}}, one)


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("decide-data")
    style = pathfinder.PathfinderStyle(size=16, contour_length=6, distractors=2, distractor_length=3,
                                       match_distances=True)
    pathfinder.write_dataset(root / "pathfinder16", 18, seed=1, style=style, n_test=10)
    listops.main(["--out", str(root / "listops-1000"), "--train", "20", "--val", "5", "--test", "10",
                  "--min-len", "100", "--max-len", "300", "--seed", "1", "--no-progress"])
    return root


def test_decide_run_and_collect_end_to_end_on_tiny_data(tiny_data, tmp_path, capsys):
    out = tmp_path / "out"
    for seed in ("100", "101"):  # two lanes, one seed each
        assert main(["decide", "run", "--experiment", "l1b", "--seeds", seed, "--data-dir", str(tiny_data),
                     "--out", str(out), "--tiny", "--threads", "1", "--no-progress"]) == 0
    assert sorted(p.name for p in (out / "sweeps").glob("*.json")) == [
        "pathfinder-decide-l1b-s100.json", "pathfinder-decide-l1b-s101.json"]
    assert main(["decide", "collect", "--experiment", "l1b", "--out", str(out)]) == 0
    found = schema.load(out / "decide" / "l1b.json", sweep_schema.DecideEvidence)
    assert found["seeds"] == [100, 101] and found["tiny"] and "majority" in found["controls"]
    assert [c["label"] for c in found["cells"]] == ["scratch finetune_epochs=16", "spt"]
    assert all(correctness.FIELD in p for c in found["cells"] for r in c["runs"] for p in r["curve"])
    assert found["options"]["out"] == "OUT" and "progress" not in found["options"]
    capsys.readouterr()
    assert main(["decide", "collect", "--experiment", "l1b", "--out", str(out), "--promote"]) == 2
    assert "never promoted" in capsys.readouterr().err


def test_decide_run_refuses_data_of_other_sizes_and_unregistered_seeds(tiny_data, tmp_path, capsys):
    assert main(["decide", "run", "--experiment", "l3b", "--data-dir", str(tiny_data), "--out", str(tmp_path),
                 "--no-progress"]) == 2
    assert "the registration fixes" in capsys.readouterr().err and not (tmp_path / "sweeps").exists()
    assert main(["decide", "run", "--experiment", "l6", "--seeds", "7", "--data-dir", str(tiny_data),
                 "--out", str(tmp_path), "--no-progress"]) == 2
    assert "not registered for l6" in capsys.readouterr().err


def test_registered_cells_take_their_registered_steps():
    """Pathfinder-16: 16,000 / 32 = 500 steps an epoch; ListOps 5,000 / 32 = 157 (any registered sizes)."""
    for experiment in designs.EXPERIMENTS.values():
        per_epoch = -(-experiment.data_sizes["n_train"] // 32)
        if experiment.fingerprint is not None:  # registered data
            assert per_epoch == {"pathfinder": 500, "listops": 157}[experiment.task]
        for text, steps in experiment.arms.items():
            cell = parse_cells([], [text])[0]
            epochs = (cell["finetune_epochs"] or experiment.finetune_epochs) + (
                experiment.pretrain_epochs if cell["recipe"] == "spt" else 0)
            assert epochs * per_epoch == steps, text
    assert designs.EXPERIMENTS["l6"].specs(201) == ["recipe=scratch,init=proximity,finetune_epochs=20"]
