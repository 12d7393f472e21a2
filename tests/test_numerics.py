"""Numerical conventions that follow PyTorch 2.13 (issue 11, items 11-14 and 20):
0-d reductions, var/std and prod at degenerate sizes, dtypes of gradients and of
integer division, pow's gradients at a zero base, gradients at NaN and inf, and the
rounding of float16 and float32 transcendental functions.

Each test states the expected values (so it means something without PyTorch) and,
where PyTorch is installed, compares with it as well."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import gradcore as gc

from conftest import host, needs_torch

nan, inf = float("nan"), float("inf")


def _lib(name):
    if name == "gc":
        return gc
    import torch
    return torch


def _same(a, b):
    """Equal values (NaN equal to NaN), signs of zeros included."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_array_equal(a, b)
    num = ~np.isnan(a)
    assert (np.signbit(a[num]) == np.signbit(b[num])).all(), (a, b)


def _values(t):
    return host(t) if isinstance(t, gc.Tensor) else t.detach().numpy()


LIBS = ["gc", pytest.param("torch", marks=needs_torch)]


# ---- item 11: 0-d tensors ----------
@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("op", ["sum", "logsumexp", "prod", "mean", "amax", "norm"])
@pytest.mark.parametrize("dim", [0, -1])
def test_reductions_of_a_0d_tensor_accept_dim_0_and_minus_1(op, dim, lib, device):
    m = _lib(lib)
    x = m.tensor(2.5, dtype=m.float64, requires_grad=True)
    y = m.norm(x, dim=dim) if op == "norm" else getattr(x, op)(dim)
    assert tuple(y.shape) == ()
    assert y.item() == 2.5
    (y * 4).backward()
    assert x.grad.item() == 4.0
    kept = x.sum(dim, keepdim=True)
    assert tuple(kept.shape) == ()


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("op", ["argmax", "argmin", "prod"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_arg_and_prod_of_a_0d_tensor_along_dim_0_and_minus_1(op, keepdim, lib, device):
    """(CuPy's reductions refuse an axis on a 0-d array, where NumPy's take 0 and -1.)"""
    m = _lib(lib)
    x = m.tensor(-2.5, dtype=m.float32)
    for dim in (0, -1):
        y = getattr(x, op)(dim, keepdim=keepdim)
        assert tuple(y.shape) == () and y.item() == (0 if op != "prod" else -2.5)


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("which", ["max", "min"])
def test_max_min_with_dim_of_a_0d_tensor_stay_in_the_graph(which, lib, device):
    m = _lib(lib)
    x = m.tensor(3.0, requires_grad=True)
    values, indices = getattr(x, which)(0)
    assert values.grad_fn is not None
    assert values.grad_fn.name() == ("MaxBackward0" if which == "max" else "MinBackward0")
    assert int(indices) == 0
    (values * 4).backward()
    assert float(x.grad) == 4.0  # was 1: the op dropped out of the graph


@pytest.mark.parametrize("lib", LIBS)
def test_nonzero_of_a_0d_tensor_has_no_columns(lib, device):
    m = _lib(lib)
    assert tuple(m.tensor(2.0).nonzero().shape) == (1, 0)
    assert tuple(m.tensor(0.0).nonzero().shape) == (0, 0)
    (idx,) = m.tensor(2.0).nonzero(as_tuple=True)
    assert idx.tolist() == [0]


# ---- item 12: var / std / prod at degenerate sizes ----------
_VAR_CASES = [  # (input, keyword arguments, var, var's gradient of sum)
    ([3.0], {}, nan, [nan]),
    ([3.0], {"dim": 0}, nan, [nan]),
    ([1.0, 2.0], {"correction": 2}, inf, [inf, inf]),  # inf where x != mean
    ([1.0, 1.0], {"correction": 2}, nan, [nan, nan]),
    ([1.0, 2.0], {"correction": 3}, inf, [inf, inf]),
    ([1.0, 2.0], {"correction": 2, "dim": 0}, inf, [-inf, inf]),  # inf * (x - mean)
    ([1.0, 2.0], {"correction": 3, "dim": 0}, inf, [1.0, -1.0]),  # 2 / (n - c) < 0
    ([[1.0, 2.0]], {"dim": 0}, [nan, nan], [[nan, nan]]),
    ([], {}, nan, []),
    ([], {"dim": 0}, nan, []),
    (3.0, {}, nan, nan),
    (3.0, {"dim": 0}, nan, nan),
]


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("case", range(len(_VAR_CASES)))
def test_var_and_std_where_correction_reaches_n_give_nan_and_inf(case, lib, device):
    m = _lib(lib)
    vals, kw, expected, expected_grad = _VAR_CASES[case]
    x = m.tensor(vals, dtype=m.float64, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = x.var(**kw)
    assert any("degrees of freedom is <= 0" in str(w.message) for w in caught)
    _same(_values(y), expected)
    y.sum().backward()  # raised ZeroDivisionError
    _same(_values(x.grad), expected_grad)
    x2 = m.tensor(vals, dtype=m.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = x2.std(**kw)
    s.sum().backward()  # d std = d var / (2 std)
    with np.errstate(all="ignore"):
        _same(_values(x2.grad), np.asarray(expected_grad) / (2 * np.sqrt(expected)))


@pytest.mark.parametrize("lib", LIBS)
def test_var_over_an_empty_dim_is_nan_with_an_empty_gradient(lib, device):
    m = _lib(lib)
    x = m.zeros(0, 3, dtype=m.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = x.var(0)
    _same(_values(y), [nan, nan, nan])
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 3)


@pytest.mark.parametrize("lib", LIBS)
def test_prod_of_an_empty_tensor_is_one_with_an_empty_gradient(lib, device):
    m = _lib(lib)
    x = m.zeros(0, dtype=m.float64, requires_grad=True)
    y = x.prod()
    assert y.item() == 1.0
    y.backward()  # raised ValueError (cannot reshape)
    assert tuple(x.grad.shape) == (0,)
    x = m.zeros(2, 0, dtype=m.float64, requires_grad=True)
    y = x.prod(1)
    _same(_values(y), [1.0, 1.0])
    y.sum().backward()
    assert tuple(x.grad.shape) == (2, 0)


# ---- item 13: dtypes ----------
@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("op", ["sum", "sum_dim", "mean", "prod"])
def test_a_reduction_with_dtype_sends_the_gradient_in_the_inputs_dtype(op, lib, device):
    m = _lib(lib)
    x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.sum(0, dtype=m.float64) if op == "sum_dim" else getattr(x, op)(dtype=m.float64)
    assert y.dtype == m.float64
    y.backward()
    assert x.grad.dtype == m.float32  # was float64
    expected = {"prod": [6.0, 3.0, 2.0], "mean": [1 / 3] * 3}.get(op, [1.0] * 3)
    np.testing.assert_allclose(_values(x.grad), expected, rtol=1e-7)


@pytest.mark.parametrize("lib", LIBS)
def test_an_integer_tensor_to_a_negative_float_power_is_float32(lib, device):
    m = _lib(lib)
    y = m.tensor([1, 2, 4]) ** -1.0
    assert y.dtype == m.float32
    assert y.tolist() == [1.0, 0.5, 0.25]
    assert (m.tensor([0, 4]) ** -0.5).tolist() == [inf, 0.5]
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not "
                                           "allowed"):
        m.tensor([1, 2]) ** -1


@pytest.mark.parametrize("lib", LIBS)
def test_integer_tensor_powers_with_negative_exponents_follow_pytorch(lib, device):
    m = _lib(lib)
    b = m.tensor([0, 1, -1, 2, -2, 3, 0, -1, 2])
    e = m.tensor([-1, -2, -3, -1, -1, -2, 0, -2, 3])
    y = b ** e  # NumPy raised ValueError, reported as a broadcasting error
    assert y.dtype == m.int64
    assert y.tolist() == [0, 1, -1, 0, 0, 0, 1, 1, 8]
    assert (2 ** m.tensor([-1, 0, 3])).tolist() == [0, 1, 8]
    assert (m.tensor([1, -1, 2], dtype=m.int32) ** m.tensor(-1, dtype=m.int32)).tolist() == \
        [1, -1, 0]


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("dtype", ["int64", "int32", "int16"])
def test_trunc_division_of_integers_keeps_the_integer_dtype(dtype, lib, device):
    m = _lib(lib)
    a = np.arange(-20, 21)
    b = np.array([-7, -3, -1, 1, 2, 5])
    A, B = np.meshgrid(a, b)
    d = getattr(m, dtype)
    q = m.div(m.tensor(A, dtype=d), m.tensor(B, dtype=d), rounding_mode="trunc")
    assert q.dtype == d  # was float64
    expected = np.array([[int(x / y) for x in a] for y in b])
    np.testing.assert_array_equal(_values(q), expected)
    assert m.div(m.tensor([7, -7], dtype=d), 2, rounding_mode="trunc").tolist() == [3, -3]
    assert m.div(7, m.tensor([2, -2], dtype=d), rounding_mode="trunc").tolist() == [3, -3]
    # floats keep rounding toward zero in their own dtype
    assert m.div(m.tensor([7.0, -7.0]), 2, rounding_mode="trunc").tolist() == [3.0, -3.0]


_BY_ZERO = {
    "floor_divide": lambda m, a, b: a // b,
    "remainder": lambda m, a, b: a % b,
    "trunc": lambda m, a, b: m.div(a, b, rounding_mode="trunc"),
    "floor": lambda m, a, b: m.div(a, b, rounding_mode="floor"),
}


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("op", sorted(_BY_ZERO))
def test_integer_division_by_zero_raises(op, lib, device):
    m = _lib(lib)
    fn = _BY_ZERO[op]
    x = m.tensor([7, -7])
    for divisor in (0, m.tensor([1, 0]), m.tensor(0)):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            r = fn(m, x, divisor)
            r.tolist()  # on a GPU the check is read with the values
    assert fn(m, x, m.tensor([2, 3])).tolist() == {
        "floor_divide": [3, -3], "remainder": [1, 2], "trunc": [3, -2],
        "floor": [3, -3]}[op]
    # floats divide by zero without complaint
    r = _values(fn(m, m.tensor([7.0, -7.0]), 0.0))
    assert not np.isfinite(r).all()
    # bools are refused, as PyTorch has no such kernel (NumPy gave int8)
    kernel = {"floor_divide": "div_floor", "floor": "div_floor", "trunc": "div_trunc",
              "remainder": "remainder"}[op]
    with pytest.raises(NotImplementedError, match=f'"{kernel}(_cpu)?" not implemented for '
                                                  "'Bool'"):
        fn(m, m.tensor([True, False]), m.tensor([True, True]))


# ---- item 14: pow at a zero base ----------
@pytest.mark.parametrize("lib", LIBS)
def test_the_exponent_gradient_at_a_zero_base_is_minus_inf_for_negative_exponents(lib, device):
    m = _lib(lib)
    e = m.tensor([-1.0, -0.5, 0.0, 1.0], dtype=m.float64, requires_grad=True)
    y = 0.0 ** e
    _same(_values(y), [inf, inf, 1.0, 0.0])
    y.sum().backward()
    _same(_values(e.grad), [-inf, -inf, 0.0, 0.0])  # was 0 at the negative exponents
    a = m.tensor([0.0, 0.0, 0.0, -1.0, 2.0], dtype=m.float64, requires_grad=True)
    b = m.tensor([-1.0, 0.0, 1.0, 0.5, 2.0], dtype=m.float64, requires_grad=True)
    (a ** b).sum().backward()
    _same(_values(a.grad), [-inf, 0.0, 1.0, nan, 4.0])
    gb = _values(b.grad)
    _same(gb[:4], [-inf, 0.0, 0.0, nan])
    assert gb[4] == pytest.approx(4 * math.log(2))
    # the same rule differentiated again (create_graph)
    e = m.tensor([-1.0, 1.0], dtype=m.float64, requires_grad=True)
    (g,) = m.autograd.grad((0.0 ** e).sum(), e, create_graph=True)
    _same(_values(g), [-inf, 0.0])


@needs_torch
def test_pow_gradients_at_zero_match_pytorch(device):
    import torch

    base = np.array([0.0, 0.0, 0.0, 0.0, 0.5, -2.0])
    exps = np.array([-2.0, -0.5, 0.0, 1.5, -1.0, 2.0])
    out = {}
    for m in (gc, torch):
        a = m.tensor(base, dtype=m.float64, requires_grad=True)
        b = m.tensor(exps, dtype=m.float64, requires_grad=True)
        (a ** b).sum().backward()
        c = m.tensor(exps, dtype=m.float64, requires_grad=True)
        (0.0 ** c).sum().backward()
        out[m.__name__] = [_values(t.grad) for t in (a, b, c)]
    for mine, theirs in zip(out["gradcore"], out["torch"]):
        np.testing.assert_array_equal(mine, theirs)



# ---- item 20: gradients at NaN and inf ----------
def _grad(m, fn, vals, dtype=None):
    x = m.tensor(vals, dtype=dtype or m.float64, requires_grad=True)
    y = fn(m, x)
    y.sum().backward()
    return _values(y), _values(x.grad)


_AT_NAN = [  # (name, fn, input, output, gradient of the sum): PyTorch 2.13's values
    ("max_nan", lambda m, x: x.max(), [1.0, nan, 3.0], nan, [0.0, 1.0, 0.0]),
    ("max_two_nans", lambda m, x: x.max(), [1.0, nan, nan], nan, [0.0, 0.5, 0.5]),
    ("min_nan", lambda m, x: x.min(), [nan, 1.0, 3.0], nan, [1.0, 0.0, 0.0]),
    ("max_inf_ties", lambda m, x: x.max(), [1.0, inf, inf], inf, [0.0, 0.5, 0.5]),
    ("amax_nan", lambda m, x: m.amax(x, 0), [1.0, nan, 3.0], nan, [nan, nan, nan]),
    ("max_dim_nan", lambda m, x: x.max(0)[0], [1.0, nan, 3.0], nan, [0.0, 1.0, 0.0]),
    ("prod_nan", lambda m, x: x.prod(), [1.0, nan, 3.0], nan, [nan, nan, nan]),
    ("prod_inf", lambda m, x: x.prod(), [2.0, inf, 3.0], inf, [inf, nan, inf]),
    ("prod_zero", lambda m, x: x.prod(), [2.0, 0.0, 3.0], 0.0, [0.0, 6.0, 0.0]),
    ("prod_zero_nan", lambda m, x: x.prod(), [0.0, nan, 3.0], nan, [nan, 0.0, nan]),
    ("prod_dim_nan", lambda m, x: x.prod(1), [[1.0, nan, 3.0], [1.0, 2.0, 3.0]], [nan, 6.0],
     [[nan, nan, nan], [6.0, 3.0, 2.0]]),
    ("abs", lambda m, x: x.abs(), [nan, -0.0, 0.0, -inf, -2.0],
     [nan, 0.0, 0.0, inf, 2.0], [0.0, 0.0, 0.0, -1.0, -1.0]),
    ("sign", lambda m, x: x.sign(), [nan, -0.0, 1.0, -inf], [0.0, 0.0, 1.0, -1.0],
     [0.0, 0.0, 0.0, 0.0]),
    ("relu", lambda m, x: m.relu(x), [-0.0, 0.0, nan, -1.0, inf],
     [-0.0, 0.0, nan, 0.0, inf], [0.0, 0.0, 1.0, 0.0, 1.0]),
    ("maximum", lambda m, x: m.maximum(x, m.tensor([1.0, nan, nan, 1.0, 2.0],
                                                   dtype=m.float64)),
     [nan, 1.0, nan, 1.0, 1.0], [nan, nan, nan, 1.0, 2.0], [1.0, 1.0, 1.0, 0.5, 0.0]),
    ("minimum", lambda m, x: m.minimum(x, m.tensor([1.0, nan, nan, 1.0, 2.0],
                                                   dtype=m.float64)),
     [nan, 1.0, nan, 1.0, 1.0], [nan, nan, nan, 1.0, 1.0], [1.0, 1.0, 1.0, 0.5, 1.0]),
    ("clamp", lambda m, x: x.clamp(-1, 1), [nan, 2.0, 0.5, -1.0], [nan, 1.0, 0.5, -1.0],
     [0.0, 0.0, 1.0, 1.0]),
]


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("case", _AT_NAN, ids=[c[0] for c in _AT_NAN])
def test_gradients_at_nan_and_inf_follow_pytorch(case, lib, device):
    m = _lib(lib)
    _, fn, vals, expected, expected_grad = case
    y, g = _grad(m, fn, vals)
    _same(y, expected)
    _same(g, expected_grad)


@pytest.mark.parametrize("case", ["abs", "relu", "maximum", "minimum"])
def test_gradients_at_nan_are_the_same_differentiated_again(case, device):
    # create_graph runs the kernels' composites: the same conventions
    _, fn, vals, _, expected_grad = next(c for c in _AT_NAN if c[0] == case)
    x = gc.tensor(vals, dtype=gc.float64, requires_grad=True)
    (g,) = gc.autograd.grad(fn(gc, x).sum(), x, create_graph=True)
    _same(host(g.detach()), expected_grad)


def test_relu_keeps_negative_zero_on_the_in_place_path_too(device):
    x = gc.tensor(np.full(1 << 17, -0.0, dtype=np.float32))  # large: written in place
    y = gc.relu(x * 1.0)
    assert np.signbit(host(y)).all()


# ---- item 20: float16 and float32 rounding ----------
def _f16_inputs():
    rng = np.random.default_rng(7)
    return (rng.standard_normal((24, 129)) * 4).astype(np.float16)


def test_float16_sigmoid_and_tanh_are_float32_rounded_once(device):
    x = _f16_inputs()
    x32 = x.astype(np.float32)
    got = host(gc.tensor(x).sigmoid())
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, (1 / (1 + np.exp(-x32))).astype(np.float16))
    np.testing.assert_array_equal(host(gc.tensor(x).tanh()), np.tanh(x32).astype(np.float16))


def _lse_half_steps(x, axis):
    """PyTorch's logsumexp of float16: exp, sum (accumulated in float32), log and the
    shift added back, each rounded to float16."""
    h = np.float16
    m = x.max(axis, keepdims=True)
    e = np.exp((x - m).astype(h)).astype(h)
    s = e.astype(np.float32).sum(axis, keepdims=True).astype(h)
    return (np.log(s).astype(h) + m).astype(h).squeeze(axis)


@pytest.mark.parametrize("axis", [0, 1])
def test_float16_logsumexp_rounds_each_step_as_pytorch(axis, device):
    x = _f16_inputs()
    got = host(gc.logsumexp(gc.tensor(x), axis))
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, _lse_half_steps(x, axis))


@needs_torch
@pytest.mark.parametrize("op", ["sigmoid", "tanh", "logsumexp", "log_softmax_dim0"])
def test_float16_forwards_equal_pytorchs(op):
    import torch

    x = _f16_inputs()
    fns = {"sigmoid": lambda m, t: t.sigmoid(), "tanh": lambda m, t: t.tanh(),
           "logsumexp": lambda m, t: m.logsumexp(t, 1),
           # over a dimension other than the last, PyTorch's CPU kernel computes in float32
           # and rounds once, as gradcore does everywhere
           "log_softmax_dim0": lambda m, t: t.log_softmax(0)}
    got = host(fns[op](gc, gc.tensor(x)))
    want = fns[op](torch, torch.from_numpy(x)).numpy()
    np.testing.assert_array_equal(got, want)  # bit for bit (sigmoid: 30% differed)


def _float32_inputs():
    rng = np.random.default_rng(3)
    return np.concatenate([rng.uniform(-10, 10, 20000), rng.standard_normal(20000),
                           rng.uniform(-1e-3, 1e-3, 5000)]).astype(np.float32)


@pytest.mark.parametrize("op", ["expm1", "log1p"])
def test_float32_expm1_and_log1p_are_correctly_rounded(op, device):
    x = _float32_inputs()
    if op == "log1p":
        x = np.abs(x)
    got = host(getattr(gc, op)(gc.tensor(x)))
    assert got.dtype == np.float32
    # computed in float64 and rounded once: NumPy's float32 path is an ulp off for ~7%
    np.testing.assert_array_equal(got, getattr(np, op)(x.astype(np.float64)).astype(np.float32))
    assert float(gc.expm1(gc.tensor(4.0))) == np.float32(53.59815)  # NumPy's own: 53.598152


@needs_torch
@pytest.mark.parametrize("op", ["expm1", "log1p"])
def test_float32_expm1_and_log1p_match_pytorch(op):
    import torch

    x = _float32_inputs()
    if op == "log1p":
        x = np.abs(x)
    got = host(getattr(gc, op)(gc.tensor(x)))
    want = getattr(torch, op)(torch.from_numpy(x)).numpy()
    assert (got != want).mean() < 0.01  # PyTorch's own are an ulp off for < 1%


@needs_torch
@pytest.mark.parametrize("scalar_numerator", [False, True])
def test_float16_division_gradient_does_not_overflow(scalar_numerator):
    """b * b overflows float16 from |b| = 256: the backward computes in float32 as
    PyTorch's does (it gave b's gradient 0 for b = 801)."""
    import torch
    grads = []
    for lib in (gc, torch):
        b = lib.tensor([801.0, 300.0, -2.0], dtype=lib.float16, requires_grad=True)
        a = 2.0 if scalar_numerator else lib.tensor([1.0, 3.0, 5.0], dtype=lib.float16)
        (a / b).sum().backward()
        grads.append(b.grad.float().numpy())
    # (a scalar numerator: PyTorch multiplies by the reciprocal, one subnormal ulp apart)
    np.testing.assert_allclose(grads[0], grads[1], rtol=0, atol=6e-8 if scalar_numerator else 0)
