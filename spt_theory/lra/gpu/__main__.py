"""``python -m spt_theory.lra.gpu``: :mod:`spt_theory.lra.gpu.twin`."""

from spt_theory.lra.gpu.twin import main

if __name__ == "__main__":
    raise SystemExit(main())
