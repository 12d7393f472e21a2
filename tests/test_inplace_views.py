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


# ---- views taken before an in-place change (issue 11, item 8) ----------
def _rebase_cases():
    """Each builds an output from x = [1, 2, 3, 4] where a view is taken *before* an
    in-place change of its base (or of another view of the same base) and used after."""

    def base_mul_then_view(m, x):  # the example
        y = x * 1
        v = y[:2]
        y.mul_(2)
        return v

    def overlapping_views(m, x):
        y = x * 1
        a, b = y[:3], y[1:]
        b.mul_(2)
        return a

    def setitem_on_view_a_read_view_b(m, x):
        y = x * 1
        a, b = y[:2], y[1:3]
        a[1] = x[3] * x[3]
        return b * x[:2]

    def view_of_view_after_base_add(m, x):
        y = x * 1
        v = y.view(2, 2)
        w = v[1]
        y.add_(x * x)
        return w * v[0]

    def transpose_row_zeroed(m, x):
        y = (x * 1).view(2, 2)
        t = y.transpose(0, 1)
        r = y[0]
        t[1].zero_()
        return r * x[:2]

    def setitem_on_base_read_select(m, x):
        y = x * 2
        v = y[1]
        y[1:3] = x[:2] ** 2
        return v * x[3]

    def copy_into_untracked_base(m, x):  # the view starts untracked, ends tracked
        y = m.zeros(4)
        v = y[:2]
        y.copy_(x * 3)
        return v

    def unsqueeze_view_base_mul_by_x(m, x):
        y = x * 1
        u = y.unsqueeze(0)
        y.mul_(x)
        return u * 2

    def column_select_after_add_and_mul(m, x):
        y = (x * 1).reshape(2, 2)
        c = y[:, 0]
        y.add_(1)
        y.mul_(x.view(2, 2))
        return c

    def zero_on_one_view_read_other(m, x):
        y = x * 1
        a, b = y[2:], y[:3]
        a.zero_()
        return b * x[:3]

    def chain_reshape_transpose_select(m, x):
        y = x * 1
        v = y.reshape(2, 2).transpose(0, 1)[0]
        y[0] = x[1] * 5
        return v

    def expanded_view_base_mul(m, x):
        y = x[:1] * 1
        e = y.expand(3)
        y.mul_(x[1])
        return e * x[1:]

    def copy_into_row_read_tail(m, x):
        y = x * 1
        a = y.view(2, 2)
        a[0].copy_(x[2:] * x[2:])
        return y[2:] + a[:, 1]

    def in_place_ops_on_base_and_view(m, x):
        y = x * 1
        v = y[1:3]
        y.mul_(2)
        v.add_(x[:2])
        y.mul_(x)
        return v * y[0]

    def used_before_and_after(m, x):
        y = x * 1
        v = y[:2]
        z = v * 3
        y.mul_(2)
        return z + v

    def view_of_view_written_read_middle(m, x):
        y = x * 1
        v = y[1:]
        w = v[1:]
        w.mul_(x[:2])
        return v

    def untracked_base_row_copy_read_column(m, x):
        y = m.zeros(2, 2)
        r, c = y[0], y[:, 1]
        r.copy_(x[:2] * x[2:])
        return c * x[2:]

    def diagonal_after_base_mul(m, x):
        y = (x * 1).view(2, 2)
        d = y.diagonal()
        y.mul_(x.view(2, 2))
        return d

    def write_through_diagonal(m, x):
        y = (x * 1).view(2, 2)
        y.diagonal().add_(x[:2] * x[2:])
        return y

    return [diagonal_after_base_mul, write_through_diagonal,
            base_mul_then_view, overlapping_views, setitem_on_view_a_read_view_b,
            view_of_view_after_base_add, transpose_row_zeroed, setitem_on_base_read_select,
            copy_into_untracked_base, unsqueeze_view_base_mul_by_x,
            column_select_after_add_and_mul, zero_on_one_view_read_other,
            chain_reshape_transpose_select, expanded_view_base_mul, copy_into_row_read_tail,
            in_place_ops_on_base_and_view, used_before_and_after,
            view_of_view_written_read_middle, untracked_base_row_copy_read_column]


# (output, d(sum(out * w))/dx, d(sum(grad * grad))/dx of that gradient with
# create_graph=True) for x = [1, 2, 3, 4] and w = 1, 2, ..., from PyTorch 2.13
REBASE_EXPECTED = {
    "diagonal_after_base_mul": ([1.0, 16.0],
                              [2.0, 0.0, 0.0, 16.0],
                              [8.0, 0.0, 0.0, 128.0]),
    "write_through_diagonal": ([4.0, 2.0, 3.0, 12.0],
                             [4.0, 18.0, 4.0, 12.0],
                             [8.0, 96.0, 8.0, 144.0]),
    "base_mul_then_view": ([2.0, 4.0],
                           [2.0, 4.0, 0.0, 0.0],
                           [0.0, 0.0, 0.0, 0.0]),
    "overlapping_views": ([1.0, 4.0, 6.0],
                          [1.0, 4.0, 6.0, 0.0],
                          [0.0, 0.0, 0.0, 0.0]),
    "setitem_on_view_a_read_view_b": ([16.0, 6.0],
                                      [16.0, 6.0, 4.0, 8.0],
                                      [128.0, 16.0, 24.0, 288.0]),
    "view_of_view_after_base_add": ([24.0, 120.0],
                                    [36.0, 200.0, 14.0, 108.0],
                                    [2316.0, 51440.0, 1624.0, 41184.0]),
    "transpose_row_zeroed": ([1.0, 0.0],
                             [2.0, 0.0, 0.0, 0.0],
                             [8.0, 0.0, 0.0, 0.0]),
    "setitem_on_base_read_select": ([4.0],
                                    [8.0, 0.0, 0.0, 1.0],
                                    [132.0, 0.0, 0.0, 32.0]),
    "copy_into_untracked_base": ([3.0, 6.0],
                                 [3.0, 6.0, 0.0, 0.0],
                                 [0.0, 0.0, 0.0, 0.0]),
    "unsqueeze_view_base_mul_by_x": ([2.0, 8.0, 18.0, 32.0],
                                     [4.0, 16.0, 36.0, 64.0],
                                     [32.0, 256.0, 864.0, 2048.0]),
    "column_select_after_add_and_mul": ([2.0, 12.0],
                                        [3.0, 0.0, 14.0, 0.0],
                                        [12.0, 0.0, 112.0, 0.0]),
    "zero_on_one_view_read_other": ([1.0, 4.0, 0.0],
                                    [2.0, 8.0, 0.0, 0.0],
                                    [8.0, 64.0, 0.0, 0.0]),
    "chain_reshape_transpose_select": ([10.0, 3.0],
                                       [0.0, 5.0, 2.0, 0.0],
                                       [0.0, 0.0, 0.0, 0.0]),
    "expanded_view_base_mul": ([4.0, 6.0, 8.0],
                               [40.0, 22.0, 4.0, 6.0],
                               [1072.0, 1900.0, 408.0, 612.0]),
    "copy_into_row_read_tail": ([19.0, 8.0],
                                [0.0, 0.0, 1.0, 12.0],
                                [0.0, 0.0, 0.0, 48.0]),
    "in_place_ops_on_base_and_view": ([20.0, 48.0],
                                      [236.0, 30.0, 56.0, 0.0],
                                      [133320.0, 30192.0, 54896.0, 0.0]),
    "used_before_and_after": ([5.0, 10.0],
                              [5.0, 10.0, 0.0, 0.0],
                              [0.0, 0.0, 0.0, 0.0]),
    "view_of_view_written_read_middle": ([2.0, 3.0, 8.0],
                                         [6.0, 13.0, 2.0, 6.0],
                                         [8.0, 36.0, 24.0, 78.0]),
    "untracked_base_row_copy_read_column": ([24.0, 0.0],
                                            [0.0, 12.0, 8.0, 6.0],
                                            [0.0, 100.0, 120.0, 104.0]),
}


def _rebase_run(m, fn):
    x = m.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    out = fn(m, x)
    w = m.tensor(np.arange(1.0, 1 + out.numel(), dtype=np.float32).reshape(tuple(out.shape)))
    (g,) = m.autograd.grad((out * w).sum(), x, create_graph=True)
    gg = [0.0] * 4
    if g.requires_grad:
        (second,) = m.autograd.grad((g * g).sum(), x, allow_unused=True)
        if second is not None:
            gg = second.tolist()
    # the plain backward too (no create_graph), into .grad
    x2 = m.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    (fn(m, x2) * w).sum().backward()
    return out.detach().reshape(-1).tolist(), g.detach().tolist(), gg, x2.grad.tolist()


@pytest.mark.parametrize("fn", _rebase_cases(), ids=lambda f: f.__name__)
def test_view_taken_before_an_in_place_change_reads_it(fn, device):
    out, g, gg, plain = _rebase_run(gc, fn)
    want_out, want_g, want_gg = REBASE_EXPECTED[fn.__name__]
    np.testing.assert_allclose(out, want_out, rtol=1e-6)
    np.testing.assert_allclose(g, want_g, rtol=1e-6)
    np.testing.assert_allclose(plain, want_g, rtol=1e-6)
    np.testing.assert_allclose(gg, want_gg, rtol=1e-6)


@needs_torch
@pytest.mark.parametrize("fn", _rebase_cases(), ids=lambda f: f.__name__)
def test_view_rebase_matches_pytorch(fn):
    import torch

    ours, theirs = _rebase_run(gc, fn), _rebase_run(torch, fn)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_rebased_view_history_is_as_strided(device):
    x = gc.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x * 1
    v = y[:2]
    assert v.grad_fn.name() == "SliceBackward0"
    y.mul_(2)
    assert v._version == y._version == 1
    # rebased when read: by an op, by backward, or by repr
    assert "AsStridedBackward0" in repr(v)  # as PyTorch's
    assert v.grad_fn.name() == "AsStridedBackward0"
    assert v.grad_fn.next_functions[0][0] is y.grad_fn
    z = v * 1
    assert z.grad_fn.next_functions[0][0] is v.grad_fn
    w = y[1:]  # taken after the change: nothing to rebase
    assert w.grad_fn.name() == "SliceBackward0"
    assert (w * 1).grad_fn.next_functions[0][0] is w.grad_fn


@pytest.mark.parametrize("maker", ["new_node", "record", "record1"])
def test_nodes_are_wired_alike_by_the_factory_and_record1(maker):
    # record1 has new_node's one-input case inlined: a leaf, an op's output and a view
    # whose base changed since (rebased first) get the same edge, and a later number
    from gradcore.autograd.tensor_base import new_node
    from gradcore.ops._core import record, record1
    from gradcore.ops.pointwise import NegBackward0

    make = {"new_node": lambda t: new_node(NegBackward0, (t,)),
            "record": lambda t: record(-t._data, NegBackward0, t).grad_fn,
            "record1": lambda t: record1(-t._data, NegBackward0, t).grad_fn}[maker]
    x = gc.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    v = y[:2]
    y.mul_(2)
    for t in (x, y, v):
        node = make(t)
        assert type(node) is NegBackward0
        fn = t.grad_fn if t is not x else x._accumulator()
        assert node.next_functions == ((fn, 0),)
        assert node.seq > fn.seq
    assert v.grad_fn.name() == "AsStridedBackward0"


def test_element_view_writes_its_base(device):
    # NumPy returns a scalar for y[0]; the view must share y's memory, as in PyTorch
    y = gc.zeros(3)
    y[0].add_(1)
    y[2].fill_(5)
    np.testing.assert_array_equal(host(y), [1.0, 0.0, 5.0])
    x = gc.tensor([1.0, 2.0, 3.0], requires_grad=True)
    z = x * 1
    e = z[1]
    z.mul_(3)
    assert e.item() == 6.0
    e.backward()
    np.testing.assert_array_equal(host(x.grad), [0.0, 3.0, 0.0])


def test_untracked_views_join_when_their_base_does(device, monkeypatch):
    from gradcore.ops import _core

    walks = []
    real = _core._gc.get_referrers
    # a walk: a search for the holders of a version cell (a list); finding the tensor
    # that owns a referring __dict__ is part of the same walk
    monkeypatch.setattr(_core._gc, "get_referrers",
                        lambda *objs: (type(objs[0]) is list and walks.append(1)) or
                        real(*objs))
    x = gc.tensor([1.0, 2.0], requires_grad=True)
    # no view of the buffer is alive: no walk (the view being written sets its own)
    buf = gc.zeros(4)
    buf[:2] = x * 3
    buf2 = gc.zeros(4)
    buf2[2:].copy_(x)
    assert walks == []
    # a live untracked view joins the graph with its base
    buf = gc.zeros(4)
    v = buf[1:3]
    assert not v.requires_grad
    buf[:2] = x * 3
    assert walks == [1]
    assert v.requires_grad and v.grad_fn.name() == "AsStridedBackward0"
    v.sum().backward()
    np.testing.assert_array_equal(host(x.grad), [0.0, 3.0])
    np.testing.assert_array_equal(host(v.detach()), [6.0, 0.0])


@pytest.mark.parametrize("how", ["mul_", "iadd", "setitem", "no_grad", "tracked"])
def test_in_place_into_an_expanded_view_is_refused(how, device):
    # NumPy refused with "output array is read-only"; CuPy wrote the last value silently
    e = gc.ones(3, 1).expand(3, 4)
    msg = "more than one element of the written-to tensor refers to a single memory location"
    with pytest.raises(RuntimeError, match=msg):
        if how == "mul_":
            e.mul_(2)
        elif how == "iadd":
            e += 1
        elif how == "setitem":
            e[0] = 5.0
        elif how == "no_grad":
            with gc.no_grad():
                e.mul_(2)
        else:
            x = gc.ones(3, 1, requires_grad=True)
            (x * 1).expand(3, 4).mul_(2)
    # a strided view without repeats is fine
    base = gc.ones(3, 4)
    base[:, 1].mul_(2)
    np.testing.assert_array_equal(host(base)[:, 1], [2.0, 2.0, 2.0])


@needs_torch
def test_in_place_into_an_expanded_view_matches_pytorch():
    import torch

    for m in (gc, torch):
        with pytest.raises(RuntimeError, match="refers to a single memory location"):
            m.ones(3, 1).expand(3, 4).mul_(2)


def _random_view_program(m, rng):
    """Views of views of a base (x * 1, or zeros that join the graph when a value of x is
    written in) — slices, selects, transposes, unsqueezes, flat views, diagonals — and
    in-place changes through any of them, in a random order; the output reads every
    tensor made."""
    x = m.tensor(np.arange(1.0, 13.0, dtype=np.float32).reshape(3, 4) / 4, requires_grad=True)
    flat = x.reshape(-1)
    ts = [x * 1 if rng.random() < 0.5 else m.zeros(3, 4)]  # a base in a graph, or not yet
    for _ in range(rng.randint(2, 7)):
        t = ts[rng.randrange(len(ts))]
        if rng.random() < 0.5:
            kind = rng.choice(["slice", "select", "T", "unsqueeze", "view", "diagonal"])
            if kind == "slice" and t.ndim >= 1 and t.shape[0] > 1:
                ts.append(t[rng.randrange(t.shape[0] - 1):])
            elif kind == "select" and t.ndim >= 2:
                ts.append(t[rng.randrange(t.shape[0])])
            elif kind == "T" and t.ndim == 2:
                ts.append(t.transpose(0, 1))
            elif kind == "unsqueeze":
                ts.append(t.unsqueeze(0))
            elif kind == "view" and t.is_contiguous():
                ts.append(t.view(-1))
            elif kind == "diagonal" and t.ndim == 2:
                ts.append(t.diagonal())
        else:
            # (PyTorch's in-place check reads a view's grad_fn without regenerating it:
            # a view of a base that joined a graph would pass for a leaf there)
            _ = t.grad_fn
            op = rng.choice(["mul_x", "add_", "mul_", "zero_", "copy_", "setitem"])
            if op == "mul_x":
                t.mul_(flat[rng.randrange(12)])
            elif op == "add_":
                t.add_(0.5)
            elif op == "mul_":
                t.mul_(3.0)
            elif op == "zero_" and rng.random() < 0.3:
                t.zero_()
            elif op == "copy_":
                t.copy_(flat[: t.numel()].reshape(tuple(t.shape)) * 2)
            elif op == "setitem" and t.ndim >= 1:
                t[0] = flat[rng.randrange(12)] ** 2
    out = 0
    for i, t in enumerate(ts):
        w = m.tensor(np.cos(np.arange(t.numel(), dtype=np.float32) + i).reshape(tuple(t.shape)))
        out = out + (t * w).sum()
    if out.requires_grad:  # (nothing of x may have been written into zeros)
        out.backward()
    grad = x.grad.tolist() if x.grad is not None else [[0.0] * 4] * 3
    return [t.detach().tolist() for t in ts], grad


@needs_torch
def test_random_view_programs_match_pytorch(device):
    import random

    import torch

    for seed in range(150):
        (ours, g), (theirs, tg) = (_random_view_program(m, random.Random(seed))
                                   for m in (gc, torch))
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"seed {seed}")
        np.testing.assert_allclose(g, tg, rtol=1e-4, atol=1e-5, err_msg=f"seed {seed}")


def test_views_join_after_tensors_have_separate_dicts(device):
    """Once the Tensor class's shared attribute layout is full (a tensor given an
    attribute of its own, many times over), new tensors keep their attributes in a
    separate __dict__, which the collector names as the version cell's holder: the
    untracked view is found all the same (it was missed when a 100,000-op chain ran
    first in the same process)."""
    for i in range(40):
        t = gc.zeros(1)
        setattr(t, f"user_attribute_{i}", i)
    x = gc.tensor([1.0, 2.0], requires_grad=True)
    buf = gc.zeros(4)
    v = buf[1:3]
    buf[:2] = x * 3
    assert v.requires_grad and v.grad_fn.name() == "AsStridedBackward0"
    v.sum().backward()
    np.testing.assert_array_equal(host(x.grad), [0.0, 3.0])
