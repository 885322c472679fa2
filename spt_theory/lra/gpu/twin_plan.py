"""The plan of the GPU twin (:mod:`spt_theory.lra.gpu.twin`): its settings and sizes, arms, the
throughput model, the deadline, and the registered order in which a plan that does not fit shrinks.

**Settings** (:data:`SETTINGS`, ``--setting``): ``contour6``, the committed 1-layer Pathfinder-16
of issue 42 (contour 6, up to 40,000 steps an arm, SPT 3/8 of them); ``short``, the short-contour
Pathfinder-16 registered in docs/preregistration/2026-12-04-lra-short-contour.md (contour 3,
``--balanced``, 20,000 steps an arm, 3,000 of them SPT, as that registration's CPU design);
``factorial``, the pooling factorial registered in docs/preregistration/2026-12-05-gpu-pooling-factorial.md
(the CPU factorial's data, carried; pooling {mean, max} x arms {scratch, SPT, W_Q W_K hybrid,
frozen W_Q W_K, proximity2d}, mean 12,000 steps an arm, max 8,000, SPT 3,000 of them, shared by
both poolings; every member evaluated every 500 steps; one stacked ensemble of both poolings, each
member its own readout: :data:`FACTORIAL`).  Its members are named ``<pooling>.<arm>``
(:func:`design_arms`) and its plan never shrinks its steps: arms are dropped, in the registered
order, from both poolings at once (:func:`plan`).

**Deadline** (issue 51).  ``--wall S`` counts from the script's start (``--started``): the start
(interpreter, torch, CUDA), the data (carried or generated, timed), the bench, then the training,
planned into what is left less :data:`FINISH_SECONDS` at :data:`SAFETY` of it; a check at every
evaluation ends the run early (``cut``) when the next evaluation would not be done in time.

**Throughput model.**  A supervised step of ``m`` stacked members takes ``overhead + m x
per_member`` seconds, an SPT step of ``g`` members ``overhead + g x per_member_spt``, an
evaluation (validation and test of every member) ``members x eval_per_member``.  ``--dry-run``
assumes them (:func:`assumed_rates`: :data:`ASSUMED_TFLOPS`, :data:`ASSUMED_STEP_OVERHEAD`); a run
measures them on the device first (the bench) and plans with what it measured.

**Shrinking (registered 2026-12-02, before any GPU run, in this order).**  The full design is
:data:`ARMS` x ``seeds`` (never fewer than :data:`MIN_SEEDS`) x ``steps`` supervised steps per arm
(SPT arms: ``spt_share`` of them pretraining, the rest finetuning).  While the plan's training
seconds exceed what is left:

1. fewer steps per arm, to the largest multiple of :data:`STEP_QUANTUM` that fits, never under
   ``floor_steps``;
2. at the floor, drop one arm, in the order :data:`DROP_ORDER` (frozen W_Q W_K first, then the
   W_Q W_K hybrid, then the proximity init; scratch and SPT are never dropped), and go back to
   step 1 from the full steps;
3. with only scratch and SPT left at the floor, the plan does not fit, and the run does not train.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from spt_theory.lra import designs

ARMS = ("scratch", "spt", "hybrid_qk", "frozen_qk", "proximity")
"""scratch; SPT then finetune (the whole encoder from the SPT checkpoint); the W_Q W_K hybrid
(only W_Q, W_K from it, ``keep=qk``); W_Q, W_K frozen at the random init (``freeze=qk``); the
2-D proximity init of W_Q, W_K (``init=proximity``), no SPT."""
DROP_ORDER = ("frozen_qk", "hybrid_qk", "proximity")
FACTORIAL_ARMS = ("scratch", "spt", "hybrid_qk", "frozen_qk", "proximity2d")
"""The pooling factorial's arms (each under both poolings): ``proximity2d`` is the 2-D proximity
init (:func:`~spt_theory.core.inits.grid2d_proximity_init`: no row wrap)."""
FACTORIAL_DROP_ORDER = ("frozen_qk", "hybrid_qk", "proximity2d")
PRETRAINED = ("spt", "hybrid_qk")
MIN_SEEDS = 8
STEP_QUANTUM = 1000
WALL_SECONDS = 540.0
"""The default deadline: inside a 600-s command with its start-up and the machine's transfers."""
FINISH_SECONDS = 15.0
"""Kept at the end of the wall for the last writes (summary, log) and a late evaluation."""
SAFETY = 0.9
"""The share of the seconds left that the training is planned into."""
ASSUMED_TFLOPS = 25.0
"""Achieved TFLOP/s the dry run assumes for the stacked model (bf16 autocast; 2.5% of the H200's
bf16 dense peak: width-64 matmuls and n = 256 attention are far from the peak)."""
ASSUMED_STEP_OVERHEAD = 0.005
"""Seconds per ensemble step the dry run assumes on top of the FLOPs (kernel launches, AdamW)."""
ASSUMED_START = 20.0
"""Seconds the dry run assumes from the script's start to the first line of the twin: the
interpreter, torch and CUDA's start (the preflight included)."""
ASSUMED_LOAD = 2.0
"""Seconds to read and check a carried data set (``--data``) and copy it to the device."""
ASSUMED_INIT = 5.0
"""Seconds a seed's proximity2d fit takes (``grid2d_proximity_init``: 200 float64 Adam steps on the
CPU; 8.7 s on one busy core here), in the designs with that arm: fitted before the bench."""
ASSUMED_BENCH_FIXED = 10.0
"""Seconds of the bench beyond its timed steps: kernel selection, warm-up steps, allocations."""


@dataclass(frozen=True)
class Sizes:
    """Data, model and design of one setting (full on a GPU, tiny on a CPU for the tests)."""

    setting: str
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
    """Seeds trained in one ensemble (every arm of them): all of them, the steps being sequential."""
    eval_points: int
    spt_share: float = 3 / 8
    lr: float = 1e-3
    lr_pretrain: float = 2e-3
    warmup_steps: int = 100
    mask_ratio: float = 0.5
    contour_length: int = 6
    distractors: int = 2
    distractor_length: int = 3
    balanced: bool = False
    workers: int = 15
    seconds_per_image: float = 0.0107
    """Generation seconds per image on one core (contour 6 measured 10.7 ms, issue 51)."""
    bench_steps: int = 20
    tiny: bool = False
    arms: tuple[str, ...] = ARMS
    drop_order: tuple[str, ...] = DROP_ORDER
    poolings: tuple[tuple[str, int], ...] = ()
    """(pooling, steps an arm) of a design with both readouts (the factorial); empty: the 2026-12-04
    designs (mean pooling, ``steps`` an arm)."""
    first_seed: int = 500
    data_source: str = "twin"
    """``twin``: the twin's generator (:func:`style`, streams 0 and 1); ``decide``: a CPU design's
    registered data, converted (:data:`DECIDE_DATA`) and carried."""
    registered: str = "docs/preregistration/2026-12-04-gpu-twin.md"


FULL = Sizes(setting="contour6", n_train=16000, n_val=2000, n_test=10000, side=16, d_model=64, heads=4, ff=128,
             batch=32, steps=40000, floor_steps=10000, seeds=MIN_SEEDS, group=8, eval_points=10)
"""The committed 1-layer Pathfinder-16 setting (spt_theory/checks/lra.py SETTINGS): width 64, 4
heads, FF 128, batch 32, lr 1e-3 (SPT 2e-3), warm-up 100, mask ratio 0.5; contour 6; 16,000
training and 2,000 validation images and 10,000 test images."""
SHORT = replace(FULL, setting="short", steps=20000, spt_share=3 / 20, contour_length=3, balanced=True,
                seconds_per_image=0.003)
"""The short-contour setting (docs/preregistration/2026-12-04-lra-short-contour.md; ``lra.designs.CONTOUR3``):
the same model and optimiser, contour 3, ``--balanced``, 20,000 steps an arm, SPT 3,000 of them."""
FACTORIAL_REGISTERED = "docs/preregistration/2026-12-05-gpu-pooling-factorial.md"
FACTORIAL = replace(SHORT, setting="factorial", steps=12000, floor_steps=12000, spt_share=0.25, eval_points=24,
                    arms=FACTORIAL_ARMS, drop_order=FACTORIAL_DROP_ORDER, poolings=(("mean", 12000), ("max", 8000)),
                    first_seed=700, data_source="decide", registered=FACTORIAL_REGISTERED)
"""The GPU pooling factorial (docs/preregistration/2026-12-05-gpu-pooling-factorial.md): the CPU
factorial's model, optimiser and data (generator seed 3, :data:`DECIDE_DATA`), seeds 700-707,
mean pooling 12,000 steps an arm and max 8,000 (SPT 3,000 of them in both, one SPT ensemble shared
by both poolings), an evaluation every 500 steps (24 points to 12,000)."""
SETTINGS = {"contour6": FULL, "short": SHORT, "factorial": FACTORIAL}
DECIDE_DATA = {**(designs.CONTOUR3.data.source or {}), "fingerprint": designs.CONTOUR3.data.fingerprint,
               "config": f"lra.designs.{designs.CONTOUR3_MEAN.name}"}
"""The CPU factorial's registered data, read from the registry (``lra.designs.CONTOUR3``: generator
settings and fingerprint, the LRA reader's split of the folder ``python -m synthetic.pathfinder ...
--seed 3`` writes), which the factorial's ``--make-data --from-data-dir`` converts (``lra.designs``
imports nothing: the GPU path still imports nothing of ``lra.decide``)."""
TINY = replace(FULL, setting="contour6", n_train=48, n_val=16, n_test=32, d_model=16, heads=4, ff=32, batch=4,
               steps=8, floor_steps=4, seeds=2, group=2, eval_points=2, warmup_steps=1, workers=2, bench_steps=2,
               tiny=True)
"""CPU test sizes (2 seeds: a tiny run checks the pipeline, not the design)."""


REGISTERED = "docs/preregistration/2026-12-04-gpu-twin.md"
"""The registration of the 2026-12-04 designs and claims (its path in the checkout: ``registered``;
each setting's is ``Sizes.registered``)."""
FINGERPRINTS = {
    "short": "87ec0160ff64af7c53a01fd640ef4304232b490242fdee60da2f8aeafc91ffd2",
    "contour6": "1d7784939bbb54a8110176ad569dcf3e633088d2bebb6af400c4b43db7d0b13b",
    "factorial": "ebe9dc5f449a0292bc02bcc1233e6f5c181cb6479c7d34e9fd728f86242e71da",
}
"""The content fingerprint (:func:`spt_theory.lra.gpu.twin.fingerprint`) of each setting's
registered data: the generator's images ``(stream, i)`` at the setting's style and sizes, made on
the CPU with ``--make-data`` (2026-12-05, numpy 2; independent of the number of processes).  A run
whose data differ is not the registered design (the run refuses to train on them; promote and the G
checks refuse its evidence).  The factorial's is that of the CPU factorial's registered data
(:data:`DECIDE_DATA`, ``09d407175fc401dd`` as the LRA reader hashes it) converted by ``--make-data
--from-data-dir`` (2026-12-05)."""
REGISTERED_SIZES = ("n_train", "n_val", "n_test", "side", "d_model", "heads", "ff", "batch", "steps", "floor_steps",
                    "seeds", "group", "eval_points", "spt_share", "lr", "lr_pretrain", "warmup_steps", "mask_ratio",
                    "contour_length", "distractors", "distractor_length", "balanced", "tiny")
"""The fields of :class:`Sizes` the registration fixes (not the operational ones: the number of
generating processes, the assumed seconds an image, the bench's steps)."""


def sizes_of(setting: str, tiny: bool = False) -> Sizes:
    """The sizes of ``setting`` (its tiny version for the CPU tests)."""
    full = SETTINGS[setting]
    if not tiny:
        return full
    small = replace(TINY, setting=setting, contour_length=full.contour_length, balanced=full.balanced,
                    spt_share=full.spt_share, arms=full.arms, drop_order=full.drop_order,
                    first_seed=full.first_seed, registered=full.registered)
    if full.poolings:  # mean 8 steps, max 6; SPT 2 of them; an evaluation every 2 steps
        small = replace(small, steps=8, floor_steps=8, eval_points=4, poolings=(("mean", 8), ("max", 6)))
    return small


def design_arms(sizes: Sizes, arms: tuple[str, ...] | list[str] | None = None) -> list[str]:
    """The members' arm names of ``arms`` (default: every arm of ``sizes``): the arm itself, or
    ``<pooling>.<arm>`` for each pooling of a factorial."""
    arms = sizes.arms if arms is None else arms
    return [f"{pooling}.{arm}" for pooling, _ in sizes.poolings for arm in arms] if sizes.poolings else list(arms)


def base_arm(arm: str) -> str:
    """``spt`` of ``max.spt`` (and of ``spt``)."""
    return arm.rsplit(".", 1)[-1]


def pooling_of(arm: str) -> str:
    """The readout of a member of arm ``arm``: ``max`` of ``max.spt``; mean for the 2026-12-04 arms."""
    return arm.split(".", 1)[0] if "." in arm else "mean"


def run_steps(p: dict, arm: str) -> int:
    """The steps of a run of ``arm`` in the plan ``p`` (SPT's counted): its pooling's in a factorial."""
    return p["poolings"][pooling_of(arm)] if p.get("poolings") else p["steps"]


@dataclass(frozen=True)
class Rates:
    """Seconds per ensemble step: ``overhead + members x per_member`` (supervised) and with the
    decoder (``per_member_spt``); ``eval_per_member``: one evaluation of one member."""

    overhead: float
    per_member: float
    per_member_spt: float
    eval_per_member: float
    basis: str


def forward_flops(n: int, d_model: int, d_ff: int, out_per_token: int = 0) -> float:
    """Matmul FLOPs of one sequence's forward pass through one layer at length ``n``
    (:func:`spt_theory.bench.cases.forward_flops`, written out here so that the GPU path imports
    only what the GPU image has)."""
    d = d_model
    return float(2 * n * (4 * d * d + 2 * d * d_ff) + 4 * n * n * d + 2 * n * d * out_per_token)


def model_flops(sizes: Sizes, spt: bool = False) -> float:
    """FLOPs of one model's training step (forward and backward: 3 x forward) on a batch."""
    n = sizes.side * sizes.side
    return 3 * sizes.batch * forward_flops(n, sizes.d_model, sizes.ff, out_per_token=256 if spt else 0)


def assumed_rates(sizes: Sizes, tflops: float = ASSUMED_TFLOPS, overhead: float = ASSUMED_STEP_OVERHEAD) -> Rates:
    rate = tflops * 1e12
    n = sizes.side * sizes.side
    evals = (sizes.n_val + sizes.n_test) * forward_flops(n, sizes.d_model, sizes.ff)
    return Rates(overhead=overhead, per_member=model_flops(sizes) / rate,
                 per_member_spt=model_flops(sizes, True) / rate,
                 eval_per_member=evals / rate,
                 basis=f"assumed {tflops:.0f} TFLOP/s achieved + {1e3 * overhead:.0f} ms a step")


def spt_steps(sizes: Sizes, steps: int) -> int:
    """Pretraining steps of the SPT arms at ``steps`` per arm (the rest is finetuning)."""
    return round(sizes.spt_share * steps)


def group_seconds(sizes: Sizes, rates: Rates, arms: tuple[str, ...], steps: int) -> dict:
    """Seconds of the seed group: pretraining, the supervised ensemble, the evaluations (a
    factorial's members leave the ensemble as their steps end: counted run by run)."""
    members = len(arms) * sizes.group
    pretrained = any(base_arm(a) in PRETRAINED for a in arms)
    pretrain = spt_steps(sizes, steps) * (rates.overhead + sizes.group * rates.per_member_spt) if pretrained else 0.0
    if sizes.poolings:
        p = {"poolings": dict(sizes.poolings), "steps": steps}
        lengths = [run_steps(p, a) - (spt_steps(sizes, steps) if base_arm(a) in PRETRAINED else 0) for a in arms]
        points = eval_steps(sizes, steps)
        supervised = max(lengths, default=0) * rates.overhead + sizes.group * sum(lengths) * rates.per_member
        evaluate = sizes.group * sum(sum(e <= n for e in points) for n in lengths) * rates.eval_per_member
    else:
        supervised = steps * (rates.overhead + members * rates.per_member)
        evaluate = (sizes.eval_points + 1) * members * rates.eval_per_member
    return {"pretrain": pretrain, "supervised": supervised, "evaluate": evaluate,
            "total": pretrain + supervised + evaluate}


def style(sizes: Sizes) -> dict:
    """The Pathfinder generator's style of ``sizes``' images."""
    return {"size": sizes.side, "contour_length": sizes.contour_length, "distractors": sizes.distractors,
            "distractor_length": sizes.distractor_length, "match_distances": True, "balanced": sizes.balanced}


STREAMS = {"train": 0, "val": 0, "test": 1}
"""The generator stream of each split: train and validation images from stream 0 (the first
``n_train``, then ``n_val``), test images from stream 1."""


def data_settings(sizes: Sizes) -> dict:
    """What a data set of ``sizes`` is: the generator's style, the split sizes and streams (the
    CPU design's data it was converted from, for a factorial)."""
    if sizes.data_source == "decide":
        return {"generator": "spt_theory.lra.gpu.twin_data.from_data_dir", "source": DECIDE_DATA,
                "n_train": sizes.n_train, "n_val": sizes.n_val, "n_test": sizes.n_test}
    return {"generator": "spt_theory.lra.gpu.twin", "style": style(sizes), "n_train": sizes.n_train,
            "n_val": sizes.n_val, "n_test": sizes.n_test, "streams": STREAMS}


def seeds(sizes: Sizes) -> list[int]:
    """The seeds: 500 on (2026-12-04) or 700 on (the factorial), fresh (no other design has run them)."""
    return list(range(sizes.first_seed, sizes.first_seed + sizes.seeds))


def plan(sizes: Sizes, rates: Rates, budget: float) -> dict:
    """The design shrunk in the registered order (module doc) to fit ``budget`` seconds of training."""
    kept, history = list(sizes.arms), []

    def total(steps: int) -> float:
        return group_seconds(sizes, rates, tuple(design_arms(sizes, kept)), steps)["total"]

    while True:
        steps = sizes.steps
        if total(steps) > budget and sizes.floor_steps < sizes.steps:
            per_step = (total(STEP_QUANTUM) - total(0)) / STEP_QUANTUM
            fitting = (budget - total(0)) / per_step if per_step > 0 else steps
            quantum = 1 if sizes.tiny else STEP_QUANTUM
            steps = max(sizes.floor_steps, min(steps, quantum * math.floor(fitting / quantum)))
            history.append(f"steps {sizes.steps} -> {steps} with arms {', '.join(kept)}")
        if total(steps) <= budget or not any(a in kept for a in sizes.drop_order):
            break
        dropped = next(a for a in sizes.drop_order if a in kept)
        kept.remove(dropped)
        history.append(f"at the floor ({sizes.floor_steps} steps) it does not fit: arm {dropped} dropped")
    arms = design_arms(sizes, kept)
    seconds = group_seconds(sizes, rates, tuple(arms), steps)
    pretrain = spt_steps(sizes, steps)
    made = {"setting": sizes.setting, "arms": arms, "seeds": seeds(sizes), "steps": steps, "spt_steps": pretrain,
            "finetune_steps": steps - pretrain, "eval_steps": eval_steps(sizes, steps),
            "group_seconds": seconds, "total_seconds": seconds["total"], "budget_seconds": budget,
            "fits": seconds["total"] <= budget, "shrunk": history, "rates": asdict(rates), "sizes": asdict(sizes)}
    if sizes.poolings:
        made["poolings"] = dict(sizes.poolings)
    return made


def empty_runs(p: dict) -> list[dict]:
    """Every arm x seed of the plan ``p``, nothing evaluated yet: what a group cut or stopped before
    its first evaluation holds (every registered run, each with an empty curve)."""
    return [{"arm": arm, "seed": seed, "complete": False, "steps": run_steps(p, arm),
             "offset": p["spt_steps"] if base_arm(arm) in PRETRAINED else 0, "curve": []} for arm in p["arms"]
            for seed in p["seeds"]]


def eval_steps(sizes: Sizes, steps: int) -> list[int]:
    """The supervised steps at which every member is evaluated: ``eval_points`` evenly spaced to
    ``steps``, and the SPT arms' last finetuning step (of each pooling's, in a factorial)."""
    points = sizes.eval_points
    marks = {max(1, round(k * steps / points)) for k in range(1, points + 1)}
    ends = {n - spt_steps(sizes, steps) for _, n in sizes.poolings} | {steps - spt_steps(sizes, steps)}
    return sorted(marks | ends - {0})


# ------------------------------------------------------------------------------ the deadline
def data_seconds(sizes: Sizes, carried: bool) -> tuple[float, str]:
    """The dry run's data seconds: reading a carried set, or generating it on ``workers`` processes."""
    if carried:
        return ASSUMED_LOAD, "carried (--data), assumed"
    images = sizes.n_train + sizes.n_val + sizes.n_test
    return (images * sizes.seconds_per_image / sizes.workers,
            f"generated on {sizes.workers} processes, assumed {1e3 * sizes.seconds_per_image:.1f} ms an image")


def bench_seconds(sizes: Sizes, rates: Rates) -> float:
    """Seconds of the bench (:func:`spt_theory.lra.gpu.twin_train.bench`): ``bench_steps`` + 3 warm-up
    steps of the full supervised ensemble on both attention paths and of the smallest, of the SPT
    ensemble, one evaluation, and :data:`ASSUMED_BENCH_FIXED`."""
    large, small = len(design_arms(sizes)) * sizes.group, len(design_arms(sizes, ("scratch", "spt"))) * sizes.group
    steps = sizes.bench_steps + 3
    supervised = steps * (3 * rates.overhead + (2 * large + small) * rates.per_member)
    spt = steps * (rates.overhead + sizes.group * rates.per_member_spt)
    return supervised + spt + large * rates.eval_per_member + ASSUMED_BENCH_FIXED


def training_budget(wall: float, elapsed: float) -> float:
    """The seconds the training is planned into when ``elapsed`` of ``wall`` are gone."""
    return SAFETY * (wall - elapsed - FINISH_SECONDS)


def dry_run(sizes: Sizes, wall: float, carried: bool) -> dict:
    """The plan the script would make at the assumed rates, with its start-up counted: the
    seconds of every phase from the script's start and where the run ends."""
    rates = assumed_rates(sizes)
    data, data_basis = data_seconds(sizes, carried)
    bench = bench_seconds(sizes, rates)
    inits = ASSUMED_INIT * sizes.seeds if "proximity2d" in sizes.arms else 0.0
    setup = ASSUMED_START + data + inits + bench
    p = plan(sizes, rates, training_budget(wall, setup))
    ends = setup + p["total_seconds"]
    phases = {"start": ASSUMED_START, "data": data, **({"inits": inits} if inits else {}), "bench": bench}
    return {**p, "wall": wall, "phases": phases,
            "data_basis": data_basis, "ends": ends, "inside": p["fits"] and ends <= wall - FINISH_SECONDS}


def format_plan(p: dict) -> str:
    s, g = p["sizes"], p["group_seconds"]
    lines = [f"GPU twin ({p['setting']}): 1-layer Pathfinder-{s['side']} contour {s['contour_length']}"
             + (" balanced" if s["balanced"] else "")
             + f" (width {s['d_model']}, {s['heads']} heads, FF {s['ff']}, batch {s['batch']}), "
             f"{s['n_train']} train / {s['n_val']} val / {s['n_test']} test images",
             f"arms: {', '.join(p['arms'])} x {len(p['seeds'])} seeds ({', '.join(map(str, p['seeds']))}), "
             f"one stacked ensemble of {len(p['arms']) * len(p['seeds'])} members",
             ("steps per arm: " + (", ".join(f"{k} pooling {v}" for k, v in p["poolings"].items())
                                   + f" (SPT arms: {p['spt_steps']} SPT, shared by the poolings, + the rest finetune)"
                                   if p.get("poolings") else
                                   f"{p['steps']} (SPT arms: {p['spt_steps']} SPT + {p['finetune_steps']} finetune)")
              + f"; evaluations at {', '.join(map(str, p['eval_steps']))}"),
             f"throughput: {p['rates']['basis']}: {1e3 * p['rates']['per_member']:.3f} ms a model-step, "
             f"{1e3 * p['rates']['overhead']:.1f} ms an ensemble step",
             f"training: pretraining {g['pretrain']:.1f} s + supervised {g['supervised']:.1f} s + evaluations "
             f"{g['evaluate']:.1f} s = {g['total']:.1f} s of {p['budget_seconds']:.1f} s planned: "
             + ("fits" if p["fits"] else "DOES NOT FIT (the run does not train)")]
    lines += [f"shrunk: {h}" for h in p["shrunk"]] or ["shrunk: nothing (the full design fits)"]
    if "phases" in p:
        ph = p["phases"]
        lines += [f"wall {p['wall']:.0f} s from the script's start: start {ph['start']:.1f} s (assumed) + data "
                  f"{ph['data']:.1f} s ({p['data_basis']}) + "
                  + (f"proximity2d inits {ph['inits']:.1f} s (assumed {ASSUMED_INIT:g} s a seed) + " if "inits" in ph
                     else "") + f"bench {ph['bench']:.1f} s, then the training planned "
                  f"into {SAFETY:.0%} of the rest less {FINISH_SECONDS:.0f} s for the finish",
                  f"ends at {p['ends']:.1f} s of {p['wall']:.0f} s: "
                  + ("inside" if p["inside"] else "NOT INSIDE")
                  + f" (a check at every evaluation cuts the run if it falls behind, by "
                    f"{p['wall'] - FINISH_SECONDS:.0f} s at the latest)"]
    return "\n".join(lines)
