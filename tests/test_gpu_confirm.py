"""The one-GPU confirmation (scripts/lra_gpu_confirm.sh, spt_theory.lra.gpu_confirm): the whole
script at tiny size on the CPU, the dry run's plan and FLOP count, the failure path, the merges."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from spt_theory.bench import BenchSize
from spt_theory.lra import gpu_confirm
from spt_theory.lra.gpu_confirm import (FULL, STAGES, TASKS, TINY, Rates, StepFailed, generate_data, main,
                                        merge_listops, plan, shares, stage_flops)
from synthetic import listops
from synthetic.provenance import read_marker

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts/lra_gpu_confirm.sh"
needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _script(*args, python: str = sys.executable, timeout: int = 900):  # generous: the machine may be busy
    env = {**os.environ, "PYTHON": python, "OMP_NUM_THREADS": "1"}
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout, env=env)


def _failing_python(tmp_path: Path, module: str) -> str:
    """An interpreter that fails (status 3, a message on stderr) when asked to run ``module``."""
    fake = tmp_path / "fake-python"
    fake.write_text(f"""#!/usr/bin/env bash
for arg in "$@"; do
    if [[ $arg == {module} ]]; then echo "fake failure of {module}" >&2; exit 3; fi
done
exec {sys.executable} "$@"
""")
    fake.chmod(0o755)
    return str(fake)


@needs_bash
def test_the_whole_script_runs_at_tiny_size_on_the_cpu(tmp_path):
    out = tmp_path / "out"
    done = _script("--tiny", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    for task, cells in (("listops", 3), ("pathfinder", 2)):
        kinds = {json.loads(p.read_text())["kind"] for p in (out / f"results/{task}").glob("*.json")}
        assert kinds == {"scratch", "pretrain", "spt"}
        summary = json.loads((out / f"sweeps/{task}-gpu.json").read_text())
        assert len(summary["cells"]) == cells and summary["seeds"] == [0]
        assert (out / f"sweeps/{task}-gpu.png").exists()
        assert list((out / f"probes/{task}").glob("*.json"))  # every run probed
    bench = json.loads((out / "bench.json").read_text())
    assert bench["listops"]["size"]["min_len"] == 5 and "torch_layer" in bench["pathfinder"]
    steps = json.loads((out / "plan.json").read_text())["tasks"]
    assert {task: steps[task]["max_steps"] for task in TASKS} == {"listops": 3, "pathfinder": 3}
    pathfinder = out / "data/pathfinder32/curv_contour_length_14"
    assert sorted(p.name for p in (pathfinder / "metadata").glob("*.npy")) == ["0.npy", "1.npy"]
    assert read_marker(pathfinder)["settings"]["seed"] == [1, 2]
    assert read_marker(out / "data/listops-1000")["settings"]["train"] == 24
    report = (out / "report.txt").read_text()
    assert "pathfinder" in report and "listops" in report and report in done.stdout
    assert "[lra-gpu] bench:" in done.stderr and "total" in done.stderr


@needs_bash
def test_a_failing_step_prints_its_error_and_stops_with_status_2(tmp_path):
    done = _script("--tiny", str(tmp_path / "out"), python=_failing_python(tmp_path, "spt_theory.bench"))
    assert done.returncode == 2
    assert "fake failure of spt_theory.bench" in done.stderr
    assert "error: step bench failed with exit status 3" in done.stderr
    assert not (tmp_path / "out/data").exists() and not (tmp_path / "out/results").exists()


def test_a_failing_generator_process_stops_the_data_step(tmp_path):
    with pytest.raises(StepFailed, match="data pathfinder 0 failed with exit status 3"):
        generate_data(_failing_python(tmp_path, "synthetic.pathfinder"), tmp_path / "data", TINY)
    assert not (tmp_path / "data/.complete").exists()


def test_dry_run_prints_a_plan_within_600_seconds(capsys):
    assert main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    total = [line for line in out.splitlines() if line.startswith("total")]
    assert len(total) == 1 and "fits in the budget of 600 s" in total[0]
    assert float(total[0].split()[1]) <= 600
    for task in TASKS:
        for stage in STAGES[task]:
            assert f"{task} {stage} " in out
    assert "bench" in out and "data" in out and "25% of H200 bf16 peak 989 TFLOP/s" in out


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


def test_stage_flops_by_hand_for_one_small_shape():
    shape = BenchSize("small", n=4, d_model=8, n_heads=2, d_ff=16, batch=2)
    # per sequence: linear layers 2*4*(4*64 + 2*8*16) = 4096, QK^T and AV 4*16*8 = 512,
    # the SPT decoder to ListOps' 17 token classes 2*4*8*17 = 1088; backward = 2 x forward
    assert stage_flops("listops", shape, "scratch") == 3 * 2 * (4096 + 512)
    assert stage_flops("listops", shape, "pretrain") == 3 * 2 * (4096 + 512 + 1088)


def _rates(flops: float) -> Rates:
    return Rates(flops={task: flops for task in TASKS}, step_overhead=0.0, trees_per_second=100.0,
                 images_per_second=10.0, trees_read_per_second=1e4, images_read_per_second=1e3, basis="test")


def test_plan_fills_the_budget_with_steps_and_reuses_given_caps():
    p = plan(FULL, _rates(1e14), fixed_seconds={"bench": 20.0, "data": 60.0})
    assert p["rows"][0]["seconds"] == 20.0 and p["rows"][1]["seconds"] == 60.0
    assert p["total_seconds"] <= 600 and p["total_seconds"] > 0.8 * 600  # the stages fill what is left
    for task in TASKS:
        cap = p["tasks"][task]["max_steps"]
        row = next(r for r in p["rows"] if r["step"] == f"{task} scratch")
        assert row["seconds"] >= cap * stage_flops(task, FULL.shapes[task], "scratch") / 1e14
        assert p["tasks"][task]["epochs"] * split_train(task) >= cap * FULL.shapes[task].batch
    slower = plan(FULL, _rates(5e13), fixed_seconds={"bench": 20.0, "data": 60.0})
    assert slower["tasks"]["listops"]["max_steps"] < p["tasks"]["listops"]["max_steps"]
    reused = plan(FULL, _rates(5e13), caps={"listops": 7, "pathfinder": 9})
    assert reused["tasks"]["listops"]["max_steps"] == 7 and reused["tasks"]["pathfinder"]["max_steps"] == 9
    assert plan(TINY, _rates(1e14))["tasks"]["pathfinder"]["max_steps"] == 3  # tiny: clipped


def test_replanning_after_a_slow_first_sweep_gives_the_second_fewer_steps():
    fixed = {"bench": 20.0, "data": 60.0}
    first = plan(FULL, _rates(1e14), fixed)
    planned = first["tasks"]["listops"]["planned_seconds"]
    caps = {"listops": first["tasks"]["listops"]["max_steps"]}
    on_time = plan(FULL, _rates(1e14), {**fixed, "listops": planned}, caps=caps)
    late = plan(FULL, _rates(1e14), {**fixed, "listops": 1.5 * planned}, caps=caps, slowdown=1.5)
    assert on_time["tasks"]["listops"] == {"max_steps": caps["listops"], "measured_seconds": planned}
    assert [r["seconds"] for r in on_time["rows"] if r["step"] == "listops sweep"] == [planned]
    # on time: the slack the first sweep left goes to the second
    assert on_time["tasks"]["pathfinder"]["max_steps"] >= first["tasks"]["pathfinder"]["max_steps"]
    assert on_time["total_seconds"] <= 600
    assert late["tasks"]["pathfinder"]["max_steps"] < 0.6 * on_time["tasks"]["pathfinder"]["max_steps"]
    assert late["total_seconds"] <= 600


def split_train(task: str) -> int:
    return gpu_confirm.split_sizes(task, FULL)[0]


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
