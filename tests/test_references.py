"""Every file the code and the docs name is in the repository (issue 58): a path such as
``tests/lra/test_gpu_twin.py``, ``docs/gpu.md``, ``spt_theory/lra/tasks.py`` or ``scripts/x.sh``
(relative to the repository root, or to the naming file's folder), a test named as
``FILE::test_name`` (or ``::test_name`` after it on the same line), a Markdown link of a docs page,
and a bare ``NAME.md``.  Scanned: ``spt_theory/``, ``synthetic/``, ``scripts/`` and ``docs/``.  A
reference that is meant to name no file of the repository is listed in :data:`EXCEPTIONS` with
its reason; an entry no longer needed fails too, so the list only shrinks."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from helpers import REPO

SCANNED = ("spt_theory", "synthetic", "scripts", "docs")
SUFFIXES = (".py", ".md", ".sh", ".toml", ".txt", ".yaml", ".cfg")
SKIPPED = {"__pycache__", "history-evidence"}  # history-evidence/: data kept as it was (JSON)

TOP = r"(?:tests|docs|spt_theory|scripts|synthetic|proofs|figures)"
PATH = re.compile(r"(?<![\w./-])((?:\.\./)*" + TOP + r"/[\w./-]*[\w/])(?:::(\w+))?")
"""A path under one of the repository's folders, with an optional ``::name``."""
MORE = re.compile(r"(?<![\w/.])::(\w+)")
"""``::name``: a further test of the file named last on the same line."""
BARE_MD = re.compile(r"(?<![\w./-])([\w-]+\.md)\b")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)\s]*)?\)")
"""The target of a Markdown link, anchor dropped."""
EXTERNAL = re.compile(r"(?<![\w./-])(\.\./shared/[\w./-]*\w)")

EXCEPTIONS: dict[tuple[str, str], str] = {
    ("docs/architecture.md", "tests/synthetic/"): "names the folder that must not exist, and why",
    ("docs/add-a-claim.md", "proofs/T99_toy_lemma.md"): "the guide's example: the file the reader writes",
    ("docs/add-a-task.md", "spt_theory/lra/readers/parity.py"): "the guide's example: the file the reader writes",
    ("docs/add-an-experiment.md", "docs/preregistration/toy-experiment.md"): "the guide's example: its document",
    ("docs/add-an-experiment.md", "spt_theory/evidence/lra/decide/toy.json"): "the guide's example: a promote's file",
    ("docs/history.md", "figures/plateau/"): "history: a folder as it was before the layout refactor",
    ("docs/history.md", "figures/bench/"): "history: a folder as it was before the layout refactor",
    ("docs/results-plateau.md", "spt_theory/plateau.py"): "history: the module's path for git log --follow",
    ("docs/gpu.md", "spt_theory/evidence/lra/gpu/"): "made by `lra gpu promote`; no GPU has run the twin yet",
    ("docs/preregistration/2026-12-04-gpu-twin.md", "spt_theory/evidence/lra/gpu/"):
        "made by `lra gpu promote`; a registration, hashed (records.DOCUMENTS): never edited",
    ("docs/preregistration/2026-12-05-gpu-pooling-factorial.md", "spt_theory/evidence/lra/gpu/factorial.json"):
        "made by `lra gpu promote`; a registration, hashed (records.DOCUMENTS): never edited",
    ("docs/gpu.md", "spt_theory/evidence/lra/gpu/factorial.json"): "made by `lra gpu promote`; no GPU has run it yet",
    ("docs/gpu.md", "../shared/GPU.md"): "the lent GPU machine's notes, outside the repository",
    ("spt_theory/lra/gpu/preflight.py", "../shared/GPU.md"): "the lent GPU machine's notes, outside the repository",
    ("docs/history.md", "spt_theory/evidence/lra/earlier/"): "history: moved away; 5a6f87a holds it there",
    ("docs/history.md", "spt_theory/lra/gpu/confirm.py"): "history: deleted; 5a6f87a holds it",
    ("docs/history.md", "tests/lra/test_gpu_confirm.py"): "history: deleted; 5a6f87a holds it",
    # Owned by other work in progress (issue 58); remove each entry when its file is fixed:
    ("spt_theory/lra/audit.py", "DESIGN.md"):
        "not in the repository: its floor / ceiling section is docs/results-lra.md, 'Where one layer can learn'",
}


def _scanned() -> list[Path]:
    found = []
    for part in SCANNED:
        for top, folders, names in os.walk(REPO / part):
            folders[:] = sorted(f for f in folders if f not in SKIPPED and not f.startswith("."))
            found += [Path(top) / n for n in sorted(names) if n.endswith(SUFFIXES)]
    return found


def _markdown_names() -> set[str]:
    names = set()
    for _top, folders, files in os.walk(REPO):
        folders[:] = [f for f in folders if not f.startswith(".") and f not in {"runs", "__pycache__", "build"}]
        names |= {n for n in files if n.endswith(".md")}
    return names


def _placeholder(path: str) -> bool:
    """``figures/NAME.png``: a name in capitals stands for any file."""
    return any(Path(part).stem.isupper() for part in path.split("/"))


def _exists(path: str, where: Path) -> bool:
    return (REPO / path).exists() or (where / path).exists()


def _defines(file: Path, name: str) -> bool:
    definition = rf"^\s*(?:async\s+)?(?:def|class)\s+{name}\b"
    return file.suffix != ".py" or re.search(definition, file.read_text(), re.M) is not None


def _missing(file: Path, md_names: set[str]) -> set[str]:
    """Every reference of ``file`` to a file that is not in the repository."""
    missing: set[str] = set()
    where = file.parent
    for line in file.read_text().splitlines():
        for m in EXTERNAL.finditer(line):
            missing.add(m.group(1))  # outside the repository: only as an exception
        last: Path | None = None
        for m in sorted([*PATH.finditer(line), *MORE.finditer(line)], key=lambda m: m.start()):
            if m.re is MORE:
                if last is not None and not _defines(last, m.group(1)):
                    missing.add(f"{last.relative_to(REPO).as_posix()}::{m.group(1)}")
                continue
            path, test = m.group(1), m.group(2)
            last = None
            if not (re.search(r"\.\w+$", path) or path.endswith("/")) or _placeholder(path):
                continue
            if not _exists(path, where):
                missing.add(path)
                continue
            last = REPO / path if (REPO / path).exists() else where / path
            if test and not _defines(last, test):
                missing.add(f"{path}::{test}")
        for m in BARE_MD.finditer(line):
            if m.group(1) not in md_names:
                missing.add(m.group(1))
        if file.suffix == ".md":
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r"[a-z]+:", target) or _placeholder(target):
                    continue
                if not (where / target).exists():
                    missing.add(target)
    return missing


@pytest.mark.skipif(not (REPO / "pyproject.toml").exists(), reason="needs the source tree")
def test_every_file_named_is_in_the_repository():
    md_names, files = _markdown_names(), _scanned()
    assert len(files) > 150 and "docs/architecture.md" in {f.relative_to(REPO).as_posix() for f in files}
    found = {(file.relative_to(REPO).as_posix(), ref) for file in files for ref in _missing(file, md_names)}
    unexplained = sorted(found - set(EXCEPTIONS))
    assert not unexplained, "files named that are not in the repository (fix, or add to EXCEPTIONS with a reason): " \
        + "; ".join(f"{f}: {r}" for f, r in unexplained)
    stale = sorted(set(EXCEPTIONS) - found)
    assert not stale, f"EXCEPTIONS no longer needed (remove them): {stale}"


def test_the_scan_finds_a_missing_file_a_missing_test_and_a_bad_link(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("See `tests/lra/test_gpu_twin.py::test_no_such_test`, `tests/nowhere/test_x.py`,\n"
                    "[a page](missing.md) and DESIGN.md; `spt_theory/figures/NAME.py` is a pattern;\n"
                    "`tests/lra/test_gpu_twin.py::test_nothing_is_written_through_a_link`, `::test_nor_this`.\n")
    assert _missing(page, {"README.md"}) == {
        "tests/lra/test_gpu_twin.py::test_no_such_test", "tests/nowhere/test_x.py", "missing.md", "DESIGN.md",
        "tests/lra/test_gpu_twin.py::test_nor_this"}
