"""The Pathfinder reader: the PNG images ``metadata/*.npy`` lists, in a seeded 80/10/10 split;
every path read from the metadata stays inside the data (:func:`~spt_theory.lra.readers.common.inside`)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from spt_theory.lra.readers.common import (
    PIXEL_VOCAB,
    LRASplit,
    check_split,
    inside,
    labels_tensor,
    locate,
    parse_label,
    partition,
    read_document,
    report,
    require_examples,
)
from spt_theory.util.files import InputError

PATHFINDER_LAYOUT = ("DATA_DIR/pathfinder32/curv_contour_length_14/{imgs/<k>/sample_<i>.png, "
                     "metadata/<k>.npy} (or under DATA_DIR/lra_release)")
PATHFINDER_SPLIT_FRACTIONS = (0.8, 0.1)  # train, val; test is the remaining 10%


def _metadata_rows(root: Path) -> Iterator[tuple[str, list[str]]]:
    """``(file:line, fields)`` of every line of ``root/metadata/*.npy``, in metadata file order."""
    locate(root, ["metadata"], PATHFINDER_LAYOUT)
    folder = inside(root, "metadata", str(root))
    files = sorted(folder.glob("*.npy"), key=lambda p: (len(p.stem), p.stem))  # 2 before 10
    require_examples(len(files), folder)
    for file in files:
        lines = read_document(inside(root, f"metadata/{file.name}", str(file))).decode(
            "utf-8", errors="replace").splitlines()
        require_examples(len(lines), file)
        for number, line in enumerate(lines, 1):
            yield f"{file}:{number}", line.split()


def read_pathfinder_metadata(root: Path) -> tuple[list[str], list[int], list[str]]:
    """Image paths relative to ``root``, labels and ``file:line`` origins listed by
    ``root/metadata/*.npy``, in order of the metadata file number (lines ``imgs/<k> sample_<i>.png
    <idx> <label> ...``).  The image paths are not checked yet:
    :func:`~spt_theory.lra.readers.common.inside` does when one is read."""
    images, labels, origins = [], [], []
    for where, row in _metadata_rows(root):
        if len(row) < 4:
            raise InputError(f"{where}: expected at least 4 fields (imgs/<k> sample_<i>.png "
                             f"<idx> <label> ...), found {len(row)}")
        labels.append(parse_label(row[3], 2, where))
        images.append(f"{row[0]}/{row[1]}")
        origins.append(where)
    return images, labels, origins


def _pathfinder_root(data_dir: str | Path, contour_length: int, resolution: int) -> Path:
    relative = f"pathfinder{resolution}/curv_contour_length_{contour_length}"
    return locate(data_dir, [relative, f"lra_release/{relative}"], PATHFINDER_LAYOUT)


def _pathfinder_index(n: int, split: str, seed: int) -> torch.Tensor:
    """Indices (into the metadata order) of ``split`` in the seeded 80/10/10 partition of ``n``."""
    check_split(split, ("train", "val", "test"), "Pathfinder")
    return partition(n, PATHFINDER_SPLIT_FRACTIONS, seed)[("train", "val", "test").index(split)]


def pathfinder_marker_distances(data_dir: str | Path, split: str, contour_length: int = 14,
                                resolution: int = 32, seed: int = 0) -> np.ndarray | None:
    """The marker distance (sixth metadata field, written by :mod:`synthetic.pathfinder`) of each
    image of ``split``, in :func:`read_pathfinder`'s order; None if a line lacks it."""
    rows = [row for _, row in _metadata_rows(_pathfinder_root(data_dir, contour_length, resolution))]
    chosen = [rows[i] for i in _pathfinder_index(len(rows), split, seed).tolist()]
    try:
        return np.array([float(row[5]) for row in chosen])
    except (IndexError, ValueError):
        return None


def read_png(path: Path, size: int, origin: str) -> np.ndarray:
    """A ``size`` x ``size`` grayscale PNG as uint8; InputError names the file (and ``origin``).

    Only PNG is decoded, and only once its header gives the expected size (a header claiming a
    huge image is refused before any pixel is allocated)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path, formats=["PNG"]) as image:
                if image.size != (size, size):
                    raise InputError(f"{path}: image is {image.size[0]}x{image.size[1]}, expected {size}x{size}")
                pixels = np.asarray(image.convert("L"))
    except FileNotFoundError:
        raise InputError(f"{origin}: image {path} not found") from None
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError, Image.DecompressionBombWarning) as error:
        raise InputError(f"{path}: unreadable PNG ({error}), listed at {origin}") from None
    return pixels


def read_pathfinder(data_dir: str | Path, split: str, seed: int = 0, contour_length: int = 14,
                    resolution: int = 32) -> LRASplit:
    """Pathfinder ``split`` (train / val / test): a seeded 80/10/10 split of every listed image.

    Only the images of the requested split are decoded.  Inputs are the ``resolution**2`` pixel
    intensities in row-major order.
    """
    check_split(split, ("train", "val", "test"), "Pathfinder")
    root = _pathfinder_root(data_dir, contour_length, resolution)
    images, labels, origins = read_pathfinder_metadata(root)
    index = _pathfinder_index(len(images), split, seed)
    pixels = np.empty((len(index), resolution * resolution), dtype=np.int64)
    for row, i in enumerate(index.tolist()):
        pixels[row] = read_png(inside(root, images[i], origins[i]), resolution, origins[i]).reshape(-1)
    result = LRASplit(torch.from_numpy(pixels), labels_tensor([labels[i] for i in index.tolist()]),
                      torch.full((len(index),), resolution * resolution, dtype=torch.int64), PIXEL_VOCAB)
    return report("Pathfinder", split, result, root)

