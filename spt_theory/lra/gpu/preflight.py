"""``python -m spt_theory.lra.gpu.preflight``: whether this interpreter has everything the GPU twin
will import (:data:`NEEDED`), in about a second, before a lease's seconds go into a run that would
stop at an import.  Exit 0 and one ``preflight: ok`` line, or exit 2 and one ``error:`` line naming
every module missing and what needs it.  It imports the twin's own modules, so a package the GPU
image lacks (pydantic: ``../shared/GPU.md``) that any of them imports is named here."""

from __future__ import annotations

import importlib
import sys
import time

NEEDED = ("numpy", "torch", "torch.nn.attention", "synthetic.pathfinder", "spt_theory.lra.gpu.stacked",
          "spt_theory.lra.gpu.twin_plan", "spt_theory.lra.gpu.twin_data", "spt_theory.lra.gpu.twin_folders",
          "spt_theory.lra.gpu.twin_train", "spt_theory.lra.gpu.twin")
"""Every module the twin's run imports (their own imports follow)."""


def missing() -> list[str]:
    """``'name (needed by module)'`` for every module of :data:`NEEDED` that does not import."""
    faults = []
    for module in NEEDED:
        try:
            importlib.import_module(module)
        except ImportError as error:
            name = getattr(error, "name", None) or str(error)
            faults.append(name if name == module else f"{name} (needed by {module})")
    return list(dict.fromkeys(faults))


def main() -> int:
    start = time.perf_counter()
    faults = missing()
    if faults:
        print(f"error: {sys.executable} lacks what the GPU twin imports: {', '.join(faults)}", file=sys.stderr)
        return 2
    import torch

    print(f"preflight: ok in {time.perf_counter() - start:.1f} s (python {sys.version.split()[0]}, torch "
          f"{torch.__version__}, CUDA {'available' if torch.cuda.is_available() else 'not available'})",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
