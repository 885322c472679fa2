"""The commits the registrations of the table of claims name (each once), and the words its rows
share; :mod:`spt_theory.claims.records` assembles the table."""

from __future__ import annotations

# The commits the registrations name (each once).
FIRST_CHECKS = "c9d317f"  # 2026-11-30 13:09: the first T1-T6, E1-E9 checks
FIRST_RESULTS = "03d9245"  # 2026-11-30 14:15: their first results; X1-X6; the moves of E6, E7, E8
BRIDGE = "4c4475f"  # 2026-12-01 00:10: T2b, T4b, T7
LRA = "67451e9"  # 2026-12-01 00:17: the first L1-L4
PAPER = "7e34945"  # 2026-12-01 02:27: E5, E6b, E9-E14, X5b
PAPER_RESULTS = "202563b"  # 2026-12-01 04:35: their results
LRA_GATES = "673e8c7"  # 2026-12-01 22:11: L1-L4 at equal steps, gated by the control and SPT having learned
LRA_EVIDENCE = "bca7516"  # 2026-12-01 23:03: the first committed result of that evidence
PLATEAU_LAW = "cf076e0"  # 2026-12-01: T8's predictions P1, P3-P5
RACE_RULES = "1b11fa8"  # 2026-12-02 06:14: per-task L rules, neutral selection, the race L5 (before any race run)
FORCE = "f66bf68"  # 2026-12-02 06:40: T9, the exact label force, its tolerances and first result
PREDICTION_400 = "bd8a28f"  # 2026-12-02 08:47: the n = 400 plateau prediction (P6, P7), before any n = 400 run
N400_ADAMW = "986fc6f"  # 2026-12-02 18:31: the n = 400 AdamW run of seed 0 (P6 refuted)
N400_SPT = "2a5b2bb"  # 2026-12-02 18:22: the first n = 400 result, SPT seed 0 (P7 refuted)
STATISTICS = "1efdbaa"  # 2026-12-02 18:05: spt_theory.stats (t intervals, paired test term); the backtests P6b, P7b
PREDICTION_400_FILES = (("plateau/prediction_n400.json",
                         "d07f6ebc40f13e692384ac87424b4378210247e13a735ecc2e1378407d1773e5"),)
"""The prediction file as committed in PREDICTION_400 (sha256 of ``git show bd8a28f:...``)."""
L3B_RESULT = "cb8f5c7"  # 2026-12-02 20:20: L3b's six seeds (FAIL)
L6_RESULT = "d04051c"  # 2026-12-02 20:24: L6's two proximity seeds and the 2-layer arm (FAIL)
L1B_RESULT = "900c973"  # 2026-12-03 04:05: L1b's eight seeds, its three looks (FAIL at the 8-seed look)
DECIDE = "8650b85"  # 2026-12-02 18:19: L1b, L4b, L3b, L6 pre-registered (docs/preregistration/2026-12-02-lra-decide.md)
SHORT = "8f4dd3c"  # 2026-12-04 16:10: L6s, L1s-L4s, L7s, L3p, L2b pre-registered
# (docs/preregistration/2026-12-04-lra-short-contour.md)

GPU_TWIN = "859c15b"  # 2026-12-04: G1-G4, G6s, G1s-G4s pre-registered (docs/preregistration/2026-12-04-gpu-twin.md)
POOLING_FACTORIAL = "a86d041"
"""The commit of the pooling factorial's pre-registration (2026-12-05, issue 56)."""

LRA_ORIGINAL = (f"the same thresholds at equal supervised epochs without the gates ({LRA}, pre); the "
                "SPT-learned gate (50% of the marginal-to-neighbour gap) was written with the ListOps "
                "pilot's 71% seen, and the controls' budget moved to scratch's after the seed-0 CNN "
                "stayed at chance in 4 epochs (both gates pass with either budget)")

WALK_SEEDS = "walk task, seeds 0-2, verify --full"
PLATEAU = "plateau grid (evidence/plateau/plateau_runs.json), seeds 0-2"
LRA_SEEDS = "CPU LRA sweep (evidence/lra/listops.json, pathfinder.json), seeds 0-2"
