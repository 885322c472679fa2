"""One schema for every evidence file, and one validating loader (:func:`load`).

Each file format is a pydantic model: the LRA sweep summary (:class:`SweepSummary`), the plateau
grid (:class:`PlateauRuns`), the gradient RMS (:class:`GradientRMS`), the n = 400 plateau
prediction (:class:`PlateauPrediction`), the pre-registered decide experiments
(:class:`DecideEvidence`), the escape race
(:class:`RaceEvidence`), the GPU run's summary (:class:`GPUSummary`).  Every file carries
``schema_version`` (:data:`SCHEMA_VERSION`).  A model refuses what cannot be right: a number that
is not finite, an accuracy outside [0, 1], duplicated cells or rows, a seed twice, arms with
different seed sets, a stored mean or per-seed list that is not the one its runs give.  Unknown
fields are kept (a newer writer may add one); known ones are checked.

An error is an :class:`~spt_theory.evidence.EvidenceError` naming the file and the field's path,
e.g. ``pathfinder.json: cells[2].runs[0].test_accuracy: not a finite number``.

Per-example test correctness (``test_correct``, :mod:`spt_theory.evidence.correctness`) may sit
beside a ``test_accuracy`` (curve points, untrained controls); where it does it must decode, count
the file's ``data.n_test`` examples and give that accuracy to 1e-9.  It is optional here (files
written before it was kept lack it); a claim that pairs arms on it asks for it with
:func:`~spt_theory.evidence.correctness.test_correctness`, an EvidenceError (an ERROR row) when it is missing.

The proximity metric an LRA summary is judged on is a property of its format, written once:
:func:`proximity_metric` (the 2-D neighbour share for pixel masking, else band mass).

Why one module, longer than the package's ~450 lines: every reader says ``schema.load(path,
schema.Model)`` against one table of formats, and the formats share the field types, the two base
models, the checks of duplicates, seeds and stored statistics, and the loader (about 150 lines);
split per format (LRA sweeps ~160 lines, plateau ~100, race ~45, GPU ~10), each part would be
mostly imports of that shared core and every reader would import two modules.  The sections
below are per format.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from spt_theory.evidence import EvidenceError, correctness
from spt_theory.evidence.strict import strict_json

SCHEMA_VERSION = 1
ROUNDING = 1e-5
"""Largest gap allowed between a stored summary figure and its recomputation (stored figures are
rounded to 5 decimals)."""

LARGEST = 2**63 - 1
"""Largest integer a count or seed may be (64 bits)."""

Number = Annotated[float, Field(strict=True, allow_inf_nan=False)]
Fraction = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, le=1)]
Positive = Annotated[float, Field(strict=True, allow_inf_nan=False, gt=0)]
NonNegative = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0)]
Count = Annotated[int, Field(strict=True, ge=0, le=LARGEST)]
PositiveCount = Annotated[int, Field(strict=True, ge=1, le=LARGEST)]
Seed = Annotated[int, Field(strict=True, ge=0, le=LARGEST)]
Version = Annotated[int, Field(strict=True, ge=SCHEMA_VERSION, le=SCHEMA_VERSION)]
"""``schema_version``: the integer 1 (not ``true``, not ``1.0``)."""


class Open(BaseModel):
    """A format whose unknown fields are kept and whose known fields are checked."""

    model_config = ConfigDict(extra="allow", frozen=True)


class Versioned(Open):
    """An evidence file: its schema version and the model defaults of the code that wrote it."""

    schema_version: Version
    model_defaults: dict[str, Any]


def proximity_metric(masking: str) -> str:
    """The proximity a task is judged and drawn on: ``grid_ratio`` (2-D neighbour share over
    uniform) for pixel masking (images), ``band_ratio`` (band mass |i-j| <= 2 over uniform) else.

    >>> proximity_metric("pixel"), proximity_metric("token")
    ('grid_ratio', 'band_ratio')
    """
    return "grid_ratio" if masking == "pixel" else "band_ratio"


def _unique(values: list, what: str) -> None:
    seen = set()
    for value in values:
        key = json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else value
        if key in seen:
            raise ValueError(f"{what} {value!r} appears twice")
        seen.add(key)


def _close(stored: float, computed: float) -> bool:
    return abs(stored - computed) <= ROUNDING * max(1.0, abs(computed))


# ---------------------------------------------------------------------------------- LRA sweeps
class CurvePoint(Open):
    epoch: PositiveCount
    step: Count
    val_accuracy: Fraction
    test_accuracy: Fraction
    test_correct: dict[str, Any] | None = None
    check_test_correct = field_validator("test_correct")(correctness.field_check)


class ProximityPoint(Open):
    stage: str
    step: Count
    band_ratio: Positive | None = None
    grid_ratio: Positive | None = None


class Run(Open):
    seed: Seed
    test_accuracy: Fraction
    val_accuracy: Fraction
    best_epoch: PositiveCount
    curve: list[CurvePoint] = Field(min_length=1)
    pretrain_steps: Count = 0
    steps_per_epoch: PositiveCount | None = None
    proximity: list[ProximityPoint] = []

    @model_validator(mode="after")
    def _curve_in_order(self):
        steps = [point.step for point in self.curve]
        if steps != sorted(set(steps)):
            raise ValueError("curve: steps must increase")
        best = [point for point in self.curve if point.epoch == self.best_epoch]
        if len(best) != 1:
            raise ValueError(f"curve: no single evaluation at best_epoch {self.best_epoch}")
        top = max(point.val_accuracy for point in self.curve)
        if not (_close(best[0].val_accuracy, top) and _close(best[0].val_accuracy, self.val_accuracy)
                and _close(best[0].test_accuracy, self.test_accuracy)):
            raise ValueError(f"test_accuracy {self.test_accuracy} and val_accuracy {self.val_accuracy} are not "
                             f"what the curve gives at its best validation epoch (test {best[0].test_accuracy}, val "
                             f"{best[0].val_accuracy}, best val {top})")
        return self


class Stat(Open):
    per_seed: list[Number] = Field(min_length=1)
    mean: Number
    std: NonNegative | None = None

    @model_validator(mode="after")
    def _mean_of_seeds(self):
        if not _close(self.mean, statistics.fmean(self.per_seed)):
            raise ValueError(f"mean {self.mean} is not the mean of per_seed ({statistics.fmean(self.per_seed):.6g})")
        return self


class Cell(Open):
    recipe: str
    freeze: str = "none"
    keep: str = "all"
    pretrain_task: str = "self"
    layers: int | None = None
    pretrain_epochs: int | None = None
    finetune_epochs: int | None = None


def _seeds_of(runs: list[Run], where: str) -> list[int]:
    seeds = [run.seed for run in runs]
    _unique(seeds, f"{where}: seed")
    return seeds


def _stats_match_runs(row: Open, runs: list[Run], where: str) -> None:
    """Every per-seed statistic stored beside ``runs`` is the runs' own values, in their order."""
    for name, value in (row.model_extra or {}).items():
        if isinstance(value, dict) and "per_seed" in value:
            stat = Stat.model_validate(value)
            values = [getattr(run, name, None) if name in Run.model_fields else (run.model_extra or {}).get(name)
                      for run in runs]
            if None in values or len(values) != len(stat.per_seed) or not all(
                    _close(s, v) for s, v in zip(stat.per_seed, values)):
                raise ValueError(f"{where}{name}.per_seed is not its runs' {name}")
    accuracy = getattr(row, "test_accuracy", None)
    if isinstance(accuracy, Stat) and not (len(accuracy.per_seed) == len(runs) and all(
            _close(s, run.test_accuracy) for s, run in zip(accuracy.per_seed, runs))):
        raise ValueError(f"{where}test_accuracy.per_seed is not its runs' test accuracies")


class CellRow(Open):
    label: str
    cell: Cell
    runs: list[Run] = Field(min_length=1)
    test_accuracy: Stat

    @model_validator(mode="after")
    def _consistent(self):
        _seeds_of(self.runs, "runs")
        _stats_match_runs(self, self.runs, "")
        return self


class Control(Open):
    test_accuracy: Stat | Fraction
    runs: list[Run] | None = None
    test_correct: dict[str, Any] | None = None
    check_test_correct = field_validator("test_correct")(correctness.field_check)

    @model_validator(mode="after")
    def _consistent(self):
        if (self.runs is None) != (not isinstance(self.test_accuracy, Stat)):
            raise ValueError("a trained control has runs and a per-seed test_accuracy; an untrained one neither")
        if self.runs is not None:
            _seeds_of(self.runs, "runs")
            _stats_match_runs(self, self.runs, "")
        return self


class References(Open):
    marginal: Positive
    neighbour: Positive

    @model_validator(mode="after")
    def _distinct(self):
        if self.marginal == self.neighbour:
            raise ValueError("marginal and neighbour must differ")
        return self


class SweepData(Open):
    fingerprint: str = Field(min_length=1)
    width: PositiveCount
    n_train: PositiveCount
    n_val: PositiveCount
    n_test: PositiveCount


class SweepConfig(Open):
    task: str
    masking: Literal["pixel", "token"]
    num_classes: PositiveCount


class SweepSummary(Versioned):
    """``lra sweep``'s summary: the cells of a grid, each run at every seed, and the controls."""

    task: str
    seeds: list[Seed] = Field(min_length=1)
    options: dict[str, Any]
    config: SweepConfig
    data: SweepData
    cells: list[CellRow] = Field(min_length=1)
    controls: dict[str, Control] = {}
    references: References | None = None

    @model_validator(mode="after")
    def _consistent(self):
        _unique(self.seeds, "seed")
        _unique([row.cell.model_dump() for row in self.cells], "cell")
        want = sorted(self.seeds)
        arms = [(f"cells[{i}]", row.runs) for i, row in enumerate(self.cells)]
        arms += [(f"controls.{k}", c.runs) for k, c in self.controls.items() if c.runs is not None]
        for where, runs in arms:
            if sorted(run.seed for run in runs) != want:
                raise ValueError(f"{where}: seeds {[run.seed for run in runs]} are not the summary's seeds {want}")
        if self.config.task != self.task:
            raise ValueError(f"config.task {self.config.task!r} is not task {self.task!r}")
        points = [(f"controls.{k}", c) for k, c in self.controls.items()]
        points += [(f"{where}.runs[{j}].curve[{i}]", point) for where, runs in arms
                   for j, run in enumerate(runs) for i, point in enumerate(run.curve)]
        correctness.check_counts(points, self.data.n_test)
        return self

    @property
    def proximity_metric(self) -> str:
        return proximity_metric(self.config.masking)


class DecideEvidence(Versioned):
    """``lra decide collect``'s evidence: one pre-registered experiment's cells, each run at the
    seeds it was registered for (not every cell at every seed: L6's 2-layer arm), merged over the
    per-seed sweeps (:mod:`spt_theory.lra.decide`)."""

    experiment: str
    task: str
    registered: str
    tiny: bool
    seeds: list[Seed] = Field(min_length=1)
    options: dict[str, Any]
    config: SweepConfig
    data: SweepData
    cells: list[CellRow] = Field(min_length=1)
    sweeps: dict[str, dict[str, Any]]
    controls: dict[str, Control] = {}

    @model_validator(mode="after")
    def _consistent(self):
        _unique(self.seeds, "seed")
        _unique([row.cell.model_dump() for row in self.cells], "cell")
        ran = set()
        for i, row in enumerate(self.cells):
            stray = [run.seed for run in row.runs if run.seed not in self.seeds]
            if stray:
                raise ValueError(f"cells[{i}]: seed {stray[0]} is not a seed of the evidence {self.seeds}")
            ran |= {run.seed for run in row.runs}
        if ran != set(self.seeds) or set(self.sweeps) != {str(s) for s in self.seeds}:
            raise ValueError(f"seeds {self.seeds}: every seed needs a run and a sweep (runs at {sorted(ran)}, "
                             f"sweeps {sorted(self.sweeps)})")
        if self.config.task != self.task:
            raise ValueError(f"config.task {self.config.task!r} is not task {self.task!r}")
        correctness.check_counts([(f"controls.{k}", c) for k, c in self.controls.items()]
                                 + [(f"cells[{k}].runs[{j}].curve[{i}]", point) for k, row in enumerate(self.cells)
                                    for j, run in enumerate(row.runs) for i, point in enumerate(run.curve)],
                                 self.data.n_test)
        return self


# ---------------------------------------------------------------------------------- plateau grid
class PlateauRow(Open):
    kind: Literal["scratch", "spt"]
    length: PositiveCount
    seed: Seed
    optimiser: Literal["adamw", "sgd"]
    qk_scale: Positive
    cap: Count
    value: PositiveCount | None
    capped: bool


class PlateauRuns(Versioned):
    """``plateau``'s grid: every run's escape step (scratch) or SPT steps to 95% (spt)."""

    seeds: list[Seed] = Field(min_length=1)
    runs: list[PlateauRow] = Field(min_length=1)
    partial: bool = False

    @model_validator(mode="after")
    def _consistent(self):
        _unique(self.seeds, "seed")
        _unique([(r.kind, r.length, r.seed, r.optimiser, r.qk_scale, r.cap) for r in self.runs],
                "run (kind, length, seed, optimiser, qk_scale, cap)")
        for r in self.runs:
            if r.seed not in self.seeds:
                raise ValueError(f"run {r.kind} n {r.length} seed {r.seed}: not a seed of the grid {self.seeds}")
            if r.capped and r.value is not None and r.value != r.cap:
                raise ValueError(f"run {r.kind} n {r.length} seed {r.seed}: a capped run's value is its cap")
            if r.cap and r.value is not None and r.value > r.cap:
                raise ValueError(f"run {r.kind} n {r.length} seed {r.seed}: value {r.value} is over its cap {r.cap}")
        return self


class GradientRMS(Versioned):
    seeds: list[Seed] = Field(min_length=1)
    rms: dict[Literal["supervised", "spt"], dict[str, list[Positive]]]

    @model_validator(mode="after")
    def _complete(self):
        for objective, by_n in self.rms.items():
            for n, values in by_n.items():
                if not n.isdigit() or len(values) != len(self.seeds):
                    raise ValueError(f"rms.{objective}.{n}: one value per seed expected")
        return self


class Alternative(Open):
    law: str = Field(min_length=1)
    steps: Positive
    excluded: bool


class Prediction(Open):
    """One predicted step count at the target length: the law, the point, the single-seed interval,
    the standard error (log space) and the alternatives, each with whether the interval excludes it."""

    law: str = Field(min_length=1)
    steps: Positive
    interval: list[Positive] = Field(min_length=2, max_length=2)
    log_standard_error: NonNegative
    log_seed_sd: NonNegative
    fit_values: dict[str, list[PositiveCount]]
    alternatives: list[Alternative] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self):
        lo, hi = self.interval
        if not lo < self.steps < hi:
            raise ValueError(f"interval [{lo:g}, {hi:g}] does not contain steps {self.steps:g}")
        for i, alt in enumerate(self.alternatives):
            if alt.excluded == (lo <= alt.steps <= hi):
                raise ValueError(f"alternatives[{i}].excluded is {alt.excluded}, but {alt.steps:g} is "
                                 f"{'inside' if lo <= alt.steps <= hi else 'outside'} the interval")
        return self


class PlateauPrediction(Versioned):
    """The pre-registered prediction at n = 400 (``checks.plateau_prediction``), anchored on shorter runs."""

    date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")
    registration_rule: str = Field(min_length=1)
    target_length: PositiveCount
    fit_lengths: list[PositiveCount] = Field(min_length=2)
    seeds: list[Seed] = Field(min_length=1)
    inputs: dict[str, Any]
    predictions: dict[Literal["adamw_escape", "spt_steps_to_95"], Prediction]

    @model_validator(mode="after")
    def _out_of_sample(self):
        _unique(self.seeds, "seed")
        if max(self.fit_lengths) >= self.target_length:
            raise ValueError(f"fit_lengths {self.fit_lengths} reach the target length {self.target_length}")
        for name, prediction in self.predictions.items():
            bad = [n for n in prediction.fit_values if int(n) not in self.fit_lengths]
            if bad:
                raise ValueError(f"predictions.{name}.fit_values: length {bad[0]} is not a fit length")
        if set(self.predictions) != {"adamw_escape", "spt_steps_to_95"}:
            raise ValueError("predictions: adamw_escape and spt_steps_to_95 expected")
        return self


# ---------------------------------------------------------------------------------- escape race
class RacePoint(Open):
    step: Count
    val_accuracy: Fraction
    test_accuracy: Fraction
    seconds: NonNegative
    flops: NonNegative
    test_correct: dict[str, Any] | None = None
    check_test_correct = field_validator("test_correct")(correctness.field_check)


class RaceArm(Open):
    seed: Seed
    arm: Literal["scratch", "spt"]
    pretrain_steps: Count
    curve: list[RacePoint] = Field(min_length=1)
    finished: bool
    cache: str

    @model_validator(mode="after")
    def _in_order(self):
        steps = [p.step for p in self.curve]
        if steps != sorted(set(steps)):
            raise ValueError("curve: steps must increase")
        return self


class RaceEvidence(Versioned):
    """``lra race``'s evidence: every evaluation of every arm and seed."""

    task: str
    seeds: list[Seed] = Field(min_length=1)
    rules: dict[str, Any]
    config: dict[str, Any]
    data: SweepData
    arms: list[RaceArm]

    @model_validator(mode="after")
    def _consistent(self):
        _unique(self.seeds, "seed")
        _unique([(a.seed, a.arm) for a in self.arms], "arm (seed, arm)")
        for a in self.arms:
            if a.seed not in self.seeds:
                raise ValueError(f"arm {a.arm} seed {a.seed}: not a seed of the race {self.seeds}")
        correctness.check_counts([(f"arms[{j}].curve[{i}]", p) for j, a in enumerate(self.arms)
                                  for i, p in enumerate(a.curve)], self.data.n_test)
        return self


# ---------------------------------------------------------------------------------- GPU summary
class GPUSummary(Open):
    """The GPU confirmation run's ``summary.json`` (written by ``scripts/lra_gpu_confirm.sh``)."""

    schema_version: Version | None = None
    device: Any = None


# ---------------------------------------------------------------------------------- the loader
def location(loc: tuple) -> str:
    """pydantic's error location as a field path: ``('cells', 2, 'runs', 0, 'x')`` -> ``cells[2].runs[0].x``."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part not in ("function-after", "float", "int", "str", "bool"):  # union branch names
            text += ("." if text else "") + str(part)
    return text or "(top level)"


def _message(error: dict) -> str:
    kind, msg = error["type"], error["msg"]
    if kind == "finite_number":
        return "not a finite number"
    if kind == "missing":
        return "missing"
    if error["loc"] == ("schema_version",) and kind != "missing":
        return f"schema version {error.get('input')!r}, this toolkit reads {SCHEMA_VERSION}"
    return msg[len("Value error, "):] if msg.startswith("Value error, ") else msg


def parse(text: str | bytes, model: type[BaseModel], name: str) -> dict:
    """``text`` parsed as JSON (:func:`strict_json`) and validated by ``model``: the plain object
    (EvidenceError otherwise)."""
    data = strict_json(text, name)
    if not isinstance(data, dict):
        raise EvidenceError(f"{name}: (top level): not an object")
    try:
        model.model_validate(data)
    except ValidationError as error:
        errors = error.errors()  # a wrong version first: the rest of the file is then another format
        first = next((e for e in errors if e["loc"] == ("schema_version",)), errors[0])
        raise EvidenceError(f"{name}: {location(first['loc'])}: {_message(first)}") from None
    return data


def model_defaults(settings: Mapping[str, Any] | None = None) -> dict:
    """The model a run makes where it sets nothing but the model ``settings`` (``--set``):
    ``ModelConfig``'s defaults under them (:func:`spt_theory.core.model.configured`).  Every evidence
    file records it (``model_defaults``) as its runs' settings."""
    import dataclasses

    from spt_theory.core.model import configured

    return dataclasses.asdict(configured(settings))


LRA_MODEL_FIELDS = {"n_layers": "n_layers", "layers": "n_layers", "d_model": "d_model", "n_heads": "n_heads",
                    "heads": "n_heads", "d_ff": "d_ff", "ff": "d_ff", "head": "head", "pooling": "pooling"}
"""An LRA task config's model fields (new and old spellings) -> the model's."""


def used_settings(data: dict) -> tuple[dict, set[str]]:
    """The model settings the runs of the evidence ``data`` used, and which of them their own
    config set: an LRA file (with a task ``config``) made its model from the config's model fields
    over ``ModelConfig``'s defaults (the recorded ``model_defaults``' fields of
    :data:`~spt_theory.core.model.MODEL_SETTINGS`); any other file (walk runs: the plateau grid)
    made it from the recorded ``model_defaults`` alone."""
    from spt_theory.core.model import MODEL_SETTINGS

    made = dict(data.get("model_defaults", {}))
    config = data.get("config")
    if not isinstance(config, dict):
        return made, set()
    own = {new: config[old] for old, new in LRA_MODEL_FIELDS.items() if old in config}
    return {**{k: v for k, v in made.items() if k in MODEL_SETTINGS}, **own}, set(own)


def check_model_settings(data: dict, name: str, settings: Mapping[str, Any] | None = None) -> None:
    """EvidenceError unless the evidence ``data`` was made at the model ``settings`` asked for
    (``Context.model_settings``; None: the defaults): its runs' settings (:func:`used_settings`)
    against :func:`model_defaults` under ``settings``, where the runs' own config set a field only
    against an explicit setting.  One line naming both, e.g. ``evidence made at d_model=64; asked
    for d_model=32``."""
    settings = dict(settings or {})
    made, own = used_settings(data)
    lra = isinstance(data.get("config"), dict)  # an LRA file: only the model settings are compared
    asked = {k: v for k, v in model_defaults(settings).items() if not lra or k in made}
    asked.update({k: settings.get(k, made[k]) for k in own})
    changed = sorted(k for k in set(asked) | set(made) if asked.get(k) != made.get(k))
    if changed:
        raise EvidenceError(f"{name}: evidence made at {', '.join(f'{k}={made.get(k)}' for k in changed)}; "
                            f"asked for {', '.join(f'{k}={asked.get(k)}' for k in changed)} "
                            "(rerun its runs at these settings, or leave --set out)")


def load(path: str | Path, model: type[BaseModel], settings: Mapping[str, Any] | None = None) -> dict:
    """The evidence file ``path`` validated by ``model`` (module doc), made at the model
    ``settings`` asked for (:func:`check_model_settings`); EvidenceError if it is missing,
    unreadable, does not fit, or was made at other model settings."""
    path = Path(path)
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        raise EvidenceError(f"{path}: missing (no evidence, no verdict)") from None
    except OSError as error:
        raise EvidenceError(f"{path}: unreadable ({error.strerror or error})") from None
    data = parse(text, model, str(path))
    check_model_settings(data, str(path), settings)
    return data

