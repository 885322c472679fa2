"""Writers never replace what is not theirs (issue 57, item 5): every atomic write, and the check
every command makes of its outputs before any work, refuses a target where a device node, FIFO,
socket or folder stands (or a link to one) in one InputError line naming the path; nothing is
written, the thing at the target is left as it was and no temporary file stays behind.
(``verify --json /dev/full`` replaced the device node with a JSON file; a FIFO likewise.)"""

import os
import socket
import stat
import tempfile
from pathlib import Path

import pytest

from spt_theory.util.files import InputError, atomic_write, check_output, write_json


def _fifo(folder: Path) -> Path:
    os.mkfifo(folder / "out.json")
    return folder / "out.json"


def _device_link(folder: Path) -> Path:
    (folder / "out.json").symlink_to("/dev/null")  # a link to a device: the link stays a link
    return folder / "out.json"


def _folder(folder: Path) -> Path:
    (folder / "out.json").mkdir()
    return folder / "out.json"


KINDS = {"fifo": (_fifo, "a FIFO"), "device link": (_device_link, "a device"), "folder": (_folder, "a folder")}


def _state(path: Path):
    info = os.lstat(path)
    return stat.S_IFMT(info.st_mode), os.readlink(path) if path.is_symlink() else None


@pytest.mark.parametrize("kind", KINDS)
def test_an_atomic_write_refuses_a_target_that_is_not_a_regular_file(tmp_path, kind):
    make, words = KINDS[kind]
    target = make(tmp_path)
    before, listing = _state(target), sorted(os.listdir(tmp_path))
    written = []
    for write in (lambda: write_json(target, {"a": 1}),
                  lambda: atomic_write(target, lambda tmp: written.append(tmp) or tmp.write_text("x"))):
        with pytest.raises(InputError) as error:
            write()
        message = str(error.value)
        assert message.startswith(f"{target}: cannot write ({words} stands there, not a regular file")
        assert "\n" not in message, message
    assert not written  # refused before writing anything
    assert _state(target) == before and sorted(os.listdir(tmp_path)) == listing


def test_an_atomic_write_refuses_a_socket(monkeypatch):
    with tempfile.TemporaryDirectory(prefix="s") as folder:  # a short path: a socket's name is at most 107 bytes
        target = Path(folder) / "out.json"
        server = socket.socket(socket.AF_UNIX)
        try:
            server.bind(str(target))
            with pytest.raises(InputError, match="a socket stands there, not a regular file"):
                write_json(target, {"a": 1})
            assert stat.S_ISSOCK(os.lstat(target).st_mode) and os.listdir(folder) == ["out.json"]
        finally:
            server.close()


def test_a_fifo_made_while_writing_is_not_replaced(tmp_path):
    target = tmp_path / "out.json"

    def write(tmp):
        tmp.write_text("x")
        os.mkfifo(target)  # another program makes it meanwhile

    with pytest.raises(InputError, match="a FIFO"):
        atomic_write(target, write)
    assert stat.S_ISFIFO(os.lstat(target).st_mode) and os.listdir(tmp_path) == ["out.json"]


@pytest.mark.parametrize("kind", ["fifo", "device link"])
def test_the_output_check_before_any_work_refuses_it(tmp_path, kind):
    """What ``verify --json``, ``plateau --summary`` and every ``prepare_output`` call run first: the
    refusal comes before the work (verify's claims), not after it."""
    make, words = KINDS[kind]
    target = make(tmp_path)
    before = _state(target)
    with pytest.raises(InputError, match=f"{words} stands there, not a regular file"):
        check_output(target)
    assert _state(target) == before and os.listdir(tmp_path) == ["out.json"]


def test_verify_json_at_a_fifo_is_refused_before_any_claim(tmp_path, capsys, error_line):
    from spt_theory.verify import main

    target = _fifo(tmp_path)
    assert main(["--only", "T1", "--json", str(target), "--no-progress"]) == 2
    captured = capsys.readouterr()
    error_line(captured.err, str(target), "a FIFO")
    assert "T1" not in captured.out and stat.S_ISFIFO(os.lstat(target).st_mode)


def test_a_regular_file_and_a_link_to_one_are_still_replaced(tmp_path):
    (tmp_path / "old.json").write_text("old")
    write_json(tmp_path / "old.json", {"a": 1})
    (tmp_path / "real.json").write_text("real")
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    write_json(tmp_path / "link.json", {"b": 2})  # as before: the link is replaced, its target kept
    assert (tmp_path / "old.json").read_text().startswith("{") and (tmp_path / "real.json").read_text() == "real"
    assert not (tmp_path / "link.json").is_symlink()
