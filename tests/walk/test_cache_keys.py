"""Cache compatibility is a contract: the stage keys of existing runs never change.

Every trained stage lies in ``<cache>/<key>/`` and is found again only by its key, so a change of
how a key is computed (a renamed field, a new default entering the hash, another JSON layout)
silently orphans every cached run: thousands of CPU-seconds retrained.  These keys were computed
by the code of commit c47c8cc (cache format 2); a refactor must keep them.  A deliberate change of
the training semantics bumps the cache format instead, and then updates this table on purpose.
"""

import pytest
from helpers import _stub_train_stage, _write_lra

from spt_theory.training.recipes import Budget
from spt_theory.walk.experiments import WalkData, control_recipe, stage_key

PINNED = [
    ("scratch", WalkData(), 0, {}, ["299a8896e63a955e"]),
    ("spt", WalkData(), 0, {}, ["73a01b8e33cd0418", "3532c659c8a946ac"]),
    ("hybrid_qk", WalkData(), 1, {}, ["0b3cb436a3899837", "a8a42d125f36b37f"]),
    ("sptsteps_200", WalkData(), 0, {}, ["9d9bdc8687c5861c", "f5d3480ed574b0b3"]),
    ("proxinit", WalkData(), 0, {}, ["cf65115874a7f01f"]),
    ("xspt_shuffled", WalkData(), 2, {}, ["dcbb3bf540715a7c", "c9d1475511f1d535"]),
    ("xspt_uniform_long", WalkData(), 0, {}, ["933fe9a821b54f56", "8775187c60c42fa5"]),
    ("scratch", WalkData(), 0, {"attention_bias": "alibi"}, ["2099743395d7b738"]),
    ("spt", WalkData(), 0, {"pooling": "last"}, ["9b052f673bfdba06", "97280d5572aeeebd"]),
    ("spt", WalkData(vocab=64), 0, {}, ["10acc5db58626764", "8330d71600d2c090"]),
    ("frozen", WalkData(n_train=32000), 0, {}, ["df19ec39007e5bca"]),
]


@pytest.mark.parametrize("name, data, seed, overrides, keys", PINNED)
def test_walk_stage_keys_are_those_of_the_cached_runs(name, data, seed, overrides, keys):
    spec = control_recipe(name, data, seed, Budget(), **overrides)
    assert [stage_key(spec, k) for k in range(len(spec.stages))] == keys


def test_lra_stage_keys_are_those_of_the_cached_runs(tmp_path, monkeypatch):
    """The LRA runner's keys (scratch, pretrain, finetune) on the tiny release-layout data of
    ``test_lra_pipeline`` (``helpers._write_lra``): the stage folders it asks for, training replaced
    by a stub that writes the best checkpoint the finetune stage transplants from."""
    from spt_theory.lra import runner

    asked = []

    _stub_train_stage(monkeypatch, lambda model, cache: asked.append(cache.key))
    root = _write_lra(tmp_path / "lra")
    runner.LRARun(runner.RunOptions(task="listops", data_dir=root, tiny=True, out=tmp_path / "out",
                                    progress=False)).confirm()
    assert asked == ["9c900e3c17c2b4a7", "d30b74a02dffc7e9", "c87d0c8e5f2ca17d"]
