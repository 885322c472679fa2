"""Figure ``verdicts``: every interval claim (L, P) against its window, as verify judges it, read
from the committed evidence (no training).  A claim's interval is the one its verdict read (the
last look taken, the last budget, the fitted exponent's); its window the boundaries of its rule
(refutation and support boundary of a gain claim; the band of an equivalence or exponent claim).
Colour: the verdict (PASS green, FAIL red, INCONCLUSIVE grey).  Verdicts come through the same
checked path as verify's (:func:`spt_theory.claims.registry.judge`): evidence verify gives ERROR is
drawn as an ERROR mark, never as a verdict, and the figure then fails (exit 1)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from spt_theory.claims.registry import REGISTRY, Context, judge
from spt_theory.evidence import EvidenceError
from spt_theory.figures.context import DrawnWithErrors, FigureContext, FigureSkipped, save
from spt_theory.figures.registry import figure
from spt_theory.figures.style import STYLE, new_figure
from spt_theory.util.files import InputError
from spt_theory.util.plotting import plt

COLOURS = {"PASS": "tab:green", "FAIL": "tab:red", "INCONCLUSIVE": "0.5", "ERROR": "tab:purple"}


SCALES = ("points", "ratio", "exponent")


def _scale(claim_id: str) -> str:
    return "ratio" if claim_id.startswith("L2") else ("exponent" if claim_id.startswith("P") else "points")


def interval_claims(ctx: Context) -> list[dict]:
    """Every L and P claim whose check reads an interval against a window: id, verdict, interval,
    window, unit (log-ratio claims drawn as ratios).  Each is judged as verify judges it
    (:func:`spt_theory.claims.registry.judge`, every integrity check): a claim verify gives ERROR
    is a row of verdict ERROR with its ``error`` (no interval), never a verdict; one read from
    unregistered evidence says so (``unregistered``: its files)."""
    import importlib
    import pkgutil

    from spt_theory import checks

    for module in pkgutil.iter_modules(checks.__path__):  # every check registers its claims on import
        importlib.import_module(f"{checks.__name__}.{module.name}")
    rows: list[dict[str, Any]] = []
    for claim_id, claim in REGISTRY.items():
        if not claim_id.startswith(("L", "P")):
            continue
        try:
            judged = judge(claim, ctx)
        except EvidenceError as error:  # verify's ERROR row: drawn as an error, not a verdict
            rows.append({"id": claim_id, "verdict": "ERROR", "error": str(error), "scale": _scale(claim_id)})
            continue
        except InputError:  # an unwritable cache: the command's one line, as in verify
            raise
        except Exception as error:  # a check that raised: verify's ERROR row too
            rows.append({"id": claim_id, "verdict": "ERROR", "error": f"{type(error).__name__}: {error}",
                         "scale": _scale(claim_id)})
            continue
        m = judged.measurement
        details = m.details
        if "interval" not in details or "window" not in details:
            continue
        lo, hi = details["interval"]
        low, high = details["window"]
        log = claim_id.startswith("L2")
        row: dict[str, Any] = {"id": claim_id, "verdict": m.verdict,
                               "interval": [math.exp(lo), math.exp(hi)] if log else [lo, hi],
                               "window": [math.exp(low), math.exp(high)] if log else [low, high],
                               "scale": _scale(claim_id)}
        if judged.unregistered:
            row["unregistered"] = list(judged.unregistered)
        rows.append(row)
    order = {"L": 0, "P": 1}
    return sorted(rows, key=lambda r: (order[r["id"][0]], r["id"]))


@figure("L, P", "every interval claim against its window, coloured by verdict")
def verdicts(ctx: FigureContext) -> list[Path]:
    """One panel per scale (points, ratio, exponent): each claim's interval as a bar, its window
    shaded (module doc)."""
    rows = interval_claims(Context(evidence_root=ctx.evidence_root, lra_evidence=ctx.evidence_root / "lra",
                                   model_settings=ctx.asked))
    if not rows:
        raise FigureSkipped("no interval claim has evidence")
    scales = [s for s in SCALES if any(r["scale"] == s for r in rows)]
    fig, axes = new_figure(7.0, 0.9 + 0.32 * len(rows), ncols=len(scales))
    axes = axes if hasattr(axes, "__len__") else [axes]
    with plt.rc_context(STYLE):
        for ax, scale in zip(axes, scales):
            mine = [r for r in rows if r["scale"] == scale]
            for y, row in enumerate(mine):
                if row["verdict"] == "ERROR":  # no evidence, no verdict: a mark across the panel, no interval
                    ax.text(0.5, y, "ERROR: evidence not as recorded", transform=ax.get_yaxis_transform(),
                            ha="center", va="center", color=COLOURS["ERROR"], fontsize=7)
                    continue
                low, high = row["window"]
                ax.plot([low, high], [y, y], color="0.85", lw=8, solid_capstyle="butt")
                lo, hi = (max(v, 1e-3) if scale == "ratio" else v for v in row["interval"])
                ax.plot([lo, hi], [y, y], color=COLOURS[row["verdict"]], lw=2)
                centre = math.sqrt(lo * hi) if scale == "ratio" else (lo + hi) / 2
                ax.plot([centre], [y], "|", color=COLOURS[row["verdict"]], ms=8)
            ax.set_yticks(range(len(mine)), [r["id"] + (" (unregistered)" if r.get("unregistered") else "")
                                             for r in mine])
            if scale == "ratio":
                ax.set_xscale("log")
                ax.set_xticks([1, 2, 5, 10, 20], ["1x", "2x", "5x", "10x", "20x"])
                ax.minorticks_off()
            ax.set_xlabel({"points": "difference (points)", "ratio": "SPT / scratch neighbour attention",
                           "exponent": "exponent"}[scale])
            ax.invert_yaxis()
        axes[0].set_title("interval (colour: verdict) against window (grey)", fontsize=8, loc="left")
    paths = save(ctx, "verdicts", fig, {"figure": "verdicts", "seeds": list(ctx.seeds or ()),
                                        "claims": rows})  # seeds: the context's; each claim's are its evidence's
    errors = [r for r in rows if r["verdict"] == "ERROR"]
    if errors:  # drawn, and a failure of the command, as an ERROR row is of verify
        raise DrawnWithErrors(paths, f"{len(errors)} claim(s) drawn as ERROR, not as verdicts: "
                              + "; ".join(f"{r['id']}: {r['error']}" for r in errors))
    return paths
