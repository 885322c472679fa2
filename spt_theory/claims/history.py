"""Registrations read from git (docs/add-a-claim.md): the commit that first added each row of the
table of claims, what a registration naming :data:`~spt_theory.claims.row.ROW_COMMIT` stands for,
and the rows whose threshold commit comes after their own first commit (a threshold is written
with its row or before it, never after: such a registration is false).  Needs a git checkout
with its history; tests/claims/test_claims_table.py holds the table to it."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

from spt_theory.claims.row import ROW_COMMIT, Row

TABLE_FILE = "spt_theory/claims/records.py"
"""The table of claims, under the repository root (its earlier names are followed); its rows of the
LRA, plateau and GPU families are in :data:`FAMILY_FILES`."""
FAMILY_FILES = ("spt_theory/claims/table_lra.py", "spt_theory/claims/table_plateau.py",
                "spt_theory/claims/table_gpu.py")
"""The modules holding a family's rows (split out of :data:`TABLE_FILE`, where their history begins)."""
_ADDED_ROW = re.compile(r'^\+\s*Row\("([A-Za-z0-9]+)"')


def _git(repo: str | Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)


def _first_adds(repo: str | Path, path: str) -> dict[str, str]:
    """Per row id, the commit that first added ``Row("<id>", ...`` to ``path`` (its earlier names followed)."""
    log = _git(repo, "log", "--format=@@@%h", "--follow", "-p", "-U0", "--", path)
    if log.returncode != 0:
        raise RuntimeError(f"git log of {path} in {repo}: {log.stderr.strip()}")
    first: dict[str, str] = {}
    commit = ""
    for line in log.stdout.splitlines():  # newest first: the last commit seen adding a row is its first
        if line.startswith("@@@"):
            commit = line[3:]
        elif (added := _ADDED_ROW.match(line)) is not None:
            first[added.group(1)] = commit
    return first


def row_commits(repo: str | Path) -> dict[str, str]:
    """Per row id, the commit (abbreviated hash) that first added ``Row("<id>", ...`` to the table
    (:data:`TABLE_FILE` or one of :data:`FAMILY_FILES`, the earliest where a row moved); a row that
    is only in the working tree has none yet.  RuntimeError where git cannot read the history."""
    first = _first_adds(repo, TABLE_FILE)
    moved = [(path, _first_adds(repo, path)) for path in FAMILY_FILES if (Path(repo) / path).exists()]
    if any(adds for _, adds in moved):
        order = _git(repo, "log", "--format=%h", "HEAD")
        if order.returncode != 0:
            raise RuntimeError(f"git log in {repo}: {order.stderr.strip()}")
        age = {commit: rank for rank, commit in enumerate(order.stdout.split())}  # larger: older
        for _, adds in moved:
            for row_id, commit in adds.items():
                if row_id not in first or age.get(commit, -1) > age.get(first[row_id], -1):
                    first[row_id] = commit
    return first


def threshold_commit(row: Row, first: Mapping[str, str]) -> str | None:
    """The commit ``row``'s threshold was registered in: the one it names, or for
    :data:`ROW_COMMIT` the commit that first added it (None while it is not committed)."""
    named = row.registration.threshold_commit
    return first.get(row.id) if named == ROW_COMMIT else named


def later_than_row(rows: Iterable[Row], first: Mapping[str, str], repo: str | Path) -> list[str]:
    """One line for each of ``rows`` whose registration names a threshold commit that is neither
    the commit that first added the row (``first``, :func:`row_commits`) nor one before it."""
    problems = []
    for row in rows:
        named, added = row.registration.threshold_commit, first.get(row.id)
        if named == ROW_COMMIT or added is None:
            continue
        if _git(repo, "merge-base", "--is-ancestor", named, added).returncode != 0:
            problems.append(f"{row.id}: threshold commit {named} is not {added}, the commit that first added the "
                            f"row, nor one before it (write ROW_COMMIT for a threshold committed with its row)")
    return problems
