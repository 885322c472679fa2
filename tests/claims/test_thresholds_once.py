"""Each threshold is written once (issue 58, item 4): the numbers a row of the table of claims
(spt_theory.claims.records.TABLE) states in its threshold words are the constants its check holds the
figure to.  A check declares them with ``@claim(..., limits=...)`` (the constants themselves, not
copies of their values); a claim whose threshold is partly computed from committed evidence (the
plateau law's predictions, the LRA sweep intervals) runs here instead, and the threshold it prints
must be its row's words.  Every claim is one or the other, so a check whose constant moves (E3's
0.95 to 0.9) fails here until its row, and docs/claims.md, say the same."""

import math
import re

import pytest

from spt_theory import verify  # noqa: F401  (imports every check module: the registry is complete)
from spt_theory.claims import records
from spt_theory.claims import registry as claims
from spt_theory.claims.registry import Context, all_claims

PRINTED = ("T1", "L1", "L2", "L3", "L4", "L5", "P1", "P2", "P3", "P3b", "P4", "P5", "P6", "P7")
"""Claims whose threshold words are compared with what the check prints (it reads committed evidence
only, in about a second): those whose words hold a number computed from evidence, and T1."""

NUMBER = re.compile(r"(?<![A-Za-z_\d.])(\d{1,3}(?:,\d{3})+|\d*\.\d+|\d+)(e-?\d+)?(%|x)?(?![A-Za-z_\d])")
"""A number in threshold words: ``0.95``, ``.05``, ``1e-10``, ``12,000``, ``95%``, ``1.5x``; never a
digit inside a name (``L6s``, ``R2``, ``proximity2d``).  :data:`NAMES` are words that name, not state, a number."""
NAMES = ("2-D",)


def stated(words: str) -> list[tuple[str, float, bool]]:
    """The numbers ``words`` state: (as written, value, whether a percentage).

    >>> [v for _, v, _ in stated("PASS lo > 0, FAIL hi < 3.5 pts; looks at 4, 6 seeds (99%), 12,000 steps; L6s")]
    [0.0, 3.5, 4.0, 6.0, 99.0, 12000.0]
    """
    found = []
    for name in NAMES:
        words = words.replace(name, "")
    for match in NUMBER.finditer(words):
        digits, exponent, unit = match.groups()
        found.append((match.group(0), float(digits.replace(",", "") + (exponent or "")), unit == "%"))
    return found


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15)


def disagreements(words: str, limits: tuple[float, ...]) -> list[str]:
    """What differs between the numbers ``words`` state and a check's ``limits``: a stated number no
    limit equals (a percentage may be a fraction: 95% is 0.95), and a limit the words never state."""
    numbers = stated(words)
    problems = [f"the words state {text}, which is none of the check's limits"
                for text, value, percent in numbers
                if not any(_same(value, x) or (percent and _same(value / 100, x)) for x in limits)]
    problems += [f"the check holds {x:g}, which the words never state" for x in limits
                 if not any(_same(value, x) or (percent and _same(value / 100, x)) for _, value, percent in numbers)]
    return problems


def test_every_claim_declares_its_limits_or_is_compared_with_what_it_prints():
    undeclared = [c.id for c in all_claims() if c.limits is None and c.id not in PRINTED]
    assert not undeclared, f"claims whose threshold constants are not declared (@claim(limits=...)): {undeclared}"
    assert set(PRINTED) <= set(records.TABLE)


@pytest.mark.parametrize("claim_id", [c for c in records.TABLE if c not in PRINTED])
def test_the_rows_threshold_words_state_the_checks_constants(claim_id):
    limits = claims.REGISTRY[claim_id].limits
    assert limits is not None, f"{claim_id}: @claim(limits=...) missing"
    problems = disagreements(records.TABLE[claim_id].threshold, limits)
    assert not problems, (f"{claim_id}: threshold words {records.TABLE[claim_id].threshold!r} and the check's "
                          f"limits {limits} differ: {'; '.join(problems)} (change both: the row in "
                          "spt_theory/claims/records and docs/claims.md, or the constant)")


@pytest.mark.parametrize("claim_id", PRINTED)
def test_the_table_states_the_threshold_the_check_prints(claim_id):
    measurement = claims.REGISTRY[claim_id].check(Context(progress=False))
    assert measurement.threshold == records.TABLE[claim_id].threshold


def test_a_moved_constant_is_caught():
    assert disagreements(">= 0.95", (0.95,)) == []
    assert disagreements(">= 0.95", (0.9,)) == ["the words state 0.95, which is none of the check's limits",
                                                 "the check holds 0.9, which the words never state"]
    assert disagreements("both seeds >= 88% at 20,000 steps", (0.88, 20_000)) == []
    assert disagreements("both seeds >= 88% at 20,000 steps", (0.88, 10_000)) != []
    assert disagreements("SPT >= 5x, scratch <= 1.5x", (5, 1.5)) == []
