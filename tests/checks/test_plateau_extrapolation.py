"""Claims P6, P7 (the n = 400 plateau prediction against the runs at n = 400): all three seeds inside
the committed interval PASS, one outside FAIL, no run INCONCLUSIVE with the command that runs them,
no prediction file an ERROR row; the n = 400 runs are what the plateau command trains."""

import json
import shutil

import pytest

from spt_theory import evidence
from spt_theory.checks import plateau_extrapolation, plateau_grid
from spt_theory.checks import plateau_prediction as pp
from spt_theory.claims.registry import Context
from spt_theory.plateau import design, summary
from spt_theory.verify import main


@pytest.fixture
def root(tmp_path):
    """A copy of the committed evidence without its runs at n = 400 (the tests add their own)."""
    out = tmp_path / "evidence"
    shutil.copytree(evidence.root(), out, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    path = out / evidence.PLATEAU / design.SUMMARY.name
    tree = json.loads(path.read_text())
    tree["runs"] = [r for r in tree["runs"] if r["length"] != design.PREDICTED]
    path.write_text(json.dumps(tree))
    return out


def test_the_committed_runs_at_n_400_refute_both_claims_with_their_first_seed():
    """Seed 0 of each (2026-12-02): AdamW escapes at 5400 (< 15030), SPT solves at 1000 (< 1880)."""
    for check in (plateau_extrapolation.check_p6, plateau_extrapolation.check_p7):
        m = check(Context())
        assert m.verdict == "FAIL" and list(m.details["per_seed"]) == [0]
        assert m.details["per_seed"][0]["where"] == "outside" and "need not run" in m.lines[0]


def _add_runs(root, kind: str, values: list[float], capped: tuple[bool, ...] = (False, False, False)) -> None:
    path = root / evidence.PLATEAU / design.SUMMARY.name
    tree = json.loads(path.read_text())
    cap = design.PREDICTED_ADAMW_CAP if kind == "scratch" else design.PREDICTED_SPT_CAP
    for seed, (value, c) in enumerate(zip(values, capped)):
        tree["runs"].append({"kind": kind, "length": 400, "seed": seed, "optimiser": "adamw", "qk_scale": 1.0,
                             "cap": cap, "value": cap if c else round(value), "capped": c, "lr": 1e-3, "key": "test",
                             "seconds": 1.0})
    path.write_text(json.dumps(tree))


CASES = {"P6": ("scratch", "adamw_escape", plateau_extrapolation.check_p6),
         "P7": ("spt", "spt_steps_to_95", plateau_extrapolation.check_p7)}


@pytest.mark.parametrize("claim_id", CASES)
def test_no_run_at_n_400_is_inconclusive_with_the_command(claim_id, root):
    m = CASES[claim_id][2](Context(evidence_root=root))
    assert m.verdict == "INCONCLUSIVE" and m.measured == "no run"
    assert m.inconclusive == (f"no n = 400 run yet (prediction committed in bd8a28f; run: "
                              f"{design.PREDICTED_COMMAND})")
    lo, hi = pp.load(pp.PREDICTION)["predictions"][CASES[claim_id][1]]["interval"]
    assert m.threshold == f"all 3 seeds in [{lo:.0f}, {hi:.0f}]"
    assert any("alternative" in line for line in m.lines)


@pytest.mark.parametrize("claim_id", CASES)
def test_three_seeds_inside_pass_one_outside_fails(claim_id, root, tmp_path):
    kind, key, check = CASES[claim_id]
    lo, hi = pp.load(pp.PREDICTION)["predictions"][key]["interval"]
    inside = [lo * 1.01, (lo * hi) ** 0.5, hi * 0.99]
    _add_runs(root, kind, inside)
    assert check(Context(evidence_root=root)).verdict == "PASS"
    other = tmp_path / "other"
    shutil.copytree(root, other)
    path = other / evidence.PLATEAU / design.SUMMARY.name
    tree = json.loads(path.read_text())
    tree["runs"] = [r for r in tree["runs"] if r["length"] != design.PREDICTED]
    path.write_text(json.dumps(tree))
    _add_runs(other, kind, [inside[0], inside[1], hi * 1.05])
    m = check(Context(evidence_root=other))
    assert m.verdict == "FAIL" and m.details["per_seed"][2]["where"] == "outside"


def test_a_capped_run_above_the_interval_is_outside_and_two_seeds_decide_nothing(root, tmp_path):
    _add_runs(root, "scratch", [20000, 30000, 0], capped=(False, False, True))
    assert plateau_extrapolation.check_p6(Context(evidence_root=root)).verdict == "FAIL"  # capped at 40000 > 37932
    tree = json.loads((root / evidence.PLATEAU / design.SUMMARY.name).read_text())
    tree["runs"] = [r for r in tree["runs"] if not (r["length"] == 400 and r["seed"] == 2)]
    (root / evidence.PLATEAU / design.SUMMARY.name).write_text(json.dumps(tree))
    m = plateau_extrapolation.check_p6(Context(evidence_root=root))
    assert m.verdict == "INCONCLUSIVE" and m.inconclusive.startswith("2 of 3 seeds at n = 400 inside")


def test_runs_at_n_400_leave_p1_to_p5_as_recorded(root):
    before = plateau_grid.grid_of(Context(evidence_root=root))
    _add_runs(root, "scratch", [39999, 39999, 39999])  # under the cap (40000): a value over it is refused
    _add_runs(root, "spt", [31, 31, 31])
    after = plateau_grid.grid_of(Context(evidence_root=root))
    for kind in ("scratch", "spt"):
        assert plateau_grid.cells(after, kind) == plateau_grid.cells(before, kind)
    for claim_id in ("P1", "P5"):
        from spt_theory.claims.registry import REGISTRY

        m = REGISTRY[claim_id].check(Context(evidence_root=root))
        assert m.measured == REGISTRY[claim_id].check(Context()).measured


def test_a_missing_prediction_is_an_error_row(root, tmp_path, capsys):
    (root / evidence.PLATEAU / pp.NAME).unlink()
    report = tmp_path / "report.json"
    code = main(["--only", "P6", "P7", "--evidence", str(root), "--no-progress", "--json", str(report)])
    rows = {r["id"]: r for r in json.loads(report.read_text())["claims"]}
    assert code == 1 and {r["verdict"] for r in rows.values()} == {"ERROR"}
    assert all("prediction_n400.json: missing" in r["details"]["evidence_error"] for r in rows.values())
    assert "Traceback" not in capsys.readouterr().out


def test_the_plateau_command_runs_the_registered_n_400_experiment():
    """3 seeds, SPT searched on the sqrt 2 ladder up to above the interval, AdamW capped above it;
    the grid of n = 25-200 unchanged."""
    tree = pp.load(pp.PREDICTION)
    runs = design.grid((400,))
    spt = [r for r in runs if r.kind == "spt"]
    adamw = [r for r in runs if r.kind == "scratch"]
    assert [r.seed for r in spt] == [r.seed for r in adamw] == tree["seeds"]
    assert all(r.optimiser == "adamw" and r.qk_scale == 1.0 for r in runs)
    assert min(r.cap for r in adamw) >= tree["predictions"]["adamw_escape"]["decides_with_cap_at_least"]
    assert design.PREDICTED_ADAMW_CAP % design.eval_every(400) == 0
    ladder = design.spt_grid(spt[0])
    assert ladder[: len(design.SPT_GRID)] == design.SPT_GRID
    assert ladder[-1] >= tree["predictions"]["spt_steps_to_95"]["decides_with_spt_grid_up_to_at_least"]
    assert [g for g in ladder if g <= tree["predictions"]["spt_steps_to_95"]["interval"][1]][-1] < ladder[-1]
    assert all(r.length != 400 for r in design.grid()) and len(design.grid()) == 45
    found, _ = design.spt_search(lambda s: s >= 2828, ladder)
    assert found == 2828
    assert design.spt_search(lambda s: False, ladder)[0] is None


def test_promote_at_n_400_refuses_when_nothing_has_finished(tmp_path):
    from spt_theory.util.files import InputError

    committed = design.SUMMARY.read_bytes()
    with pytest.raises(InputError, match="no run at n = 400 has finished"):
        summary.promote_predicted(tmp_path, tmp_path / "plateau_runs.json")
    assert design.SUMMARY.read_bytes() == committed
