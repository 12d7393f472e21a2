"""Batch and group normalization against PyTorch, by finite differences, on both devices."""

import numpy as np
import pytest

import gradcore as gc
import gradcore.nn.functional as F
from gradcore.autograd import gradcheck, gradgradcheck

from conftest import PINNED_TORCH, host, needs_torch, pinned_torch_only


def _copy_into(ours, theirs):
    ours.load_state_dict({k: gc.tensor(v.numpy()) for k, v in theirs.state_dict().items()})


@needs_torch
@pytest.mark.parametrize("spec, shape", [
    ("BatchNorm2d(3)", (4, 3, 5, 6)), ("BatchNorm1d(4)", (6, 4)),
    ("BatchNorm1d(4, momentum=None)", (5, 4, 7)), ("BatchNorm2d(3, affine=False)", (2, 3, 4, 4)),
    ("BatchNorm2d(3, track_running_stats=False)", (2, 3, 4, 4)),
    pytest.param("BatchNorm2d(3, bias=False, momentum=0.3)", (2, 3, 4, 4),
                 marks=pinned_torch_only("PyTorch 2.11's BatchNorm takes no bias=")),
    ("BatchNorm3d(2)", (2, 2, 3, 3, 3)),
    ("GroupNorm(2, 4)", (3, 4, 5, 5)), ("GroupNorm(1, 3, affine=False, eps=1e-3)", (2, 3, 7)),
])
def test_training_then_eval_match_pytorch(spec, shape, device):
    import torch

    torch.manual_seed(0)
    theirs = eval("torch.nn." + spec).double()
    with torch.no_grad():
        for p in theirs.parameters():
            p.uniform_(0.5, 1.5)
    ours = eval("gc.nn." + spec).to(device=device, dtype=gc.float64)
    _copy_into(ours, theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    if PINNED_TORCH:  # (the norms print bias= from PyTorch 2.12 on)
        assert repr(ours) == repr(theirs)
    rng = np.random.default_rng(1)
    for mode in ("train", "train", "train", "eval"):
        ours.train(mode == "train")
        theirs.train(mode == "train")
        x = rng.standard_normal(shape) * 2 + 1
        gx, tx = gc.tensor(x, device=device, requires_grad=True), \
            torch.tensor(x, requires_grad=True)
        a, b = ours(gx), theirs(tx)
        np.testing.assert_allclose(host(a.detach()), b.detach().numpy(), rtol=1e-10, atol=1e-12)
        w = rng.standard_normal(shape)
        (a * gc.tensor(w, device=device)).sum().backward()
        (b * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(host(gx.grad), tx.grad.numpy(), rtol=1e-9, atol=1e-11)
        for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
            np.testing.assert_allclose(host(p.grad), q.grad.numpy(), rtol=1e-9, err_msg=name)
            p.grad, q.grad = None, None
        for (name, buf), tb in zip(ours.state_dict().items(), theirs.state_dict().values()):
            np.testing.assert_allclose(host(buf), tb.numpy(), rtol=1e-12, err_msg=name)


@pytest.mark.parametrize("fn", [
    lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
    lambda x, w, b: F.group_norm(x, 2, w, b),
])
def test_first_and_second_derivatives_by_finite_differences(fn):
    rng = np.random.default_rng(2)
    args = (gc.tensor(rng.standard_normal((3, 4, 2, 2)), requires_grad=True),
            gc.tensor(rng.uniform(0.5, 1.5, 4), requires_grad=True),
            gc.tensor(rng.standard_normal(4), requires_grad=True))
    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)


@needs_torch
def test_float16_is_computed_in_float32():
    import torch

    x = np.random.default_rng(3).standard_normal((4, 3, 5, 5)).astype(np.float16) * 3
    a = F.batch_norm(gc.tensor(x), None, None, training=True)
    b = torch.nn.functional.batch_norm(torch.tensor(x).float(), None, None,
                                       training=True).half()
    assert a.dtype == gc.float16
    np.testing.assert_allclose(host(a).astype(np.float32), b.float().numpy(), atol=2e-3)


def test_errors_as_pytorch():
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        gc.nn.BatchNorm1d(3)(gc.ones(1, 3))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        gc.nn.BatchNorm1d(3)(gc.ones(2, 3, 1, 1))
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        gc.nn.BatchNorm2d(3)(gc.ones(2, 3, 1))
    with pytest.raises(ValueError, match=r"num_channels \(3\) must be divisible by num_groups"):
        gc.nn.GroupNorm(2, 3)
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(gc.ones(2, 3, 4), 2)
    bn = gc.nn.BatchNorm2d(2)
    bn(gc.randn(3, 2, 2, 2))
    bn.reset_running_stats()
    assert host(bn.running_mean).tolist() == [0, 0] and bn.num_batches_tracked.item() == 0


def test_a_compiled_cnn_step_with_batch_norm_replays_as_eager():
    def make():
        gc.manual_seed(0)
        model = gc.nn.Sequential(gc.nn.Conv2d(1, 4, 3, padding=1), gc.nn.BatchNorm2d(4),
                                 gc.nn.ReLU(), gc.nn.MaxPool2d(2), gc.nn.Flatten(),
                                 gc.nn.Linear(16, 3))
        opt = gc.optim.Adam(model.parameters(), lr=0.01)
        x, y = gc.randn(5, 1, 4, 4), gc.tensor([0, 1, 2, 1, 0])

        def step():
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss
        return model, step

    (m1, eager), (m2, compiled) = make(), make()
    compiled = gc.compile(compiled, fullgraph=True)
    for _ in range(5):
        assert eager().item() == compiled().item()
    for (name, a), b in zip(m1.state_dict().items(), m2.state_dict().values()):
        np.testing.assert_array_equal(host(a), host(b), err_msg=name)


@needs_torch
def test_channel_dropout_zeroes_whole_channels(device):
    import torch

    assert repr(gc.nn.Dropout2d(0.3)) == repr(torch.nn.Dropout2d(0.3))
    gc.manual_seed(0)
    x = gc.ones(8, 6, 3, 3, device=device, requires_grad=True)
    y = gc.nn.Dropout2d(0.5)(x)
    values = host(y.detach())
    assert set(np.unique(values)) <= {0.0, 2.0} and 0 < (values == 0).mean() < 1
    assert (values.reshape(8, 6, -1).std(axis=2) == 0).all()  # one draw per channel
    y.sum().backward()
    np.testing.assert_array_equal(host(x.grad), values)
    z = gc.nn.functional.dropout1d(gc.ones(6, 5, device=device), 0.5)  # unbatched (C, L)
    assert (host(z).std(axis=1) == 0).all()
    x3 = gc.ones(2, 3, 4, device=device)
    assert gc.nn.Dropout1d(0.9).eval()(x3) is x3
    with pytest.raises(RuntimeError, match="Expected 2D or 3D input"):
        gc.nn.functional.dropout1d(gc.ones(5), 0.5)
    with pytest.warns(UserWarning, match="3D input to dropout2d"):
        gc.nn.functional.dropout2d(gc.ones(2, 3, 4), 0.5)


def _pair(rng, shape, device, dtype=np.float64, low=None):
    """The same values as a gradcore tensor on ``device`` and a torch tensor."""
    import torch

    a = rng.standard_normal(shape) if low is None else rng.uniform(low, low + 1, shape)
    a = a.astype(dtype)
    return (gc.tensor(a, device=device, requires_grad=True),
            torch.tensor(a, requires_grad=True))


@needs_torch
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-10), (np.float32, 2e-5)])
def test_functional_batch_norm_matches_pytorch(training, dtype, tol, device):
    import torch

    rng = np.random.default_rng(4)
    (x, tx), (w, tw), (b, tb) = (_pair(rng, (3, 4, 5), device, dtype),
                                 _pair(rng, (4,), device, dtype, 0.5),
                                 _pair(rng, (4,), device, dtype))
    (rm, trm), (rv, trv) = _pair(rng, (4,), device, dtype), _pair(rng, (4,), device, dtype, 0.5)
    for t in (rm, rv, trm, trv):
        t.requires_grad_(False)
    y = F.batch_norm(x, rm, rv, w, b, training, 0.3, 1e-3)
    ty = torch.nn.functional.batch_norm(tx, trm, trv, tw, tb, training, 0.3, 1e-3)
    assert y.grad_fn.name() == type(ty.grad_fn).__name__ == "NativeBatchNormBackward0"
    u = rng.standard_normal((3, 4, 5)).astype(dtype)
    (y * gc.tensor(u, device=device)).sum().backward()
    (ty * torch.tensor(u)).sum().backward()
    for ours, theirs in ((y.detach(), ty.detach()), (rm, trm), (rv, trv), (x.grad, tx.grad),
                         (w.grad, tw.grad), (b.grad, tb.grad)):
        assert ours.dtype == getattr(gc, str(theirs.dtype).split(".")[1])
        np.testing.assert_allclose(host(ours), theirs.numpy(), rtol=tol, atol=tol)


@needs_torch
def test_group_norm_matches_pytorch_with_its_node(device):
    import torch

    rng = np.random.default_rng(5)
    (x, tx), (w, tw), (b, tb) = (_pair(rng, (2, 6, 2, 3), device), _pair(rng, (6,), device),
                                 _pair(rng, (6,), device))
    y, ty = gc.group_norm(x, 3, w, b, 1e-4), torch.group_norm(tx, 3, tw, tb, 1e-4)
    assert y.grad_fn.name() == type(ty.grad_fn).__name__ == "NativeGroupNormBackward0"
    u = rng.standard_normal(x.shape)
    (y * gc.tensor(u, device=device)).sum().backward()
    (ty * torch.tensor(u)).sum().backward()
    for ours, theirs in ((y.detach(), ty.detach()), (x.grad, tx.grad), (w.grad, tw.grad),
                         (b.grad, tb.grad)):
        np.testing.assert_allclose(host(ours), theirs.numpy(), rtol=1e-10, atol=1e-12)
    x32 = gc.tensor(host(x.detach()).astype(np.float32), device=device)  # no affine: rows
    np.testing.assert_allclose(host(F.group_norm(x32, 2)), torch.nn.functional.group_norm(
        tx.detach().float(), 2).numpy(), rtol=1e-5, atol=1e-5)


def test_evaluation_derivatives_by_finite_differences():
    rng = np.random.default_rng(6)
    rm, rv = gc.tensor(rng.standard_normal(3)), gc.tensor(rng.uniform(0.5, 1.5, 3))
    args = (gc.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True),
            gc.tensor(rng.uniform(0.5, 1.5, 3), requires_grad=True),
            gc.tensor(rng.standard_normal(3), requires_grad=True))

    def fn(x, w, b):
        return F.batch_norm(x, rm, rv, w, b, training=False) ** 2

    before = host(rm).copy(), host(rv).copy()
    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)
    # evaluation reads the running statistics and leaves them as they were
    np.testing.assert_array_equal(host(rm), before[0])
    np.testing.assert_array_equal(host(rv), before[1])


@needs_torch
@pytest.mark.parametrize("momentum", [0.1, None])
def test_running_statistics_after_training_steps_then_eval(momentum, device):
    import torch

    ours = gc.nn.BatchNorm1d(3, momentum=momentum, device=device)
    theirs = torch.nn.BatchNorm1d(3, momentum=momentum)
    rng = np.random.default_rng(7)
    for _ in range(3):
        x = rng.standard_normal((5, 3)).astype(np.float32) * 3 + 2
        ours(gc.tensor(x, device=device))
        theirs(torch.tensor(x))
    assert ours.num_batches_tracked.dtype == gc.int64 and ours.num_batches_tracked.item() == 3
    ours.eval()
    theirs.eval()
    x = rng.standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_allclose(host(ours(gc.tensor(x, device=device))),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    for (k, a), (tk, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert k == tk and a.dtype == getattr(gc, str(b.dtype).split(".")[1])
        np.testing.assert_allclose(host(a), b.numpy(), rtol=1e-5, err_msg=k)
    plain = gc.nn.BatchNorm2d(2, track_running_stats=False).eval()
    assert plain.running_mean is None and list(plain.state_dict()) == ["weight", "bias"]
    y = plain(gc.tensor(rng.standard_normal((3, 2, 2, 2)), dtype=gc.float32))  # batch stats
    np.testing.assert_allclose(host(y).mean(axis=(0, 2, 3)), 0, atol=1e-6)  # (in eval)


@needs_torch
def test_float16_inputs_with_float32_parameters_as_pytorch():
    import torch

    rng = np.random.default_rng(8)
    x = (rng.standard_normal((4, 3, 5)) * 2).astype(np.float16)
    ours, theirs = gc.nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3)  # float32 parameters
    gx, tx = gc.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, ty = ours(gx), theirs(tx)
    assert y.dtype == gc.float16 and ours.running_mean.dtype == gc.float32
    np.testing.assert_allclose(host(y.detach()).astype(np.float32),
                               ty.detach().float().numpy(), atol=2e-3)
    y.float().sum().backward()
    ty.float().sum().backward()
    assert gx.grad.dtype == gc.float16 and ours.weight.grad.dtype == gc.float32
    np.testing.assert_allclose(host(ours.weight.grad), theirs.weight.grad.numpy(), atol=2e-3)
    np.testing.assert_allclose(host(ours.running_var), theirs.running_var.numpy(), rtol=1e-3)
    g = F.group_norm(gc.tensor(x), 3, gc.ones(3, dtype=gc.float16))
    tg = torch.nn.functional.group_norm(torch.tensor(x), 3, torch.ones(3).half())
    assert g.dtype == gc.float16
    np.testing.assert_allclose(host(g).astype(np.float32), tg.float().numpy(), atol=2e-3)


def test_functional_errors_as_pytorch():
    x = gc.ones(2, 3)
    cases = [
        (lambda: F.batch_norm(x, None, None), RuntimeError,
         "running_mean must be defined in evaluation mode"),
        (lambda: F.batch_norm(x, gc.zeros(3), None), RuntimeError,
         "running_var must be defined in evaluation mode"),
        (lambda: F.batch_norm(x, gc.zeros(4), gc.ones(4)), RuntimeError,
         "running_mean should contain 3 elements not 4"),
        (lambda: F.batch_norm(x, None, None, gc.ones(4), training=True), RuntimeError,
         "weight should contain 3 elements not 4"),
        (lambda: F.batch_norm(x, None, None, training=True, momentum=None), TypeError,
         "must be float, not NoneType"),
        (lambda: F.batch_norm(gc.ones(2, 3, dtype=gc.int64), None, None, training=True),
         NotImplementedError, "\"batch_norm\" not implemented for 'Long'"),
        (lambda: F.batch_norm(x.double(), None, None, gc.ones(3), training=True),
         RuntimeError, "mixed dtype"),
        (lambda: F.batch_norm(gc.ones(1, 3, 1), None, None, training=True), ValueError,
         r"got input size gradcore.Size\(\[1, 3, 1\]\)"),
        (lambda: F.group_norm(gc.ones(2, 4, 4), 2, gc.ones(3)), RuntimeError,
         r"Expected weight to be a vector of size equal to the number of channels in input, "
         r"but got weight of shape \[3\] and input of shape \[2, 4, 4\]"),
        (lambda: F.group_norm(gc.ones(3), 1), RuntimeError,
         "Expected at least 2 dimensions for input tensor but received 1"),
    ]
    for fn, error, message in cases:
        with pytest.raises(error, match=message):
            fn()
    assert F.batch_norm(gc.ones(0, 3), None, None, training=True).shape == (0, 3)


def test_torch_argument_order_of_gc_batch_norm():
    x = gc.tensor([[1.0, 2.0], [3.0, 6.0]])
    rm, rv = gc.zeros(2), gc.ones(2)
    y = gc.batch_norm(x, gc.tensor([2.0, 1.0]), None, rm, rv, True, 0.5, 0.0, True)
    assert host(y).tolist() == [[-2.0, -1.0], [2.0, 1.0]]
    assert host(rm).tolist() == [1.0, 2.0] and host(rv).tolist() == [1.5, 4.5]


@needs_torch
@pytest.mark.parametrize("spec, shape", [
    ("InstanceNorm1d(3, affine=True, track_running_stats=True, momentum=0.3)", (2, 3, 5)),
    ("InstanceNorm2d(2)", (2, 2, 3, 3)), ("InstanceNorm1d(4, affine=True)", (4, 6)),
])
def test_instance_norm_matches_pytorch(spec, shape, device):
    import torch

    theirs = eval("torch.nn." + spec).double()
    ours = eval("gc.nn." + spec).to(device=device, dtype=gc.float64)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    if PINNED_TORCH:  # (the norms print bias= from PyTorch 2.12 on)
        assert repr(ours) == repr(theirs)
    rng = np.random.default_rng(9)
    for mode in ("train", "train", "eval"):
        ours.train(mode == "train")
        theirs.train(mode == "train")
        (x, tx) = _pair(rng, shape, device)
        a, b = ours(x), theirs(tx)
        np.testing.assert_allclose(host(a.detach()), b.detach().numpy(), rtol=1e-10, atol=1e-12)
        u = rng.standard_normal(shape)
        (a * gc.tensor(u, device=device)).sum().backward()
        (b * torch.tensor(u)).sum().backward()
        np.testing.assert_allclose(host(x.grad), tx.grad.numpy(), rtol=1e-9, atol=1e-11)
        for p, q in zip(ours.parameters(), theirs.parameters()):
            np.testing.assert_allclose(host(p.grad), q.grad.numpy(), rtol=1e-9)
        for (k, buf), tb in zip(ours.state_dict().items(), theirs.state_dict().values()):
            np.testing.assert_allclose(host(buf), tb.numpy(), rtol=1e-12, err_msg=k)


def test_instance_norm_derivatives_and_errors():
    rng = np.random.default_rng(10)
    args = (gc.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True),
            gc.tensor(rng.uniform(0.5, 1.5, 3), requires_grad=True),
            gc.tensor(rng.standard_normal(3), requires_grad=True))
    fn = lambda x, w, b: F.instance_norm(x, weight=w, bias=b) ** 2  # noqa: E731
    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)
    with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
        F.instance_norm(gc.ones(2, 3, 1))
    with pytest.raises(RuntimeError, match="Expected running_mean and running_var to be defined"):
        F.instance_norm(gc.ones(2, 3, 4), use_input_stats=False)
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        gc.nn.InstanceNorm1d(3)(gc.ones(2, 3, 4, 5))
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match num_features "
                                         r"\(3\), but got: 4\."):
        gc.nn.InstanceNorm1d(3, affine=True)(gc.ones(2, 4, 5))
    with pytest.warns(UserWarning, match="does not match num_features"):
        gc.nn.InstanceNorm2d(3)(gc.ones(4, 5, 5))
