"""Figure ``lra_table``: LRA results table from the runner's result JSONs (skipped when there are none)."""

from __future__ import annotations

from pathlib import Path

from spt_theory.figures.context import FigureContext, FigureSkipped, save, summary
from spt_theory.figures.registry import figure
from spt_theory.figures.style import FONT_SIZE, PAGE_WIDTH, STYLE, new_figure
from spt_theory.util.files import InputError
from spt_theory.util.plotting import plt


def lra_rows(results: list[dict]) -> list[dict]:
    """One row per (task, recipe, setting): seeds, mean and sd of the test accuracy, LRA reference."""
    from spt_theory.lra import report, tasks
    groups: dict[tuple, list[dict]] = {}
    for r in results:
        groups.setdefault((r["task"], r["kind"], report.setting(r)), []).append(r)
    order = tasks.task_names()
    rows = []
    for (task, kind, setting), rs in sorted(groups.items(), key=lambda kv: (
            order.index(kv[0][0]) if kv[0][0] in order else 99, kv[0][2], kv[0][1])):
        accs = [100 * float(r["metrics"]["test_accuracy"]) for r in rs]
        stats = summary(accs)
        rows.append({"task": task, "recipe": kind, "setting": setting, "seeds": sorted(r["seed"] for r in rs),
                     "test_accuracy_percent": stats, "reference_percent": tasks.reference(task),
                     "at_reference_setting": all(report.at_reference_setting(r) for r in rs),
                     "files": sorted(r.get("cache", "") for r in rs)})
    return rows


@figure("LRA", "LRA result table (skipped when no result JSON exists)")
def lra_table(ctx: FigureContext) -> list[Path]:
    from spt_theory.lra import report
    try:
        results = report.load_results(ctx.lra_results)
    except InputError as err:
        raise FigureSkipped(f"no LRA results: {err}") from None
    rows = lra_rows(results)
    header = ["task", "recipe", "setting", "seeds", "test acc %", "LRA ref %", "Δ ref"]
    cells = []
    for r in rows:
        s = r["test_accuracy_percent"]
        acc = f"{s['mean']:.2f}" + (f" ± {s['std']:.2f}" if len(r["seeds"]) > 1 else "")
        cells.append([r["task"], r["recipe"], r["setting"], ",".join(map(str, r["seeds"])), acc,
                      "-" if r["reference_percent"] is None else f"{r['reference_percent']:.2f}",
                      f"{s['mean'] - r['reference_percent']:+.2f}"
                      if r["at_reference_setting"] and r["reference_percent"] is not None else "-"])
    gains = report.gains(results)
    height = 0.55 + 0.2 * (len(cells) + 1) + 0.16 * min(len(gains), 12)
    fig, ax = new_figure(PAGE_WIDTH, height)
    with plt.rc_context(STYLE):
        ax.axis("off")
        table = ax.table(cellText=cells, colLabels=header, loc="upper center", cellLoc="left",
                         colLoc="left", edges="horizontal")
        table.auto_set_font_size(False)
        table.set_fontsize(FONT_SIZE)
        table.auto_set_column_width(list(range(len(header))))
        for (row, _), cell in table.get_celld().items():
            cell.set_height(0.2 / height)
            if row == 0:
                cell.set_text_props(weight="bold")
        note = ("LRA ref: Transformer from scratch (Tay et al.); test acc at the best validation epoch; "
                "± sd over seeds; Δ ref only at the reference's setting (release data, paper config).")
        if gains:
            shown = gains[:12] + ([f"... {len(gains) - 12} more in lra_table.json"] if len(gains) > 12 else [])
            note = "SPT vs scratch (same data, model, seed, supervised stage):\n" + "\n".join(shown) + "\n" + note
        fig.text(0.01, 0.01, note, ha="left", va="bottom", fontsize=FONT_SIZE)
    record = {**ctx.header("lra_table", ["LRA confirmation"]), "results_dir": str(ctx.lra_results),
              "rows": rows, "gains": gains}
    return save(ctx, "lra_table", fig, record)
