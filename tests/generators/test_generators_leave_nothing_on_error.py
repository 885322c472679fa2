"""The data generators (``synthetic.listops``, ``synthetic.pathfinder``) on an error or a signal
(issue 44): an error leaves none of the folders the run created (and never removes a folder that
was there before, nor a file the toolkit did not write); a signal's line speaks of generating."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from spt_theory.util.files import StorageError, atomic_write
from spt_theory.util.interrupts import GENERATING, interrupted_line
from synthetic import listops, pathfinder

UNFIT = ["--size", "16", "--contour-length", "40", "--n", "4", "--no-progress"]  # "could not fit the paths"


def _tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def _exit_status(main, argv) -> int:
    try:
        return main(argv)
    except SystemExit as stop:  # argparse's parser.exit(2, "error: ...")
        return stop.code


def _error_line(err: str, *words: str) -> None:
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("created folder")]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert all(word in lines[0] for word in words), err


def test_a_pathfinder_error_leaves_no_folder_it_created(tmp_path, capsys):
    assert _exit_status(pathfinder.main, ["--out", str(tmp_path / "a" / "b"), *UNFIT]) == 2
    err = capsys.readouterr().err
    _error_line(err, "could not fit")
    assert f"created folder {tmp_path / 'a' / 'b' / 'curv_contour_length_40'}" in err  # it had made them
    assert _tree(tmp_path) == []


def test_a_pathfinder_error_keeps_the_users_folder_and_files(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "NOTES.txt").write_text("mine")
    assert _exit_status(pathfinder.main, ["--out", str(out), *UNFIT]) == 2
    _error_line(capsys.readouterr().err, "could not fit")
    assert _tree(tmp_path) == ["mine", "mine/NOTES.txt"]


@pytest.mark.parametrize("case", ["new_folder", "a_users_file_appears", "existing_folder"])
def test_a_listops_error_leaves_no_folder_it_created_and_no_users_file_goes(case, tmp_path, capsys, monkeypatch):
    """The second split's write fails (a full disk): the first split was written already."""
    out = tmp_path / "a" / "listops-1000"
    if case == "existing_folder":
        out.mkdir(parents=True)
        (out / "NOTES.txt").write_text("mine")
    written = []

    def write_split(path, rows):
        if written:
            if case == "a_users_file_appears":  # another program writes into the new folder meanwhile
                (out / "NOTES.txt").write_text("mine")
            raise StorageError(f"{path}: cannot write (No space left on device)")
        written.append(path)
        return atomic_write(path, lambda tmp: tmp.write_text("Source\tTarget\r\n"))

    monkeypatch.setattr(listops, "write_split", write_split)
    argv = ["--out", str(out), "--train", "3", "--val", "2", "--test", "2", "--min-len", "5", "--max-len", "40",
            "--no-progress"]
    assert _exit_status(listops.main, argv) == 2
    _error_line(capsys.readouterr().err, "No space left")
    assert written == [out / "basic_train.tsv"]
    expected = {"new_folder": [],
                "a_users_file_appears": ["a", "a/listops-1000", "a/listops-1000/NOTES.txt",
                                         "a/listops-1000/basic_train.tsv"],
                "existing_folder": ["a", "a/listops-1000", "a/listops-1000/NOTES.txt",
                                    "a/listops-1000/basic_train.tsv"]}[case]
    assert _tree(tmp_path) == expected


@pytest.mark.parametrize("generator", ["listops", "pathfinder"])
def test_an_interrupted_generator_speaks_of_generating(generator, tmp_path, capsys, monkeypatch):
    """A real SIGINT to this process while the generator works (its main's handlers catch it)."""
    module = {"listops": listops, "pathfinder": pathfinder}[generator]
    work = "generate_splits" if generator == "listops" else "write_dataset"

    def interrupted(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        raise AssertionError("the signal did not stop the generator")

    monkeypatch.setattr(module, work, interrupted)
    argv = ["--out", str(tmp_path / "out"), "--no-progress"] + (["--train", "3", "--val", "1", "--test", "1",
                                                                  "--min-len", "5", "--max-len", "40"]
                                                                 if generator == "listops" else ["--n", "2"])
    assert module.main(argv) == 130
    lines = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("created folder")]
    assert lines == [interrupted_line(signal.SIGINT, GENERATING)], lines
    assert "generates the data again" in lines[0] and "training" not in lines[0]
