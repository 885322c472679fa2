"""What every figure reads and writes: the runs (trained or loaded from the cache shared with
``verify``), their provenance, and the files.

A :class:`FigureContext` says where runs are cached and figures written, and memoises runs per
(recipe, seed).  :func:`save` writes ``NAME.png`` (300 dpi), ``NAME.pdf`` and ``NAME.json`` (every
plotted number, the seeds, the config hash and stage keys of every run used: :meth:`FigureContext.source`),
atomically.  The ``DEFAULT_*`` values are the command line's defaults (tests set tiny ones).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib
import numpy as np
import torch

from spt_theory import evidence
from spt_theory.claims.registry import check_read_evidence
from spt_theory.evidence import schema
from spt_theory.training.cache import config_hash
from spt_theory.training.loop import Dataset
from spt_theory.training.recipes import Budget
from spt_theory.util.files import write_json
from spt_theory.util.plotting import plt, save_figure
from spt_theory.walk import paper_runs
from spt_theory.walk.experiments import (
    RunResult,
    RunSpec,
    WalkData,
    built_data,
    initial_model,
    recipe,
    run,
    stage_cache,
    stage_key,
    walk_metrics,
)

DEFAULT_DATA = WalkData()
DEFAULT_BUDGET = Budget()
DEFAULT_MODEL: dict = {}
DEFAULT_T3_COUNT = 16
LRA_RESULTS = Path("runs/lra/results")
LRA_EVIDENCE = evidence.path(evidence.LRA)
"""The committed LRA sweep summaries (package data ``evidence/lra/``, the L claims' input)."""


EPOCH_SECONDS = 5.6
"""Seconds per epoch of the default walk run (8000 sequences of 100 tokens, 1 layer, width 64) on
2 idle CPU cores: the quick verify trained about 53 such epochs in 298 s (docs/history.md); the basis of
:func:`training_seconds`."""


class FigureSkipped(Exception):
    """A figure whose inputs do not exist (e.g. no LRA results): reported, not an error."""


class DrawnWithErrors(Exception):
    """A figure drawn and saved (``paths``) that shows ERROR rows, evidence that verify gives ERROR,
    as errors: the command names them and fails (exit 1)."""

    def __init__(self, paths: list[Path], message: str):
        super().__init__(message)
        self.paths = paths


class NotCached(Exception):
    """Runs a figure needs that the cache does not hold, while training was not asked for:
    ``needs`` maps each run (recipe, seed, the stages to train) to its estimated seconds."""

    def __init__(self, needs: dict[str, float]):
        super().__init__(f"{len(needs)} runs not cached")
        self.needs = needs


def training_seconds(spec: RunSpec, stages: list[int]) -> float:
    """About how long the ``stages`` of ``spec`` take to train on 2 CPU cores: :data:`EPOCH_SECONDS`
    scaled by the epochs and by the tokens x layers x width of an epoch against the default run's."""
    default = DEFAULT_DATA.n_train * DEFAULT_DATA.length * 64
    size = spec.data.n_train * spec.data.length * spec.model.n_layers * spec.model.d_model
    return sum(spec.stages[k].epochs for k in stages) * EPOCH_SECONDS * size / default


@dataclass
class FigureContext:
    """Where figures read their runs and write their files; runs are memoised by config hash.

    ``spt_lengths`` (epochs), ``data_scales`` and ``depths``: the grids of the paper figures
    ``spt_length`` and ``paper_checks`` (default: :mod:`spt_theory.walk.paper_runs`'s; tests use shorter ones).
    """

    data: WalkData = DEFAULT_DATA
    budget: Budget = DEFAULT_BUDGET
    model: dict = field(default_factory=dict)
    asked: dict = field(default_factory=dict)
    """The model settings asked for with ``--set`` (committed evidence is held to these only)."""
    seeds: tuple[int, ...] = (0, 1, 2)
    cache_dir: Path = Path("runs")
    out: Path = Path("figures")
    progress: bool = True
    spt_lengths: tuple[float, ...] = paper_runs.SPT_LENGTH_EPOCHS
    data_scales: tuple[int, ...] = paper_runs.DATA_SCALES
    depths: tuple[int, ...] = paper_runs.DEPTHS
    t3_count: int = DEFAULT_T3_COUNT
    lra_results: Path = LRA_RESULTS
    lra_evidence: Path = LRA_EVIDENCE
    evidence_root: Path = evidence.root()
    """The committed evidence (package data) the plateau and race figures redraw."""
    probe_size: int = 256
    train: bool = True
    """Train the runs the cache lacks; False: :class:`NotCached` names them instead."""
    _runs: dict = field(default_factory=dict, repr=False)

    def dataset(self, walk: WalkData | None = None) -> Dataset:
        """The data set of ``walk`` (default: the context's), built once per process (:func:`built_data`)."""
        return built_data(walk or self.data)

    def spec(self, name: str, seed: int) -> RunSpec:
        return recipe(name, self.data, seed, self.budget, **self.model)

    def result(self, name: str, seed: int, spec: RunSpec | None = None) -> RunResult:
        """One run, trained or loaded from the cache (:meth:`results`); ``spec`` (default: recipe
        ``name``) may have other data, model or stages than the context's."""
        return self.results(name, [spec or self.spec(name, seed)])[0]

    def runs(self, name: str) -> list[RunResult]:
        """Recipe ``name`` at every seed (:meth:`results`)."""
        return self.results(name, [self.spec(name, seed) for seed in self.seeds])

    def results(self, name: str, specs: list[RunSpec]) -> list[RunResult]:
        """The runs ``specs`` (of recipe ``name``), loaded from the cache or trained (said on stdout
        when it has to train); without :attr:`train`, a :class:`NotCached` naming every one of
        them that the cache lacks, before any is trained."""
        todo = {}
        for spec in specs:
            key = config_hash(spec)
            if key not in self._runs:
                todo[key] = (spec, [k for k, s in enumerate(spec.stages)
                                    if s.epochs > 0 and not stage_cache(spec, k, self.cache_dir).has(s.epochs)])
        needs = [(spec, missing) for spec, missing in todo.values() if missing]
        if needs and not self.train:
            raise NotCached({f"{name} seed {spec.seed} ("
                             + " + ".join(f"{spec.stages[k].objective} {spec.stages[k].epochs} ep" for k in missing)
                             + ")": training_seconds(spec, missing) for spec, missing in needs})
        for key, (spec, missing) in todo.items():
            if missing:
                print(f"  training {name} seed {spec.seed} (stages {missing} not cached in {self.cache_dir})",
                      flush=True)
            self._runs[key] = run(spec, self.cache_dir, progress=self.progress)
        return [self._runs[config_hash(spec)] for spec in specs]

    def source(self, name: str, seed: int, spec: RunSpec | None = None) -> dict:
        """Provenance of a run: recipe, seed, config hash of the full spec, cache key of each stage."""
        spec = spec or self.spec(name, seed)
        return {"recipe": name, "seed": seed, "config_hash": config_hash(spec),
                "stage_keys": [stage_key(spec, k) for k in range(len(spec.stages))],
                "stage_epochs": [s.epochs for s in spec.stages]}

    def sources(self, *names: str) -> list[dict]:
        return [self.source(name, seed) for name in names for seed in self.seeds]

    def init_metrics(self, seed: int) -> dict:
        """Test accuracy, band mass and attention distance of the model at init (epoch 0)."""
        key = ("init-metrics", seed)
        if key not in self._runs:
            self._runs[key] = walk_metrics(self.dataset())(initial_model(self.spec("scratch", seed)))
        return self._runs[key]

    def header(self, figure: str, claims: list[str]) -> dict:
        return {"figure": figure, "claims": claims, "seeds": list(self.seeds),
                "data": dataclasses.asdict(self.data), "budget": dataclasses.asdict(self.budget),
                "model_overrides": dict(self.model), "cache_dir": str(self.cache_dir),
                "torch": str(torch.__version__), "matplotlib": matplotlib.__version__}


def summary(values: list[float]) -> dict:
    """Per-seed values, mean, sample standard deviation (0 for one seed), min and max.

    NaN values (a probe undefined on some seed) are kept in ``per_seed`` and left out of the
    statistics; all NaN gives NaN statistics.
    """
    values = [float(v) for v in values]
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return {"per_seed": values, "mean": math.nan, "std": math.nan, "min": math.nan, "max": math.nan}
    return {"per_seed": values, "mean": statistics.fmean(finite),
            "std": statistics.stdev(finite) if len(finite) > 1 else 0.0,
            "min": min(finite), "max": max(finite)}


def trained(ctx: FigureContext, label: str, build: Callable[[int], RunSpec]) -> tuple[list[RunResult], list[dict]]:
    """``build(seed)`` trained or loaded for every seed of ``ctx``, and each run's provenance."""
    specs = [build(seed) for seed in ctx.seeds]
    return ctx.results(label, specs), [ctx.source(label, spec.seed, spec) for spec in specs]


def seeds_label(ctx: FigureContext) -> str:
    return ", ".join(str(s) for s in ctx.seeds)


def held_to_record(ctx: FigureContext, *paths: Path, digests: dict[Path, str] | None = None) -> tuple[str, ...]:
    """Hold each evidence file a figure draws to its recorded content, as verify holds it
    (:func:`~spt_theory.claims.registry.check_read_evidence`), before anything is drawn: a file under
    ``ctx.evidence_root`` whose content was edited, or is recorded nowhere, is an EvidenceError
    naming it (never a figure).  Each file is held by the digest of the bytes the figure parsed:
    ``digests[path]`` where given (:func:`~spt_theory.util.files.read_json_hashed`), else what
    :func:`schema.load` recorded (:data:`schema.READ`); a path read neither way is a programming
    error (a file is never hashed apart from its parse).  Returns the files read from elsewhere (a
    user's ``--lra-evidence`` folder) whose content is not the recorded one: drawn as the user's own,
    named in the figure's record as unregistered."""
    import os

    read = {Path(os.path.abspath(path)): digest for path, digest in (digests or {}).items()}
    for path in paths:
        key = Path(os.path.abspath(path))
        if key not in schema.READ:
            raise RuntimeError(f"{path}: held to its record before it was read (schema.load or read_json_hashed)")
        read[key] = schema.READ[key]
    return check_read_evidence(read, Path(ctx.evidence_root), Path(ctx.lra_evidence))


def save(ctx: FigureContext, name: str, fig, record: dict) -> list[Path]:
    """Write NAME.png, NAME.pdf (:func:`~spt_theory.util.plotting.save_figure`) and NAME.json into
    ``ctx.out`` atomically."""
    paths = [save_figure(fig, ctx.out / f"{name}{suffix}", dpi=300) for suffix in (".png", ".pdf")]
    plt.close(fig)
    paths.append(write_json(ctx.out / f"{name}.json", record))
    return paths


def rounded(x, digits: int = 6):
    if isinstance(x, torch.Tensor):
        x = x.detach().double().cpu().numpy()
    if isinstance(x, np.ndarray):
        return np.round(x, digits).tolist()
    return x
