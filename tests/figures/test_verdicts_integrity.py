"""The verdicts figure draws verdicts only through verify's checked path (issue 57, item 2): on
5a6f87a it called each claim's check directly, so an edited l3p.json, an ERROR in verify, was drawn
as a verdict (exit 0).  Now a claim verify gives ERROR is drawn as an ERROR, and the command fails."""

import functools
import json
import shutil
from pathlib import Path

from spt_theory import evidence
from spt_theory.claims import records
from spt_theory.claims.registry import Context
from spt_theory.figures import context
from spt_theory.figures.cli import main as figures_main
from spt_theory.figures.verdicts import interval_claims


def _edited_evidence(tmp_path: Path) -> Path:
    """A copy of the committed evidence whose l3p.json holds the same fields written another way:
    verify gives L3p ERROR (its bytes are not the recorded ones)."""
    root = tmp_path / "evidence"
    shutil.copytree(evidence.root(), root)
    path = root / "lra" / "decide" / "l3p.json"
    path.write_text(json.dumps(json.loads(path.read_text()), indent=1))
    return root


def test_evidence_verify_calls_error_is_drawn_as_an_error_not_a_verdict(tmp_path):
    root = _edited_evidence(tmp_path)
    rows = {r["id"]: r for r in interval_claims(Context(evidence_root=root, lra_evidence=root / "lra"))}
    assert rows["L3p"]["verdict"] == "ERROR" and "interval" not in rows["L3p"], rows["L3p"]
    assert "l3p.json" in rows["L3p"]["error"] and "66706a9" in rows["L3p"]["error"]
    assert rows["L1b"]["verdict"] == "FAIL"  # the others as verify judges them
    assert records.EVIDENCE_HASHES["lra/decide/l3p.json"][1] == "66706a9"


def test_figures_only_verdicts_with_edited_evidence_exits_1_naming_the_error(tmp_path, monkeypatch, capsys):
    root = _edited_evidence(tmp_path)
    monkeypatch.setattr(context, "FigureContext", functools.partial(context.FigureContext, evidence_root=root))
    out = tmp_path / "out"
    assert figures_main(["--only", "verdicts", "--out", str(out), "--no-progress"]) == 1
    captured = capsys.readouterr()
    drawn = {r["id"]: r for r in json.loads((out / "verdicts.json").read_text())["claims"]}
    assert drawn["L3p"]["verdict"] == "ERROR" and "interval" not in drawn["L3p"]
    errors = [line for line in captured.err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "verdicts" in errors[0] and "L3p" in errors[0] and "l3p.json" in errors[0], captured
    assert "FAILED: verdicts" in captured.out and "Traceback" not in captured.err


def test_the_figure_draws_the_committed_evidence_as_before(tmp_path):
    """Nothing changed for evidence as recorded: every row a verdict, none an ERROR, exit 0."""
    out = tmp_path / "out"
    assert figures_main(["--only", "verdicts", "--out", str(out), "--no-progress"]) == 0
    drawn = json.loads((out / "verdicts.json").read_text())["claims"]
    assert drawn and all(r["verdict"] in ("PASS", "FAIL", "INCONCLUSIVE") and "interval" in r for r in drawn)
