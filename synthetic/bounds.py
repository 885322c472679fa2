"""The generators' size options, bounded as argparse reads them: a size that would allocate
gigabytes (``--size 100000``: a 9.3 GiB image) or keep thousands of megabyte-sized trees in memory
is argparse's own ``error: argument --X: ...`` line after the usage, exit 2, before anything is
made (the generators import only the toolkit's util layer, so not ``spt_theory.core.args``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

DIGITS = 12
"""Longest integer read (a 5,000-digit one is refused by its length, not parsed)."""


def integer_between(low: int, high: int, why: str = "") -> Callable[[str], int]:
    """An argparse ``type=``: an integer in [``low``, ``high``]; ``why`` says what the upper bound
    guards (``an image of side S needs S^2 bytes ...``)."""

    def check(text: str) -> int:
        digits = str(text).strip().lstrip("+-")
        if len(digits) > DIGITS:
            raise argparse.ArgumentTypeError(f"an integer of {len(digits)} digits; at most {high:,}")
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low:,} and {high:,}, got {value:,}"
                                             + (f" ({why})" if why else ""))
        return value

    check.__name__ = f"integer in [{low}, {high}]"
    return check
