r"""The runs behind the claims that test the paper's statements as it makes them (E5, E5b, E6b, E9-E14, X5b).

Every run is a :class:`~spt_theory.walk.experiments.RunSpec` of the design's recipes, trained (or loaded)
by :func:`~spt_theory.walk.experiments.run` and cached by config hash, so verify, the figures and
``python -m spt_theory.paper_runs`` (which trains them ahead, in priority order) share one cache.

- E5, E5b: frozen random W_Q, W_K where supervised training partly learns: the last-token readout
  (E5), the ALiBi bias with the mean-pooled readout (E5b);
- E9: SPT length on a log grid of optimizer steps, :data:`SPT_LENGTH_STEPS` (1/4 to 8 epochs);
- E10, E11: training accuracy / loss of the scratch and SPT runs (recorded every epoch), and
  scratch with :data:`DATA_SCALES` times the labelled data; E11b: scratch on the 1x data for as many
  steps as the largest of those runs;
- E12: scratch and SPT at :data:`DEPTHS` layers;
- E13, E14: scratch and the SPT budget needed at every point of :data:`PHASE_POINTS` (p, n, V);
- E6b (E6 per epoch): hybrids kept groups ``qk``, ``vo``, ``mlp`` and full SPT, each finetuned
  for the scratch budget;
- X5b: SPT on sources without neighbour structure (``uniform``, ``shuffled``) as negative controls.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from spt_theory.core import args as cli_args
from spt_theory.core.model import PARAMETER_GROUPS
from spt_theory.training.recipes import Budget
from spt_theory.util.files import InputError, prepare_output
from spt_theory.util.interrupts import interruptible
from spt_theory.util.prog import prog
from spt_theory.walk.experiments import RunResult, RunSpec, WalkData, control_recipe, recipe, run

WALK = WalkData()
BUDGET = Budget()



def steps_per_epoch(walk: WalkData = WALK, budget: Budget = BUDGET) -> int:
    return math.ceil(walk.n_train / budget.batch_size)


SPT_LENGTH_EPOCHS = tuple(2 ** (k / 2) for k in range(-4, 7))
r"""SPT lengths of the fine-grained E9 sweep, :math:`2^{k/2}` epochs for k = -4..6: 0.25, 0.35,
0.5, 0.71, 1, 1.41, 2, 2.83, 4, 5.66, 8 epochs (31 ... 1000 steps at 125 steps per epoch)."""


def spt_length_steps(walk: WalkData = WALK, budget: Budget = BUDGET,
                     epochs: tuple[float, ...] = SPT_LENGTH_EPOCHS) -> tuple[int, ...]:
    """SPT lengths ``epochs`` (default :data:`SPT_LENGTH_EPOCHS`) in optimizer steps (rounded, at least 1)."""
    per_epoch = steps_per_epoch(walk, budget)
    return tuple(max(1, round(per_epoch * e)) for e in epochs)


SPT_LENGTH_STEPS = spt_length_steps()

DATA_SCALES = (4, 16)
"""Labelled-data multiples of the scratch data-scaling run (E11): 32000 and 128000 sequences."""

DEPTHS = (2, 4)
"""Encoder depths of E12 (the design's model has 1 layer)."""



def phase_points(walk: WalkData = WALK) -> tuple[WalkData, ...]:
    """Task settings of the robustness map (E13, E14): ``walk`` and each parameter moved on its own
    (one factor at a time): p to 0.2 and 0.8, n halved and doubled, V to 4 and 4 V."""
    return (walk, replace(walk, p=0.2), replace(walk, p=0.8), replace(walk, length=walk.length // 2),
            replace(walk, length=2 * walk.length), replace(walk, vocab=4), replace(walk, vocab=4 * walk.vocab))


def factor_line(points: tuple[WalkData, ...], base: WalkData, factor: str) -> list[WalkData]:
    """The points that differ from ``base`` in ``factor`` alone (a :class:`WalkData` field:
    ``p``, ``length`` or ``vocab``), ``base`` included, sorted by that factor."""
    others = [f for f in ("vocab", "length", "p") if f != factor]
    return sorted((w for w in points if all(getattr(w, f) == getattr(base, f) for f in others)),
                  key=lambda w: getattr(w, factor))


PHASE_POINTS = phase_points()
"""The default (V 16, n 100, p 0.5) and p 0.2 / 0.8, n 50 / 200, V 4 / 64.  n = 400 (the issue's
range) is left out: one seed there costs about as much as the rest of the map."""

SPT_LADDER = (1, 2, 4, 8)
"""SPT epochs tried at a phase point (E14), each followed by the 3-epoch finetune; the budget
needed is the first that reaches :data:`SOLVED`."""

SOLVED = 0.95
"""Finetuned test accuracy that counts as solved (E3's bar)."""

FULL_SPT_KEEP = "hybrid_" + "_".join(PARAMETER_GROUPS)
"""Every group kept: SPT then finetune for the scratch budget (the ``spt`` run's finetune stage
continued to 8 epochs: same stage key, since a stage's epoch count is not in its key)."""

HYBRIDS = ("hybrid_qk", "hybrid_vo", "hybrid_mlp", FULL_SPT_KEEP)


def spt_length_spec(steps: int, seed: int, walk: WalkData = WALK, budget: Budget = BUDGET, **overrides) -> RunSpec:
    """SPT for ``steps`` optimizer steps, then the 3-epoch finetune.  Whole epochs use the E9
    recipes (``sweep_<e>``, ``spt`` for 4), so they share E3's and E9's pretraining; other lengths
    are their own (shorter) SPT stages (``sptsteps_<k>``)."""
    epochs, rest = divmod(steps, steps_per_epoch(walk, budget))
    if rest:
        return recipe(f"sptsteps_{steps}", walk, seed, budget, **overrides)
    return recipe("spt" if epochs == budget.pretrain_epochs else f"sweep_{epochs}", walk, seed, budget, **overrides)


def last_token_spec(name: str, seed: int, walk: WalkData = WALK, budget: Budget = BUDGET, **overrides) -> RunSpec:
    """``scratch`` or ``frozen`` with the last-token readout (the former is X4's ``last`` run)."""
    return recipe(name, walk, seed, budget, **{**overrides, "pooling": "last"})


def alibi_spec(name: str, seed: int, walk: WalkData = WALK, budget: Budget = BUDGET, **overrides) -> RunSpec:
    """``scratch`` or ``frozen`` with the ALiBi proximity bias and the mean-pooled readout (the
    former is X1's ``alibi`` run)."""
    return recipe(name, walk, seed, budget, **{**overrides, "attention_bias": "alibi"})


def scaled_scratch_spec(scale: int, seed: int, walk: WalkData = WALK, budget: Budget = BUDGET, **overrides) -> RunSpec:
    """Scratch with ``scale`` times the labelled training sequences, same 8 epochs (test set unchanged)."""
    return recipe("scratch", replace(walk, n_train=walk.n_train * scale), seed, budget, **overrides)


def step_matched_scratch_spec(seed: int, walk: WalkData = WALK, budget: Budget = BUDGET, scale: int | None = None,
                              **overrides) -> RunSpec:
    """Scratch on the 1x labelled data for as many optimizer steps as the data-scaling run with
    ``scale`` times the data (default: the largest of :data:`DATA_SCALES`; 16 x 8 = 128 epochs,
    16000 steps), E11b's control that separates more data from more steps.  Its stage key is
    scratch's (a stage's epoch count is not in its key), so it continues E2's 8-epoch run, its prefix."""
    scale = DATA_SCALES[-1] if scale is None else scale
    return recipe("scratch", walk, seed, replace(budget, scratch_epochs=budget.scratch_epochs * scale), **overrides)


def depth_spec(name: str, layers: int, seed: int, walk: WalkData = WALK, budget: Budget = BUDGET,
               **overrides) -> RunSpec:
    return recipe(name, walk, seed, budget, **{**overrides, "n_layers": layers})


def phase_spec(name: str, walk: WalkData, seed: int, budget: Budget = BUDGET, **overrides) -> RunSpec:
    """``scratch`` or ``sweep_<e>`` at a phase point (``sweep_<pretrain_epochs>`` is ``spt``)."""
    if name == f"sweep_{budget.pretrain_epochs}":
        name = "spt"
    return recipe(name, walk, seed, budget, **overrides)


def negative_spec(source: str, seed: int, walk: WalkData = WALK, budget: Budget = BUDGET, **overrides) -> RunSpec:
    return control_recipe(f"xspt_{source}", walk, seed, budget, **overrides)


def train(spec: RunSpec, cache_dir: Path, progress: bool) -> RunResult:
    """One run trained or loaded (its data memoised per process: :func:`~spt_theory.walk.experiments.built_data`)."""
    return run(spec, cache_dir, progress=progress)


def solved_budget(walk: WalkData, seed: int, cache_dir: Path | None, progress: bool = True, budget: Budget = BUDGET,
                  train_run=None, **overrides) -> dict:
    """The least SPT epochs of :data:`SPT_LADDER` after which the finetune reaches :data:`SOLVED`.

    Bisection over the ladder (2 first, then 1, or 4 and 8) assumes the finetuned accuracy rises
    with SPT length, as E9 measures at the default point; the accuracies of every length tried are
    returned so that the assumption can be read off.  ``budget`` is None when 8 epochs do not solve it.
    ``train_run(spec)`` trains or loads a run (default: :func:`train` into ``cache_dir``).
    """
    if train_run is None:
        if cache_dir is None:
            raise ValueError("solved_budget: give a cache_dir or a train_run")
        folder = cache_dir
        train_run = lambda spec: train(spec, folder, progress)  # noqa: E731
    tried: dict[int, float] = {}
    lo, hi = 0, len(SPT_LADDER) - 1
    best = None
    while lo <= hi:
        mid = (lo + hi) // 2
        epochs = SPT_LADDER[mid]
        acc = train_run(phase_spec(f"sweep_{epochs}", walk, seed, budget, **overrides)).final["test_accuracy"]
        tried[epochs] = acc
        if acc >= SOLVED:
            best, hi = epochs, mid - 1
        else:
            lo = mid + 1
    return {"budget": best, "accuracy_by_spt_epochs": {str(k): round(v, 4) for k, v in sorted(tried.items())}}


def point_label(walk: WalkData) -> str:
    """``V<vocab>_n<length>_p<p>``: a phase point's name in claims and figures."""
    return f"V{walk.vocab}_n{walk.length}_p{walk.p:g}"


def median_budget(budgets: list[int | None]) -> float:
    """Median SPT epochs needed over seeds, a run never solved (None) counted as infinite."""
    return statistics.median(math.inf if b is None else b for b in budgets)


def phase_map(seeds: tuple[int, ...], train_run: Callable[[RunSpec], RunResult], walk: WalkData = WALK,
              budget: Budget = BUDGET, **overrides) -> dict[str, dict]:
    """The robustness map of E13 and E14: per point of :func:`phase_points` (keyed by
    :func:`point_label`), its task ``walk``, the ``scratch`` run of every seed and, per seed, what
    :func:`solved_budget` found (``found``).  ``train_run(spec)`` trains or loads a run."""
    out = {}
    for point in phase_points(walk):
        scratch = [train_run(phase_spec("scratch", point, s, budget, **overrides)) for s in seeds]
        found = [solved_budget(point, s, None, budget=budget, train_run=train_run, **overrides) for s in seeds]
        out[point_label(point)] = {"walk": point, "scratch": scratch, "found": found}
    return out


def priority_queue(seeds: tuple[int, ...]) -> list[tuple[str, RunSpec | tuple[WalkData, int]]]:
    """(claim, spec or (phase point, seed)) in the order ``python -m spt_theory.paper_runs`` trains
    them: first the cheap claims for every seed, then the expensive ones (depth, 4x data, phase
    map, 16x data) seed by seed, so that a short budget still ends with whole seeds; last the
    step-matched scratch runs of E11b (120 epochs beyond E2's)."""
    jobs: list[tuple[str, RunSpec | tuple[WalkData, int]]] = []
    for seed in seeds:
        jobs += [("E10", recipe("scratch", WALK, seed, BUDGET))]
        jobs += [("E9", spt_length_spec(k, seed)) for k in SPT_LENGTH_STEPS]
        jobs += [("E5", last_token_spec(n, seed)) for n in ("scratch", "frozen")]
        jobs += [("E5b", alibi_spec(n, seed)) for n in ("scratch", "frozen")]
        jobs += [("X5b", negative_spec(s, seed)) for s in ("uniform", "shuffled")]
        jobs += [("E6b", recipe(h, WALK, seed, BUDGET)) for h in HYBRIDS]
        jobs += [("E6", recipe("hybrid_qk_vo", WALK, seed, BUDGET))]
    for seed in seeds:
        jobs += [("E12", depth_spec(n, d, seed)) for d in DEPTHS for n in ("scratch", "spt")]
        jobs += [("E11", scaled_scratch_spec(DATA_SCALES[0], seed))]
        jobs += [("E13", (point, seed)) for point in PHASE_POINTS]
        jobs += [("E11", scaled_scratch_spec(scale, seed)) for scale in DATA_SCALES[1:]]
    jobs += [("E11b", step_matched_scratch_spec(seed)) for seed in seeds]
    return jobs


@interruptible
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=prog("python -m spt_theory.paper_runs"),
                                description="Train (or load) the runs of claims E5, E5b, E6, E6b, E9-E14, E11b and "
                                            "X5b ahead of "
                                            "`verify --full`, cheapest and most needed first; cached in "
                                            "--cache-dir like verify's runs, so an interrupted call resumes.")
    cli_args.add_seeds(p, (0, 1, 2), "0 1 2")
    p.add_argument("--only", nargs="+", metavar="CLAIM",
                   help="train only these claims' runs (E5 E5b E6 E6b E9 E10 E11 E11b E12 E13 X5b; E13 also serves "
                        "E14)")
    p.add_argument("--cache-dir", type=Path, default=Path("runs"), metavar="DIR",
                   help="the run cache shared with verify (default: ./runs)")
    cli_args.add_threads(p)
    cli_args.add_no_progress(p)
    args = p.parse_args(argv)
    try:
        groups = selected_groups(args.only)
        cli_args.refuse_evidence_outputs(args)
        prepare_output(args.cache_dir, folder=True)  # a read-only cache: one line, before any work
        return _train(args, groups)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


ALIASES = {"E14": "E13"}
"""Claims served by another's runs."""


def selected_groups(only: list[str] | None) -> set[str] | None:
    """``--only``'s claim ids (case-insensitive: ``e11b`` is E11b) as the groups of
    :func:`priority_queue`; InputError naming an id that has no runs here.  None: every group."""
    if not only:
        return None
    known = {group for group, _ in priority_queue((0,))}
    by_upper = {g.upper(): g for g in known} | {a.upper(): g for a, g in ALIASES.items()}
    unknown = [word for word in only if word.upper() not in by_upper]
    if unknown:
        raise InputError(f"--only {' '.join(unknown)}: no runs here for that claim (known: "
                         f"{' '.join(sorted(known | set(ALIASES)))})")
    return {by_upper[word.upper()] for word in only}


def _train(args: argparse.Namespace, groups: set[str] | None) -> int:
    seeds, threads = args.seeds, args.threads
    if threads is not None:
        from spt_theory.core import cpu

        cpu.set_intra_op_threads(threads)
    jobs = [(g, j) for g, j in priority_queue(seeds) if groups is None or g in groups]
    for i, (group, job) in enumerate(jobs, 1):
        if isinstance(job, tuple):  # E13: (phase point, seed)
            point, seed = job
            train(phase_spec("scratch", point, seed), args.cache_dir, not args.no_progress)
            found = solved_budget(point, seed, args.cache_dir, not args.no_progress)
            print(f"[{i}/{len(jobs)}] {group} V={point.vocab} n={point.length} p={point.p} seed {seed}: {found}",
                  flush=True)
        else:
            result = train(job, args.cache_dir, not args.no_progress)
            print(f"[{i}/{len(jobs)}] {group} seed {job.seed}: {result.final.get('test_accuracy', float('nan')):.4f}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
