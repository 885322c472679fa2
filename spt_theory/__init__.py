"""spt-theory: why self-pretraining helps Transformers on sequence classification.

Layers of evidence (see DESIGN in the project's shared notes and ``proofs/``):

1. exact theory (``theory``, ``symbolic``): gradient lemmas at uniform attention;
2. synthetic experiments (``synthetic``, ``model``, ``objectives``, ``training``, ``probes``);
3. LRA confirmation (``spt_theory.lra``).

``python -m spt_theory.verify`` checks every registered claim and prints one row per claim.
"""

__version__ = "0.1.0"

import sys as _sys

if _sys.argv[:1] == ["-m"]:  # python -m spt_theory.COMMAND: Ctrl-C while it imports is one line, 130 (util.interrupts)
    from spt_theory.util.interrupts import stop_at_once as _stop_at_once

    _stop_at_once()
