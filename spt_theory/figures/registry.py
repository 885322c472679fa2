"""The table of figures: every figure module registers its drawing function with :func:`figure`.

A new figure is a module of :mod:`spt_theory.figures` (named like the figure) with one function
``NAME(ctx: FigureContext) -> list[Path]`` decorated ``@figure("claims", "what it shows")``; the
package imports every module, so the command line (``--only NAME``) finds it without any edit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Figure:
    name: str
    draw: Callable
    claims: str
    shows: str


FIGURES: dict[str, Figure] = {}
"""Figure name -> :class:`Figure`, in the order the modules were imported (by module name)."""


def figure(claims: str, shows: str):
    """Decorator: register ``draw(ctx) -> list[Path]`` as the figure named like the function."""

    def register(draw: Callable[..., list[Path]]) -> Callable[..., list[Path]]:
        if draw.__name__ in FIGURES:
            raise ValueError(f"figure {draw.__name__} registered twice")
        FIGURES[draw.__name__] = Figure(draw.__name__, draw, claims, shows)
        return draw

    return register
