"""Reliability, second round (issue 37): the plateau command's input checks, signals and run lock;
the GPU script's output checks; concurrent LRA sweeps and their identity; truncated cache JSONs;
probe paths from the command line only; verify's printed exit status."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from spt_theory import plateau

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _error_line(err: str, *words: str) -> None:
    """``err`` is one ``error:`` line holding every one of ``words`` (besides folders created)."""
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("created folder")]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for word in words:
        assert word in lines[0], (word, err)


# ------------------------------------------------------------------------------ plateau

@pytest.fixture
def no_training(monkeypatch):
    """plateau's runs fail the test if reached."""
    def reached(run, root, log=None):
        raise AssertionError(f"trained {run} before the arguments were checked")

    monkeypatch.setattr(plateau, "run_scratch", reached)
    monkeypatch.setattr(plateau, "run_spt", reached)


@pytest.mark.parametrize("case", ["cache_dir_is_a_file", "cache_dir_under_a_file", "summary_under_a_file",
                                  "length_0", "length_1", "no_run"])
def test_plateau_refuses_bad_arguments_before_any_training(case, tmp_path, capsys, no_training):
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
    assert plateau.main([w for k, v in args.items() for w in (k, v)]) == 2
    _error_line(capsys.readouterr().err, word)
    assert not (tmp_path / "summary.json").exists()


def test_plateau_threads_are_checked_by_argparse(tmp_path, no_training, argparse_refusal):
    argparse_refusal(plateau.main, ["--threads", "0", "--cache-dir", str(tmp_path / "cache")], "--threads", ">= 1")
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("kind", ["scratch", "spt"])
def test_plateau_run_finished_while_waiting_for_the_lock_is_read_not_trained_again(kind, tmp_path, monkeypatch):
    run = plateau.PlateauRun(kind, 8, 0, "adamw", 1.0, cap=6 if kind == "scratch" else 0)
    done = {"escape_step": 3, "spt_steps_to_95": 31, "seconds": 1.0}

    @contextlib.contextmanager
    def lock_after_the_other_process(self):
        plateau.write_json(self.dir / "run.json", done)  # the holder we waited for wrote its record
        yield

    def no_data(spec):
        raise AssertionError("trained a run another process had finished")

    monkeypatch.setattr(plateau.StageCache, "lock", lock_after_the_other_process)
    monkeypatch.setattr(plateau, "built_data", no_data)
    runner = plateau.run_scratch if kind == "scratch" else plateau.run_spt
    assert runner(run, tmp_path) == done


PLATEAU_STUB = """
import sys, time
from spt_theory import plateau
def run(r, root, log=None):
    print("training", flush=True)
    time.sleep(60)
plateau.run_scratch = plateau.run_spt = run
sys.exit(plateau.main(sys.argv[1:]))
"""


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


# ------------------------------------------------------------------------------- verify

def test_verify_prints_the_exit_status_it_returns_when_the_json_cannot_be_written(tmp_path, capsys, monkeypatch):
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
    _error_line(err, str(target), "cannot write")


# ----------------------------------------------------------------------- GPU script

@pytest.mark.parametrize("case", ["OUT_under_a_file", "export_under_a_file",
                                  "run_is_a_file", "run_under_a_file"])
def test_gpu_confirm_checks_its_folders_before_the_first_step(case, tmp_path, capsys, monkeypatch):
    from spt_theory.lra.gpu import confirm as gpu_confirm

    def no_steps(*args, **kwargs):
        raise AssertionError("a step ran before the folders were checked")

    monkeypatch.setattr(gpu_confirm, "confirm", no_steps)
    monkeypatch.delenv("OUT", raising=False)
    afile = tmp_path / "afile"
    afile.write_text("x")
    run, argv = tmp_path / "run", ["--tiny"]
    if case == "OUT_under_a_file":
        monkeypatch.setenv("OUT", str(afile / "out"))
    elif case == "export_under_a_file":
        argv += ["--export", str(afile / "out")]
    elif case == "run_is_a_file":
        run = afile
    else:
        run = afile / "run"
    assert gpu_confirm.main([*argv, str(run)]) == 2
    _error_line(capsys.readouterr().err, "afile", "run folder" if case.startswith("run") else "export folder")


# ------------------------------------------------------------------------- LRA sweep

def _listops(root: Path, train: int = 24) -> Path:
    from synthetic import listops

    for name, rows in listops.generate_splits({"train": train, "val": 6, "test": 8}, 5, 40).items():
        listops.write_split(root / "listops-1000" / f"basic_{name}.tsv", rows)
    return root


@pytest.fixture(scope="module")
def small_listops(tmp_path_factory) -> Path:
    return _listops(tmp_path_factory.mktemp("lra"))


@pytest.fixture
def lra_main(monkeypatch):
    """``python -m spt_theory.lra``'s main, the sweep figure not drawn (not what these tests check)."""
    from spt_theory.lra import __main__ as lra_cli

    monkeypatch.setattr(lra_cli, "draw", lambda summary, path: [])
    return lra_cli.main


def _sweep(data: Path, out: Path, *extra: str) -> list[str]:
    return ["sweep", "--task", "listops", "--data-dir", str(data), "--tiny", "--max-steps", "1",
            "--finetune-epochs", "1", "--out", str(out), "--seeds", "0", "--name", "t",
            "--grid", "recipe=scratch", "--no-progress", *extra]


def test_truncated_steps_and_probe_caches_are_recomputed_with_one_line_each(small_listops, tmp_path, capsys, lra_main):
    out = tmp_path / "out"
    assert lra_main(_sweep(small_listops, out)) == 0
    capsys.readouterr()
    caches = sorted((out / "steps" / "listops").glob("*.json")) + sorted((out / "probes" / "listops").glob("*.json"))
    assert len(caches) == 2
    whole = [json.loads(path.read_text()) for path in caches]
    for path in caches:
        path.write_text(path.read_text()[:20])
    assert lra_main(_sweep(small_listops, out)) == 0
    err = capsys.readouterr().err
    for path, before in zip(caches, whole):
        assert sum(str(path) in line and "recomputed" in line for line in err.splitlines()) == 1, err
        assert json.loads(path.read_text()) == before
    caches[1].write_text("{")
    assert lra_main(["probe", str(out / "results"), "--no-progress", "--data-dir", str(small_listops)]) == 0
    assert f"{caches[1]}:1:2: not valid JSON" in capsys.readouterr().err


def test_a_second_sweep_of_one_name_while_the_first_runs_is_refused(small_listops, tmp_path, capsys, lra_main):
    from spt_theory.util.locks import directory_lock

    out = tmp_path / "out"
    summary = out / "sweeps" / "listops-t.json"
    with directory_lock(summary):  # the first sweep of this name, still running
        assert lra_main(_sweep(small_listops, out)) == 2
        _error_line(capsys.readouterr().err, str(summary), "another sweep of this name is running")
        assert not summary.exists() and not (out / "cache").exists()
    assert lra_main(_sweep(small_listops, out)) == 0
    assert summary.exists()


def test_a_copied_sweep_or_its_data_named_another_way_is_the_same_sweep(small_listops, tmp_path, capsys, lra_main):
    import shutil

    first, copy = tmp_path / "first", tmp_path / "copy"
    assert lra_main(_sweep(small_listops, first)) == 0
    shutil.copytree(first, copy)
    summary = json.loads((copy / "sweeps" / "listops-t.json").read_text())
    stages = sorted(p.relative_to(copy) for p in (copy / "cache").rglob("*"))
    (tmp_path / "link").symlink_to(small_listops)
    capsys.readouterr()
    assert lra_main(_sweep(tmp_path / "link", copy)) == 0  # not refused as 'another sweep'
    assert "holds another sweep" not in capsys.readouterr().err
    assert sorted(p.relative_to(copy) for p in (copy / "cache").rglob("*")) == stages  # reloaded, not retrained
    again = json.loads((copy / "sweeps" / "listops-t.json").read_text())
    assert again["options"]["out"] == str(copy) and again["cells"] == summary["cells"]
    assert lra_main(_sweep(_listops(tmp_path / "other", train=25), copy)) == 2  # other data: another sweep
    _error_line(capsys.readouterr().err, "holds another sweep")


# ------------------------------------------------------------------------------ LRA probe

def test_probe_reads_and_writes_in_the_run_folder_never_where_a_result_points(small_listops, tmp_path, capsys,
                                                                               lra_main, monkeypatch):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    monkeypatch.chdir(tmp_path)  # where a relative recorded out would lead
    assert lra_main(_sweep(small_listops, out)) == 0
    (result_path,) = (out / "results" / "listops").glob("scratch-*.json")
    result = json.loads(result_path.read_text())
    for limit, recorded in (("3", str(elsewhere)), ("4", "runs/lra")):  # a copied run folder: out not followed
        result["options"]["out"] = recorded
        result_path.write_text(json.dumps(result))
        capsys.readouterr()
        code = lra_main(["probe", str(out / "results"), "--limit", limit, "--no-progress",
                         "--data-dir", str(small_listops)])
        err = capsys.readouterr().err
        assert code == 0 and f"wrote {out / 'probes' / 'listops' / ('scratch-' + result['cache'])}.json" in err, err
        assert not elsewhere.exists() and not (tmp_path / "runs").exists()
    result["options"]["out"] = str(out / "results" / ".." / ".." / "elsewhere")
    result_path.write_text(json.dumps(result))
    assert lra_main(["probe", str(result_path), "--limit", "2", "--no-progress"]) == 2
    _error_line(capsys.readouterr().err, str(result_path), "options.out", "'..'")
    result["options"]["out"] = str(out)
    loose = tmp_path / "loose.json"  # outside any run folder: the command line names it
    loose.write_text(json.dumps(result))
    assert lra_main(["probe", str(loose), "--limit", "2", "--no-progress"]) == 2
    _error_line(capsys.readouterr().err, str(loose), "--out")
    assert lra_main(["probe", str(loose), "--limit", "2", "--no-progress", "--out", str(out),
                     "--data-dir", str(small_listops)]) == 0
    assert not elsewhere.exists()



def test_probe_reads_only_the_data_folder_the_user_names(small_listops, tmp_path, capsys, lra_main, monkeypatch):
    """A result recording a data folder elsewhere (here a decoy of unreadable files): the probe
    reads only --data-dir; without it one line naming --data-dir; other data by fingerprint refused."""
    from spt_theory.lra import runner

    out, decoy = tmp_path / "out", tmp_path / "decoy"
    assert lra_main(_sweep(small_listops, out)) == 0
    (result_path,) = (out / "results" / "listops").glob("scratch-*.json")
    result = json.loads(result_path.read_text())
    (decoy / "listops-1000").mkdir(parents=True)
    for split in ("train", "val", "test"):
        (decoy / "listops-1000" / f"basic_{split}.tsv").write_text("not\tlistops\n")
    result["options"]["data_dir"] = str(decoy)
    result_path.write_text(json.dumps(result))
    read = []
    original = runner.load_task_data
    monkeypatch.setattr(runner, "load_task_data", lambda config, data_dir: read.append(Path(data_dir)) or
                        original(config, data_dir))
    capsys.readouterr()
    assert lra_main(["probe", str(result_path), "--limit", "2", "--no-progress"]) == 2
    _error_line(capsys.readouterr().err, str(result_path), "--data-dir", str(decoy))
    assert read == []
    assert lra_main(["probe", str(result_path), "--limit", "2", "--no-progress", "--data-dir", str(small_listops)]) == 0
    assert read and set(read) == {small_listops}, read
    capsys.readouterr()
    other = _listops(tmp_path / "other", train=25)
    assert lra_main(["probe", str(result_path), "--limit", "3", "--no-progress", "--data-dir", str(other)]) == 2
    _error_line(capsys.readouterr().err, "fingerprint", str(other))
    assert decoy not in read

def test_the_pathfinder_generator_never_writes_through_a_link_inside_its_folder(tmp_path):
    """--out DIR whose curv_contour_length_<L> is a link to a user's folder: one line, exit 2,
    nothing written there."""
    import subprocess
    import sys

    user = tmp_path / "users-images"
    user.mkdir()
    (user / "keep.txt").write_text("mine")
    out = tmp_path / "pf"
    out.mkdir()
    (out / "curv_contour_length_6").symlink_to(user, target_is_directory=True)
    result = subprocess.run([sys.executable, "-m", "synthetic.pathfinder", "--out", str(out), "--n", "2",
                             "--size", "16", "--contour-length", "6", "--no-progress"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0, result.stderr
    assert "is a link: nothing was written" in result.stderr
    assert sorted(p.name for p in user.iterdir()) == ["keep.txt"]


def _fake_run(record_value):
    def run(r, root, log=None):
        cache = r.cache(root)
        cache.dir.mkdir(parents=True, exist_ok=True)
        key = "spt_steps_to_95" if r.kind == "spt" else "escape_step"
        (cache.dir / "run.json").write_text(json.dumps({key: record_value, "seconds": 0.1}))
        return {key: record_value, "seconds": 0.1}
    return run


def test_a_default_plateau_run_never_writes_the_committed_evidence_and_promote_refuses_a_partial_grid(
        tmp_path, monkeypatch, capsys):
    before = plateau.SUMMARY.read_bytes()
    monkeypatch.setattr(plateau, "run_scratch", _fake_run(500))
    monkeypatch.setattr(plateau, "run_spt", _fake_run(100))
    cache = tmp_path / "cache"
    assert plateau.main(["--cache-dir", str(cache), "--lengths", "25", "--only", "sgd"]) == 0
    written = json.loads((cache / "plateau_runs.json").read_text())
    assert written["partial"] is True and len(written["runs"]) == 6  # SGD at n 25: two caps x 3 seeds
    assert plateau.SUMMARY.read_bytes() == before
    assert plateau.main(["--cache-dir", str(cache), "--lengths", "25", "--only", "sgd", "--promote"]) == 2
    _error_line(capsys.readouterr().err, "partial grid", "nothing was promoted")
    assert plateau.SUMMARY.read_bytes() == before
