"""The one table of claims (spt_theory.claims.records.TABLE): every registered claim has exactly one row, the
decorators take their statement from it, docs/claims.md is generated from it, the thresholds it
states are the ones the checks print, and every commit it names exists in the history."""

import re
import shutil
import subprocess

import pytest
from helpers import REPO

from spt_theory import verify
from spt_theory.claims import records
from spt_theory.claims import registry as claims
from spt_theory.claims.registry import Context, all_claims

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


@pytest.mark.parametrize("claim_id", ["T1", "L1", "L2", "L3", "L4", "L5",
                                      "P1", "P2", "P3", "P3b", "P4", "P5", "P6", "P7"])
def test_the_table_states_the_threshold_the_check_prints(claim_id):
    measurement = claims.REGISTRY[claim_id].check(Context(progress=False))
    assert measurement.threshold == records.TABLE[claim_id].threshold


def _commits() -> set[str]:
    found = set()
    for row in records.TABLE.values():
        reg = row.registration
        found |= {reg.threshold_commit, reg.result_commit}
        found |= set(HASH.findall(" ".join(filter(None, (reg.original, reg.note)))))
    return found


def _full_history() -> bool:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        return False
    shallow = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--is-shallow-repository"], capture_output=True,
                             text=True)
    return shallow.returncode == 0 and shallow.stdout.strip() == "false"


@pytest.mark.slow
@pytest.mark.skipif(not _full_history(), reason="needs a git checkout with its full history")
def test_every_recorded_commit_exists_in_the_history():
    missing = [h for h in sorted(_commits())
               if subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{h}^{{commit}}"],
                                 capture_output=True).returncode != 0]
    assert not missing, f"commits named in records.TABLE but not in the history: {missing}"
