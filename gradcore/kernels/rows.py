"""Row kernels (softmax, cross-entropy, layer_norm) and the fused unbroadcasting
product: their NumPy twins and their declarations.

The kernels of ``kernels/gradcore_rows.cuh`` are not one expression per element: a
softmax backward needs a sum over each row, the gradient of a row-broadcast factor a
sum over the rows. Each is written by hand once in CUDA C (declared parameter by
parameter in :data:`ROW_KERNELS` below) and once here over an array module; the tests
run the CUDA source through the host build against these twins. The registry
(:mod:`gradcore.kernels`) gives an array namespace each function of :data:`TWINS`: the
twin over its array module, or one launch (:mod:`.device`) where it has device kernels.
Rows are the last axis of a C-contiguous array; the ops call these only for a reduction
over the last axis.
"""

from __future__ import annotations

import numpy as np

from .spec import RowKernel

__all__ = ["TWINS", "ROW_KERNELS", "row_block"]


def softmax_backward_rows(xp, g, y):
    """``g * y - y * sum(g * y)`` over the last axis (``y`` the softmax output)."""
    gy = g * y
    gy -= y * gy.sum(axis=-1, keepdims=True)
    return gy


def log_softmax_backward_rows(xp, g, y):
    """``g - exp(y) * sum(g)`` over the last axis (``y`` the log-probabilities)."""
    return g - xp.exp(y) * g.sum(axis=-1, keepdims=True)


def softmax_xent_backward(xp, logp, target, g, coef):
    """The input gradient of ``nll_loss(log_softmax(x, 1), target)`` from the saved
    log-probabilities ``logp`` (rows x classes): with ``v = g * coef`` per row,
    ``one_hot(target) * v - exp(logp) * v``, in the operations the two backward steps
    do one after the other (the one-hot row sums to ``v`` exactly)."""
    v = (g * coef)[:, None]
    out = xp.exp(logp) * v
    xp.subtract(0, out, out=out)  # 0 - e * v: +0.0 where v is 0, as the two steps give
    rows = xp.arange(logp.shape[0])
    out[rows, target] = v[:, 0] + out[rows, target]
    return out


def softmax_xent_forward(xp, x, target, weight, ignore_index):
    """cross_entropy's forward for class targets over the rows of ``x``: ``(logp, loss,
    wt, tsafe)``: the log-probabilities (log_softmax's operations), each row's target
    weight (0 where ignored), loss ``-(logp[t] * wt)`` (0 where ignored; computed in
    float32 for float16, as nll_loss does) and the targets with ignored ones made 0."""
    acc = _acc(x.dtype)
    w = x.astype(acc)
    shifted = w - w.max(axis=1, keepdims=True)
    logp = (shifted - xp.log(xp.exp(shifted).sum(axis=1, keepdims=True))).astype(x.dtype)
    valid = target != ignore_index
    tsafe = xp.where(valid, target, 0).astype(np.int64)
    if weight is None:
        wt = valid.astype(acc)
    else:
        wt = xp.where(valid, weight.astype(acc)[tsafe], 0).astype(acc)
    picked = logp[xp.arange(x.shape[0]), tsafe].astype(acc)
    loss = xp.where(valid, -(picked * wt), 0).astype(acc)
    return logp, loss, wt, tsafe


def softmax_forward_rows(xp, x, log):
    """softmax (or log_softmax) over the last axis of a 2-D ``x``, in the operations of
    ``ops.activation`` (float16 computed in float32)."""
    w = x.astype(_acc(x.dtype))
    out = w - w.max(axis=1, keepdims=True)
    if log:
        out = out - xp.log(xp.exp(out).sum(axis=1, keepdims=True))
    else:
        out = xp.exp(out)
        out = out / out.sum(axis=1, keepdims=True)
    return out.astype(x.dtype)


def _acc(dtype):
    return np.dtype(np.float32) if dtype == np.float16 else np.dtype(dtype)


def layer_norm_forward_rows(xp, x, w, b, eps, inv_n):
    """layer_norm over the rows of a 2-D ``x``: ``(y, mean, rstd)`` in the operations
    of ``ops.activation.layer_norm`` (float16 computed in float32)."""
    acc = _acc(x.dtype)
    v = x.astype(acc)
    mean = v.sum(axis=1) * acc.type(inv_n)
    xc = v - mean[:, None]
    rstd = acc.type(1) / xp.sqrt((xc * xc).sum(axis=1) * acc.type(inv_n) + acc.type(eps))
    y = xc * rstd[:, None]
    if w is not None:
        y = y * w.astype(acc)
    if b is not None:
        y = y + b.astype(acc)
    return y.astype(x.dtype), mean, rstd


def layer_norm_backward_rows(xp, g, x, w, mean, rstd, inv_n):
    """layer_norm's input gradient over the rows (``NativeLayerNormBackward0``)."""
    acc = _acc(x.dtype)
    xhat = (x.astype(acc) - mean[:, None]) * rstd[:, None]
    gh = g.astype(acc) * w.astype(acc) if w is not None else g.astype(acc)
    a = gh.sum(axis=1, keepdims=True) * acc.type(inv_n)
    bb = (gh * xhat).sum(axis=1, keepdims=True) * acc.type(inv_n)
    return ((gh - a - xhat * bb) * rstd[:, None]).astype(x.dtype)


def layer_norm_param_grads(xp, g, x, mean, rstd):
    """``(sum(g * xhat), sum(g))`` over the rows: layer_norm's weight and bias grads."""
    acc = _acc(x.dtype)
    xhat = (x.astype(acc) - mean[:, None]) * rstd[:, None]
    gv = g.astype(acc)
    return (gv * xhat).sum(axis=0).astype(x.dtype), gv.sum(axis=0).astype(x.dtype)


def mul_sum_rows(xp, g, x):
    """``sum(g * x, axis=0)``: the gradient of a factor broadcast along the rows."""
    return (g * x).sum(axis=0)


TWINS = {f.__name__: f for f in (softmax_backward_rows, log_softmax_backward_rows,
                                  softmax_xent_backward, softmax_xent_forward,
                                  softmax_forward_rows,
                                  layer_norm_forward_rows, layer_norm_backward_rows,
                                  layer_norm_param_grads, mul_sum_rows)}


def row_block(cols: int) -> int:
    """Threads per row: the power of two covering a row, from 32 (a warp) to 256."""
    return min(256, max(32, 1 << max(0, cols - 1).bit_length()))


# The CUDA kernels of kernels/gradcore_rows.cuh, parameter by parameter (kinds as in
# source.signature), whose twins are the functions above by the same name.
ROW_KERNELS = {k.name: k for k in [
    RowKernel("softmax_backward_rows", (("in", "g"), ("in", "y"), ("out", "out"),
                                        ("int", "rows"), ("int", "cols"))),
    RowKernel("log_softmax_backward_rows", (("in", "g"), ("in", "y"), ("out", "out"),
                                            ("int", "rows"), ("int", "cols"))),
    RowKernel("softmax_xent_backward", (
        ("in", "logp"), ("index", "target"), ("in", "g"), ("int", "g_stride"),
        ("in", "coef"), ("out", "out"), ("int", "rows"), ("int", "cols")),
        cooperative=False),
    RowKernel("mul_sum_rows", (("in", "g"), ("in", "x"), ("out", "out"), ("int", "rows"),
                               ("int", "cols"))),
    RowKernel("softmax_forward_rows", (("in", "x"), ("int", "log_"), ("out", "y"),
                                       ("int", "rows"), ("int", "cols"))),
    RowKernel("layer_norm_forward_rows", (
        ("in", "x"), ("in", "w"), ("in", "b"), ("int", "has_w"), ("int", "has_b"),
        ("scalar", "eps"), ("scalar", "inv_n"), ("out", "y"), ("cout", "mean"),
        ("cout", "rstd"), ("int", "rows"), ("int", "cols"))),
    RowKernel("layer_norm_backward_rows", (
        ("in", "g"), ("in", "x"), ("in", "w"), ("int", "has_w"), ("cin", "mean"),
        ("cin", "rstd"), ("scalar", "inv_n"), ("out", "dx"), ("int", "rows"),
        ("int", "cols"))),
    RowKernel("layer_norm_param_grads", (
        ("in", "g"), ("in", "x"), ("cin", "mean"), ("cin", "rstd"), ("int", "has_w"),
        ("int", "has_b"), ("out", "dw"), ("out", "db"), ("int", "rows"), ("int", "cols"))),
    RowKernel("softmax_xent_forward", (
        ("in", "x"), ("index", "target"), ("cin", "weight"), ("int", "has_weight"),
        ("int", "ignore_index"), ("out", "logp"), ("cout", "loss"), ("cout", "wt"),
        ("index_out", "tsafe"), ("int", "rows"), ("int", "cols"))),
]}
