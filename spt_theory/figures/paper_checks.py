"""Final accuracy: frozen attention (E5, E5b), data and steps (E11, E11b), depth (E12), SPT source (X5b)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from spt_theory.claims import records
from spt_theory.figures.context import FigureContext, save, seeds_label, summary, trained
from spt_theory.figures.registry import figure
from spt_theory.figures.style import COLUMN_WIDTH, FONT_SIZE, RECIPE_COLOUR, STYLE, chance_line, new_figure, seed_dots
from spt_theory.util.plotting import plt
from spt_theory.walk import paper_runs
from spt_theory.walk.experiments import RunSpec

PAPER_CHECK_CLAIMS = (("E5", "E5b"), ("E11", "E11b"), ("E12",), ("X5b",))
"""The claims of each panel of :func:`paper_checks`, in the order of :func:`paper_check_groups`."""


def paper_check_groups(ctx: FigureContext) -> list[tuple[str, list[tuple[str, str, Callable[[int], RunSpec]]]]]:
    """(panel title, [(bar label, colour, spec of a seed)]) of :func:`paper_checks`."""
    d, b, m = ctx.data, ctx.budget, ctx.model
    scratch, spt, frozen = RECIPE_COLOUR["scratch"], RECIPE_COLOUR["spt"], RECIPE_COLOUR["frozen"]

    def scaled(k: int) -> Callable[[int], RunSpec]:
        return lambda s: paper_runs.scaled_scratch_spec(k, s, d, b, **m)

    def deep(name: str, layers: int) -> Callable[[int], RunSpec]:
        return lambda s: paper_runs.depth_spec(name, layers, s, d, b, **m)

    return [
        ("E5 last token | E5b ALiBi", [
            ("last\ntrained", scratch, lambda s: paper_runs.last_token_spec("scratch", s, d, b, **m)),
            ("last\nfrozen", frozen, lambda s: paper_runs.last_token_spec("frozen", s, d, b, **m)),
            ("ALiBi\ntrained", scratch, lambda s: paper_runs.alibi_spec("scratch", s, d, b, **m)),
            ("ALiBi\nfrozen", frozen, lambda s: paper_runs.alibi_spec("frozen", s, d, b, **m))]),
        ("E11 / E11b scratch", [
            (f"1x\n({d.n_train})", scratch, lambda s: ctx.spec("scratch", s)),
            *((f"{k}x", scratch, scaled(k)) for k in ctx.data_scales),
            (f"1x,\n{ctx.data_scales[-1] * b.scratch_epochs} ep", scratch,
             lambda s: paper_runs.step_matched_scratch_spec(s, d, b, ctx.data_scales[-1], **m))]),
        ("E12 layers (L): scratch, SPT", [
            (f"{layers}L\n{'SPT' if name == 'spt' else 'scr.'}", spt if name == "spt" else scratch,
             deep(name, layers))
            for layers in (1, *ctx.depths) for name in ("scratch", "spt")]),
        ("X5b SPT data", [
            ("walk", spt, lambda s: ctx.spec("spt", s)),
            ("i.i.d.\ntokens", frozen, lambda s: paper_runs.negative_spec("uniform", s, d, b, **m)),
            ("shuffled\nwalk", frozen, lambda s: paper_runs.negative_spec("shuffled", s, d, b, **m))]),
    ]


@figure("E5, E5b, E11, E11b, E12, X5b", "final accuracy: frozen attention, data scale, depth, SPT source")
def paper_checks(ctx: FigureContext) -> list[Path]:
    """Final test accuracy (bars: mean ± sd over seeds, dots: seeds) of E5 / E5b (W_Q, W_K trained
    vs frozen at init, with the last-token readout / with ALiBi and the mean-pooled readout), E11
    (scratch with 1x and more labelled sequences, same epochs), E11b (1x data for as many steps as
    the largest of them), E12 (scratch vs SPT + finetune at 1 and more layers) and X5b (SPT on the
    walk, on i.i.d. tokens, on the walk with positions shuffled, each then finetuned)."""
    b = ctx.budget
    groups = paper_check_groups(ctx)
    fig, axes = new_figure(COLUMN_WIDTH, 4.2, 2, 2, sharey=True, squeeze=False)
    panels, sources = [], []
    with plt.rc_context(STYLE):
        for ax, (title, bars), claim_ids in zip(axes.flat, groups, PAPER_CHECK_CLAIMS):
            rows = []
            for i, (label, colour, build) in enumerate(bars):
                results, runs = trained(ctx, f"{title}: {label}".replace("\n", " "), build)
                sources += runs
                stats = summary([100 * r.final["test_accuracy"] for r in results])
                ax.bar(i, stats["mean"], 0.65, yerr=stats["std"] if len(ctx.seeds) > 1 else None, color=colour,
                       capsize=2, error_kw={"lw": 0.8})
                seed_dots(ax, i, stats["per_seed"])
                rows.append({"label": label.replace("\n", " "), "test_accuracy_percent": stats,
                             "supervised_epochs": results[0].spec.stages[-1].epochs,
                             "config_hashes": [r["config_hash"] for r in runs]})
            chance_line(ax)
            ax.set_xticks(range(len(bars)), [label for label, _, _ in bars], fontsize=FONT_SIZE - 1)
            verdicts = records.on_record(claim_ids)
            ax.set_title(f"{title}\n{verdicts}", pad=3, fontsize=FONT_SIZE - 1)
            panels.append({"panel": title, "claims": list(claim_ids), "verdicts_on_record": verdicts, "bars": rows})
        axes[0, 0].set_ylim(0, 105)
        for ax in axes[:, 0]:
            ax.set_ylabel("final test accuracy (%)")
        fig.suptitle(f"mean ± sd over seeds {seeds_label(ctx)} (dots: seeds);\nscratch {b.scratch_epochs} ep, "
                     f"SPT {b.pretrain_epochs} + finetune {b.finetune_epochs} ep")
    record = {**ctx.header("paper_checks", ["E5", "E5b", "E11", "E11b", "E12", "X5b"]), "panels": panels,
              "runs": sources}
    return save(ctx, "paper_checks", fig, record)
