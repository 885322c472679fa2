#!/usr/bin/env bash
# The GPU twin of the CPU designs (issues 42, 51 and 57; spt_theory/lra/gpu/twin.py, docs/gpu.md):
# 1-layer Pathfinder-16, 8 seeds x {scratch, SPT then finetune, W_Q W_K hybrid, frozen W_Q W_K,
# proximity init}, one stacked ensemble, in the setting --setting contour6 (default) or short;
# everything (start, data, bench, plan, training) ends inside --wall S (540) from this script's start.
#
#   bash scripts/lra_gpu_confirm.sh [RUN] [--data FILE.npz]   the twin (needs CUDA; RUN: runs/gpu-twin)
#   bash scripts/lra_gpu_confirm.sh --dry-run [--wall S]      its plan at the assumed throughput, setup counted
#   bash scripts/lra_gpu_confirm.sh --tiny RUN                the twin at tiny sizes on the CPU (tests)
#   bash scripts/lra_gpu_confirm.sh --make-data FILE.npz      the setting's data, made here to carry
#   OUT=DIR bash scripts/lra_gpu_confirm.sh ...               also export to DIR (or --export DIR)
#
# Before the twin, a preflight (python -m spt_theory.lra.gpu.preflight, about a second) imports
# everything the run imports and names what is missing in one line (exit 2).  Then this script
# becomes the twin (exec): SIGINT and SIGTERM reach the run itself, which records the stop in
# summary.json with every evaluation done and ends.  Exit status (docs/gpu.md): 0 complete, 3 cut by
# the deadline (every evaluation done is written), 2 refused (one 'error:' line; nothing trained),
# 1 stopped by an error (recorded in summary.json, every evaluation done kept), 130 / 143 stopped by
# SIGINT / SIGTERM (the same), 137 killed (SIGKILL: the files as of the last evaluation).
#
# Interpreter: $PYTHON, else python3, else python (with torch and numpy; one without torch is
# refused in one line naming PYTHON=); the project needs no install: this script puts its checkout
# first on PYTHONPATH.
set -uo pipefail
started=$(date +%s.%N)
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
    echo "error: $PY has no torch: set PYTHON=/path/to/python, one with torch and numpy" >&2
    exit 2
fi
if [[ ${1:-} == --sweeps ]]; then
    echo "error: --sweeps (the earlier confirmation) is gone; this script runs the GPU twin (docs/gpu.md)" >&2
    exit 2
fi
"$PY" -m spt_theory.lra.gpu.preflight || exit 2
exec "$PY" -m spt_theory.lra.gpu.twin --started "$started" "$@"
