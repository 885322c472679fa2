"""The look of every figure: Okabe & Ito's colour-blind-safe palette, one- and two-column sizes,
8 pt type, :func:`new_figure` to open a figure in that style (written with
:func:`spt_theory.util.plotting.save_figure`);
:func:`drawable_text` says whether the figures' font can draw a text read from a file; the marks
several figures share (:func:`seed_dots`, :func:`chance_line`, :func:`log_y`)."""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any

import matplotlib
from cycler import cycler

from spt_theory.util.plotting import plt  # matplotlib on the Agg backend

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

OKABE_ITO = {"black": "#000000", "orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73",
             "yellow": "#F0E442", "blue": "#0072B2", "vermillion": "#D55E00", "purple": "#CC79A7"}
"""Okabe & Ito's colour-blind-safe palette."""
PALETTE = [OKABE_ITO[k] for k in ("blue", "orange", "green", "vermillion", "purple", "sky", "yellow", "black")]
RECIPE_COLOUR = {"scratch": OKABE_ITO["vermillion"], "spt": OKABE_ITO["blue"], "frozen": OKABE_ITO["orange"],
                 "hybrid_qk": OKABE_ITO["green"], "hybrid_qk_vo": OKABE_ITO["sky"],
                 "hybrid_mlp": OKABE_ITO["purple"], "reconstruction": OKABE_ITO["blue"],
                 "supervised": OKABE_ITO["vermillion"], "grey": "#7f7f7f"}
GREY = RECIPE_COLOUR["grey"]
DIVERGING = "RdBu_r"
"""The colour map of signed matrices, centred at 0."""
COLUMN_WIDTH = 3.5  # inches: one column of a two-column paper
PAGE_WIDTH = 7.0
FONT_SIZE = 8
STYLE: dict[RcKeyType, Any] = {
    "font.size": FONT_SIZE, "axes.titlesize": FONT_SIZE, "axes.labelsize": FONT_SIZE,
    "xtick.labelsize": FONT_SIZE, "ytick.labelsize": FONT_SIZE, "legend.fontsize": FONT_SIZE,
    "figure.titlesize": FONT_SIZE, "legend.frameon": False, "axes.spines.top": False,
    "axes.spines.right": False, "axes.prop_cycle": cycler(color=PALETTE),
    "lines.linewidth": 1.2, "lines.markersize": 3.5, "savefig.dpi": 300, "pdf.fonttype": 42,
    "image.cmap": "viridis", "axes.linewidth": 0.6, "xtick.major.width": 0.6, "ytick.major.width": 0.6,
}


@functools.cache
def _font():
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    return FT2Font(font_manager.findfont(font_manager.FontProperties()))


def drawable_text(text) -> bool:
    """A string whose every character has a glyph in the figures' font (matplotlib draws a box
    and warns for the others)."""
    return isinstance(text, str) and all(_font().get_char_index(ord(ch)) for ch in text)


def new_figure(width: float, height: float, nrows: int = 1, ncols: int = 1, **kw):
    """``plt.subplots`` in :data:`STYLE`, constrained layout, ``width`` x ``height`` inches."""
    with plt.rc_context(STYLE):
        return plt.subplots(nrows, ncols, figsize=(width, height), layout="constrained", **kw)


def seed_dots(ax, x: float, values: list[float], label: str | None = None) -> None:
    ax.scatter([x] * len(values), values, s=6, color="black", zorder=3, label=label)


def chance_line(ax, level: float = 50.0, text: str = "chance") -> None:
    ax.axhline(level, color=GREY, ls="--", lw=0.8, label=text)


def log_y(ax) -> None:
    """Log y axis with plain tick labels (0.008, not 8 x 10^-3); minor ticks 2, 3, 5 x 10^k are
    labelled only when the axis spans at most about 1.5 decades."""
    ax.set_yscale("log")

    def minor(v: float, _) -> str:
        lo, hi = ax.get_ylim()
        return f"{v:g}" if hi / lo < 30 and round(v / 10 ** math.floor(math.log10(v))) in (2, 3, 5) else ""

    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(minor))
