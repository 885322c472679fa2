#!/usr/bin/env bash
# The Pathfinder-16 escape race (claim L5; rules: docs/preregistration/2026-12-02-lra-verdicts-and-escape-race.md).
#
#   DATA=~/lra OUT=~/spt-race/runs bash scripts/escape_race.sh [SEED ...]
#
# DATA holds pathfinder16/curv_contour_length_6 (python -m synthetic.pathfinder --out DATA/pathfinder16
# --n 20000 --size 16 --contour-length 6 --distractors 2 --distractor-length 3 --match-distances;
# fingerprint 59dacef54da8ce04).  Per seed: scratch for 40 epochs (20,000 steps), then SPT for 6 epochs
# (3,000 steps) and finetuning for 34 (17,000).  Two lanes run side by side, one thread each (LANES=1:
# one after the other).  Every stage checkpoints every 200 steps: rerun the same command to resume.
set -euo pipefail
DATA=${DATA:?set DATA to the folder holding pathfinder16/}
OUT=${OUT:-runs/race}
LANES=${LANES:-2}
SEEDS=("$@"); [ ${#SEEDS[@]} -gt 0 ] || SEEDS=(0 1 2)
MODEL=(--task pathfinder --data-dir "$DATA" --layers 1 --set d_model=64 --set n_heads=4 --set d_ff=128
       --set lr_finetune=1e-3 --set warmup_steps=100 --set lr_pretrain=2e-3 --set resolution=16
       --set contour_length=6 --out "$OUT" --threads 1 --no-progress)
export SPT_KEEP_CHECKPOINTS=all   # every epoch's checkpoint stays, for the proximity trajectory
arm() {  # arm SEED scratch|spt
  if [ "$2" = scratch ]; then python -m spt_theory.lra scratch "${MODEL[@]}" --seed "$1" --finetune-epochs 40
  else python -m spt_theory.lra finetune "${MODEL[@]}" --seed "$1" --epochs 6 --finetune-epochs 34; fi
}
jobs_list=(); for s in "${SEEDS[@]}"; do jobs_list+=("$s scratch" "$s spt"); done
lane() {  # lane I: every LANES-th job from I
  for ((j = $1; j < ${#jobs_list[@]}; j += LANES)); do
    read -r seed kind <<<"${jobs_list[$j]}"
    mkdir -p "$OUT/logs"; echo "lane $1: seed $seed $kind ($(date -u +%H:%M:%S))" >&2
    arm "$seed" "$kind" >>"$OUT/logs/seed$seed-$kind.log" 2>&1
  done
}
pids=(); for ((i = 0; i < LANES; i++)); do lane "$i" & pids+=($!); done
status=0; for p in "${pids[@]}"; do wait "$p" || status=1; done; exit $status
