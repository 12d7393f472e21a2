"""More of PyTorch 2.13's names that programs and op tests use: constants and dtype
aliases, the channels-last memory formats, the ``*_copy`` view forms and ``unsafe_*``
splits, ``torch.<name>`` forms of ``nn.functional``'s ops with ATen's arguments,
storages, ``dim_order``, ``autograd.Variable`` and anomaly switches, lazy normalization
and transposed-convolution layers, ``nn.utils`` fusion and friends, ``func``'s
``stack_module_state``, optimizer step hooks and ``sdpa_kernel``: compared with PyTorch
(values, dtypes, shapes, strides, gradients, warnings and error types) on every device
under test.

Each case is written once over a module ``m``, ``gradcore`` or ``torch``."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import gradcore as gc

from conftest import assert_same, host, needs_torch

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 6, 5))
Y = RNG.random((4, 6, 5))
T = np.array([1.0, -1.0, -1.0, 1.0])
A = RNG.standard_normal((4, 3))
B = RNG.standard_normal((4, 3))


def _ar(m, *shape, dtype=None):
    return m.arange(float(np.prod(shape)), dtype=dtype).reshape(*shape)


def _plain(value):
    import torch

    if isinstance(value, (gc.Tensor, torch.Tensor)):
        arr = host(value.detach()) if isinstance(value, gc.Tensor) else value.detach().numpy()
        return ("tensor", arr, str(value.dtype).rsplit(".", 1)[-1], tuple(value.shape))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_plain(v) for v in value))
    return value


def _both(case):
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = case(gc), case(torch)
    assert_same(_plain(ours), _plain(theirs))
    return ours, theirs


# ---- constants and dtype aliases ----------
@needs_torch
def test_constants_and_short_are_pytorchs():
    import torch

    for name in ("pi", "e", "inf", "nan", "newaxis"):
        ours, theirs = getattr(gc, name), getattr(torch, name)
        assert type(ours) is type(theirs), name
        assert ours == theirs or (ours != ours and theirs != theirs), name
    assert gc.short is gc.int16 and str(torch.short) == "torch.int16"
    assert gc.ones(2, dtype=gc.short).dtype is gc.int16
    assert gc.arange(3)[:, gc.newaxis].shape == (3, 1)
    assert gc.pi == math.pi and gc.e == math.e and gc.inf == math.inf


# ---- memory formats ----------
def _layouts(m):
    cl, cl3 = m.channels_last, m.channels_last_3d
    x = _ar(m, 2, 3, 4, 5)
    return [
        x.contiguous(memory_format=cl), x.to(memory_format=cl),
        x.to(m.float64, memory_format=cl), x.contiguous(memory_format=cl).double(),
        x.contiguous(memory_format=cl) + 1, m.empty(2, 3, 4, 5, memory_format=cl),
        m.empty((2, 3, 4, 5, 6), memory_format=cl3), _ar(m, 2, 3, 4, 5, 6).contiguous(
            memory_format=cl3), m.empty_like(x, memory_format=cl),
        m.zeros_like(x.contiguous(memory_format=cl)),
        m.ones_like(x.contiguous(memory_format=cl), memory_format=m.contiguous_format),
        x.contiguous(memory_format=cl).contiguous(), x.contiguous(memory_format=cl).to(
            memory_format=m.legacy_contiguous_format),
        x.contiguous(memory_format=cl).to(memory_format=m.preserve_format),
        _ar(m, 1, 3, 1, 1).contiguous(memory_format=cl), _ar(m, 2, 1, 4, 5).contiguous(
            memory_format=cl), x.contiguous(memory_format=m.preserve_format),
        x.transpose(2, 3), x.permute(0, 2, 3, 1), x[:, :1], m.empty_permuted((2, 3, 4, 5),
                                                                             (0, 2, 3, 1)),
        m.empty_permuted((2, 3, 4), (2, 0, 1)), m.empty_permuted((2, 3), (0, 1)),
        # .to(memory_format=) copies unless the strides already suggest the format
        m.zeros(3, 4).t().to(memory_format=m.contiguous_format),
        x[:, :, ::2].to(memory_format=m.contiguous_format),
        x.contiguous(memory_format=cl)[:, :, ::2].to(memory_format=cl),
        m.zeros(1, 3, 1, 1).to(memory_format=cl), m.zeros(2, 3, 1, 1).to(memory_format=cl),
        m.zeros(2, 3, 1, 1).contiguous(memory_format=cl), m.zeros(2, 1, 4, 5).to(memory_format=cl),
        m.zeros(2, 2, 1, 1, 1).to(memory_format=cl3),
        m.zeros(2, 3, 1, 1).to(memory_format=cl).to(memory_format=m.contiguous_format),
    ]


@needs_torch
def test_channels_last_strides_and_contiguity_match_pytorch(device):
    import torch

    ours, theirs = _layouts(gc), _layouts(torch)
    assert len(ours) == len(theirs)
    for k, (a, b) in enumerate(zip(ours, theirs)):
        assert a.stride() == b.stride(), (k, a.stride(), b.stride())
        assert tuple(a.shape) == tuple(b.shape), k
        for fmt in ("contiguous_format", "channels_last", "channels_last_3d"):
            assert a.is_contiguous(memory_format=getattr(gc, fmt)) == \
                b.is_contiguous(memory_format=getattr(torch, fmt)), (k, fmt)
        if k < 5:  # (the others are uninitialized or their values were checked already)
            np.testing.assert_array_equal(host(a), b.numpy())
        assert a.dim_order() == b.dim_order(), (k, a.dim_order(), b.dim_order())
        assert a.device.type == gc.device(device).type


def test_memory_format_objects():
    assert gc.legacy_contiguous_format is gc.contiguous_format
    assert repr(gc.channels_last) == "gradcore.channels_last"
    assert isinstance(gc.channels_last_3d, gc.memory_format)
    x = gc.ones(2, 3, 4, 5).contiguous(memory_format=gc.channels_last)
    assert x.contiguous(memory_format=gc.channels_last) is x  # (already laid out so)


@needs_torch
@pytest.mark.parametrize("call", [
    lambda m: m.zeros(2, 3).contiguous(memory_format=m.channels_last),
    lambda m: m.zeros(2, 3, 4, 5).contiguous(memory_format=m.channels_last_3d),
    lambda m: m.zeros(2, 3, 4, 5).transpose(0, 1).contiguous(memory_format=m.preserve_format),
    lambda m: m.empty(2, 3, 4, 5, memory_format=m.preserve_format),
    lambda m: m.zeros(2, 3).to(memory_format=m.channels_last),
    lambda m: m.zeros(2, 3, 4, 5).to(memory_format=m.channels_last_3d),
    lambda m: m.empty(2, 3, memory_format=m.channels_last),
    lambda m: m.zeros(2, 3, 4, 5, memory_format=m.channels_last),
    lambda m: m.zeros(2, 3).to(foo=1),
])
def test_memory_format_errors_match_pytorch(call):
    import torch

    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value)):
        call(gc)


@needs_torch
def test_channels_last_gradient_and_module_to(device):
    import torch

    x = gc.tensor(RNG.standard_normal((2, 3, 4, 5)), requires_grad=True)
    y = x.contiguous(memory_format=gc.channels_last)
    (y * gc.arange(60.0, dtype=gc.float64).reshape(3, 4, 5)).sum().backward()
    np.testing.assert_array_equal(host(x.grad), np.broadcast_to(np.arange(60.0).reshape(
        3, 4, 5), (2, 3, 4, 5)))
    assert gc.autograd.gradcheck(lambda t: t.contiguous(memory_format=gc.channels_last) * 2,
                                 (x,))

    def model(m):
        m.manual_seed(0)
        return m.nn.Sequential(
            m.nn.Sequential(m.nn.Conv2d(3, 4, 3), m.nn.Linear(2, 2)).to(
                memory_format=m.channels_last),
            m.nn.Conv3d(2, 2, 1).to(memory_format=m.channels_last_3d))
    ours, theirs = model(gc), model(torch)
    for m in (gc, torch):  # (a 5-d parameter cannot be laid out channels_last)
        with pytest.raises(RuntimeError, match="required rank 4 tensor"):
            m.nn.Conv3d(2, 2, 1).to(memory_format=m.channels_last)
    for (name, a), b in zip(ours.named_parameters(), theirs.parameters()):
        assert a.stride() == b.stride(), name
        assert isinstance(a, gc.nn.Parameter)
    conv = gc.nn.Conv2d(3, 4, 3)
    before = host(conv.weight).copy()
    conv.to(memory_format=gc.channels_last)
    np.testing.assert_array_equal(host(conv.weight), before)  # values never change
    data = RNG.standard_normal((1, 3, 5, 5)).astype(np.float32)
    out = conv(gc.tensor(data).contiguous(memory_format=gc.channels_last))
    np.testing.assert_allclose(host(out), host(conv(gc.tensor(data))), rtol=1e-6, atol=1e-6)


# ---- *_copy and unsafe_* ----------
COPIES = {
    "view_copy": lambda m: m.view_copy(_ar(m, 2, 3, 4), (4, 6)),
    "permute_copy": lambda m: m.permute_copy(_ar(m, 2, 3, 4), (2, 0, 1)),
    "transpose_copy": lambda m: m.transpose_copy(_ar(m, 2, 3, 4), 0, 2),
    "t_copy": lambda m: (m.t_copy(_ar(m, 3, 4)), m.t_copy(_ar(m, 3))),
    "expand_copy": lambda m: m.expand_copy(m.arange(3.0), (2, 3)),
    "squeeze_copy": lambda m: (m.squeeze_copy(_ar(m, 1, 3, 1)), m.squeeze_copy(_ar(m, 1, 3, 1), 0),
                               m.squeeze_copy(_ar(m, 1, 3, 1), [0, 2])),
    "unsqueeze_copy": lambda m: m.unsqueeze_copy(_ar(m, 2, 3), -1),
    "diagonal_copy": lambda m: (m.diagonal_copy(_ar(m, 2, 3, 4), 1, 1, 2),
                                m.diagonal_copy(_ar(m, 3, 3))),
    "select_copy": lambda m: m.select_copy(_ar(m, 2, 3, 4), 1, -1),
    "slice_copy": lambda m: (m.slice_copy(_ar(m, 2, 3, 4), 2, 1, None, 2),
                             m.slice_copy(_ar(m, 5)), m.slice_copy(_ar(m, 5), 0, -3, 10)),
    "split_copy": lambda m: m.split_copy(_ar(m, 2, 3, 5), 2, 2),
    "split_with_sizes_copy": lambda m: m.split_with_sizes_copy(_ar(m, 2, 3), [1, 2], 1),
    "unbind_copy": lambda m: m.unbind_copy(_ar(m, 2, 3), 1),
    "unfold_copy": lambda m: m.unfold_copy(_ar(m, 2, 5), 1, 2, 2),
    "detach_copy": lambda m: m.detach_copy(_ar(m, 2, 3)),
    "alias_copy": lambda m: m.alias_copy(_ar(m, 2, 3)),
    "as_strided_copy": lambda m: m.as_strided_copy(_ar(m, 2, 3), (2, 2), (1, 3), 1),
    "unsafe_chunk": lambda m: (m.unsafe_chunk(_ar(m, 2, 5), 2, 1), _ar(m, 5).unsafe_chunk(3)),
    "unsafe_split": lambda m: (m.unsafe_split(_ar(m, 2, 5), 2, 1), _ar(m, 5).unsafe_split(4)),
    "unsafe_split_with_sizes": lambda m: (m.unsafe_split_with_sizes(_ar(m, 5), [2, 3]),
                                          _ar(m, 2, 3).unsafe_split_with_sizes([2, 1], 1)),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(COPIES))
def test_copies_match_pytorch(name, device):
    ours, _ = _both(COPIES[name])
    if name.endswith("_copy"):
        for t in ours if isinstance(ours, tuple) else (ours,):
            assert t.is_contiguous() and t._data.base is None or t._data.flags.owndata
            assert t.device.type == gc.device(device).type


def test_copies_own_their_memory():
    x = _ar(gc, 2, 3)
    for out in (gc.transpose_copy(x, 0, 1), gc.alias_copy(x), gc.select_copy(x, 0, 1),
                *gc.split_copy(x, 1)):
        assert out.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    for out in (*gc.unsafe_split(x, 1), *x.unsafe_chunk(2, 1)):
        assert out.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert not gc.detach_copy(x.requires_grad_()).requires_grad


COPY_GRADS = {
    "transpose_copy": (lambda m, x: m.transpose_copy(x, 0, 1), (3, 4)),
    "expand_copy": (lambda m, x: m.expand_copy(x, (2, 3, 4)), (3, 1)),
    "select_copy": (lambda m, x: m.select_copy(x, 1, 2), (3, 4)),
    "slice_copy": (lambda m, x: m.slice_copy(x, 1, 1, 4, 2), (3, 4)),
    "diagonal_copy": (lambda m, x: m.diagonal_copy(x, -1), (3, 4)),
    "as_strided_copy": (lambda m, x: m.as_strided_copy(x, (2, 2), (1, 2)), (3, 4)),
    "unfold_copy": (lambda m, x: m.unfold_copy(x, 1, 2, 1), (3, 4)),
    "split_copy": (lambda m, x: m.split_copy(x, 3, 1)[0] * 2 + m.split_copy(x, 3, 1)[1].sum(),
                   (3, 6)),
    "unbind_copy": (lambda m, x: m.unbind_copy(x)[1] * 3, (3, 4)),
    "view_copy": (lambda m, x: m.view_copy(x, (2, 6)), (3, 4)),
    "unsafe_split": (lambda m, x: m.unsafe_split(x, 2)[1], (3, 4)),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(COPY_GRADS))
def test_copy_gradients_match_pytorch(name):
    import torch

    fn, shape = COPY_GRADS[name]
    data = RNG.standard_normal(shape)
    x = gc.tensor(data, requires_grad=True)
    tx = torch.tensor(data, requires_grad=True)
    out, tout = fn(gc, x), fn(torch, tx)
    up = RNG.standard_normal(tuple(tout.shape))
    out.backward(gc.tensor(up))
    tout.backward(torch.tensor(up))
    np.testing.assert_allclose(host(x.grad), tx.grad.numpy(), rtol=1e-12)
    assert gc.autograd.gradcheck(lambda t: fn(gc, t), (gc.tensor(data, requires_grad=True),))


# ---- torch.<name> forms of nn.functional ----------
FUNCTIONAL = {
    "binary_cross_entropy_with_logits": lambda m: [m.binary_cross_entropy_with_logits(
        m.tensor(X), m.tensor(Y), m.tensor(Y[0]), m.tensor(Y[0, 0]), r) for r in (0, 1, 2)],
    "kl_div": lambda m: [m.kl_div(m.tensor(X), m.tensor(Y), r, log_target=lt)
                         for r in (0, 1, 2) for lt in (False, True)],
    "cosine_embedding_loss": lambda m: [m.cosine_embedding_loss(
        m.tensor(A), m.tensor(B), m.tensor(T), 0.1, r) for r in (0, 1, 2)],
    "margin_ranking_loss": lambda m: [m.margin_ranking_loss(
        m.tensor(A[:, 0]), m.tensor(B[:, 0]), m.tensor(T), 0.2, r) for r in (0, 1, 2)],
    "hinge_embedding_loss": lambda m: [m.hinge_embedding_loss(
        m.tensor(A[:, 0]), m.tensor(T), 0.5, r) for r in (0, 1, 2)],
    "triplet_margin_loss": lambda m: [m.triplet_margin_loss(
        m.tensor(A), m.tensor(B), m.tensor(A * 2), 1.0, 2.0, 1e-6, s, r)
        for r in (0, 1, 2) for s in (False, True)],
    "poisson_nll_loss": lambda m: [m.poisson_nll_loss(m.tensor(Y), m.tensor(Y * 3), li, f, 1e-8,
                                                      r)
                                   for li in (True, False) for f in (True, False) for r in (0, 2)],
    "pdist": lambda m: (m.pdist(m.tensor(A)), m.pdist(m.tensor(A), 1.5)),
    "threshold": lambda m: m.threshold(m.tensor(A), 0.1, 5.0),
    "threshold_": lambda m: m.threshold_(m.tensor(A), 0.1, 5.0),
    "rrelu": lambda m: (m.rrelu(m.tensor(A)), m.rrelu(m.tensor(A), 0.2, 0.4, False)),
    "rrelu_": lambda m: m.rrelu_(m.tensor(A), 0.2, 0.4),
    "bilinear": lambda m: m.bilinear(m.tensor(A), m.tensor(B), m.tensor(X[:2, :3, :3]),
                                     m.tensor(Y[0, :2, 0])),
    "rms_norm": lambda m: (m.rms_norm(m.tensor(X), [5], m.tensor(Y[0, 0]), 1e-5),
                           m.rms_norm(m.tensor(X), (6, 5))),
    "channel_shuffle": lambda m: m.channel_shuffle(m.tensor(X).reshape(4, 6, 5, 1), 3),
    "native_channel_shuffle": lambda m: m.native_channel_shuffle(
        m.tensor(X).reshape(4, 6, 5, 1), 2),
    "max_pool1d_with_indices": lambda m: (m.max_pool1d_with_indices(m.tensor(X), 2),
                                          m.max_pool1d_with_indices(m.tensor(X), 3, 1, 1, 1,
                                                                    True)),
    "native_layer_norm": lambda m: (
        m.native_layer_norm(m.tensor(X), [6, 5], m.tensor(Y[0]), m.tensor(X[0]), 1e-5),
        m.native_layer_norm(m.tensor(X), [5], None, None, 1e-3)),
    "native_batch_norm_eval": lambda m: m.native_batch_norm(
        m.tensor(X), m.tensor(Y[0, :, 0]), None, m.tensor(Y[1, :, 0]), m.tensor(Y[2, :, 0]) + 1,
        False, 0.1, 1e-5),
    "native_batch_norm_train": lambda m: (lambda rm, rv: (m.native_batch_norm(
        m.tensor(X), None, m.tensor(Y[0, :, 0]), rm, rv, True, 0.3, 1e-5), rm, rv))(
        m.zeros(6, dtype=m.float64), m.ones(6, dtype=m.float64)),
    "native_group_norm": lambda m: m.native_group_norm(m.tensor(X), m.tensor(Y[0, :, 0]),
                                                       m.tensor(Y[1, :, 0]), 4, 6, 5, 3, 1e-5),
    "native_dropout_eval": lambda m: m.native_dropout(m.tensor(X), 0.5, False),
    "nonzero_static": lambda m: (
        m.nonzero_static(m.tensor([[1, 0], [0, 1]]), size=3),
        m.nonzero_static(m.tensor([1, 0, 1, 1]), size=2, fill_value=7),
        m.nonzero_static(m.tensor(3), size=2), m.tensor([0.0, 1.0]).nonzero_static(size=0),
        m.nonzero_static(m.tensor([[True, False]]), size=1, fill_value=-5)),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(FUNCTIONAL))
def test_functional_forms_match_pytorch(name, device):
    ours, _ = _both(FUNCTIONAL[name])
    for t in ours if isinstance(ours, (tuple, list)) else (ours,):
        if isinstance(t, gc.Tensor):
            assert t.device.type == gc.device(device).type


FUNCTIONAL_GRADS = {
    "kl_div": (lambda m, x, y: m.kl_div(x, y.exp(), 1), 2),
    "binary_cross_entropy_with_logits": (
        lambda m, x, y: m.binary_cross_entropy_with_logits(x, y.sigmoid(), None, None, 2), 2),
    "triplet_margin_loss": (lambda m, x, y: m.triplet_margin_loss(x, y, x * 0.5 + 1, 1.0, 2.0,
                                                                  1e-6, False, 1), 2),
    "native_layer_norm": (lambda m, x, w: m.native_layer_norm(x, [5], w[0, 0], None, 1e-5)[0],
                          2),
    "native_group_norm": (lambda m, x, w: m.native_group_norm(x, w[0, :, 0].contiguous(), None,
                                                              4, 6, 5, 2,
                                                              1e-5)[0], 2),
    "threshold": (lambda m, x, y: m.threshold(x, 0.2, -1.0) * y, 2),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(FUNCTIONAL_GRADS))
def test_functional_form_gradients_match_pytorch(name):
    import torch

    fn, n = FUNCTIONAL_GRADS[name]
    data = [X, Y][:n]
    ours = [gc.tensor(d, requires_grad=True) for d in data]
    theirs = [torch.tensor(d, requires_grad=True) for d in data]
    fn(gc, *ours).sum().backward()
    fn(torch, *theirs).sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(host(a.grad), b.grad.numpy(), rtol=1e-7, atol=1e-10)


def test_rrelu_draws_from_the_generator_given(device):
    x = gc.tensor(-np.ones((2, 50)))
    first = gc.rrelu(x, 0.1, 0.3, True, generator=gc.Generator(device).manual_seed(5))
    again = gc.rrelu(x, 0.1, 0.3, True, generator=gc.Generator(device).manual_seed(5))
    np.testing.assert_array_equal(host(first), host(again))
    slopes = -host(first)
    assert (slopes >= 0.1).all() and (slopes < 0.3).all() and len(np.unique(slopes)) > 50
    y = x.clone()
    assert gc.rrelu_(y, 0.1, 0.3, True, generator=gc.Generator(device).manual_seed(5)) is y
    np.testing.assert_array_equal(host(y), host(first))


def test_native_dropout_mask_and_scale(device):
    gc.manual_seed(3)
    x = gc.tensor(X + 10.0, requires_grad=True)
    out, mask = gc.native_dropout(x, 0.3, True)
    assert mask.dtype is gc.bool and mask.shape == x.shape
    kept = host(mask)
    np.testing.assert_allclose(host(out)[kept], (X + 10.0)[kept] / 0.7)
    assert (host(out)[~kept] == 0).all() and 0 < (~kept).mean() < 0.6
    out.sum().backward()
    np.testing.assert_allclose(host(x.grad), kept / 0.7)
    out, mask = gc.native_dropout(x, 1.0, True)
    assert not host(mask).any() and not host(out).any()


@needs_torch
@pytest.mark.parametrize("call", [
    lambda m: m.kl_div(m.ones(2), m.ones(2), "mean"),
    lambda m: m.nonzero_static(m.ones(2), size=-1),
    lambda m: m.empty_permuted((2, 3), (0, 0)),
    lambda m: m.slice_copy(m.zeros(3), 0, 0, 2, 0),
    lambda m: m.slice_copy(m.tensor(1.0)),
    lambda m: m.t_copy(m.zeros(2, 2, 2)),
])
def test_errors_match_pytorch(call):
    import torch

    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(type(theirs.value), match=_first_words(theirs.value)):
        call(gc)


def _first_words(err) -> str:
    import re

    return re.escape(" ".join(str(err).split()[:3]))


# ---- settings ----------
@needs_torch
def test_set_default_tensor_type_as_pytorch():
    import torch

    try:
        with pytest.warns(UserWarning, match="set_default_tensor_type.. is deprecated"):
            gc.set_default_tensor_type("torch.DoubleTensor")
        with pytest.warns(UserWarning):
            gc.set_default_tensor_type("torch.FloatTensor")
        for m in (gc, torch):
            with warnings.catch_warnings():  # (PyTorch warns once per process)
                warnings.simplefilter("ignore")
                m.set_default_tensor_type("torch.DoubleTensor")
                assert m.get_default_dtype() == m.float64 and m.zeros(1).dtype == m.float64
                m.set_default_tensor_type(m.FloatTensor)
            assert m.get_default_dtype() == m.float32
            with pytest.raises(TypeError, match="only floating-point types"):
                m.set_default_tensor_type("torch.LongTensor")
            with pytest.raises(TypeError):
                m.set_default_tensor_type(m.float64)
            if not m.cuda.is_available():
                with pytest.raises(TypeError, match="not available"):
                    m.set_default_tensor_type("torch.cuda.FloatTensor")
                with pytest.raises(TypeError, match="not available"):  # (the class too)
                    m.set_default_tensor_type(m.cuda.FloatTensor)
    finally:
        gc.set_default_dtype(gc.float32)
        torch.set_default_dtype(torch.float32)


def test_set_flush_denormal_and_is_storage():
    assert gc.set_flush_denormal(True) is False and gc.set_flush_denormal(False) is False
    tiny = gc.tensor([1e-310], dtype=gc.float64)
    assert host(tiny * 1.0)[0] == 1e-310  # denormals are kept
    with pytest.raises(TypeError):
        gc.set_flush_denormal(1)
    x = gc.zeros(3)
    assert gc.is_storage(x.untyped_storage()) and not gc.is_storage(x)
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        assert gc.is_storage(x.storage())


# ---- storages, dim_order, resize ----------
@needs_torch
def test_storages_as_pytorch(device):
    import torch

    for m in (gc, torch):
        x = _ar(m, 2, 3)
        base = x.untyped_storage().data_ptr()
        for view in (x[1], x.t(), x.view(6), x[:, 1:], x.unsqueeze(0).expand(2, 2, 3),
                     x.reshape(3, 2), x.detach()):
            assert view.untyped_storage().data_ptr() == base, m
        for other in (x.clone(), x + 0, x.t().contiguous(), _ar(m, 2, 3), x.to(m.float64)):
            assert other.untyped_storage().data_ptr() != base, m
        s = x[1].untyped_storage()
        assert (s.size(), s.nbytes(), s.element_size(), len(s)) == (24, 24, 1, 24)
        assert s.tolist() == list(np.arange(6, dtype=np.float32).tobytes())
        assert s.device.type == (device if m is gc else "cpu")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = x.storage()
        assert (t.size(), t.nbytes(), t.element_size(), len(t)) == (6, 24, 4, 6)
        assert t.dtype == m.float32 and t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        assert t.data_ptr() == base and x.const_data_ptr() == x.data_ptr()


@needs_torch
def test_dim_order_matches_pytorch():
    import torch

    def cases(m):
        return [m.zeros(2, 3, 4, 5), m.zeros(2, 3, 4, 5).contiguous(memory_format=m.channels_last),
                m.zeros(2, 3, 5, 7).transpose(1, 2), m.zeros(1, 2, 3, 4), m.zeros(3, 1),
                m.zeros(()), m.zeros(4), m.zeros(3).expand(2, 3), m.zeros(2, 3)[:, ::2],
                m.zeros(2, 3, 4).permute(2, 0, 1), m.zeros(2, 3).expand(4, 2, 3).transpose(0, 2),
                m.zeros(1, 3, 1, 1).contiguous(memory_format=m.channels_last)]
    for a, b in zip(cases(gc), cases(torch)):
        for amb in (False, True, [], ["contiguous_format", "channels_last"], ["channels_last"]):
            results = []
            for m, t in ((gc, a), (torch, b)):
                arg = amb if not isinstance(amb, list) else [getattr(m, f) for f in amb]
                try:
                    results.append(t.dim_order(ambiguity_check=arg))
                except RuntimeError as e:
                    results.append(("RuntimeError", str(e)))
            assert results[0] == results[1], (tuple(b.shape), b.stride(), amb, results)
    with pytest.raises(TypeError, match="must be a bool or a list"):
        gc.zeros(2).dim_order(ambiguity_check="no")


@needs_torch
def test_resize_and_resize_as_are_pytorchs_deprecated_forms():
    import torch

    for m in (gc, torch):
        x = m.arange(6.0, requires_grad=True)
        with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
            y = x.resize(2, 3)
        assert tuple(y.shape) == (2, 3) and y.requires_grad
        (y * m.arange(6.0).reshape(2, 3)).sum().backward()
        assert x.grad.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
            assert tuple(x.resize_as(m.zeros(3, 2)).shape) == (3, 2)
        with pytest.raises(RuntimeError, match="requested resize to 2x2 \\(4 elements"), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m.arange(6.0).resize(2, 2)


# ---- autograd ----------
@needs_torch
def test_variable_as_pytorch():
    import torch

    for m in (gc, torch):
        V = m.autograd.Variable
        a = m.ones(2, requires_grad=True)
        v = V(a)
        assert type(v) is m.Tensor and v is not a and not v.requires_grad
        assert v.data_ptr() == a.data_ptr()
        assert V(m.ones(2), requires_grad=True).requires_grad
        assert isinstance(m.ones(2), V) and isinstance(m.nn.Parameter(m.ones(1)), V)
        assert not isinstance(np.ones(2), V) and not issubclass(m.Tensor, V)
        assert tuple(V().shape) == (0,)
        with pytest.raises(TypeError, match="Variable data has to be a tensor"):
            V([1.0])
        with pytest.raises(RuntimeError):
            V(m.ones(2, dtype=m.int64), requires_grad=True)
        with pytest.warns(UserWarning, match="volatile was removed"):
            V(m.ones(1), volatile=True)


@needs_torch
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (0 / 0, on purpose)
@pytest.mark.filterwarnings("ignore:Anomaly Detection")
def test_anomaly_switches_as_pytorch():
    import torch

    for m in (gc, torch):
        assert m.autograd.inference_mode is m.inference_mode
        assert m.autograd.anomaly_mode.detect_anomaly is m.autograd.detect_anomaly
        assert m.is_anomaly_check_nan_enabled() and not m.is_anomaly_enabled()
        with m.autograd.set_detect_anomaly(True, check_nan=False):
            assert m.is_anomaly_enabled() and not m.is_anomaly_check_nan_enabled()
        assert not m.is_anomaly_enabled() and m.is_anomaly_check_nan_enabled()
        with m.autograd.detect_anomaly(check_nan=False):
            assert m.is_anomaly_enabled() and not m.is_anomaly_check_nan_enabled()
        m.autograd.set_detect_anomaly(True)
        try:
            assert m.is_anomaly_enabled() and m.is_anomaly_check_nan_enabled()
            x = m.tensor([0.0], requires_grad=True)
            with pytest.raises(RuntimeError, match="returned nan"):
                (x / x).sum().backward()
        finally:
            m.autograd.set_detect_anomaly(False)
        assert not m.is_anomaly_enabled()
    x = gc.tensor([0.0], requires_grad=True)
    with gc.autograd.detect_anomaly(check_nan=False):
        (x / x).sum().backward()  # detection on, the NaN check off: no error
    assert np.isnan(host(x.grad)).all()


# ---- nn ----------
LAZY = [
    (lambda m: m.nn.LazyBatchNorm1d(momentum=None), (4, 3)),
    (lambda m: m.nn.LazyBatchNorm2d(), (2, 3, 4, 4)),
    (lambda m: m.nn.LazyBatchNorm3d(affine=False), (2, 3, 2, 2, 2)),
    (lambda m: m.nn.LazyBatchNorm2d(bias=False, track_running_stats=False), (2, 3, 4, 4)),
    (lambda m: m.nn.LazyInstanceNorm1d(), (2, 3, 5)),
    (lambda m: m.nn.LazyInstanceNorm2d(affine=False, track_running_stats=False), (2, 3, 4, 4)),
    (lambda m: m.nn.LazyInstanceNorm3d(), (2, 3, 2, 2, 2)),
    (lambda m: m.nn.LazyConvTranspose1d(6, 2, groups=3, bias=False), (2, 3, 5)),
    (lambda m: m.nn.LazyConvTranspose2d(4, 3, stride=2, padding=1, output_padding=1),
     (2, 3, 4, 4)),
    (lambda m: m.nn.LazyConvTranspose3d(2, 2, dilation=2), (1, 3, 3, 3, 3)),
]


@needs_torch
@pytest.mark.parametrize("k", range(len(LAZY)))
def test_lazy_layers_match_pytorch(k, device):
    import torch

    make, shape = LAZY[k]
    data = RNG.standard_normal(shape).astype(np.float32)
    layers = []
    for m in (gc, torch):
        m.manual_seed(0)
        layer = make(m)
        before = repr(layer)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = layer(m.tensor(data))
        layers.append((layer, before, out))
    (a, ra, ya), (b, rb, yb) = layers
    assert type(a).__name__ == type(b).__name__ and repr(a) == repr(b)
    assert ra == rb.replace("torch", "gradcore")
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for key in sb:
        assert tuple(sa[key].shape) == tuple(sb[key].shape), key
    assert tuple(ya.shape) == tuple(yb.shape)
    if "Conv" not in type(a).__name__:  # (the same values: no random initialization)
        np.testing.assert_allclose(host(ya), yb.detach().numpy(), rtol=1e-4, atol=1e-5)
        for key in sb:
            np.testing.assert_allclose(host(sa[key]), sb[key].numpy(), rtol=1e-5, atol=1e-6)
    else:  # the initialized weights, given to both: the same outputs
        a.load_state_dict({k: gc.tensor(v.numpy()) for k, v in sb.items()})
        np.testing.assert_allclose(host(a(gc.tensor(data))), yb.detach().numpy(), rtol=1e-4,
                                   atol=1e-5)


def test_uninitialized_buffer_and_loading_into_a_lazy_norm():
    buf = gc.nn.UninitializedBuffer()
    assert repr(buf) == "<UninitializedBuffer>"
    with pytest.raises(RuntimeError, match="uninitialized parameter or buffer"):
        buf.shape  # noqa: B018
    buf.materialize((2, 3))
    assert type(buf) is gc.Tensor and buf.shape == (2, 3)
    lazy = gc.nn.LazyBatchNorm2d()
    assert lazy.has_uninitialized_params()
    ref = gc.nn.BatchNorm2d(3)
    ref.running_mean.fill_(0.5)
    lazy.load_state_dict(ref.state_dict())
    assert type(lazy.running_mean) is gc.Tensor and host(lazy.running_mean).tolist() == [0.5] * 3


@needs_torch
def test_nllloss2d_is_nllloss():
    import torch

    assert issubclass(gc.nn.NLLLoss2d, gc.nn.NLLLoss)
    logp = RNG.standard_normal((2, 3, 4, 4))
    target = RNG.integers(0, 3, (2, 4, 4))
    with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
        ours = gc.nn.NLLLoss2d(ignore_index=1)(gc.tensor(logp), gc.tensor(target))
    with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
        theirs = torch.nn.NLLLoss2d(ignore_index=1)(torch.tensor(logp), torch.tensor(target))
    np.testing.assert_allclose(host(ours), theirs.numpy(), rtol=1e-12)


# ---- nn.utils ----------
def _copy_weights(ours, theirs):
    ours.load_state_dict({k: gc.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})


@needs_torch
@pytest.mark.parametrize("kind", ["conv", "conv_transpose", "linear", "linear_bn1",
                                  "conv_no_bias"])
def test_fusion_matches_pytorch(kind):
    import torch
    from torch.nn.utils import fusion as tfusion

    def pair(m):
        m.manual_seed(1)
        if kind == "conv":
            layer, bn = m.nn.Conv2d(3, 4, 3), m.nn.BatchNorm2d(4)
        elif kind == "conv_no_bias":
            layer, bn = m.nn.Conv1d(3, 4, 3, bias=False), m.nn.BatchNorm1d(4, affine=False)
        elif kind == "conv_transpose":
            layer, bn = m.nn.ConvTranspose2d(3, 4, 2), m.nn.BatchNorm2d(4)
        elif kind == "linear":
            layer, bn = m.nn.Linear(3, 4), m.nn.BatchNorm1d(4)
        else:
            layer, bn = m.nn.Linear(3, 4), m.nn.BatchNorm1d(1)
        return layer, bn
    (layer, bn), (tlayer, tbn) = pair(gc), pair(torch)
    with torch.no_grad():
        for b in tbn.buffers():
            if b.is_floating_point():
                b.copy_(torch.rand(b.shape) + 0.5)
        for p in tbn.parameters():
            p.copy_(torch.rand(p.shape))
    _copy_weights(layer, tlayer)
    _copy_weights(bn, tbn)
    for mod in (layer, bn, tlayer, tbn):
        mod.eval()
    shape = {"conv": (2, 3, 5, 5), "conv_transpose": (2, 3, 3, 3), "conv_no_bias": (2, 3, 6)}
    data = RNG.standard_normal(shape.get(kind, (2, 3))).astype(np.float32)
    if kind.startswith("conv"):
        t = kind == "conv_transpose"
        fused = gc.nn.utils.fuse_conv_bn_eval(layer, bn, transpose=t)
        tfused = tfusion.fuse_conv_bn_eval(tlayer, tbn, transpose=t)
    else:
        fused = gc.nn.utils.fuse_linear_bn_eval(layer, bn)
        tfused = tfusion.fuse_linear_bn_eval(tlayer, tbn)
    assert fused is not layer and type(fused) is type(layer)
    assert isinstance(fused.weight, gc.nn.Parameter) and isinstance(fused.bias, gc.nn.Parameter)
    np.testing.assert_allclose(host(fused.weight), tfused.weight.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    out = fused(gc.tensor(data))
    np.testing.assert_allclose(host(out), tfused(torch.tensor(data)).detach().numpy(),
                               rtol=1e-4, atol=1e-5)
    x = gc.tensor(data)
    if kind != "linear_bn1":
        np.testing.assert_allclose(host(out), host(bn(layer(x))), rtol=1e-4, atol=1e-5)
    layer.train()
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        (gc.nn.utils.fuse_conv_bn_eval if kind.startswith("conv") else
         gc.nn.utils.fuse_linear_bn_eval)(layer, bn)


def test_fuse_weights_functions():
    w, b = gc.randn(4, 3, dtype=gc.float64), gc.randn(4, dtype=gc.float64)
    rm, rv = gc.randn(4, dtype=gc.float64), gc.rand(4, dtype=gc.float64) + 0.5
    bw, bb = gc.randn(4, dtype=gc.float64), gc.randn(4, dtype=gc.float64)
    fw, fb = gc.nn.utils.fuse_linear_bn_weights(w, b, rm, rv, 1e-5, bw, bb)
    x = gc.randn(5, 3, dtype=gc.float64)
    want = (x @ w.T + b - rm) / (rv + 1e-5).sqrt() * bw + bb
    np.testing.assert_allclose(host(x @ fw.T + fb), host(want), rtol=1e-12)
    cw, cb = gc.nn.utils.fuse_conv_bn_weights(w[:, :, None], None, rm, rv, 1e-5, None, None)
    np.testing.assert_allclose(host(cw[:, :, 0]), host(w / (rv + 1e-5).sqrt()[:, None]),
                               rtol=1e-12)
    np.testing.assert_allclose(host(cb), host(-rm / (rv + 1e-5).sqrt()), rtol=1e-12)


@needs_torch
def test_other_nn_utils_as_pytorch():
    import torch

    m = gc.nn.utils.skip_init(gc.nn.Linear, 5, 2, bias=False)
    assert m.weight.shape == (2, 5) and m.bias is None
    with pytest.raises(RuntimeError, match="Expected a Module"):
        gc.nn.utils.skip_init(int, 2)
    with pytest.raises(RuntimeError, match="Expected a Module"):
        torch.nn.utils.skip_init(int, 2)
    with pytest.raises(RuntimeError, match="must support a 'device' arg"):
        gc.nn.utils.skip_init(gc.nn.ReLU)
    with pytest.raises(RuntimeError, match="must support a 'device' arg"):
        torch.nn.utils.skip_init(torch.nn.ReLU)

    lin = gc.nn.Linear(2, 1)
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        out = gc.nn.utils.stateless.functional_call(
            lin, {"weight": gc.ones(1, 2), "bias": gc.zeros(1)}, (gc.tensor([2.0, 3.0]),))
    assert out.tolist() == [5.0]

    w = gc.nn.Parameter(gc.ones(4))
    w.grad = gc.full((4,), 3.0)
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        norm = gc.nn.utils.clip_grad_norm([w], 1.0)
    assert abs(norm.item() - 6.0) < 1e-6 and abs(w.grad.norm().item() - 1.0) < 1e-5

    def model(m):
        return m.nn.Sequential(m.nn.Conv2d(3, 4, 3), m.nn.ConvTranspose2d(4, 2, 2),
                               m.nn.Sequential(m.nn.Conv3d(2, 2, 2), m.nn.Linear(2, 2)))
    ours, theirs = model(gc), model(torch)
    before = [host(p).copy() for p in ours.parameters()]
    assert gc.nn.utils.convert_conv2d_weight_memory_format(ours, gc.channels_last) is ours
    torch.nn.utils.convert_conv2d_weight_memory_format(theirs, torch.channels_last)
    gc.nn.utils.convert_conv3d_weight_memory_format(ours, gc.channels_last_3d)
    torch.nn.utils.convert_conv3d_weight_memory_format(theirs, torch.channels_last_3d)
    for a, b, v in zip(ours.parameters(), theirs.parameters(), before):
        assert a.stride() == b.stride() and isinstance(a, gc.nn.Parameter)
        np.testing.assert_array_equal(host(a), v)


@needs_torch
def test_stack_module_state_matches_pytorch():
    import torch

    def models(m):
        m.manual_seed(0)
        return [m.nn.Sequential(m.nn.Linear(3, 2), m.nn.BatchNorm1d(2)) for _ in range(3)]
    (params, buffers), (tparams, tbuffers) = (gc.func.stack_module_state(models(gc)),
                                              torch.func.stack_module_state(models(torch)))
    assert list(params) == list(tparams) and list(buffers) == list(tbuffers)
    for ours, theirs in ((params, tparams), (buffers, tbuffers)):
        for k in theirs:
            a, b = ours[k], theirs[k]
            assert tuple(a.shape) == tuple(b.shape) and a.requires_grad == b.requires_grad
            assert a.is_leaf and str(a.dtype)[9:] == str(b.dtype)[6:]
    np.testing.assert_array_equal(host(buffers["1.running_var"]), np.ones((3, 2)))
    for m, fn in ((gc, gc.func.stack_module_state), (torch, torch.func.stack_module_state)):
        with pytest.raises(RuntimeError, match="at least one model"):
            fn([])
        with pytest.raises(RuntimeError, match="same class"):
            fn([m.nn.Linear(2, 2), m.nn.Bilinear(2, 2, 2)])
        with pytest.raises(RuntimeError, match="training/eval mode"):
            fn([m.nn.Linear(2, 2), m.nn.Linear(2, 2).eval()])
        frozen = m.nn.Linear(2, 2)
        frozen.weight.requires_grad_(False)
        with pytest.raises(RuntimeError, match="same .requires_grad"):
            fn([m.nn.Linear(2, 2), frozen])


# ---- optimizer step hooks ----------
@needs_torch
def test_optimizer_step_hooks_as_pytorch():
    import torch
    from torch.optim import optimizer as toptimizer

    records = []
    for m, glob in ((gc, gc.optim.optimizer), (torch, toptimizer)):
        w = m.nn.Parameter(m.ones(2))
        opt = m.optim.SGD([w], lr=0.5)
        calls = []
        h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", o is opt,
                                                                      a[0] is o, a[1:], k)))
        h2 = opt.register_step_post_hook(lambda o, a, k: calls.append(("post", a[1:], k)))
        h3 = glob.register_optimizer_step_pre_hook(lambda o, a, k: calls.append("gpre"))
        h4 = glob.register_optimizer_step_post_hook(lambda o, a, k: calls.append("gpost"))
        try:
            w.grad = m.ones(2)
            opt.step()
            h1.remove()
            h3.remove()
            opt.step()
            h2.remove()
            h4.remove()
            opt.step()
            # a pre hook may replace the arguments: here the closure
            opt.register_step_pre_hook(lambda o, a, k: ((o,), {"closure": lambda: 7.0}))
            assert opt.step() == 7.0
            bad = opt.register_step_pre_hook(lambda o, a, k: 3)
            with pytest.raises(RuntimeError, match="must return None or a tuple"):
                opt.step()
            bad.remove()
        finally:
            for h in (h1, h2, h3, h4):
                h.remove()
        records.append((calls, w.tolist()))
    assert records[0] == records[1]


def test_optimizer_hooks_wrap_subclasses_step():
    class Halve(gc.optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {})

        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    p.data.mul_(0.5)

    w = gc.nn.Parameter(gc.ones(1))
    opt = Halve([w])
    seen = []
    opt.register_step_post_hook(lambda o, a, k: seen.append(w.item()))
    opt.step()
    assert seen == [0.5]


# ---- sdpa_kernel ----------
@needs_torch
def test_sdpa_kernel_accepts_pytorchs_arguments_and_changes_nothing(device):
    import torch
    from torch.nn.attention import SDPBackend as TB

    from gradcore.nn.attention import SDPBackend, sdpa_kernel

    assert [(b.name, b.value) for b in SDPBackend] == [(b.name, b.value) for b in
                                                         TB.__members__.values()]
    assert repr(SDPBackend.MATH) == repr(TB.MATH) and str(SDPBackend.MATH) == str(TB.MATH)
    q = gc.tensor(RNG.standard_normal((2, 3, 4)).astype(np.float32))
    plain = gc.nn.functional.scaled_dot_product_attention(q, q, q)
    for backends in (SDPBackend.MATH, [SDPBackend.FLASH_ATTENTION, SDPBackend.MATH],
                     [SDPBackend.EFFICIENT_ATTENTION], []):
        with sdpa_kernel(backends) as ctx:
            assert ctx == {}
            out = gc.nn.functional.scaled_dot_product_attention(q, q, q)
        np.testing.assert_array_equal(host(out), host(plain))
    with pytest.raises(AssertionError, match="must be an instance of SDPBackend"):
        with sdpa_kernel("math"):
            pass
    with pytest.raises(AssertionError, match="must be an instance of SDPBackend"):
        with torch.nn.attention.sdpa_kernel("math"):
            pass
