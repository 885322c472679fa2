"""The one-GPU confirmation (scripts/lra_gpu_confirm.sh, spt_theory.lra.gpu.confirm): the whole
script at tiny size on the CPU as the lent GPU machine runs it (a copy of the tree, no install of
the project) with its export checked against that machine's limits; a failing and an overrunning
step; the steps' timeouts; the dry run's plan and FLOP count; the merges.

Run this file under another interpreter (``/path/to/python -m pytest tests/lra/test_gpu_confirm.py``)
to run the pipeline under that interpreter's Python and torch (the lent machine: Python 3.12,
torch 2.11)."""

import json
import os
import re
import shutil
import signal
import site
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import REPO

from spt_theory.bench.cases import BenchSize
from spt_theory.lra.gpu import data as gpu_data
from spt_theory.lra.gpu import plan as gpu_plan
from spt_theory.lra.gpu import run as gpu_run
from spt_theory.lra.gpu.confirm import main
from spt_theory.lra.gpu.data import generate_data, merge_listops, shares
from spt_theory.lra.gpu.export import bench_numbers, export
from spt_theory.lra.gpu.plan import FULL, STAGES, TASKS, TINY, Rates, plan, stage_flops
from spt_theory.lra.gpu.steps import run_step
from spt_theory.training.loop import stage_steps
from spt_theory.util.provenance import read_marker
from synthetic import listops

needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
EXPORTED = {"summary.json", "report.txt", "results.tar.gz", "listops-gpu.png", "listops-gpu.pdf",
            "pathfinder-gpu.png", "pathfinder-gpu.pdf"}


def _script(*args, python: str = sys.executable, root: Path = REPO, cwd: Path, env: dict | None = None,
            timeout: int = 900):  # generous: the machine may be busy
    env = {**os.environ, "PYTHON": python, "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run(["bash", str(root / "scripts/lra_gpu_confirm.sh"), "--sweeps", *args], capture_output=True,
                          text=True,
                          timeout=timeout, env=env, cwd=cwd)


def _failing_python(tmp_path: Path, failing: str, sleeping: str = "-") -> str:
    """An interpreter that fails (status 3, a message on its output) when asked to run the module
    ``failing`` and sleeps for 10 minutes when asked to run ``sleeping``."""
    fake = tmp_path / "fake-python"
    fake.write_text(f"""#!/usr/bin/env bash
for arg in "$@"; do
    if [[ $arg == {failing} ]]; then echo "fake failure of {failing}" >&2; exit 3; fi
    if [[ $arg == {sleeping} ]]; then echo "fake sleep of {sleeping} (pid $$)" >&2; exec sleep 600; fi
done
exec {sys.executable} "$@"
""")
    fake.chmod(0o755)
    return str(fake)


def assert_within_the_lent_machines_limits(folder: Path) -> list[Path]:
    """At most 8 files, each <= 16 MiB, 64 MiB together, no more than 2 folders down, names of
    letters, digits, '.', '_' and '-' only; the files."""
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert 0 < len(files) <= 8
    assert all(p.stat().st_size <= 16 * 2**20 for p in files)
    assert sum(p.stat().st_size for p in files) <= 64 * 2**20
    assert all(len(p.relative_to(folder).parts) <= 3 for p in files)
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", p.name) for p in folder.rglob("*"))
    return files


def _copy_of_the_tree(tmp_path: Path) -> Path:
    """What the lent machine gets: the tree's code, no .git, no installed metadata."""
    tree = tmp_path / "tree"
    for folder in ("spt_theory", "synthetic", "scripts"):
        shutil.copytree(REPO / folder, tree / folder, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return tree


def _python_without_the_install(tmp_path: Path) -> tuple[str, str]:
    """This interpreter without ``site`` (so no editable finder or .pth file of the project's
    install) and a PYTHONPATH holding its site-packages: torch and the rest, not spt_theory."""
    wrapper = tmp_path / "python-no-site"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper), os.pathsep.join(site.getsitepackages() + [site.getusersitepackages()])


@pytest.mark.slow
@needs_bash
def test_the_tiny_pipeline_runs_from_a_copy_without_install_and_exports_within_the_limits(tmp_path):
    tree = _copy_of_the_tree(tmp_path)
    python, site_packages = _python_without_the_install(tmp_path)
    bare = subprocess.run([python, "-c", "import torch, matplotlib, PIL, tqdm, numpy; import spt_theory"],
                          capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": site_packages})
    assert "No module named 'spt_theory'" in bare.stderr  # the install is out of reach, its dependencies are not
    out, exported = tmp_path / "run", tmp_path / "OUT"
    exported.mkdir()
    done = _script("--tiny", str(out), python=python, root=tree, cwd=tmp_path,
                   env={"PYTHONPATH": site_packages, "OUT": str(exported)})
    assert done.returncode == 0, done.stderr[-3000:]

    files = assert_within_the_lent_machines_limits(exported)
    assert {p.name for p in files} == EXPORTED
    summary = json.loads((exported / "summary.json").read_text())
    assert summary["complete"] and summary["within_budget"] and summary["budget_seconds"] == 300
    assert summary["versions"]["spt_theory_path"] == str((tree / "spt_theory").resolve())
    assert "git_commit" in summary["versions"] and summary["versions"]["torch"]
    assert summary["device"]["kind"] == "cpu" and summary["versions"]["python"] == ".".join(
        map(str, sys.version_info[:3]))
    assert [s["name"] for s in summary["steps"]] == ["start", "bench", "data", "sweep listops", "sweep pathfinder",
                                                     "report"]
    assert all(s["status"] == "ok" and s["seconds"] >= 0 for s in summary["steps"])
    for s in summary["steps"][1:5]:
        assert s["planned_seconds"] > 0 and s["timeout_seconds"] > s["planned_seconds"]
    for task in TASKS:
        assert summary["bench"][task]["spt_theory"]["tflops"] > 0
        assert 0 < summary["bench"][task]["spt_theory"]["share_of_peak"] < 1
        assert len(summary["sweeps"][task]["cells"]) == len(gpu_plan.CELLS[task])
    stages = summary["stages"]
    assert sorted((s["task"], s["kind"]) for s in stages) == sorted(
        [("listops", k) for k in ("scratch", "pretrain", "spt", "spt")] + [("pathfinder", k) for k in
                                                                           ("scratch", "pretrain", "spt")])
    assert all(s["steps"] == 3 and s["seconds"] > 0 for s in stages)  # the tiny cap
    assert summary["plans"]["final"]["tasks"]["listops"]["max_steps"] == 3
    assert {f["name"] for f in summary["export"]["files"]} == EXPORTED and not summary["export"]["left_out"]

    with tarfile.open(exported / "results.tar.gz") as archive:
        members = archive.getnames()
    assert {"bench.json", "plan.json", "sweeps/listops-gpu.json", "logs/sweep-pathfinder.log"} <= set(members)
    assert len([m for m in members if m.startswith("probes/")]) == 5
    assert len([m for m in members if m.startswith("results/")]) == 7
    assert not [m for m in members if m.endswith(".pt") or m.startswith(("data/", "cache/"))]

    report = (exported / "report.txt").read_text()
    assert "pathfinder" in report and "listops" in report and report == done.stdout
    assert "[lra-gpu] bench:" in done.stderr and "total" in done.stderr and "timeout" in done.stderr
    pathfinder = out / "data/pathfinder32/curv_contour_length_14"
    assert sorted(p.name for p in (pathfinder / "metadata").glob("*.npy")) == ["0.npy", "1.npy"]
    assert read_marker(pathfinder)["settings"]["seed"] == [1, 2]
    assert read_marker(out / "data/listops-1000")["settings"]["train"] == 24
    assert json.loads((out / "summary.json").read_text())["steps"] == summary["steps"]


BUDGET_S = 30


@pytest.mark.slow
@needs_bash
def test_a_failing_and_an_overrunning_step_still_leave_the_summary_and_the_export(tmp_path):
    exported = tmp_path / "OUT"
    python = _failing_python(tmp_path, "spt_theory.bench", sleeping="synthetic.pathfinder")
    start = time.time()
    # 30 s: enough for the start step (importing torch) on a loaded 2-core machine, so that the
    # bench step runs and fails rather than being skipped for want of budget
    done = _script("--tiny", str(tmp_path / "run"), "--budget", str(BUDGET_S), "--export", str(exported),
                   python=python, cwd=tmp_path)
    took = time.time() - start
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors[0] == "error: step bench failed: bench exited with status 3 (log bench.log)"
    assert errors[1].startswith("error: step data cut: cut at its timeout of")
    assert "data pathfinder 0, data pathfinder 1 still running" in errors[1]
    assert took < BUDGET_S + 10  # cut, not waited for: the budget (and the sleeps' stopping) bounds the run

    assert_within_the_lent_machines_limits(exported)
    summary = json.loads((exported / "summary.json").read_text())
    steps = {s["name"]: s for s in summary["steps"]}
    assert not summary["complete"] and summary["bench"] is None
    assert steps["start"]["status"] == "ok"
    assert steps["bench"]["status"] == "failed" and "fake failure of spt_theory.bench" in steps["bench"]["output_tail"]
    assert steps["bench"]["exit_status"] == {"bench": 3}
    data = steps["data"]
    assert data["status"] == "cut" and data["seconds"] >= data["timeout_seconds"] > 0
    assert data["exit_status"]["data listops 0"] == 0 and data["exit_status"]["data pathfinder 0"] < 0
    assert "fake sleep of synthetic.pathfinder" in data["output_tail"]
    assert steps["sweep listops"]["status"] == steps["sweep pathfinder"]["status"] == "skipped"
    assert steps["report"]["status"] == "failed" and not (exported / "report.txt").exists()
    assert not (tmp_path / "run/data/.complete").exists()
    with tarfile.open(exported / "results.tar.gz") as archive:
        assert "logs/data-pathfinder-1.log" in archive.getnames()


def test_a_fault_of_the_script_itself_still_leaves_the_summary_and_the_export(tmp_path, monkeypatch, capsys):
    def broken(sizes):
        raise RuntimeError("a bug in the plan")

    monkeypatch.setattr(gpu_run, "measure_cpu_rates", broken)
    (tmp_path / "run/results/listops").mkdir(parents=True)
    (tmp_path / "run/results/listops/scratch-0.json").write_text("{\"kind\": \"scratch\"}")  # half a result
    assert main(["--tiny", str(tmp_path / "run"), "--export", str(tmp_path / "OUT")]) == 2
    summary = json.loads((tmp_path / "OUT/summary.json").read_text())
    script = summary["steps"][0]
    assert script["name"] == "script" and script["status"] == "failed"
    assert "RuntimeError: a bug in the plan" in script["output_tail"]
    assert summary["stages"] == {"error": "KeyError('stages')"} and summary["bench"] is None
    assert "error: step script failed" in capsys.readouterr().err


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _ends(pid: int, seconds: float = 10.0) -> bool:
    """Whether ``pid`` is gone within ``seconds`` (a signalled process takes a moment to die)."""
    deadline = time.time() + seconds
    while _alive(pid) and time.time() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


@pytest.mark.slow
def test_a_step_past_its_timeout_is_cut_with_its_children(tmp_path):
    child = ("import subprocess, sys, time; p = subprocess.Popen(['sleep', '60']); "
             "print(p.pid, flush=True); time.sleep(60)")
    start = time.perf_counter()
    step = run_step("slow", {"slow": [sys.executable, "-c", child]}, timeout=1.0, logs=tmp_path, planned=0.5)
    assert time.perf_counter() - start < 10
    assert step.status == "cut" and step.seconds >= 1.0 and step.exit_status["slow"] < 0
    grandchild = int((tmp_path / "slow.log").read_text().split()[0])
    assert _ends(grandchild)
    assert step.message == "cut at its timeout of 1 s (slow still running)"


@pytest.mark.slow
def test_sigterm_stops_the_running_step_on_its_way_out(tmp_path):
    log = tmp_path / "run/logs/bench.log"
    confirm = subprocess.Popen([sys.executable, "-m", "spt_theory.lra.gpu.confirm", "--tiny", str(tmp_path / "run"),
                                "--python", _failing_python(tmp_path, "-", sleeping="spt_theory.bench")],
                               cwd=REPO, stderr=subprocess.DEVNULL, env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        deadline = time.time() + 120
        while not (log.exists() and "(pid" in log.read_text()) and time.time() < deadline:
            time.sleep(0.2)
        bench = int(re.search(r"\(pid (\d+)\)", log.read_text()).group(1))
        assert _alive(bench)
        confirm.send_signal(signal.SIGTERM)
        assert confirm.wait(60) == 143
        assert _ends(bench)
    finally:
        if confirm.poll() is None:  # a failed test leaves no run behind
            confirm.send_signal(signal.SIGTERM)
            confirm.wait(60)


def test_a_failing_process_fails_its_step_and_stops_the_others(tmp_path):
    step = run_step("pair", {"bad": [sys.executable, "-c", "import sys; print('broken input'); sys.exit(3)"],
                             "slow": [sys.executable, "-c", "import time; time.sleep(60)"]},
                    timeout=60, logs=tmp_path)
    assert step.status == "failed" and step.seconds < 30
    assert step.exit_status["bad"] == 3 and step.exit_status["slow"] < 0
    assert step.message == "bad exited with status 3 (log bad.log)" and "broken input" in step.output_tail
    missing = run_step("missing", {"missing": [str(tmp_path / "no-such-program")]}, timeout=5, logs=tmp_path)
    assert missing.status == "failed" and missing.message.startswith("missing could not start")


def test_the_data_step_never_removes_a_folder_it_did_not_make(tmp_path):
    data = tmp_path / "data"
    own = data / "listops-1000"
    own.mkdir(parents=True)
    (own / "basic_train.tsv").write_text("Source\tTarget\n")  # a user's data: no marker of ours or a generator's
    step = generate_data(_failing_python(tmp_path, "synthetic.pathfinder"), data, TINY, 60, tmp_path / "logs")
    assert step.status == "failed" and step.message.startswith(f"{own} was not made here")
    assert "nothing was changed" in step.message
    assert sorted(p.name for p in data.iterdir()) == ["listops-1000"]
    assert (own / "basic_train.tsv").read_text() == "Source\tTarget\n"


@pytest.mark.parametrize("marked", [True, False], ids=["generator-marked", "unmarked"])
def test_the_data_step_never_writes_through_a_link_to_a_users_data(marked, tmp_path):
    """RUN/data/listops-1000 a link to the user's own ListOps folder (marked by the generator or
    not): refused in one line, the user's four files untouched."""
    from spt_theory.util.provenance import write_marker

    user = tmp_path / "user-listops"
    user.mkdir()
    for split in ("train", "val", "test"):
        (user / f"basic_{split}.tsv").write_text(f"Source\tTarget\n( [MAX 1 2 ] )\t{split}\n")
    if marked:
        write_marker(user, "synthetic.listops", {"seed": 0})
    before = {p.name: p.read_bytes() for p in user.iterdir()}
    data = tmp_path / "run" / "data"
    data.mkdir(parents=True)
    (data / "listops-1000").symlink_to(user, target_is_directory=True)
    step = generate_data(_failing_python(tmp_path, "synthetic.pathfinder"), data, TINY, 60, tmp_path / "logs")
    assert (step.status == "failed" and "listops-1000 is a link" in step.message
            and "nothing was changed" in step.message)
    assert {p.name: p.read_bytes() for p in user.iterdir()} == before


def test_a_claim_file_naming_a_users_folder_does_not_make_it_ours(tmp_path):
    data = tmp_path / "data"
    own = data / "listops-1000"
    own.mkdir(parents=True)
    (own / "basic_train.tsv").write_text("user data\n")
    (data / ".made-by-gpu-confirm").write_text("listops-1000\n")  # an old run's claim, or a crafted one
    step = generate_data(_failing_python(tmp_path, "synthetic.pathfinder"), data, TINY, 60, tmp_path / "logs")
    assert step.status == "failed" and (own / "basic_train.tsv").read_text() == "user data\n"


def test_the_data_step_replaces_folders_it_made_or_its_generators_marked(tmp_path):
    from spt_theory.util.files import OWNED
    from spt_theory.util.provenance import write_marker

    data = tmp_path / "data"
    (data / "listops-1000").mkdir(parents=True)
    write_marker(data / "listops-1000", "synthetic.listops", {"seed": 0})
    (data / ".parts" / "listops-0").mkdir(parents=True)  # left by an interrupted run, which had marked it
    (data / ".parts" / OWNED).write_text("made\n")
    assert gpu_data.made_here(data, data / "listops-1000") is None and gpu_data.made_here(data, data / ".parts") is None
    step = generate_data(_failing_python(tmp_path, "synthetic.pathfinder"), data, TINY, 60, tmp_path / "logs")
    assert step.message.startswith("data pathfinder ")  # it went on to generate (and the stub failed)
    assert not (data / "listops-1000" / "GENERATED.json").exists()
    assert all((data / name / OWNED).is_file() for name in ("listops-1000", "pathfinder32"))


def test_a_failing_generator_process_fails_the_data_step(tmp_path):
    step = generate_data(_failing_python(tmp_path, "synthetic.pathfinder"), tmp_path / "data", TINY, 60,
                         tmp_path / "logs")
    assert step.status == "failed" and step.message.startswith("data pathfinder ")
    assert "exited with status 3" in step.message
    assert not (tmp_path / "data/.complete").exists()


def test_the_export_leaves_out_a_file_over_the_size_limit_and_stale_files(tmp_path):
    run, folder = tmp_path / "run", tmp_path / "export"
    (run / "sweeps").mkdir(parents=True)
    (run / "report.txt").write_text("table\n")
    with open(run / "sweeps/listops-gpu.png", "wb") as big:
        big.truncate(16 * 2**20 + 1)
    folder.mkdir()
    (folder / "pathfinder-gpu.pdf").write_text("from an earlier export")
    figures = [run / "sweeps" / name for name in gpu_plan.FIGURES]
    entry = export(run, folder, {"complete": True}, figures)
    assert entry["left_out"] == [{"name": "listops-gpu.png", "bytes": 16 * 2**20 + 1, "why": "over the size limits"}]
    assert sorted(p.name for p in folder.iterdir()) == ["report.txt", "results.tar.gz", "summary.json"]
    assert json.loads((folder / "summary.json").read_text())["export"] == entry


def test_bench_numbers_give_tflops_and_the_share_of_the_bf16_peak():
    def model(gflops, seconds):
        return {"gflops": gflops, "peak_fraction": gflops / 989_000, "seconds_per_step": {"median": seconds},
                "tokens_per_second": 1e6}

    case = {"speedup_vs_torch_layer": 2.0, "step_gflop": 1000.0, "autocast_bf16": True,
            "spt_theory": model(247_250.0, 0.004), "torch_layer": model(123_625.0, 0.008)}
    bench = {"device": "cuda", "device_name": "NVIDIA H200", "bf16_dense_peak_gflops": 989_000.0,
             "listops": case, "pathfinder": case}
    numbers = bench_numbers(bench, TASKS)
    assert numbers["peak"] == {"what": "bf16 dense peak of NVIDIA H200", "tflops": 989.0}
    ours = numbers["listops"]["spt_theory"]
    assert ours["tflops"] == 247.25 and ours["share_of_peak"] == 0.25 and ours["ms_per_step"] == 4.0
    assert numbers["listops"]["torch_layer"]["share_of_peak"] == 0.125 and numbers["device"] == "NVIDIA H200"


def test_an_export_folder_that_is_not_empty_or_inside_the_run_is_refused(tmp_path, capsys):
    run, folder = tmp_path / "run", tmp_path / "export"
    folder.mkdir()
    (folder / "notes.txt").write_text("someone else's")
    assert main(["--tiny", str(run), "--export", str(folder)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: export folder") and "'notes.txt'" in err and "\n" not in err
    assert main(["--tiny", str(run), "--export", str(run / "out")]) == 2
    assert "one may not hold the other" in capsys.readouterr().err
    assert main(["--dry-run", "--export", str(folder)]) == 2
    assert capsys.readouterr().err.strip() == "error: --export does nothing with --dry-run (it runs nothing)"
    assert not run.exists()


@pytest.mark.slow
def test_dry_run_prints_a_plan_within_300_seconds_with_a_timeout_per_step(capsys):
    assert main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    total = [line for line in out.splitlines() if line.startswith("total")]
    assert len(total) == 1 and "fits in the budget of 300 s" in total[0]
    assert float(total[0].split()[1]) <= 300
    for task in TASKS:
        for stage in STAGES[task]:
            assert f"{task} {stage} " in out
    assert "bench" in out and "data" in out and "25% of H200 bf16 peak 989 TFLOP/s" in out
    steps = [line for line in out.splitlines() if line.startswith("steps")]
    timeouts = [float(t) for t in re.findall(r"\(timeout (\d+) s\)", steps[0])]
    assert len(timeouts) == 4 and min(timeouts) > 20  # bench, data, the two sweeps


@pytest.mark.slow
def test_dry_run_over_budget_is_one_error_line_with_status_2(capsys):
    assert main(["--dry-run", "--budget", "30"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: the plan takes") and "over the budget of 30 s" in err and "\n" not in err


def test_full_run_without_cuda_is_refused(tmp_path, capsys):
    import torch
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    assert main([str(tmp_path / "out")]) == 2
    assert "no CUDA device" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_stage_steps_counts_whole_passes_up_to_the_cap():
    assert stage_steps(24, 2, 4) == 12 and stage_steps(25, 1, 4) == 7  # the last batch short
    assert stage_steps(24, 2, 4, max_steps=5) == 5 and stage_steps(24, 1, 4, max_steps=50) == 6


def test_stage_flops_by_hand_for_one_small_shape():
    shape = BenchSize("small", n=4, d_model=8, n_heads=2, d_ff=16, batch=2)
    # per sequence: linear layers 2*4*(4*64 + 2*8*16) = 4096, QK^T and AV 4*16*8 = 512,
    # the SPT decoder to ListOps' 17 token classes 2*4*8*17 = 1088; backward = 2 x forward
    assert stage_flops("listops", shape, "scratch") == 3 * 2 * (4096 + 512)
    assert stage_flops("listops", shape, "pretrain") == 3 * 2 * (4096 + 512 + 1088)


def _rates(flops: float) -> Rates:
    return Rates(flops={task: flops for task in TASKS}, step_overhead=0.0, trees_per_second=100.0,
                 images_per_second=10.0, trees_read_per_second=1e4, images_read_per_second=1e3, measure_seconds=1.0,
                 basis="test")


@pytest.mark.slow
def test_plan_fills_the_budget_with_steps_and_reuses_given_caps():
    p = plan(FULL, _rates(1e14), fixed_seconds={"start": 4.0, "bench": 20.0, "data": 60.0})
    assert [r["seconds"] for r in p["rows"][:3]] == [4.0, 20.0, 60.0]
    assert p["total_seconds"] <= 300 and p["total_seconds"] > 0.8 * 300  # the stages fill what is left
    for task in TASKS:
        cap = p["tasks"][task]["max_steps"]
        row = next(r for r in p["rows"] if r["step"] == f"{task} scratch")
        assert row["seconds"] >= cap * stage_flops(task, FULL.shapes[task], "scratch") / 1e14
        assert p["tasks"][task]["epochs"] * split_train(task) >= cap * FULL.shapes[task].batch
    assert sum(s["planned_seconds"] for s in p["steps"]) == pytest.approx(p["total_seconds"])
    sweep = next(s for s in p["steps"] if s["step"] == "sweep listops")
    assert sweep["planned_seconds"] == pytest.approx(p["tasks"]["listops"]["planned_seconds"])
    assert sweep["timeout_seconds"] == pytest.approx(min(1.5 * sweep["planned_seconds"] + 20, 300 - 84 - 5))
    slower = plan(FULL, _rates(5e13), fixed_seconds={"bench": 20.0, "data": 60.0})
    assert slower["tasks"]["listops"]["max_steps"] < p["tasks"]["listops"]["max_steps"]
    reused = plan(FULL, _rates(5e13), caps={"listops": 7, "pathfinder": 9})
    assert reused["tasks"]["listops"]["max_steps"] == 7 and reused["tasks"]["pathfinder"]["max_steps"] == 9
    assert plan(TINY, _rates(1e14))["tasks"]["pathfinder"]["max_steps"] == 3  # tiny: clipped


def test_replanning_after_a_slow_first_sweep_gives_the_second_fewer_steps():
    fixed = {"start": 4.0, "bench": 20.0, "data": 60.0}
    first = plan(FULL, _rates(1e14), fixed)
    planned = first["tasks"]["listops"]["planned_seconds"]
    caps = {"listops": first["tasks"]["listops"]["max_steps"]}
    on_time = plan(FULL, _rates(1e14), {**fixed, "listops": planned}, caps=caps)
    late = plan(FULL, _rates(1e14), {**fixed, "listops": 1.5 * planned}, caps=caps, slowdown=1.5)
    assert on_time["tasks"]["listops"] == {"max_steps": caps["listops"], "measured_seconds": planned}
    assert [r["seconds"] for r in on_time["rows"] if r["step"] == "listops sweep"] == [planned]
    # on time: the slack the first sweep left goes to the second
    assert on_time["tasks"]["pathfinder"]["max_steps"] >= first["tasks"]["pathfinder"]["max_steps"]
    assert on_time["total_seconds"] <= 300
    assert late["tasks"]["pathfinder"]["max_steps"] < 0.6 * on_time["tasks"]["pathfinder"]["max_steps"]
    assert late["total_seconds"] <= 300


def split_train(task: str) -> int:
    return gpu_plan.split_sizes(task, FULL)[0]


def test_shares_and_listops_merge_keeps_each_tree_once(tmp_path):
    assert shares(10, 4) == [3, 3, 2, 2] and sum(shares(20000, 12)) == 20000
    for k in (0, 1):  # the same seed twice: every tree of the second part is a duplicate
        assert listops.main(["--out", str(tmp_path / f"p{k}"), "--train", "5", "--val", "2", "--test", "2",
                             "--min-len", "5", "--max-len", "40", "--seed", "0"]) == 0
    merge_listops([tmp_path / "p0", tmp_path / "p1"], tmp_path / "merged")
    settings = read_marker(tmp_path / "merged")["settings"]
    assert settings["duplicates_dropped"] == 9 and settings["seed"] == [0, 0]
    assert (settings["train"], settings["val"], settings["test"]) == (5, 2, 2)
    assert (tmp_path / "merged/basic_train.tsv").read_text() == (tmp_path / "p0/basic_train.tsv").read_text()


# ------------------------------------------------------------------ the GPU twin (issue 42, item 4)

def test_the_twins_plan_shrinks_steps_first_then_arms_in_the_registered_order():
    from spt_theory.lra.gpu.twin_plan import DROP_ORDER, FULL, assumed_rates, plan

    rates = assumed_rates(FULL)
    full = plan(FULL, rates, budget=1e9)
    assert full["steps"] == 40000 and not full["shrunk"]
    fewer_steps = plan(FULL, rates, budget=300)
    assert len(fewer_steps["arms"]) == 5 and FULL.floor_steps <= fewer_steps["steps"] < full["steps"]
    kept = []
    for budget in (200, 150, 120, 90, 10):
        p = plan(FULL, rates, budget=budget)
        assert len(p["seeds"]) >= 8 and {"scratch", "spt"} <= set(p["arms"])
        dropped = [a for a in DROP_ORDER if a not in p["arms"]]
        assert dropped == list(DROP_ORDER[:len(dropped)])  # dropped in order, never out of it
        assert p["fits"] or (dropped == list(DROP_ORDER) and p["steps"] == FULL.floor_steps)
        kept.append(len(p["arms"]))
    assert kept == sorted(kept, reverse=True) and kept[-1] == 2


def test_the_twin_refuses_folders_holding_files_it_did_not_write(tmp_path, capsys):
    from spt_theory.lra.gpu import twin

    run = tmp_path / "run"
    run.mkdir()
    (run / "notes.txt").write_text("mine")
    assert twin.main(["--tiny", str(run)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nothing was changed" in err[0]
    assert (run / "notes.txt").read_text() == "mine" and len(list(run.iterdir())) == 1
    out = tmp_path / "OUT"
    out.mkdir()
    (out / "theirs.bin").write_text("x")
    assert twin.main(["--tiny", str(tmp_path / "run2"), "--export", str(out)]) == 2
    assert "did not write" in capsys.readouterr().err and (out / "theirs.bin").exists()


def test_an_ensemble_member_trains_as_the_plain_model_would():
    """One ensemble step of member 1 = one AdamW step of the plain Encoder on the same batch."""
    import torch

    from spt_theory.lra.gpu.ensemble import Ensemble, pixels
    from spt_theory.lra.gpu.twin_plan import TINY
    from spt_theory.lra.gpu.twin_train import seeded

    g = torch.Generator().manual_seed(0)
    x, y = torch.randint(0, 256, (16, 256), dtype=torch.uint8, generator=g), torch.randint(0, 2, (16,), generator=g)
    ens = Ensemble([seeded(TINY, 0), seeded(TINY, 1)], [0, 1], "supervised", 1e-3, fixed=[("decoder",)] * 2)
    index = ens._batch_indices(16, 4)
    ens._orders = [None, None]
    ens._generators = [torch.Generator().manual_seed(1000 * s + 1) for s in (0, 1)]
    ens.step(x, y, 4)
    plain = seeded(TINY, 1)
    trainable = [p for n, p in plain.named_parameters() if plain.group_of(n) != "decoder"]
    opt = torch.optim.AdamW(trainable, lr=1e-3, weight_decay=0.01)
    torch.nn.functional.cross_entropy(plain(pixels(x[index[1]])), y[index[1]]).backward()
    opt.step()
    member = ens.member(1)
    for (name, a), b in zip(plain.named_parameters(), member.parameters()):
        if name.endswith("attn.qk.bias"):  # b_K's gradient is 0 up to rounding, which AdamW scales to +-lr
            a, b = a[:TINY.d_model], b[:TINY.d_model]
        assert torch.allclose(a, b, atol=1e-6), name


@pytest.mark.parametrize("case", ["OUT_under_a_file", "export_under_a_file",
                                  "run_is_a_file", "run_under_a_file"])
def test_gpu_confirm_checks_its_folders_before_the_first_step(case, tmp_path, capsys, monkeypatch, error_line):
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
    error_line(capsys.readouterr().err, "afile", "run folder" if case.startswith("run") else "export folder")


@pytest.mark.parametrize("fault", ["arm", "steps", "bits", "fingerprint"])
def test_a_twin_group_file_that_does_not_fit_its_format_is_refused_naming_the_field(fault):
    from spt_theory.evidence import EvidenceError, correctness, lra_schema, schema

    right = np.array([True, False, True, True])

    def point(step):
        return {"step": step, "train_loss": 0.5, "val_accuracy": 0.75, "test_accuracy": 0.75,
                "test_correct": correctness.encode(right)}

    group = {"group": 0, "seeds": [100], "arms": ["scratch"], "data": "f" * 64, "config": {},
             "runs": [{"arm": "scratch", "seed": 100, "complete": True, "steps": 8, "offset": 0,
                       "curve": [point(4), point(8)], "test_accuracy": 0.75}]}
    schema.parse(json.dumps(group), lra_schema.TwinGroup, "group-0.json")
    run = group["runs"][0]
    if fault == "arm":
        run["arm"], match = "spt", "not an arm and seed"
    elif fault == "steps":
        run["curve"].reverse()
        match = "not increasing"
    elif fault == "bits":
        run["curve"][1]["test_accuracy"], match = 0.5, "test_correct"
    else:
        group["data"], match = "f", "data"
    with pytest.raises(EvidenceError, match=match):
        schema.parse(json.dumps(group), lra_schema.TwinGroup, "group-0.json")
