"""``python -m spt_theory.lra decide``: run, collect and promote the pre-registered experiments of
the registry :mod:`spt_theory.lra.designs` (each one's setting, arms, steps, seeds, registration
document and claims are there; the judges in :mod:`spt_theory.checks.lra_sequential` and the modules
that add to its registry).

``decide run --experiment X --seeds S ... --data-dir D --out OUT`` runs exactly the registered arms
of ``X`` through the sweep machinery (:mod:`spt_theory.lra.sweep`), one sweep per seed named
``decide-<X>-s<seed>`` (``OUT/sweeps/<task>-decide-<X>-s<seed>.json``): two lanes may run different
seeds at once on one OUT, and a killed run resumes from the stage cache.  Before any training it
checks that the data are the registered sizes and that every cell takes its registered optimiser
steps (Pathfinder-16: 500 steps an epoch at batch 32; ListOps: 157).

``decide collect --experiment X --out OUT`` merges the finished per-seed summaries into one
evidence file ``OUT/decide/<X>.json`` (:class:`~spt_theory.evidence.sweep_schema.DecideEvidence`:
options, config, data fingerprint, every run's curve with per-example test correctness, each
seed's versions); ``--promote`` also writes it into the package's evidence
(``evidence/lra/decide/<X>.json``), keeping the seeds committed there from other sessions and
refusing, naming the field, evidence of another config or data.  ``--tiny`` runs the same arms at
the test sizes (no registration check; never promoted).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from spt_theory import evidence
from spt_theory.core import args as cli_args
from spt_theory.evidence import schema, strict, sweep_schema
from spt_theory.lra.data import data_source
from spt_theory.lra.designs import EXPERIMENTS, Experiment, decide_names
from spt_theory.lra.runner import LRARun, RunOptions, versions
from spt_theory.lra.sweep import RUN_MECHANICS, format_summary, spread, summary_path, sweep
from spt_theory.lra.sweep_cells import cells as parse_cells
from spt_theory.util.files import InputError, announce, write_json
from spt_theory.util.locks import directory_lock

PROBE_LIMIT = 200
"""Test examples the attention probes read (as the committed sweeps; the claims do not read them)."""


def sweep_name(experiment: str, seed: int) -> str:
    return f"decide-{experiment}-s{seed}"


def options(experiment: Experiment, data_dir: Path, out: Path, tiny: bool = False, progress: bool = True
            ) -> RunOptions:
    """The base run options of ``experiment`` (1 layer; ``tiny``: test sizes, the data's settings kept)."""
    overrides = tuple(p for p in experiment.overrides if p[0] in ("resolution", "contour_length")) if tiny \
        else experiment.overrides
    return RunOptions(task=experiment.task, data_dir=Path(data_dir), layers=1,
                      pretrain_epochs=experiment.pretrain_epochs,
                      finetune_epochs=experiment.finetune_epochs or 1, out=Path(out), tiny=tiny, overrides=overrides,
                      progress=progress)


def check_registration(experiment: Experiment, run: LRARun, data) -> None:
    """InputError unless the data have the registered sizes and every cell its registered steps."""
    sizes = {"n_train": len(data.y_train), "n_val": len(data.y_val), "n_test": len(data.y_test)}
    if sizes != experiment.data_sizes:
        raise InputError(f"{experiment.task} data of {sizes}: the registration fixes {experiment.data_sizes} "
                         f"({experiment.registered}); generate the registered data (decide --help)")
    if experiment.source is not None:
        source = data_source(run.config, run.options.data_dir)
        for field in ("generator", "settings"):
            if source.get(field) != experiment.source[field]:
                raise InputError(f"{experiment.task} data: {field} {_short(source.get(field))}, the registration "
                                 f"fixes {_short(experiment.source[field])} ({experiment.registered})")
    per_epoch = math.ceil(sizes["n_train"] / run.config.batch_size)
    for spec, registered in experiment.arms.items():
        cell = parse_cells([], [spec])[0]
        supervised = cell["finetune_epochs"] or run.options.finetune_epochs
        pretrain = (run.options.pretrain_epochs or run.config.pretrain_epochs) if cell["recipe"] == "spt" else 0
        steps = (supervised + pretrain) * per_epoch
        if steps != registered:
            raise InputError(f"{experiment.name} {spec}: {steps} steps ({pretrain} + {supervised} epochs of "
                             f"{per_epoch}), the registration says {registered}")


def run(experiment: Experiment, seeds, data_dir: Path, out: Path, runtime, tiny: bool = False,
        progress: bool = True) -> list[dict]:
    """Run (or reload) the registered arms of ``experiment`` at ``seeds``, one sweep per seed."""
    seeds = list(seeds)  # parsed once, by --seeds (core.args.Seeds)
    stray = [s for s in seeds if s not in experiment.seeds]
    if stray and not tiny:
        raise InputError(f"--seeds {' '.join(map(str, stray))}: not registered for {experiment.name} "
                         f"({' '.join(map(str, experiment.seeds))})")
    base = options(experiment, data_dir, out, tiny, progress)
    if not tiny:
        probe = LRARun(base, runtime)
        data, _, _, _ = probe.setup_target()
        check_registration(experiment, probe, data)
    summaries = []
    for seed in seeds:
        grid = parse_cells([], experiment.specs(seed))
        summaries.append(sweep(base, grid, [seed], runtime, sweep_name(experiment.name, seed),
                               probe_limit=PROBE_LIMIT, controls=experiment.controls))
    return summaries


# ----------------------------------------------------------------------------------- conformance
CONFIG = ("d_model", "n_heads", "d_ff", "lr_finetune", "lr_pretrain", "warmup_steps", "batch_size", "resolution",
          "contour_length", "mask_ratio", "masking", "pretrain_loss", "pooling", "head")
"""The config fields evidence is held to (the task's config with the experiment's ``--set`` pairs)."""


def expected_config(experiment: Experiment) -> dict:
    """The task config the experiment's runs must have been made at (its ``--set`` pairs applied)."""
    from spt_theory.lra.runner import apply_overrides
    from spt_theory.lra.tasks import config_for

    cli_args.registered_spelling([name for name, _ in experiment.overrides])  # as registered: no warning
    config = apply_overrides(config_for(experiment.task), experiment.overrides)
    return {name: getattr(config, name) for name in CONFIG if hasattr(config, name)}


def conform(experiment: Experiment, found: dict, where: str) -> None:
    """EvidenceError naming the first field in which the evidence ``found`` differs from what the
    registration of ``experiment`` fixes: experiment, task, registration document, not tiny, the
    data (sizes, generator and settings, fingerprint), the options and config, the registered seeds
    and cells (every registered cell of every seed present, no other), every run's steps, and one
    per-seed sweep of the registered name."""
    from spt_theory.evidence import EvidenceError

    def need(ok: bool, field: str, what: str) -> None:
        if not ok:
            raise EvidenceError(f"{where}: field {field} must be {what} (the registration of {experiment.name}, "
                                f"{experiment.registered})")

    need(found.get("experiment") == experiment.name, "experiment", repr(experiment.name))
    need(found.get("task") == experiment.task, "task", repr(experiment.task))
    need(found.get("registered") == experiment.registered, "registered", repr(experiment.registered))
    need(found.get("tiny") is False, "tiny", "false (tiny runs decide nothing)")
    data = found.get("data", {})
    for name, size in experiment.data_sizes.items():
        need(data.get(name) == size, f"data.{name}", str(size))
    if experiment.fingerprint is not None:
        need(data.get("fingerprint") == experiment.fingerprint, "data.fingerprint", experiment.fingerprint)
    if experiment.source is not None:
        source = found.get("data_source") or {}
        need(source.get("origin") == "generated", "data_source.origin", "'generated'")
        for name in ("generator", "settings"):
            need(_plain(source.get(name)) == _plain(experiment.source[name]), f"data_source.{name}",
                 _short(experiment.source[name]))
    opts = found.get("options", {})
    need([list(p) for p in opts.get("overrides", [])] == [list(p) for p in experiment.overrides], "options.overrides",
         _short([list(p) for p in experiment.overrides]))
    for name, value in (("task", experiment.task), ("layers", 1), ("pretrain_epochs", experiment.pretrain_epochs),
                        ("finetune_epochs", experiment.finetune_epochs or 1), ("tiny", False),
                        ("model", "transformer"), ("pretrain_task", None), ("max_steps", None), ("freeze", []),
                        ("keep", list(opts.get("keep", [])) if "keep" in opts else None)):
        if name in opts or value is not None:
            need(_plain(opts.get(name)) == _plain(value), f"options.{name}", repr(value))
    config = found.get("config", {})
    for name, value in expected_config(experiment).items():
        made = config.get({"n_heads": "heads", "d_ff": "ff"}.get(name, name), config.get(name))
        need(made == value, f"config.{name}", repr(value))
    seeds = found.get("seeds", [])
    stray = [s for s in seeds if s not in experiment.seeds]
    need(not stray, "seeds", f"among the registered {list(experiment.seeds)} (found {stray})")
    rows = {json.dumps(row["cell"], sort_keys=True): row for row in found.get("cells", [])}
    wanted = {json.dumps(parse_cells([], [spec])[0], sort_keys=True): spec for spec in experiment.arms}
    extra = [json.loads(key) for key in rows if key not in wanted]
    need(not extra, "cells", f"the registered arms only (found {extra[:1]})")
    for key, spec in wanted.items():
        runs = {run["seed"]: run for run in rows[key]["runs"]} if key in rows else {}
        for seed in seeds:
            if spec in experiment.specs(seed):
                need(seed in runs, f"cells ({spec}) seed {seed}", "present (every registered arm of every seed)")
        for seed, run in runs.items():
            need(seed in seeds and spec in experiment.specs(seed), f"cells ({spec}) seed {seed}",
                 "a seed registered for that arm")
            need(run["curve"][-1]["step"] == experiment.arms[spec], f"cells ({spec}) seed {seed} curve",
                 f"a run of the registered {experiment.arms[spec]} steps")
            need(run.get("steps_per_epoch") is not None, f"cells ({spec}) seed {seed} steps_per_epoch", "present")
    sweeps = found.get("sweeps", {})
    for seed in seeds:
        entry = sweeps.get(str(seed), {})
        need(entry.get("name") == sweep_name(experiment.name, seed), f"sweeps.{seed}.name",
             repr(sweep_name(experiment.name, seed)))


# ----------------------------------------------------------------------------------- collect
SAME = ("experiment", "task", "registered", "tiny", "options", "config", "data", "controls")
"""The fields two pieces of evidence of one experiment must share (every seed's, and a merge's)."""


def _plain(value):
    return json.loads(json.dumps(value))


def collect(experiment: Experiment, out: Path) -> dict:
    """The evidence of the finished per-seed sweeps of ``experiment`` under ``out`` (module doc);
    InputError if there is none or two seeds' sweeps differ in a field of :data:`SAME`."""
    found: list[Any] = []
    by_seed: dict[Any, Any] = {}
    for path in sorted((Path(out) / "sweeps").glob(f"{experiment.task}-decide-{experiment.name}-s*.json")):
        if not path.is_file():  # a FIFO would hang the read
            raise InputError(f"{path}: not a regular file (a sweep summary is one)")
        summary = _read_summary(path)
        seed = summary["seeds"][0]
        if (summary.get("name") != sweep_name(experiment.name, seed) or len(summary["seeds"]) != 1
                or path.name != f"{experiment.task}-{sweep_name(experiment.name, seed)}.json"):
            raise InputError(f"{path}: not the one-seed sweep of decide {experiment.name} its name says "
                             f"(a copy under another name?)")
        if seed in by_seed:
            raise InputError(f"{path}: seed {seed} again (also {by_seed[seed]}): nothing was collected")
        by_seed[seed] = path
        found.append(summary)
    if not found:
        raise InputError(f"{Path(out) / 'sweeps'}: no finished sweep of decide {experiment.name} "
                         f"(run: python -m spt_theory.lra decide run --experiment {experiment.name} ...)")
    pieces = [_piece(experiment, summary) for summary in found]
    merged = pieces[0]
    for piece in pieces[1:]:
        merged = merge(piece, merged)
    if not merged["tiny"]:
        conform(experiment, merged, f"{Path(out) / 'sweeps'} (decide {experiment.name})")
    return merged


def _read_summary(path: Path) -> dict:
    """A sweep summary, validated as one (a sweep writes no schema version: the code's are added)."""
    summary = strict.read(path)  # one line: a huge integer, deep nesting, a key twice, over the size cap
    if isinstance(summary, dict):
        summary = {"schema_version": schema.SCHEMA_VERSION, "model_defaults": schema.model_defaults(), **summary}
    return schema.validate(summary, sweep_schema.SweepSummary, str(path))


def _piece(experiment: Experiment, summary: dict) -> dict:
    """One seed's sweep summary as evidence of ``experiment``."""
    seed = summary["seeds"][0]
    opts = {k: v for k, v in summary["options"].items() if k not in ("seed", *RUN_MECHANICS)}
    data = {k: summary["data"][k] for k in ("fingerprint", "width", "n_train", "n_val", "n_test")}
    cells = [{"label": row["label"], "cell": row["cell"], "runs": row["runs"]} for row in summary["cells"]]
    return evidence.scrub_paths({
        "schema_version": schema.SCHEMA_VERSION, "experiment": experiment.name, "task": experiment.task,
        "registered": experiment.registered, "tiny": bool(opts.get("tiny")), "seeds": [seed], "options": opts,
        "config": summary["config"], "data": data, "data_source": summary["data"].get("source"),
        "controls": {kind: entry for kind, entry in summary.get("controls", {}).items() if "runs" not in entry},
        "cells": _with_stats(cells), "sweeps": {str(seed): {"name": summary["name"], "versions": summary["versions"],
                                                            "written": summary.get("written"),
                                                            "sweep_seconds": summary.get("sweep_seconds")}},
        "versions": versions(), "model_defaults": schema.model_defaults()})


def _with_stats(cells: list[dict]) -> list[dict]:
    for row in cells:
        row["runs"] = sorted(row["runs"], key=lambda r: r["seed"])
        row["test_accuracy"] = spread([r["test_accuracy"] for r in row["runs"]])
    return cells


def merge(found: dict, committed: dict) -> dict:
    """``found`` completed by ``committed`` (evidence of the same experiment): the union of their
    seeds, a (cell, seed) run in both taken from ``found``.  InputError naming the first field of
    :data:`SAME` in which they differ."""
    for name in SAME:
        if _plain(found.get(name)) != _plain(committed.get(name)):
            raise InputError(f"decide {found.get('experiment')}: field {name} differs from the other evidence's "
                             f"({_short(committed.get(name))} there, {_short(found.get(name))} here): not the same "
                             "experiment, nothing was merged")
    rows: dict[str, dict] = {}
    for source in (committed, found):
        for row in _plain(source["cells"]):
            key = json.dumps(row["cell"], sort_keys=True)
            entry = rows.setdefault(key, {"label": row["label"], "cell": row["cell"], "runs": {}})
            entry["runs"].update({run["seed"]: run for run in row["runs"]})
    cells = [{**row, "runs": list(row["runs"].values())} for row in rows.values()]
    seeds = sorted(set(found["seeds"]) | set(committed["seeds"]))
    merged = {**_plain(found), "seeds": seeds, "cells": _with_stats(cells),
              "sweeps": {**_plain(committed["sweeps"]), **_plain(found["sweeps"])}}
    merged["sweeps"] = dict(sorted(merged["sweeps"].items(), key=lambda item: int(item[0])))
    schema.parse(json.dumps(merged), sweep_schema.DecideEvidence, "merged decide evidence")
    return merged


def _short(value) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


def write(found: dict, out: Path) -> Path:
    schema.parse(json.dumps(found), sweep_schema.DecideEvidence, "decide evidence")
    return write_json(Path(out) / "decide" / f"{found['experiment']}.json", found)


def promote(found: dict, out: Path) -> Path:
    """Write ``found`` into the package's evidence (``lra/decide/<X>.json``), merged with what is
    committed there; refused for ``--tiny`` evidence."""
    if found["tiny"]:
        raise InputError("--tiny evidence is never promoted")
    experiment = EXPERIMENTS[found["experiment"]]
    name = f"{found['experiment']}.json"
    committed = evidence.path(evidence.LRA, "decide", name)
    with directory_lock(_promote_lock(committed), wait_message=False):  # read, merge and write as one
        if committed.exists():  # a committed file of another experiment or a broken one refuses the promotion
            found = merge(found, schema.load(committed, sweep_schema.DecideEvidence))
        conform(experiment, found, f"decide {experiment.name} (merged with {committed})")
        staged = write_json(Path(out) / "decide" / f"promoted-{name}", found)
        return evidence.promote(staged, evidence.LRA, "decide", name)


def _promote_lock(target: Path) -> Path:
    """The lock of promotions into ``target``: one per file, outside the package (lanes promote at once)."""
    import hashlib
    import tempfile

    digest = hashlib.sha256(str(Path(target).resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"spt-promote-{digest}"


# ----------------------------------------------------------------------------------- command line
def add_parser(commands) -> None:
    """``decide run`` and ``decide collect`` under the ``lra`` command line."""
    decide = commands.add_parser("decide", help="the pre-registered experiments (lra/designs.py) and their evidence",
                                 description=__doc__.split("\n\n", 1)[1].strip(),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    steps = decide.add_subparsers(dest="decide_command", required=True, metavar="STEP")
    for name, text in (("run", "train the registered arms (resumable), one sweep per seed"),
                       ("collect", "merge the finished seeds into evidence OUT/decide/<X>.json")):
        p = steps.add_parser(name, help=text, description=text)
        p.add_argument("--experiment", required=True, choices=decide_names())
        p.add_argument("--out", type=Path, default=Path("runs/decide"), help="run folder (runs/decide)")
        if name == "run":
            p.add_argument("--data-dir", type=Path, required=True, help="root of the registered data")
            cli_args.add_seeds(p, None, "the experiment's registered seeds")
            p.add_argument("--tiny", action="store_true", help="test sizes, no registration check")
            p.add_argument("--device", default="auto")
            cli_args.add_threads(p)
            cli_args.add_no_progress(p)
        else:
            p.add_argument("--promote", action="store_true",
                           help="also write it into the package's evidence, merged with the seeds there")


def execute(args: argparse.Namespace) -> None:
    from spt_theory.core import cpu
    from spt_theory.lra.runtime import runtime_from_env, shutdown

    experiment = EXPERIMENTS[args.experiment]
    cli_args.registered_spelling([name for name, _ in experiment.overrides])
    if args.decide_command == "collect":
        found = collect(experiment, args.out)
        announce(write(found, args.out))
        print(f"decide {experiment.name}: seeds {' '.join(map(str, found['seeds']))}; "
              + "; ".join(f"{row['label']} {len(row['runs'])} runs" for row in found["cells"]))
        if args.promote:
            announce(promote(found, args.out))
        return
    if args.threads is not None:
        cpu.set_intra_op_threads(args.threads)
    runtime = runtime_from_env(args.device)
    try:
        for summary in run(experiment, args.seeds or experiment.seeds, args.data_dir, args.out, runtime,
                           args.tiny, not args.no_progress):
            print(format_summary(summary))
            announce(summary_path(options(experiment, args.data_dir, args.out, args.tiny),
                                           summary["name"]))
    finally:
        shutdown()

