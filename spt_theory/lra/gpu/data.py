"""The data step of the one-GPU confirmation (:mod:`spt_theory.lra.gpu.confirm`): ListOps and
Pathfinder-32 drawn by generator processes at once (:func:`data_commands`), their parts merged into
the release layout with one provenance marker per task (:func:`merge_listops`,
:func:`merge_pathfinder`), only in folders the step made itself (:func:`made_here`)."""

from __future__ import annotations

import functools
import json
import os
import shutil
import time
from dataclasses import asdict
from pathlib import Path

from spt_theory.lra.gpu.plan import Sizes
from spt_theory.lra.gpu.steps import Step, run_step, say
from spt_theory.util.files import InputError, atomic_write, make_dirs
from spt_theory.util.provenance import make_owned, owned_folder


def shares(total: int, parts: int) -> list[int]:
    """``total`` cut into ``parts`` near-equal counts (the first ones one larger)."""
    return [total // parts + (k < total % parts) for k in range(parts)]


def data_wanted(sizes: Sizes) -> str:
    """What ``data/.complete`` holds once the data of ``sizes`` is there."""
    return json.dumps({k: v for k, v in asdict(sizes).items() if k != "shapes"}, sort_keys=True)


def data_commands(python: str, parts: Path, sizes: Sizes) -> dict[str, list[str]]:
    """The generator processes of the data step: each draws its part under ``parts`` with its own seed."""
    low, high = sizes.listops_lengths
    counts = [shares(n, sizes.listops_workers) for n in sizes.listops]
    commands = {}
    for k, (train, val, test) in enumerate(zip(*counts)):
        commands[f"data listops {k}"] = [
            python, "-m", "synthetic.listops", "--out", str(parts / f"listops-{k}"), "--train", str(train),
            "--val", str(val), "--test", str(test), "--min-len", str(low), "--max-len", str(high), "--seed", str(k)]
    for k, n in enumerate(shares(sizes.pathfinder_images, sizes.workers)):
        commands[f"data pathfinder {k}"] = [
            python, "-m", "synthetic.pathfinder", "--out", str(parts / f"pathfinder-{k}"), "--n", str(n),
            "--seed", str(k + 1), "--per-folder", str(n), "--size", "32", "--contour-length", "14"]
    return commands


GENERATORS = ("synthetic.listops", "synthetic.pathfinder")


def made_here(data: Path, folder: Path) -> str | None:
    """None if the data step may replace ``folder``, else why not (one line): the confined-write
    rule of :func:`spt_theory.util.provenance.owned_folder` from the run folder down (no link on the way; a
    folder this step made, marked :data:`~spt_theory.util.files.OWNED`, an empty one, or one the
    project's generators marked).  A user's own data, or a link to it, is never touched."""
    return owned_folder(folder, data.parent, GENERATORS)


def generate_data(python: str, data: Path, sizes: Sizes, timeout: float, logs: Path,
                  planned: float | None = None) -> Step:
    """The data step: ListOps and Pathfinder-32 under ``data`` (release layout), unless already
    there: the processes of :func:`data_commands` at once, then their parts merged.  It replaces
    only folders it made itself (:func:`made_here`); a foreign one fails the step, untouched."""
    done = data / ".complete"
    if done.exists() and done.read_text() == data_wanted(sizes):
        say(f"data: reusing {data}")
        return Step("data", "ok", planned_seconds=planned, message=f"reused {data}")
    start = time.perf_counter()
    listops_dir, pf_dir, parts = data / "listops-1000", data / "pathfinder32", data / ".parts"
    made = (data, listops_dir, pf_dir, parts)
    refused = next((why for why in (made_here(data, folder) for folder in made[1:]) if why), None)
    refused = refused or (f"{data} is a link: nothing was changed" if data.is_symlink() else None)
    if refused:
        return Step("data", "failed", planned_seconds=planned,
                    message=f"{refused} (move it away or choose another --out)")
    make_dirs(data)
    done.unlink(missing_ok=True)
    for folder in made[1:]:
        make_owned(folder, data.parent, GENERATORS)
    environment = {**os.environ, "TQDM_MININTERVAL": "10"}  # 16 progress bars: fewer updates
    step = run_step("data", data_commands(python, parts, sizes), timeout, logs, planned, environment)
    if step.ok:
        try:
            merge_listops([parts / f"listops-{k}" for k in range(sizes.listops_workers)], listops_dir)
            merge_pathfinder([parts / f"pathfinder-{k}" for k in range(sizes.workers)], pf_dir)
        except InputError as error:
            step.status, step.message = "failed", f"merging the parts: {error}"
        else:
            shutil.rmtree(parts)
            atomic_write(done, lambda tmp: tmp.write_text(data_wanted(sizes)))
    step.seconds = round(time.perf_counter() - start, 2)
    return step


def merge_listops(parts: list[Path], target: Path) -> Path:
    """Concatenate each split of the parts into ``target`` (trees distinct across all splits: a
    tree drawn by two processes is kept once, where it came first) with one provenance marker."""
    from spt_theory.util.provenance import read_marker, write_marker
    from synthetic.listops import SPLITS, write_split

    seen, dropped, seeds, settings = set(), 0, [], {}
    rows: dict[str, list[tuple[str, int]]] = {split: [] for split in SPLITS}
    for part in parts:
        marker = read_marker(part)
        if marker is None:
            raise InputError(f"{part}: not a finished synthetic.listops folder")
        settings = marker["settings"]
        seeds.append(settings["seed"])
        for split in SPLITS:
            lines = (part / f"basic_{split}.tsv").read_text(encoding="utf-8").splitlines()[1:]
            for line in lines:
                source, label = line.split("\t")
                if source in seen:
                    dropped += 1
                    continue
                seen.add(source)
                rows[split].append((source, int(label)))
    for split, split_rows in rows.items():
        write_split(target / f"basic_{split}.tsv", split_rows)
    write_marker(target, "synthetic.listops", {**settings, **{split: len(r) for split, r in rows.items()},
                                               "seed": seeds, "duplicates_dropped": dropped,
                                               "merged": f"{len(parts)} processes, one seed each"})
    return target


def merge_pathfinder(parts: list[Path], target: Path) -> Path:
    """Move each part's ``imgs/0`` to ``imgs/<k>`` of one release layout, rewrite its metadata
    lines, and leave one provenance marker listing every part's seed."""
    from spt_theory.util.provenance import read_marker, write_marker

    root = target / "curv_contour_length_14"
    (root / "imgs").mkdir(parents=True, exist_ok=True)
    seeds, total, settings = [], 0, {}
    for k, part in enumerate(parts):
        source = part / "curv_contour_length_14"
        marker = read_marker(source)
        if marker is None or len(list((source / "imgs").iterdir())) != 1:
            raise InputError(f"{source}: not one finished synthetic.pathfinder folder")
        settings = marker["settings"]
        seeds.append(settings["seed"])
        total += settings["n"]
        lines = (source / "metadata/0.npy").read_text().splitlines(keepends=True)
        if not all(line.startswith("imgs/0 ") for line in lines):
            raise InputError(f"{source}/metadata/0.npy: a line not under imgs/0")
        (source / "imgs/0").rename(root / f"imgs/{k}")
        text = "".join(f"imgs/{k} " + line[len("imgs/0 "):] for line in lines)
        atomic_write(root / f"metadata/{k}.npy", functools.partial(Path.write_text, data=text))
    write_marker(root, "synthetic.pathfinder", {**settings, "n": total, "seed": seeds,
                                                "merged": f"{len(parts)} processes, one seed each"})
    return root

