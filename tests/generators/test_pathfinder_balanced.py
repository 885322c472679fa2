"""Pathfinder's balanced mode (``--balanced``): the classes matched in ink and intensity, the old
mode's images unchanged."""

import hashlib

import numpy as np
import pytest

from synthetic import pathfinder
from synthetic.pathfinder import PathfinderStyle, _markers_touch, _render, generate

SHORT = {"size": 16, "contour_length": 3, "distractors": 2, "distractor_length": 3, "match_distances": True}


def _digest(style: PathfinderStyle, n: int = 6, seed: int = 1) -> str:
    digest = hashlib.sha256()
    for sample in generate(n, seed, style):
        digest.update(sample.image.tobytes())
        digest.update(bytes([sample.label]))
    return digest.hexdigest()[:16]


def test_the_unbalanced_images_are_the_committed_generators():
    """Digests computed with the generator of main 11baa6d (before balanced existed): the data of the
    committed evidence (Pathfinder-16 contour 6, generator seed 1) are made again bit for bit."""
    assert _digest(PathfinderStyle(size=16, contour_length=6, distractors=2, distractor_length=3,
                                   match_distances=True)) == "7ede08c609c04c06"
    assert _digest(PathfinderStyle(size=32)) == "60f67a679f920583"


def test_balanced_needs_matched_distances():
    with pytest.raises(pathfinder.InputError, match="match-distances"):
        PathfinderStyle(size=16, balanced=True)


@pytest.fixture(scope="module")
def balanced():
    return list(generate(160, 3, PathfinderStyle(**SHORT, balanced=True)))


def test_no_two_markers_of_a_balanced_image_touch(balanced):
    """The label-0 separation rule holds for the markers of both labels."""
    style = PathfinderStyle(**SHORT, balanced=True)
    assert not any(_markers_touch(list(s.markers), style) for s in balanced)


def test_balanced_dashes_leave_both_path_ends_alike():
    path = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]])
    dashes = pathfinder._dashes(path, 0.6, centred=True)
    assert np.allclose(dashes[0][0], [0.2, 0.0]) and np.allclose(dashes[-1][1], [1.8, 0.0])
    plain = pathfinder._dashes(path, 0.6)
    assert np.allclose(plain[0][0], [0.0, 0.0]) and np.allclose(plain[-1][1], [1.6, 0.0])


def test_balanced_markers_have_the_same_ink_in_both_labels(balanced):
    """Marker discs drawn alone: the mean ink (pixels > 0) of the two labels within 0.6 pixels (their
    standard error is about 0.15; without the rule label 1 drew 1.5 pixels more at contour 3)."""
    style = PathfinderStyle(**SHORT, balanced=True)
    ink = {label: [(_render(16, [], list(s.markers), style.marker_radius) > 0).sum()
                   for s in balanced if s.label == label] for label in (0, 1)}
    assert abs(np.mean(ink[0]) - np.mean(ink[1])) < 0.6


def test_balanced_generation_is_deterministic():
    style = PathfinderStyle(**SHORT, balanced=True)
    assert _digest(style, 12, 5) == _digest(style, 12, 5) != _digest(style, 12, 6)


def test_cli_writes_balanced_in_the_marker_and_leaves_it_out_otherwise(tmp_path):
    args = ["--n", "4", "--size", "16", "--contour-length", "3", "--match-distances", "--seed", "2", "--no-progress"]
    assert pathfinder.main(["--out", str(tmp_path / "a"), *args, "--balanced"]) == 0
    assert pathfinder.main(["--out", str(tmp_path / "b"), *args]) == 0
    read = lambda sub: (tmp_path / sub / "curv_contour_length_3" / "GENERATED.json").read_text()  # noqa: E731
    assert '"balanced": true' in read("a") and "balanced" not in read("b")
