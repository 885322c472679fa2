r"""The plateau grid's runs: the step-level :class:`Trainer` (evaluation every few steps, stop at
the escape, SGD beside AdamW), a scratch run's escape step (:func:`run_scratch`), a seed's SPT steps
to 95% (:func:`run_spt`) and the noise scales of the law (:func:`gradient_rms`).

The runs are the design's model and walk data (V = 16, p = 0.5, 8000 / 2000 sequences) at length n,
batch 64, the batch order and masks of :func:`spt_theory.training.loop.train_stage` with the stage
seeds of :func:`spt_theory.walk.experiments.run` (:func:`~spt_theory.training.loop.stage_seed`), so
the AdamW scratch run at n = 100 follows the trajectory of E2 / E11b's ``scratch`` run of the same seed. Optimisers
(:data:`~spt_theory.plateau.design.OPTIMISERS`): AdamW lr 1e-3, weight decay 0.01 (the recipe), and
SGD with momentum 0.9 at :data:`~spt_theory.plateau.design.SGD_LR`, no weight decay. Init scale
(``qk_scale``): the qk layer (W_Q, W_K and their biases) multiplied by it after the seeded default
init.

Each run is stored under ``<cache>/<key>/`` (:class:`~spt_theory.training.cache.StageCache`, key =
hash of the :class:`~spt_theory.plateau.design.PlateauRun` and the format): ``last.pt`` every
:data:`CHECKPOINT_EVERY` steps (resume point), ``run.json`` when done. ``python -m
spt_theory.plateau`` trains the grid (:func:`~spt_theory.plateau.design.grid`) and writes its
summary (``CACHE_DIR/plateau_runs.json``; ``--promote`` copies a complete grid's into the committed
evidence ``spt_theory/evidence/plateau/plateau_runs.json``) that the claims P1-P5
(:mod:`spt_theory.checks.plateau`) and the figure ``plateau_law`` read.
"""

from __future__ import annotations

import math
import platform
import time
from pathlib import Path

import torch

from spt_theory.core.model import Encoder
from spt_theory.evidence import schema
from spt_theory.plateau.design import (
    ADAMW_LR,
    BATCH,
    CHECKPOINT_EVERY,
    ESCAPE,
    EVAL_SIZE,
    FINETUNE_CAP,
    LENGTHS,
    SEEDS,
    SGD_MOMENTUM,
    SOLVED,
    PlateauRun,
    eval_every,
    spt_grid,
    spt_search,
)
from spt_theory.training.cache import StageCache, StageState, load_checkpoint, save_checkpoint
from spt_theory.training.loop import DatasetTask, Stage, Steps, accuracy, load_model_state, stage_seed
from spt_theory.training.optim import make_optimizer
from spt_theory.util.files import read_json, write_json
from spt_theory.walk.experiments import built_data


def initial_model(run: PlateauRun) -> Encoder:
    """The seeded default init (as :func:`spt_theory.walk.experiments.initial_model`), the qk layer
    (W_Q, W_K, b_Q, b_K) times ``qk_scale``."""
    torch.manual_seed(run.seed)
    model = Encoder(run.model_config())
    with torch.no_grad():
        for block in model.blocks:
            block.attn.qk.weight.mul_(run.qk_scale)
            block.attn.qk.bias.mul_(run.qk_scale)
    return model


class Trainer:
    """Steps ``model`` on ``objective`` (:class:`~spt_theory.training.loop.Steps`: the batch order
    and masks of ``train_stage`` for ``stage_seed``) with AdamW or SGD with momentum at ``lr``;
    ``step`` counts the optimiser steps done."""

    def __init__(self, model: Encoder, data, objective: str, stage_seed: int, *, lr: float = ADAMW_LR,
                 optimiser: str = "adamw"):
        self.model, self.data = model, data
        self.optimiser = make_optimizer(model, lr, kind=optimiser,
                                        momentum=SGD_MOMENTUM if optimiser == "sgd" else 0.0)
        self.steps = Steps(model, DatasetTask(data), Stage(objective, 1, lr=lr, batch_size=BATCH), stage_seed,
                           self.optimiser)
        self.step = 0

    def advance(self, steps: int) -> None:
        self.model.train()
        for _ in range(steps):
            self.steps.take(self.step)
            self.step += 1

    def accuracy(self) -> float:
        return accuracy(self.model, self.data.x_test[:EVAL_SIZE], self.data.y_test[:EVAL_SIZE])

    def state(self, history: list[dict]) -> StageState:
        return StageState(*divmod(self.step, self.steps.per_epoch), 0.0, history)

    def resume(self, path: Path) -> list[dict]:
        ckpt = load_checkpoint(path)
        load_model_state(self.model, ckpt["model"], path)
        self.optimiser.load_state_dict(ckpt["optimizer"])
        self.step = ckpt["epoch"] * self.steps.per_epoch + ckpt["step_in_epoch"]
        return list(ckpt["history"])


def meta(run: PlateauRun) -> dict:
    settings = {"model_settings": dict(run.model)} if run.model else {}
    return {"run": run.fields(), **settings, "torch": str(torch.__version__), "python": platform.python_version()}


def train_until(trainer: Trainer, cache: StageCache, run: PlateauRun, history: list[dict], target: float,
                limit: int, every: int, log=None) -> int | None:
    """Advance ``trainer`` to ``limit`` steps, evaluating every ``every`` steps (appended to
    ``history`` as {step, test_accuracy}); the first step with accuracy >= ``target``, else None.
    ``last.pt`` every :data:`CHECKPOINT_EVERY` steps; ``log(line)`` after each evaluation."""
    while trainer.step < limit:
        trainer.advance(min(every, limit - trainer.step))
        history.append({"step": trainer.step, "test_accuracy": trainer.accuracy()})
        if log is not None:
            log(f"{run.kind} n={run.length} seed={run.seed}: step {trainer.step}/{limit} "
                f"test accuracy {history[-1]['test_accuracy']:.3f} (target {target})")
        if history[-1]["test_accuracy"] >= target:
            return trainer.step
        if trainer.step % CHECKPOINT_EVERY == 0:
            save_checkpoint(cache.last, trainer.model, trainer.optimiser, trainer.state(history), meta(run))
    return None


def run_scratch(run: PlateauRun, root: Path, log=None) -> dict:
    """The escape step of a scratch run (trained, resumed or read from ``root``)."""
    cache = run.cache(root)
    record_path = cache.dir / "run.json"
    if record_path.exists():
        return read_json(record_path)
    with cache.lock():
        if record_path.exists():  # another process finished the run while this one waited
            return read_json(record_path)
        model = initial_model(run)
        trainer = Trainer(model, built_data(run.data), "supervised", stage_seed(run.seed), lr=run.lr,
                          optimiser=run.optimiser)
        history = trainer.resume(cache.last) if cache.last.exists() else []
        start = time.perf_counter()
        escape = next((h["step"] for h in history if h["test_accuracy"] >= ESCAPE), None)
        if escape is None:
            escape = train_until(trainer, cache, run, history, ESCAPE, run.cap, eval_every(run.length), log)
        record = {**meta(run), "escape_step": escape, "capped": escape is None, "steps": trainer.step,
                  "seconds": round(time.perf_counter() - start, 1), "history": history}
        cache.write_record(record)
        cache.finish()
    return record



def run_spt(run: PlateauRun, root: Path, log=None) -> dict:
    """SPT steps to 95% (:func:`spt_search`) of one seed at one n: one SPT trajectory (AdamW, 15%
    masking, stage seed ``1000 seed``) saved at each grid point tried, each finetuned (stage seed
    ``1000 seed + 1``) for at most :data:`FINETUNE_CAP` steps, stopping at 95%."""
    cache = run.cache(root)
    record_path = cache.dir / "run.json"
    if record_path.exists():
        return read_json(record_path)
    start = time.perf_counter()
    with cache.lock():
        if record_path.exists():  # another process finished the run while this one waited
            return read_json(record_path)
        data = built_data(run.data)
        finetunes: dict[str, dict] = {}
        for path in cache.dir.glob("finetune_*.json"):
            finetunes[path.stem.split("_")[1]] = read_json(path)

        def pretrained(steps: int) -> Encoder:
            path = cache.dir / f"spt_{steps}.pt"
            if not path.exists():
                model = initial_model(run)
                trainer = Trainer(model, data, "spt", stage_seed(run.seed))
                done = [int(p.stem.split("_")[1]) for p in cache.dir.glob("spt_*.pt")]
                below = max((s for s in done if s < steps), default=None)
                if below is not None:
                    trainer.resume(cache.dir / f"spt_{below}.pt")
                if log is not None:
                    log(f"spt n={run.length} seed={run.seed}: SPT steps {trainer.step} -> {steps}")
                trainer.advance(steps - trainer.step)
                save_checkpoint(path, model, trainer.optimiser, trainer.state([]), meta(run))
            model = initial_model(run)
            load_model_state(model, load_checkpoint(path)["model"], path)
            return model

        def solves(steps: int) -> bool:
            if str(steps) not in finetunes:
                model = pretrained(steps)
                trainer = Trainer(model, data, "supervised", stage_seed(run.seed, 1))
                history: list[dict] = []
                if log is not None:
                    log(f"spt n={run.length} seed={run.seed}: finetuning the checkpoint at {steps} SPT steps")
                reached = train_until(trainer, cache, run, history, SOLVED, FINETUNE_CAP, 25, log)
                finetunes[str(steps)] = {"finetune_steps_to_95": reached, "history": history}
                write_json(cache.dir / f"finetune_{steps}.json", finetunes[str(steps)])
            return finetunes[str(steps)]["finetune_steps_to_95"] is not None

        steps, tried = spt_search(solves, spt_grid(run))
        record = {**meta(run), "spt_steps_to_95": steps, "capped": steps is None,
                  "finetune_steps_to_95": None if steps is None else finetunes[str(steps)]["finetune_steps_to_95"],
                  "tried": {str(s): ok for s, ok in sorted(tried.items())},
                  "seconds": round(time.perf_counter() - start, 1)}
        cache.write_record(record)
        cache.finish()
    return record


def gradient_rms(n: int, objective: str, seed: int, batches: int = 16) -> float:
    r"""s(n) = sqrt(mean_c E_batch[g_c^2]): the RMS over the coordinates c of W_Q, W_K of the
    minibatch (64) gradient of ``objective``'s loss at the default init, over the first ``batches``
    batches of the run's order: Adam's sqrt(v) on the plateau, the noise scale of the law (T8)."""
    run = PlateauRun("scratch", n, seed)
    model = initial_model(run)
    model.train()
    steps = Steps(model, DatasetTask(built_data(run.data)), Stage(objective, 1, batch_size=BATCH), stage_seed(seed),
                  None)
    total = 0.0
    for step in range(batches):
        model.zero_grad(set_to_none=True)
        steps.loss(step).backward()
        grad = model.blocks[0].attn.qk.weight.grad
        if grad is None:
            raise RuntimeError("no gradient of W_Q, W_K after backward()")
        total += grad.pow(2).mean().item()
    return math.sqrt(total / batches)


def measure_gradient_rms(path: Path) -> dict:
    """:func:`gradient_rms` of both losses at every n of :data:`LENGTHS` and seed of :data:`SEEDS`,
    written to ``path`` (the input of the law's AdamW predictions, measured before the grid)."""
    values = {objective: {str(n): [gradient_rms(n, objective, s) for s in SEEDS] for n in LENGTHS}
              for objective in ("supervised", "spt")}
    record = {"schema_version": schema.SCHEMA_VERSION,
              "what": "RMS over W_Q, W_K coordinates of the batch-64 gradient at the default init, 16 batches",
              "seeds": list(SEEDS), "torch": str(torch.__version__), "rms": values,
              "model_defaults": schema.model_defaults()}
    write_json(path, record)
    return record

