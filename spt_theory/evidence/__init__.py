"""The committed evidence: results too long to recompute, shipped with the package.

Files (package data, read with :mod:`importlib.resources`, so a regular and an editable install
read the same bytes from any folder)::

    lra/<task>.json           the LRA sweep summaries claims L1-L4 read (``lra sweep --name evidence``)
    lra/results/, ablations/  the per-run result JSONs behind them, exploratory ablations
                              (provenance; not read by verify)
    race/pathfinder16.json    the Pathfinder-16 escape race, claim L5 (``lra race``)
    plateau/plateau_runs.json the plateau grid, claims P1-P5 (``plateau``)
    plateau/gradient_rms.json the noise scale s(n) the plateau law uses
    bench/rep*.json           the benchmark runs the README's speed table quotes

Every file is read through :mod:`spt_theory.evidence.schema` (one validating loader, a schema
version in every file).  A missing, unreadable or mismatched file is an :class:`EvidenceError`:
verify prints that claim as ERROR (one line naming the file and the field) and exits 1; it never
matches a recorded verdict.

Writers (``lra sweep``, ``plateau``, ``lra race``, the GPU script) write into a folder of the
user's; :func:`promote` copies a finished result into this package's folder when asked in so
many words (``--promote``).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from spt_theory.util.files import InputError


class EvidenceError(InputError):
    """Committed evidence that is missing, unreadable, of another schema version, or disagrees
    with the record or the code's settings.  The message names the file and the field."""


def require(ok: object, file: str | Path, field: str, what: str) -> None:
    """EvidenceError ``<file>: field <field> must be <what>`` unless ``ok``."""
    if not ok:
        raise EvidenceError(f"{file}: field {field} must be {what}")


def root() -> Path:
    """The folder of the committed evidence inside the installed package."""
    return Path(str(resources.files(__name__)))


LRA = "lra"
RACE = "race"
PLATEAU = "plateau"


def path(*parts: str) -> Path:
    """``root() / parts``, e.g. ``path("plateau", "plateau_runs.json")``."""
    return root().joinpath(*parts)


PATH_FIELDS = {"data_dir": "DATA_DIR", "pretrain_data_dir": "DATA_DIR", "out": "OUT"}
"""Fields of a run's options that hold machine paths, and the name each becomes in evidence."""


def scrub_paths(obj: Any, roots: dict[str, str] | None = None) -> Any:
    """``obj`` with the machine paths a writer recorded replaced by names (evidence carries no
    machine path): the values of :data:`PATH_FIELDS` become their name, and any string under one
    of those folders the same name plus the path inside it (``/x/runs/cache/k`` -> ``OUT/cache/k``).
    ``roots`` maps folders to names (found in ``obj``'s ``options`` when None).

    >>> scrub_paths({"options": {"out": "/x/runs", "seed": 0}, "path": "/x/runs/cache/a.pt"})
    {'options': {'out': 'OUT', 'seed': 0}, 'path': 'OUT/cache/a.pt'}
    """
    if roots is None:
        roots = {}
        _find_roots(obj, roots)
    if isinstance(obj, dict):
        return {k: (PATH_FIELDS[k] if k in PATH_FIELDS and isinstance(v, str) else scrub_paths(v, roots))
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [scrub_paths(v, roots) for v in obj]
    if isinstance(obj, str):
        for folder, name in sorted(roots.items(), key=lambda item: -len(item[0])):
            if obj == folder or obj.startswith(folder.rstrip("/") + "/"):
                return name + obj[len(folder.rstrip("/")):]
    return obj


def _find_roots(obj: Any, roots: dict[str, str]) -> None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in PATH_FIELDS and isinstance(v, str) and v not in PATH_FIELDS.values():
                roots[v] = PATH_FIELDS[k]
            else:
                _find_roots(v, roots)
    elif isinstance(obj, list):
        for v in obj:
            _find_roots(v, roots)


def promote(source: Path, *parts: str) -> Path:
    """Copy the finished result ``source`` into the committed evidence as ``path(*parts)``,
    machine paths scrubbed (:func:`scrub_paths`); returns where it went.  Only a command's
    ``--promote`` calls this: no writer writes into the evidence otherwise."""
    import json

    from spt_theory.util.files import promoting, write_json

    target = path(*parts)
    with promoting():
        write_json(target, scrub_paths(json.loads(Path(source).read_text())))
    return target
