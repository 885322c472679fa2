"""The plan of the GPU twin (:mod:`spt_theory.lra.gpu.twin`): sizes, arms, the throughput model,
and the registered order in which a plan that does not fit its budget shrinks.

**Throughput model.**  A supervised ensemble step of ``m`` members takes ``overhead + m x
per_member`` seconds (``per_member``: one model's training step, FLOPs over an achieved rate), an
SPT step of ``g`` members the same with the decoder's FLOPs added, and an evaluation (validation
and test of every member) its forward FLOPs at the same rate.  ``--dry-run`` assumes the rate
(:data:`ASSUMED_TFLOPS`, :data:`ASSUMED_STEP_OVERHEAD`); a run measures it on the device first
(the bench: a few steps of each ensemble) and plans with that.

**Shrinking (registered 2026-12-02, before any GPU run, in this order).**  The full design is
:data:`ARMS` x ``seeds`` (never fewer than :data:`MIN_SEEDS`) x ``steps`` supervised steps per arm
(SPT arms: ``SPT_SHARE`` of them pretraining, the rest finetuning, as the CPU design's 3,000 +
5,000 against scratch's 8,000).  While the plan's training seconds exceed the budget:

1. fewer steps per arm, to the largest multiple of :data:`STEP_QUANTUM` that fits, never under
   ``floor_steps``;
2. at the floor, drop one arm, in the order :data:`DROP_ORDER` (frozen W_Q W_K first, then the
   W_Q W_K hybrid, then the proximity init; scratch and SPT are never dropped), and go back to
   step 1 from the full steps;
3. with only scratch and SPT left at the floor, the plan stays as it is and says it does not fit.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from spt_theory.bench.cases import forward_flops

ARMS = ("scratch", "spt", "hybrid_qk", "frozen_qk", "proximity")
"""scratch; SPT then finetune (the whole encoder from the SPT checkpoint); the W_Q W_K hybrid
(only W_Q, W_K from it, ``keep=qk``); W_Q, W_K frozen at the random init (``freeze=qk``); the
2-D proximity init of W_Q, W_K (``init=proximity``), no SPT."""
DROP_ORDER = ("frozen_qk", "hybrid_qk", "proximity")
PRETRAINED = ("spt", "hybrid_qk")
MIN_SEEDS = 8
STEP_QUANTUM = 1000
SPT_SHARE = 3 / 8
BUDGET_SECONDS = 420.0
ASSUMED_TFLOPS = 25.0
"""Achieved TFLOP/s the dry run assumes for the vmapped ensembles (bf16 autocast; 2.5% of the
H200's bf16 dense peak: width-64 matmuls and n = 256 attention are far from the peak)."""
ASSUMED_STEP_OVERHEAD = 0.005
"""Seconds per ensemble step the dry run assumes on top of the FLOPs: kernel launches of a vmapped
step and AdamW over the stacked tensors."""


@dataclass(frozen=True)
class Sizes:
    """Data, model and design of one mode (full on a GPU, tiny on a CPU for the tests)."""

    n_train: int
    n_val: int
    n_test: int
    side: int
    d_model: int
    heads: int
    ff: int
    batch: int
    steps: int
    floor_steps: int
    seeds: int
    group: int
    """Seeds trained in one ensemble (every arm of them): whole seeds land group by group."""
    eval_points: int
    lr: float = 1e-3
    lr_pretrain: float = 2e-3
    warmup_steps: int = 100
    mask_ratio: float = 0.5
    contour_length: int = 6
    distractors: int = 2
    distractor_length: int = 3
    workers: int = 15
    tiny: bool = False


FULL = Sizes(n_train=16000, n_val=2000, n_test=10000, side=16, d_model=64, heads=4, ff=128, batch=32,
             steps=40000, floor_steps=10000, seeds=MIN_SEEDS, group=8, eval_points=10)
"""The committed 1-layer Pathfinder-16 setting (spt_theory/checks/lra.py SETTINGS): width 64, 4
heads, FF 128, batch 32, lr 1e-3 (SPT 2e-3), warm-up 100, mask ratio 0.5; 16,000 training and
2,000 validation images and 10,000 test images."""
TINY = Sizes(n_train=48, n_val=16, n_test=32, side=16, d_model=16, heads=4, ff=32, batch=4, steps=8,
             floor_steps=4, seeds=2, group=1, eval_points=2, warmup_steps=1, workers=2, tiny=True)
"""CPU test sizes (2 seeds: a tiny run checks the pipeline, not the design)."""


@dataclass(frozen=True)
class Rates:
    """Seconds per ensemble step: ``overhead + members x per_member`` (supervised) and with the
    decoder (``per_member_spt``); ``eval_per_member``: one evaluation of one member."""

    overhead: float
    per_member: float
    per_member_spt: float
    eval_per_member: float
    basis: str


def model_flops(sizes: Sizes, spt: bool = False) -> float:
    """FLOPs of one model's training step (forward and backward: 3 x forward) on a batch."""
    n = sizes.side * sizes.side
    return 3 * sizes.batch * forward_flops(n, sizes.d_model, sizes.ff, 1, out_per_token=256 if spt else 0)


def assumed_rates(sizes: Sizes, tflops: float = ASSUMED_TFLOPS, overhead: float = ASSUMED_STEP_OVERHEAD) -> Rates:
    rate = tflops * 1e12
    n = sizes.side * sizes.side
    evals = (sizes.n_val + sizes.n_test) * forward_flops(n, sizes.d_model, sizes.ff, 1)
    return Rates(overhead=overhead, per_member=model_flops(sizes) / rate,
                 per_member_spt=model_flops(sizes, True) / rate,
                 eval_per_member=evals / rate,
                 basis=f"assumed {tflops:.0f} TFLOP/s achieved + {1e3 * overhead:.0f} ms a step")


def group_seconds(sizes: Sizes, rates: Rates, arms: tuple[str, ...], steps: int) -> dict:
    """Seconds of one seed group: pretraining, the supervised ensemble, the evaluations."""
    members = len(arms) * sizes.group
    pretrain_steps = spt_steps(steps) if any(a in PRETRAINED for a in arms) else 0
    pretrain = pretrain_steps * (rates.overhead + sizes.group * rates.per_member_spt)
    supervised = steps * (rates.overhead + members * rates.per_member)
    evaluate = (sizes.eval_points + 1) * members * rates.eval_per_member
    return {"pretrain": pretrain, "supervised": supervised, "evaluate": evaluate,
            "total": pretrain + supervised + evaluate}


def spt_steps(steps: int) -> int:
    """Pretraining steps of the SPT arms at ``steps`` per arm (the rest is finetuning)."""
    return round(SPT_SHARE * steps)


def groups(sizes: Sizes) -> list[list[int]]:
    """The seeds, group by group (fresh seeds: 100 on, never run in the CPU lanes)."""
    seeds = list(range(100, 100 + sizes.seeds))
    return [seeds[i:i + sizes.group] for i in range(0, len(seeds), sizes.group)]


def plan(sizes: Sizes, rates: Rates, budget: float = BUDGET_SECONDS) -> dict:
    """The design shrunk in the registered order (module doc) to fit ``budget`` seconds of training."""
    arms, history = list(ARMS), []
    n_groups = len(groups(sizes))

    def total(steps: int) -> float:
        return n_groups * group_seconds(sizes, rates, tuple(arms), steps)["total"]

    while True:
        steps = sizes.steps
        if total(steps) > budget:
            per_step = (total(STEP_QUANTUM) - total(0)) / STEP_QUANTUM
            fitting = (budget - total(0)) / per_step if per_step > 0 else steps
            steps = max(sizes.floor_steps, min(steps, STEP_QUANTUM * math.floor(fitting / STEP_QUANTUM)))
            if sizes.tiny:
                steps = max(sizes.floor_steps, min(sizes.steps, math.floor(fitting)))
            history.append(f"steps {sizes.steps} -> {steps} with arms {', '.join(arms)}")
        if total(steps) <= budget or not any(a in arms for a in DROP_ORDER):
            break
        dropped = next(a for a in DROP_ORDER if a in arms)
        arms.remove(dropped)
        history.append(f"at the floor ({sizes.floor_steps} steps) it does not fit: arm {dropped} dropped")
    seconds = group_seconds(sizes, rates, tuple(arms), steps)
    return {"arms": arms, "seeds": [s for g in groups(sizes) for s in g], "groups": groups(sizes),
            "steps": steps, "spt_steps": spt_steps(steps), "finetune_steps": steps - spt_steps(steps),
            "eval_steps": eval_steps(steps, sizes.eval_points), "group_seconds": seconds,
            "total_seconds": n_groups * seconds["total"], "budget_seconds": budget,
            "fits": n_groups * seconds["total"] <= budget, "shrunk": history, "rates": asdict(rates),
            "sizes": asdict(sizes)}


def eval_steps(steps: int, points: int) -> list[int]:
    """The supervised steps at which every member is evaluated: ``points`` evenly spaced to
    ``steps``, and the SPT arms' last finetuning step."""
    marks = {max(1, round(k * steps / points)) for k in range(1, points + 1)}
    return sorted(marks | {steps - spt_steps(steps)} - {0})


def format_plan(p: dict) -> str:
    s, g = p["sizes"], p["group_seconds"]
    lines = [f"GPU twin: 1-layer Pathfinder-{s['side']} (width {s['d_model']}, {s['heads']} heads, FF {s['ff']}, "
             f"batch {s['batch']}), {s['n_train']} train / {s['n_val']} val / {s['n_test']} test images",
             f"arms: {', '.join(p['arms'])} x {len(p['seeds'])} seeds ({', '.join(map(str, p['seeds']))}) in "
             f"{len(p['groups'])} groups of {s['group']}",
             f"steps per arm: {p['steps']} (SPT arms: {p['spt_steps']} SPT + {p['finetune_steps']} finetune); "
             f"evaluations at {', '.join(map(str, p['eval_steps']))}",
             f"throughput: {p['rates']['basis']}: {1e3 * p['rates']['per_member']:.3f} ms a model-step, "
             f"{1e3 * p['rates']['overhead']:.1f} ms an ensemble step",
             f"a group: pretraining {g['pretrain']:.1f} s + supervised {g['supervised']:.1f} s + evaluations "
             f"{g['evaluate']:.1f} s = {g['total']:.1f} s",
             f"total training {p['total_seconds']:.1f} s of {p['budget_seconds']:.0f} s: "
             + ("fits" if p["fits"] else "DOES NOT FIT")]
    lines += [f"shrunk: {h}" for h in p["shrunk"]] or ["shrunk: nothing (the full design fits)"]
    return "\n".join(lines)
