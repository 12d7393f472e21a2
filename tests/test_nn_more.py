"""gradcore.nn's activations, losses, distances, containers and Module API (hooks,
registration, lookups) against torch.nn: values and gradients (at the kinks too),
reductions, inplace forms, state dict keys, repr and errors. The comparisons with PyTorch
skip, with a reason, when it is not installed; the ``device`` tests run again on the CUDA
stand-in."""

from __future__ import annotations

import pathlib
import re
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import gradcore as gc
import gradcore.nn.functional as F
from gradcore import nn

from conftest import host, needs_pinned_torch, needs_torch


def _torch():
    import torch
    return torch


def _tensors(arrays, lib, grad):
    mk = gc.tensor if lib is gc else _torch().tensor
    return [mk(a, requires_grad=i in grad) for i, a in enumerate(arrays)]


def _compare(g_fn, t_fn, arrays, grad=(0,), rtol=1e-10, atol=1e-12):
    """Same values and same gradients (of a random projection of the output) from
    gradcore's ``g_fn`` and PyTorch's ``t_fn`` over the same float64 arrays."""
    torch = _torch()
    gx, tx = _tensors(arrays, gc, grad), _tensors(arrays, torch, grad)
    gout, tout = g_fn(*gx), t_fn(*tx)
    assert tuple(gout.shape) == tuple(tout.shape)
    np.testing.assert_allclose(host(gout), tout.detach().numpy(), rtol=rtol, atol=atol)
    u = np.random.default_rng(7).standard_normal(tuple(tout.shape))
    gout.backward(gc.tensor(u))
    tout.backward(torch.tensor(u))
    for i in grad:
        np.testing.assert_allclose(host(gx[i].grad), tx[i].grad.numpy(), rtol=rtol,
                                   atol=atol, err_msg=f"gradient of input {i}")
    return gout, tout


RNG = np.random.default_rng(5)
# the kinks of every activation here, exactly, beside ordinary values and far tails
KINKS = np.array([-800.0, -50.0, -6.0, -3.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 3.0, 6.0, 25.0,
                  800.0])
X = np.concatenate([KINKS, RNG.uniform(-4, 4, 18)]).reshape(4, 8)


def _activations(m):
    """The same activation modules from gradcore's nn or torch's (``m``)."""
    return {
        "silu": m.SiLU(), "mish": m.Mish(), "leaky_relu": m.LeakyReLU(),
        "leaky_relu_slope": m.LeakyReLU(0.2), "elu": m.ELU(), "elu_alpha": m.ELU(0.7),
        "selu": m.SELU(), "celu": m.CELU(), "celu_alpha": m.CELU(0.7),
        "hardtanh": m.Hardtanh(), "hardtanh_bounds": m.Hardtanh(-0.5, 3.0),
        "relu6": m.ReLU6(), "hardswish": m.Hardswish(), "hardsigmoid": m.Hardsigmoid(),
        "logsigmoid": m.LogSigmoid(), "softsign": m.Softsign(), "tanhshrink": m.Tanhshrink(),
        "softshrink": m.Softshrink(), "softshrink_1": m.Softshrink(1.0),
        "hardshrink": m.Hardshrink(), "hardshrink_1": m.Hardshrink(1.0),
        "glu": m.GLU(), "glu_dim0": m.GLU(0), "softmin": m.Softmin(1),
        "softmin_dim0": m.Softmin(dim=0),
    }


@needs_torch
@pytest.mark.parametrize("name", sorted(_activations(nn)))
def test_activation_modules_match_pytorch_at_their_kinks(name):
    torch = _torch()
    _compare(_activations(nn)[name], _activations(torch.nn)[name], [X])


@needs_torch
@pytest.mark.parametrize("name", ["silu", "elu_alpha", "hardswish", "hardsigmoid",
                                  "softshrink", "glu", "softmin"])
def test_activation_modules_on_the_device(name, device):
    torch = _torch()
    gout, _ = _compare(_activations(nn)[name], _activations(torch.nn)[name], [X])
    assert gout.device.type == gc.device(device).type


@needs_pinned_torch
def test_activation_reprs_match_pytorch():
    torch = _torch()
    for name, module in _activations(nn).items():
        assert repr(module) == repr(_activations(torch.nn)[name]), name
    for flag in (False, True):
        for cls in ("SiLU", "Mish", "Hardswish", "Hardsigmoid", "SELU", "ReLU6", "ELU",
                    "CELU", "LeakyReLU", "Hardtanh"):
            assert repr(getattr(nn, cls)(inplace=flag)) == \
                repr(getattr(torch.nn, cls)(inplace=flag)), cls
    assert repr(nn.PReLU(3, init=0.1)) == repr(torch.nn.PReLU(3, init=0.1))
    # the class tree: ReLU6 is a Hardtanh, CELU no ELU, Hardshrink no Softshrink
    for sub, base in (("ReLU6", "Hardtanh"), ("CELU", "ELU"), ("Hardshrink", "Softshrink"),
                      ("LogSoftmax", "Softmax"), ("Softmin", "Softmax")):
        assert issubclass(getattr(nn, sub), getattr(nn, base)) == \
            issubclass(getattr(torch.nn, sub), getattr(torch.nn, base)), (sub, base)
    assert repr(nn.Softmin()) == repr(torch.nn.Softmin())


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_activations_in_low_precision_match_pytorch(dtype):
    torch = _torch()
    x = X.clip(-30, 30).astype(dtype)
    tol = {"float32": 2e-6, "float16": 2e-3}[dtype]
    for name, module in _activations(nn).items():
        gx = gc.tensor(x, requires_grad=True)
        tx = torch.tensor(x, requires_grad=True)
        gout, tout = module(gx), _activations(torch.nn)[name](tx)
        assert gout.dtype == getattr(gc, dtype)
        np.testing.assert_allclose(host(gout).astype(float), tout.detach().numpy().astype(float),
                                   rtol=tol, atol=tol, err_msg=name)
        if name in ("softsign", "tanhshrink"):
            continue  # PyTorch's composites round each step to float16 in backward
        gout.sum().backward()
        tout.sum().backward()
        np.testing.assert_allclose(host(gx.grad).astype(float), tx.grad.numpy().astype(float),
                                   rtol=tol, atol=tol, err_msg=name)


@needs_torch
def test_functional_forms_and_their_arguments_match_pytorch():
    torch = _torch()
    tf = torch.nn.functional
    cases = [
        (lambda f, x: f.leaky_relu(x, negative_slope=-0.3), [X]),
        (lambda f, x: f.elu(x, alpha=2.5), [X]),
        (lambda f, x: f.celu(x, alpha=-1.5), [X]),
        (lambda f, x: f.hardtanh(x, min_val=0.0, max_val=0.5), [X]),
        (lambda f, x: f.hardtanh(x, min_val=0.5, max_val=0.5), [X]),
        (lambda f, x: f.softshrink(x, lambd=0.0), [X]),
        (lambda f, x: f.hardshrink(x, lambd=-1.0), [X]),
        (lambda f, x: f.glu(x.reshape(2, 4, 4), dim=1), [X]),
        (lambda f, x: f.softmin(x, dim=-1, dtype=f is tf and torch.float32 or gc.float32), [X]),
    ]
    for fn, arrays in cases:
        _compare(lambda x: fn(F, x), lambda x: fn(tf, x), arrays, rtol=1e-6, atol=1e-7)


@needs_torch
@pytest.mark.parametrize("name", ["silu", "mish", "leaky_relu", "elu", "selu", "celu",
                                  "hardtanh", "relu6", "hardswish", "hardsigmoid"])
def test_inplace_forms_write_into_the_input_and_differentiate_as_pytorch(name):
    torch = _torch()

    def run(lib, f):
        x = lib.tensor(X, requires_grad=True)
        y = x * 1.0  # (a leaf that requires grad cannot be written in place)
        out = getattr(f, name)(y, inplace=True)
        assert out is y
        (out * lib.tensor(X)).sum().backward()
        return out.detach(), x.grad

    gout, ggrad = run(gc, F)
    tout, tgrad = run(torch, torch.nn.functional)
    np.testing.assert_allclose(host(gout), tout.numpy(), rtol=1e-12, atol=1e-300)
    # (PyTorch's in-place elu differentiates from its result, alpha * expm1(x): an ulp
    # apart from alpha * exp(x) where exp(x) is below 1e-16, at x = -50)
    np.testing.assert_allclose(host(ggrad), tgrad.numpy(), rtol=1e-12, atol=1e-15)


def test_inplace_forms_refuse_a_leaf_that_requires_grad():
    x = gc.tensor([1.0, -1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        F.elu(x, inplace=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        nn.LeakyReLU(inplace=True)(x)
    y = gc.tensor([1.0, -1.0])
    assert F.leaky_relu_(y, 0.5) is y and y.tolist() == [1.0, -0.5]
    assert F.relu_(gc.tensor([-2.0])).tolist() == [0.0]
    assert F.hardtanh_(gc.tensor([-2.0, 3.0])).tolist() == [-1.0, 1.0]


def test_activation_errors_are_pytorchs():
    x = gc.tensor([1.0, -2.0])
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(x, 1.0, 0.0)
    with pytest.raises(AssertionError, match=r"max_val \(1\) must be greater than min_val \(1\)"):
        nn.Hardtanh(1, 1)
    with pytest.warns(FutureWarning, match="min_value"):
        assert nn.Hardtanh(min_value=-2.0).min_val == -2.0
    with pytest.raises(RuntimeError, match="ZeroDivisionError: alpha cannot be 0 for CELU"):
        F.celu(x, 0.0)
    with pytest.raises(RuntimeError, match=r"lambda must be in range \[0, 3.40282e\+38\] for "
                                           "input dtype Float, but found -1"):
        F.softshrink(x, -1.0)
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 1 "
                                           "is size 3"):
        F.glu(gc.zeros(2, 3))
    with pytest.raises(RuntimeError, match="glu does not support scalars"):
        F.glu(gc.tensor(1.0))
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.glu(gc.zeros(2, 4), 2)
    with pytest.raises(NotImplementedError, match="\"leaky_relu_cpu\" not implemented for "
                                                  "'Long'"):
        F.leaky_relu(gc.tensor([1, 2]))
    with pytest.raises(NotImplementedError, match="\"elu_cpu\" not implemented for 'Long'"):
        F.selu(gc.tensor([1, 2]))
    # softsign and tanhshrink compute integers in float32; hardtanh keeps them
    assert F.softsign(gc.tensor([1, 3])).tolist() == [0.5, 0.75]
    assert F.tanhshrink(gc.tensor([0])).dtype == gc.float32
    assert F.hardtanh(gc.tensor([-5, 0, 5])).tolist() == [-1, 0, 1]
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
        F.softmin(gc.zeros(2, 3))


# ---- PReLU ----------
@needs_torch
@pytest.mark.parametrize("shape,num", [((4, 3, 5), 3), ((4, 3), 3), ((6,), 1), ((4, 3, 2), 1),
                                       ((), 1)])
def test_prelu_matches_pytorch(shape, num, device):
    torch = _torch()
    x = RNG.standard_normal(shape)
    if x.size:
        x.reshape(-1)[0] = 0.0  # the kink: the weight's gradient is 0 there, the input's w
    w = RNG.uniform(0.05, 0.5, num)
    _compare(F.prelu, torch.nn.functional.prelu, [x, w], grad=(0, 1))
    g, t = nn.PReLU(num), torch.nn.PReLU(num)
    assert host(g.weight).tolist() == [0.25] * num
    assert list(g.state_dict()) == list(t.state_dict()) == ["weight"]
    out = g(gc.tensor(x, dtype=gc.float32))
    out.sum().backward()
    t(torch.tensor(x, dtype=torch.float32)).sum().backward()
    np.testing.assert_allclose(host(g.weight.grad), t.weight.grad.numpy(), rtol=1e-5)


@needs_torch
def test_prelu_graph_reshapes_the_weight_as_pytorch():
    torch = _torch()
    x = gc.tensor(RNG.standard_normal((2, 3)), requires_grad=True)
    w = gc.tensor([0.1, 0.2, 0.3], dtype=gc.float64, requires_grad=True)
    out = F.prelu(x, w)
    assert out.grad_fn.name() == "PreluKernelBackward0"
    tout = torch.nn.functional.prelu(torch.tensor(x.detach().numpy(), requires_grad=True),
                                     torch.tensor([0.1, 0.2, 0.3], requires_grad=True,
                                                  dtype=torch.float64))
    assert len(out.grad_fn.next_functions) == len(tout.grad_fn.next_functions) == 2


def test_prelu_errors_are_pytorchs():
    x = gc.zeros(2, 3)
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel "
                                           "size. Found parameter numbers = 2 and channel size "
                                           "= 3."):
        F.prelu(x, gc.zeros(2))
    with pytest.raises(RuntimeError, match="Type promoting not supported. Got Float and "
                                           "Double"):
        F.prelu(x, gc.zeros(3, dtype=gc.float64))
    with pytest.raises(RuntimeError, match="Not allow zero-dim input tensor"):
        F.prelu(gc.tensor(1.0), gc.zeros(3))
    with pytest.raises(RuntimeError, match="Expected `weight` to be a scalar or 1D tensor, "
                                           "but got: ndim = 2"):
        F.prelu(gc.zeros(2, 1), gc.zeros(1, 1))
    with pytest.raises(NotImplementedError, match="\"prelu_cpu\" not implemented for 'Long'"):
        F.prelu(gc.tensor([1, 2]), gc.tensor([1]))


# ---- losses ----------
P = RNG.uniform(0.02, 0.98, (4, 5))
T = RNG.uniform(0.0, 1.0, (4, 5))
W = RNG.uniform(0.5, 2.0, (4, 5))
A, B = RNG.standard_normal((4, 5)), RNG.standard_normal((4, 5))
B[0, 0] = A[0, 0]        # |a - b| == 0: abs's gradient 0
B[1, 1] = A[1, 1] + 1.0  # |a - b| == beta == delta: the kink of the smooth losses
SIGNS = np.array([1.0, -1.0, 1.0, -1.0])
LOG_Q = np.log(T / T.sum(1, keepdims=True))
Q = np.exp(LOG_Q)
Q[0, 0] = 0.0  # a zero target probability: its term is 0 (xlogy)


def _losses(m):
    """(module, inputs, indices of the inputs that get gradients) by name."""
    return {
        "l1": (lambda r: m.L1Loss(reduction=r), [A, B], (0, 1)),
        "smooth_l1": (lambda r: m.SmoothL1Loss(reduction=r), [A, B], (0, 1)),
        "smooth_l1_beta": (lambda r: m.SmoothL1Loss(reduction=r, beta=0.3), [A, B], (0, 1)),
        "smooth_l1_beta0": (lambda r: m.SmoothL1Loss(reduction=r, beta=0.0), [A, B], (0, 1)),
        "huber": (lambda r: m.HuberLoss(reduction=r), [A, B], (0, 1)),
        "huber_delta": (lambda r: m.HuberLoss(reduction=r, delta=0.4), [A, B], (0, 1)),
        "bce": (lambda r: m.BCELoss(reduction=r), [P, T], (0, 1)),
        "bce_weight": (lambda r: m.BCELoss(weight=_lib(m).tensor(W[0]), reduction=r),
                       [P, T], (0, 1)),
        "kl": (lambda r: m.KLDivLoss(reduction=r), [np.log(P), Q], (0,)),
        "kl_log_target": (lambda r: m.KLDivLoss(reduction=r, log_target=True),
                          [np.log(P), LOG_Q], (0, 1)),
        "cosine_embedding": (lambda r: m.CosineEmbeddingLoss(margin=0.2, reduction=r),
                             [A, B, SIGNS], (0, 1)),
        "margin_ranking": (lambda r: m.MarginRankingLoss(margin=0.1, reduction=r),
                           [A[:, 0], B[:, 0], SIGNS], (0, 1)),
        "soft_margin": (lambda r: m.SoftMarginLoss(reduction=r), [A, np.sign(B)], (0,)),
        "multilabel_soft_margin": (lambda r: m.MultiLabelSoftMarginLoss(
            weight=_lib(m).tensor(W[0]), reduction=r), [A, (B > 0) * 1.0], (0,)),
        "triplet": (lambda r: m.TripletMarginLoss(margin=2.0, reduction=r), [A, B, W],
                    (0, 1, 2)),
        "triplet_swap_p1": (lambda r: m.TripletMarginLoss(margin=2.0, p=1, swap=True,
                                                          reduction=r), [A, B, W], (0, 1, 2)),
        "bce_logits": (lambda r: m.BCEWithLogitsLoss(
            weight=_lib(m).tensor(W[0]), pos_weight=_lib(m).tensor(W[1]), reduction=r),
                       [A, T], (0, 1)),
        "nll": (lambda r: m.NLLLoss(weight=_lib(m).tensor(W[0]), reduction=r),
                [np.log(P), np.array([0, 4, 2, 2])], (0,)),
    }


def _lib(m):
    return gc if m is nn else _torch()


@needs_torch
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name", sorted(_losses(nn)))
def test_loss_modules_match_pytorch(name, reduction):
    torch = _torch()
    g_make, arrays, grad = _losses(nn)[name]
    t_make = _losses(torch.nn)[name][0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (KLDivLoss's 'mean' warns, in both)
        _compare(g_make(reduction), t_make(reduction), arrays, grad=grad)


@needs_torch
@pytest.mark.parametrize("name", ["l1", "huber", "bce_weight", "kl", "cosine_embedding",
                                  "triplet"])
def test_loss_modules_on_the_device(name, device):
    torch = _torch()
    g_make, arrays, grad = _losses(nn)[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gout, _ = _compare(g_make("mean"), _losses(torch.nn)[name][0]("mean"), arrays,
                           grad=grad)
    assert gout.device.type == gc.device(device).type


@needs_torch
def test_functional_losses_take_pytorchs_extra_arguments():
    torch = _torch()
    tf = torch.nn.functional
    for fn, arrays, grad in [
        (lambda f, a, b, w: f.l1_loss(a, b, weight=w), [A, B, W], (0, 1)),
        (lambda f, a, b, w: f.l1_loss(a, b, weight=w, reduction="none"), [A, B, W], (0, 1)),
        (lambda f, a, b, w: f.huber_loss(a, b, weight=w), [A, B, W], (0, 1)),
        (lambda f, a, b, w: f.huber_loss(a, b, weight=w, reduction="sum"), [A, B, W], (0,)),
        (lambda f, a, b: f.kl_div(a, b, reduction="batchmean"), [np.log(P), Q], (0,)),
        (lambda f, a, b: f.kl_div(a, b, reduction="batchmean", log_target=True),
         [np.log(P), LOG_Q], (0, 1)),
        (lambda f, a, b: f.kl_div(a, b, reduction="batchmean"), [np.log(P[0, 0]), Q[1, 1]],
         (0,)),
        (lambda f, a, b: f.l1_loss(a, b, size_average=False), [A, B], (0,)),
        (lambda f, a, b, t: f.cosine_embedding_loss(a, b, t), [A[0], B[0], np.array(-1.0)],
         (0, 1)),
        (lambda f, a, b, t: f.cosine_embedding_loss(a, b, t, margin=-0.5),
         [A[0], B[0], np.array(-1.0)], (0, 1)),
        (lambda f, a, b: f.binary_cross_entropy(a, b, size_average=False), [P, T], (0, 1)),
    ]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (size_average's deprecation, in both)
            _compare(lambda *xs: fn(F, *xs), lambda *xs: fn(tf, *xs), arrays, grad=grad)


@needs_torch
def test_bce_clamps_its_logs_at_minus_100_as_pytorch():
    torch = _torch()
    p = np.array([0.0, 1.0, 0.0, 1.0, 1e-50, 0.5])
    t = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 0.5])
    g = F.binary_cross_entropy(gc.tensor(p), gc.tensor(t), reduction="none")
    ref = torch.nn.functional.binary_cross_entropy(torch.tensor(p), torch.tensor(t),
                                                   reduction="none")
    np.testing.assert_allclose(host(g), ref.numpy(), rtol=1e-12)
    assert host(g).tolist()[:2] == [100.0, 100.0]
    # the input's gradient divides by max((1 - x) * x, 1e-12), as PyTorch's
    x = gc.tensor(p[:4], requires_grad=True)
    tx = torch.tensor(p[:4], requires_grad=True)
    F.binary_cross_entropy(x, gc.tensor(t[:4]), reduction="sum").backward()
    torch.nn.functional.binary_cross_entropy(tx, torch.tensor(t[:4]), reduction="sum").backward()
    np.testing.assert_allclose(host(x.grad), tx.grad.numpy(), rtol=1e-12)


def test_loss_errors_are_pytorchs():
    a, b = gc.ones(2, 3), gc.ones(2, 3)
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        F.l1_loss(a, b, reduction="bad")
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        nn.HuberLoss(reduction="bad")(a, b)
    with pytest.raises(ValueError, match="Invalid reduction mode: bad"):
        F.huber_loss(a, b, reduction="bad", weight=gc.ones(2, 3))
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        F.l1_loss(a, b, weight=gc.ones(3))
    with pytest.raises(ValueError, match="bad is not valid"):
        F.multilabel_soft_margin_loss(a, b, reduction="bad")
    with pytest.raises(ValueError, match="batchmean is not a valid value for reduction"):
        F.l1_loss(a, b, reduction="batchmean")
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values "
                                           "for beta."):
        F.smooth_l1_loss(a, b, beta=-1.0)
    with pytest.raises(RuntimeError, match="huber_loss does not support non-positive values "
                                           "for delta."):
        F.huber_loss(a, b, delta=0.0)
    with pytest.raises(TypeError, match="delta must be a float or int, got: <class 'str'>"):
        nn.HuberLoss(delta="1")
    with pytest.warns(UserWarning, match=r"Using a target size \(\(3,\)\) that is different to "
                                         r"the input size \(\(2, 3\)\)"):
        F.l1_loss(a, gc.ones(3))
    with pytest.raises(ValueError, match="is deprecated. Please ensure they have the same "
                                         "size."):
        F.binary_cross_entropy(a, gc.ones(3))
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(a * 2, b)
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(gc.tensor([float("nan")]), gc.tensor([1.0]))
    with pytest.raises(RuntimeError, match="all elements of target should be between 0 and 1"):
        F.binary_cross_entropy(a * 0.5, b * 2)
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        F.binary_cross_entropy(a * 0.5, gc.ones(2, 3, dtype=gc.float64))
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument "
                                           "'weight'"):
        F.binary_cross_entropy(a * 0.5, b, weight=gc.ones(3, requires_grad=True))
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(a, b)
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected"):
        F.cosine_embedding_loss(a, b, gc.ones(2, 1))
    with pytest.raises(RuntimeError, match=r"1D target tensor expects 2D input tensors, but "
                                           r"found inputs with sizes \[3\] and \[2, 3\]."):
        F.cosine_embedding_loss(gc.ones(3), b, gc.ones(2))
    with pytest.raises(RuntimeError, match="margin_ranking_loss : All input tensors should "
                                           "have same dimension"):
        F.margin_ranking_loss(gc.ones(3), gc.ones(3), gc.ones(3, 1))
    with pytest.raises(ValueError, match="margin must be greater than 0, got 0"):
        F.triplet_margin_loss(a, b, b, margin=0)
    with pytest.raises(ValueError, match="TripletMarginLoss: expected margin to be greater "
                                         "than 0, got -1 instead"):
        nn.TripletMarginLoss(margin=-1)
    with pytest.raises(RuntimeError, match="but got: anchor 2D, positive 1D, and negative 2D "
                                           "inputs"):
        F.triplet_margin_loss(a, gc.ones(3), b)


@needs_torch
def test_loss_state_dicts_and_reprs_match_pytorch():
    torch = _torch()
    for name, (make, _, _) in _losses(nn).items():
        g, t = make("sum"), _losses(torch.nn)[name][0]("sum")
        assert list(g.state_dict()) == list(t.state_dict()), name
        assert repr(g) == repr(t), name
        assert g.reduction == t.reduction == "sum"
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        assert nn.L1Loss(size_average=False).reduction == "sum"
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        assert nn.KLDivLoss(reduce=False).reduction == "none"


# ---- distances and normalize ----------
Z = A.copy()
Z[0] = 0.0      # a zero row: its norm is clamped to eps
Z[1] *= 1e-10   # a row whose norm is below eps


@needs_torch
def test_distances_and_normalize_match_pytorch(device):
    torch = _torch()
    tf = torch.nn.functional
    cases = [
        (lambda f, a: f.normalize(a), [Z], (0,)),
        (lambda f, a: f.normalize(a, p=1, dim=0), [Z], (0,)),
        (lambda f, a: f.normalize(a, p=float("inf"), dim=-1, eps=1e-3), [Z], (0,)),
        (lambda f, a, b: f.cosine_similarity(a, b), [A, B], (0, 1)),
        (lambda f, a, b: f.cosine_similarity(a, b, dim=0), [Z, B[0]], (0, 1)),
        (lambda f, a, b: f.cosine_similarity(a, b, dim=-1, eps=1e-3), [Z, B], (0, 1)),
        (lambda f, a, b: f.pairwise_distance(a, b), [A, B], (0, 1)),
        (lambda f, a, b: f.pairwise_distance(a, b, p=1.0, keepdim=True), [A, B[0]], (0, 1)),
        (lambda f, a, b: f.pairwise_distance(a, b, p=3.0, eps=0.0), [A, B], (0, 1)),
        (lambda f, a, b: f.pairwise_distance(a, b), [np.array(1.0), np.array(3.0)], (0, 1)),
    ]
    for fn, arrays, grad in cases:
        _compare(lambda *xs: fn(F, *xs), lambda *xs: fn(tf, *xs), arrays, grad=grad)
    _compare(nn.CosineSimilarity(dim=0), torch.nn.CosineSimilarity(dim=0), [A, B], (0, 1))
    _compare(nn.PairwiseDistance(p=1.5, keepdim=True),
             torch.nn.PairwiseDistance(p=1.5, keepdim=True), [A, B], (0, 1))


def test_cosine_similarity_promotes_integers_and_refuses_integer_pairs():
    assert gc.cosine_similarity is F.cosine_similarity  # (torch.cosine_similarity too)
    assert gc.pairwise_distance is F.pairwise_distance
    out = F.cosine_similarity(gc.tensor([[1, 0]]), gc.tensor([[1.0, 1.0]]))
    assert out.dtype == gc.float32
    np.testing.assert_allclose(host(out), [2 ** -0.5], rtol=1e-6)
    with pytest.raises(RuntimeError, match="expected common dtype to be floating point, yet "
                                           "common dtype is Long"):
        F.cosine_similarity(gc.tensor([[1, 0]]), gc.tensor([[1, 1]]))


def test_normalize_writes_into_out():
    out = gc.zeros(1, 2)
    assert F.normalize(gc.tensor([[3.0, 4.0]]), out=out) is out
    np.testing.assert_allclose(host(out), [[0.6, 0.8]], rtol=1e-6)


# ---- containers ----------
def _tree(m):
    """The same container-heavy module from gradcore's nn or torch's."""
    lib = _lib(m)

    class Net(m.Module):
        def __init__(self):
            super().__init__()
            self.heads = m.ModuleDict({"b": m.Linear(2, 3), "a": m.ReLU()})
            self.heads["c"] = m.Linear(3, 1, bias=False)
            self.scales = m.ParameterList([lib.nn.Parameter(lib.ones(2)), lib.zeros(3)])
            self.table = m.ParameterDict({"z": lib.ones(1), "y": lib.zeros(2, 2)})
            self.unflat = m.Unflatten(1, (2, 3))
            self.register_buffer("steps", lib.zeros(1))
            self.register_buffer("cache", lib.ones(2), persistent=False)
    return Net()


@needs_torch
def test_containers_register_and_name_as_pytorch():
    torch = _torch()
    g, t = _tree(nn), _tree(torch.nn)
    assert [(n, tuple(p.shape)) for n, p in g.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in t.named_parameters()]
    assert list(g.state_dict()) == list(t.state_dict())
    assert [n for n, _ in g.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in g.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in g.named_children()] == [n for n, _ in t.named_children()]
    assert list(g.heads) == list(t.heads) == ["b", "a", "c"]
    assert list(g.table) == list(t.table) == ["y", "z"]  # a plain dict: sorted, as PyTorch


@needs_pinned_torch
def test_container_reprs_match_pytorch():
    torch = _torch()
    g, t = _tree(nn), _tree(torch.nn)
    assert repr(g) == repr(t).replace("torch.", "gradcore.")
    assert repr(nn.ParameterList([gc.ones(2), 3])) == \
        repr(torch.nn.ParameterList([torch.ones(2), 3])).replace("torch.", "gradcore.")


def test_module_dict_api():
    d = nn.ModuleDict([("x", nn.ReLU()), ["y", nn.Tanh()]])
    d.update(OrderedDict(z=nn.Sigmoid()))
    d.update(nn.ModuleDict({"w": nn.GELU()}))
    assert list(d.keys()) == ["x", "y", "z", "w"] and len(d) == 4 and "z" in d
    assert [type(v).__name__ for v in d.values()] == ["ReLU", "Tanh", "Sigmoid", "GELU"]
    assert isinstance(d.pop("y"), nn.Tanh) and "y" not in d
    del d["x"]
    assert [k for k, _ in d.items()] == ["z", "w"]
    d.clear()
    assert len(d) == 0
    with pytest.raises(TypeError, match="iterable of key/value pairs, but got int"):
        d.update(3)
    with pytest.raises(TypeError, match="element #0 should be Iterable; isint"):
        d.update([3])
    with pytest.raises(ValueError, match="element #0 has length 1; 2 is required"):
        d.update([("a",)])
    with pytest.raises(TypeError, match="is not a Module subclass"):
        d["a"] = 3
    with pytest.raises(NotImplementedError, match="missing the required \"forward\""):
        d(1)


def test_parameter_list_api(device):
    p = nn.ParameterList([gc.zeros(2)])
    p.append(gc.ones(3)).extend([gc.ones(1), "tag"])
    p += [nn.Parameter(gc.zeros(4))]
    assert len(p) == 5
    assert all(isinstance(p[i], nn.Parameter) for i in (0, 1, 2, 4)) and p[3] == "tag"
    assert p[-1] is p[4] and [n for n, _ in p.named_parameters()] == ["0", "1", "2", "4"]
    sub = p[1:3]
    assert isinstance(sub, nn.ParameterList) and len(sub) == 2 and sub[0] is p[1]
    p[0] = gc.full((2,), 5.0)
    assert isinstance(p[0], nn.Parameter) and p[0].tolist() == [5.0, 5.0]
    assert "0" not in dir(p)
    with pytest.raises(IndexError, match="index 5 is out of range"):
        p[5]
    with pytest.raises(TypeError, match="should be called with an iterable, but got Tensor"):
        p.extend(gc.ones(2))
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        p(1)
    p.to(gc.float64)
    assert p[1].dtype == gc.float64 and p[1].device.type == gc.device(device).type


def test_parameter_dict_api():
    d = nn.ParameterDict(OrderedDict(b=gc.ones(1), a=gc.zeros(1)))
    assert list(d) == ["b", "a"] and isinstance(d["b"], nn.Parameter)
    d.update([("c", gc.ones(2))])
    assert d.get("c") is d["c"] and d.get("missing", 7) == 7
    assert d.setdefault("e") is None and "e" in d and len(d) == 4
    assert d.pop("e") is None and list(reversed(d)) == ["c", "a", "b"]
    k, v = d.popitem()
    assert k == "c" and tuple(v.shape) == (2,) and "c" not in d
    merged = d | nn.ParameterDict({"x": gc.ones(3)})
    assert list(merged) == ["b", "a", "x"] and merged["b"] is d["b"]
    d |= {"y": gc.ones(1)}
    assert list(d) == ["b", "a", "y"]
    assert list(d.copy()) == list(d) and list(d.fromkeys(["p", "q"])) == ["p", "q"]
    assert [n for n, _ in d.named_parameters()] == ["b", "a", "y"]
    del d["a"]
    assert list(d.keys()) == ["b", "y"] and [tuple(v.shape) for v in d.values()] == [(1,), (1,)]
    with pytest.raises(RuntimeError, match="ParameterDict should not be called."):
        d(1)
    d.clear()
    assert len(d) == 0 and list(d.parameters()) == []
    with pytest.raises(TypeError, match=r"not a string \(type is 'int'\)"):
        d[1] = gc.ones(1)


def test_unflatten_and_flatten(device):
    x = gc.arange(24.0).reshape(2, 12)
    assert nn.Unflatten(1, (3, 4))(x).shape == (2, 3, 4)
    assert nn.Unflatten(-1, [2, -1])(x).shape == (2, 2, 6)
    assert nn.Flatten(0)(nn.Unflatten(1, (3, 4))(x)).shape == (24,)
    assert repr(nn.Unflatten(1, (3, 4))) == "Unflatten(dim=1, unflattened_size=(3, 4))"
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints, but found "
                                        "element of type float at pos 1"):
        nn.Unflatten(1, (3, 4.0))
    with pytest.raises(TypeError, match="unflattened_size must be a tuple of ints, but found "
                                        "type int"):
        nn.Unflatten(1, 3)
    assert nn.Identity(3, flag=True)(x) is x


# ---- Module API ----------
@needs_torch
def test_buffers_persistent_or_not_follow_pytorch():
    torch = _torch()
    g, t = _tree(nn), _tree(torch.nn)
    assert "cache" not in g.state_dict() and "cache" not in t.state_dict()
    assert dict(g.named_buffers()).keys() == dict(t.named_buffers()).keys() == \
        {"steps", "cache"}
    g.double()
    assert g.cache.dtype == g.steps.dtype == g.scales[0].dtype == gc.float64
    g.half()
    assert g.cache.dtype == gc.float16 and g.table["y"].dtype == gc.float16
    g.float()
    assert g.heads["b"].weight.dtype == gc.float32
    g.to(gc.float64)
    assert g.cache.dtype == gc.float64
    result = g.load_state_dict({k: v.clone() for k, v in g.state_dict().items()})
    assert result.missing_keys == [] and result.unexpected_keys == []
    g.register_buffer("cache", None, persistent=True)
    assert "cache" not in g.state_dict()  # (a None buffer is not saved)
    g.register_buffer("cache", gc.ones(1))
    assert "cache" in g.state_dict()


@needs_torch
def test_registration_errors_match_pytorch():
    torch = _torch()

    def errors(m):
        lib = _lib(m)
        out = []
        for call in (lambda mod: mod.register_buffer(1, None),
                     lambda mod: mod.register_buffer("a.b", None),
                     lambda mod: mod.register_buffer("", None),
                     lambda mod: mod.register_buffer("training", None),
                     lambda mod: mod.register_buffer("x", 3),
                     lambda mod: mod.register_parameter("w", lib.ones(2)),
                     lambda mod: mod.register_parameter("train", None),
                     lambda mod: mod.register_parameter(
                         "w", lib.nn.Parameter(lib.ones(2)) * 2),
                     lambda mod: mod.add_module("a.b", None),
                     lambda mod: mod.add_module(3, None),
                     lambda mod: mod.add_module("x", 3),
                     lambda mod: mod.register_module("eval", m.ReLU()),
                     lambda mod: mod.get_submodule("lin.missing"),
                     lambda mod: mod.get_submodule("lin.weight"),
                     lambda mod: mod.get_parameter("lin.nothing"),
                     lambda mod: mod.get_parameter("buf"),
                     lambda mod: mod.get_buffer("lin.weight")):
            mod = m.Module()
            mod.lin = m.Linear(2, 2)
            mod.register_buffer("buf", lib.zeros(1))
            try:
                call(mod)
                out.append(None)
            except Exception as e:  # noqa: BLE001 - the error itself is compared
                out.append((type(e).__name__, str(e).replace("torch", "gradcore")))
        return out

    # (PyTorch's messages name torch's types where gradcore's name its own)
    assert errors(nn) == errors(torch.nn)


def test_lookups_and_registration_in_use(device):
    m = nn.Module()
    m.register_module("body", nn.Sequential(nn.Linear(2, 3), nn.ReLU()))
    m.add_module("gate", None)
    m.register_parameter("scale", nn.Parameter(gc.ones(1)))
    m.register_parameter("unused", None)
    m.register_buffer("count", gc.zeros(1))
    assert m.get_submodule("body.0") is m.body[0] and m.get_submodule("") is m
    assert m.get_parameter("body.0.bias") is m.body[0].bias
    assert m.get_parameter("scale") is m.scale and m.get_buffer("count") is m.count
    assert [n for n, _ in m.named_parameters()] == ["scale", "body.0.weight", "body.0.bias"]
    assert [n for n, _ in m.named_children()] == ["body"]
    assert m.gate is None and m.unused is None
    assert list(m.state_dict()) == ["scale", "count", "body.0.weight", "body.0.bias"]
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_()
    out = m.body(gc.ones(1, 2)).sum() * m.scale
    out.sum().backward()
    assert m.scale.grad is not None
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "ReLU", "Sequential", "Module"]


@needs_torch
def test_apply_and_named_modules_order_match_pytorch():
    torch = _torch()

    def names(m):
        seen = []
        net = _tree(m)
        net.apply(lambda mod: seen.append(type(mod).__name__))
        return seen, [n for n, _ in net.named_modules(prefix="net")]

    assert names(nn) == names(torch.nn)


@needs_torch
def test_forward_hooks_run_as_pytorchs():
    torch = _torch()

    def run(m):
        lib = _lib(m)
        log = []
        layer = m.Linear(2, 2)
        with lib.no_grad():
            layer.weight.copy_(lib.tensor([[1.0, 2.0], [3.0, 4.0]]))
            layer.bias.zero_()
        h1 = layer.register_forward_pre_hook(lambda mod, args: log.append("pre1") or
                                             (args[0] * 2,))
        layer.register_forward_pre_hook(lambda mod, args: log.append("pre0"), prepend=True)
        layer.register_forward_pre_hook(
            lambda mod, args, kwargs: log.append(("prekw", sorted(kwargs))) or (args, kwargs),
            with_kwargs=True)
        h2 = layer.register_forward_hook(lambda mod, args, out: log.append("post") or out + 1)
        layer.register_forward_hook(
            lambda mod, args, kwargs, out: log.append(("postkw", len(args))), with_kwargs=True)
        out1 = layer(lib.ones(1, 2)).tolist()
        h1.remove()
        h1.remove()  # (a second remove does nothing)
        out2 = layer(lib.ones(1, 2)).tolist()
        h2.remove()
        out3 = layer(lib.ones(1, 2)).tolist()
        with layer.register_forward_pre_hook(lambda mod, args: lib.zeros(1, 2)):
            out4 = layer(lib.ones(1, 2)).tolist()
        out5 = layer(lib.ones(1, 2)).tolist()
        return log, out1, out2, out3, out4, out5

    assert run(nn) == run(torch.nn)


def test_forward_hooks_always_called_and_errors():
    class Boom(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    seen = []
    m = Boom()
    m.register_forward_hook(lambda mod, args, out: seen.append(("always", out)), always_call=True)
    m.register_forward_hook(lambda mod, args, out: seen.append("normal"))
    with pytest.raises(ValueError, match="boom"):
        m(1)
    assert seen == [("always", None)]
    ident = nn.Identity()
    ident.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match=r"forward pre-hook must return None or a tuple of "
                                           r"\(new_args, new_kwargs\), but got 5."):
        ident(1)
    # a hook may remove itself while the hooks run
    ident = nn.Identity()
    handles = []
    handles.append(ident.register_forward_hook(lambda mod, args, out: handles[0].remove()))
    ident(1)
    assert len(ident._forward_hooks) == 0
    assert isinstance(handles[0], nn.RemovableHandle) and isinstance(handles[0].id, int)


def test_hooks_do_not_reach_state_dict_or_repr():
    m = nn.Linear(2, 2)
    m.register_forward_hook(lambda *a: None)
    assert list(m.state_dict()) == ["weight", "bias"]
    assert repr(m) == "Linear(in_features=2, out_features=2, bias=True)"


def test_new_public_names_have_docstrings():
    for name in nn.__all__:
        obj = getattr(nn, name)
        if isinstance(obj, type) or callable(obj):
            assert obj.__doc__, f"nn.{name}"
    for name in F.__all__:
        assert getattr(F, name).__doc__, f"F.{name}"


def test_nn_page_examples_run_and_print_what_they_say(capsys):
    """docs/nn.md: its python blocks form one session and print what its comments say."""
    text = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "nn.md").read_text()
    namespace = {}
    for block in re.findall(r"```python\n(.*?)```", text, flags=re.S):
        exec(compile(block, "docs/nn.md", "exec"), namespace)
    assert capsys.readouterr().out.splitlines() == [
        "PReLU(num_parameters=8)", "gradcore.Size([8])",
        "['calls', 'heads.cls.weight', 'heads.cls.bias', 'heads.box.weight', "
        "'heads.box.bias', 'scales.0', 'scales.1']", "[gradcore.Size([3, 2])]",
        "gradcore.Size([8, 12, 64])", "gradcore.Size([1, 2, 4, 4])", "gradcore.Size([3, 4])",
        "gradcore.Size([2, 3])", "Linear(in_features=7, out_features=2, bias=True)"]


def test_replacing_a_submodule_or_parameter_keeps_its_place():
    """Assigning an existing submodule's or parameter's name again keeps its place in
    ``_modules``/``_parameters`` (PyTorch's order of ``parameters()``, which optimizer
    state follows): pytorch/examples' TransformerModel replaces ``nn.Transformer``'s
    ``decoder`` with a Linear."""
    import gradcore as gc

    class Net(gc.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = gc.nn.Linear(2, 2)
            self.b = gc.nn.Linear(2, 3)
            self.w = gc.nn.Parameter(gc.ones(1))
            self.c = gc.nn.Linear(3, 1)

    net = Net()
    net.a = gc.nn.Linear(2, 4)
    net.w = gc.nn.Parameter(gc.zeros(1))
    assert list(net._modules) == ["a", "b", "c"]
    assert [n for n, _ in net.named_parameters()] == ["w", "a.weight", "a.bias", "b.weight",
                                                      "b.bias", "c.weight", "c.bias"]
