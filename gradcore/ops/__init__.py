"""Every operation, grouped by family; :func:`bind_methods` makes them Tensor methods.

Families: :mod:`.pointwise`, :mod:`.reduce`, :mod:`.shape`, :mod:`.index`,
:mod:`.linalg`.  In-place variants (``add_``, ``+=``, ``t[i] = v``) are built here
from the out-of-place ops, so they record the same derivative rules.
"""

from __future__ import annotations

import builtins

import numpy as np

from .. import _random, dtypes
from ..autograd.grad_mode import no_grad as _no_grad
from ..autograd.graph import set_differentiable_namespace
from ..backend import Device as _Device
from ..backend import device as _device
from ..backend import math_of
from . import (
    _elide,
    activation,
    index,
    linalg,
    pointwise,
    reduce,
    shape,
    tensor_math,
)
from . import device as _device_ops
from ._core import Tensor, adopt_views, as_tensor, fresh_history, mode, same_device, wrap
from .activation import erf, gelu, layer_norm, log_softmax, softmax
from .index import (
    _check_inplace,
    _internal_overlap,
    check_writable,
    gather,
    index_select,
    masked_fill,
    nonzero,
    scatter_add,
    view_needs_rebase,
)
from .linalg import bmm, diag, diagonal, dot, matmul, mm, mv, outer
from .pointwise import (
    abs,
    add,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    clamp,
    clip,
    cos,
    div,
    eq,
    exp,
    expm1,
    floor_divide,
    ge,
    gt,
    isfinite,
    isinf,
    isnan,
    le,
    log,
    log1p,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    lt,
    maximum,
    minimum,
    mul,
    ne,
    neg,
    pow,
    reciprocal,
    relu,
    remainder,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sqrt,
    square,
    sub,
    tanh,
    where,
)
from .reduce import (
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    logsumexp,
    max,
    mean,
    min,
    norm,
    prod,
    std,
    sum,
    var,
)
from .shape import (
    broadcast_to,
    cat,
    chunk,
    concat,
    contiguous_format,
    expand,
    flatten,
    memory_format,
    movedim,
    permute,
    preserve_format,
    repeat,
    reshape,
    split,
    squeeze,
    stack,
    swapaxes,
    transpose,
    unbind,
    unflatten,
    unsqueeze,
    view,
)

__all__ = [n for n in dir() if not n.startswith("_") and
           n not in ("set_differentiable_namespace", "device")]  # (as before these imports)

# The engine runs the backward formulas on tensor_math for create_graph=True; it does
# not import the ops, it is handed them here, once.
set_differentiable_namespace(tensor_math)

multiply, subtract, divide, negative, true_divide = mul, sub, div, neg, div
greater, less, greater_equal, less_equal, not_equal = gt, lt, ge, le, ne


# ---- in-place ops ----------
def _alias(x: Tensor) -> Tensor:
    """A new tensor object standing for ``x``'s current value in the graph."""
    t = wrap(x._data)
    t.grad_fn = fresh_history(x)  # (a view: its base may have changed since)
    t._out_nr, t._rg = x._out_nr, x._rg
    return t


def apply_inplace(x: Tensor, op_name: str, fn, *args, **kwargs) -> Tensor:
    """Run the out-of-place ``fn(x, *args)`` and write its result into ``x``.

    The result's graph node becomes ``x``'s history, so in-place ops are
    differentiated like their out-of-place twins; tensors saved for backward that
    share ``x``'s memory see their version change and backward then raises.
    """
    _check_inplace(x, op_name)
    check_writable(x._data, op_name)
    if view_needs_rebase(x, *args):
        # compute out of place from the view's current value, then write through the base
        old = _alias(x)
        old._data = x._data.copy()
        r = fn(old, *args, **kwargs)
        if tuple(r.shape) != tuple(x.shape):
            raise RuntimeError(f"{op_name}: output with shape {list(x.shape)} doesn't match "
                               f"the broadcast shape {list(r.shape)}")
        return index.inplace_on_view(x, None, r)
    xd = x._data
    # builtins.any: this module's `any` is the tensor reduction
    tracked = mode.enabled and (x._rg or builtins.any(isinstance(a, Tensor) and a._rg
                                                      for a in args))
    if not tracked and len(args) == 1 and not kwargs:
        ufunc = _DIRECT_UFUNCS.get(fn)
        if ufunc is not None and _write_direct(x, xd, ufunc, args[0]):
            return x
    if tracked:
        old = _alias(x)
        r = fn(old, *args, **kwargs)
        node = r.grad_fn
        if node is not None and node.saved is not None and \
                builtins.any(s is old for s in node.saved):
            old._data = xd.copy()  # the node needs the value from before the write
    else:
        with _no_grad():
            r = fn(x, *args, **kwargs)
    rd = r._data
    if rd.shape != xd.shape:
        raise RuntimeError(f"{op_name}: output with shape {list(xd.shape)} doesn't match the "
                           f"broadcast shape {list(rd.shape)}")
    if rd.dtype != xd.dtype:
        if not _can_cast(rd.dtype, xd.dtype):
            raise RuntimeError(f"{op_name}: result type {dtypes.from_numpy_dtype(rd.dtype)!r} "
                               f"can't be cast to the desired output type "
                               f"{dtypes.from_numpy_dtype(xd.dtype)!r}")
    math_of(xd).copyto(xd, rd, casting="unsafe")
    x._bump()
    if tracked and r.grad_fn is not None:
        joins = not x._rg  # x joins a graph: its untracked views follow
        x.grad_fn, x._out_nr, x._rg = r.grad_fn, r._out_nr, True
        if joins:
            adopt_views(x)
        if r.grad_fn.out is not None:
            r.grad_fn.save_output(x)  # the saved output is x's value now
    return x


# Untracked in-place arithmetic (an optimizer's `p -= lr * g`) runs as one ufunc
# writing into x's memory, with no temporary and no copy back.
_DIRECT_UFUNCS = {add: "add", sub: "subtract", mul: "multiply", div: "divide"}


_ndarray = np.ndarray
_NP_UFUNCS = {name: getattr(np, name) for name in ("add", "subtract", "multiply", "divide")}


def _write_direct(x, xd, ufunc, other) -> bool:
    """``xd = ufunc(xd, other)`` in place when no promotion or broadcast of ``x`` is
    involved; False (nothing done) otherwise."""
    if isinstance(other, Tensor):
        od = other._data
        if od.shape == xd.shape and od.dtype is xd.dtype and type(od) is _ndarray and \
                type(xd) is _ndarray and xd.dtype.kind == "f":
            try:  # the common case: same shape, host arrays
                _NP_UFUNCS[ufunc](xd, od, out=xd)
            except ValueError:  # read-only: an expand()ed view (PyTorch's error)
                check_writable(xd, ufunc)
                raise
            x._bump()
            return True
    if xd.dtype.kind != "f" or _internal_overlap(xd):
        return False  # (apply_inplace raises PyTorch's error for an overlapping output)
    if isinstance(other, Tensor):
        od = other._data
        if od.dtype != xd.dtype or type(od) is not type(xd) or od.ndim > xd.ndim:
            return False
        if od.shape != xd.shape[xd.ndim - od.ndim:] and od.shape != xd.shape:
            return False
        if not same_device(xd, od):
            return False
    elif isinstance(other, (float, int)) and not isinstance(other, bool):
        od = other
    else:
        return False
    getattr(math_of(xd), ufunc)(xd, od, out=xd)
    x._bump()
    return True


def _can_cast(src, dst) -> bool:
    order = {"b": 0, "u": 1, "i": 1, "f": 2}
    return order[src.kind] <= order[dst.kind]


def _inplace_method(name, fn):
    ufunc = _DIRECT_UFUNCS.get(fn)

    def method(self, *args, **kwargs):
        # an optimizer step under no_grad: straight into the tensor's memory
        if ufunc is not None and not mode.enabled and len(args) == 1 and not kwargs and \
                _write_direct(self, self._data, ufunc, args[0]):
            return self
        return apply_inplace(self, name, fn, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"In-place :func:`{fn.__name__}`."
    return method


def zero_(x):
    """Fill with zeros in place."""
    return fill_(x, 0)


def fill_(x, value):
    """Fill with ``value`` in place (also an ``expand()``ed tensor, as PyTorch does)."""
    index.setitem(x, Ellipsis, value, fill=True)
    return x


def copy_(x, src):
    """Copy ``src`` (broadcast) into ``x`` in place; differentiable with respect to ``src``."""
    src = src if isinstance(src, Tensor) else as_tensor(src, x)
    check_writable(x._data, "copy_")
    if src.device != x.device:
        src = src.to(x.device)
    index.setitem(x, Ellipsis, src)
    return x


def _random_fill(x, draw):
    """Write ``draw(rng, shape)``, values from gradcore's generator, into ``x`` in place
    (recorded as a fill: no gradient reaches the old values, as PyTorch's in-place
    random ops)."""
    values = draw(_random.seed_generator(), tuple(x.shape))
    index.setitem(x, Ellipsis, x.device.asarray(values, x._data.dtype))
    return x


def normal_(x, mean=0.0, std=1.0, *, generator=None):
    """Fill with values drawn from the normal distribution N(mean, std**2), in place."""
    return _random_fill(x, lambda rng, shape: (generator or rng).normal(mean, std, shape))


def uniform_(x, from_=0.0, to=1.0, *, generator=None):
    """Fill with values drawn uniformly from [from_, to), in place."""
    return _random_fill(x, lambda rng, shape: (generator or rng).uniform(from_, to, shape))


# ---- binding ----------
def _r(fn):
    def reflected(self, other):
        return fn(other, self)
    reflected.__name__ = f"__r{fn.__name__}__"
    return _elide.op_function(reflected)


def _to(self, *args, **kwargs):
    """``to(device)``, ``to(dtype)``, ``to(device, dtype)`` or ``to(other_tensor)``."""
    dev = kwargs.pop("device", None)
    dt = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    copy = kwargs.pop("copy", False)
    for a in args:
        if isinstance(a, Tensor):
            dev, dt = a.device, a.dtype
        elif isinstance(a, (str, _Device)) and not (isinstance(a, str) and a in dtypes._BY_NAME):
            dev = a
        elif a is not None:
            dt = a
    out = self
    if dt is not None:
        out = pointwise.to_dtype(out, dt)
    if dev is not None and _device(dev) != out.device:
        out = _device_ops.to_device(out, _device(dev))
    if copy and out is self:
        out = out.clone()
    return out


def _clone(self):
    """A copy with its own memory; differentiable."""
    return _device_ops.clone(self)


def bind_methods(T) -> None:
    """Make the ops Tensor methods and operators (called once, by gradcore.tensor)."""
    methods = {
        # arithmetic and operators
        "add": add, "sub": sub, "mul": mul, "div": div, "pow": pow, "neg": neg,
        "subtract": sub, "multiply": mul, "divide": div, "true_divide": div,
        "floor_divide": floor_divide, "remainder": remainder,
        # s + t and s * t are t + s and t * s (IEEE addition and multiplication commute),
        # which takes the ops' tensor-first fast paths
        "__add__": add, "__radd__": add, "__sub__": sub, "__rsub__": _r(sub),
        "__mul__": mul, "__rmul__": mul, "__truediv__": div, "__rtruediv__": _r(div),
        "__pow__": pow, "__rpow__": _r(pow), "__floordiv__": floor_divide,
        "__rfloordiv__": _r(floor_divide), "__mod__": remainder, "__rmod__": _r(remainder),
        "__neg__": neg, "__pos__": lambda self: self, "__abs__": abs,
        "__matmul__": matmul, "__rmatmul__": _r(matmul),
        "__eq__": eq, "__ne__": ne, "__lt__": lt, "__le__": le, "__gt__": gt, "__ge__": ge,
        "__and__": bitwise_and, "__or__": bitwise_or, "__xor__": bitwise_xor,
        "__rand__": _r(bitwise_and), "__ror__": _r(bitwise_or), "__rxor__": _r(bitwise_xor),
        "__invert__": bitwise_not,
        "eq": eq, "ne": ne, "lt": lt, "le": le, "gt": gt, "ge": ge,
        "logical_and": logical_and, "logical_or": logical_or, "logical_not": logical_not,
        "logical_xor": logical_xor, "isnan": isnan, "isfinite": isfinite, "isinf": isinf,
        # pointwise
        "exp": exp, "log": log, "log1p": log1p, "expm1": expm1, "sqrt": sqrt, "rsqrt": rsqrt,
        "square": square, "abs": abs, "sign": sign, "sin": sin, "cos": cos, "tanh": tanh,
        "sigmoid": sigmoid, "relu": relu, "clamp": clamp, "clip": clip, "maximum": maximum,
        "minimum": minimum, "reciprocal": reciprocal,
        "where": lambda self, cond, other: where(cond, self, other),
        # reductions
        "sum": sum, "mean": mean, "prod": prod, "var": var, "std": std, "max": max, "min": min,
        "amax": amax, "amin": amin, "argmax": argmax, "argmin": argmin,
        "logsumexp": logsumexp, "norm": norm, "any": any, "all": all,
        # activations
        "softmax": softmax, "log_softmax": log_softmax, "erf": erf,
        # shape
        "reshape": reshape, "view": view, "flatten": flatten, "unflatten": unflatten,
        "squeeze": squeeze, "unsqueeze": unsqueeze, "transpose": transpose,
        "swapaxes": swapaxes, "swapdims": swapaxes, "permute": permute, "movedim": movedim,
        "broadcast_to": broadcast_to, "expand": expand,
        "expand_as": lambda self, other: broadcast_to(self, other.shape),
        "view_as": lambda self, other: view(self, other.shape),
        "reshape_as": lambda self, other: reshape(self, other.shape),
        "repeat": repeat, "split": split, "chunk": chunk, "unbind": unbind,
        "contiguous": shape.contiguous, "is_contiguous": shape.is_contiguous,
        # indexing
        "__getitem__": index.getitem, "__setitem__": index.setitem, "gather": gather,
        "scatter_add": scatter_add, "index_select": index_select, "masked_fill": masked_fill,
        "nonzero": nonzero,
        # linear algebra
        "matmul": matmul, "mm": mm, "bmm": bmm, "dot": dot, "outer": outer, "mv": mv,
        "diag": diag, "diagonal": diagonal,
        # conversion
        "to": _to, "clone": _clone,
        "float": lambda self: pointwise.to_dtype(self, dtypes.float32),
        "double": lambda self: pointwise.to_dtype(self, dtypes.float64),
        "half": lambda self: pointwise.to_dtype(self, dtypes.float16),
        "long": lambda self: pointwise.to_dtype(self, dtypes.int64),
        "int": lambda self: pointwise.to_dtype(self, dtypes.int32),
        "bool": lambda self: pointwise.to_dtype(self, dtypes.bool_),
        "type_as": lambda self, other: pointwise.to_dtype(self, other.dtype),
        "cpu": lambda self: _to(self, "cpu"),
        "cuda": lambda self, device=None: _to(self, "cuda" if device is None else
                                              (f"cuda:{device}" if isinstance(device, int)
                                               else device)),
        # in place
        "zero_": zero_, "fill_": fill_, "copy_": copy_,
        "normal_": normal_, "uniform_": uniform_,
        "masked_fill_": _inplace_method("masked_fill_", masked_fill),
    }
    for name, fn in [("add_", add), ("sub_", sub), ("mul_", mul), ("div_", div),
                     ("pow_", pow), ("clamp_", clamp), ("clip_", clamp), ("neg_", neg),
                     ("exp_", exp), ("log_", log), ("sqrt_", sqrt), ("tanh_", tanh),
                     ("sigmoid_", sigmoid), ("relu_", relu), ("abs_", abs),
                     ("square_", square), ("reciprocal_", reciprocal), ("erf_", erf),
                     ("__iadd__", add), ("__isub__", sub), ("__imul__", mul),
                     ("__itruediv__", div), ("__ipow__", pow)]:
        methods[name] = _inplace_method(name, fn)
    for name, fn in methods.items():
        setattr(T, name, fn)
    T.__hash__ = object.__hash__
