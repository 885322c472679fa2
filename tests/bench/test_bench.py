"""The benchmark's bookkeeping (no timing assertions: speed is reported by the benchmark itself)."""

import pytest
import torch

from spt_theory.bench.cases import BF16_DENSE_PEAK_TFLOPS, LISTOPS_GPU, BenchSize, forward_flops, train_step_flops
from spt_theory.bench.models import (
    LRA_CPU_MODELS,
    LRA_MODELS,
    MODELS,
    AttentionFreeEncoder,
    TorchLayerModel,
    UntabulatedEncoder,
    build_models,
    make_batches,
)
from spt_theory.bench.run import compare, main
from spt_theory.bench.timing import clock_for, interleaved_times, matmul_peak_gflops, wall_clock
from spt_theory.core import cpu
from spt_theory.core.model import Encoder

TINY = BenchSize("tiny", n=8, d_model=16, n_heads=2, d_ff=32, batch=4, vocab=5)
TINY_MASKED = BenchSize("tiny_masked", n=40, min_len=5, d_model=16, n_heads=2, d_ff=32, batch=4, batches=3,
                        vocab=16, classes=10, layers=2)


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


@pytest.mark.slow
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
    peaks = matmul_peak_gflops(sizes=(32, 64), repetitions=2)
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


def test_attention_free_bound_replaces_attention_by_the_value_path():
    cfg = TINY.model_config()
    torch.manual_seed(0)
    ours, bound = Encoder(cfg), AttentionFreeEncoder(cfg)
    bound.load_state_dict(ours.state_dict())
    x = torch.randint(0, 5, (3, 8))
    block = ours.blocks[0]
    h = ours.embed(x) + ours.pe[:8]
    v = block.attn.project(block.ln_attn(h))[..., 2 * cfg.d_model:]
    h = h + block.attn.out(v)
    h = h + block.mlp(block.ln_mlp(h))
    expected = ours.head(ours.ln_final(h).mean(dim=1))
    assert torch.allclose(bound(x), expected, atol=1e-6)
    assert not torch.allclose(bound(x), ours(x), atol=1e-3)  # attention did something


# ------------------------------------------------------------------------------ LRA-shaped case

def test_flops_of_one_small_shape_by_hand():
    # n=3, d=4, d_ff=8, 2 layers, decoder of 5 classes: per layer 2*3*(4*16 + 2*32) = 768 for the
    # linear layers and 4*9*4 = 144 for QK^T and AV; decoder 2*3*4*5 = 120
    assert forward_flops(3, 4, 8, layers=2, out_per_token=5) == 2 * (768 + 144) + 120 == 1944
    assert train_step_flops([3, 3], 4, 8, layers=2, out_per_token=5) == 3 * 2 * 1944
    masked = TINY_MASKED.step_flops(widths=[10, 20])
    assert masked == (train_step_flops([10] * 4, 16, 32, 2) + train_step_flops([20] * 4, 16, 32, 2)) / 2


def test_masked_batches_are_padded_per_batch_from_one_sorted_bucket():
    batches = make_batches(TINY_MASKED, torch.device("cpu"))
    assert len(batches) == 3
    lengths = TINY_MASKED.lengths()
    assert len(lengths) == 12 and lengths.min() > 5 and lengths.max() < 40
    seen = []
    for x, y, valid in batches:
        real = valid.sum(1)
        assert x.shape == valid.shape and x.shape[1] == real.max()  # padded to the batch's longest
        assert (x[~valid] == 0).all() and (x[valid] > 0).all()  # <pad> = 0 only after the real tokens
        assert torch.equal(valid, torch.arange(x.shape[1]) < real[:, None])
        assert y.max() < 10
        seen += real.tolist()
    assert sorted(seen) == sorted(lengths.tolist())
    widths = sorted(x.shape[1] for x, _, _ in batches)
    assert widths == sorted(TINY_MASKED.widths()) and widths[0] < widths[-1]  # sorted bucket: varied widths


def test_both_models_give_padded_examples_the_outputs_of_the_unpadded_ones():
    models = build_models(TINY_MASKED, LRA_MODELS, torch.device("cpu"))
    x, _, valid = make_batches(TINY_MASKED, torch.device("cpu"))[-1]
    assert not valid.all()
    for name, model in models.items():
        model.eval()
        padded = model(x, valid=valid)
        for i in range(len(x)):
            n = int(valid[i].sum())
            alone = model(x[i:i + 1, :n], valid=valid[i:i + 1, :n])
            assert torch.allclose(padded[i], alone[0], atol=1e-5), name
        unmasked = model(x, valid=None)  # the mask matters: without it padding changes the output
        assert not torch.allclose(padded, unmasked, atol=1e-4), name


def test_reference_has_one_torch_layer_per_layer_and_our_pooling():
    cfg = TINY_MASKED.model_config()
    reference = TorchLayerModel(cfg)
    assert len(reference.layers) == 2 and cfg.n_classes == 10
    h = torch.randn(2, 5, 16)
    valid = torch.tensor([[True] * 5, [True, True, False, False, False]])
    assert torch.allclose(reference.pool(h, valid)[1], h[1, :2].mean(0))


@pytest.mark.slow
def test_compare_lra_cpu_case_times_the_attention_free_bound():
    r = compare(TINY_MASKED, repetitions=2, models=LRA_CPU_MODELS)
    assert set(LRA_CPU_MODELS) <= r.keys()
    assert all(r[name]["seconds_per_step"]["median"] > 0 for name in LRA_CPU_MODELS)


@pytest.mark.slow
def test_compare_lra_case_reports_tokens_and_speedup_of_two_models():
    r = compare(TINY_MASKED, repetitions=2, peak=None, models=LRA_MODELS)
    assert set(LRA_MODELS) <= r.keys() and "no_table" not in r
    assert r["inner"] == 3 and r["widths"] == TINY_MASKED.widths()
    assert r["real_tokens_per_step"] == sum(TINY_MASKED.lengths().tolist()) / 3
    assert r["step_gflop"] == TINY_MASKED.step_flops() / 1e9
    for name in LRA_MODELS:
        m = r[name]
        assert m["peak_fraction"] is None and m["tokens_per_second"] > 0
        assert m["tokens_per_second"] == r["real_tokens_per_step"] / m["seconds_per_step"]["median"]
    assert r["device"] == "cpu" and r["autocast_bf16"] is False


@pytest.mark.slow
def test_bf16_autocast_steps_of_both_models_run_on_the_cpu():
    r = compare(TINY_MASKED, repetitions=2, models=LRA_MODELS, autocast=True)
    assert r["autocast_bf16"] is True and r["spt_theory"]["seconds_per_step"]["median"] > 0


def test_cpu_timing_uses_the_wall_clock_and_cuda_refuses_the_cpu_ablations():
    assert clock_for(torch.device("cpu")) is wall_clock
    assert "H200" in BF16_DENSE_PEAK_TFLOPS and BF16_DENSE_PEAK_TFLOPS["H200"] == 989.0
    assert LISTOPS_GPU.d_model == 512 and LISTOPS_GPU.n_heads == 8 and LISTOPS_GPU.batch == 32
    try:
        compare(TINY, repetitions=2, models=MODELS, device="cuda")
    except ValueError as error:
        assert "not timed on CUDA" in str(error)
    else:
        raise AssertionError("ablations accepted on CUDA")


@pytest.mark.slow
def test_bench_cli_tiny_lra_writes_json(tmp_path, capsys):
    assert main(["--lra", "--tiny", "--repetitions", "2", "--json", str(tmp_path / "b.json")]) == 0
    out = capsys.readouterr().out
    assert "listops" in out and "pathfinder" in out and "speedup vs torch layer" in out
    import json
    result = json.loads((tmp_path / "b.json").read_text())
    assert result["listops"]["size"]["min_len"] == 5 and result["pathfinder"]["size"]["min_len"] is None
    assert "synthetic" not in result
    assert result["machine"]["cores"] >= 1 and result["machine"]["capability"] and result["argv"][0] == "--lra"


def test_bench_cli_bad_input_exits_2(argparse_refusal):
    argparse_refusal(main, ["--repetitions", "1"], "argument --repetitions: must be an integer >= 2, got '1'")
