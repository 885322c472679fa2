"""Pathfinder in the LRA release layout: are two markers joined by one dashed curve?

Each image (``size`` x ``size`` grayscale, white ink on black) holds two long curved dashed paths
of ``contour_length`` segments, a few shorter distractor paths and two circular markers.  A path
is a chain of segments of equal length whose heading turns by at most ``max_turn`` per segment;
each segment is drawn as a dash (its first ``dash_fraction``) followed by a gap.  Label 1: the
markers sit on the two ends of path 0.  Label 0: one marker on an end of path 0, the other on an
end of path 1.  Every path, drawn without gaps and with its markers (its *mask*), is kept at least
one pixel away from every other path's mask, so the markers are connected through the masks
(8-neighbourhood) iff the label is 1; ``PathfinderSample`` exposes the masks for that check.

The distance between the two markers is a shortcut: a label-1 pair is the two ends of one bounded-
turn path (end to end about ``contour_length`` segments), a label-0 pair two unrelated ends (at
16 pixels, contour 6, the distance alone predicts the label 87% of the time).  With
``match_distances`` each label-0 image first draws a target distance from the label-1 law (the
end-to-end distance of a freshly grown long path, as path 0 of a label-1 image is grown) and keeps
only a path 1 whose marker lies within ``MATCH_TOLERANCE`` segment lengths of it, so both labels
have the same marker-distance law up to that tolerance.  The marker distance of every image is
written as the sixth metadata field (readers need only the first four).

Drawing happens on a canvas ``SUPERSAMPLE`` times finer, box-averaged down, so thin dashes get
anti-aliased intensities as in the release (rendered large, then downsampled).

``python -m synthetic.pathfinder --out DIR`` writes ``DIR/curv_contour_length_14/imgs/<k>/
sample_<i>.png`` and ``metadata/<k>.npy`` (text lines ``imgs/<k> sample_<i>.png <i> <label>
<contour_length> <marker distance>``), like the release; see ``--help``.
"""

from __future__ import annotations

import argparse
import contextlib
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from spt_theory.util.files import InputError, announce, atomic_write, prepare_output, refuse_links
from spt_theory.util.interrupts import GENERATING, interruptible
from spt_theory.util.prog import prog
from spt_theory.util.progress import Progress
from spt_theory.util.provenance import MARKER, removed_on_error, write_marker
from synthetic.bounds import integer_between

MAX_SIZE = 1024
"""Largest image side (LRA's largest Pathfinder is 256; the drawing canvas is (4 x side)^2 bytes)."""
MAX_SEGMENTS = 1000
"""Most segments a path (``--contour-length``, ``--distractor-length``) and most distractors an
image may have: each is drawn and grown in memory proportional to it (LRA: 14 and 2-10)."""
SUPERSAMPLE = 4
MAX_ATTEMPTS = 1000
TURN_TRIES = 8
MATCH_TOLERANCE = 0.02
"""``match_distances``: largest gap, in segment lengths, between a label-0 marker distance and its target."""
MATCH_TRIES = 500
"""``match_distances``: paths grown per placement try before the try counts as failed."""


@dataclass(frozen=True)
class PathfinderStyle:
    """Geometry of the images; lengths in pixels of the ``size`` x ``size`` image."""

    size: int = 32
    contour_length: int = 14
    distractors: int = 4
    distractor_length: int = 4
    max_turn: float = math.pi / 6
    dash_fraction: float = 0.6
    match_distances: bool = False
    balanced: bool = False
    """Classes matched in ink and intensity (module doc, "Balanced"): each dash centred in its
    segment, so a path's two ends look alike; label-0 paths placed at their target distance directly."""

    def __post_init__(self):
        if not 16 <= self.size <= MAX_SIZE:
            raise InputError(f"size must be between 16 and {MAX_SIZE}, got {self.size}")
        if max(self.contour_length, self.distractors, self.distractor_length) > MAX_SEGMENTS:
            raise InputError(f"contour length, distractors and distractor length must be at most {MAX_SEGMENTS}")
        if self.contour_length < 2:
            raise InputError(f"contour length must be >= 2, got {self.contour_length}")
        if self.distractors < 0 or self.distractor_length < 1:
            raise InputError("distractors must be >= 0 and distractor length >= 1")
        if self.balanced and not self.match_distances:
            raise InputError("--balanced needs --match-distances (it matches the classes' ink given their distances)")

    @property
    def segment_length(self) -> float:
        return self.size / 16

    @property
    def marker_radius(self) -> float:
        return self.size / 20

    @property
    def margin(self) -> float:
        """Closest a path vertex may come to the border (room for a marker)."""
        return self.marker_radius + 1.0


@dataclass(frozen=True)
class PathfinderSample:
    """One image with the structure it was drawn from.

    ``paths[p]``: vertices (k + 1, 2) as (x, y); paths 0 and 1 are the long ones, the rest
    distractors.  ``path_masks[p]``: path ``p`` drawn without gaps (dashes included, so pixel
    rounding cannot leave ink outside) plus its markers, bool (size, size).  ``markers``: the
    two marker centres (2, 2) as (x, y); ``marker_paths``: the path each marker sits on.
    """

    image: np.ndarray
    label: int
    paths: tuple[np.ndarray, ...]
    path_masks: np.ndarray
    markers: np.ndarray
    marker_paths: tuple[int, ...]

    @property
    def marker_distance(self) -> float:
        """Euclidean distance (pixels) between the two marker centres."""
        return float(np.hypot(*(self.markers[0] - self.markers[1])))


def _render(size: int, strokes: list[np.ndarray], discs: list[np.ndarray], radius: float) -> np.ndarray:
    """Box-averaged rendering (uint8) of 1-pixel-wide polylines ``strokes`` and filled circles
    of ``radius`` centred at ``discs``, drawn on a ``SUPERSAMPLE`` times finer canvas."""
    canvas = Image.new("L", (size * SUPERSAMPLE, size * SUPERSAMPLE), 0)
    draw = ImageDraw.Draw(canvas)
    for stroke in strokes:
        draw.line([tuple(p) for p in stroke * SUPERSAMPLE], fill=255, width=SUPERSAMPLE, joint="curve")
    r = radius * SUPERSAMPLE
    for centre in discs:
        x, y = centre * SUPERSAMPLE
        draw.ellipse((x - r, y - r, x + r, y + r), fill=255)
    return np.asarray(canvas.reduce(SUPERSAMPLE))


def _dashes(path: np.ndarray, dash_fraction: float, centred: bool = False) -> list[np.ndarray]:
    """The drawn part of each segment: from its start to ``dash_fraction`` of its length, or
    (``centred``) the middle ``dash_fraction`` of it, so both ends of the path end in a half gap."""
    starts, ends = path[:-1], path[1:]
    lead = (1 - dash_fraction) / 2 if centred else 0.0
    return list(np.stack([starts + lead * (ends - starts), starts + (lead + dash_fraction) * (ends - starts)],
                         axis=1))


def _grow(rng: np.random.Generator, segments: int, style: PathfinderStyle,
          around: tuple[np.ndarray, float] | None = None) -> np.ndarray | None:
    """A random curved polyline inside the margins, or ``None`` if it ran into a border.

    It starts uniformly inside the margins, or (``around = (centre, r)``) at a uniform angle on the
    circle of radius ``r`` about ``centre`` (``None`` if that point is outside).  At each vertex up
    to ``TURN_TRIES`` turns in [-max_turn, max_turn] are tried in order; the first that stays
    inside is taken.  (Plain floats: this loop is the generator's hot spot.)
    """
    low, high = style.margin, style.size - style.margin
    if around is None:
        x, y = rng.uniform(low, high, size=2).tolist()
    else:
        angle = rng.uniform(0, 2 * math.pi)
        x, y = (float(around[0][0] + around[1] * math.cos(angle)), float(around[0][1] + around[1] * math.sin(angle)))
        if not (low <= x <= high and low <= y <= high):
            return None
    heading = rng.uniform(0, 2 * math.pi)
    turns = rng.uniform(-style.max_turn, style.max_turn, size=(segments, TURN_TRIES)).tolist()
    step = style.segment_length
    points = [(x, y)]
    for options in turns:
        for turn in options:
            nx, ny = x + step * math.cos(heading + turn), y + step * math.sin(heading + turn)
            if low <= nx <= high and low <= ny <= high:
                break
        else:
            return None
        heading += turn
        x, y = nx, ny
        points.append((x, y))
    return np.array(points)


def _dilate(mask: np.ndarray) -> np.ndarray:
    """``mask`` grown by one pixel in the 8-neighbourhood."""
    padded = np.pad(mask, 1)
    h, w = mask.shape
    return np.logical_or.reduce([padded[dy:dy + h, dx:dx + w] for dy in range(3) for dx in range(3)])


def _place(rng, segments, marker_ends, blocked, style, accept=None, around=None):
    """Grow a path with markers at ``marker_ends`` (vertex indices) whose mask avoids
    ``blocked`` (and, if given, for which ``accept(path)`` holds, or which starts on the circle
    ``around``: up to ``MATCH_TRIES`` growths per try); ``(path, mask, marker centres)`` or ``None``
    after a few tries."""
    tries = 1 if accept is None and around is None else MATCH_TRIES
    for _attempt in range(20):
        for _growth in range(tries):
            path = _grow(rng, segments, style, around)
            if path is not None and (accept is None or accept(path)):
                break
        else:
            continue
        markers = [path[end] for end in marker_ends]
        if style.balanced and len(markers) == 2 and _markers_touch(markers, style):
            continue
        strokes = [path] + _dashes(path, style.dash_fraction, style.balanced)  # dashes too: pixel rounding
        mask = _render(style.size, strokes, markers, style.marker_radius) > 0
        if not (mask & blocked).any():
            return path, mask, markers
    return None


def _markers_touch(markers: list[np.ndarray], style: PathfinderStyle) -> bool:
    """Whether the second marker's disc comes within one pixel of the first's (8-neighbourhood):
    the rule that every label-0 image obeys through the separation of its paths' masks, so a
    balanced label-1 image is held to it too."""
    first, second = (_render(style.size, [], [m], style.marker_radius) > 0 for m in markers)
    return bool((_dilate(first) & second).any())


def _target_distance(rng: np.random.Generator, style: PathfinderStyle) -> float:
    """A draw from the label-1 marker-distance law: the end-to-end distance of a grown long path."""
    while (path := _grow(rng, style.contour_length, style)) is None:
        pass
    return float(np.hypot(*(path[-1] - path[0])))


def _try_sample(rng: np.random.Generator, label: int, style: PathfinderStyle,
                target: float | None = None) -> PathfinderSample | None:
    """One attempt at laying out an image of ``label``; ``None`` if the paths did not fit.
    ``target``: the marker distance a label-0 image must match (``match_distances``)."""
    n = style.contour_length
    plan = [(n, [0, n] if label == 1 else [0]), (n, [] if label == 1 else [0])]
    plan += [(style.distractor_length, [])] * style.distractors
    paths: list[np.ndarray] = []
    masks: list[np.ndarray] = []
    markers: list[np.ndarray] = []
    owners: list[int] = []
    blocked = np.zeros((style.size, style.size), dtype=bool)
    tolerance = MATCH_TOLERANCE * style.segment_length
    for index, (segments, marker_ends) in enumerate(plan):
        accept = around = None
        if target is not None and index == 1 and style.balanced:  # label 0: path 1's marker on the circle
            around = (markers[0], target)
        elif target is not None and index == 1:  # label 0: path 1's marker at the target distance
            accept = lambda path, markers=markers: abs(float(np.hypot(*(path[0] - markers[0]))) - target) <= tolerance  # noqa: E731
        placed = _place(rng, segments, marker_ends, blocked, style, accept, around)
        if placed is None:
            return None
        path, mask, centres = placed
        paths.append(path)
        masks.append(mask)
        markers += centres
        owners += [index] * len(centres)
        blocked |= _dilate(mask)
    strokes = [dash for path in paths for dash in _dashes(path, style.dash_fraction, style.balanced)]
    image = _render(style.size, strokes, markers, style.marker_radius)
    return PathfinderSample(image, label, tuple(paths), np.stack(masks), np.array(markers), tuple(owners))


def generate_sample(rng: np.random.Generator, label: int, style: PathfinderStyle = PathfinderStyle()
                    ) -> PathfinderSample:
    """An image of ``label`` (0 or 1), retrying layouts that do not fit; deterministic in ``rng``."""
    target = _target_distance(rng, style) if style.match_distances and label == 0 else None
    for _attempt in range(MAX_ATTEMPTS):
        sample = _try_sample(rng, label, style, target)
        if sample is not None:
            return sample
    raise InputError(f"could not fit the paths into a {style.size}x{style.size} image; "
                     f"use a larger --size or a shorter --contour-length")


def balanced_labels(n: int, seed: int, offset: int = 0) -> np.ndarray:
    """``n`` labels, half of them 1 (one more 0 if ``n`` is odd), in a seeded random order (the
    block of images from index ``offset`` on draws its own order)."""
    labels = np.arange(n) % 2
    return np.random.default_rng([seed, n] if offset == 0 else [seed, n, offset]).permutation(labels)


def generate(n: int, seed: int = 0, style: PathfinderStyle = PathfinderStyle(), progress: bool = False,
             offset: int = 0):
    """Yield ``n`` samples with balanced labels; sample ``i`` draws from the stream ``(seed, offset + i)``
    (``offset``: the images written before, so a held-out test block shares no stream with them)."""
    labels = balanced_labels(n, seed, offset)
    with Progress("pathfinder images", n, "images", enabled=progress) as bar:
        for i in range(n):
            yield generate_sample(np.random.default_rng([seed, offset + i]), int(labels[i]), style)
            bar.update()


def check_counts(n: int, per_folder: int, n_test: int = 0) -> None:
    """InputError unless there is at least one image and one image per folder (and n_test >= 0)."""
    if n < 1 or per_folder < 1 or n_test < 0:
        raise InputError(f"need n >= 1, per_folder >= 1 and n_test >= 0, got n={n}, per_folder={per_folder}, "
                         f"n_test={n_test}")


TEST_PREFIX = "test_"
"""Folders of a held-out test split (``--n-test``): ``imgs/test_<k>/`` and ``metadata/test_<k>.npy``."""


def dataset_root(out: str | Path, style: PathfinderStyle) -> Path:
    """The release layout's folder of ``style``'s images under ``out``: ``out/curv_contour_length_<L>``."""
    return Path(out) / f"curv_contour_length_{style.contour_length}"


def write_dataset(out: str | Path, n: int, seed: int = 0, style: PathfinderStyle = PathfinderStyle(),
                  per_folder: int = 1000, progress: bool = False, n_test: int = 0) -> Path:
    """Write ``n`` images in the release layout under ``out/curv_contour_length_<L>``; return it.

    With ``n_test`` > 0, ``n_test`` more images (streams ``(seed, n + i)``, their own balanced
    labels) go to ``imgs/test_<k>/`` and ``metadata/test_<k>.npy``: a held-out test split.  The
    reader (:mod:`spt_theory.lra.readers.pathfinder`) then takes its test split from them and
    splits the ``n`` others 8 : 1 into train and validation (the release's 80 / 10).

    Each folder's metadata file is written after its images, so metadata never lists a missing
    image.
    """
    check_counts(n, per_folder, n_test)
    root = dataset_root(out, style)
    # closing(): an interrupt while a block is written ends the generator, and its progress line, as the
    # interrupt unwinds, before the command's last line (not later, when the traceback lets it go)
    with contextlib.closing(generate(n, seed, style, progress)) as samples:
        _write_block(root, samples, n, per_folder, "", style)
    if n_test:
        with contextlib.closing(generate(n_test, seed, style, progress, offset=n)) as samples:
            _write_block(root, samples, n_test, per_folder, TEST_PREFIX, style)
    settings = {k: v for k, v in asdict(style).items() if k != "balanced" or v}  # old markers unchanged
    write_marker(root, "synthetic.pathfinder", {"n": n, "seed": seed, **settings,
                                                **({"n_test": n_test} if n_test else {})})
    return root


def _text_writer(text: str) -> Callable[[Path], object]:
    """What :func:`atomic_write` calls to write ``text``."""
    return lambda tmp: tmp.write_text(text)


def _png_writer(image: np.ndarray) -> Callable[[Path], object]:
    """What :func:`atomic_write` calls to write ``image`` as a PNG."""
    return lambda tmp: Image.fromarray(image).save(tmp, format="PNG")


def _write_block(root: Path, samples, n: int, per_folder: int, prefix: str, style: PathfinderStyle) -> None:
    """The images of ``samples`` in folders ``imgs/<prefix><k>``, each folder's metadata after its images."""
    lines: list[str] = []
    for index, sample in enumerate(samples):
        folder, i = divmod(index, per_folder)
        atomic_write(root / f"imgs/{prefix}{folder}/sample_{i}.png", _png_writer(sample.image))
        lines.append(f"imgs/{prefix}{folder} sample_{i}.png {i} {sample.label} {style.contour_length} "
                     f"{sample.marker_distance:.4f}\n")
        if i == per_folder - 1 or index == n - 1:
            atomic_write(root / f"metadata/{prefix}{folder}.npy", _text_writer("".join(lines)))
            lines = []


@interruptible(rerun=GENERATING)
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog("python -m synthetic.pathfinder"),
        description="Generate Pathfinder images in the LRA release layout: "
                    "DIR/curv_contour_length_<L>/imgs/<k>/sample_<i>.png and metadata/<k>.npy "
                    "(text lines 'imgs/<k> sample_<i>.png <i> <label> <L>'). Label 1 iff the two "
                    "markers lie on the same dashed path; labels are balanced. Point --out at "
                    "DATA_DIR/pathfinder32 for the LRA readers.")
    parser.add_argument("--out", required=True, type=Path, help="output folder (created)")
    parser.add_argument("--n", type=int, default=10000, help="number of images (default 10000)")
    parser.add_argument("--size", type=integer_between(16, MAX_SIZE, "LRA's largest is 256"), default=32,
                        help="image side in pixels (default 32)")
    parser.add_argument("--contour-length", type=integer_between(2, MAX_SEGMENTS), default=14,
                        help="segments per long path (default 14, LRA's hard setting)")
    parser.add_argument("--distractors", type=integer_between(0, MAX_SEGMENTS),
                        default=PathfinderStyle.distractors,
                        help=f"short distractor paths per image (default {PathfinderStyle.distractors})")
    parser.add_argument("--distractor-length", type=integer_between(1, MAX_SEGMENTS),
                        default=PathfinderStyle.distractor_length,
                        help=f"segments per distractor (default {PathfinderStyle.distractor_length})")
    parser.add_argument("--match-distances", action="store_true",
                        help="label-0 markers at the label-1 marker-distance law (removes the "
                             "marker-distance shortcut; module doc)")
    parser.add_argument("--balanced", action="store_true",
                        help="classes matched in ink and intensity: dashes centred in their segments, label-1 "
                             "markers held to the label-0 separation rule, label-0 paths placed at their target "
                             "distance directly (module doc, 'Balanced'; needs --match-distances)")
    parser.add_argument("--n-test", type=int, default=0,
                        help="a held-out test split of this many more images (imgs/test_<k>/); the --n images "
                             "then split 8 : 1 into train and validation (default 0: the reader's seeded "
                             "80/10/10 split of the --n images)")
    parser.add_argument("--per-folder", type=int, default=1000, help="images per imgs/<k> folder (1000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress (default: a bar on a terminal, else lines on stderr)")
    args = parser.parse_args(argv)
    try:
        style = PathfinderStyle(size=args.size, contour_length=args.contour_length,
                                distractors=args.distractors, distractor_length=args.distractor_length,
                                match_distances=args.match_distances, balanced=args.balanced)
        check_counts(args.n, args.per_folder, args.n_test)
        refuse_links(dataset_root(args.out, style), args.out)
        with removed_on_error(dataset_root(args.out, style), args.out):  # an error leaves no folder it created
            prepare_output(dataset_root(args.out, style) / MARKER)  # before the first image; a created folder is said
            root = write_dataset(args.out, args.n, args.seed, style, args.per_folder, progress=not args.no_progress,
                                 n_test=args.n_test)
    except InputError as error:
        parser.exit(2, f"error: {error}\n")
    announce(root, f"{args.n} images (imgs/, metadata/)" + (f" and {args.n_test} test images (imgs/test_*/)"
                                                             if args.n_test else "") + " to")
    announce(root / MARKER)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
