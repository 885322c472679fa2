"""``python -m spt_theory.lra audit DATA_DIR``: what a task allows before any Transformer is trained.

Fixed-feature baselines, each a logistic regression (scikit-learn) fitted on the train split, its
regularisation chosen on the validation split, and read once on the held-out test split with a
95% Wilson interval:

- the **floor**, features that need no attention pattern (what uniform attention plus a mean-pooled
  readout can reach): the token or intensity histogram (pixels in 16 bins), per-position linear
  (pixel intensities; one-hot tokens), ink count (pixels above zero; real tokens of a token task);
- the **one-hop ceiling**, features one local attention hop can form: bags of k x k pixel patterns
  (k = 3 and 5; each pixel quantised to 0, faint (< 128) or strong; 5 x 5 hashed into 2^18 bins) or
  of token n-grams (n = 2 and 3, hashed the same way).

Every split must hold at least two classes (a classifier cannot be fitted on one, and read on one
its accuracy says nothing of the window): otherwise one line names the split and its class counts.
The command says on stderr what it is doing, and at least every :data:`HEARTBEAT` seconds while
one step (loading, one fit) runs on.

The floor is the best floor baseline, the ceiling the best ceiling baseline.  A task can show the
mechanism under test (DESIGN.md, "Where a comparison can show") when the ceiling stands well above
both chance and the floor.  The report (``--json PATH``, schema
:class:`~spt_theory.evidence.lra_schema.AuditReport`) carries the data fingerprint and source.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from spt_theory.util.files import InputError

LEVEL = 0.95
Z = 1.959963984540054
"""The 95% normal quantile of the Wilson interval."""
C_GRID = (0.01, 0.1, 1.0, 10.0)
"""Inverse regularisation strengths tried; the best on the validation split is read on test."""
HASH_BINS = 1 << 18
INTENSITY_BINS = 16
STRONG = 128
"""Pixel intensity from which a pixel counts as strong ink (below: faint; 0: none)."""
HEARTBEAT = 30.0
"""Seconds of silence after which the command says on stderr that it is still at the same step."""


@dataclass(frozen=True)
class Baseline:
    """One fixed-feature baseline: its name, whether it is a floor or a ceiling feature, what it
    reads, and the feature function ``(inputs (N, L) int64, pixel side or None, vocab size) -> X``."""

    name: str
    role: str
    what: str
    features: Callable


def wilson(correct: int, n: int, z: float = Z) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``correct / n``.

    Parameters
    ----------
    correct, n : int
        Successes and trials (``n`` >= 1).
    z : float
        Normal quantile of the level (1.96 for 95%).

    Returns
    -------
    (low, high) : tuple of float
        Interval bounds in [0, 1].

    Examples
    --------
    >>> [round(v, 4) for v in wilson(50, 100)]
    [0.4038, 0.5962]
    """
    if n < 1 or not 0 <= correct <= n:
        raise InputError(f"wilson: need 0 <= correct <= n and n >= 1, got {correct} of {n}")
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


# ----------------------------------------------------------------------------------- features
def _sparse(rows: np.ndarray, cols: np.ndarray, n: int, width: int):
    from scipy import sparse

    counts = sparse.csr_matrix((np.ones(len(rows), dtype=np.float64), (rows, cols)), shape=(n, width))
    counts.sum_duplicates()
    counts.data = np.log1p(counts.data)
    return counts


def histogram(x: np.ndarray, side: int | None, vocab: int) -> np.ndarray:
    """Share of each token (token task) or of each of 16 intensity bins (pixel task) per example."""
    values = x // (256 // INTENSITY_BINS) if side else x
    bins = INTENSITY_BINS if side else vocab
    counts = np.stack([np.bincount(row, minlength=bins) for row in values]).astype(np.float64)
    return counts / counts.sum(1, keepdims=True)


def per_position(x: np.ndarray, side: int | None, vocab: int):
    """Pixel intensity / 255 at every position, or the one-hot token at every position."""
    if side:
        return x.astype(np.float64) / 255.0
    n, length = x.shape
    rows = np.repeat(np.arange(n), length)
    return _sparse(rows, (np.arange(length) * vocab + x).reshape(-1), n, length * vocab)


def ink(x: np.ndarray, side: int | None, vocab: int) -> np.ndarray:
    """Pixels above zero (pixel task) or real tokens, id > 0 (token task), per example."""
    return (x > 0).sum(1, keepdims=True).astype(np.float64)


def _levels(x: np.ndarray) -> np.ndarray:
    return (x > 0).astype(np.int64) + (x >= STRONG)


def patterns(k: int) -> Callable:
    """Bag of the k x k windows of the quantised image (0, faint, strong), hashed into 2^18 bins
    when 3^(k*k) exceeds them."""

    def bag(x: np.ndarray, side: int | None, vocab: int):
        if not side:
            raise InputError("patterns need a pixel task")
        n = len(x)
        grid = _levels(x).reshape(n, side, side)
        windows = np.lib.stride_tricks.sliding_window_view(grid, (k, k), axis=(1, 2)).reshape(n, -1, k * k)
        return _hashed(windows, 3, n)

    bag.__doc__ = f"bag of {k} x {k} pixel patterns"
    return bag


def ngrams(order: int) -> Callable:
    """Bag of the token n-grams of ``order`` (padding excluded), hashed into 2^18 bins."""

    def bag(x: np.ndarray, side: int | None, vocab: int):
        n = len(x)
        windows = np.lib.stride_tricks.sliding_window_view(x, order, axis=1)
        codes = _codes(windows, vocab)
        real = (windows > 0).all(-1) if vocab else np.ones(codes.shape, dtype=bool)
        rows = np.repeat(np.arange(n), codes.shape[1])
        return _sparse(rows[real.reshape(-1)], (codes % HASH_BINS).reshape(-1)[real.reshape(-1)], n, HASH_BINS)

    return bag


def _codes(windows: np.ndarray, base: int) -> np.ndarray:
    """Each window (last axis) as one integer code in ``base``, folded by a large odd multiplier."""
    code = np.zeros(windows.shape[:-1], dtype=np.uint64)
    for j in range(windows.shape[-1]):
        code = code * np.uint64(base) + windows[..., j].astype(np.uint64)
    return (code * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(20)


def _hashed(windows: np.ndarray, base: int, n: int):
    width = base ** windows.shape[-1]
    if width <= HASH_BINS:
        cols = np.zeros(windows.shape[:-1], dtype=np.int64)
        for j in range(windows.shape[-1]):
            cols = cols * base + windows[..., j]
    else:
        width, cols = HASH_BINS, (_codes(windows, base) % np.uint64(HASH_BINS)).astype(np.int64)
    rows = np.repeat(np.arange(n), windows.shape[1])
    return _sparse(rows, cols.reshape(-1), n, width)


PATTERN_SIDE = 5
"""The largest pattern of the pixel ceiling: a smaller image has no such window."""
NGRAM_ORDER = 3
"""The longest n-gram of the token ceiling."""
PIXEL_BASELINES = (
    Baseline("histogram", "floor", "16-bin intensity histogram", histogram),
    Baseline("per_position", "floor", "per-pixel linear", per_position),
    Baseline("ink", "floor", "ink count (pixels > 0)", ink),
    Baseline("patterns3", "ceiling", "bag of 3x3 patterns", patterns(3)),
    Baseline("patterns5", "ceiling", "bag of 5x5 patterns (hashed)", patterns(PATTERN_SIDE)),
)
TOKEN_BASELINES = (
    Baseline("histogram", "floor", "token histogram", histogram),
    Baseline("per_position", "floor", "per-position one-hot linear", per_position),
    Baseline("ink", "floor", "length (real tokens)", ink),
    Baseline("ngrams2", "ceiling", "bag of token bigrams (hashed)", ngrams(2)),
    Baseline("ngrams3", "ceiling", "bag of token trigrams (hashed)", ngrams(NGRAM_ORDER)),
)


# ----------------------------------------------------------------------------------- fits
def _flat(x) -> np.ndarray:
    """(N, L) inputs as numpy; a pair task's (N, 2, L) as its two documents side by side."""
    x = x.cpu().numpy() if hasattr(x, "cpu") else np.asarray(x)
    return x.reshape(len(x), -1)


def fit(features: Callable, data, side: int | None, vocab: int) -> dict:
    """Fit one baseline: the C of :data:`C_GRID` best on validation, read on test (module doc)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import MaxAbsScaler

    xs = [features(_flat(x), side, vocab) for x in (data.x_train, data.x_val, data.x_test)]
    scaler = MaxAbsScaler().fit(xs[0])
    x_train, x_val, x_test = (scaler.transform(x) for x in xs)
    y_train, y_val, y_test = (y.cpu().numpy() for y in (data.y_train, data.y_val, data.y_test))
    best = None
    for c in C_GRID:
        model = LogisticRegression(C=c, max_iter=2000, tol=1e-4)
        model.fit(x_train, y_train)
        val = float((model.predict(x_val) == y_val).mean())
        if best is None or val > best[0]:
            best = (val, c, model)
    assert best is not None  # C_GRID is not empty
    val, c, model = best
    correct = int((model.predict(x_test) == y_test).sum())
    low, high = wilson(correct, len(y_test))
    return {"test_accuracy": 100.0 * correct / len(y_test), "low": 100.0 * low, "high": 100.0 * high,
            "val_accuracy": 100.0 * val, "C": c, "features": int(x_train.shape[1])}


def check_classes(data) -> None:
    """InputError in one line unless each split of ``data`` holds at least two classes, naming the
    first split that does not and every split's class counts (``train 0: 180, 1: 0``)."""
    counts = {split: np.bincount(np.asarray(y.cpu().numpy() if hasattr(y, "cpu") else y).reshape(-1).astype(np.int64))
              for split, y in (("train", data.y_train), ("val", data.y_val), ("test", data.y_test))}
    for split, count in counts.items():
        if np.count_nonzero(count) < 2:
            said = "; ".join(f"{name} " + (", ".join(f"{k}: {n}" for k, n in enumerate(c) if n) or "no examples")
                             for name, c in counts.items())
            raise InputError(f"{split} split: {'no class' if not count.sum() else 'one class'} (class counts "
                             f"{said}); the audit needs at least two classes in every split: nothing was fitted")


def audit(data, progress: Callable[[str], None] | None = None) -> dict:
    """Every baseline of the task's kind on ``data`` (an :class:`~spt_theory.lra.data.LRAData`);
    the floor, the one-hop ceiling and chance (the majority class of test).  InputError, before
    any fit, unless every split holds two classes or more (:func:`check_classes`)."""
    check_classes(data)
    pixel = data.vocab.pad_id is None
    width = _flat(data.x_train).shape[1]
    side = math.isqrt(width) if pixel else None
    if side is not None and side * side != width:
        raise InputError(f"a pixel task of {width} positions is not a square image")
    if side is not None and side < PATTERN_SIDE:
        raise InputError(f"a pixel task of {side} x {side} images is smaller than the {PATTERN_SIDE} x {PATTERN_SIDE} "
                         "patterns of the one-hop ceiling: nothing to audit")
    if side is None and width < NGRAM_ORDER:
        raise InputError(f"a token task of {width} positions is shorter than the {NGRAM_ORDER}-grams of the one-hop "
                         "ceiling: nothing to audit")
    rows = []
    for baseline in PIXEL_BASELINES if pixel else TOKEN_BASELINES:
        if progress:
            progress(baseline.name)
        rows.append({"name": baseline.name, "role": baseline.role, "what": baseline.what,
                     **fit(baseline.features, data, side, data.vocab.size)})
    counts = np.bincount(data.y_test.cpu().numpy())
    chance = 100.0 * counts.max() / counts.sum()
    floor = max((r for r in rows if r["role"] == "floor"), key=lambda r: r["test_accuracy"])
    ceiling = max((r for r in rows if r["role"] == "ceiling"), key=lambda r: r["test_accuracy"])
    return {"baselines": rows, "chance": chance, "floor": floor["name"], "ceiling": ceiling["name"],
            "floor_accuracy": floor["test_accuracy"], "ceiling_accuracy": ceiling["test_accuracy"],
            "window": ceiling["test_accuracy"] - floor["test_accuracy"]}


def format_audit(report: dict) -> str:
    """The audit as a table: one row per baseline, then the floor, ceiling and window."""
    lines = [f"{'baseline':<14}{'role':<9}{'test %':>8}  {'95% interval':<16}{'val %':>7}  what",
             *(f"{r['name']:<14}{r['role']:<9}{r['test_accuracy']:>8.1f}  [{r['low']:5.1f}, {r['high']:5.1f}]  "
               f"{r['val_accuracy']:>7.1f}  {r['what']}" for r in report["baselines"]),
             f"chance (majority of test) {report['chance']:.1f}%; floor {report['floor_accuracy']:.1f}% "
             f"({report['floor']}), one-hop ceiling {report['ceiling_accuracy']:.1f}% ({report['ceiling']}); "
             f"window {report['window']:.1f} points"]
    return "\n".join(lines)


# ----------------------------------------------------------------------------------- progress
class Heartbeat:
    """``say(step)`` prints ``audit: <step> ...`` on stderr (``say(step, aloud=False)`` only notes
    it); inside ``with``, a step that goes on for ``every`` seconds (default :data:`HEARTBEAT`)
    without another line is said with its time (``audit: still fitting ngrams3 (60 s)``), so the
    command is never silent a minute."""

    def __init__(self, every: float | None = None) -> None:
        self.every = HEARTBEAT if every is None else every
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._step, self._since = "starting", time.monotonic()
        self._said = self._since
        self._thread = threading.Thread(target=self._beat, name="audit-heartbeat", daemon=True)

    def __call__(self, step: str, aloud: bool = True) -> None:
        with self._lock:
            self._step, self._since = step, time.monotonic()
            self._said = self._since
            if aloud:
                print(f"audit: {step} ...", file=sys.stderr, flush=True)

    def _beat(self) -> None:
        while not self._stop.wait(min(self.every, 1.0) / 2):
            with self._lock:
                now = time.monotonic()
                if now - self._said >= self.every:
                    self._said = now
                    print(f"audit: still {self._step} ({now - self._since:.0f} s)", file=sys.stderr, flush=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# ----------------------------------------------------------------------------------- command line
def add_parser(commands) -> None:
    """``audit DATA_DIR`` under the ``lra`` command line."""
    import argparse
    from pathlib import Path

    p = commands.add_parser("audit", help="shortcut audit: fixed-feature floor and one-hop ceiling of a task's data",
                            description=__doc__.split("\n", 2)[2].strip(),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data_dir", type=Path, metavar="DATA_DIR", help="root of the LRA data (release layout)")
    p.add_argument("--task", default="pathfinder", help="the task whose data are audited (default pathfinder)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="FIELD=VALUE",
                   help="a task config field that locates or shapes the data (repeatable), e.g. resolution=16, "
                        "contour_length=3, max_length=2000")
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the report as JSON (schema AuditReport)")


def execute(args) -> dict:
    """Load the data, audit it, print the table and write ``--json`` (checked before any work)."""
    import argparse

    from spt_theory.core import args as cli_args
    from spt_theory.evidence import lra_schema, schema
    from spt_theory.lra.data import data_source, load_task_data
    from spt_theory.lra.runner import apply_overrides, versions
    from spt_theory.lra.tasks import config_for, task_names
    from spt_theory.util.files import prepare_output, write_json

    if args.task not in task_names():
        raise InputError(f"--task {args.task}: not a task ({', '.join(task_names())})")
    overrides: list[tuple[str, str]] = []
    for text in args.overrides:
        try:
            overrides.append(cli_args.assignment(text))
        except argparse.ArgumentTypeError:
            raise InputError(f"--set {text}: expected FIELD=VALUE") from None
    config = apply_overrides(config_for(args.task), tuple(overrides))
    cli_args.refuse_evidence_outputs(args)
    with Heartbeat() as say:
        say(f"loading {args.task} from {args.data_dir}", aloud=False)  # bad data: their one line alone
        data = load_task_data(config, args.data_dir)  # bad data stop here, before anything is made
        check_classes(data)
        if args.json is not None:
            prepare_output(args.json)
        report = audit(data, progress=lambda name: say(f"fitting {name}"))
    report = {"schema_version": schema.SCHEMA_VERSION, "model_defaults": schema.model_defaults(), "task": args.task,
              "settings": dict(overrides), "data": {"fingerprint": data.fingerprint(), "width": data.width,
                                                   "n_train": len(data.y_train), "n_val": len(data.y_val),
                                                   "n_test": len(data.y_test)},
              "data_source": data_source(config, args.data_dir), "level": LEVEL, "c_grid": list(C_GRID),
              **report, "versions": versions()}
    report["data_source"] = _relative(report["data_source"])
    schema.parse(json.dumps(report), lra_schema.AuditReport, "audit report")
    print(format_audit(report))
    if args.json is not None:
        from spt_theory.util.files import announce

        announce(write_json(args.json, report))
    return report


def _relative(source: dict) -> dict:
    return {k: v for k, v in source.items() if k != "path"}
