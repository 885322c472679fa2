"""``python -m spt_theory.lra gpu promote RUN_OR_OUT_DIR``: a GPU twin's result, as it came back
from the lent machine (``summary.json`` and ``group-0.json``), checked against its formats here,
where pydantic is (the GPU image has none: the run itself checks nothing it cannot), and written
into the package's evidence as ``lra/gpu/<setting>.json`` (:class:`~spt_theory.evidence.lra_schema.
TwinEvidence`, strict: a CUDA device, not tiny, 8 seeds or more, every run's curve at the plan's
evaluations, ``test_accuracy`` its last point's and its bits'), what the G claims read
(``spt_theory/checks/gpu_twin.py``, docs/preregistration/2026-12-04-gpu-twin.md).  Refused, with
nothing written, when anything does not fit; an existing evidence file of the setting is replaced
only with ``--replace``."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from spt_theory import evidence
from spt_theory.evidence import EvidenceError, lra_schema, schema
from spt_theory.util.files import InputError, read_json, write_json

FILES = ("summary.json", "group-0.json")


def collect(folder: Path) -> dict:
    """The evidence of the twin run whose files lie in ``folder`` (a run folder or ``$OUT``)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{folder}: not a folder (give the twin's run folder or the OUT it exported to)")
    missing = [name for name in FILES if not (folder / name).is_file()]
    if missing:
        raise InputError(f"{folder}: no {' or '.join(missing)} (a twin run that trained writes both)")
    texts = {name: (folder / name).read_text() for name in FILES}
    summary = schema.parse(texts["summary.json"], lra_schema.TwinSummary, str(folder / "summary.json"))
    group = schema.parse(texts["group-0.json"], lra_schema.TwinGroup, str(folder / "group-0.json"))
    if group["data"] != summary["data"]["fingerprint"]:
        raise EvidenceError(f"{folder / 'group-0.json'}: data: {group['data'][:16]}..., the summary's data is "
                            f"{summary['data']['fingerprint'][:16]}... (files of two runs)")
    if group.get("cut") != summary.get("cut"):
        raise EvidenceError(f"{folder / 'group-0.json'}: cut: {group.get('cut')}, the summary's is "
                            f"{summary.get('cut')}")
    sizes = summary["plan"]["sizes"]
    found = {"schema_version": schema.SCHEMA_VERSION, "model_defaults": schema.model_defaults(),
             "kind": "gpu-twin", "setting": summary["setting"], "registered": summary["registered"],
             "tiny": summary["tiny"], "device": summary["device"], "versions": summary["versions"],
             "wall_seconds": summary["wall_seconds"], "phases": summary["phases"], "data": summary["data"],
             "bench": summary["bench"], "plan": summary["plan"],
             "config": {"d_model": sizes["d_model"], "heads": sizes["heads"], "ff": sizes["ff"], "layers": 1,
                        "pooling": "mean", "head": "linear"},
             "complete": summary["complete"], "cut": summary.get("cut"), "runs": group["runs"]}
    schema.parse(json.dumps(found), lra_schema.TwinEvidence, f"{folder} (as evidence)")
    return found


def target(setting: str) -> Path:
    return evidence.path(evidence.LRA, "gpu", f"{setting}.json")


def promote(folder: Path, replace: bool = False) -> Path:
    """:func:`collect` ``folder`` and write it into the package's evidence; its path."""
    found = collect(folder)
    committed = target(found["setting"])
    if committed.exists() and not replace:
        earlier = read_json(committed)
        raise InputError(f"{committed} holds a {found['setting']} result already (data "
                         f"{str(earlier.get('data', {}).get('fingerprint', '?'))[:16]}...): --replace to put this one "
                         "in its place (nothing was written)")
    with tempfile.TemporaryDirectory() as staging:
        staged = write_json(Path(staging) / "evidence.json", found)
        return evidence.promote(staged, evidence.LRA, "gpu", f"{found['setting']}.json")
