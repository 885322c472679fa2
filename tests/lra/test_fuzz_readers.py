"""Fuzzed readers: every release format, and the committed LRA evidence verify reads (issue 28).

Each reader is fed files drawn by hypothesis from a good one: random bytes, truncations, flipped
and inserted bytes, other text encodings, huge lines, empty files, wrong column counts, and for the
structured formats wrong fields (CIFAR pickles of odd values, PNGs of other sizes and modes or with
a patched header, JSON trees with fields removed or retyped, IMDb folders holding folders and
broken links).  Every case must end in a clean parse or one :class:`InputError` line naming a file
of the data (its line where it has one): no other exception, no warning, no hang
(:data:`HANG_S`), no file written.

``SPT_FUZZ_EXAMPLES`` sets the cases per reader (default 60); ``pytest -s`` prints the cases tried
and how many parsed or were refused, per reader.
"""

from __future__ import annotations

import collections
import contextlib
import io
import json
import os
import pickle
import shutil
import signal
import struct
import tempfile
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest
from helpers import REPO
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from PIL import Image

from spt_theory.checks import lra as lra_checks
from spt_theory.claims.registry import Context
from spt_theory.figures.context import FigureContext
from spt_theory.figures.lra_evidence import lra_evidence
from spt_theory.lra.readers.image import read_image
from spt_theory.lra.readers.listops import read_listops
from spt_theory.lra.readers.pathfinder import read_pathfinder, read_png
from spt_theory.lra.readers.retrieval import read_retrieval
from spt_theory.lra.readers.text import read_text
from spt_theory.util.files import InputError

FUZZ_EXAMPLES = int(os.environ.get("SPT_FUZZ_EXAMPLES", "60"))
HANG_S = 20.0
"""A case taking longer than this counts as a hang."""
fuzz = settings(max_examples=FUZZ_EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large, HealthCheck.large_base_example])
CASES: collections.Counter = collections.Counter()
"""(reader, outcome) -> cases."""


@pytest.fixture(scope="module", autouse=True)
def case_counts():
    yield
    for reader in sorted({reader for reader, _ in CASES}):
        print(f"fuzz {reader}: {CASES[reader, 'parsed'] + CASES[reader, 'refused']} cases, "
              f"{CASES[reader, 'parsed']} parsed, {CASES[reader, 'refused']} refused")


class _Hang(BaseException):
    """A case ran past HANG_S (a BaseException: no reader's ``except Exception`` swallows it)."""


@contextlib.contextmanager
def _time_limit(seconds: float):
    def expire(signum, frame):
        raise _Hang(f"no result after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in folder.rglob("*")}


def _outcome(reader: str, folder: Path, call) -> None:
    """``call()`` on the fuzzed data under ``folder``: it parses, or its InputError is one line
    naming a file there; it warns of nothing, writes nothing and ends within HANG_S."""
    before = _snapshot(folder)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning would be a second line on stderr
        try:
            with _time_limit(HANG_S):
                call()
            CASES[reader, "parsed"] += 1
        except InputError as error:
            message = str(error)
            assert message.splitlines() == [message] and str(folder) in message, message
            CASES[reader, "refused"] += 1
    assert _snapshot(folder) == before


@contextlib.contextmanager
def _case_folder(tmp_path: Path):
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def _write(path: Path, content: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


# ------------------------------------------------------------------------------- byte mutations

ENCODINGS = ("utf-16", "utf-32", "latin-1", "cp500", "utf-8-sig")


def _flip(good: bytes, changes) -> bytes:
    data = bytearray(good)
    for position, value in changes:
        data[position % len(data)] = value
    return bytes(data)


def _huge_line(good: bytes, at: int, chunk: bytes, repeats: int) -> bytes:
    lines = good.split(b"\n")
    lines.insert(at % (len(lines) + 1), chunk * repeats)
    return b"\n".join(lines)


def _columns(good: bytes, sep: bytes, at: int, change: int) -> bytes:
    lines = good.split(b"\n")
    fields = lines[at % len(lines)].split(sep)
    fields = fields + [b"x"] * change if change > 0 else fields[:max(1, len(fields) + change)]
    lines[at % len(lines)] = sep.join(fields)
    return b"\n".join(lines)


def mutations(good: bytes, sep: bytes | None = None) -> st.SearchStrategy[bytes]:
    """Files drawn from ``good``: empty, random, truncated, flipped, with bytes inserted; for text
    (``sep`` its field separator) also re-encoded, with a huge line, with a line's fields added or cut."""
    n = len(good)
    kinds = [st.just(b""), st.binary(max_size=4096), st.integers(0, n).map(lambda k: good[:k]),
             st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 255)), min_size=1, max_size=16)
             .map(lambda changes: _flip(good, changes)),
             st.tuples(st.integers(0, n), st.binary(min_size=1, max_size=256))
             .map(lambda t: good[:t[0]] + t[1] + good[t[0]:])]
    if sep is not None:
        kinds += [st.sampled_from(ENCODINGS).map(lambda encoding: good.decode("utf-8").encode(encoding)),
                  st.builds(_huge_line, st.just(good), st.integers(0, 100), st.binary(min_size=1, max_size=8),
                            st.integers(10**4, 10**6)),
                  st.builds(_columns, st.just(good), st.just(sep), st.integers(0, 100), st.integers(-4, 4))]
    return st.one_of(kinds)


# --------------------------------------------------------------------------------- TSV readers

LISTOPS_GOOD = ("Source\tTarget\r\n" + "".join(
    f"( ( ( [MAX {i % 10} ) ( ( ( [SM 4 ) {i % 7} ) ] ) ) ] )\t{max(i % 10, (4 + i % 7) % 10)}\r\n"
    for i in range(8))).encode()
AAN_GOOD = "".join(f"{i % 2}\tpaper{i}\tpaper{i + 1}\tabstract {i} of a paper\tcitations of {i} é\n"
                   for i in range(6)).encode()


TSV_FORMATS = {"ListOps TSV": ("listops-1000/basic_train.tsv", LISTOPS_GOOD, read_listops),
               "AAN TSV": ("new_aan_pairs.train.tsv", AAN_GOOD, read_retrieval)}


@pytest.mark.parametrize("reader", list(TSV_FORMATS))
def test_tsv(reader, tmp_path):
    name, good, read = TSV_FORMATS[reader]

    @fuzz
    @given(content=mutations(good, b"\t"))
    def case(content):
        with _case_folder(tmp_path) as root:
            _write(root / name, content)
            _outcome(reader, root, lambda: read(root, "train"))

    case()


# -------------------------------------------------------------------------------- Pathfinder

def _png(pixels: np.ndarray, mode: str | None = None) -> bytes:
    buffer = io.BytesIO()
    image = Image.fromarray(pixels)
    (image.convert(mode) if mode else image).save(buffer, format="PNG")
    return buffer.getvalue()


PNG_GOOD = _png(np.arange(1024, dtype=np.uint16).reshape(32, 32).astype(np.uint8))
METADATA_GOOD = "".join(f"imgs/0 sample_{i}.png {i} {i % 2} 14\n" for i in range(10)).encode()
HOSTILE_PATHS = ("/etc/passwd", "imgs/0/../../../x", "..", "imgs/0\x00", "imgs//0", "./imgs/0", "imgs/0/",
                 "imgs/0/sample_1.png", "~", "$HOME", "imgs/\u00e9", "imgs/0/" + "a" * 300)


@pytest.fixture(scope="module")
def pathfinder_images(tmp_path_factory) -> Path:
    """``imgs/0/sample_<i>.png`` for i < 10, hard-linked into each case's data folder."""
    base = tmp_path_factory.mktemp("pathfinder") / "imgs/0"
    for i in range(10):
        _write(base / f"sample_{i}.png", PNG_GOOD)
    return base.parent


def _hostile_line(good: bytes, at: int, field: int, path: str) -> bytes:
    lines = good.split(b"\n")
    fields = lines[at % 10].split(b" ")
    fields[field] = path.encode("utf-8", "surrogateescape")
    lines[at % 10] = b" ".join(fields)
    return b"\n".join(lines)


@fuzz
@given(content=st.one_of(mutations(METADATA_GOOD, b" "),
                         st.builds(_hostile_line, st.just(METADATA_GOOD), st.integers(0, 9), st.integers(0, 1),
                                   st.sampled_from(HOSTILE_PATHS) | st.text(max_size=40))))
def test_pathfinder_metadata(content, tmp_path, pathfinder_images):
    with _case_folder(tmp_path) as data:
        root = data / "pathfinder32/curv_contour_length_14"
        shutil.copytree(pathfinder_images, root / "imgs", copy_function=os.link)
        _write(root / "metadata/0.npy", content)
        for split in ("train", "val", "test"):
            _outcome("Pathfinder metadata", data, lambda split=split: read_pathfinder(data, split))


def _png_header(width: int, height: int) -> bytes:
    """PNG_GOOD claiming ``width`` x ``height`` (its IHDR's CRC recomputed, so only the size is wrong)."""
    ihdr = b"IHDR" + struct.pack(">II", width, height) + PNG_GOOD[24:29]
    return PNG_GOOD[:12] + ihdr + struct.pack(">I", zlib.crc32(ihdr)) + PNG_GOOD[33:]


@st.composite
def other_pngs(draw) -> bytes:
    """Valid PNGs of any size and mode."""
    height, width = draw(st.integers(1, 40)), draw(st.integers(1, 40))
    pixels = np.random.default_rng(draw(st.integers(0, 99))).integers(0, 256, (height, width), dtype=np.uint8)
    return _png(pixels, draw(st.sampled_from(["L", "RGB", "RGBA", "LA", "P", "1", "I;16"])))


@fuzz
@given(content=st.one_of(mutations(PNG_GOOD), other_pngs(),
                         st.builds(_png_header, st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1))))
@example(content=_png_header(9500, 9500))  # found: PIL warned of a decompression bomb, then decoded it
def test_pathfinder_png(content, tmp_path):
    with _case_folder(tmp_path) as folder:
        path = _write(folder / "imgs/0/sample_0.png", content)
        _outcome("Pathfinder PNG", folder, lambda: read_png(path, 32, f"{folder}/metadata/0.npy:1"))


# ------------------------------------------------------------------------------------- CIFAR

def _cifar_pickle(batch, protocol: int = 2) -> bytes:
    return pickle.dumps(batch, protocol=protocol)


CIFAR_GOOD = {protocol: _cifar_pickle({b"batch_label": b"batch 1", b"labels": [3, 1],
                                       b"data": np.arange(2 * 3072, dtype=np.int64).reshape(2, 3072).astype(np.uint8),
                                       b"filenames": [b"a.png", b"b.png"]}, protocol)
              for protocol in (2, 4, 5)}
plain = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4)
                     | st.binary(max_size=4),
                     lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
                     | st.dictionaries(st.text(max_size=3) | st.binary(max_size=3), inner, max_size=3), max_leaves=8)
arrays = st.builds(lambda dtype, shape: np.ones(shape, dtype=dtype),
                   st.sampled_from([np.uint8, np.int8, np.int64, np.uint64, np.float32, np.bool_, np.complex64]),
                   st.sampled_from([(), (0,), (2,), (2, 3072), (2, 3000), (3, 3072), (2, 1, 3072), (0, 3072)]))
fields = st.dictionaries(st.sampled_from([b"data", "data", b"labels", "labels", b"batch_label", b"other"]),
                         plain | arrays, max_size=4)


@pytest.fixture(scope="module")
def cifar_batches(tmp_path_factory) -> Path:
    """A good ``cifar-10-batches-py`` of two images a batch, hard-linked into each case's folder."""
    folder = tmp_path_factory.mktemp("cifar") / "cifar-10-batches-py"
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        _write(folder / name, CIFAR_GOOD[2])
    return folder


@fuzz
@given(content=st.one_of(st.sampled_from(sorted(CIFAR_GOOD)).flatmap(lambda p: mutations(CIFAR_GOOD[p])),
                         st.builds(_cifar_pickle, fields | plain, st.sampled_from([2, 4, 5]))))
@example(content=_cifar_pickle({b"data": np.ones((2, 3072), np.uint8), b"labels": np.ones((), np.uint8)}))  # found
def test_cifar_batch(content, tmp_path, cifar_batches):
    with _case_folder(tmp_path) as root:
        shutil.copytree(cifar_batches, root / "cifar-10-batches-py", copy_function=os.link)
        (root / "cifar-10-batches-py/data_batch_3").unlink()
        _write(root / "cifar-10-batches-py/data_batch_3", content)
        _outcome("CIFAR batch", root, lambda: read_image(root, "train"))


# ------------------------------------------------------------------------------------ IMDb

REVIEW_GOOD = "A film of long takes; the café scene is the best part.\n<br />Recommended.".encode()
names = st.text(st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)), min_size=1, max_size=12)
entries = st.lists(st.tuples(st.sampled_from(["neg", "pos"]), names, st.sampled_from([".txt", ".txt", ""]),
                             st.sampled_from(["file", "file", "file", "folder", "broken_link", "link_inside"]),
                             mutations(REVIEW_GOOD, b" ")), max_size=6)


@fuzz
@given(entries=entries, folders=st.sampled_from([("neg", "pos"), ("neg", "pos"), ("neg",), ()]))
@example(entries=[("pos", "1_9", ".txt", "folder", b"")], folders=("neg", "pos"))  # found: IsADirectoryError
def test_imdb_folder(entries, folders, tmp_path):
    with _case_folder(tmp_path) as root:
        split = root / "aclImdb/train"
        for polarity in folders:
            _write(split / polarity / "0_7.txt", REVIEW_GOOD)
        for polarity, name, suffix, kind, content in entries:
            path = split / polarity / (name + suffix)
            if os.path.lexists(path) or not path.parent.exists():
                continue
            if kind == "file":
                path.write_bytes(content)
            elif kind == "folder":
                path.mkdir()
            elif kind == "broken_link":
                path.symlink_to(split / "nowhere.txt")
            else:
                path.symlink_to(split / polarity / "0_7.txt")
        _outcome("IMDb folder", root, lambda: read_text(root, "train"))


# --------------------------------------------------------------------------- LRA evidence JSON

EVIDENCE = {task: (REPO / f"spt_theory/evidence/lra/{task}.json").read_bytes() for task in lra_checks.TASKS}
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                                        max_size=3), max_leaves=5)


def _children(node) -> list:
    return list(node) if isinstance(node, dict) else list(range(len(node))) if isinstance(node, list) else []


@st.composite
def edited_evidence(draw) -> bytes:
    """The committed evidence with one field somewhere in its tree removed or given another value."""
    tree = json.loads(EVIDENCE["listops"])
    parent, key = None, None
    node = tree
    while _children(node) and (parent is None or draw(st.integers(0, 9)) < 8):
        parent, key = node, draw(st.sampled_from(_children(node)))
        node = parent[key]
    if parent is not None and draw(st.booleans()):
        del parent[key]
    elif parent is not None:
        parent[key] = draw(json_values)
    return json.dumps(tree).encode()


def _run_every_l_claim(ctx: Context) -> None:
    for check in (lra_checks.check_l1, lra_checks.check_l2, lra_checks.check_l3, lra_checks.check_l4):
        check(ctx)


def _evidence_with(edit) -> bytes:
    tree = json.loads(EVIDENCE["listops"])
    edit(tree)
    return json.dumps(tree).encode()


@fuzz
@given(content=st.one_of(mutations(EVIDENCE["listops"], b" "), edited_evidence()))
@example(content=_evidence_with(lambda t: t["cells"][0].__setitem__("band_ratio", {})))  # KeyError 2026-12-06
def test_lra_evidence_json(content, tmp_path):
    with _case_folder(tmp_path) as folder:
        _write(folder / "listops.json", content)
        _write(folder / "pathfinder.json", EVIDENCE["pathfinder"])
        _outcome("LRA evidence JSON", folder, lambda: _run_every_l_claim(Context(lra_evidence=folder)))


@pytest.mark.slow
@fuzz
@given(content=st.one_of(mutations(EVIDENCE["listops"], b" "), edited_evidence()))
@example(content=_evidence_with(lambda t: t["cells"][0]["runs"][0]["proximity"][0].pop("band_ratio")))  # KeyError
@example(content=_evidence_with(lambda t: t["seeds"].__setitem__(0, {"\u0be6": None})))  # a glyph the font lacks
@example(content=_evidence_with(lambda t: t.__setitem__("model_defaults", None)))  # TypeError 2026-12-06
def test_lra_evidence_figure_json(content, tmp_path):
    """The figure that redraws the same files: draws them, or refuses in one line naming the file
    and writes nothing (no output folder)."""
    with _case_folder(tmp_path) as folder:
        _write(folder / "listops.json", content)
        _write(folder / "pathfinder.json", EVIDENCE["pathfinder"])
        out = Path(tempfile.mkdtemp(dir=tmp_path)) / "out"
        ctx = FigureContext(out=out, lra_evidence=folder, progress=False)
        refused = []

        def draw():
            try:
                lra_evidence(ctx)
            except InputError:
                refused.append(True)
                raise

        with contextlib.redirect_stdout(io.StringIO()):
            _outcome("LRA evidence figure", folder, draw)
        assert not (refused and out.exists())


def test_verify_gives_a_malformed_evidence_file_one_error_line_per_claim(tmp_path, capsys):
    """No evidence, no verdict: each claim that reads the file is an ERROR row naming it (exit 1)."""
    from spt_theory import verify as verify_cli

    (tmp_path / "listops.json").write_bytes(EVIDENCE["listops"][:200])
    (tmp_path / "pathfinder.json").write_bytes(EVIDENCE["pathfinder"])
    report = tmp_path / "report.json"
    assert verify_cli.main(["--only", "L1", "L2", "L3", "L4", "--lra-evidence", str(tmp_path), "--json", str(report),
                            "--no-progress"]) == 1
    captured = capsys.readouterr()
    errors = [line.strip() for line in captured.out.splitlines() if line.strip().startswith("ERROR: ")]
    malformed = [e for e in errors if f"{tmp_path / 'listops.json'}: not JSON (line" in e]
    assert len(malformed) == 4, errors  # L1-L4; the decided claims (--only by prefix) find no evidence in DIR:
    assert all("missing" in e for e in errors if e not in malformed), errors  # an ERROR each, never "no run yet"
    assert "Traceback" not in captured.out + captured.err
    rows = [r for r in json.loads(report.read_text())["claims"] if r["id"] in ("L1", "L2", "L3", "L4")]
    assert [r["verdict"] for r in rows] == ["ERROR"] * 4  # --only selects by prefix: L1b, L3b, L4b also ran
