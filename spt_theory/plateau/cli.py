"""``python -m spt_theory.plateau``: trains (or reads) the plateau-law grid
(:func:`~spt_theory.plateau.design.grid`) into ``--cache-dir``, writes its summary, and with
``--promote`` copies a complete grid's into the committed evidence; options and outputs are
checked before any training (:func:`check_arguments`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spt_theory.core import args as cli_args
from spt_theory.core import cpu
from spt_theory.plateau.design import (
    GRADIENT_RMS,
    LENGTHS,
    LONG,
    PREDICTED,
    RUNS,
    SEEDS,
    SGD_LENGTHS,
    SUMMARY,
    PlateauRun,
    grid,
)
from spt_theory.plateau.runs import measure_gradient_rms, run_scratch, run_spt
from spt_theory.plateau.summary import promote_summary, summarise
from spt_theory.util.files import InputError, prepare_output
from spt_theory.util.interrupts import interruptible
from spt_theory.util.prog import prog
from spt_theory.walk.experiments import WalkData


def check_arguments(args: argparse.Namespace) -> list[PlateauRun]:
    """The runs to train; InputError for a bad option or an output that cannot be written, before
    any training (a folder created for an output is said on stderr)."""
    cli_args.refuse_evidence_outputs(args)
    args.model = cli_args.parse_model_settings(args.model_settings)
    if args.model and (args.promote or args.gradient_rms):
        option = "--promote" if args.promote else "--gradient-rms"
        raise InputError(f"{option} with --set: the committed evidence and the noise scales are made with the "
                         "default model; --set trains other runs (their own cache keys) into --cache-dir only")
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
    runs = [r.with_model(args.model) for r in grid(tuple(args.lengths))
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
                         f"are not finished in {args.cache_dir}: a partial grid; nothing was trained, "
                         "nothing was promoted")


@interruptible
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=prog("python -m spt_theory.plateau"),
                                description="Train (or read) the plateau-law grid and write its summary JSON.")
    p.add_argument("--cache-dir", type=Path, default=RUNS, metavar="DIR",
                   help=f"where runs are trained and cached (default {RUNS})")
    p.add_argument("--lengths", type=int, nargs="+", default=list(LENGTHS))
    p.add_argument("--only", choices=("adamw", "sgd", "spt"), nargs="+")
    p.add_argument("--seeds", nargs="+", action=cli_args.Seeds, metavar="SEED",
                   help=f"train only these seeds of the grid (of {' '.join(map(str, SEEDS))}, each once; default "
                        "all): a registered rule that one seed can refute is decided seed by seed")
    p.add_argument("--no-progress", action="store_true", help="no line per evaluation on stderr")
    cli_args.add_threads(p)
    cli_args.add_model_settings(p)
    p.add_argument("--summary", type=Path, metavar="PATH",
                   help="summary JSON (default CACHE_DIR/plateau_runs.json; never the committed evidence)")
    p.add_argument("--promote", action="store_true",
                   help="copy a complete grid's summary into the committed evidence (package data "
                        f"{SUMMARY.name}); refused for a partial grid; with --lengths {PREDICTED} alone, "
                        f"merge the n = {PREDICTED} runs finished so far into it")
    p.add_argument("--gradient-rms", action="store_true",
                   help=f"measure the noise scales into CACHE_DIR/{GRADIENT_RMS.name}")
    args = p.parse_args(argv)
    stray = [s for s in args.seeds or () if s not in SEEDS]
    if stray:
        p.error(f"argument --seeds: seeds of the grid are {' '.join(map(str, SEEDS))}, got {' '.join(map(str, stray))}")
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
            summarise(args.cache_dir, args.summary, tuple(args.lengths), args.model)
        if args.promote:
            return promote_summary(args.cache_dir, args.summary, tuple(args.lengths))
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0
