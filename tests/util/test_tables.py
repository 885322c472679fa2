"""The one table printer (:mod:`spt_theory.util.tables`): plain-text columns, Markdown, rows printed one at a time."""

from __future__ import annotations

import pytest

from spt_theory.util.tables import column_widths, line, table


def test_plain_columns_are_as_wide_as_their_widest_cell_aligned_and_without_trailing_blanks():
    text = table([["a", 1, "x"], ["bbb", 22, ""]], ["h", "n", "last"], align="<><")
    assert text.splitlines() == ["h     n  last", "a     1  x", "bbb  22"]
    assert table([["a", "b"]]) == "a  b"  # no headers, no rule


def test_a_rule_runs_under_the_headers_and_widths_are_minimums():
    text = table([["ab", "1"]], ["x", "y"], widths=[4, 0], rule=True)
    assert text.splitlines() == ["x     y", "----  -", "ab    1"]
    assert column_widths([["abcdef"]], ["x"], [3]) == [6]


def test_gaps_may_differ_between_columns_and_short_rows_are_filled():
    assert line(["a", "b", "c"], [2, 2, 2], gap=(" ", " | ")) == "a  b  | c"
    assert table([["a", "b", "c"], ["d"]], gap=" ").splitlines() == ["a b c", "d"]
    assert line(["a", None], [1, 1]) == "a"


def test_markdown_escapes_bars_and_line_breaks_and_keeps_cells_unpadded():
    text = table([["x|y", "two\nlines"], ["z", 3]], ["a", "b"], markdown=True)
    assert text.splitlines() == ["| a | b |", "|---|---|", "| x\\|y | two lines |", "| z | 3 |"]
    assert table([], ["a", "b"], align="<>", markdown=True) == "| a | b |\n|---|---:|"


def test_bad_layouts_are_refused():
    with pytest.raises(ValueError, match="align"):
        table([["a", "b"]], align="<^")
    with pytest.raises(ValueError, match="align"):
        table([["a"]], align="<>")
    with pytest.raises(ValueError, match="gap"):
        line(["a", "b", "c"], [1, 1, 1], gap=(" ",))
    with pytest.raises(ValueError, match="headers"):
        table([["a"]], markdown=True)
