"""PyTorch's elementwise math functions (tan ... frac): forward values, gradients and node
names against PyTorch in float32 and float64; integer and bool inputs; in-place forms."""

import numpy as np
import pytest

import gradcore as gc

from conftest import host, needs_torch

# name -> input values (inside each function's domain)
_X = np.array([[-1.3, -0.7, -0.2], [0.1, 0.6, 1.4]])
_UNIT = _X / 1.5
_ABOVE_ONE = np.abs(_X) + 1.1
_POSITIVE = np.abs(_X) + 0.05
_INPUTS = {
    "tan": _X, "asin": _UNIT, "acos": _UNIT, "atan": _X * 2, "sinh": _X * 2, "cosh": _X * 2,
    "asinh": _X * 2, "acosh": _ABOVE_ONE, "atanh": _UNIT, "log2": _POSITIVE,
    "log10": _POSITIVE, "exp2": _X * 2, "floor": _X * 2, "ceil": _X * 2,
    "round": np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.3, -1.7]), "trunc": _X * 2,
    "frac": _X * 2,
}
_NAMES = sorted(_INPUTS)
_ROUNDING = ("floor", "ceil", "round", "trunc")


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", _NAMES)
def test_forward_gradient_and_node_match_pytorch(name, dtype):
    import torch

    v = _INPUTS[name]
    x = gc.tensor(v, dtype=getattr(gc, dtype), requires_grad=True)
    t = torch.tensor(v, dtype=getattr(torch, dtype), requires_grad=True)
    y, z = getattr(gc, name)(x), getattr(torch, name)(t)
    assert y.dtype == getattr(gc, dtype)
    assert y.grad_fn.name() == z.grad_fn.name()
    rtol = 1e-6 if dtype == "float32" else 1e-13
    np.testing.assert_allclose(host(y.detach()), z.detach().numpy(), rtol=rtol, atol=0)
    u = np.random.default_rng(0).standard_normal(v.shape)
    y.backward(gc.tensor(u, dtype=getattr(gc, dtype)))
    z.backward(torch.tensor(u, dtype=getattr(torch, dtype)))
    np.testing.assert_allclose(host(x.grad), t.grad.numpy(), rtol=4 * rtol, atol=0)
    # the method form is the same function
    np.testing.assert_array_equal(host(getattr(x.detach(), name)()), host(y.detach()))


@needs_torch
@pytest.mark.parametrize("name", _ROUNDING)
def test_rounding_gradient_is_zeros_even_for_inf_gradients(name):
    x = gc.tensor([0.3, 1.7], requires_grad=True)
    getattr(gc, name)(x).backward(gc.tensor([float("inf"), float("nan")]))
    np.testing.assert_array_equal(host(x.grad), [0.0, 0.0])


def test_round_halves_to_even():
    x = gc.tensor([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5])
    np.testing.assert_array_equal(host(gc.round(x)), [-2.0, -2.0, -0.0, 0.0, 2.0, 2.0])


@needs_torch
@pytest.mark.parametrize("name", _NAMES)
def test_integer_and_bool_inputs_as_pytorch(name):
    import torch

    for v, tdt, gdt in (([1, 2, 3], torch.int64, gc.int64), ([1, 2, 3], torch.int32, gc.int32),
                        ([True, False, True], torch.bool, gc.bool)):
        try:
            expected = getattr(torch, name)(torch.tensor(v, dtype=tdt))
        except NotImplementedError as exc:
            with pytest.raises(NotImplementedError, match=str(exc).split(" (")[0]):
                getattr(gc, name)(gc.tensor(v, dtype=gdt))
            continue
        got = getattr(gc, name)(gc.tensor(v, dtype=gdt))
        assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
        np.testing.assert_allclose(host(got), expected.numpy(), rtol=1e-6)


def test_rounding_an_integer_tensor_copies_it():
    x = gc.tensor([1, 2, 3])
    y = gc.floor(x)
    y[0] = 7
    assert host(x).tolist() == [1, 2, 3]


@needs_torch
@pytest.mark.parametrize("name", [n for n in _NAMES if n not in ("asinh", "acosh", "atanh")])
def test_in_place_forms(name):
    import torch

    v = _INPUTS[name]
    a = gc.tensor(v, requires_grad=True)
    b = a * 1
    assert getattr(b, name + "_")() is b
    ta = torch.tensor(v, dtype=torch.float32, requires_grad=True)
    tb = ta * 1
    getattr(tb, name + "_")()
    assert b.grad_fn.name() == tb.grad_fn.name()
    np.testing.assert_allclose(host(b.detach()), tb.detach().numpy(), rtol=1e-6)
    b.sum().backward()
    tb.sum().backward()
    np.testing.assert_allclose(host(a.grad), ta.grad.numpy(), rtol=1e-5)


@pytest.mark.parametrize("name", ["tan", "sinh", "cosh", "asin", "log2", "exp2"])
def test_second_derivative_through_the_composite(name):
    v = _INPUTS[name]
    x = gc.tensor(v, dtype=gc.float64, requires_grad=True)
    (g,) = gc.autograd.grad([getattr(gc, name)(x).sum()], [x], create_graph=True)
    (gg,) = gc.autograd.grad([g.sum()], [x])
    eps = 1e-6

    def grad_at(w):
        xx = gc.tensor(w, dtype=gc.float64, requires_grad=True)
        getattr(gc, name)(xx).sum().backward()
        return host(xx.grad)
    numeric = (grad_at(v + eps) - grad_at(v - eps)) / (2 * eps)
    np.testing.assert_allclose(host(gg), numeric, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name,npname", [("sinh", "sinh"), ("cosh", "cosh"),
                                         ("atanh", "arctanh"), ("log10", "log10")])
def test_float32_is_the_float64_result_rounded_once(name, npname):
    """NumPy's own float32 loops are an ulp off PyTorch's for about a fifth of inputs."""
    v = np.random.default_rng(2).uniform(0.05, 0.95, 4096).astype(np.float32)
    want = getattr(np, npname)(v.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(host(getattr(gc, name)(gc.tensor(v))), want)
