"""LRA runner end to end on tiny data of all five tasks: scratch, SPT then finetune, report,
best-checkpoint transplant, resume, the pair head, masking and DDP on CPU (the GPU script:
tests/lra/test_gpu_twin.py)."""

import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from helpers import REPO, _write_lra

from spt_theory.core.model import Encoder, ModelConfig
from spt_theory.evidence.correctness import accuracy_of, decode
from spt_theory.lra.__main__ import main
from spt_theory.lra.configs import one_layer, tiny
from spt_theory.lra.data import load_task_data
from spt_theory.lra.inputs import LRATask
from spt_theory.lra.readers.common import BYTE_VOCAB, LISTOPS_VOCAB, PIXEL_VOCAB
from spt_theory.lra.tasks import config_for, lra_task, task_names
from spt_theory.training import loop as training_loop
from spt_theory.training.cache import StageCache
from spt_theory.training.loop import DatasetTask, Stage, train_stage

ENCODER = ("qk", "vo", "mlp", "norm", "embed")


@pytest.fixture(scope="module")
def lra_root(tmp_path_factory) -> Path:
    return _write_lra(tmp_path_factory.mktemp("lra"))


def _cli(*args, out: Path, data: Path | None = None) -> int:
    extra = ["--data-dir", str(data)] if data is not None else []
    return main([*args, *extra, "--out", str(out), "--no-progress"])


def _results(out: Path, kind: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((out / "results").rglob(f"{kind}-*.json"))]


def _timeless(history):
    return [{k: v for k, v in record.items() if k != "seconds"} for record in history]


# ------------------------------------------------------------------------------ end to end

@pytest.mark.slow
@pytest.mark.parametrize("task", task_names())
def test_every_task_confirms_end_to_end_and_reports(task, lra_root, tmp_path, capsys):
    assert _cli("confirm", "--task", task, "--tiny", "--layers", "1", out=tmp_path, data=lra_root) == 0
    (scratch,), (spt,), (pretrain,) = (_results(tmp_path, k) for k in ("scratch", "spt", "pretrain"))
    config = one_layer(tiny(config_for(task)))
    for result in (scratch, spt):
        assert result["task"] == task and result["seed"] == 0 and result["config"] == asdict(config)
        assert 0.0 <= result["metrics"]["test_accuracy"] <= 1.0
        assert result["versions"]["torch"] == torch.__version__
        assert result["history"][0]["loss"] > 0 and "val_accuracy" in result["history"][0]
        for record in result["history"]:  # which test examples were right, in the split's order
            assert len(decode(record["test_correct"])) == result["data"]["n_test"]
            assert accuracy_of(record["test_correct"]) == record["test_accuracy"]
    assert spt["pretrain"]["best_epoch"] == pretrain["metrics"]["best_epoch"] == 1
    assert spt["model"] == scratch["model"] and spt["model"]["head"] == config.head
    assert pretrain["history"][0]["val_loss"] > 0
    capsys.readouterr()
    assert main(["report", "--results", str(tmp_path / "results")]) == 0
    table = capsys.readouterr().out
    reference = lra_task(task).reference
    assert f"{task}  " in table and ("-" if reference is None else f"{reference:.2f}") in table and "scratch" in table
    assert f"scratch {100 * scratch['metrics']['test_accuracy']:.2f}% -> SPT" in table


@pytest.mark.parametrize("task", task_names())
def test_every_registered_task_reads_with_its_configs_vocabulary(task, lra_root):
    """The vocabulary the task's reader returns is the one its config sizes the model for; token
    tasks (masking "token") have a <mask> id, pixel tasks none."""
    config = tiny(config_for(task))
    data = load_task_data(config, lra_root)
    assert data.vocab.size == config.vocab_size
    assert (config.masking == "token") == (data.vocab.mask_id is not None)
    assert len(data.y_train) and len(data.y_val) and len(data.y_test)


def test_data_padded_to_one_width_pairs_stacked_and_validation_held_out(lra_root):
    listops_data = load_task_data(tiny(config_for("listops")), lra_root)
    assert listops_data.x_train.shape[1] == listops_data.x_val.shape[1] == listops_data.x_test.shape[1]
    retrieval = load_task_data(tiny(config_for("retrieval")), lra_root)
    assert retrieval.x_train.shape[:2] == (24, 2) and retrieval.x_val.shape[:2] == (8, 2)
    text = load_task_data(tiny(config_for("text")), lra_root)
    assert (len(text.y_train), len(text.y_val), len(text.y_test)) == (18, 2, 20)
    image = load_task_data(tiny(config_for("image")), lra_root)
    assert image.x_train.shape == (36, 1024) and len(image.y_val) == 4
    assert image.fingerprint() != text.fingerprint() and image.fingerprint() == load_task_data(
        tiny(config_for("image")), lra_root).fingerprint()


# ------------------------------------------------------------------------------ transplant

@pytest.mark.slow
def test_finetune_starts_from_best_validation_checkpoint_and_drops_the_decoder(lra_root, tmp_path, monkeypatch):
    """Validation losses 0.5, 0.2, 0.9: epoch 2 is transplanted, not the last one; with --keep qk
    only W_Q, W_K come from it; head and decoder start as in the scratch run."""
    val_losses = iter([0.5, 0.2, 0.9])
    monkeypatch.setattr(LRATask, "reconstruction_loss", lambda *args, **kwargs: next(val_losses))
    starts = []
    real_train_stage = training_loop.train_stage

    def recording(model, data, stage, *args, **kwargs):
        starts.append((stage.objective, {n: p.detach().clone() for n, p in model.named_parameters()}))
        return real_train_stage(model, data, stage, *args, **kwargs)

    monkeypatch.setattr(training_loop, "train_stage", recording)
    common = ("--task", "listops", "--tiny", "--epochs", "3", "--max-steps", "18")
    assert _cli("confirm", *common, out=tmp_path, data=lra_root) == 0
    (_, scratch_init), (_, _), (_, spt_init) = starts
    (pretrain,) = _results(tmp_path, "pretrain")
    assert pretrain["metrics"]["best_epoch"] == 2 and pretrain["metrics"]["epochs_run"] == 3
    cache = tmp_path / "cache" / pretrain["cache"]
    best = torch.load(cache / "epoch_2.pt", weights_only=True)["model"]
    last = torch.load(cache / "epoch_3.pt", weights_only=True)["model"]
    for name, value in spt_init.items():
        group = Encoder.group_of(name)
        if group in ENCODER:
            assert torch.equal(value, best[name]) and not torch.equal(value, last[name]), name
        else:  # head and decoder: fresh, exactly the scratch run's init
            assert torch.equal(value, scratch_init[name]), name

    assert _cli("finetune", *common, "--keep", "qk", out=tmp_path, data=lra_root) == 0  # SPT cached
    _, hybrid_init = starts[-1]
    for name, value in hybrid_init.items():
        expected = best[name] if Encoder.group_of(name) == "qk" else scratch_init[name]
        assert torch.equal(value, expected), name


@pytest.mark.slow
def test_pretraining_on_another_task_transfers_between_pixel_tasks_only(lra_root, tmp_path, capsys):
    assert _cli("finetune", "--task", "image", "--pretrain-task", "pathfinder", "--tiny", "--layers", "1",
                out=tmp_path, data=lra_root) == 0
    (spt,) = _results(tmp_path, "spt")
    assert spt["pretrain_task"] == "pathfinder" and spt["task"] == "image"
    capsys.readouterr()
    assert _cli("finetune", "--task", "text", "--pretrain-task", "listops", "--tiny",
                out=tmp_path, data=lra_root) == 2
    error = capsys.readouterr().err.strip()  # before any training: a single line
    assert error.startswith("error: --pretrain-task listops -> --task text") and "embed" in error
    assert "\n" not in error
    assert _cli("finetune", "--task", "text", "--pretrain-task", "listops", "--tiny",
                "--keep", "qk+vo+mlp+norm", out=tmp_path, data=lra_root) == 0


# ------------------------------------------------------------------------------ resume

@pytest.mark.slow
def test_interrupted_finetune_resumes_to_the_same_results(lra_root, tmp_path, monkeypatch):
    common = ("finetune", "--task", "listops", "--tiny", "--epochs", "2", "--finetune-epochs", "2",
              "--max-steps", "12", "--checkpoint-every", "1")
    assert _cli(*common, out=tmp_path / "whole", data=lra_root) == 0
    calls = {"n": 0}
    real_loss = LRATask.loss

    def interrupted(self, *args):
        calls["n"] += 1
        if calls["n"] == 17:  # pretraining: 2 x (6 steps + 1 validation); then finetuning's 3rd step
            raise KeyboardInterrupt
        return real_loss(self, *args)

    monkeypatch.setattr(LRATask, "loss", interrupted)
    assert _cli(*common, out=tmp_path / "cut", data=lra_root) == 130
    assert not _results(tmp_path / "cut", "spt") and list((tmp_path / "cut/cache").rglob("last.pt"))
    calls["n"] = -10**9
    assert _cli(*common, out=tmp_path / "cut", data=lra_root) == 0
    assert calls["n"] == -10**9 + 10  # pretraining reloaded; finetuning resumed after its 2nd step
    for kind in ("pretrain", "spt"):
        (whole,), (resumed,) = _results(tmp_path / "whole", kind), _results(tmp_path / "cut", kind)
        assert _timeless(whole["history"]) == _timeless(resumed["history"]), kind
        assert whole["cache"] == resumed["cache"]


@pytest.mark.slow
def test_shorter_pretraining_reuses_the_cached_epochs(lra_root, tmp_path):
    common = ("pretrain", "--task", "listops", "--tiny", "--max-steps", "100")
    assert _cli(*common, "--epochs", "3", out=tmp_path, data=lra_root) == 0
    (long,) = _results(tmp_path, "pretrain")
    for path in (tmp_path / "results").rglob("*.json"):
        path.unlink()
    assert _cli(*common, "--epochs", "2", out=tmp_path, data=lra_root) == 0
    (short,) = _results(tmp_path, "pretrain")
    assert short["cache"] == long["cache"] and _timeless(short["history"]) == _timeless(long["history"][:2])


# ------------------------------------------------------------------------------ pieces

@pytest.mark.slow
def test_max_steps_cuts_the_last_epoch_short(tiny_walk, tiny_model_overrides, tmp_path):
    data = tiny_walk.build()  # 96 examples, batch 16: 6 steps per epoch
    model = Encoder(tiny_walk.model_config(**tiny_model_overrides))
    history = train_stage(model, DatasetTask(data), Stage("supervised", 3, batch_size=16), 0,
                          StageCache.folder(tmp_path), progress=False, max_steps=8, keep_checkpoints="all")
    assert [record["epoch"] for record in history] == [1, 2]
    assert sorted(p.name for p in tmp_path.glob("*.pt")) == ["epoch_1.pt", "epoch_2.pt"]


def test_pair_head_sees_u_v_difference_and_product():
    torch.manual_seed(0)
    model = Encoder(ModelConfig(vocab_size=10, recon_classes=10, max_len=6, d_model=8, n_heads=2,
                                d_ff=16, head="pair_mlp"))
    x = torch.randint(0, 10, (3, 2, 6))
    u, v = model.pool(model.encode(x[:, 0])), model.pool(model.encode(x[:, 1]))
    expected = model.head(torch.cat([u, v, u - v, u * v], dim=-1))
    assert torch.allclose(model(x), expected, atol=1e-6)
    assert not torch.allclose(model(x.flip(1)), expected, atol=1e-3)  # the order of the pair matters


def test_spt_masks_only_real_tokens_and_pixels_become_two_normalised_channels(monkeypatch):
    seen = {}
    monkeypatch.setattr("spt_theory.lra.inputs.masked_token_loss",
                        lambda prediction, targets, mask: seen.setdefault("mask", mask).float().mean())
    task = LRATask(tiny(config_for("listops")), LISTOPS_VOCAB)
    model = Encoder(task.model_config(task.config, 8))
    x = torch.tensor([[2, 3, 4, 16, 0, 0, 0, 0]] * 4)
    task.loss(model, Stage("spt", 1, mask_ratio=0.9), x, None, torch.Generator().manual_seed(0))
    assert seen["mask"][:, :4].any() and not seen["mask"][:, 4:].any()
    pixels = LRATask(tiny(config_for("image")), PIXEL_VOCAB)
    mask = torch.tensor([[False, True, False]])
    channels = pixels.inputs(torch.tensor([[0, 255, 51]]), mask)
    assert torch.allclose(channels, torch.tensor([[[0.0, 0.0], [0.0, 1.0], [0.2, 0.0]]]))
    model = Encoder(pixels.model_config(pixels.config, 3))
    assert model.cfg.in_channels == 2 and model.cfg.recon_classes == 0  # Image: L1 on a scalar
    assert LRATask(tiny(config_for("pathfinder")), PIXEL_VOCAB).model_config(
        pixels.config, 3).recon_classes == 256
    assert LRATask(tiny(config_for("text")), BYTE_VOCAB).model_config(pixels.config, 3).vocab_size == 258


@pytest.mark.parametrize("args, message", [
    (["confirm", "--task", "listops", "--data-dir", "/nonexistent/lra"], "/nonexistent/lra/listops-1000"),
    (["confirm", "--task", "listops", "--data-dir", ".", "--set", "d_model=wide"], "must be an integer"),
    (["confirm", "--task", "listops", "--data-dir", ".", "--set", "depth=3"], "unknown task config field 'depth'"),
    (["confirm", "--task", "listops", "--data-dir", ".", "--set", "d_model=30"], "divisible"),
    (["confirm", "--task", "listops", "--data-dir", ".", "--set", "d_model=-1"], "d_model = -1 must be positive"),
    (["confirm", "--task", "listops", "--data-dir", ".", "--finetune-epochs", "0"], "--finetune-epochs"),
    (["pretrain", "--task", "listops", "--data-dir", ".", "--freeze", "attention"], "unknown group"),
    (["report", "--results", "/nonexistent/results"], "does not exist"),
])
def test_bad_input_is_one_error_line_with_status_2(args, message, capsys):
    try:
        status = main(args)
    except SystemExit as exit:  # argparse's own errors: usage, then one error line
        status = exit.code
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and "error:" in err[-1] and message in err[-1], err
    assert not any("Traceback" in line for line in err)


# ------------------------------------------------------------------------------ processes

@pytest.mark.slow
@pytest.mark.skipif(not dist.is_gloo_available(), reason="this torch build has no gloo backend")
def test_two_process_gloo_ddp_matches_one_process(lra_root, tmp_path):
    """Global batch 4 split 2 + 2: averaged gradients equal the one-process gradients, so the
    supervised run's losses and accuracies agree (up to float summation order)."""
    args = ["scratch", "--task", "listops", "--tiny", "--device", "cpu", "--data-dir", str(lra_root),
            "--no-progress"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    ddp = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                          "-m", "spt_theory.lra", *args, "--out", str(tmp_path / "ddp")],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert ddp.returncode == 0, ddp.stderr[-2000:]
    assert main([*args, "--out", str(tmp_path / "one")]) == 0
    (two,), (one,) = _results(tmp_path / "ddp", "scratch"), _results(tmp_path / "one", "scratch")
    assert two["runtime"]["world_size"] == 2 and one["runtime"]["world_size"] == 1
    assert two["history"][0]["loss"] == pytest.approx(one["history"][0]["loss"], rel=1e-5)
    assert two["metrics"]["test_accuracy"] == one["metrics"]["test_accuracy"]


def test_sweep_promote_writes_the_checked_summary_into_the_evidence_and_nothing_else(tmp_path, monkeypatch):
    """``lra sweep --promote``: machine paths scrubbed, the schema's fields added, validated before
    anything is written; a summary that does not fit is refused and the evidence left alone."""
    from spt_theory import evidence
    from spt_theory.evidence import EvidenceError
    from spt_theory.lra.sweep import promote_sweep

    committed = json.loads(evidence.path(evidence.LRA, "pathfinder.json").read_text())
    found = {k: v for k, v in committed.items() if k not in ("schema_version", "model_defaults")}
    found["options"] = {**found["options"], "data_dir": str(tmp_path / "data"), "out": str(tmp_path / "out")}
    source = tmp_path / "out" / "sweeps" / "pathfinder-evidence.json"
    source.parent.mkdir(parents=True)
    source.write_text(json.dumps(found))
    target = tmp_path / "evidence"
    monkeypatch.setattr(evidence, "path", lambda *parts: target.joinpath(*parts))
    written = promote_sweep(source)
    assert written == target / "lra" / "pathfinder.json"
    out = json.loads(written.read_text())
    assert out["options"]["data_dir"] == "DATA_DIR" and out["schema_version"] == 1 and "model_defaults" in out
    written.unlink()
    found["cells"][0]["runs"][0]["test_accuracy"] = 2.0  # not an accuracy
    source.write_text(json.dumps(found))
    with pytest.raises(EvidenceError):
        promote_sweep(source)
    assert not written.exists()
