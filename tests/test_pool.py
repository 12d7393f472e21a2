"""Pooling (max, average, adaptive; 1-D and 2-D) against PyTorch, by finite differences,
on both devices."""

import numpy as np
import pytest

import gradcore as gc
import gradcore.nn.functional as F
from gradcore.autograd import gradcheck, gradgradcheck

from conftest import host, needs_torch

MAX2D = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
         dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, return_indices=True),
         dict(kernel_size=(2, 3), stride=(1, 2), dilation=(2, 1), return_indices=True),
         dict(kernel_size=2, stride=1, ceil_mode=True)]
AVG2D = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
         dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
         dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
         dict(kernel_size=(2, 3), divisor_override=5)]
CASES = ([("max_pool2d", kw, s) for kw in MAX2D for s in ((2, 3, 7, 6), (3, 5, 7))] +
         [("avg_pool2d", kw, (2, 3, 7, 6)) for kw in AVG2D] +
         [("max_pool1d", kw, s) for kw in (dict(kernel_size=2), dict(kernel_size=2, dilation=2),
                                          dict(kernel_size=3, stride=2, padding=1,
                                               ceil_mode=True, return_indices=True))
          for s in ((2, 3, 9), (3, 9))] +
         [("avg_pool1d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                              count_include_pad=False), (2, 3, 9))] +
         [(f, dict(output_size=o), (2, 3, 7, 6)) for f in ("adaptive_avg_pool2d",
                                                           "adaptive_max_pool2d")
          for o in (3, (2, 4), (None, 3), 1)] +
         [("adaptive_max_pool2d", dict(output_size=(3, 4), return_indices=True), (3, 7, 6))] +
         [(f, dict(output_size=o), (2, 3, 10)) for f in ("adaptive_avg_pool1d",
                                                         "adaptive_max_pool1d")
          for o in (4, 3, 5)])


@needs_torch
@pytest.mark.parametrize("name, kw, shape", CASES, ids=lambda v: str(v).replace(" ", ""))
def test_values_indices_and_gradients_are_pytorch_s(name, kw, shape, device):
    import torch

    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    g = gc.tensor(x, device=device, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    a, b = getattr(F, name)(g, **kw), getattr(torch.nn.functional, name)(t, **kw)
    if isinstance(b, tuple):
        np.testing.assert_array_equal(host(a[1]), b[1].numpy())
        assert a[1].dtype == gc.int64
        a, b = a[0], b[0]
    np.testing.assert_allclose(host(a.detach()), b.detach().numpy(), rtol=1e-12)
    w = rng.standard_normal(tuple(b.shape))
    (a * gc.tensor(w, device=device)).sum().backward()
    (b * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(host(g.grad), t.grad.numpy(), rtol=1e-12, atol=1e-14)


@needs_torch
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_low_precision_and_non_contiguous_inputs(dtype):
    import torch

    x = np.random.default_rng(1).standard_normal((2, 3, 9, 8)).astype(dtype)
    g = gc.tensor(x).transpose(2, 3)
    t = torch.tensor(x).transpose(2, 3)
    for f, kw in (("max_pool2d", dict(kernel_size=3, stride=2, padding=1)),
                  ("avg_pool2d", dict(kernel_size=2, ceil_mode=True)),
                  ("adaptive_avg_pool2d", dict(output_size=3))):
        a, b = getattr(F, f)(g, **kw), getattr(torch.nn.functional, f)(t, **kw)
        assert a.dtype == getattr(gc, dtype)
        np.testing.assert_allclose(host(a).astype(np.float64), b.double().numpy(),
                                   rtol=2e-3 if dtype == "float16" else 1e-6, atol=1e-6)


@pytest.mark.parametrize("name, kw", [
    ("max_pool2d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("avg_pool2d", dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    ("adaptive_max_pool2d", dict(output_size=(2, 3))),
    ("adaptive_avg_pool2d", dict(output_size=(2, 3))),
    ("max_pool1d", dict(kernel_size=2, dilation=2)),
])
def test_first_and_second_derivatives_by_finite_differences(name, kw):
    x = gc.tensor(np.random.default_rng(2).permutation(60).reshape(1, 2, 6, 5) / 7.0,
                  dtype=gc.float64, requires_grad=True)  # distinct values: no ties
    if name == "max_pool1d":
        x = x.detach().reshape(2, 3, 10).requires_grad_()
    fn = lambda t: getattr(F, name)(t, **kw)  # noqa: E731
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_max_gradient_goes_to_the_first_maximum_and_nan_propagates():
    x = gc.tensor([[[[1.0, 3.0], [3.0, 2.0]]]], requires_grad=True)
    y, idx = F.max_pool2d(x, 2, return_indices=True)
    y.sum().backward()
    assert idx.item() == 1 and host(x.grad).ravel().tolist() == [0, 1, 0, 0]
    z = F.max_pool2d(gc.tensor([[[[1.0, float("nan")], [3.0, 2.0]]]]), 2)
    assert np.isnan(z.item())


@needs_torch
@pytest.mark.parametrize("call", [
    lambda F, x: F.max_pool2d(x, 2, padding=2),
    lambda F, x: F.avg_pool2d(x, 5),
    lambda F, x: F.max_pool2d(x, 0),
    lambda F, x: F.max_pool2d(x, 2, stride=0),
    lambda F, x: F.max_pool2d(x, 2, dilation=0),
    lambda F, x: F.max_pool2d(x[0, 0], 2),
    lambda F, x: F.max_pool1d(x[0, 0, 0], 2),
])
def test_bad_arguments_raise_pytorch_s_errors(call):
    import torch

    x = np.zeros((1, 2, 4, 4), np.float32)
    with pytest.raises(RuntimeError) as theirs:
        call(torch.nn.functional, torch.tensor(x))
    with pytest.raises(RuntimeError) as ours:
        call(F, gc.tensor(x))
    assert str(ours.value) == str(theirs.value)


@needs_torch
def test_modules_print_and_pool_as_pytorch_s():
    import torch

    for spec in ("MaxPool2d(2)", "MaxPool2d(3, 2, 1, ceil_mode=True)", "MaxPool1d(2)",
                 "AvgPool1d(3, 2)", "AvgPool2d(3, 2)", "AvgPool2d((2, 3), divisor_override=2)",
                 "AdaptiveAvgPool2d((2, None))", "AdaptiveMaxPool2d(3)",
                 "AdaptiveMaxPool1d(3, return_indices=True)", "AdaptiveAvgPool1d(4)"):
        ours, theirs = eval("gc.nn." + spec), eval("torch.nn." + spec)
        assert repr(ours) == repr(theirs)
        x = np.random.default_rng(3).standard_normal((2, 3, 8) if "1d" in spec else (2, 3, 8, 7))
        a, b = ours(gc.tensor(x)), theirs(torch.tensor(x))
        a, b = (a[0], b[0]) if isinstance(b, tuple) else (a, b)
        np.testing.assert_allclose(host(a), b.numpy(), rtol=1e-12)


def test_a_compiled_step_with_pooling_replays_as_eager():
    def make():
        gc.manual_seed(0)
        model = gc.nn.Sequential(gc.nn.Conv2d(1, 4, 3, padding=1), gc.nn.ReLU(),
                                 gc.nn.MaxPool2d(2), gc.nn.Flatten(), gc.nn.Linear(16, 3))
        opt = gc.optim.SGD(model.parameters(), lr=0.1)
        x, y = gc.randn(5, 1, 4, 4), gc.tensor([0, 1, 2, 1, 0])

        def step():
            loss = gc.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss
        return model, step

    (m1, eager), (m2, compiled) = make(), make()
    compiled = gc.compile(compiled, fullgraph=True)
    for _ in range(4):
        assert eager().item() == compiled().item()
    for p, q in zip(m1.parameters(), m2.parameters()):
        np.testing.assert_array_equal(host(p), host(q))


@needs_torch
@pytest.mark.parametrize("shape, kw, nd, size", [
    ((2, 3, 6, 8), dict(kernel_size=2), 2, None),
    ((2, 3, 5, 7), dict(kernel_size=3, stride=2, padding=1), 2, (5, 7)),
    ((3, 9), dict(kernel_size=3, stride=2), 1, None), ((2, 3, 9), dict(kernel_size=2), 1, (9,))])
def test_max_unpool_is_pytorch_s(shape, kw, nd, size, device):
    """``F.max_unpool1d/2d`` and their modules: each value put back at its pooled index,
    the unpooled size (given or PyTorch's default), the gradient a gather; PyTorch's
    errors for a bad output size and an index outside the output."""
    import torch

    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape)
    pool, unpool = f"max_pool{nd}d", f"max_unpool{nd}d"
    ty, ti = getattr(torch.nn.functional, pool)(torch.tensor(x), return_indices=True, **kw)
    gy, gi = getattr(F, pool)(gc.tensor(x, device=device), return_indices=True, **kw)
    t, g = ty.clone().requires_grad_(), gc.tensor(ty.numpy(), device=device,
                                                   requires_grad=True)
    a = getattr(torch.nn.functional, unpool)(t, ti, output_size=size, **kw)
    b = getattr(F, unpool)(g, gi, output_size=size, **kw)
    np.testing.assert_array_equal(host(b.detach()), a.detach().numpy())
    w = rng.standard_normal(tuple(a.shape))
    (a * torch.tensor(w)).sum().backward()
    (b * gc.tensor(w, device=device)).sum().backward()
    np.testing.assert_array_equal(host(g.grad), t.grad.numpy())
    module = getattr(gc.nn, f"MaxUnpool{nd}d")(**kw)
    assert repr(module) == repr(getattr(torch.nn, f"MaxUnpool{nd}d")(**kw))
    np.testing.assert_array_equal(host(module(g, gi, size).detach()), a.detach().numpy())


def test_max_unpool_errors():
    y, i = F.max_pool2d(gc.arange(16.0).reshape(1, 1, 4, 4), 2, return_indices=True)
    with pytest.raises(ValueError, match=r'invalid output_size "\(9, 9\)" \(dim 0 must be '
                                         r"between 2 and 6\)"):
        F.max_unpool2d(y, i, 2, output_size=(9, 9))
    with pytest.raises(RuntimeError, match=r"Found an invalid max index: 50 \(output volumes "
                                           r"are of size 4x4\)"):
        F.max_unpool2d(y, i * 10, 2)
