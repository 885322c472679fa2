"""The generators' size options are bounded as argparse reads them (issue 57, item 10):
``synthetic.pathfinder --size 100000`` tried to allocate 9.3 GiB an image; a contour or distractor
count, a ListOps split or minimum length that cannot be made in memory or time are refused alike.
Each is argparse's own ``error: argument --X: ...`` line after the usage, exit 2, nothing made."""

import pytest

from spt_theory.util.files import InputError
from synthetic import listops, pathfinder
from synthetic.pathfinder import PathfinderStyle


@pytest.mark.parametrize("option, value, words", [
    ("--size", "100000", ["--size", "between 16 and 1,024", "100,000"]),
    ("--size", "8", ["--size", "between 16 and 1,024"]),
    ("--contour-length", "1000000000", ["--contour-length", "between 2 and 1,000"]),
    ("--distractors", "50000", ["--distractors", "between 0 and 1,000"]),
    ("--distractor-length", "50000", ["--distractor-length", "between 1 and 1,000"]),
    ("--size", "9" * 5000, ["--size", "5000 digits"]),
    ("--size", "big", ["--size", "expected an integer"]),
])
def test_pathfinder_sizes_are_bounded_in_one_argparse_line(tmp_path, argparse_refusal, option, value, words):
    out = tmp_path / "out"
    argparse_refusal(pathfinder.main, ["--out", str(out), "--n", "2", option, value], *words)
    assert not out.exists()


@pytest.mark.parametrize("option, value, words", [
    ("--train", "100000000", ["--train", "between 0 and 1,000,000", "held in memory"]),
    ("--test", "2000000", ["--test", "between 0 and 1,000,000"]),
    ("--min-len", "100000", ["--min-len", "between 0 and 5,000", "too rare"]),
    ("--val", "-1", ["--val", "between 0 and 1,000,000"]),
])
def test_listops_sizes_are_bounded_in_one_argparse_line(tmp_path, argparse_refusal, option, value, words):
    out = tmp_path / "out"
    argparse_refusal(listops.main, ["--out", str(out), option, value], *words)
    assert not out.exists()


def test_the_style_refuses_an_image_too_large_for_library_callers_too():
    with pytest.raises(InputError, match="between 16 and 1024"):
        PathfinderStyle(size=100_000)
    with pytest.raises(InputError, match="at most 1000"):
        PathfinderStyle(contour_length=10**9)
    PathfinderStyle(size=256, contour_length=14)  # LRA's largest stays possible
