"""cumsum and cumprod against PyTorch: values, dtypes, errors, gradients (also where the
input has zeros, for cumprod) and second derivatives; prod's second derivatives where
its input has zeros."""

from __future__ import annotations

import numpy as np
import pytest

import gradcore as gc

from conftest import host, needs_torch

# (the CUDA stand-in warns where NumPy would: the branch not taken divides by zero)
pytestmark = [needs_torch, pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")]

OPS = ("cumsum", "cumprod")


def _torch():
    import torch  # noqa: PLC0415

    return torch


def _pair(a, dtype="float64", requires_grad=True):
    torch = _torch()
    g = gc.tensor(a, dtype=getattr(gc, dtype), requires_grad=requires_grad)
    t = torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=requires_grad)
    return g, t


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_values_match_pytorch_bit_for_bit(op, dtype, device):
    rng = np.random.default_rng(0)
    a = rng.uniform(0.9, 1.1, (3, 200)) if op == "cumprod" else rng.standard_normal((3, 200))
    g, t = _pair(a.astype(dtype), dtype, requires_grad=False)
    for dim in (0, 1, -1, -2):
        got, want = host(getattr(gc, op)(g, dim)), getattr(_torch(), op)(t, dim).numpy()
        if dtype == "float64" and device != "cpu":
            # float16 and float32 are accumulated in a wider type and rounded once, which
            # gives the CPU's bits whatever the order; float64 has no wider type, and a
            # GPU scan (CuPy's, as PyTorch's own CUDA cumsum) combines the terms in a tree,
            # not left to right as PyTorch's CPU loop does: the last bits differ (up to a
            # few ulp of the partial sums on a real GPU). A sequential scan would be n
            # dependent steps: no cheap exact way.
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
        else:
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", OPS)
def test_dtypes_as_pytorch(op):
    torch = _torch()
    for name in ("bool", "uint8", "int8", "int32", "int64", "float16", "float32"):
        a = np.array([[1, 0, 1], [1, 1, 1]]).astype(np.bool_ if name == "bool" else name)
        g, t = gc.tensor(a), torch.tensor(a)
        for kw in ({}, {"dtype": "float32"}, {"dtype": "float64"}, {"dtype": "int32"}):
            gk = {k: getattr(gc, v) for k, v in kw.items()}
            tk = {k: getattr(torch, v) for k, v in kw.items()}
            got, want = getattr(gc, op)(g, 1, **gk), getattr(torch, op)(t, 1, **tk)
            assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (name, kw)
            np.testing.assert_array_equal(host(got), want.numpy())


@pytest.mark.parametrize("op", OPS)
def test_zero_d_and_empty(op, device):
    torch = _torch()
    for dim in (0, -1):
        g, t = _pair(np.array(2.5))
        got, want = getattr(gc, op)(g, dim), getattr(torch, op)(t, dim)
        assert got.shape == () and float(got.detach()) == float(want.detach())
        got.backward(gc.tensor(3.0, dtype=gc.float64))
        want.backward(torch.tensor(3.0, dtype=torch.float64))
        assert float(g.grad) == float(t.grad)
    for shape, dim in (((0,), 0), ((0, 3), 1), ((2, 0), -1), ((2, 0), 0)):
        g, t = _pair(np.zeros(shape))
        got = getattr(gc, op)(g, dim)
        assert got.shape == tuple(getattr(torch, op)(t, dim).shape)
        got.sum().backward()
        assert g.grad.shape == shape


@pytest.mark.parametrize("op", OPS)
def test_bad_dims_raise_pytorchs_errors(op):
    torch = _torch()
    for shape, dim in (((3,), 1), ((3,), -2), ((), 1), ((), -2), ((2, 3), 2), ((2, 3), -3)):
        with pytest.raises(IndexError) as want:
            getattr(torch, op)(torch.zeros(shape), dim)
        with pytest.raises(IndexError) as got:
            getattr(gc, op)(gc.zeros(shape), dim)
        assert str(got.value) == str(want.value)
    with pytest.raises(TypeError, match="must be int, not float"):
        getattr(gc, op)(gc.zeros(3), 0.5)
    with pytest.raises(TypeError):
        getattr(gc, op)(gc.zeros(3))


def test_methods_and_node_names(device):
    x = gc.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    assert x.cumsum(1).grad_fn.name() == "CumsumBackward0"
    assert x.cumprod(-1).grad_fn.name() == "CumprodBackward0"
    np.testing.assert_array_equal(host(x.cumsum(0)), [[1, 2], [4, 6]])
    np.testing.assert_array_equal(host(x.cumprod(1)), [[1, 2], [3, 12]])
    assert gc.ops.cumsum is gc.cumsum and gc.ops.cumprod is gc.cumprod


# inputs along the dim with no zero, one zero (first, middle, last), and several
ZERO_ROWS = [
    [0.7, -1.3, 1.1, 0.9, -0.8],
    [0.0, -1.3, 1.1, 0.9, -0.8],
    [0.7, -1.3, 0.0, 0.9, -0.8],
    [0.7, -1.3, 1.1, 0.9, 0.0],
    [0.7, 0.0, 1.1, 0.0, -0.8],
    [0.0, 0.0, 1.1, 0.9, 0.0],
    [0.0, 0.0, 0.0, 0.0, 0.0],
]


def _first_and_second(f_gc, f_t, a, seed=0):
    """f's value, gradient (for a random cotangent u) and the gradient of <grad, w>
    (create_graph=True), for gradcore and PyTorch."""
    torch = _torch()
    rng = np.random.default_rng(seed)
    results = []
    for lib, f in ((gc, f_gc), (torch, f_t)):
        x = lib.tensor(a, dtype=lib.float64, requires_grad=True)
        y = f(x)
        u = lib.tensor(rng.standard_normal(tuple(y.shape)), dtype=lib.float64)
        w = lib.tensor(rng.standard_normal(a.shape), dtype=lib.float64)
        (gx,) = lib.autograd.grad([y], [x], [u], create_graph=True)
        (ggx,) = lib.autograd.grad([(gx * w).sum()], [x])
        results.append([np.asarray(host(t.detach()) if lib is gc else t.detach().numpy())
                        for t in (y, gx, ggx)])
        rng = np.random.default_rng(seed)  # the same u and w for both
    return results


@pytest.mark.parametrize("row", range(len(ZERO_ROWS)))
@pytest.mark.parametrize("layout", ["1d", "dim0", "dim1", "dim_last_3d"])
def test_cumprod_gradients_with_zeros_match_pytorch(row, layout, device):
    v = np.array(ZERO_ROWS[row])
    a, dim = {"1d": (v, 0), "dim0": (np.stack([v, v[::-1] * 1.5]).T, 0),
              "dim1": (np.stack([v, v[::-1] * 1.5]), 1),
              "dim_last_3d": (np.stack([v, v * 0.5, v[::-1]]).reshape(3, 1, 5), -1)}[layout]
    # (the 3d case swaps in a second differing row: broadcasting shapes along other dims)
    ours, theirs = _first_and_second(lambda x: x.cumprod(dim), lambda x: x.cumprod(dim), a,
                                     seed=row)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 6), 1), ((4, 3, 2), 0), ((2, 5, 3), -2)])
def test_cumsum_gradients_match_pytorch(shape, dim, device):
    a = np.random.default_rng(1).standard_normal(shape)
    ours, theirs = _first_and_second(lambda x: x.cumsum(dim) * x, lambda x: x.cumsum(dim) * x,
                                     a)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-12, atol=1e-12)


def test_cumprod_gradient_of_a_long_dim_with_zeros(device):
    """The doubling scan over a dim that is not a power of two, zeros scattered."""
    rng = np.random.default_rng(2)
    a = rng.uniform(0.8, 1.2, (2, 37))
    a[0, [3, 20]] = 0.0
    a[1, 36] = 0.0
    ours, theirs = _first_and_second(lambda x: x.cumprod(1), lambda x: x.cumprod(1), a)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("zeros", [(), (2,), (1, 3), (0, 2, 4)])
@pytest.mark.parametrize("dim", [None, 0, 1])
def test_prod_second_derivatives_with_zeros_match_pytorch(zeros, dim, device):
    a = np.array([[0.7, -1.3, 1.1], [0.9, -0.8, 1.2]])
    a.reshape(-1)[list(zeros)] = 0.0
    f = (lambda x: x.prod()) if dim is None else (lambda x: x.prod(dim))
    ours, theirs = _first_and_second(f, f, a)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-12, atol=1e-12)
