r"""The plateau law (lemma T8 in ``proofs/T8_plateau_law.md``): how long supervised training from
scratch sits at near-uniform attention on the walk task, and how long SPT takes.

Longer than 450 lines because the grid, the step-level trainer it needs (evaluation every few
steps, stop at the escape, SGD beside AdamW) and its command line are still one unit: moving the
trainer onto the one training loop (:func:`spt_theory.training.loop.train_stage`, which works in
epochs) is open work, and it must keep the committed runs' numbers.

Measured quantities, fixed before the runs (2026-12-01):

- **escape step** of a scratch run: the first evaluation step t (every :func:`eval_every` steps)
  where the test accuracy on the first :data:`EVAL_SIZE` test sequences is >= :data:`ESCAPE`
  (0.6; chance has sd 0.022 there, so 0.6 is 4.5 sd).  The run stops at its escape; a run that
  reaches its cap (:func:`cap`) without escaping gives the lower bound T > cap.
- **SPT steps to 95%**: the least SPT length s of the grid :data:`SPT_GRID` (125 * 2^(k/2) steps)
  after which the finetune (every group kept, fresh AdamW, at most :data:`FINETUNE_CAP` steps,
  E14's 3 epochs) reaches test accuracy >= 0.95 (:data:`paper_runs.SOLVED`) on the same
  :data:`EVAL_SIZE` sequences.  The grid is searched by doubling from 125 steps and one bisection
  (:func:`spt_search`), assuming the finetuned accuracy rises with s (E9 measures it at n = 100).

The runs are the design's model and walk data (V = 16, p = 0.5, 8000 / 2000 sequences) at length n,
batch 64, the batch order and masks of :func:`spt_theory.training.loop.train_stage` with the stage seeds
of :func:`spt_theory.walk.experiments.run` (seed * 1000 + stage), so the AdamW scratch run at n = 100
follows the trajectory of E2 / E11b's ``scratch`` run of the same seed.  Optimisers
(:data:`OPTIMISERS`): AdamW lr 1e-3, weight decay 0.01 (the recipe), and SGD with momentum 0.9 at
:data:`SGD_LR`, no weight decay.  Init scale (``qk_scale``): the qk layer (W_Q, W_K and their
biases) multiplied by it after the seeded default init.

Each run is stored under ``<cache>/<key>/`` (:class:`~spt_theory.training.cache.StageCache`, key = hash of
the :class:`PlateauRun` and the format): ``last.pt`` every :data:`CHECKPOINT_EVERY` steps (resume
point), ``run.json`` when done.  ``python -m spt_theory.plateau`` trains the grid
(:func:`grid`) and writes its summary (``CACHE_DIR/plateau_runs.json``; ``--promote`` copies a complete
grid's into the committed evidence ``spt_theory/evidence/plateau/plateau_runs.json``) that the claims P1-P5
(:mod:`spt_theory.checks.plateau`) and the figure ``plateau_law`` read.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import platform
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from spt_theory import evidence
from spt_theory.core import args as cli_args
from spt_theory.core import cpu
from spt_theory.core.model import Encoder
from spt_theory.evidence import schema
from spt_theory.training.cache import StageCache, StageState, load_checkpoint, save_checkpoint
from spt_theory.training.loop import (
    Stage,
    accuracy,
    epoch_batches,
    keyed_generator,
    load_model_state,
    make_optimizer,
    stage_loss,
)
from spt_theory.util.files import InputError, prepare_output, read_json, write_json
from spt_theory.util.interrupts import interruptible
from spt_theory.util.prog import prog
from spt_theory.walk import paper_runs
from spt_theory.walk.experiments import WalkData, built_data

FORMAT = 1
LENGTHS = (25, 50, 100, 200)
SEEDS = (0, 1, 2)
EVAL_SIZE = 500
ESCAPE = 0.6
SOLVED = paper_runs.SOLVED
BATCH = 64
ADAMW_LR = 1e-3
SGD_LR = 0.3
"""The largest stable rate of the pilot (n = 25, seed 0, momentum 0.9): 0.6 and 1.0 diverge within
40 steps (1.0 also after a 300-step warm-up), 0.1 and 0.3 train without leaving the plateau in 4000 steps."""
SGD_MOMENTUM = 0.9
OPTIMISERS = ("adamw", "sgd")
CHECKPOINT_EVERY = 1000
FINETUNE_CAP = 375
SPT_GRID = tuple(round(125 * 2 ** (k / 2)) for k in range(-4, 9))
"""31, 44, 62, 88, 125, 177, 250, 354, 500, 707, 1000, 1414, 2000 SPT steps."""
SPT_LADDER = tuple(round(125 * 2 ** (k / 2)) for k in range(-4, 13))
"""The same sqrt 2 ladder carried up to 8000 SPT steps; an SPT run with a ``cap`` searches the
points of it up to its cap (the grid's runs have cap 0: :data:`SPT_GRID`)."""
PREDICTED = 400
"""The out-of-sample length (claims P6, P7): its runs are not in the grid of :data:`LENGTHS`; they
run with ``--lengths 400`` and are judged against ``evidence/plateau/prediction_n400.json``,
committed before any of them (bd8a28f)."""
PREDICTED_COMMAND = f"python -m spt_theory.plateau --lengths {PREDICTED} --threads 1 --promote"
"""The n = 400 runs (3 seeds SPT, then 3 seeds AdamW), merged into the committed grid when done."""
PREDICTED_ADAMW_CAP = 40000
"""AdamW cap at n = 400: above the prediction's single-seed interval [15,030, 37,932], so a capped
run decides (outside), and a multiple of the evaluation period (200 at n = 400)."""
PREDICTED_SPT_CAP = 4000
"""Largest SPT length at n = 400: the ladder's first point above the interval [1,880, 3,472] (its
points inside are 2000 and 2828), so a run that is not solved by 4000 decides (outside)."""
EVIDENCE = evidence.path(evidence.PLATEAU)
"""The committed grid and noise scales (package data), read by the claims P*."""
SUMMARY = EVIDENCE / "plateau_runs.json"
GRADIENT_RMS = EVIDENCE / "gradient_rms.json"
RUNS = Path("runs/plateau")
"""Where ``plateau`` trains and writes its summary unless told (a user folder, never the evidence)."""


def eval_every(n: int) -> int:
    """Evaluation period in steps: 25 up to n = 50, then 25 n / 50 (eval cost ~5% of training)."""
    return 25 * max(1, n // 50)


def cap(optimiser: str, n: int, qk_scale: float) -> int:
    """Step cap of a scratch run: AdamW 12000, about 2.5x the escape the law predicts at n = 200
    from the n = 25 pilot (975 steps); at init / 10 8000 (2x P3's prediction at n = 100); SGD 3000
    (what a shared core affords, 2 min per run at n = 25; above P4's bound, 2.2 x 909 steps)."""
    if optimiser == "sgd":
        return 3000
    return 12000 if qk_scale == 1.0 else 8000


SGD_LENGTHS = (25, 50)
SGD_LONG_CAP = 20000
LONG = 200


@dataclass(frozen=True)
class PlateauRun:
    """One run of the grid: ``kind`` ``scratch`` (escape step) or ``spt`` (SPT steps to 95%)."""

    kind: str
    length: int
    seed: int
    optimiser: str = "adamw"
    qk_scale: float = 1.0
    cap: int = 0

    @property
    def lr(self) -> float:
        return ADAMW_LR if self.optimiser == "adamw" else SGD_LR

    @property
    def data(self) -> WalkData:
        return WalkData(length=self.length)

    def cache(self, root: Path) -> StageCache:
        return StageCache.of(root, {"format": FORMAT, "run": dataclasses.asdict(self), "eval_size": EVAL_SIZE,
                                    "escape": ESCAPE, "solved": SOLVED, "batch": BATCH, "lr": self.lr,
                                    "data": dataclasses.asdict(self.data),
                                    "model": dataclasses.asdict(self.data.model_config())})


def initial_model(run: PlateauRun) -> Encoder:
    """The seeded default init (as :func:`spt_theory.walk.experiments.initial_model`), the qk layer
    (W_Q, W_K, b_Q, b_K) times ``qk_scale``."""
    torch.manual_seed(run.seed)
    model = Encoder(run.data.model_config())
    with torch.no_grad():
        for block in model.blocks:
            block.attn.qk.weight.mul_(run.qk_scale)
            block.attn.qk.bias.mul_(run.qk_scale)
    return model


class Trainer:
    """Steps ``model`` on ``objective`` with the batch order and masks of ``train_stage`` for
    ``stage_seed``; ``step`` counts the optimiser steps done."""

    def __init__(self, model: Encoder, data, objective: str, optimiser: torch.optim.Optimizer, stage_seed: int):
        self.model, self.data, self.optimiser, self.seed = model, data, optimiser, stage_seed
        self.stage = Stage(objective, 1, batch_size=BATCH)
        self.step = 0
        self.per_epoch = math.ceil(len(data.x_train) / BATCH)
        self._batches: tuple[int, list] | None = None

    def advance(self, steps: int) -> None:
        self.model.train()
        for _ in range(steps):
            epoch, within = divmod(self.step, self.per_epoch)
            if self._batches is None or self._batches[0] != epoch:
                self._batches = (epoch, epoch_batches(len(self.data.x_train), BATCH, keyed_generator(self.seed, 1, epoch)))
            idx = self._batches[1][within]
            loss = stage_loss(self.model, self.data, self.stage, self.data.x_train[idx], self.data.y_train[idx],
                              keyed_generator(self.seed, 2, self.step))
            if not torch.isfinite(loss):
                raise FloatingPointError(f"non-finite loss at step {self.step}")
            self.optimiser.zero_grad(set_to_none=True)
            loss.backward()
            self.optimiser.step()
            self.step += 1

    def accuracy(self) -> float:
        return accuracy(self.model, self.data.x_test[:EVAL_SIZE], self.data.y_test[:EVAL_SIZE])

    def state(self, history: list[dict]) -> StageState:
        return StageState(*divmod(self.step, self.per_epoch), 0.0, history)

    def resume(self, path: Path) -> list[dict]:
        ckpt = load_checkpoint(path)
        load_model_state(self.model, ckpt["model"], path)
        self.optimiser.load_state_dict(ckpt["optimizer"])
        self.step = ckpt["epoch"] * self.per_epoch + ckpt["step_in_epoch"]
        return list(ckpt["history"])


def meta(run: PlateauRun) -> dict:
    return {"run": dataclasses.asdict(run), "torch": str(torch.__version__), "python": platform.python_version()}


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
        trainer = Trainer(model, built_data(run.data), "supervised",
                          make_optimizer(model, run.lr, kind=run.optimiser,
                                         momentum=SGD_MOMENTUM if run.optimiser == "sgd" else 0.0), run.seed * 1000)
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


def spt_grid(run: PlateauRun) -> tuple[int, ...]:
    """The SPT lengths ``run`` may try: :data:`SPT_GRID`, or with a cap the ladder up to it."""
    return tuple(s for s in SPT_LADDER if s <= run.cap) if run.cap else SPT_GRID


def spt_search(solves, grid: tuple[int, ...] = SPT_GRID, start: int = 125) -> tuple[int | None, dict]:
    """The least s of ``grid`` with ``solves(s)`` true, assuming it is monotone in s: from
    ``start``, steps of two grid points up (until it solves) or down (until it fails), then the
    point between the last two tried.  Returns (s or None, {s: solves(s)} for every s tried)."""
    tried: dict[int, bool] = {}
    k = grid.index(start)

    def test(i: int) -> bool:
        if grid[i] not in tried:
            tried[grid[i]] = solves(grid[i])
        return tried[grid[i]]

    if test(k):
        while k - 2 >= 0 and test(k - 2):
            k -= 2
        if k - 1 >= 0 and test(k - 1):
            k -= 1
        return grid[k], tried
    while k + 2 < len(grid) and not test(k + 2):
        k += 2
    if k + 2 >= len(grid):
        return (grid[-1], tried) if k + 1 < len(grid) and test(len(grid) - 1) else (None, tried)
    return (grid[k + 1] if test(k + 1) else grid[k + 2]), tried


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
                trainer = Trainer(model, data, "spt", make_optimizer(model, ADAMW_LR), run.seed * 1000)
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
                trainer = Trainer(model, data, "supervised", make_optimizer(model, ADAMW_LR),
                                  run.seed * 1000 + 1)
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
    trainer = Trainer(model, built_data(run.data), objective, torch.optim.SGD(model.parameters(), lr=0.0),
                      seed * 1000)
    total = 0.0
    for _ in range(batches):
        trainer.advance(1)
        total += model.blocks[0].attn.qk.weight.grad.pow(2).mean().item()
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


def grid(lengths: tuple[int, ...] = LENGTHS, seeds: tuple[int, ...] = SEEDS) -> list[PlateauRun]:
    """The runs in the order they are trained, most needed first, so that a short budget still
    ends with whole rows of 3 seeds.  Sized from the measured step time on a shared core (35, 65,
    90 ms at n = 25, 50, 100, about 3x the idle core's): AdamW at the default init for n < 200, SPT
    for n < 200, AdamW at init / 10 for n = 25, 50, SGD at n = 25, AdamW at n = 200; then (past the
    budget of 2026-12-01, in this order) init / 10 at n = 100, SPT at n = 200, SGD at n = 50, init /
    10 at n = 200, and SGD at n = 25 again with the cap :data:`SGD_LONG_CAP` (added when the
    3000-step SGD runs had all capped; the claims take the longest whole row).  At n =
    :data:`PREDICTED` (out of sample, only when asked for: ``--lengths 400``): SPT (searched up to
    :data:`PREDICTED_SPT_CAP`), then AdamW at the default init (cap :data:`PREDICTED_ADAMW_CAP`),
    3 seeds each, with the grid's batch, evaluation and escape rule."""
    def row(kind: str, optimiser: str, scale: float, ns) -> list[PlateauRun]:
        return [PlateauRun(kind, n, s, optimiser, scale, cap(optimiser, n, scale) if kind == "scratch" else 0)
                for n in ns if n in lengths for s in seeds]

    short = [n for n in lengths if n < LONG]
    sgd_long = [replace(r, cap=SGD_LONG_CAP) for r in row("scratch", "sgd", 1.0, SGD_LENGTHS[:1])]
    return (row("scratch", "adamw", 1.0, short) + row("spt", "adamw", 1.0, short)
            + row("scratch", "adamw", 0.1, (25, 50)) + row("scratch", "sgd", 1.0, SGD_LENGTHS[:1])
            + row("scratch", "adamw", 1.0, (LONG,)) + row("scratch", "adamw", 0.1, (100,))
            + row("spt", "adamw", 1.0, (LONG,)) + row("scratch", "sgd", 1.0, SGD_LENGTHS[1:])
            + row("scratch", "adamw", 0.1, (LONG,)) + sgd_long
            + [PlateauRun("spt", n, s, cap=PREDICTED_SPT_CAP) for n in (PREDICTED,) if n in lengths for s in seeds]
            + [PlateauRun("scratch", n, s, cap=PREDICTED_ADAMW_CAP) for n in (PREDICTED,) if n in lengths
               for s in seeds])


def summarise(root: Path, path: Path = SUMMARY, lengths: tuple[int, ...] = LENGTHS) -> dict:
    """The summary of every finished run of :func:`grid` in ``root``: per run its config, seed,
    ``value`` (escape step, or SPT steps to 95%; a capped run's cap, or the largest SPT length,
    as a lower bound with ``capped``), the finetune steps and the seconds; written to ``path``."""
    rows, seconds = [], 0.0
    for r in grid(lengths):
        record_path = r.cache(root).dir / "run.json"
        if not record_path.exists():
            continue
        out = read_json(record_path)
        value = out["spt_steps_to_95"] if r.kind == "spt" else out["escape_step"]
        lower = r.cap if r.cap else SPT_GRID[-1]
        rows.append({**dataclasses.asdict(r), "lr": r.lr, "key": r.cache(root).key, "value": lower if value is None else value,
                     "capped": value is None, "finetune_steps_to_95": out.get("finetune_steps_to_95"),
                     "tried": out.get("tried"), "seconds": out["seconds"]})
        seconds += out["seconds"]
    record = {"schema_version": schema.SCHEMA_VERSION,
              "what": "plateau-law grid (spt_theory.plateau): scratch escape steps, SPT steps to 95%",
              "criteria": {"escape_accuracy": ESCAPE, "solved": SOLVED, "eval_size": EVAL_SIZE,
                           "eval_every": {str(n): eval_every(n) for n in lengths}, "finetune_cap": FINETUNE_CAP,
                           "spt_grid": list(SPT_GRID),
                           **({"spt_grid_n400": list(spt_grid(PlateauRun("spt", PREDICTED, 0, cap=PREDICTED_SPT_CAP)))}
                              if PREDICTED in lengths else {})},
              "data": dataclasses.asdict(WalkData()), "batch": BATCH, "sgd_momentum": SGD_MOMENTUM,
              "seeds": list(SEEDS), "torch": str(torch.__version__), "python": platform.python_version(),
              "grid_seconds": round(seconds, 1), "runs": rows, "partial": len(rows) < len(grid(lengths)),
              "model_defaults": schema.model_defaults()}
    write_json(path, record)
    return record


def check_arguments(args: argparse.Namespace) -> list[PlateauRun]:
    """The runs to train; InputError for a bad option or an output that cannot be written, before
    any training (a folder created for an output is said on stderr)."""
    cli_args.refuse_evidence_outputs(args)
    if args.gradient_rms:
        prepare_output(args.cache_dir / GRADIENT_RMS.name)
        return []
    for n in args.lengths:
        try:
            WalkData(length=n)
        except ValueError as error:
            raise InputError(f"--lengths {n}: {error}") from None
    if len(set(args.lengths)) != len(args.lengths):
        raise InputError(f"--lengths: each length once, got {' '.join(map(str, args.lengths))}")
    runs = [r for r in grid(tuple(args.lengths))
            if (not args.only or (r.kind if r.kind == "spt" else r.optimiser) in args.only)
            and (not args.seeds or r.seed in args.seeds)]
    if not runs:
        raise InputError(f"no run of the grid at --lengths {' '.join(map(str, args.lengths))}"
                         + (f" for --only {' '.join(args.only)}" if args.only else "")
                         + (f" for --seeds {' '.join(map(str, args.seeds))}" if args.seeds else "")
                         + f" (SGD runs at n = {', '.join(map(str, SGD_LENGTHS))}, SPT runs below n = {LONG} "
                         f"and at n = {PREDICTED})")
    if args.cache_dir.exists() and not args.cache_dir.is_dir():
        raise InputError(f"--cache-dir {args.cache_dir}: not a folder")
    if args.promote:
        check_promotable(args, runs)
    prepare_output(args.summary)
    prepare_output(args.cache_dir, folder=True)
    return runs


def check_promotable(args: argparse.Namespace, runs: list[PlateauRun]) -> None:
    """``--promote`` refused before any training when what it would promote cannot be whole: the
    grid at other lengths than its own (or n = 400 alone), or a selection (``--only``, ``--seeds``)
    whose runs left out are not already finished in the cache."""
    lengths = tuple(args.lengths)
    if lengths == (PREDICTED,):
        return
    if lengths != LENGTHS:
        raise InputError(f"--promote: --lengths {' '.join(map(str, lengths))} is not the grid's "
                         f"{' '.join(map(str, LENGTHS))} (or {PREDICTED} alone): a partial grid; "
                         "nothing was trained, nothing was promoted")
    left = [r for r in grid(LENGTHS) if r not in runs and not (r.cache(args.cache_dir).dir / "run.json").exists()]
    if left:
        raise InputError(f"--promote: {len(left)} runs of the grid outside this selection (--only / --seeds) "
                         f"are not finished in {args.cache_dir}: a partial grid; nothing was trained, nothing was promoted")


@interruptible
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=prog("python -m spt_theory.plateau"),
                                description="Train (or read) the plateau-law grid and write its summary JSON.")
    p.add_argument("--cache-dir", type=Path, default=RUNS, metavar="DIR",
                   help=f"where runs are trained and cached (default {RUNS})")
    p.add_argument("--lengths", type=int, nargs="+", default=list(LENGTHS))
    p.add_argument("--only", choices=("adamw", "sgd", "spt"), nargs="+")
    p.add_argument("--seeds", type=int, nargs="+", choices=SEEDS, metavar="SEED",
                   help=f"train only these seeds of the grid (of {' '.join(map(str, SEEDS))}; default all): a "
                        "registered rule that one seed can refute is decided seed by seed")
    p.add_argument("--no-progress", action="store_true", help="no line per evaluation on stderr")
    cli_args.add_threads(p)
    p.add_argument("--summary", type=Path, metavar="PATH",
                   help="summary JSON (default CACHE_DIR/plateau_runs.json; never the committed evidence)")
    p.add_argument("--promote", action="store_true",
                   help="copy a complete grid's summary into the committed evidence (package data "
                        f"{SUMMARY.name}); refused for a partial grid; with --lengths {PREDICTED} alone, "
                        f"merge the n = {PREDICTED} runs finished so far into it")
    p.add_argument("--gradient-rms", action="store_true",
                   help=f"measure the noise scales into CACHE_DIR/{GRADIENT_RMS.name}")
    args = p.parse_args(argv)
    args.summary = args.summary or args.cache_dir / SUMMARY.name
    try:
        runs = check_arguments(args)
        if args.threads is not None:
            cpu.set_intra_op_threads(args.threads)
        if args.gradient_rms:
            print("wrote "
                  f"{measure_gradient_rms(args.cache_dir / GRADIENT_RMS.name) and args.cache_dir / GRADIENT_RMS.name}")
            return 0
        log = None if args.no_progress else (lambda line: print(line, file=sys.stderr, flush=True))
        for r in runs:
            out = (run_spt if r.kind == "spt" else run_scratch)(r, args.cache_dir, log)
            value = out.get("spt_steps_to_95", out.get("escape_step"))
            print(f"{r.kind} n={r.length} {r.optimiser} scale={r.qk_scale:g} seed={r.seed}: {value} "
                  f"({out['seconds']} s)", flush=True)
            summarise(args.cache_dir, args.summary, tuple(args.lengths))
        if args.promote:
            return promote_summary(args.cache_dir, args.summary, tuple(args.lengths))
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


def promote_summary(root: Path, summary_path: Path, lengths: tuple[int, ...]) -> int:
    """``--promote``: the summary of a complete grid (every run of :func:`grid` finished in
    ``root``) into the committed evidence; a partial one is refused (exit 2), nothing changed.
    With ``--lengths 400`` alone: :func:`promote_predicted`."""
    if lengths == (PREDICTED,):
        return promote_predicted(root, summary_path)
    record = summarise(root, summary_path, lengths)
    if record["partial"] or lengths != LENGTHS:
        raise InputError(f"--promote: {summary_path} is a partial grid ({len(record['runs'])} of "
                         f"{len(grid(LENGTHS))} runs): nothing was promoted")
    print(f"promoted {summary_path} -> {evidence.promote(summary_path, evidence.PLATEAU, SUMMARY.name)}")
    return 0


def promote_predicted(root: Path, summary_path: Path, committed: Path = SUMMARY) -> int:
    """``--lengths 400 --promote``: the n = 400 runs finished in ``root`` merged into the committed
    grid (its other rows unchanged, any earlier n = 400 rows replaced), so that they can be
    committed as they land (P6, P7 decide on what is there); refused (exit 2) when none has finished."""
    record = summarise(root, summary_path, (PREDICTED,))
    if not record["runs"]:
        raise InputError(f"--promote: no run at n = {PREDICTED} has finished in {root}: nothing was promoted")
    tree = read_json(committed)
    tree["runs"] = [r for r in tree["runs"] if r["length"] != PREDICTED] + record["runs"]
    tree["criteria"]["eval_every"][str(PREDICTED)] = eval_every(PREDICTED)
    tree["criteria"]["spt_grid_n400"] = record["criteria"]["spt_grid_n400"]
    tree["predicted_seconds"] = record["grid_seconds"]
    merged = summary_path.with_name(f"merged_{summary_path.name}")
    write_json(merged, tree)
    schema.load(merged, schema.PlateauRuns)
    print(f"promoted {len(record['runs'])} of {len(grid((PREDICTED,)))} runs at n = {PREDICTED} "
          f"-> {evidence.promote(merged, evidence.PLATEAU, committed.name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
