"""The code base is lint-clean (ruff, configured in pyproject.toml) and keeps its layers (the
import-linter contracts in pyproject.toml: each layer imports only those below it; the data
generators import nothing of the toolkit)."""

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
