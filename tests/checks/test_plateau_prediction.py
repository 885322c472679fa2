"""The pre-registered plateau prediction at n = 400 (spt_theory.checks.plateau_prediction): the
committed JSON is what the module computes from the committed grid (n = 25-200 only) and the
quantities measured at init; a run at n = 400 cannot move it; a missing or impossible file is an
EvidenceError naming the field."""

import copy
import json
import math

import pytest
import torch

from spt_theory.checks import plateau_grid
from spt_theory.checks import plateau_prediction as pp
from spt_theory.checks.force import VOCAB, P, design_model
from spt_theory.evidence import EvidenceError, schema
from spt_theory.plateau import design, runs
from spt_theory.theory import force


@pytest.fixture(scope="module")
def committed():
    return pp.load(pp.PREDICTION)


def _grid():
    return plateau_grid.load(design.SUMMARY)


def _close(a, b, rel=1e-9):
    if isinstance(a, dict):
        assert set(a) == set(b)
        for k in a:
            _close(a[k], b[k], rel)
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y, rel)
    elif isinstance(a, float) or isinstance(b, float):
        assert math.isclose(a, b, rel_tol=rel), (a, b)
    else:
        assert a == b


def test_the_committed_prediction_is_what_the_module_computes(committed):
    again = pp.record(_grid(), plateau_grid.load(design.GRADIENT_RMS), committed["inputs"])
    _close(json.loads(json.dumps(again)), committed)
    assert committed["fit_lengths"] == [25, 50, 100, 200] and committed["date"] == "2026-12-02"
    assert committed["registration_rule"] == "holds if all three seeds at n = 400 fall inside the interval"


@pytest.mark.slow
def test_the_inputs_at_init_are_the_force_and_the_gradient_rms(committed):
    """sigma_1 recomputed by spt_theory.theory.force at every n and seed; s(400) of seed 0 by runs.gradient_rms."""
    torch.set_num_threads(1)
    for seed, by_n in committed["inputs"]["sigma_1"].items():
        for n, value in by_n.items():
            B = force.label_force(design_model(int(n), int(seed)), VOCAB, int(n), P)
            assert math.isclose(float(force.top_singular(B).max()), value, rel_tol=1e-9)
    s = runs.gradient_rms(pp.TARGET, "supervised", 0)
    assert math.isclose(s, committed["inputs"]["noise_scale_n400"]["supervised"][0], rel_tol=1e-5)
    assert committed["force_exponent"]["exponent"] == pytest.approx(-1.62, abs=0.01)  # T9's


def test_a_run_at_n_400_does_not_move_the_prediction(committed):
    grid = copy.deepcopy(_grid())
    before = pp.predict(grid, plateau_grid.load(design.GRADIENT_RMS), committed["inputs"])
    for kind, value in (("scratch", 99999), ("spt", 31)):
        for seed in grid["seeds"]:
            grid["runs"].append({"kind": kind, "length": 400, "seed": seed, "optimiser": "adamw", "qk_scale": 1.0,
                                 "cap": 120000 if kind == "scratch" else 0, "value": value, "capped": False})
    assert pp.predict(grid, plateau_grid.load(design.GRADIENT_RMS), committed["inputs"]) == before


def test_the_interval_and_the_alternatives(committed):
    adamw, spt = committed["predictions"]["adamw_escape"], committed["predictions"]["spt_steps_to_95"]
    for p in (adamw, spt):
        lo, hi = p["interval"]
        assert lo < p["steps"] < hi
        assert math.log(hi / p["steps"]) == pytest.approx(pp.WIDTH * math.hypot(p["log_seed_sd"],
                                                                                p["log_standard_error"]))
    assert {a["law"]: a["excluded"] for a in adamw["alternatives"]} == {"gradient_flow": True, "a0_noise": True}
    assert {a["law"]: a["excluded"] for a in spt["alternatives"]} == {"sign_regime": True, "gradient_flow": False}


def test_a_missing_prediction_is_an_evidence_error(tmp_path):
    with pytest.raises(EvidenceError, match="prediction_n400.json: missing"):
        pp.load(tmp_path / "prediction_n400.json")


@pytest.mark.parametrize("edit, message", [
    (lambda t: t["predictions"]["adamw_escape"].__setitem__("interval", [1.0, 2.0]),
     "predictions.adamw_escape: interval [1, 2] does not contain steps"),
    (lambda t: t["predictions"]["spt_steps_to_95"]["alternatives"][1].__setitem__("excluded", True),
     "predictions.spt_steps_to_95: alternatives[1].excluded is True"),
    (lambda t: t.__setitem__("fit_lengths", [25, 400]), "reach the target length"),
    (lambda t: t["predictions"]["adamw_escape"].__setitem__("steps", math.inf),
     "predictions.adamw_escape.steps: not a finite number"),
    (lambda t: t.pop("date"), "date: missing"),
])
def test_the_schema_names_the_field(committed, edit, message):
    tree = copy.deepcopy(committed)
    edit(tree)
    with pytest.raises(EvidenceError) as error:
        schema.parse(json.dumps(tree), schema.PlateauPrediction, "prediction_n400.json")
    assert str(error.value).startswith("prediction_n400.json: ") and message in str(error.value)
