"""``python -m spt_theory.train``: one run on the walk task, cached and resumable.

Examples::

    python -m spt_theory.train --mode spt --epochs 4 --finetune-epochs 3 --seed 0
    python -m spt_theory.train --mode scratch --epochs 8
    python -m spt_theory.train --mode hybrid --keep qk --epochs 4 --finetune-epochs 3
    python -m spt_theory.train --mode frozen --freeze qk --epochs 8

Each stage of the run is stored under ``--cache-dir/<hash>/`` (checkpoints after every epoch,
``run.json`` with config, seed, versions and per-epoch metrics); rerunning the same command
reloads it, and a killed run resumes from its last checkpoint.  The command prints one row per
epoch (an SPT stage's rows show no classification accuracy: its head is not trained) and closes
with each stage's folder, whether it was trained or reloaded.  ``--json PATH`` also writes the
summary of this run (checked before any training).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path

from spt_theory.core import args as cli_args
from spt_theory.core import cpu
from spt_theory.training.loop import TrainingDiverged, epoch_figures
from spt_theory.training.recipes import Budget, pretrain_only, scratch, spt_stage, spt_then_finetune, supervised_stage
from spt_theory.util.files import InputError, announce, prepare_output, write_json
from spt_theory.util.interrupts import interruptible
from spt_theory.util.prog import prog
from spt_theory.walk.experiments import RunSpec, WalkData, run, run_spec, stage_cache

MODES = {"scratch": "supervised only, for --epochs",
         "spt": "SPT for --epochs, then supervised finetuning for --finetune-epochs",
         "pretrain": "SPT only, for --epochs",
         "frozen": "supervised for --epochs with the --freeze groups fixed at init",
         "hybrid": "SPT for --epochs, then finetuning for --finetune-epochs keeping only the --keep "
                   "groups of the SPT model (the others fresh)"}
"""--mode: what each mode trains."""
USES = {"--freeze": ("frozen",), "--keep": ("hybrid",), "--finetune-epochs": ("spt", "hybrid")}
"""The options that only some modes read: given to another mode they are refused, not ignored;
--freeze and --keep are required by theirs."""
DEFAULT_FINETUNE_EPOCHS = 3


def build_spec(args: argparse.Namespace) -> RunSpec:
    """Turn the command line into a :class:`RunSpec` (bad values raise :class:`InputError`)."""
    freeze, keep = cli_args.parse_groups(args.freeze, "--freeze"), cli_args.parse_groups(args.keep, "--keep")
    check_modes(args)
    seed = cli_args.parse_seed(args.seed)
    try:  # the task's own checks, before anything is generated or written
        data = WalkData(vocab=args.vocab, length=args.length, p=args.p, n_train=args.n_train,
                        n_test=args.n_test, data_seed=args.data_seed)
    except ValueError as err:
        raise InputError(f"walk task: {err}") from None
    budget = Budget(lr=args.lr, batch_size=args.batch_size, mask_ratio=args.mask_ratio)
    finetune_epochs = DEFAULT_FINETUNE_EPOCHS if args.finetune_epochs is None else args.finetune_epochs
    pre, finetune = spt_stage(budget, args.epochs), supervised_stage(budget, finetune_epochs)
    if args.mode == "scratch":
        recipe = scratch(supervised_stage(budget, args.epochs))
    elif args.mode == "frozen":
        assert freeze is not None  # check_modes: --mode frozen requires --freeze
        recipe = scratch(supervised_stage(budget, args.epochs, freeze=freeze))
    elif args.mode == "pretrain":
        recipe = pretrain_only(pre)
    elif args.mode == "spt":
        recipe = spt_then_finetune(pre, finetune)
    else:  # hybrid
        assert keep is not None  # check_modes: --mode hybrid requires --keep
        recipe = spt_then_finetune(pre, supervised_stage(budget, finetune_epochs, keep=keep))
    try:
        settings = model_settings(args)
    except InputError as err:
        raise InputError(f"model config: {err}") from None
    return run_spec(recipe, data, seed, **settings)


MODEL_OPTIONS = {"d_model": "d_model", "heads": "n_heads", "layers": "n_layers", "pooling": "pooling",
                 "positional": "positional", "attention_bias": "attention_bias"}
"""The model options of ``train`` (``--d-model``, ``--heads``, ...): spellings of ``--set FIELD=VALUE``
(argparse name -> model field)."""


def model_settings(args: argparse.Namespace) -> dict:
    """The run's model settings: the model options (``--d-model W`` also sets ``d_ff`` = 4 W), then
    ``--set``, read by the one ``--set`` parser (:func:`spt_theory.core.args.parse_model_settings`)."""
    words = [f"{field}={getattr(args, dest)}" for dest, field in MODEL_OPTIONS.items()
             if getattr(args, dest) is not None]
    if args.d_model is not None:
        words.append(f"d_ff={4 * args.d_model}")
    return cli_args.parse_model_settings(words + list(args.model_settings))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    return parser().parse_args(argv)


def parser() -> argparse.ArgumentParser:
    """The command line: every option with its meaning and default."""
    p = argparse.ArgumentParser(prog=prog("python -m spt_theory.train"), description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_argument_group("what is trained")
    g.add_argument("--task", default="walk", help="synthetic task (default walk, the only one; LRA tasks: "
                                                  "python -m spt_theory.lra)")
    g.add_argument("--mode", choices=MODES, default="spt",
                   help="; ".join(f"{k}: {v}" for k, v in MODES.items()) + " (default spt)")
    g.add_argument("--epochs", type=int, default=4,
                   help="SPT epochs; supervised epochs for scratch and frozen (default 4)")
    g.add_argument("--finetune-epochs", type=int,
                   help=f"supervised epochs after SPT, spt and hybrid only (default {DEFAULT_FINETUNE_EPOCHS})")
    cli_args.add_groups(g, "--freeze", "groups fixed at init during supervised training, --mode frozen "
                        "only (required there)", "none")
    cli_args.add_groups(g, "--keep", "groups the finetune takes from the SPT model, the others fresh, "
                        "--mode hybrid only (required there)", "none")
    cli_args.add_seed(g, "model init, batch order and masks")
    g = p.add_argument_group("optimisation")
    g.add_argument("--lr", type=float, default=1e-3, help="AdamW learning rate, every stage (default 1e-3)")
    g.add_argument("--batch-size", type=int, default=64, help="sequences per step (default 64)")
    g.add_argument("--mask-ratio", type=float, default=0.15,
                   help="share of tokens masked in SPT, in [0, 1) (default 0.15)")
    g = p.add_argument_group("walk data")
    g.add_argument("--vocab", type=int, default=16, help="tokens V (default 16)")
    g.add_argument("--length", type=int, default=100, help="sequence length n (default 100)")
    g.add_argument("--p", type=float, default=0.5, help="step probability of the walk, in [0, 1] (default 0.5)")
    g.add_argument("--n-train", type=cli_args.at_least(1), default=8000, help="training sequences (default 8000)")
    g.add_argument("--n-test", type=cli_args.at_least(1), default=2000, help="test sequences (default 2000)")
    g.add_argument("--data-seed", type=cli_args.at_least(0), default=0,
                   help="seed of the generated sequences (default 0)")
    g = p.add_argument_group("model (each option is a spelling of --set FIELD=VALUE)")
    g.add_argument("--d-model", type=int,
                   help="width, --set d_model; the MLP is 4x wider unless --set d_ff (default 64)")
    g.add_argument("--heads", type=int, help="attention heads dividing the width, --set n_heads (default 4)")
    g.add_argument("--layers", type=int, help="Transformer layers, --set n_layers (default 1)")
    g.add_argument("--pooling", choices=("mean", "max", "cls", "last"),
                   help="readout over positions, --set pooling (default mean)")
    g.add_argument("--positional", choices=("sinusoidal", "none"),
                   help="absolute positional encoding, --set positional (default sinusoidal)")
    g.add_argument("--attention-bias", choices=("none", "alibi"),
                   help="bias added to the attention scores, --set attention_bias (default none)")
    cli_args.add_model_settings(g)
    g = p.add_argument_group("output and runtime")
    g.add_argument("--cache-dir", type=Path, default=Path("runs"), metavar="DIR",
                   help="where the stages are cached by config hash, shared with verify (default ./runs)")
    g.add_argument("--json", type=Path, metavar="PATH",
                   help="also write this run's summary (spec, history, final metrics) as JSON (default: none)")
    cli_args.add_threads(g)
    cli_args.add_no_progress(g)
    return p


def check_modes(args: argparse.Namespace) -> None:
    """InputError for an option that ``--mode`` would ignore, or a required one missing."""
    for option, modes in USES.items():
        given = getattr(args, option[2:].replace("-", "_")) is not None
        if given and args.mode not in modes:
            raise InputError(f"{option} does nothing in --mode {args.mode} (only in --mode {' / '.join(modes)})")
        if not given and option in ("--freeze", "--keep") and args.mode in modes:
            raise InputError(f"--mode {args.mode} needs {option} GROUPS, e.g. {option} qk "
                             f"(groups joined by '+': qk+vo)")


@interruptible
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if args.task != "walk":
            raise InputError(f"--task: unknown task {args.task!r} (known: walk; LRA tasks: "
                             f"python -m spt_theory.lra)")
        threads = args.threads
        cli_args.refuse_evidence_outputs(args)
        spec = build_spec(args)
        if args.json:
            prepare_output(args.json)
        if threads is not None:
            cpu.set_intra_op_threads(threads)
        result = run(spec, args.cache_dir, progress=not args.no_progress)
        cached = result.reloaded  # also a stage another process finished while this one waited for it
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except TrainingDiverged as err:  # a result of the run, not bad input: the LRA runner's code too
        print(f"error: training diverged: {err}", file=sys.stderr)
        return 1
    for k, history in enumerate(result.history):
        stage = spec.stages[k]
        for record in history:
            print(f"stage {k} {stage.objective:<10} epoch {record['epoch']:>3}  {epoch_figures(stage, record)}")
    for k, stage in enumerate(spec.stages):
        print(f"stage {k} {stage.objective:<10} {stage_cache(spec, k, args.cache_dir).dir}  "
              f"{'reloaded' if cached[k] else 'trained'}")
    print(f"{args.mode} run {'reloaded' if all(cached) else 'trained'}: "
          f"{stage_cache(spec, len(spec.stages) - 1, args.cache_dir).dir}")
    if args.json:
        try:
            write_json(args.json, {"spec": asdict(spec), "history": result.history, "final": result.final})
        except InputError as err:  # a read-only or full output folder
            print(f"error: {err}", file=sys.stderr)
            return 2
        announce(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
