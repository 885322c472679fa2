#!/usr/bin/env bash
# Budgeted SPT-on-LRA confirmation on one GPU: generated ListOps and Pathfinder, 1-layer models,
# scratch vs SPT then finetune, about 8 minutes on one H200 with data generation included.
#
#   bash scripts/lra_gpu_confirm.sh [--tiny] [OUT]          (run from anywhere; OUT: runs/lra-gpu)
#
# Needs python with torch (CUDA build), numpy, tqdm and pillow; nothing is downloaded.
# Writes OUT/data (ListOps and Pathfinder in the LRA release layout), OUT/cache (checkpoints),
# OUT/results/<task>/{scratch,pretrain,spt}-<hash>.json and OUT/report.txt.
#
# Budget (not yet timed on a GPU; the per-task `timeout` caps keep the total within 8 minutes):
#   data     ListOps 20k/1k/1k trees of length 500-2000 (one process) while 15 processes draw
#            24k Pathfinder images (80/10/10 split), <= 60 s
#   listops  width 512 (the task's), batch 32, warm-up 300 steps: scratch 6 epochs, SPT 8 epochs
#            then finetune 6 epochs, <= 200 s
#   path     width 128 (the task's), batch 32, warm-up 600 steps: scratch 15, SPT 20 + 15, <= 190 s
# A task cut by its cap has no result JSON yet; rerunning the script resumes it from its
# checkpoints (and reuses the data).  --tiny: the same pipeline with tiny data, models and step
# caps, seconds on a CPU (the tests run it).
set -euo pipefail
cd "$(dirname "$0")/.."

TINY=0
if [[ "${1:-}" == "--tiny" ]]; then TINY=1; shift; fi
OUT=${1:-runs/lra-gpu}
DATA=$OUT/data
START=$SECONDS
say() { echo "[lra-gpu +$((SECONDS - START))s] $*" >&2; }

python -c "import torch, numpy, tqdm, PIL" 2>/dev/null || {
    echo "error: needs python with torch, numpy, tqdm and pillow importable" >&2; exit 2; }
if [[ $TINY == 0 ]] && ! python -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
    echo "error: no CUDA device visible to torch (use --tiny for a CPU check of the pipeline)" >&2; exit 2
fi

if [[ $TINY == 1 ]]; then
    LISTOPS=(--train 24 --val 8 --test 8 --min-len 5 --max-len 40); PF_IMAGES=40; PF_WORKERS=2
    RUN=(--tiny --layers 1); CAP_LISTOPS=120; CAP_PATH=120
    LISTOPS_RUN=(); PATH_RUN=()
else
    LISTOPS=(--train 20000 --val 1000 --test 1000); PF_IMAGES=24000; PF_WORKERS=15
    RUN=(--layers 1); CAP_LISTOPS=200; CAP_PATH=190
    LISTOPS_RUN=(--epochs 8 --finetune-epochs 6 --set warmup_steps=300)
    PATH_RUN=(--epochs 20 --finetune-epochs 15 --set warmup_steps=600)
fi

# ------------------------------------------------------------------------------------ data
generate() {
    local pids=() k part n=$((PF_IMAGES / PF_WORKERS))
    local pf=$DATA/pathfinder32/curv_contour_length_14 tmp=$DATA/.pathfinder-parts
    rm -rf "$DATA/listops-1000" "$DATA/pathfinder32" "$tmp"
    python -m synthetic.listops --out "$DATA/listops-1000" "${LISTOPS[@]}" >/dev/null & pids+=($!)
    for ((k = 0; k < PF_WORKERS; k++)); do  # one seed per process, merged into one release layout
        python -m synthetic.pathfinder --out "$tmp/$k" --n "$n" --seed "$((k + 1))" --per-folder "$n" \
            >/dev/null 2>&1 & pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    mkdir -p "$pf/imgs" "$pf/metadata"
    for ((k = 0; k < PF_WORKERS; k++)); do
        part=$tmp/$k/curv_contour_length_14
        mv "$part/imgs/0" "$pf/imgs/$k"
        sed "s#^imgs/0 #imgs/$k #" "$part/metadata/0.npy" > "$pf/metadata/$k.npy"
    done
    rm -rf "$tmp"
    touch "$DATA/.complete"
}
if [[ ! -f $DATA/.complete ]]; then
    say "generating ListOps and Pathfinder under $DATA"
    generate
fi
say "data ready"

# ------------------------------------------------------------------------------------ runs
confirm() {  # task, cap in seconds, extra arguments
    local task=$1 cap=$2; shift 2
    say "confirm $task (cap ${cap}s)"
    timeout --signal=INT --kill-after=10 "$cap" python -m spt_theory.lra confirm --task "$task" --data-dir "$DATA" \
        --out "$OUT" "${RUN[@]}" "$@" --no-progress || say "confirm $task stopped early (status $?)"
}
confirm listops "$CAP_LISTOPS" "${LISTOPS_RUN[@]}"
confirm pathfinder "$CAP_PATH" "${PATH_RUN[@]}"

python -m spt_theory.lra report --results "$OUT/results" | tee "$OUT/report.txt"
say "done; results under $OUT/results, table in $OUT/report.txt"
