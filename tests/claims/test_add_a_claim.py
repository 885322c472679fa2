"""docs/add-a-claim.md, followed in a temporary copy: a row in records.TABLE, a check module, and
the regenerated docs/claims.md are all it takes (three files) for verify to run the new claim (a
T claim: a project claim, no record) and list it, and for the test files that list claims (the
table, verify's command line, the controls) to pass there."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

pytestmark = pytest.mark.slow

ROW = '''    Row("T99",
        "a toy lemma added as docs/add-a-claim.md says",
        ">= 0.5",
        Registration("pre", FIRST_CHECKS, FIRST_CHECKS)),
'''
CHECK = '''from spt_theory.claims.registry import Context, Measurement, at_least, claim


@claim("T99", section="Toy", method="a constant")
def check_t99(ctx: Context) -> Measurement:
    return at_least(0.75, 0.5)
'''
LISTING_TESTS = ("tests/claims/test_claims_table.py", "tests/commands/test_verify_cli.py",
                 "tests/checks/test_controls.py")
"""The test files that list claims or families; each must pass with the new claim."""


@pytest.mark.skipif(not (REPO / "docs" / "add-a-claim.md").exists(), reason="needs the source tree")
def test_adding_a_claim_as_the_guide_says_touches_three_files(tmp_path):
    copy = tmp_path / "repo"
    for part in ("spt_theory", "synthetic", "docs", "tests"):
        shutil.copytree(REPO / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
    before = {p.relative_to(copy): p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    records = copy / "spt_theory" / "claims" / "records.py"
    text = records.read_text()
    marker = '\n)\n"""Every claim verify checks'
    assert marker in text, "records.TABLE's closing line moved: update this test and the guide"
    records.write_text(text.replace(marker, "\n" + ROW.rstrip("\n") + marker, 1))
    (copy / "spt_theory" / "checks" / "toy.py").write_text(CHECK)
    env = {**os.environ, "PYTHONPATH": str(copy)}

    def run(*args):
        return subprocess.run([sys.executable, *args], cwd=copy, env=env, capture_output=True, text=True)

    listed = run("-m", "spt_theory.verify", "--list", "--markdown")
    assert listed.returncode == 0, listed.stderr
    (copy / "docs" / "claims.md").write_text(listed.stdout)
    row = run("-m", "spt_theory.verify", "--only", "T99", "--no-progress")
    assert row.returncode == 0 and "T99  PASS" in row.stdout and "project" in row.stdout, row.stdout + row.stderr
    listing = run("-m", "pytest", "-q", "-p", "no:cacheprovider", *LISTING_TESTS, "-k",
                  "one_row or docs_claims_md or families or theory_claims or registered or quick or registrations")
    assert listing.returncode == 0 and " passed" in listing.stdout, listing.stdout[-3000:]
    after = {p.relative_to(copy): p.read_bytes() for p in copy.rglob("*")
             if p.is_file() and "__pycache__" not in str(p)}
    changed = {p for p in after if before.get(p) != after[p]}
    assert changed == {Path("spt_theory/claims/records.py"), Path("spt_theory/checks/toy.py"), Path("docs/claims.md")}
