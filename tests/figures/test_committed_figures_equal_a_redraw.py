"""Committed figures drawn from committed evidence only equal a redraw now (issue 50, item 8): the
numbers of each figure's JSON, redrawn from the package's evidence, are the committed JSON's."""

import json
import math
from pathlib import Path

import pytest

from spt_theory.figures.cli import main as figures_main

REPO = Path(__file__).resolve().parents[2]
FIGURES = {"lra_evidence": "lra/lra_evidence.json", "escape_race": "escape_race.json", "verdicts": "verdicts.json",
           "pooling_factorial": "pooling_factorial.json"}
"""The figures drawn from committed evidence alone, and their JSON under figures/."""


def _same(a, b, where="") -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        assert sorted(a) == sorted(b), f"{where}: keys {sorted(set(a) ^ set(b))}"
        for key in a:
            _same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), f"{where}: {len(a)} items, redraw {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), f"{where}: {a} committed, {b} redrawn"
    else:
        assert a == b, f"{where}: {a!r} committed, {b!r} redrawn"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FIGURES))
def test_a_committed_figure_is_its_redraw(name, tmp_path):
    assert figures_main(["--only", name, "--out", str(tmp_path), "--no-progress"]) == 0
    committed = json.loads((REPO / "figures" / FIGURES[name]).read_text())
    redrawn = json.loads((tmp_path / FIGURES[name]).read_text())
    for volatile in ("seconds", "written", "versions", "out"):
        committed.pop(volatile, None)
        redrawn.pop(volatile, None)
    _same(committed, redrawn, name)


def test_the_verdicts_figure_draws_each_interval_claim_with_verify_s_verdict():
    from spt_theory.claims.registry import REGISTRY, Context
    from spt_theory.figures.verdicts import interval_claims

    rows = interval_claims(Context())
    assert {"L1b", "L3b", "L2b", "P1", "P5"} <= {r["id"] for r in rows}
    for row in rows:
        assert REGISTRY[row["id"]].check(Context()).verdict == row["verdict"]
        lo, hi = row["interval"]
        low, high = row["window"]
        inside, outside = low <= lo and hi <= high, hi < low or lo > high
        if row["id"] in ("L1f", "L8f", "L4f", "L7f", "L9f"):  # the factorial's gains: PASS lo > low, FAIL hi < high
            assert row["verdict"] == ("PASS" if lo > low else "FAIL" if hi < high else "INCONCLUSIVE")
        elif row["id"] in ("L3f", "L3p"):  # a band, gated by the plateau criterion: undecided while an arm rises
            assert row["verdict"] in (("PASS" if inside else "FAIL" if outside else "INCONCLUSIVE"), "INCONCLUSIVE")
        elif row["id"] not in ("L1b", "L3b", "L2b", "L2f"):  # gain claims: two boundaries, not a band (their own rules)
            assert row["verdict"] == ("PASS" if inside else "FAIL" if outside else "INCONCLUSIVE")
