"""Packing (``model.py``): a padded batch's logits computed from its real tokens only equal the
padded-and-masked path's, for every readout that packs; the others take the padded path."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from spt_theory.model import Encoder, ModelConfig

ATOL = 1e-5
"""float32: packing changes which rows a kernel sees (and the order of the pooled sum), not the maths."""


def models(pooling: str, layers: int = 1, heads: int = 2, head: str = "linear", attention_bias: str = "none",
           seed: int = 0):
    cfg = ModelConfig(vocab_size=7, recon_classes=6, max_len=16, d_model=8, n_heads=heads, d_ff=16, n_layers=layers,
                      n_classes=3, pooling=pooling, head=head, attention_bias=attention_bias)
    torch.manual_seed(seed)
    return Encoder(cfg)


def padded_logits(model: Encoder, x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """The padded-and-masked path, whatever ``packs`` says."""
    if model.cfg.head == "pair_mlp":
        z = model.pool(model.encode(x.flatten(0, 1), valid=valid.flatten(0, 1)), valid.flatten(0, 1))
        u, v = z.unflatten(0, (-1, 2)).unbind(1)
        z = torch.cat([u, v, u - v, u * v], dim=-1)
    else:
        z = model.pool(model.encode(x, valid=valid), valid)
    return model.head(z)


def logits_and_grads(model, run, x, valid):
    model.zero_grad(set_to_none=True)
    logits = run(x, valid=valid)
    logits.square().sum().backward()
    return logits.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@settings(max_examples=40, deadline=None)
@given(lengths=st.lists(st.integers(1, 12), min_size=1, max_size=5), extra=st.integers(0, 3),
       pooling=st.sampled_from(["mean", "max", "last"]), layers=st.integers(1, 2), heads=st.sampled_from([1, 2, 4]),
       prefix=st.booleans(), seed=st.integers(0, 2**16))
def test_packed_logits_and_gradients_equal_the_padded_path(lengths, extra, pooling, layers, heads, prefix, seed):
    """For all lengths, padding, readouts, sizes, and real tokens first or scattered: the packed
    forward's logits and every parameter gradient equal the padded path's (atol 1e-5)."""
    model = models(pooling, layers, heads, seed=seed)
    n = max(lengths) + extra
    generator = torch.Generator().manual_seed(seed)
    if prefix:
        valid = torch.arange(n) < torch.tensor(lengths)[:, None]
    else:  # the same counts of real tokens, at random positions
        order = torch.rand(len(lengths), n, generator=generator).argsort(dim=1)
        valid = order < torch.tensor(lengths)[:, None]
    x = torch.randint(1, 7, (len(lengths), n), generator=generator) * valid
    assert model.packs(valid, None)
    packed, packed_grads = logits_and_grads(model, model, x, valid)
    padded, padded_grads = logits_and_grads(model, lambda a, valid: padded_logits(model, a, valid), x, valid)
    torch.testing.assert_close(packed, padded, atol=ATOL, rtol=0)
    assert packed_grads.keys() == padded_grads.keys()
    for name in packed_grads:
        torch.testing.assert_close(packed_grads[name], padded_grads[name], atol=ATOL, rtol=0, msg=name)


def test_pairs_pack_each_document():
    model = models("mean", head="pair_mlp")
    valid = torch.arange(9) < torch.tensor([[9, 3], [5, 7]])[..., None]
    x = torch.randint(1, 7, (2, 2, 9)) * valid
    torch.testing.assert_close(model(x, valid=valid), padded_logits(model, x, valid), atol=ATOL, rtol=0)


@pytest.mark.parametrize("pooling, bias", [("mean_all", "none"), ("cls", "none"), ("mean", "alibi")])
def test_readouts_of_padding_cls_and_biases_take_the_padded_path(pooling, bias):
    model = models(pooling, attention_bias=bias)
    valid = torch.arange(10) < torch.tensor([10, 4, 7])[:, None]
    x = torch.randint(1, 7, (3, 10)) * valid
    assert not model.packs(valid, None)
    assert torch.equal(model(x, valid=valid), padded_logits(model, x, valid))


def test_probes_and_empty_sequences_take_the_padded_path():
    model = models("mean")
    valid = torch.arange(6) < torch.tensor([6, 2])[:, None]
    x = torch.randint(1, 7, (2, 6)) * valid
    assert model.packs(valid, None) and not model.packs(valid, {}) and not model.packs(None, None)
    logits, cache = model.run_with_cache(x, valid=valid)
    assert "blocks.0.attn.pattern" in cache and cache["blocks.0.attn.pattern"].shape == (2, 2, 6, 6)
    torch.testing.assert_close(logits, model(x, valid=valid), atol=ATOL, rtol=0)
    empty = valid.clone()
    empty[1] = False
    assert not model.packs(empty, None)


def test_packing_is_deterministic():
    model = models("mean", layers=2)
    valid = torch.arange(12) < torch.tensor([12, 5, 9, 1])[:, None]
    x = torch.randint(1, 7, (4, 12)) * valid
    first, first_grads = logits_and_grads(model, model, x, valid)
    second, second_grads = logits_and_grads(model, model, x, valid)
    assert torch.equal(first, second)
    assert all(torch.equal(first_grads[n], second_grads[n]) for n in first_grads)
