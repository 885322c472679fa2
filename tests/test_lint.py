"""The code base is lint-clean (ruff, configured in pyproject.toml), keeps its layers (the
import-linter contracts in pyproject.toml: each layer imports only those below it; the data
generators import nothing of the toolkit) and type-checks (mypy at the strictness of pyproject's
[tool.mypy]).  .pre-commit-config.yaml runs the same three before a commit."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

pytestmark = pytest.mark.slow


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[dev]')")
    return found


@pytest.mark.skipif(not (REPO / "pyproject.toml").exists(), reason="needs the source tree")
def test_ruff_is_clean():
    result = subprocess.run([_tool("ruff"), "check", "--no-cache", "."], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:]


@pytest.mark.skipif(not (REPO / "pyproject.toml").exists(), reason="needs the source tree")
def test_import_contracts_are_kept():
    result = subprocess.run([_tool("lint-imports"), "--no-cache"], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0 and "0 broken" in result.stdout, result.stdout[-3000:]


@pytest.mark.skipif(not (REPO / "pyproject.toml").exists(), reason="needs the source tree")
def test_types_check():
    """mypy over spt_theory and synthetic (pyproject's ``files``); its cache in the checkout's
    .mypy_cache (ignored by git) makes a second run take seconds."""
    result = subprocess.run([_tool("mypy")], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0 and "Success: no issues found" in result.stdout, result.stdout[-3000:]
