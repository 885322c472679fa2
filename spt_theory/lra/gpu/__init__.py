"""The one-GPU script (``scripts/lra_gpu_confirm.sh``): the GPU twin of the CPU design (docs/gpu.md):
``twin`` (its command line and the run), ``twin_data`` (its data: generated, converted from a CPU
design's folder, carried, checked), ``twin_folders`` (run and export folders, streaming output),
``twin_plan`` (settings, sizes, arms, throughput model, deadline, the registered shrinking),
``twin_conform`` (evidence held to its registration), ``twin_train`` (bench, the seed group),
``stacked`` (many Encoders as one stacked model, each member its own pooling), ``preflight`` (what
the run imports), ``promote`` (its result into the evidence, on the CPU). ``python -m
spt_theory.lra.gpu`` and ``python -m spt_theory.lra.gpu.twin`` are the same command. The earlier
confirmation (``confirm``, ``plan``, ``data``, ``run``, ``steps``, ``export``, the vmap ``ensemble``
and ``bench_ensembles``) was deleted: docs/history.md says which commit holds it."""
