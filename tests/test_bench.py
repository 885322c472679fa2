"""The benchmark's bookkeeping (no timing assertions: speed is reported by the benchmark itself)."""

import torch

from spt_theory.bench import BenchSize, TorchLayerModel, compare, interleaved_times
from spt_theory.model import Encoder

TINY = BenchSize("tiny", n=8, d_model=16, n_heads=2, d_ff=32, batch=4, vocab=5)


def test_step_flops_formula_counts_every_matmul():
    n, d, f, b = 8, 16, 32, 4
    projections = 2 * n * d * (3 * d) + 2 * n * d * d  # QKV and output
    mlp = 2 * n * d * f * 2
    attention = 2 * n * n * d * 2  # QK^T and AV summed over heads
    assert TINY.step_flops() == 3 * b * (projections + mlp + attention)


def test_reference_model_has_the_same_parameter_count_up_to_decoder():
    cfg = TINY.model_config()
    ours = sum(p.numel() for n, p in Encoder(cfg).named_parameters() if not n.startswith("decoder"))
    assert ours == sum(p.numel() for p in TorchLayerModel(cfg).parameters())


def test_interleaved_times_alternates_and_counts():
    calls = []
    times = interleaved_times({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")},
                              repetitions=3, inner=2, warmup=1)
    assert calls == ["a", "b"] + ["a", "a", "b", "b"] * 3
    assert all(len(t) == 3 and all(s >= 0 for s in t) for t in times.values())


def test_compare_reports_the_fields_the_issue_names():
    torch.manual_seed(0)
    r = compare(TINY, repetitions=2, inner=1, peak=1.0)
    assert r["speedup_vs_torch_layer"] > 0
    assert r["spt_theory"]["peak_fraction"] == r["spt_theory"]["gflops"]
