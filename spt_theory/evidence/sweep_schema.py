"""The formats of the LRA sweeps, over the shared schema (:mod:`spt_theory.evidence.schema`): the
sweep summary (:class:`SweepSummary`, ``lra sweep``'s, the L1-L4 evidence) and the pre-registered
decide experiments' evidence (:class:`DecideEvidence`, ``lra decide collect``'s), with the runs,
cells and controls they share.  A reader says ``schema.load(path, sweep_schema.SweepSummary, settings)``.

Per-example test correctness (``test_correct``, :mod:`spt_theory.evidence.correctness`) may sit
beside a ``test_accuracy`` (curve points, untrained controls); where it does it must decode, count
the file's ``data.n_test`` examples and give that accuracy to 1e-9.  It is optional here (files
written before it was kept lack it); a claim that pairs arms on it asks for it with
:func:`~spt_theory.evidence.correctness.test_correctness`, an EvidenceError (an ERROR row) when it is missing.

The proximity metric an LRA summary is judged on is a property of its format, written once:
:func:`proximity_metric` (the 2-D neighbour share for pixel masking, else band mass).
"""

from __future__ import annotations

import statistics
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from spt_theory.evidence import correctness
from spt_theory.evidence.schema import (
    Count,
    Fraction,
    NonNegative,
    Number,
    Open,
    Positive,
    PositiveCount,
    Seed,
    Versioned,
    close,
    unique,
)


def proximity_metric(masking: str) -> str:
    """The proximity a task is judged and drawn on: ``grid_ratio`` (2-D neighbour share over
    uniform) for pixel masking (images), ``band_ratio`` (band mass |i-j| <= 2 over uniform) else.

    >>> proximity_metric("pixel"), proximity_metric("token")
    ('grid_ratio', 'band_ratio')
    """
    return "grid_ratio" if masking == "pixel" else "band_ratio"


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
    def _curve_in_order(self) -> Run:
        steps = [point.step for point in self.curve]
        if steps != sorted(set(steps)):
            raise ValueError("curve: steps must increase")
        if self.steps_per_epoch is not None:  # every epoch evaluated, each at its own step
            epochs = [point.epoch for point in self.curve]
            if epochs != list(range(1, len(epochs) + 1)):
                raise ValueError(f"curve: epochs {epochs[:6]}... are not 1, 2, ..., {len(epochs)} (an evaluation "
                                 "missing or added)")
            for i, point in enumerate(self.curve):
                end = self.pretrain_steps + point.epoch * self.steps_per_epoch
                last = i == len(self.curve) - 1  # a run cut by max_steps ends inside its last epoch
                if not (point.step == end or (last and end - self.steps_per_epoch < point.step < end)):
                    raise ValueError(f"curve[{i}]: step {point.step} is not pretrain_steps {self.pretrain_steps} + "
                                     f"epoch {point.epoch} x steps_per_epoch {self.steps_per_epoch} = {end}")
        best = [point for point in self.curve if point.epoch == self.best_epoch]
        if len(best) != 1:
            raise ValueError(f"curve: no single evaluation at best_epoch {self.best_epoch}")
        top = max(point.val_accuracy for point in self.curve)
        if not (close(best[0].val_accuracy, top) and close(best[0].val_accuracy, self.val_accuracy)
                and close(best[0].test_accuracy, self.test_accuracy)):
            raise ValueError(f"test_accuracy {self.test_accuracy} and val_accuracy {self.val_accuracy} are not "
                             f"what the curve gives at its best validation epoch (test {best[0].test_accuracy}, val "
                             f"{best[0].val_accuracy}, best val {top})")
        return self


class Stat(Open):
    per_seed: list[Number] = Field(min_length=1)
    mean: Number
    std: NonNegative | None = None

    @model_validator(mode="after")
    def _mean_of_seeds(self) -> Stat:
        if not close(self.mean, statistics.fmean(self.per_seed)):
            raise ValueError(f"mean {self.mean} is not the mean of per_seed ({statistics.fmean(self.per_seed):.6g})")
        sd = statistics.stdev(self.per_seed) if len(self.per_seed) > 1 else 0.0
        if self.std is not None and not close(self.std, sd):
            raise ValueError(f"std {self.std} is not the sample sd of per_seed ({sd:.6g})")
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
    unique(seeds, f"{where}: seed")
    return seeds


def _stats_match_runs(row: Open, runs: list[Run], where: str) -> None:
    """Every per-seed statistic stored beside ``runs`` is the runs' own values, in their order."""
    for name, value in (row.model_extra or {}).items():
        if isinstance(value, dict) and "per_seed" in value:
            stat = Stat.model_validate(value)
            values = [getattr(run, name, None) if name in Run.model_fields else (run.model_extra or {}).get(name)
                      for run in runs]
            found = [v for v in values if v is not None]
            if len(found) != len(values) or len(found) != len(stat.per_seed) or not all(
                    close(s, v) for s, v in zip(stat.per_seed, found)):
                raise ValueError(f"{where}{name}.per_seed is not its runs' {name}")
    accuracy = getattr(row, "test_accuracy", None)
    if isinstance(accuracy, Stat) and not (len(accuracy.per_seed) == len(runs) and all(
            close(s, run.test_accuracy) for s, run in zip(accuracy.per_seed, runs))):
        raise ValueError(f"{where}test_accuracy.per_seed is not its runs' test accuracies")


class CellRow(Open):
    label: str
    cell: Cell
    runs: list[Run] = Field(min_length=1)
    test_accuracy: Stat

    @model_validator(mode="after")
    def _consistent(self) -> CellRow:
        _seeds_of(self.runs, "runs")
        _stats_match_runs(self, self.runs, "")
        return self


class Control(Open):
    test_accuracy: Stat | Fraction
    runs: list[Run] | None = None
    test_correct: dict[str, Any] | None = None
    check_test_correct = field_validator("test_correct")(correctness.field_check)

    @model_validator(mode="after")
    def _consistent(self) -> Control:
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
    def _distinct(self) -> References:
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
    def _consistent(self) -> SweepSummary:
        unique(self.seeds, "seed")
        unique([row.cell.model_dump() for row in self.cells], "cell")
        want = sorted(self.seeds)
        arms = [(f"cells[{i}]", row.runs) for i, row in enumerate(self.cells)]
        arms += [(f"controls.{k}", c.runs) for k, c in self.controls.items() if c.runs is not None]
        for where, runs in arms:
            if sorted(run.seed for run in runs) != want:
                raise ValueError(f"{where}: seeds {[run.seed for run in runs]} are not the summary's seeds {want}")
        if self.config.task != self.task:
            raise ValueError(f"config.task {self.config.task!r} is not task {self.task!r}")
        points: list[tuple[str, object]] = [(f"controls.{k}", c) for k, c in self.controls.items()]
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
    def _consistent(self) -> DecideEvidence:
        unique(self.seeds, "seed")
        unique([row.cell.model_dump() for row in self.cells], "cell")
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
