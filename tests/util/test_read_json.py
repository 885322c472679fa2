"""util.files.read_json: every JSON input the toolkit reads is one line of error when it is not a
regular file of readable JSON, refused before anything is read (a FIFO would block forever)."""

import json
import os

import pytest

from spt_theory.util import files
from spt_theory.util.files import InputError, read_json


def test_a_regular_file_is_read(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"a": [1, 2.5]}))
    assert read_json(path) == {"a": [1, 2.5]}


def test_a_fifo_is_refused_without_blocking(tmp_path):
    path = tmp_path / "r.json"
    os.mkfifo(path)  # reading it would wait for a writer forever
    with pytest.raises(InputError, match="a FIFO stands there, not a regular file"):
        read_json(path)


@pytest.mark.parametrize("where, kind", [("/dev/zero", "a device"), ("folder", "a folder")])
def test_a_device_or_folder_is_refused(tmp_path, where, kind):
    path = tmp_path / "folder" if where == "folder" else tmp_path / "link.json"
    if where == "folder":
        path.mkdir()
    else:
        path.symlink_to(where)  # a link to an endless device
    with pytest.raises(InputError, match=kind):
        read_json(path)


def test_a_file_over_the_bound_is_refused_before_reading(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    path.write_text("[" + "0," * 100 + "0]")
    monkeypatch.setattr(files, "MAX_JSON_BYTES", 100)
    with pytest.raises(InputError, match=r"\d+ bytes, over the 100"):
        read_json(path)


@pytest.mark.parametrize("content, line", [(b"{\n  \"a\": }", "r.json:2:"), (b"\xff\xfe", "not UTF-8"),
                                           (b"[" * 100000, "not readable JSON")])
def test_bad_content_is_one_line_naming_the_file(tmp_path, content, line):
    path = tmp_path / "r.json"
    path.write_bytes(content)
    with pytest.raises(InputError, match=line):
        read_json(path)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(InputError, match="missing .*nothing.json"):
        read_json(tmp_path / "nothing.json")
