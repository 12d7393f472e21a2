"""Pooling: max, average and adaptive pools over 1-D and 2-D windows (PyTorch's
``max_pool1d/2d``, ``avg_pool1d/2d``, ``adaptive_avg_pool1d/2d``, ``adaptive_max_pool1d/2d``).

Written over the convolution's window primitive (:func:`gradcore.ops.conv.im2col`, whose
gradient is ``col2im``, one atomics-free kernel on CUDA): a pool takes the windows as
columns ``(N, C, kh*kw, L)`` and reduces them. A max pool picks each window's first
maximum (``argmax`` in the windows' raster order, as PyTorch scans them; a NaN wins) and
gathers it with ``take_along_dim``, so its gradient reaches that one element, and padding
is ``-inf``; an average pool sums the windows and divides by PyTorch's count (padding
included or not, ``divisor_override``). Adaptive pools of sizes that divide the input
are plain pools; otherwise an average is a product with each axis's averaging matrix,
and a maximum gathers PyTorch's uneven windows (``floor(i*in/out)`` to
``ceil((i+1)*in/out)``) by index. A fractional max pool gathers each output's window
(placed by PyTorch's interval rule from the given samples, every plane at once) and
picks as PyTorch's CPU kernel does. Everything is composed of differentiable ops, so
second derivatives and both devices come from them.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..backend import check_range, math_of
from . import conv as _conv
from . import index as _index
from . import linalg as _linalg
from . import reduce as _red
from . import shape as _shape
from ._core import Node, Tensor, mode, record1, wrap
from ._export import export

__all__ = ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "max_unpool1d", "max_unpool2d", "max_pool3d", "avg_pool3d", "adaptive_avg_pool3d",
           "adaptive_max_pool3d", "max_unpool3d",
           "pool_output_size"]


def _ints(value, n, name, op):
    return _conv._ints(value, n, name, op)


def pool_output_size(size, kernel, pad, stride, dilation, ceil_mode) -> int:
    """PyTorch's ``pooling_output_shape``: the windows along one axis."""
    span = size + 2 * pad - dilation * (kernel - 1) - 1 + (stride - 1 if ceil_mode else 0)
    out = span // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:  # the last window starts in padding
        out -= 1
    return out


def _geometry(x, nd, kernel_size, stride, padding, dilation, ceil_mode, op):
    """The input as ``(N, C, H, W)`` (1-D and unbatched inputs viewed so; 3-D ones as
    ``(N, C, D, H, W)``), its spatial size, and each axis's (kernel, stride, pad,
    dilation, out), checked as PyTorch."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    if x.ndim not in (nd + 1, nd + 2):
        if nd == 3:
            raise RuntimeError(f"{op}: Expected 4D or 5D tensor for input, but got "
                               f"{list(x.shape)}")
        if nd == 1:
            raise RuntimeError(f"{op}: Expected 2D or 3D (batch mode) tensor with optional 0 "
                               f"dim batch size for input, but got:{list(x.shape)}")
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    k = _ints(kernel_size, nd, "kernel_size", op)
    s = k if stride is None or (isinstance(stride, (list, tuple)) and not stride) else \
        _ints(stride, nd, "stride", op)
    p = _ints(padding, nd, "padding", op)
    d = _ints(dilation, nd, "dilation", op)
    for name, v in (("kernel_size", k), ("stride", s), ("padding", p), ("dilation", d)):
        if len(v) != nd:
            raise RuntimeError(f"{op}: {name} must either be a single int, or a tuple of "
                               f"{nd} ints")
    if any(v == 0 for v in s) or any(v == 0 for v in k):
        raise RuntimeError("stride should not be zero")
    if any(v < 0 for v in k + s):
        raise RuntimeError(f"{op}: kernel_size and stride must be positive, got "
                           f"kernel_size={list(k)} and stride={list(s)}")
    if any(v <= 0 for v in d):
        names = ("dilationT: ", "dilationH: ", "dilationW: ")[3 - nd:] if nd > 1 else \
            ("dilation: ",)
        raise RuntimeError("dilation should be greater than zero, but got " +
                           " ".join(f"{n}{v}" for n, v in zip(names, d)))
    for kk, pp, dd in zip(k, p, d):
        if pp < 0:
            raise RuntimeError(f"{op}: pad must be non-negative, but got pad: {pp}")
        if pp > ((kk - 1) * dd + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but "
                               f"got pad={pp}, kernel_size={kk} and dilation={dd}")
    batched = x.ndim == nd + 2
    size = tuple(x.shape[-nd:])
    out = tuple(pool_output_size(n, kk, pp, ss, dd, ceil_mode)
                for n, kk, pp, ss, dd in zip(size, k, p, s, d))
    lead = tuple(x.shape[:-nd])
    if any(o < 1 for o in out) or (not batched and x.shape[0] == 0) or any(n == 0 for n in size):
        got = "x".join(str(v) for v in lead[-1:] + size)
        calc = "x".join(str(v) for v in lead[-1:] + out)
        raise RuntimeError(f"Given input size: ({got}). Calculated output size: ({calc}). "
                           "Output size is too small")
    x4 = x if batched else _shape.unsqueeze(x, 0)
    if nd == 1:
        x4 = _shape.unsqueeze(x4, 2)
        k, s, p, d, out, size = (1,) + k, (1,) + s, (0,) + p, (1,) + d, (1,) + out, \
            (1,) + size
    return x4, batched, size, k, s, p, d, out


def _right_pad(size, k, s, p, d, out):
    """The padding past ``p`` that the last (ceil-mode) window reaches, per axis."""
    return tuple(max(0, (o - 1) * ss + dd * (kk - 1) + 1 - (n + 2 * pp))
                 for n, kk, ss, pp, dd, o in zip(size, k, s, p, d, out))


def _columns(x4, size, k, s, p, d, out, fill):
    """The windows of ``x4`` as ``(N, C, kh*kw, oh*ow)``, padded with ``fill``."""
    extra = _right_pad(size, k, s, p, d, out)
    pad = (p[1], p[1] + extra[1], p[0], p[0] + extra[0])
    xp = _conv._constant_pad(x4, pad, fill) if any(pad) else x4
    n, c = x4.shape[0], x4.shape[1]
    cols = _conv.im2col(_shape.reshape(xp, (n * c, 1) + tuple(xp.shape[2:])), k, d, (0, 0),
                        s, out, batch_first=True)
    return _shape.reshape(cols, (n, c, k[0] * k[1], out[0] * out[1]))


def _finish(y, x4, batched, nd, out):
    y = _shape.reshape(y, tuple(x4.shape[:2]) + out)
    if nd == 1:
        y = _shape.squeeze(y, 2)
    return y if batched else _shape.squeeze(y, 0)


class MaxPool2DWithIndicesBackward0(Node):
    """The gradient reaches each window's maximum (``F.max_pool_backward``: an index add
    on the CPU, one kernel on CUDA, a thread per input element)."""

    fresh_grads = True

    def apply(self, F, g):
        return (F.max_pool_backward(g, self.indices, self.size, self.kernel, self.dilation,
                                    self.padding, self.stride),)


def _max_pool(nd, op, x, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x4, batched, size, k, s, p, d, out = _geometry(x, nd, kernel_size, stride, padding,
                                                   dilation, ceil_mode, op)
    if x4.dtype == dtypes.bool_:
        raise RuntimeError(f"\"{op}\" not implemented for 'Bool'")
    xd = x4._data
    # each window's first maximum (a NaN is one) and its place in the plane: one kernel
    # on CUDA (kernels.conv.max_pool_forward)
    y, idx = math_of(xd).max_pool_forward(xd, k, d, p, s, out)
    if mode.enabled and x4._rg:
        y = record1(y, MaxPool2DWithIndicesBackward0, x4)
        node = y.grad_fn
        node.indices, node.size, node.kernel, node.dilation, node.padding, node.stride = \
            idx, size, k, d, p, s
    else:
        y = wrap(y)
    y = _finish(y, x4, batched, nd, out)
    if not return_indices:
        return y
    return y, _finish(wrap(idx), x4, batched, nd, out)  # (1-D: the plane is one row)


@export(torch=True)
def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    """The maximum of each window along the last axis of ``(N, C, L)`` or ``(C, L)``:
    ``kernel_size``, ``stride`` (default: the kernel size), ``padding`` (``-inf``, at
    most half the kernel), ``dilation``, ``ceil_mode`` (a last, partial window);
    ``return_indices`` also returns each maximum's position along the input.

    >>> import gradcore as gc
    >>> gc.max_pool1d(gc.tensor([[1., 3., 2., 5., 4.]]), 2)
    tensor([[3., 5.]])
    """
    return _max_pool(1, "max_pool1d", input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


@export(torch=True)
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    """The maximum of each window of ``(N, C, H, W)`` or ``(C, H, W)``: arguments as
    :func:`max_pool1d`, an int or a pair each; ``return_indices`` also returns each
    maximum's index into its flattened ``H x W`` plane (int64), as PyTorch.

    >>> import gradcore as gc
    >>> gc.max_pool2d(gc.arange(16.).reshape(1, 4, 4), 2)
    tensor([[[ 5.,  7.],
             [13., 15.]]])
    """
    return _max_pool(2, "max_pool2d", input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def _divisors(size, k, s, p, out, count_include_pad, divisor_override):
    """PyTorch's divisor of each window of an average pool, shaped ``out``: the override,
    or the product over the axes of each window's length within the padded input
    (``count_include_pad``) or inside the input."""
    if divisor_override is not None:
        return np.full(out, float(divisor_override))
    div = np.ones((), np.float64)
    for n, kk, ss, pp, o in zip(size, k, s, p, out):
        start = np.arange(o) * ss - pp
        end = np.minimum(start + kk, n + pp)  # (windows end at the padding's edge)
        count = end - start if count_include_pad else np.minimum(end, n) - np.maximum(start, 0)
        div = np.multiply.outer(div, count.astype(np.float64))
    return div


def _avg_pool(nd, op, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    x4, batched, size, k, s, p, d, out = _geometry(x, nd, kernel_size, stride, padding, 1,
                                                   ceil_mode, op)
    if x4._data.dtype.kind != "f":
        raise RuntimeError(f"\"{op}\" not implemented for "
                           f"'{dtypes.torch_name(x4._data.dtype)}'")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    half = x4.dtype == dtypes.float16  # (summed in float32, as PyTorch's kernels do)
    cols = _columns(x4.to(dtypes.float32) if half else x4, size, k, s, p, d, out, 0.0)
    total = _red.sum(cols, 2)
    div = _divisors(size, k, s, p, out, count_include_pad, divisor_override).reshape(-1)
    m = math_of(total._data)
    scale = m.asarray((1.0 / div).astype(total._data.dtype))
    y = _finish(total * wrap(scale), x4, batched, nd, out)
    return y.to(dtypes.float16) if half else y


@export(torch=True)
def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True):
    """The mean of each window along the last axis of ``(N, C, L)`` or ``(C, L)``; zero
    padding counts in the mean unless ``count_include_pad=False``.

    >>> import gradcore as gc
    >>> gc.avg_pool1d(gc.tensor([[1., 3., 2., 6.]]), 2)
    tensor([[2., 4.]])
    """
    return _avg_pool(1, "avg_pool1d", input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


@export(torch=False)
def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True, divisor_override=None):
    """The mean of each window of ``(N, C, H, W)`` or ``(C, H, W)``: PyTorch's
    ``count_include_pad`` and ``divisor_override`` (divide every sum by it)."""
    return _avg_pool(2, "avg_pool2d", input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


# ---- adaptive pools ----------
def _adaptive_sizes(x, nd, output_size, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    if x.ndim not in (nd + 1, nd + 2):
        if nd == 3:  # (PyTorch's max pool says "got:", its average pool "got")
            raise RuntimeError(f"{op}(): Expected 4D or 5D tensor, but got"
                               f"{':' if 'max' in op else ''} {list(x.shape)}")
        raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got "
                           f"{list(x.shape)}" if nd == 2 else
                           f"{op}: Expected 2D or 3D tensor, but got {list(x.shape)}")
    if isinstance(output_size, (list, tuple)):
        if len(output_size) != nd:
            raise RuntimeError(f"{op}: output_size must be {nd}")
        sizes = tuple(n if o is None else int(o)
                      for o, n in zip(output_size, x.shape[-nd:]))
    else:
        sizes = (int(output_size),) * nd
    for i, n in enumerate(x.shape[-nd:]):
        if n == 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(x.shape)} with "
                               f"dimension {x.ndim - nd + i} being empty")
    if any(o < 0 for o in sizes):
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 "
                           f"but received {list(sizes)}")
    return sizes


def _windows(n, o):
    """PyTorch's adaptive windows of an axis of ``n`` into ``o``: their starts and ends."""
    i = np.arange(o)
    return (i * n) // o, -((-(i + 1) * n) // o)


def _averaging(n, o, dtype, m):
    """The ``(o, n)`` matrix whose rows average PyTorch's adaptive windows."""
    start, end = _windows(n, o)
    a = np.zeros((o, n))
    for r, (b, e) in enumerate(zip(start, end)):
        a[r, b:e] = 1.0 / (e - b)
    return wrap(m.asarray(a.astype(dtype)))


def _adaptive_avg(nd, op, x, output_size):
    sizes = _adaptive_sizes(x, nd, output_size, op)
    if x._data.dtype.kind != "f":
        raise RuntimeError(f"\"{op}\" not implemented for "
                           f"'{dtypes.torch_name(x._data.dtype)}'")
    in_sizes = tuple(x.shape[-nd:])
    if all(o > 0 and n % o == 0 for n, o in zip(in_sizes, sizes)):
        k = tuple(n // o for n, o in zip(in_sizes, sizes))
        return _avg_pool(nd, op, x, k, k, 0, False, True, None)
    m = math_of(x._data)
    half = x.dtype == dtypes.float16  # (in float32, as PyTorch's kernels)
    xs = x.to(dtypes.float32) if half else x
    dt = xs._data.dtype
    y = _linalg.matmul(xs, _shape.transpose(_averaging(in_sizes[-1], sizes[-1], dt, m), 0, 1))
    if nd == 2:
        y = _linalg.matmul(_averaging(in_sizes[0], sizes[0], dt, m), y)
    return y.to(dtypes.float16) if half else y


@export(torch=True)
def adaptive_avg_pool1d(input, output_size):  # noqa: A002
    """Average pooling to ``output_size`` values along the last axis (PyTorch's
    windows ``floor(i*L/out)`` to ``ceil((i+1)*L/out)``)."""
    return _adaptive_avg(1, "adaptive_avg_pool1d", input, output_size)


def adaptive_avg_pool2d(input, output_size):  # noqa: A002
    """Average pooling of ``(N, C, H, W)`` or ``(C, H, W)`` to ``output_size`` (an int,
    a pair; ``None`` keeps that axis)."""
    return _adaptive_avg(2, "adaptive_avg_pool2d", input, output_size)


def _adaptive_max(nd, op, x, output_size, return_indices):
    sizes = _adaptive_sizes(x, nd, output_size, op)
    in_sizes = tuple(x.shape[-nd:])
    if all(o > 0 and n % o == 0 for n, o in zip(in_sizes, sizes)):
        k = tuple(n // o for n, o in zip(in_sizes, sizes))
        if nd == 3:
            return max_pool3d(x, k, k, 0, 1, False, return_indices)
        return _max_pool(nd, op, x, k, k, 0, 1, False, return_indices)
    if nd == 3:
        return _adaptive_max_volume(op, x, in_sizes, sizes, return_indices)
    m = math_of(x._data)
    # each axis's windows as index rows of the longest one, the last index repeated (a
    # repeat is a tie that argmax resolves to its first place: the same element)
    axes = []
    for n, o in zip(in_sizes, sizes):
        start, end = _windows(n, o)
        width = int((end - start).max())
        axes.append(np.minimum(start[:, None] + np.arange(width), end[:, None] - 1))
    if nd == 1:
        axes.insert(0, np.zeros((1, 1), np.int64))
    rows, cols = axes
    lead = tuple(x.shape[:-nd])
    x2 = _shape.reshape(x, lead + (1,) * (2 - nd) + in_sizes)
    w = rows.shape[1] * cols.shape[1]
    flat = (rows[:, None, :, None] * x2.shape[-1] + cols[None, :, None, :]).reshape(
        rows.shape[0], cols.shape[0], w)  # (oh, ow, kh*kw) into the plane
    plane = _shape.reshape(x2, lead + (-1,))
    flat_dev = m.asarray(flat.reshape(1, -1).astype(np.int64))
    windows = _index.index_select(plane, plane.ndim - 1, wrap(flat_dev.reshape(-1)))
    windows = _shape.reshape(windows, lead + (rows.shape[0] * cols.shape[0], w))
    arg = m.argmax(windows._data, axis=-1)
    y = _index.take_along_dim(windows, wrap(m.expand_dims(arg, -1)), dim=-1)
    out_shape = lead + ((cols.shape[0],) if nd == 1 else (rows.shape[0], cols.shape[0]))
    y = _shape.reshape(y, out_shape)
    if not return_indices:
        return y
    chosen = m.take_along_axis(m.asarray(flat.reshape(-1, w)).reshape(
        (1,) * len(lead) + (-1, w)), m.expand_dims(arg, -1), axis=-1)
    return y, wrap(chosen.reshape(out_shape).astype(np.int64))


def _adaptive_max_volume(op, x, in_sizes, sizes, return_indices):
    """:func:`_adaptive_max` of a 3-D volume: each output's window as a row of indices
    into the flattened volume (each axis's windows padded with their last index, a tie
    that argmax resolves to the same element), its maximum taken along the row."""
    m = math_of(x._data)
    nd = len(in_sizes)
    flat = np.zeros(tuple(sizes) + (1,) * nd, np.int64)
    stride = 1
    for axis in reversed(range(nd)):
        start, end = _windows(in_sizes[axis], sizes[axis])
        width = int((end - start).max())
        idx = np.minimum(start[:, None] + np.arange(width), end[:, None] - 1)
        shape = [1] * (2 * nd)
        shape[axis], shape[nd + axis] = idx.shape
        flat = flat + idx.reshape(shape) * stride
        stride *= in_sizes[axis]
    n_out = int(np.prod(sizes))
    flat = flat.reshape(n_out, -1)
    lead = tuple(x.shape[:-nd])
    plane = _shape.reshape(x, lead + (-1,))
    windows = _index.index_select(plane, plane.ndim - 1,
                                  wrap(m.asarray(flat.reshape(-1))))
    windows = _shape.reshape(windows, lead + flat.shape)
    arg = m.argmax(windows._data, axis=-1)
    y = _shape.reshape(_index.take_along_dim(windows, wrap(m.expand_dims(arg, -1)), dim=-1),
                       lead + tuple(sizes))
    if not return_indices:
        return y
    chosen = m.take_along_axis(m.asarray(flat).reshape((1,) * len(lead) + flat.shape),
                               m.expand_dims(arg, -1), axis=-1)
    return y, wrap(chosen.reshape(lead + tuple(sizes)).astype(np.int64))


@export(torch=True)
def adaptive_max_pool1d(input, output_size, return_indices=False):  # noqa: A002
    """Max pooling to ``output_size`` values along the last axis (PyTorch's adaptive
    windows); ``return_indices`` also returns the maxima's positions."""
    return _adaptive_max(1, "adaptive_max_pool1d", input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):  # noqa: A002
    """Max pooling of ``(N, C, H, W)`` or ``(C, H, W)`` to ``output_size``;
    ``return_indices`` also returns indices into each flattened plane."""
    return _adaptive_max(2, "adaptive_max_pool2d", input, output_size, return_indices)



def _max_unpool(nd, op, input, indices, kernel_size, stride, padding, output_size):  # noqa: A002
    """The inverse of a max pool: zeros of the unpooled size with each value put back at
    its index in its plane (``scatter`` along the flattened plane: differentiable)."""
    k = _ints(kernel_size, nd, "kernel_size", op)
    s = k if stride is None else _ints(stride, nd, "stride", op)
    p = _ints(padding, nd, "padding", op)
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}: Expected {nd + 1}D or {nd + 2}D input, but got "
                           f"{input.ndim}D")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    size = tuple(input.shape[-nd:])
    default = tuple((n - 1) * ss - 2 * pp + kk for n, kk, ss, pp in zip(size, k, s, p))
    if output_size is None:
        out = default
    else:
        out = tuple(int(v) for v in output_size)[-nd:]
        if len(out) != nd:
            raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} "
                             f"elements, but it has a length of '{len(tuple(output_size))}'")
        for d, (o, want, ss) in enumerate(zip(out, default, s)):
            if not want - ss < o < want + ss:
                shown = "(" + ", ".join(str(v) for v in tuple(output_size)) + ")"
                raise ValueError(f'invalid output_size "{shown}" (dim {d} must be between '
                                 f"{want - ss} and {want + ss})")
    plane = int(np.prod(out))
    lead = tuple(input.shape[:-nd])
    flat_x = _shape.reshape(input, lead + (-1,))
    flat_i = _shape.reshape(indices, lead + (-1,))
    sizes = "x".join(map(str, out))
    check_range(flat_i._data, 0, plane, lambda bad: RuntimeError(  # (PyTorch checks too)
        f"Found an invalid max index: {bad} (output volumes are of size {sizes})"))
    zeros = wrap(math_of(input._data).zeros(lead + (plane,), dtype=input._data.dtype))
    return _shape.reshape(zeros.scatter(-1, flat_i, flat_x), lead + out)


@export()
def max_unpool1d(input, indices, kernel_size, stride=None, padding=0,  # noqa: A002
                 output_size=None):
    """The inverse of :func:`max_pool1d` (``F.max_unpool1d``): ``input`` ``(N, C, L)`` or
    ``(C, L)`` put back at ``indices`` (as ``return_indices`` gives them) in zeros of
    length ``(L - 1) * stride - 2 * padding + kernel_size`` (or ``output_size``)."""
    return _max_unpool(1, "max_unpool1d", input, indices, kernel_size, stride, padding,
                       output_size)


@export()
def max_unpool2d(input, indices, kernel_size, stride=None, padding=0,  # noqa: A002
                 output_size=None):
    """The inverse of :func:`max_pool2d` (``F.max_unpool2d``): ``input`` ``(N, C, H, W)``
    or ``(C, H, W)`` put back at ``indices`` (positions in each output plane, as
    ``return_indices`` gives them) in zeros of the unpooled size (``output_size``, or
    ``(H - 1) * stride - 2 * padding + kernel_size`` per axis).

    >>> import gradcore as gc
    >>> y, i = gc.nn.functional.max_pool2d(gc.arange(16.).reshape(1, 1, 4, 4), 2,
    ...                                    return_indices=True)
    >>> gc.nn.functional.max_unpool2d(y, i, 2)[0, 0, 1]
    tensor([0., 5., 0., 7.])
    """
    return _max_unpool(2, "max_unpool2d", input, indices, kernel_size, stride, padding,
                       output_size)


# ---- 3-D pools, as 2-D ones over the depth slices each window meets ----------
def _depth_slices(x5, k, s, p, d, out, fill):
    """The depth slices each depth position ``i`` of the kernel meets, one ``(N, C * OD,
    H, W)`` tensor per ``i`` (the depth padded with ``fill``)."""
    n, c, depth = x5.shape[0], x5.shape[1], x5.shape[2]
    right = max(0, (out[0] - 1) * s[0] + d[0] * (k[0] - 1) + 1 - (depth + 2 * p[0]))
    if p[0] or right:
        x5 = _conv._constant_pad(x5, (0, 0, 0, 0, p[0], p[0] + right), fill)
    slabs = []
    for i in range(k[0]):
        at = i * d[0]
        slab = x5[:, :, at:at + s[0] * (out[0] - 1) + 1:s[0]]
        slabs.append(_shape.reshape(slab, (n, c * out[0]) + tuple(x5.shape[3:])))
    return slabs


@export(torch=True)
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    """The maximum of each window of ``(N, C, D, H, W)`` or ``(C, D, H, W)``: arguments
    as :func:`max_pool2d`, an int or a triple each; ``return_indices`` also returns each
    maximum's index into its flattened ``D x H x W`` volume. The first maximum in
    raster order wins (a NaN is one); computed as 2-D pools of the depth slices each
    window meets."""
    x5, batched, size, k, s, p, d, out = _geometry(input, 3, kernel_size, stride, padding,
                                                   dilation, ceil_mode, "max_pool3d")
    if x5.dtype == dtypes.bool_:
        raise RuntimeError("\"max_pool3d\" not implemented for 'Bool'")
    fill = -np.inf if x5._data.dtype.kind == "f" else int(np.iinfo(x5._data.dtype).min)
    n, c = x5.shape[0], x5.shape[1]
    values, places = [], []
    for slab in _depth_slices(x5, k, s, p, d, out, fill):
        y, idx = _max_pool(2, "max_pool3d", slab, k[1:], s[1:], p[1:], d[1:], ceil_mode, True)
        values.append(y)
        places.append(idx)
    best = _red.max(_shape.stack(values, 0), 0)  # (the first depth position of a tie)
    y = _shape.reshape(best.values, (n, c) + out)
    y = y if batched else _shape.squeeze(y, 0)
    if not return_indices:
        return y
    m = math_of(x5._data)
    plane = size[1] * size[2]
    which = best.indices._data.reshape((1,) + best.indices.shape)
    pos = m.take_along_axis(m.stack([i._data for i in places], 0), which, 0)[0]
    depth = (m.arange(out[0], dtype=np.int64) * s[0] - p[0]).reshape((1, 1, -1, 1, 1)) + \
        which[0].reshape((n, c) + out) * d[0]
    idx = wrap(depth * plane + pos.reshape((n, c) + out))
    return y, (idx if batched else _shape.squeeze(idx, 0))


@export(torch=True)
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True, divisor_override=None):
    """The mean of each window of ``(N, C, D, H, W)`` or ``(C, D, H, W)``: arguments as
    :func:`avg_pool2d`, an int or a triple each (PyTorch's divisor: the window within
    the padded input, or its elements inside the input when ``count_include_pad`` is
    False, or ``divisor_override``). Sums of 2-D windows over the depth slices."""
    x5, batched, size, k, s, p, d, out = _geometry(input, 3, kernel_size, stride, padding, 1,
                                                   ceil_mode, "avg_pool3d")
    if x5._data.dtype.kind != "f":
        raise RuntimeError(f"\"avg_pool3d\" not implemented for "
                           f"'{dtypes.torch_name(x5._data.dtype)}'")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    half = x5.dtype == dtypes.float16  # (summed in float32, as PyTorch's kernels do)
    xs = x5.to(dtypes.float32) if half else x5
    total = None
    for slab in _depth_slices(xs, k, s, p, d, out, 0.0):
        part = _avg_pool(2, "avg_pool3d", slab, k[1:], s[1:], p[1:], ceil_mode, True, 1)
        total = part if total is None else total + part
    n, c = x5.shape[0], x5.shape[1]
    total = _shape.reshape(total, (n, c) + out)
    div = _divisors(size, k, s, p, out, count_include_pad, divisor_override)
    m = math_of(total._data)
    y = total * wrap(m.asarray((1.0 / div).astype(total._data.dtype)))
    y = y.to(dtypes.float16) if half else y
    return y if batched else _shape.squeeze(y, 0)


@export(torch=True)
def adaptive_avg_pool3d(input, output_size):  # noqa: A002
    """Average pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` to ``output_size`` (an
    int or a triple; ``None`` keeps that axis), PyTorch's windows ``floor(i*n/out)`` to
    ``ceil((i+1)*n/out)`` along each axis."""
    x = input
    sizes = _adaptive_sizes(x, 3, output_size, "adaptive_avg_pool3d")
    if x._data.dtype.kind != "f":
        raise RuntimeError(f"\"adaptive_avg_pool3d\" not implemented for "
                           f"'{dtypes.torch_name(x._data.dtype)}'")
    m = math_of(x._data)
    half = x.dtype == dtypes.float16
    xs = x.to(dtypes.float32) if half else x
    dt = xs._data.dtype
    (dn, hn, wn), (do, ho, wo) = tuple(x.shape[-3:]), sizes
    lead = tuple(x.shape[:-3])
    y = _linalg.matmul(xs, _shape.transpose(_averaging(wn, wo, dt, m), 0, 1))
    y = _linalg.matmul(_averaging(hn, ho, dt, m), y)                   # (..., D, ho, wo)
    y = _linalg.matmul(_averaging(dn, do, dt, m), _shape.reshape(y, lead + (dn, ho * wo)))
    y = _shape.reshape(y, lead + (do, ho, wo))
    return y.to(dtypes.float16) if half else y


def adaptive_max_pool3d(input, output_size, return_indices=False):  # noqa: A002
    """Max pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` to ``output_size`` (an int
    or a triple; ``None`` keeps that axis), PyTorch's adaptive windows;
    ``return_indices`` also returns indices into each flattened volume."""
    return _adaptive_max(3, "adaptive_max_pool3d", input, output_size, return_indices)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0,  # noqa: A002
                 output_size=None):
    """The inverse of :func:`max_pool3d` (``F.max_unpool3d``): ``input``
    ``(N, C, D, H, W)`` or ``(C, D, H, W)`` put back at ``indices`` (positions in each
    output volume) in zeros of the unpooled size (``output_size``, or
    ``(n - 1) * stride - 2 * padding + kernel_size`` per axis)."""
    if input.ndim not in (4, 5):
        raise RuntimeError(f"Input to max_unpooling3d should be a 4d or 5d Tensor, but got a "
                           f"tensor with {input.ndim} dimensions.")
    return _max_unpool(3, "max_unpool3d", input, indices, kernel_size, stride, padding,
                       output_size)


# ---- fractional max pools (Graham, 2014), PyTorch's intervals ----------
def _fractional_starts(m, u, n_in, n_out, k, dt):
    """PyTorch's ``generate_intervals`` for every plane at once: the window starts
    ``(..., n_out)`` along one axis from the planes' samples ``u`` (``(...,)``, computed
    in the samples' dtype as PyTorch computes them in the input's): ``int((i + u) *
    alpha) - int(u * alpha)``, ``alpha = (n_in - k) / (n_out - 1)``, the last start
    ``n_in - k``."""
    last = m.full(u.shape + (min(n_out, 1),), n_in - k, dtype=np.int64)
    if n_out <= 1:
        return last
    alpha = np.asarray(n_in - k, dtype=dt) / np.asarray(n_out - 1, dtype=dt)
    alpha = m.asarray(alpha)
    i = m.arange(n_out - 1).astype(dt)
    with np.errstate(invalid="ignore", over="ignore"):
        steps = ((i + u[..., None]) * alpha).astype(np.int64) - \
            (u * alpha).astype(np.int64)[..., None]
    return m.concatenate([steps, last], axis=-1)


def _fractional_max_pool(nd, x, kernel, out, samples, return_indices):
    """The fractional max pool of ``x`` ``(N, C, *spatial)`` (or unbatched) with
    ``kernel`` and ``out`` tuples of ``nd`` ints and ``samples`` ``(>= N, C, nd)``
    (checked as PyTorch). Each output's window gathered from the flattened plane, its
    first maximum taken (the last NaN, where there is one, as PyTorch's CPU kernel),
    differentiable through the gather."""
    op = f"fractional_max_pool{nd}d" + ("_out()" if nd == 3 else "()")
    if not isinstance(x, Tensor):
        raise TypeError(f"fractional_max_pool{nd}d(): argument 'input' (position 1) must be "
                        f"Tensor, not {type(x).__name__}")
    names = ("kernel_size", "output_size")
    for name, v in zip(names, (kernel, out)):
        if len(v) != nd:
            raise RuntimeError(f"fractional_max_pool{nd}d: {name} must either be a single Int "
                               f"or tuple of {'Ints' if nd == 2 else 'three Ints'}")
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}: Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                           f"{list(x.shape)}")
    batched = x.ndim == nd + 2
    for d in range(1 if batched else 0, x.ndim):
        if x.shape[d] == 0:
            raise RuntimeError(f"{op}: Expected input to have non-zero size for non-batch "
                               f"dimensions, but got{list(x.shape)} with dimension {d} "
                               f"being empty.")
    sizes = tuple(x.shape[-nd:])
    axis_names = ("height", "width") if nd == 2 else ("time", "height", "width")
    for name, n_in, n_out, k in zip(axis_names, sizes, out, kernel):
        if n_out + k - 1 > n_in - (nd == 3):  # (PyTorch's 3-D check is strict)
            raise RuntimeError(f"{op}: pool {name} {k} too large relative to input "
                               f"{name} {n_in}")
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"fractional_max_pool{nd}d: kernel_size must be greater than zero, "
                           f"but got {list(kernel)}")
    if samples._data.dtype != x._data.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.ndim}")
    n = x.shape[0] if batched else 1
    c = x.shape[-nd - 1]
    if samples.shape[0] < n:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != c:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got "
                           f"{samples.shape[2]}.")
    if x._data.dtype.kind != "f":
        raise RuntimeError(f"\"fractional_max_pool{nd}d_out_frame\" not implemented for "
                           f"'{dtypes.torch_name(x._data.dtype)}'")
    m = math_of(x._data)
    x4 = x if batched else _shape.unsqueeze(x, 0)
    u = samples._data[:n]
    dt = u.dtype
    # PyTorch's samples per plane: (w, h) for 2-D, (t, h, w) for 3-D
    order = (1, 0) if nd == 2 else (0, 1, 2)
    flat = m.zeros((n, c) + (1,) * (2 * nd), dtype=np.int64)  # (N, C, *out, *kernel)
    stride = 1
    for axis in reversed(range(nd)):
        starts = _fractional_starts(m, u[:, :, order[axis]], sizes[axis], out[axis],
                                    kernel[axis], dt)
        pos = starts[..., None] + m.arange(kernel[axis])               # (N, C, out, k)
        shape = [n, c] + [1] * (2 * nd)
        shape[2 + axis], shape[2 + nd + axis] = out[axis], kernel[axis]
        flat = flat + pos.reshape(shape) * stride
        stride *= sizes[axis]
    n_out, width = int(np.prod(out)), int(np.prod(kernel))
    flat = flat.reshape(n, c, n_out * width)
    plane = _shape.reshape(x4, (n, c, int(np.prod(sizes))))
    windows = _index.gather(plane, 2, wrap(flat))
    windows = _shape.reshape(windows, (n, c, n_out, width))
    w = windows._data
    nan = m.isnan(w)
    last_nan = width - 1 - m.argmax(nan[..., ::-1], axis=-1)
    arg = m.where(nan.any(axis=-1), last_nan, m.argmax(w, axis=-1)) if width else \
        m.zeros(w.shape[:-1], dtype=np.int64)
    arg = m.expand_dims(arg, -1)
    y = _shape.reshape(_index.take_along_dim(windows, wrap(arg), dim=-1), (n, c) + tuple(out))
    y = y if batched else _shape.squeeze(y, 0)
    if not return_indices:
        return y
    idx = m.take_along_axis(flat.reshape(n, c, n_out, width), arg, axis=-1)
    idx = wrap(idx.reshape((n, c) + tuple(out)))
    return y, (idx if batched else _shape.squeeze(idx, 0))


def fractional_max_pool2d(input, kernel_size, output_size, random_samples,  # noqa: A002
                          return_indices=False):
    """The fractional max pool of ``(N, C, H, W)`` or ``(C, H, W)`` to ``output_size``
    (a pair) with windows ``kernel_size`` (a pair) placed by ``random_samples``
    ``(N, C, 2)`` (PyTorch's intervals); ``return_indices`` also returns each maximum's
    index into its flattened plane."""
    return _fractional_max_pool(2, input, tuple(kernel_size), tuple(output_size),
                                random_samples, return_indices)


def fractional_max_pool3d(input, kernel_size, output_size, random_samples,  # noqa: A002
                          return_indices=False):
    """:func:`fractional_max_pool2d` of ``(N, C, D, H, W)`` or ``(C, D, H, W)``: triples,
    ``random_samples`` ``(N, C, 3)``."""
    return _fractional_max_pool(3, input, tuple(kernel_size), tuple(output_size),
                                random_samples, return_indices)


__all__ += ["fractional_max_pool2d", "fractional_max_pool3d"]
