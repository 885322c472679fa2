"""The GPU twin's training (:mod:`spt_theory.lra.gpu.twin`): the bench and one seed group.

A seed group: SPT pretraining of its seeds as one ensemble (head and nothing else fixed, as the
LRA runner's SPT stage), then one supervised ensemble of every arm x seed.  Every member starts
from its seed's random init (``torch.manual_seed(seed)``, then ``Encoder``: the same init in every
arm of a seed, as :meth:`spt_theory.lra.runner.LRARun.initial_model`), then per arm: ``spt`` takes
the encoder (W_Q W_K, W_V W_O, MLP, norms, embedding) from its seed's SPT member, ``hybrid_qk``
only W_Q, W_K, ``proximity`` gets :func:`~spt_theory.core.inits.grid_proximity_init`,
``frozen_qk`` keeps W_Q, W_K fixed.  The SPT arms finetune for ``steps - spt_steps`` steps and are
then fixed, the others train for ``steps``; a curve point's ``step`` counts SPT's steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from spt_theory.core.inits import grid_proximity_init
from spt_theory.core.model import Encoder, ModelConfig
from spt_theory.evidence import correctness
from spt_theory.lra.gpu.ensemble import Ensemble
from spt_theory.lra.gpu.twin_plan import Rates, Sizes
from spt_theory.training.loop import load_groups

ENCODER_GROUPS = ("qk", "vo", "mlp", "norm", "embed")
BENCH_STEPS = 3


def model_config(sizes: Sizes) -> ModelConfig:
    return ModelConfig(vocab_size=0, in_channels=2, n_classes=2, recon_classes=256, max_len=sizes.side ** 2,
                       d_model=sizes.d_model, n_heads=sizes.heads, d_ff=sizes.ff, n_layers=1, pooling="mean",
                       head="linear")


def seeded(sizes: Sizes, seed: int) -> Encoder:
    torch.manual_seed(seed)
    return Encoder(model_config(sizes))


def _timed_steps(ensemble: Ensemble, data: dict, sizes: Sizes, steps: int, device: str) -> float:
    ensemble.step(data["x_train"], data["y_train"], sizes.batch)  # warm-up
    _sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        ensemble.step(data["x_train"], data["y_train"], sizes.batch)
    _sync(device)
    return (time.perf_counter() - start) / steps


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def bench(sizes: Sizes, data: dict, device: str, members: tuple[int, int] | None = None) -> Rates:
    """Seconds per ensemble step at two ensemble sizes (supervised), one SPT size, and one
    evaluation, measured on ``device``: the plan's :class:`Rates` (``overhead`` and ``per_member``
    from the line through the two supervised sizes)."""
    small, large = members or (sizes.group, 5 * sizes.group)
    autocast = device == "cuda"
    times = {}
    for m in sorted({small, large}):
        ens = Ensemble([seeded(sizes, s) for s in range(m)], list(range(m)), "supervised", sizes.lr,
                       fixed=[("decoder",)] * m, device=device, autocast=autocast)
        times[m] = _timed_steps(ens, data, sizes, BENCH_STEPS, device)
    spt = Ensemble([seeded(sizes, s) for s in range(small)], list(range(small)), "spt", sizes.lr_pretrain,
                   fixed=[("head",)] * small, device=device, autocast=autocast)
    spt_time = _timed_steps(spt, data, sizes, BENCH_STEPS, device)
    _sync(device)
    start = time.perf_counter()
    ens.correct(data["x_val"], data["y_val"])
    ens.correct(data["x_test"], data["y_test"])
    _sync(device)
    eval_time = (time.perf_counter() - start) / large
    per_member = (times[large] - times[small]) / (large - small) if large != small else times[small] / small
    per_member = max(per_member, times[large] / large / 4)  # noise guard: never below a quarter of the mean
    overhead = max(0.0, times[large] - large * per_member)
    return Rates(overhead=overhead, per_member=per_member,
                 per_member_spt=max(per_member, (spt_time - overhead) / small), eval_per_member=eval_time,
                 basis=f"benched on {device}: {1e3 * times[small]:.1f} ms a step at {small} members, "
                       f"{1e3 * times[large]:.1f} ms at {large}")


def train_group(sizes: Sizes, p: dict, seeds: list[int], data: dict, device: str,
                stream: Callable[[list[dict]], None], say: Callable[[str], None], pretrained: bool) -> None:
    """Pretrain (if an SPT arm is planned) and train every arm of ``seeds``; ``stream(runs)`` at
    every evaluation and at the end (module doc)."""
    autocast = device == "cuda"
    spt_steps, steps = p["spt_steps"], p["steps"]
    spt_states = {}
    if pretrained:
        start = time.perf_counter()
        spt = Ensemble([seeded(sizes, s) for s in seeds], seeds, "spt", sizes.lr_pretrain,
                       fixed=[("head",)] * len(seeds), warmup_steps=sizes.warmup_steps, mask_ratio=sizes.mask_ratio,
                       device=device, autocast=autocast)
        for _ in range(spt_steps):
            spt.step(data["x_train"], data["y_train"], sizes.batch)
        losses = spt.masked_loss(data["x_val"][:1000])
        spt_states = {s: spt.member(i).state_dict() for i, s in enumerate(seeds)}
        say(f"seeds {seeds}: SPT {spt_steps} steps in {time.perf_counter() - start:.1f} s, masked val loss "
            + ", ".join(f"{v:.3f}" for v in losses))
        del spt
    members, fixed, runs = [], [], []
    for arm in p["arms"]:
        for s in seeds:
            model = seeded(sizes, s)
            if arm in ("spt", "hybrid_qk"):
                load_groups(model, spt_states[s], ENCODER_GROUPS if arm == "spt" else ("qk",), f"SPT seed {s}")
            if arm == "proximity":
                grid_proximity_init(model, side=sizes.side)
            members.append(model)
            fixed.append(("decoder", "qk") if arm == "frozen_qk" else ("decoder",))
            runs.append({"arm": arm, "seed": s, "complete": False, "steps": steps, "offset": spt_steps
                         if arm in ("spt", "hybrid_qk") else 0, "curve": []})
    ens = Ensemble(members, [r["seed"] for r in runs], "supervised", sizes.lr, fixed=fixed,
                   warmup_steps=sizes.warmup_steps, device=device, autocast=autocast)
    finetune = steps - spt_steps
    start = time.perf_counter()
    for step in range(1, steps + 1):
        losses = ens.step(data["x_train"], data["y_train"], sizes.batch)
        if step in p["eval_steps"]:
            val = ens.correct(data["x_val"], data["y_val"])
            test = ens.correct(data["x_test"], data["y_test"])
            for i, record in enumerate(runs):
                if ens.done[i]:
                    continue
                record["curve"].append({"step": step + record["offset"], "train_loss": round(float(losses[i]), 5),
                                        "val_accuracy": round(float(val[i].float().mean()), 5),
                                        "test_accuracy": round(float(test[i].float().mean()), 5),
                                        "test_correct": correctness.encode(test[i].cpu().numpy())})
            say(f"seeds {seeds}: step {step}/{steps} ({time.perf_counter() - start:.1f} s)")
        if step == finetune:
            for i, record in enumerate(runs):
                if record["offset"]:
                    ens.finish(i)
                    _close(record)
        if step in p["eval_steps"] or step == finetune:
            stream(runs)
    for record in runs:
        if not record["complete"]:
            _close(record)
    stream(runs)


def _close(record: dict) -> None:
    """Mark a run complete with its test accuracy at the best validation point."""
    record["complete"] = True
    if record["curve"]:
        best = max(record["curve"], key=lambda c: c["val_accuracy"])
        record.update(best_step=best["step"], test_accuracy=best["test_accuracy"], val_accuracy=best["val_accuracy"])
