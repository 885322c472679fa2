"""``python -m spt_theory.lra.gpu``: the GPU twin (:mod:`spt_theory.lra.gpu.twin`; docs/gpu.md)."""

from spt_theory.lra.gpu.twin import main

if __name__ == "__main__":
    raise SystemExit(main())
