"""The run of the one-GPU confirmation (:mod:`spt_theory.lra.gpu.confirm`): the steps start,
bench, data and the sweeps in order under their timeouts (:class:`Confirmation`), then the report,
``OUT/summary.json`` and the export, whatever a step did (:func:`confirm`)."""

from __future__ import annotations

import json
import signal
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

from spt_theory.lra.gpu import export as gpu_export
from spt_theory.lra.gpu.data import generate_data
from spt_theory.lra.gpu.plan import (
    ASSUMED_SCRIPT_START,
    BENCH_REPETITIONS,
    CELLS,
    FIGURES,
    FINISH_SECONDS,
    MIN_STEP_SECONDS,
    OVERRUN,
    STEP_GRACE,
    SWEEP_NAME,
    TASKS,
    Rates,
    Sizes,
    assumed_rates,
    format_plan,
    measure_cpu_rates,
    measured_rates,
    plan,
    planned_seconds,
    step_timeout,
)
from spt_theory.lra.gpu.steps import Step, run_step, say
from spt_theory.lra.report import format_report, load_results
from spt_theory.util.files import InputError, StorageError, atomic_write, prepare_output, write_json


def sweep_command(python: str, task: str, out: Path, task_plan: dict, sizes: Sizes) -> list[str]:
    """The sweep of ``task``: its cells, seed 0, 1 layer, the plan's caps; a checkpoint per epoch
    only (``--checkpoint-every`` an epoch's steps)."""
    command = [python, "-m", "spt_theory.lra", "sweep", "--task", task, "--data-dir", str(out / "data"),
               "--out", str(out), "--layers", "1"]
    for cell in CELLS[task]:
        command += ["--cell", cell]
    command += ["--seeds", "0", "--name", SWEEP_NAME, "--epochs", str(task_plan["epochs"]),
                "--finetune-epochs", str(task_plan["epochs"]), "--max-steps", str(task_plan["max_steps"]),
                "--set", f"warmup_steps={task_plan['warmup_steps']}", "--probe-limit", str(sizes.probe_limit),
                "--checkpoint-every", str(task_plan["steps_per_epoch"]), "--no-progress"]
    return command + (["--tiny"] if sizes.tiny else [])


@dataclass
class Confirmation:
    """One run of the confirmation: its settings, the steps run so far
    (:class:`~spt_theory.lra.gpu.steps.Step`) and the plans made; ``started``: the wall-clock time
    (``time.time()``) the budget counts from."""

    python: str
    out: Path
    sizes: Sizes
    budget: float
    started: float
    steps: list = field(default_factory=list)
    plans: dict = field(default_factory=dict)
    """The plans made, by when: at the ``start`` (assumed rates: the bench's and data's timeouts),
    before each ``sweep <task>``, and the ``final`` one with every step measured."""

    @property
    def repetitions(self) -> int:
        return 2 if self.sizes.tiny else BENCH_REPETITIONS

    def elapsed(self) -> float:
        return time.time() - self.started

    def timeout(self, name: str, planned: float) -> float | None:
        """The timeout of the step ``name`` (:func:`~spt_theory.lra.gpu.plan.step_timeout`), or None,
        the step recorded as skipped, when less than ``MIN_STEP_SECONDS`` of the budget would be left
        for it."""
        timeout = step_timeout(planned, self.budget - self.elapsed())
        if timeout < MIN_STEP_SECONDS:
            self.skip(name, f"{self.budget - self.elapsed():.0f} s of the budget left", planned)
            return None
        return timeout

    def launch(self, name: str, commands: dict, planned: float) -> Step | None:
        """Run the step ``name`` under its timeout (None: skipped); recorded either way."""
        timeout = self.timeout(name, planned)
        if timeout is None:
            return None
        self.steps.append(run_step(name, commands, timeout, self.out / "logs", planned))
        return self.steps[-1]

    def skip(self, name: str, why: str, planned: float | None = None) -> None:
        self.steps.append(Step(name, "skipped", planned_seconds=planned, message=why))
        say(self.steps[-1].error_line())

    def bench(self, first: dict, generation: dict) -> Rates:
        """The bench step; the rates it measured, or the assumed ones when it did not finish."""
        bench_json = self.out / "bench.json"
        bench_json.unlink(missing_ok=True)
        command = [self.python, "-m", "spt_theory.bench", "--lra", "--repetitions", str(self.repetitions),
                   "--json", str(bench_json)] + (["--tiny"] if self.sizes.tiny else ["--device", "cuda"])
        step = self.launch("bench", {"bench": command}, planned_seconds(first, "bench"))
        if step is not None and step.ok:
            try:
                return measured_rates(json.loads(bench_json.read_text()), generation)
            except (InputError, KeyError, ValueError, OSError) as error:
                step.status, step.message = "failed", f"{bench_json}: not a bench of both tasks ({error!r})"
                say(step.error_line())
        rates = assumed_rates(generation)
        say(f"the plan keeps the assumed rates ({rates.basis})")
        return rates

    def run(self) -> None:
        """The steps start, bench, data and the sweeps, each recorded in ``steps``."""
        sizes, out = self.sizes, self.out
        generation = measure_cpu_rates(sizes)
        fixed = {"start": self.elapsed()}
        first = self.plans["start"] = plan(sizes, assumed_rates(generation), fixed, self.budget)
        self.steps.append(Step("start", "ok", seconds=round(fixed["start"], 2),
                               planned_seconds=ASSUMED_SCRIPT_START + generation["measure_seconds"]))
        rates = self.bench(first, generation)
        fixed["bench"] = self.steps[-1].seconds
        timeout = self.timeout("data", planned_seconds(first, "data"))
        if timeout is not None:
            self.steps.append(generate_data(self.python, out / "data", sizes, timeout, out / "logs",
                                            planned_seconds(first, "data")))
        fixed["data"] = self.steps[-1].seconds
        if not self.steps[-1].ok:
            for task in TASKS:
                self.skip(f"sweep {task}", "no data: the data step did not finish")
            return
        plan_path = out / "plan.json"
        earlier = json.loads(plan_path.read_text()) if plan_path.exists() else None
        same_sizes = earlier and earlier.get("sizes") == {k: v for k, v in asdict(sizes).items() if k != "shapes"}
        caps = {t: v["max_steps"] for t, v in earlier["tasks"].items()} if earlier and same_sizes else {}
        say("step caps " + (f"reused from {plan_path} (cached stages resume)" if caps else "derived from the bench"))
        slowdown = 1.0
        for task in TASKS:
            name = f"sweep {task}"
            p = self.plans[name] = plan(sizes, rates, fixed, self.budget, caps, self.repetitions, slowdown)
            write_json(plan_path, p)
            say(f"plan before the {task} sweep ({self.elapsed():.0f} s in):\n" + format_plan(p))
            step = self.launch(name, {name: sweep_command(self.python, task, out, p["tasks"][task], sizes)},
                               p["tasks"][task]["planned_seconds"])
            fixed[task] = 0.0 if step is None else step.seconds
            caps[task] = p["tasks"][task]["max_steps"]
            slowdown = max(slowdown, fixed[task] / p["tasks"][task]["planned_seconds"])
        self.plans["final"] = plan(sizes, rates, fixed, self.budget, caps, self.repetitions, slowdown)
        write_json(plan_path, self.plans["final"])

    def report(self) -> str | None:
        """The report step, in this process: ``OUT/report.txt`` from the result JSONs (None if none)."""
        start = time.perf_counter()
        try:
            text = format_report(load_results(self.out / "results")) + "\n"
        except InputError as error:
            self.steps.append(Step("report", "failed", seconds=round(time.perf_counter() - start, 2),
                                   message=str(error)))
            say(self.steps[-1].error_line())
            return None
        atomic_write(self.out / "report.txt", lambda tmp: tmp.write_text(text))
        self.steps.append(Step("report", "ok", seconds=round(time.perf_counter() - start, 2)))
        return text

    def summary(self, argv: list[str], report: str | None) -> dict:
        """Every number of the run: config, seed, device, versions, the bench, each step and each
        training stage (planned against actual), the sweeps, the plans and the report."""
        bench_json = self.out / "bench.json"
        bench = _read(lambda: json.loads(bench_json.read_text())) if bench_json.exists() else None
        total = self.elapsed()
        return {"what": "one-GPU confirmation of SPT on generated ListOps and Pathfinder-32 "
                        "(scripts/lra_gpu_confirm.sh)",
                "complete": all(step.ok for step in self.steps), "mode": "tiny" if self.sizes.tiny else "full",
                "argv": argv, "seed": 0, "budget_seconds": self.budget, "total_seconds": round(total, 1),
                "within_budget": total <= self.budget,
                "config": {"sizes": {k: v for k, v in asdict(self.sizes).items() if k != "shapes"},
                           "cells": CELLS, "layers": 1, "seeds": [0], "overrun": OVERRUN, "step_grace": STEP_GRACE,
                           "finish_seconds": FINISH_SECONDS},
                "device": gpu_export.device_info(), "versions": gpu_export.run_versions(),
                "bench": None if bench is None else _read(gpu_export.bench_numbers, bench, TASKS),
                "steps": [asdict(step) for step in self.steps],
                "stages": _read(gpu_export.stage_rows, self.out / "results"),
                "sweeps": _read(gpu_export.sweep_numbers, self.out / "sweeps", SWEEP_NAME, TASKS),
                "plans": self.plans, "report": report, "written": time.strftime("%Y-%m-%dT%H:%M:%S%z")}

    def finish(self, argv: list[str], export: Path | None) -> int:
        """Report, ``OUT/summary.json`` and the export; 0 when every step finished, else 2."""
        report = self.report()
        summary = self.summary(argv, report)
        write_json(self.out / "summary.json", summary)
        if export is not None:
            entry = gpu_export.export(self.out, export, summary, [self.out / "sweeps" / f for f in FIGURES])
            say(f"exported {len(entry['files'])} files to {export}"
                + (f"; left out: {entry['left_out']}" if entry["left_out"] else ""))
        if report is not None:
            print(report, end="")
        say(f"done in {self.elapsed():.0f} s of the budget of {self.budget:.0f} s; summary {self.out / 'summary.json'}")
        failed = [step for step in self.steps if not step.ok]
        for step in failed:
            print(step.error_line(), file=sys.stderr)
        return 2 if failed else 0


def _read(numbers, *args):
    """``numbers(*args)``, or what went wrong where the run's files do not hold what it reads
    (the summary is written whatever a step left)."""
    try:
        return numbers(*args)
    except (KeyError, TypeError, ValueError, OSError) as error:
        return {"error": repr(error)}


def _terminated(number: int, frame) -> None:
    raise SystemExit(128 + number)


def confirm(python: str, out: Path, sizes: Sizes, budget: float, export: Path | None, started: float,
            argv: list[str]) -> int:
    """The run: its steps, then the finish, which happens whatever a step (or this script) did.
    SIGTERM ends it at once (exit status 143, no finish), the running step's processes stopped."""
    run = Confirmation(python, out, sizes, budget, started)
    out.mkdir(parents=True, exist_ok=True)
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        run.run()
    except Exception:  # a fault of this script: recorded, and the finish still exports what ran
        run.steps.append(Step("script", "failed", message="a fault of the script itself (traceback in output_tail)",
                              output_tail=traceback.format_exc()[-2000:]))
        say(traceback.format_exc())
    finally:
        signal.signal(signal.SIGTERM, previous)
    return run.finish(argv, export)


def check_folders(out: Path, export: Path | None) -> None:
    """Before the first step: the run folder and the export folder are folders (or can be made)
    and writable (a probe file created and removed in each); InputError otherwise."""
    for what, folder in (("export folder", export), ("run folder", out)):
        if folder is None:
            continue
        if folder.exists() and not folder.is_dir():
            raise InputError(f"{what} {folder}: not a folder")
        try:
            prepare_output(folder, folder=True)
        except StorageError as error:
            raise InputError(f"{what}: {error}") from None

