"""Batch and group normalization against PyTorch, by finite differences, on both devices."""

import numpy as np
import pytest

import gradcore as gc
import gradcore.nn.functional as F
from gradcore.autograd import gradcheck, gradgradcheck

from conftest import host, needs_torch


def _copy_into(ours, theirs):
    ours.load_state_dict({k: gc.tensor(v.numpy()) for k, v in theirs.state_dict().items()})


@needs_torch
@pytest.mark.parametrize("spec, shape", [
    ("BatchNorm2d(3)", (4, 3, 5, 6)), ("BatchNorm1d(4)", (6, 4)),
    ("BatchNorm1d(4, momentum=None)", (5, 4, 7)), ("BatchNorm2d(3, affine=False)", (2, 3, 4, 4)),
    ("BatchNorm2d(3, track_running_stats=False)", (2, 3, 4, 4)),
    ("BatchNorm2d(3, bias=False, momentum=0.3)", (2, 3, 4, 4)),
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
    assert repr(ours) == repr(theirs) and list(ours.state_dict()) == list(theirs.state_dict())
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
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
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
