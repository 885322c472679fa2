"""spt-theory: why self-pretraining helps Transformers on sequence classification.

Layers of evidence (see DESIGN in the project's shared notes and ``proofs/``), each a subpackage
(docs/architecture.md draws the layers and what each may import):

1. exact theory (``spt_theory.theory``: closed forms and sympy derivations of the gradient lemmas
   at uniform attention; ``spt_theory.analysis``: their measurements on real models);
2. synthetic experiments on the walk task (the generators in the top-level ``synthetic`` package;
   ``spt_theory.core``: model and objectives; ``spt_theory.training``: the one loop;
   ``spt_theory.walk``: the runs; ``spt_theory.plateau``: the plateau-law grid);
3. LRA confirmation (``spt_theory.lra``).

The claims are registered in ``spt_theory.claims`` and checked by ``spt_theory.checks``;
``python -m spt_theory.verify`` checks every registered claim and prints one row per claim.
"""

__version__ = "0.1.0"

import sys as _sys

if _sys.argv[:1] == ["-m"]:  # python -m spt_theory.COMMAND: Ctrl-C while it imports is one line, 130 (util.interrupts)
    from spt_theory.util.interrupts import stop_at_once as _stop_at_once

    _stop_at_once()
