"""Convolutions, unfold/fold and padding (gradcore.ops.conv, gradcore.kernels.conv,
gradcore.nn.conv).

* forward and gradients against PyTorch over strides, paddings ("same" with even
  kernels included), dilations, groups (depthwise), odd sizes, unbatched and
  non-contiguous inputs, on every test device (the CUDA path through the CuPy stand-in
  launches the window kernels of kernels/gradcore_conv.cuh);
* first and second derivatives by finite differences (gradcheck, gradgradcheck);
* float16 and float32 against float64; integer convolutions;
* PyTorch's error types and messages for bad arguments;
* the modules: parameters, state_dict keys, initialization, printouts, padding modes;
* the CUDA kernels (host build) against their NumPy twins, bit for bit;
* a compiled (gc.compile) convolutional step replays eager's results.

The op table (tests/test_ops_table.py) has rows for the same ops.
"""

from __future__ import annotations

import os
import re
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import gradcore as gc
import gradcore.nn.functional as F
from gradcore import nn
from gradcore.kernels import conv as kconv
from gradcore.kernels import host as khost

from conftest import host, needs_pinned_torch, needs_torch


def _arrays(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def _compare(fn_gc, fn_torch, arrays, seed=0, rtol=1e-10, atol=1e-10, transform=None):
    """Forward and every input's gradient of ``fn_gc`` (on the current default device)
    against ``fn_torch`` (float64)."""
    import torch

    gx = [gc.tensor(a, dtype=gc.float64, requires_grad=True) for a in arrays]
    tx = [torch.tensor(a, requires_grad=True) for a in arrays]
    if transform is not None:  # (non-contiguous views of the leaves)
        gin, tin = [transform(t) for t in gx], [transform(t) for t in tx]
    else:
        gin, tin = gx, tx
    gout, tout = fn_gc(*gin), fn_torch(*tin)
    assert tuple(gout.shape) == tuple(tout.shape)
    np.testing.assert_allclose(host(gout), tout.detach().numpy(), rtol=rtol, atol=atol)
    u = np.random.default_rng(seed + 1).standard_normal(tuple(tout.shape))
    gout.backward(gc.tensor(u))
    tout.backward(torch.tensor(u))
    for a, b in zip(gx, tx):
        np.testing.assert_allclose(host(a.grad), b.grad.numpy(), rtol=rtol, atol=atol)
        assert a.grad.is_contiguous()


# (input shape, weight shape, keyword arguments) of F.conv2d
CONV2D = [
    ((2, 3, 7, 6), (4, 3, 3, 3), dict()),
    ((2, 3, 7, 6), (4, 3, 3, 2), dict(stride=2, padding=1)),
    ((1, 4, 9, 8), (6, 2, 2, 3), dict(stride=(2, 3), padding=(2, 0), dilation=(2, 1),
                                      groups=2)),
    ((2, 4, 5, 5), (8, 1, 3, 3), dict(padding=1, groups=4)),  # depthwise, multiplier 2
    ((1, 2, 6, 7), (3, 2, 2, 4), dict(padding="same", dilation=(1, 2))),  # even kernel
    ((2, 2, 5, 6), (3, 2, 3, 3), dict(padding="valid", stride=(1, 2))),
    ((3, 6, 5), (2, 3, 1, 2), dict(groups=1)),  # unbatched
    ((2, 3, 4, 4), (5, 3, 4, 4), dict()),  # the kernel covers the image: one window
    ((0, 3, 4, 4), (5, 3, 2, 2), dict()),  # an empty batch
    # batches of small images: the CPU's columns take the batch innermost
    ((8, 3, 5, 4), (4, 3, 3, 2), dict(stride=(1, 2), padding=(2, 1), dilation=(2, 1))),
    ((6, 4, 4, 5), (6, 2, 3, 3), dict(padding=1, groups=2)),
]


@needs_torch
@pytest.mark.parametrize("case", range(len(CONV2D)))
def test_conv2d_matches_pytorch(case, device):
    import torch

    xs, ws, kw = CONV2D[case]
    x, w, b = _arrays(case, xs, ws, ws[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (padding='same' with an even kernel warns once)
        _compare(lambda x, w, b: F.conv2d(x, w, b, **kw),
                 lambda x, w, b: torch.nn.functional.conv2d(x, w, b, **kw), [x, w, b])


@needs_torch
def test_conv2d_of_non_contiguous_inputs_matches_pytorch(device):
    import torch

    x, w = _arrays(1, (2, 3, 6, 8), (6, 4, 3, 2))
    # (x: its last two axes swapped; w: its first two, then every other channel)
    _compare(lambda x, w: F.conv2d(x, w, padding=1),
             lambda x, w: torch.nn.functional.conv2d(x, w, padding=1), [x, w],
             transform=lambda t: t.transpose(-1, -2) if t.shape[0] == 2 else
             t.transpose(0, 1)[:, ::2])


@needs_torch
def test_conv1d_matches_pytorch(device):
    import torch

    tf = torch.nn.functional
    for i, (xs, ws, kw) in enumerate([
            ((2, 4, 9), (6, 2, 3), dict(stride=2, padding=2, dilation=2, groups=2)),
            ((3, 7), (2, 3, 2), dict(padding="same")),  # unbatched, even kernel
            ((2, 3, 5), (4, 3, 5), dict(padding="valid"))]):
        x, w, b = _arrays(i, xs, ws, ws[0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _compare(lambda x, w, b: F.conv1d(x, w, b, **kw),
                     lambda x, w, b: tf.conv1d(x, w, b, **kw), [x, w, b])


@needs_torch
@pytest.mark.parametrize("xs, ws, kw", [
    ((2, 4, 3, 4), (4, 3, 3, 3), dict(stride=2, padding=1, output_padding=1, groups=2)),
    ((1, 3, 4, 3), (3, 2, 2, 3), dict(stride=(1, 2), dilation=(2, 1), padding=(1, 0))),
    # output_padding below the dilation (not the stride): more windows than inputs
    ((2, 2, 3, 3), (2, 2, 3, 3), dict(dilation=2, output_padding=1)),
    ((2, 4, 5), (4, 3, 3), dict(stride=3, padding=1, output_padding=2)),  # 1-D
    ((3, 5), (3, 2, 2), dict(stride=2)),  # 1-D, unbatched
], ids=["groups", "dilation", "output-padding-dilation", "1d", "1d-unbatched"])
def test_conv_transpose_matches_pytorch(xs, ws, kw, device):
    import torch

    groups = kw.get("groups", 1)
    x, w, b = _arrays(len(xs), xs, ws, ws[1] * groups)
    name = "conv_transpose2d" if len(ws) == 4 else "conv_transpose1d"
    _compare(lambda x, w, b: getattr(F, name)(x, w, b, **kw),
             lambda x, w, b: getattr(torch.nn.functional, name)(x, w, b, **kw), [x, w, b])


@needs_torch
def test_unfold_and_fold_match_pytorch(device):
    import torch

    tf = torch.nn.functional
    kw = dict(dilation=(1, 2), padding=1, stride=(2, 1))
    (x,) = _arrays(3, (2, 3, 6, 7))
    _compare(lambda x: F.unfold(x, (2, 3), **kw), lambda x: tf.unfold(x, (2, 3), **kw), [x])
    (c,) = _arrays(4, (2, 18, 20))
    _compare(lambda c: F.fold(c, (6, 7), (2, 3), **kw),
             lambda c: tf.fold(c, (6, 7), (2, 3), **kw), [c])
    (c,) = _arrays(5, (12, 9))  # unbatched, overlapping blocks
    _compare(lambda c: F.fold(c, 4, 2), lambda c: tf.fold(c, 4, 2), [c])
    (x,) = _arrays(6, (3, 4, 5))
    _compare(lambda x: F.unfold(x, 2, stride=2), lambda x: tf.unfold(x, 2, stride=2), [x])
    out = F.unfold(gc.ones(1, 2, 3, 3, requires_grad=True), 2)
    assert out.grad_fn.name() == "Im2ColBackward0" and out.is_contiguous()
    assert F.fold(gc.ones(1, 8, 4, requires_grad=True), 3, 2).grad_fn.name() == \
        "Col2ImBackward0"


PADS = [
    ("constant", (2, 3, 4, 5), (1, 2)),
    ("constant", (2, 3, 4, 5), (-1, 2, 1, -2, 0, 1, 1, 1)),  # every dimension, crops
    ("reflect", (3, 5), (2, 3)),
    ("reflect", (2, 3, 4, 5), (-1, 2, 3, 1)),
    ("reflect", (1, 2, 3, 4, 5), (1, 2, 2, 1, 1, 1)),
    ("replicate", (2, 3, 5), (3, -1)),
    ("replicate", (2, 3, 4, 5), (4, 1, 0, 3)),
    ("replicate", (2, 3, 4, 5), (1, 1, 2, 2, 1, 0)),
    ("circular", (2, 3, 5), (5, 2)),
    ("circular", (2, 3, 4, 5), (-2, 3, 1, 4)),
    ("circular", (2, 2, 3, 4), (1, 1, 1, 1, 2, 0)),
]


@needs_torch
@pytest.mark.parametrize("mode, shape, pads", PADS,
                         ids=[f"{m}-{len(p) // 2}d-{i}" for i, (m, _, p) in enumerate(PADS)])
def test_pad_matches_pytorch(mode, shape, pads, device):
    import torch

    (x,) = _arrays(len(pads), shape)
    _compare(lambda x: F.pad(x, pads, mode=mode) ** 2,
             lambda x: torch.nn.functional.pad(x, pads, mode=mode) ** 2, [x])


@needs_torch
def test_pad_values_dtypes_and_names_match_pytorch():
    import torch

    tf = torch.nn.functional
    ints = np.arange(12).reshape(3, 4)
    for args in [((1, 2), "constant", 2.7), ((2, 1), "reflect", None),
                 ((1, 1), "replicate", 0), ((1, 3), "circular", None)]:
        got = F.pad(gc.tensor(ints), args[0], mode=args[1], value=args[2])
        want = tf.pad(torch.tensor(ints), args[0], mode=args[1], value=args[2])
        assert got.dtype == gc.int64
        np.testing.assert_array_equal(host(got), want.numpy())
    x = gc.ones(2, 3, 4, requires_grad=True)
    names = {"constant": "ConstantPadNdBackward0", "reflect": "ReflectionPad1DBackward0",
             "replicate": "ReplicationPad1DBackward0"}
    for mode, name in names.items():
        assert F.pad(x, (1, 1), mode=mode).grad_fn.name() == name
    assert gc.constant_pad_nd(x, (1, 0), 2.0).sum().item() == 24 + 3 * 2 * 2


def _projected_check(fn, arrays, seed, eps=1e-6):
    """First and second derivatives of ``fn`` against central differences, by random
    projection (one number each): ``<J^T u, v>`` from backward against ``<u, J v>``,
    then the same for ``h(x) = <d<fn(x), u>/dx, w>`` built with ``create_graph=True``."""
    rng = np.random.default_rng(seed)
    out_shape = tuple(fn(*[gc.tensor(a) for a in arrays]).shape)
    u = gc.tensor(rng.standard_normal(out_shape))
    ws = [gc.tensor(rng.standard_normal(a.shape)) for a in arrays]
    vs = [rng.standard_normal(a.shape) for a in arrays]

    def first(*xs):
        return (fn(*xs) * u).sum()

    def second(*xs):
        grads = gc.autograd.grad([first(*xs)], list(xs), create_graph=True)
        return sum((g * w).sum() for g, w in zip(grads, ws) if g.requires_grad)

    for h in (first, second):
        xs = [gc.tensor(a, requires_grad=True) for a in arrays]
        h(*xs).backward()
        analytic = sum(float((host(x.grad) * v).sum()) for x, v in zip(xs, vs)
                       if x.grad is not None)  # (None: no dependence, a zero gradient)

        def at(sign):
            ys = [gc.tensor(a + sign * eps * v, requires_grad=True)
                  for a, v in zip(arrays, vs)]
            return float(host(h(*ys).detach()))

        numeric = (at(1) - at(-1)) / (2 * eps)
        assert abs(analytic - numeric) <= 1e-6 + 1e-5 * abs(numeric), (h.__name__, analytic,
                                                                       numeric)


def test_first_and_second_derivatives_match_finite_differences(device):
    """The conv node's formula over tensors (im2col and col2im as ops whose backward is
    the other) differentiates to second order; unfold, fold and pad too."""
    checks = [
        (lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2),
                                  groups=2), [(2, 4, 5, 4), (4, 2, 2, 3), (4,)]),
        (lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1,
                                            groups=2), [(2, 4, 3, 3), (4, 2, 3, 2), (4,)]),
        (lambda x, w: F.conv1d(x, w, padding="same", dilation=2), [(1, 2, 6), (3, 2, 2)]),
        (lambda x, w: F.conv_transpose1d(x, w, stride=2), [(2, 3, 4), (3, 2, 3)]),
        (lambda c: F.fold(c, (3, 4), (2, 3), padding=1, stride=(2, 1)) ** 2, [(1, 12, 8)]),
        (lambda x: F.unfold(x, (2, 2), dilation=(2, 1), padding=(0, 1)) ** 2, [(1, 2, 4, 3)]),
        (lambda x: F.pad(x, (2, -1, 1, 2), mode="reflect") ** 2, [(2, 3, 4)]),
        (lambda x: F.pad(x, (1, 2, 0, 1), mode="replicate") ** 2, [(2, 3, 4)]),
        (lambda x: F.pad(x, (1, -1, 2, 0), mode="circular") ** 2, [(2, 3, 4)]),
        (lambda x: F.pad(x, (1, -1, 2, 0, 1, 1)) ** 2, [(2, 3, 4)]),
    ]
    for i, (fn, shapes) in enumerate(checks):
        _projected_check(fn, _arrays(20 + i, *shapes), seed=i)


@pytest.mark.parametrize("dtype, rtol", [(gc.float32, 1e-5), (gc.float16, 2e-2)],
                         ids=["float32", "float16"])
def test_low_precision_matches_float64(dtype, rtol, device):
    """float16 sums its products in float32 and rounds once (as PyTorch's CPU and cuDNN
    do): the result is within float16's rounding of the float64 one."""
    x, w, b, wt = _arrays(11, (2, 4, 6, 5), (6, 2, 3, 3), (6,), (4, 3, 2, 2))
    x, w, b, wt = (a.astype(np.float16).astype(np.float64) for a in (x, w, b, wt))
    u = np.random.default_rng(12).standard_normal((2, 6, 3, 5)).astype(np.float16)
    results = {}
    for dt in (gc.float64, dtype):
        ts = [gc.tensor(a, dtype=dt, requires_grad=True) for a in (x, w, b, wt)]
        y = F.conv2d(ts[0], ts[1], ts[2], stride=(2, 1), padding=1, groups=2)
        z = F.conv_transpose2d(ts[0], ts[3], stride=2, groups=2)
        assert y.dtype == z.dtype == dt
        (y * gc.tensor(u, dtype=dt)).sum().backward(retain_graph=True)
        z.sum().backward()
        results[dt] = [host(r).astype(np.float64) for r in (y, z, *(t.grad for t in ts))]
        assert all(t.grad.dtype == dt for t in ts)
    for lo, ref in zip(results[dtype], results[gc.float64]):
        np.testing.assert_allclose(lo, ref, rtol=rtol, atol=rtol * np.abs(ref).max())


@needs_torch
def test_integer_convolutions_match_pytorch():
    import torch

    rng = np.random.default_rng(2)
    x, w = rng.integers(-5, 5, (2, 3, 5, 5)), rng.integers(-3, 3, (4, 3, 2, 2))
    b = rng.integers(-3, 3, 4)
    got = F.conv2d(gc.tensor(x), gc.tensor(w), gc.tensor(b), padding=1, stride=2)
    want = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b),
                                      padding=1, stride=2)
    assert got.dtype == gc.int64
    np.testing.assert_array_equal(host(got), want.numpy())
    wt = np.ascontiguousarray(w.transpose(1, 0, 2, 3))  # (C_in, C_out, kh, kw)
    got = F.conv_transpose2d(gc.tensor(x), gc.tensor(wt), stride=2)
    want = torch.nn.functional.conv_transpose2d(torch.tensor(x), torch.tensor(wt), stride=2)
    np.testing.assert_array_equal(host(got), want.numpy())
    got = F.conv2d(gc.tensor(x).int(), gc.tensor(w).int())
    assert got.dtype == gc.int32
    np.testing.assert_array_equal(host(got), torch.nn.functional.conv2d(
        torch.tensor(x).int(), torch.tensor(w).int()).numpy())


def test_autocast_runs_convolutions_in_the_lower_precision():
    """conv1d/conv2d/conv_transpose are on autocast's lower-precision list (as in
    PyTorch); the casts are differentiable, so parameters get float32 gradients."""
    conv, up = nn.Conv2d(2, 3, 3, padding=1), nn.ConvTranspose1d(2, 3, 2, stride=2)
    x, x1 = gc.randn(1, 2, 5, 5), gc.randn(1, 2, 4)
    with gc.autocast("cpu", dtype=gc.float16):
        y, z = conv(x), up(x1)
        assert y.dtype == z.dtype == gc.float16
    (y.float().sum() + z.float().sum()).backward()
    assert conv.weight.grad.dtype == conv.bias.grad.dtype == up.weight.grad.dtype == gc.float32
    assert conv(x).dtype == gc.float32


# ---- errors: PyTorch's type and words ------------------------------------------------
def _bad_calls(m):
    """Calls that PyTorch refuses, written over m (gradcore or torch)."""
    f = m.nn.functional
    x, w = m.zeros(2, 3, 8, 8), m.zeros(4, 3, 3, 3)
    x1 = m.zeros(2, 3, 9)
    wt = m.zeros(3, 2, 3, 3)
    return {
        "input-2d": lambda: f.conv2d(m.zeros(2, 3), w),
        "input-5d": lambda: f.conv2d(m.zeros(1, 2, 3, 8, 8), w),
        "conv1d-4d": lambda: f.conv1d(x, w),
        "channels": lambda: f.conv2d(m.zeros(2, 5, 8, 8), w),
        "channels-unbatched": lambda: f.conv2d(m.zeros(5, 8, 8), w),
        "kernel-too-big": lambda: f.conv2d(m.zeros(2, 3, 2, 2), w),
        "dilated-too-big": lambda: f.conv2d(m.zeros(1, 3, 5, 5), w, dilation=3),
        "kernel-too-big-1d": lambda: f.conv1d(m.zeros(1, 3, 2), m.zeros(4, 3, 3)),
        "bias-size": lambda: f.conv2d(x, w, m.zeros(5)),
        "bias-2d": lambda: f.conv2d(x, w, m.zeros(4, 1)),
        "groups-divide": lambda: f.conv2d(m.zeros(2, 4, 8, 8), m.zeros(3, 2, 3, 3), groups=2),
        "groups-channels": lambda: f.conv2d(m.zeros(2, 4, 8, 8), m.zeros(4, 1, 3, 3),
                                            groups=2),
        "weight-empty": lambda: f.conv2d(x, m.zeros(0, 3, 3, 3)),
        "negative-padding": lambda: f.conv2d(x, w, padding=-1),
        "zero-stride": lambda: f.conv2d(x, w, stride=0),
        "zero-dilation": lambda: f.conv2d(x, w, dilation=0),
        "negative-dilation": lambda: f.conv2d(x, w, dilation=-1),
        "zero-groups": lambda: f.conv2d(x, w, groups=0),
        "same-strided": lambda: f.conv2d(x, w, padding="same", stride=2),
        "bad-padding-string": lambda: f.conv2d(x, w, padding="full"),
        "weight-1d": lambda: f.conv2d(x, m.zeros(4)),
        "weight-3d": lambda: f.conv2d(x, m.zeros(4, 3, 3)),
        "stride-length": lambda: f.conv2d(x, w, stride=(1, 1, 1)),
        "padding-length": lambda: f.conv2d(x, w, padding=(1, 2, 3)),
        "conv1d-stride-length": lambda: f.conv1d(x1, m.zeros(4, 3, 3), stride=(2, 2)),
        "same-weight-3d": lambda: f.conv2d(x, m.zeros(4, 3, 3), padding="same"),
        "dtype-input-weight": lambda: f.conv2d(x, w.double()),
        "dtype-weight-input": lambda: f.conv2d(x.double(), w),
        "dtype-bias": lambda: f.conv2d(x, w, m.zeros(4).double()),
        "bool": lambda: f.conv2d(x.bool(), w.bool()),
        "t-output-padding": lambda: f.conv_transpose2d(x, wt, stride=2, padding=1,
                                                       output_padding=2),
        "t-output-padding-1d": lambda: f.conv_transpose1d(m.zeros(2, 3, 5), m.zeros(3, 2, 3),
                                                          stride=2, output_padding=2),
        "t-same": lambda: f.conv_transpose2d(x, wt, padding="same"),
        "t-channels": lambda: f.conv_transpose2d(x, m.zeros(4, 2, 3, 3)),
        "t-groups": lambda: f.conv_transpose2d(x, wt, groups=2),
        "t-bias": lambda: f.conv_transpose2d(x, wt, m.zeros(3)),
        "t-too-small": lambda: f.conv_transpose2d(m.zeros(1, 3, 1, 1), m.zeros(3, 2, 1, 1),
                                                  padding=2),
        "t-negative-output-padding": lambda: f.conv_transpose2d(x, wt, output_padding=-1),
        "t-input-2d": lambda: f.conv_transpose2d(m.zeros(3, 5), wt),
        "t-int32": lambda: f.conv_transpose2d(x.int(), wt.int()),
        "unfold-1d": lambda: f.unfold(m.zeros(3), 2),
        "unfold-5d": lambda: f.unfold(m.zeros(1, 3, 4, 4, 4), 2),
        "unfold-zero-channels": lambda: f.unfold(m.zeros(2, 0, 4, 4), 2),
        "unfold-too-big": lambda: f.unfold(m.zeros(1, 3, 4, 9), (5, 2)),
        "unfold-zero-kernel": lambda: f.unfold(m.zeros(1, 3, 4, 4), 0),
        "unfold-zero-stride": lambda: f.unfold(m.zeros(1, 3, 4, 4), 2, stride=0),
        "unfold-negative-padding": lambda: f.unfold(m.zeros(1, 3, 4, 4), 2, padding=-1),
        "unfold-kernel-length": lambda: f.unfold(m.zeros(1, 3, 4, 4), (2, 2, 2)),
        "unfold-long": lambda: f.unfold(m.zeros(1, 3, 4, 4).long(), 2),
        "fold-4d": lambda: f.fold(m.zeros(1, 12, 9, 1), (4, 4), 2),
        "fold-divisible": lambda: f.fold(m.zeros(1, 13, 9), (4, 4), 2),
        "fold-blocks": lambda: f.fold(m.zeros(1, 12, 8), (4, 4), 2),
        "fold-non-positive-blocks": lambda: f.fold(m.zeros(1, 12, 1), 0, 2),
        "fold-empty-output": lambda: f.fold(m.zeros(1, 12, 1), (0, 0), 2, padding=1),
        "fold-output-size-length": lambda: f.fold(m.zeros(1, 12, 9), (4, 4, 4), 2),
        "fold-long": lambda: f.fold(m.zeros(1, 12, 9).long(), 4, 2),
        "pad-odd": lambda: f.pad(x, (1, 1, 1)),
        "pad-too-long": lambda: f.pad(x, (1,) * 10),
        "pad-crops-too-much": lambda: f.pad(x, (-5, -4)),
        "pad-mode": lambda: f.pad(x, (1, 1), mode="wrap"),
        "pad-value": lambda: f.pad(x, (1, 1, 1, 1), mode="reflect", value=1.0),
        "pad-reflect-1d-on-4d": lambda: f.pad(x, (1, 1), mode="reflect"),
        "pad-reflect-too-big": lambda: f.pad(x, (1, 1, 8, 1), mode="reflect"),
        "pad-reflect-3d-too-big": lambda: f.pad(m.zeros(1, 2, 3, 4, 5), (1, 1, 1, 1, 3, 1),
                                                mode="reflect"),
        "pad-replicate-empty": lambda: f.pad(m.zeros(2, 3, 0, 5), (1, 2, 1, 1),
                                             mode="replicate"),
        "pad-replicate-crops": lambda: f.pad(x, (-5, -4, 0, 0), mode="replicate"),
        "pad-circular-wraps": lambda: f.pad(x, (9, 1, 0, 0), mode="circular"),
        "pad-circular-empty": lambda: f.pad(x, (-5, -4, 0, 0), mode="circular"),
        "pad-float": lambda: f.pad(x, (1.0, 1)),
        "pad-bool-reflect": lambda: f.pad(m.ones(2, 3, 4, dtype=m.bool), (1, 1),
                                          mode="reflect"),
        "constant-pad-nd-length": lambda: m.constant_pad_nd(m.zeros(2, 3), (1,) * 6),
    }


@needs_torch
@pytest.mark.parametrize("name", sorted(_bad_calls(gc)))
def test_errors_match_pytorch(name):
    import torch

    with pytest.raises(Exception) as want:
        _bad_calls(torch)[name]()
    with pytest.raises(want.type) as got:
        _bad_calls(gc)[name]()
    message = str(want.value)
    if "(Triggered internally" in message:
        message = message[:message.index(" (Triggered internally")]
    assert str(got.value) == message


# ---- modules -----------------------------------------------------------------------
MODULES = [
    ("Conv1d", (4, 8, 5), dict(stride=2, padding=2, dilation=2, groups=4, bias=False,
                               padding_mode="reflect")),
    ("Conv2d", (3, 4, 3), dict()),
    ("Conv2d", (4, 8, (3, 5)), dict(stride=(2, 1), padding=(1, 2), dilation=2, groups=2,
                                    padding_mode="circular")),
    ("Conv2d", (4, 6, (2, 3)), dict(padding="same", padding_mode="replicate")),
    ("Conv2d", (4, 6, 3), dict(padding="same", dilation=2, padding_mode="zeros")),
    ("ConvTranspose1d", (4, 6, 3), dict(stride=2, output_padding=1)),
    ("ConvTranspose2d", (4, 6, 3), dict(stride=2, padding=1, output_padding=1, groups=2,
                                        bias=False)),
]


@needs_pinned_torch
@pytest.mark.parametrize("case", range(len(MODULES)))
def test_modules_print_hold_and_compute_as_pytorch(case):
    """repr, parameters' names and shapes, state_dict keys; with PyTorch's parameters
    loaded, the same output and gradients (padding modes included)."""
    import torch

    name, args, kw = MODULES[case]
    tm = getattr(torch.nn, name)(*args, **kw).double()
    gm = getattr(nn, name)(*args, **kw).to(dtype=gc.float64)
    assert repr(gm) == repr(tm)
    assert list(gm.state_dict()) == list(tm.state_dict())
    gm.load_state_dict({k: gc.tensor(v.detach().numpy()) for k, v in
                        tm.state_dict().items()})
    spatial = (7, 6) if "2d" in name else (7,)
    (x,) = _arrays(case, (2, args[0]) + spatial)
    _compare(lambda x: gm(x), lambda x: tm(x), [x])
    for (gname, gp), (tname, tp) in zip(gm.named_parameters(), tm.named_parameters()):
        assert gname == tname and tuple(gp.shape) == tuple(tp.shape)


def test_module_initialization_statistics():
    """Kaiming uniform with a = sqrt(5): weights uniform in +-1/sqrt(fan_in), so their
    standard deviation is bound / sqrt(3); biases uniform in the same bound."""
    gc.manual_seed(0)
    for module, fan_in in [(nn.Conv2d(16, 64, 3, groups=2), 8 * 9),
                           (nn.Conv1d(8, 32, 5), 8 * 5),
                           (nn.ConvTranspose2d(16, 64, 3, groups=4), 16 * 9)]:
        bound = 1 / np.sqrt(fan_in)
        w, b = host(module.weight.detach()), host(module.bias.detach())
        assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
        assert abs(w.std() - bound / np.sqrt(3)) < 0.05 * bound
        assert abs(w.mean()) < 0.05 * bound
        assert module.weight.dtype == gc.float32 and module.weight.requires_grad
    m = nn.Conv2d(2, 4, 3, dtype=gc.float64, bias=False)
    assert m.weight.dtype == gc.float64 and m.bias is None
    assert list(m.state_dict()) == ["weight"]


def test_module_argument_errors_are_pytorchs():
    cases = [
        (lambda: nn.Conv2d(4, 6, 3, groups=0), "groups must be a positive integer"),
        (lambda: nn.Conv2d(4, 6, 3, groups=3), "in_channels must be divisible by groups"),
        (lambda: nn.Conv2d(4, 6, 3, groups=4), "out_channels must be divisible by groups"),
        (lambda: nn.Conv2d(4, 6, 3, padding="full"), "Invalid padding string 'full'"),
        (lambda: nn.Conv2d(4, 6, 3, padding="same", stride=2),
         "padding='same' is not supported for strided convolutions"),
        (lambda: nn.Conv2d(4, 6, 3, padding_mode="wrap"),
         "padding_mode must be one of"),
        (lambda: nn.ConvTranspose2d(4, 6, 3, padding_mode="reflect"),
         'Only "zeros" padding mode is supported for ConvTranspose2d'),
        (lambda: nn.ConvTranspose2d(4, 6, 3, stride=2)(gc.zeros(1, 4, 5, 5), output_size=(8, 8)),
         r"requested an output size of \[8, 8\], but valid sizes range from \[11, 11\] to "
         r"\[12, 12\]"),
        (lambda: nn.CircularPad2d(1)(gc.zeros(4, 5)), r"expected 3D or 4D input \(got 2D"),
    ]
    for make, message in cases:
        with pytest.raises(ValueError, match=message):
            make()


@needs_torch
def test_transposed_output_size_and_window_modules_match_pytorch():
    import torch

    gc.manual_seed(1)
    up = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)
    tup = torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)
    tup.load_state_dict({k: torch.tensor(host(v)) for k, v in up.state_dict().items()})
    (x,) = _arrays(9, (1, 3, 4, 5))
    for size in [(8, 10), (1, 2, 7, 9), None]:
        got = up(gc.tensor(x, dtype=gc.float32), output_size=size)
        want = tup(torch.tensor(x, dtype=torch.float32), output_size=size)
        np.testing.assert_allclose(host(got.detach()), want.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    for gm, tm in [(nn.Unfold(2, padding=1, stride=2), torch.nn.Unfold(2, padding=1, stride=2)),
                   (nn.Fold((4, 5), 2), torch.nn.Fold((4, 5), 2)),
                   (nn.ZeroPad2d((1, 2, 0, 3)), torch.nn.ZeroPad2d((1, 2, 0, 3))),
                   (nn.ConstantPad1d(2, 1.5), torch.nn.ConstantPad1d(2, 1.5)),
                   (nn.ReflectionPad2d(2), torch.nn.ReflectionPad2d(2)),
                   (nn.ReplicationPad1d((3, 1)), torch.nn.ReplicationPad1d((3, 1))),
                   (nn.CircularPad2d((1, 0, 2, 1)), torch.nn.CircularPad2d((1, 0, 2, 1)))]:
        assert repr(gm) == repr(tm)
        shape = (1, 8, 12) if isinstance(gm, nn.Fold) else \
            (1, 2, 5) if type(gm).__name__.endswith("1d") else (1, 2, 4, 5)
        (x,) = _arrays(10, shape)
        np.testing.assert_allclose(host(gm(gc.tensor(x))), tm(torch.tensor(x)).numpy())


# ---- the kernels and where they run ----------------------------------------------------
@pytest.fixture(scope="module")
def host_lib():
    if shutil.which(os.environ.get("CXX") or "g++") is None:
        pytest.skip("no host C++ compiler (g++ or $CXX) to build the kernel source")
    return khost.host_library()


# (batch, channels, height, width, kernel, dilation, padding, stride, fewer windows)
GEOMETRIES = [
    (2, 3, 5, 7, (3, 3), (1, 1), (1, 1), (1, 1), 0),
    (1, 2, 6, 5, (2, 3), (2, 1), (0, 2), (2, 3), 0),
    (3, 1, 4, 4, (1, 1), (1, 1), (0, 0), (2, 2), 0),
    (2, 2, 9, 3, (4, 2), (1, 2), (3, 1), (3, 1), 1),  # (a transposed conv's last window)
    (1, 1, 1, 1, (1, 1), (1, 1), (0, 0), (1, 1), 0),
]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_window_kernels_match_the_twins_bit_for_bit(dtype, host_lib):
    """The host build of kernels/gradcore_conv.cuh against kernels.conv's twins: im2col
    copies, and col2im sums each element's contributions in the twin's order (float16 in
    float32, rounded once), so both agree to the bit, for launches smaller than the
    work (grid-stride loops) and larger."""
    if not khost.host_supports(dtype, host_lib):
        pytest.skip(reason=f"no {dtype} kernels in the host build (no _Float16)")
    rng = np.random.default_rng(5)
    for n, c, h, w, kernel, dilation, padding, stride, fewer in GEOMETRIES:
        windows = tuple(max(1, (s + 2 * p - d * (k - 1) - 1) // st + 1 - fewer) for s, k, d, p, st
                        in zip((h, w), kernel, dilation, padding, stride))
        shape = [np.int64(v) for v in (n, c, h, w, *kernel, *padding, *stride, *dilation,
                                       *windows)]
        x = rng.standard_normal((n, c, h, w)).astype(dtype)
        want = kconv.im2col(np, x, kernel, dilation, padding, stride, windows)
        cols = rng.standard_normal(want.shape).astype(dtype)
        back = kconv.col2im(np, cols, (h, w), kernel, dilation, padding, stride, windows)
        for grid, block in [(1, 1), (3, 32), (64, 96)]:
            out = np.full(want.shape, np.nan, dtype)
            khost.launch_host(f"im2col_{dtype}", [x, out, *shape], grid, block, lib=host_lib)
            np.testing.assert_array_equal(out, want)
            out = np.full(back.shape, np.nan, dtype)
            khost.launch_host(f"col2im_{dtype}", [cols, out, *shape], grid, block,
                              lib=host_lib)
            np.testing.assert_array_equal(out, back)


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_both_column_orders_give_the_same_windows_and_sums(dtype):
    """The CPU's two column layouts, batch outside (the kernels') and inside (small
    images): the same columns, transposed, and col2im's sums bit for bit."""
    rng = np.random.default_rng(8)
    for n, c, h, w, kernel, dilation, padding, stride, fewer in GEOMETRIES:
        windows = tuple(max(1, (s + 2 * p - d * (k - 1) - 1) // st + 1 - fewer) for s, k, d, p, st
                        in zip((h, w), kernel, dilation, padding, stride))
        x = rng.standard_normal((n, c, h, w)).astype(dtype)[..., ::-1]  # (non-contiguous)
        outer = kconv.im2col(np, x, kernel, dilation, padding, stride, windows)
        inner = kconv.im2col(np, x, kernel, dilation, padding, stride, windows, True)
        np.testing.assert_array_equal(inner, outer.transpose(0, 2, 1))
        cols = rng.standard_normal(outer.shape).astype(dtype)
        back = kconv.col2im(np, cols, (h, w), kernel, dilation, padding, stride, windows)
        back_inner = kconv.col2im(np, np.ascontiguousarray(cols.transpose(0, 2, 1)), (h, w),
                                  kernel, dilation, padding, stride, windows, True)
        assert back_inner.flags.c_contiguous and back_inner.dtype == dtype
        np.testing.assert_array_equal(back_inner, back)


def test_convolutions_in_either_column_order_agree(monkeypatch):
    """The formulas follow the namespace's order: forward, gradients and second
    derivatives are the same with the batch outside or inside the columns."""
    cpu = gc.device("cpu").math
    rng = np.random.default_rng(9)
    arrays = [rng.standard_normal(s) for s in [(4, 4, 5, 4), (6, 2, 3, 2), (6,), (6, 2, 2, 2)]]
    results = []
    for inner in (False, True):
        monkeypatch.setattr(cpu, "windows_batch_inner", lambda a, windows: inner,
                            raising=False)
        x, w, b, wt = [gc.tensor(a, requires_grad=True) for a in arrays]
        y = F.conv2d(x, w, b, stride=(2, 1), padding=1, groups=2)
        z = F.conv_transpose2d(y, wt, stride=2, padding=(1, 0), groups=2)
        u = gc.tensor(np.random.default_rng(10).standard_normal(tuple(z.shape)))
        grads = gc.autograd.grad([z], [x, w, wt], [u], create_graph=True)
        second = gc.autograd.grad([sum((g * g).sum() for g in grads)], [x, w, b, wt])
        results.append([host(t.detach()) for t in (y, z, *grads, *second)])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_the_cuda_path_launches_the_window_kernels(standin, launched):
    """On a CUDA device (the stand-in runs the same source through the host build) a
    convolution's forward and backward launch im2col and col2im, make no host
    synchronization, and give the CPU's results."""
    rng = np.random.default_rng(3)
    xs, ws = rng.standard_normal((2, 3, 6, 5)), rng.standard_normal((4, 3, 3, 3))
    results = []
    for dev in ("cpu", "cuda"):
        x = gc.tensor(xs, dtype=gc.float32, device=dev, requires_grad=True)
        w = gc.tensor(ws, dtype=gc.float32, device=dev, requires_grad=True)
        standin.reset_syncs()
        y = F.conv2d(x, w, stride=2, padding=1)
        (y * y).sum().backward()
        if dev == "cuda":
            assert standin.host_syncs() == 0
        results.append([host(t.detach()) for t in (y, x.grad, w.grad)])
    math = gc.device("cuda").math
    kernels_on = math.device_kernels  # (GRADCORE_CUDA_KERNELS=0 turns them off)
    assert {n.rsplit("_", 1)[0] for n in launched} >= ({"im2col", "col2im"} if kernels_on
                                                       else set())
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    # without gradcore's kernels (GRADCORE_CUDA_KERNELS=0, or a failed compile): the
    # strided twins over the device's arrays
    math.use_device_kernels(False)
    try:
        launched.clear()
        x = gc.tensor(xs, dtype=gc.float32, device="cuda", requires_grad=True)
        w = gc.tensor(ws, dtype=gc.float32, device="cuda", requires_grad=True)
        y = F.conv2d(x, w, stride=2, padding=1)
        (y * y).sum().backward()
        assert not launched
        for a, b in zip(results[0], (y, x.grad, w.grad)):
            np.testing.assert_allclose(a, host(b.detach()), rtol=1e-5, atol=1e-5)
    finally:
        math.use_device_kernels(kernels_on)


def test_compiled_convolutional_step_replays_eagers_results():
    """gc.compile records the CPU's strided windows (views made by as_strided) and
    replays them, with no warning, bit for bit."""
    def run(compiled):
        gc.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(),
                              nn.Conv2d(4, 4, 3, stride=2, padding=1, groups=2),
                              nn.ConvTranspose2d(4, 2, 2, stride=2), nn.Flatten(),
                              nn.Linear(2 * 8 * 8, 3))
        opt = gc.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(F.pad(x, (1, 1, 1, 1), mode="reflect")[..., 1:-1,
                                                                                1:-1]), y)
            loss.backward()
            opt.step()
            return loss

        fn = gc.compile(step) if compiled else step
        rng = np.random.default_rng(1)
        losses = [fn(gc.tensor(rng.standard_normal((4, 1, 8, 8)).astype(np.float32)),
                     gc.tensor(rng.integers(0, 3, 4))).item() for _ in range(4)]
        return losses, [host(p.detach()) for p in model.parameters()], fn

    eager = run(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = run(True)
    assert compiled[2].replays >= 2
    assert compiled[0] == eager[0]
    for a, b in zip(compiled[1], eager[1]):
        np.testing.assert_array_equal(a, b)


def test_the_docs_page_example_prints_what_it_says(capsys):
    text = (Path(__file__).resolve().parents[1] / "docs" / "conv.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    exec(compile(blocks[0], "docs/conv.md", "exec"), {})
    printed = re.search(r"prints\n\n```\n(.*?)```", text, flags=re.S).group(1)
    assert capsys.readouterr().out == printed


# (batch, channels, height, width, kernel, dilation, padding, stride, ceil_mode)
POOL_GEOMETRIES = [
    (2, 3, 5, 7, (3, 3), (1, 1), (1, 1), (1, 1), False),  # overlapping windows
    (1, 2, 6, 5, (2, 3), (2, 1), (1, 1), (2, 3), True),
    (3, 1, 4, 4, (2, 2), (1, 1), (0, 0), (2, 2), False),  # the common 2x2 pool
    (2, 2, 5, 5, (2, 2), (1, 1), (1, 0), (2, 2), True),   # a last window past the padding
    (1, 1, 1, 1, (1, 1), (1, 1), (0, 0), (1, 1), False),
]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_max_pool_kernels_match_the_twins_bit_for_bit(dtype, host_lib):
    """max pooling's kernels against kernels.conv's twin (the forward) and formula (the
    backward, an index add, float16 in float32): the same maxima and positions (ties:
    the first; NaN wins, its first; a window of -inf reports its first element inside
    the image), the same sums for elements that are the maximum of several windows, for
    launches smaller than the work and larger."""
    if not khost.host_supports(dtype, host_lib):
        pytest.skip(reason=f"no {dtype} kernels in the host build (no _Float16)")
    from gradcore.backend import math_of
    from gradcore.ops.pool import pool_output_size

    cpu = math_of(np.zeros(1))
    rng = np.random.default_rng(6)
    for n, c, h, w, kernel, dilation, padding, stride, ceil in POOL_GEOMETRIES:
        windows = tuple(pool_output_size(s, k, p, st, d, ceil) for s, k, d, p, st
                        in zip((h, w), kernel, dilation, padding, stride))
        shape = [np.int64(v) for v in (n, c, h, w, *kernel, *padding, *stride, *dilation,
                                       *windows)]
        x = rng.integers(-3, 4, (n, c, h, w)).astype(dtype)  # (ties)
        x.reshape(-1)[::7] = np.nan
        x[0, 0, :2, :2] = -np.inf
        want_y, want_i = kconv.max_pool_forward(np, x, kernel, dilation, padding, stride,
                                                windows)
        assert (want_i >= 0).all() and (want_i < h * w).all()
        g = rng.standard_normal(want_y.shape).astype(dtype)
        geo = (kernel, dilation, padding, stride)
        want_dx = cpu.max_pool_backward(g, want_i, (h, w), *geo)
        for grid, block in [(1, 1), (3, 32), (64, 96)]:
            y, i = np.full(want_y.shape, 7, dtype), np.full(want_y.shape, -5, np.int64)
            khost.launch_host(f"max_pool_forward_{dtype}", [x, y, i, *shape], grid, block,
                              lib=host_lib)
            np.testing.assert_array_equal(y, want_y)
            np.testing.assert_array_equal(i, want_i)
            dx = np.full((n, c, h, w), np.nan, dtype)
            khost.launch_host(f"max_pool_backward_{dtype}", [g, want_i, dx, *shape], grid,
                              block, lib=host_lib)
            np.testing.assert_array_equal(dx, want_dx)


def test_max_pool_runs_its_kernels_on_cuda(standin, launched):
    """On the CuPy stand-in's CUDA device max pooling is one launch forward and one
    backward (no window columns, no index add), with the CPU's values and gradients."""
    x = np.random.default_rng(7).standard_normal((2, 3, 6, 6))
    results = []
    for dev in ("cpu", "cuda"):
        t = gc.tensor(x, device=dev, requires_grad=True)
        y, idx = F.max_pool2d(t, 3, stride=2, padding=1, return_indices=True)
        launched.clear()
        (y * y).sum().backward()
        results.append((y.detach().cpu().numpy(), idx.cpu().numpy(), t.grad.cpu().numpy(),
                        list(launched)))
    (y0, i0, g0, _), (y1, i1, g1, backward) = results
    np.testing.assert_array_equal(y1, y0)
    np.testing.assert_array_equal(i1, i0)
    np.testing.assert_allclose(g1, g0, rtol=1e-12)
    assert [n for n in backward if "pool" in n or "index" in n or "col" in n] == \
        ["max_pool_backward_float64"]


def test_compiled_cnn_step_is_eagers_on_both_devices(device):
    """The digits CNN's step (conv, batch norm, ReLU, max pool, twice; linear; Adam)
    under gc.compile: on the CPU a replay, on CUDA (the stand-in) a captured graph whose
    launches are the window, channel and pool kernels and cuBLAS's products; either way
    eager's losses, parameters and running statistics bit for bit, with no warning (no
    eager fallback)."""
    def run(compiled):
        gc.manual_seed(0)
        layers = []
        for c_in, c_out in ((1, 4), (4, 8)):
            layers += [nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(),
                       nn.MaxPool2d(2)]
        model = nn.Sequential(*layers, nn.Flatten(), nn.Linear(8 * 2 * 2, 3)).to(device)
        opt = gc.optim.Adam(model.parameters(), lr=1e-2)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        fn = gc.compile(step) if compiled else step
        rng = np.random.default_rng(2)
        losses = [fn(gc.tensor(rng.standard_normal((6, 1, 8, 8)).astype(np.float32),
                               device=device),
                     gc.tensor(rng.integers(0, 3, 6), device=device)).item()
                  for _ in range(5)]
        state = [host(t.detach()) for t in list(model.parameters()) + list(model.buffers())]
        return losses, state, fn

    eager = run(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = run(True)
    assert compiled[2].replays >= 2
    assert compiled[0] == eager[0]
    for a, b in zip(compiled[1], eager[1]):
        np.testing.assert_array_equal(a, b)
