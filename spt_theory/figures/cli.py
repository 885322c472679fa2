"""``python -m spt_theory.figures``: the command line (see :mod:`spt_theory.figures`)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import spt_theory.figures
from spt_theory.cpu import set_intra_op_threads
from spt_theory.figures import context
from spt_theory.figures.registry import FIGURES
from spt_theory.io import StorageError


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m spt_theory.figures", description=spt_theory.figures.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", nargs="+", metavar="NAME", choices=list(FIGURES),
                   help="draw only these figures (default: all): " + ", ".join(FIGURES))
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], metavar="S",
                   help="seeds to average over (default: 0 1 2)")
    p.add_argument("--cache-dir", type=Path, default=Path("runs"), metavar="DIR",
                   help="run cache shared with verify (default: ./runs)")
    p.add_argument("--fresh", action="store_true",
                   help="retrain every run into a new cache DIR/fresh-<timestamp> (the old cache is kept)")
    p.add_argument("--out", type=Path, default=Path("figures"), metavar="DIR",
                   help="where PNG, PDF and JSON go (default: ./figures)")
    p.add_argument("--lra-results", type=Path, default=context.LRA_RESULTS, metavar="DIR",
                   help=f"LRA result JSONs for lra_table (default: {context.LRA_RESULTS})")
    p.add_argument("--threads", type=int, metavar="N",
                   help="torch intra-op threads (default: torch's choice); 1 is much faster for "
                        "these small models on a busy machine")
    p.add_argument("--no-progress", action="store_true", help="hide training progress bars")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if any(s < 0 for s in args.seeds):
        print("error: --seeds: seeds must be non-negative integers", file=sys.stderr)
        return 2
    if args.threads is not None:
        if args.threads < 1:
            print("error: --threads: must be >= 1", file=sys.stderr)
            return 2
        set_intra_op_threads(args.threads)
    cache_dir = args.cache_dir / time.strftime("fresh-%Y%m%d-%H%M%S") if args.fresh else args.cache_dir
    ctx = context.FigureContext(data=context.DEFAULT_DATA, budget=context.DEFAULT_BUDGET, model=dict(context.DEFAULT_MODEL),
                        seeds=tuple(dict.fromkeys(args.seeds)), cache_dir=cache_dir, out=args.out,
                        progress=not args.no_progress, t3_count=context.DEFAULT_T3_COUNT,
                        lra_results=args.lra_results)
    print(f"figures -> {ctx.out}/  (runs cache {ctx.cache_dir}, seeds {' '.join(map(str, ctx.seeds))})", flush=True)
    start = time.perf_counter()
    failed: list[str] = []
    for name in args.only or FIGURES:
        t0 = time.perf_counter()
        try:
            paths = FIGURES[name].draw(ctx)
        except context.FigureSkipped as why:
            print(f"{name}: skipped ({why})", flush=True)
            continue
        except StorageError as err:  # read-only or full cache / output folder: the rest would fail too
            print(f"error: {err}", file=sys.stderr, flush=True)
            return 2
        except Exception as err:  # one broken figure must not stop the others
            print(f"error: {name}: {type(err).__name__}: {err}", file=sys.stderr, flush=True)
            failed.append(name)
            continue
        print(f"{name}: {', '.join(p.name for p in paths)}  ({time.perf_counter() - t0:.1f} s)", flush=True)
    print(f"done in {time.perf_counter() - start:.1f} s" + (f"; FAILED: {' '.join(failed)}" if failed else ""),
          flush=True)
    return 1 if failed else 0

