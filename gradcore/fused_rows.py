"""Row kernels (softmax, cross-entropy, layer_norm) and the fused unbroadcasting
product: NumPy twins and their device launchers.

The kernels of ``kernels/gradcore_rows.cuh`` are not one expression per element: a
softmax backward needs a sum over each row, the gradient of a row-broadcast factor a
sum over the rows. Each is hand-written once in CUDA C (declared in
:data:`gradcore.kernels_cuda.ROW_KERNELS`) and once here over an array module; the
tests run the CUDA source through the host build against these twins.

``attach(math)`` gives an array namespace every function of :data:`TWINS` (softmax and
log_softmax forward and backward, cross-entropy forward and backward, layer_norm
forward, backward and parameter gradients, ``mul_sum_rows``): the twins over the
namespace's array module, or one kernel launch each where the namespace
has device kernels (``math.device_kernels``). Rows are the last axis of a C-contiguous
array; the ops call these only for a reduction over the last axis.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["TWINS", "attach", "row_block"]


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


# ---- device launchers ----------------------------------------------------------------
def _dense(xp, a, dtype):
    return xp.ascontiguousarray(a, dtype=dtype)


def _launch(math, name, dtype, values, rows, cols, over):
    """One launch of ``<name>_<dtype>`` with ``values`` then ``rows`` and ``cols``: a
    block per row (``over="rows"``), per 32 columns (``"columns"``) or a thread per
    element (``"elements"``)."""
    from .kernels_cuda import BLOCK, MAX_GRID, dtype_name, launch

    units = {"rows": rows, "columns": -(-cols // 32),
             "elements": -(-(rows * cols) // BLOCK)}[over]
    if units and (rows or over == "columns"):
        launch(math, f"{name}_{dtype_name(dtype)}", [*values, np.int64(rows), np.int64(cols)],
               min(units, MAX_GRID), row_block(cols) if over == "rows" else BLOCK)


def _rows_kernel(math, name, g, y):
    xp = math.xp
    dtype = y.dtype
    g, y = _dense(xp, g, dtype), _dense(xp, y, dtype)
    out = xp.empty(y.shape, dtype=dtype)
    cols = y.shape[-1] if y.ndim else 1
    rows = y.size // cols if cols else 0
    _launch(math, name, dtype, [g, y, out], rows, cols, "rows")
    return out


def _xent_kernel(math, logp, target, g, coef):
    xp = math.xp
    dtype = logp.dtype
    logp = _dense(xp, logp, dtype)
    rows, cols = logp.shape
    g = xp.asarray(g, dtype=dtype)
    g_stride = 1 if g.size == rows and rows != 1 else 0
    g = _dense(xp, g.reshape(-1)[:1] if g_stride == 0 else g, dtype)
    out = xp.empty(logp.shape, dtype=dtype)
    _launch(math, "softmax_xent_backward", dtype,
            [logp, _dense(xp, target, np.int64), g, np.int64(g_stride),
             _dense(xp, coef, dtype), out], rows, cols, "elements")
    return out


def _xent_forward_kernel(math, x, target, weight, ignore_index):
    xp = math.xp
    dtype = x.dtype
    acc = _acc(dtype)
    x = _dense(xp, x, dtype)
    rows, cols = x.shape
    logp = xp.empty(x.shape, dtype=dtype)
    loss, wt = xp.empty((rows,), dtype=acc), xp.empty((rows,), dtype=acc)
    tsafe = xp.empty((rows,), dtype=np.int64)
    w = _dense(xp, weight, acc) if weight is not None else xp.empty((1,), dtype=acc)
    _launch(math, "softmax_xent_forward", dtype,
            [x, _dense(xp, target, np.int64), w, np.int64(weight is not None),
             np.int64(ignore_index), logp, loss, wt, tsafe], rows, cols, "rows")
    return logp, loss, wt, tsafe


def _softmax_forward_kernel(math, x, log):
    xp = math.xp
    dtype = x.dtype
    x = _dense(xp, x, dtype)
    y = xp.empty(x.shape, dtype=dtype)
    _launch(math, "softmax_forward_rows", dtype, [x, np.int64(bool(log)), y], *x.shape,
            "rows")
    return y


def _ln_forward_kernel(math, x, w, b, eps, inv_n):
    xp = math.xp
    dtype = x.dtype
    acc = _acc(dtype)
    x = _dense(xp, x, dtype)
    rows = x.shape[0]
    y = xp.empty(x.shape, dtype=dtype)
    mean, rstd = xp.empty((rows,), dtype=acc), xp.empty((rows,), dtype=acc)
    dummy = x.reshape(-1)[:1]  # a valid pointer where there is no weight or bias
    _launch(math, "layer_norm_forward_rows", dtype,
            [x, dummy if w is None else _dense(xp, w, dtype),
             dummy if b is None else _dense(xp, b, dtype), np.int64(w is not None),
             np.int64(b is not None), acc.type(eps), acc.type(inv_n), y, mean, rstd],
            *x.shape, "rows")
    return y, mean, rstd


def _ln_backward_kernel(math, g, x, w, mean, rstd, inv_n):
    xp = math.xp
    dtype = x.dtype
    acc = _acc(dtype)
    x = _dense(xp, x, dtype)
    dx = xp.empty(x.shape, dtype=dtype)
    _launch(math, "layer_norm_backward_rows", dtype,
            [_dense(xp, g, dtype), x, x.reshape(-1)[:1] if w is None else
             _dense(xp, w, dtype), np.int64(w is not None), _dense(xp, mean, acc),
             _dense(xp, rstd, acc), acc.type(inv_n), dx], *x.shape, "rows")
    return dx


def _ln_params_kernel(math, g, x, mean, rstd):
    xp = math.xp
    dtype = x.dtype
    acc = _acc(dtype)
    x = _dense(xp, x, dtype)
    cols = x.shape[1]
    dw, db = xp.empty((cols,), dtype=dtype), xp.empty((cols,), dtype=dtype)
    _launch(math, "layer_norm_param_grads", dtype,
            [_dense(xp, g, dtype), x, _dense(xp, mean, acc), _dense(xp, rstd, acc),
             np.int64(1), np.int64(1), dw, db], *x.shape, "columns")
    return dw, db


def _mul_sum_rows_kernel(math, g, x):
    xp = math.xp
    dtype = g.dtype
    g, x = _dense(xp, g, dtype), _dense(xp, x, dtype)
    out = xp.empty((g.shape[1],), dtype=dtype)
    _launch(math, "mul_sum_rows", dtype, [g, x, out], *g.shape, "columns")
    return out


def _split_rows(full, shape):
    """``(rows, cols)`` when summing ``full`` to ``shape`` adds up whole leading axes (a
    row-broadcast operand such as a bias or a per-feature scale), else None."""
    from .backend import summed_axes

    axes = summed_axes(full, shape)
    k = len(axes)
    if not k or axes != tuple(range(k)):
        return None
    return int(np.prod(full[:k], dtype=np.int64)), int(np.prod(full[k:], dtype=np.int64))


def _mul_sum_to_kernel(math, fallback, g, other, shape):
    """``sum_to(g * other, shape)``: one pass (``mul_sum_rows``) when the reduction is
    over whole leading axes and ``other`` has ``g``'s shape and dtype; else the
    namespace's own ``mul_sum_to``."""
    split = _split_rows(g.shape, shape) if getattr(other, "shape", None) == g.shape and \
        other.dtype == g.dtype and any(g.strides) else None
    if split is None:
        return fallback(g, other, shape)
    rows, cols = split
    out = _mul_sum_rows_kernel(math, g.reshape(rows, cols), other.reshape(rows, cols))
    return out.reshape(shape)


def attach(math) -> None:
    """Give ``math`` the row kernels: launches where it has device kernels, else the
    twins over its array module."""
    if getattr(math, "device_kernels", False):
        from .kernels_cuda import with_fallback

        launchers = {
            "softmax_backward_rows": functools.partial(_rows_kernel, math,
                                                       "softmax_backward_rows"),
            "log_softmax_backward_rows": functools.partial(_rows_kernel, math,
                                                           "log_softmax_backward_rows"),
            "softmax_xent_backward": functools.partial(_xent_kernel, math),
            "softmax_xent_forward": functools.partial(_xent_forward_kernel, math),
            "mul_sum_rows": functools.partial(_mul_sum_rows_kernel, math),
            "softmax_forward_rows": functools.partial(_softmax_forward_kernel, math),
            "layer_norm_forward_rows": functools.partial(_ln_forward_kernel, math),
            "layer_norm_backward_rows": functools.partial(_ln_backward_kernel, math),
            "layer_norm_param_grads": functools.partial(_ln_params_kernel, math),
            # the gradient of a row-broadcast factor of a product in one pass, not two
            "mul_sum_to": functools.partial(_mul_sum_to_kernel, math,
                                            type(math).mul_sum_to.__get__(math)),
        }
        for name, fn in launchers.items():
            setattr(math, name, with_fallback(math, name, fn))
        return
    math.__dict__.pop("mul_sum_to", None)  # the class's method again (after a fallback)
    for name, fn in TWINS.items():
        setattr(math, name, functools.partial(fn, math.xp))
