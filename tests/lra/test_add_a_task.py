"""docs/add-a-task.md, followed in a temporary copy: a reader module and one register_task call in
spt_theory/lra/tasks.py (two files) make a toy task that `lra scratch` trains on a tiny generated
data set and that `lra report` lists, with '-' for the reference it does not have."""

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

pytestmark = pytest.mark.slow

GUIDE = REPO / "docs" / "add-a-task.md"
IMPORT = "from spt_theory.lra.configs import LRAConfig\n"


def _code_blocks(text: str) -> list[str]:
    """The ```python blocks of the guide, in order."""
    return [block.split("```", 1)[0] for block in text.split("```python\n")[1:]]


def _write_parity(root: Path) -> None:
    """A tiny data set in the toy task's layout (parity of 6-12 bits)."""
    rng = random.Random(0)
    for split, n in (("train", 32), ("val", 8), ("test", 8)):
        lines = []
        for _ in range(n):
            bits = "".join(rng.choice("01") for _ in range(rng.randint(6, 12)))
            lines.append(f"{bits}\t{bits.count('1') % 2}\n")
        (root / "parity").mkdir(parents=True, exist_ok=True)
        (root / "parity" / f"{split}.tsv").write_text("".join(lines))


@pytest.mark.skipif(not GUIDE.exists(), reason="needs the source tree")
def test_adding_a_task_as_the_guide_says_touches_two_files(tmp_path):
    reader, registration = _code_blocks(GUIDE.read_text())
    copy = tmp_path / "repo"
    for part in ("spt_theory", "synthetic", "tests"):
        shutil.copytree(REPO / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
    before = {p.relative_to(copy): p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    (copy / "spt_theory" / "lra" / "parity.py").write_text(reader)
    tasks = copy / "spt_theory" / "lra" / "tasks.py"
    text = tasks.read_text()
    assert text.count(IMPORT) == 1, "tasks.py imports its readers otherwise now: update this test and the guide"
    tasks.write_text(text.replace(IMPORT, "from spt_theory.lra import parity\n" + IMPORT) + "\n" + registration)
    data, out = tmp_path / "data", tmp_path / "out"
    _write_parity(data)
    env = {**os.environ, "PYTHONPATH": str(copy)}

    def lra(*args):
        return subprocess.run([sys.executable, "-m", "spt_theory.lra", *args], cwd=copy, env=env,
                              capture_output=True, text=True)

    trained = lra("scratch", "--task", "parity", "--data-dir", str(data), "--out", str(out), "--tiny",
                  "--no-progress")
    assert trained.returncode == 0, trained.stdout[-2000:] + trained.stderr[-2000:]
    report = lra("report", "--results", str(out / "results"))
    assert report.returncode == 0, report.stderr[-2000:]
    (row,) = [line.split() for line in report.stdout.splitlines() if line.startswith("parity ")]
    assert row[1] == "scratch" and row[-2:] == ["-", "-"], report.stdout
    assert "generated" not in " ".join(row) and "Traceback" not in report.stderr
    assert "batch_size=8" in registration  # a task with its own batch size, not the LRA tasks' 32
    listing = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              "tests/lra/test_lra_readers.py", "-k", "registered or config"],
                             cwd=copy, env=env, capture_output=True, text=True)
    assert listing.returncode == 0 and " passed" in listing.stdout, listing.stdout[-3000:]  # the files that list tasks
    after = {p.relative_to(copy): p.read_bytes() for p in copy.rglob("*")
             if p.is_file() and "__pycache__" not in str(p) and ".pytest_cache" not in str(p)}
    changed = {p for p in after if before.get(p) != after[p]}
    assert changed == {Path("spt_theory/lra/parity.py"), Path("spt_theory/lra/tasks.py")}
