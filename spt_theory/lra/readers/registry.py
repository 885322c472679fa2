"""The reader of each LRA task (:mod:`spt_theory.lra.readers`)."""

from __future__ import annotations

from collections.abc import Callable

from spt_theory.lra.readers.common import LRAPairSplit, LRASplit
from spt_theory.lra.readers.image import read_image
from spt_theory.lra.readers.listops import read_listops
from spt_theory.lra.readers.pathfinder import read_pathfinder
from spt_theory.lra.readers.retrieval import read_retrieval
from spt_theory.lra.readers.text import read_text

READERS: dict[str, Callable[..., LRASplit | LRAPairSplit]] = {
    "listops": read_listops,
    "text": read_text,
    "retrieval": read_retrieval,
    "image": read_image,
    "pathfinder": read_pathfinder,
}
"""Reader of each task, called as ``READERS[task](data_dir, split)``."""
