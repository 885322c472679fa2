"""Every figure drawn from committed evidence holds each file to its recorded content first, as
verify does (``figures.context.held_to_record``): an edited or unrecorded file is one EvidenceError
naming it, and nothing is drawn.  A user's own sweeps (``--lra-evidence DIR``) are drawn and named
unregistered in the record."""

import json
import shutil
from pathlib import Path

import pytest

from spt_theory import evidence as package_evidence
from spt_theory.claims import records
from spt_theory.evidence import EvidenceError
from spt_theory.figures.context import FigureContext
from spt_theory.figures.escape_race import escape_race
from spt_theory.figures.lra_evidence import lra_evidence
from spt_theory.figures.plateau_law import plateau_law

PACKAGE = package_evidence.root()
CASES = {"escape_race": (escape_race, "race/pathfinder16.json", ["race"]),
         "plateau_law": (plateau_law, "plateau/gradient_rms.json", ["plateau"]),
         "lra_evidence": (lra_evidence, "lra/listops.json", ["lra/listops.json", "lra/pathfinder.json"])}
"""figure, the file edited, what of the package's evidence the case copies."""


def _copy(tmp_path: Path, parts: list[str]) -> Path:
    root = tmp_path / "evidence"
    for part in parts:
        source, target = PACKAGE / part, root / part
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copyfile)(source, target)
    return root


def _context(tmp_path: Path, root: Path) -> FigureContext:
    return FigureContext(out=tmp_path / "out", evidence_root=root, lra_evidence=root / "lra", progress=False)


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_edited_file_is_an_error_and_nothing_is_drawn(name, tmp_path):
    draw, edited, parts = CASES[name]
    root = _copy(tmp_path, parts)
    path = root / edited
    path.write_text(path.read_text() + "\n")  # same JSON, other bytes: not the recorded content
    with pytest.raises(EvidenceError, match=f"{Path(edited).name}: differs from the content recorded"):
        draw(_context(tmp_path, root))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_unrecorded_file_is_an_error_and_nothing_is_drawn(name, tmp_path, monkeypatch):
    draw, edited, parts = CASES[name]
    root = _copy(tmp_path, parts)
    monkeypatch.delitem(records.EVIDENCE_HASHES, edited)
    with pytest.raises(EvidenceError, match="recorded nowhere"):
        draw(_context(tmp_path, root))
    assert not (tmp_path / "out").exists()


def test_a_users_own_sweeps_are_drawn_and_named_unregistered(tmp_path):
    own = tmp_path / "mine"
    own.mkdir()
    found = json.loads((PACKAGE / "lra" / "listops.json").read_text())
    found["cells"][0]["test_accuracy"]["per_seed"][0] = 0.5
    (own / "listops.json").write_text(json.dumps(found))
    shutil.copyfile(PACKAGE / "lra" / "pathfinder.json", own / "pathfinder.json")  # the recorded content
    paths = lra_evidence(FigureContext(out=tmp_path / "out", lra_evidence=own, progress=False))
    record = json.loads(next(p for p in paths if p.name == "lra_evidence.json").read_text())
    assert record["unregistered"] == [str(own / "listops.json")]


def test_the_digest_held_is_that_of_the_bytes_drawn_not_an_earlier_read(tmp_path, monkeypatch):
    """A sweep file read earlier in the process (its digest left in schema.READ), then edited: the
    figure holds the bytes it parses, so the edit is an error, never drawn under the old digest."""
    import hashlib
    import os

    from spt_theory.evidence import schema

    root = _copy(tmp_path, CASES["lra_evidence"][2])
    path = root / "lra" / "listops.json"
    monkeypatch.setitem(schema.READ, Path(os.path.abspath(path)), hashlib.sha256(path.read_bytes()).hexdigest())
    path.write_text(path.read_text() + "\n")
    with pytest.raises(EvidenceError, match="listops.json: differs from the content recorded"):
        lra_evidence(_context(tmp_path, root))
    assert not (tmp_path / "out").exists()


def test_a_file_held_before_it_is_read_is_a_programming_error(tmp_path):
    from spt_theory.figures.context import held_to_record

    with pytest.raises(RuntimeError, match="before it was read"):
        held_to_record(_context(tmp_path, tmp_path), tmp_path / "never_read.json")
