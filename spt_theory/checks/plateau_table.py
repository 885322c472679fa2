"""The plateau grid against the law's predictions, for the docs and the figure: the predicted curves
per grid row (:func:`predicted_curves`, drawn by the figure ``plateau_law``) and the
measured-against-predicted table (``python -m spt_theory.checks.plateau_table``).  The law and the
claims P1-P5 are :mod:`spt_theory.checks.plateau`."""

from __future__ import annotations

from spt_theory import evidence
from spt_theory.checks.plateau import (
    SIGMA,
    adamw_escape,
    adamw_rate,
    noise_scale,
    predicted_adamw_exponent,
    scale_free_escape,
    sgd_ratio_bound,
)
from spt_theory.checks.plateau_grid import cells, geometric_mean, load
from spt_theory.plateau import design
from spt_theory.util.tables import table


def predicted_curves(summary: dict, rms: dict) -> dict[str, dict[int, float]]:
    """The law's predictions per grid row at every measured n, for the figure: the exponent laws
    (P1, P5) anchored at the geometric mean at the smallest n (T8 predicts exponents, not
    constants), init / 10 from each n's default (P3, P3b), and SGD's lower bound rho(n) T_A(n) (P4)."""
    s, s_rec = noise_scale(rms, "supervised"), noise_scale(rms, "spt")
    adam, spt = cells(summary, "scratch"), cells(summary, "spt")
    out: dict[str, dict[int, float]] = {}
    means = {n: geometric_mean(c["values"]) for n, c in adam.items()}
    if means:
        n0 = min(means)
        out["adamw"] = {n: means[n0] * (n / n0) ** predicted_adamw_exponent(rms) for n in means}
        out["adamw_small_p3"] = {n: adamw_escape(adamw_rate(t), SIGMA / 10) for n, t in means.items()}
        out["adamw_small_p3b"] = {n: scale_free_escape(t, SIGMA / 10) for n, t in means.items()}
        out["sgd_at_least"] = {n: sgd_ratio_bound(s[n]) * t for n, t in means.items()}
    if spt:
        m0 = min(spt)
        t0 = geometric_mean(spt[m0]["values"])
        out["spt"] = {n: t0 * (n / m0) * s_rec[n] / s_rec[m0] for n in spt}
    return out


def markdown_table(summary: dict, rms: dict) -> str:
    """The README's measured-against-predicted table: per n, each grid row's per-seed steps (">= cap"
    for a capped run) and geometric mean, with the predictions of :func:`predicted_curves`."""
    predicted = predicted_curves(summary, rms)
    rows = {"AdamW": cells(summary, "scratch"), "AdamW, init / 10": cells(summary, "scratch", scale=0.1),
            "SGD": cells(summary, "scratch", "sgd"), "SPT to 95%": cells(summary, "spt")}
    table_rows = []

    def entry(cell: dict | None, notes: list[str]) -> str:
        if cell is None:
            return "not run"
        seeds = " / ".join((">= " if cell["capped"] else "") + f"{v:g}" for v in cell["values"])
        return f"{seeds} (mean {geometric_mean(cell['values']):.0f}" + "".join(f"; {x}" for x in notes) + ")"

    for n in sorted({n for r in rows.values() for n in r}):
        def pred(key: str, label: str, n: int = n) -> list[str]:
            return [f"{label} {predicted[key][n]:.0f}"] if n in predicted.get(key, {}) else []

        out = [entry(rows["AdamW"].get(n), pred("adamw", "law")),
               entry(rows["AdamW, init / 10"].get(n), pred("adamw_small_p3", "P3") + pred("adamw_small_p3b", "P3b")),
               entry(rows["SGD"].get(n), [f"P4: >= {predicted['sgd_at_least'][n]:.0f}"]
                     if n in predicted.get("sgd_at_least", {}) else []),
               entry(rows["SPT to 95%"].get(n), pred("spt", "law"))]
        a, t = rows["AdamW"].get(n), rows["SPT to 95%"].get(n)
        ratio = f"{geometric_mean(t['values']) / geometric_mean(a['values']):.2f}" if a and t else "-"
        table_rows.append([n, *out, ratio])
    return table(table_rows, ["n", *rows, "SPT / AdamW"], markdown=True)


if __name__ == "__main__":  # python -m spt_theory.checks.plateau_table: the docs' table from the committed grid
    from spt_theory.evidence import root

    print(markdown_table(load(root() / evidence.PLATEAU / design.SUMMARY.name),
                         load(root() / evidence.PLATEAU / design.GRADIENT_RMS.name)))
