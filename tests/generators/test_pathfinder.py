"""Pathfinder generator: label = connectivity, geometry, balance, determinism, release layout."""

import json
import math

import numpy as np
import pytest
from scipy import ndimage

from spt_theory.lra.readers.pathfinder import read_pathfinder
from synthetic import pathfinder
from synthetic.pathfinder import PathfinderStyle, balanced_labels, generate, write_dataset

EIGHT_NEIGHBOURS = np.ones((3, 3), dtype=bool)


@pytest.fixture(scope="module")
def samples():
    return list(generate(60, seed=11))


def _component_at(components, point):
    x, y = point
    return components[int(y), int(x)]


def test_markers_connected_through_the_paths_iff_label_is_1(samples):
    for sample in samples:
        components, _ = ndimage.label(sample.path_masks.any(axis=0), structure=EIGHT_NEIGHBOURS)
        first, second = (_component_at(components, m) for m in sample.markers)
        assert first > 0 and second > 0
        assert (first == second) == (sample.label == 1)
        assert (sample.marker_paths[0] == sample.marker_paths[1]) == (sample.label == 1)


def test_rendered_ink_of_different_paths_never_touches(samples):
    for sample in samples:
        ink, count = ndimage.label(sample.image > 0, structure=EIGHT_NEIGHBOURS)
        for component in range(1, count + 1):
            owners = [p for p, mask in enumerate(sample.path_masks) if (mask & (ink == component)).any()]
            assert len(owners) == 1
        for mask in sample.path_masks:  # every path is visible
            assert sample.image[mask].max() > 0


def test_markers_are_drawn_at_path_ends(samples):
    for sample in samples:
        for centre, owner in zip(sample.markers, sample.marker_paths):
            path = sample.paths[owner]
            assert min(np.linalg.norm(centre - path[0]), np.linalg.norm(centre - path[-1])) < 1e-9
            x, y = centre
            assert sample.image[int(y), int(x)] >= 200


def test_paths_are_chains_of_short_segments_with_bounded_turning(samples):
    style = PathfinderStyle()
    for sample in samples:
        segments = [len(path) - 1 for path in sample.paths]
        assert segments == [style.contour_length] * 2 + [style.distractor_length] * style.distractors
        for path in sample.paths:
            steps = np.diff(path, axis=0)
            assert np.allclose(np.linalg.norm(steps, axis=1), style.segment_length)
            headings = np.arctan2(steps[:, 1], steps[:, 0])
            turns = (np.diff(headings) + math.pi) % (2 * math.pi) - math.pi
            assert np.abs(turns).max(initial=0) <= style.max_turn + 1e-9
            assert path.min() >= style.margin - 1e-9 and path.max() <= style.size - style.margin + 1e-9


def test_paths_are_dashed(samples):
    # Gaps: along a long path, some mask pixels are darker than the fully inked ones.
    dim = [sample.image[sample.path_masks[0]] for sample in samples]
    assert all((values < 128).any() and (values == 255).any() for values in dim)


def test_labels_are_balanced(samples):
    assert sum(sample.label for sample in samples) == 30
    assert balanced_labels(7, seed=0).sum() == 3
    assert not np.array_equal(balanced_labels(40, seed=0), balanced_labels(40, seed=1))


def test_generation_is_deterministic_by_seed(samples):
    again = list(generate(60, seed=11))
    assert all(np.array_equal(a.image, b.image) and a.label == b.label for a, b in zip(samples, again))
    other = list(generate(60, seed=12))
    assert not all(np.array_equal(a.image, b.image) for a, b in zip(samples, other))


def test_reader_reads_what_the_generator_writes(tmp_path):
    root = write_dataset(tmp_path / "pathfinder32", 30, seed=5, per_folder=8)
    generated = list(generate(30, seed=5))
    metadata = sorted(p.name for p in (root / "metadata").iterdir())
    assert metadata == ["0.npy", "1.npy", "2.npy", "3.npy"]
    last_line = (root / "metadata/3.npy").read_text().splitlines()[-1]
    assert last_line == f"imgs/3 sample_5.png 5 {generated[29].label} 14 {generated[29].marker_distance:.4f}"
    expected = {(s.image.tobytes(), s.label) for s in generated}
    splits = {name: read_pathfinder(tmp_path, name, seed=0) for name in ("train", "val", "test")}
    assert [len(s) for s in splits.values()] == [24, 3, 3]
    read = {(row.numpy().astype(np.uint8).tobytes(), int(label))
            for split in splits.values() for row, label in zip(split.inputs, split.labels)}
    assert read == expected


def test_a_held_out_test_split_is_read_as_the_test_split(tmp_path):
    """``--n-test``: the registered 16,000 / 2,000 / 10,000 split in miniature (18 + 10 images: 16 / 2 / 10);
    the test images come from their own streams, none of them is a train or validation image."""
    root = write_dataset(tmp_path / "pathfinder32", 18, seed=5, per_folder=8, n_test=10)
    assert sorted(p.name for p in (root / "metadata").iterdir()) == [
        "0.npy", "1.npy", "2.npy", "test_0.npy", "test_1.npy"]
    assert json.loads((root / "GENERATED.json").read_text())["settings"]["n_test"] == 10
    main, test = list(generate(18, seed=5)), list(generate(10, seed=5, offset=18))
    assert not {s.image.tobytes() for s in main} & {s.image.tobytes() for s in test}
    assert sum(s.label for s in test) == 5  # balanced on its own
    splits = {name: read_pathfinder(tmp_path, name, seed=0) for name in ("train", "val", "test")}
    assert [len(s) for s in splits.values()] == [16, 2, 10]
    assert [row.numpy().astype(np.uint8).tobytes() for row in splits["test"].inputs] == [
        s.image.reshape(-1).tobytes() for s in test]  # in metadata order
    train_val = {row.numpy().astype(np.uint8).tobytes() for name in ("train", "val") for row in splits[name].inputs}
    assert train_val == {s.image.reshape(-1).tobytes() for s in main}
    write_dataset(tmp_path / "plain" / "pathfinder32", 18, seed=5, per_folder=8)  # without: 80/10/10 as before
    assert [len(read_pathfinder(tmp_path / "plain", name, seed=0)) for name in ("train", "val", "test")] == [14, 2, 2]


def test_cli_writes_the_release_layout(tmp_path, capsys):
    assert pathfinder.main(["--out", str(tmp_path), "--n", "5", "--per-folder", "4", "--seed", "2"]) == 0
    root = tmp_path / "curv_contour_length_14"
    assert sorted(p.name for p in (root / "imgs/0").iterdir()) == [f"sample_{i}.png" for i in range(4)]
    assert (root / "imgs/1/sample_0.png").exists()
    assert len((root / "metadata/1.npy").read_text().splitlines()) == 1
    with pytest.raises(SystemExit) as exit_info:
        pathfinder.main(["--help"])
    assert exit_info.value.code == 0 and "same dashed path" in capsys.readouterr().out


def test_cli_rejects_bad_geometry(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        pathfinder.main(["--out", str(tmp_path), "--n", "2", "--size", "8"])
    assert exit_info.value.code == 2 and "size" in capsys.readouterr().err


@pytest.mark.slow
def test_the_pathfinder_generator_never_writes_through_a_link_inside_its_folder(tmp_path):
    """--out DIR whose curv_contour_length_<L> is a link to a user's folder: one line, exit 2,
    nothing written there."""
    import subprocess
    import sys

    user = tmp_path / "users-images"
    user.mkdir()
    (user / "keep.txt").write_text("mine")
    out = tmp_path / "pf"
    out.mkdir()
    (out / "curv_contour_length_6").symlink_to(user, target_is_directory=True)
    result = subprocess.run([sys.executable, "-m", "synthetic.pathfinder", "--out", str(out), "--n", "2",
                             "--size", "16", "--contour-length", "6", "--no-progress"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0, result.stderr
    assert "is a link: nothing was written" in result.stderr
    assert sorted(p.name for p in user.iterdir()) == ["keep.txt"]
