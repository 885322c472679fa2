"""LRA readers on small files written in the release formats, their error reports, and the configs."""

import io
import os
import pickle
import struct
import sys
from dataclasses import replace

import numpy as np
import pytest
import torch
from PIL import Image

from spt_theory.lra import tasks
from spt_theory.lra.configs import one_layer, tiny
from spt_theory.lra.readers.common import BYTE_VOCAB, LISTOPS_VOCAB, PIXEL_VOCAB, split_validation
from spt_theory.lra.readers.image import read_image
from spt_theory.lra.readers.listops import read_listops
from spt_theory.lra.readers.pathfinder import read_pathfinder
from spt_theory.lra.readers.retrieval import read_retrieval
from spt_theory.lra.readers.text import read_text
from spt_theory.lra.tasks import config_for
from spt_theory.util.files import InputError


def _write(path, content):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


def _raises(match, call, *args, **kwargs):
    with pytest.raises(InputError) as error:
        call(*args, **kwargs)
    assert match in str(error.value), str(error.value)
    return str(error.value)


def _messages_of_every_split(root):
    """The InputError message of reading each Pathfinder split ('' where it succeeds)."""
    messages = []
    for split in ("train", "val", "test"):
        try:
            read_pathfinder(root, split)
            messages.append("")
        except InputError as error:
            messages.append(str(error))
    return messages


# ---------------------------------------------------------------------------------------- ListOps

LISTOPS_HEADER = "Source\tTarget\n"


def _listops_file(root, body, split="train"):
    return _write(root / f"listops-1000/basic_{split}.tsv", LISTOPS_HEADER + body)


def test_listops_tokens_labels_and_padding(tmp_path):
    _listops_file(tmp_path, "( ( ( [MAX 2 ) 9 ) ] )\t9\n( ( ( [SM 4 ) ( ( ( [MIN 8 ) 3 ) ] ) ) ] )\t7\n")
    split = read_listops(tmp_path, "train")
    ids = {token: i for i, token in enumerate(LISTOPS_VOCAB.tokens)}
    assert LISTOPS_VOCAB.size == 17 and ids["<pad>"] == 0 and ids["<mask>"] == 1
    assert ids["0"] == 2 and ids["[MIN"] == 12 and ids["]"] == 16
    expected_first = [ids[t] for t in ["[MAX", "2", "9", "]"]]
    expected_second = [ids[t] for t in ["[SM", "4", "[MIN", "8", "3", "]", "]"]]
    assert split.inputs.dtype == torch.int64 and split.inputs.shape == (2, 7)
    assert split.inputs[0].tolist() == expected_first + [0, 0, 0]
    assert split.inputs[1].tolist() == expected_second
    assert split.lengths.tolist() == [4, 7] and split.labels.tolist() == [9, 7]


def test_listops_truncates_to_max_len(tmp_path):
    _listops_file(tmp_path, "[SM 1 2 3 4 5 ]\t5\n", split="val")
    split = read_listops(tmp_path, "val", max_len=3)
    assert split.inputs.shape == (1, 3) and split.lengths.tolist() == [3]


@pytest.mark.parametrize("body, line, problem", [
    ("[MAX 1 2 ]\t2\n[MAX 1 2 ]\n", 3, "expected 2 tab-separated columns"),
    ("[MAX 1 2 ]\t2\n[MAX 1 2 ]\t2\tx\n", 3, "expected 2 tab-separated columns"),
    ("[MAX 1 2 ]\ttwo\n", 2, "not an integer"),
    ("[MAX 1 2 ]\t2.5\n", 2, "not an integer"),
    ("[MAX 1 2 ]\t10\n", 2, "out of range"),
    ("[MAX 1 2 ]\t-1\n", 2, "out of range"),
    ("[MAX 1 2 ]\t2\n[MAX 1 [FOO 3 ] ]\t1\n", 3, "unknown token '[FOO'"),
    ("[MAX 1 2 ]\t2\n\t1\n", 3, "empty expression"),
])
def test_listops_malformed_lines_name_file_and_line(tmp_path, body, line, problem):
    path = _listops_file(tmp_path, body)
    message = _raises(problem, read_listops, tmp_path, "train")
    assert f"{path}:{line}" in message


def test_listops_missing_and_empty_files(tmp_path):
    message = _raises("missing", read_listops, tmp_path, "test")
    assert str(tmp_path / "listops-1000/basic_test.tsv") in message
    assert "basic_{train,val,test}.tsv" in message
    path = _listops_file(tmp_path, "", split="test")
    assert str(path) in _raises("no examples", read_listops, tmp_path, "test")
    _raises("splits train, val, test", read_listops, tmp_path, "dev")


# ------------------------------------------------------------------------------------------- Text

def _imdb(root, split, reviews):
    for polarity, texts in reviews.items():
        for i, text in enumerate(texts):
            _write(root / f"aclImdb/{split}/{polarity}/{i}_7.txt", text)


def test_text_reads_bytes_of_both_polarities(tmp_path):
    _imdb(tmp_path, "train", {"neg": ["bad", "awful film"], "pos": ["café"]})
    split = read_text(tmp_path, "train")
    assert BYTE_VOCAB.size == 258 and split.vocab == BYTE_VOCAB
    assert split.labels.tolist() == [0, 0, 1]
    assert split.lengths.tolist() == [3, 10, 5]  # é is two UTF-8 bytes
    assert split.inputs[2].tolist()[:5] == [b + 2 for b in "café".encode()]
    assert split.inputs[0, 3:].eq(BYTE_VOCAB.pad_id).all()
    assert read_text(tmp_path, "train", max_len=4).inputs.shape == (3, 4)


def test_text_errors(tmp_path):
    message = _raises("missing", read_text, tmp_path, "train")
    assert str(tmp_path / "aclImdb") in message and "{pos,neg}" in message
    _imdb(tmp_path, "test", {"neg": ["fine"], "pos": [""]})
    assert str(tmp_path / "aclImdb/test/pos/0_7.txt") in _raises("no examples", read_text, tmp_path, "test")
    _imdb(tmp_path, "train", {"neg": ["fine"]})
    assert str(tmp_path / "aclImdb/train/pos") in _raises("missing", read_text, tmp_path, "train")


def test_text_hugging_face_copy_needs_datasets(tmp_path, monkeypatch):
    _write(tmp_path / "imdb/dataset_dict.json", '{"splits": ["train", "test"]}')
    monkeypatch.setitem(sys.modules, "datasets", None)  # as if not installed
    message = _raises("'datasets' package", read_text, tmp_path, "train")
    assert str(tmp_path / "imdb") in message


# -------------------------------------------------------------------------------------- Retrieval

def test_retrieval_two_documents_per_example(tmp_path):
    _write(tmp_path / "new_aan_pairs.train.tsv",
           "1\tP00-1001\tP00-1002\tabc\tdefgh\n0.0\tP00-1003\tP00-1004\txy\tz\n")
    split = read_retrieval(tmp_path, "train")
    assert split.labels.tolist() == [1, 0]
    assert split.lengths1.tolist() == [3, 2] and split.lengths2.tolist() == [5, 1]
    assert split.inputs1.shape == (2, 3) and split.inputs2.shape == (2, 5)
    assert split.inputs2[0].tolist() == [b + 2 for b in b"defgh"]
    assert split.inputs2[1].tolist() == [ord("z") + 2, 0, 0, 0, 0]
    assert read_retrieval(tmp_path, "train", max_len=2).inputs2.shape == (2, 2)


def test_retrieval_val_reads_eval_file_also_under_tsv_data_and_skips_a_header(tmp_path):
    _write(tmp_path / "tsv_data/new_aan_pairs.eval.tsv", "label\tid1\tid2\ttext1\ttext2\n1\ta\tb\tq\tr\n")
    split = read_retrieval(tmp_path, "val")
    assert len(split) == 1 and split.labels.tolist() == [1]


@pytest.mark.parametrize("body, line, problem", [
    ("1\ta\tb\tq\tr\n1\ta\tb\tq\n", 2, "expected 5 tab-separated columns"),
    ("1\ta\tb\tq\tr\nyes\ta\tb\tq\tr\n", 2, "not an integer"),
    ("2\ta\tb\tq\tr\n", 1, "out of range"),
])
def test_retrieval_malformed_lines_name_file_and_line(tmp_path, body, line, problem):
    path = _write(tmp_path / "new_aan_pairs.test.tsv", body)
    assert f"{path}:{line}" in _raises(problem, read_retrieval, tmp_path, "test")


def test_retrieval_missing_and_empty(tmp_path):
    message = _raises("missing", read_retrieval, tmp_path, "train")
    assert str(tmp_path / "new_aan_pairs.train.tsv") in message and "label, id1, id2" in message
    path = _write(tmp_path / "new_aan_pairs.train.tsv", "")
    assert str(path) in _raises("no examples", read_retrieval, tmp_path, "train")


# ------------------------------------------------------------------------------------------ Image

class _Python2Pickler(pickle._Pickler):
    """Pickles str/bytes as Python 2 strings, as the CIFAR-10 release (cPickle, protocol 2)."""

    dispatch = pickle._Pickler.dispatch.copy()

    def _save_python2_string(self, obj):
        data = obj.encode("latin-1") if isinstance(obj, str) else obj
        if len(data) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(data)]) + data)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(data)) + data)
        self.memoize(obj)

    dispatch[bytes] = _save_python2_string
    dispatch[str] = _save_python2_string


def _cifar_batch(path, data, labels, **extra):
    buffer = io.BytesIO()
    _Python2Pickler(buffer, protocol=2).dump({"batch_label": "batch", "data": data, "labels": labels,
                                              "filenames": [f"img_{i}.png" for i in range(len(data))],
                                              **extra})
    return _write(path, buffer.getvalue().replace(b"numpy._core.multiarray", b"numpy.core.multiarray"))


def _cifar(root, rows=2):
    folder = root / "cifar-10-batches-py"
    rng = np.random.default_rng(0)
    for b, name in enumerate([f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]):
        data = rng.integers(0, 256, size=(rows, 3072), dtype=np.uint8)
        _cifar_batch(folder / name, data, [(b + r) % 10 for r in range(rows)])
    return folder


def test_image_grayscale_of_channel_major_planes(tmp_path):
    folder = _cifar(tmp_path)
    data = np.zeros((1, 3072), dtype=np.uint8)
    data[0, 5] = 255                        # pixel 5: pure red
    data[0, 1024 + 6] = 255                 # pixel 6: pure green
    data[0, 2048 + 7] = 255                 # pixel 7: pure blue
    data[0, [8, 1024 + 8, 2048 + 8]] = 255  # pixel 8: white
    data[0, [9, 1024 + 9, 2048 + 9]] = [10, 20, 30]
    _cifar_batch(folder / "test_batch", data, [3])
    split = read_image(tmp_path, "test")
    assert split.vocab == PIXEL_VOCAB and split.inputs.shape == (1, 1024)
    assert split.inputs[0, 4:10].tolist() == [0, 76, 150, 29, 255, 18]  # round(.299R+.587G+.114B)
    assert split.labels.tolist() == [3] and split.lengths.tolist() == [1024]


def test_image_train_concatenates_five_batches(tmp_path):
    _cifar(tmp_path)
    split = read_image(tmp_path, "train")
    assert split.inputs.shape == (10, 1024) and split.inputs.dtype == torch.int64
    assert split.labels.tolist() == [0, 1, 1, 2, 2, 3, 3, 4, 4, 5]


@pytest.mark.parametrize("data, labels, problem", [
    (np.zeros((2, 3000), np.uint8), [0, 1], "field 'data'"),
    (np.zeros((2, 3072), np.float32), [0, 1], "field 'data'"),
    (np.zeros(3072, np.uint8), [0], "field 'data'"),
    (np.zeros((2, 3072), np.uint8), [0], "field 'labels'"),
    (np.zeros((2, 3072), np.uint8), [0, 10], "field 'labels'[1] = 10 out of range"),
])
def test_image_bad_batches_name_file_and_field(tmp_path, data, labels, problem):
    _cifar(tmp_path)
    path = _cifar_batch(tmp_path / "cifar-10-batches-py/data_batch_2", data, labels)
    assert str(path) in _raises(problem, read_image, tmp_path, "train")


def test_image_missing_and_corrupt_batches(tmp_path):
    assert "cifar-10-batches-py/{data_batch_1" in _raises("missing", read_image, tmp_path, "train")
    folder = _cifar(tmp_path)
    (folder / "data_batch_3").unlink()
    assert str(folder / "data_batch_3") in _raises("missing", read_image, tmp_path, "train")
    _write(folder / "test_batch", (folder / "data_batch_1").read_bytes()[:100])
    assert str(folder / "test_batch") in _raises("not a readable CIFAR-10 batch", read_image, tmp_path, "test")


class _Payload:
    """Pickles as a call to os.system that creates ``marker``."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch '{self.marker}'",)


def test_image_refuses_pickled_code_and_never_runs_it(tmp_path):
    marker = tmp_path / "side_effect_happened"
    folder = _cifar(tmp_path)
    path = _cifar_batch(folder / "test_batch", np.zeros((1, 3072), np.uint8), [0], extra=_Payload(marker))
    message = _raises("refusing to load global", read_image, tmp_path, "test")
    assert str(path) in message and "system" in message
    assert not marker.exists()
    pickle.loads(path.read_bytes(), encoding="bytes")  # control: an unrestricted unpickler would have run the payload
    assert marker.exists()


# ------------------------------------------------------------------------------------- Pathfinder

def _pathfinder(root, n=20, size=32):
    base = root / "pathfinder32/curv_contour_length_14"
    lines = []
    for i in range(n):
        image = np.full((size, size), i, dtype=np.uint8)
        image[0, 1] = 200  # row-major check
        path = base / f"imgs/0/sample_{i}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(image).save(path)
        lines.append(f"imgs/0 sample_{i}.png {i} {i % 2} 14 1 2\n")
    _write(base / "metadata/0.npy", "".join(lines))
    return base


def test_pathfinder_split_80_10_10_deterministic(tmp_path):
    _pathfinder(tmp_path)
    splits = {name: read_pathfinder(tmp_path, name) for name in ("train", "val", "test")}
    assert [len(s) for s in splits.values()] == [16, 2, 2]
    seen = sorted(int(row[0]) for s in splits.values() for row in s.inputs)
    assert seen == list(range(20))  # disjoint and complete
    for split in splits.values():
        assert split.inputs.shape[1] == 1024 and split.inputs[:, 1].eq(200).all()
        assert torch.equal(split.labels, split.inputs[:, 0] % 2)
    again = read_pathfinder(tmp_path, "val")
    assert torch.equal(again.inputs, splits["val"].inputs)
    other = [read_pathfinder(tmp_path, "val", seed=s).inputs[:, 0].tolist() for s in range(1, 6)]
    assert any(o != splits["val"].inputs[:, 0].tolist() for o in other)


@pytest.mark.parametrize("line, problem", [
    ("imgs/0 sample_0.png 0\n", "expected at least 4 fields"),
    ("imgs/0 sample_0.png 0 x\n", "not an integer"),
    ("imgs/0 sample_0.png 0 2\n", "out of range"),
])
def test_pathfinder_bad_metadata_names_file_and_line(tmp_path, line, problem):
    base = _pathfinder(tmp_path, n=3)
    path = _write(base / "metadata/1.npy", "imgs/0 sample_1.png 1 1\n" + line)
    assert f"{path}:2" in _raises(problem, read_pathfinder, tmp_path, "train")


def test_pathfinder_bad_images(tmp_path):
    base = _pathfinder(tmp_path, n=10)
    _write(base / "metadata/1.npy", "")
    assert str(base / "metadata/1.npy") in _raises("no examples", read_pathfinder, tmp_path, "train")
    (base / "metadata/1.npy").unlink()
    png = base / "imgs/0/sample_3.png"
    png.write_bytes(png.read_bytes()[:40])
    every = _messages_of_every_split(tmp_path)
    assert any(str(png) in m and "unreadable PNG" in m for m in every)
    Image.fromarray(np.zeros((16, 16), np.uint8)).save(png)
    every = _messages_of_every_split(tmp_path)
    assert any(str(png) in m and "expected 32x32" in m for m in every)
    png.unlink()
    every = _messages_of_every_split(tmp_path)
    assert any(str(png) in m and "metadata/0.npy:4" in m for m in every)


def test_pathfinder_missing_root(tmp_path):
    message = _raises("missing", read_pathfinder, tmp_path, "train")
    assert str(tmp_path / "pathfinder32/curv_contour_length_14") in message and "metadata/<k>.npy" in message


# --------------------------------------------------------------------------------- shared / configs

def test_split_validation_is_a_seeded_disjoint_partition(tmp_path):
    body = "".join(f"[SM {i % 10} 1 ]\t{(i + 1) % 10}\n" for i in range(50))
    _listops_file(tmp_path, body)
    split = read_listops(tmp_path, "train")
    rest, held_out = split_validation(split, 0.2, seed=3)
    assert (len(rest), len(held_out)) == (40, 10)
    both = sorted(torch.cat([rest.inputs[:, 1], held_out.inputs[:, 1]]).tolist())
    assert both == sorted(split.inputs[:, 1].tolist())
    assert torch.equal(split_validation(split, 0.2, seed=3)[1].labels, held_out.labels)
    _raises("fraction", split_validation, split, 1.0)
    _raises("50 training examples are too few to hold out 1%", split_validation, split, 0.01)


def test_every_registered_task_has_a_reader_a_folder_and_derived_configs():
    """The registry (spt_theory.lra.tasks) is the one task table; that each config matches its
    reader's vocabulary is checked on data read: tests/lra/test_lra_pipeline.py."""
    paper = ("listops", "text", "retrieval", "image", "pathfinder")
    assert tasks.task_names()[:5] == paper and all(config_for(task).batch_size == 32 for task in paper)
    for task in tasks.task_names():  # each task's own config (a new task has its own batch size)
        entry, config = tasks.lra_task(task), config_for(task)
        assert entry.name == config.task == task and callable(entry.reader) and entry.folder
        assert entry.data_folder(config) and config.batch_size >= 1
        assert one_layer(config).n_layers == 1 and one_layer(config).d_model == config.d_model
        assert one_layer(config).batch_size == config.batch_size
        small = tiny(config)
        assert small.d_model % small.n_heads == 0 and small.max_steps and small.task == task
    assert config_for("retrieval").two_documents and not config_for("text").two_documents
    assert config_for("image").pretrain_loss == "l1" and config_for("pathfinder").pretrain_loss == "ce"


@pytest.mark.parametrize("change, field", [
    ({"n_heads": 7}, "d_model"),
    ({"mask_ratio": 1.0}, "mask_ratio"),
    ({"mask_ratio": -0.1}, "mask_ratio"),
    ({"pretrain_epochs": 0}, "pretrain_epochs"),
    ({"n_layers": 0}, "n_layers"),
    ({"lr_pretrain": 0.0}, "lr_pretrain"),
    ({"head": "cls"}, "head"),
    ({"masking": "token", "pretrain_loss": "l1"}, "pretrain_loss"),
    ({"max_steps": 0}, "max_steps"),
])
def test_config_validation_names_the_field(change, field):
    message = _raises(f"field {field} ", replace, config_for("image"), **change)
    assert "'image'" in message
    _raises("unknown LRA task", config_for, "pathx")
