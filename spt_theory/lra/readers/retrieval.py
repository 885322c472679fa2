"""The Retrieval reader: AAN document pairs, byte level, from ``new_aan_pairs.<split>.tsv``."""

from __future__ import annotations

from pathlib import Path

from spt_theory.lra.readers.common import (
    BYTE_OFFSET,
    BYTE_VOCAB,
    LRAPairSplit,
    byte_ids,
    check_split,
    labels_tensor,
    locate,
    pack,
    parse_label,
    report,
    require_examples,
    tsv_rows,
)

RETRIEVAL_MAX_LEN = 4000
RETRIEVAL_LAYOUT = ("DATA_DIR/new_aan_pairs.{train,eval,test}.tsv (or under DATA_DIR/tsv_data), "
                    "columns label, id1, id2, text1, text2, no header")

RETRIEVAL_COLUMNS = ("label", "id1", "id2", "text1", "text2")


def read_retrieval(data_dir: str | Path, split: str, max_len: int = RETRIEVAL_MAX_LEN) -> LRAPairSplit:
    """AAN ``split`` (train / val / test; val reads the ``eval`` file), two byte-level documents."""
    check_split(split, ("train", "val", "test"), "Retrieval")
    name = f"new_aan_pairs.{'eval' if split == 'val' else split}.tsv"
    path = locate(data_dir, [name, f"tsv_data/{name}"], RETRIEVAL_LAYOUT)
    first, second, labels = [], [], []
    for number, (label, _id1, _id2, text1, text2) in tsv_rows(path, RETRIEVAL_COLUMNS):
        labels.append(parse_label(label, 2, f"{path}:{number}"))
        first.append(byte_ids(text1))
        second.append(byte_ids(text2))
    require_examples(len(labels), path)
    inputs1, lengths1 = pack(first, max_len, BYTE_OFFSET, BYTE_VOCAB.pad)
    inputs2, lengths2 = pack(second, max_len, BYTE_OFFSET, BYTE_VOCAB.pad)
    result = LRAPairSplit(inputs1, inputs2, labels_tensor(labels), lengths1, lengths2, BYTE_VOCAB)
    return report("Retrieval", split, result, path)

