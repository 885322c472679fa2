"""The one-GPU script (``scripts/lra_gpu_confirm.sh``): the GPU twin of the CPU design
(docs/gpu.md): ``twin`` (its command line, data, streaming output), ``twin_plan`` (settings, sizes,
arms, throughput model, deadline, the registered shrinking), ``twin_train`` (bench, the seed group),
``stacked`` (many Encoders as one stacked model), ``preflight`` (what the run imports),
``promote`` (its result into the evidence, on the CPU).  ``python -m spt_theory.lra.gpu`` and
``python -m spt_theory.lra.gpu.twin`` are the same command.  The earlier confirmation (``confirm``,
``plan``, ``data``, ``run``, ``steps``, ``export``, the vmap ``ensemble`` and ``bench_ensembles``)
was deleted: docs/history.md says which commit holds it."""
