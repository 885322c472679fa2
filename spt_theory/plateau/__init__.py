"""The plateau law (lemma T8 in ``proofs/T8_plateau_law.md``): how long supervised training from
scratch sits at near-uniform attention on the walk task, and how long SPT takes.

Modules: ``design`` (the grid's constants, :class:`~spt_theory.plateau.design.PlateauRun` and its
cache key, caps, the order of the runs, the SPT search), ``runs`` (the step-level trainer, a scratch
run's escape step, a seed's SPT steps to 95%, the gradient noise scales), ``summary`` (the summary
JSON and ``--promote``), ``cli`` (``python -m spt_theory.plateau``).
"""
