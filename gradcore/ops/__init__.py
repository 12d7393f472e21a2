"""Every operation, grouped by family; :func:`bind_methods` makes them Tensor methods.

Families: :mod:`.pointwise`, :mod:`.reduce`, :mod:`.shape`, :mod:`.index`,
:mod:`.linalg`, :mod:`.activation`, :mod:`.conv`, :mod:`.normalization`.  In-place
variants (``add_``, ``+=``, ``t[i] = v``) are built here from the out-of-place ops, so
they record the same derivative rules.
"""

from __future__ import annotations

import builtins

import numpy as np

from .. import _random, dtypes
from ..autograd.grad_mode import no_grad as _no_grad
from ..autograd.graph import holds as _holds
from ..autograd.graph import set_differentiable_namespace
from ..backend import Device as _Device
from ..backend import device as _device
from ..backend import math_of
from . import (
    _elide,
    _export,
    _library,
    activation,
    conv,
    copies,
    ctc,
    extra,
    index,
    linalg,
    normalization,
    pointwise,
    pool,
    reduce,
    shape,
    tensor_math,
)
from . import device as _device_ops
from ._core import Tensor, adopt_views, as_tensor, fresh_history, same_device, wrap
from ._core import mode as _mode
from .index import _check_inplace, _internal_overlap, check_writable, view_needs_rebase

# The families' public ops, each declared where it is written (`@export(...)` above its
# `def`, see _export.py): gradcore.ops.<name> for every name it is exported as.
globals().update(_export.OPS)

__all__ = [n for n in dir() if not n.startswith("_") and
           n not in ("set_differentiable_namespace", "device")]  # (as before these imports)

# The engine runs the backward formulas on tensor_math for create_graph=True; it does
# not import the ops, it is handed them here, once.
set_differentiable_namespace(tensor_math)


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
    tracked = _mode.enabled and (x._rg or builtins.any(isinstance(a, Tensor) and a._rg
                                                      for a in args))
    if not tracked and len(args) == 1 and not kwargs:
        ufunc = _DIRECT_UFUNCS.get(fn)
        if ufunc is not None and _write_direct(x, xd, ufunc, args[0]):
            return x
    if tracked:
        old = _alias(x)
        r = fn(old, *args, **kwargs)
        node = r.grad_fn
        if node is not None and _holds(node, old):
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
            raise RuntimeError(f"{op_name}: result type {dtypes.torch_name(rd.dtype)} can't "
                               f"be cast to the desired output type "
                               f"{dtypes.torch_name(xd.dtype)}")  # (PyTorch's words)
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
_DIRECT_UFUNCS = {pointwise.add: "add", pointwise.sub: "subtract", pointwise.mul: "multiply",
                  pointwise.div: "divide"}


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
        if ufunc is not None and not _mode.enabled and len(args) == 1 and not kwargs and \
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


# ---- binding ----------
def _r(fn):
    def reflected(self, other):
        return fn(other, self)
    reflected.__name__ = f"__r{fn.__name__}__"
    return _elide.op_function(reflected)


def _to(self, *args, **kwargs):
    """``to(device)``, ``to(dtype)``, ``to(device, dtype)`` or ``to(other_tensor)``;
    ``memory_format=`` (``gc.channels_last``, ``gc.contiguous_format``) lays the result
    out so, copying when it is not already (``gc.preserve_format``, the default, keeps
    the layout)."""
    dev = kwargs.pop("device", None)
    dt = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    copy = kwargs.pop("copy", False)
    fmt = kwargs.pop("memory_format", shape.preserve_format)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if fmt is not shape.preserve_format:
        shape._check_format(fmt, "to", self.ndim)
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
    if fmt is not shape.preserve_format and (shape.suggest_format(out._data) is not fmt or
                                             copy and out is self):
        out = _device_ops.clone(out, shape.laid_out(out._data, fmt))
    elif copy and out is self:
        out = out.clone()
    return out


def _clone(self):
    """A copy with its own memory; differentiable."""
    return _device_ops.clone(self)


# the docstrings of the methods bind_methods writes as lambdas (help(gc.Tensor.float))
_LAMBDA_DOCS = {
    "where": "``self`` where ``cond`` is true, else ``other``: "
             "``gc.where(cond, self, other)``.",
    "expand_as": "``self`` broadcast to ``other``'s shape (a view): "
                 "``self.expand(other.shape)``.",
    "view_as": "A view of ``self`` with ``other``'s shape: ``self.view(other.shape)``.",
    "reshape_as": "``self`` with ``other``'s shape (a view where the memory allows): "
                  "``self.reshape(other.shape)``.",
    "float": "``self`` as float32 (itself when it is float32 already); differentiable.",
    "double": "``self`` as float64 (itself when it is float64 already); differentiable.",
    "half": "``self`` as float16 (itself when it is float16 already); differentiable.",
    "long": "``self`` as int64 (itself when it is int64 already).",
    "int": "``self`` as int32 (itself when it is int32 already).",
    "bool": "``self`` as bool (itself when it is bool already).",
    "type_as": "``self`` cast to ``other``'s dtype (itself when it has it already).",
    "cpu": "``self`` on the CPU: a copy from a GPU, itself when it is on the CPU already; "
           "differentiable.",
    "cuda": "``self`` on a GPU (the current one, or ``device``: an index, ``\"cuda:1\"`` or a "
            "device): a copy, or itself when it is there already; differentiable.",
}


def bind_methods(T) -> None:
    """Make the ops Tensor methods and operators (called once, by gradcore.tensor).

    The families' ops come from their ``@export(method=...)`` (``_export.METHODS``);
    below are what is not one exported function: operators, reflected operators,
    lambdas, conversions, and the in-place variants built here."""
    pw = pointwise
    methods = dict(_export.METHODS)
    methods.update({
        # s + t and s * t are t + s and t * s (IEEE addition and multiplication commute),
        # which takes the ops' tensor-first fast paths
        "__add__": pw.add, "__radd__": pw.add, "__sub__": pw.sub, "__rsub__": _r(pw.sub),
        "__mul__": pw.mul, "__rmul__": pw.mul, "__truediv__": pw.div,
        "__rtruediv__": _r(pw.div), "__pow__": pw.pow, "__rpow__": _r(pw.pow),
        "__floordiv__": pw.floor_divide, "__rfloordiv__": _r(pw.floor_divide),
        "__mod__": pw.remainder, "__rmod__": _r(pw.remainder),
        "__neg__": pw.neg, "__pos__": lambda self: self, "__abs__": pw.abs,
        "__matmul__": linalg.matmul, "__rmatmul__": _r(linalg.matmul),
        "__eq__": pw.eq, "__ne__": pw.ne, "__lt__": pw.lt, "__le__": pw.le, "__gt__": pw.gt,
        "__ge__": pw.ge,
        "__and__": pw.bitwise_and, "__or__": pw.bitwise_or, "__xor__": pw.bitwise_xor,
        "__rand__": _r(pw.bitwise_and), "__ror__": _r(pw.bitwise_or),
        "__rxor__": _r(pw.bitwise_xor), "__invert__": pw.bitwise_not,
        "__lshift__": pw.bitwise_left_shift, "__rshift__": pw.bitwise_right_shift,
        "__rlshift__": _r(pw.bitwise_left_shift), "__rrshift__": _r(pw.bitwise_right_shift),
        "where": lambda self, cond, other: pw.where(cond, self, other),
        "polygamma": pw.polygamma_method,
        # shape
        "expand_as": lambda self, other: shape.broadcast_to(self, other.shape),
        "view_as": lambda self, other: shape.view(self, other.shape),
        "reshape_as": lambda self, other: shape.reshape(self, other.shape),
        # indexing
        "__getitem__": index.getitem, "__setitem__": index.setitem,
        # conversion
        "to": _to, "clone": _clone,
        "float": lambda self: pw.to_dtype(self, dtypes.float32),
        "double": lambda self: pw.to_dtype(self, dtypes.float64),
        "half": lambda self: pw.to_dtype(self, dtypes.float16),
        "long": lambda self: pw.to_dtype(self, dtypes.int64),
        "int": lambda self: pw.to_dtype(self, dtypes.int32),
        "bool": lambda self: pw.to_dtype(self, dtypes.bool_),
        "type_as": lambda self, other: pw.to_dtype(self, other.dtype),
        "cpu": lambda self: _to(self, "cpu"),
        "cuda": lambda self, device=None: _to(self, "cuda" if device is None else
                                              (f"cuda:{device}" if isinstance(device, int)
                                               else device)),
        # in place
        "zero_": zero_, "fill_": fill_, "copy_": copy_,
    })  # (the random fills, normal_, uniform_, ..., are bound by gradcore.sampling)
    # in-place variants of exported methods: `add_` runs `add` (`clip_` runs clamp)
    for name in ("add", "sub", "mul", "div", "pow", "clamp", "clip", "neg", "exp", "log",
                 "sqrt", "tanh", "sigmoid", "relu", "abs", "square", "reciprocal", "erf",
                 "masked_fill", "tan", "asin", "acos", "atan", "sinh", "cosh", "log2",
                 "log10", "exp2", "floor", "ceil", "round", "trunc", "frac", "tril", "triu",
                 "scatter", "scatter_add", "scatter_reduce", "index_copy", "index_add",
                 "masked_scatter", "clamp_min",
                 "clamp_max", "fmod", "remainder", "lerp", "atan2", "arctan2", "hypot",
                 "copysign", "erfc", "erfinv", "xlogy", "nan_to_num",
                 # PyTorch's other spellings
                 "absolute", "negative", "multiply", "subtract", "divide", "true_divide",
                 "floor_divide", "arcsin", "arccos", "arctan", "fix",
                 "sin", "cos", "sign", "expm1", "log1p", "rsqrt", "cumsum", "cumprod",
                 "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and",
                 "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
                 "bitwise_right_shift", "sgn", "logit", "sinc", "deg2rad", "rad2deg", "gcd",
                 "lcm", "heaviside", "ldexp", "nextafter", "lgamma", "digamma", "mvlgamma",
                 "i0", "polygamma", "igamma", "igammac"):
        methods[name + "_"] = _inplace_method(name + "_", methods[name])
    for name in ("put", "index_put", "index_fill", "index_reduce", "renorm", "addmm", "addmv",
                 "addr", "addbmm", "baddbmm", "addcmul", "addcdiv"):
        methods[name + "_"] = _inplace_method(name + "_", methods[name])
    methods["float_power_"] = _inplace_method("float_power_", pw.float_power_in_place_form)
    # comparisons in place: x holds 1 and 0, with a zero gradient back
    for name in ("eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less",
                 "less_equal", "not_equal"):
        methods[name + "_"] = _inplace_method(name + "_", pw.comparison_in_place(methods[name]))
    # asinh_, acosh_, atanh_ run, but PyTorch has no derivative for them
    for name, op in (("asinh", "asinh"), ("arcsinh", "asinh"), ("acosh", "acosh"),
                     ("arccosh", "acosh"), ("atanh", "atanh"), ("arctanh", "atanh")):
        methods[name + "_"] = _inplace_method(
            name + "_", pw.without_derivative_in_place(op, methods[name]))
    for name, op in (("__iadd__", "add"), ("__isub__", "sub"), ("__imul__", "mul"),
                     ("__itruediv__", "div"), ("__ipow__", "pow")):
        methods[name] = _inplace_method(name, methods[op])
    for name, doc in _LAMBDA_DOCS.items():
        methods[name].__doc__ = doc
    for name, fn in methods.items():
        setattr(T, name, fn)
    T.__hash__ = object.__hash__


def __getattr__(name: str):
    """``gc.ops.<namespace>``: the custom ops of a namespace (``gc.library.custom_op``),
    as ``torch.ops.<namespace>``; names of gradcore.ops's own never get here."""
    ns = _library.namespace(name) if not name.startswith("__") else None
    if ns is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return ns
