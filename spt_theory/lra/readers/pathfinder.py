"""The Pathfinder reader: the PNG images ``metadata/*.npy`` lists, in a seeded 80/10/10 split;
every path read from the metadata stays inside the data (:func:`~spt_theory.lra.readers.common.inside`).

A folder with a held-out test split (``metadata/test_<k>.npy``, written by ``python -m
synthetic.pathfinder --n-test N``) is read differently: the test split is those images, in their
metadata order, and the others are split 8 : 1 (seeded) into train and validation, the release's
80 / 10 ratio."""

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


def pathfinder_layout(relative: str = "pathfinder32/curv_contour_length_14") -> str:
    """The release layout of the Pathfinder folder ``relative`` (the one asked for: the race's is
    ``pathfinder16/curv_contour_length_6``)."""
    return f"DATA_DIR/{relative}/{{imgs/<k>/sample_<i>.png, metadata/<k>.npy}} (or under DATA_DIR/lra_release)"
PATHFINDER_SPLIT_FRACTIONS = (0.8, 0.1)  # train, val; test is the remaining 10%
TEST_PREFIX = "test_"
"""Metadata files ``test_<k>.npy`` hold a held-out test split (module doc)."""


def _metadata_files(root: Path, test: bool) -> list[Path]:
    """``root/metadata``'s files of the held-out test split (``test``) or of the others, in order."""
    locate(root, ["metadata"], PATHFINDER_LAYOUT)
    folder = inside(root, "metadata", str(root))
    files = [p for p in folder.glob("*.npy") if p.stem.startswith(TEST_PREFIX) == test]
    return sorted(files, key=lambda p: (len(p.stem), p.stem))  # 2 before 10


def has_test_split(root: Path) -> bool:
    """Whether the Pathfinder folder ``root`` holds a held-out test split (module doc)."""
    return bool(_metadata_files(root, True))


def _metadata_rows(root: Path, test: bool = False) -> Iterator[tuple[str, list[str]]]:
    """``(file:line, fields)`` of every line of ``root/metadata/*.npy`` (the held-out test split's
    files with ``test``, else the others), in metadata file order."""
    files = _metadata_files(root, test)
    folder = root / "metadata"
    require_examples(len(files), folder)
    for file in files:
        lines = read_document(inside(root, f"metadata/{file.name}", str(file))).decode(
            "utf-8", errors="replace").splitlines()
        require_examples(len(lines), file)
        for number, line in enumerate(lines, 1):
            yield f"{file}:{number}", line.split()


def read_pathfinder_metadata(root: Path, test: bool = False) -> tuple[list[str], list[int], list[str]]:
    """Image paths relative to ``root``, labels and ``file:line`` origins listed by
    ``root/metadata/*.npy``, in order of the metadata file number (lines ``imgs/<k> sample_<i>.png
    <idx> <label> ...``).  The image paths are not checked yet:
    :func:`~spt_theory.lra.readers.common.inside` does when one is read."""
    images, labels, origins = [], [], []
    for where, row in _metadata_rows(root, test):
        if len(row) < 4:
            raise InputError(f"{where}: expected at least 4 fields (imgs/<k> sample_<i>.png "
                             f"<idx> <label> ...), found {len(row)}")
        labels.append(parse_label(row[3], 2, where))
        images.append(f"{row[0]}/{row[1]}")
        origins.append(where)
    return images, labels, origins


def _pathfinder_root(data_dir: str | Path, contour_length: int, resolution: int) -> Path:
    relative = f"pathfinder{resolution}/curv_contour_length_{contour_length}"
    return locate(data_dir, [relative, f"lra_release/{relative}"], pathfinder_layout(relative))


def _pathfinder_index(n: int, split: str, seed: int, held_out: bool = False) -> torch.Tensor:
    """Indices (into the metadata order) of ``split`` in the seeded 80/10/10 partition of ``n``; with
    a ``held_out`` test split, the indices into its own rows (test: all) or into the others (train
    and validation: their seeded 8 : 1 partition)."""
    check_split(split, ("train", "val", "test"), "Pathfinder")
    if held_out:
        if split == "test":
            return torch.arange(n)
        train, val = PATHFINDER_SPLIT_FRACTIONS
        return partition(n, (train / (train + val),), seed)[("train", "val").index(split)]
    return partition(n, PATHFINDER_SPLIT_FRACTIONS, seed)[("train", "val", "test").index(split)]


def pathfinder_marker_distances(data_dir: str | Path, split: str, contour_length: int = 14,
                                resolution: int = 32, seed: int = 0) -> np.ndarray | None:
    """The marker distance (sixth metadata field, written by :mod:`synthetic.pathfinder`) of each
    image of ``split``, in :func:`read_pathfinder`'s order; None if a line lacks it."""
    root = _pathfinder_root(data_dir, contour_length, resolution)
    held_out = has_test_split(root)
    rows = [row for _, row in _metadata_rows(root, held_out and split == "test")]
    chosen = [rows[i] for i in _pathfinder_index(len(rows), split, seed, held_out).tolist()]
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
    held_out = has_test_split(root)
    images, labels, origins = read_pathfinder_metadata(root, held_out and split == "test")
    index = _pathfinder_index(len(images), split, seed, held_out)
    pixels = np.empty((len(index), resolution * resolution), dtype=np.int64)
    for row, i in enumerate(index.tolist()):
        pixels[row] = read_png(inside(root, images[i], origins[i]), resolution, origins[i]).reshape(-1)
    result = LRASplit(torch.from_numpy(pixels), labels_tensor([labels[i] for i in index.tolist()]),
                      torch.full((len(index),), resolution * resolution, dtype=torch.int64), PIXEL_VOCAB)
    return report("Pathfinder", split, result, root)

