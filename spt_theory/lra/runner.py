"""Scratch, SPT and finetuning runs on one LRA task: cached, resumable, written as result JSON.

An :class:`LRARun` holds the options of a command line (:class:`RunOptions`) and trains through
:func:`spt_theory.training.loop.run_stage` with the task's :class:`~spt_theory.lra.inputs.LRATask` as
the loss.  Its recipes (:meth:`LRARun.recipe`, built with the constructors of
:mod:`spt_theory.training.recipes` from the task config's :func:`recipe_budget`):

- ``scratch``: supervised training from the random init of ``seed`` for ``finetune_epochs``.
- ``pretrain``: SPT on the pretraining task's train split (``pretrain_task``, default the task
  itself) for ``pretrain_epochs``, with the finetuned task's architecture; after every epoch the
  masked loss on its validation split (one fixed mask draw) is recorded, and the epoch with the
  lowest one is the *best* checkpoint.
- ``spt``: ``pretrain``, then the ``keep`` groups of the best checkpoint are copied into a model
  initialised exactly as ``scratch``'s (the rest, the head among them, stays fresh; the decoder is
  dropped: frozen and unused), then the same supervised stage as ``scratch``.

``model`` other than ``transformer`` trains a learnability control of
:mod:`spt_theory.lra.controls` (``cnn``, ``lstm``, ``bag``) with ``scratch``'s supervised stage;
its result is written as kind ``control``.  Every stage's warm-up is checked against its length
(:func:`check_warmup`).

Ablations are options: ``pretrain_epochs``, ``layers``, ``pretrain_task``, ``freeze`` (groups fixed
during supervised training: ``qk`` in a scratch run is attention frozen at random init),
``keep`` (hybrid initialisation, e.g. only ``qk`` from the SPT checkpoint) and ``init``
(``proximity``: every random init of the run gets W_Q, W_K that attend to the neighbours, the
rest of the model at its default init: :func:`~spt_theory.core.inits.grid_proximity_init`, the 4
grid neighbours as 1-D offsets, for pixel tasks, :func:`~spt_theory.core.inits.proximity_init`, offsets +-1, for
token tasks; it enters the cache keys only when set, so the keys of default runs are unchanged).

A stage is cached in ``out/cache/<key>/`` where the key hashes everything it depends on (the
data's content, the model, the seed, the stage without its epoch count, the step cap, and for
finetuning the pretraining key and best epoch), so a rerun reloads, a killed run resumes and a
shorter pretraining reuses the epochs of a longer one, as in :mod:`spt_theory.walk.experiments`.
Each finished recipe writes ``out/results/<task>/<recipe>-<key>.json``: options, configs, seed,
versions, runtime, per-epoch history (with, for supervised stages, which test examples were right:
``test_correct``, :mod:`spt_theory.evidence.correctness`) and the metrics (test accuracy at the best
validation epoch).
"""

from __future__ import annotations

import dataclasses
import math
import platform
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

import spt_theory
from spt_theory.core.args import parse_settings
from spt_theory.core.inits import grid2d_proximity_init, grid_proximity_init, proximity_init
from spt_theory.core.model import Encoder
from spt_theory.lra import controls
from spt_theory.lra.configs import LRAConfig, tiny
from spt_theory.lra.controls import ControlConfig, build, check_control
from spt_theory.lra.data import LRAData, data_source, load_task_data, real_lengths
from spt_theory.lra.inputs import LRATask, LRATraining
from spt_theory.lra.references import references, token_types
from spt_theory.lra.tasks import config_for
from spt_theory.training.cache import StageCache, load_checkpoint
from spt_theory.training.loop import Stage, StageOptions, load_groups, run_stage, stage_seed, stage_steps
from spt_theory.training.recipes import Budget, Recipe, scratch, spt_stage, spt_then_finetune, supervised_stage
from spt_theory.training.runtime import Runtime
from spt_theory.util.files import InputError, write_json

ENCODER_GROUPS = ("qk", "vo", "mlp", "norm", "embed")
"""What finetuning takes from the SPT checkpoint by default (the head is never trained by SPT)."""
DEFAULT_FINETUNE_EPOCHS = 20
MODELS = ("transformer", "cnn", "lstm", "bag")
INITS = ("default", "proximity", "proximity2d")
"""How a run's Transformer starts (:attr:`RunOptions.init`; module doc).  ``proximity2d`` (pixel
tasks; 2026-12-05): W_Q, W_K fitted to the true 2-D grid neighbours, no row wrap, an edge pixel
attending to itself where a neighbour is missing (:func:`~spt_theory.core.inits.grid2d_proximity_init`)."""
WARMUP_SHARE = 1 / 3
"""Largest share of a stage's optimizer steps its linear warm-up may take (:func:`check_warmup`)."""


@dataclass(frozen=True)
class RunOptions:
    """Everything a run depends on besides the runtime.  ``None`` means the task config's value."""

    task: str
    data_dir: Path
    pretrain_task: str | None = None
    pretrain_data_dir: Path | None = None
    layers: int | None = None
    pretrain_epochs: int | None = None
    finetune_epochs: int = DEFAULT_FINETUNE_EPOCHS
    max_steps: int | None = None
    seed: int = 0
    out: Path = Path("runs/lra")
    tiny: bool = False
    overrides: tuple[tuple[str, str], ...] = ()
    freeze: tuple[str, ...] = ()
    keep: tuple[str, ...] = ENCODER_GROUPS
    checkpoint_every: int = 200
    progress: bool = True
    model: str = "transformer"
    init: str = "default"

    def __post_init__(self):
        if self.model not in MODELS:
            raise InputError(f"--model {self.model}: must be one of {', '.join(MODELS)}")
        if self.init not in INITS:
            raise InputError(f"init {self.init}: must be one of {', '.join(INITS)}")
        if self.init != "default" and self.model != "transformer":
            raise InputError(f"init {self.init}: only for the transformer (--model {self.model} has no W_Q, W_K)")
        if self.init == "proximity2d" and config_for(self.task).masking != "pixel":
            raise InputError(f"init proximity2d: only for image tasks (task {self.task} is a token sequence: "
                             "use init=proximity)")
        if self.finetune_epochs < 1:
            raise InputError(f"--finetune-epochs must be >= 1, got {self.finetune_epochs}")
        if self.checkpoint_every < 1:
            raise InputError(f"--checkpoint-every must be >= 1, got {self.checkpoint_every}")


def resolve_config(task: str, options: RunOptions) -> LRAConfig:
    """The task's config after ``--tiny``, ``--layers``, ``--set``, ``--epochs`` and ``--max-steps``."""
    config = config_for(task)
    if options.tiny:
        config = tiny(config)
    if options.layers is not None:
        config = replace(config, n_layers=options.layers)
    config = apply_overrides(config, options.overrides)
    if options.pretrain_epochs is not None:
        config = replace(config, pretrain_epochs=options.pretrain_epochs)
    if options.max_steps is not None:
        config = replace(config, max_steps=options.max_steps)
    return config


def apply_overrides(config: LRAConfig, overrides: tuple[tuple[str, str], ...]) -> LRAConfig:
    """``--set FIELD=VALUE`` pairs applied to ``config``, parsed by the one ``--set`` parser
    (:func:`spt_theory.core.args.parse_settings`: each value as the field's type, the old model
    spellings ``layers``, ``heads``, ``ff`` read with a deprecation line); the config then validates."""
    names = [f.name for f in dataclasses.fields(LRAConfig) if f.name != "task"]
    settings = parse_settings([f"{name}={text}" for name, text in overrides], config, names, "task config")
    return replace(config, **settings)


def check_warmup(stage: Stage, steps: int) -> None:
    """Refuse (InputError) a stage whose warm-up takes more than ``WARMUP_SHARE`` of its ``steps``
    optimizer steps: the LRA configs' 2000-5000 warm-up steps would otherwise outlast a CPU-sized
    run, which then never trains at its learning rate.  A warm-up of w steps runs w - 1 steps
    below the full rate (step t at (t + 1) / w of it), so w = 1 is none.  Refused, not scaled: the
    message gives the largest warm-up allowed, for ``--set warmup_steps``."""
    if stage.warmup_steps - 1 > WARMUP_SHARE * steps:
        raise InputError(f"warmup_steps {stage.warmup_steps} is more than {WARMUP_SHARE:.0%} of this "
                         f"{stage.objective} stage's {steps} optimizer steps: use --set warmup_steps="
                         f"{int(WARMUP_SHARE * steps) + 1} or less (or a longer run)")


def padding(config: LRAConfig) -> dict:
    """How padding is handled (recorded in every result and cache key): padded keys masked in
    attention, the readout, and whether batches come from length buckets cut to their longest."""
    return {"masked": config.mask_padding and config.masking == "token", "pooling": config.pooling,
            "bucketed": config.bucket and config.trims_padding}


def recipe_budget(config: LRAConfig, finetune_epochs: int) -> Budget:
    """The task config's training settings as a recipe :class:`~spt_theory.training.recipes.Budget`:
    SPT at ``lr_pretrain``, supervised training (scratch and finetuning alike) at ``lr_finetune``
    for ``finetune_epochs``, both with the config's batch size and warm-up."""
    return Budget(scratch_epochs=finetune_epochs, pretrain_epochs=config.pretrain_epochs,
                  finetune_epochs=finetune_epochs, lr=config.lr_finetune, pretrain_lr=config.lr_pretrain,
                  batch_size=config.batch_size, mask_ratio=config.mask_ratio, warmup_steps=config.warmup_steps)


@dataclass(frozen=True)
class Pretrained:
    """A finished pretraining: its cache key, history, and the best-validation checkpoint."""

    key: str
    history: list[dict]
    best_epoch: int
    checkpoint: Path


def versions() -> dict:
    return {"spt_theory": spt_theory.__version__, "python": platform.python_version(),
            "torch": torch.__version__, "numpy": np.__version__, "cuda": torch.version.cuda,
            "platform": platform.platform()}


@dataclass
class LRARun:
    """The recipes of one command line on one process (rank) of ``runtime``."""

    options: RunOptions
    runtime: Runtime = field(default_factory=Runtime)
    data_cache: dict = field(default_factory=dict)
    """Loaded data by (task, folder, config): runs of one process (a sweep) may share it."""

    def __post_init__(self):
        self.config = resolve_config(self.options.task, self.options)
        self.source = resolve_config(self.options.pretrain_task or self.options.task, self.options)

    # ------------------------------------------------------------------------------- recipes
    def recipe(self, pretrained: bool) -> Recipe:
        """``spt`` (``pretrained``): SPT on the pretraining task with its settings, the head taking
        no part (frozen, so data-parallel runs skip it), then finetuning that keeps the ``keep``
        groups; else ``scratch``: the same supervised stage from the random init (``keep`` empty).
        The reconstruction decoder is dropped from supervised training (frozen and unused)."""
        epochs = self.options.finetune_epochs
        finetune = supervised_stage(recipe_budget(self.config, epochs), epochs,
                                    freeze=("decoder", *self.options.freeze),
                                    keep=self.options.keep if pretrained else ())
        if not pretrained:
            return scratch(finetune)
        return spt_then_finetune(spt_stage(recipe_budget(self.source, epochs), freeze=("head",)), finetune)

    def pretrain(self) -> Pretrained:
        self._transformer_only()
        data, fingerprint, task, model_config = self._setup(self.source, self._pretrain_dir)
        stage = self.recipe(pretrained=True).stages[0]
        cache = self.stage_cache({"objective": "spt", "data": fingerprint, "model": dataclasses.asdict(model_config),
                                  "seed": self.options.seed, "stage": dataclasses.asdict(replace(stage, epochs=0)),
                                  "max_steps": self.source.max_steps, "padding": padding(self.source),
                                  **self._init_field()})
        key = cache.key
        model = self.initial_model(model_config)
        self._say(f"SPT pretraining on {self.source.task} ({_budget(stage, self.source)}) -> cache {key}")
        history = self._train(model, data, stage, task, cache, stage_seed(self.options.seed))
        best = min(history, key=lambda record: _finite_or_inf(record["val_loss"]))["epoch"]
        pretrained = Pretrained(key, history, best, cache.checkpoint(best))
        self._write("pretrain", key, {
            "pretrain_task": self.source.task, "pretrain_config": dataclasses.asdict(self.source),
            "stages": [dataclasses.asdict(stage)], "model": dataclasses.asdict(model_config),
            "data": self.describe_data(data, fingerprint, self.source, self._pretrain_dir),
            "metrics": {"best_epoch": best, "best_val_loss": history[best - 1]["val_loss"],
                        "final_val_loss": history[-1]["val_loss"], "epochs_run": len(history),
                        "train_seconds": _seconds(history)},
            "history": history})
        return pretrained

    def supervised(self, pretrained: Pretrained | None) -> dict:
        """``scratch`` (``pretrained`` None) or finetuning from the best SPT checkpoint."""
        data, fingerprint, task, model_config = self._setup(self.config, self.options.data_dir)
        recipe = self.recipe(pretrained is not None)
        stage = recipe.stages[-1]
        init = {"pretrain": pretrained.key, "epoch": pretrained.best_epoch} if pretrained else None
        cache = self.stage_cache({"objective": "supervised", "data": fingerprint,
                                  "model": dataclasses.asdict(model_config), "seed": self.options.seed,
                                  "stage": dataclasses.asdict(replace(stage, epochs=0)),
                                  "max_steps": self.config.max_steps, "init": init, "padding": padding(self.config),
                                  **self._init_field()})
        key = cache.key
        model = self.initial_model(model_config)
        if pretrained:
            load_groups(model, load_checkpoint(pretrained.checkpoint)["model"], stage.keep, pretrained.checkpoint)
        kind = "spt" if pretrained else "scratch" if self.options.model == "transformer" else "control"
        self._say(f"{kind}: supervised on {self.config.task} ({_budget(stage, self.config)}) -> cache {key}")
        history = self._train(model, data, stage, task, cache, stage_seed(self.options.seed, 1))
        best = max(history, key=lambda record: record["val_accuracy"])
        result = {
            "stages": [dataclasses.asdict(s) for s in recipe.stages],
            "model": dataclasses.asdict(model_config), "n_parameters": sum(p.numel() for p in model.parameters()),
            "data": self.describe_data(data, fingerprint, self.config, self.options.data_dir),
            "metrics": {"test_accuracy": best["test_accuracy"], "val_accuracy": best["val_accuracy"],
                        "best_epoch": best["epoch"], "final_test_accuracy": history[-1]["test_accuracy"],
                        "epochs_run": len(history), "train_seconds": _seconds(history)},
            "history": history}
        if pretrained:
            result.update(pretrain_task=self.source.task, pretrain_config=dataclasses.asdict(self.source),
                          pretrain={"cache": pretrained.key, "best_epoch": pretrained.best_epoch,
                                    "epochs_run": len(pretrained.history),
                                    "train_seconds": _seconds(pretrained.history),
                                    "best_val_loss": pretrained.history[pretrained.best_epoch - 1]["val_loss"]})
        return self._write(kind, key, result)

    def finetune(self) -> dict:
        """``pretrain`` (reloaded if cached), then finetuning from its best checkpoint."""
        self.check_transfer()
        return self.supervised(self.pretrain())

    def confirm(self) -> tuple[dict, dict]:
        """``scratch`` and ``spt`` with the same supervised stage: (scratch result, spt result)."""
        self.check_transfer()
        scratch = self.supervised(None)
        spt = self.supervised(self.pretrain())
        self._say(f"{self.config.task}: scratch {100 * scratch['metrics']['test_accuracy']:.2f}% vs "
                  f"SPT {100 * spt['metrics']['test_accuracy']:.2f}% test accuracy (at best validation epoch)")
        return scratch, spt

    def check_transfer(self) -> None:
        """Fail before any training if the ``keep`` groups of the pretraining model do not fit the
        finetuned one (e.g. the token embeddings of two vocabularies)."""
        self._transformer_only()
        *_, source_config = self._setup(self.source, self._pretrain_dir)
        *_, target_config = self._setup(self.config, self.options.data_dir)
        with torch.device("meta"):
            source, target = Encoder(source_config), Encoder(target_config)
        load_groups(target, source.state_dict(), self.options.keep,
                    Path(f"--pretrain-task {self.source.task} -> --task {self.config.task}"))

    def _transformer_only(self) -> None:
        if self.options.model != "transformer":
            raise InputError(f"--model {self.options.model}: a control has no SPT stage (use 'scratch')")

    # ------------------------------------------------------------------------------- controls
    def check_control(self, kind: str) -> None:
        """InputError unless ``kind`` is a control of the finetuned task."""
        _, _, task, _ = self.setup_target()
        check_control(kind, self.config.task, task.tokens)

    def baselines(self, kinds: tuple[str, ...]) -> dict:
        """The untrained baselines ``kinds`` on the finetuned task (:func:`controls.baselines`)."""
        data, _, _, _ = self.setup_target()
        distances = (controls.marker_distances(self.options.data_dir, self.config.resolution,
                                               self.config.contour_length) if "shortcut" in kinds else None)
        return controls.baselines(kinds, data, distances)

    def reference_entropies(self) -> dict:
        """The reference entropies of the finetuned task's masked reconstruction
        (:mod:`spt_theory.lra.references`), at its mask ratio."""
        data, _, task, _ = self.setup_target()
        vocab = data.vocab
        return references(data.x_train, data.x_val, self.config.mask_ratio, task.tokens, vocab.pad_id,
                          vocab.mask_id, self.config.vocab_size, token_types(vocab.tokens) if task.tokens else None)

    # ------------------------------------------------------------------------------- plumbing
    @property
    def _pretrain_dir(self) -> Path:
        return self.options.pretrain_data_dir or self.options.data_dir

    def setup_target(self):
        """(data, fingerprint, task, model config) of the finetuned task."""
        return self._setup(self.config, self.options.data_dir)

    def setup_source(self):
        """(data, fingerprint, task, model config) of the pretraining task (the finetuned task's
        architecture reading the pretraining data)."""
        return self._setup(self.source, self._pretrain_dir)

    def _setup(self, config: LRAConfig, data_dir: Path):
        """(data, fingerprint, task, model config) of ``config``'s task, with the target's architecture
        (a :class:`~spt_theory.lra.controls.ControlConfig` for a control)."""
        data, fingerprint = self._load(config, data_dir)
        task = LRATask(config, data.vocab)
        if self.options.model == "transformer":
            return data, fingerprint, task, task.model_config(self.config, data.width)
        check_control(self.options.model, config.task, task.tokens)
        return data, fingerprint, task, ControlConfig(self.options.model, config.num_classes,
                                                      config.vocab_size if task.tokens else 0, data.width)

    def _load(self, config: LRAConfig, data_dir: Path) -> tuple[LRAData, str]:
        """The task's data on the runtime's device, and its content fingerprint (read once)."""
        where = (config.task, Path(data_dir), config.max_length, config.resolution, config.contour_length,
                 str(self.runtime.device))
        if where not in self.data_cache:
            data = load_task_data(config, data_dir)
            self.data_cache[where] = (data.to(self.runtime.device), data.fingerprint())
        return self.data_cache[where]

    def initial_model(self, model_config):
        """The random init of ``seed`` (made on the CPU, so it is the same on every device), then
        the ``init`` hook (module doc)."""
        torch.manual_seed(self.options.seed)
        if isinstance(model_config, ControlConfig):  # RunOptions allows an init hook for the transformer only
            return build(model_config).to(self.runtime.device)
        model = Encoder(model_config)
        if self.options.init == "proximity":
            (proximity_init if model_config.vocab_size > 0 else grid_proximity_init)(model)
        elif self.options.init == "proximity2d":
            grid2d_proximity_init(model)
        return model.to(self.runtime.device)

    def _init_field(self) -> dict:
        """What a stage's cache key adds for ``init``: nothing at the default (old keys unchanged)."""
        return {} if self.options.init == "default" else {"init_hook": self.options.init}

    def stage_cache(self, fields: dict) -> StageCache:
        """The cache of the stage whose key hashes ``fields``: ``out/cache/<key>/``."""
        return StageCache.of(self.options.out / "cache", fields)

    def _train(self, model, data: LRAData, stage: Stage, task: LRATask, cache: StageCache, seed: int) -> list[dict]:
        meta = {"task": self.config.task, "options": options_json(self.options), "stage": dataclasses.asdict(stage)}
        lengths = (real_lengths(data.x_train, data.vocab.pad_id).cpu() if padding(task.config)["bucketed"]
                   else None)
        check_warmup(stage, stage_steps(len(data.y_train), stage.epochs, stage.batch_size, task.config.max_steps))
        options = StageOptions(meta=meta, progress=self.options.progress,
                               checkpoint_every=self.options.checkpoint_every, runtime=self.runtime)
        history, _ = run_stage(model, LRATraining(task, data, self.runtime, lengths), stage, seed, cache,
                               max_steps=task.config.max_steps, options=options)
        return history

    def describe_data(self, data: LRAData, fingerprint: str, config: LRAConfig, data_dir: Path) -> dict:
        lengths = real_lengths(data.x_train, data.vocab.pad_id).float()
        return {"task": config.task, "fingerprint": fingerprint, "width": data.width,
                "n_train": len(data.y_train), "n_val": len(data.y_val), "n_test": len(data.y_test),
                "mean_length": round(lengths.mean().item(), 1), "padding": padding(config),
                "source": data_source(config, data_dir)}

    def _write(self, kind: str, key: str, result: dict) -> dict:
        """The full result (options, config, seed, versions, ``result``); written by the main rank."""
        full = {"kind": kind, "task": self.config.task, "seed": self.options.seed,
                "options": options_json(self.options), "config": dataclasses.asdict(self.config),
                **result, "cache": key,
                "runtime": {"device": str(self.runtime.device), "autocast_bf16": self.runtime.autocast,
                            "world_size": self.runtime.world_size},
                "versions": versions(), "written": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        if self.runtime.main:
            path = self.options.out / "results" / self.config.task / f"{kind}-{key}.json"
            write_json(path, full)
            self._say(f"wrote {path}")
        return full

    def _say(self, message: str) -> None:
        if self.runtime.main:
            print(message, file=sys.stderr, flush=True)


def options_from_json(options: dict, **changes) -> RunOptions:
    """The :class:`RunOptions` a result JSON recorded (``changes`` replace fields, e.g. progress)."""
    known = {f.name: f for f in dataclasses.fields(RunOptions)}
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise InputError(f"result options: unknown field {unknown[0]!r} (written by another version?)")
    values = {}
    for name, value in {**options, **changes}.items():
        if name in ("data_dir", "out", "pretrain_data_dir") and value is not None:
            value = Path(value)
        elif isinstance(value, list):
            value = tuple(tuple(v) if isinstance(v, list) else v for v in value)
        values[name] = value
    return RunOptions(**values)


def options_json(options: RunOptions) -> dict:
    """The options as JSON values (paths as strings); :func:`options_from_json` reads them back.
    ``init`` is left out at its default, so the options of default runs (and the sweeps that
    compare them) read as before it existed."""
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in dataclasses.asdict(options).items()
            if not (k == "init" and v == "default")}


def _budget(stage: Stage, config: LRAConfig) -> str:
    return f"{stage.epochs} epochs" + ("" if config.max_steps is None else f", at most {config.max_steps} steps")


def _finite_or_inf(value: float) -> float:
    return value if math.isfinite(value) else math.inf


def _seconds(history: list[dict]) -> float:
    return round(sum(record["seconds"] for record in history), 3)
