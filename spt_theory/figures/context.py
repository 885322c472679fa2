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
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib
import numpy as np
import torch

from spt_theory import paper_runs
from spt_theory.cache import config_hash
from spt_theory.experiments import (Budget, RunResult, RunSpec, WalkData, built_data, initial_model, recipe, run, stage_cache,
                                    stage_key, walk_metrics)
from spt_theory.figures.style import plt
from spt_theory.io import atomic_write, write_json
from spt_theory.training import Dataset

DEFAULT_DATA = WalkData()
DEFAULT_BUDGET = Budget()
DEFAULT_MODEL: dict = {}
DEFAULT_T3_COUNT = 16
LRA_RESULTS = Path("runs/lra/results")


class FigureSkipped(Exception):
    """A figure whose inputs do not exist (e.g. no LRA results): reported, not an error."""


@dataclass
class FigureContext:
    """Where figures read their runs and write their files; runs are memoised by config hash.

    ``spt_lengths`` (epochs), ``data_scales`` and ``depths``: the grids of the paper figures
    ``spt_length`` and ``paper_checks`` (default: :mod:`spt_theory.paper_runs`'s; tests use shorter ones).
    """

    data: WalkData = DEFAULT_DATA
    budget: Budget = DEFAULT_BUDGET
    model: dict = field(default_factory=dict)
    seeds: tuple[int, ...] = (0, 1, 2)
    cache_dir: Path = Path("runs")
    out: Path = Path("figures")
    progress: bool = True
    spt_lengths: tuple[float, ...] = paper_runs.SPT_LENGTH_EPOCHS
    data_scales: tuple[int, ...] = paper_runs.DATA_SCALES
    depths: tuple[int, ...] = paper_runs.DEPTHS
    t3_count: int = DEFAULT_T3_COUNT
    lra_results: Path = LRA_RESULTS
    probe_size: int = 256
    _runs: dict = field(default_factory=dict, repr=False)

    def dataset(self, walk: WalkData | None = None) -> Dataset:
        """The data set of ``walk`` (default: the context's), built once per process (:func:`built_data`)."""
        return built_data(walk or self.data)

    def spec(self, name: str, seed: int) -> RunSpec:
        return recipe(name, self.data, seed, self.budget, **self.model)

    def result(self, name: str, seed: int, spec: RunSpec | None = None) -> RunResult:
        """One run, trained or loaded from the cache (said on stdout when it has to train); ``spec``
        (default: recipe ``name``) may have other data, model or stages than the context's."""
        spec = spec or self.spec(name, seed)
        key = config_hash(spec)
        if key not in self._runs:
            missing = [k for k, s in enumerate(spec.stages)
                       if s.epochs > 0 and not stage_cache(spec, k, self.cache_dir).has(s.epochs)]
            if missing:
                print(f"  training {name} seed {seed} (stages {missing} not cached in {self.cache_dir})",
                      flush=True)
            self._runs[key] = run(spec, self.cache_dir, progress=self.progress)
        return self._runs[key]

    def runs(self, name: str) -> list[RunResult]:
        return [self.result(name, seed) for seed in self.seeds]

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


def seeds_label(ctx: FigureContext) -> str:
    return ", ".join(str(s) for s in ctx.seeds)


def save(ctx: FigureContext, name: str, fig, record: dict) -> list[Path]:
    """Write NAME.png, NAME.pdf and NAME.json into ``ctx.out`` atomically."""
    paths = [ctx.out / f"{name}.png", ctx.out / f"{name}.pdf"]
    atomic_write(paths[0], lambda tmp: fig.savefig(tmp, format="png", dpi=300,
                                                   metadata={"Software": None}))
    atomic_write(paths[1], lambda tmp: fig.savefig(tmp, format="pdf",
                                                   metadata={"CreationDate": None, "Creator": None}))
    plt.close(fig)
    paths.append(write_json(ctx.out / f"{name}.json", record))
    return paths


def rounded(x, digits: int = 6):
    if isinstance(x, torch.Tensor):
        x = x.detach().double().cpu().numpy()
    if isinstance(x, np.ndarray):
        return np.round(x, digits).tolist()
    return x
