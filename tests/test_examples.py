"""Every example in a docstring of the package holds: one collector runs the doctests of every
module of ``spt_theory`` and ``synthetic`` (a module's ``__main__`` excepted: it runs a command),
each with ``torch`` in scope, ``NORMALIZE_WHITESPACE`` and ``ELLIPSIS``.  A docstring's example is
a claim too; plain ``pytest`` collects only ``tests/`` (pyproject's ``testpaths``), so the modules'
doctests run from here rather than with ``--doctest-modules`` over the package."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest
import torch

import spt_theory
import synthetic

MODULES = sorted(info.name for package in (spt_theory, synthetic)
                 for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")
                 if not info.name.endswith(".__main__"))


def test_every_module_is_collected():
    assert {"spt_theory.stats", "spt_theory.lra.curves", "spt_theory.evidence", "spt_theory.evidence.sweep_schema",
            "spt_theory.theory.gradients", "synthetic.walk"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_in_the_docstrings_hold(name, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # an example that writes, writes here
    module = importlib.import_module(name)
    torch.manual_seed(0)
    result = doctest.testmod(module, extraglobs={"torch": torch}, verbose=False, report=True,
                             optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed (python -m doctest -v)"
