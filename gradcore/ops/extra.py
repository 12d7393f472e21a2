"""PyTorch's ops written over the other families' (differentiable where their parts are):
tensordot, dist, renorm, rsub, vander, trapezoid/trapz/cumulative_trapezoid, gradient,
the scatters into a slice (select_scatter, slice_scatter, diagonal_scatter),
index_reduce, chain_matmul, frobenius_norm, fill; and, never tracked, broadcast_shapes,
histogramdd, isin, argwhere, unravel_index, isreal, real and imag of real tensors."""

from __future__ import annotations

import builtins
import math
import numbers
import warnings
from collections import namedtuple

import numpy as np

from .. import dtypes
from .._size import Size
from ..backend import math_of, to_host
from . import pointwise as pw
from ._core import Tensor, as_tensor, int_arg, normalize_dim, wrap
from ._export import export
from .index import nonzero, scatter_reduce
from .linalg import diagonal, matmul
from .reduce import cumsum, norm, sum
from .shape import broadcast_to, cat, narrow, permute, reshape, select, unsqueeze


# ---- shapes ----------
@export(torch=True)
def broadcast_shapes(*shapes):
    """The shape tensors of ``shapes`` (each a sequence of ints, or an int) broadcast
    to, as a ``gc.Size``, without making tensors.

    >>> import gradcore as gc
    >>> gc.broadcast_shapes((2,), (3, 1), (1, 1, 1))
    gradcore.Size([1, 3, 2])
    """
    shapes = tuple((s,) if isinstance(s, int) else s for s in shapes if s is not None)
    for shape in shapes:
        if not isinstance(shape, (tuple, list, Size)):
            raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a "
                               f"list of ints, got {shape}")
    common = [1] * builtins.max((len(s) for s in shapes), default=0)
    for arg, shape in enumerate(shapes):
        for i in range(-1, -1 - len(shape), -1):
            if shape[i] == common[i]:
                continue
            if common[i] == 1:
                if shape[i] < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                common[i] = shape[i]
            if shape[i] != 1 and common[i] != shape[i]:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {shape[i]} "
                                   f"at {i}! Mismatching argument at index {arg} had {shape}; "
                                   f"but expected shape should be broadcastable to {common}")
    return Size(common)


# ---- products ----------


@export(torch=True)
def tensordot(a, b, dims=2):
    """The sum of products of ``a`` and ``b`` over the dimensions ``dims`` names: an
    int ``n`` (``a``'s last ``n`` with ``b``'s first ``n``), a pair of lists of
    dimensions (``([1, 0], [0, 1])``) or a tensor holding either; the remaining
    dimensions of ``a``, then of ``b``, make the result. Differentiable.

    >>> import gradcore as gc
    >>> gc.tensordot(gc.ones(2, 3), gc.ones(3, 4), dims=1).shape
    gradcore.Size([2, 4])
    """
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, (list, tuple)) and len(dims) == 2 and \
            builtins.all(isinstance(d, (list, tuple, int)) for d in dims):
        da = [dims[0]] if isinstance(dims[0], int) else list(dims[0])
        db = [dims[1]] if isinstance(dims[1], int) else list(dims[1])
    elif isinstance(dims, int) and not isinstance(dims, bool):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.ndim or dims > b.ndim:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got "
                               f"dims={dims}")
        da, db = list(range(-dims, 0)), list(range(dims))
    else:
        raise RuntimeError(f"tensordot expects dims to be int or (list[int], list[int]) or "
                           f"(tuple[int], tuple[int]), but got {type(dims).__name__}")
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    if a.dtype != b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[i]} in dim {i} and second has size {b.shape[j]} "
                               f"in dim {j}")
    da = [normalize_dim(d, a.ndim, "tensordot") for d in da]
    db = [normalize_dim(d, b.ndim, "tensordot") for d in db]
    free_a = [d for d in range(a.ndim) if d not in da]
    free_b = [d for d in range(b.ndim) if d not in db]
    k = math.prod(a.shape[d] for d in da)
    ma = reshape(permute(a, *free_a, *da), (math.prod(a.shape[d] for d in free_a), k))
    mb = reshape(permute(b, *db, *free_b), (k, math.prod(b.shape[d] for d in free_b)))
    return reshape(matmul(ma, mb), tuple(a.shape[d] for d in free_a) +
                   tuple(b.shape[d] for d in free_b))


@export(torch=True)
def chain_matmul(*matrices):
    """The product of the 2-D ``matrices`` in order (deprecated in PyTorch for
    ``gc.linalg.multi_dot``, and warns so). Differentiable.

    >>> import gradcore as gc
    >>> gc.chain_matmul(gc.ones(2, 3), gc.ones(3, 2))
    tensor([[3., 3.],
            [3., 3.]])
    """
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                  "release. Use torch.linalg.multi_dot instead, which accepts a list of two "
                  "or more tensors rather than multiple parameters.", UserWarning,
                  stacklevel=2)
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for _i, m in enumerate(matrices):
        if m.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m.ndim}, expected 2 instead.")
    if len(matrices) == 1:
        return matrices[0].clone()
    out = matrices[0]
    for m in matrices[1:]:
        out = matmul(out, m)
    return out


# ---- norms and distances ----------
def _floating(x, what):
    if x.dtype.name not in ("float16", "float32", "float64", "bfloat16"):
        raise RuntimeError(f"{what}(): input dtype should be either floating point or "
                           f"complex. Got {_scalar_type(x.dtype)} instead.")


def _scalar_type(dt) -> str:
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
            "uint8": "Byte", "bool": "Bool", "float32": "Float", "float64": "Double",
            "float16": "Half"}.get(dt.name, dt.name)


@export(torch=True, method=True)
def dist(input, other, p=2):  # noqa: A002
    """The ``p``-norm of ``input - other`` (broadcast) over all elements.
    Differentiable.

    >>> import gradcore as gc
    >>> gc.dist(gc.tensor([3., 4.]), gc.tensor([0., 0.]))
    tensor(5.)
    """
    other = other if isinstance(other, Tensor) else as_tensor(other, input)
    diff = pw.sub(input, other)
    _floating(diff, "norm")
    return norm(diff, float(p) if not isinstance(p, str) else p)


@export(torch=True)
def frobenius_norm(input, dim, keepdim=False):  # noqa: A002
    """The 2-norm over the dimensions ``dim`` (deprecated in PyTorch for
    ``gc.linalg.vector_norm``, and warns so). Differentiable."""
    warnings.warn("at::frobenius_norm is deprecated and it is just left for JIT "
                  "compatibility. It will be removed in a future PyTorch release. Please use "
                  "`linalg.vector_norm(A, 2., dim, keepdim)` instead", UserWarning, stacklevel=2)
    dims = [dim] if isinstance(dim, int) else list(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions "
                           f"instead.")
    return norm(input, 2, dims, keepdim)


@export(torch=True, method=True)
def renorm(input, p, dim, maxnorm):  # noqa: A002
    """``input`` with each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm``
    scaled down to norm ``maxnorm`` (by ``maxnorm / (norm + 1e-7)``, as PyTorch);
    the others unchanged. Differentiable.

    >>> import gradcore as gc
    >>> gc.renorm(gc.tensor([[3., 4.], [0.3, 0.4]]), 2, 0, 1.)
    tensor([[0.6000, 0.8000],
            [0.3000, 0.4000]])
    """
    if input.dtype.name not in ("float16", "float32", "float64"):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor "
                           f"as input. "
                           f"Got {_scalar_type(input.dtype)}")
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    if input.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} "
                           f"dimensions")
    axis = normalize_dim(dim, input.ndim, "renorm")
    others = [d for d in range(input.ndim) if d != axis]
    n = norm(input, float(p), others, True)
    factor = pw.where(pw.gt(n, maxnorm), pw.div(maxnorm, pw.add(n, 1e-7)),
                      as_tensor(1.0, input))
    return pw.mul(input, factor)


# ---- arithmetic ----------
@export(torch=True)
def rsub(input, other, *, alpha=1):  # noqa: A002
    """``other - alpha * input`` (``sub`` with its operands swapped; ``other`` may be a
    number). Differentiable.

    >>> import gradcore as gc
    >>> gc.rsub(gc.tensor([1., 2.]), 3, alpha=2)
    tensor([ 1., -1.])
    """
    return pw.sub(other, input, alpha=alpha)


@export(torch=True)
def fill(input, value):  # noqa: A002
    """A new tensor of ``input``'s shape, dtype and device holding ``value`` (a number or
    a 0-d tensor, whose gradient is the sum of the result's; ``input``'s is zero).

    >>> import gradcore as gc
    >>> gc.fill(gc.zeros(2), 3.)
    tensor([3., 3.])
    """
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                           f"with {value.ndim} dimensions.")
    return input.clone().fill_(value)


# ---- polynomials, integration, differences ----------
@export(torch=True)
def vander(x, N=None, increasing=False):  # noqa: N803  (PyTorch's name)
    """The Vandermonde matrix of the 1-D ``x``: columns ``x ** (N - 1)``, ..., ``x ** 0``
    (``increasing``: the other way round); ``N`` is ``len(x)`` by default. Integer and
    bool inputs give int64. Differentiable.

    >>> import gradcore as gc
    >>> gc.vander(gc.tensor([1, 2, 3]))
    tensor([[1, 1, 1],
            [4, 2, 1],
            [9, 3, 1]])
    """
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    if N is None:
        N = x.shape[0]  # noqa: N806
    elif N < 0:
        raise RuntimeError("N must be non-negative.")
    if x.dtype.category < 2:  # bool and integers: int64, as PyTorch
        x = pw.to_dtype(x, dtypes.int64)
    col = unsqueeze(x, 1)
    if N == 0:
        return narrow(broadcast_to(col, (x.shape[0], 1)), 1, 0, 0).clone()
    parts = [wrap(math_of(col._data).ones(col._data.shape, dtype=col._data.dtype))]
    for _ in range(1, N):
        parts.append(pw.mul(parts[-1], col))
    if not increasing:
        parts = parts[::-1]
    return cat(parts, 1)


def _trapz(y, x, dx, dim, what):
    axis = normalize_dim(dim, y.ndim, what)
    n = y.shape[axis]
    if n == 0:  # zeros, of y's shape less dim
        return sum(y, axis)
    lo, hi = narrow(y, axis, 0, n - 1), narrow(y, axis, 1, n - 1)
    mid = pw.add(lo, hi)
    if x is None:
        return pw.mul(sum(mid, axis), dx / 2)
    if x.ndim == 1:
        if x.shape[0] != n:
            raise RuntimeError(f"{what}: There must be one `x` value for each sample point")
        d = pw.sub(narrow(x, 0, 1, n - 1), narrow(x, 0, 0, n - 1))
        shape = [1] * y.ndim
        shape[axis] = n - 1
        d = reshape(d, tuple(shape))
    else:
        xa = normalize_dim(dim, x.ndim, what)
        m = x.shape[xa]
        d = pw.sub(narrow(x, xa, 1, m - 1), narrow(x, xa, 0, m - 1))
    return pw.div(sum(pw.mul(d, mid), axis), 2)


@export(torch=True)
def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The integral of ``y`` along ``dim`` by the trapezoidal rule: over sample points
    ``x`` (a 1-D tensor along ``dim``, or a tensor broadcasting with ``y``), or points
    ``dx`` apart (1 by default). Differentiable.

    >>> import gradcore as gc
    >>> gc.trapezoid(gc.tensor([1., 2., 3.]))
    tensor(4.)
    """
    if x is not None and dx is not None:
        raise RuntimeError("trapezoid: received both x and dx")  # (no such overload)
    if isinstance(x, numbers.Number):  # trapezoid(y, dx) positionally
        x, dx = None, x
    return _trapz(y, x, 1 if dx is None else dx, dim, "trapezoid")


@export(torch=True)
def trapz(y, x=None, *, dx=None, dim=-1):
    """:func:`trapezoid` (PyTorch's older name; ``dx`` only by keyword)."""
    return trapezoid(y, x, dx=dx, dim=dim)


@export(torch=True)
def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running integral of ``y`` along ``dim`` by the trapezoidal rule (one element
    fewer than ``y`` there), over sample points ``x`` or points ``dx`` apart.
    Differentiable.

    >>> import gradcore as gc
    >>> gc.cumulative_trapezoid(gc.tensor([1., 2., 3.]))
    tensor([1.5000, 4.0000])
    """
    if isinstance(x, numbers.Number):
        x, dx = None, x
    axis = normalize_dim(dim, y.ndim, "cumulative_trapezoid")
    n = y.shape[axis]
    if n == 0:
        return y.clone()
    mid = pw.add(narrow(y, axis, 0, n - 1), narrow(y, axis, 1, n - 1))
    if x is None:
        return cumsum(pw.mul(mid, (1 if dx is None else dx) / 2), axis)
    if x.ndim == 1:
        if x.shape[0] != n:
            raise RuntimeError("cumulative_trapezoid: There must be one `x` value for each "
                               "sample point")
        d = pw.sub(narrow(x, 0, 1, n - 1), narrow(x, 0, 0, n - 1))
        shape = [1] * y.ndim
        shape[axis] = n - 1
        d = reshape(d, tuple(shape))
    else:
        xa = normalize_dim(dim, x.ndim, "cumulative_trapezoid")
        m = x.shape[xa]
        d = pw.sub(narrow(x, xa, 1, m - 1), narrow(x, xa, 0, m - 1))
    return cumsum(pw.div(pw.mul(d, mid), 2), axis)


@export(torch=True)
def gradient(input, *, spacing=1, dim=None, edge_order=1):  # noqa: A002
    """The derivative of ``input`` estimated along each of ``dim`` (all by default) by
    second-order central differences inside and first- or second-order
    (``edge_order``) one-sided ones at the ends, as ``numpy.gradient``; a tuple of one
    tensor per dimension. ``spacing``: a number (the points' distance), a list of
    numbers (one per dimension), or a list of 1-D tensors (the coordinates).
    Differentiable.

    >>> import gradcore as gc
    >>> gc.gradient(gc.tensor([1., 4., 9., 16.]))
    (tensor([3., 4., 6., 7.]),)
    """
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if dim is None:
        dims = list(range(input.ndim))
    elif isinstance(dim, int):
        dims = [dim]
    else:
        dims = list(dim)
    dims = [normalize_dim(d, input.ndim, "gradient") for d in dims]
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar "
                               f"or it's spacing and dim arguments to have the same length, "
                               f"but got a spacing argument of length {len(spacing)} and a "
                               f"dim argument of length {len(dims)}.")
        spacings = list(spacing)
    else:
        spacings = [spacing] * len(dims)
    out = []
    for axis, h in zip(dims, spacings):
        n = input.shape[axis]
        if n < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
        out.append(_gradient_along(input, axis, h, edge_order))
    return tuple(out)


def _gradient_along(f, axis, h, edge_order):
    n = f.shape[axis]
    if f.dtype.category < 2:
        f = pw.to_dtype(f, dtypes.get_default_dtype())

    def part(start, length):
        return narrow(f, axis, start, length)

    def along(t):  # a 1-D tensor of the n - 2 (or so) interior values, along axis
        shape = [1] * f.ndim
        shape[axis] = t.shape[0]
        return reshape(t, tuple(shape))

    if isinstance(h, Tensor):  # coordinates
        if h.ndim != 1 or h.shape[0] != n:
            raise RuntimeError(f"torch.gradient expected each tensor to be on the same device "
                               f"and to have one coordinate per element along dim {axis}")
        dx = pw.sub(narrow(h, 0, 1, n - 1), narrow(h, 0, 0, n - 1))
        a = narrow(dx, 0, 0, n - 2)  # h_{i-1}
        b = narrow(dx, 0, 1, n - 2)  # h_i
        # interior: (a^2 f[i+1] + (b^2 - a^2) f[i] - b^2 f[i-1]) / (a b (a + b))
        a2, b2 = pw.mul(a, a), pw.mul(b, b)
        den = along(pw.mul(pw.mul(a, b), pw.add(a, b)))
        interior = pw.div(pw.sub(pw.add(pw.mul(along(a2), part(2, n - 2)),
                                        pw.mul(along(pw.sub(b2, a2)), part(1, n - 2))),
                                 pw.mul(along(b2), part(0, n - 2))), den) if n > 2 else None
        d0, dl = select(dx, 0, 0), select(dx, 0, n - 2)
        if edge_order == 1:
            first = pw.div(pw.sub(part(1, 1), part(0, 1)), d0)
            last = pw.div(pw.sub(part(n - 1, 1), part(n - 2, 1)), dl)
        else:
            d1, dm = select(dx, 0, 1), select(dx, 0, n - 3)
            first = pw.add(pw.add(
                pw.mul(part(0, 1), pw.neg(pw.div(pw.add(pw.mul(d0, 2), d1),
                                                 pw.mul(d0, pw.add(d0, d1))))),
                pw.mul(part(1, 1), pw.div(pw.add(d0, d1), pw.mul(d0, d1)))),
                pw.mul(part(2, 1), pw.neg(pw.div(d0, pw.mul(d1, pw.add(d0, d1))))))
            last = pw.add(pw.add(
                pw.mul(part(n - 3, 1), pw.div(dl, pw.mul(dm, pw.add(dm, dl)))),
                pw.mul(part(n - 2, 1), pw.neg(pw.div(pw.add(dl, dm), pw.mul(dm, dl))))),
                pw.mul(part(n - 1, 1), pw.div(pw.add(pw.mul(dl, 2), dm),
                                              pw.mul(dl, pw.add(dm, dl)))))
    else:
        h = float(h)
        interior = pw.div(pw.sub(part(2, n - 2), part(0, n - 2)), 2 * h) if n > 2 else None
        if edge_order == 1:
            first = pw.div(pw.sub(part(1, 1), part(0, 1)), h)
            last = pw.div(pw.sub(part(n - 1, 1), part(n - 2, 1)), h)
        else:
            first = pw.div(pw.sub(pw.add(pw.mul(part(0, 1), -1.5), pw.mul(part(1, 1), 2.0)),
                                  pw.mul(part(2, 1), 0.5)), h)
            last = pw.div(pw.add(pw.sub(pw.mul(part(n - 3, 1), 0.5),
                                        pw.mul(part(n - 2, 1), 2.0)),
                                 pw.mul(part(n - 1, 1), 1.5)), h)
    parts = [first] + ([interior] if interior is not None else []) + [last]
    return cat(parts, axis)


# ---- writing a slice into a copy ----------
def _scatter_into(input, src, view, what, slice_shape):  # noqa: A002
    if tuple(src.shape) != tuple(slice_shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size "
                           f"= {list(src.shape)}, slice size = {list(slice_shape)}")
    out = input.clone()
    view(out).copy_(src)
    return out


@export(torch=True, method=True)
def select_scatter(input, src, dim, index):  # noqa: A002
    """A copy of ``input`` with ``src`` written at ``index`` along ``dim`` (where
    ``input.select(dim, index)`` reads). Differentiable in both.

    >>> import gradcore as gc
    >>> gc.select_scatter(gc.zeros(2, 2), gc.ones(2), 0, 0)
    tensor([[1., 1.],
            [0., 0.]])
    """
    return _scatter_into(input, src, lambda t: select(t, dim, index), "select_scatter",
                         select(input, dim, index).shape)


@export(torch=True, method=True)
def slice_scatter(input, src, dim=0, start=None, end=None, step=1):  # noqa: A002
    """A copy of ``input`` with ``src`` written where ``input[start:end:step]`` along
    ``dim`` reads. Differentiable in both.

    >>> import gradcore as gc
    >>> gc.slice_scatter(gc.zeros(4), gc.ones(2), start=1, end=3)
    tensor([0., 1., 1., 0.])
    """
    axis = normalize_dim(dim, input.ndim, "slice_scatter")
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    key = (slice(None),) * axis + (slice(start, end, step),)
    return _scatter_into(input, src, lambda t: t[key], "slice_scatter", input[key].shape)


@export(torch=True, method=True)
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):  # noqa: A002
    """A copy of ``input`` with ``src`` written on the diagonal that
    ``input.diagonal(offset, dim1, dim2)`` reads. Differentiable in both.

    >>> import gradcore as gc
    >>> gc.diagonal_scatter(gc.zeros(2, 2), gc.ones(2))
    tensor([[1., 0.],
            [0., 1.]])
    """
    return _scatter_into(input, src, lambda t: diagonal(t, offset, dim1, dim2),
                         "diagonal_scatter", diagonal(input, offset, dim1, dim2).shape)


@export(torch=True, method=True)
def index_reduce(input, dim, index, source, reduce, *, include_self=True):  # noqa: A002
    """``input`` with the slices of ``source`` along ``dim`` reduced into the slices
    ``index`` names (``"prod"``, ``"mean"``, ``"amax"``, ``"amin"``), with ``input``'s
    own values unless ``include_self=False``; slices never indexed keep ``input``'s.
    Differentiable as :func:`scatter_reduce`.

    >>> import gradcore as gc
    >>> gc.index_reduce(gc.ones(3), 0, gc.tensor([0, 0, 2]), gc.tensor([2., 3., 4.]), "prod")
    tensor([6., 1., 4.])
    """
    warnings.warn("index_reduce() is in beta and the API may change at any time.", UserWarning,
                  stacklevel=2)  # (as PyTorch)
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    axis = normalize_dim(dim, input.ndim, "index_reduce")
    if index.ndim > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if index.dtype.name not in ("int64", "int32"):
        raise RuntimeError("index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{_scalar_type(index.dtype)}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"index_reduce_(): self ({_scalar_type(input.dtype)}) and "
                           f"source ({_scalar_type(source.dtype)}) must have the same "
                           f"scalar type")
    src_axis = normalize_dim(dim, max(source.ndim, 1), "index_reduce")
    n = index.numel()
    if (source.shape[src_axis] if source.ndim else 1) != n:
        raise RuntimeError(f"index_reduce_(): Number of indices ({n}) should be equal to "
                           f"source.size(dim): ({source.shape[src_axis] if source.ndim else 1}"
                           f"), for dim: {dim}")
    shape = [1] * source.ndim
    if source.ndim:
        shape[src_axis] = n
    idx = broadcast_to(reshape(index, tuple(shape)), tuple(source.shape))
    return scatter_reduce(input, axis, pw.to_dtype(idx, dtypes.int64), source, reduce,
                          include_self=include_self)


# ---- counting ----------
histogramdd_result = namedtuple("histogramdd", ["hist", "bin_edges"])


@export(torch=True)
def histogramdd(input, bins, *, range=None, weight=None, density=False):  # noqa: A001, A002
    """The histogram of the points that are the rows of ``input`` (its last dimension
    holds each point's ``D`` coordinates): ``(hist, bin_edges)``, ``hist`` of ``D``
    dimensions and ``bin_edges`` a tuple of ``D`` 1-D tensors. ``bins``: an int (that
    many equal bins along every dimension), ``D`` ints, or ``D`` 1-D tensors of
    increasing edges; ``range``: ``[min_0, max_0, min_1, max_1, ...]`` (by default the
    points' own, widened by 0.5 each way where all are equal); ``weight``: one per
    point; ``density=True``: divided by the total and the bins' volumes. Bins hold
    their left edges, the last one its right edge too. Never tracked.

    >>> import gradcore as gc
    >>> gc.histogramdd(gc.tensor([[0., 1.], [1., 0.], [2., 2.]]), bins=2).hist
    tensor([[0., 1.],
            [1., 1.]])
    """
    xd = input._data
    if xd.dtype.kind != "f":
        raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                  f"'{_scalar_type(input.dtype)}'")
    if xd.ndim < 1:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 1 dimension, "
                           "but got 0")
    d = xd.shape[-1]
    points = np.asarray(to_host(xd), dtype=np.float64).reshape(-1, d)
    if isinstance(bins, int):
        bins = [bins] * d
    bins = list(bins)
    if len(bins) != d:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                           "dimension of the input.")
    if range is not None:
        range = list(range)  # noqa: A001
        if len(range) != 2 * d:
            raise RuntimeError("histogramdd: for a D-dimensional input, range should have "
                               "2*D elements")
    edges = []
    for k, b in enumerate(bins):
        if isinstance(b, Tensor):
            if b.ndim != 1:
                raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, "
                                   f"but got {b.ndim} dimensions in the bins tensor for "
                                   f"dimension {k}")
            edges.append(np.asarray(to_host(b._data), dtype=np.float64))
            continue
        if b <= 0:
            raise RuntimeError(f"torch.histogramdd(): bins must be > 0, but got {b} for "
                               f"dimension {k}")
        if range is not None:
            lo, hi = float(range[2 * k]), float(range[2 * k + 1])
        elif points.shape[0]:
            lo, hi = float(points[:, k].min()), float(points[:, k].max())
        else:
            lo, hi = 0.0, 1.0
        if lo > hi:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min "
                               f"{lo:g} max {hi:g} for dimension {k}")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges.append(np.linspace(lo, hi, b + 1).astype(xd.dtype).astype(np.float64))
    w = None if weight is None else np.asarray(to_host(weight._data), np.float64).reshape(-1)
    hist, _ = np.histogramdd(points, bins=edges, weights=w, density=density)
    m = math_of(xd)
    return histogramdd_result(wrap(m.asarray(hist.astype(xd.dtype))),
                              tuple(wrap(m.asarray(e.astype(xd.dtype))) for e in edges))


# ---- tests ----------
@export(torch=True)
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each of ``elements`` is among ``test_elements`` (either may be a number),
    as a bool tensor of ``elements``' shape (``invert``: whether it is not).

    >>> import gradcore as gc
    >>> gc.isin(gc.tensor([1, 2, 3]), gc.tensor([2, 5]))
    tensor([False,  True, False])
    """
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() received an invalid combination of arguments: expected a "
                        "Tensor for elements or test_elements")
    like = elements if isinstance(elements, Tensor) else test_elements
    e = elements._data if isinstance(elements, Tensor) else as_tensor(elements, like)._data
    t = test_elements._data if isinstance(test_elements, Tensor) else \
        as_tensor(test_elements, like)._data
    m = math_of(e)
    return wrap(m.isin(e, t, assume_unique=assume_unique, invert=invert))


@export(torch=True, method=True)
def argwhere(input):  # noqa: A002
    """The indices of the nonzero elements, one row each (``gc.nonzero(input)``).

    >>> import gradcore as gc
    >>> gc.argwhere(gc.tensor([[0, 1], [1, 0]]))
    tensor([[0, 1],
            [1, 0]])
    """
    return nonzero(input)


@export(torch=True)
def unravel_index(indices, shape):
    """The coordinates in a tensor of ``shape`` of the flat ``indices`` (an integer
    tensor; negative ones count from the end): a tuple of int64 tensors of ``indices``'
    shape, one per dimension.

    >>> import gradcore as gc
    >>> gc.unravel_index(gc.tensor([4, 5]), (2, 3))
    (tensor([1, 1]), tensor([1, 2]))
    """
    if not isinstance(indices, Tensor):
        raise AttributeError(f"'{type(indices).__name__}' object has no attribute "
                             f"'is_complex'")
    if indices.dtype.category != 1:
        raise TypeError(f"expected 'indices' to be integer dtype, but got "
                        f"torch.{indices.dtype.name}")
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int_arg(s, "unravel_index", "shape") for s in shape)
    if builtins.any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    d = indices._data.astype(np.int64)
    out = []  # (as PyTorch, no bounds check: floor division and remainders)
    for s in reversed(shape):
        out.append(wrap(d % s if s else d * 0))
        d = d // s if s else d
    return tuple(reversed(out))


@export(torch=True, method=True)
def isreal(input):  # noqa: A002
    """Whether each element is real: all True, as gradcore's tensors are real.

    >>> import gradcore as gc
    >>> gc.isreal(gc.tensor([1., 2.]))
    tensor([True, True])
    """
    return wrap(math_of(input._data).ones(input._data.shape, dtype=bool))


@export(torch=True)
def real(input):  # noqa: A002
    """The real part: ``input`` itself, as gradcore's tensors are real (``Tensor.real``
    is the same)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"real(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input


@export(torch=True)
def imag(input):  # noqa: A002
    """The imaginary part: gradcore's tensors are real, and PyTorch raises for them,
    so does this (``Tensor.imag`` too)."""
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
