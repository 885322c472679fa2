"""``python -m spt_theory.plateau``: :mod:`spt_theory.plateau.cli`."""

from spt_theory.plateau.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
