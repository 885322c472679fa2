"""Training: freezing, transplanting groups, resume after an interruption, the cache, determinism."""

from dataclasses import replace

import pytest
import torch

from spt_theory.core.model import Encoder
from spt_theory.training.cache import StageCache, load_checkpoint
from spt_theory.training.loop import DatasetTask, Stage, StageOptions, train_stage
from spt_theory.util.files import InputError
from spt_theory.walk.experiments import RunSpec, initial_model, recipe, run, stage_key


def spec_for(name, walk, overrides, seed=0, **budget):
    from spt_theory.training.recipes import Budget
    b = Budget(scratch_epochs=2, pretrain_epochs=2, finetune_epochs=1, batch_size=16, **budget)
    return recipe(name, walk, seed, b, **overrides)


def timeless(history: list[list[dict]]) -> list[list[dict]]:
    """Per-epoch metrics without the wall time, which differs between identical runs."""
    return [[{k: v for k, v in e.items() if k != "seconds"} for e in stage] for stage in history]


def weights(model: Encoder) -> dict:
    return {n: p.detach().clone() for n, p in model.named_parameters()}


@pytest.mark.slow
def test_frozen_groups_stay_bit_identical(tiny_walk, tiny_model_overrides, tmp_path):
    spec = spec_for("frozen", tiny_walk, tiny_model_overrides)
    before = weights(initial_model(spec))
    after = weights(run(spec, tmp_path, progress=False).model)
    model = initial_model(spec)
    for name in before:
        group = model.group_of(name)
        if group == "qk":
            assert torch.equal(before[name], after[name]), name
        elif group != "decoder":  # the decoder takes no part in supervised training
            assert not torch.equal(before[name], after[name]), name


@pytest.mark.slow
def test_hybrid_keeps_only_the_named_groups(tiny_walk, tiny_model_overrides, tmp_path):
    pretrained = run(spec_for("pretrain", tiny_walk, tiny_model_overrides), tmp_path, progress=False).model
    hybrid_spec = spec_for("hybrid_qk", tiny_walk, tiny_model_overrides)
    hybrid_spec = replace(hybrid_spec, stages=(hybrid_spec.stages[0], replace(hybrid_spec.stages[1], epochs=0)))
    hybrid = run(hybrid_spec, tmp_path, progress=False).model
    for (name, p), (_, q) in zip(pretrained.named_parameters(), hybrid.named_parameters()):
        if hybrid.group_of(name) == "qk":
            assert torch.equal(p, q), name
        elif name.endswith("weight"):
            assert not torch.equal(p, q), name


def test_same_seed_identical_different_seed_differs(tiny_walk, tiny_model_overrides, tmp_path):
    a = run(spec_for("spt", tiny_walk, tiny_model_overrides), tmp_path / "a", progress=False)
    b = run(spec_for("spt", tiny_walk, tiny_model_overrides), tmp_path / "b", progress=False)
    c = run(spec_for("spt", tiny_walk, tiny_model_overrides, seed=1), tmp_path / "c", progress=False)
    assert timeless(a.history) == timeless(b.history)
    assert timeless(a.history) != timeless(c.history)
    wa, wb, wc = weights(a.model), weights(b.model), weights(c.model)
    assert all(torch.equal(wa[n], wb[n]) for n in wa)
    assert not all(torch.equal(wa[n], wc[n]) for n in wa)


def test_interrupted_stage_resumes_to_the_same_weights(tiny_walk, tiny_model_overrides, tmp_path):
    spec = spec_for("scratch", tiny_walk, tiny_model_overrides)
    data = tiny_walk.build()
    stage = spec.stages[0]
    reference = initial_model(spec)
    ref_history = train_stage(reference, DatasetTask(data), stage, 0, StageCache.folder(tmp_path / "ref"),
                              progress=False)
    interrupted = initial_model(spec)
    train_stage(interrupted, DatasetTask(data), stage, 0, StageCache.folder(tmp_path / "cut"),
                options=StageOptions(progress=False, stop_after_steps=5, checkpoint_every=2))
    resumed = initial_model(spec)  # a fresh process: only the checkpoint survives
    history = train_stage(resumed, DatasetTask(data), stage, 0, StageCache.folder(tmp_path / "cut"), progress=False)
    assert [e["loss"] for e in history] == [e["loss"] for e in ref_history]
    assert all(torch.equal(p, q) for p, q in zip(reference.parameters(), resumed.parameters()))


def test_keyword_changes_replace_the_stage_options_and_others_are_refused(tiny_walk, tiny_model_overrides, tmp_path):
    spec = spec_for("scratch", tiny_walk, tiny_model_overrides)
    cache = StageCache.folder(tmp_path / "stage")
    train_stage(initial_model(spec), DatasetTask(tiny_walk.build()), spec.stages[0], 0, cache,
                options=StageOptions(progress=False, stop_after_steps=100), stop_after_steps=2)
    assert load_checkpoint(cache.last)["step_in_epoch"] == 2  # 6 steps per epoch: stopped by the change
    with pytest.raises(TypeError, match="progres"):
        train_stage(initial_model(spec), DatasetTask(tiny_walk.build()), spec.stages[0], 0, cache, progres=False)


@pytest.mark.slow
def test_cache_reuses_trained_epochs(tiny_walk, tiny_model_overrides, tmp_path):
    long = spec_for("pretrain", tiny_walk, tiny_model_overrides)
    run(long, tmp_path, progress=False)
    short = replace(long, stages=(replace(long.stages[0], epochs=1),))
    assert stage_key(long, 0) == stage_key(short, 0)
    stage_dir = tmp_path / stage_key(long, 0)
    mtimes = {p.name: p.stat().st_mtime_ns for p in stage_dir.glob("*.pt")}
    result = run(short, tmp_path, progress=False)
    assert {p.name: p.stat().st_mtime_ns for p in stage_dir.glob("*.pt")} == mtimes
    assert result.history[0] == load_checkpoint(stage_dir / "epoch_1.pt")["history"]
    assert stage_key(long, 0) != stage_key(replace(long, seed=1), 0)


def test_non_finite_loss_stops_with_the_step_named(tiny_walk, tiny_model_overrides, tmp_path):
    from spt_theory.training.loop import TrainingDiverged
    spec = spec_for("scratch", tiny_walk, tiny_model_overrides, lr=1e30)
    with pytest.raises(TrainingDiverged, match=r"at step \d+"):
        run(spec, tmp_path, progress=False)


@pytest.mark.parametrize("kwargs, field", [(dict(epochs=-1), "epochs"), (dict(mask_ratio=1.0), "mask_ratio"),
                                           (dict(freeze=("attn",)), "group"), (dict(lr=0.0), "lr")])
def test_invalid_stage_names_the_field(kwargs, field):
    with pytest.raises(InputError, match=field):
        Stage(**{"objective": "supervised", "epochs": 1, **kwargs})


def test_spec_is_hashable_and_keyed_by_content(tiny_walk, tiny_model_overrides):
    spec = spec_for("spt", tiny_walk, tiny_model_overrides)
    assert isinstance(spec, RunSpec)
    assert stage_key(spec, 1) != stage_key(replace(spec, stages=(replace(spec.stages[0], epochs=3),
                                                                 spec.stages[1])), 1)


def test_the_stage_seed_rule_is_written_once():
    """Stage ``k`` of a run seeded ``s`` trains with ``s * 1000 + k`` (walk runs, the LRA runner, the
    plateau grid, the GPU ensembles): :func:`stage_seed`, and no runner spells the rule itself."""
    import re

    from helpers import REPO

    from spt_theory.training.loop import stage_seed

    assert (stage_seed(0), stage_seed(3, 1), stage_seed(2, 999)) == (0, 3001, 2999)
    spelt = [f"{path.relative_to(REPO)}:{n}" for path in sorted((REPO / "spt_theory").rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if re.search(r"\bseeds?\b[^#\n]*\* ?1000\b|\b1000 ?\* ?\w*seed", line.split('"""')[0].split("#")[0])
             and path.name != "loop.py"]
    assert not spelt, spelt
