"""The benchmark's bookkeeping (no timing assertions: speed is reported by the benchmark itself)."""

import torch

from spt_theory import cpu
from spt_theory.bench import (MODELS, BenchSize, TorchLayerModel, UntabulatedEncoder, compare, interleaved_times,
                              matmul_peak_gflops)
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
    assert set(MODELS) <= r.keys()
    assert r["speedup_vs_torch_layer"] == r["spt_theory"]["speedup_vs_torch_layer"] > 0
    assert r["torch_layer"]["speedup_vs_torch_layer"] == 1.0
    assert r["torch_layer"]["paired_speedup"]["median"] == 1.0
    assert r["spt_theory"]["peak_fraction"] == r["spt_theory"]["gflops"]
    assert r["table_used"] is False  # batch 4 < 2 x vocab 6


def test_peaks_include_torch_mm_and_onednn():
    peaks = matmul_peak_gflops(size=64, repetitions=2)
    assert "torch_mm" in peaks and all(v > 0 for v in peaks.values())
    assert ("onednn" in peaks) == cpu.onednn_available()


def test_ablation_models_compute_the_same_function():
    cfg = TINY.model_config()
    torch.manual_seed(0)
    ours = Encoder(cfg)
    untabulated = UntabulatedEncoder(cfg)
    untabulated.load_state_dict(ours.state_dict())
    x = torch.randint(0, 5, (16, 8), generator=torch.Generator().manual_seed(0))
    assert ours.tabulates_first_qkv(x) and not untabulated.tabulates_first_qkv(x)
    assert torch.allclose(ours(x), untabulated(x), atol=1e-5)
    with cpu.torch_linear():
        assert torch.allclose(ours(x), untabulated(x), atol=1e-5)
