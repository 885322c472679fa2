"""The LRA evidence formats, over the shared schema (:mod:`spt_theory.evidence.schema`): the sweep
summary (:class:`SweepSummary`), the pre-registered decide experiments (:class:`DecideEvidence`),
the escape race (:class:`RaceEvidence`), the GPU twin's files (:class:`TwinSummary`,
:class:`TwinGroup`).  A reader says ``schema.load(path, lra_schema.SweepSummary, settings)``.

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


# ---------------------------------------------------------------------------------- shortcut audit
class AuditBaseline(Open):
    name: str
    role: Literal["floor", "ceiling"]
    what: str
    test_accuracy: Number = Field(ge=0, le=100)
    low: Number = Field(ge=0, le=100)
    high: Number = Field(ge=0, le=100)
    val_accuracy: Number = Field(ge=0, le=100)
    C: Positive
    features: PositiveCount

    @model_validator(mode="after")
    def _inside(self) -> AuditBaseline:
        if not self.low <= self.test_accuracy <= self.high:
            raise ValueError(f"{self.name}: test accuracy {self.test_accuracy} outside its interval "
                             f"[{self.low}, {self.high}]")
        return self


class AuditReport(Versioned):
    """``lra audit``'s report (:mod:`spt_theory.lra.audit`): every fixed-feature baseline on held-out
    data, the floor and the one-hop ceiling they give, with the data's fingerprint and source."""

    task: str
    settings: dict[str, str]
    data: SweepData
    data_source: dict[str, Any]
    level: Fraction
    baselines: list[AuditBaseline] = Field(min_length=2)
    chance: Number = Field(ge=0, le=100)
    floor: str
    ceiling: str
    floor_accuracy: Number = Field(ge=0, le=100)
    ceiling_accuracy: Number = Field(ge=0, le=100)
    window: Number
    versions: dict[str, Any]

    @model_validator(mode="after")
    def _consistent(self) -> AuditReport:
        unique([b.name for b in self.baselines], "baseline")
        for role, name, value in (("floor", self.floor, self.floor_accuracy),
                                  ("ceiling", self.ceiling, self.ceiling_accuracy)):
            rows = [b for b in self.baselines if b.role == role]
            if not rows:
                raise ValueError(f"no {role} baseline")
            best = max(rows, key=lambda b: b.test_accuracy)
            if best.name != name or not close(best.test_accuracy, value):
                raise ValueError(f"{role} {name} {value}: the best {role} baseline is {best.name} "
                                 f"{best.test_accuracy}")
        if not close(self.window, self.ceiling_accuracy - self.floor_accuracy):
            raise ValueError(f"window {self.window} is not ceiling - floor")
        return self


class PilotPoint(Open):
    epoch: PositiveCount
    step: PositiveCount
    val_accuracy: Fraction


class Pilot(Open):
    name: str
    seed: Seed
    cell: str
    data: str
    stage: Literal["spt", "supervised"]
    curve: list[PilotPoint]
    complete: bool


class PilotEvidence(Versioned):
    """Pilots of a pre-registration (``evidence/lra/pilots/``): the audits and the training curves
    seen before the registration was written, kept as they were; judged by nothing."""

    registration: str
    audits: dict[str, AuditReport]
    pilots: list[Pilot]


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
    def _in_order(self) -> RaceArm:
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
    def _consistent(self) -> RaceEvidence:
        unique(self.seeds, "seed")
        unique([(a.seed, a.arm) for a in self.arms], "arm (seed, arm)")
        for a in self.arms:
            if a.seed not in self.seeds:
                raise ValueError(f"arm {a.arm} seed {a.seed}: not a seed of the race {self.seeds}")
        correctness.check_counts([(f"arms[{j}].curve[{i}]", p) for j, a in enumerate(self.arms)
                                  for i, p in enumerate(a.curve)], self.data.n_test)
        return self


# ---------------------------------------------------------------------------------- GPU twin
class TwinPoint(Open):
    """An evaluation of one twin run: ``step`` counts SPT's steps for the arms that pretrain."""

    step: PositiveCount
    train_loss: Number | None
    """null from the point where its run diverged (a non-finite train loss: ``TwinRun.diverged``)."""
    val_accuracy: Fraction
    test_accuracy: Fraction
    test_correct: dict[str, Any]
    check_test_correct = field_validator("test_correct")(correctness.field_check)


class TwinRun(Open):
    arm: str
    seed: Seed
    complete: bool
    steps: Count
    offset: Count
    curve: list[TwinPoint]
    test_accuracy: Fraction | None = None
    diverged: PositiveCount | None = None
    """The curve step at which its train loss was first not finite (its rows are INCONCLUSIVE)."""
    grid2d_ratio: Positive | None = None
    """The factorial's scratch runs: true 2-D neighbour attention over uniform at its last step."""
    spt_grid2d_ratio: Positive | None = None
    """The factorial's SPT runs: the same of its seed's SPT checkpoint (the end of pretraining)."""

    @model_validator(mode="after")
    def _curve(self) -> TwinRun:
        steps = [p.step for p in self.curve]
        if steps != sorted(set(steps)):
            raise ValueError(f"run ({self.arm}, {self.seed}): curve steps not increasing")
        for p in self.curve:
            if (p.train_loss is None) != (self.diverged is not None and p.step >= self.diverged):
                raise ValueError(f"run ({self.arm}, {self.seed}): train_loss {p.train_loss} at step {p.step} with "
                                 f"diverged {self.diverged} (null exactly from the step it diverged)")
        if self.diverged is not None and self.diverged not in steps:
            raise ValueError(f"run ({self.arm}, {self.seed}): diverged at {self.diverged}, not one of its evaluations")
        if self.test_accuracy is not None and (not self.curve or self.test_accuracy != self.curve[-1].test_accuracy):
            raise ValueError(f"run ({self.arm}, {self.seed}): test_accuracy {self.test_accuracy} is not its curve's "
                             "last point's")
        if self.complete and (not self.curve or self.curve[-1].step != self.steps or self.test_accuracy is None):
            raise ValueError(f"run ({self.arm}, {self.seed}): complete, but its curve does not end at its steps "
                             f"{self.steps} with its test_accuracy")
        return self


class TwinCut(Open):
    """Where a twin run stopped before its plan's end (the deadline, issue 51)."""

    phase: Literal["pretraining", "supervised"]
    step: Count
    planned: PositiveCount
    why: str

    @model_validator(mode="after")
    def _before(self) -> TwinCut:
        if self.step >= self.planned:
            raise ValueError(f"cut at step {self.step}, not before the planned {self.planned}")
        return self


class TwinStop(Open):
    """Where a twin run was stopped by a signal (SIGINT, SIGTERM) or an error before its end: the
    phase, the supervised step of the last evaluation written (0: none) and the steps planned."""

    phase: str
    by: str
    why: str
    step: Count
    planned: PositiveCount | None
    at: NonNegative

    @model_validator(mode="after")
    def _before(self) -> TwinStop:
        if self.planned is not None and self.step > self.planned:
            raise ValueError(f"stopped at step {self.step}, past the planned {self.planned}")
        return self


class TwinGroup(Open):
    """A GPU twin's ``group-0.json``: the runs, streamed as they train (``spt_theory.lra.gpu.twin``)."""

    group: Count
    seeds: list[Seed]
    arms: list[str]
    runs: list[TwinRun]
    data: str = Field(min_length=64, max_length=64)
    config: dict[str, Any]
    cut: TwinCut | None = None
    stopped: TwinStop | None = None

    @model_validator(mode="after")
    def _consistent(self) -> TwinGroup:
        unique(self.seeds, "seed")
        unique([(r.arm, r.seed) for r in self.runs], "run (arm, seed)")
        for r in self.runs:
            if r.arm not in self.arms or r.seed not in self.seeds:
                raise ValueError(f"run ({r.arm}, {r.seed}): not an arm and seed of the group")
        n = {p.test_correct["n"] for r in self.runs for p in r.curve}
        if len(n) > 1:
            raise ValueError(f"test_correct: runs of one group scored on test sets of sizes {sorted(n)}")
        return self


class TwinData(Open):
    fingerprint: str = Field(min_length=64, max_length=64)
    source: str
    n_train: PositiveCount
    n_val: PositiveCount
    n_test: PositiveCount


class TwinPlan(Open):
    """The plan the run made (``spt_theory.lra.gpu.twin_plan.plan``): what it trains and how it shrank."""

    setting: Literal["contour6", "short", "factorial"]
    arms: list[str] = Field(min_length=2)
    seeds: list[Seed] = Field(min_length=1)
    steps: PositiveCount
    spt_steps: Count
    finetune_steps: Count
    eval_steps: list[PositiveCount] = Field(min_length=1)
    shrunk: list[str]
    fits: bool
    budget_seconds: Number
    total_seconds: NonNegative
    poolings: dict[Literal["mean", "max"], PositiveCount] | None = None
    """The factorial's steps an arm by readout (its arms ``<pooling>.<arm>``); absent: one ``steps``."""

    @model_validator(mode="after")
    def _consistent(self) -> TwinPlan:
        unique(self.seeds, "seed")
        unique(self.arms, "arm")
        if self.poolings is not None:
            if max(self.poolings.values()) != self.steps or min(self.poolings.values()) <= self.spt_steps:
                raise ValueError(f"poolings {self.poolings}: the longest is not steps {self.steps}, or one ends "
                                 f"within SPT's {self.spt_steps}")
            if any(a.split(".", 1)[0] not in self.poolings for a in self.arms):
                raise ValueError(f"arms {self.arms}: each a <pooling>.<arm> of the poolings {sorted(self.poolings)}")
        if self.spt_steps + self.finetune_steps != self.steps:
            raise ValueError(f"spt_steps {self.spt_steps} + finetune_steps {self.finetune_steps} != steps {self.steps}")
        if self.eval_steps != sorted(set(self.eval_steps)) or self.eval_steps[-1] != self.steps:
            raise ValueError(f"eval_steps {self.eval_steps}: not increasing to the steps {self.steps}")
        return self


class TwinSummary(Open):
    """A GPU twin's ``summary.json``: versions, device, phases, data, bench, plan, cut, complete."""

    kind: Literal["gpu-twin"]
    setting: Literal["contour6", "short", "factorial"]
    tiny: bool
    versions: dict[str, Any]
    device: dict[str, Any]
    wall_seconds: Positive
    phases: dict[str, NonNegative]
    complete: bool
    cut: TwinCut | None = None
    stopped: TwinStop | None = None
    data: TwinData
    bench: dict[str, Any]
    plan: TwinPlan

    @model_validator(mode="after")
    def _consistent(self) -> TwinSummary:
        if self.complete and (self.cut is not None or self.stopped is not None):
            raise ValueError("complete, yet " + ("cut" if self.cut is not None else "stopped"))
        if self.plan.setting != self.setting:
            raise ValueError(f"plan.setting {self.plan.setting!r} is not setting {self.setting!r}")
        return self


TWIN_PRETRAINED = ("spt", "hybrid_qk")
"""The twin's arms that pretrain (their curve counts SPT's steps: ``offset``)."""
TWIN_MIN_SEEDS = 8


class TwinResult(Versioned):
    """A GPU twin's result as promotion assembles it (``spt_theory.lra.gpu.promote.collect``),
    whatever machine ran it: every arm x seed of the plan, each run's curve at the plan's evaluation
    steps (SPT's counted) up to where it stopped: at its steps when complete, at the step reached
    when cut (``cut``) or stopped by a signal or an error (``stopped``: the last evaluation written),
    none when cut or stopped before the first evaluation; only such a run has incomplete runs;
    ``test_accuracy`` its curve's last point's, and every point's accuracy its per-example bits' over
    the data's ``n_test`` examples; the plan and its shrink history as the run made them.  The
    tests read a tiny CPU run with it; the evidence is :class:`TwinEvidence`."""

    kind: Literal["gpu-twin"]
    setting: Literal["contour6", "short", "factorial"]
    registered: str
    tiny: bool
    device: dict[str, Any]
    versions: dict[str, Any]
    wall_seconds: Positive
    phases: dict[str, NonNegative]
    data: TwinData
    bench: dict[str, Any]
    plan: TwinPlan
    config: dict[str, Any]
    complete: bool
    cut: TwinCut | None
    stopped: TwinStop | None = None
    runs: list[TwinRun] = Field(min_length=2)

    @model_validator(mode="after")
    def _runs(self) -> TwinResult:
        plan = self.plan
        if not plan.fits:
            raise ValueError("plan.fits: false (a plan that does not fit never trains)")
        if self.cut is not None and self.stopped is not None:
            raise ValueError("cut and stopped: one or the other")
        if self.complete != (self.cut is None and self.stopped is None):
            raise ValueError(f"complete {self.complete} with cut {self.cut is not None}, stopped "
                             f"{self.stopped is not None}: complete exactly when neither")
        want = sorted((a, s) for a in plan.arms for s in plan.seeds)
        have = sorted((r.arm, r.seed) for r in self.runs)
        if have != want:
            raise ValueError(f"runs: {len(have)} arm x seed runs, the plan has {len(want)} "
                             f"(e.g. missing {next(iter(sorted(set(want) - set(have))), None)})")
        cut, stopped = self.cut, self.stopped
        if cut is not None and cut.planned != (plan.spt_steps if cut.phase == "pretraining" else plan.steps):
            raise ValueError(f"cut.planned {cut.planned} is not the plan's {cut.phase} steps")
        if stopped is not None and stopped.planned != plan.steps:
            raise ValueError(f"stopped.planned {stopped.planned} is not the plan's steps {plan.steps}")
        if cut is not None:
            step = 0 if cut.phase == "pretraining" else cut.step
        else:
            step = plan.steps if stopped is None else stopped.step
        for r in self.runs:
            where = f"run ({r.arm}, {r.seed})"
            offset = plan.spt_steps if r.arm.rsplit(".", 1)[-1] in TWIN_PRETRAINED else 0
            by_pooling: dict[str, int] = {str(k): v for k, v in (plan.poolings or {}).items()}
            steps = by_pooling[r.arm.split(".", 1)[0]] if by_pooling else plan.steps
            last = steps - offset
            if r.offset != offset or r.steps != steps:
                raise ValueError(f"{where}: offset {r.offset}, steps {r.steps}; the plan's are {offset}, {steps}")
            expected = [e + offset for e in plan.eval_steps if e <= min(last, step)]
            if [p.step for p in r.curve] != expected:
                raise ValueError(f"{where}: curve at steps {[p.step for p in r.curve]}, the plan's evaluations up to "
                                 f"where it stopped are {expected}")
            if r.complete != (last <= step):
                raise ValueError(f"{where}: complete {r.complete}, but the run " + (
                    "was cut before its last step" if r.complete else "reached its last step"))
        correctness.check_counts([(f"runs[{j}].curve[{i}]", p) for j, r in enumerate(self.runs)
                                  for i, p in enumerate(r.curve)], self.data.n_test)
        return self


class TwinEvidence(TwinResult):
    """A GPU twin's result promoted into the package (``python -m spt_theory.lra gpu promote``,
    ``evidence/lra/gpu/<setting>.json``), what the G claims read: strict.  A :class:`TwinResult`
    from a CUDA device, not tiny, with at least 8 seeds; its registration (the setting's sizes,
    seeds, arms, steps, evaluations, data fingerprint) is held by
    ``spt_theory.lra.gpu.twin_conform.conform`` at promotion and in verify."""

    tiny: Literal[False]

    @model_validator(mode="after")
    def _consistent(self) -> TwinEvidence:
        if self.device.get("kind") != "cuda":
            raise ValueError(f"device.kind {self.device.get('kind')!r}: the twin's evidence comes from a CUDA device")
        if len(self.plan.seeds) < TWIN_MIN_SEEDS:
            raise ValueError(f"plan.seeds: {len(self.plan.seeds)} seeds, at least {TWIN_MIN_SEEDS} needed")
        return self
