"""Learnability controls, reference entropies, warm-up check and the equal-step records of the
LRA sweep (issue 24), on tiny data."""

import json
import math

import numpy as np
import pytest
import torch

from spt_theory.evidence import correctness, schema, sweep_schema
from spt_theory.evidence.correctness import accuracy_of, decode
from spt_theory.lra.__main__ import main
from spt_theory.lra.controls import ControlConfig, build, shortcut
from spt_theory.lra.curves import best_within
from spt_theory.lra.references import gap_closed, references
from synthetic import listops, pathfinder


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("lra")
    for split, rows in listops.generate_splits({"train": 24, "val": 8, "test": 8}, 5, 40, seed=0).items():
        listops.write_split(root / f"listops-1000/basic_{split}.tsv", rows)
    style = pathfinder.PathfinderStyle(size=16, contour_length=4, distractors=1, distractor_length=2,
                                       match_distances=True)
    pathfinder.write_dataset(root / "pathfinder16", 40, seed=0, style=style)
    return root


def _sweep(task, root, out, *extra):
    pixels = ("--set", "resolution=16", "--set", "contour_length=4") if task == "pathfinder" else ()
    return main(["sweep", "--task", task, "--data-dir", str(root), "--tiny", "--max-steps", "100", *pixels,
                 "--finetune-epochs", "1", "--cell", "recipe=scratch,finetune_epochs=2", "--cell", "recipe=spt",
                 "--seeds", "0", "--out", str(out), "--no-progress", "--name", "t", *extra])


@pytest.mark.slow
@pytest.mark.parametrize("task, controls", [("listops", ("lstm", "majority")),
                                            ("pathfinder", ("cnn", "shortcut"))])
def test_sweep_records_controls_references_and_curves_against_steps(task, controls, root, tmp_path, monkeypatch,
                                                                   capsys):
    monkeypatch.setenv("SPT_KEEP_CHECKPOINTS", "all")
    assert _sweep(task, root, tmp_path, *[a for c in controls for a in ("--control", c)]) == 0
    summary = json.loads((tmp_path / f"sweeps/{task}-t.json").read_text())
    assert set(summary["controls"]) == set(controls)
    for kind in controls:
        entry = summary["controls"][kind]
        accuracy = entry["test_accuracy"]["mean"] if "runs" in entry else entry["test_accuracy"]
        assert 0.0 <= accuracy <= 1.0
    trained = summary["controls"][controls[0]]["runs"][0]
    per_epoch = trained["steps_per_epoch"]
    assert per_epoch == math.ceil(summary["data"]["n_train"] / 4) and trained["curve"][-1]["step"] == 2 * per_epoch
    refs = summary["references"]
    assert refs["neighbour"] > 0 and refs["marginal"] > 0 and ("type" in refs) == (task == "listops")
    scratch, spt = summary["cells"]
    run = spt["runs"][0]
    assert run["pretrain_steps"] == per_epoch and run["curve"][0]["step"] == 2 * per_epoch
    assert [p["stage"] for p in run["proximity"]] == ["spt", "supervised"] and "spt_val_loss" in spt
    assert len(scratch["runs"][0]["curve"]) == 2 and scratch["cell"]["finetune_epochs"] == 2
    if task == "pathfinder":
        assert "grid_ratio" in run["proximity"][0]
    _every_evaluation_keeps_its_test_correctness(summary, controls)
    capsys.readouterr()
    assert main(["report", "--results", str(tmp_path / "results")]) == 0
    assert f"control {controls[0]}" in capsys.readouterr().out


def _every_evaluation_keeps_its_test_correctness(summary: dict, controls: tuple[str, ...]) -> None:
    """Every curve point of every cell and trained control, and every baseline, holds which test
    examples were right (n_test of them, their share its test accuracy), and the schema takes it."""
    n_test = summary["data"]["n_test"]
    runs = [run for row in summary["cells"] for run in row["runs"]] + summary["controls"][controls[0]]["runs"]
    for record in [point for run in runs for point in run["curve"]] + [summary["controls"][controls[1]]]:
        correct = decode(record["test_correct"])
        assert len(correct) == n_test and accuracy_of(record["test_correct"]) == record["test_accuracy"]
    assert correctness.test_correctness(runs[0], "t.json").mean() == runs[0]["test_accuracy"]
    schema.parse(json.dumps({**summary, "schema_version": 1, "model_defaults": {}}), sweep_schema.SweepSummary,
                 "t.json")


@pytest.mark.parametrize("args, message", [
    (["scratch", "--task", "listops", "--model", "cnn"], "does not apply to listops"),
    (["scratch", "--task", "listops", "--set", "warmup_steps=3"], "warmup_steps 3 is more than 33%"),
    (["confirm", "--task", "listops", "--model", "lstm"], "a control has no SPT stage"),
])
def test_wrong_control_and_long_warmup_are_refused(args, message, root, tmp_path, capsys):
    assert main([*args, "--data-dir", str(root), "--tiny", "--out", str(tmp_path), "--no-progress"]) == 2
    assert message in capsys.readouterr().err


def test_lstm_and_bag_ignore_padding_and_cnn_reads_the_image():
    torch.manual_seed(0)
    x = torch.randint(2, 17, (3, 7))
    padded = torch.cat([x, torch.zeros(3, 4, dtype=torch.long)], 1)
    for kind in ("lstm", "bag"):
        model = build(ControlConfig(kind, 10, 17, 11))
        assert torch.allclose(model(x, torch.ones_like(x, dtype=torch.bool)), model(padded, padded != 0), atol=1e-6)
    cnn = build(ControlConfig("cnn", 2, 0, 256))
    image = torch.rand(2, 256, 2)
    assert cnn(image).shape == (2, 2) and not torch.allclose(cnn(image)[0], cnn(image.flip(1))[0])
    with pytest.raises(Exception, match="square pixel image"):
        ControlConfig("cnn", 2, 17, 256)


def test_references_see_the_neighbours_the_marginal_misses():
    g = torch.Generator().manual_seed(0)
    start = torch.randint(0, 8, (400, 1), generator=g)
    x = 2 + (start + torch.arange(30)) % 8  # every token is its left neighbour + 1: local structure only
    refs = references(x[:300], x[300:], 0.15, True, pad_id=0, mask_id=1, vocab=10)
    assert refs["marginal"] == pytest.approx(math.log(8), abs=0.02) and refs["neighbour"] < 0.2
    assert gap_closed(refs["marginal"], refs) == 0 and gap_closed(refs["neighbour"], refs) == pytest.approx(1)


@pytest.mark.slow
def test_shortcut_reads_the_distance_and_matching_removes_it():
    d = np.array([1.0, 1.1, 5.0, 5.2] * 10)
    y = np.array([1, 1, 0, 0] * 10)
    assert shortcut(d, y, d, y)["test_accuracy"] == 1.0
    plain = pathfinder.PathfinderStyle(size=16, contour_length=6, distractors=0)
    matched = pathfinder.PathfinderStyle(size=16, contour_length=6, distractors=0, match_distances=True)
    accuracy = {}
    for name, style in (("plain", plain), ("matched", matched)):
        samples = list(pathfinder.generate(240, 1, style))
        d = np.array([s.marker_distance for s in samples])
        y = np.array([s.label for s in samples])
        accuracy[name] = shortcut(d[:160], y[:160], d[160:], y[160:])["test_accuracy"]
    assert accuracy["plain"] > 0.75 and accuracy["matched"] < 0.65


def test_best_within_reads_the_curve_at_a_budget():
    curve = [{"step": 10, "val_accuracy": 0.5, "test_accuracy": 0.4},
             {"step": 20, "val_accuracy": 0.7, "test_accuracy": 0.6},
             {"step": 30, "val_accuracy": 0.6, "test_accuracy": 0.9}]
    assert best_within(curve, 25) == 0.6 and best_within(curve, 30) == 0.6 and best_within(curve, 5) is None


def test_a_task_without_reference_numbers_prints_a_dash_in_the_report():
    from spt_theory.figures.lra_table import lra_rows
    from spt_theory.lra import report

    result = {"task": "newtask", "kind": "scratch", "seed": 0, "config": {"layers": 1, "d_model": 16},
              "options": {"keep": ["qk", "vo", "mlp", "norm", "embed"], "freeze": []},
              "metrics": {"test_accuracy": 0.5, "epochs_run": 1}, "data": {"n_test": 10}}
    (row,) = report.rows([result])
    assert row[0] == "newtask" and row[-2:] == ("-", "-")
    assert lra_rows([result])[0]["reference_percent"] is None
