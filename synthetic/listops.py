"""ListOps in the LRA release format: nested MIN / MAX / MED / SM expressions over digits.

Grammar (LRA): a node is an operator with probability 0.25 while its depth is below 10, otherwise a
digit 0-9; an operator takes 2-10 arguments.  ``MED`` is the median truncated to an integer and
``SM`` the sum mod 10.  A tree's *length* counts its operators, closing brackets ``]`` and digits;
kept trees have ``min_len < length < max_len`` (500 and 2000 in LRA), no tree appears twice (across
splits too), and the label is the tree's value.

The release writes ``basic_{train,val,test}.tsv`` with a ``Source\\tTarget`` header and ``\\r\\n``
line endings (so does :func:`write_split`: generated files are byte-compatible).  ``Source``
spells an operator node with arguments ``a1 .. ak`` as the left-nested binary tree of the release
generator, ``((..((op a1) a2) .. ak) ])``, e.g. ``[MAX 2 9 ]`` is ``( ( ( [MAX 2 ) 9 ) ] )``.
Readers drop the parentheses, leaving the prefix sequence ``[MAX 2 9 ]``.

``python -m synthetic.listops --out DIR`` writes the three files (see ``--help``).
"""

from __future__ import annotations

import argparse
import functools
import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from spt_theory.util.files import InputError, announce, atomic_write, prepare_output
from spt_theory.util.interrupts import GENERATING, interruptible
from spt_theory.util.prog import prog
from spt_theory.util.progress import Progress
from spt_theory.util.provenance import MARKER, removed_on_error, write_marker
from synthetic.bounds import integer_between

OPERATORS = ("[MIN", "[MAX", "[MED", "[SM")
CLOSE = "]"
DIGITS = tuple(str(d) for d in range(10))
OPERATOR_PROBABILITY = 0.25
MAX_DEPTH = 10
MIN_ARGS, MAX_ARGS = 2, 10
SPLITS = ("train", "val", "test")
HEADER = "Source\tTarget"
NEWLINE = "\r\n"  # the release files' line ending
MAX_TREES = 1_000_000
"""Most trees a split may ask for (LRA: 96,000 train): every tree is held in memory until written,
a few kilobytes each at LRA's lengths, so 10^7 would need tens of gigabytes."""
MAX_MIN_LEN = 5_000
"""Largest ``--min-len``: at depth 10 about 1 tree in 10,000 is longer than 5,000, so a longer
minimum would sample for days (LRA: 500)."""
COUNT_HORIZON = 200
""":func:`count_trees` counts lengths up to this one exactly; every length from 16 to it has more
than ``10**15`` trees, so a window reaching past it holds more trees than anyone can ask for."""
COUNT_CAP = 10**15

Tree = int | tuple[str, tuple["Tree", ...]]
"""A digit, or ``(operator, arguments)``."""


class _TooLong(Exception):
    """Raised inside generation once a tree is certain to exceed the length bound."""


def evaluate(tree: Tree) -> int:
    """Value of ``tree``: a digit, or its operator applied to its arguments' values."""
    if isinstance(tree, int):
        return tree
    operator, arguments = tree
    values = sorted(evaluate(argument) for argument in arguments)
    if operator == "[MIN":
        return values[0]
    if operator == "[MAX":
        return values[-1]
    if operator == "[MED":
        middle = len(values) // 2
        return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) // 2
    if operator == "[SM":
        return sum(values) % 10
    raise ValueError(f"unknown operator {operator!r}")


def tree_length(tree: Tree) -> int:
    """Number of operators, closing brackets and digits in ``tree``."""
    if isinstance(tree, int):
        return 1
    return 2 + sum(tree_length(argument) for argument in tree[1])


def to_source(tree: Tree) -> str:
    """The release's parenthesised spelling of ``tree`` (see the module docstring)."""
    if isinstance(tree, int):
        return str(tree)
    operator, arguments = tree
    parts = ["( " * (len(arguments) + 1), operator, " ", to_source(arguments[0]), " )"]
    for argument in arguments[1:]:
        parts += [" ", to_source(argument), " )"]
    parts.append(" ] )")
    return "".join(parts)


def parse(source: str) -> Tree:
    """Parse a ``Source`` field (parentheses optional) back into a tree.

    Raises ``ValueError`` on an unknown token, a missing ``]``, an operator with fewer than two
    arguments, or tokens after the end of the expression.
    """
    tokens = [token for token in source.split() if token not in ("(", ")")]
    tree, end = _parse_at(tokens, 0)
    if end != len(tokens):
        raise ValueError(f"unexpected token {tokens[end]!r} after the end of the expression")
    return tree


def _parse_at(tokens: list[str], position: int) -> tuple[Tree, int]:
    """Parse the expression starting at ``tokens[position]``; return it and the next position."""
    if position >= len(tokens):
        raise ValueError("expression ends early")
    token = tokens[position]
    if token in DIGITS:
        return int(token), position + 1
    if token not in OPERATORS:
        raise ValueError(f"unknown token {token!r}")
    arguments = []
    position += 1
    while position < len(tokens) and tokens[position] != CLOSE:
        argument, position = _parse_at(tokens, position)
        arguments.append(argument)
    if position >= len(tokens):
        raise ValueError(f"missing {CLOSE!r} for {token}")
    if len(arguments) < MIN_ARGS:
        raise ValueError(f"{token} has {len(arguments)} argument(s), needs at least {MIN_ARGS}")
    return (token, tuple(arguments)), position + 1


def _grow(rng: random.Random, depth: int, budget: list[int]) -> Tree:
    """Sample a subtree at ``depth``; ``budget[0]`` is the length still allowed before rejection.

    Trees that would reach the length bound are abandoned early (``_TooLong``): they would be
    rejected anyway, so the kept trees follow the grammar's distribution conditioned on length.
    """
    if depth < MAX_DEPTH and rng.random() < OPERATOR_PROBABILITY:
        n_arguments = rng.randint(MIN_ARGS, MAX_ARGS)
        budget[0] -= 2
        arguments = tuple(_grow(rng, depth + 1, budget) for _ in range(n_arguments))
        tree: Tree = (rng.choice(OPERATORS), arguments)
    else:
        budget[0] -= 1
        tree = rng.randrange(10)
    if budget[0] <= 0:
        raise _TooLong
    return tree


def check_bounds(min_len: int, max_len: int) -> None:
    """InputError unless some length lies strictly between ``min_len`` >= 0 and ``max_len``."""
    if not 0 <= min_len < max_len - 1:
        raise InputError(f"need 0 <= min-len < max-len - 1, got min-len {min_len}, max-len {max_len}")


def sample_trees(rng: random.Random, min_len: int, max_len: int) -> Iterator[Tree]:
    """Endless stream of trees with ``min_len < length < max_len`` (duplicates possible)."""
    check_bounds(min_len, max_len)
    while True:
        budget = [max_len]
        try:
            tree = _grow(rng, 1, budget)
        except _TooLong:
            continue
        if max_len - budget[0] > min_len:
            yield tree


@functools.lru_cache(maxsize=1)
def _trees_by_length() -> tuple[int, ...]:
    """``min(COUNT_CAP, number of trees of length L)`` for L = 0 .. COUNT_HORIZON (root at depth 1).

    A subtree at depth ``d`` is a digit, or (while ``d < MAX_DEPTH``) an operator whose 2-10
    arguments are subtrees at depth ``d + 1``, adding 2 (the operator and ``]``) to their lengths.
    Float arithmetic saturated at the cap stays exact below it (all counts are integers < 2**53).
    """
    size = COUNT_HORIZON + 1
    digits = np.zeros(size)
    digits[1] = len(DIGITS)
    below = digits.copy()  # trees at depth MAX_DEPTH: digits only
    for _ in range(MAX_DEPTH - 1):  # depths MAX_DEPTH - 1 .. 1
        power, forests = below.copy(), np.zeros(size)  # forests: 2-10 subtrees side by side
        for k in range(2, MAX_ARGS + 1):
            power = np.minimum(np.convolve(power, below)[:size], COUNT_CAP)
            if k >= MIN_ARGS:
                forests = np.minimum(forests + power, COUNT_CAP)
        here = digits.copy()
        here[2:] += len(OPERATORS) * forests[:-2]
        below = np.minimum(here, COUNT_CAP)
    return tuple(int(v) for v in below)


def count_trees(min_len: int, max_len: int) -> int:
    """Number of distinct trees with ``min_len < length < max_len``, capped at ``COUNT_CAP``."""
    if max_len - 1 > COUNT_HORIZON:
        return COUNT_CAP
    return min(COUNT_CAP, sum(_trees_by_length()[max(min_len + 1, 0):max(max_len, 0)]))


def check_request(sizes: dict[str, int], min_len: int, max_len: int) -> None:
    """InputError unless ``sizes`` distinct trees with ``min_len < length < max_len`` can exist."""
    if any(size < 0 for size in sizes.values()):
        raise InputError(f"split sizes must be >= 0, got {sizes}")
    check_bounds(min_len, max_len)
    total = sum(sizes.values())
    if count_trees(min_len, max_len) < total:
        asked = " + ".join(f"{name} {size}" for name, size in sizes.items())
        raise InputError(f"--min-len {min_len} --max-len {max_len}: only {count_trees(min_len, max_len)} "
                         f"distinct trees have a length strictly between them, {total} asked for "
                         f"({asked}); widen the window or ask for fewer trees")


def generate_splits(sizes: dict[str, int], min_len: int = 500, max_len: int = 2000, seed: int = 0,
                    progress: bool = False) -> dict[str, list[tuple[str, int]]]:
    """Distinct trees for each split, as ``(source, label)`` rows; deterministic in ``seed``.

    Splits are filled in the order of ``sizes`` from one stream of distinct trees, so no source
    appears twice in or across splits.
    """
    check_request(sizes, min_len, max_len)
    total = sum(sizes.values())
    seen: set[str] = set()
    rows: list[tuple[str, int]] = []
    stream = sample_trees(random.Random(seed), min_len, max_len)
    with Progress("listops trees", total, "trees", enabled=progress) as bar:
        while len(rows) < total:
            tree = next(stream)
            source = to_source(tree)
            if source not in seen:
                seen.add(source)
                rows.append((source, evaluate(tree)))
                bar.update(1)
    splits, start = {}, 0
    for name, size in sizes.items():
        splits[name] = rows[start:start + size]
        start += size
    return splits


def write_split(path: Path, rows: list[tuple[str, int]]) -> Path:
    """Write ``rows`` as a release TSV (header ``Source\\tTarget``, ``\\r\\n`` line endings), atomically."""
    text = "".join([HEADER, NEWLINE] + [f"{source}\t{label}{NEWLINE}" for source, label in rows])
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


@interruptible(rerun=GENERATING)
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog("python -m synthetic.listops"),
        description="Generate ListOps in the LRA release layout: DIR/basic_{train,val,test}.tsv "
                    "(header Source<TAB>Target; Source in the release's parenthesised format; "
                    "Target = the value 0-9). Trees are distinct across all splits and kept only "
                    "if min-len < length < max-len (length = operators + ']' + digits).")
    trees = integer_between(0, MAX_TREES, "every tree is held in memory until written")
    parser.add_argument("--out", required=True, type=Path, help="output folder (created)")
    parser.add_argument("--train", type=trees, default=96000, help="train trees (default 96000)")
    parser.add_argument("--val", type=trees, default=2000, help="validation trees (default 2000)")
    parser.add_argument("--test", type=trees, default=2000, help="test trees (default 2000)")
    parser.add_argument("--min-len", type=integer_between(0, MAX_MIN_LEN, "longer trees are too rare to sample"),
                        default=500, help="exclusive lower length bound (500)")
    parser.add_argument("--max-len", type=int, default=2000, help="exclusive upper length bound (2000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress (default: a bar on a terminal, else lines on stderr)")
    args = parser.parse_args(argv)
    try:
        sizes = {"train": args.train, "val": args.val, "test": args.test}
        check_request(sizes, args.min_len, args.max_len)
        with removed_on_error(args.out, args.out):  # an error leaves no folder this run created
            prepare_output(args.out / MARKER)
            splits = generate_splits(sizes, args.min_len, args.max_len, args.seed, progress=not args.no_progress)
            written = [(write_split(args.out / f"basic_{name}.tsv", rows), len(rows)) for name, rows in splits.items()]
            for path, n in written:  # said once all are written: an error removes what it said
                announce(path, f"{n} trees to")
            settings = {k: v for k, v in vars(args).items() if k not in ("out", "no_progress")}
            announce(write_marker(args.out, "synthetic.listops", settings))
    except InputError as error:
        parser.exit(2, f"error: {error}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
