"""The plateau command (``python -m spt_theory.plateau``): its input checks before any training,
threads checked by argparse, the run lock (a run finished while waiting is read, not trained again),
one line and 130 / 143 on signals, and ``--promote`` (a default run never writes the committed
evidence; a partial grid is never promoted)."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys

import pytest
from helpers import ENV, REPO

from spt_theory.plateau import cli, design, runs
from spt_theory.training.cache import StageCache
from spt_theory.util.files import write_json


@pytest.fixture
def no_training(monkeypatch):
    """plateau's runs fail the test if reached."""
    def reached(run, root, log=None):
        raise AssertionError(f"trained {run} before the arguments were checked")

    monkeypatch.setattr(cli, "run_scratch", reached)
    monkeypatch.setattr(cli, "run_spt", reached)


@pytest.mark.parametrize("case", ["cache_dir_is_a_file", "cache_dir_under_a_file", "summary_under_a_file",
                                  "length_0", "length_1", "no_run"])
def test_plateau_refuses_bad_arguments_before_any_training(case, tmp_path, capsys, no_training, error_line):
    afile = tmp_path / "afile"
    afile.write_text("x")
    args = {"--cache-dir": str(tmp_path / "cache"), "--summary": str(tmp_path / "summary.json"),
            "--lengths": "25", "--only": "adamw"}
    word = {"cache_dir_is_a_file": "afile", "cache_dir_under_a_file": "afile", "summary_under_a_file": "afile",
            "length_0": "--lengths 0", "length_1": "--lengths 1", "no_run": "no run"}[case]
    if case == "cache_dir_is_a_file":
        args["--cache-dir"] = str(afile)
    elif case == "cache_dir_under_a_file":
        args["--cache-dir"] = str(afile / "cache")
    elif case == "summary_under_a_file":
        args["--summary"] = str(afile / "summary.json")
    elif case.startswith("length_"):
        args["--lengths"] = case.split("_")[1]
    else:  # no_run
        args.update({"--lengths": "200", "--only": "sgd"})
    assert cli.main([w for k, v in args.items() for w in (k, v)]) == 2
    error_line(capsys.readouterr().err, word)
    assert not (tmp_path / "summary.json").exists()


def test_plateau_threads_are_checked_by_argparse(tmp_path, no_training, argparse_refusal):
    argparse_refusal(cli.main, ["--threads", "0", "--cache-dir", str(tmp_path / "cache")], "--threads", ">= 1")
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("kind", ["scratch", "spt"])
def test_plateau_run_finished_while_waiting_for_the_lock_is_read_not_trained_again(kind, tmp_path, monkeypatch):
    run = design.PlateauRun(kind, 8, 0, "adamw", 1.0, cap=6 if kind == "scratch" else 0)
    done = {"escape_step": 3, "spt_steps_to_95": 31, "seconds": 1.0}

    @contextlib.contextmanager
    def lock_after_the_other_process(self):
        write_json(self.dir / "run.json", done)  # the holder we waited for wrote its record
        yield

    def no_data(spec):
        raise AssertionError("trained a run another process had finished")

    monkeypatch.setattr(StageCache, "lock", lock_after_the_other_process)
    monkeypatch.setattr(runs, "built_data", no_data)
    runner = runs.run_scratch if kind == "scratch" else runs.run_spt
    assert runner(run, tmp_path) == done


PLATEAU_STUB = """
import sys, time
from spt_theory.plateau import cli
def run(r, root, log=None):
    print("training", flush=True)
    time.sleep(60)
cli.run_scratch = cli.run_spt = run
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.slow
@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_plateau_stops_on_a_signal_with_one_line(signum, status, tmp_path):
    process = subprocess.Popen([sys.executable, "-c", PLATEAU_STUB, "--cache-dir", str(tmp_path / "cache"),
                                "--summary", str(tmp_path / "s.json"), "--lengths", "25", "--only", "adamw"],
                               cwd=REPO, env=ENV, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert process.stdout.readline() == "training\n"
        process.send_signal(signum)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == status, err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("created folder")]
    assert len(lines) == 1 and lines[0].startswith(f"interrupted by {signal.Signals(signum).name}"), err



def _fake_run(record_value):
    def run(r, root, log=None):
        cache = r.cache(root)
        cache.dir.mkdir(parents=True, exist_ok=True)
        key = "spt_steps_to_95" if r.kind == "spt" else "escape_step"
        (cache.dir / "run.json").write_text(json.dumps({key: record_value, "seconds": 0.1}))
        return {key: record_value, "seconds": 0.1}
    return run


def test_a_default_plateau_run_never_writes_the_committed_evidence_and_promote_refuses_a_partial_grid(
        tmp_path, monkeypatch, capsys, error_line):
    before = design.SUMMARY.read_bytes()
    monkeypatch.setattr(cli, "run_scratch", _fake_run(500))
    monkeypatch.setattr(cli, "run_spt", _fake_run(100))
    cache = tmp_path / "cache"
    assert cli.main(["--cache-dir", str(cache), "--lengths", "25", "--only", "sgd"]) == 0
    written = json.loads((cache / "plateau_runs.json").read_text())
    assert written["partial"] is True and len(written["runs"]) == 6  # SGD at n 25: two caps x 3 seeds
    assert design.SUMMARY.read_bytes() == before
    assert cli.main(["--cache-dir", str(cache), "--lengths", "25", "--only", "sgd", "--promote"]) == 2
    error_line(capsys.readouterr().err, "partial grid", "nothing was promoted")
    assert design.SUMMARY.read_bytes() == before


def test_plateau_set_trains_other_runs_under_their_own_keys_and_is_refused_with_promote(tmp_path, monkeypatch,
                                                                                         capsys, error_line):
    monkeypatch.setattr(cli, "run_scratch", _fake_run(500))
    cache, summary = tmp_path / "cache", tmp_path / "s.json"
    base = ["--cache-dir", str(cache), "--summary", str(summary), "--lengths", "25", "--only", "adamw", "--seeds", "0"]
    assert cli.main(base + ["--set", "d_model=32"]) == 0
    written = json.loads(summary.read_text())
    assert written["model_settings"] == {"d_model": 32} and written["runs"]
    default = {r.cache(cache).key for r in design.grid((25,), (0,))}
    assert {row["key"] for row in written["runs"]}.isdisjoint(default)
    assert all("model" not in row for row in written["runs"])
    run = design.PlateauRun("scratch", 25, 0, model=(("d_model", 32),))
    assert runs.initial_model(run).embed.weight.shape[-1] == 32
    assert design.PlateauRun("scratch", 25, 0).cache(cache).key == design.PlateauRun("scratch", 25, 0, model=()).cache(
        cache).key
    for option in ("--promote", "--gradient-rms"):
        assert cli.main(base + ["--set", "d_model=32", option]) == 2
        error_line(capsys.readouterr().err, f"{option} with --set")
