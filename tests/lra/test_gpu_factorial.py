"""The pooling factorial on the GPU twin (issue 56 item 7; docs/preregistration/2026-12-05-gpu-pooling-factorial.md):
pooling as a property of each stacked member (a max- or mean-pooled member computes what
``core.model.Encoder`` with that pooling computes), the attention probe, the design bound to its
registration (sizes, seeds, arms, steps, evaluations, the CPU factorial's data), the dry run inside
540 s, and the pipeline at tiny size on the CPU end to end: a run, a SIGTERM mid-run that leaves a
promotable stopped run, promotion, and the claims' judges; a full-size result promoted strictly and
judged by the registered rules, and forged ones refused."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers import REPO

from spt_theory.checks import gpu_factorial
from spt_theory.claims import records
from spt_theory.claims.registry import REGISTRY, Context
from spt_theory.core.model import Encoder
from spt_theory.evidence import EvidenceError, correctness
from spt_theory.lra.gpu import promote, twin
from spt_theory.lra.gpu.stacked import Stacked, pixels
from spt_theory.lra.gpu.twin_conform import conform
from spt_theory.lra.gpu.twin_plan import (
    DECIDE_DATA,
    FACTORIAL,
    FINGERPRINTS,
    PRETRAINED,
    TINY,
    assumed_rates,
    base_arm,
    data_settings,
    dry_run,
    plan,
    run_steps,
)
from spt_theory.lra.gpu.twin_train import model_config

FACTORIAL_CLAIMS = ("G6f", "G1f", "G1fr", "G9f", "G4f", "G3f", "G2f", "G8f")
POOLING_TOLERANCE = 1e-10
"""float64: the stacked member and the plain Encoder sum in different orders (batched products,
the fused attention against the Encoder's own), so logits and gradients agree to rounding
(about 1e-15 relative); 1e-10 absolute leaves room and is far below any real difference."""


# ------------------------------------------------------------------------------ pooling per member
@pytest.mark.parametrize("poolings", [("max", "max"), ("mean", "mean"), ("max", "mean", "mean", "max")])
def test_a_stacked_member_computes_what_the_encoder_with_its_pooling_computes(poolings):
    """Members of one stacked model with their own readout (mean or max over the positions) against
    core.model.Encoder with that pooling on the same weights: logits and every gradient agree within
    POOLING_TOLERANCE, for both poolings, alone and mixed in one ensemble."""
    torch.manual_seed(0)
    sizes = TINY
    models = []
    for i, pooling in enumerate(poolings):
        torch.manual_seed(10 + i)
        models.append(Encoder(model_config(sizes, pooling)).double())
    ens = Stacked(models, list(range(len(models))), "supervised", 1e-3, n_train=8, batch=4, dtype=torch.float64,
                  fixed=[("decoder",)] * len(models))
    x = torch.randint(0, 256, (len(models), 4, 256), dtype=torch.uint8)
    y = torch.randint(0, 2, (len(models), 4))
    losses = ens.losses(x, y, None)
    losses.sum().backward()
    offsets, at = {}, 0
    for name, shape in ens.layout:
        offsets[name] = (at, shape)
        at += int(np.prod(shape))
    for i, model in enumerate(models):
        assert model.cfg.pooling == poolings[i] and ens.poolings[i] == poolings[i]
        logits = model(pixels(x[i], dtype=torch.float64))
        stacked = ens.logits(pixels(x, dtype=torch.float64), ens.views())[i]
        assert (logits - stacked).abs().max() < POOLING_TOLERANCE
        loss = F.cross_entropy(logits, y[i])
        assert abs(float(losses[i].detach()) - float(loss.detach())) < POOLING_TOLERANCE
        loss.backward()
        for name, p in model.named_parameters():
            if name.startswith("decoder"):
                continue
            start, shape = offsets[name]
            stacked_grad = ens.theta.grad[i, start:start + int(np.prod(shape))].view(shape)
            assert (stacked_grad - p.grad).abs().max() < POOLING_TOLERANCE, name


def test_a_max_pooled_member_s_label_gradient_reaches_only_the_argmax_positions():
    """max pooling sends the label gradient to the argmax positions (the mechanism the factorial
    tests): the pooled readout's gradient is 0 at every other position, as Encoder.pool's."""
    torch.manual_seed(1)
    ens = Stacked([Encoder(model_config(TINY, "max")).double()], [0], "supervised", 1e-3, n_train=8, batch=4,
                  dtype=torch.float64)
    h = torch.randn(1, 2, 5, TINY.d_model, dtype=torch.float64, requires_grad=True)
    ens.pool(h).sum().backward()
    assert int((h.grad != 0).sum()) == 2 * TINY.d_model  # one position per (example, feature)


def test_the_attention_probe_is_the_cpu_probe_s_true_2d_neighbour_ratio():
    """Stacked.grid2d_ratios against the same quantity from the Encoder's own attention pattern."""
    from spt_theory.core.inits import grid2d_neighbours, grid2d_proximity_init

    torch.manual_seed(2)
    models = [Encoder(model_config(TINY, p)) for p in ("mean", "max")]
    grid2d_proximity_init(models[1], side=16, steps=5)
    ens = Stacked(models, [0, 1], "supervised", 1e-3, n_train=8, batch=4)
    x = torch.randint(0, 256, (6, 256), dtype=torch.uint8)
    near = grid2d_neighbours(16)
    for i, model in enumerate(models):
        _, cache = model.run_with_cache(pixels(x))
        pattern = cache["blocks.0.attn.pattern"].detach().double()
        expected = float((pattern * near).sum()) / pattern.shape[1] / (6 * 256) / (float(near.sum()) / 256 ** 2)
        assert abs(ens.grid2d_ratios(x, [i])[0] - expected) < 1e-4 * expected


# ------------------------------------------------------------------------------ the design and its registration
def test_the_factorial_plan_is_its_registration_and_fits_540_seconds():
    p = dry_run(FACTORIAL, 540.0, carried=True)
    assert p["inside"] and p["fits"] and p["shrunk"] == [] and p["ends"] < 540 - 15
    assert p["seeds"] == list(range(700, 708)) and len(p["arms"]) == 10
    assert p["poolings"] == {"mean": 12000, "max": 8000} and p["spt_steps"] == 3000 and p["steps"] == 12000
    assert p["eval_steps"] == list(range(500, 12001, 500))
    assert run_steps(p, "max.spt") == 8000 and run_steps(p, "mean.frozen_qk") == 12000
    assert "steps per arm: mean pooling 12000, max pooling 8000" in twin.format_plan(p)
    doc = (REPO / FACTORIAL.registered).read_text()
    for words in ("700-707", "12,000", "8,000", "C = 8,000", "3,000", "09d407175fc401dd", FINGERPRINTS["factorial"],
                  "runs **first**", "G6f", "G1fr", "G9f", "G2f", "G8f"):
        assert words in doc, words
    assert FACTORIAL.registered in records.DOCUMENTS
    assert "docs/preregistration/2026-12-04-gpu-twin.md" in records.DOCUMENTS  # beside, not replacing


def test_the_factorial_s_data_are_the_cpu_factorial_s_registered_data():
    from spt_theory.lra import designs

    assert {k: DECIDE_DATA[k] for k in ("generator", "settings")} == designs.EXPERIMENTS["fmean"].source
    assert DECIDE_DATA["fingerprint"] == designs.EXPERIMENTS["fmean"].fingerprint
    assert DECIDE_DATA["fingerprint"] == designs.EXPERIMENTS["fmax"].fingerprint
    assert DECIDE_DATA["fingerprint"] == "09d407175fc401dd"


def test_the_factorial_never_shrinks_its_steps_it_drops_arms_from_both_poolings():
    rates = assumed_rates(FACTORIAL)
    full = plan(FACTORIAL, rates, 1e9)["total_seconds"]
    p = plan(FACTORIAL, rates, 0.8 * full)
    assert p["steps"] == 12000 and "mean.frozen_qk" not in p["arms"] and "max.frozen_qk" not in p["arms"]
    assert conform(_found(p)) == []
    tight = plan(FACTORIAL, rates, 1.0)
    assert not tight["fits"] and sorted(base_arm(a) for a in tight["arms"]) == ["scratch", "scratch", "spt", "spt"]


def _found(p: dict) -> dict:
    p = json.loads(json.dumps(p))  # as the evidence holds it
    return {"registered": FACTORIAL.registered, "tiny": False, "setting": "factorial", "plan": p,
            "data": {"fingerprint": FINGERPRINTS["factorial"], "n_train": 16000, "n_val": 2000, "n_test": 10000,
                     "settings": data_settings(FACTORIAL)},
            "config": {"d_model": 64, "heads": 4, "ff": 128, "layers": 1, "pooling": ["mean", "max"],
                       "head": "linear"}}


@pytest.mark.parametrize("forge, field", [
    (lambda f: f["plan"].update(seeds=list(range(600, 608))), "plan.seeds"),
    (lambda f: f["data"].update(fingerprint=FINGERPRINTS["short"]), "data.fingerprint"),
    (lambda f: f["plan"].update(poolings={"mean": 12000, "max": 12000}), "plan.poolings"),
    (lambda f: f.update(registered="docs/preregistration/2026-12-04-gpu-twin.md"), "registered"),
    (lambda f: f["config"].update(pooling="mean"), "config.pooling"),
    (lambda f: f["plan"].update(arms=f["plan"]["arms"][:-1]), "plan.arms"),
])
def test_a_factorial_result_that_is_not_its_registration_is_refused_naming_the_field(forge, field):
    found = _found(plan(FACTORIAL, assumed_rates(FACTORIAL), 1e9))
    assert conform(found) == []
    forge(found)
    assert conform(found) and conform(found)[0].startswith(f"field {field}:"), conform(found)


# ------------------------------------------------------------------------------ tiny, end to end on the CPU
def _judge_all(found: dict, path: Path) -> dict:
    return {c: gpu_factorial.judge(found, path, c) for c in FACTORIAL_CLAIMS}


@pytest.mark.slow
def test_a_tiny_factorial_runs_promotes_and_is_judged(tmp_path):
    run, out = tmp_path / "run", tmp_path / "OUT"
    assert twin.main(["--tiny", str(run), "--setting", "factorial", "--export", str(out), "--workers", "1"]) == 0
    found = promote.collect(out, strict=False)
    assert found["complete"] and found["setting"] == "factorial" and found["config"]["pooling"] == ["mean", "max"]
    p = found["plan"]
    for r in found["runs"]:
        offset = p["spt_steps"] if base_arm(r["arm"]) in PRETRAINED else 0
        assert r["steps"] == run_steps(p, r["arm"]) and r["offset"] == offset and r["complete"]
        assert [q["step"] for q in r["curve"]] == [e + offset for e in p["eval_steps"] if e <= r["steps"] - offset]
        assert ("grid2d_ratio" in r) == (base_arm(r["arm"]) == "scratch")
        assert ("spt_grid2d_ratio" in r) == (base_arm(r["arm"]) == "spt")
    judged = _judge_all(found, out)
    assert all(v[0] in ("PASS", "FAIL", "INCONCLUSIVE") for v in judged.values())
    assert conform(found)[0].startswith("field tiny:")  # a tiny run decides nothing


@pytest.mark.slow
def test_a_sigterm_mid_factorial_leaves_a_promotable_stopped_run_read_as_a_pilot(tmp_path):
    from test_gpu_twin import BLOCK_PYDANTIC, SLOW_STEPS, _env, _wait_for_an_evaluation

    env = _env(tmp_path)
    (tmp_path / "no-pydantic" / "sitecustomize.py").write_text(BLOCK_PYDANTIC + SLOW_STEPS.replace("{delay}", "0.4"))
    out = tmp_path / "OUT"
    proc = subprocess.Popen(["bash", str(REPO / "scripts/lra_gpu_confirm.sh"), "--tiny", str(tmp_path / "run"),
                             "--setting", "factorial", "--export", str(out), "--workers", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
                            start_new_session=True)
    try:
        _wait_for_an_evaluation(out, proc)
        proc.send_signal(signal.SIGTERM)
        err = proc.communicate(timeout=120)[1]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 143, err[-3000:]
    time.sleep(0.2)
    found = promote.collect(out, strict=False)
    stopped = found["stopped"]
    assert not found["complete"] and stopped["by"] == "SIGTERM" and 2 <= stopped["step"] < 8
    for verdict, _lines, _details, why in _judge_all(found, out).values():
        assert verdict == "INCONCLUSIVE" and "pilot" in why


# ------------------------------------------------------------------------------ a full-size result
N_TEST = 10_000


def fake_factorial(folder: Path, accuracy: dict[str, float], ratios: tuple[float, float] = (8.0, 1.5),
                   stopped_step: int | None = None) -> Path:
    """A complete (or, with ``stopped_step``, stopped) full-size GPU factorial as the run leaves it:
    arm ``a`` classifies example i of seed s right iff u_si < accuracy[a] + a seed shift (paired),
    its validation accuracy at a plateau from 60% of its steps (proximity2d's from the start); the
    probes ``ratios`` (SPT, scratch)."""
    p = plan(FACTORIAL, assumed_rates(FACTORIAL), 1e9)
    stopped = None if stopped_step is None else {"phase": "train", "by": "SIGTERM", "why": "stopped by a signal",
                                                 "step": stopped_step, "planned": p["steps"], "at": 300.0}
    runs = []
    for arm in p["arms"]:
        for seed in p["seeds"]:
            rng = np.random.default_rng(seed)
            shared, shift = rng.random(N_TEST), rng.normal(0, 0.005)
            offset = p["spt_steps"] if base_arm(arm) in PRETRAINED else 0
            steps = run_steps(p, arm)
            last = steps - offset if stopped_step is None else min(steps - offset, stopped_step)
            curve = []
            for e in (e for e in p["eval_steps"] if e <= last):
                share = 1.0 if base_arm(arm) == "proximity2d" else min(1.0, (e + offset) / (0.6 * steps))
                bits = shared < 0.5 + (accuracy[arm] - 0.5) * share + shift
                curve.append({"step": e + offset, "train_loss": 0.4, "val_accuracy": round(0.5 + 0.3 * share, 3),
                              "test_accuracy": float(bits.mean()), "test_correct": correctness.encode(bits)})
            done = last == steps - offset
            run = {"arm": arm, "seed": seed, "complete": done, "steps": steps, "offset": offset, "curve": curve}
            if done:
                run["test_accuracy"] = curve[-1]["test_accuracy"]
                if base_arm(arm) == "scratch":
                    run["grid2d_ratio"] = ratios[1] * (1 + 0.05 * (seed % 3))
            if base_arm(arm) == "spt":
                run["spt_grid2d_ratio"] = ratios[0] * (1 + 0.05 * (seed % 2))
            runs.append(run)
    summary = {"kind": "gpu-twin", "design": "issue 56", "setting": "factorial", "registered": FACTORIAL.registered,
               "tiny": False, "started": 1.0e9, "wall_seconds": 540.0,
               "versions": {"python": "3.12.3", "torch": "2.11.0", "cuda": "13.0"},
               "device": {"kind": "cuda", "name": "NVIDIA H100", "count": 1},
               "phases": {"start": 12.0, "data": 1.5, "inits": 20.0, "bench": 9.0, "plan_at": 43.0, "train": 200.0,
                          "end": 245.0},
               "complete": stopped is None, "cut": None, "stopped": stopped,
               "data": {"fingerprint": FINGERPRINTS["factorial"], "source": "carried: twin-factorial.npz",
                        "n_train": 16000, "n_val": 2000, "n_test": N_TEST, "settings": data_settings(FACTORIAL)},
               "bench": {"attention": "default"}, "plan": p}
    group = {"group": 0, "seeds": p["seeds"], "arms": p["arms"], "runs": runs, "cut": None, "stopped": stopped,
             "data": FINGERPRINTS["factorial"], "config": p["sizes"]}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "group-0.json").write_text(json.dumps(group))
    return folder


MECHANISM = {"mean.scratch": 0.62, "mean.spt": 0.85, "mean.hybrid_qk": 0.66, "mean.frozen_qk": 0.621,
             "mean.proximity2d": 0.75, "max.scratch": 0.75, "max.spt": 0.92, "max.hybrid_qk": 0.90,
             "max.frozen_qk": 0.74, "max.proximity2d": 0.97}
"""SPT helps under mean pooling (23 pts) more than under max (17), the hybrid keeps little of it,
frozen = scratch, SPT beats proximity2d; the gate passes."""


def _context(tmp_path: Path, folder: Path) -> Context:
    root = tmp_path / "evidence-lra"
    (root / "gpu").mkdir(parents=True, exist_ok=True)
    (root / "gpu" / "factorial.json").write_text(json.dumps(promote.collect(folder)))
    return Context(progress=False, lra_evidence=root)


@pytest.mark.slow
def test_a_full_size_factorial_is_promoted_strictly_and_judged_by_the_registered_rules(tmp_path):
    ctx = _context(tmp_path, fake_factorial(tmp_path / "run", MECHANISM))
    verdicts = {c: gpu_factorial.verdict_of(ctx, c) for c in FACTORIAL_CLAIMS}
    assert {c: v[0] for c, v in verdicts.items()} == {
        "G6f": "PASS", "G1f": "PASS", "G1fr": "PASS", "G9f": "PASS", "G4f": "FAIL", "G3f": "PASS", "G2f": "PASS",
        "G8f": "PASS"}, {c: v[1] for c, v in verdicts.items()}
    failed = dict(MECHANISM, **{"max.proximity2d": 0.80})  # the gate fails: nothing else is read
    ctx = _context(tmp_path / "b", fake_factorial(tmp_path / "b" / "run", failed))
    assert gpu_factorial.verdict_of(ctx, "G6f")[0] == "FAIL"
    g1f = gpu_factorial.verdict_of(ctx, "G1f")
    assert g1f[0] == "INCONCLUSIVE" and "G6f" in g1f[3]


@pytest.mark.slow
def test_a_stopped_full_size_factorial_is_promoted_and_read_as_a_pilot(tmp_path):
    ctx = _context(tmp_path, fake_factorial(tmp_path / "run", MECHANISM, stopped_step=4000))
    for c in FACTORIAL_CLAIMS:
        verdict, _, _, why = gpu_factorial.verdict_of(ctx, c)
        assert verdict == "INCONCLUSIVE" and "pilot" in why, (c, why)


def test_without_a_result_every_factorial_claim_is_inconclusive_not_run_as_recorded(tmp_path):
    ctx = Context(progress=False, lra_evidence=tmp_path / "empty")
    for claim_id in FACTORIAL_CLAIMS:
        m = REGISTRY[claim_id].check(ctx)
        record = records.RECORDS[claim_id]
        assert m.verdict == "INCONCLUSIVE" and m.measured == "not run" and "not run yet" in m.inconclusive
        assert record.verdict == "inconclusive" and not record.ran
        assert m.threshold == records.TABLE[claim_id].threshold


def test_a_forged_factorial_is_refused_by_promote(tmp_path):
    folder = fake_factorial(tmp_path / "run", MECHANISM)
    summary = json.loads((folder / "summary.json").read_text())
    summary["data"]["fingerprint"] = FINGERPRINTS["short"]
    group = json.loads((folder / "group-0.json").read_text())
    group["data"] = FINGERPRINTS["short"]
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "group-0.json").write_text(json.dumps(group))
    with pytest.raises(EvidenceError, match="field data.fingerprint"):
        promote.collect(folder)


def test_the_prepared_factorial_command_is_in_docs_gpu_md():
    text = (REPO / "docs/gpu.md").read_text()
    assert "--setting factorial --data runs/gpu-data/twin-factorial.npz --wall 540" in text
    assert "--make-data runs/gpu-data/twin-factorial.npz --setting factorial --from-data-dir" in text
    assert sys.executable  # the command runs with the script's interpreter
