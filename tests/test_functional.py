"""gradcore.nn.functional against torch.nn.functional: values, first and second
derivatives in float64, every option of the losses, the error cases, and the
statistics of dropout.  Comparisons with PyTorch skip, with a reason, when it is not
installed; the rest runs everywhere."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import gradcore as gc
import gradcore.nn.functional as F

from conftest import host, needs_torch

RNG = np.random.default_rng(20260522)
X34 = RNG.standard_normal((3, 4))
X234 = RNG.standard_normal((2, 3, 4))
W24 = RNG.standard_normal((2, 4))
B2 = RNG.standard_normal(2)
W4 = RNG.standard_normal(4)
B4 = RNG.standard_normal(4)
W34 = RNG.standard_normal((3, 4))
B34 = RNG.standard_normal((3, 4))
Y34 = RNG.standard_normal((3, 4))
P34 = RNG.random((3, 4))
E63 = RNG.standard_normal((6, 3))
IDX = [[1, 2, 1], [0, 5, 1]]


def _fns(m):
    """(module, functional) for gradcore or torch."""
    if m is gc:
        return gc, F
    import torch
    return torch, torch.nn.functional


# Each case: (function of (tensor module, functional module, *inputs), input arrays).
# Every input array is a float64 tensor that requires grad; constants are built inside.
CASES = {
    "linear": (lambda m, f, x, w, b: f.linear(x, w, b), [X34, W24, B2]),
    "linear_3d": (lambda m, f, x, w, b: f.linear(x, w, b), [X234, W24, B2]),
    "linear_1d_input": (lambda m, f, x, w: f.linear(x, w), [W4, W24]),
    "linear_no_bias": (lambda m, f, x, w: f.linear(x, w), [X34, W24]),
    "linear_bias_only_grad": (lambda m, f, w, b: f.linear(m.tensor(X34), w, b), [W24, B2]),
    "relu": (lambda m, f, x: f.relu(x) * x, [X34]),
    "gelu": (lambda m, f, x: f.gelu(x * 2), [X34]),
    "gelu_tanh": (lambda m, f, x: f.gelu(x * 2, approximate="tanh"), [X34]),
    "tanh": (lambda m, f, x: f.tanh(x), [X34]),
    "sigmoid": (lambda m, f, x: f.sigmoid(x), [X34]),
    "softmax_dim1": (lambda m, f, x: f.softmax(x, dim=1), [X34]),
    "softmax_dim0": (lambda m, f, x: f.softmax(x, 0), [X234]),
    "softmax_neg": (lambda m, f, x: f.softmax(x * 5, -1), [X234]),
    "softmax_method": (lambda m, f, x: x.softmax(1) * x, [X234]),
    "log_softmax_dim1": (lambda m, f, x: f.log_softmax(x, dim=1), [X234]),
    "log_softmax_method": (lambda m, f, x: x.log_softmax(-1) * x, [X34]),
    "erf": (lambda m, f, x: f.gelu(x) * (x * 2).erf(), [X34]),
    "erf_method": (lambda m, f, x: (x * 3).erf(), [X34]),
    "layer_norm": (lambda m, f, x, w, b: f.layer_norm(x, (4,), w, b), [X34, W4, B4]),
    "layer_norm_2d_shape": (lambda m, f, x, w, b: f.layer_norm(x, [3, 4], w, b, eps=1e-3),
                            [X234, W34, B34]),
    "layer_norm_plain": (lambda m, f, x: f.layer_norm(x, (4,)), [X234]),
    "layer_norm_weight_only": (lambda m, f, x, w: f.layer_norm(x, (4,), w), [X234, W4]),
    "layer_norm_bias_only": (lambda m, f, x, b: f.layer_norm(x, (4,), None, b), [X34, B4]),
    "layer_norm_whole": (lambda m, f, x: f.layer_norm(x, x.shape), [X34]),
    "embedding": (lambda m, f, w: f.embedding(m.tensor(IDX), w), [E63]),
    "embedding_padding": (lambda m, f, w: f.embedding(m.tensor(IDX), w, padding_idx=1),
                          [E63]),
    "embedding_negative_padding": (lambda m, f, w: f.embedding(m.tensor(IDX), w,
                                                               padding_idx=-1), [E63]),
    "embedding_scale_grad": (lambda m, f, w: f.embedding(m.tensor(IDX), w,
                                                         scale_grad_by_freq=True), [E63]),
    "embedding_1d": (lambda m, f, w: f.embedding(m.tensor([3, 3, 0]), w), [E63]),
    "mse": (lambda m, f, x, y: f.mse_loss(x, y), [X34, Y34]),
    "mse_sum": (lambda m, f, x, y: f.mse_loss(x, y, reduction="sum"), [X34, Y34]),
    "mse_none": (lambda m, f, x, y: f.mse_loss(x, y, reduction="none"), [X34, Y34]),
    "mse_const_target": (lambda m, f, x: f.mse_loss(x, m.tensor(Y34)), [X34]),
    "mse_weight": (lambda m, f, x, y: f.mse_loss(x, y, weight=m.tensor(P34)), [X34, Y34]),
    "mse_weight_sum": (lambda m, f, x, y: f.mse_loss(x, y, reduction="sum",
                                                     weight=m.tensor(P34)), [X34, Y34]),
    "bce_logits": (lambda m, f, x, y: f.binary_cross_entropy_with_logits(x * 3, y),
                   [X34, P34]),
    "bce_logits_sum": (lambda m, f, x, y: f.binary_cross_entropy_with_logits(
        x, y, reduction="sum"), [X34, P34]),
    "bce_logits_none": (lambda m, f, x, y: f.binary_cross_entropy_with_logits(
        x * 40, y, reduction="none"), [X34, P34]),
    "bce_logits_pos_weight": (lambda m, f, x, y: f.binary_cross_entropy_with_logits(
        x * 3, y, pos_weight=m.tensor(np.abs(W4) + 0.5)), [X34, P34]),
    "bce_logits_weight": (lambda m, f, x, y: f.binary_cross_entropy_with_logits(
        x, y, weight=m.tensor(np.abs(W4)), reduction="sum"), [X34, P34]),
    "bce_logits_at_zero": (lambda m, f, x, y: f.binary_cross_entropy_with_logits(
        x, y, reduction="none"), [np.zeros((3, 4)), P34]),
}


def _run(m, fn, arrays):
    import torch

    if m is gc:
        xs = [gc.tensor(a, dtype=gc.float64, requires_grad=True) for a in arrays]
    else:
        xs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    mod, f = _fns(m)
    return xs, fn(mod, f, *xs)


def _grads(m, out, xs, u, create_graph):
    import torch

    if m is gc:
        return gc.autograd.grad([out], xs, [gc.tensor(u)], allow_unused=True,
                                create_graph=create_graph)
    return torch.autograd.grad([out], xs, [torch.tensor(u)], allow_unused=True,
                               create_graph=create_graph)


def _np(t):
    return host(t) if isinstance(t, gc.Tensor) else t.detach().numpy()


# PyTorch's own second derivative fails here ("Expected a proper Tensor but got None"):
# gradcore's is checked by finite differences below instead.
_TORCH_NO_SECOND_ORDER = {"layer_norm_bias_only"}


@needs_torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_pytorch_first_and_second_order(name, device):
    """Values and gradients, then the gradient of <grad, w> (second order)."""
    fn, arrays = CASES[name]
    gx, gout = _run(gc, fn, arrays)
    import torch
    tx, tout = _run(torch, fn, arrays)
    assert tuple(gout.shape) == tuple(tout.shape)
    np.testing.assert_allclose(_np(gout), _np(tout), rtol=1e-10, atol=1e-12)
    rng = np.random.default_rng(1)
    u = rng.standard_normal(tuple(tout.shape))
    tg = _grads(torch, tout, tx, u, create_graph=True)
    # first order: the array formulas (a plain backward) and the tensor formulas
    # (create_graph=True, which the second order differentiates)
    for create_graph in (False, True):
        gx, gout = _run(gc, fn, arrays)
        gg = _grads(gc, gout, gx, u, create_graph)
        for a, b in zip(gg, tg):
            assert (a is None) == (b is None)
            if b is not None:
                np.testing.assert_allclose(_np(a), _np(b), rtol=1e-9, atol=1e-12)
    # second order: d/dx <grad(x), w> (zero where a gradient does not depend on x)
    if name in _TORCH_NO_SECOND_ORDER:
        return
    ws = [rng.standard_normal(a.shape) for a in arrays]
    g2 = _second(gc, gg, gx, ws)
    t2 = _second(torch, tg, tx, ws)
    for a, b, arr in zip(g2, t2, arrays):
        a = np.zeros(arr.shape) if a is None else _np(a)
        b = np.zeros(arr.shape) if b is None else _np(b)
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-11)


def _second(m, grads, xs, ws):
    terms = [(g * m.tensor(w)).sum() for g, w in zip(grads, ws) if g is not None]
    total = sum(terms)
    if not getattr(total, "requires_grad", False):
        return [None] * len(xs)
    if m is gc:
        return gc.autograd.grad([total], xs, allow_unused=True)
    import torch
    return torch.autograd.grad([total], xs, allow_unused=True)


# ---- cross_entropy and nll_loss: every option ----------
_CE_INPUTS = {
    "1d": (RNG.standard_normal(5), 3, 3),
    "2d": (RNG.standard_normal((6, 5)), [0, 4, 2, 2, 1, 3], 2),
    "3d": (RNG.standard_normal((2, 5, 3)), [[0, 4, 2], [2, 1, 4]], 4),
}
_CE_WEIGHT = np.array([0.5, 2.0, 1.0, 0.25, 3.0])


@needs_torch
@pytest.mark.parametrize("shape", sorted(_CE_INPUTS))
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore", [False, True], ids=["all_targets", "ignore_index"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("fn,smoothing", [("cross_entropy", 0.0), ("cross_entropy", 0.2),
                                          ("nll_loss", 0.0)])
def test_class_target_losses_match_pytorch(fn, smoothing, weighted, ignore, reduction, shape,
                                           device):
    import torch

    x, target, ignored_class = _CE_INPUTS[shape]
    kw = {"reduction": reduction}
    if ignore:
        kw["ignore_index"] = ignored_class
    if smoothing:
        kw["label_smoothing"] = smoothing
    gx = gc.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    g_in, t_in = (gx, tx) if fn == "cross_entropy" else (gx.log_softmax(0 if x.ndim == 1
                                                                         else 1),
                                                        tx.log_softmax(0 if x.ndim == 1
                                                                       else 1))
    gkw, tkw = dict(kw), dict(kw)
    if weighted:
        gkw["weight"], tkw["weight"] = gc.tensor(_CE_WEIGHT), torch.tensor(_CE_WEIGHT)
    gout = getattr(F, fn)(g_in, gc.tensor(target), **gkw)
    tout = getattr(torch.nn.functional, fn)(t_in, torch.tensor(target), **tkw)
    assert tuple(gout.shape) == tuple(tout.shape)
    np.testing.assert_allclose(host(gout), tout.detach().numpy(), rtol=1e-12, atol=1e-14)
    u = np.random.default_rng(2).standard_normal(tuple(tout.shape))
    gout.backward(gc.tensor(u))
    tout.backward(torch.tensor(u))
    np.testing.assert_allclose(host(gx.grad), tx.grad.numpy(), rtol=1e-11, atol=1e-14)


@needs_torch
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_cross_entropy_probability_targets_match_pytorch(weighted, smoothing, reduction,
                                                         device):
    import torch

    x = RNG.standard_normal((4, 5, 2))
    p = RNG.random((4, 5, 2))
    p /= p.sum(1, keepdims=True)
    kw = {"reduction": reduction, "label_smoothing": smoothing}
    gx, tx = gc.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    gp, tp = gc.tensor(p, requires_grad=True), torch.tensor(p, requires_grad=True)
    gw = {"weight": gc.tensor(_CE_WEIGHT)} if weighted else {}
    tw = {"weight": torch.tensor(_CE_WEIGHT)} if weighted else {}
    gout = F.cross_entropy(gx, gp, **gw, **kw)
    tout = torch.nn.functional.cross_entropy(tx, tp, **tw, **kw)
    np.testing.assert_allclose(host(gout), tout.detach().numpy(), rtol=1e-12)
    u = np.random.default_rng(3).standard_normal(tuple(tout.shape))
    gout.backward(gc.tensor(u))
    tout.backward(torch.tensor(u))
    np.testing.assert_allclose(host(gx.grad), tx.grad.numpy(), rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(host(gp.grad), tp.grad.numpy(), rtol=1e-11, atol=1e-14)


@needs_torch
def test_cross_entropy_all_targets_ignored_is_nan_with_zero_gradient_like_pytorch(device):
    import torch

    x = RNG.standard_normal((3, 4))
    gx, tx = gc.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    gout = F.cross_entropy(gx, gc.tensor([-100, -100, -100]))
    tout = torch.nn.functional.cross_entropy(tx, torch.tensor([-100, -100, -100]))
    assert np.isnan(gout.item()) and np.isnan(tout.item())
    gout.backward()
    tout.backward()
    np.testing.assert_array_equal(host(gx.grad), tx.grad.numpy())
    assert not np.any(host(gx.grad))


def test_cross_entropy_is_two_nodes(device):
    """The hot path of training: log_softmax and nll_loss, one node each."""
    logits = gc.randn(8, 10, requires_grad=True)
    loss = F.cross_entropy(logits, gc.randint(0, 10, (8,)))
    assert loss.grad_fn.name() == "NllLossBackward0"
    (nxt, _), = loss.grad_fn.next_functions
    assert nxt.name() == "LogSoftmaxBackward0"
    assert nxt.next_functions[0][0].variable is logits


def test_cross_entropy_of_a_large_logit_gap_is_finite(device):
    x = gc.tensor([[1000.0, -1000.0, 0.0]], requires_grad=True)
    loss = F.cross_entropy(x, gc.tensor([1]))
    loss.backward()
    assert loss.item() == pytest.approx(2000.0)
    np.testing.assert_allclose(host(x.grad), [[1.0, -1.0, 0.0]], atol=1e-12)


@needs_torch
@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float16", 2e-3)])
def test_low_precision_losses_and_layer_norm_match_pytorch(dtype, tol, device):
    import torch

    x = RNG.standard_normal((5, 7))
    target = [0, 6, 3, 3, 1]
    w, b = RNG.standard_normal(7), RNG.standard_normal(7)
    gdt, tdt = getattr(gc, dtype), getattr(torch, dtype)
    gx = gc.tensor(x, dtype=gdt, requires_grad=True)
    tx = torch.tensor(x, dtype=tdt, requires_grad=True)
    for fn in (
        lambda m, f, x: f.cross_entropy(x, m.tensor(target), label_smoothing=0.1),
        lambda m, f, x: f.layer_norm(x, (7,), m.tensor(w, dtype=x.dtype),
                                     m.tensor(b, dtype=x.dtype)).sum(),
        lambda m, f, x: (f.softmax(x, 1) * f.log_softmax(x, 0)).sum(),
        lambda m, f, x: f.gelu(x).sum() + f.mse_loss(x, x * 0.5),
    ):
        gx.grad, tx.grad = None, None
        gout, tout = fn(gc, F, gx), fn(torch, torch.nn.functional, tx)
        assert gout.dtype == gdt
        np.testing.assert_allclose(host(gout).astype(np.float64),
                                   tout.detach().double().numpy(), rtol=tol, atol=tol)
        gout.backward()
        tout.backward()
        assert gx.grad.dtype == gdt
        np.testing.assert_allclose(host(gx.grad).astype(np.float64),
                                   tx.grad.double().numpy(), rtol=tol * 5, atol=tol * 5)


def _second_order_check(fn, arrays, seed, eps=1e-5):
    """Central differences of ``h(x) = <d<fn(x), u>/dx, w>`` along a random direction
    against the gradient of ``h`` built with ``create_graph=True``."""
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(tuple(fn(*[gc.tensor(a) for a in arrays]).shape))
    ws = [rng.standard_normal(a.shape) for a in arrays]
    vs = [rng.standard_normal(a.shape) for a in arrays]

    def h(arrs):
        xs = [gc.tensor(a, dtype=gc.float64, requires_grad=True) for a in arrs]
        gs = gc.autograd.grad([fn(*xs)], xs, [gc.tensor(u)], create_graph=True,
                              allow_unused=True)
        return xs, sum((g * gc.tensor(w)).sum() for g, w in zip(gs, ws) if g is not None)

    xs, val = h(arrays)
    assert val.requires_grad
    second = gc.autograd.grad([val], xs, allow_unused=True)
    analytic = sum(float((host(g) * v).sum()) for g, v in zip(second, vs) if g is not None)
    plus = h([a + eps * v for a, v in zip(arrays, vs)])[1].item()
    minus = h([a - eps * v for a, v in zip(arrays, vs)])[1].item()
    numeric = (plus - minus) / (2 * eps)
    assert abs(analytic - numeric) <= 1e-6 + 1e-5 * abs(numeric), (analytic, numeric)


_PRIMITIVES = {
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (3,), w, b), [(2, 3), (3,), (3,)]),
    "layer_norm_bias_only": (lambda x, b: F.layer_norm(x, (3,), None, b), [(4, 3), (3,)]),
    "linear": (lambda x, w, b: F.linear(x, w, b), [(2, 2, 3), (4, 3), (4,)]),
    "cross_entropy": (lambda x: F.cross_entropy(x, gc.tensor([1, 0]), label_smoothing=0.1),
                      [(2, 3)]),
    "bce_logits": (lambda x, y: F.binary_cross_entropy_with_logits(
        x, y, pos_weight=gc.tensor([2.0, 0.5, 1.0], dtype=gc.float64)), [(2, 3), (2, 3)]),
    "gelu": (lambda x: F.gelu(x) + F.gelu(x, approximate="tanh"), [(2, 3)]),
    "softmax": (lambda x: F.softmax(x, 1) * F.log_softmax(x, 0), [(2, 3)]),
    "mse": (lambda x, y: F.mse_loss(x, y, reduction="none") * x, [(2, 3), (3,)]),
    # (padding_idx names an unused row: its zero gradient is a rule, not a derivative)
    "embedding": (lambda w: F.embedding(gc.tensor([[0, 2], [2, 2]]), w, padding_idx=1) * w[1],
                  [(3, 2)]),
}


@pytest.mark.parametrize("name", sorted(_PRIMITIVES))
def test_primitives_first_and_second_derivatives_by_finite_differences(name, device):
    """Without PyTorch too: gradcheck, and a projected check of second derivatives."""
    fn, shapes = _PRIMITIVES[name]
    rng = np.random.default_rng(4)
    arrays = [rng.uniform(-0.9, 0.9, s) for s in shapes]
    xs = [gc.tensor(a, dtype=gc.float64, requires_grad=True) for a in arrays]
    assert gc.autograd.gradcheck(fn, xs)
    _second_order_check(fn, arrays, seed=5)


# ---- softmax / log_softmax details ----------
@needs_torch
def test_softmax_without_dim_warns_and_picks_pytorchs_dim():
    import torch

    for shape in [(4,), (2, 3), (2, 3, 4), (2, 3, 4, 5)]:
        x = RNG.standard_normal(shape)
        with pytest.warns(UserWarning, match="Implicit dimension choice"):
            g = F.softmax(gc.tensor(x))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = torch.nn.functional.softmax(torch.tensor(x))
        np.testing.assert_allclose(host(g), t.numpy(), rtol=1e-12)


def test_softmax_dtype_argument_and_integer_inputs(device):
    x = gc.tensor([[1, 2, 3]])
    with pytest.raises(RuntimeError, match="floating point"):
        F.softmax(x, 1)
    y = F.softmax(x, 1, dtype=gc.float64)
    assert y.dtype == gc.float64
    np.testing.assert_allclose(host(y).sum(), 1.0)
    assert F.log_softmax(gc.tensor([1.0, 2.0]), 0, dtype=gc.float16).dtype == gc.float16


def test_softmax_of_infinities_and_empty_and_0d(device):
    x = gc.tensor([[0.0, -float("inf"), 1.0], [-float("inf")] * 3])
    y = host(F.softmax(x, 1))
    np.testing.assert_allclose(y[0], [1 / (1 + np.e), 0.0, np.e / (1 + np.e)])
    assert np.all(np.isnan(y[1]))  # as in PyTorch: a row of -inf has no softmax
    assert F.softmax(gc.zeros(0, 3), 1).shape == (0, 3)
    s = gc.tensor(3.0, requires_grad=True)
    out = F.log_softmax(s, 0)
    out.backward()
    assert out.item() == 0.0 and s.grad.item() == 0.0
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.softmax(gc.zeros(2, 3), 2)


# ---- errors ----------
def test_loss_errors_name_the_problem(device):
    x = gc.randn(3, 4)
    # target values: on a GPU found without waiting, raised at the next read (.item())
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        F.cross_entropy(x, gc.tensor([0, 4, 1])).item()
    with pytest.raises(IndexError, match="Target -1 is out of bounds"):
        F.nll_loss(x, gc.tensor([0, -1, 1])).item()
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        F.cross_entropy(x.requires_grad_(), gc.tensor([0, 5, 1]), reduction="none").tolist()
    x = x.detach()
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target "
                                         r"batch_size \(2\)"):
        F.cross_entropy(x, gc.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="Long"):
        F.nll_loss(x, gc.tensor([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="meanx is not a valid value for reduction"):
        F.cross_entropy(x, gc.tensor([0, 1, 2]), reduction="meanx")
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.mse_loss(x, x, reduction="avg")
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0"):
        F.cross_entropy(x, gc.tensor([0, 1, 2]), label_smoothing=1.5)
    with pytest.raises(ValueError, match=r"Target size \(\(3, 1\)\) must be the same as "
                                         r"input size \(\(3, 4\)\)"):
        F.binary_cross_entropy_with_logits(x, gc.zeros(3, 1))
    with pytest.raises(RuntimeError, match=r"normalized_shape=\[3\].*\[\*, 3\].*\[3, 4\]"):
        F.layer_norm(x, (3,))
    with pytest.raises(RuntimeError, match="indices"):
        F.embedding(gc.tensor([0.0, 1.0]), gc.randn(3, 2))
    with pytest.raises(IndexError, match="index out of range"):
        F.embedding(gc.tensor([0, 3]), gc.randn(3, 2)).tolist()
    with pytest.raises(RuntimeError, match="approximate"):
        F.gelu(x, approximate="fast")
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(3x4 and 2x3\).*\(3, 4\) and \(2, 3\)"):
        F.linear(x, gc.randn(3, 2))  # PyTorch's words, and both shapes
    with pytest.raises(RuntimeError, match="same dtype"):
        F.linear(x, gc.randn(2, 4, dtype=gc.float64))


def test_mse_loss_warns_on_broadcasting_like_pytorch(device):
    x = gc.randn(3, 1, requires_grad=True)
    with pytest.warns(UserWarning, match="different to the input size"):
        loss = F.mse_loss(x, gc.randn(3))
    loss.backward()
    assert x.grad.shape == (3, 1)


def test_legacy_size_average_and_reduce(device):
    x, y = gc.randn(3, 4), gc.randn(3, 4)
    # (PyTorch's words: the reduction that the pair amounts to)
    with pytest.warns(UserWarning, match="deprecated, please use reduction='sum' instead"):
        s = F.mse_loss(x, y, size_average=False)
    np.testing.assert_allclose(s.item(), F.mse_loss(x, y, reduction="sum").item(), rtol=1e-6)
    with pytest.warns(UserWarning, match="reduction='none'"):
        n = F.mse_loss(x, y, reduce=False)
    assert n.shape == (3, 4)


# ---- one_hot ----------
@needs_torch
def test_one_hot_matches_pytorch(device):
    import torch

    for values, n in [([0, 2, 1], -1), ([[1, 0], [3, 3]], 5), (4, 6), ([], 3)]:
        g = F.one_hot(gc.tensor(values, dtype=gc.int64), n)
        t = torch.nn.functional.one_hot(torch.tensor(values, dtype=torch.int64), n)
        assert g.dtype == gc.int64 and tuple(g.shape) == tuple(t.shape)
        np.testing.assert_array_equal(host(g), t.numpy())


def test_one_hot_errors(device):
    with pytest.raises(RuntimeError, match="non-negative"):
        F.one_hot(gc.tensor([0, -1]), 3)
    with pytest.raises(RuntimeError, match="smaller than num_classes"):
        F.one_hot(gc.tensor([0, 3]), 3)
    with pytest.raises(RuntimeError, match="LongTensor"):
        F.one_hot(gc.tensor([0.0, 1.0]))
    with pytest.raises(RuntimeError, match="empty tensor"):
        F.one_hot(gc.tensor([], dtype=gc.int64))


# ---- dropout ----------
def test_dropout_zeroes_about_p_and_scales_the_rest(device):
    gc.manual_seed(0)
    x = gc.ones(200, 500, requires_grad=True)
    y = F.dropout(x, p=0.3)
    v = host(y)
    kept = v != 0
    assert abs(kept.mean() - 0.7) < 0.01  # 100,000 draws: the standard error is 0.0015
    np.testing.assert_allclose(v[kept], 1 / 0.7, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(host(x.grad), v, rtol=1e-6)  # the gradient is the mask


def test_dropout_is_reproducible_with_manual_seed(device):
    x = gc.randn(50, 40)
    gc.manual_seed(123)
    a = host(F.dropout(x, 0.5))
    gc.manual_seed(123)
    b = host(F.dropout(x, 0.5))
    c = host(F.dropout(x, 0.5))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(b, c)


def test_dropout_off_in_eval_p0_and_all_in_p1(device):
    x = gc.randn(4, 5, requires_grad=True)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    z = F.dropout(x, 1.0)
    assert not np.any(host(z))
    z.sum().backward()
    assert not np.any(host(x.grad))
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            F.dropout(x, p)


def test_dropout_in_place_and_dtype(device):
    x = gc.ones(100, dtype=gc.float16)
    gc.manual_seed(1)
    y = F.dropout(x, 0.5, inplace=True)
    assert y is x and x.dtype == gc.float16
    assert set(np.unique(host(x)).tolist()) <= {0.0, 2.0}


# ---- embedding details ----------
def test_embedding_repeated_indices_accumulate_and_padding_gets_no_gradient(device):
    w = gc.tensor(np.arange(12.0).reshape(4, 3), requires_grad=True)
    out = F.embedding(gc.tensor([[1, 1, 2], [1, 0, 3]]), w, padding_idx=3)
    assert out.shape == (2, 3, 3)
    np.testing.assert_array_equal(host(out)[0, 0], [3.0, 4.0, 5.0])
    out.sum().backward()
    np.testing.assert_array_equal(host(w.grad), [[1] * 3, [3] * 3, [1] * 3, [0] * 3])


@needs_torch
def test_embedding_max_norm_renormalizes_rows_in_place_like_pytorch(device):
    import torch

    w = RNG.standard_normal((5, 3)) * 3
    gw, tw = gc.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    idx = [[0, 2], [2, 4]]
    gout = F.embedding(gc.tensor(idx), gw, max_norm=1.5)
    tout = torch.nn.functional.embedding(torch.tensor(idx), tw, max_norm=1.5)
    np.testing.assert_allclose(host(gout), tout.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(host(gw.detach()), tw.detach().numpy(), rtol=1e-12)


# ---- erf ----------
def test_erf_is_accurate_to_an_ulp_over_the_whole_range(device):
    import math

    xs = np.concatenate([np.linspace(-7, 7, 20001), np.geomspace(1e-300, 1, 50),
                         [0.9999999999, 1.0, 2.0, 3.5, 6.0, -5.9999999]])
    ref = np.array([math.erf(v) for v in xs])
    got = host(F.erf(gc.tensor(xs, dtype=gc.float64)))
    np.testing.assert_allclose(got, ref, rtol=2.3e-16, atol=2.3e-16)
    special = host(F.erf(gc.tensor([float("nan"), float("inf"), -float("inf"), -0.0],
                                    dtype=gc.float64)))
    assert np.isnan(special[0]) and special[1] == 1.0 and special[2] == -1.0
    assert special[3] == 0.0 and np.signbit(special[3])
    for dt in (gc.float32, gc.float16):
        x = gc.tensor(xs[::100], dtype=dt)
        y = F.erf(x)
        assert y.dtype == dt  # computed in float64, rounded once
        ref = np.array([math.erf(v) for v in host(x).astype(np.float64)]).astype(dt.np)
        np.testing.assert_array_equal(host(y), ref)
    assert F.erf(gc.tensor([1, 2])).dtype == gc.float32


def test_small_and_large_erf_paths_agree(device):
    x = np.random.default_rng(5).standard_normal(1000) * 3
    big = host(F.erf(gc.tensor(x, dtype=gc.float64)))
    small = np.concatenate([host(F.erf(gc.tensor(c, dtype=gc.float64)))
                            for c in np.split(x, 100)])
    np.testing.assert_allclose(big, small, rtol=3e-16, atol=3e-16)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_reference_values(approximate, device):
    import math

    xs = [-3.0, -1.0, -0.1, 0.0, 0.5, 2.0]
    got = host(F.gelu(gc.tensor(xs, dtype=gc.float64), approximate=approximate))
    if approximate == "none":
        ref = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in xs]
    else:
        ref = [0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))
               for v in xs]
    np.testing.assert_allclose(got, ref, rtol=1e-15, atol=1e-16)


def test_functional_ops_accept_and_keep_every_float_dtype(device):
    for dt in (gc.float16, gc.float32, gc.float64):
        x = gc.randn(3, 4, dtype=dt)
        for fn in (lambda x: F.gelu(x), lambda x: F.softmax(x, 1), lambda x: F.layer_norm(x, 4),
                   lambda x: F.log_softmax(x, 0), lambda x: F.erf(x),
                   lambda x: F.mse_loss(x, x * 2),
                   lambda x: F.binary_cross_entropy_with_logits(x, x.sigmoid()),
                   lambda x: F.cross_entropy(x, gc.tensor([0, 1, 3]))):
            assert fn(x).dtype == dt


def test_combinations_of_class_loss_options_are_consistent(device):
    """Without PyTorch too: the mean is the sum over the total weight of the targets
    that count, 'none' gives one loss per target, and label smoothing interpolates."""
    x = gc.tensor(RNG.standard_normal((6, 4)))
    t = gc.tensor([0, 3, 1, 1, 2, 0])
    w = gc.tensor([1.0, 2.0, 0.5, 3.0], dtype=x.dtype)
    for weight, ignore in itertools.product([None, w], [-100, 1]):
        kw = {"weight": weight, "ignore_index": ignore}
        none = host(F.cross_entropy(x, t, reduction="none", **kw))
        total = host(F.cross_entropy(x, t, reduction="sum", **kw))
        mean = host(F.cross_entropy(x, t, **kw))
        keep = host(t) != ignore
        wt = (host(w)[host(t)] if weight is not None else np.ones(6)) * keep
        assert none.shape == (6,) and np.all(none[~keep] == 0)
        np.testing.assert_allclose(none.sum(), total, rtol=1e-6)
        np.testing.assert_allclose(total / wt.sum(), mean, rtol=1e-6)
        logp = host(F.log_softmax(x, 1))
        np.testing.assert_allclose(none[keep], -(logp[np.arange(6), host(t)] * wt)[keep],
                                   rtol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", [gc.float32, gc.float64])
def test_cross_entropy_backward_in_one_step_is_bitwise_the_two_steps(device, reduction, dtype):
    """cross_entropy pairs its log_softmax and nll_loss nodes and computes their backward
    in one step: bit for bit what the two steps give when written out separately
    (weights and ignored targets included)."""
    rng = np.random.default_rng(12)
    logits = rng.standard_normal((7, 5))
    target = gc.tensor(np.array([0, 4, -100, 2, 2, 1, 3]), device=device)
    weight = gc.tensor(rng.uniform(0.5, 2, 5), dtype=dtype, device=device)
    grads = []
    for paired in (True, False):
        x = gc.tensor(logits, dtype=dtype, device=device, requires_grad=True)
        if paired:
            loss = F.cross_entropy(x, target, weight=weight, reduction=reduction)
        else:
            loss = F.nll_loss(F.log_softmax(x, 1), target, weight=weight,
                              reduction=reduction)
        (loss.sum() if reduction == "none" else loss).backward()
        grads.append(host(x.grad))
    if device == "cpu":
        np.testing.assert_array_equal(grads[0], grads[1])
        assert not np.signbit(grads[0][2]).any()  # the ignored row is +0.0, as in PyTorch
    else:  # on CUDA the forward is its own kernel too: the same to rounding
        np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6, atol=1e-7)
