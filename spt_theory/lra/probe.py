"""``python -m spt_theory.lra probe RESULT_OR_FOLDER``: the attention mechanism of LRA checkpoints.

For each result JSON (a ``scratch`` or ``spt`` run of :mod:`spt_theory.lra.runner`) the probe
loads the checkpoints the run went through, at the epochs its metrics were read:

- ``init``: the random initialisation of the run's seed (rebuilt, as the runner builds it);
- ``scratch``: the supervised checkpoint of a scratch run at its best validation epoch;
- ``spt``: the SPT checkpoint an ``spt`` run finetuned from (best validation masked loss),
  probed on the test split of the data it was pretrained on;
- ``finetuned``: the supervised checkpoint of an ``spt`` run at its best validation epoch;

and measures over the test split (padding masked as in training), per layer, with the probes of
:mod:`spt_theory.analysis.probes`:

- the attention share by offset, s_h(delta) = mean over real queries i of A_h[i, i + delta]
  (:func:`~spt_theory.analysis.probes.offset_mass`), kept for |delta| <= ``MAX_OFFSET``;
- band mass, sum_{|delta| <= 2} s(delta), against its value under uniform attention over the
  real keys (the ratio is 1 for attention blind to position);
- for pixel tasks also the 2-D neighbour share, s(-1) + s(1) + s(-W) + s(W) for an image of
  width W in raster order (the pixel's left, right, upper and lower neighbours), against uniform;
- the Toeplitz fit of the PE-PE score block (:func:`~spt_theory.analysis.probes.pe_toeplitz_fit`).

The checkpoints are read from ``<out>/cache`` and the results go to
``<out>/probes/<task>/<kind>-<cache key>.json`` (recomputed only when missing or unreadable), a
table on stdout.  ``<out>`` is a folder named on the command line (``--out``), or the run folder
the result file lies in (``<out>/results/<task>/``): never a path recorded in the result, and a
recorded ``out`` leading up (``..``) is refused.  The data are read from ``--data-dir`` (and
``--pretrain-data-dir``, by default ``--data-dir``), never from the folder the result recorded: a
result whose data fingerprint differs from the data given is refused.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import torch

from spt_theory.analysis.probes import offset_mass, pe_toeplitz_fit, uniform_pattern
from spt_theory.core.inits import grid2d_neighbours
from spt_theory.core.model import Encoder
from spt_theory.lra.inputs import LRATask
from spt_theory.lra.report import result_files, setting
from spt_theory.lra.runner import LRARun, options_from_json
from spt_theory.training.cache import StageCache, load_checkpoint
from spt_theory.training.loop import load_model_state
from spt_theory.training.runtime import Runtime
from spt_theory.util.files import InputError, announce, read_json, write_json
from spt_theory.util.progress import Progress
from spt_theory.util.tables import table

MAX_OFFSET = 40
BAND = 2
PROBE_VERSION = 1


def read_cache(path: Path, version: int, limit: int | None, say: bool = True) -> dict | None:
    """The cached JSON at ``path`` if it is one of ``version`` computed with ``limit``, else None
    (recompute it); an unreadable file is said on stderr (with ``say``) and recomputed."""
    if not path.exists():
        return None
    try:
        cached = read_json(path)
    except InputError as error:
        if say:
            print(f"{error}: an unreadable cache, recomputed", file=sys.stderr, flush=True)
        return None
    if isinstance(cached, dict) and cached.get("version") == version and cached.get("limit") == limit:
        return cached
    return None


def checkpoints(run: LRARun, result: dict) -> list[tuple[str, Path | None]]:
    """(label, checkpoint) pairs of the run behind ``result``; None stands for the initialisation."""
    own = StageCache(run.options.out / "cache", result["cache"]).checkpoint(result["metrics"]["best_epoch"])
    if result["kind"] == "scratch":
        return [("init", None), ("scratch", own)]
    pretrained = result["pretrain"]
    spt = StageCache(run.options.out / "cache", pretrained["cache"]).checkpoint(pretrained["best_epoch"])
    return [("init", None), ("spt", spt), ("finetuned", own)]


@torch.no_grad()
def attention_statistics(model: Encoder, task: LRATask, x: torch.Tensor, limit: int | None = None,
                         shown: Progress | None = None) -> list[dict]:
    """Per layer: share by offset, band mass and (pixel tasks) 2-D neighbour share, each with its
    value under uniform attention, over the examples ``x`` (the first ``limit`` of them); each
    batch done counts on ``shown``."""
    x = x[:limit] if limit else x
    width = x.shape[-1]
    totals = [torch.zeros(model.cfg.n_heads, 2 * width - 1, dtype=torch.float64) for _ in model.blocks]
    uniform_total = torch.zeros(1, 2 * width - 1, dtype=torch.float64)
    side = math.isqrt(width)
    grid2d = grid2d_neighbours(side) if not task.tokens and side * side == width else None  # [query, key]
    grid2d_totals = [0.0 for _ in model.blocks]
    grid2d_queries = 0
    queries = 0
    model.eval()
    for index in task.batches(x):
        xb = task.trim(x[index])
        valid = task.valid(xb)
        _, cache = model.run_with_cache(task.inputs(xb), valid=valid)
        n = xb.shape[-1]
        centre = slice(width - n, width + n - 1)
        for layer, total in enumerate(totals):
            pattern = cache[f"blocks.{layer}.attn.pattern"]
            pattern = pattern[:, :, 1:, 1:] if model.cls is not None else pattern  # tokens only
            sums, count = offset_mass(pattern.double(), valid)
            total[:, centre] += sums.cpu()
            if grid2d is not None:  # [batch, head, query, key] on the true 2-D neighbours
                grid2d_totals[layer] += float((pattern.double().cpu() * grid2d).sum()) / pattern.shape[1]
        real = valid if valid is not None else torch.ones(xb.shape[:2], dtype=torch.bool, device=xb.device)
        sums, count = offset_mass(uniform_pattern(real).double(), real)
        uniform_total[:, centre] += sums.cpu()
        queries += count
        grid2d_queries += xb.shape[0] * xb.shape[-1]
        if shown is not None:
            shown.update()
    deltas = torch.arange(-(width - 1), width)
    uniform = uniform_total[0] / queries
    layers = []
    for layer, total in enumerate(totals):
        share = total / queries  # (heads, 2 width - 1)
        mean = share.mean(0)
        stats: dict[str, Any] = {"layer": layer,
                 "offset_share": _by_offset(deltas, mean), "uniform_offset_share": _by_offset(deltas, uniform),
                 "offset_share_per_head": [_by_offset(deltas, s) for s in share],
                 "band_mass": _window(deltas, mean, BAND), "uniform_band_mass": _window(deltas, uniform, BAND)}
        stats["band_ratio"] = stats["band_mass"] / stats["uniform_band_mass"]
        if not task.tokens:
            side = math.isqrt(width)
            grid = (-side, -1, 1, side)
            stats["grid_neighbour_share"] = sum(float(mean[deltas == d]) for d in grid)
            stats["uniform_grid_neighbour_share"] = sum(float(uniform[deltas == d]) for d in grid)
            stats["grid_ratio"] = stats["grid_neighbour_share"] / stats["uniform_grid_neighbour_share"]
        if grid2d is not None:  # true 2-D neighbours (no row wrap: grid_ratio counts +-1 across a row's end)
            stats["grid2d_neighbour_share"] = grid2d_totals[layer] / grid2d_queries
            stats["uniform_grid2d_neighbour_share"] = float(grid2d.sum()) / width ** 2
            stats["grid2d_ratio"] = stats["grid2d_neighbour_share"] / stats["uniform_grid2d_neighbour_share"]
        fit = pe_toeplitz_fit(model, layer)
        stats["pe_toeplitz"] = {"r2": fit["r2"], "heads_peaked_near": fit["heads_peaked_near"],
                                "peak_offsets": [h["peak_offset"] for h in fit["heads"]]}
        layers.append(stats)
    return layers


def _by_offset(deltas: torch.Tensor, share: torch.Tensor) -> dict[str, float]:
    near = deltas.abs() <= MAX_OFFSET
    return {str(int(d)): round(float(s), 6) for d, s in zip(deltas[near], share[near])}


def _window(deltas: torch.Tensor, share: torch.Tensor, width: int) -> float:
    return float(share[deltas.abs() <= width].sum())


def probe_result(result: dict, limit: int | None = None, data_cache: dict | None = None,
                 runtime: Runtime = Runtime(), progress: bool = True, *, out: Path, data_dir: Path,
                 pretrain_data_dir: Path | None = None) -> dict:
    """The probe of one run's result, its checkpoints read from ``out/cache`` (``out``: the run
    folder, never the result's recorded one) and its data from ``data_dir`` (``pretrain_data_dir``
    for the SPT checkpoint, by default ``data_dir``), never the result's recorded folders; cached
    in ``out/probes/``, recomputed when missing, with progress over its batches, and announced when
    written; on the runtime's device.  Its ``setting`` names the run's cell
    (:func:`spt_theory.lra.report.setting`).  InputError if the data's fingerprint is not the one
    the result recorded."""
    check_fields(result)
    run = LRARun(options_from_json(result["options"], progress=False, out=Path(out), data_dir=Path(data_dir),
                                   pretrain_data_dir=None if pretrain_data_dir is None else Path(pretrain_data_dir)),
                 runtime, data_cache or {})
    recorded = result.get("data", {}).get("fingerprint") if isinstance(result.get("data"), dict) else None
    _, fingerprint, *_ = run.setup_target()
    if recorded is not None and recorded != fingerprint:
        raise InputError(f"{result['task']} {result['kind']} result {result['cache']}: trained on data with "
                         f"fingerprint {recorded}, --data-dir {data_dir} holds {fingerprint}: give the data it "
                         f"was trained on")
    out = run.options.out / "probes" / result["task"] / f"{result['kind']}-{result['cache']}.json"
    cell = setting(result)
    cached = read_cache(out, PROBE_VERSION, limit, say=runtime.main)
    if cached is not None and isinstance(cached.get("probes"), list):
        return {**cached, "setting": cell}
    probes = []
    for label, checkpoint in checkpoints(run, result):
        # the SPT checkpoint is probed on the data it was pretrained on (another task's, if so)
        data, _, task, model_config = run.setup_source() if label == "spt" else run.setup_target()
        model = run.initial_model(model_config)
        if checkpoint is not None:
            if not checkpoint.exists():
                raise InputError(f"checkpoint {checkpoint} of the {result['kind']} run {result['cache']} is "
                                 f"missing (was the cache moved or pruned?)")
            load_model_state(model, load_checkpoint(checkpoint)["model"], checkpoint)
        x = data.x_test[:limit] if limit else data.x_test
        with Progress(f"probe {result['task']} {result['kind']} seed {result['seed']} [{cell}]: {label}",
                      len(task.batches(x)), "batches", enabled=progress and runtime.main) as shown:
            layers = attention_statistics(model, task, x, shown=shown)
        probes.append({"checkpoint": label, "path": None if checkpoint is None else str(checkpoint),
                       "layers": layers})
    report = {"version": PROBE_VERSION, "task": result["task"], "kind": result["kind"],
              "seed": result["seed"], "cache": result["cache"], "options": result["options"],
              "test_accuracy": result["metrics"]["test_accuracy"], "limit": limit,
              "n_examples": min(limit or len(data.x_test), len(data.x_test)), "probes": probes,
              "pretrain_task": result.get("pretrain_task"), "setting": cell}
    if runtime.main:
        announce(write_json(out, report))
    return report


def check_fields(result: dict) -> None:
    """InputError unless ``result`` has the fields that find its checkpoints."""
    missing = [name for name in ("cache", "options", "pretrain") if name not in result
               and (name != "pretrain" or result["kind"] == "spt")]
    missing += [] if "best_epoch" in result["metrics"] else ["metrics.best_epoch"]
    if missing:
        raise InputError(f"{result['task']} {result['kind']} result (seed {result.get('seed')}): no field "
                         f"{missing[0]}, needed to find its checkpoints (written by an older version?)")


def probe_files(target: str | Path, limit: int | None = None, progress: bool = True,
                out: Path | None = None, data_dir: Path | None = None,
                pretrain_data_dir: Path | None = None) -> list[dict]:
    """Probe every Transformer result JSON at ``target`` (a file or a folder, read by
    :func:`spt_theory.lra.report.load_results`; controls have no attention) in the run folder
    ``out``, by default each result's own (:func:`run_folder`), on the data in ``data_dir``
    (``--data-dir``; InputError when None: the folder a result records is never read)."""
    found = [(path, result) for path, result in result_files(target) if result["kind"] != "control"]
    for _, result in found:  # every file checked before any probe
        check_fields(result)
    folders = [run_folder(path, result, out) for path, result in found]
    if data_dir is None:
        path, result = found[0]
        recorded = result["options"].get("data_dir") if isinstance(result.get("options"), dict) else None
        raise InputError(f"{path}: give --data-dir, the data the run was trained on (the probe never reads the "
                         f"folder a result records{'' if recorded is None else f', here {recorded!r}'})")
    return [probe_result(result, limit, progress=progress, out=folder, data_dir=data_dir,
                         pretrain_data_dir=pretrain_data_dir)
            for (_, result), folder in zip(found, folders)]


def run_folder(path: Path, result: dict, out: Path | None = None) -> Path:
    """The run folder of the result file ``path``: ``out`` if given, else the folder ``path`` lies
    in as ``<folder>/results/<task>/<file>``.  InputError if the result's recorded ``options.out``
    leads up (``..``: it is never followed), or if ``path`` lies elsewhere and ``out`` is None."""
    recorded = result["options"].get("out") if isinstance(result.get("options"), dict) else None
    if isinstance(recorded, str) and ".." in Path(recorded).parts:
        raise InputError(f"{path}: field options.out {recorded!r} leads up ('..'): refused (the probe never "
                         f"follows it; --out names the run folder)")
    if out is not None:
        return Path(out)
    if path.parent.name != result["task"] or path.parent.parent.name != "results":
        raise InputError(f"{path}: not in a run folder's results/{result['task']}/, so its cache is not "
                         f"known: give --out RUN_FOLDER (the folder holding cache/)")
    return path.parent.parent.parent


def format_probe(report: dict) -> str:
    """A header naming the run's cell, then a table of one row per (checkpoint, layer): band mass
    and its ratio to uniform, 2-D neighbours (a 2-D task), shares by offset, Toeplitz fit."""
    lines = [f"{report['task']} {report['kind']} [{report['setting']}] seed {report['seed']} "
             f"({report['n_examples']} test examples, test acc {100 * report['test_accuracy']:.2f}%):"]
    layers = [(probe["checkpoint"], stats) for probe in report["probes"] for stats in probe["layers"]]
    grid = any("grid_ratio" in stats for _, stats in layers)
    headers = ["checkpoint", "layer", "band mass", "x uniform", "uniform",
               *(["2-D neighbours", "x uniform"] if grid else []), "share by offset -2 -1 0 1 2", "PE-PE Toeplitz R2"]
    rows = []
    for checkpoint, stats in layers:
        shares = " ".join(f"{stats['offset_share'][str(d)]:.3f}" for d in (-2, -1, 0, 1, 2))
        neighbours = ([f"{stats['grid_neighbour_share']:.4f}", f"{stats['grid_ratio']:.2f}x"] if "grid_ratio" in stats
                      else ["", ""])
        rows.append([checkpoint, stats["layer"], f"{stats['band_mass']:.4f}", f"{stats['band_ratio']:.2f}x",
                     f"{stats['uniform_band_mass']:.4f}", *(neighbours if grid else []), shares,
                     f"{stats['pe_toeplitz']['r2']:.2f}"])
    align = "<>>>>" + (">>" if grid else "") + "<>"
    lines += ["  " + text for text in table(rows, headers, align=align, rule=True).splitlines()]
    return "\n".join(lines)
