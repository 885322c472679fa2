"""``python -m spt_theory.figures``: regenerate the figures of spt-theory into ``figures/``.

Every figure is drawn from runs trained by :func:`spt_theory.walk.experiments.run` (the same recipes,
data and cache as ``python -m spt_theory.verify``): a run whose config hash is already in the
cache is only reloaded; a missing one is trained with ``--train`` (with progress), and without it
the figure is not drawn and the runs it would train are named, with about how long.  Each figure is written as
``NAME.png`` (300 dpi) and ``NAME.pdf``, next to ``NAME.json`` holding every plotted number, the
seeds and the config hash and stage keys of every run it used.  Files are written atomically.

Figures (claims they support in brackets):

  attention_maps     head-averaged attention of one test sequence: init, scratch, SPT, finetuned (E4)
  training_curves    band mass and test accuracy per epoch: scratch vs SPT then finetune (E2-E4)
  gradient_blindness proximity share of the score gradients at init; T3 control off uniform (T3, T5, E8)
  pe_toeplitz        PE-PE scores as a function of i - j before and after SPT, Toeplitz R^2 (E7)
  ablations          final test accuracy: scratch, SPT, frozen, hybrid inits, controls (E2-E6, X1-X5)
  lra_table          LRA results table from the runner's result JSONs (skipped when there are none)
  lra_evidence       the committed LRA sweeps redrawn: accuracy per cell, attention proximity (L1-L4)

and the figures of the paper's claims, drawn from the runs of :mod:`spt_theory.walk.paper_runs` (at the
default context the very runs, same cache keys, of ``verify --full``; shared marks in ``style``):

  score_gradients    E[dL_sup/dS], E[dL_rec/dS] at init; X6's supervised proximity share in training (T3, T5, E8, X6)
  pe_scores          PE-PE score blocks per head at init / scratch / SPT, residual of the Toeplitz fit (E7)
  offset_profile     attention share by offset i - j per head: scratch, SPT, finetuned, uniform (E4)
  supervised_curves  test / training accuracy, training loss per supervised epoch: scratch vs SPT (E2, E3, E10)
  scratch_steps      test accuracy, band mass per supervised step: scratch with 4x, 16x data or 16x the steps, \
SPT (E11, E11b)
  spt_length         finetuned accuracy and band mass against SPT length, log axis (E9)
  phase_map          SPT epochs needed and scratch accuracy as p, n, V move (E13, E14)
  paper_checks       final accuracy: frozen attention (E5, E5b), data and steps (E11, E11b), depth (E12), \
SPT source (X5b)

Examples::

    python -m spt_theory.figures --train                 # all figures, seeds 0 1 2, cache ./runs
    python -m spt_theory.figures                         # only what the cache holds (and what --train would train)
    python -m spt_theory.figures --only pe_toeplitz ablations
    python -m spt_theory.figures --fresh                 # retrain everything into a new cache

Layout: one module per figure (named like it, registering itself in :data:`registry.FIGURES`
with ``@figure``), ``style`` (palette, sizes, shared marks), ``context`` (runs, provenance, files), ``cli``.
Importing this package imports every figure module, so a new figure is one new module:
``spt_theory/figures/NAME.py`` with ``@figure("claims", "what it shows") def NAME(ctx)``.
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "__main__":
        importlib.import_module(f"{__name__}.{_module.name}")
