"""The walk-direction generator: marginals, step probability, reversal symmetry, determinism."""

import pytest
import torch

from synthetic.walk import generate_walk, token_histogram

V, N, P, SIZE = 16, 100, 0.5, 20000


@pytest.fixture(scope="module")
def sample():
    return generate_walk(V, N, P, SIZE, seed=3)


def test_shapes_and_range(sample):
    x, y = sample
    assert x.shape == (SIZE, N) and y.shape == (SIZE,)
    assert x.dtype == torch.int64 and x.min() >= 0 and x.max() < V
    assert set(y.unique().tolist()) == {0, 1}


def test_token_marginals_are_uniform_at_every_position(sample):
    x, _ = sample
    freq = torch.nn.functional.one_hot(x[:, [0, 1, 50, 99]], V).float().mean(0)
    # binomial std at SIZE = 20000, q = 1/16: 0.0017; allow 5 std
    assert (freq - 1 / V).abs().max() < 0.0086


@pytest.mark.parametrize("label, step", [(1, 1), (0, -1)])
def test_step_probability(sample, label, step):
    """P(x_i = x_{i-1} + s) = p + (1 - p) / V: a step, or a fresh token that happens to match."""
    x, y = sample
    diff = (x[y == label, 1:] - x[y == label, :-1]) % V
    expected = P + (1 - P) / V
    assert abs((diff == step % V).float().mean().item() - expected) < 0.005
    assert abs((diff == (-step) % V).float().mean().item() - (1 - P) / V) < 0.003


def test_reversal_maps_classes_onto_each_other(sample):
    """Reversing class-1 sequences gives the bigram statistics of class 0."""
    x, y = sample
    def bigrams(seqs):
        return torch.bincount((seqs[:, :-1] * V + seqs[:, 1:]).flatten(), minlength=V * V).float()
    reversed_ones = bigrams(x[y == 1].flip(1))
    zeros = bigrams(x[y == 0])
    assert torch.allclose(reversed_ones / reversed_ones.sum(), zeros / zeros.sum(), atol=5e-4)
    # and without reversal they differ: the label is in the order
    ones = bigrams(x[y == 1])
    assert (ones / ones.sum() - zeros / zeros.sum()).abs().max() > 0.01


def test_deterministic_in_seed():
    a, b, c = (generate_walk(V, 20, P, 50, seed=s) for s in (7, 7, 8))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])


def test_leak_control_changes_counts_of_class_one_only():
    x, y = generate_walk(V, N, P, 4000, seed=1, leak=0.3)
    hist = token_histogram(x, V)
    assert hist[y == 1, 0].mean() > 2 * hist[y == 0, 0].mean()


@pytest.mark.parametrize("kwargs, field", [(dict(vocab=1), "vocab"), (dict(length=1), "length"),
                                           (dict(p=1.5), "p")])
def test_invalid_parameters_name_the_field(kwargs, field):
    args = dict(vocab=V, length=N, p=P, size=4, seed=0) | kwargs
    with pytest.raises(ValueError, match=field):
        generate_walk(**args)
