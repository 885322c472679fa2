"""Figure ``pooling_factorial`` (L1f, L9f, L4f, L3f, L8f; L7f in its table): test accuracy against optimiser steps in
the pooling factorial, redrawn from the committed decide evidence (``evidence/lra/decide/fmean.json``
and ``fmax.json``), no training.  One panel per pooling; per arm the median of its seeds (line) and
their range (band) at each evaluation, SPT's 3,000 pretraining steps counted (its curve starts
after them); the dotted line is L1fr's reach bar, the grey one chance.  A pooling whose evidence
is not committed yet is drawn empty with "not run yet"; the figure is skipped while neither is.

Beside the figure, ``pooling_factorial.md``: the table of docs/results-lra.md (per pooling and arm,
the median [range] over the seeds of the test accuracy at the best validation evaluation within
the pooling's budget and within the common 8,000 steps, as the claims read it; L7f's 2-layer arms
under mean pooling below them), so the document's
numbers are regenerated, never typed; a test holds the document to it.

Every file drawn is held to its recorded content first (``records.EVIDENCE_HASHES``), as verify
holds it: an edited or unrecorded file is an error, never a figure.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from spt_theory import stats
from spt_theory.checks import lra_pooling as rules
from spt_theory.checks import lra_sequential as base
from spt_theory.evidence import schema, sweep_schema
from spt_theory.figures.context import FigureContext, FigureSkipped, held_to_record, save
from spt_theory.figures.registry import figure
from spt_theory.figures.style import COLUMN_WIDTH, STYLE, new_figure
from spt_theory.lra.sweep_cells import cells as parse_cells
from spt_theory.util.files import atomic_write
from spt_theory.util.plotting import plt

POOLINGS = (("mean", "fmean", rules.MEAN, rules.MEAN_T), ("max", "fmax", rules.MAX, rules.MAX_T))
"""(pooling, experiment, its arms' ``--cell`` specs by arm, its budget in steps)."""
DEPTH = (f"mean, {rules.DEPTH} layers", "fdepth", rules.DEEP, rules.MEAN_T)
"""L7f's experiment, as :data:`POOLINGS` names one: a row of the table, not a panel."""
ARMS = {"scratch": ("scratch", "#555555"), "spt": ("SPT then finetune", "#c0392b"),
        "hybrid": ("hybrid (SPT W_Q, W_K)", "#e67e22"), "frozen": ("W_Q, W_K frozen", "#2980b9"),
        "proximity": ("proximity2d init", "#27ae60")}
"""Each arm's legend label and colour, in drawing order."""


def load(ctx: FigureContext, experiment: str) -> tuple[dict | None, Path]:
    """(the committed evidence of ``experiment``, its path), None where nothing is there; the file
    is held to its recorded hash (EvidenceError otherwise)."""
    path = Path(ctx.evidence_root) / "lra" / "decide" / f"{experiment}.json"
    if not path.exists() and not path.is_symlink():
        return None, path
    found = schema.load(path, sweep_schema.DecideEvidence)
    held_to_record(ctx, path)
    return found, path


def arm_curves(found: dict, spec: str) -> dict[int, list[tuple[int, float]]]:
    """Per seed, the (step, test accuracy %) points of the arm ``spec`` (empty if the arm is absent)."""
    wanted = parse_cells([], [spec])[0]
    row = next((row for row in found["cells"] if row["cell"] == wanted), None)
    if row is None:
        return {}
    return {run["seed"]: [(p["step"], 100 * p["test_accuracy"]) for p in run["curve"]] for run in row["runs"]}


def summary(curves: dict[int, list[tuple[int, float]]]) -> list[dict]:
    """At each step every seed evaluated: the median, the lowest and the highest accuracy, and how
    many seeds are in (a step some seed lacks is drawn from the seeds that have it)."""
    by_step: dict[int, list[float]] = {}
    for points in curves.values():
        for step, value in points:
            by_step.setdefault(step, []).append(value)
    return [{"step": step, "median": statistics.median(values), "low": min(values), "high": max(values),
             "seeds": len(values)} for step, values in sorted(by_step.items())]


def seed_text(seeds: list[int]) -> str:
    """Seeds as runs of consecutive numbers and their count.

    >>> seed_text([600, 601, 602, 603, 605])
    '600-603, 605 (5)'
    """
    runs: list[list[int]] = []
    for seed in sorted(seeds):
        if runs and seed == runs[-1][-1] + 1:
            runs[-1].append(seed)
        else:
            runs.append([seed])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else f"{r[0]}" for r in runs) + f" ({len(seeds)})"


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} [{min(values):.1f}, {max(values):.1f}]"


def table_rows(loaded: dict[str, tuple[dict | None, Path]]) -> list[dict]:
    """Per pooling and arm with runs: its seeds and, over them, the test accuracy (%) at the best
    validation evaluation within the pooling's budget and within :data:`rules.COMMON` steps; then
    the 2-layer arms (:data:`DEPTH`) where their evidence is committed."""
    rows = []
    for pooling, _, specs, budget in (*POOLINGS, DEPTH):
        found = loaded[pooling][0]
        if found is None:
            continue
        for arm, (label, _) in ARMS.items():
            row = base.cell(found, specs[arm]) if arm in specs else None
            seeds = [] if row is None else sorted(base.seeds_in(row))
            if row is None or not seeds:
                continue
            rows.append({"pooling": pooling, "arm": arm, "label": label, "seeds": seeds, "budget": budget,
                         "at_budget": [base.accuracy(row, s, budget) for s in seeds],
                         "at_common": [base.accuracy(row, s, rules.COMMON) for s in seeds]})
    return rows


def markdown_table(rows: list[dict]) -> str:
    """The table of docs/results-lra.md: median [range] of each arm's seeds."""
    budgets = ", ".join(f"{b:,} {p}" for p, _, _, b in POOLINGS)
    lines = [f"| pooling | arm | seeds | at its budget ({budgets}) | at {rules.COMMON:,} (the common step) |",
             "|---|---|---|---|---|"]
    lines += [f"| {r['pooling']} | {r['label']} | {seed_text(r['seeds'])} | {_spread(r['at_budget'])} | "
              f"{_spread(r['at_common'])} |" for r in rows]
    return "\n".join(lines) + "\n"


def interaction(loaded: dict[str, tuple[dict | None, Path]]) -> dict | None:
    """SPT's gain over scratch under each pooling and their difference I (L9f's contrast) at
    :data:`rules.COMMON` steps, on the seeds all four arms have so far: **descriptive** until they are
    L9f's registered seeds, then its look (the verdict is verify's).  None while fewer than 2 seeds are common."""
    rows = {}
    for pooling, _, specs, _ in POOLINGS:
        found = loaded[pooling][0]
        for arm in ("spt", "scratch"):
            row = None if found is None else base.cell(found, specs[arm])
            if row is None:
                return None
            rows[pooling, arm] = row
    seeds = sorted(base.seeds_in(*rows.values()))
    if len(seeds) < 2:
        return None
    arms = {key: base.correct(row, loaded[key[0]][1], seeds, rules.COMMON) for key, row in rows.items()}
    gain = {pooling: stats.paired_difference([(1, arms[pooling, "spt"]), (-1, arms[pooling, "scratch"])], rules.LEVEL)
            for pooling, _, _, _ in POOLINGS}
    window = rules.WINDOWS["L9f"]  # the interaction's ends print on their side of its bounds, as verify's
    contrast = stats.paired_difference([(1, arms["mean", "spt"]), (-1, arms["mean", "scratch"]),
                                        (-1, arms["max", "spt"]), (1, arms["max", "scratch"])], rules.LEVEL)
    return {"seeds": seeds, "step": rules.COMMON, "gain": {k: v.as_dict() for k, v in gain.items()},
            "interaction": contrast.as_dict(),
            "text": (f"L9f's registered look (its verdict is verify's, against lo > 0 and hi < "
                     f"{rules.INTERACTION_SUPPORT:g}): on seeds " if tuple(seeds) == rules.EIGHT else
                     "Descriptive, not L9f's registered look (8 seeds of each pooling): on seeds ")
                    + f"{seed_text(seeds)} at {rules.COMMON:,} steps, SPT - scratch {gain['mean'].text()} under mean "
                    f"pooling and {gain['max'].text()} under max; I = {contrast.text(against=window)}, per seed "
                    + ", ".join(f"{v:+.1f}" for v in contrast.per_seed.values())}


def page_text(rows: list[dict], contrast: dict | None) -> str:
    """``pooling_factorial.md``: the table, then the descriptive interaction where there is one."""
    return markdown_table(rows) + ("" if contrast is None else f"\n{contrast['text']}.\n")


def load_all(ctx: FigureContext) -> dict[str, tuple[dict | None, Path]]:
    """Each pooling's committed evidence, and the 2-layer one's (:func:`load`)."""
    return {pooling: load(ctx, experiment) for pooling, experiment, _, _ in (*POOLINGS, DEPTH)}


@figure("L1f, L9f, L4f, L3f, L8f, L7f", "pooling factorial: accuracy against steps, median and range of seeds per arm")
def pooling_factorial(ctx: FigureContext) -> list[Path]:
    """Two panels, mean and max pooling (module doc)."""
    loaded = load_all(ctx)
    if all(loaded[pooling][0] is None for pooling, _, _, _ in POOLINGS):
        raise FigureSkipped("the pooling factorial has no committed evidence yet (evidence/lra/decide/fmean.json, "
                            "fmax.json)")
    fig, axes = new_figure(2 * COLUMN_WIDTH, 2.6, ncols=2, sharey=True)
    record: dict = {"figure": "pooling_factorial", "claims": ["L1f", "L9f", "L4f", "L3f", "L8f", "L7f"],
                    "reach_bar": rules.REACH_BAR, "sources": {}, "poolings": {}}
    with plt.rc_context(STYLE):
        for ax, (pooling, experiment, specs, budget) in zip(axes, POOLINGS):
            found, path = loaded[pooling]
            drawn: dict = {}
            if found is None:
                ax.text(0.5, 0.5, "not run yet", transform=ax.transAxes, ha="center", va="center", fontsize=7)
            else:
                record["sources"][pooling] = f"evidence/lra/decide/{path.name}"
                for arm, (label, colour) in ARMS.items():
                    curves = arm_curves(found, specs[arm])
                    if not curves:
                        continue
                    points = summary(curves)
                    steps = [p["step"] for p in points]
                    ax.plot(steps, [p["median"] for p in points], color=colour, lw=1.0, label=label)
                    ax.fill_between(steps, [p["low"] for p in points], [p["high"] for p in points], color=colour,
                                    alpha=0.15, lw=0)
                    drawn[arm] = {"seeds": sorted(curves), "points": points}
            ax.axhline(rules.REACH_BAR, color="k", lw=0.6, ls=":")
            ax.axhline(50, color="0.6", lw=0.6)
            ax.set_xlim(0, budget)
            ax.set_ylim(45, 100)
            counts = sorted({len(arm["seeds"]) for arm in drawn.values()})
            seeds = "" if not counts else f"; {counts[0]}" + (f"-{counts[-1]}" if len(counts) > 1 else "") + \
                f" seed{'s' if counts[-1] > 1 else ''} an arm"
            ax.set_title(f"{pooling} pooling ({budget:,} steps{seeds})", fontsize=7)
            ax.set_xlabel("optimiser steps (SPT's counted)")
            record["poolings"][pooling] = {"experiment": experiment, "budget": budget, "arms": drawn}
        axes[0].set_ylabel("test accuracy (%)")
        handles = {text: line for ax in axes for line, text in zip(*ax.get_legend_handles_labels())}
        fig.legend(handles.values(), handles.keys(), fontsize=6, loc="outside lower center", ncol=len(handles),
                   frameon=False)
    record["table"], record["interaction"] = table_rows(loaded), interaction(loaded)
    text = page_text(record["table"], record["interaction"])
    paths = save(ctx, "pooling_factorial", fig, record)
    return [*paths, atomic_write(ctx.out / "pooling_factorial.md", lambda tmp: tmp.write_text(text))]
