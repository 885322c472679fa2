"""Check modules: importing this package registers every claim with :mod:`spt_theory.claims`."""

from spt_theory.checks import bridge, controls, lra, paper, synthetic, theory  # noqa: F401
