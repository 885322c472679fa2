"""Named experiments on the walk task, cached on disk by a hash of their full config.

A run is a :class:`RunSpec`: the data (:class:`WalkData`), the model (:class:`ModelConfig`), the
seed and a sequence of training stages.  Stage ``k`` is cached in ``cache_dir/<key_k>/`` where
``key_k`` hashes everything it depends on: data, model, seed, the full stages before it, and the
stage itself *without its epoch count*.  Its directory keeps ``epoch_<e>.pt`` for every epoch, so
the same stage run for fewer epochs (the pretraining-length sweep) or resumed after a kill reuses
what was trained.  With a constant learning rate after warm-up, epoch ``e`` of a longer run is
exactly a run of ``e`` epochs.

The recipes (:func:`recipe`) are the design's runs: ``scratch``, ``spt`` (SPT then finetune),
``pretrain`` (SPT only), ``frozen`` (W_Q, W_K frozen at random init), ``hybrid_<groups>`` (groups from the SPT checkpoint,
the rest fresh), ``sweep_<e>`` (SPT for ``e`` epochs then finetune).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import platform
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from spt_theory.io import write_json
from spt_theory.model import PARAMETER_GROUPS, Encoder, ModelConfig
from spt_theory.probes import attention_patterns, band_mass, mean_attention_distance
from spt_theory.training import Dataset, Stage, accuracy, load_checkpoint, load_model_state, train_stage
from synthetic.walk import WalkTask, generate_walk


@dataclass(frozen=True)
class WalkData:
    """The walk-direction data set: task parameters and split sizes (test set uses seed + 1)."""

    vocab: int = 16
    length: int = 100
    p: float = 0.5
    n_train: int = 8000
    n_test: int = 2000
    data_seed: int = 0

    def build(self) -> Dataset:
        WalkTask(self.vocab, self.length, self.p)
        x_tr, y_tr = generate_walk(self.vocab, self.length, self.p, self.n_train, 2 * self.data_seed)
        x_te, y_te = generate_walk(self.vocab, self.length, self.p, self.n_test, 2 * self.data_seed + 1)
        return Dataset(x_tr, y_tr, x_te, y_te, mask_id=self.vocab)

    def model_config(self, **overrides) -> ModelConfig:
        """The design's 1-layer model sized for this data (token ids 0..V-1, ``<mask>`` = V)."""
        base = dict(vocab_size=self.vocab + 1, recon_classes=self.vocab, n_classes=2,
                    max_len=self.length)
        return ModelConfig(**{**base, **overrides})


@dataclass(frozen=True)
class RunSpec:
    data: WalkData
    model: ModelConfig
    stages: tuple[Stage, ...]
    seed: int = 0


def config_hash(obj) -> str:
    """sha256 (16 hex digits) of the canonical JSON of a (nested) dataclass."""
    text = json.dumps(dataclasses.asdict(obj) if dataclasses.is_dataclass(obj) else obj,
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


CACHE_FORMAT = 1  # bump when the checkpoint layout or the training semantics change


def stage_key(spec: RunSpec, k: int) -> str:
    """Cache key of stage ``k``: everything it depends on, its own epoch count excluded."""
    return config_hash({"format": CACHE_FORMAT, "data": dataclasses.asdict(spec.data), "model": dataclasses.asdict(spec.model),
                        "seed": spec.seed,
                        "before": [dataclasses.asdict(s) for s in spec.stages[:k]],
                        "stage": dataclasses.asdict(replace(spec.stages[k], epochs=0))})


PROBE_SIZE = 256


def walk_metrics(data: Dataset):
    """Per-epoch metrics: test accuracy, band mass and mean attention distance on a probe batch."""
    probe = data.x_test[:PROBE_SIZE]

    def metrics(model: Encoder) -> dict:
        pattern = attention_patterns(model, probe)[0]
        return {"test_accuracy": accuracy(model, data.x_test, data.y_test),
                "band_mass": band_mass(pattern), "attention_distance": mean_attention_distance(pattern)}

    return metrics


@dataclass
class RunResult:
    spec: RunSpec
    model: Encoder
    history: list[list[dict]]  # per stage, per epoch

    @property
    def final(self) -> dict:
        return self.history[-1][-1] if self.history and self.history[-1] else {}


def initial_model(spec: RunSpec) -> Encoder:
    torch.manual_seed(spec.seed)
    return Encoder(spec.model)


def run(spec: RunSpec, cache_dir: Path, *, progress: bool = True, data: Dataset | None = None) -> RunResult:
    """Train (or load from the cache) every stage of ``spec``; returns the final model and history."""
    data = data if data is not None else spec.data.build()
    metrics = walk_metrics(data)
    model = initial_model(spec)
    histories: list[list[dict]] = []
    for k, stage in enumerate(spec.stages):
        if k > 0 and set(stage.keep) != set(PARAMETER_GROUPS):
            torch.manual_seed(spec.seed * 1000 + k)
            model.reset_parameters(tuple(g for g in PARAMETER_GROUPS if g not in stage.keep))
        stage_dir = cache_dir / stage_key(spec, k)
        done = stage_dir / f"epoch_{stage.epochs}.pt"
        if done.exists():
            ckpt = load_checkpoint(done)
            load_model_state(model, ckpt["model"], done)
            history = list(ckpt["history"])
        else:
            meta = {"spec": json.loads(json.dumps(dataclasses.asdict(spec), default=str)), "stage": k,
                    "torch": str(torch.__version__), "python": platform.python_version()}
            history = train_stage(model, data, stage, spec.seed * 1000 + k, stage_dir,
                                  epoch_metrics=metrics, meta=meta, progress=progress)
            write_json(stage_dir / "run.json", {**meta, "history": history})
        if stage.epochs == 0:
            history = [{"epoch": 0, **metrics(model)}]
        histories.append(history)
    return RunResult(spec, model, histories)


# ----------------------------------------------------------------------------- recipes
@dataclass(frozen=True)
class Budget:
    """Epoch budget of the recipes (the design's prototype: scratch 8, SPT 4 then finetune 3)."""

    scratch_epochs: int = 8
    pretrain_epochs: int = 4
    finetune_epochs: int = 3
    lr: float = 1e-3
    batch_size: int = 64
    mask_ratio: float = 0.15


def recipe(name: str, data: WalkData, seed: int, budget: Budget = Budget(),
           **model_overrides) -> RunSpec:
    """The stages of a named run.  Hybrid names list the groups kept: ``hybrid_qk``, ``hybrid_qk_vo``."""
    sup = dict(objective="supervised", lr=budget.lr, batch_size=budget.batch_size)
    pre = Stage("spt", budget.pretrain_epochs, lr=budget.lr, batch_size=budget.batch_size,
                mask_ratio=budget.mask_ratio)
    if name == "scratch":
        stages = (Stage(epochs=budget.scratch_epochs, **sup),)
    elif name == "frozen":
        stages = (Stage(epochs=budget.scratch_epochs, freeze=("qk",), **sup),)
    elif name == "pretrain":
        stages = (pre,)
    elif name == "spt":
        stages = (pre, Stage(epochs=budget.finetune_epochs, **sup))
    elif name.startswith("sweep_"):
        stages = (replace(pre, epochs=int(name.split("_")[1])), Stage(epochs=budget.finetune_epochs, **sup))
    elif name.startswith("hybrid_"):
        keep = tuple(name.split("_")[1:])
        stages = (pre, Stage(epochs=budget.finetune_epochs, keep=keep, **sup))
    elif name == "init":
        stages = (Stage(epochs=0, **sup),)
    else:
        raise ValueError(f"unknown recipe {name!r}")
    return RunSpec(data, data.model_config(**model_overrides), stages, seed)
