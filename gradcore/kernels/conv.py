"""Convolution: the window gathering (im2col) and its adjoint (col2im), and the
convolution formulas written once over a namespace.

Columns are laid out ``(C * kh * kw, N, oh * ow)``: row ``(c, i, j)`` holds, for every
image and output position, the input element under kernel position ``(i, j)`` of
channel ``c``. In that layout a convolution of any batch is ONE matrix product
(``weight (O, C*kh*kw) @ cols (C*kh*kw, N*oh*ow)``; with groups, one batched product
over the groups), where ``(N, C*kh*kw, L)`` would need one product per image. Small
images on the CPU take the batch innermost instead, ``(C * kh * kw, oh * ow, N)``
("batch-inner"): a row of 2 to 8 windows makes NumPy's copies and adds run in loops of
that length, the batch (through a ``(C, H, W, N)`` copy of the input) in loops of N
contiguous elements, several times faster. The namespace picks the order
(``F.windows_batch_inner``), the formulas follow it.

* :func:`im2col` and :func:`col2im` are the kernels' twins: on the CPU ``im2col`` copies
  a strided view of the (padded) input, its windows, into one column buffer (no Python
  loop over the batch or the kernel positions), and ``col2im`` adds each kernel
  position's columns into a strided slice of the result (a loop over the ``kh * kw``
  positions of whole-array adds, no buffer beyond the result). On a CUDA device each is
  one launch of a hand-written kernel (``kernels/gradcore_conv.cuh``, declared in
  :data:`CONV_KERNELS`): a thread per column element for im2col, and for col2im a
  thread per input element gathering its contributions (no atomics), summed in the
  twin's order.
* :func:`conv_forward`, :func:`conv_transpose_forward` and :func:`conv_backward` are the
  formulas over a namespace ``F`` (an array namespace, or ``gradcore.ops.tensor_math``
  for ``create_graph=True``): ``F.im2col``/``F.col2im`` and matrix products. Over tensors
  the two primitives are differentiable ops whose backward calls the other one, so second
  derivatives come from the same lines.

The correlation ``A`` maps an "a-space" batch ``(N, Ca, Ha, Wa)`` to a "b-space" batch
``(N, Cb, Hb, Wb)`` with a weight ``(Cb, Ca / groups, kh, kw)``. A convolution is ``A``
(input in a-space), a transposed convolution its adjoint ``A^T`` (input in b-space, with
PyTorch's weight layout ``(C_in, C_out / groups, kh, kw)`` being exactly that weight);
their gradients are the other one and the weight's outer product.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..backend import math_of
from .spec import RowKernel

__all__ = ["Geometry", "im2col", "col2im", "max_pool_forward", "max_pool_backward",
           "batch_inner_cpu", "conv_forward",
           "conv_transpose_forward", "conv_backward", "FORMULAS", "TWINS", "CONV_KERNELS"]


@dataclass(frozen=True)
class Geometry:
    """One convolution's geometry, in 2-D terms (a 1-D convolution has height 1):
    ``stride``, ``padding``, ``dilation`` (pairs), ``groups``, the a-space and b-space
    spatial sizes ``a_size`` and ``b_size`` (the windows are ``b_size``), the 4-D
    shapes the input, weight and output are viewed as (``x4``, ``w4``, ``out4``) and
    the output's own shape (``out_shape``)."""

    stride: tuple
    padding: tuple
    dilation: tuple
    groups: int
    a_size: tuple
    b_size: tuple
    x4: tuple
    w4: tuple
    out4: tuple
    out_shape: tuple


# ---- the twins of the CUDA kernels ------------------------------------------------
def _as_strided(xp, a, shape, strides):
    # (NumPy's as_strided keeps the operand as the view's base, through which
    # gc.compile's recording finds what the view reads; subok keeps the recording's array
    # type, so that the copy out of the view is recorded too: CuPy has no subclasses)
    if xp is np:
        return np.lib.stride_tricks.as_strided(a, shape, strides, subok=True)
    return xp.lib.stride_tricks.as_strided(a, shape, strides)


def im2col(xp, x, kernel, dilation, padding, stride, windows, batch_inner=False):
    """The sliding blocks of ``x`` (N, C, H, W) as columns ``(C*kh*kw, N, oh*ow)``
    (``batch_inner``: ``(C*kh*kw, oh*ow, N)``): entry ``((c, i, j), n, (y, x))`` is
    ``x[n, c, y*sh - ph + i*dh, x*sw - pw + j*dw]``, zero in the padding. ``windows`` is
    ``(oh, ow)``, at most as many as fit."""
    n, c, h, w = x.shape
    (kh, kw), (dh, dw), (ph, pw), (sh, sw), (oh, ow) = kernel, dilation, padding, stride, \
        windows
    if batch_inner:  # (C, H, W, N): the batch contiguous, the copy's inner loop
        padded = xp.zeros((c, h + 2 * ph, w + 2 * pw, n), dtype=x.dtype)
        padded[:, ph:ph + h, pw:pw + w, :] = x.transpose((1, 2, 3, 0))
        s1, s2, s3, s0 = padded.strides
        shape, strides = (c, kh, kw, oh, ow, n), (s1, s2 * dh, s3 * dw, s2 * sh, s3 * sw, s0)
    else:
        if ph or pw or not x.flags.c_contiguous:
            padded = xp.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=x.dtype)
            padded[:, :, ph:ph + h, pw:pw + w] = x
        else:
            padded = x
        s0, s1, s2, s3 = padded.strides
        # (C, kh, kw, N, oh, ow): the innermost axis runs along the input's rows
        shape, strides = (c, kh, kw, n, oh, ow), (s1, s2 * dh, s3 * dw, s0, s2 * sh, s3 * sw)
    blocks = _as_strided(xp, padded, shape, strides)
    cols = xp.empty((c * kh * kw,) + ((oh * ow, n) if batch_inner else (n, oh * ow)),
                    dtype=x.dtype)
    xp.copyto(cols.reshape(shape), blocks)
    return cols


def _inside(i, d, p, s, windows, size):
    """For kernel position ``i`` along an axis: the windows ``[lo, hi)`` whose element
    under it falls inside the image (not in the padding), and the first image position
    they read."""
    offset = i * d - p  # the position window 0 reads
    lo = max(0, -(offset // s))  # ceil(-offset / s)
    hi = min(windows, (size - 1 - offset) // s + 1)
    return lo, hi, lo * s + offset


def col2im(xp, cols, size, kernel, dilation, padding, stride, windows, batch_inner=False):
    """The adjoint of :func:`im2col` (columns in either order): a C-contiguous ``(N, C,
    H, W)`` with every column entry added at the input position it was read from
    (``size`` is ``(H, W)``; entries read from the padding are dropped); float16 summed in
    float32 and rounded once, as the kernel does. Each element receives its
    contributions in kernel-position order, from zero: the kernel's order, so the two
    agree to the bit."""
    k = cols.shape[0]
    n = cols.shape[2] if batch_inner else cols.shape[1]
    (kh, kw), (dh, dw), (ph, pw), (sh, sw), (oh, ow), (h, w) = kernel, dilation, padding, \
        stride, windows, size
    c = k // (kh * kw)
    acc = np.float32 if cols.dtype == np.float16 else cols.dtype
    if batch_inner:  # summed in (C, H, W, N), as the blocks, then put batch first
        out = xp.zeros((c, h, w, n), dtype=acc)
        blocks = cols.reshape((c, kh, kw, oh, ow, n))
        target = out
    else:
        out = xp.zeros((n, c, h, w), dtype=acc)
        blocks = cols.reshape((c, kh, kw, n, oh, ow))
        target = out.transpose((1, 0, 2, 3))  # (C, N, H, W), as the blocks
    if out.size and cols.size:
        for i in range(kh):
            y_lo, y_hi, y0 = _inside(i, dh, ph, sh, oh, h)
            if y_lo >= y_hi:
                continue
            rows = slice(y0, y0 + sh * (y_hi - y_lo - 1) + 1, sh)
            for j in range(kw):
                x_lo, x_hi, x0 = _inside(j, dw, pw, sw, ow, w)
                if x_lo >= x_hi:
                    continue
                columns = slice(x0, x0 + sw * (x_hi - x_lo - 1) + 1, sw)
                if batch_inner:
                    part = target[:, rows, columns]
                    xp.add(part, blocks[:, i, j, y_lo:y_hi, x_lo:x_hi], out=part)
                else:
                    part = target[:, :, rows, columns]
                    xp.add(part, blocks[:, i, j, :, y_lo:y_hi, x_lo:x_hi], out=part)
    if batch_inner:  # (rounded, for float16, in the same copy)
        return xp.ascontiguousarray(out.transpose((3, 0, 1, 2)), dtype=cols.dtype)
    return out if acc == cols.dtype else out.astype(cols.dtype)


def batch_inner_cpu(a, windows) -> bool:
    """Whether the CPU takes the batch innermost for the windows of ``a`` (N, C, H, W):
    rows of at most 8 windows, a batch of at least 4 images (single-threaded NumPy,
    8x8 to 2x2 windows of batches of 8 to 64: 2 to 4 times faster to gather; from rows
    of 16 the rows are as fast, and at 32x32 twice as fast)."""
    return windows[1] <= 8 and a.shape[0] >= 4


def _first_inside(t, d):
    """Per window start ``t`` (an array, possibly negative): the first position a window
    reads that is inside the image, ``t + i * d`` for the least ``i`` making it >= 0."""
    return t + ((-t).clip(0) + d - 1) // d * d


def max_pool_forward(xp, x, kernel, dilation, padding, stride, windows):
    """Each window's maximum of ``x`` (N, C, H, W), ``(N, C, oh, ow)``, and its position
    in its ``H x W`` plane (int64, PyTorch's ``return_indices``): the first maximum in
    raster order (a NaN is one), never the padding (a window of ``-inf`` reports its
    first element inside the image, as PyTorch). Windows as :func:`im2col`'s, the last
    ones (``ceil_mode``) reaching past the padding where ``windows`` says so."""
    n, c, h, w = x.shape
    (kh, kw), (dh, dw), (ph, pw), (sh, sw), (oh, ow) = kernel, dilation, padding, stride, \
        windows
    hp = max(h + 2 * ph, (oh - 1) * sh + dh * (kh - 1) + 1)  # every window's reach
    wp = max(w + 2 * pw, (ow - 1) * sw + dw * (kw - 1) + 1)
    if (hp, wp) != (h, w) or not x.flags.c_contiguous:
        fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        padded = xp.full((n, c, hp, wp), fill, dtype=x.dtype)
        padded[:, :, ph:ph + h, pw:pw + w] = x
    else:
        padded = x
    s0, s1, s2, s3 = padded.strides
    shape = (n, c, kh, kw, oh, ow)
    blocks = _as_strided(xp, padded, shape, (s0, s1, s2 * dh, s3 * dw, s2 * sh, s3 * sw))
    win = xp.empty(shape, dtype=x.dtype)
    xp.copyto(win, blocks)
    win = win.reshape((n, c, kh * kw, oh * ow))
    arg = win.argmax(axis=2)  # (the first maximum; NaN is the maximum, its first)
    y = xp.take_along_axis(win, arg.reshape((n, c, 1, oh * ow)), 2).reshape((n, c, oh, ow))
    arg = arg.reshape((n, c, oh, ow))
    top = xp.arange(oh, dtype=np.int64).reshape((-1, 1)) * sh - ph
    left = xp.arange(ow, dtype=np.int64) * sw - pw
    row = xp.maximum(arg // kw * dh + top, _first_inside(top, dh))
    col = xp.maximum(arg % kw * dw + left, _first_inside(left, dw))
    return y, row * w + col


def max_pool_backward(F, g, idx, size, kernel, dilation, padding, stride):
    """The gradient of :func:`max_pool_forward` (``g`` and ``idx`` ``(N, C, oh, ow)``):
    zeros ``(N, C, H, W)`` with each ``g`` added at its window's maximum (an element that
    is the maximum of several windows receives their sum, in the windows' order). The
    windows' geometry is the CUDA kernel's (a thread per input element visits the windows
    over it); the formula needs only the positions."""
    n, c = g.shape[0], g.shape[1]
    plane = size[0] * size[1]
    xp = math_of(idx).xp
    flat = idx.reshape((n * c, -1)) + xp.arange(0, n * c * plane, plane,
                                                dtype=np.int64).reshape((-1, 1))
    out = F.index_add_into_zeros(g.reshape((-1,)), flat.reshape((-1,)), (n * c * plane,))
    return out.reshape((n, c) + tuple(size))


TWINS = {"im2col": im2col, "col2im": col2im, "max_pool_forward": max_pool_forward}

# The CUDA kernels of kernels/gradcore_conv.cuh, parameter by parameter (kinds as in
# source.signature), whose twins are the functions above: one thread per element of
# their output (grid-stride), no cooperation.
_SHAPE = tuple(("int", p) for p in (
    "batch", "channels", "height", "width", "kernel_h", "kernel_w", "pad_h", "pad_w",
    "stride_h", "stride_w", "dilation_h", "dilation_w", "out_h", "out_w"))
CONV_KERNELS = {k.name: k for k in [
    RowKernel("im2col", (("in", "x"), ("out", "cols")) + _SHAPE, cooperative=False,
              source="gradcore_conv.cuh"),
    RowKernel("col2im", (("in", "cols"), ("out", "x")) + _SHAPE, cooperative=False,
              source="gradcore_conv.cuh"),
    RowKernel("max_pool_forward", (("in", "x"), ("out", "y"), ("index_out", "idx")) + _SHAPE,
              cooperative=False, source="gradcore_conv.cuh"),
    RowKernel("max_pool_backward", (("in", "g"), ("index", "idx"), ("out", "dx")) + _SHAPE,
              cooperative=False, source="gradcore_conv.cuh"),
]}


# ---- the formulas, over a namespace F ---------------------------------------------
def _to_rows(F, b, groups, inner):
    """``b`` (N, C, H, W) as ``(groups, C / groups, M)``, ``M`` the positions in the
    columns' order (a copy: the channels first)."""
    n, c, h, w = b.shape
    return F.transpose(b, (1, 2, 3, 0) if inner else (1, 0, 2, 3)).reshape(
        (groups, c // groups, n * h * w))


def _from_rows(F, y, n, size, inner):
    """``y`` (C, M), positions in the columns' order, as ``(N, C, H, W)`` (a view)."""
    c, (h, w) = y.shape[0], size
    if inner:
        return F.transpose(y.reshape((c, h, w, n)), (3, 0, 1, 2))
    return F.transpose(y.reshape((c, n, h, w)), (1, 0, 2, 3))


def _correlate(F, a, w, geo, inner):
    """``A(a)``: ``a`` (N, Ca, Ha, Wa) correlated with ``w`` (Cb, Ca/G, kh, kw) as
    ``(N, Cb, Hb, Wb)`` (a transposed view of the product: one matrix product)."""
    n = a.shape[0]
    cb, _, kh, kw = w.shape
    groups = geo.groups
    cols = F.im2col(a, (kh, kw), geo.dilation, geo.padding, geo.stride, geo.b_size, inner)
    k, length = cols.shape[0], n * geo.b_size[0] * geo.b_size[1]
    if groups == 1:
        y = F.matmul(w.reshape((cb, k)), cols.reshape((k, length)))
    else:  # one batched product over the groups
        y = F.matmul(w.reshape((groups, cb // groups, k // groups)),
                     cols.reshape((groups, k // groups, length)))
    return _from_rows(F, y.reshape((cb, length)), n, geo.b_size, inner)


def _correlate_adjoint(F, b2, w, geo, n, inner):
    """``A^T(b)`` from ``b2``, ``b`` (N, Cb, Hb, Wb) by channel (:func:`_to_rows`): the
    columns ``w^T @ b`` summed back into a-space ``(N, Ca, Ha, Wa)`` by col2im."""
    _, cg, kh, kw = w.shape
    groups, cb, length = geo.groups, w.shape[0], b2.shape[-1]
    kg = cg * kh * kw
    if groups == 1:
        cols = F.matmul(w.reshape((cb, kg)).swapaxes(-1, -2), b2.reshape((cb, length)))
    else:
        cols = F.matmul(w.reshape((groups, cb // groups, kg)).swapaxes(-1, -2), b2)
    hb, wb = geo.b_size
    shape = (groups * kg,) + ((hb * wb, n) if inner else (n, hb * wb))
    return F.col2im(cols.reshape(shape), geo.a_size, (kh, kw), geo.dilation, geo.padding,
                    geo.stride, geo.b_size, inner)


def _correlate_weight(F, a, b2, geo, w_shape, inner):
    """The gradient of ``<b, A_w(a)>`` with respect to ``w``: ``b @ cols(a)^T`` per group,
    of shape ``w_shape`` (Cb, Ca/G, kh, kw) (``b2``: ``b`` by channel)."""
    cb, cg, kh, kw = w_shape
    groups = geo.groups
    cols = F.im2col(a, (kh, kw), geo.dilation, geo.padding, geo.stride, geo.b_size, inner)
    k, length = cols.shape[0], b2.shape[-1]
    if groups == 1:
        gw = F.matmul(b2.reshape((cb, length)), cols.reshape((k, length)).swapaxes(-1, -2))
    else:
        gw = F.matmul(b2, cols.reshape((groups, k // groups, length)).swapaxes(-1, -2))
    return gw.reshape(w_shape)


def _with_bias(F, y, b):
    """``y + b`` along the channels, as a new C-contiguous array (arrays only: the
    forwards)."""
    if b is None and y.flags.c_contiguous:
        return y
    out = F.empty(y.shape, dtype=y.dtype)
    if b is None:
        F.copyto(out, y)
    else:
        F.add(y, b.reshape((1, -1, 1, 1)), out=out)
    return out


def conv_forward(F, x, w, b, geo):
    """A convolution (cross-correlation) of arrays: ``x`` and ``w`` (any shapes that
    view as ``geo.x4`` and ``geo.w4``), ``b`` the bias or None; the output in its
    batch-first shape, C-contiguous."""
    x4 = x.reshape(geo.x4)
    inner = F.windows_batch_inner(x4, geo.b_size)
    y = _correlate(F, x4, w.reshape(geo.w4), geo, inner)
    return _with_bias(F, y, b).reshape(geo.out_shape)


def conv_transpose_forward(F, x, w, b, geo):
    """A transposed convolution of arrays (the adjoint of :func:`conv_forward` in its
    input), the bias added."""
    x4 = x.reshape(geo.x4)
    inner = F.windows_batch_inner(x4, geo.b_size)
    y = _correlate_adjoint(F, _to_rows(F, x4, geo.groups, inner), w.reshape(geo.w4), geo,
                           x4.shape[0], inner)
    return _with_bias(F, y, b).reshape(geo.out_shape)


def conv_backward(F, g, x, w, geo, transposed, need_x, need_w, need_b):
    """The gradients of a convolution (or, ``transposed``, a transposed convolution)
    with respect to its input, weight and bias, those asked for (else None)::

        convolution:  dx = A^T(g)   dw = outer(g, cols(x))   db = sum(g)
        transposed:   dx = A(g)     dw = outer(x, cols(g))   db = sum(g)
    """
    g4, x4, w4 = g.reshape(geo.out4), x.reshape(geo.x4), w.reshape(geo.w4)
    gx = gw = gb = None
    # b-space (the windows' positions) is the output's, or a transposed one's input
    b_space = x4 if transposed else g4
    inner = F.windows_batch_inner(b_space, geo.b_size)
    if transposed:
        if need_x:  # (C-contiguous, as PyTorch's: callers view gradients)
            gx = F.ascontiguousarray(_correlate(F, g4, w4, geo, inner)).reshape(x.shape)
        if need_w:
            gw = _correlate_weight(F, g4, _to_rows(F, x4, geo.groups, inner), geo, geo.w4,
                                   inner).reshape(w.shape)
        if need_b:
            gb = g4.sum(axis=(0, 2, 3))
        return gx, gw, gb
    # the gradient by channel, (groups, C_out / groups, N * L), serves all three
    g2 = _to_rows(F, g4, geo.groups, inner)
    if need_x:
        gx = _correlate_adjoint(F, g2, w4, geo, g4.shape[0], inner).reshape(x.shape)
    if need_w:
        gw = _correlate_weight(F, x4, g2, geo, geo.w4, inner).reshape(w.shape)
    if need_b:
        gb = g2.sum(axis=-1).reshape((-1,))
    return gx, gw, gb


# What the registry serves, by name: each formula with the positions of its arguments
# (after F) that a CPU computes in float32 when they are float16 (NumPy has no float16
# matrix product of its own: PyTorch's CPU convolutions sum in float32 too).
FORMULAS = {
    "conv_forward": (conv_forward, (0, 1, 2)),
    "conv_transpose_forward": (conv_transpose_forward, (0, 1, 2)),
    "conv_backward": (conv_backward, (0, 1, 2)),
}
