"""``python -m spt_theory.verify``: the theory claims pass, the JSON report's schema, bad ``--only``,
verdicts against their records and the exit code."""

from __future__ import annotations

import json

import pytest
from helpers import REPO

from spt_theory.claims.registry import all_claims
from spt_theory.verify import main, select


@pytest.mark.slow
def test_only_theory_claims_pass_and_json_report_has_the_schema(tmp_path, capsys):
    report = tmp_path / "out" / "t.json"
    assert main(["--only", "T", "--json", str(report), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    data = json.loads(report.read_text())
    assert set(data) >= {"claims", "seconds"} and data["seconds"] > 0
    theory = [c.id for c in all_claims() if c.id.startswith("T")]  # the registry's (docs/add-a-claim.md adds one)
    assert {"T1", "T2", "T2b", "T3", "T4", "T4b", "T5", "T6", "T7", "T9"} <= set(theory)
    assert [c["id"] for c in data["claims"]] == theory
    for row in data["claims"]:
        assert {"id", "verdict", "kind", "record", "matches_record", "registration", "measured", "threshold",
                "statement"} <= set(row)
        assert row["verdict"] == "PASS" and row["kind"] == "project" and row["matches_record"] is True, row
        assert isinstance(row["measured"], float) and row["threshold"][:2] in ("<=", ">=")
        assert len(row["statement"]) <= 58
        assert all(row["details"].get("conditions", {}).values())
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


@pytest.mark.parametrize("words, message", [
    (["--set", "width=32"], "--set width=32: unknown model field 'width'; fields: d_model, n_heads"),
    (["--set", "vocab_size=9"], "unknown model field 'vocab_size'"),
    (["--set", "d_model=wide"], "--set d_model=wide: must be an integer, got 'wide'"),
    (["--set", "d_model"], "--set d_model: expected FIELD=VALUE"),
    (["--set", "d_model=30"], "--set d_model=30: d_model (30) must be divisible by n_heads (4)"),
    (["--set", "pooling=sideways"], "--set pooling=sideways: pooling must be one of"),
])
def test_a_bad_model_setting_exits_2_with_one_line_in_verify_and_figures(words, message, tmp_path, capsys):
    from spt_theory.figures.cli import main as figures_main

    assert main(["--only", "T1", *words, "--no-progress"]) == 2
    assert figures_main(["--only", "escape_race", *words, "--out", str(tmp_path / "figures")]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 2 and all(line == f"error: {lines[0][7:]}" for line in lines) and message in lines[0], lines
    assert not (tmp_path / "figures").exists() and "T1" not in captured.out


def test_the_command_reference_lists_the_model_settings():
    from spt_theory.core.model import MODEL_SETTINGS

    reference = " ".join((REPO / "docs" / "cli.md").read_text().split())
    assert f"model settings: {', '.join(MODEL_SETTINGS)} (" in reference


def test_help_describes_the_command(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "usage:" in out and "--only" in out and "--json" in out


@pytest.fixture
def registry_with_slow_and_failing_claims(monkeypatch):
    """A registry of three toy claims: a quick pass, a slow (quick=False) pass, a quick fail."""
    from spt_theory.claims import registry as claims

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
    status = {c["id"]: c["verdict"] for c in json.loads(report.read_text())["claims"]}
    assert status == {"Z1": "PASS", "Z2": "SKIP", "Z3": "FAIL"}
    assert main(["--only", "Z1", "Z2", "--json", str(report), "--no-progress"]) == 0
    status = {c["id"]: c["verdict"] for c in json.loads(report.read_text())["claims"]}
    assert status == {"Z1": "PASS", "Z2": "PASS"}


@pytest.fixture
def registry_with_paper_claims(monkeypatch):
    """Toy paper claims: Y1 passes and is recorded as holding, Y2 fails and is recorded as not
    holding, Y3 is undecided and recorded as inconclusive; Q1 is a passing project claim."""
    from spt_theory.claims import records
    from spt_theory.claims import registry as claims
    from spt_theory.claims.row import Record

    toy: dict = {}
    monkeypatch.setattr(claims, "REGISTRY", toy)
    monkeypatch.setattr("spt_theory.verify.all_claims", lambda: sorted(toy.values(), key=lambda c: c.id))
    monkeypatch.setattr(records, "RECORDS", {
        "Y1": Record("holds", "2026-12-01", "toy"),
        "Y2": Record("does not hold", "2026-12-01", "toy"),
        "Y3": Record("inconclusive", "2026-12-01", "toy")})
    claims.claim("Y1", "paper pass", section="toy", method="toy")(lambda ctx: claims.at_most(0.0, 1.0))
    claims.claim("Y2", "paper fail", section="toy", method="toy")(lambda ctx: claims.at_least(0.0, 0.5))
    claims.claim("Y3", "paper undecided", section="toy", method="toy")(
        lambda ctx: claims.undecided(0.5, ">= 0.6", "every arm at the majority class"))
    claims.claim("Q1", "project pass", section="toy", method="toy")(lambda ctx: claims.at_most(0.0, 1.0))
    return records


def test_verdicts_that_reproduce_their_records_exit_0_and_strict_exits_1(registry_with_paper_claims, tmp_path, capsys):
    report = tmp_path / "r.json"
    assert main(["--json", str(report), "--no-progress"]) == 0
    rows = {c["id"]: c for c in json.loads(report.read_text())["claims"]}
    assert {k: r["verdict"] for k, r in rows.items()} == {"Y1": "PASS", "Y2": "FAIL", "Y3": "INCONCLUSIVE",
                                                          "Q1": "PASS"}
    assert all(r["matches_record"] for r in rows.values())
    assert rows["Y3"]["inconclusive"] == "every arm at the majority class"
    assert {k: r["kind"] for k, r in rows.items()} == {"Y1": "paper", "Y2": "paper", "Y3": "paper", "Q1": "project"}
    assert "CHANGED" not in capsys.readouterr().out
    assert main(["--strict", "--no-progress"]) == 1
    assert main(["--strict", "--only", "y1", "q1", "--no-progress"]) == 0  # ids are case-insensitive


def test_flipping_one_recorded_verdict_exits_1_with_a_changed_line(registry_with_paper_claims, capsys):
    from spt_theory.claims.row import Record

    records = registry_with_paper_claims
    records.RECORDS["Y2"] = Record("holds", "2026-12-01", "flipped")
    assert main(["--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "CHANGED: recorded holds, now does not hold (FAIL)" in out


def test_a_failing_project_claim_exits_1_even_without_strict(registry_with_slow_and_failing_claims, capsys):
    assert main(["--only", "Z3", "--no-progress"]) == 1


def test_the_real_e5_record_is_does_not_hold():
    from spt_theory.claims.records import RECORDS, kind

    assert RECORDS["E5"].verdict == "does not hold" and kind("E5") == "paper" and kind("T1") == "project"
    assert kind("X1") == "hypothesis"


def test_duplicate_seeds_and_an_unwritable_json_are_refused_before_any_claim_runs(monkeypatch, tmp_path, capsys):
    ran = []
    monkeypatch.setattr("spt_theory.verify.run_claim", lambda *a: ran.append(a))
    with pytest.raises(SystemExit) as refused:  # argparse's type= check: usage, one error line, exit 2
        main(["--only", "E2", "--seeds", "0", "0"])
    assert refused.value.code == 2 and "error: argument --seeds: each seed once" in capsys.readouterr().err
    assert main(["--only", "T1", "--json", "/proc/verify-report.json"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "/proc/verify-report.json" in err
    assert ran == []


@pytest.mark.slow
def test_a_created_report_folder_is_said(tmp_path, capsys):
    report = tmp_path / "new" / "r.json"
    assert main(["--only", "T1", "--json", str(report), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert f"created folder {tmp_path / 'new'}" in err and f"wrote {report}" in err


def test_help_lists_exactly_the_claims_quick_mode_skips(capsys):
    from spt_theory.verify import quick_skipped

    with pytest.raises(SystemExit):
        main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert f"quick mode skips: {', '.join(quick_skipped())}" in out
    assert set(quick_skipped()) >= {"E11", "E11b", "X1"}


def test_every_claim_has_a_registration_and_every_record_a_claim():
    from spt_theory.claims.records import RECORDS, REGISTRATIONS
    from spt_theory.claims.row import RECORD_OF_VERDICT

    ids = {c.id for c in all_claims()}
    assert set(REGISTRATIONS) == ids
    assert set(RECORDS) <= ids and all(r.verdict in RECORD_OF_VERDICT.values() for r in RECORDS.values())
    moved = {cid for cid, reg in REGISTRATIONS.items() if reg.original}
    assert {"E6", "E7", "E8"} <= moved and all(REGISTRATIONS[c].when == "post" for c in moved)


def test_a_row_shows_its_registration_and_the_json_names_the_original_threshold(tmp_path, capsys):
    report = tmp_path / "r.json"
    assert main(["--only", "T1", "L1", "--json", str(report), "--no-progress"]) == 0
    rows = {c["id"]: c for c in json.loads(report.read_text())["claims"]}
    assert rows["T1"]["registration"]["when"] == "pre" and rows["L1"]["registration"]["when"] == "post"
    assert "without the gates" in rows["L1"]["registration"]["original"]
    assert (rows["L1"]["kind"] == "paper"
            and rows["L1"]["record"]["verdict"] in ("holds", "does not hold", "inconclusive"))
    out = capsys.readouterr().out
    assert any(line.startswith("L1 ") and " post* " in line for line in out.splitlines())
    assert any(line.startswith("T1 ") and " pre " in line for line in out.splitlines())


def test_record_words_are_checked():
    from spt_theory.claims.row import Record, Registration

    with pytest.raises(ValueError):
        Record("passes", "2026-12-01", "x")
    with pytest.raises(ValueError):
        Registration("before", "a", "b")


def test_the_readme_lists_exactly_the_claims_quick_mode_skips():
    from spt_theory.verify import quick_skipped

    # the command reference
    readme = " ".join((REPO / "docs" / "cli.md").read_text().split())
    assert f"quick mode skips: {', '.join(quick_skipped())} (" in readme


def test_verify_prints_the_exit_status_it_returns_when_the_json_cannot_be_written(tmp_path, capsys, monkeypatch,
                                                                                  error_line):
    from spt_theory import verify

    target = tmp_path / "verify.json"
    real_run_claim = verify.run_claim

    def run_then_block_the_json(claim, ctx):  # checked writable before the run, not after it
        row = real_run_claim(claim, ctx)
        target.mkdir()
        return row

    monkeypatch.setattr(verify, "run_claim", run_then_block_the_json)
    code = verify.main(["--only", "T1", "--json", str(target), "--no-progress"])
    out, err = capsys.readouterr()
    summary = [line for line in out.splitlines() if " claims in " in line]
    assert code == 2 and summary and summary[-1].endswith(f"; exit {code}"), out
    error_line(err, str(target), "cannot write")


# ------------------------------------------------------------------------ issue 57, item 10 (verify's part)
@pytest.fixture
def no_claim_runs(monkeypatch):
    """verify's run_claim replaced: a test of a refusal fails at once, never trains, if a claim runs."""
    def refuse(claim, ctx):
        raise AssertionError(f"{claim.id} ran: the arguments should have been refused before any work")

    monkeypatch.setattr("spt_theory.verify.run_claim", refuse)


@pytest.mark.parametrize("option", ["--evidence", "--lra-evidence"])
def test_a_missing_evidence_folder_is_one_line_and_exit_2_before_any_work(option, tmp_path, capsys, no_claim_runs,
                                                                          error_line):
    """Before: an ERROR row for every claim that reads it (27 of them), exit 1."""
    missing = tmp_path / "no-such-folder"
    assert main(["--only", "L", option, str(missing), "--no-progress"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "", captured.out
    error_line(captured.err, option, str(missing), "no such folder")
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    assert main(["--only", "L", option, str(a_file), "--no-progress"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    error_line(captured.err, option, "not a folder")


@pytest.mark.parametrize("only", ["", " "])
def test_an_empty_only_is_one_line_and_exit_2(only, capsys, no_claim_runs, error_line):
    """Before: --only "" selected all 71 claims and trained."""
    assert main(["--only", only, "--no-progress"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    error_line(captured.err, "--only", "empty")
    assert main(["--only", "T1", only, "--no-progress"]) == 2
    error_line(capsys.readouterr().err, "--only", "empty")


def test_only_given_twice_selects_both(capsys):
    """Before: argparse kept the last ``--only`` alone (``--only L6f --only L8f`` checked L8f only)."""
    assert main(["--only", "L6f", "--only", "L8f", "--no-progress"]) == 0
    rows = {line.split()[0] for line in capsys.readouterr().out.splitlines() if line[:1] == "L"}
    assert {"L6f", "L8f"} <= rows


def test_only_gates_selected_gives_a_sensible_summary_line(capsys):
    """Before: '0 claims in 0.0 s: ; gates L6 FAIL, L6s FAIL; ...'."""
    assert main(["--only", "L6", "--no-progress"]) == 0
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    assert ": ;" not in summary, summary
    gates = "s; gates L6 FAIL, L6f PASS, L6s FAIL; 3/3 as recorded; exit 0"
    assert summary.startswith("0 claims in ") and gates in summary, summary
