"""The marker a generator leaves beside the data it wrote, so a run can say where its data came from.

``GENERATED.json`` in the task's folder holds the generator's module and its settings (seed,
sizes, lengths).  The LRA runner records it in every result (``data.source``): data with the
marker are *generated* by this toolkit; data without it are taken as a release copy.
"""

from __future__ import annotations

import json
from pathlib import Path

from synthetic.files import write_json

MARKER = "GENERATED.json"


def write_marker(folder: str | Path, generator: str, settings: dict) -> Path:
    """Write ``folder/GENERATED.json`` = {"generator": ..., "settings": ...}."""
    return write_json(Path(folder) / MARKER, {"generator": generator, "settings": settings})


def read_marker(folder: str | Path) -> dict | None:
    """The marker of ``folder``, or None where there is none (or it is not a JSON object)."""
    path = Path(folder) / MARKER
    try:
        marker = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return marker if isinstance(marker, dict) else None
