"""``python -m spt_theory.verify``: the theory claims pass, the JSON report's schema, bad ``--only``."""

from __future__ import annotations

import json

import pytest

from spt_theory.verify import main


def test_only_theory_claims_pass_and_json_report_has_the_schema(tmp_path, capsys):
    report = tmp_path / "out" / "t.json"
    assert main(["--only", "T", "--json", str(report), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    data = json.loads(report.read_text())
    assert set(data) >= {"claims", "seconds"} and data["seconds"] > 0
    assert [c["id"] for c in data["claims"]] == ["T1", "T2", "T3", "T4", "T5", "T6"]
    for row in data["claims"]:
        assert {"id", "status", "measured", "threshold", "statement"} <= set(row)
        assert row["status"] == "PASS", row
        assert isinstance(row["measured"], float) and row["threshold"].startswith("<=")
        assert len(row["statement"]) <= 58
        assert all(row["details"]["conditions"].values())
        assert f"{row['id']:<4} PASS" in printed


def test_unknown_claim_exits_2_with_one_line_on_stderr(capsys):
    assert main(["--only", "NOPE"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "NOPE" in err


def test_help_describes_the_command(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "usage:" in out and "--only" in out and "--json" in out
