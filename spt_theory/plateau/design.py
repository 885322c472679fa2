r"""The plateau-law grid's design (lemma T8 in ``proofs/T8_plateau_law.md``): its constants, its
runs (:class:`PlateauRun`, whose cache key dict is the run's key), their caps, the order they are
trained in (:func:`grid`) and the search of SPT lengths (:func:`spt_search`).

Measured quantities, fixed before the runs (2026-12-01):

- **escape step** of a scratch run: the first evaluation step t (every :func:`eval_every` steps)
  where the test accuracy on the first :data:`EVAL_SIZE` test sequences is >= :data:`ESCAPE`
  (0.6; chance has sd 0.022 there, so 0.6 is 4.5 sd).  The run stops at its escape; a run that
  reaches its cap (:func:`cap`) without escaping gives the lower bound T > cap.
- **SPT steps to 95%**: the least SPT length s of the grid :data:`SPT_GRID` (125 * 2^(k/2) steps)
  after which the finetune (every group kept, fresh AdamW, at most :data:`FINETUNE_CAP` steps,
  E14's 3 epochs) reaches test accuracy >= 0.95 (:data:`paper_runs.SOLVED`) on the same
  :data:`EVAL_SIZE` sequences.  The grid is searched by doubling from 125 steps and one bisection
  (:func:`spt_search`), assuming the finetuned accuracy rises with s (E9 measures it at n = 100).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from pathlib import Path

from spt_theory import evidence
from spt_theory.core.model import ModelConfig
from spt_theory.training.cache import StageCache
from spt_theory.walk import paper_runs
from spt_theory.walk.experiments import WalkData

FORMAT = 1
LENGTHS = (25, 50, 100, 200)
SEEDS = (0, 1, 2)
EVAL_SIZE = 500
ESCAPE = 0.6
SOLVED = paper_runs.SOLVED
BATCH = 64
ADAMW_LR = 1e-3
SGD_LR = 0.3
"""The largest stable rate of the pilot (n = 25, seed 0, momentum 0.9): 0.6 and 1.0 diverge within
40 steps (1.0 also after a 300-step warm-up), 0.1 and 0.3 train without leaving the plateau in 4000 steps."""
SGD_MOMENTUM = 0.9
OPTIMISERS = ("adamw", "sgd")
CHECKPOINT_EVERY = 1000
FINETUNE_CAP = 375
SPT_GRID = tuple(round(125 * 2 ** (k / 2)) for k in range(-4, 9))
"""31, 44, 62, 88, 125, 177, 250, 354, 500, 707, 1000, 1414, 2000 SPT steps."""
SPT_LADDER = tuple(round(125 * 2 ** (k / 2)) for k in range(-4, 13))
"""The same sqrt 2 ladder carried up to 8000 SPT steps; an SPT run with a ``cap`` searches the
points of it up to its cap (the grid's runs have cap 0: :data:`SPT_GRID`)."""
PREDICTED = 400
"""The out-of-sample length (claims P6, P7): its runs are not in the grid of :data:`LENGTHS`; they
run with ``--lengths 400`` and are judged against ``evidence/plateau/prediction_n400.json``,
committed before any of them (bd8a28f)."""
PREDICTED_COMMAND = f"python -m spt_theory.plateau --lengths {PREDICTED} --threads 1 --promote"
"""The n = 400 runs (3 seeds SPT, then 3 seeds AdamW), merged into the committed grid when done."""
PREDICTED_ADAMW_CAP = 40000
"""AdamW cap at n = 400: above the prediction's single-seed interval [15,030, 37,932], so a capped
run decides (outside), and a multiple of the evaluation period (200 at n = 400)."""
PREDICTED_SPT_CAP = 4000
"""Largest SPT length at n = 400: the ladder's first point above the interval [1,880, 3,472] (its
points inside are 2000 and 2828), so a run that is not solved by 4000 decides (outside)."""
EVIDENCE = evidence.path(evidence.PLATEAU)
"""The committed grid and noise scales (package data), read by the claims P*."""
SUMMARY = EVIDENCE / "plateau_runs.json"
GRADIENT_RMS = EVIDENCE / "gradient_rms.json"
RUNS = Path("runs/plateau")
"""Where ``plateau`` trains and writes its summary unless told (a user folder, never the evidence)."""


def eval_every(n: int) -> int:
    """Evaluation period in steps: 25 up to n = 50, then 25 n / 50 (eval cost ~5% of training)."""
    return 25 * max(1, n // 50)


def cap(optimiser: str, n: int, qk_scale: float) -> int:
    """Step cap of a scratch run: AdamW 12000, about 2.5x the escape the law predicts at n = 200
    from the n = 25 pilot (975 steps); at init / 10 8000 (2x P3's prediction at n = 100); SGD 3000
    (what a shared core affords, 2 min per run at n = 25; above P4's bound, 2.2 x 909 steps)."""
    if optimiser == "sgd":
        return 3000
    return 12000 if qk_scale == 1.0 else 8000


SGD_LENGTHS = (25, 50)
SGD_LONG_CAP = 20000
LONG = 200


@dataclass(frozen=True)
class PlateauRun:
    """One run of the grid: ``kind`` ``scratch`` (escape step) or ``spt`` (SPT steps to 95%)."""

    kind: str
    length: int
    seed: int
    optimiser: str = "adamw"
    qk_scale: float = 1.0
    cap: int = 0
    model: tuple[tuple[str, object], ...] = ()
    """``--set`` model settings as (field, value) pairs; none for the grid's own runs."""

    def fields(self) -> dict:
        """The run's config as its cache key and summary row hold it: the model settings enter the
        key only through the model they make (so the grid's keys are those of before ``--set``)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if k != "model"}

    def with_model(self, settings: dict) -> PlateauRun:
        """This run with the model settings ``settings`` (``--set``; ``{}``: the run itself)."""
        return replace(self, model=tuple(sorted(settings.items())))

    def model_config(self) -> ModelConfig:
        """The walk model for this length, with the run's model settings."""
        return self.data.model_config(**dict(self.model))

    @property
    def lr(self) -> float:
        return ADAMW_LR if self.optimiser == "adamw" else SGD_LR

    @property
    def data(self) -> WalkData:
        return WalkData(length=self.length)

    def cache(self, root: Path) -> StageCache:
        return StageCache.of(root, {"format": FORMAT, "run": self.fields(), "eval_size": EVAL_SIZE,
                                    "escape": ESCAPE, "solved": SOLVED, "batch": BATCH, "lr": self.lr,
                                    "data": dataclasses.asdict(self.data),
                                    "model": dataclasses.asdict(self.model_config())})



def spt_grid(run: PlateauRun) -> tuple[int, ...]:
    """The SPT lengths ``run`` may try: :data:`SPT_GRID`, or with a cap the ladder up to it."""
    return tuple(s for s in SPT_LADDER if s <= run.cap) if run.cap else SPT_GRID


def spt_search(solves, grid: tuple[int, ...] = SPT_GRID, start: int = 125) -> tuple[int | None, dict]:
    """The least s of ``grid`` with ``solves(s)`` true, assuming it is monotone in s: from
    ``start``, steps of two grid points up (until it solves) or down (until it fails), then the
    point between the last two tried.  Returns (s or None, {s: solves(s)} for every s tried)."""
    tried: dict[int, bool] = {}
    k = grid.index(start)

    def test(i: int) -> bool:
        if grid[i] not in tried:
            tried[grid[i]] = solves(grid[i])
        return tried[grid[i]]

    if test(k):
        while k - 2 >= 0 and test(k - 2):
            k -= 2
        if k - 1 >= 0 and test(k - 1):
            k -= 1
        return grid[k], tried
    while k + 2 < len(grid) and not test(k + 2):
        k += 2
    if k + 2 >= len(grid):
        return (grid[-1], tried) if k + 1 < len(grid) and test(len(grid) - 1) else (None, tried)
    return (grid[k + 1] if test(k + 1) else grid[k + 2]), tried


def grid(lengths: tuple[int, ...] = LENGTHS, seeds: tuple[int, ...] = SEEDS) -> list[PlateauRun]:
    """The runs in the order they are trained, most needed first, so that a short budget still
    ends with whole rows of 3 seeds.  Sized from the measured step time on a shared core (35, 65,
    90 ms at n = 25, 50, 100, about 3x the idle core's): AdamW at the default init for n < 200, SPT
    for n < 200, AdamW at init / 10 for n = 25, 50, SGD at n = 25, AdamW at n = 200; then (past the
    budget of 2026-12-01, in this order) init / 10 at n = 100, SPT at n = 200, SGD at n = 50, init /
    10 at n = 200, and SGD at n = 25 again with the cap :data:`SGD_LONG_CAP` (added when the
    3000-step SGD runs had all capped; the claims take the longest whole row).  At n =
    :data:`PREDICTED` (out of sample, only when asked for: ``--lengths 400``): SPT (searched up to
    :data:`PREDICTED_SPT_CAP`), then AdamW at the default init (cap :data:`PREDICTED_ADAMW_CAP`),
    3 seeds each, with the grid's batch, evaluation and escape rule."""
    def row(kind: str, optimiser: str, scale: float, ns) -> list[PlateauRun]:
        return [PlateauRun(kind, n, s, optimiser, scale, cap(optimiser, n, scale) if kind == "scratch" else 0)
                for n in ns if n in lengths for s in seeds]

    short = [n for n in lengths if n < LONG]
    sgd_long = [replace(r, cap=SGD_LONG_CAP) for r in row("scratch", "sgd", 1.0, SGD_LENGTHS[:1])]
    return (row("scratch", "adamw", 1.0, short) + row("spt", "adamw", 1.0, short)
            + row("scratch", "adamw", 0.1, (25, 50)) + row("scratch", "sgd", 1.0, SGD_LENGTHS[:1])
            + row("scratch", "adamw", 1.0, (LONG,)) + row("scratch", "adamw", 0.1, (100,))
            + row("spt", "adamw", 1.0, (LONG,)) + row("scratch", "sgd", 1.0, SGD_LENGTHS[1:])
            + row("scratch", "adamw", 0.1, (LONG,)) + sgd_long
            + [PlateauRun("spt", n, s, cap=PREDICTED_SPT_CAP) for n in (PREDICTED,) if n in lengths for s in seeds]
            + [PlateauRun("scratch", n, s, cap=PREDICTED_ADAMW_CAP) for n in (PREDICTED,) if n in lengths
               for s in seeds])

