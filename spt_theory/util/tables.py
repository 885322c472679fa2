"""The one table printer: rows of cells as aligned plain-text columns or a GitHub Markdown table.

:func:`table` lays out a whole table (each column as wide as its widest cell, or wider where
``widths`` asks); :func:`line` formats one row at given widths, for a table printed a row at a
time as its rows are computed (``verify``, the benchmark).  Cells are written with ``str`` (None as
an empty cell); ``align`` gives each column's alignment, ``<`` (left, the default) or ``>``
(right), one character per column.

>>> print(table([["listops", 36.37], ["text", 64.3]], ["task", "acc %"], align="<>", rule=True))
task     acc %
-------  -----
listops  36.37
text      64.3
>>> print(table([["a|b", 1]], ["cell", "n"], align="<>", markdown=True))
| cell | n |
|---|---:|
| a\\|b | 1 |
>>> line(["T1", "PASS", 0.5], widths=[4, 8, 6], align="<<>", gap=" ")
'T1   PASS        0.5'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

ALIGNMENTS = ("<", ">")
MARKDOWN_RULES = {"<": "---", ">": "---:"}
"""A Markdown column's separator cell by alignment (``---``: the renderer's default, left)."""


def _text(cell) -> str:
    return "" if cell is None else str(cell)


def _alignment(align: str | None, n: int) -> str:
    align = (align or "").ljust(n, "<")
    if len(align) != n or any(a not in ALIGNMENTS for a in align):
        raise ValueError(f"align: one of {' '.join(ALIGNMENTS)} per column ({n}), got {align!r}")
    return align


def _gaps(gap: str | Sequence[str], n: int) -> list[str]:
    gaps = [gap] * (n - 1) if isinstance(gap, str) else list(gap)
    if len(gaps) != max(n - 1, 0):
        raise ValueError(f"gap: a string, or one per pair of neighbouring columns ({n - 1}), got {len(gaps)}")
    return gaps


def line(cells: Sequence, widths: Sequence[int], align: str | None = None,
         gap: str | Sequence[str] = "  ") -> str:
    """One plain-text row: cell ``i`` padded to ``widths[i]`` (a longer cell is kept whole and
    pushes the rest right), aligned by ``align[i]``, the cells joined by ``gap`` (a string, or one
    string per pair of neighbouring columns); no trailing blanks."""
    texts = [_text(c) for c in cells]
    align = _alignment(align, len(texts))
    widths = list(widths) + [0] * (len(texts) - len(widths))
    padded = [t.rjust(w) if a == ">" else t.ljust(w) for t, w, a in zip(texts, widths, align)]
    out = padded[0] if padded else ""
    for g, cell in zip(_gaps(gap, len(padded)), padded[1:]):
        out += g + cell
    return out.rstrip()


def column_widths(rows: Iterable[Sequence], headers: Sequence | None = None,
                  widths: Sequence[int] = ()) -> list[int]:
    """Each column's width: its widest cell (header included), at least ``widths[i]``."""
    table_rows = ([list(headers)] if headers is not None else []) + [list(r) for r in rows]
    n = max((len(r) for r in table_rows), default=0)
    found = [max((len(_text(r[i])) for r in table_rows if i < len(r)), default=0) for i in range(n)]
    return [max(f, w) for f, w in zip(found, list(widths) + [0] * (n - len(widths)))]


def _markdown_cell(cell) -> str:
    return _text(cell).replace("|", "\\|").replace("\n", " ")


def table(rows: Iterable[Sequence], headers: Sequence | None = None, *, markdown: bool = False,
          align: str | None = None, widths: Sequence[int] = (), gap: str | Sequence[str] = "  ",
          rule: bool = False) -> str:
    """``rows`` (and ``headers``, if given) as one text, lines joined by newlines, no final newline.

    Plain text (the default): columns as wide as their widest cell or ``widths[i]``, aligned by
    ``align``, joined by ``gap``; ``rule`` puts a line of dashes under the headers.  ``markdown``:
    a GitHub table (``| a | b |``, a separator row ``|---|---:|`` from ``align``; ``|`` in a cell
    escaped, a line break a space; needs ``headers``; ``widths``, ``gap`` and ``rule`` unused)."""
    body = [list(r) for r in rows]
    n = max([len(r) for r in body] + ([len(headers)] if headers is not None else []), default=0)
    align = _alignment(align, n)
    if markdown:
        if headers is None:
            raise ValueError("a Markdown table needs headers")
        lines = ["| " + " | ".join(_markdown_cell(h) for h in headers) + " |",
                 "|" + "|".join(MARKDOWN_RULES[a] for a in align) + "|"]
        lines += ["| " + " | ".join(_markdown_cell(c) for c in r) + " |" for r in body]
        return "\n".join(lines)
    sizes = column_widths(body, headers, widths)
    lines = []
    if headers is not None:
        lines.append(line(headers, sizes, align, gap))
        if rule:
            lines.append(line(["-" * s for s in sizes], sizes, align, gap))
    lines += [line(r + [""] * (n - len(r)), sizes, align, gap) for r in body]
    return "\n".join(lines)
