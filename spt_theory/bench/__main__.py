"""``python -m spt_theory.bench``."""

from spt_theory.bench.run import main

if __name__ == "__main__":
    raise SystemExit(main())
