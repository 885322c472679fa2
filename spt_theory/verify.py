"""``python -m spt_theory.verify``: check every claim and print one row per claim.

Layers 1 (exact theory, claims T*) and 2 (synthetic experiments, E*; mechanism controls, X*),
and the LRA evidence (L*), read from the committed evidence (package data, not retrained).
Quick mode runs on a laptop CPU in minutes; ``--full`` runs the paper-sized experiments over
several seeds.  Trained runs are cached under ``--cache-dir`` by a hash of their full config, so
a second verify (and ``python -m spt_theory.figures``) reuses them.

Every row has one verdict: PASS, FAIL, INCONCLUSIVE (the evidence cannot decide) or SKIP (not run;
ERROR when a check itself raised).  Project claims (lemmas, mechanism probes, controls) must PASS;
paper claims are held against the verdict on record (:mod:`spt_theory.claims.records`): a refuted claim
refuted again is a reproduced result.

Exit code: 0 when every claim that ran gives its recorded verdict and every project claim passes;
1 when a verdict differs from its record (a ``CHANGED`` line), a project claim does not pass, or a
row is an ERROR (committed evidence missing, malformed or not the recorded content, or a check
that raised); with ``--strict`` also 1 on any FAIL or INCONCLUSIVE; 2 on bad arguments, on a
cached file that is bad input (a corrupt checkpoint), or when the cache or the report cannot be
written (read-only folder, full disk); 130 / 143 when stopped by SIGINT / SIGTERM.
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
from typing import Any

from spt_theory import checks, evidence
from spt_theory.claims import records
from spt_theory.claims.registry import (
    UNREGISTERED,
    Claim,
    Context,
    Measurement,
    all_claims,
    judge,
)
from spt_theory.claims.row import RECORD_OF_VERDICT
from spt_theory.core import args as cli_args
from spt_theory.evidence import EvidenceError
from spt_theory.util import tables
from spt_theory.util.files import InputError, StorageError, announce, prepare_output, write_json
from spt_theory.util.interrupts import interruptible
from spt_theory.util.prog import prog
from spt_theory.util.progress import Progress


def import_checks() -> None:
    """Import every module of :mod:`spt_theory.checks`: a check module registers its claims with
    :mod:`spt_theory.claims.registry` when imported (a new module there is picked up without any edit)."""
    for module in pkgutil.iter_modules(checks.__path__):
        importlib.import_module(f"{checks.__name__}.{module.name}")


import_checks()


def _format_measured(value: float | str) -> str:
    if isinstance(value, str):
        return value
    if value == 0 or 1e-3 <= abs(value) < 1e4:
        return f"{value:.4g}"
    return f"{value:.3e}"


def record_fields(claim_id: str, verdict: str) -> dict:
    """The fields of a row that relate its verdict to the record: ``kind``, ``record`` (the recorded
    verdict, date and evidence, or None for a project claim), ``matches_record`` (None when not
    run) and ``registration`` (pre / post, the original threshold where it moved)."""
    record = records.RECORDS.get(claim_id)
    registration = records.REGISTRATIONS.get(claim_id)
    if verdict == "SKIP":
        matches = None
    elif record is None:
        matches = verdict == "PASS"
    else:
        matches = RECORD_OF_VERDICT.get(verdict) == record.verdict
    return {"kind": records.kind(claim_id),
            "record": None if record is None else vars(record),
            "matches_record": matches,
            "registration": None if registration is None else vars(registration)}


def skipped_claim(claim: Claim) -> dict:
    """The row of a claim that quick mode does not run (it needs long extra training)."""
    return {"id": claim.id, "verdict": "SKIP", "statement": claim.statement, "section": claim.section,
            "method": claim.method, "measured": "not run", "threshold": f"--full / --only {claim.id}",
            "details": {}, "seconds": 0.0, **record_fields(claim.id, "SKIP")}


def run_claim(claim: Claim, ctx: Context) -> dict:
    """Run one check through :func:`~spt_theory.claims.registry.judge` (every integrity check); an
    exception inside it is reported as verdict ERROR (never as recorded)."""
    start = time.perf_counter()
    unregistered: tuple[str, ...] = ()
    try:
        judged = judge(claim, ctx)
        m: Measurement = judged.measurement
        unregistered = judged.unregistered
        verdict = m.verdict
        row: dict[str, Any] = {"measured": m.measured, "threshold": m.threshold, "details": m.details}
        if m.lines:
            row["lines"] = list(m.lines)
        if m.inconclusive:
            row["inconclusive"] = m.inconclusive
    except EvidenceError as exc:  # no evidence, no verdict: an ERROR row of one line
        verdict = "ERROR"
        row = {"measured": "no evidence", "threshold": "-", "details": {"evidence_error": str(exc)}}
    except InputError:  # bad input (the command line) or an unwritable cache: one line, exit 2
        raise
    except Exception as exc:  # a broken check must not hide the other claims
        verdict = "ERROR"
        row = {"measured": f"{type(exc).__name__}: {exc}", "threshold": "-", "details": {
            "traceback": traceback.format_exc()}}
    fields = record_fields(claim.id, verdict)
    if unregistered:  # a verdict on files that are not the recorded evidence: shown, never as recorded
        row["unregistered"] = list(unregistered)
        fields["matches_record"] = False
    return {"id": claim.id, "verdict": verdict, "statement": claim.statement,
            "section": claim.section, "method": claim.method, **row,
            "seconds": round(time.perf_counter() - start, 3), **fields}


def record_text(row: dict) -> str:
    """The record column: ``= holds`` when the verdict reproduces its record, ``CHANGED`` when not,
    ``(holds)`` for a skipped row (the record, not reproduced in this run); ``project`` for a
    project claim (``project: not PASS`` when it does not pass)."""
    if row.get("unregistered"):
        return UNREGISTERED
    if row["record"] is None:
        return "project" if row["matches_record"] is not False else "project: not PASS"
    if row["matches_record"] is None:
        return f"({row['record']['verdict']})"
    return "CHANGED" if row["matches_record"] is False else f"= {row['record']['verdict']}"


def registration_text(row: dict) -> str:
    reg = row["registration"]
    return "-" if reg is None else reg["when"] + ("*" if reg["original"] else "")


ROW_HEADERS = ("id", "verdict", "record", "reg", "statement", "measured", "threshold", "method")
"""verify's columns (the README's "Reading verify's table")."""
ROW_WIDTHS = (4, 12, 18, 5, 58, 12, 16, 0)
"""Their widths: the rows are printed one at a time, as each claim is checked; a statement longer
than its column is cut (``…``), any other longer cell pushes the rest of its row right."""
ROW_ALIGN = "<<<<<><<"
ROW_GAPS = (" ", " ", " ", " ", "  ", "  ", " ")
"""The measured figure (right-aligned) stands two blanks from its neighbours."""
LIST_WIDTHS = (4, 10, 13, 28)
"""``--list``'s least widths: id, kind, record, section, then the statement."""


def row_line(cells) -> str:
    """One line of verify's table (``cells``: its eight columns)."""
    return tables.line(cells, ROW_WIDTHS, ROW_ALIGN, ROW_GAPS)


def _print_row(row: dict) -> None:
    statement, width = row["statement"], ROW_WIDTHS[ROW_HEADERS.index("statement")]
    if len(statement) > width:
        statement = statement[: width - 1] + "…"
    print(row_line([row["id"], row["verdict"], record_text(row), registration_text(row), statement,
                    _format_measured(row["measured"]), row["threshold"], row["method"]]), flush=True)
    if row.get("unregistered"):
        print(f"     {UNREGISTERED.upper()}: {', '.join(row['unregistered'])}: not the recorded evidence (no "
              "recorded sha256 matches), so this verdict is not on record", flush=True)
    elif row["record"] is not None and row["matches_record"] is False:
        print(f"     CHANGED: recorded {row['record']['verdict']}, now "
              f"{RECORD_OF_VERDICT.get(row['verdict'], row['verdict'])} ({row['verdict']})", flush=True)
    for line in row.get("lines", ()):
        print(f"     {line}", flush=True)
    if row.get("fixed"):
        print(f"     runs at fixed model settings (--set does not reach it): {row['fixed']}", flush=True)
    if row.get("inconclusive") and not row.get("lines"):
        print(f"     INCONCLUSIVE: {row['inconclusive']}", flush=True)
    if "evidence_error" in row["details"]:
        print(f"     ERROR: {row['details']['evidence_error']}", flush=True)


def claims_list(claims: list[Claim]) -> str:
    """``--list``: one line per claim: id, kind, record (``must PASS`` for a project claim), section, statement."""
    rows = []
    for c in claims:
        record = records.RECORDS.get(c.id)
        rows.append([c.id, records.kind(c.id), record.verdict if record else "must PASS", c.section, c.statement])
    return tables.table(rows, widths=LIST_WIDTHS, gap=" ")


def exit_code(rows: list[dict], strict: bool) -> int:
    """0 when every row that ran matches its record (project claims: PASS); 1 otherwise; with
    ``strict`` also 1 on any FAIL or INCONCLUSIVE."""
    if any(r["matches_record"] is False for r in rows):
        return 1
    if strict and any(r["verdict"] in ("FAIL", "INCONCLUSIVE") for r in rows):
        return 1
    return 0


def quick_skipped() -> list[str]:
    """Ids of the claims quick mode skips (they need long extra training): the one source of the
    list that ``--help`` and the README give."""
    return [c.id for c in all_claims() if not c.quick]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog=prog("python -m spt_theory.verify"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Check every claim of spt-theory: the gradient lemmas T1-T7 (symbolic, autograd, "
                    "negative controls), the synthetic experiments E1-E14, the mechanism controls X* "
                    "and the LRA evidence L* (read from the committed evidence).\n"
                    "One row per claim: id, verdict (PASS / FAIL / INCONCLUSIVE / SKIP), the record "
                    "('= holds', '= does not hold': the paper claim's verdict on record reproduced; "
                    "'CHANGED'; 'project': a claim of the toolkit that must PASS), pre / post (threshold "
                    "written before / after its data; * moved since), statement, measured figure, "
                    "threshold, method.",
        epilog="exit status: 0 every verdict as recorded (project claims PASS); 1 a verdict CHANGED, a "
               "project claim not passing, or (--strict) any FAIL or INCONCLUSIVE; 2 bad arguments or "
               "unwritable output; 130 / 143 interrupted (SIGINT / SIGTERM).\n"
               f"quick mode skips: {', '.join(quick_skipped())}")
    p.add_argument("--only", nargs="+", action="extend", metavar="ID",
                   help="check only these claims (case-insensitive): ids (E1 also selects its variant "
                        "E1b, not E10) or families (T, E, X, L)")
    p.add_argument("--full", action="store_true",
                   help="paper-sized runs over seeds 0 1 2 (slow) instead of quick mode (seed 0); quick "
                        "mode skips the claims that need long extra training unless --only selects them")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 on any FAIL or INCONCLUSIVE, even where it is the verdict on record")
    cli_args.add_seeds(p, None, "0 in quick mode, 0 1 2 with --full; for the trained experiments")
    p.add_argument("--json", type=Path, metavar="PATH",
                   help="also write the report as JSON to PATH (checked before any claim runs)")
    p.add_argument("--cache-dir", type=Path, default=Path("runs"), metavar="DIR",
                   help="where trained runs are cached by config hash (default: ./runs)")
    p.add_argument("--evidence", type=Path, default=evidence.root(), metavar="DIR",
                   help="the committed evidence read by the L and P claims (default: the package's)")
    p.add_argument("--lra-evidence", type=Path, metavar="DIR",
                   help="LRA sweep summaries read by L1-L4 (default: EVIDENCE/lra)")
    p.add_argument("--list", action="store_true", help="list the claims (kind, record) and exit")
    p.add_argument("--markdown", action="store_true",
                   help="with --list: the table of claims as Markdown (docs/claims.md is this output)")
    cli_args.add_model_settings(p)
    cli_args.add_threads(p)
    cli_args.add_no_progress(p)
    return p.parse_args(argv)


def selects(key: str, claim_id: str) -> bool:
    """Whether ``--only key`` selects ``claim_id`` (case-insensitive): a family (``E``, ``X``)
    selects all its claims, a claim (``E1``) itself and its variants (``E1b``) but not the claims
    whose number continues it (``E10``)."""
    key, claim_id = key.upper(), claim_id.upper()
    rest = claim_id[len(key):]
    return claim_id.startswith(key) and not (key[-1:].isdigit() and rest[:1].isdigit())


def select(claims: list[Claim], only: list[str] | None) -> list[Claim]:
    """The claims ``--only`` selects (all when it is not given); an empty or blank id, which would
    select every claim, and an id that matches none are bad arguments."""
    if only is None:
        return claims
    known = {c.id for c in claims}
    if not only or any(not key.strip() for key in only):
        raise InputError("--only: an empty id selects nothing (give claim ids or families, e.g. --only L6 or "
                         "--only T)")
    for key in only:
        if not any(selects(key, cid) for cid in known):
            raise InputError(f"--only: no claim matches {key!r} (known: {', '.join(sorted(known))})")
    return [c for c in claims if any(selects(k, c.id) for k in only)]


def _check_arguments(args: argparse.Namespace) -> list[Claim]:
    """The selected claims; bad arguments and an unwritable ``--json`` raise before any work."""
    cli_args.refuse_evidence_outputs(args)
    claims = select(all_claims(), args.only)
    for option, folder in (("--evidence", args.evidence), ("--lra-evidence", args.lra_evidence)):
        if folder is not None and not folder.is_dir():  # one line, not an ERROR row per claim
            raise InputError(f"{option} {folder}: " + ("not a folder" if folder.exists() else "no such folder"))
    args.model_settings = cli_args.parse_model_settings(args.model_settings)
    if args.json and not args.list:
        prepare_output(args.json)
    return claims


@interruptible
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        claims = _check_arguments(args)
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return _run(args, claims)


def _run(args: argparse.Namespace, claims: list[Claim]) -> int:
    if args.threads is not None:
        from spt_theory.core import cpu

        cpu.set_intra_op_threads(args.threads)
    if args.list and args.markdown:
        print(claims_markdown(claims), end="")
        return 0
    if args.list:
        print(claims_list(claims))
        return 0
    seeds = tuple(args.seeds) if args.seeds else ((0, 1, 2) if args.full else (0,))
    progress = not args.no_progress
    ctx = Context(full=args.full, seeds=seeds, cache_dir=args.cache_dir, evidence_root=args.evidence,
                  lra_evidence=args.lra_evidence or args.evidence / evidence.LRA,
                  progress=progress, model_settings=args.model_settings)
    mode = "full" if args.full else "quick"
    print(f"spt-theory verify ({mode} mode, seeds {list(seeds)}): {len(claims)} claims", flush=True)
    if args.model_settings:
        print("model settings (--set): " + ", ".join(f"{k}={v}" for k, v in args.model_settings.items()), flush=True)
    print(row_line(ROW_HEADERS))
    start = time.perf_counter()
    rows = []
    shown = Progress("verify", len(claims), "claims", enabled=progress)
    try:
        for c in claims:
            runs = c.quick or args.full or args.only
            if runs:
                shown.note(f"next {c.id}")
            row = run_claim(c, ctx) if runs else skipped_claim(c)
            if runs and c.fixed and args.model_settings:
                row["fixed"] = c.fixed
            rows.append(row)
            with shown.printing():
                _print_row(row)
            shown.update()
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    finally:
        shown.close()
    seconds = time.perf_counter() - start
    code = exit_code(rows, args.strict)
    written = False
    if args.json:  # before the summary line, which says the status this write may change
        import torch

        try:
            write_json(args.json, {
                "claims": rows, "seconds": round(seconds, 3), "mode": mode, "seeds": list(seeds),
                "strict": args.strict, "exit_code": code, "model_settings": args.model_settings,
                "versions": {"python": platform.python_version(), "torch": torch.__version__},
            }, strict=True)  # standard JSON: an infinite window bound is "inf" / "-inf", NaN null
            written = True
        except StorageError as err:
            print(f"error: {err}", file=sys.stderr)
            code = 2
    print(summary_line(rows, seconds, code))
    for r in rows:
        if r["verdict"] == "ERROR" and "traceback" in r["details"]:
            print(f"\n{r['id']} raised:\n{r['details']['traceback']}", file=sys.stderr)
    if written:
        announce(args.json)
    return code


CLAIMS_HEADERS = ("id", "kind", "statement", "threshold", "registration", "record")
"""The columns of docs/claims.md."""


def claims_markdown(claims: list[Claim]) -> str:
    """The table of claims (:data:`spt_theory.claims.records.TABLE`) as Markdown, one section per family."""
    from spt_theory.claims.registry import FAMILIES

    lines = ["# Claims", "", "Generated by `python -m spt_theory.verify --list --markdown` from the one table of "
                             "claims",
             "(`spt_theory/claims/records.py`); a test holds this file equal to that output.", ""]
    for letter, family in FAMILIES.items():
        rows = [records.TABLE[c.id] for c in claims if c.id[0] == letter]
        if not rows:
            continue
        table = []
        for row in rows:
            reg = row.registration
            registration = (f"{reg.when}{'*' if reg.original else ''} ({reg.threshold_commit} / {reg.result_commit})"
                            + (f"; first: {reg.original}" if reg.original else "")
                            + (f"; {reg.note}" if reg.note else ""))
            record = ("must PASS" if row.record is None else
                      f"**{row.record.verdict}** ({row.record.date}): {row.record.evidence}")
            table.append([row.id, row.kind, row.statement, row.threshold, registration, record])
        lines += [f"## {letter}: {family}", "", tables.table(table, CLAIMS_HEADERS, markdown=True), ""]
    return "\n".join(lines)


def summary_line(rows: list[dict], seconds: float, code: int) -> str:
    """Counts by verdict, how many reproduce their record, what changed, what read unregistered
    evidence, and what was skipped; capacity gates are counted apart from the claims."""
    ran = [r for r in rows if r["verdict"] != "SKIP"]
    claims = [r for r in ran if r.get("kind") != "gate"]  # a capacity gate is not a claim: counted apart
    gates = [r for r in ran if r.get("kind") == "gate"]
    counts = {v: sum(r["verdict"] == v for r in claims) for v in ("PASS", "FAIL", "INCONCLUSIVE", "ERROR")}
    unregistered = [r["id"] for r in ran if r.get("unregistered")]
    changed = [r["id"] for r in ran if r["matches_record"] is False and r["id"] not in unregistered]
    skipped = [r["id"] for r in rows if r["verdict"] == "SKIP"]
    counted = ", ".join(f"{n} {v}" for v, n in counts.items() if n)  # nothing when only gates ran
    head = (f"{len(claims)} claims in {seconds:.1f} s" + (f": {counted}" if counted else "")
            + ("; gates " + ", ".join(f"{r['id']} {r['verdict']}" for r in gates) if gates else ""))
    text = (head + f"; {len(ran) - len(changed) - len(unregistered)}/{len(ran)} as recorded"
            + (f"; CHANGED or not passing: {', '.join(changed)}" if changed else "")
            + (f"; {UNREGISTERED} (never as recorded): {', '.join(unregistered)}" if unregistered else "")
            + (f"; skipped (run with --full or --only): {', '.join(skipped)}" if skipped else "")
            + f"; exit {code}")
    return text


if __name__ == "__main__":
    sys.exit(main())
