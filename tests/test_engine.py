"""Semantic tests of the autograd engine (issue 3, item 3), one feature per test group.

The op table (``test_ops_table.py``) checks each op's gradient; these tests check what
the engine promises about graphs: depth, accumulation, freeing, hooks, grad modes,
higher order, ``autograd.grad``, custom Functions, version counters, anomaly detection
and gradcheck.
"""

from __future__ import annotations

import sys
import threading
import weakref

import numpy as np
import pytest

import gradcore as gc

from conftest import host


def _t(values, requires_grad=False, dtype=None):
    return gc.tensor(np.asarray(values, dtype=np.float32 if dtype is None else dtype),
                     requires_grad=requires_grad)


# ---- depth: an iterative engine ------------------------------------------------------
def test_chain_of_100000_ops_backward_without_recursion_error(device):
    assert sys.getrecursionlimit() < 100_000  # a recursive walk could not do this
    x = _t([0.5, -1.0, 2.0], requires_grad=True)
    y = x
    for i in range(50_000):
        y = y * 1.0 if i % 2 else y + 0.0
        y = y - 0.0
    assert y.grad_fn is not None
    y.sum().backward()
    np.testing.assert_array_equal(host(x.grad), [1., 1., 1.])


def test_long_chain_gradient_value(device):
    """A 20,000-op chain with a nontrivial derivative: (1.0001 ** n) per element."""
    x = _t([1.0, 2.0], requires_grad=True, dtype=np.float64)
    y = x
    n = 20_000
    for _ in range(n):
        y = y * 1.0001
    y.sum().backward()
    np.testing.assert_allclose(host(x.grad), [1.0001 ** n] * 2, rtol=1e-9)


def test_wide_graph_shared_subexpression(device):
    """A node used by many consumers gets the sum of their gradients (once each)."""
    x = _t([2.0], requires_grad=True)
    h = x * x
    total = h
    for _ in range(500):
        total = total + h
    total.backward()
    np.testing.assert_allclose(host(x.grad), [501 * 2 * 2.0])


# ---- accumulation --------------------------------------------------------------------
def test_grads_accumulate_across_backward_calls(device):
    x = _t([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [2., 4., 6.])
    (x * 3).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [5., 7., 9.])
    x.grad.zero_()
    (x * 3).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [3., 3., 3.])
    x.grad = None
    x.sum().backward()
    np.testing.assert_array_equal(host(x.grad), [1., 1., 1.])


def test_grad_keeps_leaf_dtype_and_shape(device):
    x = _t([[1.0, 2.0]], requires_grad=True, dtype=np.float64)
    (x.float() * 2).sum().backward()
    assert x.grad.dtype == gc.float64 and x.grad.shape == (1, 2)
    assert x.grad.grad_fn is None and not x.grad.requires_grad


def test_grad_on_the_same_leaf_through_two_paths(device):
    x = _t([3.0], requires_grad=True)
    y = x * x + x.exp() + x
    y.backward()
    np.testing.assert_allclose(host(x.grad), [2 * 3 + np.exp(3) + 1], rtol=1e-6)


# ---- freeing: saved tensors released after backward --------------------------------
def test_second_backward_raises_retain_graph_error(device):
    x = _t([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.backward()
    np.testing.assert_array_equal(host(x.grad), [2., 4.])  # the failed call added nothing


def test_retain_graph_allows_second_backward_and_grads_double(device):
    x = _t([1.0, 2.0], requires_grad=True)
    y = (x.tanh() * x).sum()
    y.backward(retain_graph=True)
    first = host(x.grad).copy()
    y.backward()
    np.testing.assert_allclose(host(x.grad), 2 * first, rtol=1e-6)
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.backward()


def test_autograd_grad_frees_the_graph_too(device):
    x = _t([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    gc.autograd.grad(y, x)
    with pytest.raises(RuntimeError, match="retain_graph"):
        gc.autograd.grad(y, x)


def test_kept_loss_does_not_keep_activations_alive(device):
    x = _t(np.linspace(-1, 1, 1000), requires_grad=True)
    w = _t(np.linspace(0, 2, 1000), requires_grad=True)
    h = x * w                   # MulBackward0 of the next op saves h
    a = h.tanh()                # TanhBackward0 saves its output's array
    loss = (a * h).sum()
    h_ref = weakref.ref(h)
    h_data_ref = weakref.ref(h._data)
    a_data_ref = weakref.ref(a._data)
    del h, a
    assert h_ref() is not None and a_data_ref() is not None  # the graph holds them
    loss.backward()
    # loss (and with it the graph's nodes) is still referenced, but what they saved is not
    assert loss.grad_fn is not None
    assert h_ref() is None
    assert h_data_ref() is None
    assert a_data_ref() is None


def test_retain_graph_keeps_saved_tensors(device):
    x = _t([1.0, 2.0], requires_grad=True)
    h = x * 2
    loss = (h * h).sum()
    h_ref = weakref.ref(h)
    del h
    loss.backward(retain_graph=True)
    assert h_ref() is not None
    loss.backward()
    assert h_ref() is None


# ---- retain_grad --------------------------------------------------------------------
def test_retain_grad_on_intermediate(device):
    x = _t([1.0, 2.0], requires_grad=True)
    h = x * 3
    k = x * 4
    h.retain_grad()
    assert h.retains_grad and not k.retains_grad
    (h * h + k).sum().backward()
    np.testing.assert_array_equal(host(h.grad), [6., 12.])
    with pytest.warns(UserWarning, match="not a leaf Tensor"):  # as PyTorch warns
        assert k.grad is None
    np.testing.assert_array_equal(host(x.grad), [18 * 1 + 4, 18 * 2 + 4])
    # a second backward accumulates into the retained grad too
    (h.detach() * 0 + x).sum().backward()
    np.testing.assert_array_equal(host(h.grad), [6., 12.])


def test_retain_grad_on_leaf_is_a_no_op(device):
    x = _t([1.0], requires_grad=True)
    x.retain_grad()
    (x * 2).backward()
    np.testing.assert_array_equal(host(x.grad), [2.])


# ---- hooks ----------------------------------------------------------------------------
def test_register_hook_modifies_gradient_and_handle_removes_it(device):
    x = _t([1.0, 2.0], requires_grad=True)
    seen = []

    def double(g):
        seen.append(host(g).copy())
        return g * 2

    h = x * 3
    handle = h.register_hook(double)
    (h * h).sum().backward()
    np.testing.assert_array_equal(seen[0], [6., 12.])        # d/dh of h*h
    np.testing.assert_array_equal(host(x.grad), [36., 72.])  # 2 * 3 * (2 h)
    handle.remove()
    x.grad = None
    h = x * 3
    (h * h).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [18., 36.])
    assert len(seen) == 1


def test_hook_removed_before_backward_is_not_called(device):
    x = _t([1.0, 2.0], requires_grad=True)
    h = x * 3
    calls = []
    handle = h.register_hook(lambda g: calls.append(1))
    handle.remove()
    h.sum().backward()
    assert calls == []


def test_hook_returning_none_keeps_gradient(device):
    x = _t([1.0, 2.0], requires_grad=True)
    h = x * 3
    seen = []
    h.register_hook(lambda g: seen.append(host(g).copy()))
    h.sum().backward()
    np.testing.assert_array_equal(seen[0], [1., 1.])
    np.testing.assert_array_equal(host(x.grad), [3., 3.])


def test_leaf_hook_sees_and_changes_what_is_accumulated(device):
    x = _t([1.0, 2.0], requires_grad=True)
    seen = []

    def hook(g):
        seen.append(host(g).copy())
        return g + 1

    handle = x.register_hook(hook)
    (x * 5).sum().backward()
    np.testing.assert_array_equal(seen[0], [5., 5.])
    np.testing.assert_array_equal(host(x.grad), [6., 6.])
    handle.remove()
    (x * 5).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [11., 11.])


def test_leaf_hook_registered_after_the_graph_was_built(device):
    x = _t([1.0, 2.0], requires_grad=True)
    y = (x * 5).sum()
    x.register_hook(lambda g: g * 0)
    y.backward()
    np.testing.assert_array_equal(host(x.grad), [0., 0.])


def test_hooks_run_in_registration_order(device):
    x = _t([1.0], requires_grad=True)
    h = x * 1
    h.register_hook(lambda g: g + 1)
    h.register_hook(lambda g: g * 10)
    h.backward()
    np.testing.assert_array_equal(host(x.grad), [20.])


def test_register_hook_on_tensor_without_grad_raises(device):
    with pytest.raises(RuntimeError, match="doesn't require"):
        _t([1.0]).register_hook(lambda g: g)


# ---- grad modes ---------------------------------------------------------------------
def test_no_grad_context_manager(device):
    x = _t([1.0], requires_grad=True)
    assert gc.is_grad_enabled()
    with gc.no_grad():
        assert not gc.is_grad_enabled()
        y = x * 2
        with gc.enable_grad():
            assert gc.is_grad_enabled()
            z = x * 2
        assert not gc.is_grad_enabled()
    assert gc.is_grad_enabled()
    assert y.grad_fn is None and not y.requires_grad and y.is_leaf
    assert z.grad_fn is not None and z.requires_grad


def test_grad_mode_restored_after_exception(device):
    with pytest.raises(ValueError):
        with gc.no_grad():
            raise ValueError("boom")
    assert gc.is_grad_enabled()


def test_grad_mode_decorators(device):
    x = _t([1.0], requires_grad=True)

    @gc.no_grad()
    def f(t):
        assert not gc.is_grad_enabled()
        return t * 2

    @gc.enable_grad()
    def g(t):
        return t * 2

    @gc.set_grad_enabled(False)
    def h(t):
        return t * 2

    assert gc.is_grad_enabled()  # decorating with set_grad_enabled(False) leaves it on
    assert f(x).grad_fn is None
    assert h(x).grad_fn is None
    with gc.no_grad():
        assert g(x).grad_fn is not None
        assert not gc.is_grad_enabled()
    assert f.__name__ == "f"
    assert gc.is_grad_enabled()


def test_decorated_function_reentrant(device):
    @gc.no_grad()
    def rec(n):
        assert not gc.is_grad_enabled()
        return 0 if n == 0 else rec(n - 1) + 1

    assert rec(5) == 5
    assert gc.is_grad_enabled()


def test_set_grad_enabled_as_call_and_context_manager(device):
    x = _t([1.0], requires_grad=True)
    with gc.set_grad_enabled(False):
        assert (x * 2).grad_fn is None
    assert gc.is_grad_enabled()
    with gc.set_grad_enabled(True):
        assert (x * 2).grad_fn is not None
    try:
        gc.set_grad_enabled(False)  # a plain call sets the mode at once, like PyTorch
        assert not gc.is_grad_enabled()
        assert (x * 2).grad_fn is None
    finally:
        gc.set_grad_enabled(True)
    assert gc.is_grad_enabled()


def test_grad_mode_is_thread_local(device):
    x = _t([1.0], requires_grad=True)
    result = {}

    def worker():
        result["enabled"] = gc.is_grad_enabled()
        y = x * 2
        result["tracked"] = y.grad_fn is not None
        with gc.no_grad():
            result["inner"] = gc.is_grad_enabled()
            barrier.wait()  # the main thread checks its own mode meanwhile
            barrier.wait()

    barrier = threading.Barrier(2, timeout=10)
    with gc.no_grad():
        th = threading.Thread(target=worker)
        th.start()
        barrier.wait()
        assert not gc.is_grad_enabled()
        barrier.wait()
        th.join()
    assert result == {"enabled": True, "tracked": True, "inner": False}
    # and a worker's no_grad does not leak into the main thread
    th = threading.Thread(target=lambda: gc.set_grad_enabled(False))
    th.start()
    th.join()
    assert gc.is_grad_enabled()


def test_no_grad_allows_in_place_update_of_leaf(device):
    w = _t([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    with gc.no_grad():
        w -= 0.5 * w.grad
        w.add_(1)
    assert w.is_leaf and w.requires_grad and w.grad_fn is None
    np.testing.assert_array_equal(host(w.detach()), [1.0, 1.0])


# ---- higher order -------------------------------------------------------------------
def test_create_graph_second_derivative_of_cube(device):
    x = _t([1.0, 2.0, -3.0], requires_grad=True, dtype=np.float64)
    y = (x ** 3).sum()
    y.backward(create_graph=True)
    g = x.grad
    assert g.requires_grad and g.grad_fn is not None
    np.testing.assert_allclose(host(g.detach()), 3 * np.array([1., 4., 9.]))
    x.grad = None
    g.sum().backward()
    np.testing.assert_allclose(host(x.grad), 6 * np.array([1., 2., -3.]))


def test_create_graph_autograd_grad_tanh_and_third_order(device):
    xn = np.array([-1.0, 0.25, 0.8])
    x = _t(xn, requires_grad=True, dtype=np.float64)
    (g1,) = gc.autograd.grad(x.tanh().sum(), x, create_graph=True)
    (g2,) = gc.autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = gc.autograd.grad(g2.sum(), x)
    t = np.tanh(xn)
    np.testing.assert_allclose(host(g1.detach()), 1 - t ** 2, rtol=1e-12)
    np.testing.assert_allclose(host(g2.detach()), -2 * t * (1 - t ** 2), rtol=1e-12)
    np.testing.assert_allclose(host(g3), -2 * (1 - t ** 2) * (1 - 3 * t ** 2), rtol=1e-10)
    assert x.grad is None


def test_create_graph_matmul_hessian_vector_product(device):
    rng = np.random.default_rng(0)
    Wn, xn, vn = rng.standard_normal((4, 3)), rng.standard_normal(3), rng.standard_normal(3)
    W = _t(Wn, dtype=np.float64)
    x = _t(xn, requires_grad=True, dtype=np.float64)
    v = _t(vn, dtype=np.float64)
    f = ((W @ x) ** 2).sum()
    (g,) = gc.autograd.grad(f, x, create_graph=True)
    np.testing.assert_allclose(host(g.detach()), 2 * Wn.T @ Wn @ xn, rtol=1e-10)
    (hv,) = gc.autograd.grad((g * v).sum(), x)
    np.testing.assert_allclose(host(hv), 2 * Wn.T @ Wn @ vn, rtol=1e-10)


def test_create_graph_mixed_partials(device):
    x = _t([2.0], requires_grad=True, dtype=np.float64)
    y = _t([3.0], requires_grad=True, dtype=np.float64)
    f = x * x * y + (x / y)
    gx, gy = gc.autograd.grad(f, (x, y), create_graph=True)
    np.testing.assert_allclose(host(gx.detach()), [2 * 2 * 3 + 1 / 3])
    (gxy,) = gc.autograd.grad(gx, y)
    np.testing.assert_allclose(host(gxy), [2 * 2 - 1 / 9])


def test_gradient_without_create_graph_is_not_tracked(device):
    x = _t([1.0], requires_grad=True)
    (x ** 3).backward()
    assert x.grad.grad_fn is None and not x.grad.requires_grad


# ---- autograd.grad --------------------------------------------------------------------
def test_autograd_grad_does_not_touch_dot_grad(device):
    x = _t([1.0, 2.0], requires_grad=True)
    w = _t([3.0, 4.0], requires_grad=True)
    y = (x * w).sum()
    gx, = gc.autograd.grad(y, [x])
    np.testing.assert_array_equal(host(gx), [3., 4.])
    assert x.grad is None and w.grad is None


def test_autograd_grad_allow_unused(device):
    x = _t([1.0], requires_grad=True)
    unused = _t([5.0], requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="allow_unused"):
        gc.autograd.grad(y, [x, unused], retain_graph=True)
    gx, gu = gc.autograd.grad(y, [x, unused], allow_unused=True)
    np.testing.assert_array_equal(host(gx), [2.])
    assert gu is None


def test_autograd_grad_grad_outputs_and_intermediate_input(device):
    x = _t([1.0, 2.0, 3.0], requires_grad=True)
    h = x * x
    y = h * 2
    go = _t([1.0, 0.5, -1.0])
    gh, gx = gc.autograd.grad(y, [h, x], grad_outputs=go)
    np.testing.assert_array_equal(host(gh), [2., 1., -2.])
    np.testing.assert_array_equal(host(gx), [4., 4., -12.])
    with pytest.raises(RuntimeError, match="scalar outputs"):
        gc.autograd.grad((x * 2), x)


def test_autograd_grad_of_an_intermediate_leaves_its_node_for_later(device):
    """The node of an intermediate input only receives its gradient: it does not run,
    so what it saved is still there for a later backward (as in PyTorch)."""
    x = _t([1.0, 2.0], requires_grad=True)
    h = x * x
    (gh,) = gc.autograd.grad((h * 3).sum(), h)
    np.testing.assert_array_equal(host(gh), [3., 3.])
    h.sum().backward()
    np.testing.assert_array_equal(host(x.grad), [2., 4.])


def test_autograd_grad_several_outputs(device):
    x = _t([1.0, 2.0], requires_grad=True)
    a = (x * 2).sum()
    b = (x * x).sum()
    (g,) = gc.autograd.grad([a, b], x)
    np.testing.assert_array_equal(host(g), [4., 6.])


def test_backward_inputs_only_those(device):
    x = _t([1.0], requires_grad=True)
    w = _t([2.0], requires_grad=True)
    (x * w).backward(inputs=[w])
    assert x.grad is None
    np.testing.assert_array_equal(host(w.grad), [1.])


# ---- custom Function -------------------------------------------------------------------
class _Cube(gc.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        ctx.record = ctx.needs_input_grad
        return x * x * x * scale

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x * ctx.scale, None


def test_function_save_for_backward_and_non_tensor_arg(device):
    x = _t([1.0, 2.0], requires_grad=True)
    y = _Cube.apply(x, 2.0)
    assert y.requires_grad and not y.is_leaf
    assert y.grad_fn.name() == "_CubeBackward"
    np.testing.assert_array_equal(host(y.detach()), [2., 16.])
    y.sum().backward()
    np.testing.assert_array_equal(host(x.grad), [6., 24.])
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.sum().backward()


def test_function_needs_input_grad(device):
    seen = []

    class Mul(gc.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            seen.append(ctx.needs_input_grad)
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            ga = g * b if ctx.needs_input_grad[0] else None
            gb = g * a if ctx.needs_input_grad[1] else None
            return ga, gb

    a = _t([2.0], requires_grad=True)
    b = _t([5.0])
    Mul.apply(a, b).backward()
    assert seen == [(True, False)]
    np.testing.assert_array_equal(host(a.grad), [5.])
    assert b.grad is None
    out = Mul.apply(_t([1.0]), b)  # nothing needs a gradient: no node
    assert out.grad_fn is None and not out.requires_grad


def test_function_multiple_outputs(device):
    class SplitScale(gc.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    x = _t([1.0, 2.0], requires_grad=True)
    a, b = SplitScale.apply(x)
    assert a.grad_fn is b.grad_fn
    (a.sum() + (b * b).sum()).backward()
    # d/dx [2x + (3x)^2] = 2 + 18 x
    np.testing.assert_array_equal(host(x.grad), [20., 38.])
    x.grad = None
    a, b = SplitScale.apply(x)
    a.sum().backward()  # the unused output's gradient arrives as zeros
    np.testing.assert_array_equal(host(x.grad), [2., 2.])


def test_function_forward_runs_without_grad_and_double_backward(device):
    class Square(gc.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            assert not gc.is_grad_enabled()
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = _t([3.0], requires_grad=True, dtype=np.float64)
    (g,) = gc.autograd.grad(Square.apply(x), x, create_graph=True)
    np.testing.assert_array_equal(host(g.detach()), [6.])
    (gg,) = gc.autograd.grad(g, x)
    np.testing.assert_array_equal(host(gg), [2.])


def test_function_wrong_gradient_shape_raises(device):
    class Bad(gc.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return gc.ones(5)

    x = _t([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"invalid gradient.*\[5\].*\[2\]"):
        Bad.apply(x).sum().backward()


# ---- version counters ---------------------------------------------------------------
def test_modifying_saved_input_in_place_raises_naming_op(device):
    x = _t([1.0, 2.0], requires_grad=True)
    a = x * 1
    b = a * a              # MulBackward0 saves a
    a.mul_(2)
    with pytest.raises(RuntimeError, match="MulBackward0") as info:
        b.sum().backward()
    assert "modified by an inplace operation" in str(info.value)


def test_modifying_saved_output_in_place_raises_naming_op(device):
    x = _t([1.0, 2.0], requires_grad=True)
    y = x.tanh()           # TanhBackward0 saves its output
    y.add_(1)
    with pytest.raises(RuntimeError, match="TanhBackward0"):
        y.sum().backward()


def test_modifying_through_setitem_or_detach_raises(device):
    for modify in (lambda a: a.__setitem__(0, 5.0),
                   lambda a: a.detach().add_(1)):
        x = _t([1.0, 2.0, 3.0], requires_grad=True)
        a = x * 1
        b = a.exp() * a    # MulBackward0 saves a (exp saves its own output)
        modify(a)
        with pytest.raises(RuntimeError, match="MulBackward0"):
            b.sum().backward()


def test_modifying_through_a_view_raises_in_backward(device):
    x = _t([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 1
    b = a.exp() * a
    a[1:].zero_()  # PyTorch: allowed here ...
    with pytest.raises(RuntimeError, match="MulBackward0"):
        b.sum().backward()  # ... and backward names the op whose saved tensor changed


def test_unmodified_or_cloned_saved_tensor_is_fine(device):
    x = _t([1.0, 2.0], requires_grad=True)
    a = x * 1
    b = a * a
    c = a.clone()
    c.mul_(2)             # a clone has its own version counter
    b.sum().backward()
    np.testing.assert_array_equal(host(x.grad), [2., 4.])


def test_in_place_op_on_non_saved_tensor_is_differentiated(device):
    x = _t([1.0, 2.0], requires_grad=True)
    a = x + 0             # AddBackward saves nothing
    a.mul_(3)
    a.add_(x)             # a = 3x + x
    a.sum().backward()
    np.testing.assert_array_equal(host(x.grad), [4., 4.])
    assert a._version == 2


def test_version_counter_increments(device):
    a = _t([1.0, 2.0])
    v0 = a._version
    a.add_(1)
    a[0] = 3.0
    a.zero_()
    assert a._version == v0 + 3


# ---- in-place rules ------------------------------------------------------------------
@pytest.mark.parametrize("op", ["add_", "mul_", "zero_", "fill_", "iadd", "setitem"])
def test_in_place_on_leaf_requiring_grad_raises(device, op):
    x = _t([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        if op == "add_":
            x.add_(1)
        elif op == "mul_":
            x.mul_(2)
        elif op == "zero_":
            x.zero_()
        elif op == "fill_":
            x.fill_(3)
        elif op == "iadd":
            x += 1
        else:
            x[0] = 5.0
    np.testing.assert_array_equal(host(x.detach()), [1.0, 2.0])


def test_iadd_tracked_operand_into_untracked_tensor(device):
    w = _t([1.0, 2.0, 3.0], requires_grad=True)
    d = gc.zeros(2, 3)
    assert not d.requires_grad
    d += w * 2
    assert d.requires_grad and not d.is_leaf
    assert d.grad_fn.name() == "AddBackward0"
    d.sum().backward()
    np.testing.assert_array_equal(host(w.grad), [4., 4., 4.])


def test_mul_by_tracked_into_untracked(device):
    w = _t([2.0, 3.0], requires_grad=True)
    d = _t([5.0, 7.0])
    d *= w
    d.sum().backward()
    np.testing.assert_array_equal(host(w.grad), [5., 7.])


def test_setitem_tracked_value_into_untracked_tensor(device):
    x = _t([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = gc.zeros(3, 4)
    y[1] = x
    assert y.requires_grad
    c = _t(np.arange(12).reshape(3, 4))
    (y * c).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [4., 5., 6., 7.])


def test_setitem_overwrites_part_of_tracked_tensor(device):
    x = _t(np.arange(6).reshape(2, 3), requires_grad=True)
    z = x * 2
    z[0] = 0.0
    z[:, 2] = _t([7.0, 7.0])
    z.sum().backward()
    np.testing.assert_array_equal(host(x.grad), [[0., 0., 0.], [2., 2., 0.]])


def test_setitem_with_index_tensor_and_mask(device):
    x = _t([1.0, 2.0], requires_grad=True)
    z = gc.zeros(5)
    z[gc.tensor([0, 3])] = x * 10
    z[z > 15] = 0.0
    np.testing.assert_array_equal(host(z.detach()), [10., 0., 0., 0., 0.])
    z.sum().backward()
    np.testing.assert_array_equal(host(x.grad), [10., 0.])


# ---- anomaly detection --------------------------------------------------------------
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy: 0/0, x/0
def test_detect_anomaly_names_op_producing_nan(device):
    x = _t([0.0, 4.0], requires_grad=True)
    with gc.autograd.detect_anomaly():
        y = (x.sqrt() * 0).sum()     # d sqrt/dx at 0 is inf; inf * 0 is NaN
        with pytest.raises(RuntimeError, match="SqrtBackward0.*nan"):
            y.backward()
    # without it the NaN arrives silently, as in PyTorch
    x.grad = None
    (x.sqrt() * 0).sum().backward()
    assert np.isnan(host(x.grad)[0])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy: 0/0, x/0
def test_detect_anomaly_division_and_decorator(device):
    x = _t([0.0, 1.0], requires_grad=True)
    y = _t([0.0, 2.0], requires_grad=True)

    @gc.autograd.detect_anomaly()
    def run():
        z = x / y                   # 0 / 0: NaN in the forward already
        z.sum().backward()

    with pytest.raises(RuntimeError, match="DivBackward0"):
        run()
    assert not gc.autograd.grad_mode.is_anomaly_enabled()


def test_detect_anomaly_quiet_when_finite(device):
    x = _t([1.0, 4.0], requires_grad=True)
    with gc.autograd.detect_anomaly():
        x.sqrt().sum().backward()
    np.testing.assert_allclose(host(x.grad), [0.5, 0.25])


# ---- gradcheck ----------------------------------------------------------------------
class _WrongGrad(gc.autograd.Function):
    """x ** 2 with a backward that is off by x at element 2 only."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        bump = gc.tensor(np.array([0.0, 0.0, 1.0]), dtype=x.dtype)
        return g * (2 * x + bump * x)


def test_gradcheck_passes_for_correct_gradients(device):
    x = _t([0.3, -1.2, 2.0], requires_grad=True, dtype=np.float64)
    y = _t([1.5, 0.7, -0.4], requires_grad=True, dtype=np.float64)
    assert gc.autograd.gradcheck(lambda a, b: (a * b.exp()).tanh() / (1 + b * b), (x, y))


def test_gradcheck_reports_largest_difference(device):
    x = _t([0.5, -1.0, 3.0], requires_grad=True, dtype=np.float64)
    assert gc.autograd.gradcheck(_WrongGrad.apply, (x,), raise_exception=False) is False
    with pytest.raises(RuntimeError) as info:
        gc.autograd.gradcheck(_WrongGrad.apply, (x,))
    msg = str(info.value)
    assert "largest difference 3" in msg            # analytical 9 vs numerical 6 at x=3
    assert "element 2" in msg and "output 2" in msg
    assert "numerical 6" in msg and "analytical 9" in msg


# ---- flags and graph structure ---------------------------------------------------------
def test_requires_grad_setter_rules(device):
    x = _t([1.0])
    x.requires_grad = True
    assert x.requires_grad
    x.requires_grad = False
    assert not x.requires_grad
    assert x.requires_grad_() is x and x.requires_grad
    with pytest.raises(RuntimeError, match="floating point"):
        gc.tensor([1, 2]).requires_grad = True
    with pytest.raises(RuntimeError, match="floating point"):
        gc.tensor([1, 2], requires_grad=True)
    y = x * 2
    y.requires_grad = True          # already true: allowed
    with pytest.raises(RuntimeError, match="leaf variables.*detach"):
        y.requires_grad = False


def test_detach_shares_data_and_cuts_graph(device):
    x = _t([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert d.grad_fn is None and not d.requires_grad and d.is_leaf
    d[0] = 10.0
    np.testing.assert_array_equal(host(y.detach()), [10., 4.])  # shared memory
    (d * x).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [10., 4.])


def test_is_leaf(device):
    x = _t([1.0], requires_grad=True)
    c = _t([1.0])
    assert x.is_leaf and c.is_leaf
    assert not (x * 2).is_leaf
    assert (c * 2).is_leaf
    with gc.no_grad():
        assert (x * 2).is_leaf
    assert x.detach().is_leaf


def test_grad_fn_names_and_next_functions(device):
    x = _t([1.0, 2.0], requires_grad=True)
    y = _t([3.0, 4.0], requires_grad=True)
    c = _t([5.0, 6.0])
    m = x * y
    z = m + c
    assert x.grad_fn is None
    assert z.grad_fn.name() == "AddBackward0" and m.grad_fn.name() == "MulBackward0"
    (mul_fn, nr), (none_fn, _) = z.grad_fn.next_functions
    assert mul_fn is m.grad_fn and nr == 0
    assert none_fn is None
    acc_x, acc_y = (f for f, _ in mul_fn.next_functions)
    assert type(acc_x).__name__ == "AccumulateGrad" and acc_x.variable is x
    assert acc_y.variable is y
    assert "MulBackward0" in repr(m.grad_fn)
    s = z.sum()
    assert s.grad_fn.next_functions[0][0] is z.grad_fn


def test_linear_node_inputs_in_addmm_order(device):
    # the "Neural Networks" tutorial walks loss.grad_fn.next_functions[0][0] of a Linear:
    # PyTorch's AddmmBackward0 takes (bias, input, weight.t()), MmBackward0 (input, ...)
    lin = gc.nn.Linear(3, 2).to(device)
    x = _t([[1.0, 2.0, 3.0]], requires_grad=True)
    h = x * 2
    out = lin(h)
    assert out.grad_fn.name() == "AddmmBackward0"
    (b_fn, _), (h_fn, _), (w_fn, _) = out.grad_fn.next_functions
    assert b_fn.variable is lin.bias and h_fn is h.grad_fn and w_fn.variable is lin.weight
    lin.bias.requires_grad_(False)
    out = lin(h)
    assert out.grad_fn.next_functions[0][0] is None
    out.sum().backward()
    np.testing.assert_allclose(host(x.grad), 2 * host(lin.weight.detach()).sum(0)[None])
    assert lin.bias.grad is None and lin.weight.grad is not None
    plain = gc.nn.Linear(3, 2, bias=False).to(device)(h)
    assert plain.grad_fn.name() == "MmBackward0"
    assert plain.grad_fn.next_functions[0][0] is h.grad_fn


def test_multi_output_nodes_name_the_output(device):
    x = _t([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    a, b = x.split(2)
    assert a.grad_fn is b.grad_fn
    (a * 2 + b * 3).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [2., 2., 3., 3.])


def test_numpy_raises_on_requires_grad_and_points_to_detach(device):
    x = _t([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"detach\(\)"):
        x.numpy()
    with pytest.raises(RuntimeError, match=r"detach\(\)"):
        np.asarray(x)
    with pytest.raises(RuntimeError, match=r"detach\(\)"):
        (x * 2).numpy()
    if x.device.type == "cpu":
        arr = x.detach().numpy()
        arr[0] = 7.0  # shares memory on the CPU
        assert x.detach().tolist() == [7.0, 2.0]


def test_users_can_set_attributes_on_tensors(device):
    x = _t([1.0], requires_grad=True)
    x.name = "weight"
    x.step = 3
    y = x * 2
    y.tag = {"layer": 1}
    assert (x.name, x.step, y.tag) == ("weight", 3, {"layer": 1})
    y.backward()
    assert x.name == "weight"
    np.testing.assert_array_equal(host(x.grad), [2.])


def test_backward_of_non_scalar_needs_gradient(device):
    x = _t([1.0, 2.0], requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match=r"scalar outputs.*\(2,\)"):
        y.backward()
    y.backward(_t([1.0, -1.0]))
    np.testing.assert_array_equal(host(x.grad), [2., -2.])


def test_gradgradcheck_checks_second_derivatives(device):
    x = gc.tensor([0.3, -1.2, 2.0], dtype=gc.float64, requires_grad=True)
    assert gc.autograd.gradgradcheck(lambda t: (t * t * t).sum(), [x])
    assert gc.autograd.gradgradcheck(lambda t: t.tanh() * t, [x])

    class WrongSecondDerivative(gc.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            return g * 2 * t.detach()  # right first derivative, but cut from the graph

    with pytest.raises(gc.autograd.GradcheckError, match="Jacobian mismatch"):
        gc.autograd.gradgradcheck(lambda t: WrongSecondDerivative.apply(t), [x])


def test_every_node_is_numbered_after_the_nodes_of_its_inputs(device):
    """The engine's order (highest sequence number first) relies on this for every op."""
    import test_ops_table as table

    for op in table.OPS:
        shapes = table._first_shapes(op)
        xs = [gc.tensor(a, requires_grad=True) for a in table._inputs(op, shapes, 1)]
        out = op.fn(gc, *xs)
        x = gc.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y[0] = x[1] * 3                                   # setitem
        y[1:].mul_(x[:1])                                 # in place on a view
        for root in (out.grad_fn, y.grad_fn):
            stack, seen = [root], set()
            while stack:
                node = stack.pop()
                if node is None or node in seen:
                    continue
                seen.add(node)
                assert node.seq != 0, f"{op.name}: {node.name()} has no sequence number"
                for nxt, _ in node.next_functions:
                    if nxt is not None:
                        assert nxt.seq < node.seq, (op.name, node.name(), nxt.name())
                        stack.append(nxt)


def test_the_kept_backward_seed_is_never_shown(device):
    """loss.backward() starts from a one kept per dtype; what a user can see or keep of
    the root gradient (retain_grad, a hook, autograd.grad of the loss itself, a leaf's
    .grad) is a new array, so writing into it changes no later backward."""
    x = gc.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * 3).sum()
    loss.retain_grad()
    loss.backward()
    loss.grad.mul_(5)  # the user's own array
    seen = []
    y = (x * 2).sum()
    y.register_hook(lambda g: seen.append(g) or None)
    y.backward()
    seen[0].add_(7)
    (g,) = gc.autograd.grad((x * 1).sum(), [x])
    s = x.sum()
    (root,) = gc.autograd.grad(s, s)
    root.add_(1)
    scalar = gc.tensor(1.0, requires_grad=True)
    scalar.backward()
    scalar.grad.add_(2)
    x.grad = None
    (x * 4).sum().backward()  # the kept one is still one
    assert x.grad.tolist() == [4.0, 4.0]
    assert loss.grad.item() == 5.0 and seen[0].item() == 8.0 and root.item() == 2.0
    assert scalar.grad.item() == 3.0 and g.tolist() == [1.0, 1.0]


def test_grad_takes_pytorchs_whole_signature():
    """only_inputs (deprecated, ignored), is_grads_batched and dict inputs, as
    torch.autograd.grad: WGAN-GP programs pass only_inputs=True."""
    x = gc.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    (j,) = gc.autograd.grad(y, x, gc.eye(3), True, False, True, None, True)  # (torch's order)
    assert j.tolist() == [[2.0, 0.0, 0.0], [0.0, 4.0, 0.0], [0.0, 0.0, 6.0]]
    (rows,) = gc.autograd.grad(y, x, gc.eye(3) * 2, retain_graph=True, is_grads_batched=True)
    assert rows.shape == (3, 3) and rows.tolist() == [[4.0, 0.0, 0.0], [0.0, 8.0, 0.0],
                                                      [0.0, 0.0, 12.0]]
    named = gc.autograd.grad(y.sum(), {"a": x, "b": x}, retain_graph=True)
    assert list(named) == ["a", "b"] and named["a"].tolist() == [2.0, 4.0, 6.0]
    with pytest.warns(FutureWarning, match="only_inputs argument is deprecated"):
        gc.autograd.grad(y.sum(), x, only_inputs=False, retain_graph=True)
    with pytest.raises(RuntimeError, match="is_grads_batched"):
        gc.autograd.grad(y, x, gc.tensor(1.0), is_grads_batched=True)
