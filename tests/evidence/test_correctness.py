"""Per-example test correctness (issue 41): the codec and its refusals, the schema's checks of a
stored one, the claims' helper, the evaluation order of the LRA task (the test split's), and the
race's curve points.  The tiny sweeps that record it end to end: tests/lra/test_lra_controls.py."""

import base64
import copy
import json

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from spt_theory import evidence
from spt_theory.evidence import EvidenceError, correctness, lra_schema, schema, sweep_schema
from spt_theory.evidence.correctness import accuracy_of, decode, encode
from spt_theory.lra.configs import tiny
from spt_theory.lra.inputs import LRATask
from spt_theory.lra.race import arm_curve
from spt_theory.lra.readers.common import LISTOPS_VOCAB
from spt_theory.lra.tasks import config_for
from spt_theory.training.runtime import Runtime


@pytest.mark.parametrize("n", [1, 7, 8, 9, 10_000])
def test_round_trip_at_the_byte_edges(n):
    rng = np.random.default_rng(n)
    for correct in (rng.random(n) < 0.5, np.ones(n, bool), np.zeros(n, bool)):
        value = encode(correct)
        assert value["n"] == n and len(base64.b64decode(value["bits"])) == -(-n // 8)
        assert np.array_equal(decode(value), correct) and decode(value).dtype == np.bool_
        assert accuracy_of(value) == int(correct.sum()) / n
        assert json.loads(json.dumps(value)) == value


@given(st.lists(st.booleans(), min_size=1, max_size=300))
def test_round_trip_of_any_list(bits):
    value = encode(bits)
    assert decode(value).tolist() == bits
    assert accuracy_of(value) == sum(bits) / len(bits)


def test_the_bit_order_is_fixed_example_0_the_high_bit_of_byte_0():
    assert base64.b64decode(encode([True] + [False] * 7)["bits"]) == b"\x80"
    assert base64.b64decode(encode([False] * 8 + [True])["bits"]) == b"\x00\x80"
    assert encode(torch.tensor([True, False]).numpy()) == encode([1, 0]) == {"n": 2, "bits": "gA=="}


def _bits(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


@pytest.mark.parametrize("value, message", [
    ({"n": 0, "bits": ""}, "n: a positive integer"),
    ({"n": -3, "bits": _bits(b"\x00")}, "n: a positive integer"),
    ({"n": 2.0, "bits": _bits(b"\x00")}, "n: a positive integer"),
    ({"n": True, "bits": _bits(b"\x00")}, "n: a positive integer"),
    ({"bits": _bits(b"\x00")}, "n: a positive integer"),
    ({"n": 9, "bits": _bits(b"\x00")}, "bits: 1 bytes, n = 9 needs 2"),
    ({"n": 8, "bits": _bits(b"\x00\x00")}, "bits: 2 bytes, n = 8 needs 1"),
    ({"n": 8, "bits": "!!!!"}, "bits: not base64"),
    ({"n": 8, "bits": "AA"}, "bits: not base64"),  # padding missing
    ({"n": 8, "bits": "AB=="}, "bits: not canonical"),  # stray bits in the last character
    ({"n": 8, "bits": "AA==\n"}, "bits: not base64"),
    ({"n": 8, "bits": "ÄÄ=="}, "bits: not base64"),
    ({"n": 8, "bits": 0}, "bits: a base64 string"),
    ({"n": 7, "bits": _bits(b"\x01")}, "bits: padding bits past example 7 are set"),
    ({"n": 9, "bits": _bits(b"\xff\x40")}, "bits: padding bits past example 9 are set"),
    ([True], "an object {n, bits} expected"),
])
def test_a_bad_encoding_is_refused_naming_the_field(value, message):
    with pytest.raises(ValueError, match=None) as error:
        decode(value)
    assert message in str(error.value)


@pytest.mark.parametrize("values", [[], [[True]], [0, 2]])
def test_encode_refuses_what_is_no_list_of_booleans(values):
    with pytest.raises(ValueError):
        encode(values)


# ------------------------------------------------------------------------------ the schema
def _without_correctness(node):
    if isinstance(node, dict):
        return {k: _without_correctness(v) for k, v in node.items() if k != "test_correct"}
    if isinstance(node, list):
        return [_without_correctness(v) for v in node]
    return node


@pytest.fixture
def summary() -> dict:
    """The committed ListOps summary as written before per-example correctness (every
    ``test_correct`` removed), then with it on one curve point and on the majority baseline,
    consistent with their stored accuracies."""
    tree = _without_correctness(json.loads(evidence.path("lra", "listops.json").read_text()))
    n = tree["data"]["n_test"]
    point = tree["cells"][0]["runs"][0]["curve"][0]
    point["test_correct"] = encode(np.arange(n) < round(point["test_accuracy"] * n))
    majority = tree["controls"]["majority"]
    majority["test_correct"] = encode(np.arange(n) < round(majority["test_accuracy"] * n))
    majority["test_accuracy"] = accuracy_of(majority["test_correct"])  # stored as a float32 mean before
    return tree


def _parse(tree: dict) -> None:
    schema.parse(json.dumps(tree), sweep_schema.SweepSummary, "listops.json")


def test_consistent_correctness_is_accepted_and_read_back(summary):
    _parse(summary)
    run = copy.deepcopy(summary["cells"][0]["runs"][0])
    run["best_epoch"] = run["curve"][0]["epoch"]
    assert correctness.test_correctness(run, "listops.json").mean() == run["curve"][0]["test_accuracy"]


def _flip(tree: dict, index: int = -1) -> None:
    value = tree["cells"][0]["runs"][0]["curve"][0]["test_correct"]
    correct = decode(value)
    correct[index] = not correct[index]
    value.update(encode(correct))


def _longer(tree: dict) -> None:
    """Twice the examples, the same share: only the count is wrong."""
    value = tree["cells"][0]["runs"][0]["curve"][0]["test_correct"]
    value.update(encode(np.repeat(decode(value), 2)))


@pytest.mark.parametrize("edit, message", [
    (_flip, "cells[0].runs[0].curve[0].test_correct: its accuracy 0.17 is not the stored test_accuracy 0.169"),
    (_longer, "cells[0].runs[0].curve[0].test_correct.n: 2000 examples, data.n_test is 1000"),
    (lambda t: t["cells"][0]["runs"][0]["curve"][0]["test_correct"].__setitem__("bits", "%%%"),
     "cells[0].runs[0].curve[0].test_correct: bits: not base64"),
    (lambda t: t["controls"]["majority"]["test_correct"].__setitem__("n", 0),
     "controls.majority.test_correct: n: a positive integer"),
    (lambda t: t["controls"]["majority"].__setitem__("test_accuracy", 0.5),
     "controls.majority.test_correct: its accuracy"),
])
def test_the_schema_refuses_correctness_that_disagrees_naming_the_field(summary, edit, message):
    edit(summary)
    with pytest.raises(EvidenceError) as error:
        _parse(summary)
    assert str(error.value).startswith("listops.json: ") and message in str(error.value)


def test_a_claim_that_needs_correctness_gets_an_evidence_error_where_it_is_missing(summary):
    run = summary["cells"][1]["runs"][0]
    with pytest.raises(EvidenceError, match=r"listops.json: cells\[1\].runs\[0\].curve\[\d+\].test_correct: missing: "
                                            r"this claim needs per-example test correctness; regenerate with"):
        correctness.test_correctness(run, "listops.json", "cells[1].runs[0]")
    with pytest.raises(EvidenceError, match="no point at best_epoch 99"):
        correctness.test_correctness({**run, "best_epoch": 99}, "listops.json", "cells[1].runs[0]")
    with pytest.raises(EvidenceError, match=r"x.json: curve\[0\].test_correct: n: a positive integer"):
        correctness.test_correctness({"curve": [{"epoch": 1, "test_correct": {"n": 0, "bits": ""}}], "best_epoch": 1},
                                "x.json")


def test_the_committed_evidence_carries_correctness_and_reads():
    for name in ("listops.json", "pathfinder.json"):
        tree = schema.load(evidence.path("lra", name), sweep_schema.SweepSummary)
        assert all("test_correct" in point for cell in tree["cells"] for run in cell["runs"]
                   for point in run["curve"])
    schema.load(evidence.path("race", "pathfinder16.json"), lra_schema.RaceEvidence)


def test_race_points_carry_it_and_the_race_schema_checks_it():
    history = [{"epoch": 1, "seconds": 1.0, "val_accuracy": 0.5, "test_accuracy": 0.75,
                "test_correct": encode([True, True, False, True])},
               {"epoch": 2, "seconds": 1.0, "val_accuracy": 0.5, "test_accuracy": 0.5}]  # cached before: none
    points = arm_curve(history, 10, 0, 0.0, 1.0, 0.0)
    assert points[0]["test_correct"] == encode([True, True, False, True]) and "test_correct" not in points[1]
    tree = json.loads(evidence.path("race", "pathfinder16.json").read_text())
    point = tree["arms"][0]["curve"][0]
    n = tree["data"]["n_test"]
    point["test_correct"] = encode(np.arange(n) < round(point["test_accuracy"] * n))
    schema.parse(json.dumps(tree), lra_schema.RaceEvidence, "race")
    point["test_correct"] = encode(np.arange(n + 1) < round(point["test_accuracy"] * (n + 1)))
    with pytest.raises(EvidenceError, match="test_correct"):
        schema.parse(json.dumps(tree), lra_schema.RaceEvidence, "race")


# ------------------------------------------------------------------------------ the evaluation order
@pytest.mark.slow
def test_correctness_is_in_the_test_splits_order_though_evaluation_runs_in_length_order():
    """ListOps trims padding, so evaluation batches go in length order; example i's bit is still
    example i's: the same as classifying each example alone."""
    from spt_theory.core.model import Encoder

    config = tiny(config_for("listops"))
    assert config.trims_padding
    task = LRATask(config, LISTOPS_VOCAB)
    generator = torch.Generator().manual_seed(0)
    lengths = torch.randint(2, 30, (300,), generator=generator)
    x = torch.randint(0, LISTOPS_VOCAB.size, (300, 30), generator=generator)
    x[LISTOPS_VOCAB.pad_id == x] = 1
    x[torch.arange(30)[None, :] >= lengths[:, None]] = LISTOPS_VOCAB.pad_id
    assert not torch.equal(task.batches(x)[0], torch.arange(128))  # not the split's order
    torch.manual_seed(0)
    model = Encoder(task.model_config(config, 30))
    y = task.logits(model, x[:1]).argmax(-1).repeat(300)  # about as many right as wrong: not a constant
    runtime = Runtime()
    correct = task.correct(model, x, y, runtime)
    model.eval()
    with torch.no_grad():
        alone = torch.tensor([bool(task.logits(model, x[i:i + 1]).argmax(-1) == y[i]) for i in range(300)])
    assert 0 < int(correct.sum()) < 300 and torch.equal(correct, alone)
    assert task.accuracy(model, x, y, runtime) == accuracy_of(encode(correct.numpy()))
