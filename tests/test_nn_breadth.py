"""The wider torch.nn surface: RMSNorm, pixel and channel shuffles, Threshold, RReLU,
Bilinear, LocalResponseNorm, Softmax2d, the likelihood and margin losses, alpha and 3-D
dropout, EmbeddingBag, LP pools, 3-D adaptive max pool and unpool, gumbel_softmax,
pdist, the upsample aliases, nn.Buffer, SyncBatchNorm and the lazy layers, against
torch 2.13: values, gradients, repr and errors. The comparisons skip, with a reason,
when PyTorch is not installed; the rest checks gradcore alone."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gradcore as gc
import gradcore.nn.functional as F
from gradcore import nn

from conftest import host, needs_pinned_torch, needs_torch


def _torch():
    import torch
    return torch


def _same(fn, arrays, grad=None, atol=1e-10, nan=False):
    """``fn(lib, F, *tensors)`` gives the same values from gradcore and PyTorch over the
    same float64 arrays, and the same gradients of a random projection for the float
    inputs (``grad``: their positions; default all float ones)."""
    torch = _torch()
    grad = [i for i, a in enumerate(arrays) if np.asarray(a).dtype.kind == "f"] \
        if grad is None else grad
    gx = [gc.tensor(a, requires_grad=i in grad) for i, a in enumerate(arrays)]
    tx = [torch.tensor(a, requires_grad=i in grad) for i, a in enumerate(arrays)]
    gy, ty = fn(gc, F, *gx), fn(torch, torch.nn.functional, *tx)
    assert tuple(gy.shape) == tuple(ty.shape)
    np.testing.assert_allclose(host(gy), ty.detach().numpy(), atol=atol, rtol=1e-9)
    if not grad or not ty.requires_grad:
        return
    w = np.random.default_rng(7).random(tuple(ty.shape))
    gy.backward(gc.tensor(w))
    ty.backward(torch.tensor(w))
    for i in grad:
        np.testing.assert_allclose(host(gx[i].grad), tx[i].grad.numpy(), atol=atol,
                                   rtol=1e-9, equal_nan=nan)


def _raises_like(fn, *args_of):
    """gradcore and PyTorch raise the same error type with the same message."""
    torch = _torch()
    with pytest.raises(Exception) as t_err:
        fn(torch, torch.nn.functional, *args_of(torch))
    with pytest.raises(type(t_err.value)) as g_err:
        fn(gc, F, *args_of(gc))
    assert str(g_err.value) == str(t_err.value)


R = np.random.default_rng(0)
X34 = R.standard_normal((3, 4))
T34 = R.standard_normal((3, 4))
V34 = R.random((3, 4)) + 0.1


# ---- values and gradients against PyTorch ----------
CASES = {
    "rms_norm_weight": (lambda m, F, x, w: F.rms_norm(x, (4,), w), [X34, R.standard_normal(4)]),
    "rms_norm_eps": (lambda m, F, x: F.rms_norm(x, (3, 4), eps=0.1), [X34]),
    "rms_norm_default_eps": (lambda m, F, x: F.rms_norm(x, [4]), [X34 * 1e-9]),
    "pixel_shuffle": (lambda m, F, x: F.pixel_shuffle(x, 2), [R.standard_normal((2, 3, 8, 2, 3))]),
    "pixel_shuffle_top": (lambda m, F, x: m.pixel_shuffle(x, 3), [R.standard_normal((9, 2, 1))]),
    "pixel_unshuffle": (lambda m, F, x: m.pixel_unshuffle(x, 2), [R.standard_normal((3, 2, 4, 6))]),
    "channel_shuffle": (lambda m, F, x: F.channel_shuffle(x, 3), [R.standard_normal((2, 6, 2, 2))]),
    "threshold": (lambda m, F, x: F.threshold(x * 1, 0.1, -3.0), [X34]),
    "threshold_at": (lambda m, F, x: F.threshold(x, 0.5, 2.0), [np.array([0.5, -1.0, 0.7])]),
    "rrelu_eval": (lambda m, F, x: F.rrelu(x, 0.1, 0.3), [X34]),
    "bilinear": (lambda m, F, a, b, w, c: F.bilinear(a, b, w, c),
                 [X34, R.standard_normal((3, 5)), R.standard_normal((2, 4, 5)),
                  R.standard_normal(2)]),
    "bilinear_batched": (lambda m, F, a, b, w: F.bilinear(a, b, w),
                         [R.standard_normal((2, 3, 4)), R.standard_normal((2, 3, 5)),
                          R.standard_normal((2, 4, 5))]),
    "bilinear_1d": (lambda m, F, a, b, w: F.bilinear(a, b, w),
                    [R.standard_normal(4), R.standard_normal(5), R.standard_normal((2, 4, 5))]),
    "local_response_norm_3d": (lambda m, F, x: F.local_response_norm(x, 3, alpha=0.1),
                               [R.standard_normal((2, 5, 3))]),
    "local_response_norm_5d": (lambda m, F, x: F.local_response_norm(x, 4, 0.1, 0.5, 2.0),
                               [R.standard_normal((2, 5, 3, 2, 2))]),
    "softmax2d": (lambda m, F, x: m.nn.Softmax2d()(x), [R.standard_normal((2, 3, 2, 2))]),
    "gaussian_nll": (lambda m, F, a, b, v: F.gaussian_nll_loss(a, b, v), [X34, T34, V34]),
    "gaussian_nll_short_var": (lambda m, F, a, b, v: F.gaussian_nll_loss(
        a, b, v, full=True, reduction="none"), [X34, T34, R.random(3) + 0.1]),
    "gaussian_nll_float_var": (lambda m, F, a, b: F.gaussian_nll_loss(a, b, 0.7, reduction="sum"),
                               [X34, T34]),
    "gaussian_nll_clamped": (lambda m, F, a, b, v: F.gaussian_nll_loss(a, b, v, eps=0.5),
                             [X34, T34, V34]),
    "poisson_nll": (lambda m, F, a, b: F.poisson_nll_loss(a, b), [X34, R.random((3, 4)) * 3]),
    "poisson_nll_full": (lambda m, F, a: F.poisson_nll_loss(
        a, m.tensor(np.round(V34 * 3)), log_input=False, full=True, reduction="none"), [V34]),
    "hinge_embedding": (lambda m, F, a: F.hinge_embedding_loss(
        a, m.tensor([[1.0, -1, 1, -1]] * 3), margin=0.5), [X34]),
    "hinge_embedding_none": (lambda m, F, a: F.hinge_embedding_loss(
        a, m.tensor([[1.0, -1, 0, -1]] * 3), reduction="none"), [X34]),
    "multi_margin_p1": (lambda m, F, a: F.multi_margin_loss(a, m.tensor([0, 3, 1]), margin=0.8),
                        [X34]),
    "multi_margin_p2_weight": (lambda m, F, a: F.multi_margin_loss(
        a, m.tensor([0, 3, 1]), p=2, weight=m.tensor([0.5, 1.0, 2.0, 0.3], dtype=m.float64),
        reduction="none"), [X34]),
    "multi_margin_1d": (lambda m, F, a: F.multi_margin_loss(a, m.tensor(2), reduction="none"),
                        [R.standard_normal(4)]),
    "multilabel_margin": (lambda m, F, a: F.multilabel_margin_loss(
        a, m.tensor([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 1, 2, 3]])), [X34]),
    "multilabel_margin_none": (lambda m, F, a: F.multilabel_margin_loss(
        a, m.tensor([[3, 3, -1, 1], [1, 2, -1, 0], [0, 1, 2, -1]]), reduction="none"), [X34]),
    "multilabel_margin_1d": (lambda m, F, a: F.multilabel_margin_loss(
        a, m.tensor([2, 2, -1, 0]), reduction="none"), [R.standard_normal(4)]),
    "triplet_distance_swap": (lambda m, F, a, p, n: F.triplet_margin_with_distance_loss(
        a, p, n, swap=True), [X34, T34, V34]),
    "triplet_distance_fn": (lambda m, F, a, p, n: F.triplet_margin_with_distance_loss(
        a, p, n, distance_function=lambda u, v: 1 - F.cosine_similarity(u, v), margin=0.3,
        reduction="none"), [X34, T34, V34]),
    "lp_pool1d": (lambda m, F, x: F.lp_pool1d(x, 2, 3, 2), [R.random((2, 3, 7)) + 0.1]),
    "lp_pool2d_ceil": (lambda m, F, x: F.lp_pool2d(x, 3.5, (2, 3), ceil_mode=True),
                       [R.random((2, 3, 5, 7)) + 0.1]),
    "lp_pool3d": (lambda m, F, x: m.nn.LPPool3d(1, 2, 1)(x), [R.random((2, 2, 3, 4, 3)) + 0.1]),
    "lp_pool_inf": (lambda m, F, x: F.lp_pool2d(x, float("inf"), 2),
                    [R.standard_normal((2, 3, 4, 4))]),
    "adaptive_max_pool3d": (lambda m, F, x: F.adaptive_max_pool3d(x, (2, 3, 2)),
                            [R.standard_normal((2, 2, 5, 7, 3))]),
    "adaptive_max_pool3d_none": (lambda m, F, x: m.nn.AdaptiveMaxPool3d((2, None, 1))(x),
                                 [R.standard_normal((2, 4, 6, 4))]),
    "adaptive_max_pool3d_indices": (lambda m, F, x: F.adaptive_max_pool3d(
        x, (2, 3, 2), True)[1], [R.standard_normal((2, 2, 5, 7, 3))]),
    "adaptive_max_pool3d_with_indices": (lambda m, F, x: F.adaptive_max_pool3d_with_indices(
        x, 2)[1], [R.standard_normal((1, 2, 4, 4, 4))]),
    "max_pool2d_with_indices": (lambda m, F, x: F.max_pool2d_with_indices(x, 2)[1],
                                [R.standard_normal((1, 2, 4, 4))]),
    "max_pool1d_with_indices": (lambda m, F, x: F.max_pool1d_with_indices(x, 2)[0],
                                [R.standard_normal((1, 2, 6))]),
    "adaptive_max_pool1d_with_indices": (lambda m, F, x: F.adaptive_max_pool1d_with_indices(
        x, 3)[1], [R.standard_normal((1, 2, 7))]),
    "max_unpool3d": (lambda m, F, x: m.nn.MaxUnpool3d(2)(
        *F.max_pool3d(x, 2, return_indices=True), output_size=x.shape),
        [R.standard_normal((1, 2, 5, 4, 4))]),
    "pdist": (lambda m, F, x: F.pdist(x), [R.standard_normal((5, 3))]),
    "pdist_p1": (lambda m, F, x: F.pdist(x, 1), [R.standard_normal((5, 3))]),
    "pdist_p3": (lambda m, F, x: F.pdist(x, 3.0), [R.standard_normal((5, 3))]),
    "pdist_inf": (lambda m, F, x: F.pdist(x, float("inf")), [R.standard_normal((5, 3))]),
}


# lp_pool with p = inf is the max of |x| from PyTorch 2.13 on (its functional.lp_pool*
# returns max_pool(input.abs())); before, (avg_pool(x ** inf) * k) ** (1 / inf), which is
# 1 (PyTorch 2.11 on a GPU machine gave 1.0 everywhere): compared with the pinned
# PyTorch only
_SINCE_2_13 = {"lp_pool_inf"}


@needs_torch
@pytest.mark.parametrize("name", [
    pytest.param(name, marks=needs_pinned_torch) if name in _SINCE_2_13 else name
    for name in CASES])
def test_matches_pytorch(name):
    fn, arrays = CASES[name]
    _same(fn, arrays)


W6 = R.standard_normal((6, 3))
BAG_INPUT = np.array([0, 2, 2, 5, 1, 4, 0, 3])
BAG_OFFSETS = np.array([0, 3, 3, 5])  # an empty bag in the middle


@needs_torch
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("kind", ["offsets", "padding", "last_offset", "2d"])
def test_embedding_bag_matches_pytorch(mode, kind):
    def fn(m, F, w):
        i, o = m.tensor(BAG_INPUT), m.tensor(BAG_OFFSETS)
        if kind == "offsets":
            return F.embedding_bag(i, w, o, mode=mode)
        if kind == "padding":
            return F.embedding_bag(i, w, o, mode=mode, padding_idx=2)
        if kind == "last_offset":
            return F.embedding_bag(i, w, m.tensor([0, 3, 3, 5, 8]), mode=mode,
                                   include_last_offset=True)
        return F.embedding_bag(i.reshape(2, 4), w, mode=mode, padding_idx=-1)
    _same(fn, [W6])


@needs_torch
def test_embedding_bag_per_sample_weights_and_module():
    _same(lambda m, F, w, p: F.embedding_bag(m.tensor(BAG_INPUT), w, m.tensor(BAG_OFFSETS),
                                             mode="sum", per_sample_weights=p),
          [W6, R.random(8)])
    _same(lambda m, F, w: m.nn.EmbeddingBag.from_pretrained(w, freeze=False, mode="max")(
        m.tensor(BAG_INPUT), m.tensor(BAG_OFFSETS)), [W6], grad=[])


def test_embedding_bag_scale_grad_by_freq():
    """Each row's gradient divided by how often the input names it."""
    w = gc.tensor(W6, requires_grad=True)
    F.embedding_bag(gc.tensor(BAG_INPUT), w, gc.tensor(BAG_OFFSETS), mode="sum",
                    scale_grad_by_freq=True).sum().backward()
    np.testing.assert_allclose(host(w.grad), np.ones((6, 3)))


# ---- errors against PyTorch ----------
ERRORS = {
    "pixel_shuffle_rank": (lambda m, F, x: F.pixel_shuffle(x, 2), lambda m: [m.zeros(4, 4)]),
    "pixel_shuffle_factor": (lambda m, F, x: F.pixel_shuffle(x, 0),
         lambda m: [m.zeros(1, 4, 2, 2)]),
    "pixel_shuffle_channels": (lambda m, F, x: F.pixel_shuffle(x, 3),
         lambda m: [m.zeros(1, 8, 2, 2)]),
    "pixel_unshuffle_height": (lambda m, F, x: F.pixel_unshuffle(x, 2),
         lambda m: [m.zeros(1, 2, 5, 4)]),
    "pixel_unshuffle_width": (lambda m, F, x: F.pixel_unshuffle(x, 2),
         lambda m: [m.zeros(1, 2, 4, 5)]),
    "channel_shuffle_groups": (lambda m, F, x: F.channel_shuffle(x, 3),
         lambda m: [m.zeros(2, 8, 2)]),
    "channel_shuffle_zero": (lambda m, F, x: F.channel_shuffle(x, 0), lambda m: [m.zeros(2, 8, 2)]),
    "channel_shuffle_rank": (lambda m, F, x: F.channel_shuffle(x, 2), lambda m: [m.zeros(2, 4)]),
    "rms_norm_shape": (lambda m, F, x: F.rms_norm(x, (5,)), lambda m: [m.zeros(2, 4)]),
    "rms_norm_weight": (lambda m, F, x, w: F.rms_norm(x, (4,), w),
         lambda m: [m.zeros(2, 4), m.ones(5)]),
    "rms_norm_empty": (lambda m, F, x: F.rms_norm(x, []), lambda m: [m.zeros(2, 4)]),
    "bilinear_in2": (lambda m, F, a, b, w: F.bilinear(a, b, w),
                     lambda m: [m.zeros(3, 4), m.zeros(3, 5), m.zeros(6, 4, 4)]),
    "bilinear_batch": (lambda m, F, a, b, w: F.bilinear(a, b, w),
                       lambda m: [m.zeros(3, 4), m.zeros(2, 5), m.zeros(6, 4, 5)]),
    "bilinear_bias": (lambda m, F, a, b, w, c: F.bilinear(a, b, w, c),
                      lambda m: [m.zeros(3, 4), m.zeros(3, 5), m.zeros(6, 4, 5), m.zeros(5)]),
    "local_response_norm_rank": (lambda m, F, x: F.local_response_norm(x, 2),
                                 lambda m: [m.zeros(3, 4)]),
    "rrelu_bounds": (lambda m, F, x: F.rrelu(x, 0.5, 0.2, True), lambda m: [m.zeros(3)]),
    "rrelu_integer": (lambda m, F, x: F.rrelu(x, training=True), lambda m: [m.arange(3)]),
    "softmax2d_rank": (lambda m, F, x: m.nn.Softmax2d()(x), lambda m: [m.zeros(3)]),
    "gaussian_var_size": (lambda m, F, a, v: F.gaussian_nll_loss(a, a, v),
                          lambda m: [m.zeros(3, 4), m.ones(3, 2)]),
    "gaussian_var_negative": (lambda m, F, a, v: F.gaussian_nll_loss(a, a, v),
                              lambda m: [m.zeros(3, 4), -m.ones(3, 4)]),
    "gaussian_reduction": (lambda m, F, a, v: F.gaussian_nll_loss(a, a, v, reduction="x"),
                           lambda m: [m.zeros(3, 4), m.ones(3, 4)]),
    "poisson_reduction": (lambda m, F, a: F.poisson_nll_loss(a, a, reduction="x"),
                          lambda m: [m.zeros(3)]),
    "hinge_reduction": (lambda m, F, a: F.hinge_embedding_loss(a, a, reduction="x"),
                        lambda m: [m.zeros(3)]),
    "multi_margin_p": (lambda m, F, a, t: F.multi_margin_loss(a, t, p=3),
                       lambda m: [m.zeros(3, 4), m.tensor([0, 1, 2])]),
    "multi_margin_range": (lambda m, F, a, t: F.multi_margin_loss(a, t),
                           lambda m: [m.zeros(3, 4), m.tensor([0, 1, 4])]),
    "multi_margin_target": (lambda m, F, a, t: F.multi_margin_loss(a, t),
                            lambda m: [m.zeros(3, 4), m.tensor([0, 1])]),
    "multi_margin_weight": (lambda m, F, a, t, w: F.multi_margin_loss(a, t, weight=w),
                            lambda m: [m.zeros(3, 4), m.tensor([0, 1, 2]), m.ones(3)]),
    "multi_margin_rank": (lambda m, F, a, t: F.multi_margin_loss(a, t),
                          lambda m: [m.zeros(3, 4, 2), m.tensor([0, 1, 2])]),
    "multilabel_margin_target": (lambda m, F, a, t: F.multilabel_margin_loss(a, t),
                                 lambda m: [m.zeros(3, 4), m.tensor([0, 1, 2])]),
    "multilabel_margin_range": (lambda m, F, a, t: F.multilabel_margin_loss(a, t),
                                lambda m: [m.zeros(3, 4), m.tensor([[0, 1, 2, 4]] * 3)]),
    "triplet_distance_margin": (lambda m, F, a: F.triplet_margin_with_distance_loss(
        a, a, a, margin=0), lambda m: [m.zeros(3, 4)]),
    "triplet_distance_dims": (lambda m, F, a, p: F.triplet_margin_with_distance_loss(a, p, a),
                              lambda m: [m.zeros(3, 4), m.zeros(4)]),
    "alpha_dropout_p": (lambda m, F, a: F.alpha_dropout(a, 2), lambda m: [m.zeros(3)]),
    "feature_alpha_dropout_rank": (lambda m, F, a: F.feature_alpha_dropout(a, 0.5, True),
                                   lambda m: [m.zeros(3)]),
    "embedding_bag_2d_offsets": (lambda m, F, i, w, o: F.embedding_bag(i, w, o),
                                 lambda m: [m.tensor([[0, 1]]), m.zeros(5, 3), m.tensor([0])]),
    "embedding_bag_no_offsets": (lambda m, F, i, w: F.embedding_bag(i, w),
                                 lambda m: [m.tensor([0, 1]), m.zeros(5, 3)]),
    "embedding_bag_mode": (lambda m, F, i, w, o: F.embedding_bag(i, w, o, mode="foo"),
                           lambda m: [m.tensor([0, 1]), m.zeros(5, 3), m.tensor([0])]),
    "embedding_bag_weights_mode": (lambda m, F, i, w, o: F.embedding_bag(
        i, w, o, mode="max", per_sample_weights=m.ones(2)),
        lambda m: [m.tensor([0, 1]), m.zeros(5, 3), m.tensor([0])]),
    "embedding_bag_weights_shape": (lambda m, F, i, w, o: F.embedding_bag(
        i, w, o, mode="sum", per_sample_weights=m.ones(3)),
        lambda m: [m.tensor([0, 1]), m.zeros(5, 3), m.tensor([0])]),
    "embedding_bag_dtype": (lambda m, F, i, w, o: F.embedding_bag(i, w, o),
                            lambda m: [m.tensor([0.0, 1.0]), m.zeros(5, 3), m.tensor([0])]),
    "embedding_bag_padding": (lambda m, F, i, w, o: F.embedding_bag(i, w, o, padding_idx=9),
                              lambda m: [m.tensor([0, 1]), m.zeros(5, 3), m.tensor([0])]),
    "adaptive_max_pool3d_rank": (lambda m, F, x: F.adaptive_max_pool3d(x, 2),
                                 lambda m: [m.zeros(2, 3, 4)]),
    "adaptive_avg_pool3d_rank": (lambda m, F, x: F.adaptive_avg_pool3d(x, 2),
                                 lambda m: [m.zeros(2, 3)]),
    "max_unpool3d_rank": (lambda m, F, x: F.max_unpool3d(x, x.long(), 2),
                          lambda m: [m.zeros(2, 2, 2)]),
    "pdist_rank": (lambda m, F, x: F.pdist(x), lambda m: [m.zeros(3)]),
    "pdist_p": (lambda m, F, x: F.pdist(x, -1), lambda m: [m.zeros(3, 4)]),
    "multi_margin_module_weight": (lambda m, F, w: m.nn.MultiMarginLoss(weight=w),
                                   lambda m: [m.ones(2, 2)]),
    "triplet_distance_module_margin": (
        lambda m, F: m.nn.TripletMarginWithDistanceLoss(margin=0), lambda m: []),
}


@needs_torch
@pytest.mark.parametrize("name", ERRORS)
def test_errors_match_pytorch(name):
    fn, args_of = ERRORS[name]
    _raises_like(fn, args_of)


# ---- repr, parameters, state dict ----------
def _modules(m):
    return [m.nn.RMSNorm(4), m.nn.RMSNorm([2, 3], eps=1e-3, elementwise_affine=False),
            m.nn.PixelShuffle(2), m.nn.PixelUnshuffle(3), m.nn.ChannelShuffle(2),
            m.nn.Threshold(0.1, 20), m.nn.Threshold(0.1, 2.0, True), m.nn.RReLU(),
            m.nn.RReLU(0.1, 0.3, True), m.nn.Bilinear(2, 3, 4), m.nn.Bilinear(2, 3, 4, False),
            m.nn.LazyLinear(3), m.nn.LocalResponseNorm(2), m.nn.Softmax2d(),
            m.nn.GaussianNLLLoss(), m.nn.PoissonNLLLoss(), m.nn.HingeEmbeddingLoss(),
            m.nn.MultiMarginLoss(weight=m.ones(3)), m.nn.MultiLabelMarginLoss(),
            m.nn.TripletMarginWithDistanceLoss(), m.nn.AlphaDropout(),
            m.nn.FeatureAlphaDropout(0.2, True), m.nn.Dropout3d(), m.nn.EmbeddingBag(5, 3),
            m.nn.EmbeddingBag(5, 3, mode="max", padding_idx=1, max_norm=2.0, norm_type=3.0,
                              scale_grad_by_freq=True, include_last_offset=True),
            m.nn.LPPool1d(2, 3), m.nn.LPPool2d(2.5, (2, 3), 1, True), m.nn.LPPool3d(1, 2),
            m.nn.AdaptiveMaxPool3d((2, None, 3)), m.nn.AdaptiveMaxPool3d(2, True),
            m.nn.MaxUnpool3d(2), m.nn.MaxUnpool3d(2, 1, 1), m.nn.SyncBatchNorm(3),
            m.nn.LazyConv1d(4, 3), m.nn.LazyConv2d(4, 3, padding=1), m.nn.LazyConv3d(2, 1)]


@needs_pinned_torch
def test_repr_parameters_and_state_dict_match_pytorch():
    torch = _torch()
    for g, t in zip(_modules(gc), _modules(torch)):
        assert repr(g) == repr(t)
        assert [(n, tuple(p.shape)) for n, p in g.named_parameters()
                if isinstance(p, nn.Parameter) and not isinstance(p, nn.UninitializedParameter)] \
            == [(n, tuple(p.shape)) for n, p in t.named_parameters()
                if not isinstance(p, torch.nn.UninitializedParameter)]
        assert list(g.state_dict()) == list(t.state_dict())


# ---- randomness: rrelu, alpha dropout, dropout3d, gumbel_softmax ----------
def test_rrelu_training_draws_slopes_in_range():
    gc.manual_seed(0)
    x = gc.tensor(-np.linspace(0.1, 2.0, 4000), requires_grad=True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    slopes = host(y) / host(x)
    assert slopes.min() >= 0.1 and slopes.max() < 0.3 and slopes.std() > 0.05
    y.sum().backward()
    np.testing.assert_allclose(host(x.grad), slopes)  # the gradient is the slope drawn
    pos = gc.tensor([1.0, 2.0])
    assert host(nn.RReLU()(pos)).tolist() == [1.0, 2.0]
    z = gc.tensor([-1.0, 2.0])
    assert F.rrelu_(z, 0.2, 0.2, training=True) is z and host(z).tolist() == \
        [pytest.approx(-0.2), 2.0]


def test_alpha_dropout_keeps_mean_and_variance():
    gc.manual_seed(1)
    x = gc.randn(200000, dtype=gc.float64)
    y = host(F.alpha_dropout(x, 0.3, training=True))
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    # dropped elements all take one value: a * alpha' + b
    a = 1 / math.sqrt((1.7580993408473766 ** 2 * 0.3 + 1) * 0.7)
    dropped = -1.7580993408473766 * a + 1.7580993408473766 * a * 0.3
    assert np.isclose(y, dropped).mean() == pytest.approx(0.3, abs=0.01)
    assert F.alpha_dropout(x, 0.3) is x  # training=False by default
    f = host(F.feature_alpha_dropout(gc.randn(64, 8, 5), 0.5, training=True))
    assert np.all(np.isclose(f, dropped).all(-1) == np.isclose(f, dropped).any(-1))
    m = nn.AlphaDropout(0.4).eval()
    assert m(x) is x


def test_dropout3d_zeroes_whole_volumes():
    gc.manual_seed(2)
    y = host(F.dropout3d(gc.ones(4, 6, 2, 2, 2), 0.5))
    per_channel = y.reshape(4, 6, -1)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert np.all(per_channel.min(-1) == per_channel.max(-1))
    assert tuple(F.dropout3d(gc.ones(6, 2, 2, 2), 0.5).shape) == (6, 2, 2, 2)
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout3d"):
        F.dropout3d(gc.ones(3, 4))
    x = gc.ones(6, 2, 2, 2)
    assert F.dropout3d(x, 0.5, inplace=True) is x


def test_gumbel_softmax_soft_and_hard():
    gc.manual_seed(3)
    logits = gc.tensor(np.log([[0.7, 0.2, 0.1]] * 4000), requires_grad=True)
    y = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(host(y).sum(-1), 1.0)
    hard = F.gumbel_softmax(logits, hard=True)
    h = host(hard)
    assert set(np.unique(h)) == {0.0, 1.0} and np.all(h.sum(-1) == 1)
    np.testing.assert_allclose(h.mean(0), [0.7, 0.2, 0.1], atol=0.03)  # Gumbel-max sampling
    (hard * gc.tensor([1.0, 2.0, 3.0])).sum().backward()  # straight through: soft gradient
    assert np.abs(host(logits.grad)).sum() > 0
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
        F.gumbel_softmax(logits, eps=1e-5)


@needs_torch
def test_upsample_aliases_warn_and_interpolate():
    x = R.standard_normal((1, 2, 3, 3))
    with pytest.warns(UserWarning, match="`nn.functional.upsample` is deprecated"):
        _same(lambda m, F, x: F.upsample(x, scale_factor=2, mode="bilinear"), [x])
    with pytest.warns(UserWarning, match="`nn.functional.upsample_bilinear` is deprecated"):
        _same(lambda m, F, x: F.upsample_bilinear(x, size=(5, 4)), [x])
    with pytest.warns(UserWarning, match="`nn.functional.upsample_nearest` is deprecated"):
        _same(lambda m, F, x: F.upsample_nearest(x, size=5), [x[0]])


# ---- modules: Buffer, SyncBatchNorm, lazy layers ----------
def test_buffer_registers_on_assignment():
    m = nn.Module()
    m.steps = nn.Buffer(gc.zeros(1))
    m.cache = nn.Buffer(gc.ones(2), persistent=False)
    assert list(m.state_dict()) == ["steps"]
    assert [n for n, _ in m.named_buffers()] == ["steps", "cache"]
    assert isinstance(m.steps, nn.Buffer) and not isinstance(gc.zeros(1), nn.Buffer)
    assert not m.steps.requires_grad and m.steps.persistent
    m.steps = gc.ones(1)  # a plain tensor into a registered buffer stays a buffer
    assert host(m.state_dict()["steps"]).tolist() == [1.0]
    assert list(m.parameters()) == []


def test_sync_batch_norm_is_batch_norm_on_one_process():
    gc.manual_seed(4)
    x = gc.randn(6, 3, 4)
    sync, bn = nn.SyncBatchNorm(3), nn.BatchNorm1d(3)
    np.testing.assert_allclose(host(sync(x)), host(bn(x)))
    np.testing.assert_allclose(host(sync.running_var), host(bn.running_var))
    with pytest.raises(ValueError, match=r"expected at least 2D input \(got 1D input\)"):
        sync(gc.zeros(3))
    model = nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3), nn.Sequential(nn.BatchNorm1d(5)),
                          nn.InstanceNorm2d(3))
    model[1].running_mean.fill_(0.5)
    model.eval()
    out = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert [type(c).__name__ for c in out.modules()] == [
        "Sequential", "Conv2d", "SyncBatchNorm", "Sequential", "SyncBatchNorm", "InstanceNorm2d"]
    assert out[1].weight is model[1].weight and not out[1].training
    assert host(out[1].running_mean).tolist() == [0.5] * 3


def test_lazy_layers_infer_their_input_size():
    gc.manual_seed(5)
    lin = nn.LazyLinear(3)
    assert isinstance(lin.weight, nn.UninitializedParameter) and lin.has_uninitialized_params()
    assert repr(lin.weight) == "<UninitializedParameter>"
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        _ = lin.weight.shape
    y = lin(gc.ones(2, 5))
    assert type(lin) is nn.Linear and lin.in_features == 5
    assert tuple(lin.weight.shape) == (3, 5) and type(lin.weight) is nn.Parameter
    assert tuple(y.shape) == (2, 3) and y.requires_grad
    assert np.abs(host(lin.weight)).max() <= 1 / math.sqrt(5)  # Linear's initialization
    conv = nn.LazyConv2d(4, 3, groups=2)
    assert tuple(conv(gc.ones(1, 6, 5, 5)).shape) == (1, 4, 3, 3)
    assert type(conv) is nn.Conv2d and tuple(conv.weight.shape) == (4, 3, 3, 3)
    assert tuple(nn.LazyConv1d(2, 2)(gc.ones(3, 4)).shape) == (2, 3)  # unbatched
    with pytest.raises(RuntimeError, match=r"Expected 4D \(unbatched\) or 5D \(batched\) "
                                           r"input to LazyConv3d"):
        nn.LazyConv3d(2, 1)(gc.ones(2, 2))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.LazyConv2d(4, 1, groups=2)(gc.ones(1, 3, 2, 2))


def test_modules_run_their_functionals():
    gc.manual_seed(6)
    x = gc.randn(2, 8, 3, 3)
    np.testing.assert_allclose(host(nn.PixelUnshuffle(2)(nn.PixelShuffle(2)(x))), host(x))
    np.testing.assert_allclose(host(nn.ChannelShuffle(4)(nn.ChannelShuffle(2)(x))), host(x))
    assert host(nn.Threshold(0.0, -1.0)(gc.tensor([-2.0, 3.0]))).tolist() == [-1.0, 3.0]
    loss = nn.GaussianNLLLoss(full=True)(gc.zeros(2), gc.ones(2), gc.ones(2))
    assert loss.item() == pytest.approx(0.5 + 0.5 * math.log(2 * math.pi))
    bag = nn.EmbeddingBag(4, 2, mode="sum", padding_idx=0)
    assert host(bag.weight[0]).tolist() == [0.0, 0.0]
    out = bag(gc.tensor([[0, 1], [2, 3]]))
    np.testing.assert_allclose(host(out), host(gc.stack([bag.weight[1],
                                                          bag.weight[2] + bag.weight[3]])))


# ---- spatial transformers ----------
GRID2 = R.random((2, 3, 6, 2)) * 3 - 1.5  # points inside and outside [-1, 1]
GRID3 = R.random((2, 2, 3, 4, 3)) * 3 - 1.5


@needs_torch
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_matches_pytorch(mode, padding_mode, align_corners):
    grad = [0, 1] if mode == "bilinear" else [0]  # (nearest: no gradient for the grid)
    for x, g in ((R.standard_normal((2, 3, 4, 5)), GRID2),
                 (R.standard_normal((2, 2, 3, 4, 5)), GRID3)):
        _same(lambda m, F, x, g: F.grid_sample(x, g, mode, padding_mode, align_corners),
              [x, g], grad=grad)


@needs_torch
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_matches_pytorch(align_corners):
    _same(lambda m, F, t: F.affine_grid(t, (2, 3, 4, 5), align_corners), [R.standard_normal(
        (2, 2, 3))])
    _same(lambda m, F, t: F.affine_grid(t, (2, 3, 4, 5, 3), align_corners),
          [R.standard_normal((2, 3, 4))])
    # the usual pair: a rotation applied to an image, differentiable in the angle
    _same(lambda m, F, t, x: F.grid_sample(x, F.affine_grid(t, x.shape, align_corners),
                                           align_corners=align_corners),
          [np.array([[[0.8, -0.6, 0.1], [0.6, 0.8, -0.2]]]), R.standard_normal((1, 2, 5, 4))])


SPATIAL_ERRORS = {
    "batch": (lambda m, F, x, g: F.grid_sample(x, g, align_corners=False),
              lambda m: [m.zeros(2, 3, 4, 5), m.zeros(3, 2, 2, 2)]),
    "last_dim": (lambda m, F, x, g: F.grid_sample(x, g, align_corners=False),
                 lambda m: [m.zeros(2, 3, 4, 5), m.zeros(2, 2, 2, 3)]),
    "rank": (lambda m, F, x, g: F.grid_sample(x, g, align_corners=False),
             lambda m: [m.zeros(2, 3, 4, 5), m.zeros(2, 2, 2, 2, 2)]),
    "mode": (lambda m, F, x, g: F.grid_sample(x, g, mode="foo"),
             lambda m: [m.zeros(2, 3, 4, 5), m.zeros(2, 2, 2, 2)]),
    "padding_mode": (lambda m, F, x, g: F.grid_sample(x, g, padding_mode="foo"),
                     lambda m: [m.zeros(2, 3, 4, 5), m.zeros(2, 2, 2, 2)]),
    "dtype": (lambda m, F, x, g: F.grid_sample(x, g, align_corners=False),
              lambda m: [m.zeros(2, 3, 4, 5), m.zeros(2, 2, 2, 2, dtype=m.float64)]),
    "affine_size": (lambda m, F, t: F.affine_grid(t, (2, 3, 4)), lambda m: [m.zeros(2, 2, 3)]),
    "affine_nonpositive": (lambda m, F, t: F.affine_grid(t, (2, 3, 0, 5), False),
                           lambda m: [m.zeros(2, 2, 3)]),
}


@needs_torch
@pytest.mark.parametrize("name", SPATIAL_ERRORS)
def test_spatial_transformer_errors_match_pytorch(name):
    fn, args_of = SPATIAL_ERRORS[name]
    _raises_like(fn, args_of)


def test_spatial_transformer_warnings_and_checks():
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
        F.affine_grid(gc.zeros(1, 2, 3), (1, 1, 2, 2))
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
        F.grid_sample(gc.zeros(1, 1, 2, 2), gc.zeros(1, 1, 1, 2))
    with pytest.warns(UserWarning, match="behavior has changed for unit-size grids"):
        F.affine_grid(gc.zeros(1, 2, 3), (1, 1, 1, 2), align_corners=True)
    with pytest.raises(ValueError, match="Expected theta to have floating point type"):
        F.affine_grid(gc.zeros(1, 2, 3, dtype=gc.int64), (1, 1, 2, 2), False)
    with pytest.raises(ValueError, match="affine matrices of shape Nx2x3"):
        F.affine_grid(gc.zeros(1, 3, 3), (1, 1, 2, 2), False)
    # the identity map samples every pixel back (align_corners either way)
    x = gc.randn(1, 2, 3, 4)
    eye = gc.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    for ac in (False, True):
        y = F.grid_sample(x, F.affine_grid(eye, x.shape, ac), align_corners=ac)
        np.testing.assert_allclose(host(y), host(x), atol=1e-6)


def test_container_is_deprecated():
    with pytest.warns(FutureWarning, match="`nn.Container` is deprecated"):
        c = nn.Container(a=nn.Linear(2, 3), b=nn.ReLU())
    assert [n for n, _ in c.named_children()] == ["a", "b"]


def test_lazy_layer_loads_a_state_dict_before_its_first_call():
    source = nn.Linear(4, 2)
    lazy = nn.LazyLinear(2)
    lazy.load_state_dict(source.state_dict())
    assert not lazy.has_uninitialized_params()
    np.testing.assert_allclose(host(lazy.weight), host(source.weight))
    x = gc.randn(3, 4)
    np.testing.assert_allclose(host(lazy(x)), host(source(x)))
    assert type(lazy) is nn.Linear and lazy.in_features == 4
