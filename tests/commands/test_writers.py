"""Writers (issue 44): only ``--promote`` writes the committed evidence; every output option of
every command refuses a path inside it, however spelt, before any work; output names stay inside
their folder; unknown selections and unwritable outputs are one ``error:`` line, exit 2."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from spt_theory import evidence
from spt_theory.util import files

EVIDENCE = evidence.root()


def _digests() -> dict[str, str]:
    """sha256 of every committed evidence file (and the set of files): nothing may change it."""
    return {str(p.relative_to(EVIDENCE)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(EVIDENCE.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def _error_line(err: str, *words: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for word in words:
        assert word in lines[0], (word, err)


@pytest.fixture
def spellings(tmp_path, monkeypatch):
    """The committed race file spelt relative (from the repository), absolute and through a link."""
    monkeypatch.chdir(EVIDENCE.parent.parent)
    link = tmp_path / "link"
    link.symlink_to(EVIDENCE)
    return {"relative": Path("spt_theory/evidence/race/pathfinder16.json"),
            "absolute": EVIDENCE / "race" / "pathfinder16.json",
            "link": link / "race" / "pathfinder16.json"}


def test_the_guard_sees_the_evidence_however_it_is_spelt(spellings, tmp_path):
    for path in spellings.values():
        assert files.inside_evidence(path) and files.inside_evidence(path.parent)
        with pytest.raises(files.InputError, match="only --promote writes there"):
            files.refuse_evidence(path, "--json")
    assert not files.inside_evidence(tmp_path / "x.json")
    assert not files.inside_evidence(EVIDENCE.parent / "evidence-copy")
    before = _digests()
    with pytest.raises(files.InputError, match="committed evidence"):  # the last resort: every atomic write
        files.write_json(spellings["link"], {"x": 1})
    with files.promoting():  # what --promote (evidence.promote) does, and nothing else
        files.refuse_evidence(spellings["absolute"])
    assert _digests() == before


@pytest.mark.parametrize("spelling", ["relative", "absolute", "link"])
def test_verify_json_into_the_evidence_is_refused_before_any_claim(spelling, spellings, capsys):
    from spt_theory.verify import main

    before = _digests()
    assert main(["--only", "L5", "--json", str(spellings[spelling]), "--no-progress"]) == 2
    captured = capsys.readouterr()
    _error_line(captured.err, "--json", "only --promote writes there")
    assert "L5" not in captured.out and _digests() == before


def test_plateau_summary_into_the_evidence_is_refused_before_training(tmp_path, capsys, monkeypatch):
    from spt_theory.plateau import cli

    monkeypatch.chdir(EVIDENCE.parent.parent)
    trained = []
    monkeypatch.setattr(cli, "run_scratch", lambda *a: trained.append(a) or {})
    before = _digests()
    argv = ["--only", "adamw", "--lengths", "25", "--threads", "1", "--cache-dir", str(tmp_path / "pl"),
            "--summary", "spt_theory/evidence/plateau/plateau_runs.json"]
    assert cli.main(argv) == 2
    _error_line(capsys.readouterr().err, "--summary", "only --promote writes there")
    assert not trained and not (tmp_path / "pl").exists() and _digests() == before
    assert cli.main(["--cache-dir", str(EVIDENCE / "plateau"), "--lengths", "25"]) == 2
    _error_line(capsys.readouterr().err, str(EVIDENCE / "plateau"), "only --promote writes there")
    assert _digests() == before


def test_promote_with_a_partial_selection_is_refused_before_training(tmp_path, capsys, monkeypatch):
    from spt_theory.plateau import cli

    trained = []
    monkeypatch.setattr(cli, "run_scratch", lambda *a: trained.append(a) or {})
    monkeypatch.setattr(cli, "run_spt", lambda *a: trained.append(a) or {})
    for argv in (["--lengths", "25", "--promote"], ["--only", "adamw", "--promote"], ["--seeds", "0", "--promote"]):
        assert cli.main([*argv, "--cache-dir", str(tmp_path / "c")]) == 2, argv
        _error_line(capsys.readouterr().err, "--promote", "nothing was trained")
    assert not trained


COMMANDS = {
    "train": ("spt_theory.train", ["--cache-dir", "{E}"]),
    "train --json": ("spt_theory.train", ["--json", "{E}/x.json", "--cache-dir", "{T}"]),
    "figures": ("spt_theory.figures.cli", ["--out", "{E}", "--only", "lra_evidence"]),
    "figures --cache-dir": ("spt_theory.figures.cli", ["--cache-dir", "{E}", "--out", "{T}", "--only", "lra_evidence"]),
    "paper_runs": ("spt_theory.walk.paper_runs", ["--cache-dir", "{E}", "--only", "E10"]),
    "bench": ("spt_theory.bench.run", ["--tiny", "--json", "{E}/bench/rep1.json"]),
    "lra scratch": ("spt_theory.lra.__main__", ["scratch", "--task", "listops", "--data-dir", "{T}", "--out", "{E}"]),
    "lra sweep": ("spt_theory.lra.__main__", ["sweep", "--task", "listops", "--data-dir", "{T}", "--out", "{E}/lra"]),
    "lra race": ("spt_theory.lra.__main__", ["race", "--data-dir", "{T}", "--out", "{E}"]),
    "lra probe": ("spt_theory.lra.__main__", ["probe", "{T}", "--out", "{E}/lra/results"]),
}


@pytest.mark.parametrize("name", COMMANDS)
def test_every_writer_refuses_the_evidence_in_one_line(name, tmp_path, capsys):
    import importlib

    module, argv = COMMANDS[name]
    main = importlib.import_module(module).main
    before = _digests()
    argv = [word.replace("{E}", str(EVIDENCE)).replace("{T}", str(tmp_path)) for word in argv]
    assert main(argv) == 2
    _error_line(capsys.readouterr().err, "only --promote writes there")
    assert _digests() == before


def test_a_sweep_name_never_leads_out_of_its_folder(tmp_path, capsys):
    from spt_theory.lra.__main__ import main

    for name in ("../../../../ESCAPED", "a/b", "..", ""):
        argv = ["sweep", "--task", "listops", "--data-dir", str(tmp_path), "--out", str(tmp_path / "SW"),
                "--name", name, "--grid", "recipe=scratch"]
        assert main(argv) == 2, name
        _error_line(capsys.readouterr().err, "--name")
    assert not (tmp_path / "SW").exists() and not any(Path("/").glob("ESCAPED*"))


def test_paper_runs_refuses_unknown_ids_and_matches_case_insensitively(tmp_path, capsys, monkeypatch):
    from spt_theory.walk import paper_runs

    trained = []
    monkeypatch.setattr(paper_runs, "train", lambda spec, *a: trained.append(spec) or type(
        "R", (), {"final": {"test_accuracy": 1.0}})())
    assert paper_runs.main(["--only", "ZZ", "--cache-dir", str(tmp_path)]) == 2
    _error_line(capsys.readouterr().err, "--only ZZ", "E11b")
    assert not trained
    assert paper_runs.main(["--only", "e11b", "--seeds", "0", "--cache-dir", str(tmp_path), "--no-progress"]) == 0
    assert len(trained) == 1 and "E11b" in capsys.readouterr().out
    assert paper_runs.selected_groups(["e14", "X5B"]) == {"E13", "X5b"}


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through a read-only mode")
def test_paper_runs_and_bench_with_a_read_only_output_say_one_line(tmp_path, capsys):
    from spt_theory.bench.run import main as bench_main
    from spt_theory.walk import paper_runs

    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        assert paper_runs.main(["--only", "E10", "--cache-dir", str(folder / "c")]) == 2
        _error_line(capsys.readouterr().err, str(folder))
        assert bench_main(["--tiny", "--json", str(folder / "b.json")]) == 2
        _error_line(capsys.readouterr().err, str(folder))
    finally:
        folder.chmod(stat.S_IRWXU)


def test_train_refuses_an_impossible_length_before_allocating(tmp_path, capsys):
    from spt_theory.train import main
    from synthetic.walk import MAX_LENGTH

    assert main(["--length", "100000", "--cache-dir", str(tmp_path / "c")]) == 2
    _error_line(capsys.readouterr().err, "length", str(MAX_LENGTH), "100000")
    assert not (tmp_path / "c").exists()


def test_figures_refuse_to_draw_evidence_of_another_width(tmp_path, capsys):
    from spt_theory.figures.cli import main

    assert main(["--set", "d_model=32", "--only", "lra_evidence", "--out", str(tmp_path), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "evidence made at d_model=64; asked for d_model=32" in err
    assert not list((tmp_path / "lra").glob("*.png"))
