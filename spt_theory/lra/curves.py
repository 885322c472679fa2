"""Accuracy against optimiser steps: the equal-step comparison of scratch and SPT on an LRA task.

SPT's gain can be a speed-up (on the walk task scratch leaves its plateau after 19-26 epochs), so
an arm is read against the optimiser steps it took, SPT's pretraining steps counted: a finetuned
run's supervised epoch e sits at step ``P + min(e S, max_steps)``, with ``P`` the pretraining's
steps (its epochs times its steps per epoch, capped the same way) and ``S = ceil(n_train / batch)``;
a scratch or control run's at ``min(e S, max_steps)``.

A curve point holds the epoch, its step, the validation and test accuracy and, for runs trained
since it is kept, ``test_correct``: which test examples were right, in the split's order
(:mod:`spt_theory.evidence.correctness`; the claims pair arms on it).  A stage cached before
has none: its points go without.

:func:`run_steps` gives a run's curve (validation and test accuracy after every supervised epoch)
and, for a Transformer whose epoch checkpoints were kept (``SPT_KEEP_CHECKPOINTS=all``), the
proximity of its attention at each of them, SPT's and finetuning's (band mass |i-j| <= 2 over its
uniform value; for images also the 2-D neighbour share over uniform: :mod:`spt_theory.lra.probe`),
cached in ``<out>/steps/<task>/<kind>-<cache>.json``.  :func:`best_within` reads a curve
at a budget; :func:`check_runs` checks runs read from a summary; :func:`draw` is the figure.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from spt_theory.evidence.correctness import FIELD, test_correctness
from spt_theory.training.cache import StageCache, load_checkpoint
from spt_theory.training.loop import load_model_state, stage_steps
from spt_theory.util.files import is_number, require, write_json

STEPS_VERSION = 1


def run_steps(run, result: dict, probe_limit: int | None) -> dict:
    """Steps per epoch, pretraining steps, the accuracy curve and (kept checkpoints) the proximity
    trajectory of the run behind ``result`` (module doc)."""
    data, _, _, _ = run.setup_target()
    per_epoch = math.ceil(len(data.y_train) / run.config.batch_size)
    pretrain_steps = 0
    if result["kind"] == "spt":
        source, _, _, _ = run.setup_source()
        pretrain_steps = stage_steps(len(source.y_train), result["pretrain"]["epochs_run"], run.source.batch_size,
                                     run.source.max_steps)
    curve = [{"epoch": r["epoch"], "step": pretrain_steps + stage_steps(len(data.y_train), r["epoch"],
                                                                        run.config.batch_size, run.config.max_steps),
              "val_accuracy": r["val_accuracy"], "test_accuracy": r["test_accuracy"],
              **({FIELD: r[FIELD]} if FIELD in r else {})} for r in result["history"]]
    found = {"steps_per_epoch": per_epoch, "pretrain_steps": pretrain_steps, "curve": curve}
    if result["kind"] in ("scratch", "spt"):
        found["proximity"] = trajectory(run, result, probe_limit, pretrain_steps)
    return found


def trajectory(run, result: dict, limit: int | None, pretrain_steps: int) -> list[dict]:
    """The proximity at every kept epoch checkpoint of the run (SPT's first), cached."""
    from spt_theory.lra.probe import attention_statistics, read_cache

    out = run.options.out / "steps" / result["task"] / f"{result['kind']}-{result['cache']}.json"
    cached = read_cache(out, STEPS_VERSION, limit, say=run.runtime.main)
    if cached is not None and isinstance(cached.get("points"), list):
        return cached["points"]
    stages = []
    if result["kind"] == "spt":
        source = run.setup_source()
        stages.append(("spt", result["pretrain"]["cache"], result["pretrain"]["epochs_run"], source,
                       lambda e: stage_steps(len(source[0].y_train), e, run.source.batch_size, run.source.max_steps)))
    target = run.setup_target()
    stages.append(("supervised", result["cache"], result["metrics"]["epochs_run"], target,
                   lambda e: pretrain_steps + stage_steps(len(target[0].y_train), e, run.config.batch_size,
                                                          run.config.max_steps)))
    points = []
    for stage, key, epochs, (data, _, task, model_config), step_of in stages:
        cache = StageCache(run.options.out / "cache", key)
        for epoch in range(1, epochs + 1):
            path = cache.checkpoint(epoch)
            if not path.exists():
                continue
            model = run.initial_model(model_config)
            load_model_state(model, load_checkpoint(path)["model"], path)
            stats = attention_statistics(model, task, data.x_test, limit)[0]
            points.append({"stage": stage, "epoch": epoch, "step": step_of(epoch),
                           **{k: stats[k] for k in ("band_ratio", "grid_ratio") if k in stats}})
    write_json(out, {"version": STEPS_VERSION, "limit": limit, "cache": result["cache"], "points": points})
    return points


def check_runs(path: Path, where: str, runs, keys: tuple[str, ...], metric: str | None = None) -> None:
    """``runs`` as a reader of ``path`` needs them: a non-empty array of runs with numeric
    ``pretrain_steps`` and a non-empty curve whose points hold the numbers ``keys``; with
    ``metric``, proximity points (the list may be absent or empty) each holding the numbers
    ``step`` and ``metric`` (:func:`draw` averages ``metric`` over every point).
    InputError naming the file and the field ``<where>.runs[i]`` otherwise."""
    require(isinstance(runs, list) and runs, path, f"{where}.runs", "a non-empty array")
    proximity = "" if metric is None else f" and proximity points of (step, {metric}) numbers"
    for i, run in enumerate(runs):
        curve = run.get("curve") if isinstance(run, dict) else None
        points = run.get("proximity", []) if isinstance(run, dict) and metric is not None else []
        require(isinstance(curve, list) and curve and is_number(run.get("pretrain_steps"))
                and all(isinstance(point, dict) and all(is_number(point.get(k)) for k in keys) for point in curve)
                and isinstance(points, list)
                and all(isinstance(p, dict) and is_number(p.get("step")) and is_number(p.get(metric)) for p in points),
                path, f"{where}.runs[{i}]",
                f"a run with pretrain_steps and a non-empty curve of ({', '.join(keys)}) numbers{proximity}")


SELECTION_RULES = ("mean", "first", "last")
"""How the best-validation epoch is picked among ties: ``mean`` of their test accuracies (the
rule every claim reads: it favours neither an arm that peaks early nor one that peaks late),
``first`` or ``last`` (kept beside it in the details, to show whether a verdict hinges on it)."""


def best_points_within(curve: list[dict], steps: float | None = None, rule: str = "mean") -> list[dict]:
    """The evaluations :func:`best_within` reads: those at the best validation accuracy among the
    evaluations done by ``steps`` (all when None): every tied one for ``mean``, the first or the
    last for the other rules; [] if no evaluation is that early."""
    if rule not in SELECTION_RULES:
        raise ValueError(f"rule must be one of {SELECTION_RULES}, got {rule!r}")
    done = [point for point in curve if steps is None or point["step"] <= steps]
    if not done:
        return []
    best = max(point["val_accuracy"] for point in done)
    tied = [point for point in done if point["val_accuracy"] == best]
    return tied if rule == "mean" else [tied[0] if rule == "first" else tied[-1]]


def best_correctness(curve: list[dict], steps: int | None, path: str | Path, where: str) -> np.ndarray | None:
    """The per-example test correctness at the evaluations :func:`best_within` reads (ties: the
    mean of their correctness, as the accuracy is their mean); None if no evaluation is that early;
    EvidenceError naming ``path`` and ``where`` if one lacks it (what claims pair arms on)."""
    points = best_points_within(curve, steps)
    if not points:
        return None
    return np.mean([test_correctness(point, path, where) for point in points], axis=0)


def best_within(curve: list[dict], steps: float | None = None, rule: str = "mean") -> float | None:
    """Test accuracy at the best validation accuracy among the evaluations done by ``steps``
    optimiser steps (all when None), ties resolved by ``rule`` (:data:`SELECTION_RULES`); None
    if no evaluation is that early.

    >>> curve = [{"step": 1, "val_accuracy": .5, "test_accuracy": .4},
    ...          {"step": 2, "val_accuracy": .5, "test_accuracy": .6}]
    >>> [best_within(curve, None, rule) for rule in SELECTION_RULES]
    [0.5, 0.4, 0.6]
    """
    points = best_points_within(curve, steps, rule)
    return sum(p["test_accuracy"] for p in points) / len(points) if points else None


ARM_COLOURS = {"scratch": "#777777", "spt": "#4c72b0", "cnn": "#55a868", "lstm": "#55a868", "bag": "#8172b2"}


def proximity_metric(summary: dict) -> str:
    """The proximity the steps figure draws: the 2-D neighbour share for pixel masking, else band mass."""
    return "grid_ratio" if summary["config"]["masking"] == "pixel" else "band_ratio"


def draw(summaries: list[dict], path: Path) -> list[Path]:
    """Test accuracy against optimiser steps, one column per task summary: every scratch and
    plain SPT cell (mean over seeds, thin lines: seeds; SPT's curve starts after its pretraining
    steps, the shaded span) and the trained controls; dotted: majority class, dashed: the other
    baselines.  Below, the proximity of the attention (band mass or 2-D neighbour share over
    uniform; mean over the seeds whose checkpoint at that step was kept) along the same steps.  Writes ``path`` as
    PNG and PDF."""
    from spt_theory.util.plotting import plt, save_figure  # matplotlib on the Agg backend

    fig, axes = plt.subplots(2, len(summaries), figsize=(6 * len(summaries), 7), sharex="col", squeeze=False)
    for column, summary in enumerate(summaries):
        top, bottom = axes[0][column], axes[1][column]
        metric = proximity_metric(summary)
        arms = [(row["label"], row["cell"]["recipe"], row["runs"]) for row in summary["cells"]
                if _plain(row["cell"])]
        arms += [(f"control {kind}", kind, entry["runs"]) for kind, entry in summary.get("controls", {}).items()
                 if "runs" in entry]
        for label, recipe, runs in arms:
            colour = ARM_COLOURS[recipe]
            for run in runs:
                top.plot([p["step"] for p in run["curve"]], [100 * p["test_accuracy"] for p in run["curve"]],
                         color=colour, lw=0.6, alpha=0.4)
            steps, mean = _mean_curve([run["curve"] for run in runs], "test_accuracy")
            top.plot(steps, [100 * v for v in mean], color=colour, lw=2, label=label,
                     ls="-" if recipe in ("scratch", "spt") else "--")
            if recipe == "spt":
                top.axvspan(0, runs[0]["pretrain_steps"], color=colour, alpha=0.06)
            points = [run.get("proximity", []) for run in runs]
            if any(points):
                steps, mean = _mean_curve(points, metric)
                bottom.plot(steps, mean, "o-", color=colour, ms=3, label=label)
        for kind, entry in summary.get("controls", {}).items():
            if "runs" not in entry:
                top.axhline(100 * entry["test_accuracy"], color="k", lw=0.8, ls=":" if kind == "majority" else "-.")
                top.annotate(kind, (0, 100 * entry["test_accuracy"]), fontsize=7, va="bottom")
        top.set_title(f"{summary['task']}: {summary['data']['n_train']} train, seeds {summary['seeds']}", fontsize=9)
        top.set_ylabel("test accuracy (%)")
        top.legend(fontsize=7, loc="best")
        bottom.axhline(1.0, color="k", lw=0.8, ls=":")
        bottom.set_ylabel(("2-D neighbour share" if metric == "grid_ratio" else "band mass |i-j|<=2") + " / uniform")
        bottom.set_xlabel("optimiser steps (SPT's counted)")
    fig.tight_layout()
    written = [save_figure(fig, path.with_suffix(suffix), dpi=130) for suffix in (".png", ".pdf")]
    plt.close(fig)
    return written


def _plain(cell: dict) -> bool:
    """A scratch or SPT cell without ablation (its curve goes into the figure)."""
    return (cell["freeze"] == "none" and cell["keep"] == "all" and cell["pretrain_task"] == "self"
            and cell["layers"] is None and cell["pretrain_epochs"] is None)


def _mean_curve(curves: list[list[dict]], key: str) -> tuple[list[int], list[float]]:
    """Every step of any curve and the mean of ``key`` over the curves that have it."""
    values: dict[int, list[float]] = {}
    for curve in curves:
        for point in curve:
            values.setdefault(point["step"], []).append(point[key])
    steps = sorted(values)
    return steps, [sum(values[s]) / len(values[s]) for s in steps]
