"""docs/add-a-task.md, followed in a temporary copy: a reader module, one register_task call in
spt_theory/lra/tasks.py and a few examples in tests/helpers.py (three files) make a toy task that
`lra scratch` trains at its registered config (batch 8, not --tiny's 4) on the data folder the
guide's script makes, that `lra report` lists with '-' for the reference it does not have, and
that the tests which run every registered task pass with.  The toy task gets a name no task of
the copy has (the guide's `parity` is taken where the guide was followed already)."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

GUIDE = REPO / "docs" / "add-a-task.md"
EXAMPLE = "parity"
"""The guide's example name; the test renames it to a name nobody has taken (:func:`_free_name`)."""
IMPORT = "from spt_theory.lra.configs import LRAConfig\n"
RETURN = "\n    return root\n"
"""The end of ``_write_lra`` in tests/helpers.py, where the guide adds the examples (step 3)."""


def _add_examples(source: str, examples: str) -> str:
    """tests/helpers.py with ``examples`` at the end of ``_write_lra``, before its ``return root``."""
    start = source.index("\ndef _write_lra(")
    end = source.index(RETURN, start)
    assert "\ndef " not in source[start + 1:end], "_write_lra ends otherwise now: update this test and the guide"
    return source[:end] + "\n" + examples.rstrip("\n") + source[end:]
"""The end of ``_write_lra`` in tests/helpers.py, where the guide puts the new task's examples."""
LISTING_TESTS = ("tests/lra/test_lra_readers.py", "tests/lra/test_lra_pipeline.py")
"""The test files that run or read every registered task; each must pass with the new one."""


def _blocks(text: str, language: str) -> list[str]:
    """The ```<language> blocks of the guide, in order."""
    return [block.split("```", 1)[0] for block in text.split(f"```{language}\n")[1:]]


def _free_name(copy: Path) -> str:
    """A task name that neither the registry nor the package of ``copy`` uses yet."""
    tasks = (copy / "spt_theory" / "lra" / "tasks.py").read_text()
    for k in range(1, 1000):
        name = f"{EXAMPLE}_guide{k}"
        if name not in tasks and not (copy / "spt_theory" / "lra" / "readers" / f"{name}.py").exists():
            return name
    raise AssertionError("no free task name")


def test_the_guide_names_three_files_and_checks_the_registered_batch():
    text = GUIDE.read_text()
    assert "three" in text.split("## 1.")[0] and "tests/helpers.py" in text.split("## 1.")[0]
    reader, registration, examples, data = _blocks(text, "python")
    (check,) = _blocks(text, "bash")
    assert "batch_size=8" in registration  # a task with its own batch size, not the LRA tasks' 32
    assert " scratch " in check and "--tiny" not in check.splitlines()[0]  # the check runs that batch size
    assert "return root" not in examples and "sys.argv[1]" in data


@pytest.mark.slow
def test_adding_a_task_as_the_guide_says_touches_three_files(tmp_path):
    text = GUIDE.read_text()
    copy = tmp_path / "repo"
    for part in ("spt_theory", "synthetic", "tests"):
        shutil.copytree(REPO / part, copy / part, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    name = _free_name(copy)
    reader, registration, examples, data = (block.replace(EXAMPLE, name) for block in _blocks(text, "python"))
    (check,) = (block.replace(EXAMPLE, name) for block in _blocks(text, "bash"))
    before = {p.relative_to(copy): p.read_bytes() for p in copy.rglob("*") if p.is_file()}

    (copy / "spt_theory" / "lra" / "readers" / f"{name}.py").write_text(reader)  # step 1
    tasks = copy / "spt_theory" / "lra" / "tasks.py"  # step 2
    source = tasks.read_text()
    assert source.count(IMPORT) == 1, "tasks.py imports its readers otherwise now: update this test and the guide"
    imported = IMPORT + f"from spt_theory.lra.readers import {name}\n"  # the line after, as step 2 says
    tasks.write_text(source.replace(IMPORT, imported) + "\n" + registration)
    helpers = copy / "tests" / "helpers.py"  # step 3
    source = helpers.read_text()
    helpers.write_text(_add_examples(source, examples))
    script = tmp_path / f"make_{name}.py"  # step 4: a throwaway script, outside the repository
    script.write_text(data)
    env = {**os.environ, "PYTHONPATH": str(copy), "OMP_NUM_THREADS": "1"}
    made = subprocess.run([sys.executable, str(script), str(tmp_path / "D")], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr

    def run(line: str) -> subprocess.CompletedProcess:  # step 5: a line of the guide's check, D and OUT here
        words = [{"D": str(tmp_path / "D"), "OUT": str(tmp_path / "OUT"),
                  "OUT/results": str(tmp_path / "OUT" / "results")}.get(w, w) for w in line.split("#")[0].split()]
        assert words[:3] == ["python", "-m", "spt_theory.lra"], line
        return subprocess.run([sys.executable, *words[1:]], cwd=copy, env=env, capture_output=True, text=True)

    trained, reported = run(check.splitlines()[0]), run(check.splitlines()[1])
    assert trained.returncode == 0, trained.stdout[-2000:] + trained.stderr[-2000:]
    assert reported.returncode == 0, reported.stderr[-2000:]
    (row,) = [line.split() for line in reported.stdout.splitlines() if line.startswith(f"{name} ")]
    assert row[1] == "scratch" and row[-2:] == ["-", "-"], reported.stdout
    assert "generated" not in " ".join(row) and "Traceback" not in reported.stderr
    (result,) = [json.loads(p.read_text()) for p in (tmp_path / "OUT" / "results").rglob("*.json")]
    assert result["task"] == name and result["config"]["batch_size"] == 8  # the registered batch, not --tiny's 4
    assert result["config"]["d_model"] == 32 and result["data"]["n_train"] == 64

    selected = re.sub(r"\s+", " ", check.splitlines()[2]).split()
    assert selected[:3] == ["python", "-m", "pytest"] and set(LISTING_TESTS) <= set(selected), check
    listing = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", *LISTING_TESTS,
                              "-k", f"registered or config or {name}"],
                             cwd=copy, env=env, capture_output=True, text=True)
    assert listing.returncode == 0 and " passed" in listing.stdout, listing.stdout[-3000:]
    ran = re.findall(rf"::(\w+)\[{name}\] PASSED", listing.stdout)
    assert {"test_every_task_confirms_end_to_end_and_reports",
            "test_every_registered_task_reads_with_its_configs_vocabulary"} <= set(ran), listing.stdout[-3000:]

    after = {p.relative_to(copy): p.read_bytes() for p in copy.rglob("*")
             if p.is_file() and "__pycache__" not in str(p) and ".pytest_cache" not in str(p)
             and ".hypothesis" not in str(p)}
    changed = {p for p in after if before.get(p) != after[p]}
    assert changed == {Path(f"spt_theory/lra/readers/{name}.py"), Path("spt_theory/lra/tasks.py"),
                       Path("tests/helpers.py")}
    ruff = shutil.which("ruff")  # the three files as the guide has them written: in ruff's order and style
    if ruff is not None:
        shutil.copy(REPO / "pyproject.toml", copy / "pyproject.toml")
        linted = subprocess.run([ruff, "check", "--no-cache", *(str(copy / p) for p in changed)], cwd=copy,
                                capture_output=True, text=True)
        assert linted.returncode == 0, linted.stdout
