"""The encoder: shapes, parameter groups, the fused and explicit attention paths agree, the cache."""

import pytest
import torch

from spt_theory.core.model import PARAMETER_GROUPS, Encoder, ModelConfig, sinusoidal_table

CFG = ModelConfig(vocab_size=6, recon_classes=5, n_classes=3, max_len=12, d_model=16, n_heads=4, d_ff=32)


def make(**overrides) -> Encoder:
    torch.manual_seed(0)
    return Encoder(ModelConfig(**{**CFG.__dict__, **overrides}))


def tokens(batch=3, n=12):
    return torch.randint(0, 5, (batch, n), generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("pooling", ["mean", "max", "cls", "last"])
def test_shapes(pooling):
    model = make(pooling=pooling)
    x = tokens()
    assert model(x).shape == (3, 3)
    assert model.reconstruct(x).shape == (3, 12, 5)


def test_continuous_input_shapes():
    model = make(vocab_size=0, in_channels=2, recon_classes=0)
    assert model.reconstruct(torch.randn(2, 12, 2)).shape == (2, 12, 1)


def test_every_parameter_in_exactly_one_group():
    model = make(pooling="cls", head="mlp", n_layers=2)
    names = [n for g in PARAMETER_GROUPS for n, _ in model.named_group_parameters(g)]
    assert sorted(names) == sorted(n for n, _ in model.named_parameters())
    assert {n.split(".")[-2] for n, _ in model.named_group_parameters("qk")} == {"qk"}


@pytest.mark.parametrize("bias", ["none", "alibi"])
@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_fused_and_explicit_attention_agree(bias, pooling):
    model = make(attention_bias=bias, pooling=pooling, n_layers=2).double()
    for p in model.parameters():  # move away from near-uniform attention
        p.data.normal_(0, 0.3, generator=torch.Generator().manual_seed(2))
    x = tokens()
    fused = model(x)
    explicit, cache = model.run_with_cache(x)
    assert torch.allclose(fused, explicit, atol=1e-12, rtol=1e-10)
    pattern = cache["blocks.1.attn.pattern"]
    n = 12 + (pooling == "cls")
    assert pattern.shape == (3, 4, n, n)
    assert torch.allclose(pattern.sum(-1), torch.ones(3, 4, n, dtype=torch.float64))


def test_cache_exposes_score_gradients():
    model = make()
    logits, cache = model.run_with_cache(tokens())
    logits.sum().backward()
    grad = cache["blocks.0.attn.scores"].grad
    assert grad is not None and grad.shape == (3, 4, 12, 12)
    # softmax is invariant to adding a constant to a row, so every row of dL/dS sums to 0
    assert grad.sum(-1).abs().max() < 1e-6


def test_sinusoidal_table_values():
    table = sinusoidal_table(5, 4)
    assert torch.allclose(table[3], torch.tensor([torch.sin(torch.tensor(3.0)), torch.cos(torch.tensor(3.0)),
                                                  torch.sin(torch.tensor(0.03)), torch.cos(torch.tensor(0.03))]))


def test_positional_none_is_permutation_equivariant():
    model = make(positional="none")
    x = tokens(1)
    perm = torch.randperm(12, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(model(x), model(x[:, perm]), atol=1e-5)
    assert not torch.allclose(make()(x), make()(x[:, perm]), atol=1e-5)


def test_too_long_sequence_is_refused():
    with pytest.raises(ValueError, match="exceeds the positional table"):
        make()(tokens(n=13))


@pytest.mark.parametrize("overrides, field", [(dict(d_model=10, n_heads=4), "divisible"),
                                              (dict(pooling="sum"), "pooling"),
                                              (dict(vocab_size=0), "exactly one")])
def test_invalid_config_names_the_field(overrides, field):
    with pytest.raises(ValueError, match=field):
        ModelConfig(**{**CFG.__dict__, **overrides})


def test_reset_parameters_touches_only_the_named_groups():
    model = make()
    before = {n: p.clone() for n, p in model.named_parameters()}
    model.reset_parameters(("mlp",))
    for name, p in model.named_parameters():
        changed = not torch.equal(p, before[name])
        assert changed == (model.group_of(name) == "mlp"), name


@pytest.mark.parametrize("n_layers", [1, 2])
def test_tabulated_first_projection_equals_the_direct_one(n_layers):
    """Batch >= 2 * vocab: Q, K, V of block 0 come from the (token, position) table; the logits,
    the reconstruction and every parameter gradient equal those of the direct computation."""
    model = make(n_layers=n_layers, head="mlp").double()
    x = tokens(batch=2 * CFG.vocab_size)
    assert model.tabulates_first_qkv(x)
    direct = model.blocks[0].attn.project(model.blocks[0].ln_attn(model.embed(x) + model.pe[:12]))
    assert torch.allclose(model.first_qkv(x), direct, atol=1e-13)
    for run in (model.forward, model.reconstruct):
        model.zero_grad()
        tabulated = run(x)
        tabulated.square().sum().backward()
        table_grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        model.zero_grad()
        explicit = run(x, cache={})  # the cache path never tabulates
        explicit.square().sum().backward()
        assert torch.allclose(tabulated, explicit, atol=1e-12)
        assert table_grads.keys() == {n for n, p in model.named_parameters() if p.grad is not None}
        for name, grad in table_grads.items():
            assert torch.allclose(grad, dict(model.named_parameters())[name].grad, atol=1e-11), name


@pytest.mark.parametrize("overrides, batch, expected", [
    ({}, 12, True), ({}, 11, False), ({"pooling": "cls"}, 12, False),
    ({"vocab_size": 0, "in_channels": 2, "recon_classes": 0}, 64, False),
])
def test_tabulation_only_where_it_is_exact_and_smaller(overrides, batch, expected):
    model = make(**overrides)
    x = torch.randn(batch, 12, 2) if overrides.get("vocab_size") == 0 else tokens(batch=batch)
    assert model.tabulates_first_qkv(x) is expected
