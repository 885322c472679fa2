"""Paths taken from inside the data never lead out of the folder the reader was pointed at (issue 28).

Pathfinder metadata lines, the files of an IMDb folder, the files a Hugging Face copy lists and the
cache keys of LRA result JSONs: an absolute path, a ``..`` or a symbolic link leading out is refused
with one ``error:`` line naming the file and line, exit 2, nothing written, and the file outside is
never opened.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from helpers import _files, _listops, _one_error_line, _pathfinder
from PIL import Image

from spt_theory.lra import __main__ as lra_cli
from spt_theory.lra.readers.text import read_text
from spt_theory.util.files import InputError


def _outside(tmp_path: Path) -> Path:
    """A folder beside the data holding what a hostile data folder points at: a valid image, a review."""
    folder = tmp_path / "outside"
    folder.mkdir()
    Image.fromarray(np.full((32, 32), 7, np.uint8)).save(folder / "sample_0.png")
    (folder / "secret.txt").write_text("not part of the data")
    return folder


def _opened(monkeypatch) -> list[Path]:
    """The paths the readers open as images or read as reviews, from now on."""
    opened = []
    real_open, real_read = Image.open, Path.read_bytes
    monkeypatch.setattr(Image, "open", lambda path, *a, **k: (opened.append(Path(path)), real_open(path, *a, **k))[1])
    monkeypatch.setattr(Path, "read_bytes", lambda self: (opened.append(self), real_read(self))[1])
    return opened


def _hostile_pathfinder(case: str, data: Path, outside: Path) -> str:
    """Line 5 of ``metadata/0.npy`` made to point out of the data; returns what the error names."""
    base = _pathfinder(data)
    lines = (base / "metadata/0.npy").read_text().splitlines(keepends=True)
    if case == "absolute":
        lines[4] = f"{outside} sample_0.png 4 0 14\n"
    elif case == "dotdot":
        lines[4] = f"imgs/0/{os.path.relpath(outside, base / 'imgs/0')} sample_0.png 4 0 14\n"
    elif case == "dotdot_inside":  # climbs and comes back: refused all the same
        lines[4] = "imgs/0/../0 sample_4.png 4 0 14\n"
    elif case == "linked_folder":
        (base / "imgs/1").symlink_to(outside, target_is_directory=True)
        lines[4] = "imgs/1 sample_0.png 4 0 14\n"
    else:  # linked_file
        (base / "imgs/0/sample_4.png").unlink()
        (base / "imgs/0/sample_4.png").symlink_to(outside / "sample_0.png")
    (base / "metadata/0.npy").write_text("".join(lines))
    return f"{base / 'metadata/0.npy'}:5"


@pytest.mark.parametrize("case", ["absolute", "dotdot", "dotdot_inside", "linked_folder", "linked_file"])
def test_pathfinder_metadata_pointing_out_of_the_data_is_refused(case, tmp_path, capsys, monkeypatch):
    data, outside = tmp_path / "data", _outside(tmp_path)
    where = _hostile_pathfinder(case, data, outside)
    opened = _opened(monkeypatch)
    before = _files(tmp_path)
    out = tmp_path / "out"
    assert lra_cli.main(["scratch", "--task", "pathfinder", "--data-dir", str(data), "--tiny", "--out", str(out),
                         "--no-progress"]) == 2
    captured = capsys.readouterr()
    _one_error_line(captured.err, where, "outside")
    assert captured.out == "" and not out.exists() and _files(tmp_path) == before
    assert not [p for p in opened if outside in Path(os.path.realpath(p)).parents]


def test_imdb_review_linked_out_of_the_data_is_refused(tmp_path, capsys, monkeypatch):
    data, outside = tmp_path / "data", _outside(tmp_path)
    for polarity in ("neg", "pos"):
        for split in ("train", "test"):
            (data / f"aclImdb/{split}/{polarity}").mkdir(parents=True)
            (data / f"aclImdb/{split}/{polarity}/0_7.txt").write_text(f"a {polarity} review")
    link = data / "aclImdb/train/pos/1_9.txt"
    link.symlink_to(outside / "secret.txt")
    opened = _opened(monkeypatch)
    out = tmp_path / "out"
    assert lra_cli.main(["scratch", "--task", "text", "--data-dir", str(data), "--tiny", "--out", str(out),
                         "--no-progress"]) == 2
    _one_error_line(capsys.readouterr().err, link, "outside")
    assert not out.exists() and outside / "secret.txt" not in [Path(os.path.realpath(p)) for p in opened]


@pytest.mark.parametrize("case", ["split", "data_file"])
def test_hugging_face_copy_listing_files_out_of_the_data_is_refused(case, tmp_path, monkeypatch):
    """``dataset_dict.json`` names the split folders, ``<split>/state.json`` the Arrow files: both
    checked before ``datasets`` (not needed for the refusal) would open them."""
    data, outside = tmp_path / "data", _outside(tmp_path)
    data.mkdir()
    splits = ["../outside", "test"] if case == "split" else ["train", "test"]
    (data / "dataset_dict.json").write_text(json.dumps({"splits": splits}))
    (data / "train").mkdir()
    (data / "train/state.json").write_text(json.dumps({"_data_files": [{"filename": str(outside / "secret.txt")}]}))
    with pytest.raises(InputError) as error:
        read_text(data, "train")
    named = data / ("dataset_dict.json" if case == "split" else "train/state.json")
    assert str(named) in str(error.value) and "outside" in str(error.value), error.value


def test_result_json_whose_cache_key_leads_out_is_refused(tmp_path, capsys):
    """``lra probe`` reads checkpoints from, and writes its probe beside, the cache a result names."""
    data = tmp_path / "data"
    _listops(data)
    result = tmp_path / "results/scratch-x.json"
    result.parent.mkdir()
    result.write_text(json.dumps({
        "kind": "scratch", "task": "listops", "seed": 0, "cache": "../../../outside",
        "metrics": {"test_accuracy": 0.5, "best_epoch": 1},
        "options": {"task": "listops", "data_dir": str(data), "out": str(tmp_path / "out"), "tiny": True}}))
    before = _files(tmp_path)
    assert lra_cli.main(["probe", str(result)]) == 2
    _one_error_line(capsys.readouterr().err, result, "cache")
    assert _files(tmp_path) == before
