"""What one row of the table of claims (:data:`spt_theory.claims.records.TABLE`) holds: the claim
(:class:`Row`), when its threshold was written (:class:`Registration`) and the verdict on record
for a claim under test (:class:`Record`), in the record's words (:data:`RECORD_OF_VERDICT`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

RECORD_OF_VERDICT = {"PASS": "holds", "FAIL": "does not hold", "INCONCLUSIVE": "inconclusive"}
"""The words of a record for each verdict a check can give."""
VERDICT_OF_RECORD = {words: verdict for verdict, words in RECORD_OF_VERDICT.items()}
"""The verdict a check gives for each word of a record."""
ROW_COMMIT = "commit adding this row"
"""A registration's commit that is the commit which first adds the row to the table: what a threshold
written with its row names, since that commit's hash does not exist while the row is written.  Read
from git by :func:`spt_theory.claims.history.row_commits` (docs/add-a-claim.md)."""
SOURCES = ("paper", "hypothesis", "gate")
"""Whose statement a recorded claim is: the paper's, this project's prediction, or a capacity gate
(whether a setting can show the mechanism at all; counted apart from the paper's claims)."""


@dataclass(frozen=True)
class Record:
    """The verdict on record for a claim under test: ``verdict`` one of :data:`RECORD_OF_VERDICT`'s
    values, the ``date`` it was measured, the ``evidence`` (runs, seeds, the figure), and whose
    statement it is (``source``: ``paper``, ``hypothesis`` for a prediction of this project's
    mechanism that the data may refute, or ``gate`` for a capacity gate)."""

    verdict: str
    date: str
    evidence: str
    source: str = "paper"
    ran: bool = True
    """Whether the record rests on committed evidence; False for a registered design not run yet
    (verdict ``inconclusive``), whose evidence may be absent.  Where it is True, absent evidence is
    an ERROR, never a verdict."""

    def __post_init__(self) -> None:
        if self.verdict not in RECORD_OF_VERDICT.values():
            raise ValueError(f"record verdict {self.verdict!r} is not one of {sorted(RECORD_OF_VERDICT.values())}")
        if self.source not in SOURCES:
            raise ValueError(f"record source {self.source!r} is not one of {SOURCES}")
        if not self.ran and self.verdict != "inconclusive":
            raise ValueError("a record of a design not run yet is 'inconclusive'")


@dataclass(frozen=True)
class Registration:
    """When a claim's threshold was written: ``when`` is ``pre`` (before the data it judges) or
    ``post``; ``threshold_commit`` and ``result_commit`` are the commits of the first threshold and
    of the first result (:data:`ROW_COMMIT`: the commit that adds the row; a threshold commit is
    never later than that, :func:`spt_theory.claims.history.later_than_row`); ``original`` the
    first threshold where it was moved since (else None)."""

    when: str
    threshold_commit: str
    result_commit: str
    original: str | None = None
    note: str | None = None
    """What the reader should know of the registration besides when (e.g. a leg known from a pilot)."""
    files: tuple[tuple[str, str], ...] = ()
    """Files registered with the threshold, which can never change after: (path under the evidence
    folder, sha256 of its bytes in ``threshold_commit``); verify gives ERROR when one differs
    (:func:`spt_theory.claims.registry.check_registered_files`)."""

    def __post_init__(self) -> None:
        if self.when not in ("pre", "post"):
            raise ValueError(f"registration {self.when!r} is neither 'pre' nor 'post'")
        for name, digest in self.files:
            if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest) or Path(name).is_absolute():
                raise ValueError(f"registered file {name!r}: a path under the evidence folder and its sha256 "
                                 f"(64 hex digits), got {digest!r}")


@dataclass(frozen=True)
class Row:
    """One claim of the table: its id, statement, threshold (as registered, in words), registration
    and, for a claim under test, its record; its kind is ``project`` (no record), ``paper`` or
    ``hypothesis`` (the record's source)."""

    id: str
    statement: str
    threshold: str
    registration: Registration
    record: Record | None = None

    @property
    def kind(self) -> str:
        return "project" if self.record is None else self.record.source
