"""``python -m spt_theory.lra.gpu.bench_ensembles``: model-steps a second of the three ways to train
``M`` 1-layer Pathfinder-16 models on this machine (issue 51's closing note): the stacked ensemble
(:mod:`spt_theory.lra.gpu.stacked`), ``M`` separate Encoders stepped one after the other (each its
own AdamW), and the earlier ``vmap`` ensemble (:mod:`spt_theory.lra.gpu.ensemble`).  Supervised
steps on random images, one thread unless ``--threads``; each way warmed up for 2 steps, then
``--steps`` timed.  Prints one line a way and, with ``--json FILE``, writes the figures."""

from __future__ import annotations

import argparse
import json
import time
import warnings

import torch
import torch.nn.functional as F

from spt_theory.lra.gpu.stacked import Stacked, pixels
from spt_theory.lra.gpu.twin_plan import TINY, Sizes
from spt_theory.lra.gpu.twin_train import seeded

WARMUP = 2


def _time(step, steps: int) -> float:
    for _ in range(WARMUP):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps


def measure(sizes: Sizes, members: int, steps: int, n_train: int = 512) -> dict:
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (n_train, sizes.side ** 2), dtype=torch.uint8, generator=g)
    y = torch.randint(0, 2, (n_train,), generator=g)
    seeds = list(range(members))
    out = {}
    stacked = Stacked([seeded(sizes, s) for s in seeds], seeds, "supervised", 1e-3, fixed=[("decoder",)] * members,
                      n_train=n_train, batch=sizes.batch)
    out["stacked"] = _time(lambda: stacked.step(x, y), steps)

    models = [seeded(sizes, s) for s in seeds]
    optimizers = [torch.optim.AdamW([p for n, p in m.named_parameters() if m.group_of(n) != "decoder"], lr=1e-3,
                                    weight_decay=0.01) for m in models]
    batches = [torch.randperm(n_train, generator=g)[:sizes.batch] for _ in seeds]

    def separate():
        for model, optimizer, index in zip(models, optimizers, batches):
            optimizer.zero_grad(set_to_none=True)
            F.cross_entropy(model(pixels(x[index])), y[index]).backward()
            optimizer.step()

    out["separate"] = _time(separate, steps)

    from spt_theory.lra.gpu.ensemble import Ensemble

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vmapped = Ensemble([seeded(sizes, s) for s in seeds], seeds, "supervised", 1e-3, fixed=[("decoder",)] * members)
        out["vmap"] = _time(lambda: vmapped.step(x, y, sizes.batch), steps)
    return {way: {"seconds_per_step": t, "model_steps_per_second": members / t} for way, t in out.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spt_theory.lra.gpu.bench_ensembles", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--width", type=int, default=TINY.d_model, help="d_model (FF is twice it)")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    sizes = Sizes(**{**TINY.__dict__, "d_model": args.width, "ff": 2 * args.width, "batch": args.batch})
    figures = measure(sizes, args.members, args.steps)
    header = (f"{args.members} members, width {args.width}, FF {2 * args.width}, batch {args.batch}, n = 256, "
              f"{args.steps} supervised steps, {args.threads} thread(s), torch {torch.__version__}")
    print(header)
    for way, f in figures.items():
        print(f"  {way:9s} {1e3 * f['seconds_per_step']:9.1f} ms a step of all members   "
              f"{f['model_steps_per_second']:8.1f} model-steps/s")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"setup": header, "figures": figures}, handle, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
