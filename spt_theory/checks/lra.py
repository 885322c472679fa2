"""Claims L1-L4: the paper's predictions on LRA-family data, read from committed sweep results.

verify does not train these: it reads the sweep summaries that ``python -m spt_theory.lra sweep
... --name evidence`` wrote and that are committed as ``figures/lra/<task>.json`` (the command,
data, config, seeds and versions are inside each file; ``figures/README.md`` gives the commands).
A task whose file is missing is reported, and the claim fails: no evidence is no pass.  A file that
is not a sweep summary holding what the claims read (:func:`read_evidence`) is bad input: an
``InputError`` naming the file (and line, or field).

The cells each claim reads: ``scratch`` (supervised from init), ``spt`` (SPT on the task's own
data, then finetuning of the whole encoder), ``scratch freeze=qk`` (W_Q, W_K frozen at their
random init) and ``spt keep=qk`` (only W_Q, W_K from the SPT checkpoint, the rest fresh).
Accuracies are test accuracies at the best validation epoch, in points (%), mean over seeds.

Thresholds, written before the runs they judge (2026-12-01, before any finetuned accuracy was
seen), and held on every task with evidence:

- L1  SPT beats scratch: mean gain >= ``GAIN`` points, and SPT ahead on every seed.
- L2  SPT makes attention proximity-biased: at the SPT checkpoint the proximity ratio (band mass
      |i-j| <= 2 over its uniform value; for images the 2-D neighbour share over uniform) is
      >= ``PROXIMITY`` and >= ``PROXIMITY`` x the ratio after supervised training from scratch.
- L3  frozen random attention is about as good as trained attention: |frozen - scratch| <=
      ``FROZEN`` points.
- L4  W_Q, W_K alone carry the gain: SPT gains >= ``GAIN`` points and the ``qk`` hybrid recovers
      >= ``RECOVERED`` of it, (hybrid - scratch) >= RECOVERED (SPT - scratch).
"""

from __future__ import annotations

from pathlib import Path

from spt_theory.claims import Context, Measurement, claim
from spt_theory.io import InputError, read_json

TASKS = ("listops", "pathfinder")
GAIN = 2.0
PROXIMITY = 1.5
FROZEN = 3.0
RECOVERED = 0.5
SCRATCH = {"recipe": "scratch", "freeze": "none"}
SPT = {"recipe": "spt", "freeze": "none", "keep": "all", "pretrain_task": "self"}
FROZEN_CELL = {"recipe": "scratch", "freeze": "qk"}
HYBRID = {"recipe": "spt", "freeze": "none", "keep": "qk", "pretrain_task": "self"}


def evidence(ctx: Context) -> dict[str, dict]:
    """The committed sweep summary of every task that has one (:func:`read_evidence`)."""
    paths = {task: ctx.lra_evidence / f"{task}.json" for task in TASKS}
    return {task: read_evidence(path) for task, path in paths.items() if path.exists()}


def _numbers(value) -> bool:
    return isinstance(value, list) and bool(value) and all(type(v) in (int, float) for v in value)


def read_evidence(path: Path) -> dict:
    """The sweep summary in ``path``, checked to hold every field the L claims read: ``seeds``,
    ``cells`` with exactly one row per cell the claims compare, each row's per-seed test accuracies
    (a non-empty list of numbers) and the mean proximity ratios they judge.  InputError naming the
    file and the field otherwise (a malformed JSON: the file, line and column)."""
    summary = read_json(path)
    if not isinstance(summary, dict):
        raise InputError(f"{path}: not a sweep summary (a JSON {type(summary).__name__}, not an object)")
    for field, kind in (("task", str), ("seeds", list), ("cells", list)):
        if not isinstance(summary.get(field), kind):
            raise InputError(f"{path}: field {field!r} must be a JSON {'string' if kind is str else 'array'}")
    for index, row in enumerate(summary["cells"]):
        if not (isinstance(row, dict) and isinstance(row.get("cell"), dict)):
            raise InputError(f"{path}: field cells[{index}] must be an object with an object 'cell'")
    try:
        rows = {name: cell(summary, match) for name, match in
                (("scratch", SCRATCH), ("spt", SPT), ("frozen", FROZEN_CELL), ("hybrid", HYBRID))}
    except KeyError as error:
        raise InputError(f"{path}: field cells: {error.args[0]}") from None
    metric = "grid_ratio" if "grid_ratio" in rows["scratch"] else "band_ratio"
    for name, row in rows.items():
        where = f"cells[{summary['cells'].index(row)}]"
        accuracy = row.get("test_accuracy")
        if not (isinstance(accuracy, dict) and _numbers(accuracy.get("per_seed"))):
            raise InputError(f"{path}: field {where}.test_accuracy.per_seed ({name}) must be a non-empty list of numbers")
        ratio = metric if name == "scratch" else f"spt_{metric}" if name == "spt" else None
        if ratio and not (isinstance(row.get(ratio), dict) and type(row[ratio].get("mean")) in (int, float)):
            raise InputError(f"{path}: field {where}.{ratio}.mean ({name}) must be a number")
    return summary


def cell(summary: dict, match: dict) -> dict:
    """The one cell of ``summary`` whose axes include ``match`` (default layers and epochs)."""
    rows = [row for row in summary["cells"]
            if all(row["cell"].get(k) == v for k, v in match.items())
            and row["cell"].get("layers") is None and row["cell"].get("pretrain_epochs") is None]
    if len(rows) != 1:
        raise KeyError(f"{summary['task']}: {len(rows)} cells match {match}")
    return rows[0]


def accuracy(summary: dict, match: dict) -> list[float]:
    """Per-seed test accuracy (%) of the cell."""
    return [100 * v for v in cell(summary, match)["test_accuracy"]["per_seed"]]


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def versus(summary: dict, base: dict, other: dict) -> tuple[list[float], list[float], float]:
    """Per-seed accuracies (%) of two cells and the difference of their means, other - base."""
    a, b = accuracy(summary, base), accuracy(summary, other)
    return a, b, mean(b) - mean(a)


def proximity_metric(summary: dict) -> str:
    """``grid_ratio`` (2-D neighbours) for pixel tasks, else ``band_ratio``."""
    return "grid_ratio" if "grid_ratio" in cell(summary, SCRATCH) else "band_ratio"


def _judge(ctx: Context, per_task, threshold: str) -> Measurement:
    """Run ``per_task(summary) -> (passed, figure text, details)`` on every task with evidence."""
    found = evidence(ctx)
    missing = [task for task in TASKS if task not in found]
    texts, details, passed = [], {"evidence": str(ctx.lra_evidence)}, not missing
    for task, summary in found.items():
        ok, text, info = per_task(summary)
        passed &= ok
        texts.append(f"{task} {text}")
        details[task] = {**info, "seeds": summary["seeds"], "passed": ok}
    if missing:
        texts.append("no evidence: " + ", ".join(missing))
        details["missing"] = missing
    return Measurement("; ".join(texts), threshold, passed, details)


@claim("L1", "LRA: SPT then finetune beats supervised training from scratch",
       section="LRA (Amos et al.; paper)", method="committed sweep, seeds")
def check_l1(ctx: Context) -> Measurement:
    def per_task(summary):
        scratch, spt, gain = versus(summary, SCRATCH, SPT)
        ok = gain >= GAIN and all(b > a for a, b in zip(scratch, spt))
        return ok, f"{gain:+.1f} pts", {"scratch": scratch, "spt": spt, "gain": gain}
    return _judge(ctx, per_task, f"gain >= {GAIN:g} pts, every seed")


@claim("L2", "LRA: after SPT attention is proximity-biased, after scratch it is not",
       section="LRA mechanism", method="committed sweep, probes")
def check_l2(ctx: Context) -> Measurement:
    def per_task(summary):
        metric = proximity_metric(summary)
        spt = cell(summary, SPT)[f"spt_{metric}"]["mean"]
        scratch = cell(summary, SCRATCH)[metric]["mean"]
        ok = spt >= PROXIMITY and spt >= PROXIMITY * scratch
        return ok, f"{spt:.2f}x vs {scratch:.2f}x", {"metric": metric, "spt_checkpoint": spt,
                                                    "scratch": scratch}
    return _judge(ctx, per_task, f">= {PROXIMITY:g}x uniform and scratch")


@claim("L3", "LRA: attention frozen at random init is about as good as trained",
       section="LRA ablation (paper)", method="committed sweep, seeds")
def check_l3(ctx: Context) -> Measurement:
    def per_task(summary):
        scratch, frozen, difference = versus(summary, SCRATCH, FROZEN_CELL)
        return abs(difference) <= FROZEN, f"{difference:+.1f} pts", {
            "scratch": scratch, "frozen": frozen, "difference": difference}
    return _judge(ctx, per_task, f"|frozen - scratch| <= {FROZEN:g}")


@claim("L4", "LRA: W_Q, W_K alone from the SPT checkpoint recover the gain",
       section="LRA ablation (paper)", method="committed sweep, seeds")
def check_l4(ctx: Context) -> Measurement:
    def per_task(summary):
        scratch, spt, hybrid = (mean(accuracy(summary, m)) for m in (SCRATCH, SPT, HYBRID))
        gain = spt - scratch
        recovered = (hybrid - scratch) / gain if gain >= GAIN else float("nan")
        ok = gain >= GAIN and recovered >= RECOVERED
        text = f"{recovered:.0%} of gain" if gain >= GAIN else f"no gain to recover ({gain:+.1f} pts)"
        return ok, text, {"scratch": scratch, "spt": spt, "hybrid": hybrid, "recovered": recovered}
    return _judge(ctx, per_task, f">= {RECOVERED:.0%} of a >= {GAIN:g} pt gain")
