"""The doctests of the closed forms and measurements (``spt_theory/theory/``, ``spt_theory/analysis/``)
run, each module's examples with ``torch`` in scope: a docstring's example is a claim too.  Plain
``pytest`` collects only ``tests/`` (pyproject's ``testpaths``), so the modules' doctests are run
from here rather than with ``--doctest-modules`` over the whole package."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest
import torch

import spt_theory.analysis
import spt_theory.theory

MODULES = [f"{package.__name__}.{info.name}" for package in (spt_theory.theory, spt_theory.analysis)
           for info in pkgutil.iter_modules(package.__path__)]


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_in_the_docstrings_hold(name):
    module = importlib.import_module(name)
    torch.manual_seed(0)
    result = doctest.testmod(module, extraglobs={"torch": torch}, optionflags=doctest.NORMALIZE_WHITESPACE,
                             verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed (run doctest)"


NUMPYDOC = ("spt_theory.theory.gradients", "spt_theory.theory.patterns", "spt_theory.theory.blind_directions",
            "spt_theory.theory.rank_one", "spt_theory.theory.readout", "spt_theory.theory.bag_bayes",
            "spt_theory.theory.per_token", "spt_theory.analysis.baselines", "spt_theory.analysis.walk_descent")
"""Modules whose public functions carry numpydoc sections so far (issue: theory/ and analysis/)."""


@pytest.mark.parametrize("name", NUMPYDOC)
def test_public_functions_say_their_parameters_returns_and_proof(name):
    import inspect

    module = importlib.import_module(name)
    functions = [f for n, f in vars(module).items()
                 if inspect.isfunction(f) and f.__module__ == name and not n.startswith("_")]
    missing = [f.__name__ for f in functions if not all(
        section in (f.__doc__ or "") for section in ("Parameters\n", "Returns\n", "References\n", "proofs/"))]
    assert functions and not missing, missing
