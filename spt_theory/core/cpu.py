"""Fast float32 training on the CPU: oneDNN linear layers, thread changes that keep MKL's dynamic
threading, and an allocator that reuses activation memory.

**Linear layers.**  torch computes a float32 ``F.linear`` on the CPU with MKL's sgemm.  On AMD
processors MKL takes a slower code path (on this project's Zen 5 machine: about 200 GFLOP/s on two
cores), while oneDNN -- the library behind torch's ``mkldnn`` ops, shipped in every x86 wheel --
runs AVX-512 kernels at about 420 GFLOP/s on the same matrices.  :func:`linear` computes

    forward   Y = X W^T + b                 (X: M x K tokens by features, W: N x K)
    backward  dX = dY W,   dW = dY^T X,   db = sum_m dY_m

with oneDNN, in IEEE float32 (no reduced-precision math mode): the results equal ``F.linear``'s
up to float32 rounding.  oneDNN is fast when the left operand is row-major, so the weight gradient
transposes whichever of X and dY is narrower (min(K, N) columns) and computes dW^T = X^T dY or
dW = dY^T X from it; with X^T it also gets db = dY^T 1 from the same product.  On other devices,
for other dtypes, under autocast or torch.compile, or when the op is missing, :func:`linear` is
``F.linear``; :func:`torch_linear` switches the fast path off (for comparisons).

**Threads.**  ``torch.set_num_threads`` also switches MKL's dynamic threading off, for the rest of
the process: MKL calls made inside torch's own parallel regions (the small GEMMs of the CPU flash
attention kernel) then start nested thread teams, and attention gets ~1.5x slower even when the
count is set back.  :func:`intra_op_threads` changes only OpenMP's count, which torch's intra-op
parallelism reads, so code that needs one thread for a while leaves training at full speed.

**Gathers and tables.**  :func:`gather_rows` is ``table[index]`` by ``index_select`` on the CPU
(its backward, an index_add, is ~7x faster than the embedding backward there) and by
``F.embedding`` elsewhere (its CUDA backward is deterministic, index_add's is not).
:func:`tabulated` computes a row map ``f`` of token embedding plus position, ``f(E[x] + P)``, as
the table ``T[v n + t] = f(E_v + P_t)`` over every (token, position) pair, gathered at row
``x_bt n + t``: exact, and V n rows of work instead of B n, which pays when the batch B is at
least twice the vocabulary V (:func:`table_pays`).  The encoder computes its first block's Q, K, V
so (``spt_theory.core.model.Encoder.first_qkv``).

**Allocator.**  glibc returns freed blocks of more than a few MiB to the kernel and page-faults
them back in on the next allocation; a training step allocates tens of such activations.
:func:`tune_allocator` keeps them in the heap (``mallopt``: mmap threshold 32 MiB, trim threshold
1 GiB), which removes thousands of page faults per step.  It changes no result.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd.function import once_differentiable

_ONEDNN_LINEAR = getattr(getattr(torch.ops, "mkldnn", None), "_linear_pointwise", None)


def onednn_available() -> bool:
    """Whether this torch build has oneDNN and exposes its linear op."""
    return _ONEDNN_LINEAR is not None and torch.backends.mkldnn.is_available()


_enabled = onednn_available()


def _onednn(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """a @ b^T + bias for 2-D float32 CPU tensors (a row-major; b in any layout)."""
    if _ONEDNN_LINEAR is None:
        raise RuntimeError("this torch build has no oneDNN linear op (onednn_available() is False)")
    return _ONEDNN_LINEAR(a, b, bias, "none", [], "")


class _OneDNNLinear(torch.autograd.Function):
    """Y = X W^T + b with the forward and both gradients computed by oneDNN (see the module doc).

    When K <= N the weight gradient uses X^T; it is made row-major in the forward, while X is
    still in cache, with a row of ones appended when b needs a gradient, so that one product
    [X^T; 1] dY = [dW^T; db^T] gives both gradients.
    """

    @staticmethod
    def forward(ctx, x, weight, bias):
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        n_out, n_in = weight.shape
        ctx.input_shape = x.shape
        ctx.uses_xt = ctx.needs_input_grad[1] and n_in <= n_out
        ctx.folds_bias = ctx.uses_xt and bias is not None and ctx.needs_input_grad[2]
        saved: torch.Tensor | None
        if ctx.uses_xt:
            saved = torch.empty(n_in + ctx.folds_bias, x2.shape[0], dtype=x2.dtype)
            saved[:n_in].copy_(x2.t())
            saved[n_in:].fill_(1.0)
        else:
            saved = x2 if ctx.needs_input_grad[1] else None
        ctx.save_for_backward(saved, weight)
        return _onednn(x2, weight, bias).view(*x.shape[:-1], n_out)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        saved, weight = ctx.saved_tensors
        n_out, n_in = weight.shape
        g2 = grad_out.reshape(-1, n_out).contiguous()
        grad_x = grad_w = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_x = _onednn(g2, weight.t()).view(ctx.input_shape)
        if ctx.uses_xt:      # [dW^T; db^T] = [X^T; 1] dY
            product = _onednn(saved, g2.t())
            grad_w = product[:n_in].t()
            grad_b = product[n_in] if ctx.folds_bias else None
        elif ctx.needs_input_grad[1]:  # dW = dY^T X, with dY^T made row-major
            grad_w = _onednn(g2.t().contiguous(), saved.t())
        if grad_b is None and ctx.needs_input_grad[2]:
            grad_b = g2.sum(0)
        return grad_x, grad_w, grad_b


def _fast_path(x: torch.Tensor, weight: torch.Tensor) -> bool:
    return (_enabled and x.device.type == "cpu" and x.dtype == torch.float32
            and weight.dtype == torch.float32 and x.numel() > 0 and x.dim() >= 1
            and not _cpu_autocast() and not _compiling())


def _compiling() -> bool:
    """Under torch.compile the graph keeps ``F.linear`` (inductor cannot lower the oneDNN op)."""
    is_compiling = getattr(torch.compiler, "is_compiling", None)
    return bool(is_compiling and is_compiling())


def _cpu_autocast() -> bool:
    try:
        return torch.is_autocast_enabled("cpu")
    except TypeError:  # torch < 2.4
        return torch.is_autocast_cpu_enabled()


def gather_rows(table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """table[index], shape index.shape + (d,), by the faster gather of the device (module doc)."""
    if table.device.type == "cpu":
        return table.index_select(0, index.flatten()).view(*index.shape, table.shape[1])
    return F.embedding(index, table)


def table_pays(vocab: int, batch: int) -> bool:
    """Whether a (token, position) table (:func:`tabulated`) does less work than the batch: 2 V <= B."""
    return 2 * vocab <= batch


def tabulated(f, embedding: torch.Tensor, positions: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``f(E[x] + P[:n])`` for token ids ``x`` (batch, n), from the table of ``f`` over every
    (token, position) pair (module doc); ``f`` maps rows (m, d) to rows (m, d')."""
    n = x.shape[1]
    table = f((embedding[:, None, :] + positions[:n]).flatten(0, 1))
    return gather_rows(table, x * n + torch.arange(n, device=x.device))


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``F.linear(x, weight, bias)``, through oneDNN for float32 CPU tensors."""
    if _fast_path(x, weight):
        return _OneDNNLinear.apply(x, weight, bias)
    return F.linear(x, weight, bias)


class Linear(nn.Linear):
    """``nn.Linear`` (same parameters, initialisation and state dict) computed with :func:`linear`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias)


@contextmanager
def torch_linear():
    """Within the block :func:`linear` is plain ``F.linear`` (MKL on the CPU)."""
    global _enabled
    before, _enabled = _enabled, False
    try:
        yield
    finally:
        _enabled = before


@functools.cache
def _openmp_set_num_threads():
    """``omp_set_num_threads`` of the process or of torch's bundled libgomp, or None."""
    if not sys.platform.startswith("linux"):
        return None
    for library in (None, os.path.join(os.path.dirname(torch.__file__), "lib", "libgomp.so.1")):
        try:
            return ctypes.CDLL(library).omp_set_num_threads
        except (OSError, AttributeError):
            continue
    return None


def set_intra_op_threads(n: int) -> None:
    """torch's intra-op thread count, set through OpenMP so MKL keeps its dynamic threading;
    ``torch.set_num_threads`` where the OpenMP call does not reach torch (another runtime)."""
    if n < 1:
        raise ValueError(f"threads: must be >= 1, got {n}")
    setter = _openmp_set_num_threads()
    if setter is not None:
        setter(n)
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)


@contextmanager
def intra_op_threads(n: int) -> Iterator[None]:
    """Run torch on ``n`` intra-op threads inside the block, then restore the previous count."""
    before = torch.get_num_threads()
    set_intra_op_threads(n)
    try:
        yield
    finally:
        set_intra_op_threads(before)


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def tune_allocator() -> bool:
    """Keep freed activation-sized blocks in glibc's heap; True if the settings were applied."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc (e.g. musl)
        return False
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, 32 << 20) and libc.mallopt(_M_TRIM_THRESHOLD, 1 << 30))
