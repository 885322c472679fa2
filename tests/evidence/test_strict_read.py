"""The one strict reader every evidence file goes through (``evidence.strict.read``) checks the
file with ``stat`` before reading a byte (issue 57, item 8): a 3 GB sparse ``l6s.json`` is one
line naming its size and the cap, never a MemoryError; a FIFO, a device or a folder is refused
without opening it."""

import builtins
import os
import subprocess
import sys

import pytest
from helpers import ENV, REPO

from spt_theory.evidence import EvidenceError, schema, strict, sweep_schema


def _sparse(path, size=3 << 30):
    with open(path, "wb") as file:
        file.truncate(size)  # sparse: nothing on disk
    return path


def test_a_file_over_the_cap_is_refused_by_its_size_before_reading(tmp_path, monkeypatch):
    path = _sparse(tmp_path / "l6s.json")
    monkeypatch.setattr(builtins, "open", lambda *a, **k: pytest.fail("opened a file over the cap"))
    for read in (lambda: strict.read(path), lambda: schema.load(path, sweep_schema.DecideEvidence)):
        with pytest.raises(EvidenceError) as error:
            read()
        message = str(error.value)
        assert message == f"{path}: {3 << 30} bytes, over the {strict.MAX_BYTES} an evidence file may have"


def test_a_file_over_the_cap_under_a_memory_limit_is_one_line_not_a_memory_error(tmp_path):
    """The case as found: verify's reader under a 1 GiB address-space limit (the old reader read
    all 3 GB first and died with a MemoryError traceback)."""
    path = _sparse(tmp_path / "l6s.json")
    code = ("import resource, sys\n"
            "from spt_theory.evidence import schema, sweep_schema\n"
            "from spt_theory.evidence import EvidenceError\n"
            f"resource.setrlimit(resource.RLIMIT_AS, ({2 << 30}, {2 << 30}))\n"
            "try:\n"
            f"    schema.load({str(path)!r}, sweep_schema.DecideEvidence)\n"
            "except EvidenceError as error:\n"
            "    print('refused:', error)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=ENV, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.startswith(f"refused: {path}: {3 << 30} bytes, over the"), done.stdout


@pytest.mark.parametrize("kind", ["fifo", "folder", "device"])
def test_a_special_file_is_refused_without_opening_it(tmp_path, monkeypatch, kind):
    path = tmp_path / "l6s.json"
    if kind == "fifo":
        os.mkfifo(path)  # opening it for reading would hang
    elif kind == "folder":
        path.mkdir()
    else:
        path.symlink_to("/dev/zero")  # reading it would never end
    monkeypatch.setattr(builtins, "open", lambda *a, **k: pytest.fail("opened a special file"))
    with pytest.raises(EvidenceError, match="not a regular file"):
        strict.read(path)


def test_a_missing_file_and_a_good_one(tmp_path):
    with pytest.raises(EvidenceError, match="missing"):
        strict.read(tmp_path / "none.json")
    (tmp_path / "ok.json").write_text('{"a": [1, 2.5]}')
    assert strict.read(tmp_path / "ok.json") == {"a": [1, 2.5]}
    assert strict.read(tmp_path / "ok.json", "named") == {"a": [1, 2.5]}
