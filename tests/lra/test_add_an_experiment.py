"""docs/add-an-experiment.md, followed in a temporary copy: a registration document and one
setting plus one experiment registered at the bottom of spt_theory/lra/designs.py (two files)
make a toy experiment that `lra decide run --tiny` trains at every seed and `lra decide collect`
merges into evidence, with the guide's code blocks run as printed; the registry's tests pass in
the copy.  The toy gets a name no experiment of the copy has (`toy` is taken where the guide was
followed already)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

GUIDE = REPO / "docs" / "add-an-experiment.md"
EXAMPLE = "toy"
DOCUMENT = "docs/preregistration/toy-experiment.md"


def _blocks(text: str, language: str) -> list[str]:
    """The ```<language> blocks of the guide, in order."""
    return [block.split("```", 1)[0] for block in text.split(f"```{language}\n")[1:]]


def _free_name(copy: Path) -> str:
    designs = (copy / "spt_theory" / "lra" / "designs.py").read_text()
    return next(name for name in (EXAMPLE, *(f"{EXAMPLE}{k}" for k in range(2, 1000)))
                if f'Experiment("{name}"' not in designs and f'"listops_{name}"' not in designs)


def test_the_guide_names_two_files_and_runs_at_tiny_sizes():
    text = GUIDE.read_text()
    intro = text.split("## 1.")[0]
    assert "two files" in intro and "spt_theory/lra/designs.py" in intro
    (document,), (registration,), (commands,) = (_blocks(text, k) for k in ("markdown", "python", "bash"))
    assert "register_experiment(" in registration and DOCUMENT in registration and DOCUMENT in text
    assert all(" --tiny " in line for line in commands.splitlines() if " decide run " in line)


@pytest.mark.slow
def test_adding_an_experiment_as_the_guide_says_touches_two_files(tmp_path):
    text = GUIDE.read_text()
    copy = tmp_path / "repo"
    for part in ("spt_theory", "synthetic", "tests", "docs", "scripts"):
        shutil.copytree(REPO / part, copy / part, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    name = _free_name(copy)
    (document,), (registration,), (commands,) = (
        [block.replace(EXAMPLE, name) for block in _blocks(text, k)] for k in ("markdown", "python", "bash"))
    before = {p.relative_to(copy): p.read_bytes() for p in copy.rglob("*") if p.is_file()}

    (copy / DOCUMENT.replace(EXAMPLE, name)).write_text(document)  # step 1
    designs = copy / "spt_theory" / "lra" / "designs.py"  # step 2
    designs.write_text(designs.read_text() + "\n" + registration)
    env = {**os.environ, "PYTHONPATH": str(copy), "OMP_NUM_THREADS": "1"}

    for line in commands.splitlines():  # step 3, D and OUT here
        words = [w.replace("D/", f"{tmp_path / 'D'}/") for w in line.split()]
        words = [{"D": str(tmp_path / "D"), "OUT": str(tmp_path / "OUT")}.get(w, w) for w in words]
        assert words[0] == "python", line
        done = subprocess.run([sys.executable, *words[1:]], cwd=copy, env=env, capture_output=True, text=True)
        assert done.returncode == 0, line + "\n" + done.stdout[-3000:] + done.stderr[-3000:]
    found = json.loads((tmp_path / "OUT" / "decide" / f"{name}.json").read_text())
    assert found["experiment"] == name and found["tiny"] is True and found["seeds"] == [1, 2]
    assert len(found["cells"]) == 2 and all(len(row["runs"]) == 2 for row in found["cells"])
    assert {p.name for p in (tmp_path / "OUT" / "sweeps").glob("*.json")} == {
        f"listops-decide-{name}-s1.json", f"listops-decide-{name}-s2.json"}

    after = {p.relative_to(copy): p.read_bytes() for p in copy.rglob("*")
             if p.is_file() and not {"__pycache__", ".pytest_cache", ".hypothesis"} & set(p.parts)}
    changed = {p for p in after if before.get(p) != after[p]}
    assert changed == {Path("spt_theory/lra/designs.py"), Path(DOCUMENT.replace(EXAMPLE, name))}
