"""Transitional: the file primitives' old import path, kept only for the one-GPU script.

Every name here lives in :mod:`spt_theory.util.files` (the run-directory lock in
:mod:`spt_theory.util.locks`) and is imported from there.  Only ``spt_theory/lra/gpu_*.py``, which
is being moved into ``spt_theory/lra/gpu/``, still imports from this module; delete it with that
move (``tests/test_layers.py`` holds every other module to the one import path).
"""

from spt_theory.util.files import (  # noqa: F401 (re-exported for the GPU script only)
    InputError,
    StorageError,
    atomic_write,
    make_dirs,
    prepare_output,
    write_json,
)
