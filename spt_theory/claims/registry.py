"""The registry of claims that ``python -m spt_theory.verify`` checks.

A claim is a statement of the paper (or of this toolkit's theory) with a check that measures a
figure and compares it with a threshold.  Layers register their claims with :func:`claim`::

    @claim("T1", section="Theory T1", method="autograd float64")
    def check_t1(ctx: Context) -> Measurement:
        err = ...
        return at_most(err, 1e-10)

Claim ids start with a letter naming the family (:data:`FAMILIES`: ``T`` theory, ``E`` walk-task
experiments, ``X`` mechanism controls beyond the paper, ``P`` plateau law, ``L`` LRA evidence, ``G``
the GPU twin).
A claim's statement, threshold, registration and record are its row in the one table of claims,
:data:`spt_theory.claims.records.TABLE`.  Check modules live in
:mod:`spt_theory.checks`; this module imports none of them (it is a plain registry):
:mod:`spt_theory.verify` imports them all.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from spt_theory import evidence
from spt_theory.claims import records


@dataclass(frozen=True)
class Context:
    """What a check may depend on: quick or full mode, the seeds to average over, the run cache,
    the model settings."""

    full: bool = False
    seeds: tuple[int, ...] = (0,)
    cache_dir: Path = Path("runs")
    progress: bool = True
    lra_evidence: Path = field(default_factory=lambda: evidence.path(evidence.LRA))
    """Where the committed LRA sweep summaries lie (claims L1-L4; package data)."""
    evidence_root: Path = field(default_factory=evidence.root)
    """The committed evidence (package data): the race, the plateau grid (claims L5, P*)."""
    model_settings: Mapping[str, Any] = field(default_factory=dict)
    """The model settings asked for (``verify --set``; fields of
    :data:`spt_theory.core.model.MODEL_SETTINGS`).  A check reads them only through
    :meth:`build` (every run or model it makes) or :meth:`settings` (committed evidence held to
    them, :func:`spt_theory.evidence.schema.check_model_settings`); a claim whose model is fixed by
    its method says so (:attr:`Claim.fixed`).  ``verify`` refuses a check that does neither."""
    _applied: list[bool] = field(init=False, default_factory=list, repr=False, compare=False)

    def settings(self) -> Mapping[str, Any]:
        """The model settings asked for, read by a check that applies them (marks it as applied)."""
        self._applied.append(True)
        return self.model_settings

    def build(self, make: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``make(*args, **kwargs, **settings)``: a run spec (or model) made with the settings asked for.

        >>> ctx = Context(model_settings={"d_model": 32})
        >>> ctx.build(dict, name="scratch")
        {'name': 'scratch', 'd_model': 32}
        >>> ctx.applied
        True
        """
        return make(*args, **kwargs, **self.settings())

    @property
    def applied(self) -> bool:
        """Whether the check run with this context read the model settings (:meth:`settings`)."""
        return bool(self._applied)

    def fresh(self) -> Context:
        """The same context for the next check, with nothing applied yet."""
        return replace(self)


@dataclass(frozen=True)
class Measurement:
    """The outcome of one check: the figure measured, the threshold it is held to, pass or fail.

    ``measured`` is a number (or a short string when a claim's figure is not one number);
    ``details`` carries the supporting figures that go into the JSON report.  ``inconclusive``,
    when set, says why the evidence cannot decide the threshold: the verdict is then INCONCLUSIVE
    whatever ``passed`` says.
    """

    measured: float | str
    threshold: str
    passed: bool
    details: dict = field(default_factory=dict)
    inconclusive: str | None = None
    lines: tuple[str, ...] = ()
    """Lines printed under the row (e.g. one verdict per task of an LRA claim)."""

    @property
    def verdict(self) -> str:
        """INCONCLUSIVE if the evidence cannot decide, else PASS or FAIL."""
        if self.inconclusive:
            return "INCONCLUSIVE"
        return "PASS" if self.passed else "FAIL"


def undecided(measured: float | str, threshold: str, reason: str, **details: Any) -> Measurement:
    """A measurement whose evidence cannot decide its threshold (verdict INCONCLUSIVE), with why."""
    return Measurement(measured, threshold, False, details, inconclusive=reason)


def at_most(value: float, limit: float, **details: Any) -> Measurement:
    """Pass iff ``value <= limit`` (NaN fails)."""
    return Measurement(float(value), f"<= {limit:g}", bool(value <= limit), details)


def at_least(value: float, limit: float, **details: Any) -> Measurement:
    """Pass iff ``value >= limit`` (NaN fails)."""
    return Measurement(float(value), f">= {limit:g}", bool(value >= limit), details)


def within(value: float, low: float, high: float, **details: Any) -> Measurement:
    """Pass iff ``low <= value <= high`` (NaN fails)."""
    ok = bool(low <= value <= high) and not math.isnan(value)
    return Measurement(float(value), f"in [{low:g}, {high:g}]", ok, details)


@dataclass(frozen=True)
class Claim:
    """``quick``: whether quick mode runs the check; a claim that needs long extra training sets it
    to False and runs with ``--full`` or when selected by ``--only``.  ``fixed``: what of its model
    the check fixes whatever the model settings (``verify --set``), in words (None: every model it
    builds honours them); verify prints it under the row when settings are given.  ``limits``: the
    numbers the row's threshold words state, as the check holds them (its constants, not copies:
    each threshold is written once, and ``tests/claims/test_thresholds_once.py`` fails when the
    words state another number); None only for a claim whose printed threshold that test compares
    with the row instead."""

    id: str
    statement: str
    section: str
    method: str
    check: Callable[[Context], Measurement]
    quick: bool = True
    fixed: str | None = None
    limits: tuple[float, ...] | None = None


REGISTRY: dict[str, Claim] = {}


Check = Callable[[Context], Measurement]


def claim(id: str, statement: str | None = None, *, section: str, method: str, quick: bool = True,
          fixed: str | None = None, limits: Iterable[float] | None = None) -> Callable[[Check], Check]:
    """Decorator: register ``check(ctx) -> Measurement`` as the check of claim ``id``.

    The statement is the claim's row in the one table of claims (:data:`spt_theory.claims.records.TABLE`);
    ``statement`` is only for a claim that has no row (a toy registry in a test).  ``limits``: the
    constants the check holds its figure to, every number its row's threshold words state
    (:attr:`Claim.limits`)."""
    row = records.TABLE.get(id)
    if row is not None:
        if statement is not None:
            raise ValueError(f"claim {id}: its statement lives in spt_theory.claims.records.TABLE, not in the "
                             "decorator")
        statement = row.statement
    elif statement is None:
        raise ValueError(f"claim {id} has no row in spt_theory.claims.records.TABLE (docs/add-a-claim.md)")

    def register(check: Check) -> Check:
        if id in REGISTRY:
            raise ValueError(f"claim {id} registered twice")
        REGISTRY[id] = Claim(id, statement, section, method, check, quick, fixed,
                             None if limits is None else tuple(float(x) for x in limits))
        return check

    return register


FAMILIES = {"T": "theory", "E": "walk-task experiments", "X": "mechanism controls", "P": "plateau law",
            "L": "LRA evidence", "G": "GPU twin"}
"""Claim id families, in the order verify lists them (an id starts with its family's letter)."""


def _order(claim_id: str) -> tuple[int, int, str]:
    layer = list(FAMILIES).index(claim_id[0]) if claim_id[0] in FAMILIES else len(FAMILIES)
    digits = "".join(ch for ch in claim_id[1:] if ch.isdigit())
    return layer, int(digits) if digits else 0, claim_id


def all_claims() -> list[Claim]:
    """Every registered claim, theory first, then experiments, then controls, by number."""
    return sorted(REGISTRY.values(), key=lambda c: _order(c.id))


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def _name_under(path: Path, root: Path) -> str | None:
    """``path``'s name under the folder ``root`` as it is named (links not followed: a link keeps
    the name of the file it stands for), else with both folders' links resolved; None if outside."""
    named = Path(os.path.abspath(path))
    for base, here in ((Path(os.path.abspath(root)), named),
                       (Path(os.path.realpath(root)), Path(os.path.realpath(named.parent)) / named.name)):
        try:
            return here.relative_to(base).as_posix()
        except ValueError:
            continue
    return None


def _link_note(path: Path) -> str:
    """`` (a link to TARGET)`` where ``path`` or a folder above it is a link, else nothing."""
    named, real = Path(os.path.abspath(path)), Path(os.path.realpath(path))
    return f" (a link to {real})" if named != real else ""


UNREGISTERED = "unregistered evidence"
"""What a row says whose verdict read a file that is not the recorded evidence (verify's record column)."""


def check_read_evidence(read: Mapping[Path, str] | Iterable[Path], root: Path,
                        lra_root: Path | None = None) -> tuple[str, ...]:
    """Hold every evidence file a check read to its recorded content
    (:data:`~spt_theory.claims.records.EVIDENCE_HASHES`).

    ``read`` maps each file as named (:data:`spt_theory.evidence.schema.READ`) to the sha256 of the
    bytes parsed: the content after links are followed, wherever they lead, so a link to an edited
    copy is an edited file (a path alone is hashed now).  A file named under the evidence folder
    ``root`` (``verify --evidence``, by default the package's) raises EvidenceError, naming it and
    the commit that recorded it, when its content differs from its entry or it has none.  A file
    read from elsewhere (``verify --lra-evidence DIR``: a user's own sweep summaries) counts only
    where its content is the recorded content of the same name under ``lra/``; otherwise it is
    returned: the files of an :data:`UNREGISTERED` verdict, which never counts as recorded."""
    found_digests = dict(read) if isinstance(read, Mapping) else {Path(p): _sha256(Path(p)) for p in read}
    unregistered = []
    for path, found in sorted(found_digests.items()):
        name = _name_under(path, root)
        if name is None:
            inside = None if lra_root is None else _name_under(path, lra_root)
            entry = None if inside is None else records.EVIDENCE_HASHES.get(f"{evidence.LRA}/{inside}")
            if entry is None or entry[0] != found:
                unregistered.append(str(path))
            continue
        entry = records.EVIDENCE_HASHES.get(name)
        if entry is None:
            raise evidence.EvidenceError(f"{path}{_link_note(path)}: read by a verdict but its content is recorded "
                                         "nowhere (records.EVIDENCE_HASHES): no recorded evidence, no verdict")
        digest, commit = entry
        if found != digest:
            raise evidence.EvidenceError(f"{path}{_link_note(path)}: differs from the content recorded in {commit} "
                                         f"(sha256 {found[:12]}..., recorded {digest[:12]}...): restore it (git "
                                         f"checkout {commit} -- spt_theory/evidence/{name}) or record the new content "
                                         "with its verdicts")
    return tuple(unregistered)


DOCUMENT_FAMILIES = ("L", "P", "G")
"""The claim families whose thresholds a pre-registration document states
(:data:`~spt_theory.claims.records.DOCUMENTS`): each of their checks first holds every document
to its recorded hash."""


REPO = Path(__file__).resolve().parents[2]
"""The checkout (or install) :func:`check_documents` reads the pre-registration documents from."""


def check_documents(repo: Path | None = None) -> None:
    """EvidenceError naming the document and the commit that added it when a pre-registration
    document of a checkout differs from its recorded content
    (:data:`~spt_theory.claims.records.DOCUMENTS`); from an install without the documents there is
    nothing to compare (the test suite compares them)."""
    repo = REPO if repo is None else Path(repo)
    checkout = (repo / "docs" / "preregistration").is_dir()
    for name, (digest, commit) in records.DOCUMENTS.items():
        path = repo / name
        if not checkout and not path.exists() and not path.is_symlink():
            continue  # an install: no documents to compare
        try:
            if path.exists() and not path.is_file():  # a FIFO would hang the read
                raise evidence.EvidenceError(f"{path}: a pre-registration document (added in {commit}) is not a "
                                             "regular file")
            found = _sha256(path)
        except FileNotFoundError:
            raise evidence.EvidenceError(f"{path}: a pre-registration document (added in {commit}) is missing from "
                                         f"the checkout (restore it: git checkout {commit} -- {name})") from None
        except OSError as error:
            raise evidence.EvidenceError(f"{path}: a pre-registration document (added in {commit}) is unreadable "
                                         f"({error.strerror or error})") from None
        if found != digest:
            raise evidence.EvidenceError(f"{path}: a pre-registration document changed after its commit {commit} "
                                         f"(sha256 {found[:12]}..., recorded {digest[:12]}...): a registration cannot "
                                         f"change (restore it: git checkout {commit} -- {name}); write a dated rule "
                                         "change instead (docs/preregistration.md)")


class SettingsIgnored(RuntimeError):
    """A check ran without applying ``--set`` and declares no fixed model: its verdict is an ERROR."""


@dataclass(frozen=True)
class Judged:
    """A claim's measurement as the integrity checks let it stand (:func:`judge`)."""

    measurement: Measurement
    unregistered: tuple[str, ...] = ()
    """Files the verdict read that are not the recorded evidence (``--lra-evidence DIR`` of a
    user's): the verdict is shown, as :data:`UNREGISTERED`, and never counts as recorded."""


def judge(claim: Claim, ctx: Context) -> Judged:
    """Run ``claim``'s check behind every integrity check: the one path from evidence to a verdict,
    for ``verify`` and the ``verdicts`` figure alike.  Raises EvidenceError (an ERROR row, never a
    verdict) when a file registered with its threshold changed, a pre-registration document of its
    family changed, or evidence it read differs from its recorded content
    (:func:`check_read_evidence`); SettingsIgnored when it ignored ``--set``; and whatever the check
    raises."""
    from spt_theory.evidence import schema

    check_registered_files(claim.id, ctx.evidence_root)  # a pre-registered file changed: ERROR
    if claim.id.startswith(DOCUMENT_FAMILIES):
        check_documents()  # a pre-registration document changed: ERROR
    schema.READ.clear()
    ctx = ctx.fresh()
    m = claim.check(ctx)
    if ctx.model_settings and not (ctx.applied or claim.fixed):  # never silently at the defaults
        raise SettingsIgnored(f"{claim.id}: the check did not apply the model settings asked for (--set) and "
                              "declares no fixed model (claim(fixed=...); docs/add-a-claim.md)")
    unregistered = check_read_evidence(dict(schema.READ), ctx.evidence_root, ctx.lra_evidence)
    return Judged(m, unregistered)


def check_registered_files(claim_id: str, root: Path) -> None:
    """EvidenceError naming the file and its registration commit when a file registered with
    ``claim_id``'s threshold (:attr:`~spt_theory.claims.row.Registration.files`, under the
    evidence folder ``root``) is missing or differs from its registered bytes (sha256)."""
    import hashlib

    row = records.TABLE.get(claim_id)
    if row is None:
        return
    registration = row.registration
    for name, digest in registration.files:
        path = Path(root) / name
        try:
            found = hashlib.sha256(path.read_bytes()).hexdigest()
        except FileNotFoundError:
            raise evidence.EvidenceError(f"{path}: missing (registered in {registration.threshold_commit}; no "
                                         "evidence, no verdict)") from None
        except OSError as error:
            raise evidence.EvidenceError(f"{path}: registered in {registration.threshold_commit}, unreadable "
                                         f"({error.strerror or error})") from None
        if found != digest:
            raise evidence.EvidenceError(f"{path}: changed since its registration in {registration.threshold_commit} "
                                         f"(sha256 {found[:12]}..., registered {digest[:12]}...): a pre-registered "
                                         "file cannot change (restore it: git checkout "
                                         f"{registration.threshold_commit} -- spt_theory/evidence/{name})")
