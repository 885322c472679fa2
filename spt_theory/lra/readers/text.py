"""The Text reader: IMDb reviews, byte level, from the ``aclImdb`` folders or a Hugging Face copy
written by ``save_to_disk`` (whose listing of files is checked to stay inside it)."""

from __future__ import annotations

from pathlib import Path

from spt_theory.lra.readers.common import (
    BYTE_OFFSET,
    BYTE_VOCAB,
    LRASplit,
    byte_ids,
    check_split,
    inside,
    labels_tensor,
    locate,
    pack,
    parse_label,
    read_document,
    report,
    require_examples,
)
from spt_theory.util.files import InputError, read_json

TEXT_MAX_LEN = 4096
TEXT_LAYOUT = ("DATA_DIR/aclImdb/{train,test}/{pos,neg}/*.txt, or a Hugging Face imdb copy "
               "written by save_to_disk at DATA_DIR or DATA_DIR/imdb")


def read_text(data_dir: str | Path, split: str, max_len: int = TEXT_MAX_LEN) -> LRASplit:
    """IMDB ``split`` (train / test), byte level, label 1 = positive, 0 = negative.

    Reads ``aclImdb/<split>/{neg,pos}/*.txt`` (files in name order, negatives first), or a
    Hugging Face copy (``dataset_dict.json`` at DATA_DIR or DATA_DIR/imdb; needs ``datasets``).
    """
    check_split(split, ("train", "test"), "Text")
    root = locate(data_dir, ["aclImdb", "dataset_dict.json", "imdb/dataset_dict.json"], TEXT_LAYOUT)
    if root.name == "dataset_dict.json":
        documents, labels = _read_imdb_hf(root.parent, split)
        source = root.parent
    else:
        documents, labels = [], []
        source = root / split
        for label, polarity in enumerate(("neg", "pos")):
            folder = locate(root, [f"{split}/{polarity}"], TEXT_LAYOUT)
            files = sorted(folder.glob("*.txt"))
            require_examples(len(files), folder)
            for file in files:
                document = read_document(inside(root, str(file.relative_to(root)), str(file)))
                require_examples(len(document), file)
                documents.append(document)
                labels.append(label)
    inputs, lengths = pack([byte_ids(d) for d in documents], max_len, BYTE_OFFSET, BYTE_VOCAB.pad)
    return report("Text", split, LRASplit(inputs, labels_tensor(labels), lengths, BYTE_VOCAB), source)



def _check_hf_listing(folder: Path, split: str) -> None:
    """The split folders ``folder/dataset_dict.json`` names, and the Arrow files each split's
    ``state.json`` lists, stay under ``folder`` (:func:`~spt_theory.lra.readers.common.inside`),
    and ``split`` is one of them."""
    index = folder / "dataset_dict.json"
    listing = read_json(index)
    splits = listing.get("splits") if isinstance(listing, dict) else None
    if not isinstance(splits, list) or not all(isinstance(name, str) for name in splits):
        raise InputError(f"{index}: field 'splits' must list the names of the split folders")
    if split not in splits:
        raise InputError(f"{index}: no split {split!r} (splits: {', '.join(splits)})")
    for name in splits:
        state_path = inside(folder, name, f"{index}: field 'splits'") / "state.json"
        if not state_path.exists():
            continue  # datasets reports it
        state = read_json(state_path)
        files = state.get("_data_files") if isinstance(state, dict) else None
        if not isinstance(files, list) or not all(isinstance(f, dict) and isinstance(f.get("filename"), str)
                                                  for f in files):
            raise InputError(f"{state_path}: field '_data_files' must list {{\"filename\": ...}} objects")
        for number, entry in enumerate(files):
            inside(state_path.parent, entry["filename"], f"{state_path}: field '_data_files'[{number}]")


def _read_imdb_hf(folder: Path, split: str) -> tuple[list[bytes], list[int]]:
    """Documents and labels of a Hugging Face ``imdb`` copy written by ``save_to_disk``."""
    _check_hf_listing(folder, split)
    try:
        import datasets
    except ImportError:
        raise InputError(f"{folder} is a Hugging Face datasets copy; reading it needs the "
                         f"'datasets' package (pip install datasets), or use the aclImdb layout") from None
    table = datasets.load_from_disk(str(folder))[split]
    documents = [text.encode("utf-8") for text in table["text"]]
    labels = [parse_label(label, 2, f"{folder} ({split}, row {row})")
              for row, label in enumerate(table["label"])]
    require_examples(len(labels), folder)
    return documents, labels

