"""matplotlib on the Agg backend and the one way a figure file is written (:func:`save_figure`):
atomically, with no date or version in its metadata.  Below every layer that draws (the LRA
sweep and steps figures, :mod:`spt_theory.figures`), so none of them imports a layer above it."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from spt_theory.util.files import atomic_write  # noqa: E402

__all__ = ["FIXED_METADATA", "plt", "save_figure"]

FIXED_METADATA = {"png": {"Software": None}, "pdf": {"CreationDate": None, "Creator": None}}
"""No date or version in a file's metadata: an unchanged figure redrawn gives the same bytes."""


def save_figure(fig, path: Path, dpi: int) -> Path:
    """Write ``fig`` to ``path`` (PNG or PDF by its suffix) atomically, with :data:`FIXED_METADATA`."""
    fmt = path.suffix[1:]
    return atomic_write(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=dpi, metadata=FIXED_METADATA[fmt]))
