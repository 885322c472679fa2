"""The escape race (claim L5) follows its registered rules: supported only when SPT escapes on every
seed within half of scratch's steps, refuted when scratch escapes first on two seeds, INCONCLUSIVE
otherwise (and while seeds are still running); its stages are read from the stage caches."""

import json

import pytest
import torch

from spt_theory.checks import race as rules
from spt_theory.claims.registry import Context
from spt_theory.evidence import EvidenceError, lra_schema, schema
from spt_theory.lra import race
from spt_theory.lra.runner import RunOptions, options_json
from spt_theory.training.cache import StageState, save_checkpoint
from spt_theory.util.files import InputError


def _arm(seed, arm, escape_at=None, level=0.5, end=race.TOTAL_STEPS, finished=True):
    """An arm whose validation accuracy is ``level`` until ``escape_at`` total steps, then 0.8."""
    start = race.PRETRAIN_EPOCHS * 500 if arm == "spt" else 0
    curve = []
    for step in range(start + 500, end + 1, 500):
        val = 0.8 if escape_at is not None and step >= escape_at else level
        curve.append({"step": step, "val_accuracy": val, "test_accuracy": val, "seconds": step * 0.1,
                      "flops": step * 1e9})
    return {"seed": seed, "arm": arm, "pretrain_steps": start, "curve": curve, "finished": finished, "cache": "k"}


def _evidence(arms):
    return {"schema_version": 1, "task": "pathfinder", "seeds": [0, 1, 2], "rules": {}, "config": {},
            "data": {"fingerprint": race.FINGERPRINT, "width": 256, "n_train": 16000, "n_val": 2000, "n_test": 2000},
            "arms": arms, "model_defaults": schema.model_defaults()}


def _verdict(pairs, **kwargs):
    arms = [a for s, (t_scratch, t_spt) in enumerate(pairs)
            for a in (_arm(s, "scratch", t_scratch, **kwargs), _arm(s, "spt", t_spt, **kwargs))]
    found = _evidence(arms)
    schema.parse(json.dumps(found), lra_schema.RaceEvidence, "race")
    return rules.judge(found)


def test_supported_only_when_spt_escapes_within_half_of_scratch_on_every_seed():
    assert _verdict([(12000, 5500), (None, 9000), (16000, 8000)])[0] == "PASS"  # capped scratch counts 20000
    assert _verdict([(12000, 5500), (None, 9000), (16000, 8500)])[0] == "INCONCLUSIVE"  # one seed > half
    assert _verdict([(12000, 5500), (None, None), (16000, 8000)])[0] == "INCONCLUSIVE"  # SPT never escapes


def test_refuted_when_scratch_escapes_at_or_before_spt_on_two_seeds():
    verdict, _, details, _ = _verdict([(6000, 6000), (5000, None), (None, 4000)])
    assert verdict == "FAIL" and [details["seeds"][s]["refutes"] for s in (0, 1, 2)] == [True, True, False]


def test_no_arm_leaving_the_plateau_is_inconclusive_with_the_next_step():
    verdict, _, _, reason = _verdict([(None, None)] * 3, level=0.55)
    assert verdict == "INCONCLUSIVE" and "no arm left the plateau" in reason and "2 layers" in reason


def test_a_running_race_decides_only_what_its_finished_seeds_force():
    arms = [_arm(0, "scratch", 6000), _arm(0, "spt", 9000), _arm(1, "scratch", 7000), _arm(1, "spt", None),
            _arm(2, "scratch", None, end=8000, finished=False), _arm(2, "spt", None, end=8000, finished=False)]
    assert rules.judge(_evidence(arms))[0] == "FAIL"  # two seeds already refute
    arms[2:4] = [_arm(1, "scratch", None, end=8000, finished=False), _arm(1, "spt", 4000, end=8000, finished=False)]
    verdict, _, details, reason = rules.judge(_evidence(arms))
    assert verdict == "INCONCLUSIVE" and "race incomplete: 1 of 3" in reason and details["decided"] == [0]


def test_the_early_stop_decides_a_seed_once_both_arms_stayed_above_70_for_1000_steps():
    scratch, spt = _arm(0, "scratch", 4000, end=6000, finished=False), _arm(0, "spt", 4000, end=6000, finished=False)
    assert rules.decided({"scratch": scratch, "spt": spt})
    assert not rules.decided({"scratch": _arm(0, "scratch", 5600, end=6000, finished=False), "spt": spt})


def test_secondary_gains_at_steps_seconds_and_flops():
    gains = race.secondary(_arm(0, "scratch", 12000), _arm(0, "spt", 6000))
    assert gains["5000"] == {"step": 0.0, "seconds": 0.0, "flops": 0.0}
    assert gains["10000"]["step"] == pytest.approx(30.0) and gains["20000"]["step"] == pytest.approx(0.0)


def test_missing_race_evidence_is_an_error(tmp_path):
    with pytest.raises(EvidenceError, match="pathfinder16.json: missing"):
        rules.check_l5(Context(evidence_root=tmp_path))


def test_the_stages_of_the_race_are_read_from_the_newest_checkpoint(tmp_path):
    model = torch.nn.Linear(1, 1)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.1)

    def stage(key, seed, objective, epochs, history, name):
        options = RunOptions(task="pathfinder", data_dir=tmp_path, layers=1, overrides=race.OVERRIDES, seed=seed,
                             finetune_epochs=epochs,
                             pretrain_epochs=race.PRETRAIN_EPOCHS if objective == "spt" else None)
        meta = {"task": "pathfinder", "options": options_json(options), "stage": {"objective": objective}}
        save_checkpoint(tmp_path / "cache" / key / name, model, optimiser,
                        StageState(len(history), 0, 0.0, history), meta)

    point = {"epoch": 1, "seconds": 1.0, "val_accuracy": 0.5, "test_accuracy": 0.5}
    stage("a", 0, "supervised", race.SCRATCH_EPOCHS, [point], "epoch_1.pt")
    stage("a", 0, "supervised", race.SCRATCH_EPOCHS, [point, {**point, "epoch": 2}], "last.pt")
    stage("b", 0, "spt", race.FINETUNE_EPOCHS, [{"epoch": 1, "seconds": 1.0, "val_loss": 1.0}], "epoch_1.pt")
    stage("c", 0, "supervised", 7, [point], "epoch_1.pt")  # another run's stage: not the race's
    found = race.find_stages(tmp_path)
    assert set(found) == {(0, "scratch"), (0, "pretrain")} and len(found[0, "scratch"][1]) == 2


def test_the_escape_race_figure_redraws_the_committed_race(tmp_path):
    from spt_theory.figures.context import FigureContext
    from spt_theory.figures.escape_race import escape_race

    paths = escape_race(FigureContext(out=tmp_path, progress=False))
    assert [p.suffix for p in paths] == [".png", ".pdf", ".json"]
    record = json.loads(paths[2].read_text())
    found = rules.load_race(FigureContext().evidence_root)
    assert len(record["arms"]) == len(found["arms"]) and record["claims"] == ["L5"]
    with pytest.raises(EvidenceError, match="pathfinder16.json: missing"):
        escape_race(FigureContext(out=tmp_path, evidence_root=tmp_path / "none", progress=False))


def _versioned(arms, platform="machine A"):
    return {**_evidence(arms), "versions": {"torch": "2.13.0", "platform": platform}}


def test_promoting_a_seed_run_elsewhere_keeps_the_committed_seeds():
    committed = _versioned([_arm(0, "scratch"), _arm(0, "spt"), _arm(1, "scratch", end=5000, finished=False)])
    found = _versioned([_arm(1, "scratch"), _arm(1, "spt"), _arm(2, "scratch", end=1000, finished=False)], "machine B")
    merged = race.merge(found, committed)
    got = {(a["seed"], a["arm"]): a for a in merged["arms"]}
    assert sorted(got) == [(0, "scratch"), (0, "spt"), (1, "scratch"), (1, "spt"), (2, "scratch")]
    assert got[1, "scratch"]["finished"] and got[1, "scratch"]["curve"][-1]["step"] == race.TOTAL_STEPS
    assert got[0, "scratch"]["versions"]["platform"] == "machine A"  # kept arms say where they ran
    assert "versions" not in got[1, "spt"] and merged["versions"]["platform"] == "machine B"


def test_an_arm_that_ran_less_far_here_does_not_replace_the_committed_one():
    committed = _versioned([_arm(0, "scratch")])
    found = _versioned([_arm(0, "scratch", end=1500, finished=False)])
    assert race.merge(found, committed)["arms"][0]["curve"][-1]["step"] == race.TOTAL_STEPS


@pytest.mark.parametrize("field", ["config", "data", "rules", "seeds"])
def test_evidence_of_another_race_is_never_merged(field):
    committed = _versioned([_arm(0, "scratch")])
    found = _versioned([_arm(1, "scratch")])
    found[field] = [0, 1] if field == "seeds" else {**found[field], "other": 1}
    with pytest.raises(InputError, match=field):
        race.merge(found, committed)
