#!/usr/bin/env bash
# Budgeted SPT-on-LRA confirmation on one GPU: generated ListOps (lengths 500-2000) and
# Pathfinder-32, 1-layer models, one seed: scratch, SPT then finetune (and keep=qk for ListOps),
# attention probes of every checkpoint, sweep figures, the report table, and the throughput of our
# model against torch.nn.TransformerEncoderLayer.  Planned to fit 10 minutes of H200 time with data
# generation included -- an estimate until it has run on a GPU.
#
#   bash scripts/lra_gpu_confirm.sh [OUT]              the run (needs CUDA; OUT: runs/lra-gpu)
#   bash scripts/lra_gpu_confirm.sh --dry-run          the plan: FLOPs and estimated seconds per step
#   bash scripts/lra_gpu_confirm.sh --tiny OUT         the same pipeline at tiny sizes on the CPU (tests)
#
# Interpreter: $PYTHON, else python3, else python (with torch, numpy, tqdm, pillow, matplotlib).
# Every step is a process of that interpreter; its stderr is shown; a failing step prints its
# error and the script stops with exit status 2.  Order: bench (OUT/bench.json), data (OUT/data,
# reused when complete), plan (OUT/plan.json), sweeps (OUT/results, OUT/sweeps/<task>-gpu.*),
# report (OUT/report.txt).
#
# Step caps: the runner caps a stage by --max-steps only, so the steps come from time: after the
# bench and data steps, what is left of the 600 s (minus estimated process starts, data reading,
# CPU probes and evaluations) x 0.85 is split evenly over the 7 training stages, and each task's
# cap is its share over its seconds per step, the FLOPs per step over the FLOP/s the bench
# measured for our model at that task's shape.  A rerun reuses the caps of OUT/plan.json, so
# cached stages resume.  Details: spt_theory/lra/gpu_confirm.py.
set -uo pipefail
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

"$PY" -m spt_theory.lra.gpu_confirm --python "$PY" "$@"
status=$?
if (( status != 0 && status != 2 )); then
    echo "error: $PY -m spt_theory.lra.gpu_confirm stopped with exit status $status" >&2
fi
(( status == 0 )) || exit 2
