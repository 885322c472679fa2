"""Check modules: each registers its claims with :mod:`spt_theory.claims.registry` when imported.

theory.py T1-T6 and X4's lemma (harness.py: their random instances and autograd), bridge.py T2b, T4b,
T7 (the real model), walk_law.py (the generator's exact law, for T6 / T7), walk.py E1-E9 (the walk task),
paper.py E5b, E6b, E10-E14, X5b, controls.py X1-X6, lra.py L1-L4.  :mod:`spt_theory.verify` imports every module here.
"""
