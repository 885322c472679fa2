"""Long Range Arena confirmation runs: readers for the release layout and per-task configs.

``readers`` turns the files a user already has (``--data-dir``) into int64 tensors plus the
vocabulary used; ``configs`` defines the per-task model and training settings of the SPT study,
``tasks`` is the registry of the tasks (config, reader, data folder, LRA reference; one
``register_task`` call a task).
``data`` makes a task's splits one tensor set, ``task`` says how a task feeds the encoder (masking,
losses), ``runner`` trains scratch / SPT / finetuning runs, ``report`` tabulates their results,
``runtime`` picks the device and process group; ``python -m spt_theory.lra --help``.
"""
