"""Reductions: sum, mean, prod, var, std, max, min, amax, amin, arg*, logsumexp, norm;
and the cumulative cumsum, cumprod."""

from __future__ import annotations

import warnings
from collections import namedtuple

import numpy as np

from .. import dtypes
from ..backend import math_of
from . import pointwise as pw
from ._core import Node, Tensor, int_arg, mode, normalize_dim, normalize_dims, record, wrap
from ._export import export

values_indices = namedtuple("values_indices", ["values", "indices"])


def _dim_arg(dim, axis):
    return axis if dim is None else dim


def _keep_shape(shape, axes):
    """``shape`` with the reduced ``axes`` (None: all) set to 1."""
    if axes is None:
        return (1,) * len(shape)
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _expand_back(F, g, shape, axes, keepdim):
    """The gradient of a reduction, broadcast back over the reduced axes (no copy)."""
    if not keepdim:
        g = g.reshape(_keep_shape(shape, axes))
    return F.broadcast_to(g, shape)


# ---- sum / mean ----------
class SumBackward0(Node):
    def apply(self, F, g):
        return (F.broadcast_to(g.reshape((1,) * len(self.in_shape)), self.in_shape),)


class SumBackward1(Node):
    def apply(self, F, g):
        return (_expand_back(F, g, self.in_shape, self.axes, self.keepdim),)


def _accum_dtype(xd, dtype):
    """NumPy dtype to accumulate in, and the result's dtype (PyTorch's rules)."""
    if dtype is not None:
        d = dtypes.to_dtype(dtype).np
        return d, d
    k = xd.dtype.kind
    if k in "biu":
        return np.dtype(np.int64), np.dtype(np.int64)
    if xd.dtype == np.float16:  # half sums accumulate in float32, as PyTorch's do
        return np.dtype(np.float32), xd.dtype
    return xd.dtype, xd.dtype


def _cast_input(x, dtype):
    """``x`` cast to ``dtype`` before a reduction given ``dtype=`` (PyTorch's meaning of
    the argument), through a differentiable cast when ``x`` is tracked: the gradient
    comes back in ``x``'s own dtype."""
    if dtype is None or not (mode.enabled and x._rg):
        return x
    d = dtypes.to_dtype(dtype)
    return pw.to_dtype(x, d) if d.is_floating_point else x


@export(torch=True, method=True)
def sum(x, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):  # noqa: A001
    """Sum over ``dim`` (int or tuple; all dimensions when None)."""
    dim = _dim_arg(dim, axis)
    keepdim = keepdim if keepdims is None else keepdims
    x = _cast_input(x, dtype)
    xd = x._data
    axes = normalize_dims(dim, xd.ndim, "sum")
    acc, res = _accum_dtype(xd, dtype)
    out = xd.sum(axis=axes, dtype=acc, keepdims=keepdim)
    if out.dtype != res:
        out = out.astype(res)
    if not (mode.enabled and x._rg) or res.kind != "f":
        return wrap(out)
    whole = axes is None and not keepdim
    t = record(out, SumBackward0 if whole else SumBackward1, x)
    node = t.grad_fn
    node.in_shape = xd.shape
    if not whole:
        node.axes, node.keepdim = axes, keepdim
    return t


class MeanBackward0(Node):
    def apply(self, F, g):
        g = g * self.scale
        return (F.broadcast_to(g.reshape((1,) * len(self.in_shape)), self.in_shape),)


class MeanBackward1(Node):
    def apply(self, F, g):
        return (_expand_back(F, g * self.scale, self.in_shape, self.axes, self.keepdim),)


@export(torch=True, method=True)
def mean(x, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
    """Mean over ``dim`` (int or tuple; all dimensions when None)."""
    dim = _dim_arg(dim, axis)
    keepdim = keepdim if keepdims is None else keepdims
    x = _cast_input(x, dtype)
    xd = x._data
    if dtype is None and xd.dtype.kind != "f":
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either "
                           f"a floating point or complex dtype. Got: {x.dtype!r}")
    axes = normalize_dims(dim, xd.ndim, "mean")
    acc, res = _accum_dtype(xd, dtype)
    n = xd.size if axes is None else int(np.prod([xd.shape[a] for a in axes]))
    # sum, then scale: NumPy's mean() is the same arithmetic with more Python around it
    out = xd.sum(axis=axes, dtype=acc, keepdims=keepdim)
    out = out * (1.0 / n) if n else out * np.nan
    if out.dtype != res:
        out = out.astype(res)
    if not (mode.enabled and x._rg):
        return wrap(out)
    whole = axes is None and not keepdim
    t = record(out, MeanBackward0 if whole else MeanBackward1, x)
    node = t.grad_fn
    node.in_shape = xd.shape
    node.scale = 1.0 / n if n else float("nan")
    if not whole:
        node.axes, node.keepdim = axes, keepdim
    return t


# ---- prod ----------
class ProdBackward(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        y = self.output(F)
        if not x.shape:  # a 0-d input is its own product (a new array: fresh_grads)
            return (g * 1,)
        axis = self.axis
        if axis is not None and not self.keepdim:
            g, y = F.expand_dims(g, axis), F.expand_dims(y, axis)
        # PyTorch's rule: y / x when no element is zero (NaN and inf propagate as in
        # PyTorch's, an empty input gets an empty gradient), else the product of the
        # other elements, without dividing (polynomial in x: its own derivatives, under
        # create_graph=True, are exact where x has zeros too)
        if 0 in x.shape:
            return (g * y / x,)
        return (F.either((x == 0).any(), lambda: _prod_grad_exact(F, g, x, axis),
                         lambda: g * y / x),)

    def name(self):
        return "ProdBackward0" if self.axis is None else "ProdBackward1"


def _prod_grad_exact(F, g, x, axis):
    """Product of all other elements, without dividing (exact when some are zero);
    ``g`` has the reduced axis kept: the products before each element (an exclusive
    cumprod) times those after it (the same from the other end)."""
    if axis is None:
        flat = x.reshape(-1)
        return (_others_product(F, flat, 0) * g).reshape(x.shape)
    return _others_product(F, x, axis) * g


def _others_product(F, x, axis):
    before = _shift(F, F.cumprod(x, axis), 1, axis, 1)
    after = _flip(_shift(F, F.cumprod(_flip(x, axis), axis), 1, axis, 1), axis)
    return before * after


def _flip(a, axis):
    """``a`` reversed along ``axis`` (a view: arrays and tensors slice alike)."""
    return a[(slice(None),) * axis + (slice(None, None, -1),)]


def _shift(F, a, d, axis, fill):
    """``a`` moved ``d`` places along ``axis`` (towards the end for d > 0), the ``|d|``
    places left open set to ``fill`` (a constant)."""
    n = a.shape[axis]
    k = d if d > 0 else -d
    if k >= n:
        return F.zeros_like(a) + fill
    lead = (slice(None),) * axis
    pad = F.zeros_like(a, shape=a.shape[:axis] + (k,) + a.shape[axis + 1:])
    if fill:
        pad = pad + fill
    if d > 0:
        return F.concatenate([pad, a[lead + (slice(0, n - k),)]], axis=axis)
    return F.concatenate([a[lead + (slice(k, n),)], pad], axis=axis)


@export(torch=True, method=True)
def prod(x, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
    """Product over one ``dim`` (an int, as in PyTorch) or over everything."""
    dim, keepdim = _dim_arg(dim, axis), keepdim if keepdims is None else keepdims
    x = _cast_input(x, dtype)
    xd = x._data
    if isinstance(dim, (tuple, list)):
        raise TypeError("prod(): argument 'dim' must be int, not tuple")
    axis = None if dim is None else normalize_dim(dim, xd.ndim, "prod")
    acc, res = _accum_dtype(xd, dtype)
    out = xd.prod(axis=axis, dtype=acc, keepdims=keepdim and axis is not None)
    if out.dtype != res:
        out = out.astype(res)
    if not (mode.enabled and x._rg) or res.kind != "f":
        return wrap(out)
    t = record(out, ProdBackward, x)
    node = t.grad_fn
    node.axis, node.keepdim = axis, keepdim
    node.save(x)
    node.save_output(t)
    return t


# ---- cumsum / cumprod ----------
def _reversed_cumsum(F, a, axis):
    """``a[k] + a[k+1] + ... + a[n-1]`` at each ``k`` along ``axis``."""
    return _flip(F.cumsum(_flip(a, axis), axis), axis)


class CumsumBackward0(Node):
    """PyTorch's cumsum_backward: the gradient's cumulative sum from the end."""

    fresh_grads = True

    def apply(self, F, g):
        if not g.shape:  # a 0-d input is its own cumsum (a new array: fresh_grads)
            return (g * 1,)
        return (_reversed_cumsum(F, g, self.axis),)


class CumprodBackward0(Node):
    """PyTorch's cumprod_backward: ``reversed_cumsum(y * g) / x`` when no element is
    zero, else, without dividing, ``x[0] ... x[k-1] * s[k]`` with ``s[k] = g[k] + x[k+1]
    s[k+1]`` (:func:`_cumprod_grad_exact`), polynomial in ``x`` and ``g``: exact where
    ``x`` has zeros, and so are its own derivatives under ``create_graph=True``."""

    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        axis = self.axis
        if not x.shape or x.shape[axis] <= 1 or 0 in x.shape:
            return (g * 1,)  # y is x (a new array: fresh_grads)
        y = self.output(F)
        return (F.either((x == 0).any(), lambda: _cumprod_grad_exact(F, g, x, axis),
                         lambda: _reversed_cumsum(F, y * g, axis) / x),)


def _cumprod_grad_exact(F, g, x, axis):
    """``sum_{j >= k} g[j] prod_{i <= j, i != k} x[i]`` at each ``k``, without dividing:
    the products before ``k`` (an exclusive cumprod) times ``s[k] = g[k] + x[k+1] s[k+1]``,
    that recurrence solved by doubling (``s[k] += a[k] s[k+d]``, ``a[k] *= a[k+d]``
    for d = 1, 2, 4, ...: log2(n) steps of whole-array ops, none reading values back)."""
    n = x.shape[axis]
    before = _shift(F, F.cumprod(x, axis), 1, axis, 1)
    a, s = _shift(F, x, -1, axis, 0), g
    d = 1
    while d < n:
        s = s + a * _shift(F, s, -d, axis, 0)
        if 2 * d < n:
            a = a * _shift(F, a, -d, axis, 0)
        d *= 2
    return before * s


def _cumulative(x, dim, dtype, op, node_type):
    if type(dim) is not int:
        dim = int_arg(dim, op)
    x = _cast_input(x, dtype)
    xd = x._data
    axis = normalize_dim(dim, xd.ndim)  # (PyTorch's message names no op here)
    res = dtypes.to_dtype(dtype).np if dtype is not None else None
    out = getattr(math_of(xd), op)(xd, axis, res)
    if not (mode.enabled and x._rg) or out.dtype.kind != "f":
        return wrap(out)
    t = record(out, node_type, x)
    node = t.grad_fn
    node.axis = axis
    if node_type is CumprodBackward0:
        node.save(x)
        node.save_output(t)
    return t


@export(torch=True, method=True)
def cumsum(input, dim, *, dtype=None):  # noqa: A002
    """Cumulative sum along ``dim``: ``out[k] = input[0] + ... + input[k]``. Integer and
    bool inputs give int64 (as in PyTorch); ``dtype`` casts the input first."""
    return _cumulative(input, dim, dtype, "cumsum", CumsumBackward0)


@export(torch=True, method=True)
def cumprod(input, dim, *, dtype=None):  # noqa: A002
    """Cumulative product along ``dim``: ``out[k] = input[0] * ... * input[k]``, with
    :func:`cumsum`'s dtypes; its gradient is exact where the input has zeros."""
    return _cumulative(input, dim, dtype, "cumprod", CumprodBackward0)


# ---- var / std ----------
class VarBackward0(Node):
    """d var / dx = 2 (x - mean) / (n - correction); std divides by 2 std as well.

    PyTorch's rule where n - correction <= 0: over all elements (no ``dim``), the
    gradient is nan where x equals the mean and inf elsewhere (times g); along ``dim``
    the factor 2 / (n - correction) is taken as it is (inf at 0)."""

    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        shape = _keep_shape(x.shape, self.axes)
        if not self.keepdim:
            g = g.reshape(shape)
        n, dof = self.n, self.n - self.correction
        mean = F.sum(x, axis=self.axes, keepdims=True) * (1.0 / n) if n else x
        if self.is_std:  # d std = d var / (2 std)
            y = self.output(F)
            if not self.keepdim:
                y = y.reshape(shape)
            g = g / (y * 2)
        if dof <= 0 and (self.axes is None or not x.shape):
            return (g * F.where(x == mean, float("nan"), float("inf")),)
        return ((x - mean) * (g * (2.0 / dof if dof else float("inf"))),)

    def name(self):
        return "StdBackward0" if self.is_std else "VarBackward0"


def _var_std(x, dim, unbiased, keepdim, correction, axis, keepdims, is_std):
    dim = _dim_arg(dim, axis)
    keepdim = keepdim if keepdims is None else keepdims
    if isinstance(dim, bool):  # var(x, False): PyTorch's positional `unbiased`
        dim, unbiased = None, dim
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    xd = x._data
    op = "std" if is_std else "var"
    if xd.dtype.kind != "f":
        raise RuntimeError(f"{op}(): std and var only support floating point and complex "
                           f"dtypes, got {x.dtype!r}")
    axes = normalize_dims(dim, xd.ndim, op)
    n = xd.size if axes is None else int(np.prod([xd.shape[a] for a in axes]))
    acc = np.float32 if xd.dtype == np.float16 else xd.dtype
    m = math_of(xd)
    if n - correction > 0:
        out = xd.var(axis=axes, dtype=acc, ddof=correction, keepdims=keepdim)
    else:
        # PyTorch divides the sum of squares by max(0, n - correction): inf, or nan
        # where every element equals the mean (and over nothing); so does it warn
        warnings.warn(f"{op}(): degrees of freedom is <= 0. Correction should be strictly "
                      "less than the reduction factor (input numel divided by output "
                      "numel).", UserWarning, stacklevel=3)
        centered = xd - xd.sum(axis=axes, dtype=acc, keepdims=True) * (1.0 / n) if n else xd
        with np.errstate(divide="ignore", invalid="ignore"):
            out = m.divide((centered * centered).sum(axis=axes, dtype=acc, keepdims=keepdim),
                           0.0)
    if is_std:
        out = m.sqrt(out)
    out = m.asarray(out).astype(xd.dtype, copy=False)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record(out, VarBackward0, x)
    node = t.grad_fn
    node.axes, node.keepdim, node.n, node.is_std = axes, keepdim, n, is_std
    node.correction = correction
    node.save(x)
    if is_std:
        node.save_output(t)
    return t


@export(torch=True, method=True)
def var(x, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None,
        keepdims=None):
    """Variance with Bessel's ``correction`` (default 1; ``unbiased=False`` means 0)."""
    return _var_std(x, dim, unbiased, keepdim, correction, axis, keepdims, False)


@export(torch=True, method=True)
def std(x, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None,
        keepdims=None):
    """Standard deviation: the square root of :func:`var`, same arguments."""
    return _var_std(x, dim, unbiased, keepdim, correction, axis, keepdims, True)


# ---- max / min ----------
class MaxBackward1(Node):  # full reduction: ties share the gradient evenly
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        y = self.output(F)
        # PyTorch's evenly_distribute_backward: a NaN maximum is shared by the NaNs
        mask = F.either(y != y, lambda: x != x, lambda: x == y)
        count = F.sum(mask, axis=None, keepdims=False, dtype=x.dtype)
        return (F.where(mask, g / count, 0),)


class AmaxBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        y = self.output(F)
        if not self.keepdim:
            y = y.reshape(_keep_shape(x.shape, self.axes))
            g = g.reshape(y.shape)
        mask = x == y
        count = F.sum(mask, axis=self.axes, keepdims=True, dtype=x.dtype)
        # PyTorch's scale_grad_by_count: where the extremum is NaN, no element equals it,
        # and the gradient is NaN (g / 0 * 0)
        return ((g / count) * mask,)


class MaxBackward0(Node):  # with dim: the gradient goes to the returned index
    fresh_grads = True

    def apply(self, F, g):
        if not self.in_shape:  # a 0-d input is its own maximum (a new array: fresh_grads)
            return (g * 1,)
        idx = self.indices
        if not self.keepdim:
            g = F.expand_dims(g, self.axis)
        return (F.scatter_into_zeros(g, self.axis, idx, self.in_shape),)


def _max_min(x, dim, keepdim, which):
    xd = x._data
    m = math_of(xd)
    if dim is None:
        if xd.size == 0:
            raise RuntimeError(f"{which}(): Expected reduction dim to be specified for "
                               "input.numel() == 0. Specify the reduction dim with the 'dim' "
                               "argument.")
        out = xd.max() if which == "max" else xd.min()
        out = m.asarray(out)
        if not (mode.enabled and x._rg):
            return wrap(out)
        t = record(out, MaxBackward1, x)
        node = t.grad_fn
        node.which = which
        node.save(x)
        node.save_output(t)
        return t
    if isinstance(dim, (tuple, list)):
        raise TypeError(f"{which}(): argument 'dim' must be int, not tuple")
    axis = normalize_dim(dim, xd.ndim, which)
    if xd.ndim and xd.shape[axis] == 0:
        raise IndexError(f"{which}(): Expected reduction dim {axis} to have non-zero size.")
    idx = (m.argmax if which == "max" else m.argmin)(xd, axis=axis, keepdims=True) \
        if xd.ndim else m.zeros((), dtype=np.int64)
    idx = idx.astype(np.int64, copy=False)
    vals = m.take_along_axis(xd, idx, axis=axis) if xd.ndim else xd.copy()
    if not keepdim and xd.ndim:
        vals = vals.squeeze(axis)
        out_idx = idx.squeeze(axis)
    else:
        out_idx = idx
    if not (mode.enabled and x._rg):
        return values_indices(wrap(vals), wrap(out_idx))
    t = record(vals, MaxBackward0, x)
    node = t.grad_fn
    node.axis, node.keepdim, node.indices, node.in_shape = axis, keepdim, idx, xd.shape
    node.which = which
    return values_indices(t, wrap(out_idx))


MaxBackward0.name = lambda self: "MaxBackward0" if self.which == "max" else "MinBackward0"
MaxBackward1.name = lambda self: "MaxBackward1" if self.which == "max" else "MinBackward1"


@export(torch=True, method=True)
def max(x, dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A001
    """The largest element (0-d), or ``(values, indices)`` along ``dim``.

    ``x.max(other_tensor)`` is ``maximum(x, other)``, as in PyTorch.
    """
    keepdim = keepdim if keepdims is None else keepdims
    if isinstance(dim, Tensor):
        return pw.maximum(x, dim)
    return _max_min(x, _dim_arg(dim, axis), keepdim, "max")


@export(torch=True, method=True)
def min(x, dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A001
    """The smallest element (0-d), or ``(values, indices)`` along ``dim``."""
    keepdim = keepdim if keepdims is None else keepdims
    if isinstance(dim, Tensor):
        return pw.minimum(x, dim)
    return _max_min(x, _dim_arg(dim, axis), keepdim, "min")


def _amax_amin(x, dim, keepdim, which):
    xd = x._data
    axes = normalize_dims(dim, xd.ndim, which) if dim not in (None, (), []) else None
    fn = xd.max if which == "amax" else xd.min
    out = math_of(xd).asarray(fn(axis=axes, keepdims=keepdim))
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record(out, AmaxBackward0, x)
    node = t.grad_fn
    node.axes, node.keepdim, node.which = axes, keepdim, which
    node.save(x)
    node.save_output(t)
    return t


AmaxBackward0.name = lambda self: "AmaxBackward0" if self.which == "amax" else "AminBackward0"


@export(torch=True, method=True)
def amax(x, dim=(), keepdim=False, *, axis=None, keepdims=None):
    """Maximum over ``dim`` (int or tuple); ties share the gradient evenly."""
    return _amax_amin(x, axis if axis is not None else dim,
                      keepdim if keepdims is None else keepdims, "amax")


@export(torch=True, method=True)
def amin(x, dim=(), keepdim=False, *, axis=None, keepdims=None):
    """Minimum over ``dim`` (int or tuple); ties share the gradient evenly."""
    return _amax_amin(x, axis if axis is not None else dim,
                      keepdim if keepdims is None else keepdims, "amin")


def _arg(x, dim, keepdim, which):
    xd = x._data
    if xd.dtype.kind == "b":
        raise RuntimeError(f"{which}(): does not support bool input")
    m = math_of(xd)
    fn = m.argmax if which == "argmax" else m.argmin
    if dim is None:
        out = fn(xd.reshape(-1))
        out = m.asarray(out, dtype=np.int64)
        if keepdim:
            out = out.reshape((1,) * xd.ndim)
        return wrap(out)
    if isinstance(dim, (tuple, list)):
        raise TypeError(f"{which}(): argument 'dim' must be int, not tuple")
    axis = normalize_dim(dim, xd.ndim, which)
    return wrap(m.asarray(fn(xd, axis=axis, keepdims=keepdim), dtype=np.int64))


@export(torch=True, method=True)
def argmax(x, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """Index of the largest element (flattened when ``dim`` is None)."""
    return _arg(x, _dim_arg(dim, axis), keepdim if keepdims is None else keepdims, "argmax")


@export(torch=True, method=True)
def argmin(x, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """Index of the smallest element (flattened when ``dim`` is None)."""
    return _arg(x, _dim_arg(dim, axis), keepdim if keepdims is None else keepdims, "argmin")


# ---- logsumexp / norm ----------
class LogsumexpBackward0(Node):
    """d logsumexp / dx = softmax(x) = exp(x - out)."""

    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        y = self.output(F)
        if not self.keepdim:
            shape = _keep_shape(x.shape, self.axes)
            y, g = y.reshape(shape), g.reshape(shape)
        return (g * F.exp(x - y),)


@export(torch=True, method=True)
def logsumexp(x, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """``log(sum(exp(x), dim))``, computed without overflow."""
    dim, keepdim = _dim_arg(dim, axis), keepdim if keepdims is None else keepdims
    if dim is None:
        raise TypeError("logsumexp() missing required argument 'dim'")
    x = pw._float(x)
    xd = x._data
    axes = normalize_dims(dim, xd.ndim, "logsumexp")
    m = math_of(xd)
    if xd.size == 0:
        shift = m.zeros(_keep_shape(xd.shape, axes), dtype=xd.dtype)
    else:
        shift = xd.max(axis=axes, keepdims=True)
    acc = np.float32 if xd.dtype == np.float16 else xd.dtype
    # rows whose largest value is infinite are shifted by 0, so that no infinity is
    # subtracted from another (they give inf, -inf or NaN as in PyTorch); done for every
    # row: testing the values first would wait for them on a GPU
    shift = m.where(m.isfinite(shift), shift, 0)
    e = m.exp(xd - shift)
    # PyTorch's steps, each rounded to the input's dtype (float16 sums accumulate in
    # float32, rounded once): exp, sum, log, + shift
    out = m.log(e.sum(axis=axes, keepdims=True, dtype=acc).astype(xd.dtype, copy=False))
    out += shift
    if not keepdim:
        out = out.reshape(tuple(n for i, n in enumerate(xd.shape)
                                if axes is not None and i not in axes))
    out = m.asarray(out)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record(out, LogsumexpBackward0, x)
    node = t.grad_fn
    node.axes, node.keepdim = axes, keepdim
    node.save(x)
    node.save_output(t)
    return t


class NormBackward1(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        y = self.output(F)
        if not self.keepdim and self.axes is not None:
            shape = _keep_shape(x.shape, self.axes)
            y, g = y.reshape(shape), g.reshape(shape)
        # d||x||/dx = x / ||x||, and 0 where the norm is 0 (PyTorch's subgradient)
        safe = F.where(y == 0, 1, y)
        return (F.where(y == 0, 0 * g, g / safe) * x,)

    def name(self):  # PyTorch 2.x routes norm() to linalg.vector_norm
        return "LinalgVectorNormBackward0"


@export(torch=True, method=True)
def norm(x, p="fro", dim=None, keepdim=False, dtype=None, *, axis=None, keepdims=None):
    """Vector p-norm over ``dim`` (default 2, i.e. Frobenius over everything)."""
    dim, keepdim = _dim_arg(dim, axis), keepdim if keepdims is None else keepdims
    if x._data.dtype.kind != "f":  # PyTorch does not promote: an integer norm is refused
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor "
                           f"as input. Got {dtypes.torch_name(x.dtype)}")
    x = pw._float(x)
    if dtype is not None:
        x = x.to(dtype=dtype)
    xd = x._data
    axes = normalize_dims(dim, xd.ndim, "norm")
    if p in ("fro", 2, 2.0, None):
        out = math_of(xd).sqrt((xd * xd).sum(axis=axes, keepdims=keepdim))
        if not (mode.enabled and x._rg):
            return wrap(out)
        t = record(out, NormBackward1, x)
        node = t.grad_fn
        node.axes, node.keepdim = axes, keepdim
        node.save(x)
        node.save_output(t)
        return t
    if p in (float("inf"), "inf"):
        return amax(pw.abs(x), axes if axes is not None else (), keepdim=keepdim)
    if p in (float("-inf"), "-inf"):
        return amin(pw.abs(x), axes if axes is not None else (), keepdim=keepdim)
    if p == 0:
        return sum(pw.ne(x, 0).to(dtype=x.dtype), axes, keepdim=keepdim)
    if p == 1:
        return sum(pw.abs(x), axes, keepdim=keepdim)
    return pw.pow(sum(pw.pow(pw.abs(x), p), axes, keepdim=keepdim), 1.0 / p)


# ---- any / all ----------
@export(torch=True, method=True)
def any(x, dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A001
    """Whether any element is true (bool tensor, never tracked)."""
    dim, keepdim = _dim_arg(dim, axis), keepdim if keepdims is None else keepdims
    axes = normalize_dims(dim, x._data.ndim, "any")
    return wrap(math_of(x._data).asarray(x._data.astype(bool).any(axis=axes, keepdims=keepdim)))


@export(torch=True, method=True)
def all(x, dim=None, keepdim=False, *, axis=None, keepdims=None):  # noqa: A001
    """Whether every element is true (bool tensor, never tracked)."""
    dim, keepdim = _dim_arg(dim, axis), keepdim if keepdims is None else keepdims
    axes = normalize_dims(dim, x._data.ndim, "all")
    return wrap(math_of(x._data).asarray(x._data.astype(bool).all(axis=axes, keepdims=keepdim)))
