"""The GPU twin's data (:mod:`spt_theory.lra.gpu.twin`): generated here from the twin's streams
(image ``i`` of a split drawn from ``(stream, i)``, on ``workers`` processes), or converted from a
CPU design's registered data folder (:func:`from_data_dir`, the pooling factorial's), saved as one
``.npz`` with the settings it was made for (:func:`save_data`), checked field by field when carried
(:func:`check_data`), and fingerprinted by content (:func:`fingerprint`)."""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from pathlib import Path

import numpy as np

from spt_theory.lra.gpu.twin_plan import Sizes, data_settings, style
from spt_theory.util.files import InputError, atomic_write

SPLITS = ("train", "val", "test")


def _images(job: tuple) -> np.ndarray:
    from synthetic.pathfinder import PathfinderStyle, balanced_labels, generate_sample

    n, seed, start, stop, image_style = job
    labels = balanced_labels(n, seed)
    out = np.zeros((stop - start, image_style["size"] ** 2 + 1), dtype=np.uint8)
    for row, i in enumerate(range(start, stop)):
        sample = generate_sample(np.random.default_rng([seed, i]), int(labels[i]), PathfinderStyle(**image_style))
        out[row, :-1], out[row, -1] = sample.image.reshape(-1), sample.label
    return out


def generate(sizes: Sizes, workers: int, timeout: float | None = None) -> dict[str, np.ndarray]:
    """Train and validation images from stream 0, test images from stream 1 (:data:`STREAMS`), on
    ``workers`` processes (forked: the twin makes its data before CUDA starts); RuntimeError when
    they are not done in ``timeout`` seconds (the workers are ended, nothing is left running)."""
    jobs = []
    for seed, n in ((0, sizes.n_train + sizes.n_val), (1, sizes.n_test)):
        chunk = max(1, -(-n // (4 * workers)))
        jobs += [(n, seed, a, min(n, a + chunk), style(sizes)) for a in range(0, n, chunk)]
    if workers > 1:
        pool = ProcessPoolExecutor(max_workers=workers)
        try:
            parts = list(pool.map(_images, jobs, timeout=timeout))
        except BaseException as error:  # a timeout, a signal, a worker's error: no worker is left running
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.terminate()
            if isinstance(error, FuturesTimeout):
                raise RuntimeError(f"the data were not generated in {timeout:.0f} s ({workers} processes)") from None
            raise
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
    else:
        parts = [_images(job) for job in jobs]
    n_test_parts = sum(1 for j in jobs if j[1] == 1)
    first, test = np.concatenate(parts[:len(parts) - n_test_parts]), np.concatenate(parts[len(parts) - n_test_parts:])
    return {"x_train": first[:sizes.n_train, :-1], "y_train": first[:sizes.n_train, -1],
            "x_val": first[sizes.n_train:, :-1], "y_val": first[sizes.n_train:, -1],
            "x_test": test[:, :-1], "y_test": test[:, -1]}


def fingerprint(data: dict[str, np.ndarray]) -> str:
    digest = hashlib.sha256()
    for key in sorted(k for k in data if k != "settings"):
        digest.update(key.encode())
        digest.update(np.ascontiguousarray(data[key]).tobytes())
    return digest.hexdigest()


def save_data(path: Path, data: dict[str, np.ndarray], sizes: Sizes) -> None:
    """``data`` and its settings as one ``.npz``, written atomically."""
    def write(tmp: Path) -> None:
        with open(tmp, "wb") as handle:
            np.savez_compressed(handle, settings=np.array(json.dumps(data_settings(sizes), sort_keys=True)),
                                **data)  # type: ignore[arg-type]  # numpy's stub: a key may be allow_pickle

    atomic_write(path, write)


def check_data(path: Path, sizes: Sizes) -> dict[str, np.ndarray]:
    """A carried data set: every field checked (present, shape, dtype, label range, lengths, the
    settings it was made for); InputError naming the file and every fault in one line."""
    try:
        with np.load(path, allow_pickle=False) as arrays:
            found = {k: arrays[k] for k in arrays.files}
    except FileNotFoundError:
        raise InputError(f"--data {path}: no such file") from None
    except (OSError, ValueError, EOFError) as error:
        raise InputError(f"--data {path}: not a .npz data set ({str(error).splitlines()[0]})") from None
    faults, expected = [], {"train": sizes.n_train, "val": sizes.n_val, "test": sizes.n_test}
    pixels = sizes.side ** 2
    for split in SPLITS:
        x, y = found.get(f"x_{split}"), found.get(f"y_{split}")
        if x is None or y is None:
            faults.append(f"x_{split} or y_{split} missing")
            continue
        if x.ndim != 2 or x.shape[1:] != (pixels,) or x.dtype != np.uint8:
            faults.append(f"x_{split} is {x.dtype} {x.shape}, expected uint8 (n, {pixels})")
        if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer):
            faults.append(f"y_{split} is {y.dtype} {y.shape}, expected integers (n,)")
        elif y.size and (y.min() < 0 or y.max() > 1):
            faults.append(f"y_{split} holds labels {sorted(set(np.unique(y).tolist()) - {0, 1})[:3]} outside 0..1")
        if len(x) != len(y):
            faults.append(f"x_{split} has {len(x)} images, y_{split} {len(y)} labels")
        elif len(y) != expected[split]:
            faults.append(f"{len(y)} {split} images, the setting {sizes.setting} has {expected[split]}")
    settings = found.get("settings")
    want = data_settings(sizes)
    if settings is None or settings.shape != () or settings.dtype.kind != "U":
        faults.append("settings missing (make the data with --make-data)")
    else:
        try:
            made = json.loads(str(settings))
        except json.JSONDecodeError:
            made = None
        if made != want:
            faults.append(f"made for {made}, this run needs {want}")
    extra = sorted(set(found) - {f"{a}_{s}" for a in "xy" for s in SPLITS} - {"settings"})
    if extra:
        faults.append(f"unexpected fields {', '.join(extra)}")
    if faults:
        raise InputError(f"--data {path}: " + "; ".join(faults))
    return {k: v for k, v in found.items() if k != "settings"}


def from_data_dir(sizes: Sizes, data_dir: Path) -> dict[str, np.ndarray]:
    """The CPU design's registered data of a ``decide``-sourced setting (the factorial), read from
    its data folder as the CPU runs read it (``lra.data.load_task_data`` at ``lra.designs.CONTOUR3_MEAN``)
    and held to its registration: the generator's marker (``lra.designs.CONTOUR3``'s data) and the content
    fingerprint (``09d407175fc401dd``); the pixels as uint8, the labels as uint8, as the twin's own
    data.  On the CPU only (``--make-data``): it imports the LRA readers, which the GPU image need not
    have."""
    from spt_theory.lra import designs
    from spt_theory.lra.data import data_source, load_task_data
    from spt_theory.lra.gpu.twin_plan import DECIDE_DATA
    from spt_theory.lra.runner import apply_overrides
    from spt_theory.lra.tasks import config_for

    if sizes.data_source != "decide":
        raise InputError(f"--from-data-dir: the setting {sizes.setting} generates its own data (give no folder)")
    config = apply_overrides(config_for("pathfinder"), designs.CONTOUR3_MEAN.overrides)
    source = data_source(config, data_dir)
    made = {k: source.get(k) for k in ("generator", "settings")}
    if made != {k: DECIDE_DATA[k] for k in ("generator", "settings")}:
        raise InputError(f"--from-data-dir {data_dir}: made by {made}, the registration's data are "
                         f"{ {k: DECIDE_DATA[k] for k in ('generator', 'settings')} }")
    loaded = load_task_data(config, data_dir)
    if loaded.fingerprint() != DECIDE_DATA["fingerprint"]:
        raise InputError(f"--from-data-dir {data_dir}: fingerprint {loaded.fingerprint()}, the registered data's is "
                         f"{DECIDE_DATA['fingerprint']}")
    out = {}
    for split in SPLITS:
        x, y = getattr(loaded, f"x_{split}"), getattr(loaded, f"y_{split}")
        if int(x.min()) < 0 or int(x.max()) > 255 or x.shape[1:] != (sizes.side ** 2,):
            raise InputError(f"--from-data-dir {data_dir}: x_{split} is not {sizes.side ** 2} pixels of 0..255")
        out[f"x_{split}"], out[f"y_{split}"] = x.numpy().astype(np.uint8), y.numpy().astype(np.uint8)
    return out
