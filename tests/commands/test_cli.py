"""The command line a researcher expects (issue 29): progress in logs, one syntax for seeds, threads
and parameter groups, outputs checked before any work and announced, figures that train only when
asked and redraw to the same bytes, sweeps that refuse meaningless cells and other grids'
summaries, probes that name their cells, a ``train`` that says where its run went, and help texts
that agree with the lists of docs/cli.md."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from helpers import REPO

from spt_theory import train as train_cli
from spt_theory.figures import cli as figures_cli
from spt_theory.figures import context as figure_context
from spt_theory.lra.__main__ import main as lra_main
from spt_theory.lra.sweep_cells import AXES, RECIPES, cells
from spt_theory.training.recipes import Budget
from spt_theory.util.files import InputError
from spt_theory.walk import paper_runs
from spt_theory.walk.experiments import WalkData
from synthetic import listops

WALK = ["--vocab", "5", "--length", "12", "--p", "0.9", "--n-train", "64", "--n-test", "32", "--d-model", "16",
        "--heads", "2", "--batch-size", "32"]

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _error_line(err: str, *words: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


# ------------------------------------------------------------------------------------ progress

def test_progress_is_lines_in_a_log_a_bar_on_a_terminal_and_nothing_when_off():
    from spt_theory.util.progress import Progress

    log = io.StringIO()
    with Progress("spt (2 epochs)", 4, "steps", stream=log) as shown:
        shown.update(2)
        shown.note("epoch 1/2: loss 0.5")
        shown.update(2)
    lines = log.getvalue().splitlines()
    assert [re.sub(r" \(\d+ s\)$", "", line) for line in lines] == [
        "spt (2 epochs): 0/4 steps, starting", "spt (2 epochs): 2/4 steps, epoch 1/2: loss 0.5",
        "spt (2 epochs): 4/4 steps, done"]
    every = io.StringIO()
    with Progress("trees", 3, "trees", stream=every, interval=0) as shown:
        for _ in range(3):
            shown.update()
    assert len(every.getvalue().splitlines()) == 4  # start, then a line per update at interval 0
    terminal = Terminal()
    with Progress("trees", 3, "trees", stream=terminal) as shown:
        shown.update(3)
        shown.note("nearly")
    assert "\r" in terminal.getvalue() and "nearly" in terminal.getvalue()
    off = Terminal()
    with Progress("trees", 3, "trees", stream=off, enabled=False) as shown:
        shown.update(3)
        shown.note("x")
    assert off.getvalue() == ""


def test_train_in_a_log_one_line_per_epoch_no_spt_accuracy_and_where_the_run_went(tmp_path, capsys):
    argv = [*WALK, "--mode", "spt", "--epochs", "2", "--finetune-epochs", "1", "--cache-dir", str(tmp_path / "c")]
    assert train_cli.main(argv) == 0
    captured = capsys.readouterr()
    assert "\r" not in captured.err  # no bar in a log
    assert re.search(r"^spt \(2 epochs\): 4/4 steps, epoch 2/2: loss ", captured.err, re.M), captured.err
    assert re.search(r"^supervised \(1 epoch\): 2/2 steps, epoch 1/1: .*test_accuracy", captured.err, re.M)
    spt_rows = [line for line in captured.out.splitlines() if line.startswith("stage 0 spt") and "epoch" in line]
    assert len(spt_rows) == 2 and not any("accuracy" in row for row in spt_rows)  # the head is untrained
    folders = sorted(p for p in (tmp_path / "c").iterdir() if p.is_dir())
    assert re.search(rf"^spt run trained: {tmp_path / 'c'}/[0-9a-f]{{16}}$", captured.out, re.M), captured.out
    assert all(str(folder) in captured.out for folder in folders)
    assert train_cli.main([*argv, "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "spt run reloaded: " in captured.out
    assert captured.out.count(" reloaded") == 3 and " trained" not in captured.out


def test_generators_show_progress_as_lines_in_a_log_and_announce_every_file(tmp_path, capsys):
    out = tmp_path / "new" / "listops-1000"
    assert listops.main(["--out", str(out), "--train", "6", "--val", "2", "--test", "2",
                         "--min-len", "5", "--max-len", "40"]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err and re.search(r"^listops trees: 10/10 trees, done", err, re.M), err
    assert f"created folder {tmp_path / 'new'}" in err
    for name in ("basic_train.tsv", "basic_val.tsv", "basic_test.tsv", "GENERATED.json"):
        assert err.count(f"{out / name}\n") == 1
    assert "no_progress" not in (out / "GENERATED.json").read_text()
    assert listops.main(["--out", str(out), "--train", "6", "--val", "2", "--test", "2", "--min-len", "5",
                         "--max-len", "40", "--no-progress"]) == 0
    assert "trees:" not in capsys.readouterr().err


# ------------------------------------------------------------------------------ one syntax

@pytest.mark.parametrize("argv, words", [
    (["--mode", "frozen"], ["--mode frozen needs --freeze"]),
    (["--mode", "frozen", "--freeze", "qk", "vo"], ["--freeze qk vo", "--freeze qk+vo"]),
    (["--mode", "frozen", "--freeze", "qk,vo"], ["--freeze qk+vo"]),
    (["--mode", "hybrid"], ["--mode hybrid needs --keep"]),
    (["--mode", "scratch", "--keep", "qk"], ["--keep does nothing in --mode scratch"]),
    (["--mode", "scratch", "--finetune-epochs", "2"], ["--finetune-epochs does nothing in --mode scratch"]),
    (["--json", "/proc/no/summary.json"], ["/proc/no", "cannot write"]),
])
def test_train_refuses_before_any_training(argv, words, tmp_path, capsys):
    assert train_cli.main([*WALK, "--epochs", "1", *argv, "--cache-dir", str(tmp_path / "c"), "--no-progress"]) == 2
    captured = capsys.readouterr()
    _error_line(captured.err, *words)
    assert captured.out == "" and not (tmp_path / "c").exists()


def test_train_groups_are_joined_by_plus_and_a_new_json_folder_is_said(tmp_path, capsys):
    args = train_cli.parse_args(["--mode", "frozen", "--freeze", "qk+vo"])
    assert train_cli.build_spec(args).stages[0].freeze == ("qk", "vo")
    summary = tmp_path / "new" / "s.json"
    assert train_cli.main([*WALK, "--mode", "scratch", "--epochs", "1", "--cache-dir", str(tmp_path / "c"),
                           "--json", str(summary), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert err.splitlines() == [f"created folder {tmp_path / 'new'}", f"wrote {summary}"]


def test_train_help_gives_every_option_its_meaning_and_default():
    parser = train_cli.parser()
    for action in parser._actions:
        if action.option_strings and action.dest not in ("help",):
            assert action.help and "default" in action.help, action.option_strings
    text = "".join(parser.format_help().split())  # argparse wraps lines, at hyphens too
    for mode, meaning in train_cli.MODES.items():
        assert "".join(f"{mode}: {meaning}".split()) in text


@pytest.mark.parametrize("main, argv, words", [
    (figures_cli.main, ["--only", "lra_evidence", "--seeds", "0", "0"], ["--seeds", "each seed once"]),
    (figures_cli.main, ["--only", "lra_evidence", "--seeds", "0,1"], ["--seeds 0 1"]),
    (figures_cli.main, ["--only", "lra_evidence", "--threads", "0"], ["--threads", "an integer >= 1, got '0'"]),
    (paper_runs.main, ["--seeds", "1", "1", "--only", "NONE"], ["--seeds", "each seed once"]),
    (lra_main, ["scratch", "--task", "listops", "--data-dir", ".", "--threads", "0"], ["--threads"]),
    (lra_main, ["scratch", "--task", "listops", "--data-dir", ".", "--seed", "0,1"], ["--seed", "--seeds 0 1"]),
    (lra_main, ["sweep", "--task", "listops", "--data-dir", ".", "--grid", "recipe=spt", "--seeds", "0,1"],
     ["--seeds 0 1"]),
    (train_cli.main, [*WALK, "--seed", "0,1"], ["--seeds 0 1"]),
])
def test_seeds_and_threads_are_checked_by_argparse_with_one_syntax_everywhere(main, argv, words, tmp_path,
                                                                              argparse_refusal):
    argparse_refusal(main, [*argv, "--out" if main in (lra_main, figures_cli.main) else "--cache-dir",
                            str(tmp_path / "out")], *words)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("main, argv, words", [
    (lra_main, ["scratch", "--task", "listops", "--data-dir", ".", "--freeze", "qk,vo"], ["--freeze qk+vo"]),
    (lra_main, ["confirm", "--task", "listops", "--data-dir", ".", "--keep", "qk", "vo"], ["--keep qk+vo"]),
    (lra_main, ["sweep", "--task", "listops", "--data-dir", ".", "--grid", "recipe=spt", "--freeze", "qk"],
     ["--freeze does nothing in 'sweep'", "--grid freeze="]),
])
def test_groups_have_one_syntax_everywhere(main, argv, words, tmp_path, capsys):
    assert main([*argv, "--out" if main is not paper_runs.main else "--cache-dir", str(tmp_path / "out")]) == 2
    _error_line(capsys.readouterr().err, *words)
    assert not (tmp_path / "out").exists()


def test_a_bad_config_is_a_config_error_an_input_error_and_a_value_error():
    from dataclasses import replace

    from spt_theory.core.model import ModelConfig
    from spt_theory.lra.tasks import config_for
    from spt_theory.training.loop import Stage
    from spt_theory.util.files import ConfigError

    for make in (lambda: ModelConfig(d_model=-1), lambda: replace(config_for("listops"), d_model=-1),
                 lambda: Stage("spt", -1), lambda: config_for("nope")):
        with pytest.raises(ConfigError) as info:
            make()
        assert isinstance(info.value, InputError) and isinstance(info.value, ValueError)


def test_the_group_reader_takes_none_all_and_plus():
    from spt_theory.core import args as cli_args

    assert cli_args.parse_groups(["qk+vo"], "--freeze") == ("qk", "vo")
    assert cli_args.parse_groups("none", "freeze", none="none") == ()
    assert cli_args.parse_groups("all", "keep", all_groups=("qk", "vo")) == ("qk", "vo")
    with pytest.raises(InputError, match=r"keep=none: unknown group 'none'.* or all"):
        cli_args.parse_groups("none", "keep", all_groups=("qk",))
    with pytest.raises(InputError, match="each group once"):
        cli_args.parse_groups("qk+qk", "--freeze")


# --------------------------------------------------------------------------------- LRA sweep

@pytest.mark.parametrize("grid, extra, words", [
    ([], ["recipe=scratch,keep=qk"], "--cell recipe=scratch,keep=qk: keep means nothing for recipe=scratch"),
    (["recipe=scratch", "pretrain_task=pathfinder"], [], "pretrain_task means nothing for recipe=scratch"),
    ([], ["recipe=scratch,pretrain_epochs=3"], "pretrain_epochs means nothing"),
])
def test_sweep_refuses_cells_whose_axes_their_recipe_ignores(grid, extra, words):
    with pytest.raises(InputError, match=re.escape(words)):
        cells(grid, extra)
    assert len(cells(["recipe=scratch,spt", "keep=all,qk"], [])) == 3  # a product's scratch cells collapse


@pytest.fixture(scope="module")
def small_listops(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("lra")
    for name, rows in listops.generate_splits({"train": 24, "val": 6, "test": 8}, 5, 40).items():
        listops.write_split(root / "listops-1000" / f"basic_{name}.tsv", rows)
    return root


def test_sweep_says_its_cells_and_files_keeps_other_grids_and_probe_names_each_cell(small_listops, tmp_path,
                                                                                   capsys):
    out = tmp_path / "new"
    base = ["sweep", "--task", "listops", "--data-dir", str(small_listops), "--tiny", "--max-steps", "1",
            "--finetune-epochs", "1", "--out", str(out), "--seeds", "0", "--name", "t"]
    assert lra_main([*base, "--grid", "recipe=scratch", "--grid", "freeze=none,qk", "--no-progress"]) == 0
    err = capsys.readouterr().err
    summary = out / "sweeps" / "listops-t.json"
    assert f"created folder {out}" in err
    assert "sweep listops-t: 2 cells x 1 seeds: scratch | scratch freeze=qk" in err
    assert err.count(f"wrote {summary}\n") == 1 and f"wrote {summary.with_suffix('.pdf')}" in err
    before = summary.read_bytes()
    assert lra_main([*base, "--grid", "recipe=scratch", "--no-progress"]) == 2  # another grid, same --name
    _error_line(capsys.readouterr().err, str(summary), "holds another sweep", "--name")
    assert summary.read_bytes() == before
    assert lra_main(["probe", str(out / "results"), "--limit", "4", "--data-dir", str(small_listops)]) == 0
    captured = capsys.readouterr()
    headers = [line for line in captured.out.splitlines() if line.startswith("listops scratch")]
    assert len(headers) == 2 and len(set(headers)) == 2 and sum("freeze qk" in h for h in headers) == 1
    assert re.search(r"^probe listops scratch seed 0 \[.*\]: scratch: 1/1 batches", captured.err, re.M), captured.err


# ----------------------------------------------------------------------------------- figures

@pytest.fixture
def tiny_figures(monkeypatch):
    monkeypatch.setattr(figure_context, "DEFAULT_DATA", WalkData(vocab=5, length=12, p=0.9, n_train=64, n_test=32))
    monkeypatch.setattr(figure_context, "DEFAULT_BUDGET", Budget(
        scratch_epochs=1, pretrain_epochs=1, finetune_epochs=1, batch_size=32))
    monkeypatch.setattr(figure_context, "DEFAULT_MODEL", dict(d_model=16, n_heads=2, d_ff=32))


def test_figures_train_only_when_asked_and_say_what_they_would_train(tiny_figures, tmp_path, capsys):
    cache, out = tmp_path / "runs", tmp_path / "figs"
    argv = ["--only", "pe_toeplitz", "--seeds", "0", "--cache-dir", str(cache), "--out", str(out), "--no-progress"]
    assert figures_cli.main(argv) == 0
    printed = capsys.readouterr()
    assert "pe_toeplitz: not drawn, needs training: pretrain seed 0 (spt 1 ep) (about under 1 min)" in printed.out
    assert "--train trains at least 1 runs" in printed.out and f"created folder {out}" in printed.err
    assert not cache.exists() and list(out.iterdir()) == []
    assert figures_cli.main([*argv, "--train"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["pe_toeplitz.json", "pe_toeplitz.pdf", "pe_toeplitz.png"]


@pytest.mark.slow
def test_lra_evidence_reads_the_committed_sweeps_whatever_out_and_redraws_the_same_bytes(tmp_path, capsys):
    out = tmp_path / "figs"
    assert figures_cli.main(["--only", "lra_evidence", "--out", str(out)]) == 0
    drawn = sorted((out / "lra").iterdir())
    assert [p.name for p in drawn if p.suffix == ".pdf"] == sorted(
        [p.with_suffix(".pdf").name for p in (REPO / "spt_theory" / "evidence" / "lra").glob("*.json")] + ["steps.pdf"])
    first = {p.name: p.read_bytes() for p in drawn}
    assert not any(b"/CreationDate" in data for name, data in first.items() if name.endswith(".pdf"))
    assert not any(b"Software" in data[:4096] for name, data in first.items() if name.endswith(".png"))
    assert str(out / "lra" / "listops.pdf") in capsys.readouterr().out
    assert figures_cli.main(["--only", "lra_evidence", "--out", str(out)]) == 0
    assert {p.name: p.read_bytes() for p in sorted((out / "lra").iterdir())} == first


# ------------------------------------------------------------------ help texts and the README

def test_help_texts_and_the_readme_list_the_same_modes_recipes_and_axes():
    """Each list is written once in the code (train.MODES, sweep_cells.RECIPES, sweep_cells.AXES); the help
    texts are made from it, and the command reference (docs/cli.md, where the README sends
    readers for the commands) gives it as ``<marker> a, b, c (`` (as it gives verify's quick-mode
    skips: tests/commands/test_verify_cli.py)."""
    from spt_theory.lra.__main__ import sweep_doc

    readme = " ".join((REPO / "docs" / "cli.md").read_text().split())
    for marker, items in {"train modes:": train_cli.MODES, "sweep recipes:": RECIPES, "sweep axes:": AXES}.items():
        assert f"{marker} {', '.join(items)} (" in readme, marker
    text = "".join(sweep_doc().split())  # argparse wraps lines, at hyphens too
    for axis, meaning in AXES.items():
        assert "".join(f"{axis} {meaning}".split()) in text
    for recipe, meaning in RECIPES.items():
        assert "".join(f"{recipe} ({meaning})".split()) in text
