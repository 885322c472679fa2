"""The GPU twin's training (:mod:`spt_theory.lra.gpu.twin`): the bench and the seed group, on the
stacked ensemble (:mod:`spt_theory.lra.gpu.stacked`).

The seed group: SPT pretraining of its seeds as one stacked ensemble (the head fixed, as the LRA
runner's SPT stage), then one supervised ensemble of every arm x seed.  Every member starts from
its seed's random init (``torch.manual_seed(seed)``, then ``Encoder``: the same init in every arm
of a seed, as :meth:`spt_theory.lra.runner.LRARun.initial_model`), then per arm: ``spt`` takes the
encoder (W_Q W_K, W_V W_O, MLP, norms, embedding) from its seed's SPT member, ``hybrid_qk`` only
W_Q, W_K, ``proximity`` gets :func:`~spt_theory.core.inits.grid_proximity_init` (``proximity2d``:
:func:`~spt_theory.core.inits.grid2d_proximity_init`), ``frozen_qk`` keeps W_Q, W_K fixed.  A
factorial's members (``<pooling>.<arm>``) carry their readout in their config (mean or max: one
ensemble of both) and read the one SPT ensemble of their seeds.  Each run trains for its steps (its
pooling's in a factorial), the SPT arms' less SPT's, and leaves the ensemble when they are done; a
curve point's ``step`` counts SPT's steps.  Every arm of a seed reads the same batches (one data
stream per seed: paired comparisons).  In a factorial the attention is probed too: the true 2-D
neighbour attention over uniform (``grid2d_ratio``, the first :data:`PROBE_IMAGES` test images)
of each seed's SPT checkpoint (on its SPT runs: ``spt_grid2d_ratio``) and of each scratch run at
its last step.

**The deadline.**  At every evaluation the run predicts when the next one would be done (the
seconds a step measured so far, the last evaluation's seconds); if that is past the deadline it
stops there: the runs not done are marked incomplete and the group records ``cut`` (the step
reached, the step planned, why).  Pretraining checks at every epoch the same way; a cut there
streams every arm x seed with an empty curve.

**Divergence.**  A member whose train loss at an evaluation is not finite is recorded as diverged
(``diverged``: the curve step; its ``train_loss`` null from there) and trains on with the others:
its parameters are its own rows of the stacked tensor, so its NaN reaches no other member.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from spt_theory.core.inits import grid2d_proximity_init, grid_proximity_init
from spt_theory.core.model import Encoder, ModelConfig
from spt_theory.evidence import correctness
from spt_theory.lra.gpu.stacked import Stacked
from spt_theory.lra.gpu.twin_plan import PRETRAINED, Rates, Sizes, base_arm, design_arms, empty_runs, pooling_of

PROBE_IMAGES = 200
"""Test images the factorial's attention probe reads (as the CPU sweeps' ``PROBE_LIMIT``)."""

ENCODER_GROUPS = ("qk", "vo", "mlp", "norm", "embed")
WARMUP_STEPS = 3
ATTENTION_PATHS = ("default", "math")
"""The attention paths the bench compares: torch's pick of the fused kernels, and the plain
softmax (``torch.nn.attention.sdpa_kernel([SDPBackend.MATH])``)."""


def model_config(sizes: Sizes, pooling: str = "mean") -> ModelConfig:
    return ModelConfig(vocab_size=0, in_channels=2, n_classes=2, recon_classes=256, max_len=sizes.side ** 2,
                       d_model=sizes.d_model, n_heads=sizes.heads, d_ff=sizes.ff, n_layers=1, pooling=pooling,
                       head="linear")


def seeded(sizes: Sizes, seed: int, pooling: str = "mean") -> Encoder:
    """The seed's init (the same parameters whatever the pooling: mean and max add none)."""
    torch.manual_seed(seed)
    return Encoder(model_config(sizes, pooling))


@dataclass
class Deadline:
    """``end``: the time (``time.time()``) by which the training must be done."""

    end: float

    def left(self) -> float:
        return self.end - time.time()


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def spt_ensemble(sizes: Sizes, seeds: list[int], device: str, attention: str = "default",
                 dtype: torch.dtype = torch.float32) -> Stacked:
    """The seeds' SPT ensemble: everything but the head trains (the decoder too)."""
    return Stacked([seeded(sizes, s) for s in seeds], list(range(len(seeds))), "spt", sizes.lr_pretrain,
                   fixed=[("head",)] * len(seeds), warmup_steps=sizes.warmup_steps, mask_ratio=sizes.mask_ratio,
                   n_train=sizes.n_train, batch=sizes.batch, seed=0, device=device, dtype=dtype,
                   autocast=device == "cuda", attention=attention)


def proximity2d_states(sizes: Sizes, seeds: list[int]) -> dict[int, dict]:
    """Each seed's W_Q, W_K (and biases) under :func:`~spt_theory.core.inits.grid2d_proximity_init`,
    fitted once a seed (a fit of a few seconds; both poolings' members share it: the init depends on
    the seed's parameters, not on the readout).  The twin makes them before its bench, so that the
    plan sees the time they took."""
    out = {}
    for s in seeds:
        model = seeded(sizes, s)
        grid2d_proximity_init(model, side=sizes.side, **({"steps": 5} if sizes.tiny else {}))  # tiny: the pipeline
        out[s] = {name: p.detach().clone() for name, p in model.named_parameters() if Encoder.group_of(name) == "qk"}
    return out


def members(sizes: Sizes, arms: list[str], seeds: list[int], spt_states: dict[int, dict],
            dtype: torch.dtype = torch.float32, inits: dict[int, dict] | None = None) -> tuple:
    """The supervised ensemble's members, arm by arm, seed by seed: (models, streams, fixed, runs);
    ``inits``: the seeds' proximity2d W_Q, W_K (:func:`proximity2d_states`; made here when absent)."""
    if any(base_arm(a) == "proximity2d" for a in arms) and inits is None:
        inits = proximity2d_states(sizes, seeds)
    models, streams, fixed, runs = [], [], [], []
    for arm in arms:
        what = base_arm(arm)
        for k, s in enumerate(seeds):
            model = seeded(sizes, s, pooling_of(arm)).to(dtype)
            if what in PRETRAINED:
                groups = ENCODER_GROUPS if what == "spt" else ("qk",)
                with torch.no_grad():
                    for name, p in model.named_parameters():
                        if Encoder.group_of(name) in groups:
                            p.copy_(spt_states[s][name])
            if what == "proximity":
                grid_proximity_init(model, side=sizes.side)
            if what == "proximity2d":
                assert inits is not None  # made above
                with torch.no_grad():
                    for name, value in inits[s].items():
                        model.get_parameter(name).copy_(value)
            models.append(model)
            streams.append(k)
            fixed.append(("decoder", "qk") if what == "frozen_qk" else ("decoder",))
            runs.append({"arm": arm, "seed": s, "complete": False, "steps": 0, "offset": 0, "curve": []})
    return models, streams, fixed, runs


def supervised_ensemble(sizes: Sizes, arms: list[str], seeds: list[int], spt_states: dict[int, dict], device: str,
                        attention: str = "default", dtype: torch.dtype = torch.float32,
                        inits: dict[int, dict] | None = None) -> tuple[Stacked, list[dict]]:
    models, streams, fixed, runs = members(sizes, arms, seeds, spt_states, dtype, inits)
    ens = Stacked(models, streams, "supervised", sizes.lr, fixed=fixed, warmup_steps=sizes.warmup_steps,
                  n_train=sizes.n_train, batch=sizes.batch, seed=1, device=device, dtype=dtype,
                  autocast=device == "cuda", attention=attention)
    return ens, runs


def _timed_steps(ens: Stacked, data: dict, steps: int, device: str) -> float:
    for _ in range(WARMUP_STEPS):
        ens.step(data["x_train"], data["y_train"])
    _sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        ens.step(data["x_train"], data["y_train"])
    _sync(device)
    return (time.perf_counter() - start) / steps


def bench(sizes: Sizes, data: dict, device: str) -> dict:
    """Seconds a step of the full supervised ensemble (every arm x seed) on both attention paths
    (:data:`ATTENTION_PATHS`), then on the faster: of the smallest plan's ensemble (scratch and SPT),
    of the SPT ensemble, and one evaluation; ``sizes.bench_steps`` timed steps each after
    :data:`WARMUP_STEPS`.  Returns the figures, the faster path and the plan's :class:`Rates`."""
    seeds = list(range(sizes.group))
    same = {s: {n: p.detach() for n, p in seeded(sizes, s).named_parameters() if Encoder.group_of(n) == "qk"}
            for s in seeds}  # the bench times steps: its proximity2d members keep their init (no fit)
    every, smallest = design_arms(sizes), design_arms(sizes, ("scratch", "spt"))
    large, small = len(every) * sizes.group, len(smallest) * sizes.group
    timed: dict[str, float] = {}
    errors: dict[str, str] = {}
    ens: Stacked | None = None
    for path in ATTENTION_PATHS:
        try:
            ens, _ = supervised_ensemble(sizes, every, seeds, {s: seeded(sizes, s).state_dict() for s in seeds},
                                         device, path, inits=same)
            timed[path] = _timed_steps(ens, data, sizes.bench_steps, device)
        except RuntimeError as error:  # a path this device or build lacks (or out of memory)
            errors[path] = f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
        finally:
            ens = None
    if not timed:
        raise RuntimeError(f"no attention path runs on {device}: {errors}")
    attention = min(timed, key=lambda name: timed[name])
    ens, _ = supervised_ensemble(sizes, smallest, seeds, {s: seeded(sizes, s).state_dict() for s in seeds},
                                 device, attention)
    small_time = _timed_steps(ens, data, sizes.bench_steps, device)
    spt_time = _timed_steps(spt_ensemble(sizes, seeds, device, attention), data, sizes.bench_steps, device)
    full, _ = supervised_ensemble(sizes, every, seeds, {s: seeded(sizes, s).state_dict() for s in seeds}, device,
                                  attention, inits=same)
    _sync(device)
    start = time.perf_counter()
    full.correct(data["x_val"], data["y_val"])
    full.correct(data["x_test"], data["y_test"])
    _sync(device)
    eval_time = time.perf_counter() - start
    large_time = timed[attention]
    per_member = (large_time - small_time) / (large - small)
    per_member = max(per_member, large_time / large / 4)  # noise guard: never below a quarter of the mean
    overhead = max(0.0, large_time - large * per_member)
    rates = Rates(overhead=overhead, per_member=per_member,
                  per_member_spt=max(per_member, (spt_time - overhead) / sizes.group),
                  eval_per_member=eval_time / large,
                  basis=f"benched on {device}: {1e3 * large_time:.2f} ms a step at {large} members "
                        f"({attention} attention), {1e3 * small_time:.2f} ms at {small}")
    return {"attention": attention, "steps_timed": sizes.bench_steps, "warmup_steps": WARMUP_STEPS,
            "seconds_per_step": {**{f"{path}_{large}": t for path, t in timed.items()},
                                 f"{attention}_{small}": small_time, f"spt_{attention}_{sizes.group}": spt_time},
            "model_steps_per_second": {path: large / t for path, t in timed.items()},
            "errors": errors, "eval_seconds": eval_time, "rates": rates}


def train_group(sizes: Sizes, p: dict, data: dict, device: str, stream: Callable[[list[dict], dict | None], None],
                say: Callable[[str], None], deadline: Deadline, attention: str = "default",
                dtype: torch.dtype = torch.float32, finished: dict | None = None,
                inits: dict[int, dict] | None = None) -> dict | None:
    """Pretrain (if an SPT arm is planned) and train every arm of the plan's seeds; ``stream(runs,
    cut)`` at every evaluation and at the end (module doc).  Returns the cut (None: complete).
    ``finished``: receives every member's parameters as it finishes, by ``(arm, seed)`` (the tests')."""
    seeds, arms = p["seeds"], list(p["arms"])
    spt_steps, steps, evals = p["spt_steps"], p["steps"], p["eval_steps"]
    spt_states: dict[int, dict] = {}
    cut: dict[str, Any] | None = None
    pretrained = any(base_arm(a) in PRETRAINED for a in arms)
    probe = bool(p.get("poolings"))  # the factorial's attention probe (module doc)
    probes = data["x_test"][:PROBE_IMAGES]
    spt_ratios: dict[int, float] = {}
    if pretrained:
        start = time.perf_counter()
        spt = spt_ensemble(sizes, seeds, device, attention, dtype)
        first_eval = evals[0] * (p["rates"]["overhead"] + len(arms) * len(seeds) * p["rates"]["per_member"])
        for step in range(1, spt_steps + 1):
            spt.step(data["x_train"], data["y_train"])
            if step % spt.steps_per_epoch == 0 and step < spt_steps:
                _sync(device)
                per_step = (time.perf_counter() - start) / step
                if deadline.left() < (spt_steps - step) * per_step + first_eval:
                    cut = {"phase": "pretraining", "step": step, "planned": spt_steps,
                           "why": f"pretraining would end {(spt_steps - step) * per_step:.0f} s from now, and the "
                                  f"first evaluation {first_eval:.0f} s later: past the deadline "
                                  f"({deadline.left():.0f} s left)"}
                    say(f"cut in pretraining at step {step} of {spt_steps}: {cut['why']}")
                    stream(empty_runs(p), cut)
                    return cut
        val_losses = spt.masked_loss(data["x_val"][:1000])
        spt_states = {s: spt.parameters_of(i) for i, s in enumerate(seeds)}
        if probe:
            spt_ratios = dict(zip(seeds, spt.grid2d_ratios(probes, list(range(len(seeds)))), strict=True))
        say(f"seeds {seeds}: SPT {spt_steps} steps in {time.perf_counter() - start:.1f} s, masked val loss "
            + ", ".join(f"{v:.3f}" for v in val_losses))
        del spt
    ens, runs = supervised_ensemble(sizes, arms, seeds, spt_states, device, attention, dtype, inits)
    for record, planned in zip(runs, empty_runs(p), strict=True):
        record["offset"], record["steps"] = planned["offset"], planned["steps"]
        if probe and base_arm(record["arm"]) == "spt":
            record["spt_grid2d_ratio"] = spt_ratios[record["seed"]]
    active = list(range(len(runs)))  # the runs still in the ensemble, by position

    def close(positions: list[int]) -> None:
        """The runs at ``positions`` (of the ensemble) are done: complete, probed, handed to ``finished``."""
        for position in positions:
            record = runs[active[position]]
            _close(record)
            if probe and base_arm(record["arm"]) == "scratch":
                record["grid2d_ratio"] = ens.grid2d_ratios(probes, [position])[0]
            if finished is not None:
                finished[record["arm"], record["seed"]] = ens.parameters_of(position)

    start, evaluating, cut = time.perf_counter(), 0.0, None
    for step in range(1, steps + 1):
        losses = ens.step(data["x_train"], data["y_train"])
        if step in evals:
            began = time.perf_counter()
            val = ens.correct(data["x_val"], data["y_val"]).cpu()
            test = ens.correct(data["x_test"], data["y_test"]).cpu()
            losses = losses.float().cpu()
            for position, i in enumerate(active):
                record = runs[i]
                loss = float(losses[position])
                if not math.isfinite(loss) and "diverged" not in record:
                    record["diverged"] = step + record["offset"]
                    say(f"run ({record['arm']}, {record['seed']}) diverged: train loss {loss} at step {step}; "
                        "recorded as diverged (its loss null), the other runs go on")
                record["curve"].append({"step": step + record["offset"],
                                        "train_loss": round(loss, 5) if "diverged" not in record else None,
                                        "val_accuracy": float(val[position].double().mean()),
                                        "test_accuracy": float(test[position].double().mean()),
                                        "test_correct": correctness.encode(test[position].numpy())})
            took = time.perf_counter() - began
            evaluating += took
            per_step = (began - start - evaluating + took) / step
            say(f"step {step}/{steps} ({time.perf_counter() - start:.1f} s, {per_step * 1e3:.2f} ms a step)")
            done = [position for position, i in enumerate(active) if runs[i]["steps"] - runs[i]["offset"] == step]
            if done and step < steps:  # these runs' steps are done: they leave the ensemble
                close(done)
                kept = [position for position in range(len(active)) if position not in done]
                if kept:
                    ens.keep(kept)
                active = [active[position] for position in kept]
            later = [e for e in evals if e > step]
            if later and deadline.left() < (later[0] - step) * per_step + took:
                cut = {"phase": "supervised", "step": step, "planned": steps,
                       "why": f"the next evaluation (step {later[0]}) would be done in "
                              f"{(later[0] - step) * per_step + took:.0f} s, with {deadline.left():.0f} s left"}
                say(f"cut at step {step} of {steps}: {cut['why']}")
                stream(runs, cut)
                return cut
            stream(runs, None)
    close(list(range(len(active))))
    stream(runs, None)
    return None


def _close(record: dict) -> None:
    """Mark a run complete, its test accuracy that of its last evaluation (its final model)."""
    record["complete"] = True
    if record["curve"]:
        record["test_accuracy"] = record["curve"][-1]["test_accuracy"]
