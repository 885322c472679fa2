"""The other LRA evidence formats, over the shared schema (:mod:`spt_theory.evidence.schema`): the
shortcut audit (:class:`AuditReport`), the escape race (:class:`RaceEvidence`), the GPU twin's files
(:class:`TwinSummary`, :class:`TwinGroup`, :class:`TwinResult`, :class:`TwinEvidence`).  The sweep
summary and the decide evidence are :mod:`spt_theory.evidence.sweep_schema`'s.  A reader says
``schema.load(path, lra_schema.RaceEvidence, settings)``; ``test_correct`` beside a test accuracy is
checked as there.
"""

from __future__ import annotations

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
from spt_theory.evidence.sweep_schema import SweepData


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
