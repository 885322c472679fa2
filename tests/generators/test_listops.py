"""ListOps generator: grammar, release spelling, parse/evaluate round trip, bounds, seed, dedup."""

import random

import pytest

from spt_theory.lra.readers.listops import tokenize_listops
from spt_theory.util.files import InputError
from synthetic import listops
from synthetic.listops import evaluate, generate_splits, parse, to_source, tree_length


def _depth(tree, level=1):
    if isinstance(tree, int):
        return level
    return max(_depth(argument, level + 1) for argument in tree[1])


def _operators(tree):
    if isinstance(tree, int):
        return []
    return [tree] + [node for argument in tree[1] for node in _operators(argument)]


@pytest.mark.parametrize("source, value", [
    ("[MIN 3 1 2 ]", 1),
    ("[MAX 3 1 2 ]", 3),
    ("[MED 3 1 2 ]", 2),
    ("[MED 2 5 ]", 3),          # median 3.5 truncated
    ("[MED 1 2 3 4 ]", 2),      # median 2.5 truncated
    ("[SM 9 8 7 ]", 4),         # 24 mod 10
    ("[MAX 2 [MIN 9 [SM 5 6 ] ] 0 ]", 2),
    ("( ( ( [MAX 2 ) 9 ) ] )", 9),
])
def test_evaluate_known_expressions(source, value):
    assert evaluate(parse(source)) == value


def test_release_spelling_is_the_left_nested_binary_tree():
    assert to_source(("[MAX", (2, 9))) == "( ( ( [MAX 2 ) 9 ) ] )"
    nested = ("[SM", (1, ("[MIN", (4, 5)), 7))
    assert to_source(nested) == "( ( ( ( [SM 1 ) ( ( ( [MIN 4 ) 5 ) ] ) ) 7 ) ] )"
    assert parse(to_source(nested)) == nested


@pytest.mark.parametrize("bad", ["", "[MAX 1 ]", "[MAX 1 2", "[MAX 1 2 ] 3", "[FOO 1 2 ]", "12"])
def test_parse_rejects_malformed(bad):
    with pytest.raises(ValueError):
        parse(bad)


def test_generated_trees_follow_the_grammar_and_bounds():
    splits = generate_splits({"train": 60, "val": 10, "test": 10}, min_len=20, max_len=80, seed=3)
    for rows in splits.values():
        for source, label in rows:
            tree = parse(source)
            assert to_source(tree) == source
            assert evaluate(tree) == label
            assert 20 < tree_length(tree) < 80
            assert len(tokenize_listops(source)) == tree_length(tree)
            assert _depth(tree) <= listops.MAX_DEPTH
            assert all(2 <= len(arguments) <= 10 for _, arguments in _operators(tree))


def test_generation_is_deterministic_by_seed():
    sizes = {"train": 20, "val": 5, "test": 5}
    first = generate_splits(sizes, min_len=10, max_len=60, seed=7)
    assert first == generate_splits(sizes, min_len=10, max_len=60, seed=7)
    assert first != generate_splits(sizes, min_len=10, max_len=60, seed=8)


def test_sources_are_distinct_across_splits():
    # Lengths 4..6 allow few distinct trees, so an undeduplicated stream repeats itself often.
    stream = listops.sample_trees(random.Random(0), min_len=3, max_len=7)
    raw = [to_source(next(stream)) for _ in range(300)]
    assert len(set(raw)) < len(raw)
    splits = generate_splits({"train": 200, "val": 50, "test": 50}, min_len=3, max_len=7, seed=0)
    sources = [source for rows in splits.values() for source, _ in rows]
    assert len(sources) == 300 and len(set(sources)) == 300


def test_cli_writes_release_files(tmp_path):
    out = tmp_path / "listops-1000"
    code = listops.main(["--out", str(out), "--train", "12", "--val", "3", "--test", "3",
                         "--min-len", "10", "--max-len", "50", "--seed", "1"])
    assert code == 0
    for split, size in [("train", 12), ("val", 3), ("test", 3)]:
        lines = (out / f"basic_{split}.tsv").read_text().splitlines()
        assert lines[0] == "Source\tTarget"
        assert len(lines) == size + 1
        for line in lines[1:]:
            source, target = line.split("\t")
            assert evaluate(parse(source)) == int(target)
    assert not list(out.glob(".*tmp"))


def test_cli_rejects_impossible_bounds(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        listops.main(["--out", str(tmp_path), "--min-len", "50", "--max-len", "40"])
    assert exit_info.value.code == 2
    assert "min-len" in capsys.readouterr().err
    with pytest.raises(InputError):
        generate_splits({"train": -1}, min_len=3, max_len=10)


def test_cli_help_explains(capsys):
    with pytest.raises(SystemExit) as exit_info:
        listops.main(["--help"])
    assert exit_info.value.code == 0
    assert "basic_{train,val,test}.tsv" in capsys.readouterr().out
