"""``python -m spt_theory.lra.gpu``: :mod:`spt_theory.lra.gpu.confirm`."""

from spt_theory.lra.gpu.confirm import main

if __name__ == "__main__":
    raise SystemExit(main())
