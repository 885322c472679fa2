"""``python -m spt_theory.verify``: check every claim and print one row per claim.

Layers 1 (exact theory, claims T*) and 2 (synthetic experiments, E*; mechanism controls, X*),
and the LRA evidence (L*), read from the committed sweep results in figures/lra/ (not retrained).
Quick mode runs on a laptop CPU in minutes; ``--full`` runs the paper-sized experiments over
several seeds.  Trained runs are cached under ``--cache-dir`` by a hash of their full config, so
a second verify (and ``python -m spt_theory.figures``) reuses them.

Exit code: 0 when every selected claim passes, 1 when any fails, 2 on bad arguments or when the
cache or the report cannot be written (read-only folder, full disk).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import platform
import sys
import time
import traceback
from pathlib import Path

from spt_theory import checks
from spt_theory.claims import Claim, Context, Measurement, all_claims
from spt_theory.io import InputError, StorageError, write_json


def import_checks() -> None:
    """Import every module of :mod:`spt_theory.checks`: a check module registers its claims with
    :mod:`spt_theory.claims` when imported (a new module there is picked up without any edit)."""
    for module in pkgutil.iter_modules(checks.__path__):
        importlib.import_module(f"{checks.__name__}.{module.name}")


import_checks()


def _format_measured(value: float | str) -> str:
    if isinstance(value, str):
        return value
    if value == 0 or 1e-3 <= abs(value) < 1e4:
        return f"{value:.4g}"
    return f"{value:.3e}"


def skipped_claim(claim: Claim) -> dict:
    """The row of a claim that quick mode does not run (it needs long extra training)."""
    return {"id": claim.id, "status": "SKIP", "statement": claim.statement, "section": claim.section,
            "method": claim.method, "measured": "not run", "threshold": f"--full / --only {claim.id}",
            "details": {}, "seconds": 0.0}


def run_claim(claim: Claim, ctx: Context) -> dict:
    """Run one check; an exception inside it is reported as status ERROR (a failure)."""
    start = time.perf_counter()
    try:
        m: Measurement = claim.check(ctx)
        status = "PASS" if m.passed else "FAIL"
        row = {"measured": m.measured, "threshold": m.threshold, "details": m.details}
    except StorageError:  # the cache cannot be written: no later claim can train either
        raise
    except Exception as exc:  # a broken check must not hide the other claims
        status = "ERROR"
        row = {"measured": f"{type(exc).__name__}: {exc}", "threshold": "-", "details": {
            "traceback": traceback.format_exc()}}
    return {"id": claim.id, "status": status, "statement": claim.statement,
            "section": claim.section, "method": claim.method, **row,
            "seconds": round(time.perf_counter() - start, 3)}


def _print_row(row: dict, width: int) -> None:
    statement = row["statement"]
    if len(statement) > width:
        statement = statement[: width - 1] + "…"
    print(f"{row['id']:<4} {row['status']:<5} {statement:<{width}}  "
          f"{_format_measured(row['measured']):>12}  {row['threshold']:<16} {row['method']}",
          flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m spt_theory.verify",
        description="Check every claim of spt-theory: the gradient lemmas T1-T7 (symbolic, "
                    "autograd, negative controls), the synthetic experiments E1-E14 and the "
                    "mechanism controls X* and the LRA evidence L* (read from figures/lra/). One row per claim: id, PASS/FAIL, statement, "
                    "measured figure, threshold, method. Exit 1 if any claim fails.")
    p.add_argument("--only", nargs="+", metavar="ID",
                   help="check only these claims: ids (E1 also selects its variant E1b, not E10) or families (T, E, X, L)")
    p.add_argument("--full", action="store_true",
                   help="paper-sized runs over several seeds (slow) instead of quick mode; quick "
                        "mode skips the controls that need long extra training (X1, X3, X4, X5) "
                        "unless --only selects them")
    p.add_argument("--seeds", type=int, nargs="+", metavar="S",
                   help="seeds for the trained experiments (default: 0 in quick mode, "
                        "0 1 2 with --full)")
    p.add_argument("--json", type=Path, metavar="PATH",
                   help="also write the report as JSON to PATH")
    p.add_argument("--cache-dir", type=Path, default=Path("runs"), metavar="DIR",
                   help="where trained runs are cached by config hash (default: ./runs)")
    p.add_argument("--lra-evidence", type=Path, default=Context.lra_evidence, metavar="DIR",
                   help="committed LRA sweep summaries read by the L claims (default: figures/lra)")
    p.add_argument("--list", action="store_true", help="list the claims and exit")
    p.add_argument("--threads", type=int, metavar="N",
                   help="torch intra-op threads (default: torch's choice); 1 is much faster for "
                        "these small models on a busy machine")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return p.parse_args(argv)


def selects(key: str, claim_id: str) -> bool:
    """Whether ``--only key`` selects ``claim_id``: a family (``E``, ``X``) selects all its claims, a
    claim (``E1``) itself and its variants (``E1b``) but not the claims whose number continues it (``E10``)."""
    rest = claim_id[len(key):]
    return claim_id.startswith(key) and not (key[-1:].isdigit() and rest[:1].isdigit())


def select(claims: list[Claim], only: list[str] | None) -> list[Claim]:
    if not only:
        return claims
    known = {c.id for c in claims}
    for key in only:
        if not any(selects(key, cid) for cid in known):
            raise InputError(f"--only: no claim matches {key!r} (known: {', '.join(sorted(known))})")
    return [c for c in claims if any(selects(k, c.id) for k in only)]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        claims = select(all_claims(), args.only)
        if args.seeds is not None and any(s < 0 for s in args.seeds):
            raise InputError("--seeds: seeds must be non-negative integers")
        if args.threads is not None and args.threads < 1:
            raise InputError(f"--threads: must be >= 1, got {args.threads}")
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.threads is not None:
        from spt_theory import cpu

        cpu.set_intra_op_threads(args.threads)
    if args.list:
        for c in claims:
            print(f"{c.id:<4} {c.section:<28} {c.statement}")
        return 0
    seeds = tuple(args.seeds) if args.seeds else ((0, 1, 2) if args.full else (0,))
    ctx = Context(full=args.full, seeds=seeds, cache_dir=args.cache_dir, lra_evidence=args.lra_evidence,
                  progress=not args.no_progress and sys.stderr.isatty())
    width = 58
    mode = "full" if args.full else "quick"
    print(f"spt-theory verify ({mode} mode, seeds {list(seeds)}): {len(claims)} claims", flush=True)
    print(f"{'id':<4} {'stat':<5} {'statement':<{width}}  {'measured':>12}  {'threshold':<16} method")
    start = time.perf_counter()
    rows = []
    try:
        for c in claims:
            row = run_claim(c, ctx) if c.quick or args.full or args.only else skipped_claim(c)
            rows.append(row)
            _print_row(row, width)
    except StorageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - start
    failed = [r["id"] for r in rows if r["status"] in ("FAIL", "ERROR")]
    skipped = [r["id"] for r in rows if r["status"] == "SKIP"]
    ran = len(rows) - len(skipped)
    print(f"{ran - len(failed)}/{ran} claims PASS in {seconds:.1f} s"
          + (f"; not passing: {', '.join(failed)}" if failed else "")
          + (f"; skipped in quick mode (run with --full or --only): {', '.join(skipped)}"
             if skipped else ""))
    for r in rows:
        if r["status"] == "ERROR":
            print(f"\n{r['id']} raised:\n{r['details']['traceback']}", file=sys.stderr)
    if args.json:
        import torch

        try:
            write_json(args.json, {
                "claims": rows, "seconds": round(seconds, 3), "mode": mode, "seeds": list(seeds),
                "versions": {"python": platform.python_version(), "torch": torch.__version__},
            })
        except StorageError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
