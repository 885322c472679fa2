"""``python -m spt_theory.lra.gpu.confirm`` (run by ``scripts/lra_gpu_confirm.sh``): the budgeted
one-GPU confirmation of SPT on generated ListOps and Pathfinder-32, 1-layer models, one seed.

Steps (:mod:`spt_theory.lra.gpu.steps`: every process of the interpreter ``--python`` in its own
process group, its output shown on stderr as it comes and kept in ``OUT/logs/<process>.log``):

0. ``start``: this process's start and the data rates measured on this CPU (for the plan).
1. ``bench``: ``python -m spt_theory.bench --device cuda --lra``: ms/step, tokens/s and TFLOP/s of
   our model against ``nn.TransformerEncoderLayer`` at the ListOps and Pathfinder shapes.
2. ``data``: ``listops_workers`` processes draw ListOps trees (lengths 500-2000) while ``workers``
   processes draw Pathfinder-32 images (contour length 14), one seed each, merged into the release
   layout with one provenance marker per task (a tree drawn twice is kept once).  Reused when
   ``OUT/data`` already holds data of the same sizes.
3. ``sweep <task>``: ``python -m spt_theory.lra sweep`` with the cells scratch, spt (and
   ``spt,keep=qk`` for ListOps), seed 0, ``--layers 1``: trains, probes every checkpoint (init,
   scratch, SPT, finetuned) and writes ``OUT/sweeps/<task>-gpu.{json,png,pdf}``.
4. ``report``, in this process: the report table of ``OUT/results`` -> ``OUT/report.txt``; then
   ``OUT/summary.json`` (every number of the run) and, with ``$OUT`` set or ``--export DIR``, the
   export there (:mod:`spt_theory.lra.gpu.export`: at most 7 files within the limits of what the
   lent GPU machine returns).

**Budget.**  The run is planned to fit ``--budget`` seconds (``BUDGET_SECONDS``, data generation
included, counted from the script's start), so that a rerun and the machine's starts still fit a
15-minute lease.  Every step has a timeout, :func:`step_timeout`: ``OVERRUN`` x its planned seconds
+ ``STEP_GRACE``, never past the budget's end less ``FINISH_SECONDS`` (kept for the report and the
export); a step whose timeout would be under ``MIN_STEP_SECONDS`` is skipped.  A step that fails or
overruns (cut: its processes stopped) is recorded and the run goes on where it can: without the
bench the plan keeps the dry run's assumed rates, without data the sweeps are skipped, one task's
sweep does not need the other's.  The report, summary and export always happen; the exit status
is 0 when every step finished, else 2 (one ``error:`` line per step that did not).

**Step caps.**  The runner caps a stage by ``--max-steps`` only, so the plan turns seconds into
steps: what is left of the budget after the measured start, bench and data steps and the
estimated fixed costs (process starts, data reading, probes, the finish) is multiplied by
``SAFETY`` and split evenly over the training stages (4 for ListOps, 3 for Pathfinder); a task's
cap is the most steps whose training, per-epoch evaluations and checkpoints fit its share.
Seconds per step are FLOPs per step (:func:`spt_theory.bench.cases.train_step_flops`; SPT adds the
decoder) over the achieved FLOP/s the bench measured for our model at that task's shape.  The
plan is redone before each sweep with the time actually left; a sweep slower than planned slows
the next task's steps by the same factor.  ``--dry-run`` makes the same plan on the CPU with an
assumed achieved rate (``ASSUMED_PEAK_FRACTION`` of the H200's bf16 dense peak, plus
``ASSUMED_STEP_OVERHEAD`` per step) and data generation and reading rates measured on this CPU
(one process, in CPU seconds), the generation spread over the GPU machine's ``GPU_MACHINE_CORES``.
The caps are saved in ``OUT/plan.json``; a rerun reuses them, so cached stages resume.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

from spt_theory.lra.gpu import export as gpu_export
from spt_theory.lra.gpu.plan import (
    BUDGET_SECONDS,
    FIGURES,
    FULL,
    TINY,
    assumed_rates,
    format_plan,
    measure_cpu_rates,
    plan,
)
from spt_theory.lra.gpu.run import check_folders, confirm
from spt_theory.util.files import InputError, StorageError


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="scripts/lra_gpu_confirm.sh", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="?", type=Path, default=Path("runs/lra-gpu"),
                        help="run folder: data, checkpoints, results (default runs/lra-gpu)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan with FLOPs and estimated seconds")
    parser.add_argument("--tiny", action="store_true", help="tiny data, models and step caps, on the CPU (tests)")
    parser.add_argument("--budget", type=float, default=BUDGET_SECONDS,
                        help=f"seconds of GPU time, data generation included ({BUDGET_SECONDS:.0f})")
    parser.add_argument("--export", type=Path, metavar="DIR",
                        help="export folder: summary.json, report.txt, results.tar.gz, figures (default $OUT)")
    parser.add_argument("--python", default=sys.executable, help="interpreter of every step (default: this one)")
    parser.add_argument("--started", type=float, metavar="EPOCH_SECONDS",
                        help="when the budget starts (time since the epoch; the script passes its own start)")
    args = parser.parse_args(argv)
    started = time.time() if args.started is None else args.started
    sizes = TINY if args.tiny else FULL
    try:
        if not (math.isfinite(args.budget) and args.budget > 0):
            raise InputError(f"--budget must be a finite number of seconds > 0, got {args.budget}")
        if args.dry_run:
            if args.export is not None:
                raise InputError("--export does nothing with --dry-run (it runs nothing)")
            p = plan(sizes, assumed_rates(measure_cpu_rates(sizes)), budget=args.budget)
            print(format_plan(p))
            if p["total_seconds"] > args.budget:
                raise InputError(f"the plan takes {p['total_seconds']:.0f} s, over the budget of {args.budget:.0f} s")
            return 0
        export = args.export or (Path(os.environ["OUT"]) if os.environ.get("OUT") else None)
        if export is not None:
            gpu_export.check_export_folder(export, args.out, gpu_export.FIXED_FILES + FIGURES)
        if not args.tiny:
            import torch
            if not torch.cuda.is_available():
                raise InputError("no CUDA device visible to torch (--tiny: the pipeline on the CPU; "
                                 "--dry-run: the plan)")
        check_folders(args.out, export)
        return confirm(args.python, args.out, sizes, args.budget, export, started, argv)
    except (InputError, StorageError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
