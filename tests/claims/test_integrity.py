"""Integrity on every path that yields a verdict (issue 57, items 1 and 4): a file a verdict reads is
held to its recorded sha256 by its content after links are followed, wherever it resolves; evidence
read from ``--lra-evidence DIR`` is the recorded evidence or its rows say "unregistered evidence"
and never count as recorded; the GPU twin's pre-registration document is held like the others.
Each test failed on 5a6f87a (the code before this change) and passes now."""

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from spt_theory import evidence
from spt_theory.claims import records, registry
from spt_theory.claims.registry import REGISTRY, Context
from spt_theory.evidence import EvidenceError, schema, sweep_schema
from spt_theory.verify import main as verify_main


def _copy_evidence(tmp_path: Path) -> Path:
    root = tmp_path / "evidence"
    shutil.copytree(evidence.root(), root)
    return root


def _reserialised(path: Path) -> str:
    """The same evidence written another way (indented): every field as it was, the bytes not."""
    return json.dumps(json.loads(path.read_text()), indent=1)


def _rows(capsys) -> tuple[dict[str, str], str]:
    """verify's printed rows: id -> the whole line with the lines under it; and all it printed."""
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


# ------------------------------------------------------------------------ item 1: links
def test_a_link_to_an_edited_copy_outside_the_evidence_is_an_error_naming_the_link(tmp_path, capsys):
    """evidence/lra/decide/l6.json replaced by a link to an edited copy elsewhere: before, the read
    resolved outside the evidence folder and was not held (L6 as recorded, exit 0)."""
    root = _copy_evidence(tmp_path)
    target = root / "lra" / "decide" / "l6.json"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    edited = elsewhere / "l6.json"
    edited.write_text(_reserialised(target))
    target.unlink()
    target.symlink_to(edited)
    code = verify_main(["--only", "L6", "--evidence", str(root), "--no-progress"])
    rows, out = _rows(capsys)
    assert code == 1, out
    assert rows["L6"].split()[1] == "ERROR" and f"{target} (a link to {edited})" in rows["L6"], out
    assert records.L6_RESULT in rows["L6"] and "= does not hold" not in rows["L6"], out


def test_a_link_to_the_recorded_bytes_is_hashed_by_its_content_and_counts(tmp_path, capsys):
    """The chosen rule: a link is hashed by the content it leads to (the bytes parsed), not refused:
    the recorded bytes behind a link are the recorded evidence."""
    root = _copy_evidence(tmp_path)
    target = root / "lra" / "decide" / "l6.json"
    copy = tmp_path / "l6-copy.json"
    shutil.copyfile(target, copy)
    target.unlink()
    target.symlink_to(copy)
    assert verify_main(["--only", "L6", "--evidence", str(root), "--no-progress"]) == 0
    rows, out = _rows(capsys)
    assert "= does not hold" in rows["L6"], out


def test_a_linked_folder_of_edited_evidence_is_an_error(tmp_path, capsys):
    """The folder lra/decide replaced by a link to a folder elsewhere holding an edited l6.json."""
    root = _copy_evidence(tmp_path)
    folder = root / "lra" / "decide"
    elsewhere = tmp_path / "decide-elsewhere"
    shutil.copytree(folder, elsewhere)
    (elsewhere / "l6.json").write_text(_reserialised(folder / "l6.json"))
    shutil.rmtree(folder)
    folder.symlink_to(elsewhere, target_is_directory=True)
    assert verify_main(["--only", "L6", "--evidence", str(root), "--no-progress"]) == 1
    rows, out = _rows(capsys)
    assert rows["L6"].split()[1] == "ERROR" and "l6.json" in rows["L6"], out


def test_read_evidence_is_hashed_as_parsed_not_reread():
    """check_read_evidence holds the digest of the bytes parsed (schema.READ), so a file swapped
    after it was read cannot stand in for what the verdict read."""
    path = evidence.path(evidence.LRA, "decide", "l6.json")
    schema.READ.clear()
    schema.load(path, sweep_schema.DecideEvidence)
    assert {Path(os.path.abspath(path)): hashlib.sha256(path.read_bytes()).hexdigest()} == schema.READ
    registry.check_read_evidence(dict(schema.READ), evidence.root())
    with pytest.raises(EvidenceError, match="differs from the content recorded in " + records.L6_RESULT):
        registry.check_read_evidence({Path(os.path.abspath(path)): "0" * 64}, evidence.root())


# ------------------------------------------------------------------------ item 1: --lra-evidence DIR
def test_evidence_from_lra_evidence_dir_is_recorded_only_where_its_bytes_are(tmp_path, capsys):
    """--lra-evidence DIR outside the evidence folder: an exact copy of the committed summaries is the
    recorded evidence (as recorded, exit 0); an edited one gives its verdict under "unregistered
    evidence", never "= holds" or "= does not hold", exit 1 (before: as recorded, exit 0)."""
    folder = tmp_path / "mine"
    shutil.copytree(evidence.path(evidence.LRA), folder)
    argv = ["--only", "L1", "--lra-evidence", str(folder), "--no-progress", "--json", str(tmp_path / "r.json")]
    assert verify_main(argv) == 0
    rows, out = _rows(capsys)
    assert "unregistered" not in out and rows["L1"].split()[2] == "=", out

    (folder / "listops.json").write_text(_reserialised(folder / "listops.json"))
    assert verify_main(argv) == 1
    rows, out = _rows(capsys)
    assert "unregistered evidence" in rows["L1"] and "=" not in rows["L1"].split()[2:4], out
    assert f"{folder / 'listops.json'}: not the recorded evidence" in rows["L1"], out
    assert "CHANGED:" not in rows["L1"], out
    summary = out.strip().splitlines()[-1]
    assert "unregistered evidence (never as recorded): L1" in summary and summary.endswith("exit 1"), summary
    report = {r["id"]: r for r in json.loads((tmp_path / "r.json").read_text())["claims"]}
    assert report["L1"]["matches_record"] is False and report["L1"]["unregistered"] == [str(folder / "listops.json")]
    assert report["L1b"]["matches_record"] is True and "unregistered" not in report["L1b"]


def test_a_file_read_from_outside_both_evidence_folders_is_unregistered(tmp_path):
    stray = tmp_path / "lra" / "listops.json"
    stray.parent.mkdir()
    shutil.copyfile(evidence.path(evidence.LRA, "listops.json"), stray)
    assert registry.check_read_evidence({stray}, tmp_path / "evidence") == (str(stray),)
    assert registry.check_read_evidence({stray}, tmp_path / "evidence", tmp_path / "lra") == ()  # recorded bytes
    stray.write_text(_reserialised(stray))
    assert registry.check_read_evidence({stray}, tmp_path / "evidence", tmp_path / "lra") == (str(stray),)


# ------------------------------------------------------------------------ item 4: the GPU registration
def _edited_checkout(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(registry.REPO / "docs", repo / "docs")
    doc = repo / "docs" / "preregistration" / "2026-12-04-gpu-twin.md"
    text = doc.read_text()
    assert "against 88.0%" in text
    doc.write_text(text.replace("against 88.0%", "against 58.0%"))
    return repo


def test_an_edited_gpu_pre_registration_is_an_error_for_every_g_claim(tmp_path, capsys, monkeypatch):
    """88% -> 58% in docs/preregistration/2026-12-04-gpu-twin.md: before, verify --only G was as
    recorded (exit 0); now every G row is an ERROR naming the document and the commit that added it."""
    monkeypatch.setattr(registry, "REPO", _edited_checkout(tmp_path), raising=False)  # absent on 5a6f87a
    assert verify_main(["--only", "G", "--no-progress"]) == 1
    rows, out = _rows(capsys)
    g = [c for c in REGISTRY if c.startswith("G")]
    assert sorted(rows) == sorted(g) and all(rows[c].split()[1] == "ERROR" for c in g), out
    assert all("2026-12-04-gpu-twin.md" in rows[c] and records.GPU_TWIN in rows[c] for c in g), out


def test_the_gpu_pre_registration_is_recorded_with_its_hash_and_commit():
    digest, commit = records.DOCUMENTS["docs/preregistration/2026-12-04-gpu-twin.md"]
    path = registry.REPO / "docs" / "preregistration" / "2026-12-04-gpu-twin.md"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest and commit == records.GPU_TWIN == "859c15b"
    assert {c[0] for c in REGISTRY if c[0] in "LPG"} <= set(registry.DOCUMENT_FAMILIES)
    registry.check_documents()


def test_a_missing_or_special_document_in_a_checkout_is_an_error(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(registry.REPO / "docs", repo / "docs")
    doc = repo / "docs" / "preregistration" / "2026-12-04-gpu-twin.md"
    doc.unlink()
    with pytest.raises(EvidenceError, match="missing from the checkout .*859c15b"):
        registry.check_documents(repo)
    os.mkfifo(doc)
    with pytest.raises(EvidenceError, match="not a regular file"):
        registry.check_documents(repo)
    registry.check_documents(tmp_path / "an-install")  # no documents at all: nothing to compare


def test_a_judged_claim_is_what_verify_runs(tmp_path):
    """verify and the verdicts figure share registry.judge: the registered files, the documents of
    its family and the recorded hashes, then the measurement."""
    judged = registry.judge(REGISTRY["L6"], Context())
    assert judged.measurement.verdict == "FAIL" and judged.unregistered == ()
