"""``python -m spt_theory.lra.gpu.twin`` (``scripts/lra_gpu_confirm.sh``): the GPU twin of the
CPU design of issue 42 on 1-layer Pathfinder-16: at least 8 seeds x {scratch, SPT then finetune,
W_Q W_K hybrid, frozen W_Q W_K, proximity init}, about 40k steps an arm, fitted to about 420 s of
training on one GPU.

Order: data (generated on the device by ``workers`` processes, image ``i`` of a split drawn from
the stream ``(seed, i)``, so the data do not depend on the number of processes; or ``--data
FILE.npz``, carried), bench (a few steps of each ensemble on the device), plan
(:mod:`spt_theory.lra.gpu.twin_plan`: shrunk in its registered order to fit ``--budget``), then
the seed groups one after the other: SPT pretraining of the group's seeds as one ensemble, then
every arm of them as one supervised ensemble (:mod:`spt_theory.lra.gpu.ensemble`).

Results stream: at every evaluation ``group-<k>.json`` (per arm and seed: the curve of validation
and test accuracy with the per-example test correctness ``test_correct`` {"n", "bits"}, seed,
``complete``) and ``summary.json`` (config, plan, bench, versions, data fingerprint, groups done)
are rewritten atomically in the run folder and in the export folder (``$OUT`` or ``--export``),
so a run cut off still returns every finished seed group and the curves so far.  The run folder
and the export folder are refused (one line, nothing changed) when they hold files this script
did not write.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from spt_theory.evidence import lra_schema, schema
from spt_theory.lra.gpu.twin_plan import (
    BUDGET_SECONDS,
    FULL,
    PRETRAINED,
    TINY,
    Rates,
    Sizes,
    assumed_rates,
    format_plan,
    plan,
)
from spt_theory.util.files import InputError, write_json
from spt_theory.util.provenance import make_owned

RUN_FILES = ("summary.json", "data.npz", "log.txt")
"""What the script writes besides ``group-<k>.json`` (and the ownership marker)."""


# ------------------------------------------------------------------------------ data
def _images(args: tuple) -> np.ndarray:
    from synthetic.pathfinder import PathfinderStyle, balanced_labels, generate_sample

    n, seed, start, stop, style = args
    labels = balanced_labels(n, seed)
    out = np.zeros((stop - start, style["size"] ** 2 + 1), dtype=np.uint8)
    for row, i in enumerate(range(start, stop)):
        sample = generate_sample(np.random.default_rng([seed, i]), int(labels[i]), PathfinderStyle(**style))
        out[row, :-1], out[row, -1] = sample.image.reshape(-1), sample.label
    return out


def generate(sizes: Sizes, workers: int) -> dict[str, np.ndarray]:
    """Train and validation images from seed 0 (the first ``n_train``, the next ``n_val``), test
    images from seed 1: x (uint8 pixels) and y per split."""
    style = {"size": sizes.side, "contour_length": sizes.contour_length, "distractors": sizes.distractors,
             "distractor_length": sizes.distractor_length, "match_distances": True}
    jobs = []
    for seed, n in ((0, sizes.n_train + sizes.n_val), (1, sizes.n_test)):
        chunk = max(1, -(-n // (4 * workers)))
        jobs += [(n, seed, a, min(n, a + chunk), style) for a in range(0, n, chunk)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        parts = list(pool.map(_images, jobs))
    first = np.concatenate(parts[:len(parts) - sum(1 for j in jobs if j[1] == 1)])
    test = np.concatenate(parts[len(parts) - sum(1 for j in jobs if j[1] == 1):])
    return {"x_train": first[:sizes.n_train, :-1], "y_train": first[:sizes.n_train, -1],
            "x_val": first[sizes.n_train:, :-1], "y_val": first[sizes.n_train:, -1],
            "x_test": test[:, :-1], "y_test": test[:, -1]}


def fingerprint(data: dict[str, np.ndarray]) -> str:
    digest = hashlib.sha256()
    for key in sorted(data):
        digest.update(key.encode())
        digest.update(np.ascontiguousarray(data[key]).tobytes())
    return digest.hexdigest()


def load_data(path: Path, sizes: Sizes) -> dict[str, np.ndarray]:
    """A carried data set (``--data``): the six arrays of :func:`generate`; InputError naming the file."""
    try:
        with np.load(path) as arrays:
            data = {k: arrays[k] for k in ("x_train", "y_train", "x_val", "y_val", "x_test", "y_test")}
    except (OSError, KeyError, ValueError) as error:
        raise InputError(f"{path}: not a twin data set ({error})") from None
    if data["x_train"].shape[1] != sizes.side ** 2:
        raise InputError(f"{path}: images of {data['x_train'].shape[1]} pixels, expected {sizes.side ** 2}")
    return data


# ------------------------------------------------------------------------------ output
class Output:
    """The run folder and the export folder, written atomically; each file names its writer."""

    def __init__(self, run: Path, export: Path | None):
        self.run, self.export = run, export
        self.log_lines: list[str] = []

    def write(self, name: str, obj) -> None:
        """``obj`` as ``name`` in both folders, after checking it against its format
        (:class:`~spt_theory.evidence.lra_schema.TwinSummary`, ``TwinGroup``): a file that would
        not read back is an error here, never written."""
        model = lra_schema.TwinSummary if name == "summary.json" else lra_schema.TwinGroup
        schema.parse(json.dumps(obj), model, name)
        for folder in (self.run, self.export):
            if folder is not None:
                write_json(folder / name, obj)

    def say(self, message: str) -> None:
        line = f"[gpu-twin] {message}"
        print(line, file=sys.stderr, flush=True)
        self.log_lines.append(line)
        for folder in (self.run, self.export):
            if folder is not None:
                (folder / "log.txt").write_text("\n".join(self.log_lines) + "\n")


def prepare(run: Path, export: Path | None) -> Output:
    """Claim the run folder (make_owned: refused, nothing changed, if it holds files not written
    here) and check the export folder holds nothing but this script's files."""
    make_owned(run, run.parent)
    if export is not None:
        if export.exists() and not export.is_dir():
            raise InputError(f"export folder {export}: not a folder")
        export.mkdir(parents=True, exist_ok=True)
        foreign = sorted(p.name for p in export.iterdir()
                         if p.name not in RUN_FILES and not (p.name.startswith("group-") and p.name.endswith(".json")))
        if foreign:
            raise InputError(f"export folder {export} holds {len(foreign)} entries this script did not write "
                             f"(e.g. {foreign[0]!r}): nothing was changed; give an empty folder")
    return Output(run, export)


def versions() -> dict:
    import torch

    return {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
            "cuda": torch.version.cuda, "platform": platform.platform(),
            "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"}


# ------------------------------------------------------------------------------ the run
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/lra_gpu_confirm.sh", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="?", type=Path, default=Path("runs/gpu-twin"), help="run folder")
    parser.add_argument("--dry-run", action="store_true", help="print the plan at the assumed throughput")
    parser.add_argument("--tiny", action="store_true", help="tiny sizes on the CPU (tests)")
    parser.add_argument("--budget", type=float, default=BUDGET_SECONDS, help="seconds of training (420)")
    parser.add_argument("--data", type=Path, help="a carried data set (.npz) instead of generating one")
    parser.add_argument("--export", type=Path, help="export folder (default $OUT)")
    parser.add_argument("--started", type=float, help="when the script started (seconds since the epoch)")
    args = parser.parse_args(argv)
    sizes = TINY if args.tiny else FULL
    try:
        if not args.budget > 0:
            raise InputError(f"--budget must be > 0, got {args.budget}")
        if args.dry_run:
            p = plan(sizes, assumed_rates(sizes), args.budget)
            print(format_plan(p))
            return 0 if p["fits"] else 2
        export = args.export or (Path(os.environ["OUT"]) if os.environ.get("OUT") else None)
        return run(sizes, args.out, export, args.budget, args.data, args.started or time.time())
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def run(sizes: Sizes, out: Path, export: Path | None, budget: float, data_path: Path | None, started: float) -> int:
    import torch

    from spt_theory.lra.gpu.twin_train import bench, train_group

    device = "cuda" if torch.cuda.is_available() and not sizes.tiny else "cpu"
    if not sizes.tiny and device != "cuda":
        raise InputError("no CUDA device visible to torch (--tiny: the pipeline on the CPU; --dry-run: the plan)")
    output = prepare(out, export)
    summary = {"kind": "gpu-twin", "design": "issue 42 item 4", "started": started, "versions": versions(),
               "budget_seconds": budget, "groups_done": [], "complete": False}
    t = time.time()
    data = load_data(data_path, sizes) if data_path else generate(sizes, sizes.workers)
    summary["data"] = {"fingerprint": fingerprint(data), "source": str(data_path) if data_path else "generated here",
                       "n_train": len(data["y_train"]), "n_val": len(data["y_val"]), "n_test": len(data["y_test"]),
                       "seconds": round(time.time() - t, 1)}
    if data_path is None:
        np.savez_compressed(out / "data.npz", **data)
    output.say(f"data: {summary['data']}")
    tensors = {k: torch.from_numpy(v.astype(np.uint8 if k.startswith("x") else np.int64)).to(device)
               for k, v in data.items()}
    rates: Rates = bench(sizes, tensors, device)
    summary["bench"] = rates.__dict__
    p = plan(sizes, rates, budget)
    summary["plan"] = p
    output.say("plan:\n" + format_plan(p))
    output.write("summary.json", summary)
    t = time.time()
    for k, seeds in enumerate(p["groups"]):
        def stream(runs: list[dict], k=k, seeds=seeds) -> None:
            output.write(f"group-{k}.json", {"group": k, "seeds": seeds, "arms": p["arms"], "runs": runs,
                                              "data": summary["data"]["fingerprint"], "config": p["sizes"]})
        train_group(sizes, p, seeds, tensors, device, stream, output.say,
                    pretrained=any(a in PRETRAINED for a in p["arms"]))
        summary["groups_done"].append(k)
        summary["train_seconds"] = round(time.time() - t, 1)
        output.write("summary.json", summary)
    summary["complete"] = True
    output.write("summary.json", summary)
    output.say(f"done: {len(p['seeds'])} seeds x {len(p['arms'])} arms in {summary['train_seconds']} s of training")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
