"""The LRA experiments' registry: each named setting written once, each experiment one record
([docs/add-an-experiment.md]).

A :class:`Setting` is what a run is made at: its task, the model and optimiser as ``--set`` pairs
(in the spelling its evidence recorded them: the contour-6 and ListOps designs of 2026-12-02 spell
``heads`` / ``ff``, later ones ``n_heads`` / ``d_ff``; the values are :data:`CPU_MODEL`'s) and its
:class:`Data` (generator and settings, the sizes, the registered content fingerprint).  An
:class:`Experiment` is what was registered: its setting, arms (``--cell`` specs) with their
optimiser steps (SPT's counted), seeds (and the arms run at some seeds only), SPT and finetuning
epochs, its sequential looks and evaluation points where it has them, its registration document
and the claims that judge it.  ``lra decide`` runs, collects and promotes the experiments whose
``runner`` is ``decide`` (:mod:`spt_theory.lra.decide`); the escape race (:data:`RACE`, claim L5)
is trained by ``scripts/escape_race.sh`` and collected by :mod:`spt_theory.lra.race`; the CPU smoke
run (:mod:`spt_theory.lra.smoke`) reads :data:`SETTINGS` too.

Adding an experiment is one :func:`register_experiment` call below (and, for a new setting, one
:func:`register_setting`); the tests of ``tests/lra/test_designs.py`` hold every experiment to its
committed evidence and every setting to being written here only.
"""

from __future__ import annotations

from dataclasses import dataclass

CPU_MODEL = (("d_model", "64"), ("n_heads", "4"), ("d_ff", "128"), ("lr_finetune", "1e-3"), ("warmup_steps", "100"))
"""The CPU model and optimiser (1 layer, batch 32 from the task config): width 64, 4 heads, FF 128,
supervised lr 1e-3, warm-up 100 steps (``checks/lra.py`` SETTINGS), as ``--set`` pairs."""
OLD_SPELLING = {"n_heads": "heads", "d_ff": "ff"}
"""The 2026-12-02 designs' spellings of two fields (``core.args.SETTING_ALIASES`` reads them)."""


def pairs(*extra: tuple[str, str], base=CPU_MODEL, spelling: dict[str, str] | None = None,
          **changed: str) -> tuple[tuple[str, str], ...]:
    """``base`` with the values of ``changed`` replaced in place, then ``extra`` appended; field names
    respelled by ``spelling``.

    >>> pairs(("lr_pretrain", "3e-3"), spelling=OLD_SPELLING)[1:3]
    (('heads', '4'), ('ff', '128'))
    >>> dict(pairs(warmup_steps="63"))["warmup_steps"]
    '63'
    """
    unknown = set(changed) - {name for name, _ in base}
    if unknown:
        raise ValueError(f"pairs: {sorted(unknown)} not in the base setting (append them as extra pairs)")
    made = tuple((name, changed.get(name, value)) for name, value in base) + extra
    return tuple(((spelling or {}).get(name, name), value) for name, value in made)


@dataclass(frozen=True)
class Data:
    """A setting's data: the generator and its settings (the data folder's ``GENERATED.json``
    marker; None: not registered), the split sizes and the registered content fingerprint."""

    generator: str
    settings: dict | None
    sizes: dict
    fingerprint: str | None

    @property
    def source(self) -> dict | None:
        """``{"generator", "settings"}`` the data's marker must hold (None: not checked)."""
        return None if self.settings is None else {"generator": self.generator, "settings": self.settings}


@dataclass(frozen=True)
class Setting:
    """A named setting (module doc): task, ``--set`` pairs, data."""

    name: str
    task: str
    overrides: tuple[tuple[str, str], ...]
    data: Data
    what: str = ""


@dataclass(frozen=True)
class Experiment:
    """One registered experiment (module doc)."""

    name: str
    setting: Setting
    seeds: tuple[int, ...]
    arms: dict[str, int]
    """The ``--cell`` spec of each arm and its registered optimiser steps (SPT's counted)."""
    pretrain_epochs: int | None = None
    finetune_epochs: int | None = None
    only: tuple[tuple[str, tuple[int, ...]], ...] = ()
    """Arms run at some seeds only: (spec, seeds)."""
    controls: tuple[str, ...] = ("majority",)
    """Untrained baselines computed beside the arms (the majority class: the chance gates)."""
    registered: str = ""
    """The pre-registration document that fixes it."""
    claims: tuple[str, ...] = ()
    """The claims that judge its evidence."""
    looks: tuple[tuple[tuple[int, ...], float], ...] = ()
    """Sequential looks: (seeds, confidence level), in order."""
    budgets: tuple[int, ...] = ()
    """Evaluation points (optimiser steps) its claims read besides the arms' registered steps."""
    runner: str = "decide"
    """What trains and collects it: ``decide`` (``lra decide run / collect``) or ``race``."""

    @property
    def task(self) -> str:
        return self.setting.task

    @property
    def overrides(self) -> tuple[tuple[str, str], ...]:
        return self.setting.overrides

    @property
    def data_sizes(self) -> dict:
        return self.setting.data.sizes

    @property
    def source(self) -> dict | None:
        return self.setting.data.source

    @property
    def fingerprint(self) -> str | None:
        return self.setting.data.fingerprint

    def specs(self, seed: int) -> list[str]:
        """The ``--cell`` specs run at ``seed``."""
        only = dict(self.only)
        return [spec for spec in self.arms if spec not in only or seed in only[spec]]


SETTINGS: dict[str, Setting] = {}
EXPERIMENTS: dict[str, Experiment] = {}
"""Every registered experiment by name (``decide run --experiment NAME``: those of ``runner`` decide)."""


def register_setting(setting: Setting) -> Setting:
    """Enter ``setting``; ValueError for a name taken."""
    if setting.name in SETTINGS:
        raise ValueError(f"LRA setting {setting.name!r} is registered already")
    SETTINGS[setting.name] = setting
    return setting


def register_experiment(experiment: Experiment) -> Experiment:
    """Enter ``experiment``; ValueError for a name taken, a setting not registered, no registration
    document or arms, seeds an ``only`` entry names outside the experiment's."""
    if not experiment.name or experiment.name in EXPERIMENTS:
        raise ValueError(f"LRA experiment {experiment.name!r}: empty or registered already")
    if SETTINGS.get(experiment.setting.name) is not experiment.setting:
        raise ValueError(f"LRA experiment {experiment.name!r}: setting {experiment.setting.name!r} is not registered")
    if not experiment.registered or not experiment.arms or not experiment.seeds:
        raise ValueError(f"LRA experiment {experiment.name!r}: needs its registration document, arms and seeds")
    for spec, seeds in experiment.only:
        if spec not in experiment.arms or not set(seeds) <= set(experiment.seeds):
            raise ValueError(f"LRA experiment {experiment.name!r}: only {spec!r} at {seeds}: not its arm or seeds")
    if experiment.runner not in ("decide", "race"):
        raise ValueError(f"LRA experiment {experiment.name!r}: runner {experiment.runner!r}")
    EXPERIMENTS[experiment.name] = experiment
    return experiment


def decide_names() -> tuple[str, ...]:
    """The experiments ``lra decide`` runs (``--experiment`` choices), in registration order."""
    return tuple(name for name, e in EXPERIMENTS.items() if e.runner == "decide")


# ------------------------------------------------------------------------------- the settings
PATHFINDER16 = {"size": 16, "distractors": 2, "distractor_length": 3, "max_turn": 0.5235987755982988,
                "dash_fraction": 0.6, "match_distances": True}
"""The style of every generated Pathfinder-16 (``python -m synthetic.pathfinder``; contour length set per setting)."""
PATHFINDER16_SIZES = {"n_train": 16_000, "n_val": 2_000, "n_test": 10_000}
LISTOPS_SIZES = {"n_train": 5_000, "n_val": 500, "n_test": 5_000}
LISTOPS300 = {"train": 5_000, "val": 500, "test": 5_000, "min_len": 100, "max_len": 300}

CONTOUR6 = register_setting(Setting(
    "pathfinder16_contour6", "pathfinder",
    pairs(("lr_pretrain", "2e-3"), ("resolution", "16"), ("contour_length", "6"), spelling=OLD_SPELLING),
    Data("synthetic.pathfinder", {"n": 18_000, "seed": 1, **PATHFINDER16, "contour_length": 6, "n_test": 10_000},
         PATHFINDER16_SIZES, "d35786b9ce1cd0ef"),
    "Pathfinder-16, contour 6, matched marker distances; SPT lr 2e-3"))
CONTOUR6_TEST2K = register_setting(Setting(
    "pathfinder16_contour6_test2k", "pathfinder", CONTOUR6.overrides,
    Data("synthetic.pathfinder", None, {"n_train": 16_000, "n_val": 2_000, "n_test": 2_000}, "59dacef54da8ce04"),
    "the contour-6 model on the L1-L4 sweep's data (20,000 images, 2,000 of them test): the escape race's"))
CONTOUR3 = register_setting(Setting(
    "pathfinder16_contour3", "pathfinder",
    pairs(("lr_pretrain", "2e-3"), ("resolution", "16"), ("contour_length", "3")),
    Data("synthetic.pathfinder", {"n": 18_000, "seed": 3, **PATHFINDER16, "contour_length": 3, "balanced": True,
                                  "n_test": 10_000}, PATHFINDER16_SIZES, "09d407175fc401dd"),
    "Pathfinder-16, contour 3, balanced (python -m synthetic.pathfinder --out D/pathfinder16 --n 18000 "
    "--n-test 10000 --size 16 --contour-length 3 --distractors 2 --distractor-length 3 --match-distances "
    "--balanced --seed 3)"))
CONTOUR3_MEAN = register_setting(Setting("pathfinder16_contour3_mean", "pathfinder",
                                         (*CONTOUR3.overrides, ("pooling", "mean")), CONTOUR3.data,
                                         "the contour-3 setting with mean pooling set (the pooling factorial)"))
CONTOUR3_MAX = register_setting(Setting("pathfinder16_contour3_max", "pathfinder",
                                        (*CONTOUR3.overrides, ("pooling", "max")), CONTOUR3.data,
                                        "the contour-3 setting with max pooling (the pooling factorial)"))
LISTOPS = register_setting(Setting(
    "listops300", "listops", pairs(("lr_pretrain", "3e-3"), spelling=OLD_SPELLING),
    Data("synthetic.listops", {**LISTOPS300, "seed": 1}, LISTOPS_SIZES, "b7b7152b7c61f7af"),
    "ListOps of lengths 100-300 (generator seed 1); SPT lr 3e-3"))
LISTOPS_TEST1K = register_setting(Setting(
    "listops300_test1k", "listops", LISTOPS.overrides,
    Data("synthetic.listops", None, {"n_train": 5_000, "n_val": 500, "n_test": 1_000}, "48e7e12e2fef8dc0"),
    "the ListOps model on the L1-L4 sweep's data (1,000 test sequences)"))
LISTOPS_PLATEAU = register_setting(Setting(
    "listops_plateau", "listops", pairs(("lr_pretrain", "3e-3")),
    Data("synthetic.listops", {**LISTOPS300, "seed": 4}, LISTOPS_SIZES, "9379b5a7c8e90350"),
    "ListOps of lengths 100-300 (fresh data, generator seed 4) for the plateau design L3p"))
LISTOPS_SMOKE = register_setting(Setting(
    "listops_smoke", "listops", pairs(warmup_steps="63"),
    Data("synthetic.listops", {"train": 2_000, "val": 200, "test": 200, "min_len": 20, "max_len": 120, "seed": 0},
         {"n_train": 2_000, "n_val": 200, "n_test": 200}, None),
    "the CPU smoke run: short ListOps (20 < L < 120), one epoch of warm-up"))

# ---------------------------------------------------------------------------- the experiments
DECIDE_DOC = "docs/preregistration/2026-12-02-lra-decide.md"
CONTOUR3_DOC = "docs/preregistration/2026-12-04-lra-short-contour.md"
POOLING_DOC = "docs/preregistration/2026-12-05-pooling-factorial.md"
RACE_DOC = "docs/preregistration/2026-12-02-lra-verdicts-and-escape-race.md"

CONTOUR6_SCRATCH = "recipe=scratch,finetune_epochs=16"
"""The contour-6 equal-step scratch arm: 16 epochs = SPT's 6 + finetuning's 10 (8,000 steps)."""
CONTOUR6_ARMS = {CONTOUR6_SCRATCH: 8_000, "recipe=spt": 8_000}
CONTOUR3_EPOCHS = 40
"""The contour-3 designs' budget: 40 epochs of 500 steps = 20,000 optimiser steps per arm
(sized by the pilot, docs/preregistration/2026-12-04-lra-short-contour.md)."""
CONTOUR3_SCRATCH = f"recipe=scratch,finetune_epochs={CONTOUR3_EPOCHS}"
CONTOUR3_ARMS = {CONTOUR3_SCRATCH: 20_000, "recipe=spt": 20_000}
CONTOUR3_SEEDS = tuple(range(300, 308))
FACTORIAL_SEEDS = tuple(range(600, 608))


def sequential_looks(first: int, final_level: float = 0.95) -> tuple[tuple[tuple[int, ...], float], ...]:
    """The looks at 4 and 6 seeds (99%) and 8 seeds (``final_level``) from seed ``first``."""
    return ((tuple(range(first, first + 4)), 0.99), (tuple(range(first, first + 6)), 0.99),
            (tuple(range(first, first + 8)), final_level))


def factorial_arms(epochs: int, steps: int) -> dict[str, int]:
    """The five arms of one pooling of the factorial, ``epochs`` x 500 = ``steps`` each (SPT: 6 + the rest)."""
    return {f"recipe=scratch,finetune_epochs={epochs}": steps, "recipe=spt": steps, "recipe=spt,keep=qk": steps,
            f"recipe=scratch,freeze=qk,finetune_epochs={epochs}": steps,
            f"recipe=scratch,init=proximity2d,finetune_epochs={epochs}": steps}


def factorial_only(epochs: int) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Hybrid and frozen at 6 seeds, proximity init at 4 (the registration)."""
    return (("recipe=spt,keep=qk", tuple(range(600, 606))),
            (f"recipe=scratch,freeze=qk,finetune_epochs={epochs}", tuple(range(600, 606))),
            (f"recipe=scratch,init=proximity2d,finetune_epochs={epochs}", tuple(range(600, 604))))


# 2026-12-02: the contour-6 Pathfinder-16 and ListOps designs (DECIDE_DOC)
register_experiment(Experiment("l1b", CONTOUR6, tuple(range(100, 108)), CONTOUR6_ARMS, 6, 10,
                               registered=DECIDE_DOC, claims=("L1b", "L2b"), looks=sequential_looks(100)))
register_experiment(Experiment("l4b", CONTOUR6, tuple(range(100, 108)), {**CONTOUR6_ARMS, "recipe=spt,keep=qk": 8_000},
                               6, 10, registered=DECIDE_DOC, claims=("L4b",), looks=sequential_looks(100)))
register_experiment(Experiment("l3b", LISTOPS, tuple(range(100, 106)),
                               {"recipe=scratch,finetune_epochs=20": 3_140,
                                "recipe=scratch,freeze=qk,finetune_epochs=20": 3_140},
                               registered=DECIDE_DOC, claims=("L3b",), budgets=(1_570, 3_140)))
register_experiment(Experiment("l6", CONTOUR6, (200, 201),
                               {"recipe=scratch,init=proximity,finetune_epochs=20": 10_000,
                                "recipe=scratch,layers=2,finetune_epochs=20": 10_000},
                               only=(("recipe=scratch,layers=2,finetune_epochs=20", (200,)),),
                               registered=DECIDE_DOC, claims=("L6",)))
# 2026-12-04: the contour-3 Pathfinder-16 (CONTOUR3_DOC) and the ListOps plateau design
register_experiment(Experiment("l6s", CONTOUR3, (400, 401),
                               {f"recipe=scratch,init=proximity,finetune_epochs={CONTOUR3_EPOCHS}": 20_000},
                               registered=CONTOUR3_DOC, claims=("L6s",)))
register_experiment(Experiment("l1s", CONTOUR3, CONTOUR3_SEEDS, CONTOUR3_ARMS, 6, CONTOUR3_EPOCHS - 6,
                               registered=CONTOUR3_DOC, claims=("L1s", "L2s"), looks=sequential_looks(300)))
register_experiment(Experiment("l4s", CONTOUR3, CONTOUR3_SEEDS, {**CONTOUR3_ARMS, "recipe=spt,keep=qk": 20_000}, 6,
                               CONTOUR3_EPOCHS - 6, registered=CONTOUR3_DOC, claims=("L4s",),
                               looks=sequential_looks(300)))
register_experiment(Experiment("l3s", CONTOUR3, CONTOUR3_SEEDS,
                               {CONTOUR3_SCRATCH: 20_000,
                                f"recipe=scratch,freeze=qk,finetune_epochs={CONTOUR3_EPOCHS}": 20_000},
                               registered=CONTOUR3_DOC, claims=("L3s",)))
register_experiment(Experiment("l7s", CONTOUR3, tuple(range(300, 306)),
                               {f"recipe=scratch,layers=2,finetune_epochs={CONTOUR3_EPOCHS}": 20_000,
                                "recipe=spt,layers=2": 20_000}, 6, CONTOUR3_EPOCHS - 6,
                               registered=CONTOUR3_DOC, claims=("L7s",), looks=((tuple(range(300, 306)), 0.95),)))
# 2026-12-05: the pooling factorial (POOLING_DOC)
register_experiment(Experiment("l6f", CONTOUR3_MAX, tuple(range(600, 604)),
                               {"recipe=scratch,init=proximity2d,finetune_epochs=6": 3_000},
                               registered=POOLING_DOC, claims=("L6f",)))
register_experiment(Experiment("fmean", CONTOUR3_MEAN, FACTORIAL_SEEDS, factorial_arms(24, 12_000), 6, 18,
                               only=factorial_only(24), registered=POOLING_DOC, looks=sequential_looks(600),
                               claims=("L1f", "L1fr", "L2f", "L3f", "L4f", "L8f", "L9f")))
register_experiment(Experiment("fmax", CONTOUR3_MAX, FACTORIAL_SEEDS, factorial_arms(16, 8_000), 6, 10,
                               only=factorial_only(16), registered=POOLING_DOC, claims=("L9f",)))
register_experiment(Experiment("fdepth", CONTOUR3_MEAN, tuple(range(600, 606)),
                               {"recipe=scratch,layers=2,finetune_epochs=24": 12_000, "recipe=spt,layers=2": 12_000},
                               6, 18, registered=POOLING_DOC, claims=("L7f",)))
register_experiment(Experiment("l3p", LISTOPS_PLATEAU, tuple(range(110, 116)),
                               {"recipe=scratch,finetune_epochs=60": 9_420,
                                "recipe=scratch,freeze=qk,finetune_epochs=60": 9_420},
                               registered=CONTOUR3_DOC, claims=("L3p",)))
# 2026-12-02: the escape race (RACE_DOC): scratch 40 epochs against SPT 6 + finetuning 34
RACE = register_experiment(Experiment("race", CONTOUR6_TEST2K, (0, 1, 2),
                                      {"recipe=scratch,finetune_epochs=40": 20_000, "recipe=spt": 20_000}, 6, 34,
                                      controls=(), registered=RACE_DOC, claims=("L5",),
                                      budgets=(5_000, 10_000, 20_000), runner="race"))
