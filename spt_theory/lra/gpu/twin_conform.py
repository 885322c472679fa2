"""A GPU twin's evidence held to its registration, field by field (issue 57): what ``python -m
spt_theory.lra gpu promote`` and the G checks (:mod:`spt_theory.checks.gpu_twin`,
:mod:`spt_theory.checks.gpu_factorial`) refuse, one line a field, as ``lra.decide.conform`` holds
the CPU designs.  Each setting's registration is its :class:`~spt_theory.lra.gpu.twin_plan.Sizes`
(``registered``: the document; :data:`~spt_theory.lra.gpu.twin_plan.FINGERPRINTS`: its data)."""

from __future__ import annotations

from spt_theory.lra.gpu.twin_plan import (
    FINGERPRINTS,
    REGISTERED,
    REGISTERED_SIZES,
    SETTINGS,
    STEP_QUANTUM,
    data_settings,
    design_arms,
    eval_steps,
    seeds,
    spt_steps,
)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _mapping(value) -> dict:
    return value if isinstance(value, dict) else {}


def config_pooling(setting: str):
    """The ``config.pooling`` a setting's evidence holds: ``mean``, or the factorial's list of readouts."""
    sizes = SETTINGS[setting]
    return [pooling for pooling, _ in sizes.poolings] if sizes.poolings else "mean"


def conform(found: dict) -> list[str]:
    """Every field in which the twin evidence ``found`` (``lra_schema.TwinEvidence``'s fields) differs
    from its setting's registration (``Sizes.registered``), one line each, in this order: the
    registration document, not tiny, the setting, the data (fingerprint of the registered data,
    sizes, generator settings), the plan's sizes (model, optimiser, data, design:
    :data:`REGISTERED_SIZES`), the model config, the seeds (500-507; 700-707 for the factorial), the
    arms (all, or the registered shrinking's drops in order), the steps (the full steps, or a
    multiple of 1,000 down to the floor; the floor once an arm is dropped; the factorial's never
    shrink) and each pooling's, the SPT and finetuning steps and the evaluation steps.  Empty when
    it conforms."""
    faults: list[str] = []
    setting = found.get("setting")
    registered = SETTINGS[setting].registered if setting in SETTINGS else "its registration"

    def need(ok: bool, field: str, value, want) -> None:
        if not ok:
            faults.append(f"field {field}: {_short(value)}, the registration's is {_short(want)} ({registered})")

    def same(field: str, value, want) -> None:
        need(type(value) is type(want) and value == want, field, value, want)

    if setting not in SETTINGS:
        same("registered", found.get("registered"), REGISTERED)
        same("tiny", found.get("tiny"), False)
        need(False, "setting", setting, " or ".join(sorted(SETTINGS)))
        return faults
    sizes = SETTINGS[setting]
    same("registered", found.get("registered"), sizes.registered)
    same("tiny", found.get("tiny"), False)
    data = _mapping(found.get("data"))
    same("data.fingerprint", data.get("fingerprint"), FINGERPRINTS[setting])
    for name in ("n_train", "n_val", "n_test"):
        same(f"data.{name}", data.get(name), getattr(sizes, name))
    need(data.get("settings") == data_settings(sizes), "data.settings", data.get("settings"), data_settings(sizes))
    p = _mapping(found.get("plan"))
    same("plan.setting", p.get("setting"), setting)
    made = _mapping(p.get("sizes"))
    for name in REGISTERED_SIZES:
        same(f"plan.sizes.{name}", made.get(name), getattr(sizes, name))
    for name in ("arms", "drop_order", "poolings", "first_seed", "data_source", "registered"):
        want = getattr(sizes, name)
        want = [list(x) if isinstance(x, tuple) else x for x in want] if isinstance(want, tuple) else want
        if name in made or sizes.poolings:  # the 2026-12-04 designs' plans before these fields: as registered
            same(f"plan.sizes.{name}", made.get(name), want)
    config = _mapping(found.get("config"))
    for name, value in (("d_model", sizes.d_model), ("heads", sizes.heads), ("ff", sizes.ff), ("layers", 1),
                        ("pooling", config_pooling(setting)), ("head", "linear")):
        same(f"config.{name}", config.get(name), value)
    same("plan.seeds", p.get("seeds"), seeds(sizes))
    arms = p.get("arms")
    order = sizes.drop_order
    allowed = [design_arms(sizes, [a for a in sizes.arms if a not in order[:k]]) for k in range(len(order) + 1)]
    need(arms in allowed, "plan.arms", arms, f"{design_arms(sizes)} less the first of {list(order)} dropped in order")
    if sizes.poolings:
        same("plan.poolings", p.get("poolings"), dict(sizes.poolings))
    steps = p.get("steps")
    if type(steps) is not int:
        need(False, "plan.steps", steps, sizes.steps)
        return faults
    dropped = isinstance(arms, list) and len(arms) < len(design_arms(sizes))
    if dropped:
        same("plan.steps", steps, sizes.floor_steps)
    else:
        need(steps == sizes.steps or (sizes.floor_steps <= steps < sizes.steps and steps % STEP_QUANTUM == 0),
             "plan.steps", steps, f"{sizes.steps}, or shrunk to a multiple of {STEP_QUANTUM} >= {sizes.floor_steps}")
    same("plan.spt_steps", p.get("spt_steps"), spt_steps(sizes, steps))
    same("plan.finetune_steps", p.get("finetune_steps"), steps - spt_steps(sizes, steps))
    same("plan.eval_steps", p.get("eval_steps"), eval_steps(sizes, steps))
    return faults
