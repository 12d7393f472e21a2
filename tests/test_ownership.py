"""The engine overwrites gradient buffers in place only when nothing else can see them.

These cases would give wrong numbers if an in-place step (``Node.apply_owned``,
buffer accumulation, ``.grad`` taking the array) touched an array that a user, a
hook, a retained gradient or another leaf also holds.
"""

import numpy as np

import gradcore as gc

from conftest import host


def test_user_gradient_is_not_modified(device):
    x = gc.tensor([1.0, -2.0, 3.0], requires_grad=True)
    g = gc.tensor([0.5, 0.25, 2.0])
    (x * 2.0).tanh().backward(g)
    np.testing.assert_array_equal(host(g), [0.5, 0.25, 2.0])


def test_retained_grad_is_not_overwritten_by_later_steps(device):
    x = gc.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = x * 3.0              # its backward multiplies in place when it owns the grad
    y.retain_grad()
    z = y.tanh()
    z.sum().backward()
    t = np.tanh(host(y.detach()))
    np.testing.assert_allclose(host(y.grad), 1 - t * t, rtol=1e-6, atol=3e-7)  # tanh to 2 ulp
    np.testing.assert_allclose(host(x.grad), 3 * (1 - t * t), rtol=1e-6, atol=1e-6)


def test_hook_sees_and_keeps_its_own_gradient(device):
    x = gc.tensor([0.5, -1.0], requires_grad=True)
    seen = []
    y = x * 2.0
    y.register_hook(lambda g: seen.append(g))
    (y * 5.0).sum().backward()
    np.testing.assert_array_equal(host(seen[0]), [5.0, 5.0])
    np.testing.assert_array_equal(host(x.grad), [10.0, 10.0])


def test_two_leaves_sharing_one_gradient_get_separate_arrays(device):
    a = gc.tensor([1.0, 2.0], requires_grad=True)
    b = gc.tensor([3.0, 4.0], requires_grad=True)
    (a + b).sum().backward()
    a.grad._data[0] = 100.0   # writing one leaf's .grad must not reach the other
    np.testing.assert_array_equal(host(b.grad), [1.0, 1.0])


def test_fan_out_accumulates_correctly(device):
    x = gc.tensor([0.3, -0.7, 1.1], requires_grad=True)
    h = x.tanh()
    out = (h * 2.0 + h * 3.0 + h.exp() * h).sum()
    out.backward()
    t = np.tanh(host(x.detach()))
    expected = (5 + np.exp(t) * t + np.exp(t)) * (1 - t * t)
    np.testing.assert_allclose(host(x.grad), expected, rtol=1e-6)


def test_autograd_grad_results_are_not_reused(device):
    x = gc.tensor([0.5, 1.5], requires_grad=True)
    y = x * 4.0
    z = (y * 2.0).sum()
    gy, gx = gc.autograd.grad(z, [y, x])
    np.testing.assert_array_equal(host(gy), [2.0, 2.0])
    np.testing.assert_array_equal(host(gx), [8.0, 8.0])


def test_grad_accumulates_into_the_same_tensor(device):
    x = gc.tensor([1.0, 2.0], requires_grad=True)
    (x * 3.0).sum().backward()
    first = x.grad
    (x * 3.0).sum().backward()
    assert x.grad is first  # accumulated in place, as PyTorch does
    np.testing.assert_array_equal(host(x.grad), [6.0, 6.0])


def test_broadcast_gradient_from_sum_is_copied_into_grad(device):
    x = gc.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    x.sum().backward()          # the gradient is a read-only broadcast of one
    x.grad._data[0, 0] = 7.0     # .grad must be an ordinary writable array
    np.testing.assert_array_equal(host(x.grad), [[7.0, 1.0], [1.0, 1.0]])


def test_gradient_passed_through_add_and_sub_stays_correct(device):
    rng = np.random.default_rng(0)
    xv, wv, bv = rng.normal(size=(4, 3)), rng.normal(size=(3, 5)), rng.normal(size=5)
    x = gc.tensor(xv)
    w = gc.tensor(wv, requires_grad=True)
    b = gc.tensor(bv, requires_grad=True)
    h = (x @ w + b).relu()          # add passes its gradient to the matmul, sums it for b
    (h - 0.5 * h.sum(1, keepdim=True) + h).tanh().sum().backward()
    # the same computation by hand
    z = xv @ wv + bv
    hv = np.maximum(z, 0)
    u = hv - 0.5 * hv.sum(1, keepdims=True) + hv
    gu = 1 - np.tanh(u) ** 2
    gh = 2 * gu - 0.5 * gu.sum(1, keepdims=True)
    gz = gh * (z > 0)
    np.testing.assert_allclose(host(w.grad), xv.T @ gz, rtol=1e-12)
    np.testing.assert_allclose(host(b.grad), gz.sum(0), rtol=1e-12)


def test_tensor_added_to_itself_gets_both_gradients(device):
    x = gc.tensor([0.1, -0.2], dtype=gc.float64, requires_grad=True)
    h = x * 3.0
    (h + h).tanh().sum().backward()
    t = np.tanh(6 * np.array([0.1, -0.2]))
    np.testing.assert_allclose(host(x.grad), 6 * (1 - t * t), rtol=1e-12)
