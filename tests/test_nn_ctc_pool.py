"""The CTC loss, the adaptive softmax and the fractional max pools against PyTorch
(values, gradients, shapes, errors), by finite differences, on both devices."""

import numpy as np
import pytest

import gradcore as gc
import gradcore.nn as nn
import gradcore.nn.functional as F
from gradcore.autograd import gradcheck

from conftest import host, needs_torch


# ---- CTC ----------
def _ctc_case(rng, t_len, n, c, s, normalised, concatenated=False, blank=0):
    lp = rng.standard_normal((t_len, n, c))
    if normalised:
        lp = lp - np.log(np.exp(lp).sum(-1, keepdims=True))
    labels = [b for b in range(c) if b != blank]
    tg = rng.choice(labels, (n, s))
    il = rng.integers(0, t_len + 1, n)
    il[0] = t_len
    tl = rng.integers(0, s + 1, n)
    if concatenated:
        tg = np.concatenate([tg[i, :tl[i]] for i in range(n)]).astype(np.int64)
    return lp, tg, il, tl


CTC_CASES = [dict(t_len=9, n=4, c=5, s=4, normalised=True),
             dict(t_len=9, n=4, c=5, s=4, normalised=False),
             dict(t_len=12, n=3, c=4, s=6, normalised=True, concatenated=True, blank=2),
             dict(t_len=1, n=2, c=3, s=1, normalised=True),
             dict(t_len=6, n=1, c=2, s=3, normalised=False, concatenated=True)]


@needs_torch
@pytest.mark.parametrize("case", CTC_CASES, ids=lambda c: str(sorted(c.items())))
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss_values_and_gradients_are_pytorch_s(case, reduction, zero_infinity, device):
    import torch

    rng = np.random.default_rng(len(str(case)))
    case = dict(case)
    blank = case.pop("blank", 0)
    lp, tg, il, tl = _ctc_case(rng, blank=blank, **case)
    g = gc.tensor(lp, device=device, requires_grad=True)
    t = torch.tensor(lp, requires_grad=True)
    a = F.ctc_loss(g, gc.tensor(tg, device=device), gc.tensor(il, device=device),
                   gc.tensor(tl, device=device), blank, reduction, zero_infinity)
    b = torch.nn.functional.ctc_loss(t, torch.tensor(tg), torch.tensor(il), torch.tensor(tl),
                                     blank, reduction, zero_infinity)
    assert tuple(a.shape) == tuple(b.shape) and a.dtype == gc.float64
    np.testing.assert_allclose(host(a.detach()), b.detach().numpy(), rtol=1e-10)
    w = rng.standard_normal(tuple(b.shape))
    finite = np.isfinite(b.detach().numpy())
    w = np.where(finite, w, 1.0)  # (an infinite loss's gradient is NaN: compared as NaN)
    (a * gc.tensor(w, device=device)).sum().backward()
    (b * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(host(g.grad), t.grad.numpy(), rtol=1e-8, atol=1e-12,
                               equal_nan=True)


@needs_torch
def test_ctc_loss_float32_tuples_unbatched_and_the_module():
    import torch

    rng = np.random.default_rng(3)
    x = rng.standard_normal((7, 3, 5)).astype(np.float32)
    tg, il, tl = [1, 2, 3, 4, 4, 2], (7, 5, 6), (3, 2, 1)
    g = gc.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    a = nn.CTCLoss(blank=0, reduction="mean")(g.log_softmax(2), gc.tensor(tg), il, tl)
    b = torch.nn.CTCLoss(blank=0, reduction="mean")(t.log_softmax(2), torch.tensor(tg), il, tl)
    assert a.dtype == gc.float32
    np.testing.assert_allclose(a.item(), b.item(), rtol=1e-5)
    a.backward()
    b.backward()
    np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-6)
    # unbatched: (T, C) log-probabilities, 0-d lengths; 1-D targets are concatenated
    for reduction in ("none", "mean", "sum"):
        a = F.ctc_loss(g[:, 0].detach(), gc.tensor([1, 2]), gc.tensor(7), gc.tensor(2),
                       reduction=reduction)
        b = torch.nn.functional.ctc_loss(t[:, 0].detach(), torch.tensor([1, 2]),
                                         torch.tensor(7), torch.tensor(2), reduction=reduction)
        assert tuple(a.shape) == tuple(b.shape) == ()
        np.testing.assert_allclose(a.item(), b.item(), rtol=1e-5)
    # torch.ctc_loss: reduction an int, not reduced when omitted
    a = gc.ctc_loss(g.detach(), gc.tensor(tg), il, tl)
    b = torch.ctc_loss(t.detach(), torch.tensor(tg), il, tl)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5)
    np.testing.assert_allclose(gc.ctc_loss(g.detach(), gc.tensor(tg), il, tl, 0, 2).item(),
                               torch.ctc_loss(t.detach(), torch.tensor(tg), il, tl, 0, 2).item(),
                               rtol=1e-5)


def test_ctc_loss_impossible_alignments_and_zero_infinity():
    lp = gc.randn(4, 2, 3, dtype=gc.float64).log_softmax(2).requires_grad_()
    tg = gc.tensor([[1, 1, 1], [1, 2, 0]])
    loss = F.ctc_loss(lp, tg, (4, 4), (3, 2), reduction="none")
    assert loss[0].item() == float("inf") and np.isfinite(loss[1].item())
    loss.sum().backward()
    assert np.isnan(lp.grad[:, 0].numpy()).all() and np.isfinite(lp.grad[:, 1].numpy()).all()
    lp.grad = None
    loss = F.ctc_loss(lp, tg, (4, 4), (3, 2), reduction="sum", zero_infinity=True)
    loss.backward()
    assert (lp.grad[:, 0].numpy() == 0).all() and np.isfinite(loss.item())


def test_ctc_loss_gradcheck_through_log_softmax():
    # (PyTorch's gradient adds exp(log_probs), which a log_softmax before it cancels: the
    # composite's gradient is the true one)
    rng = np.random.default_rng(5)
    x = gc.tensor(rng.standard_normal((6, 3, 4)), requires_grad=True)
    tg = gc.tensor([[1, 2, 2], [3, 1, 0], [2, 0, 0]])
    for reduction in ("none", "mean", "sum"):
        assert gradcheck(lambda x: F.ctc_loss(x.log_softmax(2), tg, (6, 5, 3), (3, 2, 1),
                                              reduction=reduction), (x,))


def test_ctc_loss_has_no_second_derivative_as_in_pytorch():
    x = gc.randn(5, 2, 4, dtype=gc.float64, requires_grad=True)
    loss = F.ctc_loss(x.log_softmax(2), gc.tensor([[1, 2], [3, 3]]), (5, 4), (2, 2))
    assert loss.grad_fn.next_functions[0][0].next_functions[0][0].name() == "CtcLossBackward0"
    (g,) = gc.autograd.grad(loss, x, create_graph=True)
    with pytest.raises(RuntimeError, match="_ctc_loss_backward is not implemented"):
        g.sum().backward()


@pytest.mark.parametrize("call, error, match", [
    (lambda lp, tg: F.ctc_loss(lp, tg, (6, 7), (2, 2)), RuntimeError, "at most 6"),
    (lambda lp, tg: F.ctc_loss(lp, tg, (6, -1), (2, 2)), RuntimeError, "at least 0"),
    (lambda lp, tg: F.ctc_loss(lp, tg, (6, 6), (2, 3)), RuntimeError, "size at least 3"),
    (lambda lp, tg: F.ctc_loss(lp, tg, (6,), (2, 2)), RuntimeError,
     "input_lengths must be of size batch_size"),
    (lambda lp, tg: F.ctc_loss(lp, tg, (6, 6), (2,)), RuntimeError,
     "target_lengths must be of size batch_size"),
    (lambda lp, tg: F.ctc_loss(lp, tg, (6, 6), (2, 2), blank=4), RuntimeError,
     "blank must be in label range"),
    (lambda lp, tg: F.ctc_loss(lp, tg, (6, 6), (2, 2), reduction="avg"), ValueError,
     "avg is not a valid value for reduction"),
    (lambda lp, tg: F.ctc_loss(lp, tg, 6, 2), TypeError, "invalid combination"),
    (lambda lp, tg: F.ctc_loss(lp, tg, gc.tensor([6., 6.]), gc.tensor([2, 2])), RuntimeError,
     "input_lengths must be integral"),
    (lambda lp, tg: F.ctc_loss(lp, tg.reshape(-1)[:3], (6, 6), (2, 2)), RuntimeError,
     "to have size 4 at dimension 0"),
    (lambda lp, tg: F.ctc_loss(lp.half(), tg, (6, 6), (2, 2)), NotImplementedError,
     "not implemented for 'Half'"),
    (lambda lp, tg: F.ctc_loss(lp[None], tg, (6, 6), (2, 2)), RuntimeError,
     "Expected 3-dimensional tensor"),
    (lambda lp, tg: F.ctc_loss(lp, tg + 3, (6, 6), (2, 2)), RuntimeError, "out of range"),
])
def test_ctc_loss_errors_are_pytorch_s(call, error, match):
    lp = gc.randn(6, 2, 4).log_softmax(2)
    with pytest.raises(error, match=match):
        call(lp, gc.tensor([[1, 2], [3, 1]]))


# ---- adaptive softmax ----------
@needs_torch
@pytest.mark.parametrize("head_bias", [False, True])
def test_adaptive_log_softmax_loads_pytorch_state_and_matches_it(head_bias, device):
    import torch

    rng = np.random.default_rng(7)
    t = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0,
                                            head_bias=head_bias).double()
    g = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0,
                                      head_bias=head_bias).double().to(device)
    want = {k: tuple(v.shape) for k, v in t.state_dict().items()}
    assert {k: tuple(v.shape) for k, v in g.state_dict().items()} == want
    g.load_state_dict({k: gc.tensor(v.numpy(), device=device)
                       for k, v in t.state_dict().items()})
    x, y = rng.standard_normal((7, 8)), np.array([0, 2, 3, 5, 6, 9, 1])
    tx = torch.tensor(x, requires_grad=True)
    gx = gc.tensor(x, device=device, requires_grad=True)
    b, a = t(tx, torch.tensor(y)), g(gx, gc.tensor(y, device=device))
    assert type(a).__name__ == "_ASMoutput" and a._fields == ("output", "loss")
    np.testing.assert_allclose(host(a.output.detach()), b.output.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(a.loss.item(), b.loss.item(), rtol=1e-12)
    a.loss.backward()
    b.loss.backward()
    np.testing.assert_allclose(host(gx.grad), tx.grad.numpy(), rtol=1e-10, atol=1e-14)
    for (name, p), q in zip(t.named_parameters(), g.parameters()):
        np.testing.assert_allclose(host(q.grad), p.grad.numpy(), rtol=1e-10, atol=1e-14,
                                   err_msg=name)
    np.testing.assert_allclose(host(g.log_prob(gx).detach()), t.log_prob(tx).detach().numpy(),
                               rtol=1e-12)
    assert host(g.predict(gx)).tolist() == t.predict(tx).tolist()
    one_g, one_t = g(gx[0], gc.tensor(4, device=device)), t(tx[0], torch.tensor(4))
    assert tuple(one_g.output.shape) == ()
    np.testing.assert_allclose(one_g.output.item(), one_t.output.item(), rtol=1e-12)


def test_adaptive_log_softmax_shapes_init_and_errors():
    m = nn.AdaptiveLogSoftmaxWithLoss(16, 20, [5, 10, 15], div_value=2.0)
    shapes = [(n, tuple(p.shape)) for n, p in m.named_parameters()]
    assert shapes == [("head.weight", (8, 16)), ("tail.0.0.weight", (8, 16)),
                      ("tail.0.1.weight", (5, 8)), ("tail.1.0.weight", (4, 16)),
                      ("tail.1.1.weight", (5, 4)), ("tail.2.0.weight", (2, 16)),
                      ("tail.2.1.weight", (5, 2))]
    bound = 1 / np.sqrt(16)  # (nn.Linear's kaiming-uniform init)
    assert np.abs(m.head.weight.detach().numpy()).max() <= bound
    lp = m.log_prob(gc.randn(3, 16))
    np.testing.assert_allclose(lp.exp().sum(1).detach().numpy(), 1.0, rtol=1e-5)
    for cutoffs in ([], [5, 5], [0, 4], [4, 20], [6, 3]):
        with pytest.raises(ValueError, match="cutoffs"):
            nn.AdaptiveLogSoftmaxWithLoss(16, 20, cutoffs)
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 19\]"):
        m(gc.randn(2, 16), gc.tensor([1, 20]))
    with pytest.raises(RuntimeError, match="same size in the batch dimension"):
        m(gc.randn(2, 16), gc.tensor([1, 2, 3]))
    with pytest.raises(RuntimeError, match="multi-target not supported"):
        m(gc.randn(2, 16), gc.tensor([[1, 2]]))


# ---- fractional max pools ----------
FRACTIONAL = [(2, (2, 3, 9, 8), 3, 4, {}), (2, (2, 3, 9, 8), (2, 3), (5, 6), {}),
              (2, (3, 10, 7), 2, (6, 4), {}), (2, (2, 3, 9, 8), 2, 1, {}),
              (2, (1, 2, 13, 17), 2, (12, 9), dict(ties=True)),
              (2, (2, 3, 9, 8), 2, 4, dict(nan=True)),
              (3, (2, 3, 5, 9, 8), 2, 3, {}), (3, (3, 6, 7, 8), (2, 3, 2), (4, 3, 5), {}),
              (3, (1, 2, 7, 7, 7), 3, (4, 4, 3), dict(ties=True)),
              (3, (2, 2, 6, 7, 8), 2, 3, dict(nan=True))]


@needs_torch
@pytest.mark.parametrize("nd, shape, kernel, out, how", FRACTIONAL,
                         ids=lambda v: str(v).replace(" ", ""))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fractional_max_pool_is_pytorch_s_given_the_samples(nd, shape, kernel, out, how,
                                                            dtype, device):
    import torch

    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(dtype)
    if how.get("ties"):
        x = np.round(x)
    if how.get("nan"):
        x[rng.random(shape) < 0.2] = np.nan
    n = shape[0] if len(shape) == nd + 2 else 1
    s = rng.random((n, shape[-nd - 1], nd)).astype(dtype)
    name = f"fractional_max_pool{nd}d"
    tx = torch.tensor(x, requires_grad=True)
    gx = gc.tensor(x, device=device, requires_grad=True)
    b, bi = getattr(torch.nn.functional, name)(tx, kernel, output_size=out,
                                               return_indices=True,
                                               _random_samples=torch.tensor(s))
    a, ai = getattr(F, name)(gx, kernel, output_size=out, return_indices=True,
                             _random_samples=gc.tensor(s, device=device))
    assert tuple(a.shape) == tuple(b.shape) and ai.dtype == gc.int64
    np.testing.assert_array_equal(host(ai), bi.numpy())
    np.testing.assert_array_equal(host(a.detach()), b.detach().numpy())
    w = rng.standard_normal(tuple(b.shape)).astype(dtype)
    (a * gc.tensor(w, device=device)).sum().backward()
    (b * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(host(gx.grad), tx.grad.numpy(), rtol=1e-6, atol=1e-6)


@needs_torch
def test_fractional_max_pool_ratio_modules_and_half():
    import torch

    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 10, 9)).astype(np.float16)
    s = rng.random((2, 3, 2)).astype(np.float16)
    a = nn.FractionalMaxPool2d(2, output_ratio=(0.5, 0.7), _random_samples=gc.tensor(s))
    b = torch.nn.FractionalMaxPool2d(2, output_ratio=(0.5, 0.7),
                                     _random_samples=torch.tensor(s))
    assert list(a.state_dict()) == list(b.state_dict()) == ["_random_samples"]
    np.testing.assert_array_equal(a(gc.tensor(x)).numpy(), b(torch.tensor(x)).numpy())
    x3 = rng.standard_normal((3, 6, 7, 8))
    s3 = rng.random((1, 3, 3))
    a3 = nn.FractionalMaxPool3d((2, 3, 2), output_ratio=0.5, return_indices=True,
                                _random_samples=gc.tensor(s3))
    b3 = torch.nn.FractionalMaxPool3d((2, 3, 2), output_ratio=0.5, return_indices=True,
                                      _random_samples=torch.tensor(s3))
    (ya, ia), (yb, ib) = a3(gc.tensor(x3)), b3(torch.tensor(x3))
    np.testing.assert_array_equal(ya.numpy(), yb.numpy())
    np.testing.assert_array_equal(ia.numpy(), ib.numpy())
    y, i = F.fractional_max_pool2d_with_indices(gc.tensor(x), 2, output_size=3,
                                                _random_samples=gc.tensor(s))
    assert tuple(y.shape) == tuple(i.shape) == (2, 3, 3, 3)


def test_fractional_max_pool_draws_its_samples_from_gradcore_s_generator():
    x = gc.randn(2, 3, 9, 8)
    gc.manual_seed(11)
    a = F.fractional_max_pool2d(x, 2, output_size=4)
    gc.manual_seed(11)
    b = F.fractional_max_pool2d(x, 2, output_size=4,
                                _random_samples=gc.rand(2, 3, 2, dtype=x.dtype))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    x3 = gc.randn(3, 5, 6, 7, dtype=gc.float64)
    gc.manual_seed(12)
    a = F.fractional_max_pool3d(x3, 2, output_ratio=0.5)
    gc.manual_seed(12)
    b = F.fractional_max_pool3d(x3, 2, output_ratio=0.5,
                                _random_samples=gc.rand(1, 3, 3, dtype=gc.float64))
    np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_max_pool_gradcheck(nd, device):
    rng = np.random.default_rng(nd)
    shape = (2, 2, 4, 5) if nd == 2 else (1, 1, 5, 5, 5)  # (small: each element is moved)
    x = gc.tensor(rng.permutation(np.prod(shape)).reshape(shape) / 10.0, device=device,
                  requires_grad=True)  # (distinct values: no ties at the maxima)
    s = gc.tensor(rng.random((shape[0], shape[1], nd)), device=device)
    pool = getattr(F, f"fractional_max_pool{nd}d")
    assert gradcheck(lambda x: pool(x, 2, output_size=3, _random_samples=s), (x,))


@pytest.mark.parametrize("call, error, match", [
    (lambda x, s: F.fractional_max_pool2d(x, 2), ValueError, "either an output_size"),
    (lambda x, s: F.fractional_max_pool2d(x, 3, output_size=8, _random_samples=s),
     RuntimeError, "pool height 3 too large relative to input height 9"),
    (lambda x, s: F.fractional_max_pool2d(x, 3, output_size=(5, 7), _random_samples=s),
     RuntimeError, "pool width 3 too large relative to input width 8"),
    (lambda x, s: F.fractional_max_pool2d(x[None], 3, output_size=4), RuntimeError,
     "Expected 3D or 4D tensor"),
    (lambda x, s: F.fractional_max_pool2d(x, 3, output_size=4, _random_samples=s[:1]),
     RuntimeError, "no less then input batch size"),
    (lambda x, s: F.fractional_max_pool2d(x, 3, output_size=4, _random_samples=s[:, :, :1]),
     RuntimeError, r"size\(2\) equals to 2; got 1"),
    (lambda x, s: F.fractional_max_pool2d(x, 3, output_size=4, _random_samples=s[:, :2]),
     RuntimeError, "equals to input channel size"),
    (lambda x, s: F.fractional_max_pool2d(x, 3, output_size=4, _random_samples=s[0]),
     RuntimeError, "to have 3 dimensions, got 2"),
    (lambda x, s: F.fractional_max_pool2d(x, 3, output_size=4, _random_samples=s.double()),
     RuntimeError, "same dtype as input"),
    (lambda x, s: F.fractional_max_pool2d(x[:, :0], 3, output_size=4, _random_samples=s),
     RuntimeError, "non-zero size for non-batch dimensions"),
    (lambda x, s: F.fractional_max_pool2d(x, (2, 2, 2), output_size=4, _random_samples=s),
     RuntimeError, "kernel_size must either be a single Int or tuple of Ints"),
    (lambda x, s: F.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.5, 0.5)), ValueError,
     "output_ratio to either be a single Int or tuple of Ints"),
    (lambda x, s: F.fractional_max_pool3d(x[:, :, None].expand(2, 3, 4, 9, 8), 2,
                                          output_size=3), RuntimeError,
     "pool time 2 too large relative to input time 4"),
    (lambda x, s: nn.FractionalMaxPool2d(2, output_ratio=1.5), ValueError,
     "output_ratio must be between 0 and 1"),
    (lambda x, s: nn.FractionalMaxPool2d(2, output_size=2, output_ratio=0.5), ValueError,
     "only one of output_size and output_ratio"),
    (lambda x, s: nn.FractionalMaxPool2d(2), ValueError,
     "FractionalMaxPool2d requires specifying either an output size"),
    (lambda x, s: nn.FractionalMaxPool3d(0, output_size=2), ValueError,
     "kernel_size must be greater than 0"),
])
def test_fractional_max_pool_errors_are_pytorch_s(call, error, match):
    with pytest.raises(error, match=match):
        call(gc.randn(2, 3, 9, 8), gc.rand(2, 3, 2))


def test_ctc_loss_takes_host_targets_and_lengths_with_device_log_probs(standin):
    rng = np.random.default_rng(9)
    lp = rng.standard_normal((6, 2, 4))
    tg, il, tl = np.array([[1, 2], [3, 3]]), np.array([6, 5]), np.array([2, 2])
    want = F.ctc_loss(gc.tensor(lp), gc.tensor(tg), gc.tensor(il), gc.tensor(tl),
                      reduction="none")
    x = gc.tensor(lp, device="cuda", requires_grad=True)
    got = F.ctc_loss(x, gc.tensor(tg), gc.tensor(il), gc.tensor(tl), reduction="none")
    assert got.device.type == "cuda"
    np.testing.assert_allclose(host(got.detach()), want.numpy(), rtol=1e-12)
    got.sum().backward()
    assert x.grad.device.type == "cuda" and np.isfinite(host(x.grad)).all()
