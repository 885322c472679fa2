"""``python -m spt_theory.verify``: the theory claims pass, the JSON report's schema, bad ``--only``."""

from __future__ import annotations

import json

import pytest

from spt_theory.claims import all_claims
from spt_theory.verify import main, select


def test_only_theory_claims_pass_and_json_report_has_the_schema(tmp_path, capsys):
    report = tmp_path / "out" / "t.json"
    assert main(["--only", "T", "--json", str(report), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    data = json.loads(report.read_text())
    assert set(data) >= {"claims", "seconds"} and data["seconds"] > 0
    assert [c["id"] for c in data["claims"]] == ["T1", "T2", "T2b", "T3", "T4", "T4b", "T5", "T6", "T7"]
    for row in data["claims"]:
        assert {"id", "status", "measured", "threshold", "statement"} <= set(row)
        assert row["status"] == "PASS", row
        assert isinstance(row["measured"], float) and row["threshold"][:2] in ("<=", ">=")
        assert len(row["statement"]) <= 58
        assert all(row["details"]["conditions"].values())
        assert f"{row['id']:<4} PASS" in printed


def test_only_selects_a_claim_and_its_variants_not_the_claims_its_number_prefixes():
    ids = lambda only: [c.id for c in select(all_claims(), only)]  # noqa: E731
    assert ids(["E1"]) == ["E1", "E1b"]
    assert ids(["E11"]) == ["E11", "E11b"]
    assert ids(["T2", "X5b"]) == ["T2", "T2b", "X5b"]
    assert set(ids(["E"])) == {c.id for c in all_claims() if c.id.startswith("E")} and "E14" in ids(["E"])


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


@pytest.fixture
def registry_with_slow_and_failing_claims(monkeypatch):
    """A registry of three toy claims: a quick pass, a slow (quick=False) pass, a quick fail."""
    from spt_theory import claims

    toy: dict = {}
    monkeypatch.setattr(claims, "REGISTRY", toy)
    monkeypatch.setattr("spt_theory.verify.all_claims", lambda: sorted(toy.values(), key=lambda c: c.id))
    claims.claim("Z1", "quick pass", section="toy", method="toy")(lambda ctx: claims.at_most(0.0, 1.0))
    claims.claim("Z2", "slow pass", section="toy", method="toy", quick=False)(
        lambda ctx: claims.at_least(1.0, 0.5))
    claims.claim("Z3", "quick fail", section="toy", method="toy")(lambda ctx: claims.at_least(0.0, 0.5))
    return toy


def test_quick_mode_skips_slow_claims_and_a_failure_exits_1(registry_with_slow_and_failing_claims, tmp_path):
    report = tmp_path / "r.json"
    assert main(["--json", str(report), "--no-progress"]) == 1
    status = {c["id"]: c["status"] for c in json.loads(report.read_text())["claims"]}
    assert status == {"Z1": "PASS", "Z2": "SKIP", "Z3": "FAIL"}
    assert main(["--only", "Z1", "Z2", "--json", str(report), "--no-progress"]) == 0
    status = {c["id"]: c["status"] for c in json.loads(report.read_text())["claims"]}
    assert status == {"Z1": "PASS", "Z2": "PASS"}
