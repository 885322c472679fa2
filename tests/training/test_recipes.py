"""Recipes as data (``spt_theory.training.recipes``): the stage constructors from a budget, the recipe
constructors, the one parser of recipe names, and the walk CLI and the LRA runner building their
stages with the same constructors."""

from __future__ import annotations

from pathlib import Path

import pytest

from spt_theory import train as train_cli
from spt_theory.core.model import PARAMETER_GROUPS
from spt_theory.lra.runner import LRARun, RunOptions
from spt_theory.training.loop import Stage
from spt_theory.training.recipes import (
    Budget,
    Recipe,
    pretrain_only,
    scratch,
    spt_stage,
    spt_then_finetune,
    supervised_stage,
)
from spt_theory.util.files import InputError
from spt_theory.walk.experiments import PRETRAIN_SOURCES, WalkData, control_recipe, parse_recipe, recipe, run_spec

BUDGET = Budget(scratch_epochs=6, pretrain_epochs=2, finetune_epochs=1, lr=3e-4, batch_size=16, mask_ratio=0.2)


def test_stage_constructors_take_the_budget_and_the_spt_rate():
    assert spt_stage(BUDGET) == Stage("spt", 2, lr=3e-4, batch_size=16, mask_ratio=0.2)
    assert spt_stage(BUDGET, 5, freeze=("head",)).epochs == 5
    lra_like = Budget(lr=1e-4, pretrain_lr=5e-4, warmup_steps=10, mask_ratio=0.3)
    assert spt_stage(lra_like) == Stage("spt", 4, lr=5e-4, batch_size=64, mask_ratio=0.3, warmup_steps=10)
    # supervised stages keep the default mask ratio: it is in their cache keys, the budget's is not
    assert supervised_stage(lra_like, 2, keep=("qk",)) == Stage("supervised", 2, lr=1e-4, warmup_steps=10, keep=("qk",))
    assert supervised_stage(BUDGET, 3).keep == PARAMETER_GROUPS


def test_recipe_constructors_check_the_objectives():
    pre, sup = spt_stage(BUDGET), supervised_stage(BUDGET, 1)
    assert spt_then_finetune(pre, sup) == Recipe((pre, sup))
    assert scratch(sup, init="proxinit") == Recipe((sup,), init="proxinit")
    assert pretrain_only(pre) == Recipe((pre,))
    for build in (lambda: scratch(pre), lambda: pretrain_only(sup), lambda: spt_then_finetune(sup, sup),
                  lambda: spt_then_finetune(pre, pre)):
        with pytest.raises(ValueError, match="needs a"):
            build()


@pytest.mark.parametrize("name, expected", [
    ("scratch", lambda d: scratch(supervised_stage(BUDGET, 6))),
    ("frozen", lambda d: scratch(supervised_stage(BUDGET, 6, freeze=("qk",)))),
    ("pretrain", lambda d: pretrain_only(spt_stage(BUDGET))),
    ("sweep_7", lambda d: spt_then_finetune(spt_stage(BUDGET, 7), supervised_stage(BUDGET, 1))),
    ("sptsteps_13", lambda d: spt_then_finetune(spt_stage(BUDGET, 3), supervised_stage(BUDGET, 1), spt_steps=13)),
    ("hybrid_qk_vo", lambda d: spt_then_finetune(spt_stage(BUDGET), supervised_stage(BUDGET, 6, keep=("qk", "vo")))),
    ("init", lambda d: scratch(supervised_stage(BUDGET, 0))),
    ("proxinit_2", lambda d: scratch(supervised_stage(BUDGET, 2), init="proxinit")),
    ("xspt_perm_long", lambda d: spt_then_finetune(spt_stage(BUDGET), supervised_stage(BUDGET, 6),
                                                   pretrain_data=PRETRAIN_SOURCES["perm"](d))),
])
def test_names_stand_for_recipe_values(name, expected, tiny_walk):
    # tiny_walk: 96 training sequences, 6 steps per epoch at batch 16 -> 13 steps need 3 epochs
    assert parse_recipe(name, tiny_walk, BUDGET) == expected(tiny_walk)


def test_control_runs_are_design_recipes_whose_architecture_wins(tiny_walk):
    cls = parse_recipe("cls", tiny_walk, BUDGET)
    assert cls.stages == parse_recipe("scratch", tiny_walk, BUDGET).stages and cls.architecture == (("pooling", "cls"),)
    spec = control_recipe("cls", tiny_walk, 0, BUDGET, pooling="max", d_model=16, n_heads=2)
    assert spec.model.pooling == "cls" and spec.model.d_model == 16
    assert spec == run_spec(cls, tiny_walk, 0, pooling="max", d_model=16, n_heads=2)
    with pytest.raises(ValueError, match="unknown recipe"):
        recipe("cls", tiny_walk, 0)  # the design's names only
    with pytest.raises(ValueError, match="unknown recipe"):
        parse_recipe("bogus", tiny_walk, BUDGET)


@pytest.mark.parametrize("mode, name", [("scratch", "scratch"), ("frozen", "frozen"), ("pretrain", "pretrain"),
                                        ("spt", "spt"), ("hybrid", "hybrid_qk")])
def test_the_walk_cli_builds_the_runs_of_the_recipe_names(mode, name):
    """At the design's budget, ``python -m spt_theory.train --mode M`` is the run that the claims
    call by name (the hybrid CLI finetunes for --finetune-epochs, the named one for the scratch budget)."""
    epochs = {"scratch": 8, "frozen": 8, "pretrain": 4, "spt": 4, "hybrid": 4}[mode]
    extra = {"frozen": ["--freeze", "qk"], "spt": ["--finetune-epochs", "3"],
             "hybrid": ["--keep", "qk", "--finetune-epochs", "8"]}.get(mode, [])
    spec = train_cli.build_spec(train_cli.parse_args(["--mode", mode, "--epochs", str(epochs), *extra,
                                                      "--no-progress"]))
    assert spec == recipe(name, WalkData(), 0)


def test_the_walk_cli_reports_a_bad_model_config_as_input():
    with pytest.raises(InputError, match="model config"):
        train_cli.build_spec(train_cli.parse_args(["--heads", "3"]))


def test_the_lra_runner_builds_its_recipes_with_the_same_constructors():
    run = LRARun(RunOptions(task="listops", data_dir=Path("unused"), tiny=True, finetune_epochs=2,
                            freeze=("vo",), keep=("qk",)))
    config = run.config
    spt = run.recipe(pretrained=True)
    assert spt.stages == (
        Stage("spt", config.pretrain_epochs, lr=config.lr_pretrain, batch_size=config.batch_size,
              mask_ratio=config.mask_ratio, warmup_steps=config.warmup_steps, freeze=("head",)),
        Stage("supervised", 2, lr=config.lr_finetune, batch_size=config.batch_size, warmup_steps=config.warmup_steps,
              freeze=("decoder", "vo"), keep=("qk",)))
    assert run.recipe(pretrained=False) == scratch(Stage("supervised", 2, lr=config.lr_finetune,
                                                         batch_size=config.batch_size,
                                                         warmup_steps=config.warmup_steps,
                                                         freeze=("decoder", "vo"), keep=()))
