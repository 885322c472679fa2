"""``python -m spt_theory.lra`` sweep and probe on a run folder: truncated steps and probe caches
recomputed with one line each, one sweep per summary name at a time, a sweep's identity (its grid,
config and data fingerprint, not its path strings), and probe paths and data folders taken from the
command line only, never from what a result records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


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


def test_a_second_sweep_of_one_name_while_the_first_runs_is_refused(small_listops, tmp_path, capsys, lra_main,
                                                                    error_line):
    from spt_theory.util.locks import directory_lock

    out = tmp_path / "out"
    summary = out / "sweeps" / "listops-t.json"
    with directory_lock(summary):  # the first sweep of this name, still running
        assert lra_main(_sweep(small_listops, out)) == 2
        error_line(capsys.readouterr().err, str(summary), "another sweep of this name is running")
        assert not summary.exists() and not (out / "cache").exists()
    assert lra_main(_sweep(small_listops, out)) == 0
    assert summary.exists()


def test_a_copied_sweep_or_its_data_named_another_way_is_the_same_sweep(small_listops, tmp_path, capsys, lra_main,
                                                                        error_line):
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
    error_line(capsys.readouterr().err, "holds another sweep")


# ------------------------------------------------------------------------------ LRA probe

def test_probe_reads_and_writes_in_the_run_folder_never_where_a_result_points(small_listops, tmp_path, capsys,
                                                                               lra_main, monkeypatch,
                                                                               error_line):
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
    error_line(capsys.readouterr().err, str(result_path), "options.out", "'..'")
    result["options"]["out"] = str(out)
    loose = tmp_path / "loose.json"  # outside any run folder: the command line names it
    loose.write_text(json.dumps(result))
    assert lra_main(["probe", str(loose), "--limit", "2", "--no-progress"]) == 2
    error_line(capsys.readouterr().err, str(loose), "--out")
    assert lra_main(["probe", str(loose), "--limit", "2", "--no-progress", "--out", str(out),
                     "--data-dir", str(small_listops)]) == 0
    assert not elsewhere.exists()



def test_probe_reads_only_the_data_folder_the_user_names(small_listops, tmp_path, capsys, lra_main, monkeypatch,
                                                         error_line):
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
    error_line(capsys.readouterr().err, str(result_path), "--data-dir", str(decoy))
    assert read == []
    assert lra_main(["probe", str(result_path), "--limit", "2", "--no-progress", "--data-dir", str(small_listops)]) == 0
    assert read and set(read) == {small_listops}, read
    capsys.readouterr()
    other = _listops(tmp_path / "other", train=25)
    assert lra_main(["probe", str(result_path), "--limit", "3", "--no-progress", "--data-dir", str(other)]) == 2
    error_line(capsys.readouterr().err, "fingerprint", str(other))
