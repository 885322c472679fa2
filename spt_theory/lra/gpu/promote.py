"""``python -m spt_theory.lra gpu promote RUN_OR_OUT_DIR``: a GPU twin's result, as it came back
from the lent machine (``summary.json`` and ``group-0.json``), checked against its formats here,
where pydantic is (the GPU image has none: the run itself checks nothing it cannot), and written
into the package's evidence as ``lra/gpu/<setting>.json`` (:class:`~spt_theory.evidence.lra_schema.
TwinEvidence`, strict: a CUDA device, not tiny, 8 seeds or more, every run's curve at the plan's
evaluations, ``test_accuracy`` its last point's and its bits'), what the G claims read
(``spt_theory/checks/gpu_twin.py``, docs/preregistration/2026-12-04-gpu-twin.md).

The result must be its registration's, field by field (:func:`spt_theory.lra.gpu.twin_conform.conform`:
the registration document, the setting's sizes, model and optimiser, seeds 500-507, arms, steps,
evaluation points, the registered data's fingerprint); the first field that differs is refused in
one line.  A run cut by its deadline (``cut``) or stopped by a signal or an error (``stopped``) is
promoted as what it is, with every evaluation it wrote: the G claims read it as a pilot
(INCONCLUSIVE); one killed without recording its end (SIGKILL) is read as stopped at its last
evaluation written (``by: killed``, :func:`killed`).  A run refused or stopped before its plan
trained nothing: refused here.

Refused, with nothing written, when anything does not fit (one ``error:`` line, never a traceback:
a file that is not UTF-8, not JSON, over 64 MiB, a FIFO or a folder; a target that is not a regular
file, or holds something that is not a twin result); an existing evidence file of the setting is
replaced only with ``--replace``, and left untouched (not rewritten) when it holds this very result.
After a write it prints the line a maintainer adds to ``records.EVIDENCE_HASHES`` (the file's
sha256 and the commit), without which verify reads the new file as an ERROR."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from spt_theory import evidence
from spt_theory.evidence import EvidenceError, lra_schema, schema
from spt_theory.evidence.strict import MAX_BYTES, strict_json
from spt_theory.lra.gpu.twin_conform import config_pooling, conform
from spt_theory.util.files import InputError, promoting, write_json

FILES = ("summary.json", "group-0.json")


def read_text(path: Path, what: str = "") -> str:
    """The UTF-8 text of the regular file ``path`` of at most 64 MiB (checked before reading);
    EvidenceError in one line otherwise (a FIFO is never opened, so never waited on)."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise EvidenceError(f"{path}: not a regular file{what}")
        if info.st_size > MAX_BYTES:
            raise EvidenceError(f"{path}: {info.st_size} bytes, over the {MAX_BYTES} an evidence file may have{what}")
        raw = path.read_bytes()
    except FileNotFoundError:
        raise EvidenceError(f"{path}: missing{what}") from None
    except OSError as error:
        raise EvidenceError(f"{path}: unreadable ({error.strerror or error}){what}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise EvidenceError(f"{path}: not UTF-8 text (byte {error.start}){what}") from None


def collect(folder: Path, strict: bool = True) -> dict:
    """The evidence of the twin run whose files lie in ``folder`` (a run folder or ``$OUT``),
    held to :class:`~spt_theory.evidence.lra_schema.TwinEvidence` and its registration
    (:func:`~spt_theory.lra.gpu.twin_conform.conform`); ``strict=False`` (the tests' tiny CPU runs):
    to :class:`~spt_theory.evidence.lra_schema.TwinResult`, the same reading of any machine's run."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{folder}: not a folder (give the twin's run folder or the OUT it exported to)")
    if not (folder / "summary.json").exists():
        raise InputError(f"{folder}: no summary.json (give the twin's run folder or the OUT it exported to)")
    text = read_text(folder / "summary.json")
    early = strict_json(text, str(folder / "summary.json"))
    if isinstance(early, dict) and early.get("kind") == "gpu-twin" and "plan" not in early:
        stopped = early.get("stopped") if isinstance(early.get("stopped"), dict) else None
        why = (f"refused: {early['refused']}" if early.get("refused") else
               f"stopped in its {stopped.get('phase')} phase by {stopped.get('by')}" if stopped else "no plan")
        raise InputError(f"{folder / 'summary.json'}: the run made no plan ({str(why)[:200]}): nothing trained, "
                         "nothing to promote")
    if not (folder / "group-0.json").exists():
        raise InputError(f"{folder}: no group-0.json (a twin run that trained writes it)")
    texts = {"summary.json": text, "group-0.json": read_text(folder / "group-0.json")}
    summary = schema.parse(texts["summary.json"], lra_schema.TwinSummary, str(folder / "summary.json"))
    group = schema.parse(texts["group-0.json"], lra_schema.TwinGroup, str(folder / "group-0.json"))
    if summary.get("refused"):
        raise InputError(f"{folder / 'summary.json'}: the run was refused ({str(summary['refused'])[:200]}): "
                         "nothing to promote")
    if not summary["complete"] and not any(f.get(k) for f in (summary, group) for k in ("cut", "stopped")):
        killed(summary, group)
    if group["data"] != summary["data"]["fingerprint"]:
        raise EvidenceError(f"{folder / 'group-0.json'}: data: {group['data'][:16]}..., the summary's data is "
                            f"{summary['data']['fingerprint'][:16]}... (files of two runs)")
    for field in ("cut", "stopped"):
        if group.get(field) != summary.get(field):
            raise EvidenceError(f"{folder / 'group-0.json'}: {field}: {group.get(field)}, the summary's is "
                                f"{summary.get(field)}")
    sizes = summary["plan"]["sizes"] if isinstance(summary["plan"].get("sizes"), dict) else {}
    found = {"schema_version": schema.SCHEMA_VERSION, "model_defaults": schema.model_defaults(),
             "kind": "gpu-twin", "setting": summary["setting"], "registered": summary.get("registered"),
             "tiny": summary["tiny"], "device": summary["device"], "versions": summary["versions"],
             "wall_seconds": summary["wall_seconds"], "phases": summary["phases"], "data": summary["data"],
             "bench": summary["bench"], "plan": summary["plan"],
             "config": {"d_model": sizes.get("d_model"), "heads": sizes.get("heads"), "ff": sizes.get("ff"),
                        "layers": 1, "pooling": config_pooling(summary["setting"]), "head": "linear"},
             "complete": summary["complete"], "cut": summary.get("cut"), "stopped": summary.get("stopped"),
             "runs": group["runs"]}
    model = lra_schema.TwinEvidence if strict else lra_schema.TwinResult
    schema.parse(json.dumps(found), model, f"{folder} (as evidence)")
    if strict:
        faults = conform(found)
        if faults:
            more = f" (and {len(faults) - 1} more)" if len(faults) > 1 else ""
            raise EvidenceError(f"{folder}: {faults[0]}{more}: not the registered design, nothing was written")
    return found


def killed(summary: dict, group: dict) -> None:
    """A run that ended without recording its end (SIGKILL, the machine's end, out of host memory):
    its files are as of its last write, each whole.  Read as stopped there (``by: killed``, at the
    step of the last evaluation written, the phase the summary last named), in both files; a run
    whose last evaluation was written is complete."""
    p = summary["plan"]
    runs = group["runs"]
    for record in runs:
        last = record["steps"] - record["offset"]
        if record["curve"] and record["curve"][-1]["step"] - record["offset"] >= last and not record["complete"]:
            record["complete"], record["test_accuracy"] = True, record["curve"][-1]["test_accuracy"]
    step = max((r["curve"][-1]["step"] - r["offset"] for r in runs if r["curve"]), default=0)
    stopped = {"phase": str(summary.get("phase", "train")), "by": "killed",
               "why": "the run ended without recording its end (SIGKILL?): its files as of its last write",
               "step": step, "planned": p["steps"], "at": max(summary["phases"].values(), default=0.0)}
    summary["stopped"] = group["stopped"] = stopped


def target(setting: str) -> Path:
    return evidence.path(evidence.LRA, "gpu", f"{setting}.json")


def text_of(found: dict) -> str:
    """The bytes the evidence file of ``found`` holds (as :func:`spt_theory.evidence.promote` writes it)."""
    return json.dumps(evidence.scrub_paths(found), indent=2) + "\n"


def _head() -> str:
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10,
                              cwd=Path(__file__).resolve().parent)
    except (OSError, subprocess.SubprocessError):
        return "COMMIT"
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else "COMMIT"


def record_line(path: Path) -> str:
    """The ``records.EVIDENCE_HASHES`` entry of the evidence file ``path`` (its sha256 and a commit)."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    name = path.relative_to(evidence.root()).as_posix()
    return f'    "{name}": ("{digest}", "{_head()}"),'


def promote(folder: Path, replace: bool = False) -> Path | None:
    """:func:`collect` ``folder`` and write it into the package's evidence; its path (None: the
    file held this result already and was left as it was).  Prints the record line
    (:func:`record_line`) on stdout."""
    found = collect(folder)
    committed = target(found["setting"])
    text = text_of(found)
    if committed.exists() or committed.is_symlink():
        what = " (the setting's evidence file; nothing was written)"
        if committed.is_symlink() or not committed.is_file():
            raise InputError(f"{committed}: not a regular file{what}")
        held = read_text(committed, what)
        if held == text:
            print(f"unchanged: {committed} holds this result already, byte for byte (nothing was written)",
                  file=sys.stderr)
            print(record_line(committed))
            return None
        if not replace:
            try:
                earlier = strict_json(held, str(committed))
            except EvidenceError:
                earlier = None
            data = earlier.get("data") if isinstance(earlier, dict) else None
            shown = str(data.get("fingerprint", "?"))[:16] if isinstance(data, dict) else "?"
            raise InputError(f"{committed} holds a {found['setting']} result already (data {shown}...): --replace "
                             "to put this one in its place (nothing was written)")
    with promoting():
        write_json(committed, evidence.scrub_paths(found))
    print("add to EVIDENCE_HASHES in spt_theory/claims/records.py (the commit: the one that commits it; HEAD now), "
          "and set the G records (ran=True) from python -m spt_theory.verify --only G:", file=sys.stderr)
    print(record_line(committed))
    return committed
