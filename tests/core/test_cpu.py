"""The oneDNN linear equals F.linear (values and all three gradients); thread and allocator settings."""

import sys

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from spt_theory.core import cpu

pytestmark = pytest.mark.skipif(not cpu.onednn_available(), reason="torch built without oneDNN")


def _linear_and_grads(fn, x, w, b, grad_out):
    x, w = x.clone().requires_grad_(), w.clone().requires_grad_()
    b = None if b is None else b.clone().requires_grad_()
    y = fn(x, w, b)
    y.backward(grad_out)
    return [y, x.grad, w.grad] + ([] if b is None else [b.grad])


def _close(got, want):
    """Each tensor within 1e-4 of its own largest entry: float32 rounding, not a wrong formula."""
    return all((g - r).abs().max() <= 1e-4 * r.abs().max() for g, r in zip(got, want))


@given(m=st.integers(1, 300), k=st.integers(1, 96), n=st.integers(1, 96), lead=st.sampled_from([(), (3,)]),
       bias=st.booleans(), magnitude=st.sampled_from([1e-3, 1.0, 1e3]), seed=st.integers(0, 2**16))
def test_onednn_linear_equals_f_linear_with_all_gradients(m, k, n, lead, bias, magnitude, seed):
    """For all shapes (both weight-gradient branches: K <= N and K > N), with and without bias:
    Y, dX, dW, db equal F.linear's up to float32 rounding."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(*lead, m, k, generator=gen) * magnitude
    w, b = torch.randn(n, k, generator=gen), torch.randn(n, generator=gen) if bias else None
    grad_out = torch.randn(*lead, m, n, generator=gen)
    got = _linear_and_grads(cpu.linear, x, w, b, grad_out)
    want = _linear_and_grads(F.linear, x.double(), w.double(), None if b is None else b.double(), grad_out.double())
    assert _close([g.double() for g in got], want)
    assert all(g.shape == r.shape for g, r in zip(got, want))


def test_onednn_linear_is_deterministic_and_differs_from_mkl_only_by_rounding():
    gen = torch.Generator().manual_seed(0)
    x, w, b, g = (torch.randn(2048, 64, generator=gen), torch.randn(256, 64, generator=gen),
                  torch.randn(256, generator=gen), torch.randn(2048, 256, generator=gen))
    first = _linear_and_grads(cpu.linear, x, w, b, g)
    again = _linear_and_grads(cpu.linear, x, w, b, g)
    assert all(torch.equal(a, c) for a, c in zip(first, again))
    with cpu.torch_linear():
        mkl = _linear_and_grads(cpu.linear, x, w, b, g)
    assert _close(first, mkl)


def test_other_dtypes_and_disabled_fast_path_are_exactly_f_linear():
    gen = torch.Generator().manual_seed(0)
    x, w, b = torch.randn(5, 7, 3, generator=gen), torch.randn(4, 3, generator=gen), torch.randn(4, generator=gen)
    assert torch.equal(cpu.linear(x.double(), w.double(), b.double()), F.linear(x.double(), w.double(), b.double()))
    with cpu.torch_linear():
        assert torch.equal(cpu.linear(x, w, b), F.linear(x, w, b))
    assert cpu.linear(torch.zeros(0, 3), w, b).shape == (0, 4)


def test_linear_module_keeps_nn_linear_parameters_and_state_dict():
    torch.manual_seed(0)
    reference = torch.nn.Linear(8, 5)
    torch.manual_seed(0)
    module = cpu.Linear(8, 5)
    assert torch.equal(module.weight, reference.weight) and torch.equal(module.bias, reference.bias)
    assert module.state_dict().keys() == reference.state_dict().keys()
    x = torch.randn(4, 8)
    assert torch.allclose(module(x), reference(x), atol=1e-6)


def test_intra_op_threads_sets_and_restores_the_count():
    before = torch.get_num_threads()
    with cpu.intra_op_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="threads"):
        cpu.set_intra_op_threads(0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt")
def test_allocator_tuning_is_accepted_by_glibc():
    assert cpu.tune_allocator() is True
