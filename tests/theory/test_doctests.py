"""The docstrings of the closed forms and measurements (``spt_theory/theory/``, ``spt_theory/analysis/``):
every public function says its parameters, what it returns and its proof (numpydoc sections).  Their
examples run with every other module's (tests/test_examples.py)."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import spt_theory.analysis
import spt_theory.theory

MODULES = [f"{package.__name__}.{info.name}" for package in (spt_theory.theory, spt_theory.analysis)
           for info in pkgutil.iter_modules(package.__path__)]


NUMPYDOC = ("spt_theory.theory.gradients", "spt_theory.theory.patterns", "spt_theory.theory.blind_directions",
            "spt_theory.theory.rank_one", "spt_theory.theory.readout", "spt_theory.theory.bag_bayes",
            "spt_theory.theory.per_token", "spt_theory.theory.force", "spt_theory.theory.force_model",
            "spt_theory.theory.symbolic", "spt_theory.theory.symbolic_rows", "spt_theory.theory.symbolic_base",
            "spt_theory.analysis.baselines", "spt_theory.analysis.walk_descent", "spt_theory.analysis.lemma_harness",
            "spt_theory.analysis.lemma_instances", "spt_theory.analysis.lemma_measures",
            "spt_theory.analysis.lemma_measures_t3", "spt_theory.analysis.probes",
            "spt_theory.analysis.gradient_shares")
"""Modules whose public functions carry numpydoc sections (issue 43: every module of theory/ and analysis/)."""


@pytest.mark.parametrize("name", NUMPYDOC)
def test_public_functions_say_their_parameters_returns_and_proof(name):
    import inspect

    module = importlib.import_module(name)
    functions = [f for n, f in vars(module).items()
                 if inspect.isfunction(f) and f.__module__ == name and not n.startswith("_")]
    missing = [f.__name__ for f in functions if not all(
        section in (f.__doc__ or "") for section in ("Returns\n", "References\n", "proofs/")
        + (("Parameters\n",) if inspect.signature(f).parameters else ()))]
    assert functions and not missing, missing


def test_every_module_of_theory_and_analysis_is_documented():
    assert sorted(NUMPYDOC) == sorted(MODULES)
