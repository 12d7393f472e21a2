"""``Tensor.data`` is PyTorch's (issue 11, item 6): a tensor sharing the memory, outside
autograd, whose in-place changes reach the tensor without bumping its version counter;
``p.data = t`` makes ``p`` hold ``t``'s memory."""

import numpy as np
import pytest

import gradcore as gc

from conftest import host, needs_torch


def _makemore_steps(m, steps=3, lr=0.1):
    """The SGD loop of the makemore lectures: ``p.data += -lr * p.grad`` on leaves."""
    W = m.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
    b = m.tensor([0.1, -0.2], requires_grad=True)
    x = m.tensor([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]])
    losses = []
    for _ in range(steps):
        loss = ((x @ W + b).tanh() ** 2).mean()
        for p in (W, b):
            p.grad = None
        loss.backward()
        for p in (W, b):
            p.data += -lr * p.grad
        losses.append(loss.item())
    return losses, W, b


def test_makemore_sgd_step(device):
    losses, W, b = _makemore_steps(gc)
    for p in (W, b):
        assert type(p) is gc.Tensor and p.is_leaf and p.requires_grad
        assert p._version == 0  # the update went through .data: no version bump
        assert p.device == gc.device(device)
    assert losses[1] < losses[0] and losses[2] < losses[1]
    # further ops on the updated parameters work and see the new values
    W.grad = b.grad = None
    out = (W * 2).sum() + b.sum()
    out.backward()
    np.testing.assert_allclose(host(W.grad), np.full((2, 2), 2.0), rtol=1e-6)
    np.testing.assert_allclose(losses, [0.5897579, 0.5597662, 0.5343520], rtol=1e-5)


@needs_torch
def test_makemore_sgd_step_matches_pytorch():
    import torch

    (ours, W, b), (theirs, tW, tb) = _makemore_steps(gc), _makemore_steps(torch)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    np.testing.assert_allclose(host(W), tW.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(host(b), tb.detach().numpy(), rtol=1e-6)


def test_data_is_an_untracked_tensor_sharing_memory(device):
    x = gc.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    for t in (x, y, gc.nn.Parameter(gc.ones(2))):
        d = t.data
        assert type(d) is gc.Tensor  # also for a Parameter, as in PyTorch
        assert not d.requires_grad and d.grad_fn is None and d.is_leaf
        assert d.shape == t.shape and d.dtype == t.dtype and d.device == t.device
        d[0] = 7.0  # writes go to t's memory
        assert t[0].item() == 7.0
        assert t._version == 0


@pytest.mark.parametrize("how", ["normal_", "uniform_", "fill_", "copy_", "zero_", "mul_",
                                 "add_", "setitem"])
def test_in_place_through_data_changes_the_parameter(how, device):
    gc.manual_seed(0)
    p = gc.nn.Parameter(gc.ones(4))
    before = host(p).copy()
    d = p.data
    if how == "normal_":
        d.normal_()
    elif how == "uniform_":
        d.uniform_(-2.0, -1.0)
    elif how == "fill_":
        d.fill_(3.0)
    elif how == "copy_":
        d.copy_(gc.arange(4.0))
    elif how == "zero_":
        d.zero_()
    elif how == "mul_":
        d.mul_(5.0)
    elif how == "add_":
        d.add_(gc.tensor([1.0, 2.0, 3.0, 4.0]))
    else:
        d[1:3] = 9.0
    after = host(p)
    expected = {"fill_": [3.0] * 4, "copy_": [0.0, 1.0, 2.0, 3.0], "zero_": [0.0] * 4,
                "mul_": [5.0] * 4, "add_": [2.0, 3.0, 4.0, 5.0], "setitem": [1, 9, 9, 1]}
    if how in expected:
        np.testing.assert_array_equal(after, expected[how])
    elif how == "uniform_":
        assert ((after >= -2.0) & (after < -1.0)).all()
    else:
        assert not np.array_equal(after, before) and np.isfinite(after).all()
    assert p._version == 0 and p.requires_grad and p.is_leaf and p.grad_fn is None
    assert isinstance(p, gc.nn.Parameter)


def test_graph_that_saved_p_uses_the_new_values(device):
    # as in PyTorch: .data escapes the version check, so backward reads the new values
    w = gc.tensor([1.0, 2.0, 3.0], requires_grad=True)
    z = (w * w).sum()
    w.data.mul_(2)
    z.backward()
    np.testing.assert_array_equal(host(w.grad), [4.0, 8.0, 12.0])
    # through detach() the version is shared, and backward refuses
    w = gc.tensor([1.0, 2.0, 3.0], requires_grad=True)
    z = (w * w).sum()
    w.detach().mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


@needs_torch
def test_graph_that_saved_p_matches_pytorch():
    import torch

    grads = []
    for m in (gc, torch):
        w = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        x = w * 1
        z = (x * w).sum()
        w.data.mul_(2)
        z.backward()
        grads.append((w.grad.tolist(), w._version))
    assert grads[0] == grads[1] == ([3.0, 6.0, 9.0], 0)  # x saved the old w, w*x the new


def test_assigning_data_swaps_the_storage(device):
    p = gc.nn.Parameter(gc.ones(3))
    t = gc.zeros(2, 2, dtype=gc.float64)
    p.data = t
    assert p.shape == (2, 2) and p.dtype == gc.float64
    assert p.requires_grad and p.is_leaf and isinstance(p, gc.nn.Parameter)
    t.add_(1.0)  # the same memory
    np.testing.assert_array_equal(host(p), np.ones((2, 2)))
    (p * 2).sum().backward()
    assert p.grad.dtype == gc.float64
    np.testing.assert_array_equal(host(p.grad), np.full((2, 2), 2.0))
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got "
                                        "numpy.ndarray"):
        p.data = np.zeros(3)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got int"):
        p.data = 3


def test_optimizer_step_on_data_leaves_version_alone(device):
    lin = gc.nn.Linear(3, 2)
    out = lin(gc.ones(4, 3)).sum()
    out.backward()
    for p in lin.parameters():
        version = p._version  # (1: the initializers wrote in place, as in PyTorch)
        p.data.add_(p.grad, alpha=-0.1)
        assert p._version == version
    out2 = lin(gc.ones(4, 3)).sum()
    assert out2.item() < out.item()
