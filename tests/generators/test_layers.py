"""The data generators (``synthetic/``) import nothing of the toolkit but its bottom layer,
``spt_theory.util`` (files, progress, interrupts), and so load without torch.  Read from the import
statements themselves (``ast``), so a mention of ``spt_theory`` in a docstring or comment is not an
import, and an import inside a function is.  The other layers are held by the import-linter
contracts in ``pyproject.toml`` (tests/test_lint.py)."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest
from helpers import REPO

SYNTHETIC = REPO / "synthetic"


def imported_modules(source: str) -> set[str]:
    """The absolute module names that ``source``'s import statements name (``import a.b`` gives
    ``a.b``; ``from a.b import c`` gives ``a.b``); relative imports stay inside the package."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def imports_spt_theory(source: str) -> bool:
    """Whether ``source`` imports any of the toolkit but its util layer."""
    return any((name == "spt_theory" or name.startswith("spt_theory.")) and not
               (name == "spt_theory.util" or name.startswith("spt_theory.util."))
               for name in imported_modules(source))


@pytest.mark.parametrize("path", sorted(SYNTHETIC.rglob("*.py")), ids=lambda p: p.name)
def test_synthetic_imports_nothing_from_spt_theory_but_util(path):
    assert not imports_spt_theory(path.read_text()), f"{path.name} imports spt_theory beyond spt_theory.util"


@pytest.mark.slow
@pytest.mark.parametrize("module", ["synthetic.listops", "synthetic.pathfinder"])
def test_the_lra_generators_load_without_torch(module):
    code = f"import sys, {module}; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_the_import_reader_sees_imports_and_not_mentions():
    assert imports_spt_theory("from spt_theory.core.model import Encoder")
    assert not imports_spt_theory("from spt_theory.util.files import InputError")
    assert imports_spt_theory("def f():\n    import spt_theory.walk.experiments as e\n")
    assert imports_spt_theory("import numpy, spt_theory")
    assert not imports_spt_theory('"""Keys: :func:`spt_theory.walk.experiments.stage_key`."""\n# import spt_theory\n')
    assert not imports_spt_theory("from spt_theory.util.files import atomic_write\nimport spt_theory_extra")
    assert imports_spt_theory("from spt_theory.utility import x")
    assert not imports_spt_theory("from . import walk")


def test_one_import_path_per_name():
    """The file primitives are imported from spt_theory.util.files and the lock from
    spt_theory.util.locks: nothing imports them through a re-export (util.io is gone) or core.args."""
    root = SYNTHETIC.parent
    users = sorted(str(p.relative_to(root)) for part in ("spt_theory", "synthetic", "tests")
                   for p in (root / part).rglob("*.py")
                   if "spt_theory.util.io" in imported_modules(p.read_text()))
    assert users == [], users
    from spt_theory.core import args

    assert not {"announce", "prepare_output", "check_output", "write_json"} & set(vars(args))
