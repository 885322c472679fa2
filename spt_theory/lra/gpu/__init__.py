"""The one-GPU confirmation (``scripts/lra_gpu_confirm.sh``): ``confirm`` (its command line),
``plan`` (tunables, planner), ``data`` (the data step), ``run`` (the steps in order, the finish),
``steps`` (a step's processes), ``export`` (what it leaves behind).  ``python -m spt_theory.lra.gpu``,
``python -m spt_theory.lra.gpu.confirm`` and the older ``python -m spt_theory.lra.gpu_confirm``
are the same command."""
