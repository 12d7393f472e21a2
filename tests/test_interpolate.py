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
         ((2, 3, 5), dict(size=7, mode="linear", align_corners=True)), ((2, 3, 5), dict(size=3)),
         # PyTorch's CPU special cases: a kept size is a copy, a doubled one (nearest) a
         # shift; nearest's float32 source 3 * float32(1 / 0.6) rounds up to 5
         ((1, 2, 7), dict(scale_factor=0.6)), ((1, 2, 5, 3), dict(scale_factor=(1.1, 2.1))),
         ((1, 2, 5), dict(scale_factor=1.1, mode="linear")),
         ((1, 2, 5, 3), dict(scale_factor=(1.1, 0.7), mode="bilinear")),
         # the other modes: nearest-exact, bicubic (4-D), trilinear and nearest (5-D), area
         ((1, 2, 5), dict(size=3, mode="nearest-exact")),
         ((1, 2, 5), dict(scale_factor=2.5, mode="nearest-exact")),
         ((1, 2, 4, 5), dict(size=(7, 3), mode="bicubic")),
         ((1, 2, 4, 5), dict(size=(7, 8), mode="bicubic", align_corners=True)),
         ((1, 2, 4, 5), dict(scale_factor=1.7, mode="bicubic")),
         ((1, 2, 3, 4, 5), dict(size=(5, 6, 2), mode="trilinear")),
         ((1, 2, 3, 4, 5), dict(size=(5, 6, 2), mode="trilinear", align_corners=True)),
         ((1, 2, 3, 4, 5), dict(scale_factor=2)),
         ((1, 2, 3, 4, 5), dict(size=(4, 3, 7), mode="nearest-exact")),
         ((1, 2, 6, 7), dict(size=(4, 3), mode="area")), ((2, 3, 7), dict(size=4, mode="area"))]


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
    with pytest.raises(NotImplementedError, match="trilinear mode needs 5D input"):
        F.interpolate(gc.ones(1, 1, 4, 4), size=3, mode="trilinear")
    with pytest.raises(NotImplementedError, match=r"Only 3D, 4D and 5D .*\(got bogus\)"):
        F.interpolate(x, size=3, mode="bogus")
    with pytest.raises(ValueError, match="align_corners"):
        F.interpolate(x, size=3, mode="area", align_corners=False)


def test_source_pixels_are_pytorch_cpu_s(device):
    """As PyTorch's CPU kernels (on every device): an axis kept at its size is copied
    whatever the scale factor, nearest doubling an axis takes pixel i // 2, and nearest's
    floor(i * s) is taken in float32 (3 * float32(1 / 0.6) is 5.0 there)."""
    def sources(n, **kw):
        x = gc.arange(float(n), device=device).reshape(1, 1, n)
        return host(F.interpolate(x, **kw))[0, 0].tolist()

    assert sources(7, scale_factor=0.6) == [0, 1, 3, 5]
    assert sources(5, scale_factor=1.1) == [0, 1, 2, 3, 4]
    assert sources(5, scale_factor=1.1, mode="linear") == [0, 1, 2, 3, 4]
    assert sources(3, scale_factor=2.1) == [0, 0, 1, 1, 2, 2]
    x = gc.ones(1, 1, 3, device=device, requires_grad=True)
    y = F.interpolate(x, size=3)  # a new tensor, in the graph
    assert y is not x
    y.sum().backward()
    np.testing.assert_array_equal(host(x.grad), np.ones((1, 1, 3)))


def test_bilinear_second_derivatives():
    x = gc.tensor(np.random.default_rng(2).standard_normal((1, 2, 3, 3)), requires_grad=True)
    fn = lambda t: F.interpolate(t, size=(4, 5), mode="bilinear") ** 2  # noqa: E731
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


@needs_torch
@pytest.mark.parametrize("shape, r", [((2, 8, 3, 2), 2), ((9, 2, 1), 3), ((2, 1, 4, 3, 2), 2),
                                      ((0, 4, 2, 2), 2), ((1, 3, 2, 2), 1)])
def test_pixel_shuffle_and_unshuffle_are_pytorch_s(shape, r, device):
    # pytorch/examples' super_resolution ends its network with nn.PixelShuffle
    import torch

    x = np.random.default_rng(0).standard_normal(shape)
    g = gc.tensor(x, device=device, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    out, want = gc.nn.PixelShuffle(r)(g), torch.nn.PixelShuffle(r)(t)
    np.testing.assert_array_equal(host(out), want.detach().numpy())
    assert out.grad_fn.name() == "PixelShuffleBackward0"
    w = np.random.default_rng(1).standard_normal(tuple(want.shape))
    if w.size:  # (PyTorch's PixelShuffleBackward0 refuses an empty batch's gradient)
        out.backward(gc.tensor(w, device=device), retain_graph=True)
        want.backward(torch.tensor(w))
        np.testing.assert_array_equal(host(g.grad), t.grad.numpy())
        assert gradgradcheck(lambda a: F.pixel_shuffle(a, r) ** 2, (g,))
    back = gc.nn.PixelUnshuffle(r)(out)
    np.testing.assert_array_equal(host(back), torch.nn.PixelUnshuffle(r)(want).detach().numpy())
    assert back.grad_fn.name() == ("PixelUnshuffleBackward0" if w.size else "CloneBackward0")
    assert repr(gc.nn.PixelShuffle(r)) == repr(torch.nn.PixelShuffle(r))
    assert repr(gc.nn.PixelUnshuffle(r)) == repr(torch.nn.PixelUnshuffle(r))
    assert gc.pixel_shuffle is F.pixel_shuffle


@needs_torch
@pytest.mark.parametrize("fn, args", [("pixel_shuffle", ((2, 3), 2)),
                                      ("pixel_shuffle", ((1, 5, 2, 2), 2)),
                                      ("pixel_shuffle", ((1, 4, 2, 2), 0)),
                                      ("pixel_shuffle", ((1, 4, 2, 2), 2.0)),
                                      ("pixel_unshuffle", ((2, 3), 2)),
                                      ("pixel_unshuffle", ((1, 5, 3, 2), 2)),
                                      ("pixel_unshuffle", ((1, 5, 2, 3), 2)),
                                      ("pixel_unshuffle", ((1, 4, 2, 2), -1))])
def test_pixel_shuffle_errors_are_pytorch_s(fn, args):
    import torch

    shape, r = args
    with pytest.raises(Exception) as want:
        getattr(torch.nn.functional, fn)(torch.ones(shape), r)
    with pytest.raises(type(want.value)) as got:
        getattr(F, fn)(gc.ones(shape), r)
    assert str(got.value) == str(want.value)
