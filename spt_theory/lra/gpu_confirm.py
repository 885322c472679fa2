"""``python -m spt_theory.lra.gpu_confirm``: the older spelling of :mod:`spt_theory.lra.gpu.confirm`."""

from spt_theory.lra.gpu.confirm import main

if __name__ == "__main__":
    raise SystemExit(main())
