"""3-D convolutions and pools (``F.conv3d``, ``F.conv_transpose3d``, ``F.max_pool3d``,
``F.avg_pool3d``, ``F.adaptive_avg_pool3d`` and their modules): PyTorch's values,
indices and gradients on both devices, second derivatives by finite differences.
They are composed of the 2-D ops over the depth slices each window meets."""

from __future__ import annotations

import numpy as np
import pytest

import gradcore as gc
import gradcore.nn.functional as F
from gradcore.autograd import gradcheck, gradgradcheck

from conftest import host, needs_torch

CONV = [((2, 4, 5, 6, 7), (6, 2, 3, 2, 3), dict(stride=(2, 1, 2), padding=(1, 0, 1),
                                                dilation=(1, 2, 1), groups=2)),
        ((1, 3, 4, 5, 5), (2, 3, 3, 3, 3), dict(padding=1)),
        ((1, 3, 4, 5, 5), (2, 3, 3, 1, 3), dict(padding="same")),
        ((3, 4, 5, 5), (2, 3, 3, 3, 3), dict(padding="valid"))]
CONV_T = [((2, 4, 3, 4, 5), (4, 3, 3, 2, 3), dict(stride=(2, 1, 2), padding=(1, 0, 1),
                                                  output_padding=(1, 0, 1), groups=2)),
          ((1, 3, 3, 3, 3), (3, 2, 2, 3, 2), dict(stride=2, padding=1, dilation=(2, 1, 1)))]
POOLS = [("max_pool3d", (2, 3, 5, 6, 7), dict(kernel_size=2)),
         ("max_pool3d", (2, 3, 5, 6, 7), dict(kernel_size=3, stride=2, padding=1,
                                              return_indices=True)),
         ("max_pool3d", (3, 5, 6, 7), dict(kernel_size=(2, 3, 2), stride=(1, 2, 2),
                                           dilation=(2, 1, 1), ceil_mode=True,
                                           return_indices=True)),
         ("avg_pool3d", (2, 3, 5, 6, 7), dict(kernel_size=3, stride=2, padding=1)),
         ("avg_pool3d", (2, 3, 5, 6, 7), dict(kernel_size=3, stride=2, padding=1,
                                              count_include_pad=False, ceil_mode=True)),
         ("avg_pool3d", (3, 5, 6, 7), dict(kernel_size=(2, 3, 2), stride=(1, 2, 2),
                                           divisor_override=5, ceil_mode=True)),
         ("adaptive_avg_pool3d", (2, 3, 5, 6, 7), dict(output_size=(2, 4, 3))),
         ("adaptive_avg_pool3d", (3, 5, 6, 7), dict(output_size=(None, 1, 3)))]


def _compare(torch, name, tensors, kw, device, distinct=False):
    rng = np.random.default_rng(0)
    ts = [torch.tensor(a, requires_grad=True) for a in tensors]
    gs = [gc.tensor(a, device=device, requires_grad=True) for a in tensors]
    a = getattr(torch.nn.functional, name)(*ts, **kw)
    b = getattr(F, name)(*gs, **kw)
    if isinstance(a, tuple):
        np.testing.assert_array_equal(host(b[1]), a[1].numpy())
        a, b = a[0], b[0]
    np.testing.assert_allclose(host(b.detach()), a.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = rng.standard_normal(tuple(a.shape))
    (a * torch.tensor(w)).sum().backward()
    (b * gc.tensor(w, device=device)).sum().backward()
    for t, g in zip(ts, gs):
        np.testing.assert_allclose(host(g.grad), t.grad.numpy(), rtol=1e-10, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("xs, ws, kw", CONV)
def test_conv3d_is_pytorch_s(xs, ws, kw, device):
    import torch

    rng = np.random.default_rng(1)
    _compare(torch, "conv3d", [rng.standard_normal(xs), rng.standard_normal(ws),
                               rng.standard_normal(ws[0])], kw, device)


@needs_torch
@pytest.mark.parametrize("xs, ws, kw", CONV_T)
def test_conv_transpose3d_is_pytorch_s(xs, ws, kw, device):
    import torch

    rng = np.random.default_rng(2)
    _compare(torch, "conv_transpose3d", [rng.standard_normal(xs), rng.standard_normal(ws),
                                         rng.standard_normal(ws[1] * kw.get("groups", 1))],
             kw, device)


@needs_torch
@pytest.mark.parametrize("name, shape, kw", POOLS)
def test_3d_pools_are_pytorch_s(name, shape, kw, device):
    import torch

    rng = np.random.default_rng(3)
    x = rng.permutation(int(np.prod(shape))).reshape(shape).astype(np.float64)  # (no ties)
    _compare(torch, name, [x], kw, device)


@needs_torch
def test_3d_modules_are_pytorch_s():
    import torch

    rng = np.random.default_rng(4)
    for spec in ("Conv3d(2, 4, 3, padding=1)",
                 "Conv3d(4, 4, (2, 3, 1), stride=2, groups=2, bias=False, "
                 "padding_mode='circular', padding=1)",
                 "ConvTranspose3d(4, 2, 3, stride=2, padding=1, output_padding=1)",
                 "MaxPool3d(3, stride=2, padding=1)", "AvgPool3d(2)",
                 "AvgPool3d((1, 2, 2), stride=1, count_include_pad=False)",
                 "AdaptiveAvgPool3d((1, 2, 3))"):
        ours, theirs = eval("gc.nn." + spec), eval("torch.nn." + spec)
        assert repr(ours) == repr(theirs)
        state = {k: gc.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
        ours.load_state_dict(state)
        channels = getattr(theirs, "in_channels", 4)
        x = rng.standard_normal((2, channels, 4, 5, 6)).astype(np.float32)
        np.testing.assert_allclose(host(ours(gc.tensor(x)).detach()),
                                   theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5,
                                   atol=1e-5)


def test_3d_second_derivatives():
    rng = np.random.default_rng(5)
    x = gc.tensor(rng.standard_normal((1, 1, 2, 3, 2)), requires_grad=True)
    w = gc.tensor(rng.standard_normal((1, 1, 2, 2, 1)), requires_grad=True)
    for fn in (lambda a, b: F.conv3d(a, b, stride=(1, 2, 1), padding=1),
               lambda a, b: F.conv_transpose3d(a, b, stride=2, padding=(1, 0, 0)),
               lambda a, b: F.max_pool3d(a * a, 2, stride=1) * b.sum(),
               lambda a, b: F.avg_pool3d(a * a, 2, padding=1) * b.sum()):
        assert gradcheck(fn, (x, w))
        assert gradgradcheck(fn, (x, w))


def test_3d_errors_as_pytorch():
    x = gc.ones(1, 1, 4, 4, 4)
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool3d(x, 2, padding=2)
    with pytest.raises(RuntimeError, match="Expected 4D or 5D"):
        F.avg_pool3d(gc.ones(4, 4, 4), 2)
    with pytest.raises(RuntimeError, match="Expected 4D \\(unbatched\\) or 5D"):
        F.conv3d(gc.ones(4, 4, 4), gc.ones(1, 1, 2, 2, 2))
