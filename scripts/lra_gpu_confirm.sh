#!/usr/bin/env bash
# The GPU twin of the CPU designs (issues 42 and 51; spt_theory/lra/gpu/twin.py, docs/gpu.md):
# 1-layer Pathfinder-16, 8 seeds x {scratch, SPT then finetune, W_Q W_K hybrid, frozen W_Q W_K,
# proximity init}, one stacked ensemble, in the setting --setting contour6 (default) or short;
# everything (start, data, bench, plan, training) ends inside --wall S (540) from this script's start.
#
#   bash scripts/lra_gpu_confirm.sh [RUN] [--data FILE.npz]   the twin (needs CUDA; RUN: runs/gpu-twin)
#   bash scripts/lra_gpu_confirm.sh --dry-run [--wall S]      its plan at the assumed throughput, setup counted
#   bash scripts/lra_gpu_confirm.sh --tiny RUN                the twin at tiny sizes on the CPU (tests)
#   bash scripts/lra_gpu_confirm.sh --make-data FILE.npz      the setting's data, made here to carry
#   bash scripts/lra_gpu_confirm.sh --sweeps ...              the earlier confirmation, below (its options)
#
# Before the twin, a preflight (python -m spt_theory.lra.gpu.preflight, about a second) imports
# everything the run imports and names what is missing in one line (exit 2).  Exit status of the
# twin: 0 complete, 3 cut by the deadline (every evaluation done is written), 2 refused or failed,
# 130 / 143 stopped by SIGINT / SIGTERM.
#
# --sweeps: budgeted SPT-on-LRA confirmation on one GPU: generated ListOps (lengths 500-2000) and
# Pathfinder-32, 1-layer models, one seed: scratch, SPT then finetune (and keep=qk for ListOps),
# attention probes of every checkpoint, sweep figures, the report table, and the throughput of our
# model against torch.nn.TransformerEncoderLayer.  Planned to fit 300 s of H200 time with data
# generation included (--budget S changes it) -- an estimate until it has run on a GPU.
#
#   bash scripts/lra_gpu_confirm.sh [RUN]              the run (needs CUDA; RUN: runs/lra-gpu)
#   bash scripts/lra_gpu_confirm.sh --dry-run          the plan: FLOPs, seconds and timeout per step
#   bash scripts/lra_gpu_confirm.sh --tiny RUN         the same pipeline at tiny sizes on the CPU (tests)
#   OUT=DIR bash scripts/lra_gpu_confirm.sh ...        also export to DIR (or --export DIR)
#
# Interpreter: $PYTHON, else python3, else python (with torch, numpy, tqdm, pillow, matplotlib; one
# without torch is refused in one line naming PYTHON=);
# the project needs no install: this script puts its checkout first on PYTHONPATH.  Every step is
# a process of that interpreter, its output shown as it comes and kept in RUN/logs.  Order: bench
# (RUN/bench.json), data (RUN/data, reused when complete), plan (RUN/plan.json), sweeps
# (RUN/results, RUN/probes, RUN/sweeps/<task>-gpu.*), report (RUN/report.txt), summary
# (RUN/summary.json: every number of the run, each step planned against actual).
#
# Budget: the seconds count from this script's start.  Every step has a timeout (1.5 x its plan
# + 20 s, never into the last 5 s of the budget); a step that fails or overruns is cut, recorded
# in summary.json, and the run goes on where it can.  The report, the summary and the export
# always happen; the exit status is 0 when every step finished, else 2 with one 'error:' line per
# step that did not.
#
# Export ($OUT set, or --export DIR; what a lent GPU machine returns): at most 7 files,
# summary.json, report.txt, results.tar.gz (the run's JSONs and logs, no data or checkpoints) and
# the sweep figures <task>-gpu.{png,pdf}.  Details: spt_theory/lra/gpu/confirm.py.
set -uo pipefail
started=$(date +%s)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"

PY=${PYTHON:-}
if [[ -z $PY ]]; then
    PY=$(command -v python3 || command -v python || true)
fi
if [[ -z $PY ]]; then
    echo "error: no interpreter: set PYTHON, or put python3 or python on PATH" >&2
    exit 2
fi
if ! "$PY" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)' >/dev/null 2>&1; then
    echo "error: $PY has no torch: set PYTHON=/path/to/python, one with torch, numpy, tqdm, pillow, matplotlib" >&2
    exit 2
fi

if [[ ${1:-} == --sweeps ]]; then
    shift
    module=spt_theory.lra.gpu.confirm
    "$PY" -m $module --python "$PY" --started "$started" "$@"
    status=$?
    if (( status != 0 && status != 2 )); then
        echo "error: $PY -m $module stopped with exit status $status" >&2
    fi
    (( status == 0 )) || exit 2
    exit 0
fi
"$PY" -m spt_theory.lra.gpu.preflight || exit 2
"$PY" -m spt_theory.lra.gpu.twin --started "$started" "$@"
status=$?
case $status in
    0|2|3|130|143) exit $status ;;
    *) echo "error: $PY -m spt_theory.lra.gpu.twin stopped with exit status $status" >&2; exit 2 ;;
esac
