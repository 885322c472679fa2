"""Named experiments on the walk task, cached on disk by a hash of their full config.

A run is a :class:`RunSpec`: the data (:class:`WalkData`, the spec of :mod:`synthetic.walk`), the
model (:class:`ModelConfig`), the seed and a sequence of training stages.  Stage ``k`` is cached in
the :class:`~spt_theory.training.cache.StageCache` ``cache_dir/<key_k>/`` (:func:`stage_cache`) where
``key_k`` (:func:`stage_key`) hashes everything it depends on: data, model, seed, the full stages
before it, and the stage itself *without its epoch count*.  Its directory keeps ``epoch_<e>.pt`` for every epoch
(``keep_checkpoints="all"``: E9 reuses epochs 1, 2, 4, 8 of one pretraining, X6 reads every epoch), so
the same stage run for fewer epochs (the pretraining-length sweep) or resumed after a kill reuses
what was trained.  With a constant learning rate after warm-up, epoch ``e`` of a longer run is
exactly a run of ``e`` epochs.

A run's training is a :class:`~spt_theory.training.recipes.Recipe` (its stages, init hook, SPT step cap,
SPT data source and required architecture: :mod:`spt_theory.training.recipes`).  The claims and figures name
their runs; :func:`parse_recipe` is the one place where those names are read, :func:`run_spec` puts
a recipe on the walk data with a seed, and :func:`recipe` / :func:`control_recipe` do both.  The
design's runs: ``scratch``, ``spt`` (SPT then finetune), ``pretrain`` (SPT only), ``frozen``
(W_Q, W_K frozen at random init), ``hybrid_<groups>``, ``sweep_<e>``, ``sptsteps_<k>``.

Mechanism controls (claims X1-X6, :mod:`spt_theory.checks.controls`) add to a :class:`RunSpec` an
initialisation hook (``init``, e.g. ``proxinit``) and/or another sequence source for the SPT stages
(``pretrain_data``, a :class:`PretrainData`); a step cap (``spt_steps``) shortens SPT below an
epoch.  These enter the stage keys only when set (:func:`control_key`), so every plain
:class:`RunSpec` keeps its key.  Their recipes: ``proxinit`` / ``proxinit_<e>``, ``xspt_<source>``
/ ``xspt_<source>_long`` (SPT on a :data:`PRETRAIN_SOURCES` source) and the :data:`CONTROL_RUNS`
(a design recipe on another architecture: ``alibi``, ``nope``, ``cls``, ``last``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import platform
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import cast

import torch

from spt_theory.analysis.probes import attention_patterns, band_mass, mean_attention_distance
from spt_theory.core.inits import INIT_HOOKS
from spt_theory.core.model import PARAMETER_GROUPS, Encoder, ModelConfig
from spt_theory.training.cache import StageCache, config_hash
from spt_theory.training.loop import Dataset, DatasetTask, Stage, StageOptions, accuracy, run_stage, stage_seed
from spt_theory.training.recipes import (
    Budget,
    Recipe,
    pretrain_only,
    scratch,
    spt_stage,
    spt_then_finetune,
    supervised_stage,
)
from spt_theory.util.files import ConfigError
from synthetic import walk


class WalkData(walk.WalkData):
    """:class:`synthetic.walk.WalkData` (the data spec and its fields) with what the toolkit makes
    of it: the :class:`Dataset` and the model sized for it."""

    def build(self) -> Dataset:
        return Dataset(*self.splits(), mask_id=self.vocab)

    def model_config(self, **overrides) -> ModelConfig:
        """The design's 1-layer model sized for this data (token ids 0..V-1, ``<mask>`` = V), with
        ``overrides`` (the caller's model settings, ``--set``), the rest :class:`ModelConfig`'s defaults."""
        base = dict(vocab_size=self.vocab + 1, recon_classes=self.vocab, n_classes=2,
                    max_len=self.length)
        return ModelConfig(**{**base, **overrides})


@dataclass(frozen=True)
class RunSpec:
    """A run: data, model, seed and its recipe's fields (:func:`run_spec`): the stages, for the
    mechanism controls also an initialisation hook (``init``, a name in :data:`INIT_HOOKS`), another
    sequence source for the SPT stages (``pretrain_data``) and the SPT step cap.  Those three enter
    the stage keys only when set (:func:`control_key`)."""

    data: WalkData
    model: ModelConfig
    stages: tuple[Stage, ...]
    seed: int = 0
    init: str = "default"
    pretrain_data: PretrainData | None = None
    spt_steps: int | None = None
    """Cap on the optimizer steps of the SPT stages (fractional SPT lengths, claim E9); the stage's
    ``epochs`` must then be ``ceil(spt_steps / steps_per_epoch)``."""

    def __post_init__(self):
        if self.init != "default" and self.init not in INIT_HOOKS:
            raise ConfigError(f"init must be 'default' or one of {sorted(INIT_HOOKS)}, got {self.init!r}")
        if self.spt_steps is not None and self.spt_steps < 1:
            raise ConfigError(f"spt_steps must be >= 1, got {self.spt_steps}")


CACHE_FORMAT = 2  # bump when the checkpoint layout, the recorded metrics or the training semantics change


def stage_cache(spec: RunSpec, k: int, cache_dir: Path) -> StageCache:
    """Where stage ``k`` of ``spec`` is cached under ``cache_dir``."""
    return StageCache(Path(cache_dir), stage_key(spec, k))


def run_checkpoints(spec: RunSpec, cache_dir: Path) -> list[tuple[int, int, Path]]:
    """``(stage, epoch, path)`` of every epoch checkpoint of a cached run, stage by stage (they
    exist once the run is cached: its stages keep every epoch)."""
    return [(k, e, path) for k, stage in enumerate(spec.stages)
            for e, path in enumerate(stage_cache(spec, k, cache_dir).checkpoints(stage.epochs), start=1)]


def stage_key(spec: RunSpec, k: int) -> str:
    """Cache key of stage ``k``: everything it depends on, its own epoch count excluded."""
    return config_hash({"format": CACHE_FORMAT, "data": dataclasses.asdict(spec.data),
                        "model": dataclasses.asdict(spec.model), "seed": spec.seed,
                        "before": [dataclasses.asdict(s) for s in spec.stages[:k]],
                        "stage": dataclasses.asdict(replace(spec.stages[k], epochs=0)),
                        **control_key(spec)})


PROBE_SIZE = 256
TRAIN_PROBE_SIZE = 2000
"""Training accuracy is measured on the first 2000 training sequences (the test set's size): the
whole training set would cost half an epoch per epoch at the default size (4 s vs 8 s)."""


def walk_metrics(data: Dataset):
    """Per-epoch metrics: test accuracy, training accuracy (on :data:`TRAIN_PROBE_SIZE` training
    sequences), band mass and mean attention distance on a probe batch.  The training loss is the
    history's ``loss`` (mean over the epoch's steps, recorded by :func:`train_stage`)."""
    probe = data.x_test[:PROBE_SIZE]
    x_fit, y_fit = data.x_train[:TRAIN_PROBE_SIZE], data.y_train[:TRAIN_PROBE_SIZE]

    def metrics(model: Encoder) -> dict:
        pattern = attention_patterns(model, probe)[0]
        return {"test_accuracy": accuracy(model, data.x_test, data.y_test),
                "train_accuracy": accuracy(model, x_fit, y_fit),
                "band_mass": band_mass(pattern), "attention_distance": mean_attention_distance(pattern)}

    return metrics


@dataclass
class RunResult:
    spec: RunSpec
    model: Encoder
    history: list[list[dict]]  # per stage, per epoch
    reloaded: tuple[bool, ...] = ()
    """Per stage: loaded finished from the cache (also when another process finished it while this
    one waited for its lock), not trained by this call."""

    @property
    def final(self) -> dict:
        return self.history[-1][-1] if self.history and self.history[-1] else {}


def initial_model(spec: RunSpec) -> Encoder:
    torch.manual_seed(spec.seed)
    model = Encoder(spec.model)
    if spec.init != "default":
        INIT_HOOKS[spec.init](model)
    return model


def run(spec: RunSpec, cache_dir: Path, *, progress: bool = True, data: Dataset | None = None) -> RunResult:
    """Train (or load from the cache) every stage of ``spec``; returns the final model and history."""
    data = data if data is not None else built_data(spec.data)
    metrics = walk_metrics(data)
    model = initial_model(spec)
    histories: list[list[dict]] = []
    reloaded: list[bool] = []
    for k, stage in enumerate(spec.stages):
        if k > 0 and set(stage.keep) != set(PARAMETER_GROUPS):
            torch.manual_seed(stage_seed(spec.seed, k))
            model.reset_parameters(tuple(g for g in PARAMETER_GROUPS if g not in stage.keep))
        cache = stage_cache(spec, k, cache_dir)
        task = DatasetTask(data, metrics)
        if stage.objective == "spt" and spec.pretrain_data is not None:  # X5: SPT on another source
            task = DatasetTask(built_data(spec.pretrain_data), metrics)
        meta = {"spec": json.loads(json.dumps(dataclasses.asdict(spec), default=str)), "stage": k,
                "torch": str(torch.__version__), "python": platform.python_version()}
        history, was_reloaded = run_stage(model, task, stage, stage_seed(spec.seed, k), cache,
                                          max_steps=spec.spt_steps if stage.objective == "spt" else None,
                                          options=StageOptions(meta=meta, progress=progress, keep_checkpoints="all"))
        if not was_reloaded:
            cache.write_record({**meta, "history": history})
        reloaded.append(was_reloaded)
        if stage.epochs == 0:
            history = [{"epoch": 0, **metrics(model)}]
        histories.append(history)
    return RunResult(spec, model, histories, tuple(reloaded))


# ----------------------------------------------------------------------------- recipes
def run_spec(recipe: Recipe, data: WalkData, seed: int, **model_overrides) -> RunSpec:
    """``recipe`` on ``data``: the model sized for ``data`` with the caller's overrides, the
    recipe's own ``architecture`` winning over them."""
    model = data.model_config(**{**model_overrides, **dict(recipe.architecture)})
    # the walk's recipes carry this module's PretrainData (PRETRAIN_SOURCES); Recipe names its base class
    source = cast("PretrainData | None", recipe.pretrain_data)
    return RunSpec(data, model, recipe.stages, seed, init=recipe.init, pretrain_data=source,
                   spt_steps=recipe.spt_steps)


def recipe(name: str, data: WalkData, seed: int, budget: Budget = Budget(),
           **model_overrides) -> RunSpec:
    """The run of a design recipe name (:func:`parse_recipe` without the controls) on ``data``."""
    return run_spec(parse_recipe(name, data, budget, controls=False), data, seed, **model_overrides)


def control_recipe(name: str, data: WalkData, seed: int, budget: Budget = Budget(),
                   **model_overrides) -> RunSpec:
    """The run of any recipe name, a mechanism control's or a design recipe's, on ``data``."""
    return run_spec(parse_recipe(name, data, budget), data, seed, **model_overrides)


def parse_recipe(name: str, data: WalkData, budget: Budget = Budget(), *, controls: bool = True) -> Recipe:
    """The :class:`Recipe` a name stands for: the one place where recipe names are read.

    The design's recipes: ``scratch``, ``frozen`` (W_Q, W_K frozen at random init), ``pretrain``
    (SPT only), ``spt`` (SPT then finetune), ``sweep_<e>`` (SPT for ``e`` epochs then finetune),
    ``sptsteps_<k>`` (SPT for ``k`` optimizer steps, ``ceil(k / steps per epoch)`` epochs with the
    last one cut short, then finetune), ``hybrid_<groups>`` (the groups, e.g. ``hybrid_qk_vo``, from
    the SPT checkpoint, the rest fresh, finetuned for the scratch budget) and ``init`` (no training).

    With ``controls``, also the mechanism controls: the :data:`CONTROL_RUNS` (a design recipe on
    another architecture), ``proxinit`` (supervised from the proximity init for the scratch budget;
    ``proxinit_<e>``: ``e`` epochs, same stage key, so one is a prefix of the other) and
    ``xspt_<source>`` (SPT on a :data:`PRETRAIN_SOURCES` source, then finetune on ``data`` for the
    finetune budget; ``xspt_<source>_long``: for the scratch budget).
    """
    parts = name.split("_")
    pre, finetune = spt_stage(budget), supervised_stage(budget, budget.finetune_epochs)
    if name == "scratch":
        return scratch(supervised_stage(budget, budget.scratch_epochs))
    if name == "frozen":
        return scratch(supervised_stage(budget, budget.scratch_epochs, freeze=("qk",)))
    if name == "pretrain":
        return pretrain_only(pre)
    if name == "spt":
        return spt_then_finetune(pre, finetune)
    if name.startswith("sweep_"):
        return spt_then_finetune(spt_stage(budget, int(parts[1])), finetune)
    if name.startswith("sptsteps_"):
        steps = int(parts[1])
        epochs = math.ceil(steps / math.ceil(data.n_train / budget.batch_size))
        return spt_then_finetune(spt_stage(budget, epochs), finetune, spt_steps=steps)
    if name.startswith("hybrid_"):
        return spt_then_finetune(pre, supervised_stage(budget, budget.scratch_epochs, keep=tuple(parts[1:])))
    if name == "init":
        return scratch(supervised_stage(budget, 0))
    if controls and name in CONTROL_RUNS:
        base, architecture = CONTROL_RUNS[name]
        return replace(parse_recipe(base, data, budget), architecture=tuple(architecture.items()))
    if controls and (name == "proxinit" or name.startswith("proxinit_")):
        epochs = budget.scratch_epochs if name == "proxinit" else int(parts[1])
        return scratch(supervised_stage(budget, epochs), init="proxinit")
    if controls and name.startswith("xspt_"):
        if parts[1] not in PRETRAIN_SOURCES or parts[2:] not in ([], ["long"]):
            raise ConfigError(f"unknown recipe {name!r}; sources: {', '.join(PRETRAIN_SOURCES)}")
        epochs = budget.scratch_epochs if parts[2:] == ["long"] else budget.finetune_epochs
        return spt_then_finetune(pre, supervised_stage(budget, epochs), pretrain_data=PRETRAIN_SOURCES[parts[1]](data))
    raise ConfigError(f"unknown recipe {name!r}")


# ----------------------------------------------------------------------------- mechanism controls
class PretrainData(walk.PretrainData):
    """:class:`synthetic.walk.PretrainData` (the X5 source spec) as a :class:`Dataset`."""

    def build(self) -> Dataset:
        x, y = self.sequences()
        # the SPT stage reads only x_train; the test split is a slice so that the Dataset is whole
        return Dataset(x, y, x[:PROBE_SIZE], y[:PROBE_SIZE], mask_id=self.vocab)


@lru_cache(maxsize=4)
def built_data(spec: WalkData | PretrainData) -> Dataset:
    """``spec.build()`` (a pure function of the frozen spec), memoised per process: every run, check
    and figure on one task shares one copy of its sequences."""
    return spec.build()


def control_key(spec: RunSpec) -> dict:
    """The extra cache-key fields of a control run ({} for a plain run: its keys are unchanged)."""
    extra: dict = {}
    if spec.init != "default":
        extra["init"] = spec.init
    if spec.pretrain_data is not None:
        extra["pretrain_data"] = dataclasses.asdict(spec.pretrain_data)
    if spec.spt_steps is not None:
        extra["spt_steps"] = spec.spt_steps
    return extra


PRETRAIN_SOURCES = {
    "symmetric": lambda walk: PretrainData("symmetric", walk.vocab, walk.length, walk.p, walk.n_train),
    "p08": lambda walk: PretrainData("walk", walk.vocab, walk.length, 0.8, walk.n_train),
    "perm": lambda walk: PretrainData("walk", walk.vocab, walk.length, walk.p, walk.n_train, permutation_seed=0),
    "uniform": lambda walk: PretrainData("uniform", walk.vocab, walk.length, walk.p, walk.n_train),
    "shuffled": lambda walk: PretrainData("walk", walk.vocab, walk.length, walk.p, walk.n_train,
                                          shuffle_positions=True),
}
"""X5 pretraining sources built from the walk data's sizes: (a) symmetric steps, (b) p = 0.8,
(c) the same walk with token ids relabelled by a fixed random permutation (positive cases: local
structure kept); negative controls without neighbour structure: (d) i.i.d. uniform tokens, (e) the
walk's own sequences with positions shuffled."""


CONTROL_RUNS: dict[str, tuple[str, dict]] = {
    "alibi": ("scratch", {"attention_bias": "alibi"}),
    "nope": ("spt", {"positional": "none"}),
    "cls": ("scratch", {"pooling": "cls"}),
    "last": ("scratch", {"pooling": "last"}),
}
"""Control runs that are a recipe on another architecture: name -> (recipe, model overrides);
the overrides win over the caller's."""
