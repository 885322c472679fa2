"""``python -m spt_theory.lra``: SPT confirmation runs on the Long Range Arena tasks.

Commands::

    confirm   scratch vs SPT-then-finetune on --task (the main use)
    pretrain  SPT only (keeps every epoch's checkpoint; finetune/confirm reuse it)
    finetune  SPT (reused if already run) then supervised from its best-validation checkpoint
    scratch   supervised from random init only
    sweep     the paper's ablations as one resumable grid (cells x seeds), table and figure
    probe     attention of a run's checkpoints (init, scratch, SPT, finetuned): share by offset,
              band mass against uniform, 2-D neighbours (images), Toeplitz fit of PE-PE scores
    report    table of the result JSONs against the LRA reference numbers
    race      the Pathfinder-16 escape race (claim L5) collected into evidence JSON
    decide    the pre-registered L1b / L4b / L3b / L6 runs (decide run) and their evidence (decide collect)
    audit     shortcut audit of a task's data: the fixed-feature floor and the one-hop ceiling

Examples::

    python -m spt_theory.lra confirm --task listops --data-dir ~/lra --layers 1 --epochs 10
    python -m spt_theory.lra confirm --task image --data-dir ~/lra --pretrain-task pathfinder
    python -m spt_theory.lra confirm --task pathfinder --data-dir ~/lra --layers 1 --keep qk
    python -m spt_theory.lra scratch --task pathfinder --data-dir ~/lra --layers 1 --freeze qk
    python -m spt_theory.lra confirm --task text --data-dir ~/lra --tiny --max-steps 3
    python -m spt_theory.lra confirm --task listops --data-dir D --set d_model=128 --set warmup_steps=500
    torchrun --nproc_per_node 8 -m spt_theory.lra confirm --task retrieval --data-dir ~/lra
    python -m spt_theory.lra sweep --task listops --data-dir D --layers 1 --grid recipe=scratch,spt \
        --grid freeze=none,qk --cell recipe=spt,keep=qk --seeds 0 1 2
    python -m spt_theory.lra probe runs/lra/results/listops --data-dir D
    python -m spt_theory.lra report --results runs/lra/results

--data-dir is the root holding the release layout of each task: listops-1000/basic_*.tsv,
aclImdb/ (or a Hugging Face imdb copy), new_aan_pairs.*.tsv, cifar-10-batches-py/,
pathfinder32/curv_contour_length_14/.  ``python -m synthetic.listops --out D/listops-1000`` and
``python -m synthetic.pathfinder --out D/pathfinder32`` generate the two synthetic tasks.

Training follows the SPT-on-LRA recipe (Amos et al.; ``spt_theory/lra/configs.py``): AdamW,
linear warm-up then constant learning rate, Bernoulli masking of the task's ratio, the task's
architecture and head.  Text and Image hold out 10% of train for validation.  Stages are cached
under --out/cache by a hash of everything they depend on: rerunning a command reloads, a killed
command resumes from its last checkpoint, and a shorter --epochs reuses a longer pretraining.
Results: --out/results/<task>/<recipe>-<hash>.json (options, configs, seed, versions, per-epoch
history, test accuracy at the best validation epoch).  On CUDA the forward passes run under bf16
autocast with fused SDPA attention; under torchrun (K processes) training is DistributedDataParallel
(NCCL on GPUs, gloo on CPU), each global batch of --set batch_size split across the processes.
Bad input stops with one 'error:' line and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spt_theory import evidence
from spt_theory.core import args as cli_args
from spt_theory.core import cpu
from spt_theory.evidence import lra_schema, schema
from spt_theory.lra import audit, decide
from spt_theory.lra.controls import CONTROLS
from spt_theory.lra.probe import __doc__ as probe_module_doc
from spt_theory.lra.probe import format_probe, probe_files
from spt_theory.lra.race import NAME as RACE_NAME
from spt_theory.lra.race import __doc__ as race_module_doc
from spt_theory.lra.race import collect as race_collect
from spt_theory.lra.race import merge as race_merge
from spt_theory.lra.race import write as race_write
from spt_theory.lra.report import format_report, load_results
from spt_theory.lra.runner import DEFAULT_FINETUNE_EPOCHS, ENCODER_GROUPS, MODELS, LRARun, RunOptions
from spt_theory.lra.runtime import DEVICES, runtime_from_env, shutdown
from spt_theory.lra.sweep import __doc__ as sweep_module_doc
from spt_theory.lra.sweep import draw, format_summary, promote_sweep, summary_path, sweep
from spt_theory.lra.sweep_cells import axes_help, cells
from spt_theory.lra.tasks import task_names
from spt_theory.training.loop import TrainingDiverged
from spt_theory.util.files import InputError, announce, prepare_output
from spt_theory.util.interrupts import interruptible
from spt_theory.util.prog import prog

COMMANDS = {
    "confirm": "scratch vs SPT then finetune, same supervised stage",
    "pretrain": "SPT pretraining only",
    "finetune": "SPT (cached if done) then supervised finetuning from the best-validation checkpoint",
    "scratch": "supervised training from random init only",
}


def sweep_doc() -> str:
    """``sweep --help``: the sweep module's doc and its axes (:data:`spt_theory.lra.sweep_cells.AXES`)."""
    return sweep_module_doc.split("\n", 1)[1].strip() + "\n\naxes:\n" + axes_help()


def probe_doc() -> str:
    return probe_module_doc.split("\n", 1)[1].strip()


_NO_SPT, _NO_SUPERVISED = "it has no SPT stage", "it has no supervised stage"
IGNORED = {"scratch": {name: _NO_SPT for name in ("epochs", "keep", "pretrain_task", "pretrain_data_dir")},
           "pretrain": {name: _NO_SUPERVISED for name in ("finetune_epochs", "freeze", "keep")},
           "sweep": {"seed": "use --seeds",
                     **{name: f"an axis: --grid {name}=V1,V2 or --cell {name}=V" for name in
                        ("freeze", "keep", "pretrain_task")}}}
"""Options a command has no use for, and why: giving one is an error, not silently ignored."""


def check_options(args: argparse.Namespace) -> None:
    """InputError naming an option the command would ignore."""
    for name, why in IGNORED.get(args.command, {}).items():
        if getattr(args, name) is not None:
            raise InputError(f"--{name.replace('_', '-')} does nothing in '{args.command}' ({why})")


def _run_arguments() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("data and task")
    g.add_argument("--task", required=True, choices=task_names(), help="the task classified")
    g.add_argument("--data-dir", required=True, type=Path, help="root of the LRA data (release layout)")
    g.add_argument("--pretrain-task", choices=task_names(),
                   help="pretrain on this task's data instead (default: --task); the model keeps "
                        "--task's architecture, the pretraining its data, masking, loss and lr")
    g.add_argument("--pretrain-data-dir", type=Path, help="root for --pretrain-task (default: --data-dir)")
    g = p.add_argument_group("budget and model")
    g.add_argument("--layers", type=int, help="Transformer layers (default: the task's; 1 for the 1-layer ablation)")
    g.add_argument("--epochs", type=int, help="SPT pretraining epochs (default: the task's, e.g. ListOps 100)")
    g.add_argument("--finetune-epochs", type=int,
                   help=f"supervised epochs, scratch and finetuning alike (default {DEFAULT_FINETUNE_EPOCHS})")
    g.add_argument("--max-steps", type=int, help="end each training stage after this many optimizer steps")
    g.add_argument("--model", choices=MODELS, default="transformer",
                   help="transformer, or a learnability control trained like scratch: cnn (pixel tasks), "
                        "lstm (token tasks), bag (bag of tokens); see spt_theory/lra/controls.py")
    g.add_argument("--tiny", action="store_true", help="CPU-test sizes: width 16, batch 4, 3 steps per stage")
    g.add_argument("--set", dest="overrides", action="append", type=cli_args.assignment, default=[],
                   metavar="FIELD=VALUE",
                   help="override a task config field (repeatable), e.g. d_model=128, n_heads=4, d_ff=256, "
                        "batch_size=64, warmup_steps=500, lr_pretrain=1e-3, mask_ratio=0.15")
    cli_args.add_seed(g)
    g = p.add_argument_group("ablations (supervised stage)")
    cli_args.add_groups(g, "--freeze", "groups kept fixed during supervised training, e.g. qk (attention "
                        "frozen at init; in 'finetune' at the SPT values), or none", "none")
    cli_args.add_groups(g, "--keep", "groups copied from the SPT checkpoint, the rest fresh (hybrid init, "
                        "e.g. qk), or all", f"all = {cli_args.join_groups(ENCODER_GROUPS)}")
    g = p.add_argument_group("output and runtime")
    g.add_argument("--out", type=Path, default=Path("runs/lra"), help="cache and results folder (runs/lra)")
    g.add_argument("--checkpoint-every", type=int, default=200, help="steps between mid-epoch checkpoints (200)")
    g.add_argument("--device", choices=DEVICES, default="auto", help="auto: CUDA if available")
    cli_args.add_threads(g)
    cli_args.add_no_progress(g)
    return p


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=prog("python -m spt_theory.lra"), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = _run_arguments()
    for name, help_text in COMMANDS.items():
        commands.add_parser(name, parents=[common], help=help_text, description=help_text)
    sweep = commands.add_parser("sweep", parents=[common], help="ablation grid over seeds: table and figure",
                                description=sweep_doc(), formatter_class=argparse.RawDescriptionHelpFormatter)
    sweep.add_argument("--grid", action="append", default=[], metavar="AXIS=V1,V2",
                       help="an axis and its values; the sweep runs the product of all --grid axes")
    sweep.add_argument("--cell", action="append", default=[], metavar="AXIS=V,AXIS=V",
                       help="one more cell (axes joined by commas), e.g. recipe=spt,keep=qk")
    sweep.add_argument("--control", action="append", default=[], choices=CONTROLS, metavar="KIND",
                       help=f"a learnability control on the same data (repeatable): {', '.join(CONTROLS)}")
    cli_args.add_seeds(sweep, (0, 1, 2), "0 1 2; every cell runs at every seed")
    sweep.add_argument("--name", default="sweep",
                       help="summary name: OUT/sweeps/<task>-<name>.json (default sweep); a summary of "
                            "another grid there is not overwritten")
    sweep.add_argument("--probe-limit", type=int, help="probe only the first N test examples (default all)")
    sweep.add_argument("--promote", action="store_true",
                       help="also write the summary into the package's evidence as lra/<task>.json, the sweep "
                            "claims L1-L4 read (paths scrubbed, schema checked; the only writer of that file)")
    probe = commands.add_parser("probe", help="attention probes of the checkpoints behind result JSONs",
                                description=probe_doc(), formatter_class=argparse.RawDescriptionHelpFormatter)
    probe.add_argument("target", type=Path, metavar="RESULT_OR_FOLDER",
                       help="a scratch/spt result JSON, or a folder searched recursively for them")
    probe.add_argument("--limit", type=cli_args.at_least(1), help="probe only the first N test examples (default all)")
    probe.add_argument("--out", type=Path, metavar="RUN_FOLDER",
                       help="the run folder holding the checkpoints (cache/) and receiving probes/ (default: "
                            "the folder each result lies in as RUN_FOLDER/results/<task>/)")
    probe.add_argument("--data-dir", type=Path, help="root of the data the runs were trained on (required; the "
                                                     "folder a result records is never read)")
    probe.add_argument("--pretrain-data-dir", type=Path, help="root of the SPT runs' pretraining data (default: "
                                                              "--data-dir)")
    cli_args.add_threads(probe)
    cli_args.add_no_progress(probe)
    race = commands.add_parser("race", help="collect the Pathfinder-16 escape race (claim L5) into evidence JSON",
                               description=race_module_doc.split("\n", 1)[1].strip(),
                               formatter_class=argparse.RawDescriptionHelpFormatter)
    race.add_argument("--out", type=Path, default=Path("runs/race"),
                      help="the race's run folder (scripts/escape_race.sh's OUT; default runs/race)")
    race.add_argument("--data-dir", type=Path, required=True, help="root holding pathfinder16/ (the registered data)")
    race.add_argument("--promote", action="store_true",
                      help="also copy the evidence into the committed evidence (package data race/), completed by "
                           "the committed arms of seeds run elsewhere (an arm that ran further here replaces its own)")
    decide.add_parser(commands)
    audit.add_parser(commands)
    gpu = commands.add_parser("gpu", help="the GPU twin's result into the package's evidence (issue 51)",
                              description="The GPU twin's result (scripts/lra_gpu_confirm.sh, docs/gpu.md).")
    gpu_steps = gpu.add_subparsers(dest="gpu_command", required=True, metavar="STEP")
    gpu_promote = gpu_steps.add_parser("promote", help="check a twin run's files and write them as evidence "
                                                       "lra/gpu/<setting>.json, what the G claims read")
    gpu_promote.add_argument("folder", type=Path, metavar="RUN_OR_OUT_DIR",
                             help="the twin's run folder, or the OUT folder that came back from the GPU machine")
    gpu_promote.add_argument("--replace", action="store_true", help="replace the setting's evidence already there")
    report = commands.add_parser("report", help="table of result JSONs against the LRA reference numbers",
                                 description="Table of result JSONs against the LRA reference numbers.")
    report.add_argument("--results", type=Path, default=Path("runs/lra/results"),
                        help="folder searched recursively for result JSONs (runs/lra/results)")
    return parser.parse_args(argv)


def options_from(args: argparse.Namespace) -> RunOptions:
    freeze = cli_args.parse_groups(args.freeze, "--freeze", none="none")
    keep = cli_args.parse_groups(args.keep, "--keep", all_groups=ENCODER_GROUPS)
    check_options(args)
    return RunOptions(task=args.task, data_dir=args.data_dir, pretrain_task=args.pretrain_task,
                      pretrain_data_dir=args.pretrain_data_dir, layers=args.layers,
                      pretrain_epochs=args.epochs,
                      finetune_epochs=DEFAULT_FINETUNE_EPOCHS if args.finetune_epochs is None else args.finetune_epochs,
                      max_steps=args.max_steps, seed=cli_args.parse_seed(args.seed), out=args.out, tiny=args.tiny,
                      overrides=tuple(args.overrides), freeze=freeze or (),
                      keep=ENCODER_GROUPS if keep is None else keep,
                      checkpoint_every=args.checkpoint_every, progress=not args.no_progress, model=args.model)


def set_threads(args: argparse.Namespace) -> None:
    """``--threads`` (checked by argparse) applied to torch."""
    if args.threads is not None:
        cpu.set_intra_op_threads(args.threads)


def execute(args: argparse.Namespace) -> None:
    cli_args.refuse_evidence_outputs(args)  # --out inside the committed evidence: refused before any work
    if args.command == "report":
        print(format_report(load_results(args.results)))
        return
    if args.command == "decide":
        decide.execute(args)
        return
    if args.command == "audit":
        audit.execute(args)
        return
    if args.command == "gpu":
        from spt_theory.lra.gpu import promote as gpu_promote

        written = gpu_promote.promote(args.folder, replace=args.replace)
        if written is not None:
            announce(written)
        return
    if args.command == "race":
        found = race_collect(args.out, args.data_dir, checked=args.promote)
        if not found["arms"]:
            raise InputError(f"{args.out / 'cache'}: no stage of the race (run scripts/escape_race.sh)")
        merged = None
        if args.promote:  # every check before anything is written: a refused promotion writes nothing
            committed = evidence.path(evidence.RACE, RACE_NAME)
            merged = evidence.scrub_paths(found)
            if committed.is_file():  # seeds run elsewhere stay; an arm that ran further here replaces its own
                merged = race_merge(merged, schema.load(committed, lra_schema.RaceEvidence))
        announce(race_write(found, args.out))
        if merged is not None:
            promoted = race_write(merged, args.out, "promoted-" + RACE_NAME)
            announce(promoted)
            announce(evidence.promote(promoted, evidence.RACE, RACE_NAME))
        return
    if args.command == "probe":
        set_threads(args)
        for report in probe_files(args.target, args.limit, progress=not args.no_progress, out=args.out,
                                  data_dir=args.data_dir, pretrain_data_dir=args.pretrain_data_dir):
            print(format_probe(report))
        return
    options = options_from(args)
    if args.command == "sweep":
        grid_cells, seeds = cells(args.grid, args.cell), args.seeds
        path = summary_path(options, args.name)  # checked against the grid by sweep(), under its lock
    set_threads(args)
    runtime = runtime_from_env(args.device)
    try:
        if args.command == "sweep":
            summary = sweep(options, grid_cells, list(seeds), runtime, args.name, args.probe_limit,
                            tuple(dict.fromkeys(args.control)))
            print(format_summary(summary))
            if runtime.main:
                announce(path)
                for written in draw(summary, path.with_suffix("")):
                    announce(written)
                if args.promote:
                    announce(promote_sweep(path))
            return
        run = LRARun(options, runtime)
        run.setup_target()  # bad data or config stop here, before anything is written
        if args.command != "scratch":
            run.setup_source()
        if runtime.main:  # before any training; a created folder is said
            prepare_output(options.out, folder=True)
        if args.command == "confirm":
            run.confirm()
        elif args.command == "pretrain":
            run.pretrain()
        elif args.command == "finetune":
            run.finetune()
        else:
            run.supervised(None)
    finally:
        shutdown()


@interruptible
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        execute(args)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except TrainingDiverged as error:
        print(f"error: training diverged: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
