"""The users' own examples (``shared/seeds/``), with the numbers they printed.

Seeds 000, 001 and 004 are PyTorch notebooks, 003 a blog post about a toy engine and
002 a book chapter: each test below replays one cell (named in its docstring) with
gradcore and asserts what the seed printed, repr strings included (gradcore prints
``gradcore.float16`` where PyTorch prints ``torch.float16``).  Cells that drew their
inputs from ``torch.randn`` are replayed with fixed inputs and checked against the
formula the cell demonstrates.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradcore as gc

from conftest import host

# The seeds are CPU printouts: on CUDA a tensor's repr adds its device, so these
# examples run on the CPU whatever GRADCORE_TEST_DEVICES asks for (the same
# computations run on every device in the other suites).
TEST_DEVICES = ("cpu",)


def _rand(shape, seed):
    """Fixed "random" float32 inputs standing in for a seed's torch.randn."""
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ----------------------------------------------------------------------------------------
# seed 000: matmul, a half() cast, retain_grad, 1-D and batched matmul gradients
# ----------------------------------------------------------------------------------------
def test_seed000_arange_reshape_float_repr(device):
    """In [2]-[3]: a = arange(1, 13, 1).reshape(3, 4).float()."""
    a = gc.arange(1, 13, 1).reshape(3, 4).float()
    assert a.dtype == gc.float32
    assert repr(a) == ("tensor([[ 1.,  2.,  3.,  4.],\n"
                       "        [ 5.,  6.,  7.,  8.],\n"
                       "        [ 9., 10., 11., 12.]])")


def test_seed000_matmul_sum_grads(device):
    """In [3]: d = (a @ b).sum(); d.backward(); print(a.grad, b.grad)."""
    a = gc.arange(1, 13, 1).reshape(3, 4).float()
    b = gc.arange(1, 13, 1).reshape(4, 3).float()
    a.requires_grad = True
    b.requires_grad = True
    c = a @ b
    d = c.sum()
    d.backward()
    assert repr(a.grad) == ("tensor([[ 6., 15., 24., 33.],\n"
                            "        [ 6., 15., 24., 33.],\n"
                            "        [ 6., 15., 24., 33.]])")
    assert repr(b.grad) == ("tensor([[15., 15., 15.],\n"
                            "        [18., 18., 18.],\n"
                            "        [21., 21., 21.],\n"
                            "        [24., 24., 24.]])")
    # print(a.grad, b.grad) prints the same text as repr
    assert str(a.grad) == repr(a.grad)


def test_seed000_half_cast_reprs_and_grad_reaches_float32(device):
    """In [6]-[8]: two half() copies of a float32 leaf, added, summed, backward."""
    a = gc.arange(1, 13, 1).reshape(3, 4).float()
    a.requires_grad = True
    d = a.half()
    k = a.half()
    e = d + k
    f = e.sum()
    assert repr(a) == ("tensor([[ 1.,  2.,  3.,  4.],\n"
                       "        [ 5.,  6.,  7.,  8.],\n"
                       "        [ 9., 10., 11., 12.]], requires_grad=True)")
    # PyTorch prints "dtype=torch.float16, grad_fn=<ToCopyBackward0>)" on one line (78
    # columns); "gradcore." is three characters longer than "torch.", which takes the line
    # past PyTorch's 80-column rule, so the grad_fn suffix goes to its own line (the same
    # rule PyTorch applies: see test_repr.py).
    half_copy = ("tensor([[ 1.,  2.,  3.,  4.],\n"
                 "        [ 5.,  6.,  7.,  8.],\n"
                 "        [ 9., 10., 11., 12.]], dtype=gradcore.float16,\n"
                 "       grad_fn=<ToCopyBackward0>)")
    assert repr(d) == half_copy
    assert repr(k) == half_copy
    assert repr(e) == ("tensor([[ 2.,  4.,  6.,  8.],\n"
                       "        [10., 12., 14., 16.],\n"
                       "        [18., 20., 22., 24.]], dtype=gradcore.float16, "
                       "grad_fn=<AddBackward0>)")
    assert repr(f) == "tensor(156., dtype=gradcore.float16, grad_fn=<SumBackward0>)"
    f.backward()
    # the gradient flows back through both casts and arrives as float32
    assert a.grad.dtype == gc.float32
    assert repr(a.grad) == ("tensor([[2., 2., 2., 2.],\n"
                            "        [2., 2., 2., 2.],\n"
                            "        [2., 2., 2., 2.]])")


def test_seed000_sum_repr_and_attribute_assignment(device):
    """In [9]-[10]: print(x, y); ``y.retain_grad = True`` (an attribute); backward."""
    x = gc.tensor([[1., 2.], [3., 4.]], requires_grad=True)
    y = x.sum()
    assert str(x) == ("tensor([[1., 2.],\n"
                      "        [3., 4.]], requires_grad=True)")
    assert str(y) == "tensor(10., grad_fn=<SumBackward0>)"
    # The seed assigns to retain_grad instead of calling it: a plain attribute write on
    # the instance, which must not break anything (y.grad stays unset, as in PyTorch).
    y.retain_grad = True
    assert y.retain_grad is True
    y.backward()
    assert repr(x.grad) == ("tensor([[1., 1.],\n"
                            "        [1., 1.]])")
    assert y.grad is None


def test_seed000_numpy_broadcast_add():
    """In [12]-[13]: the NumPy cell, replayed with a gradcore int64 tensor."""
    a = gc.tensor(np.arange(1, 13, 1).reshape(3, 4))
    b = a + 1
    assert b.dtype == gc.int64
    np.testing.assert_array_equal(host(b), np.array([[2, 3, 4, 5], [6, 7, 8, 9],
                                                     [10, 11, 12, 13]]))
    assert repr(b) == ("tensor([[ 2,  3,  4,  5],\n"
                       "        [ 6,  7,  8,  9],\n"
                       "        [10, 11, 12, 13]])")


def test_seed000_retain_grad_on_intermediates(device):
    """In [124]: (1, 3) @ (3, 2), c.retain_grad(), d.retain_grad(), shapes and grads."""
    a = gc.arange(1, 4, 1).reshape(1, 3).float()
    a.requires_grad = True
    b = gc.arange(1, 7, 1).reshape(3, 2).float()
    b.requires_grad = True
    c = a @ b
    c.retain_grad()
    assert (a.shape, b.shape, c.shape) == ((1, 3), (3, 2), (1, 2))
    d = c.sum()
    d.retain_grad()
    d.backward()
    assert repr(a.grad) == "tensor([[ 3.,  7., 11.]])"
    assert repr(b.grad) == ("tensor([[1., 1.],\n"
                            "        [2., 2.],\n"
                            "        [3., 3.]])")
    assert c.grad.shape == (1, 2)
    assert d.grad.shape == ()
    assert repr(c.grad) == "tensor([[1., 1.]])"
    assert repr(d.grad) == "tensor(1.)"


def _broadcast_axis(left, right):
    """The seed's helper: which batch axes each matmul operand was broadcast along."""
    maxdim = max(len(left), len(right))
    lshape = (1,) * (maxdim - len(left)) + left
    rshape = (1,) * (maxdim - len(right)) + right
    left_axes, right_axes = [], []
    for i in range(maxdim):
        if lshape[i] > rshape[i]:
            right_axes.append(i)
        elif rshape[i] > lshape[i]:
            left_axes.append(i)
    return tuple(left_axes), tuple(right_axes)


def _seed_matmul_grads(an, bn, cn):
    """In [125]: the seed's NumPy formula for the gradients of a batched/1-D matmul."""
    aa = (0,) if an.ndim == 1 else ()
    ba = (-1,) if bn.ndim == 1 else ()
    resa = aa + ba
    left, right = _broadcast_axis(an.shape[:-2], bn.shape[:-2])
    a_grad = np.reshape(np.sum(np.expand_dims(cn, resa)
                               @ np.expand_dims(bn, ba).swapaxes(-1, -2), axis=left), an.shape)
    b_grad = np.reshape(np.sum(np.expand_dims(an, aa).swapaxes(-1, -2)
                               @ np.expand_dims(cn, resa), axis=right), bn.shape)
    return a_grad, b_grad


def test_seed000_numpy_formula_matches_autograd(device):
    """In [125]: the seed's NumPy formula reproduces the gradients of In [124]."""
    a = gc.arange(1, 4, 1).reshape(1, 3).float().requires_grad_()
    b = gc.arange(1, 7, 1).reshape(3, 2).float().requires_grad_()
    c = a @ b
    c.retain_grad()
    c.sum().backward()
    an, bn, cn = host(a.detach()), host(b.detach()), host(c.grad)
    assert _broadcast_axis(an.shape[:-2], bn.shape[:-2]) == ((), ())
    a_grad, b_grad = _seed_matmul_grads(an, bn, cn)
    np.testing.assert_array_equal(a_grad, [[3., 7., 11.]])
    np.testing.assert_array_equal(b_grad, [[1., 1.], [2., 2.], [3., 3.]])
    np.testing.assert_array_equal(host(a.grad), a_grad)
    np.testing.assert_array_equal(host(b.grad), b_grad)


def test_seed000_broadcast_axis_docstring_example():
    """The docstring of the seed's broadcast_axis: (3, 1) with (1, 4) gives ((1,), (0,))."""
    assert _broadcast_axis((3, 1), (1, 4)) == ((1,), (0,))


@pytest.mark.parametrize("a_shape,b_shape", [
    ((3,), (3,)), ((3,), (3, 2)), ((2, 3), (3,)), ((4, 2, 3), (3, 5)),
    ((2, 3), (4, 3, 5)), ((2, 1, 2, 3), (3, 3, 2)), ((2, 4, 3), (3,)),
    # not (3,) @ (2, 3, 4): the seed's formula does not sum a 1-D operand's gradient over
    # the batch (it fails to reshape); the op table tests cover that case
])
def test_seed000_matmul_grads_1d_and_batched(device, a_shape, b_shape):
    """The seed's last cells generalised: 1-D and broadcast batched matmul gradients
    equal the seed's NumPy formula, with a non-uniform upstream gradient."""
    an = _rand(a_shape, 1)
    bn = _rand(b_shape, 2)
    a = gc.tensor(an, requires_grad=True)
    b = gc.tensor(bn, requires_grad=True)
    c = a @ b
    cn = _rand(c.shape, 3)
    c.backward(gc.tensor(cn))
    a_grad, b_grad = _seed_matmul_grads(an.astype(np.float64), bn.astype(np.float64),
                                        cn.astype(np.float64))
    assert a.grad.shape == a_shape and b.grad.shape == b_shape
    np.testing.assert_allclose(host(a.grad), a_grad, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(host(b.grad), b_grad, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------------------
# seed 001: hand-derived gradients compared with autograd
# ----------------------------------------------------------------------------------------
def test_seed001_dot_grads(device):
    """In [41]-[44]: c = a @ b of two vectors: dc/da = b, dc/db = a."""
    a = gc.tensor([1.0, 2, 3], requires_grad=True)
    b = gc.tensor([5.0, 4, 3], requires_grad=True)
    c = a @ b
    c.backward()
    assert (repr(a.grad), repr(b.grad)) == ("tensor([5., 4., 3.])", "tensor([1., 2., 3.])")
    a_grad, b_grad = b, a
    assert repr(a_grad) == "tensor([5., 4., 3.], requires_grad=True)"
    assert repr(b_grad) == "tensor([1., 2., 3.], requires_grad=True)"


def test_seed001_finite_difference_of_dot(device):
    """In [47]: (c2 - c1) / h with h = 0.001 prints 12.0010 with a DivBackward0."""
    a = gc.tensor([1.0, 2, 3], requires_grad=True)
    b = gc.tensor([5.0, 4, 3], requires_grad=True)
    h = 0.001
    c1 = a @ b
    c2 = (a + h) @ b
    assert repr((c2 - c1) / h) == "tensor(12.0010, grad_fn=<DivBackward0>)"


def test_seed001_matrix_vector_grads(device):
    """In [57]-[58]: (2, 3) @ (3,), summed; the hand-derived grads print grad_fns."""
    a = gc.tensor([[1.0, 2, 3], [1.0, 5, 4]], requires_grad=True)
    b = gc.tensor([5.0, 4, 7], requires_grad=True)
    c = a @ b
    d = c.sum()
    d.backward()
    assert repr(a.grad) == ("tensor([[5., 4., 7.],\n"
                            "        [5., 4., 7.]])")
    assert repr(b.grad) == "tensor([2., 7., 7.])"
    a_grad = gc.zeros_like(a)
    assert not a_grad.requires_grad  # zeros_like does not copy requires_grad
    a_grad = a_grad + b
    b_grad = a.sum(axis=0)
    assert repr(a_grad) == ("tensor([[5., 4., 7.],\n"
                            "        [5., 4., 7.]], grad_fn=<AddBackward0>)")
    assert repr(b_grad) == "tensor([2., 7., 7.], grad_fn=<SumBackward1>)"


def test_seed001_matrix_matrix_grads(device):
    """In [98]: (2, 3) @ (3, 2), summed."""
    a = gc.tensor([[1.0, 2, 3], [1.0, 5, 4]], requires_grad=True)
    b = gc.tensor([[5.0, 4], [7.0, 4], [5.0, 2]], requires_grad=True)
    (a @ b).sum().backward()
    assert repr(a.grad) == ("tensor([[ 9., 11.,  7.],\n"
                            "        [ 9., 11.,  7.]])")
    assert repr(b.grad) == ("tensor([[2., 2.],\n"
                            "        [7., 7.],\n"
                            "        [7., 7.]])")


def test_seed001_matmul_grad_formula(device):
    """In [112]-[115] (randn inputs of shapes (3, 4) and (4, 2)): a.grad is b's row sums
    broadcast over a's rows, b.grad is a's column sums broadcast over b's columns."""
    a = gc.tensor(_rand((3, 4), 10), requires_grad=True)
    b = gc.tensor(_rand((4, 2), 11), requires_grad=True)
    (a @ b).sum().backward()
    a_grad = gc.zeros_like(a) + b.sum(axis=1)
    b_grad = gc.zeros_like(b) + a.sum(axis=0).reshape(4, 1)
    assert a_grad.grad_fn.name() == "AddBackward0"
    assert b_grad.grad_fn.name() == "AddBackward0"
    np.testing.assert_allclose(host(a.grad), host(a_grad.detach()), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(host(b.grad), host(b_grad.detach()), rtol=1e-6, atol=1e-6)
    assert a.sum(axis=0).reshape(4, 1).shape == (4, 1)


def test_seed001_log_of_product_retained_grads(device):
    """In [163]-[166]: d = log(a * b) with retained c.grad and d.grad."""
    a = gc.tensor([2.0], requires_grad=True)
    b = gc.tensor([5.0], requires_grad=True)
    c = a * b
    d = gc.log(c)
    assert (c.retain_grad(), d.retain_grad()) == (None, None)
    d.backward()
    assert " ".join(str(t) for t in (a.grad, b.grad, c.grad, d.grad)) == \
        "tensor([0.5000]) tensor([0.2000]) tensor([0.1000]) tensor([1.])"
    assert repr(c.grad * b) == "tensor([0.5000], grad_fn=<MulBackward0>)"


def test_seed001_tanh_of_product_formula(device):
    """In [160]-[172] (randn inputs): probs = counts * counts_sum_inv, s = tanh(probs).sum():
    probs.grad = 1 - tanh(probs)**2, counts.grad = probs.grad * counts_sum_inv,
    counts_sum_inv.grad = (counts * probs.grad).sum(axis=1)."""
    counts = gc.tensor(_rand((7, 3), 20), requires_grad=True)
    counts_sum_inv = gc.tensor(_rand((7, 1), 21), requires_grad=True)
    probs = counts * counts_sum_inv
    probs.retain_grad()
    s = gc.tanh(probs).sum()
    s.backward()
    p = host(probs.detach()).astype(np.float64)
    cn = host(counts.detach()).astype(np.float64)
    ci = host(counts_sum_inv.detach()).astype(np.float64)
    dp = 1 - np.tanh(p) ** 2
    np.testing.assert_allclose(host(probs.grad), dp, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(host(counts.grad), dp * ci, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(host(counts_sum_inv.grad), (cn * dp).sum(axis=1, keepdims=True),
                               rtol=1e-5, atol=1e-6)
    by_hand = (counts * probs.grad).sum(axis=1)
    assert by_hand.shape == (7,)
    assert by_hand.grad_fn.name() == "SumBackward1"
    np.testing.assert_allclose(host(by_hand.detach()), host(counts_sum_inv.grad).reshape(7),
                               rtol=1e-5, atol=1e-6)
    other = counts.sum(axis=1).reshape(7, 1) + probs.grad.sum(axis=1).reshape(7, 1)
    assert other.shape == (7, 1) and other.grad_fn.name() == "AddBackward0"
    assert (counts.shape, probs.grad.shape) == ((7, 3), (7, 3))


def test_seed001_product_retained_grad(device):
    """In [175]-[176]: c = a * b retained, d = c.sum(): c.grad is ones, a.grad is b."""
    a = gc.tensor(_rand((4, 3), 30), requires_grad=True)
    b = gc.tensor(_rand((4, 3), 31), requires_grad=True)
    c = a * b
    c.retain_grad()
    d = c.sum()
    d.backward()
    np.testing.assert_array_equal(host(c.grad), np.ones((4, 3), np.float32))
    np.testing.assert_array_equal(host(a.grad), host(b.detach()))
    np.testing.assert_array_equal(host(b.grad), host(a.detach()))


def test_seed001_exp_grads(device):
    """In [216]-[220]: c = exp(a) (the cell that made c is not shown; the printed grads
    are exp(3), ..., exp(6)), c.grad is ones and (c * a) / a prints c again."""
    a = gc.tensor([3.0, 4.0, 5.0, 6.0], requires_grad=True)
    c = gc.exp(a)
    c.retain_grad()
    d = c.sum()
    d.backward()
    assert repr(a.grad) == "tensor([ 20.0855,  54.5981, 148.4132, 403.4288])"
    assert repr((c * a) / a) == ("tensor([ 20.0855,  54.5981, 148.4132, 403.4288], "
                                 "grad_fn=<DivBackward0>)")
    assert repr(c.grad) == "tensor([1., 1., 1., 1.])"


def test_seed001_reciprocal_grads(device):
    """In [189]-[192]: c = a ** -1 gives a.grad = -1 / a**2 (sympy's answer)."""
    a = gc.tensor([3.0, 4.0, 5.0, 6.0], requires_grad=True)
    c = a ** -1
    c.retain_grad()
    c.sum().backward()
    assert (repr(c.grad), repr(a.grad)) == ("tensor([1., 1., 1., 1.])",
                                            "tensor([-0.1111, -0.0625, -0.0400, -0.0278])")
    # PyTorch computes `scalar / tensor` as reciprocal(tensor) * scalar: a MulBackward0
    assert repr(-1 / (a ** 2)) == ("tensor([-0.1111, -0.0625, -0.0400, -0.0278], "
                                   "grad_fn=<MulBackward0>)")


def test_seed001_square_of_row_sums(device):
    """In [211]-[213] (randn (10, 5)): c = square(a.sum(axis=1)).sum(): b.grad = 2 b and
    every row of a.grad repeats its b.grad."""
    a = gc.tensor(_rand((10, 5), 40), requires_grad=True)
    b = a.sum(axis=1)
    b.retain_grad()
    c = gc.square(b).sum()
    c.backward()
    bn = host(b.detach())
    np.testing.assert_allclose(host(b.grad), 2 * bn, rtol=1e-6)
    np.testing.assert_allclose(host(a.grad), np.repeat(2 * bn[:, None], 5, axis=1), rtol=1e-6)
    assert a.shape == (10, 5)


def test_seed001_max_keepdim_grad_and_index_assignment(device):
    """In [225]-[239]: max(axis=1, keepdim=True).values sends the gradient to the argmax;
    the hand-made gradient is built with a_grad[range(4), indices] = 4."""
    a = gc.tensor([[2.0, 0.5, -1.0, 1.0, 0.0],
                   [1.5, -0.3, 0.2, 1.0, 0.9],
                   [-1.0, 0.0, 0.3, 2.2, 1.1],
                   [0.7, 0.1, -0.5, 0.6, 0.65]], requires_grad=True)
    b = a.max(axis=1, keepdim=True).values
    b.retain_grad()
    c = b.sum()
    c.backward()
    assert repr(a.grad) == ("tensor([[1., 0., 0., 0., 0.],\n"
                            "        [1., 0., 0., 0., 0.],\n"
                            "        [0., 0., 0., 1., 0.],\n"
                            "        [1., 0., 0., 0., 0.]])")
    assert repr(b.grad) == ("tensor([[1.],\n"
                            "        [1.],\n"
                            "        [1.],\n"
                            "        [1.]])")
    a_grad = gc.zeros_like(a)
    assert repr(a_grad) == ("tensor([[0., 0., 0., 0., 0.],\n"
                            "        [0., 0., 0., 0., 0.],\n"
                            "        [0., 0., 0., 0., 0.],\n"
                            "        [0., 0., 0., 0., 0.]])")
    indices = a.max(dim=1).indices
    assert repr(indices) == "tensor([0, 0, 3, 0])"
    a_grad[range(4), a.max(dim=1).indices] = 4
    assert repr(a_grad) == ("tensor([[4., 0., 0., 0., 0.],\n"
                            "        [4., 0., 0., 0., 0.],\n"
                            "        [0., 0., 0., 4., 0.],\n"
                            "        [4., 0., 0., 0., 0.]])")


def test_seed001_output_layer_and_inplace_accumulation(device):
    """In [291]-[325] (randn inputs): logits = h @ W2 + b2, y = logits.square().sum();
    h.grad = 2 logits @ W2.T; ``dh += tracked`` makes the untracked dh tracked."""
    h = gc.tensor(_rand((4, 8), 50), requires_grad=True)
    W2 = gc.tensor(_rand((8, 3), 51), requires_grad=True)
    b2 = gc.tensor(_rand((3,), 52), requires_grad=True)
    logits = h @ W2 + b2
    logits.retain_grad()
    x = logits.square()
    y = x.sum()
    y.backward()
    assert logits.grad.shape == (4, 3)
    ln = host(logits.detach()).astype(np.float64)
    wn = host(W2.detach()).astype(np.float64)
    np.testing.assert_allclose(host(logits.grad), 2 * ln, rtol=1e-5)
    np.testing.assert_allclose(host(h.grad), (2 * ln) @ wn.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(host(W2.grad), host(h.detach()).T @ (2 * ln), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(host(b2.grad), (2 * ln).sum(axis=0), rtol=1e-5, atol=1e-5)

    dh = gc.zeros_like(h)
    assert not dh.requires_grad
    dh += W2.sum(axis=1)
    assert dh.requires_grad and dh.grad_fn.name() == "AddBackward0"
    assert logits.sum(axis=1).shape == (4,)
    assert dh.shape == (4, 8)
    dh += logits.sum(axis=1).reshape(-1, 1)
    assert dh.grad_fn.name() == "AddBackward0"
    expected = wn.sum(axis=1)[None, :] + ln.sum(axis=1)[:, None]
    np.testing.assert_allclose(host(dh.detach()), expected, rtol=1e-5, atol=1e-5)
    assert repr(dh).endswith("grad_fn=<AddBackward0>)")


# ----------------------------------------------------------------------------------------
# seed 003: undoing broadcasting, and pruning nodes nobody needs
# ----------------------------------------------------------------------------------------
def test_seed003_broadcast_grad_is_summed(device):
    """x = [1, 2, 3], y = [4], z = x * y, backward(ones): y.grad is [6.], not [1, 2, 3]."""
    x = gc.tensor([1., 2., 3.], requires_grad=True)
    y = gc.tensor([4.], requires_grad=True)
    z = x * y
    z.backward(gc.ones(z.shape))
    assert repr(x.grad) == "tensor([4., 4., 4.])"
    assert repr(y.grad) == "tensor([6.])"
    assert y.grad.shape == y.shape


def test_seed003_ints_print_without_dot(device):
    """The post prints its integer inputs as ``tensor([1 2 3])`` (its own toy repr);
    gradcore prints int64 tensors the PyTorch way."""
    x = gc.tensor([1, 2, 3])
    y = gc.tensor([4])
    assert repr(x) == "tensor([1, 2, 3])"
    assert repr(x * y) == "tensor([ 4,  8, 12])"


def test_seed003_pruning_records_no_node(device):
    """Inputs that need no gradient: the op records no node and backward reaches no one."""
    x = gc.tensor([1., 2., 3.])
    y = gc.tensor([4.])
    z = x * y
    assert z.grad_fn is None
    assert not z.requires_grad and z.is_leaf
    with pytest.raises(RuntimeError, match="does not require grad"):
        z.backward(gc.ones(z.shape))
    assert x.grad is None and y.grad is None

    # with requires_grad the same code records the node and both gradients arrive
    x = gc.tensor([1., 2., 3.], requires_grad=True)
    y = gc.tensor([4.], requires_grad=True)
    z = x * y
    assert z.grad_fn is not None and z.grad_fn.name() == "MulBackward0"
    z.backward(gc.ones(z.shape))
    assert repr(x.grad) == "tensor([4., 4., 4.])"
    assert repr(y.grad) == "tensor([6.])"


def test_seed003_pruning_only_one_side(device):
    """Only the side that needs a gradient gets an edge; the other edge is empty."""
    x = gc.tensor([1., 2., 3.])
    y = gc.tensor([4.], requires_grad=True)
    z = x * y
    assert z.grad_fn.next_functions[0][0] is None
    assert z.grad_fn.next_functions[1][0] is not None
    z.sum().backward()
    assert x.grad is None
    assert repr(y.grad) == "tensor([6.])"


# ----------------------------------------------------------------------------------------
# seed 004: mm gradients checked against hand-derived formulas
# ----------------------------------------------------------------------------------------
def test_seed004_legacy_constructor_and_indexing(device):
    """In [2]: x = Tensor(2); loss = 13 x[0] + 7 x[1] + 1 gives grad [13., 7.].
    (PyTorch's Tensor(2) is uninitialized memory; gradcore's is zeros.)"""
    x = gc.Tensor(2)
    assert x.shape == (2,) and x.dtype == gc.float32
    x.requires_grad = True
    loss = 13 * x[0] + 7 * x[1] + 1
    loss.backward()
    assert repr(x.grad) == "tensor([13.,  7.])"
    assert str(x).endswith(", requires_grad=True)")


def test_seed004_mm_grad_independent_of_x(device):
    """In [3]: loss = y.mm(x).sum() with x = randn(2, 3): x.grad is y's column sums."""
    x = gc.tensor(_rand((2, 3), 60), requires_grad=True)
    y = gc.Tensor([[1, 2], [3, 4]])
    assert y.dtype == gc.float32
    loss = y.mm(x)
    loss = loss.sum()
    loss.backward()
    assert repr(x.grad) == ("tensor([[4., 4., 4.],\n"
                            "        [6., 6., 6.]])")


def _seed004_xy():
    x = gc.Tensor([[7, 6, 5, 9],
                   [4, 3, 2, 8]])
    x.requires_grad = True
    y = gc.Tensor([[1, 2], [3, 4], [5, 6]])
    y.requires_grad = True
    loss = y.mm(x)
    loss = loss.sum()
    loss.backward()
    return x, y


def test_seed004_mm_grads(device):
    """In [113]-[109]: y.grad, and (y @ x).sum() == (x.grad * x).sum()."""
    x, y = _seed004_xy()
    assert repr(y.grad) == ("tensor([[27., 17.],\n"
                            "        [27., 17.],\n"
                            "        [27., 17.]])")
    assert (True if (y @ x).sum() == (x.grad * x).sum() else False) is True


def test_seed004_hand_derived_grads_with_T(device):
    """In [123]-[128]: the hand-derived gradients (transposed with .T) equal x.grad, y.grad."""
    x, y = _seed004_xy()
    x_grad = (gc.ones([x.shape[1], 1]) @ y.sum(dim=0, keepdim=True)).T
    assert repr(x_grad) == ("tensor([[ 9.,  9.,  9.,  9.],\n"
                            "        [12., 12., 12., 12.]], grad_fn=<PermuteBackward0>)")
    y_grad = (x.sum(dim=1, keepdim=True) @ gc.ones([1, y.shape[0]])).T
    assert repr(y_grad) == ("tensor([[27., 17.],\n"
                            "        [27., 17.],\n"
                            "        [27., 17.]], grad_fn=<PermuteBackward0>)")
    assert x.grad.equal(x_grad)
    assert y.grad.equal(y_grad)


def _seed004_chain():
    with gc.set_grad_enabled(True):
        x = gc.Tensor([[2, 3], [1, 4]])
        x.requires_grad = True
        y = gc.Tensor([[3, 4], [5, 6], [7, 8]])
        y.requires_grad = True
        z = gc.Tensor([[10, 20, 30], [40, 60, 70], [80, 90, 5], [15, 30, 45]])
        z.requires_grad = True
        n = gc.Tensor([[11, 22, 33, 44], [1, 2, 3, 4]])
        n.requires_grad = True
        p = y.mm(x)
        p = z.mm(p)
        p = n.mm(p)
        loss = p.sum()
        loss = loss.backward()
        assert loss is None
    return x, y, z, n


def test_seed004_chain_of_mm_grads(device):
    """In [196]: n @ (z @ (y @ x)), summed, inside set_grad_enabled(True)."""
    x, y, z, n = _seed004_chain()
    assert str(n.grad) == ("tensor([[3700., 9950., 8125., 5550.],\n"
                           "        [3700., 9950., 8125., 5550.]])")
    assert str(z.grad) == ("tensor([[ 420.,  660.,  900.],\n"
                           "        [ 840., 1320., 1800.],\n"
                           "        [1260., 1980., 2700.],\n"
                           "        [1680., 2640., 3600.]])")
    assert str(y.grad) == ("tensor([[23400., 23400.],\n"
                           "        [31800., 31800.],\n"
                           "        [21900., 21900.]])")
    assert str(x.grad) == ("tensor([[76500., 76500.],\n"
                           "        [91920., 91920.]])")


def _diag(v):
    """diag(v) built from supported ops (eye * v), the seed's n.sum(dim=0).diag()."""
    return gc.eye(v.shape[0]) * v


def test_seed004_chain_hand_derived_grads(device):
    """In [200]-[326]: the hand-derived gradients of the chain, all equal to autograd's."""
    x, y, z, n = _seed004_chain()
    grad_n = ((z @ y @ x).sum(dim=1, keepdim=True) @ gc.ones([1, n.shape[0]])).T
    assert repr(grad_n) == ("tensor([[3700., 9950., 8125., 5550.],\n"
                            "        [3700., 9950., 8125., 5550.]], "
                            "grad_fn=<PermuteBackward0>)")
    grad_z = (((y @ x).sum(dim=1, keepdim=True) @ gc.ones([1, z.shape[0]]))
              @ _diag(n.sum(dim=0))).T
    assert repr(grad_z) == ("tensor([[ 420.,  660.,  900.],\n"
                            "        [ 840., 1320., 1800.],\n"
                            "        [1260., 1980., 2700.],\n"
                            "        [1680., 2640., 3600.]], grad_fn=<PermuteBackward0>)")
    grad_y_partial = (x.sum(dim=1, keepdim=True) @ gc.ones([1, y.shape[0]]))
    assert repr(grad_y_partial) == ("tensor([[5., 5., 5.],\n"
                                    "        [5., 5., 5.]], grad_fn=<MmBackward0>)")
    grad_x_partial = gc.ones([1, x.shape[0]])
    assert repr(grad_x_partial) == "tensor([[1., 1.]])"
    grad_y = ((x.sum(dim=1, keepdim=True) @ gc.ones([1, y.shape[0]]))
              @ _diag((n @ z).sum(dim=0))).T
    assert repr(grad_y) == ("tensor([[23400., 23400.],\n"
                            "        [31800., 31800.],\n"
                            "        [21900., 21900.]], grad_fn=<PermuteBackward0>)")
    grad_x = (gc.ones([x.shape[1], x.shape[0]]) @ _diag((n @ z @ y).sum(dim=0))).T
    assert repr(grad_x) == ("tensor([[76500., 76500.],\n"
                            "        [91920., 91920.]], grad_fn=<PermuteBackward0>)")
    assert grad_n.equal(n.grad)
    assert grad_z.equal(z.grad)
    assert grad_y.equal(y.grad)
    assert grad_x.equal(x.grad)


def test_seed004_diag(device):
    """In [253]: n.sum(dim=0).diag().

    The seed's older PyTorch printed ``DiagBackward0``; PyTorch 2.13, which gradcore
    follows, names the node of a vector's ``diag`` ``DiagEmbedBackward0``.
    """
    n = gc.Tensor([[11, 22, 33, 44], [1, 2, 3, 4]])
    n.requires_grad = True
    d = n.sum(dim=0).diag()
    assert repr(d) == ("tensor([[12.,  0.,  0.,  0.],\n"
                       "        [ 0., 24.,  0.,  0.],\n"
                       "        [ 0.,  0., 36.,  0.],\n"
                       "        [ 0.,  0.,  0., 48.]], grad_fn=<DiagEmbedBackward0>)")


# ----------------------------------------------------------------------------------------
# seed 002: the book chapter's small examples (its toy Tensor computed the gradient of
# the sum of the output when backward() got no argument)
# ----------------------------------------------------------------------------------------
def test_seed002_add_and_mul_grads(device):
    """15.2.1-15.2.2: X = 2 ones(3, 4), Y = 3 ones: Z = X + Y is 5s; d(X*Y)/dX = Y."""
    X = gc.tensor(2 * np.ones((3, 4)), dtype=gc.float32, requires_grad=True)
    Y = gc.tensor(3 * np.ones((3, 4)), dtype=gc.float32, requires_grad=True)
    Z = X + Y
    assert repr(Z.detach()) == ("tensor([[5., 5., 5., 5.],\n"
                                "        [5., 5., 5., 5.],\n"
                                "        [5., 5., 5., 5.]])")
    Z.sum().backward()
    np.testing.assert_array_equal(host(X.grad), np.ones((3, 4)))
    np.testing.assert_array_equal(host(Y.grad), np.ones((3, 4)))
    X.grad = Y.grad = None
    (X * Y).sum().backward()
    assert bool((X.grad == Y.detach()).all())
    assert bool((Y.grad == X.detach()).all())


def test_seed002_matmul(device):
    """15.2.3: Z = X @ Y; dl/dX = dl/dZ Y^T and dl/dY = X^T dl/dZ."""
    Xn = np.array([[1, 1, 1], [2, 2, 2]])
    Yn = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]])
    assert repr(gc.tensor(Xn) @ gc.tensor(Yn)) == ("tensor([[15, 18, 21, 24],\n"
                                                   "        [30, 36, 42, 48]])")
    X = gc.tensor(Xn, dtype=gc.float32, requires_grad=True)
    Y = gc.tensor(Yn, dtype=gc.float32, requires_grad=True)
    Z = X @ Y
    Z.retain_grad()
    Z.sum().backward()
    np.testing.assert_array_equal(host(X.grad), host(Z.grad) @ Yn.T)
    np.testing.assert_array_equal(host(Y.grad), Xn.T @ host(Z.grad))


def test_seed002_transpose(device):
    """15.3: X.T of [[1, 2, 3], [4, 5, 6]]; the gradient of the sum is ones of X's shape."""
    X = gc.tensor([[1, 2, 3], [4, 5, 6]])
    assert repr(X.T) == ("tensor([[1, 4],\n"
                         "        [2, 5],\n"
                         "        [3, 6]])")
    Xf = X.float().requires_grad_()
    Xf.T.sum().backward()
    np.testing.assert_array_equal(host(Xf.grad), np.ones((2, 3)))


def test_seed002_reshape(device):
    """15.4: reshape(6, 2) of 1..12 and its gradient (reshaped back)."""
    X = gc.tensor(np.arange(1, 13).reshape(3, 4))
    assert repr(X.reshape(6, 2)) == ("tensor([[ 1,  2],\n"
                                     "        [ 3,  4],\n"
                                     "        [ 5,  6],\n"
                                     "        [ 7,  8],\n"
                                     "        [ 9, 10],\n"
                                     "        [11, 12]])")
    Xf = X.float().requires_grad_()
    Y = Xf.reshape(6, 2)
    g = np.arange(12, dtype=np.float32).reshape(6, 2)
    Y.backward(gc.tensor(g))
    np.testing.assert_array_equal(host(Xf.grad), g.reshape(3, 4))


def test_seed002_broadcast_forward(device):
    """15.5: X + y (row), X + z (column), a + b (column plus row)."""
    X = gc.tensor([[0, 0, 0], [1, 1, 1], [2, 2, 2], [3, 3, 3], [4, 4, 4]])
    y = gc.tensor([0, 1, 2])
    assert y.shape == (3,)
    np.testing.assert_array_equal(host(X + y), [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5],
                                                [4, 5, 6]])
    z = gc.tensor([0, 1, 2, 3, 4]).reshape(-1, 1)
    np.testing.assert_array_equal(host(X + z), [[0, 0, 0], [2, 2, 2], [4, 4, 4], [6, 6, 6],
                                                [8, 8, 8]])
    a = gc.tensor([0, 1, 2]).reshape(3, 1)
    b = gc.tensor([0, 1, 2, 3]).reshape(1, 4)
    assert repr(a + b) == ("tensor([[0, 1, 2, 3],\n"
                           "        [1, 2, 3, 4],\n"
                           "        [2, 3, 4, 5]])")
    assert (gc.ones(3, 4) + gc.ones(2, 1, 4)).shape == (2, 3, 4)


def test_seed002_broadcast_to_grad(device):
    """15.5.2-15.5.3: the gradient of broadcasting is a sum over the new dimensions:
    a (3, 1) -> (3, 4) gets 4s, b (1, 4) -> (3, 4) gets 3s; same for automatic a + b."""
    a = gc.tensor([0., 1., 2.]).reshape(3, 1).requires_grad_()
    b = gc.tensor([0., 1., 2., 3.]).reshape(1, 4).requires_grad_()
    X = a.broadcast_to((3, 4))
    Y = b.broadcast_to((3, 4))
    assert repr(X.detach()) == ("tensor([[0., 0., 0., 0.],\n"
                                "        [1., 1., 1., 1.],\n"
                                "        [2., 2., 2., 2.]])")
    X.sum().backward()
    Y.sum().backward()
    assert repr(a.grad) == ("tensor([[4.],\n"
                            "        [4.],\n"
                            "        [4.]])")
    assert repr(b.grad) == "tensor([[3., 3., 3., 3.]])"

    a.grad = b.grad = None
    (a + b).sum().backward()
    assert repr(a.grad) == ("tensor([[4.],\n"
                            "        [4.],\n"
                            "        [4.]])")
    assert repr(b.grad) == "tensor([[3., 3., 3., 3.]])"


def test_seed002_reductions(device):
    """15.6: sum, mean, sum(axis) and keepdims of a small integer matrix."""
    X = gc.tensor([[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5]])
    assert X.sum().item() == 30
    assert X.sum().dtype == gc.int64
    assert X.float().mean().item() == 2.5
    assert repr(X.sum(axis=0)) == "tensor([ 3,  6,  9, 12])"
    assert repr(X.sum(axis=1)) == "tensor([ 6, 10, 14])"
    assert repr(X.sum(axis=1, keepdims=True)) == ("tensor([[ 6],\n"
                                                  "        [10],\n"
                                                  "        [14]])")
    assert repr(X.sum(axis=0, keepdims=True)) == "tensor([[ 3,  6,  9, 12]])"
    Xf = X.float().requires_grad_()
    s = Xf.sum(axis=0, keepdims=True)
    s.backward(gc.ones_like(s))
    np.testing.assert_array_equal(host(Xf.grad), np.ones((3, 4)))


def test_seed002_sum_over_middle_axis_grad(device):
    """15.6: summing (3, 4, 5) over axis 1 gives (3, 5); the gradient is tiled back."""
    X = gc.ones((3, 4, 5), requires_grad=True)
    S = X.sum(axis=1)
    assert S.shape == (3, 5)
    g = _rand((3, 5), 70)
    S.backward(gc.tensor(g))
    np.testing.assert_array_equal(host(X.grad), np.broadcast_to(g[:, None, :], (3, 4, 5)))


def test_seed002_finite_differences_of_tanh(device):
    """15.7: f(x) = tanh(3x - 2); backward matches central differences (and gradcheck)."""
    rng = np.random.default_rng(7)
    Xn = rng.random((3, 4))

    def f(x):
        return gc.tanh(3 * x - 2)

    X = gc.tensor(Xn, dtype=gc.float64, requires_grad=True)
    f(X).sum().backward()
    h = 1e-8
    dY_fd = (np.tanh(3 * (Xn + h) - 2) - np.tanh(3 * (Xn - h) - 2)) / (2 * h)
    assert np.allclose(dY_fd, host(X.grad))
    np.testing.assert_allclose(host(X.grad), 3 * (1 - np.tanh(3 * Xn - 2) ** 2), rtol=1e-12)
    assert gc.autograd.gradcheck(f, (gc.tensor(Xn, requires_grad=True),))
