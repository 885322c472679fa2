"""The shortcut audit (``lra audit``): a planted shortcut lands in the floor, a purely local
signal in the one-hop ceiling only; the report follows its schema; bad input is one line."""

import json

import numpy as np
import pytest
import torch

from spt_theory.evidence import EvidenceError, lra_schema, schema
from spt_theory.lra import __main__ as lra_main
from spt_theory.lra.audit import audit, wilson
from spt_theory.lra.data import LRAData
from spt_theory.lra.readers.common import LISTOPS_VOCAB, PIXEL_VOCAB
from synthetic import pathfinder


def _images(n: int, rng: np.random.Generator, planted: str) -> tuple[np.ndarray, np.ndarray]:
    """16 x 16 images of 6 two-pixel strokes: label 1 draws them horizontal, label 0 vertical
    (same ink, same intensities: only a local pattern tells); ``planted='ink'`` adds 8 more
    pixels to label 1 instead and draws both labels' strokes horizontal (only the ink tells)."""
    images = np.zeros((n, 16, 16), dtype=np.int64)
    labels = rng.integers(0, 2, n)
    for image, label in zip(images, labels):
        for _ in range(6):
            y, x = rng.integers(0, 16, 2)  # strokes wrap around: every pixel equally likely in both labels
            image[y, x] = 255
            if planted == "local" and label == 0:
                image[(y + 1) % 16, x] = 255
            else:
                image[y, (x + 1) % 16] = 255
        if planted == "ink" and label == 1:
            for y, x in rng.integers(0, 16, (8, 2)):
                image[y, x] = 255
    return images.reshape(n, -1), labels


def _data(planted: str, seed: int = 0) -> LRAData:
    rng = np.random.default_rng(seed)
    splits = [_images(n, rng, planted) for n in (600, 300, 400)]
    tensors = [torch.as_tensor(a) for split in splits for a in split]
    return LRAData(*tensors, PIXEL_VOCAB)


def _row(report: dict, name: str) -> dict:
    return next(r for r in report["baselines"] if r["name"] == name)


@pytest.mark.slow
def test_a_local_pattern_is_in_the_ceiling_and_not_the_floor():
    report = audit(_data("local"))
    assert report["ceiling_accuracy"] > 95
    assert report["floor_accuracy"] < 65  # same ink, same intensity, random positions
    assert report["window"] > 30


@pytest.mark.slow
def test_an_ink_shortcut_is_in_the_floor():
    report = audit(_data("ink"))
    assert _row(report, "ink")["test_accuracy"] > 95 and _row(report, "histogram")["test_accuracy"] > 95
    assert report["floor_accuracy"] > 95 and report["window"] < 5


@pytest.mark.slow
def test_token_tasks_get_ngrams_and_the_token_histogram():
    rng = np.random.default_rng(1)

    def split(n):  # label 1: token 5 directly after token 6 somewhere; both labels hold both tokens
        x = rng.integers(2, LISTOPS_VOCAB.size, (n, 40))
        y = rng.integers(0, 2, n)
        x[x == 5] = 7
        x[x == 6] = 8
        for row, label in zip(x, y):
            i, j = rng.choice(38, 2, replace=False)
            row[i], row[i + 1] = (6, 5) if label else (5, 9)
            row[j] = 6 if not label else row[j]
            row[-3:] = 0  # padding
        return torch.as_tensor(x), torch.as_tensor(y)

    report = audit(LRAData(*split(600), *split(300), *split(400), LISTOPS_VOCAB))
    names = [r["name"] for r in report["baselines"]]
    assert names == ["histogram", "per_position", "ink", "ngrams2", "ngrams3"]
    assert report["ceiling_accuracy"] > 95 > report["floor_accuracy"]


def test_wilson_covers_its_level_and_refuses_nonsense():
    rng = np.random.default_rng(0)
    covered = np.mean([lo <= 0.6 <= hi for lo, hi in (wilson(int(rng.binomial(400, 0.6)), 400) for _ in range(2000))])
    assert 0.935 <= covered <= 0.965
    with pytest.raises(pathfinder.InputError):
        wilson(5, 0)


@pytest.fixture(scope="module")
def short_contour(tmp_path_factory):
    root = tmp_path_factory.mktemp("audit")
    pathfinder.write_dataset(root / "pathfinder16", 180, seed=4, n_test=60,
                             style=pathfinder.PathfinderStyle(size=16, contour_length=3, match_distances=True,
                                                              balanced=True, distractors=2, distractor_length=3))
    return root


@pytest.mark.slow
def test_the_audit_command_writes_a_report_its_schema_accepts(short_contour, tmp_path, capsys):
    out = tmp_path / "audit.json"
    code = lra_main.main(["audit", str(short_contour), "--set", "resolution=16", "--set", "contour_length=3",
                          "--json", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "one-hop ceiling" in printed and "patterns3" in printed
    report = schema.load(out, lra_schema.AuditReport)
    assert report["data"]["n_test"] == 60 and report["data_source"]["settings"]["balanced"] is True
    assert len(report["data"]["fingerprint"]) == 16


@pytest.mark.slow
def test_the_schema_refuses_a_floor_that_is_not_the_best(short_contour, tmp_path):
    out = tmp_path / "audit.json"
    assert lra_main.main(["audit", str(short_contour), "--set", "resolution=16", "--set", "contour_length=3",
                          "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    report["floor_accuracy"] += 3
    with pytest.raises(EvidenceError, match="floor"):
        schema.parse(json.dumps(report), lra_schema.AuditReport, "edited")


@pytest.mark.slow
@pytest.mark.parametrize("argv, said", [
    (["--set", "resolution=16"], "curv_contour_length_14"),
    (["--set", "resolution"], "FIELD=VALUE"),
    (["--task", "nonsense"], "nonsense"),
])
def test_bad_input_is_one_line_and_writes_nothing(short_contour, tmp_path, capsys, argv, said):
    out = tmp_path / "sub" / "audit.json"
    code = lra_main.main(["audit", str(short_contour), *argv, "--json", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and said in err[0] and not out.exists()


@pytest.mark.parametrize("side", [1, 4])
def test_an_image_smaller_than_the_largest_pattern_is_one_line_before_any_fit(side):
    rng = np.random.default_rng(0)

    def split(n):
        return torch.as_tensor(rng.integers(0, 256, (n, side * side))), torch.as_tensor(np.arange(n) % 2)

    with pytest.raises(pathfinder.InputError, match=f"{side} x {side} images is smaller than the 5 x 5 patterns"):
        audit(LRAData(*split(20), *split(10), *split(10), PIXEL_VOCAB))


def test_a_token_sequence_shorter_than_the_longest_ngram_is_one_line():
    def split(n):
        return torch.as_tensor(np.full((n, 2), 5)), torch.as_tensor(np.arange(n) % 2)

    with pytest.raises(pathfinder.InputError, match="2 positions is shorter than the 3-grams"):
        audit(LRAData(*split(20), *split(10), *split(10), LISTOPS_VOCAB))
