"""The one table of claims: every claim's statement, threshold, registration and record.

:data:`TABLE` holds one :class:`~spt_theory.claims.row.Row` per claim that ``python -m
spt_theory.verify`` checks: its ``id``, ``statement``, ``threshold`` (as registered, in words),
:class:`~spt_theory.claims.row.Registration` (``pre`` if the threshold was committed before the
first result it judges, ``post`` if after; the original threshold where it moved since) and, for a
claim under test, its :class:`~spt_theory.claims.row.Record` (the verdict it gave when last
measured in full, the date and the evidence).  The claim decorators
(:func:`spt_theory.claims.registry.claim`), ``verify --list`` and ``docs/claims.md`` (``verify
--list --markdown``) all read it; a check module adds only the measurement.

Kinds (:attr:`~spt_theory.claims.row.Row.kind`): ``project`` (no record: the toolkit's own
statements, the lemmas T*, the mechanism probes E1, E1b, E8 and the controls X*; they must PASS),
``paper`` (the paper's statements under test, E2-E14 and their variants, L*) and ``hypothesis``
(this project's predictions that data can refute, X1 and P*).  A verdict that reproduces its
record is a reproduced result, whichever it is; one that differs is printed as ``CHANGED``.  A
record is changed here, by hand, only together with the evidence that changed it.  Commit hashes
are read from the git history; each is named once below.
"""

from __future__ import annotations

from spt_theory.claims.commits import (
    BRIDGE,
    DECIDE,
    FIRST_CHECKS,
    FIRST_RESULTS,
    FORCE,
    GPU_TWIN,
    L1B_RESULT,
    L3B_RESULT,
    L6_RESULT,
    N400_ADAMW,
    PAPER,
    PAPER_RESULTS,
    PLATEAU_LAW,
    POOLING_FACTORIAL,
    PREDICTION_400,
    RACE_RULES,
    SHORT,
    WALK_SEEDS,
)
from spt_theory.claims.row import VERDICT_OF_RECORD, Record, Registration, Row
from spt_theory.claims.table_gpu import ROWS as GPU_ROWS
from spt_theory.claims.table_lra import ROWS as LRA_ROWS
from spt_theory.claims.table_plateau import ROWS as PLATEAU_ROWS

EVIDENCE_HASHES: dict[str, tuple[str, str]] = {
    # path under the evidence folder: (sha256 of its bytes, the commit or day that recorded them)
    "lra/listops.json": ("59fced848022d6f90bcee1cf8eed203d72113ac026ff212daf83517eff20baa8", "1efdbaa"),
    "lra/pathfinder.json": ("5bf5114bdf88553ba752baedfc44243904cef89139b983781a12b4f93376075f", "1efdbaa"),
    "lra/decide/l1b.json": ("6a6b38b9ba52fa8334d1192a2834a3d8920507aa5b2c39aff183f65651f21232", L1B_RESULT),
    "lra/decide/l3b.json": ("5773184cbe52b33dd770ca4151a73786f73e52abd3e3e413a22fecddaeeff84d", L3B_RESULT),
    "lra/decide/l6.json": ("ba19c761a667f85db7fd33fc4acf0bd4ecdbd46aa48ee4dfd0fd65aaa654fbcb", L6_RESULT),
    "lra/decide/l6s.json": ("b08d25b075736ecb92c861df5e75630bc1dd31f7774b3046ac6380b0c942435f", "d40cae0"),
    "lra/decide/l3p.json": ("97b6a238d4075ec37a78a4c594a868249eea4479e8a1c5240646ef18ab983064", "66706a9"),
    "lra/decide/l6f.json": ("d46f104aaf1aa336e802ac1820ec1152c3cfb64172b6a6f510296812eb405fe5", "392464f"),
    "lra/decide/fmean.json": ("b5c3f03f8926d92d5d13f16b0892b4f776c12dc6a5e7b301733814a9503ad195", "da0f1f8"),
    "lra/decide/fmax.json": ("4cbb0f8c6e6facca2e2e7974cd4ad72181487c1f4dd2ba741524bd556a698c9c", "8c8399b"),
    "lra/decide/fdepth.json": ("b9551f024b093187b2dd68ca995c1033229c42db78024e21563574da83108ddf", "6d9617c"),
    "race/pathfinder16.json": ("f3b2084c60f2a018adf8b36c87c09d8423234beec331a99a56bf9733f76e0d09", RACE_RULES),
    "plateau/plateau_runs.json": ("f2bc4c4ecb0686fd16c5b2fd9fd556599f2f1cabf4e62b8d906c86422481aaec", N400_ADAMW),
    "plateau/gradient_rms.json": ("9545da87123ca5be285b7b0492084f9119740ff8c1b29327bef16f45faede4f5", PLATEAU_LAW),
    "plateau/prediction_n400.json": ("d07f6ebc40f13e692384ac87424b4378210247e13a735ecc2e1378407d1773e5",
                                     PREDICTION_400),
}
"""The content of every committed evidence file a verdict reads, as recorded (sha256): verify gives
ERROR, naming the file and this entry's commit, for a file that differs or that a check read without
an entry here (:func:`spt_theory.claims.registry.check_read_evidence`).  Updated by hand in the
commit that promotes new evidence, like the record it supports."""
DOCUMENTS: dict[str, tuple[str, str]] = {
    # path in a checkout: (sha256 as committed, the commit that added it; none has changed since)
    "docs/preregistration/2026-12-02-lra-verdicts-and-escape-race.md":
        ("c66e6eeed2c6098e0776a1a506c23f29a5de4ba25921bd6fe5608f2e4eaf5474", RACE_RULES),
    "docs/preregistration/2026-12-02-lra-decide.md":
        ("f28c0314bddcef02303a8e3d8be9859c46f65dee24387e59f113adc88f686ea6", DECIDE),
    "docs/preregistration/2026-12-04-lra-short-contour.md":
        ("e8bc8d84ada39643778989c0ad26673496fc4ad21a6eaa906cf79c92d7690f44", SHORT),
    "docs/preregistration/2026-12-04-gpu-twin.md":
        ("74ae16b647b1d0586fe91374c48a72328036b45d4b9c1c63dde02b9852db0d63", GPU_TWIN),
    "docs/preregistration/2026-12-05-pooling-factorial.md":
        ("00bf934e3df1c13c1077edd225f33a1151919dee3a59a2447ea92b3d657e6b71", POOLING_FACTORIAL),
    "docs/preregistration/2026-12-05-gpu-pooling-factorial.md":
        ("3f6e65dc9e9900b7a8698bb88b5152c8ed04069c3ce78175a15ed8234097e46c", "dd55bf0"),
}
"""The pre-registration documents (path in a checkout: sha256 as committed, and the commit that
added it).  They are not package data: verify checks each where a checkout holds it, for every
claim of the families they register (:data:`spt_theory.claims.registry.DOCUMENT_FAMILIES`: L, P,
G), and the test suite always (``tests/checks/test_decide_reliability.py``,
``tests/claims/test_integrity.py``)."""


def _table(*rows: Row) -> dict[str, Row]:
    table: dict[str, Row] = {}
    for row in rows:
        if row.id in table:
            raise ValueError(f"claim {row.id} has two rows")
        table[row.id] = row
    return table


TABLE: dict[str, Row] = _table(
    Row("T1",
        "L_sup sees S only via column sums of A (any point)",
        "<= 1e-10 & ctrl",
        Registration("pre", FIRST_CHECKS, "d19cbea")),
    Row("T2",
        "Uniform attn: dL_sup/dS = 1(b-mean b)^T/n, equal rows",
        "<= 1e-10 & ctrl",
        Registration("pre", FIRST_CHECKS, "d19cbea")),
    Row("T2b",
        "Real model, W_Q=W_K=0: dL/dS rows differ (T1-T3 idealise)",
        ">= 0.05 (ctrl 0), band cos <= .05",
        Registration("post", BRIDGE, BRIDGE)),
    Row("T3",
        "Uniform attn: <dL_sup/dS, P> = 0 if P's column sums equal",
        "<= 1e-10 & ctrl",
        Registration("pre", FIRST_CHECKS, "d19cbea")),
    Row("T4",
        "Uniform attn: dL_sup/dM = H^T G H has rank <= 1",
        "<= 1e-10 & ctrl",
        Registration("pre", FIRST_CHECKS, "d19cbea")),
    Row("T4b",
        "Real model W_Q=W_K=0: no dL/dW_Q; step 1: queries equal",
        "<= 1e-10 & ctrl",
        Registration("pre", BRIDGE, "b96e7e0")),
    Row("T5",
        "Uniform attn: dL_rec/dS=(R-R11^T/n)/n sees proximity",
        "<= 1e-10 & ctrl",
        Registration("pre", FIRST_CHECKS, "d19cbea")),
    Row("T6",
        "Walk task: class histograms identical (exact enum.)",
        "<= 0 & ctrl",
        Registration("pre", FIRST_CHECKS, "d19cbea")),
    Row("T7",
        "Walk: per-token features blind at W_V=0; value path O(1/n)",
        "<= 1e-12 & ctrl",
        Registration("pre", BRIDGE, "b96e7e0")),
    Row("T9",
        "Real model: exact label force on M; measured n-exponent",
        "<= 1e-12 rel. error to enumeration, MC |z| <= 4",
        Registration("post", FORCE, FORCE)),
    Row("E1",
        "bag-of-tokens MLP on histograms stays at chance",
        "|acc - 0.5| <= 0.04 (control >= 0.7)",
        Registration("pre", FIRST_CHECKS, "d19cbea")),
    Row("E1b",
        "MLP on mean-pooled (token, position) pairs: label is there",
        "MLP >= .8, |linear-.5| <= .04, rule >= .9",
        Registration("post", "b1a2932", "b1a2932")),
    Row("E2",
        "supervised from scratch stays near chance in 8 epochs",
        "<= 0.6",
        Registration("pre", FIRST_CHECKS, FIRST_RESULTS),
        Record("holds", "2026-11-30", f"{WALK_SEEDS}: scratch 0.483-0.488 after 8 epochs")),
    Row("E3",
        "SPT then finetune reaches high accuracy",
        ">= 0.95",
        Registration("pre", FIRST_CHECKS, FIRST_RESULTS),
        Record("holds", "2026-11-30", f"{WALK_SEEDS}: SPT 4 + finetune 3 epochs 0.986-1.000")),
    Row("E4",
        "band mass >= 5x uniform after SPT, not after scratch",
        "SPT >= 5x, scratch <= 1.5x",
        Registration("pre", FIRST_CHECKS, FIRST_RESULTS),
        Record("holds", "2026-11-30", f"{WALK_SEEDS}: band mass 8.8-9.8x uniform after SPT, 0.94-0.96x after scratch")),
    Row("E5",
        "attention frozen at random init: about as good as trained",
        "|gap| <= 0.05, scratch >= 0.6",
        Registration("post", PAPER, PAPER_RESULTS, "frozen - scratch <= 0.05 with the mean-pooled readout (c9d317f; "
                                                   "moved away from passing: the gap bound is pre, the scratch >= "
                                                   "0.6 guard was set with scratch's 0.74 known)"),
        Record("does not hold", "2026-12-01", f"{WALK_SEEDS}: last-token readout, scratch 74.2 ± 0.6%, frozen W_Q, "
                                              "W_K 49.0 ± 0.2% (gap -25 pts)")),
    Row("E5b",
        "ALiBi, mean pool: frozen attention as good as trained",
        "|gap| <= 0.05, scratch >= 0.6",
        Registration("post", "289bb35", PAPER_RESULTS),
        Record("does not hold", "2026-12-01", f"{WALK_SEEDS}: ALiBi + mean pool, trained 88.9 ± 19%, frozen 48.8 ± "
                                              "0.2% (gap -40 pts)")),
    Row("E6",
        "hybrid init: W_Q,W_K recover most of the gain, MLP not",
        "qk >= 0.8, mlp <= 0.2",
        Registration("post", FIRST_CHECKS, FIRST_RESULTS, "qk >= 0.8, mlp <= 0.2 after a 3-epoch finetune (moved to "
                                                          "8 epochs in 03d9245)"),
        Record("holds", "2026-11-30", f"{WALK_SEEDS}: qk hybrid recovers 0.99-1.03 of the gain, MLP -0.01-0.02")),
    Row("E6b",
        "per epoch: SPT's W_Q,W_K track full SPT, its MLP never",
        "qk <= full + 2 epochs; mlp never",
        Registration("post", PAPER, FIRST_RESULTS),
        Record("does not hold", "2026-12-01", f"{WALK_SEEDS}: full SPT solves at finetune epoch 3, W_Q, W_K alone at "
                                              "6-7 (lag 3-4 > 2)")),
    Row("E7",
        "after SPT PE-PE scores mostly Toeplitz, peak |i-j|<=2",
        "R2>=.5, >=3x init/scratch, peak<=2",
        Registration("post", FIRST_CHECKS, FIRST_RESULTS, "R2 >= 0.9 and half the heads peaked within |i-j| <= 2 "
                                                          "(moved in 03d9245)"),
        Record("holds", "2026-11-30", f"{WALK_SEEDS}: PE-PE Toeplitz R² 0.56-0.69 after SPT, 0.15-0.17 at init")),
    Row("E8",
        "at init the supervised score gradient ignores proximity",
        "<= 0.33",
        Registration("post", FIRST_CHECKS, FIRST_CHECKS, "ratio <= 0.25 (moved to 0.33 in 03d9245)")),
    Row("E9",
        "short SPT suffices: solved within ~10 SPT epochs",
        "<= 10 SPT epochs to 0.95",
        Registration("post", PAPER, FIRST_RESULTS, "longest SPT >= 0.95 and a gain >= 0.2 over 1 epoch (c9d317f; "
                                                   "replaced, both pass)"),
        Record("holds", "2026-12-01", f"{WALK_SEEDS}: chance up to 2.83 SPT epochs, 99.5% from 4 epochs")),
    Row("E10",
        "scratch cannot fit its training set; SPT->ft fits it",
        "scratch train <= 0.6, loss >= 0.65; SPT train >= 0.95",
        Registration("pre", PAPER, PAPER_RESULTS),
        Record("holds", "2026-12-01",
               f"{WALK_SEEDS}: scratch training accuracy 51.6 ± 0.6%, loss ln 2; SPT->ft 99.6%")),
    Row("E11",
        "4x, 16x labelled data do not rescue scratch",
        "every scale <= 0.6",
        Registration("pre", PAPER, PAPER_RESULTS),
        Record("does not hold", "2026-12-01", f"{WALK_SEEDS}: 16x data, 8 epochs: 82.9 ± 29.7% (100 / 48.6 / 100)")),
    Row("E11b",
        "16x the steps on 1x data do not rescue scratch",
        "<= 0.6",
        Registration("pre", "7cb0b0e", "4d15f38"),
        Record("does not hold", "2026-12-01", f"{WALK_SEEDS}: 1x data, 128 epochs: leaves chance after 2375-3250 "
                                              "steps, final 97.2 ± 4.9%")),
    Row("E12",
        "depth (2, 4 layers) does not rescue scratch; SPT helps",
        "scratch <= 0.6, SPT >= 0.95 at each depth",
        Registration("pre", PAPER, PAPER_RESULTS),
        Record("holds", "2026-12-01", f"{WALK_SEEDS}: 2 / 4 layers, scratch 49.4 / 49.4%, SPT 100 / 99.9%")),
    Row("E13",
        "scratch at chance across p (.2-.8), n (50-200), V (4-64)",
        "every point <= 0.6",
        Registration("pre", PAPER, PAPER_RESULTS),
        Record("holds", "2026-12-01", f"{WALK_SEEDS}: 7 settings of p, n, V: scratch 48.4-49.7%")),
    Row("E14",
        "SPT epochs needed grow with n, fall with p",
        "rises in n, falls in p",
        Registration("pre", PAPER, PAPER_RESULTS),
        Record("holds", "2026-12-01", f"{WALK_SEEDS}: median SPT epochs n 50/100/200: 4/4/8; p .2/.5/.8: >8/4/2")),
    Row("X1",
        "ALiBi proximity bias: scratch learns the task w/o SPT",
        ">= 0.95",
        Registration("post", FIRST_RESULTS, FIRST_RESULTS),
        Record("does not hold", "2026-11-30", "walk task, seeds 0-2: ALiBi scratch 1.000 / 0.669 / 0.997 (mean "
                                              "0.889 < 0.95; seeds 3-4: 1.000 / 0.534)", source="hypothesis")),
    Row("X2",
        "proximity init of W_Q,W_K (no SPT) learns like SPT",
        ">= 0.95",
        Registration("post", FIRST_RESULTS, FIRST_RESULTS)),
    Row("X3",
        "no PE: SPT makes no proximity, task stays unsolved",
        "|acc-0.5| <= 0.04, band <= 1.5x",
        Registration("post", FIRST_RESULTS, FIRST_RESULTS)),
    Row("X4",
        "CLS readout: grad only in row 0; scratch stays ~chance",
        "theory & |cls acc-0.5| <= 0.04",
        Registration("post", FIRST_RESULTS, FIRST_RESULTS)),
    Row("X5",
        "SPT on other sequences (sym. walk, p=.8, perm) helps",
        "every source >= 0.9",
        Registration("post", FIRST_RESULTS, FIRST_RESULTS)),
    Row("X5b",
        "SPT on data w/o neighbour structure does not help",
        "every source <= 0.6",
        Registration("pre", PAPER, PAPER_RESULTS)),
    Row("X6",
        "sup. grad proximity share: chance on scratch, up w/ SPT",
        "SPT >= 3x, scratch <= 2x chance",
        Registration("post", FIRST_RESULTS, FIRST_RESULTS)),
    *LRA_ROWS,
    *PLATEAU_ROWS,
    *GPU_ROWS,
)
"""Every claim verify checks, in the order it prints them."""

RECORDS: dict[str, Record] = {row.id: row.record for row in TABLE.values() if row.record is not None}
"""The recorded verdict of every claim under test (a view of :data:`TABLE`)."""
REGISTRATIONS: dict[str, Registration] = {row.id: row.registration for row in TABLE.values()}
"""The registration of every claim (a view of :data:`TABLE`)."""


def kind(claim_id: str) -> str:
    """The source of a recorded claim (``paper`` or ``hypothesis``), else ``project``."""
    record = RECORDS.get(claim_id)
    return "project" if record is None else record.source


def on_record(claim_ids: tuple[str, ...]) -> str:
    """The verdicts on record of some claims in the report's vocabulary, claims with the same
    verdict together: ``E5, E5b FAIL (does not hold)``; project claims: ``X5b project: must PASS``."""
    groups: dict[str, list[str]] = {}
    for claim_id in claim_ids:
        record = RECORDS.get(claim_id)
        text = ("project: must PASS" if record is None
                else f"{VERDICT_OF_RECORD[record.verdict]} ({record.verdict})")
        groups.setdefault(text, []).append(claim_id)
    return "; ".join(f"{', '.join(ids)} {text}" for text, ids in groups.items())
