"""``python -m spt_theory.paper_runs``: the spelling kept from before the layered layout; the runs
live in :mod:`spt_theory.walk.paper_runs`."""

from spt_theory.walk.paper_runs import main

if __name__ == "__main__":
    raise SystemExit(main())
