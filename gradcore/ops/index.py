"""Indexing: ``t[...]``, ``t[...] = v``, gather, scatter, scatter_add, scatter_reduce,
index_select, index_copy, index_add, masked_fill, masked_select, masked_scatter,
take_along_dim.

Gradients of advanced (integer array) indices accumulate where indices repeat.
"""

from __future__ import annotations

import builtins
import re
import warnings

import numpy as np

from .. import dtypes
from ..autograd.tensor_base import AsStridedBackward0  # noqa: F401  (its home before)
from ..backend import check_range, math_of
from ._core import (
    TENSOR_TYPES,
    Node,
    Tensor,
    adopt_views,
    as_tensor,
    make_view,
    mode,
    new_node,
    normalize_dim,
    record,
    view_history,
    wrap,
)
from ._export import export

_BASIC = (int, slice, type(None), type(Ellipsis))


def _convert_index(idx, x: Tensor):
    """A NumPy/CuPy-ready index: tensors become arrays, lists become arrays."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    m = math_of(x._data)
    out = []
    for i in idx:
        if isinstance(i, Tensor):
            d = i._data
            if d.dtype.kind == "f":
                raise IndexError(f"tensors used as indices must be long, int, byte or bool "
                                 f"tensors, got {i.dtype!r}")
            if d.ndim == 0 and d.dtype.kind in "iu":
                out.append(int(d))
            else:
                out.append(d)
        elif isinstance(i, (list, np.ndarray)) or (not isinstance(i, _BASIC) and
                                                   hasattr(i, "__array__")):
            arr = m.asarray(i)
            if arr.dtype.kind == "f":
                raise IndexError("tensors used as indices must be long, int, byte or bool "
                                 "tensors, got float")
            out.append(arr)
        elif isinstance(i, np.integer):
            out.append(int(i))
        elif isinstance(i, np.bool_):
            out.append(bool(i))
        elif isinstance(i, (float, complex)):
            # refused here: NumPy raises, but CuPy takes int() of a scalar (x[1.5] is x[1])
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long "
                             f"or byte Variables are valid indices (got {type(i).__name__})")
        else:
            out.append(i)
    return tuple(out)


def _torch_order(index, ndim):
    """Where PyTorch puts the axes of an advanced index that NumPy puts elsewhere.

    PyTorch applies an int index first, as a ``select`` (ints are not advanced indices
    there, as they are in NumPy), so in ``x[0, :, idx]`` the index arrays' axes stay where
    ``idx`` is, ``x[0][:, idx]``, while NumPy moves them to the front (an int and an array
    separated by a slice are not adjacent). For a converted index with both an int and an
    array, returns ``(p_np, p_torch, n_basic)``: the position of the block of advanced
    axes in NumPy's result and in PyTorch's, and how many other axes the result has;
    None when the two agree.
    """
    for i in index:  # fast exit: without an int (x[idx], x[:, idx], x[mask]) they agree
        if type(i) is int:
            break
    else:
        return None
    has_int = has_array = False
    first = last = -1
    for k, i in enumerate(index):
        if type(i) is int:
            has_int = True
        elif i is None or i is Ellipsis or type(i) is slice:
            continue
        else:
            has_array = True
        if first < 0:
            first = k
        last = k
    if not (has_int and has_array):
        return None
    for i in index[first:last]:
        if i is None or i is Ellipsis or type(i) is slice:
            break
    else:  # ints and arrays side by side (x[idx, 0]): NumPy's order is PyTorch's
        return None
    named = 0
    for i in index:
        if type(i) is int or type(i) is slice:
            named += 1
        elif not (i is None or i is Ellipsis or type(i) is bool):
            named += i.ndim if i.dtype.kind == "b" else 1
    # per rule: [first position (in basic axes), a gap seen after the first, not adjacent]
    np_rule, torch_rule = [None, False, False], [None, False, False]
    n_basic = 0
    for i in index:
        if i is Ellipsis:
            width = ndim - named
        elif i is None or type(i) is slice:
            width = 1
        else:
            for rule in ((np_rule, torch_rule) if type(i) is not int else (np_rule,)):
                if rule[0] is None:
                    rule[0] = n_basic
                elif rule[1]:
                    rule[2] = True
            continue
        if width:
            for rule in (np_rule, torch_rule):
                if rule[0] is not None:
                    rule[1] = True
        n_basic += width
    if not builtins.any(i is Ellipsis for i in index):
        n_basic += ndim - named  # the axes after the index, as an Ellipsis at its end
    p_np = 0 if np_rule[2] else np_rule[0]
    p_torch = 0 if torch_rule[2] else torch_rule[0]
    return None if p_np == p_torch else (p_np, p_torch, n_basic)


def _torch_axes(order, out_ndim):
    """The transpose taking NumPy's result to PyTorch's (see :func:`_torch_order`)."""
    p_np, p_torch, n_basic = order
    block = list(range(p_np, p_np + out_ndim - n_basic))
    rest = [k for k in range(out_ndim) if not p_np <= k < p_np + len(block)]
    return tuple(rest[:p_torch] + block + rest[p_torch:])


def _inverse(axes):
    inv = [0] * len(axes)
    for k, a in enumerate(axes):
        inv[a] = k
    return tuple(inv)


def _take(arr, index):
    """``arr[index]`` for a converted index, with PyTorch's order of axes."""
    out = arr[index]
    order = _torch_order(index, arr.ndim)
    if order is not None:
        out = math_of(out).ascontiguousarray(out.transpose(_torch_axes(order, out.ndim)))
    return out


def _array_axes(index, ndim):
    """``(array, axis)`` for each array (with dimensions) of a converted index: the first
    axis it picks along (an Ellipsis stands for the axes no other part names; None
    names none; a boolean mask names as many as it has)."""
    def is_mask(i):
        return getattr(i, "dtype", None) is not None and i.dtype.kind == "b"

    named = 0
    for i in index:
        if i is not None and i is not Ellipsis:
            named += i.ndim if is_mask(i) else 1
    out, axis = [], 0
    for i in index:
        if i is Ellipsis:
            axis += ndim - named
        elif i is None:
            continue
        elif getattr(i, "dtype", None) is not None:
            if i.ndim:
                out.append((i, axis))
            axis += i.ndim if is_mask(i) else 1  # (a 0-d mask names no axis)
        else:
            axis += 1
    return out


class IndexOutOfRangeError(IndexError, RuntimeError):
    """An index out of range where PyTorch raises either, depending on the dimension
    (``index_select``: IndexError along dim 0, RuntimeError along others)."""


def _out_of_bounds(op, axis, size, shape, cls=IndexError):
    def error(value):
        return cls(f"{op}index {value} is out of bounds for dimension {axis} with size {size} "
                   f"(a tensor of shape {tuple(shape)})")
    return error


def _check_arrays(m, index, shape, op=""):
    """The arrays of an advanced index: a boolean mask must match the axes it covers
    (PyTorch's error; NumPy and CuPy word it differently), and an integer array must be
    in range, which NumPy checks by itself and CuPy does not (it wraps around): there it
    is checked without waiting (``backend.check_range``)."""
    on_device = not m.values_on_host
    for arr, axis in _array_axes(index, len(shape)):
        if arr.dtype.kind == "b":
            for k, size in enumerate(arr.shape):
                if axis + k >= len(shape) or shape[axis + k] != size:
                    raise IndexError(f"The shape of the mask {list(arr.shape)} at index {k} "
                                     f"does not match the shape of the indexed tensor "
                                     f"{list(shape)} at index {axis + k} (a tensor of shape "
                                     f"{tuple(shape)})")
        elif on_device:
            n = shape[axis]
            check_range(arr, -n, n, _out_of_bounds(op, axis, n, shape))


_NUMPY_INDEX_ERRORS = (  # (CuPy says "Index" where NumPy says "index")
    (re.compile(r"[Ii]ndex (-?\d+) is out of bounds for axis (\d+) with size (\d+)"),
     "index {0} is out of bounds for dimension {1} with size {2}"),
    (re.compile(r"too many indices for array: array is (\d+)-dimensional"),
     "too many indices for tensor of dimension {0}"),
)


def _index_error(exc, idx, shape, op=""):
    """NumPy's or CuPy's IndexError of an index, as PyTorch words it (with the tensor's
    shape)."""
    msg = str(exc)
    if not len(shape) and not isinstance(idx, tuple):  # (PyTorch's words for a 0-d tensor)
        if isinstance(idx, int) and not isinstance(idx, bool):
            return IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python "
                              "or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a "
                              "number")
        if isinstance(idx, slice):
            return IndexError("slice() cannot be applied to a 0-dim tensor.")
    for pattern, words in _NUMPY_INDEX_ERRORS:
        m = pattern.search(msg)
        if m:
            return IndexError(f"{op}{words.format(*m.groups())} (a tensor of shape "
                              f"{tuple(shape)})")
    if msg.startswith("only integers"):
        bad = next((i for i in (idx if isinstance(idx, tuple) else (idx,))
                    if not isinstance(i, (int, slice, type(None), type(Ellipsis), Tensor,
                                          list, np.ndarray))), None)
        return IndexError(f"{op}only integers, slices (`:`), ellipsis (`...`), None and long "
                          f"or byte Variables are valid indices (got "
                          f"{type(bad).__name__ if bad is not None else 'an invalid index'})")
    return IndexError(f"{op}index {idx!r} is not valid for a tensor of shape {tuple(shape)} "
                      f"({msg})")


def _is_basic(idx) -> bool:
    for i in idx:
        if not isinstance(i, _BASIC) or isinstance(i, bool):
            return False
    return True


def _expand_bool(idx):
    """Boolean masks as the integer arrays they select (what ``add.at`` needs)."""
    out = []
    for i in idx:
        if hasattr(i, "dtype") and i.dtype.kind == "b":
            out.extend(math_of(i).nonzero(i))
        else:
            out.append(i)
    return tuple(out)


def _node_name(idx):
    if not _is_basic(idx):
        return "IndexBackward0"
    last = [i for i in idx if i is not Ellipsis]
    if last and builtins.all(i is None for i in last):
        return "UnsqueezeBackward0"
    real = [i for i in last if i is not None]
    return "SelectBackward0" if real and isinstance(real[-1], int) else "SliceBackward0"


class IndexBackward0(Node):
    fresh_grads = True
    axes = None  # the transpose back to NumPy's order of axes (see _torch_order)

    def apply(self, F, g):
        if self.basic:
            return (F.place_into_zeros(g, self.index, self.in_shape),)
        if self.axes is not None:
            g = F.transpose(g, self.axes)
        return (F.index_add_into_zeros(g, self.index, self.in_shape),)

    def name(self):
        return self._name


def getitem(x, idx):
    """``x[idx]``: ints, slices (with steps), None, ..., integer tensors and bool masks."""
    if type(idx) is tuple and len(idx) == 2 and type(idx[0]) in TENSOR_TYPES and \
            type(idx[1]) in TENSOR_TYPES:
        # fast path: x[rows, cols] with two integer index tensors (picking class scores)
        i0, i1 = idx[0]._data, idx[1]._data
        if i0.dtype.kind in "iu" and i1.dtype.kind in "iu" and x._data.ndim == 2:
            return _gather_rows_cols(x, (i0, i1))
    index = _convert_index(idx, x)
    xd = x._data
    basic = _is_basic(index)
    if not basic:  # (before indexing: a mask of the wrong shape gets PyTorch's error)
        _check_arrays(math_of(xd), index, xd.shape)
    try:
        out = xd[index]
    except IndexError as exc:
        raise _index_error(exc, idx, xd.shape) from None
    if type(out) is not type(xd):  # NumPy gives a scalar for an element: take a 0-d view
        out = xd[index + (Ellipsis,)] if basic else math_of(xd).asarray(out)
    axes = None
    if not basic:
        order = _torch_order(index, xd.ndim)
        if order is not None:  # an int and an array: PyTorch's order of axes
            axes = _torch_axes(order, out.ndim)
            out = math_of(out).ascontiguousarray(out.transpose(axes))
    if not (mode.enabled and x._rg):
        t = wrap(out)
    else:
        t = record(out, IndexBackward0, x)
        node = t.grad_fn
        node.basic = basic
        node.index = index if basic else _expand_bool(index)
        node.in_shape, node._name = xd.shape, _node_name(index)
        if axes is not None:
            node.axes = _inverse(axes)
    if basic:
        make_view(t, x)
    return t


def _gather_rows_cols(x, index):
    xd = x._data
    try:
        out = xd[index]
    except IndexError as exc:
        raise _index_error(exc, index, xd.shape) from None
    m = math_of(xd)
    if not m.values_on_host:  # (two integer arrays: nothing to check on the host)
        _check_arrays(m, index, xd.shape)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record(out, IndexBackward0, x)
    node = t.grad_fn
    node.basic, node.index, node.in_shape, node._name = False, index, xd.shape, \
        "IndexBackward0"
    return t


_OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to "
            "a single memory location. Please clone() the tensor before performing the "
            "operation.")


def _internal_overlap(xd) -> bool:
    """Whether two elements of ``xd`` are one memory location (an ``expand()``ed view:
    a stride of 0 along a dimension longer than 1)."""
    return 0 in xd.strides and builtins.any(
        s == 0 and n > 1 for s, n in zip(xd.strides, xd.shape))


def check_writable(xd, op_name: str) -> None:
    """PyTorch's refusal of an in-place op whose output overlaps itself (elements
    written more than once; NumPy's broadcast views are read-only, CuPy's are not, so
    the strides decide)."""
    if _internal_overlap(xd):
        raise RuntimeError(f"{op_name}: {_OVERLAP}")


def _check_inplace(x: Tensor, op: str):
    if not mode.enabled:
        return
    if x.grad_fn is None and x._rg:
        raise RuntimeError(f"a leaf Variable that requires grad is being used in an in-place "
                           f"operation ({op}).")
    base = x._base
    if base is not None and base.grad_fn is None and base._rg:
        raise RuntimeError(f"a view of a leaf Variable that requires grad is being used in "
                           f"an in-place operation ({op}).")


def view_needs_rebase(x: Tensor, *others) -> bool:
    """Whether an in-place op on ``x`` must be recorded on the tensor ``x`` views."""
    base = x._base
    if base is None or not mode.enabled:
        return False
    return base._rg or x._rg or builtins.any(isinstance(o, Tensor) and o._rg for o in others)


def inplace_on_view(v: Tensor, index, value) -> Tensor:
    """``v[index] = value`` for a view ``v`` whose base is in a graph (or joins one).

    The write is recorded on the base, as PyTorch's CopySlices does: the base's
    gradient skips the overwritten region, whose gradient flows to ``value``; ``v``
    and every other view of the base then read the new base through their positions
    in it (``_core.fresh_history``, ``_core.adopt_views``).
    """
    base = v._base
    everywhere = math_of(base._data).positions_in(v._data, base._data)
    positions = everywhere
    if index is not None:
        sub = _convert_index(index, v)
        positions = tuple(_take(p, sub) for p in everywhere)
    setitem(base, positions, value, _skip=v)
    base.grad_fn.copy_slices = True
    view_history(v, base, everywhere)
    return v


class IndexPutBackward0(Node):
    axes = None  # the transpose to PyTorch's order of the region's axes (_torch_order)

    def apply(self, F, g):
        gx = F.zero_at(g, self.index) if self.needs(0) else None
        if len(self.next_functions) == 1:
            return (gx,)
        gv = None
        if self.needs(1):
            gv = g[self.index]
            if self.axes is not None:
                gv = F.transpose(gv, self.axes)
        return gx, gv

    def name(self):
        return "CopySlices" if self.basic or getattr(self, "copy_slices", False) \
            else "IndexPutBackward0"


def setitem(x, idx, value, fill=False, _skip=None):
    """``x[idx] = value`` in place; tracked like PyTorch's (the old value's gradient is
    zero where it was overwritten). ``fill``: ``fill_``/``zero_``, which PyTorch lets
    write an ``expand()``ed tensor."""
    _check_inplace(x, "setitem")
    if view_needs_rebase(x, value):
        inplace_on_view(x, idx, value)
        return
    index = _convert_index(idx, x)
    basic = _is_basic(index)
    xd = x._data
    if 0 in xd.strides and not fill:  # (rare) an expand()ed tensor: PyTorch's rules
        if basic:
            check_writable(xd[index], "setitem")
        elif _internal_overlap(xd):
            warnings.warn("Use of index_put_ on expanded tensors is deprecated. Please clone() "
                          "the tensor before performing this operation. This also applies to "
                          "advanced indexing e.g. tensor[indices] = tensor", UserWarning,
                          stacklevel=3)
    v = value if isinstance(value, Tensor) else None
    if v is not None:
        if v.device != x.device:
            raise RuntimeError(f"setitem: value is on {v.device} but the tensor is on "
                               f"{x.device}")
        vd = v._data.astype(xd.dtype, copy=False)
    else:
        vd = value
    axes = None
    order = None if basic else _torch_order(index, xd.ndim)
    if order is not None:  # an int and an array: the region's axes in PyTorch's order
        try:
            np_region = xd[index].shape
        except IndexError as exc:
            raise _index_error(exc, idx, xd.shape, "setitem: ") from None
        axes = _torch_axes(order, len(np_region))
        region = tuple(np_region[a] for a in axes)
        if getattr(vd, "ndim", 0):
            m = math_of(xd)
            try:
                vd = m.broadcast_to(vd, region)
            except ValueError:
                raise RuntimeError(f"setitem: value of shape {tuple(vd.shape)} cannot be "
                                   f"assigned to a region of shape {region} of a tensor of "
                                   f"shape {tuple(xd.shape)}") from None
            vd = vd.transpose(_inverse(axes))
    track = mode.enabled and (x._rg or (v is not None and v._rg))
    joins = track and not x._rg  # x joins a graph: its untracked views follow
    if track:
        if axes is not None:
            region_shape = region
        else:
            try:
                region_shape = xd[index].shape
            except IndexError as exc:
                raise _index_error(exc, idx, xd.shape, "setitem: ") from None
        # wired to x's history before the write (its version moves on below)
        node = new_node(IndexPutBackward0, (x, v) if v is not None else (x,))
        node.basic = basic
        node.index = index
        if axes is not None:
            node.axes = axes
        if v is not None and tuple(v.shape) != region_shape:
            node.shapes = (xd.shape, v._data.shape)
    if not basic:
        _check_arrays(math_of(xd), index, xd.shape, "setitem: ")
    try:
        xd[index] = vd
    except IndexError as exc:
        raise _index_error(exc, idx, xd.shape, "setitem: ") from None
    except ValueError as exc:
        alias = _writable_alias(xd)
        if alias is None:
            raise RuntimeError(f"setitem: value of shape {tuple(getattr(vd, 'shape', ()))} "
                               f"cannot be assigned to a region of shape "
                               f"{tuple(xd[index].shape)} of a tensor of shape "
                               f"{tuple(xd.shape)} ({exc})") from None
        try:  # an expand()ed tensor: PyTorch writes through it (fill_, zero_, t[i] = v)
            alias[index] = vd
        except ValueError as exc2:
            raise RuntimeError(f"setitem: value of shape {tuple(getattr(vd, 'shape', ()))} "
                               f"cannot be assigned to a region of shape "
                               f"{tuple(xd[index].shape)} of a tensor of shape "
                               f"{tuple(xd.shape)} ({exc2})") from None
    x._bump()
    if track:
        x.grad_fn, x._out_nr, x._rg = node, 0, True
        if joins:
            adopt_views(x, _skip)


def _writable_alias(xd):
    """A writable array over the memory of a read-only NumPy broadcast view (NumPy marks
    ``broadcast_to``'s views read-only; PyTorch writes through an ``expand()``ed tensor),
    or None when ``xd`` is writable, not a broadcast view, or its memory is read-only."""
    if type(xd) is not np.ndarray or xd.flags.writeable or 0 not in xd.strides:
        return None
    root = xd
    while isinstance(root.base, np.ndarray):
        root = root.base
    if not root.flags.writeable or not root.flags.c_contiguous:
        return None
    offset = xd.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    try:
        return np.ndarray(xd.shape, xd.dtype, buffer=root, offset=offset, strides=xd.strides)
    except (TypeError, ValueError):
        return None


# ---- gather / scatter_add / index_select ----------
def _along_index(index, dim):
    """Fancy-index tuple that picks, like gather, ``x[.., index[i, j, ..], ..]``."""
    m = math_of(index)
    nd = index.ndim
    out = []
    for d in range(nd):
        if d == dim:
            out.append(index)
        else:
            shape = [1] * nd
            shape[d] = index.shape[d]
            out.append(m.arange(index.shape[d]).reshape(shape))
    return tuple(out)


def _check_index(index, op, x):
    if not isinstance(index, Tensor):
        index = as_tensor(index)
    if index._data.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): Expected dtype int64 for index, got {index.dtype!r}")
    if index._data.ndim != x._data.ndim and not (index._data.ndim <= 1 and x._data.ndim <= 1):
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as "
                           f"input tensor (index shape {tuple(index.shape)}, input shape "
                           f"{tuple(x.shape)})")
    return index


class GatherBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        if self.axis_index is not None:  # one index per place along the axis: no repeats
            return (F.scatter_into_zeros(g, self.axis, self.axis_index, self.in_shape),)
        return (F.index_add_into_zeros(g, self.index, self.in_shape),)


@export(torch=True, method=True)
def gather(x, dim, index):
    """``out[i][j] = x[index[i][j]][j]`` for ``dim=0`` (and so on)."""
    index = _check_index(index, "gather", x)
    axis = normalize_dim(dim, x._data.ndim, "gather")
    if not x._data.ndim:  # a scalar behaves as a one-element vector, as in PyTorch
        return gather(x.reshape(1), 0, index.reshape(-1)).reshape(index.shape)
    tup = _along_index(index._data.astype(np.int64, copy=False), axis)
    xd = x._data
    # [0, n), as in PyTorch (NumPy would take -1 as the last); on a GPU, at the next read
    n = xd.shape[axis]
    check_range(tup[axis], 0, n, _out_of_bounds("gather(): ", axis, n, xd.shape, RuntimeError))
    try:
        out = xd[tup]
    except IndexError as exc:
        raise RuntimeError(f"gather(): index out of bounds for dim {axis} of a tensor of shape "
                           f"{tuple(xd.shape)} ({exc})") from None
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record(out, GatherBackward0, x)
    node = t.grad_fn
    node.index, node.in_shape, node.axis = tup, xd.shape, axis
    # (a max pool's pick: a put, not an accumulating add, which NumPy does 10x slower)
    node.axis_index = tup[axis] if tup[axis].shape[axis] == 1 and \
        tup[axis].shape == out.shape else None
    return t


class ScatterAddBackward0(Node):
    def apply(self, F, g):
        return (g if self.needs(0) else None), (g[self.index] if self.needs(1) else None)


@export(torch=True, method=True)
def scatter_add(x, dim, index, src):
    """A copy of ``x`` with ``src`` added at ``index`` along ``dim`` (repeats accumulate)."""
    index = _check_index(index, "scatter_add", x)
    axis = normalize_dim(dim, x._data.ndim, "scatter_add")
    src = src if isinstance(src, Tensor) else as_tensor(src, x)
    if not x._data.ndim:  # a scalar behaves as a one-element vector, as in PyTorch
        return scatter_add(x.reshape(1), 0, index.reshape(-1), src.reshape(-1)).reshape(())
    tup = _along_index(index._data.astype(np.int64, copy=False), axis)
    sd = src._data[tuple(slice(0, n) for n in index._data.shape)]
    out = x._data.copy()
    n = out.shape[axis]  # [0, n), as in PyTorch; on a GPU, at the next read
    check_range(tup[axis], 0, n,
                _out_of_bounds("scatter_add(): ", axis, n, out.shape, RuntimeError))
    math_of(out).add_at(out, tup, sd.astype(out.dtype, copy=False))
    if not (mode.enabled and (x._rg or src._rg)):
        return wrap(out)
    whole = sd.shape == src._data.shape
    t = record(out, ScatterAddBackward0, x, src if whole
               else getitem(src, tuple(slice(0, n) for n in index._data.shape)))
    node = t.grad_fn
    node.index = tup
    if not whole:
        node.shapes = (x._data.shape, src._data.shape)
        node.index_region = sd.shape
    return t


class IndexSelectBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        return (F.index_add_into_zeros(g, self.index, self.in_shape),)


@export(torch=True, method=True)
def index_select(x, dim, index):
    """The slices of ``x`` at ``index`` (1-D) along ``dim``."""
    index = index if isinstance(index, Tensor) else as_tensor(index)
    if index._data.ndim > 1 or index._data.dtype.kind not in "iu":
        raise RuntimeError(f"index_select(): Index is supposed to be a vector of integers, got "
                           f"shape {tuple(index.shape)} and dtype {index.dtype!r}")
    xd = x._data
    axis = normalize_dim(dim, xd.ndim, "index_select")
    if xd.ndim == 0:  # a scalar behaves as a one-element vector, as in PyTorch
        return index_select(x.reshape(1), 0, index).reshape(())
    tup = (slice(None),) * axis + (index._data.reshape(-1),)
    n = xd.shape[axis]  # [0, n), as in PyTorch; on a GPU, at the next read
    check_range(tup[axis], 0, n,
                _out_of_bounds("index_select(): ", axis, n, xd.shape, IndexOutOfRangeError))
    out = xd[tup]
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record(out, IndexSelectBackward0, x)
    node = t.grad_fn
    node.index, node.in_shape = tup, xd.shape
    return t


class MaskedFillBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        # where(), not a multiply by the mask: an inf gradient under the mask gives 0
        return (F.where(F.constant(self.mask), 0, g),)


@export(torch=True, method=True)
def masked_fill(x, mask, value):
    """``x`` with ``value`` where ``mask`` is true."""
    mask = mask if isinstance(mask, Tensor) else as_tensor(mask)
    if mask._data.dtype.kind != "b":
        raise RuntimeError(f"masked_fill only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype!r}")
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(f"masked_fill only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value._data.ndim} dimension(s).")
        value = value.item()
    xd, md = x._data, mask._data
    try:
        out = math_of(xd).where(md, xd.dtype.type(value) if xd.dtype.kind != "b" else value, xd)
    except ValueError as exc:
        raise RuntimeError(f"masked_fill: mask of shape {tuple(md.shape)} does not broadcast "
                           f"to the tensor's shape {tuple(xd.shape)} ({exc})") from None
    out = out.astype(xd.dtype, copy=False)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record(out, MaskedFillBackward0, x)
    node = t.grad_fn
    node.mask = md
    if out.shape != xd.shape:
        node.shapes = (xd.shape,)
    return t


@export(torch=True, method=True)
def nonzero(x, as_tuple=False):
    """Indices of the non-zero elements: an (n, ndim) int64 tensor, or a tuple of them."""
    xd = x._data
    m = math_of(xd)
    idx = m.nonzero(xd) if xd.ndim else m.nonzero(xd.reshape(1))
    if as_tuple:
        return tuple(wrap(i.astype(np.int64)) for i in idx)
    if not xd.ndim:  # one row per non-zero element, no column: (1, 0) or (0, 0)
        return wrap(m.zeros((idx[0].shape[0], 0), dtype=np.int64))
    return wrap(m.stack(idx, axis=1).astype(np.int64) if idx else
                m.zeros((0, xd.ndim), dtype=np.int64))



@export(torch=True, method=True)
def nonzero_static(input, *, size, fill_value=-1):  # noqa: A002
    """:func:`nonzero`'s ``(n, ndim)`` indices in a tensor of ``size`` rows whatever
    ``n``: the first ``size`` rows when there are more, the rest filled with
    ``fill_value`` when fewer.

    >>> import gradcore as gc
    >>> gc.nonzero_static(gc.tensor([0, 3, 0, 4]), size=3)
    tensor([[ 1],
            [ 3],
            [-1]])
    """
    if type(size) is not int:
        raise TypeError(f"nonzero_static(): argument 'size' must be int, not "
                        f"{type(size).__name__}")
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    found = nonzero(input)._data
    m = math_of(found)
    cols = found.shape[1]
    out = m.full((size, cols), fill_value, dtype=np.int64)
    n = builtins.min(size, found.shape[0])
    out[:n] = found[:n]
    return wrap(out)

# ---- scatter / index_copy / index_add ----------
def _scatter_checks(op, x, axis, index, src):
    """PyTorch's checks of scatter's operands: an integer index of ``x``'s number of
    dimensions (and ``src``'s), no larger than ``src`` anywhere nor than ``x`` apart from
    ``axis``, and ``src`` of ``x``'s dtype."""
    idd = index._data
    if idd.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index")
    xd = x._data
    if idd.ndim != xd.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as self "
                           "tensor")
    sd = src._data if src is not None else None
    if sd is not None:
        if idd.ndim != sd.ndim:
            raise RuntimeError("Index tensor must have the same number of dimensions as src "
                               "tensor")
        if sd.dtype != xd.dtype:
            raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype")
    for d, n in enumerate(idd.shape):
        if (d != axis and n > xd.shape[d]) or (sd is not None and n > sd.shape[d]):
            also = f" and to be no larger size than src {list(sd.shape)}" \
                if sd is not None else ""
            raise RuntimeError(f"Expected index {list(idd.shape)} to be no larger than self "
                               f"{list(xd.shape)} apart from dimension {axis}{also}")


class ScatterBackward0(Node):  # src a tensor: it lands where index says, x elsewhere
    fresh_grads = True

    def apply(self, F, g):
        return (F.zero_at(g, self.index) if self.needs(0) else None,
                g[self.index] if self.needs(1) else None)


class ScatterBackward1(Node):  # a number written: x's gradient elsewhere
    fresh_grads = True

    def apply(self, F, g):
        return (F.zero_at(g, self.index),)


class ScatterReduceNotImplemented(Node):
    """scatter's deprecated ``reduce=``: PyTorch has no derivative for it, and says so
    when a backward pass reaches it."""

    def apply(self, F, g):
        raise RuntimeError("derivative for aten::scatter is not implemented")

    def name(self):
        return "torch::autograd::NotImplemented"


_SCATTER_REDUCE_DEPRECATED = (
    "The reduce argument of torch.scatter with Tensor src is deprecated and will be removed "
    "in a future PyTorch release. Use torch.scatter_reduce instead for more reduction "
    "options.")


@export(torch=True, method=True)
def scatter(input, dim, index, src=None, *, value=None, reduce=None):  # noqa: A002
    """A copy of ``input`` with ``src[i][j]`` written at ``[index[i][j]][j]`` (``dim=0``;
    and so on), or the number ``value`` (also given in ``src``'s place); where an index
    repeats, one of the writes wins, as in PyTorch. With ``reduce="add"`` or
    ``"multiply"`` (deprecated, as in PyTorch: see :func:`scatter_reduce`) the values are
    added to or multiply what is there, repeats accumulating; that result has no
    gradient (a backward pass through it raises, as PyTorch's does).

    >>> import gradcore as gc
    >>> gc.scatter(gc.zeros(2, 3), 0, gc.tensor([[1, 0, 1]]), gc.tensor([[1., 2., 3.]]))
    tensor([[0., 2., 0.],
            [1., 0., 3.]])
    """
    if src is not None and not isinstance(src, Tensor):
        src, value = None, src
    if src is None and value is None:
        raise TypeError("scatter() missing required argument 'src' or 'value'")
    index = index if isinstance(index, Tensor) else as_tensor(index)
    xd = input._data
    axis = normalize_dim(dim, xd.ndim, "scatter")
    _scatter_checks("scatter", input, axis, index, src)
    if reduce is not None:
        if src is not None:
            warnings.warn(_SCATTER_REDUCE_DEPRECATED, UserWarning, stacklevel=2)
        if reduce not in ("add", "multiply"):
            raise RuntimeError("reduce argument must be either add or multiply.")
    if not xd.ndim:  # a scalar behaves as a one-element vector, as in PyTorch
        one = (src.reshape(1),) if src is not None else ()
        return scatter(input.reshape(1), 0, index.reshape(-1), *one,
                       value=value, reduce=reduce).reshape(())
    tup = _along_index(index._data.astype(np.int64, copy=False), axis)
    n = xd.shape[axis]  # [0, n), as in PyTorch; on a GPU, at the next read
    check_range(tup[axis], 0, n, _out_of_bounds("", axis, n, xd.shape, RuntimeError))
    out = xd.copy()
    if reduce is not None:
        m = math_of(out)
        if src is None:
            values = m.full(index._data.shape, value, dtype=out.dtype) \
                if out.dtype.kind != "b" else m.full(index._data.shape, bool(value))
        else:
            values = src._data[tuple(slice(0, k) for k in index._data.shape)]
        if reduce == "add":
            m.add_at(out, tup, values)
        else:
            m.multiply_at(out, tup, values)
        tracked = (input,) if src is None else (input, src)
        if not (mode.enabled and builtins.any(t._rg for t in tracked)):
            return wrap(out)
        return record(out, ScatterReduceNotImplemented, *tracked)
    if src is None:
        out[tup] = value
        if not (mode.enabled and input._rg):
            return wrap(out)
        t = record(out, ScatterBackward1, input)
        t.grad_fn.index = tup
        return t
    region = tuple(slice(0, k) for k in index._data.shape)
    sd = src._data[region]
    out[tup] = sd
    if not (mode.enabled and (input._rg or src._rg)):
        return wrap(out)
    whole = sd.shape == src._data.shape
    t = record(out, ScatterBackward0, input, src if whole else getitem(src, region))
    t.grad_fn.index = tup
    return t


_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _reduce_identity(reduce, dtype):
    """What a place that takes no value of itself starts from (``include_self=False``)."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    largest = reduce in ("amax", "max")
    if dtype.kind == "f":
        return -np.inf if largest else np.inf
    info = np.iinfo(dtype)
    return info.min if largest else info.max


def _scatter_reduce_arrays(xd, tup, sd, reduce, include_self):
    """``xd``'s copy with ``sd`` reduced in at ``tup`` (and the counts of mean): the
    values of :func:`scatter_reduce`."""
    m = math_of(xd)
    if xd.dtype.kind == "b":  # or, and: as int64 (CuPy has no logical_or.at), then != 0
        out = _scatter_reduce_arrays(xd.astype(np.int64), tup, sd.astype(np.int64), reduce,
                                     include_self)[0]
        return out != 0, None
    out = xd.copy()
    if not include_self:
        out[tup] = _reduce_identity(reduce, xd.dtype)
    if reduce in ("sum", "mean"):
        m.add_at(out, tup, sd)
    elif reduce == "prod":
        m.multiply_at(out, tup, sd)
    elif reduce in ("amax", "max"):
        m.maximum_at(out, tup, sd)
    else:
        m.minimum_at(out, tup, sd)
    counts = None
    if reduce == "mean":
        counts = m.full(xd.shape, 1 if include_self else 0, dtype=xd.dtype)
        m.add_at(counts, tup, m.ones(sd.shape, dtype=xd.dtype))
        counts = m.maximum(counts, 1)  # (an untouched place divides by one; no mask
        # assignment, which on CuPy reads the count of true elements back)
        out = out / counts if out.dtype.kind == "f" else out // counts
    return out, counts


class ScatterReduceBackward0(Node):
    """PyTorch's scatter_reduce_backward: sum passes the gradient on (``src`` takes it at
    ``index``); mean divides it by each place's count; prod multiplies it by the product
    of the others (recomputed without a zero of ``self``, or without the one zero among
    the values sent to a place: exact where there are zeros); amax and amin share it
    evenly among the values equal to the result. Where ``include_self=False``, ``self``
    gets none at the places written."""

    fresh_grads = True

    def apply(self, F, g):
        reduce, tup, include_self = self.reduce, self.index, self.include_self
        if reduce not in _REDUCTIONS:
            raise RuntimeError(f"Expected 'reduce' to be one of 'sum', 'prod', 'mean', "
                               f"'amax', 'amin' but got {reduce}.")
        x, src = self.unpack(F)
        if reduce == "sum":
            grad_self, grad_src = g * 1, g[tup]
        elif reduce == "mean":
            counts = F.constant(self.counts)
            grad_self = g / counts
            grad_src = g[tup] / counts[tup]
        elif reduce == "prod":
            y = self.output(F)
            masked_self = F.where(x == 0, 1, x)
            grad_self = g * _scatter_reduce_again(F, masked_self, tup, src, reduce,
                                                  include_self) / masked_self
            src_zero = src == 0
            zeros_there = F.constant(self.src_zeros)
            single_zero = src_zero & (zeros_there == 1)
            masked_src = F.where(single_zero, 1, src)
            without = _scatter_reduce_again(F, x, tup, masked_src, reduce, include_self)
            grad_src = F.where(single_zero, (g * without)[tup],
                               (g * y)[tup] / F.where(src_zero, 1, src))
            if isinstance(grad_src, Tensor) and grad_src._rg and \
                    bool((self.src_zeros > 1).any()):  # (read back, as PyTorch does)
                grad_src = record(grad_src._data, _DoubleBackwardError, grad_src)
        else:
            y = self.output(F)
            value = y[tup]
            self_is = F.astype(x == y, self.dtype)
            src_is = F.astype(src == value, self.dtype)
            share = g / (self_is + F.index_add_into_zeros(src_is, tup, self.in_shape))
            grad_self = self_is * share
            grad_src = src_is * share[tup]
        if not include_self:
            grad_self = F.zero_at(grad_self, tup)
        return (grad_self if self.needs(0) else None), (grad_src if self.needs(1) else None)


class _DoubleBackwardError(Node):
    """prod's gradient for ``src`` where two zeros or more went to one place: its own
    derivative is not that formula's, and PyTorch refuses it when a backward reaches it."""

    def apply(self, F, g):
        raise RuntimeError("scatter_reduce(): Double backward is unsupported for src when "
                           ">1 zeros in src are scattered to the same position in self")

    def name(self):
        return "Error"


def _scatter_reduce_again(F, x, tup, src, reduce, include_self):
    """scatter_reduce of arrays, or of tensors (differentiably) under create_graph."""
    if isinstance(x, Tensor):
        return _scatter_reduce_tup(x, tup, src, reduce, include_self)
    return _scatter_reduce_arrays(x, tup, src, reduce, include_self)[0]


def _scatter_reduce_tup(x, tup, src, reduce, include_self):
    """:func:`scatter_reduce` at an index tuple already checked (``src`` its size)."""
    out, counts = _scatter_reduce_arrays(x._data, tup, src._data, reduce, include_self)
    if not (mode.enabled and (x._rg or src._rg)) or out.dtype.kind != "f":
        return wrap(out)
    t = record(out, ScatterReduceBackward0, x, src)
    node = t.grad_fn
    node.reduce, node.index, node.include_self = reduce, tup, include_self
    node.counts, node.in_shape, node.dtype = counts, x._data.shape, x._data.dtype
    if reduce == "prod":
        m = math_of(out)
        node.src_zeros = m.zeros(x._data.shape, dtype=np.int64)
        m.add_at(node.src_zeros, tup, (src._data == 0).astype(np.int64))
        node.src_zeros = node.src_zeros[tup]
    node.save(x, src)
    node.save_output(t)
    return t


@export(torch=True, method=True)
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):  # noqa: A002
    """A copy of ``input`` with the values of ``src`` reduced into it at ``index`` along
    ``dim`` (:func:`scatter`'s places): ``reduce`` is ``"sum"``, ``"prod"``, ``"mean"``,
    ``"amax"`` or ``"amin"``; with ``include_self=False`` the places written start from
    the values sent there alone. An integer mean rounds down, as in PyTorch.
    Differentiable in ``input`` and ``src`` (amax and amin share the gradient evenly
    among equal values).

    >>> import gradcore as gc
    >>> gc.scatter_reduce(gc.tensor([1., 2., 3.]), 0, gc.tensor([0, 0, 2]),
    ...                   gc.tensor([5., 6., 7.]), "amax", include_self=False)
    tensor([6., 2., 7.])
    """
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_reduce(): argument 'src' (position 4) must be Tensor, not "
                        f"{type(src).__name__}")
    index = index if isinstance(index, Tensor) else as_tensor(index)
    xd = input._data
    axis = normalize_dim(dim, xd.ndim)  # (PyTorch's message names no op here)
    _scatter_checks("scatter", input, axis, index, src)
    if reduce not in _REDUCTIONS + ("max", "min"):  # (max and min: PyTorch's aliases)
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, "
                           f"got {reduce}")
    if reduce == "mean" and xd.dtype.kind == "b":
        raise NotImplementedError("\"scatter_gather_tensor_cpu_reduce_mean\" not "
                                  "implemented for 'Bool'")
    if not xd.ndim:  # a scalar behaves as a one-element vector, as in PyTorch
        return scatter_reduce(input.reshape(1), 0, index.reshape(-1), src.reshape(-1),
                              reduce, include_self=include_self).reshape(())
    tup = _along_index(index._data.astype(np.int64, copy=False), axis)
    n = xd.shape[axis]  # [0, n), as in PyTorch; on a GPU, at the next read
    check_range(tup[axis], 0, n, _out_of_bounds("", axis, n, xd.shape, RuntimeError))
    region = tuple(slice(0, k) for k in index._data.shape)
    if src._data.shape != index._data.shape:
        src = getitem(src, region) if mode.enabled and src._rg else \
            wrap(src._data[region])
    return _scatter_reduce_tup(input, tup, src, reduce, include_self)


def _index_along(op, x, dim, index, long_only):
    """The axis and the 1-D int64 index array of index_copy/index_add along ``dim``."""
    index = index if isinstance(index, Tensor) else as_tensor(index)
    idd = index._data
    if long_only and idd.dtype != np.int64:
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got "
                           f"{dtypes.torch_name(index.dtype)}")
    if idd.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index")
    if idd.ndim > 1:
        if long_only:
            raise IndexError(f"{op}(): Index should have dimension 1 or 0 (got {idd.ndim})")
        raise IndexError(f"{op}(): Index is supposed to be a vector, but got dim: {idd.ndim} "
                         f"with type: {dtypes.torch_name(index.dtype)} and size: "
                         f"{list(idd.shape)}")
    axis = normalize_dim(dim, x._data.ndim, op)
    return axis, idd.reshape(-1).astype(np.int64, copy=False)


class IndexCopyBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        return (F.zero_at(g, self.index) if self.needs(0) else None,
                g[self.index] if self.needs(1) else None)


@export(torch=True, method=True)
def index_copy(input, dim, index, source):  # noqa: A002
    """A copy of ``input`` whose slices along ``dim`` at ``index`` (1-D, int64) are the
    slices of ``source``, in order.

    >>> import gradcore as gc
    >>> gc.index_copy(gc.zeros(3, 2), 0, gc.tensor([2, 0]), gc.tensor([[1., 1.], [2., 2.]]))
    tensor([[2., 2.],
            [0., 0.],
            [1., 1.]])
    """
    op = "index_copy_"
    axis, idx = _index_along(op, input, dim, index, long_only=True)
    xd, sd = input._data, source._data
    if sd.dtype != xd.dtype:
        raise RuntimeError(f"{op}(): self and source expected to have the same dtype, but got "
                           f"(self) {dtypes.torch_name(input.dtype)} and (source) "
                           f"{dtypes.torch_name(source.dtype)}")
    if not xd.ndim:  # a scalar behaves as a one-element vector, as in PyTorch
        return index_copy(input.reshape(1), 0, wrap(idx), source.reshape(-1)).reshape(())
    if sd.ndim and sd.ndim != xd.ndim:
        raise IndexError(f"{op}(): When source and destination are not scalars, their "
                         f"dimensionality must match. Source dimensionality ({sd.ndim}), "
                         f"destination dimensionality ({xd.ndim})")
    count = sd.shape[axis] if sd.ndim else 1
    if idx.shape[0] != count:
        raise IndexError(f"{op}(): Number of indices ({idx.shape[0]}) should be equal to "
                         f"source.size(dim) ({count})")
    for d in range(sd.ndim):
        if d != axis and sd.shape[d] != xd.shape[d]:
            raise RuntimeError(f"{op}(): Source/destination tensor must have same slice "
                               f"shapes. Destination slice shape: {xd.shape[d]} at dimension "
                               f"{d} and source slice shape: {sd.shape[d]} at dimension {d}.")
    n = xd.shape[axis]
    check_range(idx, 0, n, _out_of_bounds(f"{op}(): ", axis, n, xd.shape))
    tup = (slice(None),) * axis + (idx,)
    out = xd.copy()
    out[tup] = sd
    if not (mode.enabled and (input._rg or source._rg)):
        return wrap(out)
    t = record(out, IndexCopyBackward0, input, source)
    node = t.grad_fn
    node.index = tup
    if out[tup].shape != sd.shape:
        node.shapes = (xd.shape, sd.shape)
    return t


class IndexAddBackward0(Node):
    fresh_grads = True  # (the second output; the first is g, passed on)
    passes = (0,)

    def apply(self, F, g):
        gs = None
        if self.needs(1):
            gs = g[self.index]
            if self.alpha != 1:
                gs = gs * self.alpha
        return g, gs


@export(torch=True, method=True)
def index_add(input, dim, index, source, *, alpha=1):  # noqa: A002
    """A copy of ``input`` with ``alpha * source``'s slices added to its slices along
    ``dim`` at ``index`` (1-D); repeated indices accumulate.

    >>> import gradcore as gc
    >>> gc.index_add(gc.zeros(3), 0, gc.tensor([0, 2, 0]), gc.tensor([1., 2., 3.]))
    tensor([4., 0., 2.])
    """
    op = "index_add_"
    axis, idx = _index_along(op, input, dim, index, long_only=False)
    xd, sd = input._data, source._data
    if sd.dtype != xd.dtype:
        raise RuntimeError(f"{op}(): self ({dtypes.torch_name(input.dtype)}) and source "
                           f"({dtypes.torch_name(source.dtype)}) must have the same scalar "
                           f"type")
    if not xd.ndim and not sd.ndim:  # scalars behave as one-element vectors
        return index_add(input.reshape(1), 0, wrap(idx), source.reshape(1),
                         alpha=alpha).reshape(())
    if sd.ndim != xd.ndim or builtins.any(a != b for d, (a, b) in
                                          enumerate(zip(xd.shape, sd.shape)) if d != axis):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(xd.shape)} "
                           f"source.shape = {list(sd.shape)}")
    if idx.shape[0] != sd.shape[axis]:
        raise RuntimeError(f"{op}(): Number of indices ({idx.shape[0]}) should be equal to "
                           f"source.size(dim): ({sd.shape[axis]}), for dim: {axis}")
    n = xd.shape[axis]
    check_range(idx, 0, n, _out_of_bounds("", axis, n, xd.shape, RuntimeError))
    tup = (slice(None),) * axis + (idx,)
    out = xd.copy()
    added = sd if alpha == 1 else sd * alpha
    math_of(out).add_at(out, tup, added.astype(out.dtype, copy=False))
    if not (mode.enabled and (input._rg or source._rg)):
        return wrap(out)
    t = record(out, IndexAddBackward0, input, source)
    node = t.grad_fn
    node.index, node.alpha = tup, alpha
    return t


# ---- masked_select / masked_scatter / take_along_dim (composites) ----------
def _bool_mask(mask, op):
    mask = mask if isinstance(mask, Tensor) else as_tensor(mask)
    if mask._data.dtype.kind != "b":
        raise RuntimeError(f"{op} only supports boolean masks, but got mask with dtype "
                           f"{dtypes.torch_name(mask.dtype)}")
    return mask


def _broadcast_pair(x, mask, op):
    """``x`` and ``mask`` broadcast to their common shape (views)."""
    from .shape import broadcast_to  # (shape imports index)

    try:
        shape = tuple(math_of(x._data).broadcast_shapes(x._data.shape, mask._data.shape))
    except ValueError:
        raise RuntimeError(f"{op}: the shapes of the tensor {tuple(x.shape)} and of the mask "
                           f"{tuple(mask.shape)} do not broadcast together") from None
    return broadcast_to(x, shape), broadcast_to(mask, shape)


@export(torch=True, method=True)
def masked_select(input, mask):  # noqa: A002
    """The elements of ``input`` where ``mask`` (bool, broadcasting) is true, as a 1-D
    tensor; differentiable (``input[mask]``).

    >>> import gradcore as gc
    >>> x = gc.tensor([[1., 2.], [3., 4.]])
    >>> gc.masked_select(x, x > 1.5)
    tensor([2., 3., 4.])
    """
    mask = _bool_mask(mask, "masked_select:")
    x, m = _broadcast_pair(input, mask, "masked_select")
    return getitem(x, m)


@export(torch=True, method=True)
def masked_scatter(input, mask, source):  # noqa: A002
    """A copy of ``input`` (broadcast with ``mask``) whose elements where ``mask`` is
    true are ``source``'s first elements, in order; differentiable in both.

    >>> import gradcore as gc
    >>> gc.masked_scatter(gc.zeros(4), gc.tensor([True, False, True, False]),
    ...                   gc.tensor([1., 2., 3.]))
    tensor([1., 0., 2., 0.])
    """
    from .pointwise import where  # (pointwise imports index)

    mask = _bool_mask(mask, "masked_scatter_")
    if source.dtype != input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but "
                           f"got {dtypes.torch_name(input.dtype)} and "
                           f"{dtypes.torch_name(source.dtype)}")
    x, mb = _broadcast_pair(input, mask, "masked_scatter")
    md = mb._data
    m = math_of(md)
    numel = source._data.size
    # the place of each element in source: how many true ones come before it
    flat = md.reshape(-1)
    place = m.cumsum(flat, 0) - 1  # (int64)
    place = m.where(flat, place, 0).astype(np.int64, copy=False)
    if m.values_on_host:
        if int(flat.sum()) > numel:
            raise RuntimeError("Number of elements of source < number of ones in mask")
    elif numel:
        check_range(place, 0, numel,
                    lambda v: RuntimeError("Number of elements of source < number of ones in "
                                           "mask"))
    if numel == 0:  # nothing to take (the mask has no true element, as checked)
        return x.clone()
    taken = getitem(source.reshape(-1), wrap(place)).reshape(md.shape)
    return where(mb, taken, x)


@export(torch=True, method=True)
def take_along_dim(input, indices, dim=None):  # noqa: A002
    """``input``'s elements at ``indices`` along ``dim`` (:func:`gather`, the other
    dimensions broadcast between the two); without ``dim``, of the flattened input.

    >>> import gradcore as gc
    >>> x = gc.tensor([[10., 30., 20.], [60., 40., 50.]])
    >>> gc.take_along_dim(x, x.argmax(1, keepdim=True), 1)
    tensor([[30.],
            [60.]])
    """
    from .shape import broadcast_to, reshape  # (shape imports index)

    indices = indices if isinstance(indices, Tensor) else as_tensor(indices)
    if indices._data.dtype != np.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{dtypes.torch_name(indices.dtype)}")
    if dim is None:
        return gather(reshape(input, -1), 0, reshape(indices, -1))
    xd, idd = input._data, indices._data
    if xd.ndim != idd.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {xd.ndim} dimensions for input, "
                           f"and {idd.ndim} dimensions for indices")
    axis = normalize_dim(dim, xd.ndim, "take_along_dim")
    if not xd.ndim:
        return gather(input, 0, indices)
    others_x = xd.shape[:axis] + (1,) + xd.shape[axis + 1:]
    others_i = idd.shape[:axis] + (1,) + idd.shape[axis + 1:]
    try:
        common = list(math_of(xd).broadcast_shapes(others_x, others_i))
    except ValueError:
        bad = next(d for d, (a, b) in enumerate(zip(others_x, others_i))
                   if a != b and 1 not in (a, b))
        raise RuntimeError(f"The size of tensor a ({others_x[bad]}) must match the size of "
                           f"tensor b ({others_i[bad]}) at non-singleton dimension "
                           f"{bad}") from None
    shape_x, shape_i = list(common), list(common)
    shape_x[axis], shape_i[axis] = xd.shape[axis], idd.shape[axis]
    return gather(broadcast_to(input, tuple(shape_x)), axis,
                  broadcast_to(indices, tuple(shape_i)))


# ---- take / put / index_put / index_fill ----------
def _long_index(index, op):
    """``index`` as an int64 tensor where PyTorch takes only one."""
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index._data.dtype != np.int64:
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got "
                           f"{dtypes.torch_name(index.dtype)}")
    return index


def _check_flat(idd, n):
    """Each flat index in ``[-n, n)``, PyTorch's IndexError otherwise."""
    def error(value):
        return IndexError(f"out of range: tried to access index {value} on a tensor of {n} "
                          f"elements.")
    check_range(idd, -n, n, error)


@export(torch=True, method=True)
def take(input, index):  # noqa: A002
    """The elements of ``input`` at the flat positions ``index`` (an int64 tensor; negative
    positions count from the end), in ``index``'s shape.

    >>> import gradcore as gc
    >>> gc.tensor([[4, 3], [5, 6]]).take(gc.tensor([0, 3, -1]))
    tensor([4, 6, 6])
    """
    index = _long_index(index, "take")
    if index.device != input.device:
        raise RuntimeError(f"take: expected all tensors to be on the same device, but found "
                           f"at least two devices, {input.device} and {index.device}!")
    _check_flat(index._data, input._data.size)
    out = getitem(input.reshape(-1), index)
    if out.grad_fn is not None:
        out.grad_fn._name = "TakeBackward0"
    return out


def _region_index(x, indices, op):
    """``indices`` (a sequence of index tensors, or None for a whole dimension) as the
    index tuple of ``x[indices]``."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"{op}(): argument 'indices' must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    if len(indices) > x._data.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x._data.ndim} (got "
                         f"{len(indices)})")
    return tuple(slice(None) if i is None else i for i in indices)


@export(torch=True, method=True)
def index_put(input, indices, values, accumulate=False):  # noqa: A002
    """A copy of ``input`` with ``values`` written at ``input[indices]`` (``indices`` a
    tuple of index tensors), or added there with ``accumulate=True`` (repeated
    positions then add up).

    >>> import gradcore as gc
    >>> gc.zeros(3).index_put((gc.tensor([0, 0, 2]),), gc.tensor(1.), accumulate=True)
    tensor([2., 0., 1.])
    """
    idx = _region_index(input, indices, "index_put")
    values = values if isinstance(values, Tensor) else as_tensor(values, input)
    if values.dtype != input.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{dtypes.torch_name(input.dtype)} for the destination and "
                           f"{dtypes.torch_name(values.dtype)} for the source.")
    if not accumulate:
        out = input.clone()
        setitem(out, idx, values)
        return out
    xd = input._data
    index = _convert_index(idx, input)
    _check_arrays(math_of(xd), index, xd.shape, "index_put: ")
    try:
        region = xd[index].shape
    except IndexError as exc:
        raise _index_error(exc, idx, xd.shape, "index_put: ") from None
    order = _torch_order(index, xd.ndim)
    if order is not None:
        region = tuple(region[a] for a in _torch_axes(order, len(region)))
    try:
        v = values.expand(*region)
    except RuntimeError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values.shape)} cannot "
                           f"be broadcast to indexing result of shape {list(region)}") from None
    if order is not None:
        v = v.permute(*_inverse(_torch_axes(order, len(region))))
    added = into_zeros(v, _expand_bool(index), xd.shape)
    return input + added


def _put_operands(input, index, source, op):
    index = _long_index(index, op)
    if not isinstance(source, Tensor):
        raise TypeError(f"{op}(): argument 'source' must be Tensor, not "
                        f"{type(source).__name__}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"{op}(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {dtypes.torch_name(input.dtype)} and source.dtype = "
                           f"{dtypes.torch_name(source.dtype)}")
    if source._data.size != index._data.size:
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source._data.size}, "
                         f"index.numel() = {index._data.size}")
    _check_flat(index._data, input._data.size)
    return index.reshape(-1), source.reshape(-1)


@export(torch=True, method=True)
def put(input, index, source, accumulate=False):  # noqa: A002
    """A copy of ``input`` with the elements of ``source`` written at the flat positions
    ``index`` (an int64 tensor of as many elements), or added there with
    ``accumulate=True``.

    >>> import gradcore as gc
    >>> gc.zeros(2, 2).put(gc.tensor([0, 3]), gc.tensor([1., 2.]))
    tensor([[1., 0.],
            [0., 2.]])
    """
    index, source = _put_operands(input, index, source, "put")
    flat = index_put(input.reshape(-1), (index,), source, accumulate)
    return flat.reshape(input.shape)


def _fill_operands(input, dim, index, value, op):
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
    if index._data.dtype != np.int64:
        raise IndexError(f"{op}(): Expected dtype int64 for index.")
    if index._data.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    if isinstance(value, Tensor) and value._data.ndim:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value._data.ndim} dimension(s).")
    xd = input._data
    axis = normalize_dim(dim, xd.ndim, op)
    n = xd.shape[axis] if xd.ndim else 1

    def error(v):
        return IndexError(f"index {v} is out of bounds for dimension {axis} with size {n}")
    check_range(index._data, -n, n, error)
    return axis, index.reshape(-1)


@export(torch=True, method=True)
def index_fill(input, dim, index, value):  # noqa: A002
    """A copy of ``input`` with the slices ``index`` (an int64 tensor) along ``dim`` set
    to ``value`` (a number or a 0-d tensor, which gets their gradient).

    >>> import gradcore as gc
    >>> gc.zeros(2, 3).index_fill(1, gc.tensor([0, 2]), 5.)
    tensor([[5., 0., 5.],
            [5., 0., 5.]])
    """
    axis, idx = _fill_operands(input, dim, index, value, "index_fill_")
    out = input.clone()
    if isinstance(value, Tensor):
        value = value.to(dtype=input.dtype)
    if input._data.ndim:
        setitem(out, (slice(None),) * axis + (idx,), value)
    elif idx._data.size:  # a 0-d input: index 0 (or -1) is the element
        setitem(out, Ellipsis, value)
    return out


# ---- differentiable helpers for create_graph=True (the engine's tensor math) ----------
class _IntoZerosBackward(Node):
    def apply(self, F, g):
        if self.kind == "along":
            return (F.take_along_axis(g, self.index, self.axis),)
        return (g[self.index],)

    def name(self):
        return "IndexPutBackward0"


def into_zeros(g: Tensor, index, shape, kind="add", axis=None) -> Tensor:
    """Zeros of ``shape`` receiving ``g`` at ``index`` (added, placed, or along an axis)."""
    m = math_of(g._data)
    if kind == "along":
        out = m.scatter_into_zeros(g._data, axis, index, shape)
    elif kind == "place":
        out = m.zeros(shape, dtype=g._data.dtype)
        out[index] = g._data
    else:
        out = m.index_add_into_zeros(g._data, index, shape)
    if not (mode.enabled and g._rg):
        return wrap(out)
    t = record(out, _IntoZerosBackward, g)
    node = t.grad_fn
    node.kind, node.index, node.axis = kind, index, axis
    return t


class _ZeroAtBackward(Node):
    def apply(self, F, g):
        return (F.zero_at(g, self.index),)

    def name(self):
        return "IndexPutBackward0"


def zero_at(g: Tensor, index) -> Tensor:
    out = math_of(g._data).zero_at(g._data, index)
    if not (mode.enabled and g._rg):
        return wrap(out)
    t = record(out, _ZeroAtBackward, g)
    t.grad_fn.index = index
    return t


class _TakeAlongBackward(Node):
    def apply(self, F, g):
        return (F.scatter_into_zeros(g, self.axis, self.index, self.in_shape),)

    def name(self):
        return "GatherBackward0"


def take_along_axis(x: Tensor, index, axis) -> Tensor:
    out = math_of(x._data).take_along_axis(x._data, index, axis=axis)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record(out, _TakeAlongBackward, x)
    node = t.grad_fn
    node.index, node.axis, node.in_shape = index, axis, x._data.shape
    return t
