"""The schema every evidence file shares, its one validating loader (:func:`load`), and the
plateau formats.

Each file format is a pydantic model over the field types and the two base models here
(:class:`Open`, :class:`Versioned`).  The LRA formats (the sweep summary, the decide experiments,
the escape race, the GPU run's summary) are in :mod:`spt_theory.evidence.sweep_schema` and
:mod:`spt_theory.evidence.lra_schema`; the plateau
formats are below: the plateau grid (:class:`PlateauRuns`), the gradient RMS
(:class:`GradientRMS`), the n = 400 plateau prediction (:class:`PlateauPrediction`).  Every file
carries ``schema_version`` (:data:`SCHEMA_VERSION`).  A model refuses what cannot be right: a
number that is not finite, an accuracy outside [0, 1], duplicated cells or rows, a seed twice,
arms with different seed sets, a stored mean or per-seed list that is not the one its runs give.
Unknown fields are kept (a newer writer may add one); known ones are checked.

Every reader says ``schema.load(path, Model, settings)``: the file parsed strictly, validated by
its model and held to the model settings asked for (:func:`check_model_settings`).  An error is
an :class:`~spt_theory.evidence.EvidenceError` naming the file and the field's path, e.g.
``pathfinder.json: cells[2].runs[0].test_accuracy: not a finite number``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from spt_theory.evidence import EvidenceError, strict
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


def unique(values: list, what: str) -> None:
    """ValueError if a value of ``values`` (a dict or list by its content) appears twice."""
    seen = set()
    for value in values:
        key = json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else value
        if key in seen:
            raise ValueError(f"{what} {value!r} appears twice")
        seen.add(key)


def close(stored: float, computed: float) -> bool:
    """Whether a stored summary figure is its recomputation, within :data:`ROUNDING`."""
    return abs(stored - computed) <= ROUNDING * max(1.0, abs(computed))


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
    def _consistent(self) -> PlateauRuns:
        unique(self.seeds, "seed")
        unique([(r.kind, r.length, r.seed, r.optimiser, r.qk_scale, r.cap) for r in self.runs],
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
    def _complete(self) -> GradientRMS:
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
    def _consistent(self) -> Prediction:
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
    def _out_of_sample(self) -> PlateauPrediction:
        unique(self.seeds, "seed")
        if max(self.fit_lengths) >= self.target_length:
            raise ValueError(f"fit_lengths {self.fit_lengths} reach the target length {self.target_length}")
        for name, prediction in self.predictions.items():
            bad = [n for n in prediction.fit_values if int(n) not in self.fit_lengths]
            if bad:
                raise ValueError(f"predictions.{name}.fit_values: length {bad[0]} is not a fit length")
        if set(self.predictions) != {"adamw_escape", "spt_steps_to_95"}:
            raise ValueError("predictions: adamw_escape and spt_steps_to_95 expected")
        return self


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


def _message(error: Mapping[str, Any]) -> str:
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
    return validate(strict_json(text, name), model, name)


def validate(data: Any, model: type[BaseModel], name: str) -> dict:
    """JSON ``data`` already read strictly (:func:`strict_json`, :func:`strict.read`) validated by
    ``model``: the plain object (EvidenceError otherwise)."""
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
    if not isinstance(data.get("model_defaults", {}), dict):
        raise EvidenceError(f"{name}: model_defaults: not an object")
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
    text = strict.read_bytes(path)  # size and kind by stat, before reading
    data = parse(text, model, str(path))
    check_model_settings(data, str(path), settings)
    READ[Path(os.path.abspath(path))] = hashlib.sha256(text).hexdigest()
    return data


READ: dict[Path, str] = {}
"""Every evidence file :func:`load` has read in this process: its path as named (absolute, links
not followed, so a link keeps the name of the file it stands for) -> the sha256 of the bytes parsed
(read through any link, wherever it leads).  What a verdict rests on, held to the recorded hashes by
:func:`spt_theory.claims.registry.check_read_evidence`."""

