"""Every registered claim applies the model settings asked for (``verify --set``) or declares that its
model is fixed: a check never runs silently at the defaults (issue 52, item 4).

The probe context stops a check at its first read of the settings (:meth:`Context.settings`, which
:meth:`Context.build` goes through) and at its first use of the run cache: a check that reaches the
cache first would train at the defaults, and one that returns without either ignored the settings.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from spt_theory import verify
from spt_theory.claims.registry import REGISTRY, Claim, Context, Measurement, at_most, claim


class Applied(Exception):
    """The check read the settings (the probe stops it there)."""


class Trained(Exception):
    """The check reached the run cache before it read the settings."""


class Tripwire:
    """A cache folder that raises at any use (``Path(...)``, ``/``, ``str``)."""

    def __fspath__(self):
        raise Trained

    def __truediv__(self, other):
        raise Trained

    def __str__(self):
        raise Trained


@dataclass(frozen=True)
class Probe(Context):
    def settings(self):
        raise Applied


def probe(c: Claim) -> str:
    ctx = Probe(model_settings={"d_model": 32}, cache_dir=Tripwire(), progress=False)  # type: ignore[arg-type]
    try:
        c.check(ctx)
    except Applied:
        return "applied"
    except Trained:
        return "trained at the defaults"
    return "returned without reading them"


def test_the_registry_is_complete():
    assert len(REGISTRY) >= 70  # verify imports every check module


@pytest.mark.parametrize("cid", sorted(c.id for c in REGISTRY.values() if not c.fixed))
def test_a_claim_that_is_not_fixed_applies_the_settings(cid):
    assert probe(REGISTRY[cid]) == "applied", f"{cid}: declare claim(fixed=...) or build with ctx.build"


@pytest.mark.parametrize("cid", sorted(c.id for c in REGISTRY.values() if c.fixed))
def test_a_fixed_claim_says_in_words_what_it_fixes(cid):
    assert len(REGISTRY[cid].fixed or "") >= 20


def test_verify_refuses_a_check_that_ignores_the_settings(monkeypatch):
    """The runtime side of the same rule: with ``--set``, a check that neither applies the settings
    nor declares a fixed model is an ERROR row, not a verdict at the defaults."""
    registry: dict[str, Claim] = {}
    monkeypatch.setattr("spt_theory.claims.registry.REGISTRY", registry)

    @claim("Z1", "ignores the settings", section="test", method="none")
    def ignores(ctx: Context) -> Measurement:
        return at_most(0.0, 1.0)

    @claim("Z2", "applies them", section="test", method="none")
    def applies(ctx: Context) -> Measurement:
        return at_most(float(ctx.build(dict)["d_model"]), 64.0)

    @claim("Z3", "fixed", section="test", method="none", fixed="a closed form with no model at all")
    def fixed(ctx: Context) -> Measurement:
        return at_most(0.0, 1.0)

    asked = Context(model_settings={"d_model": 32}, progress=False)
    rows = {cid: verify.run_claim(registry[cid], asked) for cid in registry}
    assert rows["Z1"]["verdict"] == "ERROR" and "did not apply the model settings" in rows["Z1"]["measured"]
    assert rows["Z2"]["verdict"] == rows["Z3"]["verdict"] == "PASS"
    assert verify.run_claim(registry["Z1"], Context(progress=False))["verdict"] == "PASS"  # no --set: defaults
    assert not asked.applied  # each check gets a fresh context
