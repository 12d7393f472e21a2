"""PyTorch's order of axes in mixed indexing (issue 11, item 15).

PyTorch applies an int index first, as a ``select``: ints are not advanced indices there,
as they are in NumPy. So ``x[0, :, idx]`` has the axes of ``x[0][:, idx]``, shape
``(3, 2, 5)`` for ``x`` of shape ``(2, 3, 4, 5)``, where NumPy gives ``(2, 3, 5)``. Each row
of the table is checked for the shape (stated), the values, the gradient and the
assignment against a reference that does what PyTorch does (ints and Python bools
first, then the arrays on what is left), and against PyTorch itself when installed.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradcore as gc

from conftest import host, needs_torch

S, E = slice(None), Ellipsis
MASK34 = [[True, False, True, False], [False, True, True, False], [True, True, False, False]]
SHAPE = (2, 3, 4, 5)

# (id, index: ints, slices, None, ..., Python bools and lists as they are; ("t", v) an int64
# tensor, ("m", v) a bool tensor, ("t0", v) a 0-d int64 tensor), PyTorch's result shape
TABLE = [
    ("0,:,t", (0, S, ("t", [0, 3])), (3, 2, 5)),
    ("0,:,t2d", (0, S, ("t", [[0, 1], [2, 3]])), (3, 2, 2, 5)),
    (":,0,:,t", (S, 0, S, ("t", [1, 4, 0])), (2, 4, 3)),
    ("0,...,t", (0, E, ("t", [1, 2])), (3, 4, 2)),
    ("0,:,:,t", (0, S, S, ("t", [4, 0])), (3, 4, 2)),
    ("None,0,:,t", (None, 0, S, ("t", [0, 2])), (1, 3, 2, 5)),
    ("0,None,:,t", (0, None, S, ("t", [0, 2])), (1, 3, 2, 5)),
    ("1,:,list", (1, S, [3, 1]), (3, 2, 5)),
    ("-1,:,t,0", (-1, S, ("t", [0, 3]), 0), (3, 2)),
    (":,t,:,0", (S, ("t", [2, 0]), S, 0), (2, 2, 4)),
    ("t,:,0", (("t", [1, 0]), S, 0), (2, 3, 5)),
    ("0,t,:,t", (0, ("t", [0, 2]), S, ("t", [1, 3])), (2, 4)),
    ("t,0,t", (("t", [1, 0]), 0, ("t", [3, 2])), (2, 5)),
    ("0,t,0,t", (0, ("t", [0, 2]), 0, ("t", [1, 3])), (2,)),
    (":,t,0,t", (S, ("t", [0, 2]), 0, ("t", [1, 3])), (2, 2)),
    ("0,:,mask", (0, S, ("m", MASK34[0])), (3, 2, 5)),
    ("0,mask34", (0, ("m", MASK34)), (6, 5)),
    ("1,:,mask45", (1, S, ("m", [[True, False, True, False, True]] * 4)), (3, 12)),
    ("0,mask3,:,t", (0, ("m", [True, False, True]), S, ("t", [1, 4])), (2, 4)),
    ("True,0,:,t", (True, 0, S, ("t", [0, 1])), (2, 3, 5)),
    ("0,True,t", (0, True, ("t", [0, 2])), (2, 4, 5)),
    ("0,:,1:3,t", (0, S, slice(1, 3), ("t", [4, 4, 0])), (3, 2, 3)),
    ("0,::2,t,t", (0, slice(None, None, 2), ("t", [1, 2]), ("t", [0, 4])), (2, 2)),
    ("t0,:,t", (("t0", 1), S, ("t", [2, 0])), (3, 2, 5)),
    ("t,:,:,0", (("t", [1, 1]), S, S, 0), (2, 3, 4)),
    ("...,t,:,0", (E, ("t", [1, 1]), S, 0), (2, 2, 4)),
    ("0,...,t,:", (0, E, ("t", [0, 2]), S), (3, 2, 5)),
    ("t,...", (("t", [1, 0]),), (2, 3, 4, 5)),
    (":,:,t", (S, S, ("t", [3, 0])), (2, 3, 2, 5)),
    ("rows,cols", (("t", [1, 0]), ("t", [2, 1])), (2, 4, 5)),
]


def _index(m, spec):
    """The index for module ``m`` (gradcore or torch)."""
    out = []
    for i in spec:
        if isinstance(i, tuple) and i[0] in ("t", "t0"):
            out.append(m.tensor(i[1], dtype=m.int64))
        elif isinstance(i, tuple) and i[0] == "m":
            out.append(m.tensor(i[1]))
        else:
            out.append(i)
    return tuple(out)


def _reference(arr, spec):
    """What PyTorch computes, written independently of gradcore: ints select first
    (a Python bool adds an axis, indexed by [0]), then the arrays index what is left,
    where no int remains to make NumPy's order differ from PyTorch's."""
    first, second = [], []
    for i in spec:
        if isinstance(i, tuple):
            kind, v = i
            if kind == "t0":
                first.append(int(v))
                continue
            a = np.asarray(v)
            first.append(S)
            first.extend([S] * (a.ndim - 1))
            second.append(a)
        elif isinstance(i, list):
            first.append(S)
            second.append(np.asarray(i))
        elif isinstance(i, bool):
            first.append(None)
            second.append(np.array([0] if i else [], dtype=np.int64))
        elif isinstance(i, int):
            first.append(i)
        else:
            first.append(i)
            second.append(i if i is E else S)
    if E not in first:  # trailing axes: keep the two steps aligned
        first.append(E)
    step = arr[tuple(first)]
    return step[tuple(second)] if second else step


def _x(device, requires_grad=False):
    return gc.arange(120., device=device).reshape(SHAPE).requires_grad_(requires_grad) \
        if requires_grad else gc.arange(120., device=device).reshape(SHAPE)


def _positions(spec):
    return _reference(np.arange(120).reshape(SHAPE), spec)


@pytest.mark.parametrize("spec,shape", [r[1:] for r in TABLE], ids=[r[0] for r in TABLE])
def test_getitem_order_values_and_gradient(device, spec, shape):
    x = gc.arange(120., device=device).reshape(SHAPE)
    x.requires_grad = True
    y = x[_index(gc, spec)]
    assert tuple(y.shape) == shape
    expected = _reference(np.arange(120.).reshape(SHAPE), spec)
    assert expected.shape == shape  # (the reference agrees with the stated shape)
    np.testing.assert_array_equal(host(y), expected)
    w = np.arange(1., 1. + expected.size).reshape(shape)
    (y * gc.tensor(w, device=device)).sum().backward()
    grad = np.bincount(_positions(spec).ravel(), weights=w.ravel(), minlength=120)
    np.testing.assert_array_equal(host(x.grad), grad.reshape(SHAPE))


@pytest.mark.parametrize("spec,shape", [r[1:] for r in TABLE], ids=[r[0] for r in TABLE])
def test_setitem_order_and_gradients(device, spec, shape):
    pos = _positions(spec)
    if len(set(pos.ravel().tolist())) != pos.size:
        pytest.skip("repeated positions: which write wins is unspecified, as in PyTorch")
    value = -np.arange(1., 1. + pos.size).reshape(shape)
    # untracked
    x = gc.arange(120., device=device).reshape(SHAPE)
    x[_index(gc, spec)] = gc.tensor(value, device=device)
    expected = np.arange(120.)
    expected[pos.ravel()] = value.ravel()
    np.testing.assert_array_equal(host(x).ravel(), expected)
    # tracked: the value's gradient arrives in its own order, the base's is cut there
    leaf = gc.zeros(SHAPE, device=device, requires_grad=True)
    v = gc.tensor(value, device=device, requires_grad=True)
    y = leaf * 1
    y[_index(gc, spec)] = v
    w = np.arange(1., 121.).reshape(SHAPE)
    (y * gc.tensor(w, device=device)).sum().backward()
    np.testing.assert_array_equal(host(v.grad), w.ravel()[pos])
    g = w.ravel().copy()
    g[pos.ravel()] = 0
    np.testing.assert_array_equal(host(leaf.grad).ravel(), g)


def test_setitem_broadcasts_a_value_in_pytorchs_order(device):
    x = gc.zeros(SHAPE, device=device)
    x[0, :, gc.tensor([0, 3])] = gc.tensor([1., 2., 3., 4., 5.], device=device)  # region (3, 2, 5)
    got = host(x)
    assert (got[0, :, [0, 3]] == np.arange(1., 6.)).all()
    x = gc.zeros(SHAPE, device=device)
    x[0, :, gc.tensor([0, 3])] = gc.tensor([[7.], [8.]], device=device)  # (2, 1): along idx
    got = host(x)
    assert (got[0, :, 0] == 7.).all() and (got[0, :, 3] == 8.).all()
    with pytest.raises(RuntimeError, match=r"setitem.*\(3,\).*\(3, 2, 5\)"):
        x[0, :, gc.tensor([0, 3])] = gc.ones(3, device=device)


def test_inplace_on_a_view_with_mixed_index(device):
    leaf = gc.zeros(SHAPE, device=device, requires_grad=True)
    base = leaf * 1
    view = base[1:]  # a view of a tensor in the graph: recorded on the base
    v = gc.tensor(-np.arange(1., 31.).reshape(3, 2, 5), device=device, requires_grad=True)
    view[0, :, gc.tensor([0, 3])] = v
    expected = np.zeros(SHAPE)
    expected[1][:, [0, 3]] = -np.arange(1., 31.).reshape(3, 2, 5)
    np.testing.assert_array_equal(host(base), expected)
    w = np.arange(1., 121.).reshape(SHAPE)
    (base * gc.tensor(w, device=device)).sum().backward()
    np.testing.assert_array_equal(host(v.grad), w[1][:, [0, 3]])


def test_create_graph_through_a_mixed_index(device):
    x = gc.arange(1., 121., device=device).reshape(SHAPE)
    x.requires_grad = True
    y = (x[0, :, gc.tensor([0, 3])] ** 2).sum()
    (g,) = gc.autograd.grad(y, x, create_graph=True)
    expected = np.zeros(SHAPE)
    expected[0][:, [0, 3]] = 2 * np.arange(1., 121.).reshape(SHAPE)[0][:, [0, 3]]
    np.testing.assert_array_equal(host(g), expected)
    (g * gc.tensor(np.arange(120.).reshape(SHAPE), device=device)).sum().backward()
    h = np.zeros(SHAPE)
    h[0][:, [0, 3]] = 2 * np.arange(120.).reshape(SHAPE)[0][:, [0, 3]]
    np.testing.assert_array_equal(host(x.grad), h)


@needs_torch
@pytest.mark.parametrize("spec,shape", [r[1:] for r in TABLE], ids=[r[0] for r in TABLE])
def test_indexing_matches_torch(spec, shape):
    import torch

    tx = torch.arange(120., dtype=torch.float64).reshape(SHAPE).requires_grad_()
    ty = tx[_index(torch, spec)]
    assert tuple(ty.shape) == shape
    w = torch.arange(1., 1. + ty.numel(), dtype=torch.float64).reshape(ty.shape)
    (ty * w).sum().backward()
    x = gc.arange(120., dtype=gc.float64).reshape(SHAPE)
    x.requires_grad = True
    y = x[_index(gc, spec)]
    np.testing.assert_array_equal(host(y), ty.detach().numpy())
    (y * gc.tensor(w.numpy())).sum().backward()
    np.testing.assert_array_equal(host(x.grad), tx.grad.numpy())
    pos = _positions(spec)
    if len(set(pos.ravel().tolist())) == pos.size:
        value = -torch.arange(1., 1. + ty.numel(), dtype=torch.float64).reshape(ty.shape)
        tz = torch.zeros(SHAPE, dtype=torch.float64)
        tz[_index(torch, spec)] = value
        z = gc.zeros(SHAPE, dtype=gc.float64)
        z[_index(gc, spec)] = gc.tensor(value.numpy())
        np.testing.assert_array_equal(host(z), tz.numpy())
