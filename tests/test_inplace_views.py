"""In-place ops on views of tensors in a graph are recorded on the base (CopySlices),
as in PyTorch: the base's gradient skips the overwritten region, whose gradient flows
to the new values, and the view reads the new base."""

import numpy as np
import pytest

import gradcore as gc

from conftest import host, needs_torch


def _cases():
    def mul_row(m, x):
        y = x * 2
        y[0].mul_(3)
        return y

    def augmented_column(m, x):
        y = x * 2
        y[:, 1] += y[:, 0]        # __iadd__ on a view, then __setitem__ on the base
        return y

    def through_transpose(m, x):
        y = x * 1.5
        v = y.t() if m.__name__ == "torch" else y.T
        v[1].add_(x[0, 1] * 5)
        return y

    def setitem_on_view(m, x):
        y = x * 1
        v = y[1]
        v[0:2] = x[0, :2] ** 2
        return y * y

    def view_used_after(m, x):
        y = x * 1
        v = y[:, 1:]
        v.mul_(x[:, :2])
        return v * 3 + y.sum()

    return [mul_row, augmented_column, through_transpose, setitem_on_view, view_used_after]


@needs_torch
@pytest.mark.parametrize("fn", _cases(), ids=lambda f: f.__name__)
def test_matches_pytorch(fn):
    import torch

    results = []
    for m in (gc, torch):
        x = m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        y = fn(m, x)
        g = np.arange(1, 1 + y.numel(), dtype=np.float32).reshape(tuple(y.shape))
        y.backward(m.tensor(g))
        results.append((np.asarray(y.detach().tolist()), np.asarray(x.grad.tolist())))
    (gy, gx), (ty, tx) = results
    np.testing.assert_allclose(gy, ty, rtol=1e-6)
    np.testing.assert_allclose(gx, tx, rtol=1e-6)


def test_view_write_is_recorded_on_the_base(device):
    x = gc.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 1
    y[1].mul_(10)
    assert y.grad_fn.name() == "CopySlices"
    y.sum().backward()
    np.testing.assert_array_equal(host(x.grad), [[1.0, 1.0], [10.0, 10.0]])


def test_view_of_a_leaf_that_requires_grad_is_refused(device):
    x = gc.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        x[0].mul_(2)
