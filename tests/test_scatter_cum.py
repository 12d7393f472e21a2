"""scatter_reduce and scatter's ``reduce=``, cummax/cummin, logcumsumexp and
Tensor.unfold against PyTorch: values, dtypes, errors, first and second derivatives, on
every test device (the CUDA path through the CuPy stand-in, which has no
``multiply.at``)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import gradcore as gc

from conftest import PINNED_TORCH, host, needs_torch

# (inf and NaN computed silently, as in PyTorch: the stand-in warns where NumPy would)
pytestmark = [needs_torch, pytest.mark.filterwarnings(
    "ignore:(invalid value|divide by zero|overflow) encountered:RuntimeWarning")]

REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")
INDEX = np.array([[0, 1, 2, 0], [0, 1, 1, 2], [2, 2, 2, 2]])  # repeats; place (1, 0) unwritten


def _torch():
    import torch  # noqa: PLC0415

    return torch


def _pair(a, requires_grad=True):
    torch = _torch()
    a = np.asarray(a)
    rg = requires_grad and a.dtype.kind == "f"
    return gc.tensor(a, requires_grad=rg), torch.tensor(a, requires_grad=rg)


def _same(got, want, exact=False):
    want = want.detach().numpy()
    assert host(got).dtype == want.dtype
    if exact:
        np.testing.assert_array_equal(host(got), want)
    else:
        np.testing.assert_allclose(host(got), want, rtol=1e-6, atol=1e-9)


def _reduce_inputs(reduce, rng):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    if reduce in ("amax", "amin"):  # ties: among the values sent, and with self
        tie = 5.0 if reduce == "amax" else -5.0
        a[1, 2] = b[1, 2] = b[2, 2] = tie
        b[0, 0] = b[1, 0] = a[0, 0] = tie
    if reduce == "prod":  # a zero of self, one zero sent to a place, two to another
        a[0, 0] = 0.0
        b[2, 3] = 0.0
        b[0, 1] = b[1, 1] = 0.0
    return a, b


# ---- scatter_reduce ----------
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_scatter_reduce_values_and_gradients_match_pytorch(reduce, include_self, device):
    torch = _torch()
    a, b = _reduce_inputs(reduce, np.random.default_rng(0))
    (gx, tx), (gs, ts) = _pair(a), _pair(b)
    gy = gc.scatter_reduce(gx, 0, gc.tensor(INDEX), gs, reduce, include_self=include_self)
    ty = torch.scatter_reduce(tx, 0, torch.tensor(INDEX), ts, reduce,
                              include_self=include_self)
    _same(gy, ty)
    assert gy.grad_fn.name() == "ScatterReduceBackward0"
    w = np.random.default_rng(1).standard_normal((3, 4))
    gy.backward(gc.tensor(w))
    ty.backward(torch.tensor(w))
    _same(gx.grad, tx.grad)
    _same(gs.grad, ts.grad)


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_scatter_reduce_second_derivatives_match_pytorch(reduce, include_self, device):
    torch = _torch()
    rng = np.random.default_rng(2)
    a, b = rng.uniform(0.5, 1.5, (3, 4)), rng.uniform(0.5, 1.5, (3, 4))
    if reduce == "prod":
        a[0, 0] = b[2, 3] = 0.0  # single zeros: PyTorch's double backward is defined there
    (gx, tx), (gs, ts) = _pair(a), _pair(b)
    u, w = rng.standard_normal((3, 4)), rng.standard_normal((2, 3, 4))
    results = []
    for m, x, s in ((gc, gx, gs), (torch, tx, ts)):
        y = m.scatter_reduce(x, 0, m.tensor(INDEX), s, reduce, include_self=include_self)
        gxs = m.autograd.grad([y], [x, s], [m.tensor(u)], create_graph=True)
        total = (gxs[0] * m.tensor(w[0])).sum() + (gxs[1] * m.tensor(w[1])).sum()
        if not total.requires_grad:
            results.append(None)
            continue
        results.append(m.autograd.grad([total], [x, s], allow_unused=True))
    if results[1] is None:
        assert results[0] is None
        return
    for got, want in zip(*results):
        if want is None:
            assert got is None or not host(got).any()
        else:
            _same(got, want)


def test_prod_double_backward_refused_where_zeros_meet_as_pytorch(device):
    x = gc.ones(2, dtype=gc.float64, requires_grad=True)
    src = gc.tensor([0.0, 0.0, 2.0], dtype=gc.float64, requires_grad=True)
    y = x.scatter_reduce(0, gc.tensor([0, 0, 1]), src, "prod")
    gx, gs = gc.autograd.grad([y.sum()], [x, src], create_graph=True)
    assert host(gs).tolist() == [0.0, 0.0, 1.0]
    assert gs.grad_fn.name() == "Error"
    with pytest.raises(RuntimeError, match=r"^scatter_reduce\(\): Double backward is "
                                           r"unsupported for src when >1 zeros"):
        gs.sum().backward()
    (gx.sum() * 2).backward()  # self's gradient stays differentiable
    assert host(src.grad).tolist() == [0.0, 0.0, 2.0]


@pytest.mark.parametrize("dtype", ["float16", "float32", "int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_scatter_reduce_dtypes_match_pytorch(reduce, dtype, device):
    torch = _torch()
    rng = np.random.default_rng(3)
    a = rng.integers(0, 5, (3, 4)).astype(dtype)
    b = rng.integers(0, 5, (3, 4)).astype(dtype)
    if dtype == "int64":
        a = -a  # an integer mean of negative values rounds down
    for include_self in (True, False):
        ga, ta = gc.tensor(a), torch.tensor(a)
        gb, tb = gc.tensor(b), torch.tensor(b)
        if reduce == "mean" and dtype == "bool":
            with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
                gc.scatter_reduce(ga, 0, gc.tensor(INDEX), gb, reduce)
            continue
        got = ga.scatter_reduce(1, gc.tensor(INDEX), gb, reduce, include_self=include_self)
        want = ta.scatter_reduce(1, torch.tensor(INDEX), tb, reduce, include_self=include_self)
        _same(got, want, exact=dtype != "float16")


def test_scatter_reduce_shapes_scalars_and_in_place(device):
    torch = _torch()
    # an index smaller than src: only its region is read, and gets a gradient (PyTorch's
    # own backward fails there on a shape mismatch: compared with src cut to the index)
    (gs, ts) = _pair(np.arange(1.0, 13.0).reshape(3, 4))
    gi, ti = gc.tensor([[0, 0], [4, 4]]), torch.tensor([[0, 0], [4, 4]])
    gy = gc.ones(2, 5, dtype=gc.float64).scatter_reduce(1, gi, gs, "prod")
    ty = torch.ones(2, 5).double().scatter_reduce(1, ti, ts[:2, :2], "prod")
    _same(gy, ty)
    gy.sum().backward()
    ty.sum().backward()
    _same(gs.grad, ts.grad)
    # 0-d tensors are one-element vectors
    _same(gc.tensor(5.0).scatter_reduce(0, gc.tensor(0), gc.tensor(2.0), "sum"),
          torch.tensor(5.0).scatter_reduce(0, torch.tensor(0), torch.tensor(2.0), "sum"))
    # an empty index changes nothing
    _same(gc.ones(2, 3).scatter_reduce(0, gc.zeros(0, 0, dtype=gc.int64), gc.ones(2, 3),
                                       "amax"), torch.ones(2, 3))
    # in place
    g, t = gc.zeros(3), torch.zeros(3)
    assert g.scatter_reduce_(0, gc.tensor([0, 0, 2]), gc.tensor([1.0, 2.0, 4.0]), "mean",
                             include_self=False) is g
    t.scatter_reduce_(0, torch.tensor([0, 0, 2]), torch.tensor([1.0, 2.0, 4.0]), "mean",
                      include_self=False)
    _same(g, t)
    # scatter_add_, its neighbour, in place too
    g.scatter_add_(0, gc.tensor([1, 1]), gc.tensor([1.0, 2.0]))
    t.scatter_add_(0, torch.tensor([1, 1]), torch.tensor([1.0, 2.0]))
    _same(g, t)


def test_scatter_reduce_nan_propagates_as_pytorch(device):
    torch = _torch()
    nan = float("nan")
    for reduce in ("amax", "amin", "sum", "prod"):
        got = gc.zeros(2).scatter_reduce(0, gc.tensor([0, 0, 1]), gc.tensor([nan, 1.0, 2.0]),
                                         reduce)
        want = torch.zeros(2).scatter_reduce(0, torch.tensor([0, 0, 1]),
                                             torch.tensor([nan, 1.0, 2.0]), reduce)
        np.testing.assert_array_equal(host(got), want.numpy())


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "int8", "uint8", "int16",
                                   "bool"])
def test_scatter_reductions_of_every_dtype_match_pytorch_exactly(dtype, device):
    """amax and amin exact in every dtype (CuPy's floating maximum.at compares in float32
    and drops NaN; it and add.at refuse the narrow types): NaN and infinities in self and
    in src, values float32 cannot hold, negative ones; scatter_add and index_add too."""
    torch = _torch()
    rng = np.random.default_rng(12)
    if dtype in ("float64", "float32", "float16"):
        a = rng.standard_normal((3, 5)) * 1e3 + 1e-7  # (float64: beyond float32's digits)
        b = rng.standard_normal((3, 5)) * 1e3
        a[0, 1], a[2, 4], b[1, 2], b[0, 3], b[2, 0] = np.nan, -np.inf, np.nan, np.inf, -np.inf
    elif dtype == "bool":
        a, b = rng.integers(0, 2, (3, 5)), rng.integers(0, 2, (3, 5))
    else:
        a, b = rng.integers(-100, 100, (3, 5)), rng.integers(-100, 100, (3, 5))
    a, b = a.astype(dtype), b.astype(dtype)
    index = np.array([[0, 1, 0, 2, 2], [0, 1, 1, 2, 0], [1, 1, 1, 2, 0]])
    for reduce in ("amax", "amin", "sum"):
        for include_self in (True, False):
            got = gc.tensor(a).scatter_reduce(0, gc.tensor(index), gc.tensor(b), reduce,
                                              include_self=include_self)
            want = torch.tensor(a).scatter_reduce(0, torch.tensor(index), torch.tensor(b),
                                                  reduce, include_self=include_self)
            _same(got, want, exact=dtype != "float16" or reduce != "sum")
    _same(gc.tensor(a).scatter_add(1, gc.tensor(index), gc.tensor(b)),
          torch.tensor(a).scatter_add(1, torch.tensor(index), torch.tensor(b)),
          exact=dtype != "float16")
    _same(gc.tensor(a).index_add(0, gc.tensor([2, 0, 2]), gc.tensor(b)),
          torch.tensor(a).index_add(0, torch.tensor([2, 0, 2]), torch.tensor(b)),
          exact=dtype != "float16")


def test_the_standin_s_ufunc_at_is_cupy_s(standin):
    """What CuPy's ``ufunc.at`` does with an index array (CUDA atomics, see
    cupy/_core/_routines_indexing.pyx and include/cupy/atomics.cuh): the dtypes it
    refuses, and maximum/minimum of floating types by ``fmaxf``/``fminf`` (NaN dropped,
    float64 compared and stored in float32); a boolean-mask assignment and a reduction
    along an axis of a 0-d array, which CuPy synchronizes on and refuses."""
    cp = standin
    idx = cp.asarray(np.array([0, 0, 1]))
    with pytest.raises(TypeError, match=r"cupy.add.at only supports int32, int64, float16, "
                                        r"float32, float64, uint32, uint64 as data type"):
        cp.add.at(cp.zeros(2, dtype=np.uint8), idx, cp.ones(3, dtype=np.uint8))
    for name in ("maximum", "minimum"):
        with pytest.raises(TypeError, match=rf"cupy.{name}.at only supports int32, int64, "
                                            r"float32, float64, uint32, uint64 as data type"):
            getattr(cp, name).at(cp.zeros(2, dtype=np.float16), idx,
                                 cp.ones(3, dtype=np.float16))
    out = cp.asarray(np.array([np.nan, 0.0, 5.0]))
    cp.maximum.at(out, idx, cp.asarray(np.array([np.nan, 1.0 + 1e-12, np.nan])))
    np.testing.assert_array_equal(out.get(), [np.float32(1.0), 0.0, 5.0])
    standin.reset_syncs()
    mask = cp.asarray(np.array([True, False, True]))
    out[mask] = 1.0
    assert standin.host_syncs() == 1
    with pytest.raises(np.exceptions.AxisError, match="axis 0 is out of bounds"):
        cp.asarray(np.array(2.5)).prod(axis=0)
    with pytest.raises(np.exceptions.AxisError):
        cp.sum(cp.asarray(np.array(2.5)), -1)
    assert float(cp.asarray(np.array(2.5)).prod(axis=None)) == 2.5


def _raises_as_pytorch(call):
    """``call(gc)`` raises what ``call(torch)`` raises, with PyTorch's message."""
    torch = _torch()
    with pytest.raises(Exception) as want:
        call(torch)
    message = str(want.value).split("\n")[0]
    with pytest.raises(type(want.value)) as got:
        call(gc)
    assert str(got.value).split("\n")[0] == message


@pytest.mark.parametrize("call", [
    lambda m: m.zeros(3).scatter_reduce(0, m.tensor([0]), m.ones(1), "max2"),
    lambda m: m.zeros(3).scatter_reduce(0, m.tensor([0]), m.ones(1), "add"),
    lambda m: m.scatter_reduce(m.zeros(3), 0, m.tensor([0]), 2.0, "sum"),
    lambda m: m.zeros(3).scatter_reduce(0, m.tensor([0]), m.ones(1, dtype=m.float64), "sum"),
    lambda m: m.zeros(3).scatter_reduce(0, m.tensor([0.0]), m.ones(1), "sum"),
    lambda m: m.zeros(3).scatter_reduce(0, m.tensor([[0]]), m.ones(1, 1), "sum"),
    lambda m: m.zeros(2, 3).scatter_reduce(1, m.tensor([[0, 0, 0, 0]]), m.ones(1, 3), "sum"),
    lambda m: m.zeros(3).scatter_reduce(1, m.tensor([0]), m.ones(1), "sum"),
    lambda m: m.zeros(3).scatter(0, m.tensor([0]), 2.0, reduce="mean"),
    lambda m: m.zeros(3).scatter(0, m.tensor([0]), 2.0, reduce="sum"),
    lambda m: m.zeros(3).scatter(0, m.tensor([0]), m.ones(1), reduce="sum"),
], ids=["reduce", "scatter_names", "src_number", "src_dtype", "index_dtype", "index_dims",
        "index_size", "dim", "scatter_value_mean", "scatter_value_sum", "scatter_src_sum"])
@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter:UserWarning")
def test_scatter_reduce_errors_match_pytorch(call):
    _raises_as_pytorch(call)


def test_scatter_reduce_out_of_range_index_raises():
    with pytest.raises(RuntimeError, match="out of bounds"):
        gc.zeros(3).scatter_reduce(0, gc.tensor([3]), gc.ones(1), "sum")


def test_max_and_min_aliases_have_no_backward_as_pytorch():
    torch = _torch()
    for reduce in ("max", "min"):
        (gx, tx), (gs, ts) = _pair(np.array([1.0, 2.0])), _pair(np.array([3.0, -1.0]))
        gy = gx.scatter_reduce(0, gc.tensor([0, 0]), gs, reduce)
        ty = tx.scatter_reduce(0, torch.tensor([0, 0]), ts, reduce)
        _same(gy, ty)
        with pytest.raises(RuntimeError) as want:
            ty.sum().backward()
        with pytest.raises(RuntimeError) as got:
            gy.sum().backward()
        assert str(got.value) == str(want.value)


# ---- scatter(reduce=) ----------
@pytest.mark.parametrize("reduce", ["add", "multiply"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
def test_scatter_reduce_keyword_matches_pytorch(reduce, dtype, device):
    torch = _torch()
    rng = np.random.default_rng(4)
    a = rng.integers(-3, 4, (3, 4)).astype(dtype)
    b = rng.integers(-3, 4, (2, 4)).astype(dtype)
    ga, ta = gc.tensor(a), torch.tensor(a)
    gi, ti = gc.tensor(INDEX[:2]), torch.tensor(INDEX[:2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        _same(ga.scatter(0, gi, gc.tensor(b), reduce=reduce),
              ta.scatter(0, ti, torch.tensor(b), reduce=reduce), exact=True)
    value = 2.5 if dtype != "bool" else True  # (cast to the tensor's dtype first)
    _same(gc.scatter(ga, 0, gi, value, reduce=reduce),
          torch.scatter(ta, 0, ti, value, reduce=reduce), exact=True)
    # in place
    g, t = ga.clone(), ta.clone()
    assert g.scatter_(1, gi, value, reduce=reduce) is g
    t.scatter_(1, ti, value, reduce=reduce)
    _same(g, t, exact=True)


def test_scatter_reduce_keyword_warns_for_a_tensor_src_only():
    x, idx = gc.zeros(3), gc.tensor([0, 0])
    with pytest.warns(UserWarning, match="The reduce argument of torch.scatter with Tensor "
                                         "src is deprecated"):
        x.scatter(0, idx, gc.ones(2), reduce="add")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert host(x.scatter(0, idx, 1.5, reduce="add")).tolist() == [3.0, 0.0, 0.0]


def test_scatter_reduce_keyword_has_no_gradient_as_pytorch(device):
    x = gc.ones(3, requires_grad=True)
    src = gc.ones(2, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ys = [x.scatter(0, gc.tensor([0, 0]), src, reduce="multiply"),
              x.scatter(0, gc.tensor([0, 0]), 2.0, reduce="add")]
    for y in ys:
        assert y.requires_grad
        assert y.grad_fn.name() == "torch::autograd::NotImplemented"
        with pytest.raises(RuntimeError, match="^derivative for aten::scatter is not "
                                               "implemented$"):
            y.sum().backward()
    with gc.no_grad():
        assert not x.scatter(0, gc.tensor([0]), 2.0, reduce="add").requires_grad


# ---- cummax / cummin ----------
@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("values", [
    [1.0, 3.0, 3.0, 2.0, float("nan"), 5.0, float("nan"), 1.0],
    [2.0, 2.0, 1.0, 3.0, 3.0, -1.0, -1.0],
    [float("inf"), 1.0, -float("inf"), -float("inf")],
], ids=["nan", "ties", "inf"])
def test_cummax_cummin_values_and_indices_match_pytorch(op, values, device):
    torch = _torch()
    g, t = _pair(values, requires_grad=False)
    got, want = getattr(gc, op)(g, 0), getattr(torch, op)(t, 0)
    np.testing.assert_array_equal(host(got.values), want.values.numpy())
    np.testing.assert_array_equal(host(got.indices), want.indices.numpy())
    assert got.indices.dtype == gc.int64
    assert type(got).__name__ == op
    values, indices = got  # a pair, as PyTorch's return type
    assert values is got.values and indices is got.indices


@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool", "float16", "float32"])
def test_cummax_cummin_dtypes_and_dims_match_pytorch(op, dtype, device):
    torch = _torch()
    a = np.random.default_rng(5).integers(0, 3, (3, 5, 4)).astype(dtype)
    g, t = gc.tensor(a), torch.tensor(a)
    for dim in (0, 1, -1):
        got = getattr(g, op)(dim)
        want = getattr(t, op)(dim=dim)
        _same(got.values, want.values, exact=True)
        _same(got.indices, want.indices, exact=True)


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin_gradients_match_pytorch(op, device):
    torch = _torch()
    a = np.array([[1.0, 3.0, 3.0, 2.0, 0.5], [-1.0, -1.0, 2.0, -3.0, 2.0]])
    (g, t), u = _pair(a), np.arange(10.0).reshape(2, 5)
    gv, tv = getattr(gc, op)(g, 1).values, getattr(torch, op)(t, 1).values
    assert gv.grad_fn.name() == tv.grad_fn.name()
    gv.backward(gc.tensor(u))
    tv.backward(torch.tensor(u))
    _same(g.grad, t.grad)
    # second order: the gradient is linear in the incoming one
    g2 = gc.tensor(a, requires_grad=True)
    gu = gc.tensor(u, requires_grad=True)
    (first,) = gc.autograd.grad([getattr(g2, op)(0).values], [g2], [gu], create_graph=True)
    (again,) = gc.autograd.grad([(first * gc.tensor(a)).sum()], [gu])
    t2 = torch.tensor(a, requires_grad=True)
    tu = torch.tensor(u, requires_grad=True)
    (tfirst,) = torch.autograd.grad([getattr(t2, op)(0).values], [t2], [tu], create_graph=True)
    (tagain,) = torch.autograd.grad([(tfirst * torch.tensor(a)).sum()], [tu])
    _same(again, tagain)


@pytest.mark.parametrize("op", ["cummax", "cummin", "logcumsumexp"])
def test_cumulative_zero_d_empty_and_errors_match_pytorch(op, device):
    torch = _torch()
    for shape, dim in (((), 0), ((), -1), ((0, 3), 1), ((2, 0), 1)):
        a = np.full(shape, 3.0, dtype=np.float32)
        got, want = getattr(gc, op)(gc.tensor(a), dim), getattr(torch, op)(torch.tensor(a), dim)
        got, want = (got, want) if op == "logcumsumexp" else (got.values, want.values)
        assert tuple(got.shape) == tuple(want.shape)
        _same(got, want, exact=True)
    _raises_as_pytorch(lambda m: getattr(m, op)(m.zeros(2, 3), 2))
    if PINNED_TORCH:
        _raises_as_pytorch(lambda m: getattr(m, op)(m.zeros(3), 0.5))
    else:  # (PyTorch 2.11's parser: "cummax() received an invalid combination of arguments")
        with pytest.raises(TypeError, match=re.escape(
                f"{op}(): argument 'dim' (position 2) must be int, not float")):
            getattr(gc, op)(gc.zeros(3), 0.5)
    with pytest.raises(TypeError):
        getattr(gc, op)(gc.zeros(3))


# ---- logcumsumexp ----------
def test_logcumsumexp_values_match_pytorch_without_overflow(device):
    torch = _torch()
    inf, nan = float("inf"), float("nan")
    for values in ([-1000.0, 0.0, 1000.0, -inf, inf], [-inf, -inf, 1.0], [inf, inf, 1.0],
                   [nan, 1.0, 2.0], [1e30, 1e30, -1e30]):
        for dtype in ("float32", "float64"):
            g = gc.tensor(values, dtype=getattr(gc, dtype))
            t = torch.tensor(values, dtype=getattr(torch, dtype))
            np.testing.assert_allclose(host(gc.logcumsumexp(g, 0)),
                                       torch.logcumsumexp(t, 0).numpy(), rtol=1e-6)
    a = np.random.default_rng(6).standard_normal((3, 40, 2)) * 30
    for dtype, rtol in (("float16", 2e-3), ("float32", 1e-6), ("float64", 1e-12)):
        g, t = gc.tensor(a, dtype=getattr(gc, dtype)), torch.tensor(a).to(getattr(torch, dtype))
        for dim in (0, 1, -1):
            got = g.logcumsumexp(dim)
            assert got.dtype == g.dtype
            np.testing.assert_allclose(host(got).astype(np.float64),
                                       t.logcumsumexp(dim).double().numpy(), rtol=rtol)


def test_logcumsumexp_refuses_integers_as_pytorch():
    _raises_as_pytorch(lambda m: m.logcumsumexp(m.tensor([1, 2, 3]), 0))
    _raises_as_pytorch(lambda m: m.logcumsumexp(m.tensor([True, False]), 0))


def test_logcumsumexp_gradients_match_pytorch(device):
    torch = _torch()
    a = np.array([[-1000.0, 0.0, 3.0, -np.inf, 2.0], [0.5, -0.25, 40.0, 1.0, -2.0]])
    u = np.array([[1.0, -2.0, 0.5, 1.0, 0.0], [0.0, 3.0, -1.0, -1.0, 2.0]])
    (g, t) = _pair(a)
    gy, ty = gc.logcumsumexp(g, 1), torch.logcumsumexp(t, 1)
    assert gy.grad_fn.name() == ty.grad_fn.name() == "LogcumsumexpBackward0"
    gy.backward(gc.tensor(u))
    ty.backward(torch.tensor(u))
    _same(g.grad, t.grad)
    # second order, at finite inputs and a gradient without zeros
    a, u = a[1:], np.array([[1.0, 3.0, -1.0, -1.0, 2.0]])
    w = np.random.default_rng(7).standard_normal(a.shape)
    grads = []
    for m in (gc, torch):
        x = m.tensor(a, requires_grad=True)
        gu = m.tensor(u, requires_grad=True)
        (first,) = m.autograd.grad([m.logcumsumexp(x, 1)], [x], [gu], create_graph=True)
        grads.append(m.autograd.grad([(first * m.tensor(w)).sum()], [x, gu]))
    for got, want in zip(*grads):
        _same(got, want)


# ---- Tensor.unfold ----------
def test_unfold_values_shape_and_view_match_pytorch(device):
    torch = _torch()
    a = np.arange(24.0).reshape(2, 3, 4)
    g, t = gc.tensor(a), torch.tensor(a)
    for args in ((0, 1, 1), (1, 2, 1), (1, 3, 2), (2, 2, 3), (-1, 4, 1), (2, 0, 1),
                 (1, 1, 5)):
        got, want = g.unfold(*args), t.unfold(*args)
        assert tuple(got.shape) == tuple(want.shape), args
        _same(got, want, exact=True)
    s = gc.tensor(3.0)
    assert host(s.unfold(0, 1, 1)).tolist() == [3.0]
    assert tuple(s.unfold(-1, 0, 2).shape) == (0,)
    # a view: it sees its base change, and writes into it
    windows = g.unfold(2, 2, 2)
    assert windows._base is g and windows._version == g._version
    g.add_(1.0)
    assert host(windows)[0, 0, 1].tolist() == [3.0, 4.0]
    windows[1, 2, 0, 1] = -1.0
    assert float(host(g)[1, 2, 1]) == -1.0
    assert not hasattr(gc, "unfold")  # (F.unfold is gc.nn.functional.unfold)


def test_unfold_gradients_accumulate_over_overlaps_as_pytorch(device):
    torch = _torch()
    a = np.random.default_rng(8).standard_normal((3, 7))
    for args in ((1, 3, 1), (1, 3, 2), (0, 2, 1), (1, 2, 3)):
        (g, t) = _pair(a)
        gy, ty = g.unfold(*args), t.unfold(*args)
        assert gy.grad_fn.name() == ty.grad_fn.name() == "UnfoldBackward0"
        u = np.random.default_rng(9).standard_normal(tuple(ty.shape))
        (gy * gy).backward(gc.tensor(u))
        (ty * ty).backward(torch.tensor(u))
        _same(g.grad, t.grad)
    # second order: through the gradient's own unfold
    x = gc.tensor(a, requires_grad=True)
    gu = gc.tensor(np.ones((3, 3, 3)), requires_grad=True)
    (first,) = gc.autograd.grad([x.unfold(1, 3, 2) ** 2], [x], [gu], create_graph=True)
    (again,) = gc.autograd.grad([first.sum()], [x])
    tx = torch.tensor(a, requires_grad=True)
    tu = torch.ones((3, 3, 3), dtype=torch.float64, requires_grad=True)
    (tfirst,) = torch.autograd.grad([tx.unfold(1, 3, 2) ** 2], [tx], [tu], create_graph=True)
    (tagain,) = torch.autograd.grad([tfirst.sum()], [tx])
    _same(again, tagain)


@pytest.mark.parametrize("args", [(1, 6, 1), (1, 3, 0), (1, -1, 1), (1, -1, 0), (2, 1, 1),
                                  (1, 2.0, 1), (1, 2, 1.0), (True, 2, 1), (1.0, 2, 1)])
def test_unfold_errors_match_pytorch(args):
    _raises_as_pytorch(lambda m: m.zeros(2, 5).unfold(*args))


def test_nothing_here_waits_for_the_device(standin):
    """On the CUDA stand-in (which counts every host synchronization): forward and
    backward read no value back, prod's product by segments (CuPy has no multiply.at)
    included."""
    rng = np.random.default_rng(10)
    x = gc.tensor(rng.standard_normal((4, 5)), device="cuda", requires_grad=True)
    y = gc.tensor(rng.standard_normal((4, 5)), device="cuda", requires_grad=True)
    idx = gc.tensor([[0, 2, 1, 0, 3], [0, 0, 1, 3, 3]], device="cuda")
    standin.reset_syncs(log=True)
    terms = [gc.scatter_reduce(x, 0, idx, y[:2], reduce, include_self=include_self)
             for reduce in REDUCTIONS for include_self in (True, False)]
    terms += [x.cummax(1).values, gc.cummin(x, 0).values, gc.logcumsumexp(x, 1),
              x.unfold(1, 2, 1).sum(-1)[:, :1] * y[:, :1]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        plain = [x.detach().scatter(0, idx, y[:2].detach(), reduce="multiply"),
                 x.detach().scatter(1, idx, 2.0, reduce="add")]
    sum(t.sum() for t in terms).backward()
    assert standin.host_syncs() == 0, standin.sync_log()
    assert x.grad.device.type == "cuda" and plain[0].device.type == "cuda"
