"""Attention share by offset i - j per head: scratch, SPT, finetuned, uniform (E4)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

from spt_theory.analysis.probes import (
    attention_patterns,
    offset_mass,
    uniform_band_mass,
    uniform_pattern,
)
from spt_theory.figures.context import FigureContext, rounded, save, seeds_label
from spt_theory.figures.registry import figure
from spt_theory.figures.style import COLUMN_WIDTH, FONT_SIZE, GREY, OKABE_ITO, RECIPE_COLOUR, STYLE, log_y, new_figure
from spt_theory.util.plotting import plt

OFFSET_RANGE = 20
"""offset_profile draws offsets i - j in [-20, 20] (or the whole sequence when shorter)."""


def offset_shares(model, x: torch.Tensor) -> torch.Tensor:
    """Attention share at offset i - j = -(n-1)..(n-1) per head, (heads, 2n - 1), mean over the
    queries of ``x`` (:func:`spt_theory.analysis.probes.offset_mass` is indexed by j - i, hence the flip)."""
    sums, queries = offset_mass(attention_patterns(model, x)[0])
    return (sums / queries).flip(-1).double()


@figure("E4", "attention share by offset per head: scratch, SPT, finetuned, uniform")
def offset_profile(ctx: FigureContext) -> list[Path]:
    """Attention share by offset i - j (|i - j| <= 20), per head, averaged over the first
    ``ctx.probe_size`` test sequences; lines: mean over seeds of scratch, after SPT (``pretrain``)
    and SPT + finetune (``spt``), shaded min to max over seeds; dotted: uniform attention."""
    data = ctx.dataset()
    k = min(ctx.probe_size, len(data.x_test))
    x = data.x_test[:k]
    n = x.shape[1]
    reach = min(OFFSET_RANGE, n - 1)
    window = slice(n - 1 - reach, n + reach)
    offsets = np.arange(-reach, reach + 1)
    b = ctx.budget
    lines = (("scratch", f"scratch ({b.scratch_epochs} ep)"), ("pretrain", f"after SPT ({b.pretrain_epochs} ep)"),
             ("spt", f"SPT + finetune ({b.finetune_epochs} ep)"))
    colours = {"scratch": RECIPE_COLOUR["scratch"], "pretrain": OKABE_ITO["green"], "spt": RECIPE_COLOUR["spt"]}
    shares = {name: torch.stack([offset_shares(r.model, x)[:, window] for r in ctx.runs(name)])
              for name, _ in lines}  # (seeds, heads, offsets)
    uniform_sums, queries = offset_mass(uniform_pattern(torch.ones(1, n, dtype=torch.bool)))
    uniform = (uniform_sums[0] / queries)[window].double()
    heads = shares["scratch"].shape[1]
    cols = min(heads, 2)
    rows = math.ceil(heads / cols)
    fig, axes = new_figure(COLUMN_WIDTH, 1.35 * rows + 0.9, rows, cols, sharex=True, sharey=True, squeeze=False)
    with plt.rc_context(STYLE):
        for h, ax in enumerate(axes.flat):
            if h >= heads:
                ax.remove()
                continue
            for name, label in lines:
                values = shares[name][:, h].numpy()
                ax.plot(offsets, values.mean(0), color=colours[name], lw=1, label=label)
                ax.fill_between(offsets, values.min(0), values.max(0), color=colours[name], alpha=0.25, lw=0)
            ax.plot(offsets, uniform.numpy(), color=GREY, ls=":", lw=1, label="uniform")
            log_y(ax)
            ax.set_title(f"head {h + 1}", pad=2)
        for ax in axes[-1]:
            ax.set_xlabel("offset i - j")
        for ax in axes[:, 0]:
            ax.set_ylabel("attention share")
        fig.legend(*axes.flat[0].get_legend_handles_labels(), loc="outside lower center", ncols=2,
                   fontsize=FONT_SIZE - 1)
        fig.suptitle(f"layer 0, mean over {k} test sequences and seeds {seeds_label(ctx)};\n"
                     "shaded: min to max over seeds")
    record = {**ctx.header("offset_profile", ["E4"]), "probe": f"x_test[:{k}]",
              "what": "share of each query's attention on the key at offset i - j, mean over queries "
                      "(probes.offset_mass), layer 0, per head",
              "offsets_i_minus_j": offsets.tolist(), "uniform": rounded(uniform, 6),
              "uniform_band_mass": uniform_band_mass(n),
              "shares": {name: {"mean": rounded(v.mean(0), 6), "min": rounded(v.min(0).values, 6),
                                "max": rounded(v.max(0).values, 6), "per_seed": rounded(v, 6)}
                         for name, v in shares.items()},
              "runs": ctx.sources("scratch", "pretrain", "spt")}
    return save(ctx, "offset_profile", fig, record)
