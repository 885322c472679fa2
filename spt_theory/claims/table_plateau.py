"""The plateau law's rows of the table of claims (P1-P7, P3b, P6b, P7b);
:data:`spt_theory.claims.records.TABLE` holds them with the others."""

from __future__ import annotations

from spt_theory.claims.commits import (
    N400_ADAMW,
    N400_SPT,
    PLATEAU,
    PLATEAU_LAW,
    PREDICTION_400,
    PREDICTION_400_FILES,
    STATISTICS,
)
from spt_theory.claims.row import Record, Registration, Row

ROWS = (
    Row("P1",
        "AdamW plateau: T ∝ n^(1 + dln s/dln n), s grad RMS",
        "0.74 ± 0.25",
        Registration("pre", PLATEAU_LAW, "2cdbf98"),
        Record("inconclusive", "2026-12-04", f"{PLATEAU}: AdamW escape exponent 0.64, 95% interval [0.46, 0.81] (n "
                                             "25-200), straddles the window 0.74 ± 0.25 = [0.49, 0.99] (judged by "
                                             "its interval since 2026-12-04; was 'holds' on the point estimate); the "
                                             "window also holds gradient flow's 0.97", source="hypothesis")),
    Row("P2",
        "SGD plateau: T ∝ 1/beta_n(p) ~ n (gradient-flow law)",
        "0.94 ± 0.25",
        Registration("post", "802d83c", "b96eb5c", "1.00 ± 0.25 (cf076e0); refined to beta_n's 0.94 before any SGD "
                                                   "run, but after the pilot had shown no SGD escape within 4000 "
                                                   "steps"),
        Record("inconclusive", "2026-12-01", f"{PLATEAU}: SGD (lr 0.3, momentum 0.9) escapes at n 25 (4525-5425 "
                                             "steps), not at n 50 within 3000", source="hypothesis")),
    Row("P3",
        "AdamW, W_Q,W_K init /10: T grows as the noise floor says",
        "|measured/predicted - 1| <= 0.3 at every n",
        Registration("pre", PLATEAU_LAW, "baab605"),
        Record("inconclusive", "2026-12-04", f"{PLATEAU}: init / 10 lengthens T 1.26 / 1.17 / 1.07 / 1.35x (n "
                                             "25-200) against 1.61 / 1.49 / 1.45 / 1.40x; measured / predicted per "
                                             "seed, 95% t: [0.61, 1.01], [0.58, 1.05], [0.63, 0.87], [0.56, 1.66], "
                                             "each straddling [0.7, 1.3] (judged by intervals since 2026-12-04; was "
                                             "'holds' on the worst point estimate, 0.26)", source="hypothesis")),
    Row("P3b",
        "AdamW, W_Q,W_K init /10: T shrinks (scale-free steps)",
        "|measured/predicted - 1| <= 0.3 at every n",
        Registration("pre", "4d2452f", "baab605"),
        Record("does not hold", "2026-12-01", f"{PLATEAU}: init / 10 lengthens T; the scale-free model predicted "
                                              "0.32 / 0.46 / 0.53 / 0.62x", source="hypothesis")),
    Row("P4",
        "SGD's plateau >= AdamW's x eta_A(1-beta)/(eta_S s)",
        "T_SGD/T_AdamW >= rho(n) at every n",
        Registration("pre", PLATEAU_LAW, "b96eb5c", note="its only decided leg, n = 25, was known from the pilot "
                                                         "(SGD no escape in 4000 steps)"),
        Record("inconclusive", "2026-12-01", f"{PLATEAU}: SGD 5.3x AdamW at n 25 (bound 2.2x); at n 50 the 3000-step "
                                             "cap is below the bound", source="hypothesis")),
    Row("P5",
        "SPT/scratch steps ratio ∝ n^(dln(s_rec/s)/dln n)",
        "0.08 ± 0.25",
        Registration("pre", PLATEAU_LAW, "baab605"),
        Record("inconclusive", "2026-12-04", f"{PLATEAU}: SPT / scratch ratio exponent -0.39, 95% interval [-1.00, "
                                             "0.23], straddles the window +0.08 ± 0.25 = [-0.17, 0.33] (judged by its "
                                             "interval since 2026-12-04; was 'does not hold' on the point estimate)",
               source="hypothesis")),
    Row("P6",
        "AdamW escape, n = 400 out of sample: T ∝ s(n)/sigma_1(n)",
        "all 3 seeds in [15030, 37932]",
        Registration("pre", PREDICTION_400, N400_ADAMW, files=PREDICTION_400_FILES,
                     note="interval and alternatives read from evidence/plateau/prediction_n400.json: gradient flow "
                          "(11202) and T8's A0 noise law (9766) lie outside it"),
        Record("does not hold", "2026-12-02", f"{PLATEAU} and the n = 400 AdamW run of seed 0 ({N400_ADAMW}): escape "
                                              "at 5400 steps, below the interval [15030, 37932] and both registered "
                                              "alternatives; one seed outside refutes the registered rule, seeds 1-2 "
                                              "need not run; the straight-line trend of n = 25-200 (6536) was nearest",
               source="hypothesis")),
    Row("P7",
        "SPT steps to 95%, n = 400 out of sample: T ∝ n s_rec(n)",
        "all 3 seeds in [1880, 3472]",
        Registration("pre", PREDICTION_400, N400_SPT, files=PREDICTION_400_FILES,
                     note="interval and alternatives read from evidence/plateau/prediction_n400.json: the sign "
                          "regime (515) lies outside it, gradient flow (2816) inside: P7 cannot separate the law "
                          "from gradient flow"),
        Record("does not hold", "2026-12-02", f"{PLATEAU} and the n = 400 SPT run of seed 0 ({N400_SPT}): solved at "
                                              "1000 SPT steps (707 not), below the interval [1880, 3472]; one seed "
                                              "outside refutes the registered rule, seeds 1-2 need not run; the "
                                              "straight-line trend of n = 25-200 (1016) was nearer",
               source="hypothesis")),
    Row("P6b",
        "Backtest: P6's procedure from n = 25-100 predicts AdamW's escape at n = 200",
        "all 3 seeds in its single-seed interval",
        Registration("post", STATISTICS, STATISTICS,
                     note="P6's registered rule applied to a prediction made after the n = 25-200 runs were known "
                          "(the backtest asks whether the procedure works in sample)"),
        Record("does not hold", "2026-12-02",
               f"{PLATEAU}: from n = 25-100 the procedure predicts 12462 steps at n = 200, "
               "single-seed interval [7511, 20678]; measured 4000 / 3100 / 3700, all "
               "outside", source="hypothesis")),
    Row("P7b",
        "Backtest: P7's procedure from n = 25-100 predicts SPT's steps to 95% at n = 200",
        "all 3 seeds in its single-seed interval",
        Registration("post", STATISTICS, STATISTICS,
                     note="P7's registered rule applied to a prediction made after the n = 25-200 runs were known"),
        Record("does not hold", "2026-12-02",
               f"{PLATEAU}: from n = 25-100 the procedure predicts 1537 SPT steps at n = "
               "200, single-seed interval [1109, 2130]; measured 707 / 707 / 707, all "
               "outside", source="hypothesis")),
    # The GPU twin (issue 51): registered in 859c15b (docs/preregistration/2026-12-04-gpu-twin.md), before any
    # GPU run; not run yet, so each record rests on no evidence (ran=False) until a promoted result replaces it.
)
