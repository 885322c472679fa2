"""``python -m spt_theory.figures``: the command line (see :mod:`spt_theory.figures`)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import spt_theory.figures
from spt_theory.core import args as cli_args
from spt_theory.core.cpu import set_intra_op_threads
from spt_theory.figures import context
from spt_theory.figures.registry import FIGURES
from spt_theory.util.files import InputError, StorageError, prepare_output
from spt_theory.util.interrupts import interruptible
from spt_theory.util.prog import prog


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=prog("python -m spt_theory.figures"), description=spt_theory.figures.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", nargs="+", action="extend", metavar="NAME", choices=list(FIGURES),
                   help="draw only these figures (default: all): " + ", ".join(FIGURES))
    cli_args.add_seeds(p, (0, 1, 2), "0 1 2; the seeds averaged over")
    p.add_argument("--train", action="store_true",
                   help="train the runs the cache lacks (default: a figure whose runs are not all cached is "
                        "not drawn; what it would train, and about how long, is said)")
    p.add_argument("--cache-dir", type=Path, default=Path("runs"), metavar="DIR",
                   help="run cache shared with verify (default: ./runs)")
    p.add_argument("--fresh", action="store_true",
                   help="retrain every run into a new cache DIR/fresh-<timestamp> (the old cache is kept; "
                        "implies --train)")
    p.add_argument("--out", type=Path, default=Path("figures"), metavar="DIR",
                   help="where PNG, PDF and JSON go (default: ./figures); inputs are never read from it")
    p.add_argument("--lra-results", type=Path, default=context.LRA_RESULTS, metavar="DIR",
                   help=f"LRA result JSONs for lra_table (default: {context.LRA_RESULTS})")
    p.add_argument("--lra-evidence", type=Path, default=context.LRA_EVIDENCE, metavar="DIR",
                   help="committed LRA sweep summaries that lra_evidence redraws into OUT/lra/ "
                        "(default: the committed evidence)")
    cli_args.add_model_settings(p)
    cli_args.add_threads(p)
    cli_args.add_no_progress(p)
    return p.parse_args(argv)


@interruptible
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        seeds, threads = args.seeds, args.threads
        settings = cli_args.parse_model_settings(args.model_settings)
        cli_args.refuse_evidence_outputs(args)
        made = not args.out.exists()
        prepare_output(args.out, folder=True)
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if threads is not None:
        set_intra_op_threads(threads)
    code = _draw(args, seeds, settings)
    if code != 0 and made and args.out.is_dir() and not any(args.out.iterdir()):  # failed, nothing drawn: no folder
        args.out.rmdir()
    return code


def _draw(args: argparse.Namespace, seeds: tuple[int, ...], settings: dict) -> int:
    cache_dir = args.cache_dir / time.strftime("fresh-%Y%m%d-%H%M%S") if args.fresh else args.cache_dir
    ctx = context.FigureContext(data=context.DEFAULT_DATA, budget=context.DEFAULT_BUDGET,
                                model={**context.DEFAULT_MODEL, **settings}, asked=dict(settings),
                                seeds=seeds, cache_dir=cache_dir, out=args.out, progress=not args.no_progress,
                                t3_count=context.DEFAULT_T3_COUNT, lra_results=args.lra_results,
                                lra_evidence=args.lra_evidence, train=args.train or args.fresh)
    print(f"figures -> {ctx.out}/  (runs cache {ctx.cache_dir}, seeds {' '.join(map(str, ctx.seeds))}"
          + ("" if ctx.train else ", drawing only what is cached: --train trains the rest") + ")", flush=True)
    start = time.perf_counter()
    failed: list[str] = []
    untrained: dict[str, context.NotCached] = {}
    for name in args.only or FIGURES:
        t0 = time.perf_counter()
        try:
            paths = FIGURES[name].draw(ctx)
        except context.FigureSkipped as why:
            print(f"{name}: skipped ({why})", flush=True)
            continue
        except context.NotCached as missing:
            untrained[name] = missing
            print(f"{name}: not drawn, needs training: {'; '.join(missing.needs)} "
                  f"(about {_minutes(sum(missing.needs.values()))})", flush=True)
            continue
        except context.DrawnWithErrors as drawn:  # drawn, showing verify's ERROR rows as errors: a failure
            print(f"{name}: {', '.join(map(str, drawn.paths))}  ({time.perf_counter() - t0:.1f} s)", flush=True)
            print(f"error: {name}: {drawn}", file=sys.stderr, flush=True)
            failed.append(name)
            continue
        except StorageError as err:  # read-only or full cache / output folder: the rest would fail too
            print(f"error: {err}", file=sys.stderr, flush=True)
            return 2
        except Exception as err:  # one broken figure must not stop the others
            print(f"error: {name}: {type(err).__name__}: {err}", file=sys.stderr, flush=True)
            failed.append(name)
            continue
        print(f"{name}: {', '.join(map(str, paths))}  ({time.perf_counter() - t0:.1f} s)", flush=True)
    if untrained:
        needs = {run: seconds for missing in untrained.values() for run, seconds in missing.needs.items()}
        print(f"not drawn: {' '.join(untrained)}: their runs are not in {ctx.cache_dir}; --train trains at least "
              f"{len(needs)} runs, about {_minutes(sum(needs.values()))} on 2 CPU cores "
              f"(a figure may ask for more once these exist)", flush=True)
    print(f"done in {time.perf_counter() - start:.1f} s" + (f"; FAILED: {' '.join(failed)}" if failed else ""),
          flush=True)
    return 1 if failed else 0


def _minutes(seconds: float) -> str:
    """A duration as a reader wants it: under 1 min, N min, or N.N h."""
    if seconds < 60:
        return "under 1 min"
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"
