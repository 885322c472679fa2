"""The escape race on Pathfinder-16 (claim L5): who leaves the 50% plateau first, scratch or SPT?

The race and its rules were registered before any of its runs
(``docs/preregistration/2026-12-02-lra-verdicts-and-escape-race.md``; the thresholds sit beside
the claim, :mod:`spt_theory.checks.race`).  Per seed: scratch for :data:`TOTAL_STEPS` supervised
steps against SPT for :data:`PRETRAIN_EPOCHS` epochs (3,000 steps) then finetuning for the rest,
SPT's steps counted; validation and test accuracy after every epoch (500 steps).

``scripts/escape_race.sh`` trains the arms (``lra scratch`` / ``lra finetune`` with
:data:`OVERRIDES`; resumable).  :func:`collect` reads every arm's per-epoch history from its stage
cache (the newest checkpoint holds it, so a race still running is read as far as it got) and
builds the evidence (:class:`~spt_theory.evidence.lra_schema.RaceEvidence`): every evaluation of
every arm and seed with the total steps, the seconds and the FLOPs so far (and, for stages trained
since it is kept, which test examples were right: ``test_correct``).  ``python -m
spt_theory.lra race --out OUT --data-dir D`` writes it to ``OUT/race/pathfinder16.json``;
``--promote`` copies it into the committed evidence.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

from spt_theory.bench.cases import train_step_flops
from spt_theory.core.args import SETTING_ALIASES, registered_spelling
from spt_theory.evidence import lra_schema, schema
from spt_theory.evidence.correctness import FIELD
from spt_theory.lra.curves import best_within
from spt_theory.lra.designs import RACE
from spt_theory.lra.runner import LRARun, RunOptions, options_json, versions
from spt_theory.lra.sweep_cells import cells as parse_cells
from spt_theory.training.cache import load_checkpoint
from spt_theory.util.files import InputError, write_json

TASK = RACE.task
SEEDS = RACE.seeds
TOTAL_STEPS = RACE.arms["recipe=spt"]
PRETRAIN_EPOCHS = RACE.pretrain_epochs or 0
SCRATCH_EPOCHS = next(c["finetune_epochs"] for c in parse_cells([], list(RACE.arms)) if c["recipe"] == "scratch")
FINETUNE_EPOCHS = RACE.finetune_epochs or 0
OVERRIDES = RACE.overrides
"""The model and optimiser of the committed Pathfinder-16 evidence (1 layer), as ``--set`` pairs in
the spelling that evidence recorded (runs made with ``n_heads``, ``d_ff`` are the same runs:
:func:`_is_race`); the registry's :data:`~spt_theory.lra.designs.RACE`."""
FINGERPRINT = RACE.fingerprint
"""The registered data: Pathfinder-16 with matched marker distances."""
BUDGETS = RACE.budgets
"""Total steps at which the secondary gains are read."""
NAME = "pathfinder16.json"


def options(data_dir: Path, out: Path, seed: int = 0) -> RunOptions:
    """The race's run options (``scripts/escape_race.sh``'s command lines)."""
    registered_spelling([name for name, _ in OVERRIDES])  # as its evidence recorded them: no warning
    return RunOptions(task=TASK, data_dir=Path(data_dir), layers=1, overrides=OVERRIDES, out=Path(out), seed=seed,
                      progress=False)


def _epoch(path: Path) -> int:
    match = re.fullmatch(r"epoch_(\d+)\.pt", path.name)
    return int(match.group(1)) if match else -1


def newest_history(folder: Path) -> tuple[dict, list[dict], dict] | None:
    """(meta, per-epoch history, model weights) of the stage cached in ``folder``: from whichever of
    its checkpoints holds the longest history (a finished stage keeps its epoch checkpoints, a
    running one its ``last.pt``); None if it holds none.  A checkpoint that holds no weights, or
    whose history is not the one its position says (:func:`check_checkpoint`), is an InputError."""
    best = None
    for path in sorted(folder.glob("*.pt"), key=_epoch):
        if path.name != "last.pt" and _epoch(path) < 0:
            continue
        ckpt = load_checkpoint(path)
        check_checkpoint(path, ckpt)
        if best is None or len(ckpt["history"]) > len(best[1]):
            best = (ckpt.get("meta", {}), list(ckpt["history"]), ckpt["model"])
    return best


def check_checkpoint(path: Path, ckpt: dict) -> None:
    """InputError unless the checkpoint at ``path`` holds weights (a non-empty state dict of finite
    tensors) and a history that matches it: one record per finished epoch, numbered 1, 2, ... up to
    its ``epoch`` (for ``epoch_<e>.pt``, e)."""
    import torch

    model, history = ckpt["model"], ckpt["history"]
    if not model or not all(isinstance(t, torch.Tensor) for t in model.values()):
        raise InputError(f"{path}: holds no model weights: not a run the race can trust")
    if not all(bool(torch.isfinite(t).all()) for t in model.values() if t.is_floating_point()):
        raise InputError(f"{path}: model weights that are not finite: not a run the race can trust")
    numbers = [r.get("epoch") if isinstance(r, dict) else None for r in history] if isinstance(history, list) else None
    epoch = _epoch(path)
    if numbers != list(range(1, len(numbers or []) + 1)) or ckpt["epoch"] != len(numbers) or epoch not in (
            -1, len(numbers)):
        raise InputError(f"{path}: its history ({len(numbers or [])} records) does not match the checkpoint "
                         f"(epoch {ckpt['epoch']!r}): not a run the race can trust")


def check_weights(path: Path, model: dict, reference: dict) -> None:
    """InputError unless the weights ``model`` have the race model's parameters and shapes (``reference``)."""
    shapes = {k: tuple(v.shape) for k, v in model.items()}
    want = {k: tuple(v.shape) for k, v in reference.items()}
    if shapes != want:
        different = sorted(set(shapes) ^ set(want)) or sorted(k for k in want if shapes[k] != want[k])
        raise InputError(f"{path}: weights that are not the race model's (first difference: {different[0]}): "
                         "not a run the race can trust")


def _is_race(meta: dict) -> bool:
    opts = meta.get("options", {})
    return (meta.get("task") == TASK and opts.get("layers") == 1 and opts.get("model") == "transformer"
            and [(SETTING_ALIASES.get(k, k), v) for k, v in opts.get("overrides", [])] == _spelled_now(OVERRIDES)
            and not opts.get("freeze") and opts.get("pretrain_task") is None and not opts.get("max_steps"))


def _spelled_now(pairs) -> list[tuple[str, str]]:
    return [(SETTING_ALIASES.get(k, k), v) for k, v in pairs]


def find_stages(out: Path, reference: dict | None = None) -> dict[tuple[int, str], tuple[str, list[dict]]]:
    """The race's stages in ``out/cache`` by (seed, ``scratch`` | ``pretrain`` | ``finetune``):
    (cache key, history).  ``reference``: the race model's weights, which the supervised stages'
    must match (:func:`check_weights`)."""
    found: dict[tuple[int, str], tuple[str, list[dict]]] = {}
    for folder in sorted((Path(out) / "cache").glob("*/")):
        read = newest_history(folder)
        if read is None or not _is_race(read[0]):
            continue
        meta, history, model = read
        opts, objective = meta["options"], meta.get("stage", {}).get("objective")
        if objective == "spt" and opts.get("pretrain_epochs") == PRETRAIN_EPOCHS:
            kind = "pretrain"
        elif objective == "supervised" and opts.get("finetune_epochs") == SCRATCH_EPOCHS:
            kind = "scratch"
        elif objective == "supervised" and opts.get("finetune_epochs") == FINETUNE_EPOCHS:
            kind = "finetune"
        else:
            continue
        if reference is not None and kind != "pretrain":
            check_weights(folder, model, reference)
        key = (opts["seed"], kind)
        if key in found:
            raise InputError(f"{out / 'cache'}: two {kind} stages of seed {opts['seed']} ({found[key][0]}, "
                             f"{folder.name}): not one race")
        found[key] = (folder.name, history)
    return found


def step_flops(config, width: int, spt: bool) -> float:
    """FLOPs of one optimiser step (batch of ``config.batch_size`` sequences of ``width``); SPT's
    adds the per-token decoder (``vocab_size``-way)."""
    return train_step_flops([width] * config.batch_size, config.d_model, config.d_ff, config.n_layers,
                            config.vocab_size if spt else 0)


def arm_curve(history: list[dict], per_epoch: int, start_step: int, start_seconds: float, flops: float,
              start_flops: float) -> list[dict]:
    """Per evaluation: total steps, accuracies, seconds and FLOPs so far."""
    points, seconds = [], start_seconds
    for record in history:
        seconds += record["seconds"]
        step = start_step + record["epoch"] * per_epoch
        points.append({"step": step, "val_accuracy": record["val_accuracy"], "test_accuracy": record["test_accuracy"],
                       "seconds": round(seconds, 3), "flops": start_flops + (step - start_step) * flops,
                       **({FIELD: record[FIELD]} if FIELD in record else {})})
    return points


def collect(out: Path, data_dir: Path, checked: bool = False) -> dict:
    """The race's evidence from the stage caches under ``out`` (module doc); the data at
    ``data_dir`` must be the registered one (its fingerprint).  ``checked`` (``--promote``): the
    supervised stages' weights must also be the race model's."""
    run = LRARun(options(data_dir, out))
    data, fingerprint, _, model_config = run.setup_target()
    if fingerprint != FINGERPRINT:
        raise InputError(f"{data_dir}: data fingerprint {fingerprint}, the race is registered on {FINGERPRINT}")
    per_epoch = math.ceil(len(data.y_train) / run.config.batch_size)
    stages = find_stages(out, run.initial_model(model_config).state_dict() if checked else None)
    supervised, spt = step_flops(run.config, data.width, False), step_flops(run.config, data.width, True)
    arms = []
    for seed in SEEDS:
        if (seed, "scratch") in stages:
            key, history = stages[seed, "scratch"]
            arms.append({"seed": seed, "arm": "scratch", "pretrain_steps": 0, "cache": key,
                         "finished": len(history) >= SCRATCH_EPOCHS,
                         "curve": arm_curve(history, per_epoch, 0, 0.0, supervised, 0.0)})
        if (seed, "finetune") in stages and (seed, "pretrain") in stages:
            _, pretrain = stages[seed, "pretrain"]
            key, history = stages[seed, "finetune"]
            steps = PRETRAIN_EPOCHS * per_epoch
            arms.append({"seed": seed, "arm": "spt", "pretrain_steps": steps, "cache": key,
                         "pretrain_seconds": round(sum(r["seconds"] for r in pretrain[:PRETRAIN_EPOCHS]), 3),
                         "finished": len(history) >= FINETUNE_EPOCHS,
                         "curve": arm_curve(history, per_epoch, steps,
                                            sum(r["seconds"] for r in pretrain[:PRETRAIN_EPOCHS]),
                                            supervised, steps * spt)})
    evidence = {"schema_version": schema.SCHEMA_VERSION, "task": TASK, "seeds": list(SEEDS),
                "rules": {"registered": RACE.registered,
                          "total_steps": TOTAL_STEPS, "pretrain_steps": PRETRAIN_EPOCHS * per_epoch,
                          "eval_every": per_epoch},
                "options": options_json(dataclasses.replace(run.options, data_dir=Path("DATA_DIR"), out=Path("OUT"))),
                "config": dataclasses.asdict(run.config),
                "data": {"task": TASK, "fingerprint": fingerprint, "width": data.width, "n_train": len(data.y_train),
                         "n_val": len(data.y_val), "n_test": len(data.y_test)},
                "flops_per_step": {"supervised": supervised, "spt": spt},
                "arms": arms, "versions": versions(), "model_defaults": schema.model_defaults()}
    schema.parse(json.dumps(evidence), lra_schema.RaceEvidence, "race evidence")
    return evidence


# ----------------------------------------------------------------------------------- reading
def escape_step(curve: list[dict], threshold: float) -> int | None:
    """Total steps at the first evaluation with validation accuracy >= ``threshold``; None if none."""
    return next((p["step"] for p in curve if p["val_accuracy"] >= threshold), None)


def stayed_above(curve: list[dict], threshold: float, steps: int) -> bool:
    """Whether the last evaluations spanning ``steps`` steps are all >= ``threshold``."""
    if not curve:
        return False
    last = curve[-1]["step"]
    window = [p for p in curve if p["step"] >= last - steps]
    return window[0]["step"] <= last - steps and all(p["val_accuracy"] >= threshold for p in window)


def at_budget(curve: list[dict], key: str, budget: float) -> float | None:
    """Test accuracy (neutral selection: mean of tied best-validation evaluations) among the
    evaluations with ``key`` (``step``, ``seconds`` or ``flops``) <= ``budget``."""
    return best_within([{**p, "step": p[key]} for p in curve], budget)


def secondary(scratch: dict, spt: dict, budgets=BUDGETS) -> dict:
    """SPT - scratch (points) at each total-step budget, and at the seconds and FLOPs scratch had
    spent by then (None where an arm has no evaluation that early or the race has not got there)."""
    gains: dict[str, dict[str, float | None] | None] = {}
    for budget in budgets:
        ref = [p for p in scratch["curve"] if p["step"] <= budget]
        if not ref or ref[-1]["step"] < budget or spt["curve"][-1]["step"] < budget:
            gains[str(budget)] = None
            continue
        row: dict[str, float | None] = {}
        for key, limit in (("step", budget), ("seconds", ref[-1]["seconds"]), ("flops", ref[-1]["flops"])):
            a, b = at_budget(spt["curve"], key, limit), at_budget(scratch["curve"], key, limit)
            row[key] = None if a is None or b is None else round(100 * (a - b), 2)
        gains[str(budget)] = row
    return gains


def write(evidence: dict, out: Path, name: str = NAME) -> Path:
    return write_json(Path(out) / "race" / name, evidence)


SAME_RACE = ("schema_version", "task", "seeds", "rules", "options", "config", "data", "flops_per_step",
             "model_defaults")
"""The fields two pieces of race evidence must share to be one race (all but the arms and versions)."""


def merge(found: dict, committed: dict) -> dict:
    """The race evidence ``found`` in a run folder, completed by the ``committed`` evidence: each
    arm (seed, scratch | spt) is taken from whichever ran further (``found``'s on a tie), so a race
    whose seeds ran in different sessions or on different machines is promoted whole.  An arm kept
    from ``committed`` carries its own ``versions`` where they differ from ``found``'s.  InputError,
    naming the field, unless both are the same race (:data:`SAME_RACE`)."""
    def plain(value):
        return json.loads(json.dumps(value))

    for field in SAME_RACE:
        if plain(found.get(field)) != plain(committed.get(field)):
            raise InputError(f"race evidence: {field} differs from the committed race's: not the same race, "
                             "nothing was promoted")
    arms = {(a["seed"], a["arm"]): {**a, "versions": a.get("versions", committed["versions"])}
            for a in plain(committed["arms"])}
    for arm in plain(found["arms"]):
        old = arms.get((arm["seed"], arm["arm"]))
        if old is None or arm["curve"][-1]["step"] >= old["curve"][-1]["step"]:
            arms[arm["seed"], arm["arm"]] = arm
    for arm in arms.values():
        if arm.get("versions") == found["versions"]:
            arm.pop("versions")
    merged = {**plain(found), "arms": [arms[key] for key in sorted(arms)]}
    schema.parse(json.dumps(merged), lra_schema.RaceEvidence, "merged race evidence")
    return merged
