"""The one table of claims (spt_theory.claims.records.TABLE): every registered claim has exactly one row, the
decorators take their statement from it, docs/claims.md is generated from it (its thresholds are
the checks' constants: test_thresholds_once.py), every commit it names exists in the history, no threshold
commit comes after its row's first commit (spt_theory.claims.history), and every theory claim
has its proof in proofs/."""

import re
import shutil
import subprocess

import pytest
from helpers import REPO, full_git_history

from spt_theory import verify
from spt_theory.claims import history, records
from spt_theory.claims import registry as claims
from spt_theory.claims.registry import all_claims
from spt_theory.claims.row import ROW_COMMIT, Registration, Row

HASH = re.compile(r"\b[0-9a-f]{7,40}\b")


def test_every_registered_claim_has_one_row_and_takes_its_statement_from_it():
    registered = {c.id: c for c in all_claims()}
    assert set(registered) == set(records.TABLE)
    for claim_id, c in registered.items():
        assert c.statement == records.TABLE[claim_id].statement


def test_the_decorator_refuses_a_second_statement_and_a_claim_without_a_row():
    with pytest.raises(ValueError, match="lives in spt_theory.claims.records.TABLE"):
        claims.claim("T1", "another statement", section="x", method="x")
    with pytest.raises(ValueError, match="has no row"):
        claims.claim("Z9", section="x", method="x")


def test_families_order_the_listing():
    order = [c.id[0] for c in all_claims()]
    assert order == sorted(order, key=list(claims.FAMILIES).index)


def test_docs_claims_md_is_the_generated_table():
    generated = verify.claims_markdown(all_claims())
    assert (REPO / "docs" / "claims.md").read_text() == generated, \
        "docs/claims.md is stale: python -m spt_theory.verify --list --markdown > docs/claims.md"


def _commits() -> set[str]:
    found = set()
    for row in records.TABLE.values():
        reg = row.registration
        found |= {reg.threshold_commit, reg.result_commit} - {ROW_COMMIT}
        found |= set(HASH.findall(" ".join(filter(None, (reg.original, reg.note)))))
    return found


@pytest.mark.slow
@pytest.mark.skipif(not full_git_history(), reason="needs a git checkout with its full history")
def test_every_recorded_commit_exists_in_the_history():
    missing = [h for h in sorted(_commits())
               if subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{h}^{{commit}}"],
                                 capture_output=True).returncode != 0]
    assert not missing, f"commits named in records.TABLE but not in the history: {missing}"


@pytest.mark.slow
@pytest.mark.skipif(not full_git_history(), reason="needs a git checkout with its full history")
def test_no_threshold_commit_comes_after_its_rows_first_commit():
    assert history.later_than_row(records.TABLE.values(), history.row_commits(REPO), REPO) == []


def _commit(repo, text: str) -> str:
    (repo / history.TABLE_FILE).write_text(text)
    for args in (["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_threshold_commit_after_the_rows_commit_is_refused_and_the_rows_own_resolves(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / history.TABLE_FILE).parent.mkdir(parents=True)
    before = _commit(tmp_path, "TABLE = _table(\n)\n")
    added = _commit(tmp_path, 'TABLE = _table(\n    Row("Z1",\n        "a claim", ">= 1",\n)\n')
    later = _commit(tmp_path, 'TABLE = _table(\n    Row("Z1",\n        "a claim", ">= 2",\n)\n')
    assert history.row_commits(tmp_path) == {"Z1": added}

    def row(threshold: str) -> Row:
        return Row("Z1", "a claim", ">= 1", Registration("post", threshold, threshold))

    assert history.later_than_row([row(before), row(added), row(ROW_COMMIT)], {"Z1": added}, tmp_path) == []
    (refused,) = history.later_than_row([row(later)], {"Z1": added}, tmp_path)
    assert refused.startswith(f"Z1: threshold commit {later} is not {added}")
    assert history.threshold_commit(row(ROW_COMMIT), {"Z1": added}) == added
    assert history.threshold_commit(row(ROW_COMMIT), {}) is None  # not committed yet


def _proofs_table() -> dict[str, str]:
    """proofs/README.md's table: each lemma row's proof file and its "claim / check" column."""
    rows = {}
    for line in (REPO / "proofs" / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 2 and (link := re.search(r"\(([A-Za-z0-9_]+\.md)\)", cells[1])):
            rows[link.group(1)] = cells[2]
    return rows


@pytest.mark.skipif(not (REPO / "proofs").exists(), reason="needs the source tree")
def test_every_theory_claim_has_its_proof():
    """A T claim has proofs/<id>_<name>.md, or is named in the "claim / check" column of
    proofs/README.md's row of the proof that covers it (T2b, T4b: T7's); each proof file there exists."""
    table = _proofs_table()
    assert all((REPO / "proofs" / name).exists() for name in table), table
    missing = [claim_id for claim_id in records.TABLE if claim_id.startswith("T")
               and not list((REPO / "proofs").glob(f"{claim_id}_*.md"))
               and not any(re.search(rf"\b{claim_id}\b", column) for column in table.values())]
    assert not missing, f"theory claims without a proof in proofs/ (docs/add-a-claim.md): {missing}"
