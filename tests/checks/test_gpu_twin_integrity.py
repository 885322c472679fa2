"""The GPU twin's promoted result is held to its recorded sha256 like any evidence (issue 57, item
1): ``lra/gpu/short.json`` replaced by a link to a file outside the evidence folder was judged (G6s
PASS) on 5a6f87a; now it is hashed by the content behind the link.  The other cases of the item are
in ``tests/claims/test_integrity.py``."""

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from test_gpu_twin_claims import STRONG, fake_result

from spt_theory import evidence
from spt_theory.claims import records
from spt_theory.claims.registry import REGISTRY
from spt_theory.lra.gpu import promote
from spt_theory.verify import main as verify_main


def _rows(capsys) -> tuple[dict[str, str], str]:
    out = capsys.readouterr().out
    rows: dict[str, str] = {}
    last = None
    for line in out.splitlines():
        if line.startswith("     ") and last:
            rows[last] += "\n" + line
        elif line[:4].strip() and line.split()[0] in REGISTRY:
            last = line.split()[0]
            rows[last] = line
    return rows, out


def _promoted(tmp_path: Path, name: str) -> Path:
    """A full-size GPU result of the short setting, promoted into a file outside any evidence folder."""
    found = promote.collect(fake_result(tmp_path / f"run-{name}", "short", STRONG))
    path = tmp_path / name
    path.write_text(json.dumps(found))
    return path


def test_a_linked_gpu_result_is_held_to_its_recorded_hash(tmp_path, capsys, monkeypatch):
    """lra/gpu/short.json as a link to a file outside the evidence: before, G6s and G1s-G4s judged it
    (G6s PASS); now it is recorded nowhere (ERROR), and once recorded, an edited copy behind the link
    is an ERROR while the recorded bytes behind it count."""
    root = tmp_path / "evidence"
    shutil.copytree(evidence.root(), root)
    honest = _promoted(tmp_path, "short.json")
    link = root / "lra" / "gpu" / "short.json"
    link.parent.mkdir()
    link.symlink_to(honest)
    argv = ["--only", "G6s", "G1s", "--evidence", str(root), "--no-progress"]
    assert verify_main(argv) == 1
    rows, out = _rows(capsys)
    assert [rows[c].split()[1] for c in ("G6s", "G1s")] == ["ERROR", "ERROR"], out
    assert "recorded nowhere" in rows["G6s"] and f"a link to {honest}" in rows["G6s"], out

    digest = hashlib.sha256(honest.read_bytes()).hexdigest()
    monkeypatch.setitem(records.EVIDENCE_HASHES, "lra/gpu/short.json", (digest, "test"))
    verify_main(argv)
    rows, out = _rows(capsys)
    assert rows["G6s"].split()[1] == "PASS", out  # the recorded bytes, through a link: judged

    edited = tmp_path / "edited.json"
    found = json.loads(honest.read_text())
    found["wall_seconds"] = 541.0
    edited.write_text(json.dumps(found))
    link.unlink()
    link.symlink_to(edited)
    assert verify_main(argv) == 1
    rows, out = _rows(capsys)
    assert [rows[c].split()[1] for c in ("G6s", "G1s")] == ["ERROR", "ERROR"], out
    assert "differs from the content recorded in test" in rows["G6s"], out


@pytest.mark.parametrize("kind", ["folder", "fifo", "dangling link"])
def test_something_other_than_a_file_at_the_result_is_an_error_not_not_run(tmp_path, capsys, kind):
    """Nothing at lra/gpu/short.json: "not run yet" (INCONCLUSIVE).  A folder, FIFO or dangling link
    there: an ERROR naming it (on 484256f it read as not run)."""
    root = tmp_path / "evidence"
    shutil.copytree(evidence.root(), root)
    path = root / "lra" / "gpu" / "short.json"
    path.parent.mkdir(exist_ok=True)
    argv = ["--only", "G6s", "--evidence", str(root), "--no-progress"]
    verify_main(argv)
    rows, out = _rows(capsys)
    assert rows["G6s"].split()[1] == "INCONCLUSIVE" and "not run yet" in rows["G6s"], out
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(tmp_path / "gone.json")
    assert verify_main(argv) == 1
    rows, out = _rows(capsys)
    assert rows["G6s"].split()[1] == "ERROR" and "short.json" in rows["G6s"], out
