"""F.interpolate (nearest, linear, bilinear) and nn.Upsample against PyTorch."""

import numpy as np
import pytest

import gradcore as gc
import gradcore.nn.functional as F
from gradcore.autograd import gradcheck, gradgradcheck

from conftest import host, needs_torch

CASES = [((2, 3, 4, 5), dict(scale_factor=2)), ((2, 3, 4, 5), dict(size=(3, 7))),
         ((2, 3, 4, 5), dict(scale_factor=(1.5, 0.5))), ((2, 3, 4, 5), dict(scale_factor=1.7)),
         ((2, 3, 4, 5), dict(size=(7, 3), mode="bilinear")),
         ((2, 3, 4, 5), dict(size=(7, 3), mode="bilinear", align_corners=True)),
         ((2, 3, 4, 5), dict(scale_factor=1.7, mode="bilinear", recompute_scale_factor=True)),
         ((2, 3, 5), dict(scale_factor=2, mode="linear")),
         ((2, 3, 5), dict(size=7, mode="linear", align_corners=True)), ((2, 3, 5), dict(size=3))]


@needs_torch
@pytest.mark.parametrize("shape, kw", CASES)
def test_values_and_gradients_are_pytorch_s(shape, kw, device):
    import torch

    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)
    g = gc.tensor(x, device=device, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    a, b = F.interpolate(g, **kw), torch.nn.functional.interpolate(t, **kw)
    np.testing.assert_allclose(host(a.detach()), b.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = rng.standard_normal(tuple(b.shape))
    (a * gc.tensor(w, device=device)).sum().backward()
    (b * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(host(g.grad), t.grad.numpy(), rtol=1e-10, atol=1e-12)


@needs_torch
def test_modules_and_errors_as_pytorch():
    import torch

    for spec in ("Upsample(scale_factor=2)",
                 "Upsample(size=(3, 4), mode='bilinear', align_corners=True)",
                 "UpsamplingNearest2d(scale_factor=3)", "UpsamplingBilinear2d(size=5)"):
        ours, theirs = eval("gc.nn." + spec), eval("torch.nn." + spec)
        assert repr(ours) == repr(theirs)
        x = np.random.default_rng(1).standard_normal((1, 2, 3, 4))
        np.testing.assert_allclose(host(ours(gc.tensor(x))), theirs(torch.tensor(x)).numpy(),
                                   rtol=1e-10)
    x = gc.ones(1, 1, 4, 4)
    for kw, error, match in ((dict(), ValueError, "either size or scale_factor"),
                             (dict(size=3, scale_factor=2), ValueError, "only one of"),
                             (dict(size=3, align_corners=True), ValueError, "align_corners"),):
        with pytest.raises(error, match=match):
            F.interpolate(x, **kw)
    with pytest.raises(NotImplementedError, match="bilinear mode needs 4D input"):
        F.interpolate(gc.ones(1, 1, 4), size=3, mode="bilinear")


def test_bilinear_second_derivatives():
    x = gc.tensor(np.random.default_rng(2).standard_normal((1, 2, 3, 3)), requires_grad=True)
    fn = lambda t: F.interpolate(t, size=(4, 5), mode="bilinear") ** 2  # noqa: E731
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))
