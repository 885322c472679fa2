"""CPU smoke run of the LRA pipeline: small generated ListOps, 1 layer, scratch vs SPT then finetune.

    python -m spt_theory.lra.smoke [--out runs/lra-smoke]

Generates ListOps in the release layout under ``OUT/data`` (train 2000, val 200, test 200; tree
lengths 20 < L < 120 instead of LRA's 500..2000, so that it fits a CPU), then runs the equivalent of
``python -m spt_theory.lra confirm --task listops --data-dir OUT/data --out OUT --layers 1 --epochs 8
--finetune-epochs 8`` at the registry's setting ``listops_smoke`` (:mod:`spt_theory.lra.designs`:
the CPU model with one epoch of warm-up, 63 steps; the finetuning rate of the 6-layer width-512
paper model, 1e-4, is raised to 1e-3 for this small model) and prints the report.  Rerunning
reloads the cached runs.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from spt_theory.lra.designs import SETTINGS
from spt_theory.lra.report import format_report, load_results
from spt_theory.lra.runner import LRARun, RunOptions
from synthetic.listops import generate_splits, write_split

SETTING = SETTINGS["listops_smoke"]
GENERATOR = SETTING.data.settings or {}
SIZES = {split: GENERATOR[split] for split in ("train", "val", "test")}
MIN_LEN, MAX_LEN = GENERATOR["min_len"], GENERATOR["max_len"]
OVERRIDES = SETTING.overrides
EPOCHS = 8


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spt_theory.lra.smoke", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("runs/lra-smoke"), help="data, cache and results")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    data_dir = args.out / "data"
    if not (data_dir / "listops-1000/basic_test.tsv").exists():
        for split, rows in generate_splits(SIZES, MIN_LEN, MAX_LEN, seed=GENERATOR["seed"]).items():
            write_split(data_dir / f"listops-1000/basic_{split}.tsv", rows)
    options = RunOptions(task="listops", data_dir=data_dir, layers=1, pretrain_epochs=EPOCHS,
                         finetune_epochs=EPOCHS, out=args.out, overrides=OVERRIDES)
    LRARun(options).confirm()
    print(format_report(load_results(args.out / "results")))
    print(f"wall time {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
