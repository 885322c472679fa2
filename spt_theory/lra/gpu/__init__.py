"""The one-GPU scripts (``scripts/lra_gpu_confirm.sh``).  The GPU twin of the CPU design
(docs/gpu.md): ``twin`` (its command line, data, streaming output), ``twin_plan`` (settings, sizes,
arms, throughput model, deadline, the registered shrinking), ``twin_train`` (bench, the seed group),
``stacked`` (many Encoders as one stacked model), ``preflight`` (what the run imports),
``promote`` (its result into the evidence, on the CPU), ``ensemble`` (the earlier vmapped
ensemble) and ``bench_ensembles`` (the three compared on a CPU).  The earlier confirmation (``--sweeps``): ``confirm`` \
(its command line),
``plan`` (tunables, planner), ``data`` (the data step), ``run`` (the steps in order, the finish),
``steps`` (a step's processes), ``export`` (what it leaves behind).  ``python -m spt_theory.lra.gpu``,
``python -m spt_theory.lra.gpu.confirm`` and the older ``python -m spt_theory.lra.gpu_confirm``
are the same command."""
