"""The registry of LRA experiments (spt_theory/lra/designs.py): every experiment's setting is what
its committed evidence was made with, the CPU setting is written there only (the escape-race
script's literal command line checked against it), and decide, the race and the smoke run read
their experiments and settings from it."""

import json
import re
import shlex
from dataclasses import replace

import pytest
from helpers import REPO

from spt_theory import evidence
from spt_theory.claims import records
from spt_theory.core.args import SETTING_ALIASES
from spt_theory.lra import decide, designs, race, smoke
from spt_theory.lra.__main__ import parse_args
from spt_theory.lra.sweep_cells import cells as parse_cells

COMMITTED = sorted(p.stem for p in evidence.path(evidence.LRA, "decide").glob("*.json"))
"""The decide experiments with committed evidence."""


def _committed(*parts: str) -> dict:
    return json.loads(evidence.path(*parts).read_text())


def _spelled_now(pairs) -> list[tuple[str, str]]:
    return [(SETTING_ALIASES.get(name, name), value) for name, value in pairs]


def test_every_committed_decide_experiment_is_registered():
    assert COMMITTED and set(COMMITTED) <= set(designs.decide_names())
    assert all(designs.EXPERIMENTS[name].claims for name in COMMITTED)  # committed evidence some claim reads


@pytest.mark.parametrize("name", COMMITTED)
def test_each_experiment_is_what_its_committed_evidence_was_made_with(name):
    found, experiment = _committed(evidence.LRA, "decide", f"{name}.json"), designs.EXPERIMENTS[name]
    assert [tuple(p) for p in found["options"]["overrides"]] == list(experiment.overrides)
    assert found["task"] == experiment.task and found["registered"] == experiment.registered
    assert found["data"]["fingerprint"] == experiment.fingerprint
    assert {k: found["data"][k] for k in experiment.data_sizes} == experiment.data_sizes
    assert {k: found["data_source"][k] for k in ("generator", "settings")} == experiment.source
    assert found["options"]["pretrain_epochs"] == experiment.pretrain_epochs
    assert found["options"]["finetune_epochs"] == (experiment.finetune_epochs or 1)
    assert set(found["seeds"]) <= set(experiment.seeds)
    for row in found["cells"]:
        (spec,) = [s for s in experiment.arms if parse_cells([], [s])[0] == row["cell"]]
        assert {run["curve"][-1]["step"] for run in row["runs"]} == {experiment.arms[spec]}
    decide.conform(experiment, found, name)  # and the registry's own field-by-field check holds it


def test_the_race_and_the_sweeps_are_what_their_committed_evidence_was_made_with():
    found = _committed(evidence.RACE, "pathfinder16.json")
    assert [tuple(p) for p in found["options"]["overrides"]] == list(designs.RACE.overrides)
    assert found["data"]["fingerprint"] == designs.RACE.fingerprint
    assert {k: found["data"][k] for k in designs.RACE.data_sizes} == designs.RACE.data_sizes
    assert found["rules"]["registered"] == designs.RACE.registered and tuple(found["seeds"]) == designs.RACE.seeds
    assert found["rules"]["total_steps"] == designs.RACE.arms["recipe=spt"]
    assert found["rules"]["pretrain_steps"] == designs.RACE.pretrain_epochs * 500
    for task, setting in (("pathfinder", designs.CONTOUR6_TEST2K), ("listops", designs.LISTOPS_TEST1K)):
        sweep = _committed(evidence.LRA, f"{task}.json")  # the L1-L4 sweeps
        assert [tuple(p) for p in sweep["options"]["overrides"]] == list(setting.overrides)
        assert sweep["data"]["fingerprint"] == setting.data.fingerprint
        assert {k: sweep["data"][k] for k in setting.data.sizes} == setting.data.sizes


def test_every_experiment_names_its_registration_and_claims_that_exist():
    for experiment in designs.EXPERIMENTS.values():
        assert (REPO / experiment.registered).is_file(), experiment.name
        assert set(experiment.claims) <= set(records.TABLE), experiment.name
        if experiment.claims and experiment.runner == "decide":
            assert experiment.registered in records.DOCUMENTS, experiment.name
        for seeds, level in experiment.looks:
            assert set(seeds) <= set(experiment.seeds) and 0.5 < level < 1
        assert experiment.setting is designs.SETTINGS[experiment.setting.name]


def test_the_registry_refuses_a_name_twice_an_unregistered_setting_and_stray_seeds():
    l1b = designs.EXPERIMENTS["l1b"]
    with pytest.raises(ValueError, match="registered already"):
        designs.register_experiment(l1b)
    with pytest.raises(ValueError, match="not registered"):
        designs.register_experiment(replace(l1b, name="refused", setting=replace(l1b.setting, name="nowhere")))
    with pytest.raises(ValueError, match="only"):
        designs.register_experiment(replace(l1b, name="refused", only=(("recipe=spt", (999,)),)))
    with pytest.raises(ValueError, match="registered already"):
        designs.register_setting(designs.CONTOUR3)
    with pytest.raises(ValueError, match="not in the base"):
        designs.pairs(pooling="max")
    assert "refused" not in designs.EXPERIMENTS


# ------------------------------------------------------------------------- written once
CPU_SETTING = re.compile(r"d_model\W{1,4}64\b(?=.{0,200}?\b(?:d_)?ff\W{1,4}128\b)(?=.{0,300}?lr_finetune\W{1,4}1e-3)"
                         r"(?=.{0,300}?warmup_steps\W{1,4}100\b)", re.S)
"""The CPU setting spelled as code or a command line: width 64, FF 128, lr 1e-3 and warm-up 100 together."""
ALLOWED = {"spt_theory/lra/designs.py": "the registry",
           "scripts/escape_race.sh": "a bash script (its command line is checked against the registry below)"}


def test_the_cpu_setting_is_written_in_the_registry_only():
    found = set()
    for path in [*(REPO / "spt_theory").rglob("*.py"), *(REPO / "scripts").glob("*")]:
        if path.is_file() and CPU_SETTING.search(path.read_text(errors="replace")):
            found.add(str(path.relative_to(REPO)))
    assert found == set(ALLOWED), "the CPU LRA setting written outside spt_theory/lra/designs.py: read it from there"
    assert CPU_SETTING.search("--set d_model=64 --set n_heads=4 --set d_ff=128 --set lr_finetune=1e-3 "
                              "--set warmup_steps=100")


def test_the_escape_race_script_runs_the_registered_race():
    text = (REPO / "scripts" / "escape_race.sh").read_text()
    model = shlex.split(re.search(r"^MODEL=\((.*?)\)$", text, re.S | re.M).group(1).replace("\\\n", " "))
    pairs = [tuple(model[i + 1].split("=", 1)) for i, word in enumerate(model) if word == "--set"]
    assert _spelled_now(pairs) == _spelled_now(designs.RACE.overrides)
    assert model[model.index("--task") + 1] == designs.RACE.task and model[model.index("--layers") + 1] == "1"
    assert f"SEEDS=({' '.join(map(str, designs.RACE.seeds))})" in text
    assert f"--finetune-epochs {race.SCRATCH_EPOCHS}\n" in text
    assert f"--epochs {designs.RACE.pretrain_epochs} --finetune-epochs {designs.RACE.finetune_epochs};" in text
    assert designs.RACE.fingerprint in text


# ------------------------------------------------------------------------- read from the registry
def test_decide_the_race_and_the_smoke_run_read_the_registry(tmp_path):
    for step in ("run", "collect"):
        with pytest.raises(SystemExit):
            parse_args(["decide", step, "--experiment", "race", "--out", str(tmp_path), "--data-dir", str(tmp_path)])
    legacy = ("l1b", "l4b", "l3b", "l6", "l6s", "l1s", "l4s", "l3s", "l7s", "l6f", "fmean", "fmax", "fdepth", "l3p")
    assert designs.decide_names()[:len(legacy)] == legacy  # the names running lanes and committed evidence use
    for name in legacy:
        args = parse_args(["decide", "collect", "--experiment", name, "--out", str(tmp_path)])
        experiment = designs.EXPERIMENTS[args.experiment]
        options = decide.options(experiment, tmp_path, tmp_path)
        assert options.overrides is experiment.setting.overrides and options.task == experiment.task
        assert decide.sweep_name(name, 7) == f"decide-{name}-s7"
    assert race.OVERRIDES is designs.RACE.overrides and race.options(tmp_path, tmp_path).overrides is race.OVERRIDES
    registered = (designs.RACE.seeds, designs.RACE.budgets, designs.RACE.fingerprint)
    assert registered == (race.SEEDS, race.BUDGETS, race.FINGERPRINT)
    assert smoke.OVERRIDES is designs.SETTINGS["listops_smoke"].overrides
    assert {f"n_{k}": v for k, v in smoke.SIZES.items()} == designs.SETTINGS["listops_smoke"].data.sizes


def test_settings_share_the_cpu_model_and_differ_where_they_say():
    for setting in designs.SETTINGS.values():
        values = dict(_spelled_now(setting.overrides))
        assert {k: values[k] for k in ("d_model", "n_heads", "d_ff", "lr_finetune")} == dict(designs.CPU_MODEL[:4])
        assert setting.name.replace("_", "").isalnum() and setting.name == setting.name.lower()
        assert setting.data.sizes.keys() == {"n_train", "n_val", "n_test"}
    assert dict(designs.CONTOUR3_MAX.overrides)["pooling"] == "max"
    generated = designs.CONTOUR3.data.settings or {}
    assert dict(designs.CONTOUR3.overrides)["contour_length"] == "3" == str(generated["contour_length"])
