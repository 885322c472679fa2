"""docs/add-a-claim.md, followed in a git copy of the repository: a row in records.TABLE registered
with ROW_COMMIT, a check module, the regenerated docs/claims.md and, for a theory claim, its proof
and its row in proofs/README.md (five files) are all it takes for verify to run the new claim (a
T claim: a project claim, no record) and list it; once committed, the row's registration resolves
to that commit from git, and the test files that list claims (the table with its commit and proof
checks, verify's command line, the controls) pass there.  Without its proof the proof check fails."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO, full_git_history

pytestmark = pytest.mark.slow

GUIDE = REPO / "docs" / "add-a-claim.md"
REGISTRATION = "Registration(\"post\", ROW_COMMIT, ROW_COMMIT)"
"""How the guide registers a threshold committed with its row (and the toy's result, computed in every verify)."""
ROW = f'''    Row("T99",
        "a toy lemma added as docs/add-a-claim.md says",
        ">= 0.5",
        {REGISTRATION}),
'''
CHECK = '''from spt_theory.claims.registry import Context, Measurement, at_least, claim


LIMIT = 0.5


@claim("T99", section="Toy", method="a constant", fixed="a closed form: no model is built", limits=(LIMIT,))
def check_t99(ctx: Context) -> Measurement:
    return at_least(0.75, LIMIT)
'''
PROOF = """# T99: a toy lemma

**Statement.** 0.75 >= 0.5.  **Proof.** 0.75 - 0.5 = 0.25 >= 0.  **Checked by** T99 `check_t99`.
"""
PROOF_ROW = ("| T99 toy lemma | [T99_toy_lemma.md](T99_toy_lemma.md) | T99 `check_t99` (`checks/toy_t99.py`) | - | - "
             "| `tests/claims/test_add_a_claim.py` |\n")
"""The toy claim's texts, written for T99; :func:`toy` names them after a free id."""


def free_toy_id(records_text: str) -> str:
    """T99, or the first of T98, T97, ... without a row (a checkout where the guide was followed)."""
    return next(f"T{n}" for n in range(99, 9, -1) if f'Row("T{n}",' not in records_text)


def toy(text: str, cid: str) -> str:
    return text.replace("T99", cid).replace("t99", cid.lower())


IMPORT = "from spt_theory.claims.row import VERDICT_OF_RECORD, Record, Registration, Row\n"
LISTING_TESTS = ("tests/claims/test_claims_table.py", "tests/claims/test_thresholds_once.py",
                 "tests/claims/test_settings_applied.py",
                 "tests/commands/test_verify_cli.py", "tests/checks/test_controls.py")
"""The test files that list claims or families; each must pass with the new claim."""
SELECTED = ("limits or one_row or docs_claims_md or families or theory_claims or registered or quick or registrations "
            "or recorded_commit or threshold_commit or proof")


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), "-c", "user.name=guide", "-c", "user.email=guide@example.org",
                           *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _git_copy(copy: Path) -> None:
    """A clone of the repository (objects shared) holding this checkout's working tree, committed."""
    _git(copy.parent, "clone", "--quiet", "--shared", str(REPO), copy.name)
    for part in ("spt_theory", "synthetic", "docs", "tests", "proofs"):
        shutil.copytree(REPO / part, copy / part, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", ".hypothesis"))
    if _git(copy, "status", "--porcelain"):
        _git(copy, "add", "-A")
        _git(copy, "commit", "-q", "-m", "the working tree of the checkout under test")


def test_the_guide_registers_with_the_rows_commit_and_asks_a_theory_claim_for_its_proof():
    text = GUIDE.read_text()
    assert REGISTRATION in text and "ROW_COMMIT" in text and "HEAD" in text
    assert "proofs/README.md" in text and "proofs/<id>_" in text
    check = text.split("## 5. Check it")[1]
    assert "tests/claims/test_claims_table.py" in check and "tests/commands/test_verify_cli.py" in check


@pytest.mark.skipif(not full_git_history(), reason="needs a git checkout with its full history")
def test_adding_a_claim_as_the_guide_says_touches_five_files(tmp_path):
    copy = tmp_path / "repo"
    _git_copy(copy)
    base = _git(copy, "rev-parse", "HEAD")
    records = copy / "spt_theory" / "claims" / "records.py"
    text = records.read_text()
    marker = '\n)\n"""Every claim verify checks'
    assert marker in text, "records.TABLE's closing line moved: update this test and the guide"
    cid = free_toy_id(text)
    if not re.search(r"^from spt_theory\.claims\.row import .*\bROW_COMMIT\b", text, re.M):  # import it beside Row
        assert text.count(IMPORT) == 1, "records.py imports the row types otherwise now: update this test"
        text = text.replace(IMPORT, IMPORT.replace("Record, Registration", "ROW_COMMIT, Record, Registration"))
    records.write_text(text.replace(marker, "\n" + toy(ROW, cid).rstrip("\n") + marker, 1))
    (copy / "spt_theory" / "checks" / f"toy_{cid.lower()}.py").write_text(toy(CHECK, cid))
    env = {**os.environ, "PYTHONPATH": str(copy), "OMP_NUM_THREADS": "1"}

    def run(*args):
        return subprocess.run([sys.executable, *args], cwd=copy, env=env, capture_output=True, text=True)

    def listing(*selection: str):  # -rA: a PASSED line per test
        return run("-m", "pytest", "-rA", "-n", "0", "-p", "no:cacheprovider", *LISTING_TESTS,
                   "-k", " or ".join(selection))

    listed = run("-m", "spt_theory.verify", "--list", "--markdown")
    assert listed.returncode == 0, listed.stderr
    (copy / "docs" / "claims.md").write_text(listed.stdout)
    unproved = listing("proof")  # a T claim without its proof is refused, by name
    assert unproved.returncode == 1 and cid in unproved.stdout, unproved.stdout[-3000:]
    (copy / "proofs" / f"{cid}_toy_lemma.md").write_text(toy(PROOF, cid))
    readme = copy / "proofs" / "README.md"
    rows = readme.read_text().splitlines(keepends=True)
    last = max(i for i, line in enumerate(rows) if line.startswith("| ") and ".md](" in line)
    readme.write_text("".join(rows[:last + 1] + [toy(PROOF_ROW, cid)] + rows[last + 1:]))
    row = run("-m", "spt_theory.verify", "--only", cid, "--no-progress")
    assert row.returncode == 0 and f"{cid}  PASS" in row.stdout and "project" in row.stdout, row.stdout + row.stderr

    _git(copy, "add", "-A")
    _git(copy, "commit", "-q", "-m", f"{cid}, a toy lemma (docs/add-a-claim.md)")
    added = _git(copy, "rev-parse", "--short", "HEAD")
    resolved = run("-c", "from spt_theory.claims import history, records; "
                         f"print(history.threshold_commit(records.TABLE['{cid}'], history.row_commits('.')))")
    assert resolved.stdout.strip() == added, resolved.stdout + resolved.stderr  # ROW_COMMIT: the row's own commit
    checked = listing(*SELECTED.split(" or "), cid)
    assert checked.returncode == 0, checked.stdout[-3000:]
    for name in ("test_every_recorded_commit_exists_in_the_history", "test_every_theory_claim_has_its_proof",
                 "test_no_threshold_commit_comes_after_its_rows_first_commit",
                 "test_docs_claims_md_is_the_generated_table",
                 "test_every_registered_claim_has_one_row_and_takes_its_statement_from_it"):
        assert f"PASSED tests/claims/test_claims_table.py::{name}" in checked.stdout, (name, checked.stdout[-3000:])
    changed = set(_git(copy, "diff", "--name-only", base, "HEAD").splitlines())
    assert changed == {"spt_theory/claims/records.py", f"spt_theory/checks/toy_{cid.lower()}.py", "docs/claims.md",
                       f"proofs/{cid}_toy_lemma.md", "proofs/README.md"}


def _code_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, re.M | re.S)


def test_the_guides_code_runs_as_printed(tmp_path):
    """The guide's two code blocks, as printed: its row in records.TABLE and its check module (a
    walk-task claim that trains, quick=False); verify lists the claim, its threshold words state its
    limits, and ruff passes the module."""
    row, check = _code_blocks(GUIDE.read_text())
    copy = tmp_path / "repo"
    for part in ("spt_theory", "synthetic", "tests"):
        shutil.copytree(REPO / part, copy / part,
                        ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", ".hypothesis"))
    shutil.copy(REPO / "pyproject.toml", copy / "pyproject.toml")
    records = copy / "spt_theory" / "claims" / "records.py"
    text = records.read_text()
    marker = '\n)\n"""Every claim verify checks'
    assert marker in text and 'Row("E15",' not in text and "ROW_COMMIT" in row
    if not re.search(r"^from spt_theory\.claims\.row import .*\bROW_COMMIT\b", text, re.M):  # as step 1 says
        assert text.count("from spt_theory.claims.row import VERDICT_OF_RECORD, Record,") == 1
        text = text.replace("import VERDICT_OF_RECORD, Record,", "import ROW_COMMIT, VERDICT_OF_RECORD, Record,")
    records.write_text(text.replace(marker, "\n" + row.rstrip("\n") + marker, 1))
    module = copy / "spt_theory" / "checks" / "example_e15.py"
    module.write_text(check)
    env = {**os.environ, "PYTHONPATH": str(copy), "OMP_NUM_THREADS": "1"}
    listed = subprocess.run([sys.executable, "-m", "spt_theory.verify", "--list"], cwd=copy, env=env,
                            capture_output=True, text=True)
    assert listed.returncode == 0 and "E15" in listed.stdout, listed.stdout[-2000:] + listed.stderr[-2000:]
    once = subprocess.run([sys.executable, "-m", "pytest", "-rA", "-n", "0", "-p", "no:cacheprovider",
                           "tests/claims/test_thresholds_once.py", "-k", "E15 or limits"], cwd=copy, env=env,
                          capture_output=True, text=True)
    assert once.returncode == 0 and "PASSED tests/claims/test_thresholds_once.py::" in once.stdout \
        and "[E15]" in once.stdout, once.stdout[-3000:]
    ruff = shutil.which("ruff")
    if ruff is not None:
        linted = subprocess.run([ruff, "check", "--no-cache", str(module), str(records)], cwd=copy,
                                capture_output=True, text=True)
        assert linted.returncode == 0, linted.stdout
