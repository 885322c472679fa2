"""The GPU twin (scripts/lra_gpu_confirm.sh, spt_theory.lra.gpu.twin, issues 51 and 57) on the CPU:
the stacked ensemble against separate Encoders for every arm, the pipeline at tiny size with
pydantic made unimportable (the GPU image has none), the preflight, the deadline (the dry run's
plan for a 540-s wall and a cut at an evaluation), the run's files (links, reruns, SIGINT, the data
checks, the folder checks before anything is made), and a run that always comes back (issue 57):
signals to the script, an error, a kill, a cut in pretraining, a NaN member, the data before CUDA
and the pool's timeout, a read-only OUT, unregistered data, the prepared command rerun.  Promotion
and the G claims: tests/checks/test_gpu_twin_claims.py."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers import REPO

from spt_theory.core.inits import grid_proximity_init
from spt_theory.lra.gpu import twin, twin_data, twin_folders, twin_train
from spt_theory.lra.gpu.stacked import Stacked, pixels
from spt_theory.lra.gpu.twin_plan import ARMS, PRETRAINED, TINY, assumed_rates, plan
from spt_theory.lra.gpu.twin_train import ENCODER_GROUPS, Deadline, seeded, train_group

needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

BLOCK_PYDANTIC = '''import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pydantic", "pydantic_core", "annotated_types"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, _Block())
'''
"""A ``sitecustomize`` that makes pydantic unimportable, as on the GPU image (../shared/GPU.md)."""


# ------------------------------------------------------------------------------ the stacked ensemble
TOLERANCE = 1e-9
"""float64 parameters after 10 steps.  The two implementations sum in different orders, so their
gradients differ by rounding (1e-16 relative); Adam's step lr m / (sqrt(v) + 1e-8) passes that on
unchanged where a gradient is large, and scales it up by as much as lr / eps = 1e5 where a gradient
is 0 but for rounding (b_K's: the softmax ignores it), which gives the largest differences seen,
about 1e-12.  1e-9 leaves 1000x room and is 10^6 below one Adam step (lr = 1e-3): a wrong
gradient, learning rate, weight decay, batch or frozen parameter moves a parameter by about lr."""


def _data(n_train=24, n_eval=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    data = {}
    for split, n in (("train", n_train), ("val", n_eval), ("test", n_eval)):
        data[f"x_{split}"] = torch.randint(0, 256, (n, 256), dtype=torch.uint8, generator=g)
        data[f"y_{split}"] = torch.randint(0, 2, (n,), generator=g)
    return data


def _separately(sizes, arm, seed, k, batches, spt_states):
    """The plain Encoder of (arm, seed) trained on its own, in float64, on the batches the stacked
    ensemble drew for its data stream ``k``; its SPT model's state is kept in ``spt_states``."""
    def adamw(model, lr, fixed):
        return torch.optim.AdamW([p for n, p in model.named_parameters() if model.group_of(n) not in fixed], lr=lr,
                                 weight_decay=0.01)

    def at(optimizer, lr, t):
        for group in optimizer.param_groups:
            group["lr"] = lr * min(1.0, t / sizes.warmup_steps)

    p = plan(sizes, assumed_rates(sizes), 1e9)
    if arm in PRETRAINED and seed not in spt_states:
        spt = seeded(sizes, seed).double()
        optimizer = adamw(spt, sizes.lr_pretrain, ("head",))
        for t, (index, mask) in enumerate(batches["spt"][:p["spt_steps"]], 1):
            x, m = batches["x"][index[k]], mask[k]
            at(optimizer, sizes.lr_pretrain, t)
            optimizer.zero_grad()
            F.cross_entropy(spt.reconstruct(pixels(x, m, torch.float64))[m], x.long()[m]).backward()
            optimizer.step()
        spt_states[seed] = {n: v.detach().clone() for n, v in spt.named_parameters()}
    model = seeded(sizes, seed).double()
    with torch.no_grad():
        for name, value in model.named_parameters():
            if arm in PRETRAINED and model.group_of(name) in (ENCODER_GROUPS if arm == "spt" else ("qk",)):
                value.copy_(spt_states[seed][name])
    if arm == "proximity":
        grid_proximity_init(model, side=sizes.side)
    fixed = ("decoder", "qk") if arm == "frozen_qk" else ("decoder",)
    optimizer = adamw(model, sizes.lr, fixed)
    steps = p["finetune_steps"] if arm in PRETRAINED else p["steps"]
    for t, (index, _) in enumerate(batches["supervised"][:steps], 1):
        at(optimizer, sizes.lr, t)
        optimizer.zero_grad()
        F.cross_entropy(model(pixels(batches["x"][index[k]], dtype=torch.float64)), batches["y"][index[k]]).backward()
        optimizer.step()
    return model


@pytest.mark.slow
def test_the_stacked_ensemble_trains_every_arm_as_separate_encoders_would(monkeypatch):
    """train_group in float64 (SPT ensemble, then every arm x seed, the SPT arms leaving when their
    finetuning ends) against each arm's plain Encoder trained alone on the same batches and masks:
    scratch, SPT then finetune, the W_Q W_K hybrid, frozen W_Q W_K, proximity init; 10 steps,
    warm-up 3, epochs of 6 steps (a new data order mid-run)."""
    sizes = replace(TINY, n_train=24, batch=4, steps=10, floor_steps=4, warmup_steps=3, seeds=2, group=2)
    data = _data()
    drawn = {"spt": [], "supervised": [], "x": data["x_train"], "y": data["y_train"]}
    real = Stacked.next_batch

    def recording(self):
        index, mask = real(self)
        if self.objective == "spt" or self.members == len(ARMS) * sizes.group:  # rows by member before any leave
            drawn[self.objective].append((index.clone(), None if mask is None else mask.clone()))
        else:
            drawn[self.objective].append((torch.cat([index, index[:sizes.group]]), None))
        return index, mask

    monkeypatch.setattr(Stacked, "next_batch", recording)
    p = plan(sizes, assumed_rates(sizes), 1e9)
    assert p["arms"] == list(ARMS) and p["spt_steps"] == 4 and p["finetune_steps"] == 6
    finished, streamed = {}, []
    cut = train_group(sizes, p, data, "cpu", lambda runs, cut: streamed.append(cut), lambda line: None,
                      Deadline(time.time() + 1e6), dtype=torch.float64, finished=finished)
    assert cut is None and len(drawn["spt"]) == 4 and len(drawn["supervised"]) == 10
    assert set(finished) == {(a, s) for a in ARMS for s in p["seeds"]}
    spt_states = {}
    for arm in ARMS:
        for k, seed in enumerate(p["seeds"]):
            alone = _separately(sizes, arm, seed, k, drawn, spt_states)
            stacked = finished[arm, seed]
            initial = seeded(sizes, seed)
            for name, value in alone.named_parameters():
                assert torch.allclose(stacked[name], value.detach(), rtol=0, atol=TOLERANCE), (arm, seed, name)
                if name.startswith("decoder") or (arm == "frozen_qk" and ".attn.qk." in name):
                    assert torch.equal(stacked[name], initial.get_parameter(name).double()), (arm, name)  # never moved


def test_members_of_one_seed_read_one_stream_and_the_orders_are_drawn_once_an_epoch():
    models = [seeded(TINY, s) for s in (0, 1, 0)]
    ens = Stacked(models, [0, 1, 0], "spt", 1e-3, n_train=12, batch=4, seed=5)
    first = [ens.next_batch() for _ in range(3)]
    epoch = ens.epoch_index
    index, mask = ens.next_batch()
    assert ens.epoch_index is not epoch  # a new epoch after 12 // 4 = 3 steps
    for index, mask in first:
        assert torch.equal(index[0], index[2]) and torch.equal(mask[0], mask[2]) and not torch.equal(mask[0], mask[1])
    rows = torch.cat([i[0] for i, _ in first])
    assert sorted(rows.tolist()) == list(range(12))  # every example once an epoch


def test_a_member_that_leaves_takes_its_moments_with_it():
    models = [seeded(TINY, s) for s in (0, 1, 2)]
    ens = Stacked(models, [0, 1, 2], "supervised", 1e-3, fixed=[("decoder",)] * 3, n_train=8, batch=4)
    data = _data(8)
    ens.step(data["x_train"], data["y_train"])
    before = {name: ens.parameters_of(2)[name] for name in ("head.weight", "embed.bias")}
    m1 = ens.m1[2].clone()
    ens.keep([2, 0])
    assert ens.members == 2 and torch.equal(ens.m1[0], m1)
    assert all(torch.equal(ens.parameters_of(0)[k], v) for k, v in before.items())
    ens.step(data["x_train"], data["y_train"])


# ------------------------------------------------------------------------------ the pipeline, no pydantic
def _env(tmp_path: Path, block_pydantic: bool = True) -> dict:
    env = {**os.environ, "PYTHON": sys.executable, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    env.pop("OUT", None)
    if block_pydantic:
        site = tmp_path / "no-pydantic"
        site.mkdir(exist_ok=True)
        (site / "sitecustomize.py").write_text(BLOCK_PYDANTIC)
        env["PYTHONPATH"] = str(site)
    return env


def _twin(*args, cwd: Path, env: dict, timeout: int = 600):
    return subprocess.run(["bash", str(REPO / "scripts/lra_gpu_confirm.sh"), *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=cwd)


@pytest.mark.slow
def test_pydantic_is_blocked_by_the_test_sitecustomize(tmp_path):
    done = subprocess.run([sys.executable, "-c", "import pydantic"], capture_output=True, text=True,
                          env=_env(tmp_path))
    assert done.returncode == 1 and "No module named 'pydantic'" in done.stderr


@pytest.mark.slow
@needs_bash
def test_the_tiny_twin_runs_without_pydantic_and_its_files_read_back_under_the_strict_schema(tmp_path):
    from spt_theory.evidence import correctness, lra_schema, schema

    exported = tmp_path / "OUT"
    done = _twin("--tiny", str(tmp_path / "run"), "--export", str(exported), cwd=tmp_path, env=_env(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "preflight: ok" in done.stderr and "Traceback" not in done.stderr
    files = sorted(p.name for p in exported.iterdir())
    assert files == [".made-here", "group-0.json", "log.txt", "summary.json"]
    summary = schema.parse((exported / "summary.json").read_text(), lra_schema.TwinSummary, "summary.json")
    group = schema.parse((exported / "group-0.json").read_text(), lra_schema.TwinGroup, "group-0.json")
    assert summary["complete"] and summary["cut"] is None and summary["tiny"]
    assert set(summary["phases"]) >= {"start", "data", "bench", "train", "end"} and summary["phases"]["end"] < 540
    bench = summary["bench"]
    assert set(bench["model_steps_per_second"]) == {"default", "math"} and bench["attention"] in ("default", "math")
    assert bench["steps_timed"] == TINY.bench_steps
    runs = group["runs"]
    assert sorted((r["arm"], r["seed"]) for r in runs) == sorted((a, s) for a in ARMS for s in (500, 501))
    for r in runs:
        assert r["complete"] and r["curve"][-1]["step"] == TINY.steps == r["steps"]
        bits = correctness.decode(r["curve"][-1]["test_correct"])
        assert len(bits) == TINY.n_test and bits.mean() == r["test_accuracy"] == r["curve"][-1]["test_accuracy"]
    assert (tmp_path / "run" / "data.npz").is_file()


@pytest.mark.slow
@needs_bash
def test_the_preflight_names_every_missing_module_in_one_line(tmp_path):
    env = _env(tmp_path)
    (tmp_path / "no-pydantic" / "sitecustomize.py").write_text(BLOCK_PYDANTIC.replace('"pydantic", ', '"numpy", '))
    done = _twin("--tiny", str(tmp_path / "run"), cwd=tmp_path, env=env)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "numpy" in lines[0], done.stderr
    assert not (tmp_path / "run").exists()
    ok = subprocess.run([sys.executable, "-m", "spt_theory.lra.gpu.preflight"], capture_output=True, text=True,
                        env={**_env(tmp_path / "b" if (tmp_path / "b").mkdir() is None else tmp_path),
                             "PYTHONPATH": f"{tmp_path / 'b' / 'no-pydantic'}:{REPO}"}, cwd=tmp_path)
    assert ok.returncode == 0 and "preflight: ok" in ok.stderr


# ------------------------------------------------------------------------------ the deadline
@pytest.mark.slow
@needs_bash
def test_the_dry_run_for_a_540_s_wall_ends_inside_it_with_the_setup_counted(tmp_path):
    done = _twin("--dry-run", "--wall", "540", cwd=tmp_path, env=_env(tmp_path))
    assert done.returncode == 0, done.stderr
    ends = re.search(r"ends at ([\d.]+) s of 540 s: inside", done.stdout)
    assert ends and float(ends.group(1)) <= 540 - 15, done.stdout
    for phase in ("start", "data", "bench"):
        assert re.search(rf"{phase} [\d.]+ s", done.stdout), phase
    p = twin.dry_run(twin.sizes_of("contour6"), 540, carried=False)
    assert p["inside"] and len(p["seeds"]) == 8 and p["steps"] >= 10000
    assert sum(p["phases"].values()) + p["total_seconds"] == pytest.approx(p["ends"])
    short = _twin("--dry-run", "--wall", "540", "--setting", "short", cwd=tmp_path, env=_env(tmp_path))
    assert short.returncode == 0 and "contour 3 balanced" in short.stdout and "inside" in short.stdout


def test_a_wall_too_short_for_the_floor_is_not_inside_and_exits_2(capsys):
    assert twin.main(["--dry-run", "--wall", "60"]) == 2
    assert "NOT INSIDE" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["inf", "nan", "0", "-5"])
def test_wall_must_be_finite_and_positive(value, capsys):
    with pytest.raises(SystemExit) as stop:
        twin.main(["--dry-run", "--wall", value])
    assert stop.value.code == 2 and "--wall" in capsys.readouterr().err


@pytest.mark.slow
def test_a_run_past_its_deadline_is_cut_at_an_evaluation_with_the_step_recorded(tmp_path, monkeypatch):
    """The plan fits, then the first evaluation finds that the next would end past the deadline:
    the run stops there, status 3, the evaluation written, cut and the step reached recorded."""
    monkeypatch.setattr(twin_train.Deadline, "left", lambda self: 0.0)  # the plan fits; the evaluations are late
    out = tmp_path / "OUT"
    assert twin.main(["--tiny", str(tmp_path / "run"), "--export", str(out)]) == 3
    summary = json.loads((out / "summary.json").read_text())
    group = json.loads((out / "group-0.json").read_text())
    cut = summary["cut"]
    assert not summary["complete"] and cut["phase"] == "supervised" and cut["step"] < cut["planned"] == TINY.steps
    assert group["cut"] == cut and all(not r["complete"] for r in group["runs"])
    assert all(r["curve"][-1]["step"] == cut["step"] + r["offset"] for r in group["runs"])


@pytest.mark.slow
def test_started_is_honoured_the_time_before_the_twin_counts_against_the_wall(tmp_path, capsys):
    """Started 530 s ago with a 540-s wall: the deadline check before the data finds no time left
    to train in; nothing is generated or trained, the summary (written at the start) says why."""
    assert twin.main(["--tiny", str(tmp_path / "run"), "--started", str(time.time() - 530)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: the deadline check before the data"), err
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert "deadline check before the data" in summary["refused"] and summary["phases"]["start"] >= 530
    assert "data" not in summary and "plan" not in summary and not summary["complete"]
    assert not (tmp_path / "run" / "group-0.json").exists() and not (tmp_path / "run" / "data.npz").exists()


# ------------------------------------------------------------------------------ files
def test_nothing_is_written_through_a_link(tmp_path):
    users = tmp_path / "users-file.txt"
    users.write_text("the user's own text\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / "log.txt").symlink_to(users)
    assert twin.main(["--tiny", str(run)]) == 2
    assert users.read_text() == "the user's own text\n" and (run / "log.txt").is_symlink()
    linked = tmp_path / "linked-run"
    linked.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    assert twin.main(["--tiny", str(linked)]) == 2 and not (tmp_path / "elsewhere").exists()
    # a link appearing at a file's name while the run writes is replaced, not written through
    output = twin.Output(tmp_path / "o", None)
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "log.txt").symlink_to(users)
    output.say("a line")
    assert users.read_text() == "the user's own text\n" and not (tmp_path / "o" / "log.txt").is_symlink()


@pytest.mark.slow
def test_a_rerun_into_its_own_folder_is_refused_then_restarts_or_reuses_its_data_by_a_flag(tmp_path, capsys):
    run = tmp_path / "run"
    assert twin.main(["--tiny", str(run)]) == 0
    fingerprint = json.loads((run / "summary.json").read_text())["data"]["fingerprint"]
    capsys.readouterr()
    assert twin.main(["--tiny", str(run)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--restart" in err[0] and "--reuse-data" in err[0]
    assert twin.main(["--tiny", str(run), "--reuse-data"]) == 0
    summary = json.loads((run / "summary.json").read_text())
    assert summary["data"]["source"] == "reused from the run folder" and summary["data"]["fingerprint"] == fingerprint
    assert twin.main(["--tiny", str(run), "--restart"]) == 0
    assert json.loads((run / "summary.json").read_text())["data"]["source"] == "generated here"


@pytest.mark.slow
@needs_bash
def test_sigint_exits_130_with_a_true_line(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "spt_theory.lra.gpu.twin", "--tiny", str(tmp_path / "run"),
                             "--workers", "1"], stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            env={**_env(tmp_path, False), "PYTHONPATH": str(REPO)})
    deadline = time.time() + 300
    while not (tmp_path / "run" / "log.txt").exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=300)[1]
    assert proc.returncode == 130, err
    line = err.strip().splitlines()[-1]
    assert line.startswith("interrupted by SIGINT") and "cannot resume" in line and "--restart" in line
    assert "Traceback" not in err
    assert twin.main(["--tiny", str(tmp_path / "run"), "--restart"]) == 0  # what the line says works


def _npz(path: Path, **changes):
    sizes = TINY
    rng = np.random.default_rng(0)
    data = {f"x_{s}": rng.integers(0, 256, (n, 256), dtype=np.uint8) for s, n in
            (("train", sizes.n_train), ("val", sizes.n_val), ("test", sizes.n_test))}
    data |= {f"y_{s}": rng.integers(0, 2, len(data[f"x_{s}"])) for s in ("train", "val", "test")}
    data["settings"] = np.array(json.dumps(twin.data_settings(sizes), sort_keys=True))
    for key, value in changes.items():
        if value is None:
            data.pop(key)
        else:
            data[key] = value
    np.savez(path, **data)
    return path


@pytest.mark.parametrize("fault, words", [
    ({"x_train": np.zeros(48 * 256, dtype=np.uint8)}, "x_train is uint8 (12288,)"),
    ({"y_val": np.array([0, 7] * 8)}, "y_val holds labels [7] outside 0..1"),
    ({"y_train": np.zeros(10, dtype=np.int64)}, "x_train has 48 images, y_train 10 labels"),
    ({"x_test": None}, "x_test or y_test missing"),
    ({"settings": None}, "settings missing"),
    ({"settings": np.array(json.dumps({"style": "other"}))}, "made for"),
    ({"y_test": np.zeros(32, dtype=np.float32)}, "y_test is float32"),
])
def test_every_data_field_is_checked_in_one_line_before_anything_is_made(fault, words, tmp_path, capsys):
    path = _npz(tmp_path / "data.npz", **fault)
    assert twin.main(["--tiny", str(tmp_path / "run"), "--data", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0] and str(path) in err[0], err
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_a_made_data_set_is_carried_and_trained_on(tmp_path):
    path = tmp_path / "twin-data.npz"
    assert twin.main(["--tiny", "--make-data", str(path), "--workers", "1"]) == 0
    assert twin.main(["--tiny", str(tmp_path / "run"), "--data", str(path)]) == 0
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["data"]["source"] == "carried: twin-data.npz" and not (tmp_path / "run" / "data.npz").exists()


@pytest.mark.parametrize("case", ["export_is_a_file", "export_holds_a_users_file", "export_inside_run",
                                  "run_under_a_file"])
def test_the_folders_are_checked_before_anything_is_made_or_wiped(case, tmp_path, capsys):
    run = tmp_path / "run"  # an earlier run, to be restarted: never wiped by a refusal
    run.mkdir()
    for name, text in ((twin.OWNED, "made by spt-theory"), ("summary.json", "{}"), ("log.txt", "a line\n")):
        (run / name).write_text(text)
    before = sorted(p.name for p in run.iterdir())
    stamp = (run / "summary.json").read_bytes()
    export = tmp_path / "OUT"
    target = run
    if case == "export_is_a_file":
        export.write_text("x")
    elif case == "export_holds_a_users_file":
        export.mkdir()
        (export / "notes.txt").write_text("mine")
    elif case == "export_inside_run":
        export = run / "OUT"
    else:
        (tmp_path / "afile").write_text("x")
        target = tmp_path / "afile" / "run"
    capsys.readouterr()
    assert twin.main(["--tiny", str(target), "--restart", "--export", str(export)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert sorted(p.name for p in run.iterdir()) == before and (run / "summary.json").read_bytes() == stamp


def test_the_short_settings_data_are_balanced_contour_3_and_not_taken_for_contour_6(tmp_path, capsys):
    path = tmp_path / "short.npz"
    assert twin.main(["--tiny", "--setting", "short", "--make-data", str(path), "--workers", "1"]) == 0
    with np.load(path) as arrays:
        settings = json.loads(str(arrays["settings"]))
    assert settings["style"]["contour_length"] == 3 and settings["style"]["balanced"] is True
    capsys.readouterr()
    assert twin.main(["--tiny", str(tmp_path / "run"), "--data", str(path)]) == 2  # contour6 is the default
    assert "made for" in capsys.readouterr().err and not (tmp_path / "run").exists()


# ------------------------------------------------------------------------------ issue 57: a run that always comes back
SLOW_STEPS = '''
import importlib.machinery, sys, time
class _SlowSteps:
    """Every Stacked.step sleeps {delay} s first: a tiny run that lasts long enough to be signalled."""
    def find_spec(self, name, path=None, target=None):
        if name != "spt_theory.lra.gpu.stacked":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            step = module.Stacked.step
            def slow(self, *args, **kwargs):
                time.sleep({delay})
                return step(self, *args, **kwargs)
            module.Stacked.step = slow
        spec.loader.exec_module = exec_module
        return spec
sys.meta_path.insert(0, _SlowSteps())
'''
"""Appended to the test's ``sitecustomize``: the twin's steps slowed in the subprocess."""


def _evaluated(out: Path) -> bool:
    """Whether ``out/group-0.json`` holds an evaluation (it holds every run from the training's start)."""
    try:
        return any(r["curve"] for r in json.loads((out / "group-0.json").read_text())["runs"])
    except (OSError, ValueError, KeyError):
        return False


def _wait_for_an_evaluation(out: Path, proc: subprocess.Popen, seconds: float = 300) -> None:
    deadline = time.time() + seconds
    while not _evaluated(out) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert _evaluated(out), f"no evaluation in {out} (the run ended with {proc.poll()})"


@pytest.mark.slow
@needs_bash
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_script_stops_the_run_which_records_it_with_every_evaluation_done(signum, tmp_path):
    """The signal reaches the run (the script execs it): SIGINT is no longer ignored (the run went on
    to complete, exit 0) and SIGTERM no longer leaves the run going on alone (the script exited 143
    at once while the run wrote complete: true ~27 s later).  The run stops, records ``stopped`` in
    summary.json and group-0.json with the evaluation already written, exits 130 / 143 with one
    line, and leaves no process behind; its files read back as a stopped run."""
    from spt_theory.evidence import lra_schema, schema
    from spt_theory.lra.gpu import promote

    env = _env(tmp_path)
    (tmp_path / "no-pydantic" / "sitecustomize.py").write_text(BLOCK_PYDANTIC + SLOW_STEPS.replace("{delay}", "0.4"))
    out = tmp_path / "OUT"
    proc = subprocess.Popen(["bash", str(REPO / "scripts/lra_gpu_confirm.sh"), "--tiny", str(tmp_path / "run"),
                             "--export", str(out), "--workers", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=tmp_path, start_new_session=True)
    try:
        _wait_for_an_evaluation(out, proc)  # the first evaluation is written; 3 steps and 2 evaluations to go
        proc.send_signal(signum)
        err = proc.communicate(timeout=120)[1]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == {signal.SIGINT: 130, signal.SIGTERM: 143}[signum], err[-3000:]
    assert err.strip().splitlines()[-1].startswith(f"interrupted by {signum.name}") and "Traceback" not in err
    time.sleep(0.5)
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)  # nothing of the run goes on
    summary = json.loads((out / "summary.json").read_text())
    group = json.loads((out / "group-0.json").read_text())
    stopped = summary["stopped"]
    assert not summary["complete"] and stopped["by"] == signum.name and stopped["phase"] == "train"
    assert stopped["step"] >= 4 and stopped["planned"] == TINY.steps and group["stopped"] == stopped
    assert all(r["curve"] and r["curve"][-1]["step"] - r["offset"] == stopped["step"] for r in group["runs"])
    schema.parse((out / "summary.json").read_text(), lra_schema.TwinSummary, "summary.json")
    found = promote.collect(out, strict=False)
    assert found["stopped"] == stopped and not found["complete"]


@pytest.mark.slow
def test_an_error_mid_run_is_recorded_with_every_evaluation_done_exit_1_one_line(tmp_path, monkeypatch, capsys):
    """A CUDA error at the second evaluation (the bench evaluates once: calls 1-2): the run records
    ``stopped`` (by error, the step of the last evaluation written), one ``error:`` line, exit 1."""
    from spt_theory.lra.gpu import promote

    real, calls = Stacked.correct, []

    def failing(self, x, y, *args, **kwargs):
        calls.append(1)
        if len(calls) == 5:
            raise RuntimeError("CUDA error: an illegal memory access was encountered\nmore lines")
        return real(self, x, y, *args, **kwargs)

    monkeypatch.setattr(Stacked, "correct", failing)
    out = tmp_path / "OUT"
    assert twin.main(["--tiny", str(tmp_path / "run"), "--export", str(out), "--workers", "1"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if line.startswith("error:")]
    assert errors == [err[-1]] and "Traceback" not in "".join(err)
    assert err[-1].startswith("error: the run stopped in its train phase: RuntimeError: CUDA error")
    summary = json.loads((out / "summary.json").read_text())
    stopped = summary["stopped"]
    assert stopped["by"] == "error" and "illegal memory access" in stopped["why"] and stopped["step"] == 4
    assert summary["phase"] == "train" and not summary["complete"]
    found = promote.collect(out, strict=False)
    assert all([p["step"] - r["offset"] for p in r["curve"]] == [4] for r in found["runs"])


@pytest.mark.slow
def test_a_cut_in_pretraining_writes_every_run_and_reads_back(tmp_path, monkeypatch):
    """Cut at the first SPT epoch's end (8 images, batch 4: 2 steps an epoch, 3 SPT steps): the
    group holds every arm x seed with no evaluation (it held ``runs: []``, which promotion
    refused), and reads back as a pretraining cut."""
    from spt_theory.lra.gpu import promote

    small = replace(TINY, n_train=8)
    monkeypatch.setattr(twin, "sizes_of", lambda setting, tiny=False: replace(small, setting=setting))
    monkeypatch.setattr(twin_train.Deadline, "left", lambda self: 0.0)
    out = tmp_path / "OUT"
    assert twin.main(["--tiny", str(tmp_path / "run"), "--export", str(out), "--workers", "1"]) == 3
    group = json.loads((out / "group-0.json").read_text())
    assert group["cut"]["phase"] == "pretraining" and group["cut"]["step"] == 2
    assert sorted((r["arm"], r["seed"]) for r in group["runs"]) == sorted((a, s) for a in ARMS for s in (500, 501))
    assert all(r["curve"] == [] and not r["complete"] for r in group["runs"])
    found = promote.collect(out, strict=False)
    assert found["cut"]["phase"] == "pretraining" and len(found["runs"]) == 10


@pytest.mark.slow
def test_a_diverged_member_is_recorded_as_diverged_and_the_run_goes_on(tmp_path, monkeypatch):
    """Member 3 (spt, seed 501) gets NaN parameters after its second supervised step: its train
    loss is written null from the first evaluation on (``diverged``), the file is strict JSON (it
    held NaN, which voided the whole run at promotion), every other member trains on unharmed."""
    from spt_theory.evidence.strict import strict_json
    from spt_theory.lra.gpu import promote

    real = Stacked.step

    def poisoning(self, x_train, y_train):
        losses = real(self, x_train, y_train)
        if self.objective == "supervised" and self.members == len(ARMS) * 2 and self.step_count == 2:
            with torch.no_grad():
                self.theta[3] = float("nan")
        return losses

    monkeypatch.setattr(Stacked, "step", poisoning)
    out = tmp_path / "OUT"
    assert twin.main(["--tiny", str(tmp_path / "run"), "--export", str(out), "--workers", "1"]) == 0
    text = (out / "group-0.json").read_text()
    assert "NaN" not in text
    group = strict_json(text, "group-0.json")
    runs = {(r["arm"], r["seed"]): r for r in group["runs"]}
    bad = runs["spt", 501]
    assert bad["diverged"] == bad["curve"][0]["step"] and all(p["train_loss"] is None for p in bad["curve"])
    others = [r for key, r in runs.items() if key != ("spt", 501)]
    assert all("diverged" not in r and all(isinstance(p["train_loss"], float) for p in r["curve"]) for r in others)
    assert all(r["complete"] for r in group["runs"])
    found = promote.collect(out, strict=False)
    assert found["complete"]


def test_the_data_are_made_before_cuda_starts(tmp_path, monkeypatch):
    """The data's processes are forked before the device is touched (device_info starts CUDA), and
    torch's availability check is the NVML one (no CUDA context in the parent)."""
    order: list[str] = []
    real_generate, real_info = twin.generate, twin.device_info

    def generate(*args, **kwargs):
        order.append("data")
        return real_generate(*args, **kwargs)

    def device_info(device):
        order.append("device")
        return real_info(device)

    monkeypatch.setattr(twin, "generate", generate)
    monkeypatch.setattr(twin, "device_info", device_info)
    monkeypatch.setattr(twin_train, "bench", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("stop here")))
    monkeypatch.setenv("PYTORCH_NVML_BASED_CUDA_CHECK", "unset")  # restored (to absent) after the test
    monkeypatch.delenv("PYTORCH_NVML_BASED_CUDA_CHECK")
    assert twin.main(["--tiny", str(tmp_path / "run"), "--workers", "1"]) == 1
    assert order == ["data", "device"] and os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK") == "1"
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["stopped"]["phase"] == "bench" and summary["stopped"]["planned"] is None


def _sleepy_images(job):
    time.sleep(60)


@pytest.mark.slow
def test_the_data_pool_is_timed_out_and_leaves_no_process(monkeypatch):
    import multiprocessing

    monkeypatch.setattr(twin_data, "_images", _sleepy_images)
    start = time.time()
    with pytest.raises(RuntimeError, match="not generated in 1 s"):
        twin_data.generate(TINY, 2, timeout=1.0)
    assert time.time() - start < 30
    deadline = time.time() + 10
    while multiprocessing.active_children() and time.time() < deadline:
        time.sleep(0.1)
    assert not multiprocessing.active_children()


@pytest.mark.parametrize("how", ["refused_at_the_check", "fails_while_made"])
def test_a_read_only_export_folder_leaves_no_run_folder(how, tmp_path, monkeypatch, capsys):
    """A read-only ``$OUT``: refused in one line before anything is made (os.access), or, when the
    system refuses only at the write, the run folder this start made is removed again (it stayed,
    with its marker)."""
    from spt_theory.util.files import storage_error

    export = tmp_path / "OUT"
    export.mkdir()
    if how == "refused_at_the_check":
        real_access = os.access
        monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if Path(path) == export
                            else real_access(path, mode, **kw))
    else:
        real_write = twin_folders.atomic_write

        def read_only(path, write):
            if Path(path).parent == export:
                raise storage_error(path, OSError(30, "Read-only file system"))
            return real_write(path, write)

        monkeypatch.setattr(twin_folders, "atomic_write", read_only)
    run = tmp_path / "runs" / "gpu-twin"
    assert twin.main(["--tiny", str(run), "--export", str(export)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and str(export) in err[0], err
    assert not run.exists() and not (tmp_path / "runs").exists() and list(export.iterdir()) == []


@pytest.mark.slow
@needs_bash
def test_the_prepared_command_of_the_docs_can_be_rerun_on_a_warm_machine(tmp_path):
    """docs/gpu.md's data line and prepared command, at tiny sizes: the data made, then the command
    run twice in one checkout (a warm machine): the second start is not refused (a fresh run folder
    each start; it was refused: the run folder held the first run)."""
    docs = (REPO / "docs" / "gpu.md").read_text()
    make = re.search(r"^bash scripts/lra_gpu_confirm.sh --make-data \S+ --setting short$", docs, re.M).group(0)
    command = re.search(r"^command:\s+(.+)$", docs, re.M).group(1).strip()
    carry = json.loads(re.search(r"^carry:\s+(.+)$", docs, re.M).group(1))
    assert command.startswith("bash scripts/lra_gpu_confirm.sh ") and "--setting short" in command
    assert [f"--data {path}" in command and path in make for path in carry] == [True]
    here = f"bash {REPO}/scripts/"
    made = subprocess.run(["bash", "-c", make.replace("bash scripts/", here) + " --tiny --workers 1"],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path, env=_env(tmp_path))
    assert made.returncode == 0 and (tmp_path / carry[0]).is_file(), made.stderr[-3000:]
    tiny = command.replace("bash scripts/", here).replace("--wall 540", "--tiny --workers 1")
    for attempt in range(2):
        out = tmp_path / f"OUT{attempt}"
        out.mkdir()
        done = subprocess.run(["bash", "-c", tiny], capture_output=True, text=True, timeout=600, cwd=tmp_path,
                              env={**_env(tmp_path), "OUT": str(out)})
        assert done.returncode == 0, done.stderr[-3000:]
        assert json.loads((out / "summary.json").read_text())["complete"]
        time.sleep(1.1)  # a start in a later second, as a rerun is


@pytest.mark.slow
@needs_bash
def test_the_sweeps_mode_is_gone_in_one_line(tmp_path):
    done = _twin("--sweeps", "--dry-run", cwd=tmp_path, env=_env(tmp_path))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "--sweeps" in lines[0] and lines[0].startswith("error:")


def test_data_that_are_not_the_registered_ones_are_refused_before_the_bench(tmp_path, monkeypatch, capsys):
    """A full-size run (here: tiny data posing as one, CUDA said to be there) whose data's fingerprint
    is not the setting's registered one is refused after the data, before the bench: exit 2, one
    line, the summary says why; nothing trained."""
    monkeypatch.setattr(twin, "sizes_of", lambda setting, tiny=False: replace(TINY, setting=setting, tiny=False))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(twin_train, "bench", lambda *a, **k: pytest.fail("the bench ran"))
    assert twin.main([str(tmp_path / "run"), "--setting", "short", "--workers", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if line.startswith("error:")]
    assert errors == [err[-1]] and "not the registered short data's" in err[-1] and "--make-data" in err[-1]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert "not the registered" in summary["refused"] and "bench" not in summary
    assert not (tmp_path / "run" / "group-0.json").exists()


@pytest.mark.slow
@needs_bash
def test_a_run_killed_without_a_word_reads_back_as_stopped_at_its_last_evaluation(tmp_path):
    """SIGKILL (the lease's end, the host out of memory) records nothing: the files are as of the
    last write, each whole, and promotion reads them as stopped there (``by: killed``) instead of
    refusing "complete false with cut false"."""
    from spt_theory.lra.gpu import promote

    env = _env(tmp_path)
    (tmp_path / "no-pydantic" / "sitecustomize.py").write_text(BLOCK_PYDANTIC + SLOW_STEPS.replace("{delay}", "0.4"))
    out = tmp_path / "OUT"
    proc = subprocess.Popen(["bash", str(REPO / "scripts/lra_gpu_confirm.sh"), "--tiny", str(tmp_path / "run"),
                             "--export", str(out), "--workers", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=tmp_path, start_new_session=True)
    try:
        _wait_for_an_evaluation(out, proc)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    found = promote.collect(out, strict=False)
    stopped = found["stopped"]
    assert stopped["by"] == "killed" and stopped["step"] >= 4 and stopped["phase"] == "train"
    assert not found["complete"] and all(r["curve"] for r in found["runs"])


@pytest.mark.slow
def test_a_run_killed_in_pretraining_reads_back_with_every_run_and_no_evaluation(tmp_path, monkeypatch):
    """group-0.json holds every arm x seed from the training's start: a kill before the first
    evaluation (here: the process dies in pretraining, nothing recorded) still reads back."""
    from spt_theory.lra.gpu import promote

    real = Stacked.step

    def dying(self, *args, **kwargs):
        if self.objective == "spt" and self.step_count == 1 and (tmp_path / "OUT" / "group-0.json").exists():
            raise SystemExit(137)  # as abrupt as a kill for the files: nothing recorded after it
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Stacked, "step", dying)
    with pytest.raises(SystemExit):
        twin.main(["--tiny", str(tmp_path / "run"), "--export", str(tmp_path / "OUT"), "--workers", "1"])
    found = promote.collect(tmp_path / "OUT", strict=False)
    assert found["stopped"]["by"] == "killed" and found["stopped"]["step"] == 0
    assert len(found["runs"]) == 10 and all(r["curve"] == [] for r in found["runs"])
