"""``python -m spt_theory.train``: one run on the walk task, cached and resumable.

Examples::

    python -m spt_theory.train --mode spt --epochs 4 --finetune-epochs 3 --seed 0
    python -m spt_theory.train --mode scratch --epochs 8
    python -m spt_theory.train --mode hybrid --keep qk --epochs 4 --finetune-epochs 3
    python -m spt_theory.train --mode frozen --freeze qk --epochs 8

The run is stored under ``--cache-dir/<hash>/`` (checkpoints after every epoch, ``run.json`` with
config, seed, versions and per-epoch metrics); rerunning the same command reloads it, and a killed
run resumes from its last checkpoint.  ``--json PATH`` writes the summary of this run.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path

from spt_theory import cpu
from spt_theory.experiments import RunSpec, WalkData, run, run_spec
from spt_theory.io import InputError, write_json
from spt_theory.model import PARAMETER_GROUPS
from spt_theory.recipes import Budget, pretrain_only, scratch, spt_stage, spt_then_finetune, supervised_stage
from spt_theory.training import TrainingDiverged

MODES = ("scratch", "spt", "frozen", "hybrid", "pretrain")


def build_spec(args: argparse.Namespace) -> RunSpec:
    """Turn the command line into a :class:`RunSpec` (bad values raise :class:`InputError`)."""
    try:  # the task's own checks, before anything is generated or written
        data = WalkData(vocab=args.vocab, length=args.length, p=args.p, n_train=args.n_train,
                        n_test=args.n_test, data_seed=args.data_seed)
    except ValueError as err:
        raise InputError(f"walk task: {err}") from None
    budget = Budget(lr=args.lr, batch_size=args.batch_size, mask_ratio=args.mask_ratio)
    pre, finetune = spt_stage(budget, args.epochs), supervised_stage(budget, args.finetune_epochs)
    if args.mode == "scratch":
        recipe = scratch(supervised_stage(budget, args.epochs))
    elif args.mode == "frozen":
        recipe = scratch(supervised_stage(budget, args.epochs, freeze=tuple(args.freeze)))
    elif args.mode == "pretrain":
        recipe = pretrain_only(pre)
    elif args.mode == "spt":
        recipe = spt_then_finetune(pre, finetune)
    else:  # hybrid
        recipe = spt_then_finetune(pre, supervised_stage(budget, args.finetune_epochs, keep=tuple(args.keep)))
    try:
        return run_spec(recipe, data, args.seed, d_model=args.d_model, n_heads=args.heads, d_ff=4 * args.d_model,
                        n_layers=args.layers, pooling=args.pooling, positional=args.positional,
                        attention_bias=args.attention_bias)
    except ValueError as err:
        raise InputError(f"model config: {err}") from None


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m spt_theory.train", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="walk", help="synthetic task (only 'walk' for now)")
    p.add_argument("--mode", choices=MODES, default="spt",
                   help="scratch: supervised only; spt: SPT then finetune; pretrain: SPT only; "
                        "frozen: supervised with --freeze groups fixed at init; hybrid: SPT, then "
                        "finetune keeping only --keep groups from the SPT model")
    p.add_argument("--epochs", type=int, default=4, help="SPT epochs (supervised epochs for scratch/frozen)")
    p.add_argument("--finetune-epochs", type=int, default=3, help="supervised epochs after SPT")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--mask-ratio", type=float, default=0.15)
    p.add_argument("--freeze", nargs="+", default=["qk"], choices=PARAMETER_GROUPS, metavar="GROUP")
    p.add_argument("--keep", nargs="+", default=["qk"], choices=PARAMETER_GROUPS, metavar="GROUP")
    p.add_argument("--vocab", type=int, default=16)
    p.add_argument("--length", type=int, default=100)
    p.add_argument("--p", type=float, default=0.5, help="step probability of the walk")
    p.add_argument("--n-train", type=int, default=8000)
    p.add_argument("--n-test", type=int, default=2000)
    p.add_argument("--data-seed", type=int, default=0)
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--pooling", default="mean", choices=("mean", "max", "cls", "last"))
    p.add_argument("--positional", default="sinusoidal", choices=("sinusoidal", "none"))
    p.add_argument("--attention-bias", default="none", choices=("none", "alibi"))
    p.add_argument("--cache-dir", type=Path, default=Path("runs"))
    p.add_argument("--json", type=Path, metavar="PATH", help="write this run's summary as JSON")
    p.add_argument("--threads", type=int, metavar="N",
                   help="torch intra-op threads (default: torch's choice); 1 is much faster for "
                        "these small models on a busy machine")
    p.add_argument("--no-progress", action="store_true")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if args.task != "walk":
            raise InputError(f"--task: unknown task {args.task!r} (known: walk; LRA tasks: "
                             f"python -m spt_theory.lra)")
        for name in ("n_train", "n_test"):
            if getattr(args, name) < 1:
                raise InputError(f"--{name.replace('_', '-')}: must be >= 1")
        if args.threads is not None and args.threads < 1:
            raise InputError(f"--threads: must be >= 1, got {args.threads}")
        for name in ("seed", "data_seed"):
            if getattr(args, name) < 0:
                raise InputError(f"--{name.replace('_', '-')}: must be a non-negative integer, "
                                 f"got {getattr(args, name)}")
        try:
            spec = build_spec(args)
        except ValueError as err:  # the model config's own validation
            raise InputError(str(err)) from None
        if args.threads is not None:
            cpu.set_intra_op_threads(args.threads)
        result = run(spec, args.cache_dir, progress=not args.no_progress)
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except TrainingDiverged as err:  # a result of the run, not bad input: the LRA runner's code too
        print(f"error: training diverged: {err}", file=sys.stderr)
        return 1
    for k, history in enumerate(result.history):
        stage = spec.stages[k]
        for record in history:
            figures = "  ".join(f"{key} {value:.4f}" for key, value in record.items()
                                if isinstance(value, float) and key != "seconds")
            print(f"stage {k} {stage.objective:<10} epoch {record['epoch']:>3}  {figures}")
    if args.json:
        try:
            write_json(args.json, {"spec": asdict(spec), "history": result.history, "final": result.final})
        except InputError as err:  # a read-only or full output folder
            print(f"error: {err}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
