"""Reductions: sum, mean, prod, var, std, max, min, amax, amin, aminmax, arg*, logsumexp,
norm, count_nonzero, var_mean, std_mean; the cumulative cumsum, cumprod, cummax, cummin,
logcumsumexp; sorting and searching (sort, argsort, msort, topk, kthvalue, searchsorted,
bucketize) and counting (unique, bincount, histc)."""

from __future__ import annotations

import warnings
from collections import namedtuple

import numpy as np

from .. import dtypes
from ..backend import check_range, math_of
from . import pointwise as pw
from ._core import Node, Tensor, int_arg, mode, normalize_dim, normalize_dims, record, wrap
from ._export import export
from .index import _along_index, take_along_dim
from .shape import cat, movedim, narrow, reshape, squeeze, unsqueeze

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
    # (a 0-d input is its own product: no axis to name, which CuPy would refuse)
    out = xd.prod(axis=axis if xd.ndim else None, dtype=acc,
                  keepdims=keepdim and axis is not None and xd.ndim > 0)
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
def cumsum(input, dim=None, *, dtype=None, axis=None):  # noqa: A002
    """Cumulative sum along ``dim``: ``out[k] = input[0] + ... + input[k]``. Integer and
    bool inputs give int64 (as in PyTorch); ``dtype`` casts the input first."""
    if axis is not None:  # (NumPy's names, which PyTorch accepts too)
        dim = axis
    if dim is None:
        raise TypeError("cumsum() missing 1 required positional argument: 'dim'")
    return _cumulative(input, dim, dtype, "cumsum", CumsumBackward0)


@export(torch=True, method=True)
def cumprod(input, dim=None, *, dtype=None, axis=None):  # noqa: A002
    """Cumulative product along ``dim``: ``out[k] = input[0] * ... * input[k]``, with
    :func:`cumsum`'s dtypes; its gradient is exact where the input has zeros."""
    if axis is not None:  # (NumPy's names, which PyTorch accepts too)
        dim = axis
    if dim is None:
        raise TypeError("cumprod() missing 1 required positional argument: 'dim'")
    return _cumulative(input, dim, dtype, "cumprod", CumprodBackward0)


cummax_result = namedtuple("cummax", ["values", "indices"])
cummin_result = namedtuple("cummin", ["values", "indices"])


class CummaxBackward0(Node):
    """PyTorch's cummaxmin_backward: each gradient goes back to the index its running
    value came from; repeats (a value held over several places) accumulate."""

    fresh_grads = True

    def apply(self, F, g):
        if not self.in_shape:  # a 0-d input is its own value (a new array: fresh_grads)
            return (g * 1,)
        return (F.index_add_into_zeros(g, self.index, self.in_shape),)


class CumminBackward0(CummaxBackward0):
    pass


def _dim_int(dim, op):
    """``dim`` as an int, or PyTorch's TypeError naming the argument's position."""
    if type(dim) is int:
        return dim
    try:
        return int_arg(dim, op)
    except TypeError:
        kind = "Tensor" if isinstance(dim, Tensor) else type(dim).__name__
        raise TypeError(f"{op}(): argument 'dim' (position 2) must be int, not "
                        f"{kind}") from None


def _running_extreme(input, dim, largest, op, node_type, result):  # noqa: A002
    dim = _dim_int(dim, op)
    xd = input._data
    axis = normalize_dim(dim, xd.ndim)  # (PyTorch's message names no op here)
    values, indices = math_of(xd).cummax(xd, axis, largest)
    if not (mode.enabled and input._rg) or values.dtype.kind != "f":
        return result(wrap(values), wrap(indices))
    t = record(values, node_type, input)
    node = t.grad_fn
    node.in_shape = xd.shape
    if xd.ndim:
        node.index = _along_index(indices, axis)
    return result(t, wrap(indices))


@export(torch=True, method=True)
def cummax(input, dim):  # noqa: A002
    """``(values, indices)``: the running maximum of ``input`` along ``dim`` and the
    int64 index it was last met at (a tie moves it on; NaN, once met, is the maximum).
    The gradient goes back to those indices.

    >>> import gradcore as gc
    >>> gc.cummax(gc.tensor([1., 3., 2., 3.]), 0)
    cummax(values=tensor([1., 3., 3., 3.]), indices=tensor([0, 1, 1, 3]))
    """
    return _running_extreme(input, dim, True, "cummax", CummaxBackward0, cummax_result)


@export(torch=True, method=True)
def cummin(input, dim):  # noqa: A002
    """``(values, indices)``: the running minimum of ``input`` along ``dim`` and the
    int64 index it was last met at (:func:`cummax`'s rules).

    >>> import gradcore as gc
    >>> gc.cummin(gc.tensor([2., 1., 3., 1.]), 0).indices
    tensor([0, 1, 1, 3])
    """
    return _running_extreme(input, dim, False, "cummin", CumminBackward0, cummin_result)


class LogcumsumexpBackward0(Node):
    """PyTorch's logcumsumexp_backward: ``sum_{j >= k} g[j] exp(x[k] - y[j])``, the
    positive and the negative parts of ``g`` each summed in log space (a reversed
    logcumsumexp), so that nothing overflows."""

    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        if not g.shape or 0 in g.shape:
            return (g * 1,)
        y, axis = self.output(F), self.axis
        lowest = float(np.finfo(self.dtype).min)
        log_abs = F.log(F.abs(g))
        positive = F.where(g > 0, log_abs, lowest)
        negative = F.where(g < 0, log_abs, lowest)

        def from_end(a):
            return _flip(F.logcumsumexp(_flip(a, axis), axis), axis)

        return (F.exp(from_end(positive - y) + x) - F.exp(from_end(negative - y) + x),)


@export(torch=True, method=True)
def logcumsumexp(input, dim):  # noqa: A002
    """``log(cumsum(exp(input)))`` along ``dim``, computed without overflow (floating
    point inputs only, as in PyTorch).

    >>> import gradcore as gc
    >>> gc.logcumsumexp(gc.tensor([0., 0., 1000.]), 0)
    tensor([0.0000e+00, 6.9315e-01, 1.0000e+03])
    """
    dim = _dim_int(dim, "logcumsumexp")
    xd = input._data
    axis = normalize_dim(dim, xd.ndim)  # (PyTorch's message names no op here)
    if xd.dtype.kind != "f":
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for "
                                  f"'{dtypes.torch_name(input.dtype)}'")
    out = math_of(xd).logcumsumexp(xd, axis)
    if not (mode.enabled and input._rg):
        return wrap(out)
    t = record(out, LogcumsumexpBackward0, input)
    node = t.grad_fn
    node.axis, node.dtype = axis, xd.dtype
    node.save(input)
    node.save_output(t)
    return t


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
    # (a 0-d input's index is 0: no axis to name, which CuPy would refuse)
    return wrap(m.asarray(fn(xd, axis=axis if xd.ndim else None, keepdims=keepdim),
                          dtype=np.int64))


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


# ---- sort, argsort, msort, topk, kthvalue ----------
sort_result = namedtuple("sort", ["values", "indices"])
topk_result = namedtuple("topk", ["values", "indices"])
kthvalue_result = namedtuple("kthvalue", ["values", "indices"])
aminmax_result = namedtuple("aminmax", ["min", "max"])


class _PickedBackward(Node):
    """The gradient of values picked along ``axis`` at ``indices`` (kept along it):
    each goes back to where it was picked from, zeros elsewhere."""

    fresh_grads = True
    keepdim = True

    def apply(self, F, g):
        if not self.in_shape:  # a 0-d input is its own value (a new array: fresh_grads)
            return (g * 1,)
        if not self.keepdim:
            g = F.expand_dims(g, self.axis)
        return (F.scatter_into_zeros(g, self.axis, self.indices, self.in_shape),)


class SortBackward0(_PickedBackward):
    pass


class TopkBackward0(_PickedBackward):
    pass


class KthvalueBackward0(_PickedBackward):
    pass


def _order(xd, axis, descending):
    """The indices that sort ``xd`` along ``axis``, stably (equal elements keep their
    order; NaN counts as the largest, as in PyTorch): descending, as the ascending
    order of the reversed array, reversed."""
    m = math_of(xd)
    if not descending:
        return m.argsort(xd, axis=axis, kind="stable")
    rev = (slice(None),) * axis + (slice(None, None, -1),)
    order = m.argsort(xd[rev], axis=axis, kind="stable")
    return (xd.shape[axis] - 1 - order)[rev]


def _picked(x, idx, axis, cls, keepdim=True):
    """``x``'s values at ``idx`` along ``axis`` (``idx`` keeps the axis), recorded."""
    xd = x._data
    vals = math_of(xd).take_along_axis(xd, idx, axis=axis)
    out_idx = idx
    if not keepdim:
        vals, out_idx = vals.squeeze(axis), idx.squeeze(axis)
    if not (mode.enabled and x._rg):
        return wrap(vals), wrap(out_idx)
    t = record(vals, cls, x)
    node = t.grad_fn
    node.axis, node.indices, node.in_shape, node.keepdim = axis, idx, xd.shape, keepdim
    return t, wrap(out_idx)


def _scalar_pick(x, cls):
    """A 0-d input's (value, index): itself and 0."""
    xd = x._data
    out = xd.copy()
    idx = wrap(math_of(xd).zeros((), dtype=np.int64))
    if not (mode.enabled and x._rg):
        return wrap(out), idx
    t = record(out, cls, x)
    t.grad_fn.in_shape = ()
    return t, idx


@export(torch=True, method=True)
def sort(input, dim=-1, descending=False, *, stable=False, axis=None):  # noqa: A002
    """``(values, indices)``: ``input`` sorted along ``dim`` (ascending unless
    ``descending``), and where each value came from. Always stable (equal elements keep
    their order, which ``stable=True`` asks for); NaN sorts as the largest.

    >>> import gradcore as gc
    >>> gc.sort(gc.tensor([3., 1., 2.]), descending=True)
    sort(values=tensor([3., 2., 1.]), indices=tensor([0, 2, 1]))
    """
    if axis is not None:  # (NumPy's names, which PyTorch accepts too)
        dim = axis
    xd = input._data
    axis = normalize_dim(dim, xd.ndim, "sort")
    if not xd.ndim:
        return sort_result(*_scalar_pick(input, SortBackward0))
    order = _order(xd, axis, descending).astype(np.int64, copy=False)
    return sort_result(*_picked(input, order, axis, SortBackward0))


@export(torch=True, method=True)
def argsort(input, dim=-1, descending=False, *, stable=False, axis=None):  # noqa: A002
    """The indices that sort ``input`` along ``dim`` (as :func:`sort`'s, stable)."""
    if axis is not None:  # (NumPy's names, which PyTorch accepts too)
        dim = axis
    xd = input._data
    axis = normalize_dim(dim, xd.ndim, "argsort")
    if not xd.ndim:
        return wrap(math_of(xd).zeros((), dtype=np.int64))
    return wrap(_order(xd, axis, descending).astype(np.int64, copy=False))


@export(torch=True, method=True)
def msort(input):  # noqa: A002
    """``input`` sorted along dimension 0: ``sort(input, 0).values``."""
    return sort(input, 0).values


@export(torch=True, method=True)
def topk(input, k, dim=-1, largest=True, sorted=True, *, axis=None):  # noqa: A002
    """``(values, indices)`` of the ``k`` largest elements along ``dim`` (the smallest
    with ``largest=False``), in order; among equal elements the first ones.

    >>> import gradcore as gc
    >>> gc.topk(gc.tensor([1., 5., 3., 4.]), 2)
    topk(values=tensor([5., 4.]), indices=tensor([1, 3]))
    """
    if axis is not None:  # (NumPy's names, which PyTorch accepts too)
        dim = axis
    xd = input._data
    k = int_arg(k, "topk", "k")
    axis = normalize_dim(dim, xd.ndim, "topk")
    n = xd.shape[axis] if xd.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError(f"selected index k out of range (k = {k}, dimension {axis} has "
                           f"size {n})")
    if not xd.ndim:
        return topk_result(*_scalar_pick(input, TopkBackward0))
    order = _order(xd, axis, largest)
    idx = order[(slice(None),) * axis + (slice(0, k),)].astype(np.int64, copy=False)
    return topk_result(*_picked(input, idx, axis, TopkBackward0))


@export(torch=True, method=True)
def kthvalue(input, k, dim=-1, keepdim=False, *, axis=None, keepdims=None):  # noqa: A002
    """``(values, indices)`` of the ``k``-th smallest element (from 1) along ``dim``.

    >>> import gradcore as gc
    >>> gc.kthvalue(gc.tensor([3., 1., 2.]), 2)
    kthvalue(values=tensor(2.), indices=tensor(2))
    """
    if axis is not None:  # (NumPy's names, which PyTorch accepts too)
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    xd = input._data
    k = int_arg(k, "kthvalue", "k")
    axis = normalize_dim(dim, xd.ndim, "kthvalue")
    n = xd.shape[axis] if xd.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {axis}")
    if not xd.ndim:
        return kthvalue_result(*_scalar_pick(input, KthvalueBackward0))
    order = _order(xd, axis, False)
    idx = order[(slice(None),) * axis + (slice(k - 1, k),)].astype(np.int64, copy=False)
    return kthvalue_result(*_picked(input, idx, axis, KthvalueBackward0, keepdim))


# ---- median, nanmedian, nansum, nanmean ----------
median_result = namedtuple("median", ["values", "indices"])
nanmedian_result = namedtuple("nanmedian", ["values", "indices"])


class MedianBackward1(_PickedBackward):
    pass


class NanmedianBackward1(_PickedBackward):
    pass


class _EvenlyBackward(Node):
    """A whole-tensor median: the gradient shared evenly by the elements equal to it."""

    fresh_grads = True

    def apply(self, F, g):
        return (g * F.constant(self.weights),)

    def name(self):
        return self._name


def _median_positions(xd, axis, ignore_nan):
    """The index along ``axis`` (kept) of PyTorch's lower median: the ``(n - 1) // 2``-th
    smallest (equal values in their order); a NaN's, the first one, where there is one,
    unless ``ignore_nan`` (then among the others; the first NaN where all are)."""
    m = math_of(xd)
    order = _order(xd, axis, False)
    n = xd.shape[axis]
    nans = m.isnan(xd).sum(axis=axis, keepdims=True) if xd.dtype.kind == "f" else \
        m.zeros(_keep_shape(xd.shape, (axis,)), dtype=np.int64)
    if ignore_nan:
        k = m.maximum((n - nans - 1) // 2, 0)
    else:
        k = m.where(nans > 0, n - nans, (n - 1) // 2)
    return m.take_along_axis(order, k.astype(np.int64), axis).astype(np.int64, copy=False)


def _median(x, dim, keepdim, ignore_nan, op):
    xd = x._data
    names = ("NanmedianBackward", nanmedian_result) if ignore_nan else \
        ("MedianBackward", median_result)
    if dim is None:
        if not xd.size:
            return wrap(math_of(xd).full((), np.nan, dtype=xd.dtype))
        flat = xd.reshape(-1)
        pos = _median_positions(flat, 0, ignore_nan)
        m = math_of(xd)
        value = flat[pos].reshape(())
        if not (mode.enabled and x._rg):
            return wrap(value)
        same = xd == value
        if xd.dtype.kind == "f":  # (a NaN median: shared by the NaNs)
            same = same | (m.isnan(xd) & m.isnan(value))
        t = record(value, _EvenlyBackward, x)
        weights = same.astype(xd.dtype)
        weights /= weights.sum()
        t.grad_fn.weights = weights
        t.grad_fn._name = names[0] + "0"
        return t
    axis = normalize_dim(dim, xd.ndim, op)
    if not xd.ndim:
        cls = NanmedianBackward1 if ignore_nan else MedianBackward1
        return names[1](*_scalar_pick(x, cls))
    if not xd.shape[axis]:
        raise IndexError(f"{op}(): Expected reduction dim {axis} to have non-zero size.")
    idx = _median_positions(xd, axis, ignore_nan)
    cls = NanmedianBackward1 if ignore_nan else MedianBackward1
    return names[1](*_picked(x, idx, axis, cls, keepdim))


@export(torch=True, method=True)
def median(input, dim=None, keepdim=False):  # noqa: A002
    """The lower median (the ``(n - 1) // 2``-th smallest; NaN where there is one): of
    every element without ``dim``, else ``(values, indices)`` along ``dim``, the index
    that of the value's first occurrence in sorted order. Without ``dim`` the gradient is
    shared by the elements equal to the median, as PyTorch's.

    >>> import gradcore as gc
    >>> gc.tensor([[3., 1., 2., 2.]]).median(1)
    median(values=tensor([2.]), indices=tensor([2]))
    """
    return _median(input, dim, keepdim, False, "median")


@export(torch=True, method=True)
def nanmedian(input, dim=None, keepdim=False):  # noqa: A002
    """:func:`median` ignoring NaN (NaN only where everything is)."""
    return _median(input, dim, keepdim, True, "nanmedian")


@export(torch=True, method=True)
def nansum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """:func:`sum` with NaN counted as zero (and a zero gradient there)."""
    if input._data.dtype.kind == "f":
        input = pw.where(pw.isnan(input), 0.0, input)
    return sum(input, dim, keepdim, dtype=dtype)


@export(torch=True, method=True)
def nanmean(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """:func:`mean` of the elements that are not NaN (NaN where there are none)."""
    if input._data.dtype.kind != "f" and dtype is None:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex "
                           f"dtype but got {dtypes.torch_name(input.dtype)}")
    keep = pw.logical_not(pw.isnan(input))
    return nansum(input, dim, keepdim, dtype=dtype) / sum(keep, dim, keepdim)


# ---- mode, quantile, nanquantile ----------
mode_result = namedtuple("mode", ["values", "indices"])


class ModeBackward0(_PickedBackward):
    pass


@export(torch="mode", method="mode")
def mode_values(input, dim=-1, keepdim=False):  # noqa: A002
    """``(values, indices)``: the most frequent value along ``dim`` (the smallest of
    those equally frequent) and the index of its last occurrence.

    >>> import gradcore as gc
    >>> gc.tensor([[1, 2, 2, 3, 3]]).mode()
    mode(values=tensor([2]), indices=tensor([2]))
    """
    xd = input._data
    axis = normalize_dim(dim, xd.ndim, "mode")
    if not xd.ndim:
        return mode_result(*_scalar_pick(input, ModeBackward0))
    n = xd.shape[axis]
    if not n:
        raise IndexError(f"mode(): Expected reduction dim {axis} to have non-zero size.")
    m = math_of(xd)
    moved = m.moveaxis(xd, axis, -1)
    rows = moved.reshape(-1, n)
    order = m.argsort(rows, axis=1, kind="stable")
    s = m.take_along_axis(rows, order, 1)
    starts = m.ones(rows.shape, dtype=bool)
    starts[:, 1:] = s[:, 1:] != s[:, :-1]
    runs = starts.reshape(-1).cumsum() - 1  # each run of equal values, numbered
    length = m.bincount(runs)[runs].reshape(rows.shape)
    best = m.argmax(length, axis=1)  # the first position of the first longest run
    r = m.arange(rows.shape[0])
    last = best + length[r, best] - 1
    idx = order[r, last].reshape(moved.shape[:-1] + (1,))
    idx = m.moveaxis(idx, -1, axis).astype(np.int64, copy=False)
    return mode_result(*_picked(input, idx, axis, ModeBackward0, keepdim))


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan):
    op = "nanquantile" if ignore_nan else "quantile"
    xd = input._data
    m = math_of(xd)
    if xd.dtype.kind != "f" or xd.dtype == np.float16:
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    scalar_q = not isinstance(q, Tensor)
    if scalar_q:
        if not isinstance(q, (int, float)) or isinstance(q, bool):
            raise TypeError(f"{op}(): argument 'q' must be float or Tensor, not "
                            f"{type(q).__name__}")
        qs = m.asarray([float(q)], dtype=xd.dtype)
    else:
        if q._data.ndim > 1:
            raise RuntimeError(f"{op}() q must be a scalar or 1D tensor")
        if q._data.dtype != xd.dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor")
        qs = q._data.reshape(-1)
    if qs.size and (float(qs.min()) < 0 or float(qs.max()) > 1):  # (read, as PyTorch's)
        bad = next(float(v) for v in qs.tolist() if not 0 <= v <= 1)
        raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {bad}")
    if not xd.size:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    nd = xd.ndim
    if dim is None:
        x, axis = reshape_flat(input), 0
    else:
        axis = normalize_dim(dim, nd, op)
        x = movedim(input, axis, -1) if nd else reshape_flat(input)
    srt = sort(x, -1).values  # NaN last
    sd = srt._data
    n = sd.shape[-1]
    nans = m.isnan(sd).sum(-1, keepdims=True)
    count = (n - nans) if ignore_nan else m.full(nans.shape, n, dtype=nans.dtype)
    rank = qs.reshape((1,) * (sd.ndim - 1) + (-1,)) * (count - 1).astype(sd.dtype)
    rank = m.maximum(rank, 0)
    if interpolation == "nearest":
        rank = m.round(rank)
    lo = m.floor(rank).astype(np.int64)
    hi = m.minimum(m.ceil(rank).astype(np.int64), n - 1)
    lo = m.minimum(lo, n - 1)
    if interpolation in ("lower", "nearest"):
        out = take_along_dim(srt, wrap(lo), -1)
    elif interpolation == "higher":
        out = take_along_dim(srt, wrap(hi), -1)
    else:
        a, b = take_along_dim(srt, wrap(lo), -1), take_along_dim(srt, wrap(hi), -1)
        if interpolation == "midpoint":
            out = pw.lerp(a, b, 0.5)
        else:
            out = pw.lerp(a, b, wrap((rank - lo).astype(sd.dtype)))
    if not ignore_nan:  # a NaN anywhere makes the quantile NaN
        out = pw.where(wrap(nans > 0), float("nan"), out)
    out = movedim(out, -1, 0)  # (q, ...)
    if keepdim:
        out = reshape(out, (out.shape[0],) + ((1,) * nd if dim is None else
                                              tuple(1 if k == axis else s for k, s in
                                                    enumerate(xd.shape))))
    if scalar_q:
        out = reshape(out, tuple(out.shape[1:]))
    return out


def reshape_flat(x):
    return reshape(x, -1)


@export(torch=True, method=True)
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):  # noqa: A002
    """The ``q``-th quantiles (``q`` a number or a 1-D tensor in [0, 1], giving a
    leading dimension) of all elements or along ``dim``; between two elements by
    ``interpolation``: ``linear``, ``lower``, ``higher``, ``midpoint`` or ``nearest``
    (halves to even). NaN where there is a NaN. Differentiable.

    >>> import gradcore as gc
    >>> gc.quantile(gc.tensor([0., 1., 2., 10.]), 0.5)
    tensor(1.5000)
    """
    return _quantile(input, q, dim, keepdim, interpolation, False)


@export(torch=True, method=True)
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):  # noqa: A002
    """:func:`quantile` of the elements that are not NaN (NaN where all are)."""
    return _quantile(input, q, dim, keepdim, interpolation, True)


# ---- cov, corrcoef ----------
@export(torch=True, method=True)
def cov(input, *, correction=1, fweights=None, aweights=None):  # noqa: A002
    """The covariance matrix of the variables in the rows of ``input`` (one variable
    for a 1-D tensor, then a 0-d result), the columns its observations; ``fweights``
    (integer repeat counts) and ``aweights`` weigh the observations; ``correction``
    (1: Bessel's) is subtracted from the number of observations. Differentiable.

    >>> import gradcore as gc
    >>> gc.cov(gc.tensor([[0., 1., 2.], [2., 1., 0.]]))
    tensor([[ 1., -1.],
            [-1.,  1.]])
    """
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    x = input if input.ndim == 2 else reshape(input, (1, -1))
    if x._data.dtype.kind != "f":
        x = x.to(dtype=dtypes.default_float)
    n = x.shape[1]
    w = None
    for name, wt in (("fweights", fweights), ("aweights", aweights)):
        if wt is None:
            continue
        if wt.ndim > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but "
                               f"got {name} with {wt.ndim} dimensions")
        if wt.numel() != n:
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                               f"observations in the input but got {wt.numel()} != {n}")
        if name == "fweights" and wt._data.dtype.kind not in "iu":
            raise RuntimeError("cov(): expected fweights to have integral dtype but got "
                               f"fweights with {dtypes.torch_name(wt.dtype)} dtype")
        if name == "aweights" and wt._data.dtype.kind != "f":
            raise RuntimeError("cov(): expected aweights to have floating point dtype but got "
                               f"aweights with {dtypes.torch_name(wt.dtype)} dtype")
        w = wt if w is None else pw.mul(w, wt)
    if w is None:
        w_sum = float(n)
        avg = mean(x, 1)
        norm_factor = w_sum - correction
    else:
        w = w.to(dtype=x.dtype) if w.dtype != x.dtype else w
        w_sum = sum(w)
        avg = sum(pw.mul(x, w), 1) / w_sum
        if aweights is not None and correction != 0:
            norm_factor = w_sum - correction * sum(pw.mul(w, aweights)) / w_sum
        else:
            norm_factor = w_sum - correction
    if isinstance(norm_factor, Tensor):
        if float(norm_factor.item()) <= 0:
            warnings.warn("cov(): degrees of freedom is <= 0", UserWarning, stacklevel=2)
            norm_factor = pw.clamp(norm_factor, min=0)
    elif norm_factor <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0", UserWarning, stacklevel=2)
        norm_factor = 0.0
    xc = x - unsqueeze(avg, 1)
    other = xc if w is None else pw.mul(xc, w)
    c = xc @ other.mT
    return squeeze(pw.div(c, norm_factor))


@export(torch=True, method=True)
def corrcoef(input):  # noqa: A002
    """The Pearson correlation coefficients of the variables in the rows of ``input``
    (:func:`cov` normalized by the standard deviations, clamped to [-1, 1])."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    sd = pw.sqrt(c.diagonal())
    c = c / unsqueeze(sd, 1)
    c = c / unsqueeze(sd, 0)
    return pw.clamp(c, -1, 1)


# ---- unique_consecutive ----------
@export(torch=True, method=True)
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """``input`` with each run of equal consecutive elements (slices along ``dim``)
    kept once; with where each element went (``return_inverse``) and the runs' lengths
    (``return_counts``). Never tracked.

    >>> import gradcore as gc
    >>> gc.unique_consecutive(gc.tensor([1, 1, 2, 2, 3, 1, 1]), return_counts=True)
    (tensor([1, 2, 3, 1]), tensor([2, 2, 1, 2]))
    """
    xd = input._data
    m = math_of(xd)
    if dim is None:
        flat = xd.reshape(-1)
        starts = m.ones(flat.shape, dtype=bool)
        starts[1:] = flat[1:] != flat[:-1]
        values = flat[starts]
        inverse_shape = xd.shape
        n = flat.shape[0]
    else:
        axis = normalize_dim(dim, xd.ndim, "unique_consecutive")
        rows = m.moveaxis(xd, axis, 0)
        n = rows.shape[0]
        rows = rows.reshape(n, -1)
        starts = m.ones((n,), dtype=bool)
        if n > 1 and rows.shape[1]:
            starts[1:] = (rows[1:] != rows[:-1]).any(axis=1)
        elif n > 1:
            starts[1:] = False
        keep = m.flatnonzero(starts)
        values = m.take(xd, keep, axis=axis)
        inverse_shape = (n,)
    out = wrap(values)
    if not (return_inverse or return_counts):
        return out
    res = (out,)
    if return_inverse:
        inverse = starts.astype(np.int64).cumsum() - 1
        res += (wrap(inverse.reshape(inverse_shape).astype(np.int64, copy=False)),)
    if return_counts:
        where_ = m.flatnonzero(starts)
        ends = m.concatenate([where_[1:], m.asarray([n], dtype=where_.dtype)])
        res += (wrap((ends - where_).astype(np.int64, copy=False)),)
    return res


# ---- diff ----------
@export(torch=True, method=True)
def diff(input, n=1, dim=-1, prepend=None, append=None):  # noqa: A002
    """The ``n``-th forward difference along ``dim`` (``x[i + 1] - x[i]``, repeated;
    for bool tensors, ``!=``), after joining ``prepend`` and ``append`` there.

    >>> import gradcore as gc
    >>> gc.diff(gc.tensor([1, 4, 9, 16]))
    tensor([3, 5, 7])
    """
    if input._data.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    n = int_arg(n, "diff", "n")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    axis = normalize_dim(dim, input._data.ndim, "diff")
    parts = [p for p in (prepend, input, append) if p is not None]
    x = cat(parts, axis) if len(parts) > 1 else input
    for _ in range(n):
        size = x._data.shape[axis]
        if size == 0:
            break
        hi, lo = narrow(x, axis, 1, size - 1), narrow(x, axis, 0, size - 1)
        x = pw.ne(hi, lo) if x._data.dtype.kind == "b" else pw.sub(hi, lo)
    return x


# ---- aminmax, count_nonzero, var_mean, std_mean ----------
@export(torch=True, method=True)
def aminmax(input, *, dim=None, keepdim=False, axis=None, keepdims=None):  # noqa: A002
    """``(min, max)`` over everything, or along ``dim`` (an int); tied extremes share
    the gradient evenly, as :func:`amin` and :func:`amax`.

    >>> import gradcore as gc
    >>> gc.aminmax(gc.tensor([[1., 5.], [-2., 3.]]), dim=1)
    aminmax(min=tensor([ 1., -2.]), max=tensor([5., 3.]))
    """
    if axis is not None:  # (NumPy's names, which PyTorch accepts too)
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    xd = input._data
    if dim is None:
        if xd.size == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as "
                               "the operation has no identity.")
        dims = ()
    else:
        if isinstance(dim, (tuple, list)):
            raise TypeError("aminmax(): argument 'dim' must be int, not tuple")
        dims = normalize_dim(dim, xd.ndim, "aminmax")
        if xd.ndim and xd.shape[dims] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {dims} to have non-zero size.")
    return aminmax_result(amin(input, dims, keepdim), amax(input, dims, keepdim))


@export(torch=True, method=True)
def count_nonzero(input, dim=None, *, axis=None):  # noqa: A002
    """How many elements are not zero, over ``dim`` (int or tuple; everything when
    None): int64, never tracked."""
    if axis is not None:  # (NumPy's names, which PyTorch accepts too)
        dim = axis
    xd = input._data
    axes = None if dim is None or (isinstance(dim, (tuple, list)) and not dim) else \
        normalize_dims(dim, xd.ndim, "count_nonzero")
    return wrap(math_of(xd).asarray((xd != 0).sum(axis=axes, dtype=np.int64)))


def _stat_mean(name, x, dim, unbiased, keepdim, correction, is_std):
    if x._data.dtype.kind != "f":
        raise RuntimeError(f"{name} only support floating point and complex dtypes")
    if isinstance(dim, bool):  # var_mean(x, False): PyTorch's positional `unbiased`
        dim, unbiased = None, dim
    spread = _var_std(x, dim, unbiased, keepdim, correction, None, None, is_std)
    return spread, mean(x, dim, keepdim)


@export(torch=True)
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None,  # noqa: A002
             axis=None, keepdims=None):
    """``(var, mean)`` over ``dim``: :func:`var`'s arguments, both differentiable."""
    if axis is not None:  # (NumPy's names, which PyTorch accepts too)
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    return _stat_mean("var_mean", input, dim, unbiased, keepdim, correction, False)


@export(torch=True)
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None,  # noqa: A002
             axis=None, keepdims=None):
    """``(std, mean)`` over ``dim``: :func:`std`'s arguments, both differentiable.

    >>> import gradcore as gc
    >>> gc.std_mean(gc.tensor([1., 2., 4.]))
    (tensor(1.5275), tensor(2.3333))
    """
    if axis is not None:  # (NumPy's names, which PyTorch accepts too)
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    return _stat_mean("std_mean", input, dim, unbiased, keepdim, correction, True)


# ---- unique, bincount, histc ----------
@export(torch=True, method=True)
def unique(input, sorted=True, return_inverse=False, return_counts=False,  # noqa: A002
           dim=None):
    """The distinct elements of ``input`` (of its slices along ``dim``), in ascending
    order (also when ``sorted=False``, which lets PyTorch choose one), with where each
    element went (``return_inverse``, ``input``'s shape) and how often each occurs
    (``return_counts``); NaNs are each distinct. Never tracked.

    >>> import gradcore as gc
    >>> gc.unique(gc.tensor([3, 1, 3, 2]), return_counts=True)
    (tensor([1, 2, 3]), tensor([1, 1, 2]))
    """
    xd = input._data
    m = math_of(xd)
    extra = {"equal_nan": False} if xd.dtype.kind == "f" else {}
    if dim is None:
        res = m.unique(xd.reshape(-1), return_inverse=True, return_counts=True, **extra)
        inverse_shape = xd.shape
    else:
        axis = normalize_dim(dim, xd.ndim, "unique")
        res = m.unique(xd, return_inverse=True, return_counts=True, axis=axis, **extra)
        inverse_shape = (xd.shape[axis],)
    values, inverse, counts = res
    values = wrap(values)
    if not (return_inverse or return_counts):
        return values
    out = (values,)
    if return_inverse:
        out += (wrap(inverse.reshape(inverse_shape).astype(np.int64, copy=False)),)
    if return_counts:
        out += (wrap(counts.astype(np.int64, copy=False)),)
    return out


def _negative_count(value):
    return RuntimeError("bincount only supports 1-d non-negative integral inputs.")


@export(torch=True, method=True)
def bincount(input, weights=None, minlength=0):  # noqa: A002
    """How often each value ``0, 1, ..., max(input)`` (at least ``minlength`` of them)
    occurs in ``input`` (1-D, non-negative integers): int64; with ``weights`` the sums
    of the weights instead (float32 for float32 weights, else float64).

    >>> import gradcore as gc
    >>> gc.bincount(gc.tensor([0, 1, 1, 3]))
    tensor([1, 2, 0, 1])
    """
    xd = input._data
    if xd.dtype.kind not in "iu":
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for "
                                  f"'{dtypes.torch_name(input.dtype)}'")
    if xd.ndim != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    m = math_of(xd)
    wd = None
    if weights is not None:
        wd = weights._data
        if wd.ndim != 1 or wd.shape[0] != xd.shape[0]:
            raise RuntimeError("weights should be 1-d and have the same length as input")
    if m.values_on_host:
        if xd.size and xd.min() < 0:
            raise _negative_count(None)
    else:
        check_range(xd, 0, np.iinfo(np.int64).max, _negative_count)
    try:  # (CuPy reads the largest value back, and refuses a negative one itself)
        if wd is None:
            return wrap(m.bincount(xd, minlength=minlength).astype(np.int64, copy=False))
        out = m.bincount(xd, weights=wd.astype(np.float64, copy=False), minlength=minlength)
    except ValueError:
        raise _negative_count(None) from None
    res = np.float32 if wd.dtype == np.float32 else np.float64
    return wrap(out.astype(res, copy=False))


@export(torch=True, method=True)
def histc(input, bins=100, min=0, max=0):  # noqa: A002
    """A histogram of ``input``'s elements: ``bins`` equal bins over ``[min, max]``
    (over the elements' own range when ``min == max``); elements outside (and NaN) are
    not counted, ``max`` itself falls in the last bin. In ``input``'s (floating) dtype.

    >>> import gradcore as gc
    >>> gc.histc(gc.tensor([1., 2., 1.]), bins=4, min=0, max=3)
    tensor([0., 2., 1., 0.])
    """
    xd = input._data
    if xd.dtype.kind != "f":
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for "
                                  f"'{dtypes.torch_name(input.dtype)}'")
    bins = int_arg(bins, "histc", "bins")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for "
                           f"dimension 0")
    m = math_of(xd)
    lo, hi = float(min), float(max)
    if lo == hi and xd.size:
        lo, hi = float(xd.min()), float(xd.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite")
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    flat = xd.reshape(-1)
    edges = m.asarray(np.linspace(lo, hi, bins + 1).astype(xd.dtype))
    left, right = edges[0], edges[-1]
    inside = (flat >= left) & (flat <= right)  # (NaN is not)
    # PyTorch's linear interpolation, then a look at the neighbouring edges (an element
    # next to an edge may land one bin off by the division)
    pos = m.where(inside, (flat - left) * bins / (right - left), 0)
    pos = m.clip(pos.astype(np.int64), 0, bins - 1)
    pos = m.where(flat < edges[pos], pos - 1, pos)
    pos = m.where(flat >= edges[m.minimum(pos + 1, bins)], pos + 1, pos)
    pos = m.clip(pos, 0, bins - 1)
    if m.values_on_host:
        counts = m.bincount(pos, weights=inside, minlength=bins)
    else:
        counts = m.zeros(bins, dtype=np.float64)
        m.add_at(counts, pos, inside.astype(np.float64))
    return wrap(counts.astype(xd.dtype))


histogram_result = namedtuple("histogram", ["hist", "bin_edges"])


@export(torch=True, method=True)
def histogram(input, bins, *, range=None, weight=None, density=False):  # noqa: A001, A002
    """``(hist, bin_edges)``: how many elements (or how much ``weight``) fall in each
    bin. ``bins`` an int (equal bins over ``range``, by default the elements' own, widened
    by 0.5 each way when all are equal) or a 1-D tensor of increasing edges. Each bin holds
    its left edge, the last its right one too; elements outside are not counted.
    ``density=True`` divides by the total and the bin widths. Never tracked.

    >>> import gradcore as gc
    >>> gc.histogram(gc.tensor([1., 2., 2., 5.]), bins=2)
    histogram(hist=tensor([3., 1.]), bin_edges=tensor([1., 3., 5.]))
    """
    xd = input._data
    if xd.dtype.kind != "f":
        raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                  f"'{dtypes.torch_name(input.dtype)}'")
    m = math_of(xd)
    flat = xd.reshape(-1)
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have "
                               f"the same shape as the input tensor excluding its innermost "
                               f"dimension, but got input with shape {[flat.shape[0], 1]} and "
                               f"weight with shape {list(weight.shape)}")
    if isinstance(bins, Tensor):
        bd = bins._data
        if bd.ndim != 1:
            raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but "
                               f"got {bd.ndim} dimensions in the bins tensor for dimension 0")
        if bd.dtype != xd.dtype:
            raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have "
                               f"the same dtype, but got input with dtype "
                               f"{dtypes.torch_name(input.dtype).lower()} and bins for dimension "
                               f"0 with dtype {dtypes.torch_name(bins.dtype).lower()}")
        edges = bd
    else:
        n = int_arg(bins, "histogram", "bins")
        if n <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {n} for "
                               f"dimension 0")
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
        elif flat.size:
            lo, hi = float(flat.min()), float(flat.max())
        else:
            lo, hi = 0.0, 1.0
        if lo > hi:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min "
                               f"{lo:g} max {hi:g} for dimension 0")
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise RuntimeError(f"torch.histogramdd: dimension 0's range [{lo:g}, {hi:g}] is "
                               f"not finite")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = m.asarray(np.linspace(lo, hi, n + 1).astype(xd.dtype))
    nb = edges.shape[0] - 1
    if nb < 1:
        hist = m.zeros((0,), dtype=xd.dtype)
        return histogram_result(wrap(hist), wrap(edges.copy()))
    inside = (flat >= edges[0]) & (flat <= edges[-1])  # (NaN is not)
    pos = m.searchsorted(edges, flat, side="right") - 1
    pos = m.clip(pos, 0, nb - 1)  # (the last edge itself: the last bin)
    w = inside.astype(np.float64)
    if weight is not None:
        w = w * weight._data.reshape(-1).astype(np.float64)
    hist = m.zeros(nb, dtype=np.float64)
    m.add_at(hist, pos, w)
    if density:
        hist = hist / (hist.sum() * (edges[1:] - edges[:-1]).astype(np.float64))
    return histogram_result(wrap(hist.astype(xd.dtype)), wrap(edges.copy()))


# ---- searchsorted / bucketize ----------
@export(torch=True)
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False,  # noqa: A002
                 side=None, sorter=None):
    """Where each value of ``input`` would go in ``sorted_sequence`` (its last dimension,
    sorted ascending) to keep it sorted: the first such place, or with ``right=True``
    (``side="right"``) the last. ``sorted_sequence`` is 1-D or has ``input``'s leading
    dimensions (one sequence per row); ``sorter`` sorts it first. int64 (int32 with
    ``out_int32``).

    >>> import gradcore as gc
    >>> gc.searchsorted(gc.tensor([1., 3., 5., 7.]), gc.tensor([3., 6., 9.]))
    tensor([1, 3, 4])
    """
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' "
                               f"but got {side}")
        if side == "left" and right:
            raise RuntimeError("torch.searchsorted(): side and right can't be set to "
                               "opposites, got side of left while right was True")
        right = side == "right"
    seq = sorted_sequence._data
    if seq.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    m = math_of(seq)
    if isinstance(input, Tensor):
        vals = input._data
    else:
        vals = m.asarray(input)
    if sorter is not None:
        seq = m.take_along_axis(seq, sorter._data.astype(np.int64, copy=False), axis=-1)
    side = "right" if right else "left"
    res = np.int32 if out_int32 else np.int64
    if seq.ndim == 1:
        return wrap(m.asarray(m.searchsorted(seq, vals, side=side)).astype(res))
    if seq.shape[:-1] != vals.shape[:-1] or vals.ndim != seq.ndim:
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or "
                           f"the first N-1 dimensions of boundaries tensor and input value "
                           f"tensor must match, but we got boundaries tensor "
                           f"{list(seq.shape)} and input value tensor {list(vals.shape)}")
    rows_seq = seq.reshape(-1, seq.shape[-1])
    rows_val = vals.reshape(-1, vals.shape[-1])
    if m.values_on_host:
        out = np.stack([np.searchsorted(s, v, side=side) for s, v in
                        zip(rows_seq, rows_val)]) if rows_seq.shape[0] else \
            np.zeros(rows_val.shape, dtype=np.int64)
    else:  # on a device, without a loop: how many of the row's elements come before
        before = rows_seq[:, None, :] <= rows_val[:, :, None] if right else \
            rows_seq[:, None, :] < rows_val[:, :, None]
        out = before.sum(axis=-1)
    return wrap(out.reshape(vals.shape).astype(res))


@export(torch=True)
def bucketize(input, boundaries, *, out_int32=False, right=False):  # noqa: A002
    """The bucket of each value of ``input`` among the 1-D sorted ``boundaries``:
    ``searchsorted(boundaries, input, right=right)``."""
    if boundaries._data.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got "
                           f"dim({boundaries._data.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)
