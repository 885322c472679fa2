"""A sweep's cells (:mod:`spt_theory.lra.sweep`): the axes a cell fixes (:data:`AXES`) and their
defaults, their values as ``--grid`` and ``--cell`` give them, the product of a grid normalised and
without duplicates (:func:`cells`), a cell in words (:func:`label`) and its run options at a seed
(:func:`cell_options`)."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

from spt_theory.core import args as cli_args
from spt_theory.lra.runner import ENCODER_GROUPS, INITS, RunOptions
from spt_theory.lra.tasks import task_names
from spt_theory.util.files import InputError

RECIPES = {"scratch": "supervised from init", "spt": "SPT, then finetuning"}
"""The values of the ``recipe`` axis and what each trains."""
AXES = {"recipe": " or ".join(f"{name} ({what})" for name, what in RECIPES.items()),
        "pretrain_epochs": "SPT epochs (spt cells)",
        "layers": "Transformer layers",
        "freeze": "groups fixed during supervised training, or none (qk in a scratch cell: attention "
                  "frozen at its random init)",
        "keep": "groups taken from the SPT checkpoint, or all (the encoder) (qk: hybrid initialisation)",
        "pretrain_task": "the task whose data SPT reads, or self",
        "finetune_epochs": "supervised epochs of the cell (scratch as long as SPT and finetuning: "
                           "equal steps)",
        "init": "default or proximity (W_Q, W_K set to attend to the neighbours: the 4 grid neighbours of "
                "an image, +-1 in a token sequence; the rest default)"}
DEFAULTS = {"recipe": "spt", "pretrain_epochs": None, "layers": None, "freeze": "none", "keep": "all",
            "pretrain_task": "self", "finetune_epochs": None, "init": "default"}
PRETRAIN_ONLY = ("pretrain_epochs", "keep", "pretrain_task")
DEFAULT_WORDS = {"finetune_epochs": "--finetune-epochs"}
"""What an axis whose default is None falls back to, where that is not the task config."""


def axes_help() -> str:
    """The axes, their meanings and defaults, one per line (``sweep --help``)."""
    width = max(map(len, AXES))
    return "\n".join(f"  {axis:<{width}}  {meaning} (default "
                     f"{DEFAULTS[axis] or DEFAULT_WORDS.get(axis, 'the task config')})"
                     for axis, meaning in AXES.items())


def _groups(axis: str, text: str) -> str:
    """A ``freeze`` / ``keep`` value, checked (groups joined by '+', ``none`` / ``all``), as written."""
    _cell_groups(axis, text)
    return text


def _cell_groups(axis: str, text: str) -> tuple[str, ...]:
    """The groups a ``freeze`` or ``keep`` value stands for."""
    if axis == "freeze":
        return cli_args.parse_groups(text, axis, none="none")
    return cli_args.parse_groups(text, axis, all_groups=ENCODER_GROUPS)


def parse_value(axis: str, text: str):
    """One axis value from the command line, validated."""
    text = text.strip()
    if axis == "recipe":
        if text not in RECIPES:
            raise InputError(f"recipe={text}: must be one of {', '.join(RECIPES)}")
        return text
    if axis in ("pretrain_epochs", "layers", "finetune_epochs"):
        try:
            value = int(text)
        except ValueError:
            raise InputError(f"{axis}={text}: not an integer") from None
        if value < 1:
            raise InputError(f"{axis}={text}: must be >= 1")
        return value
    if axis in ("freeze", "keep"):
        return _groups(axis, text)
    if axis == "init":
        if text not in INITS:
            raise InputError(f"init={text}: must be one of {', '.join(INITS)}")
        return text
    if text != "self" and text not in task_names():
        raise InputError(f"pretrain_task={text}: must be self or one of {', '.join(task_names())}")
    return text


def _split(spec: str, what: str) -> tuple[str, str]:
    axis, sep, values = spec.partition("=")
    if not sep or axis.strip() not in AXES:
        raise InputError(f"{what} {spec!r}: expected AXIS=VALUE with AXIS one of {', '.join(AXES)}")
    return axis.strip(), values


def _needs_spt(where: str, cells_given: list[dict]) -> None:
    """InputError if an SPT-only axis is set away from its default where every cell is scratch."""
    if all(cell.get("recipe", DEFAULTS["recipe"]) == "scratch" for cell in cells_given):
        for axis in PRETRAIN_ONLY:
            if any(cell.get(axis, DEFAULTS[axis]) != DEFAULTS[axis] for cell in cells_given):
                raise InputError(f"{where}: {axis} means nothing for recipe=scratch (it has no SPT stage); "
                                 f"drop it or use recipe=spt")


def cells(grid: list[str], extra: list[str]) -> list[dict]:
    """The product of the ``--grid`` axes plus the ``--cell`` cells, each a full dict of axes,
    normalised (the scratch cells of a grid with spt cells drop the SPT-only axes) and without
    duplicates, in order; an SPT-only axis set where no cell is spt is an InputError."""
    axes = {}
    for spec in grid:
        axis, values = _split(spec, "--grid")
        if axis in axes:
            raise InputError(f"--grid {axis} given twice")
        axes[axis] = [parse_value(axis, v) for v in values.split(",") if v.strip()]
        if not axes[axis]:
            raise InputError(f"--grid {spec!r}: no values")
    found = [dict(zip(axes, combo)) for combo in itertools.product(*axes.values())] if axes else []
    _needs_spt("--grid " + " --grid ".join(grid), found)
    for spec in extra:
        cell = {}
        for part in spec.split(","):
            axis, value = _split(part, "--cell")
            cell[axis] = parse_value(axis, value)
        _needs_spt(f"--cell {spec}", [cell])
        found.append(cell)
    if not found:
        raise InputError("a sweep needs at least one --grid or --cell")
    unique = []
    for cell in found:
        full = {**DEFAULTS, **cell}
        if full["recipe"] == "scratch":
            full.update({axis: DEFAULTS[axis] for axis in PRETRAIN_ONLY})
        if full not in unique:
            unique.append(full)
    return unique


def find_cell(summary: dict, **axes) -> dict | None:
    """The cell of ``summary`` whose axes are ``axes`` (the others at their defaults, :data:`DEFAULTS`), or None."""
    want = {**DEFAULTS, **axes}
    rows = [row for row in summary["cells"] if {**DEFAULTS, **row["cell"]} == want]
    return rows[0] if rows else None


def label(cell: dict) -> str:
    """A cell in words: its recipe and every axis that differs from the default."""
    parts = [cell["recipe"]] + [f"{axis}={cell.get(axis, DEFAULTS[axis])}" for axis in list(AXES)[1:]
                                if cell.get(axis, DEFAULTS[axis]) != DEFAULTS[axis]]
    return " ".join(parts)


def cell_options(base: RunOptions, cell: dict, seed: int) -> RunOptions:
    """The run options of one cell and seed."""
    changes: dict[str, Any] = {"seed": seed, "freeze": _cell_groups("freeze", cell["freeze"]),
               "keep": _cell_groups("keep", cell["keep"]),
               "pretrain_task": None if cell["pretrain_task"] == "self" else cell["pretrain_task"],
               "init": cell.get("init", DEFAULTS["init"])}
    if cell["layers"] is not None:
        changes["layers"] = cell["layers"]
    if cell["pretrain_epochs"] is not None:
        changes["pretrain_epochs"] = cell["pretrain_epochs"]
    if cell.get("finetune_epochs") is not None:
        changes["finetune_epochs"] = cell["finetune_epochs"]
    return replace(base, **changes)
