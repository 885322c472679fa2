"""Reliability round 4 (issue 50, items 9 and 10): inputs that gave a traceback, or left a folder
behind, or a warning the user could do nothing about, now give one line and exit 2."""

from __future__ import annotations

import json

import pytest
from helpers import _pathfinder

from spt_theory import train as train_cli
from spt_theory import verify as verify_cli
from spt_theory.figures.cli import main as figures_main
from spt_theory.lra import __main__ as lra_cli
from spt_theory.plateau.cli import main as plateau_main

HUGE = "99999999999999999999999"


def _exit(call) -> int:
    try:
        return call()
    except SystemExit as exit_:
        return exit_.code


def _one_line(capsys, *words: str) -> str:
    """The one ``error`` line of stderr (argparse's usage lines before it aside), naming ``words``."""
    text = capsys.readouterr().err
    assert "Traceback" not in text, text
    err = [line for line in text.splitlines() if "error" in line]
    assert len(err) == 1, text
    for word in words:
        assert word in err[0], err[0]
    return err[0]


def test_a_seed_of_23_digits_is_one_line(tmp_path, capsys):
    out = tmp_path / "out"
    assert _exit(lambda: lra_cli.main(["decide", "run", "--experiment", "l1b", "--tiny", "--seeds", HUGE,
                                        "--data-dir", str(tmp_path), "--out", str(out)])) == 2
    _one_line(capsys, "at most 4294967295")
    assert not out.exists()
    assert _exit(lambda: train_cli.main(["--seed", HUGE, "--cache-dir", str(out)])) == 2
    _one_line(capsys, "at most 4294967295")


@pytest.mark.parametrize("setting", ["d_ff=1000000000", "d_model=65536", "n_layers=100000"])
def test_a_model_too_large_to_allocate_is_one_line(setting, tmp_path, capsys):
    assert _exit(lambda: train_cli.main(["--set", setting, "--cache-dir", str(tmp_path / "c"), "--no-progress"])) == 2
    _one_line(capsys, "parameters", "more than this toolkit trains")
    assert _exit(lambda: plateau_main(["--set", setting, "--cache-dir", str(tmp_path / "p"), "--no-progress"])) == 2
    _one_line(capsys, "parameters")


def test_plateau_refuses_a_seed_twice(tmp_path, capsys):
    assert _exit(lambda: plateau_main(["--seeds", "0", "0", "--cache-dir", str(tmp_path)])) == 2
    _one_line(capsys, "each seed once")


def test_verify_json_is_strict_json(tmp_path):
    out = tmp_path / "report.json"
    verify_cli.main(["--only", "P4", "--json", str(out), "--no-progress"])

    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    report = json.loads(out.read_text(), parse_constant=refuse)
    assert any(value in ("inf", "-inf") for value in json.dumps(report).split('"'))


def test_a_figure_refused_for_its_settings_leaves_no_out_folder(tmp_path, capsys):
    out = tmp_path / "figs"
    assert figures_main(["--only", "lra_evidence", "--set", "d_model=32", "--out", str(out), "--no-progress"]) == 1
    assert not out.exists()


def test_an_infinite_learning_rate_is_refused_before_out_is_made(tmp_path, capsys):
    data = tmp_path / "data"
    _pathfinder(data)
    out = tmp_path / "out"
    assert lra_cli.main(["scratch", "--task", "pathfinder", "--data-dir", str(data), "--set", "lr_finetune=inf",
                         "--out", str(out), "--tiny", "--no-progress"]) == 2
    _one_line(capsys, "lr_finetune", "finite")
    assert not out.exists()


def test_a_registered_old_spelling_prints_no_deprecation_warning(tmp_path, capsys):
    lra_cli.main(["decide", "run", "--experiment", "l3b", "--data-dir", str(tmp_path), "--out", str(tmp_path / "o"),
                  "--no-progress"])
    assert "deprecated" not in capsys.readouterr().err
