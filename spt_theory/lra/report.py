"""``python -m spt_theory.lra report``: result JSONs as a table against the LRA reference numbers.

One row per finished ``scratch`` / ``spt`` run found (recursively) under the results folder:
task, recipe, ablation settings, seed, the data (generated here or a release copy, its content
fingerprint and test size), test accuracy at the best validation epoch, the Transformer trained
from scratch in the LRA paper (Tay et al.) and the difference, which is shown only for runs at
the reference's setting (release data, the task's paper config): a number from generated or
smaller data is not comparable with it.  Below it, for every setting run both ways, the SPT gain
over scratch.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from spt_theory.lra.tasks import config_for, reference, references_text, task_names
from spt_theory.util.files import InputError, read_json
from spt_theory.util.tables import table

RECIPES = ("scratch", "spt", "control")
CACHE_KEY = re.compile(r"[0-9a-f]{16}")
"""A run's ``cache`` field: the name of its stage folder under OUT/cache \
(:func:`spt_theory.training.cache.config_hash`)."""
COLUMNS = ("task", "recipe", "setting", "seed", "epochs", "data", "n test", "test acc %", "LRA ref %", "vs ref")


def load_results(target: str | Path) -> list[dict]:
    """Every ``scratch`` / ``spt`` / ``control`` result JSON at ``target`` (one file, or a folder searched
    recursively); InputError for a missing target or a broken file."""
    return [result for _, result in result_files(target)]


def result_files(target: str | Path) -> list[tuple[Path, dict]]:
    """(file, result) of every result JSON :func:`load_results` reads at ``target``."""
    target = Path(target)
    if not target.exists():
        raise InputError(f"no such result file or folder: {target} does not exist "
                         f"(run 'python -m spt_theory.lra confirm ...' first)")
    results = []
    for path in [target] if target.is_file() else sorted(target.rglob("*.json")):
        result = read_json(path)
        if not isinstance(result, dict) or result.get("kind") not in RECIPES:
            continue
        try:
            float(result["metrics"]["test_accuracy"])
            if result["task"] not in task_names():
                raise KeyError("task")
            keys = {"cache": result.get("cache"), "pretrain.cache": (result.get("pretrain") or {}).get("cache")}
            for field, key in keys.items():  # a key names a folder of OUT/cache, never a path leading elsewhere
                if key is not None and not CACHE_KEY.fullmatch(str(key)):
                    raise KeyError(field)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise InputError(f"{path}: result JSON without a valid {error} field") from None
        results.append((path, result))
    if not results:
        raise InputError(f"no scratch/spt result JSON under {target}")
    return results


def setting(result: dict) -> str:
    """The run's ablation settings in words (what differs from the paper's recipe)."""
    config, options = result["config"], result["options"]
    parts = ([f"control {result['model']['kind']}"] if result["kind"] == "control"
             else [f"{config.get('n_layers', config.get('layers'))}L d{config['d_model']}"])
    if result["kind"] == "spt":
        pretrain = result.get("pretrain_task", result["task"])
        parts.append(f"SPT {result['pretrain']['epochs_run']}ep"
                     + ("" if pretrain == result["task"] else f" on {pretrain}"))
        if tuple(options["keep"]) != ("qk", "vo", "mlp", "norm", "embed"):
            parts.append("keep " + "+".join(options["keep"]))
    if options["freeze"]:
        parts.append("freeze " + "+".join(options["freeze"]))
    if options.get("tiny"):
        parts.append("tiny")
    data = result.get("data", {})
    if "mean_length" in data:
        parts.append(f"len {data['mean_length']:.0f}/{data['width']}, {data['n_train']} train")
    padding = data.get("padding", {})
    if padding and (padding["pooling"] != "mean" or not padding["masked"]) and result["config"]["masking"] == "token":
        parts.append(f"pool {padding['pooling']}" + ("" if padding["masked"] else ", padding unmasked"))
    return ", ".join(parts)


def data_origin(result: dict) -> str:
    """'generated <fingerprint>' or 'release <fingerprint>' ('?' for results written before the
    data source was recorded)."""
    data = result.get("data", {})
    origin = data.get("source", {}).get("origin", "?")
    return f"{origin} {data.get('fingerprint', '?')[:8]}"


def at_reference_setting(result: dict) -> bool:
    """Release data and the task's paper config (no size, layer or training override); False for a
    task without reference numbers (nothing to hold it to)."""
    if reference(result["task"]) is None:
        return False
    paper = dataclasses.asdict(config_for(result["task"]))
    config = {**result["config"], "max_steps": paper["max_steps"]}
    return (result.get("data", {}).get("source", {}).get("origin") == "release"
            and all(config.get(k) == v for k, v in paper.items()))


def rows(results: list[dict]) -> list[tuple[str, ...]]:
    tasks = task_names()
    ordered = sorted(results, key=lambda r: (tasks.index(r["task"]) if r["task"] in tasks else len(tasks),
                                             r["task"], setting(r), r["kind"], r["seed"]))
    found: list[tuple[str, ...]] = []
    for r in ordered:
        accuracy, ref = 100 * r["metrics"]["test_accuracy"], reference(r["task"])
        versus = f"{accuracy - ref:+.2f}" if ref is not None and at_reference_setting(r) else "-"
        found.append((r["task"], r["kind"], setting(r), str(r["seed"]), str(r["metrics"]["epochs_run"]),
                      data_origin(r), str(r.get("data", {}).get("n_test", "?")), f"{accuracy:.2f}",
                      "-" if ref is None else f"{ref:.2f}", versus))
    return found


def _supervised_identity(result: dict) -> str:
    """What a scratch run and an SPT run must share to be compared: task, data, seed, model and
    the supervised stage (its ``keep`` aside, which only says what came from the checkpoint)."""
    stage = {k: v for k, v in result["stages"][-1].items() if k != "keep"}
    return json.dumps([result["task"], result["data"]["fingerprint"], result["seed"], result["model"], stage],
                      sort_keys=True)


def gains(results: list[dict]) -> list[str]:
    """'task [setting] seed: scratch a% -> SPT b% (+d)' for every SPT run with a matching scratch run."""
    scratch = {_supervised_identity(r): r for r in results if r["kind"] == "scratch"}
    lines = []
    for r in results:
        base = scratch.get(_supervised_identity(r)) if r["kind"] == "spt" else None
        if base is not None:
            a, b = 100 * base["metrics"]["test_accuracy"], 100 * r["metrics"]["test_accuracy"]
            lines.append(f"{r['task']} [{setting(r)}] seed {r['seed']}: scratch {a:.2f}% -> SPT {b:.2f}% "
                         f"({b - a:+.2f})")
    return sorted(lines)


def format_report(results: list[dict]) -> str:
    lines = table(rows(results), COLUMNS, rule=True).splitlines()
    pairs = gains(results)
    if pairs:
        lines += ["", "SPT vs scratch (same data, model, seed and supervised stage):"] + pairs
    lines += ["", f"LRA ref: Transformer from scratch, Tay et al. ({references_text()}); test acc at the best "
              "validation epoch; 'vs ref' only for "
              "runs at the reference's setting (release data, the task's paper config)."]
    return "\n".join(lines)
