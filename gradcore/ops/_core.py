"""What every op family shares: operand preparation, type promotion, graph recording."""

from __future__ import annotations

import gc as _gc
import sys
import traceback

import numpy as np

from .. import backend, dtypes
from ..autograd.grad_mode import anomaly_blocks as _anomaly_blocks
from ..autograd.grad_mode import state as _mode
from ..autograd.graph import Node, new_seq
from ..autograd.tensor_base import (
    Parameter,
    Tensor,
    _new,
    _wrap,
    edge,
    fresh_history,
    from_data,
    new_node,
    view_history,
)

__all__ = ["Node", "Tensor", "record", "new_node", "edge", "binary_operands", "as_tensor",
           "wrap", "mode", "check_same_device", "normalize_dims", "normalize_dim",
           "int_arg", "fresh_history", "view_history"]

mode = _mode
wrap = _wrap
# The classes whose instances take the ops' fast paths (`type(x) in TENSOR_TYPES`);
# other subclasses of Tensor take the general path.
TENSOR_TYPES = frozenset({Tensor, Parameter})
_ndarray = np.ndarray
_scalar_types = (int, float, bool, np.number, np.bool_)


def record(data, cls: type[Node], *inputs: Tensor) -> Tensor:
    """``data`` as the output of a new node of class ``cls`` whose inputs are ``inputs``
    (made and wired by :func:`new_node`). An op sets what its rule reads on that node
    afterwards, as ``t.grad_fn``::

        t = record(out, SoftplusBackward0, x)
        node = t.grad_fn
        node.beta = beta
        node.save(x)
        return t
    """
    node = new_node(cls, inputs)
    out = _new(Tensor)
    if type(data) is not _ndarray and isinstance(data, np.generic):
        data = np.asarray(data)
    out._data = data
    out.grad_fn = node
    out._rg = True
    if _anomaly_blocks[0] and _mode.anomaly:
        _remember_forward(node)
    return out


def record1(data, cls: type[Node], x: Tensor) -> Tensor:
    """:func:`record` for the common case of one input that requires grad."""
    # new_node(cls, (x,)), inlined for an input that requires grad: the call costs a
    # one-input op 9% of its time (tanh of 8 floats, 1.65 -> 1.80 us; a 100-op chain's
    # forward 5%), where record's call to it is lost in the noise
    node = _new(cls)
    fn = x.grad_fn
    if fn is not None and x._base is not None:  # a view: see fresh_history
        fn = fresh_history(x)
    node.next_functions = ((fn, x._out_nr),) if fn is not None else ((x._accumulator(), 0),)
    node.seq = new_seq()
    out = _new(Tensor)
    if type(data) is not _ndarray and isinstance(data, np.generic):
        data = np.asarray(data)  # NumPy returns scalars from 0-d arithmetic
    out._data = data
    out.grad_fn = node
    out._rg = True
    if _anomaly_blocks[0] and _mode.anomaly:
        _remember_forward(node)
    return out


def make_view(t: Tensor, x: Tensor) -> Tensor:
    """Make ``t`` a view of ``x``: it shares ``x``'s version counter and base.

    Nothing more is paid here: a view whose base later changes in place gets its
    history rebased when an op or backward reads it (:func:`fresh_history`)."""
    vc = x._vc
    if vc is None:
        vc = x._vc = [0]
    t._vc = vc
    base = x._base
    t._base = x if base is None else base
    return t


def _lone_holder_refs() -> int:
    # sys.getrefcount of a version cell held by one tensor, read the way
    # adopt_views reads it (a local name and the call's argument)
    holder = _new(Tensor)
    holder._vc = [0]
    vc = holder._vc
    return sys.getrefcount(vc)


_LONE = _lone_holder_refs()


def adopt_views(root: Tensor, skip: Tensor | None = None) -> None:
    """``root``, untracked until now, just joined a graph through an in-place op: its
    live views, untracked too, now read values that depend on the graph, so they join
    it as views of ``root``'s new history (PyTorch's views do, as their base's version
    moved on). Views hold ``root``'s version cell; when nothing but ``root`` (and
    ``skip``, the view being written, which sets its own history) holds it there are
    none, and this costs a reference count. Otherwise the holders are found by the
    garbage collector's referrer walk: a rare case (a view of an untracked tensor kept
    while a tracked value is written into that tensor)."""
    vc = root._vc
    others = sys.getrefcount(vc) - _LONE - (skip is not None and skip._vc is vc)
    if others <= 0:
        return
    for obj in _holders(vc):
        if obj._base is root and obj is not skip and obj.grad_fn is None:
            view_history(obj, root)


def _holders(vc) -> list:
    """The tensors holding the version cell ``vc``. A tensor's attributes live in the
    object itself until its class's shared attribute layout changes (a tensor given an
    attribute of its own, say), after which each new tensor has a separate ``__dict__``
    and the collector names that dict as the referrer: the tensor is found one step
    further, as the referrer of its dict."""
    found = []
    for obj in _gc.get_referrers(vc):
        if isinstance(obj, Tensor):
            found.append(obj)
        elif type(obj) is dict and obj.get("_vc") is vc:
            found += [t for t in _gc.get_referrers(obj)
                      if isinstance(t, Tensor) and getattr(t, "__dict__", None) is obj]
    return found


def _remember_forward(node: Node) -> None:
    """Under detect_anomaly: keep where the forward op was called, for the NaN report."""
    node._trace = "".join(traceback.format_stack(limit=14)[:-3])


def as_tensor(x, like: Tensor | None = None) -> Tensor:
    """``x`` as a tensor; scalars and arrays go to ``like``'s device."""
    if isinstance(x, Tensor):
        return x
    dev = like.device if like is not None else None
    if isinstance(x, _scalar_types) and like is not None:
        # a Python scalar meeting a tensor: PyTorch's weak scalar promotion
        cat = dtypes.scalar_category(x)
        ld = like.dtype
        dt = ld if cat <= ld.category else dtypes._DEFAULT_FOR_CATEGORY[cat]
        return from_data(x, dtype=dt, device=dev)
    return from_data(x, device=dev)


def same_device(a, b) -> bool:
    """Whether two arrays live on the same device (cheap for host arrays)."""
    if type(a) is _ndarray and type(b) is _ndarray:
        return True
    return backend.device_of(a) == backend.device_of(b)


def check_same_device(a, b, op: str):
    if type(a) is _ndarray and type(b) is _ndarray:
        return
    da, db = backend.device_of(a), backend.device_of(b)
    if da != db:
        raise RuntimeError(f"{op}: expected all tensors to be on the same device, but found "
                           f"at least two devices, {da} and {db}!")


def _zero_dim_aware_dtype(a: Tensor, b: Tensor):
    da, db = a.dtype, b.dtype
    dims, zeros = [], []
    (dims if a._data.ndim else zeros).append(da)
    (dims if b._data.ndim else zeros).append(db)
    return dtypes.result_type(dims, zeros, [])


def binary_operands(a, b, op: str, float_result: bool = False):
    """Prepare the operands of a binary op with PyTorch's type promotion.

    Returns ``(x, y)``: each a Tensor already converted to the result dtype (through a
    differentiable cast, so gradients come back in each input's own dtype) or a Python
    scalar that NumPy/CuPy will treat as weak.
    """
    ta = a if isinstance(a, Tensor) else None
    tb = b if isinstance(b, Tensor) else None
    if ta is not None and tb is not None:
        ad, bd = ta._data, tb._data
        if type(ad) is not _ndarray or type(bd) is not _ndarray:
            check_same_device(ad, bd, op)
        if ad.dtype is bd.dtype or ad.dtype == bd.dtype:
            if float_result and ad.dtype.kind != "f":
                f = dtypes.default_float
                return ta.to(dtype=f), tb.to(dtype=f)
            return ta, tb
        rt = _zero_dim_aware_dtype(ta, tb)
        if float_result and not rt.is_floating_point:
            rt = dtypes.default_float
        return ta.to(dtype=rt), tb.to(dtype=rt)
    if ta is None and tb is None:
        raise TypeError(f"{op}: expected at least one tensor operand, got "
                        f"{type(a).__name__} and {type(b).__name__}")
    if ta is None:
        if not isinstance(a, _scalar_types):
            return binary_operands(as_tensor(a, tb), tb, op, float_result)
        t, s = tb, a
    else:
        if not isinstance(b, _scalar_types):
            return binary_operands(ta, as_tensor(b, ta), op, float_result)
        t, s = ta, b
    kind = t._data.dtype.kind
    if isinstance(s, (bool, np.bool_)):
        s_cat, s = 0, bool(s)
    elif isinstance(s, (int, np.integer)):
        s_cat, s = 1, int(s)
    else:
        s_cat, s = 2, float(s)
    t_cat = 2 if kind == "f" else (0 if kind == "b" else 1)
    if s_cat > t_cat:
        t = t.to(dtype=dtypes.default_float if s_cat == 2 or float_result else dtypes.int64)
    elif float_result and kind != "f":
        t = t.to(dtype=dtypes.default_float)
    return (t, s) if ta is not None else (s, t)


def int_arg(value, op: str, name: str = "dim", pos=None) -> int:
    """``value`` as an int where PyTorch takes one: an int, a NumPy integer or a 0-d
    integer tensor; anything else (a float, a bool, a string) is PyTorch's TypeError,
    never a silent ``int()``."""
    if type(value) is int:
        return value
    if isinstance(value, Tensor):
        d = value._data
        if d.ndim == 0 and d.dtype.kind in "iu":
            return int(value.item())
    elif isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    where = f"{op}(): " if op else ""
    kind = type(value).__name__ if not isinstance(value, Tensor) else "Tensor"
    if pos is None:
        raise TypeError(f"{where}argument '{name}' must be int, not {kind}")
    raise TypeError(f"{where}argument '{name}' must be tuple of ints, but found element of "
                    f"type {kind} at pos {pos}")


def normalize_dim(dim: int, ndim: int, op: str = "") -> int:
    if type(dim) is not int:
        dim = int_arg(dim, op)
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{op + ': ' if op else ''}Dimension out of range (expected to be in "
                         f"range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


# the reductions that PyTorch runs over every dimension for an empty dim list (any and
# all keep the shape; logsumexp refuses it)
_EMPTY_DIM_REDUCES_ALL = frozenset({"sum", "mean", "var", "std", "norm", "amax", "amin"})


def normalize_dims(dim, ndim: int, op: str = "") -> tuple | None:
    """``dim`` (None, int, list or tuple) as a sorted tuple of non-negative axes."""
    if dim is None:
        return None
    if isinstance(dim, (list, tuple)):
        if not dim and op in _EMPTY_DIM_REDUCES_ALL:
            return None  # PyTorch: sum(dim=[]) reduces every dimension, as dim=None
        axes = tuple(sorted({normalize_dim(int_arg(d, op, pos=i), ndim, op)
                             for i, d in enumerate(dim)}))
        if len(axes) != len(dim):
            seen = set()
            for d in dim:
                a = normalize_dim(int_arg(d, op), ndim, op)
                if a in seen:
                    raise RuntimeError(f"{op + ': ' if op else ''}dim {a} appears multiple "
                                       "times in the list of dims")
                seen.add(a)
    else:
        axes = (normalize_dim(dim, ndim, op),)
    # a 0-d tensor accepts dim 0 and -1, as in PyTorch: it has no axis to reduce
    return axes if ndim else ()
