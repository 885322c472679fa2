"""``spt``: one launcher for every command line of spt-theory.

``spt COMMAND ARGS...`` runs ``python -m MODULE ARGS...``: it imports the command's module only
then (so that ``spt --help`` stays fast and torch-free) and hands ARGS untouched to its
``main(argv)``, whose exit status it returns (its interrupt handling included), with the usage
reading ``spt COMMAND`` instead of ``python -m MODULE``.  Every ``python -m`` spelling keeps working.
"""

from __future__ import annotations

import importlib
import sys
from typing import NamedTuple

from spt_theory.util.interrupts import stopping_at_once
from spt_theory.util.prog import renamed


class Command(NamedTuple):
    module: str
    """Where its ``main(argv)`` is."""
    spelling: str
    """Its ``python -m`` spelling (the ``prog`` its parser shows outside ``spt``)."""
    summary: str


COMMANDS: dict[str, Command] = {
    "verify": Command("spt_theory.verify", "python -m spt_theory.verify",
                      "check every claim (theory, experiments, controls, LRA evidence), one row per claim"),
    "train": Command("spt_theory.train", "python -m spt_theory.train",
                     "one run on the walk task, cached and resumable"),
    "lra": Command("spt_theory.lra.__main__", "python -m spt_theory.lra",
                   "SPT confirmation runs on the Long Range Arena tasks (confirm, sweep, probe, report, ...)"),
    "plateau": Command("spt_theory.plateau.cli", "python -m spt_theory.plateau",
                       "the plateau law (T8): how long training sits at near-uniform attention"),
    "figures": Command("spt_theory.figures.cli", "python -m spt_theory.figures",
                       "regenerate the figures into figures/"),
    "bench": Command("spt_theory.bench.run", "python -m spt_theory.bench",
                     "training throughput against torch's own Transformer layer"),
    "paper-runs": Command("spt_theory.walk.paper_runs", "python -m spt_theory.paper_runs",
                          "train ahead the runs behind the paper's claims (E5, E5b, E6b, E9-E14, X5b)"),
    "listops": Command("synthetic.listops", "python -m synthetic.listops",
                       "generate ListOps in the LRA release format"),
    "pathfinder": Command("synthetic.pathfinder", "python -m synthetic.pathfinder",
                          "generate Pathfinder in the LRA release layout"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    rows = "\n".join(f"  {name:<{width}}  {c.summary}" for name, c in COMMANDS.items())
    return ("usage: spt COMMAND [ARGS ...]\n\n"
            "Run a command line of spt-theory: 'spt COMMAND ARGS' is 'python -m MODULE ARGS'\n"
            "('spt COMMAND --help' for its options).\n\n"
            f"commands:\n{rows}\n")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:
        print(usage(), end="", file=sys.stderr)
        return 2
    name, rest = argv[0], argv[1:]
    if name in ("-h", "--help"):
        print(usage(), end="")
        return 0
    command = COMMANDS.get(name)
    if command is None:
        print(f"error: unknown command {name!r} (commands: {', '.join(COMMANDS)})", file=sys.stderr)
        return 2
    with stopping_at_once():  # Ctrl-C while the command imports torch: one line, 130 (util.interrupts)
        command_main = importlib.import_module(command.module).main
    with renamed(command.spelling, f"spt {name}"):
        return command_main(rest)


if __name__ == "__main__":
    sys.exit(main())
