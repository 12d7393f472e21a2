"""Row formulas (softmax, log_softmax, layer_norm, cross-entropy, attention's safe
softmax), the row kernels that fuse them on a device, and the fused unbroadcasting
product.

A softmax backward needs a sum over each row, the gradient of a row-broadcast factor a
sum over the rows: not one expression per element. Each such formula is written once
here, over a namespace ``F`` (an array module, an array namespace, or
``gradcore.ops.tensor_math``: its tensors make the same lines differentiable), for any
axis; :data:`FORMULAS` says how the registry (:mod:`gradcore.kernels`) serves it: float16
computed in float32 on array namespaces, and one launch of a hand-written CUDA kernel
(``kernels/gradcore_rows.cuh``, declared parameter by parameter in :data:`ROW_KERNELS`)
where one applies (rows along the last axis of a C-contiguous array). The kernels'
twins, :data:`TWINS`, are the same formulas over the last axis of 2-D arrays; the tests
run the CUDA source through the host build against them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..backend import math_of
from .spec import RowKernel

__all__ = ["FORMULAS", "TWINS", "ROW_KERNELS", "row_block"]


# ---- the formulas, each written once ------------------------------------------------
# Over a namespace ``F``: an array module, an array namespace (``ArrayMath``) or
# ``gradcore.ops.tensor_math`` (tensors, differentiable: second derivatives come from
# the same lines). The registry serves each name of :data:`FORMULAS` on an array
# namespace (float16 computed in float32 where declared, one row-kernel launch where
# :data:`FORMULAS` says one applies), and ``tensor_math`` the same function over tensors.
# Reductions are methods (``a.sum(axis=..., keepdims=True)``), which arrays and tensors
# share and which cost less than NumPy's functions.
def softmax_forward(F, x, axis, log):
    """softmax (or log_softmax) over ``axis`` of an array ``x``, without overflow: a row
    of -inf, or one holding +inf, gives NaN as in PyTorch (inf - inf)."""
    if x.size == 0:
        return x.copy()
    out = _fresh(F, x - x.max(axis=axis, keepdims=True))  # (arrays: updated in place)
    if log:
        out -= F.log(F.exp(out).sum(axis=axis, keepdims=True))
    else:
        F.exp(out, out=out)
        out /= out.sum(axis=axis, keepdims=True)
    return out


def softmax_backward(F, g, y, axis, out=None):
    """``g * y - y * sum(g * y)`` over ``axis`` (``y`` the softmax output). ``out``: an
    array the result may be written into, ``g`` itself where the engine owns it (arrays
    only: on NumPy a new array costs more than the rest, its pages being new)."""
    gy = _fresh(F, F.multiply(g, y, out=out))
    return F.subtract(gy, y * gy.sum(axis=axis, keepdims=True), out=gy)


def log_softmax_backward(F, g, y, axis, out=None):
    """``g - exp(y) * sum(g)`` over ``axis`` (``y`` the log-probabilities; ``out`` as
    :func:`softmax_backward`'s)."""
    e = _fresh(F, F.exp(y))
    e = F.multiply(e, g.sum(axis=axis, keepdims=True), out=e)
    return F.subtract(g, e, out=e if out is None else out)


def layer_norm_forward(F, x, w, b, axes, eps, inv_n, stats=None):
    """Normalization over ``axes`` of an array ``x`` (layer_norm over the trailing axes,
    batch_norm over all but the channel's, group_norm over a group's): ``(y, mean,
    rstd)``, the statistics kept with their axes (biased variance), ``w`` and ``b``
    broadcast against ``x``. ``stats``: a given ``(mean, rstd)`` used instead of the
    input's (batch_norm in evaluation: the running statistics)."""
    if stats is None:
        mean = x.sum(axis=axes, keepdims=True) * inv_n
        xc = _fresh(F, x - mean)  # (arrays: updated in place)
        rstd = 1.0 / F.sqrt((xc * xc).sum(axis=axes, keepdims=True) * inv_n + eps)
    else:
        mean, rstd = stats
        xc = _fresh(F, x - mean)
    xc *= rstd
    if w is not None:
        xc *= w
    if b is not None:
        xc += b
    return xc, mean, rstd


def layer_norm_backward(F, g, x, w, mean, rstd, axes, lead, inv_n, eps, need_x, need_params,
                        batch_stats=True):
    """The gradients of :func:`layer_norm_forward` (``NativeLayerNormBackward0``,
    ``NativeBatchNormBackward0``, ``NativeGroupNormBackward0``), those asked for (else
    None): the input's, ``rstd * (gh - mean(gh) - xhat * mean(gh * xhat))`` over
    ``axes`` with ``gh = g * w`` (``rstd * gh`` where the statistics were given:
    ``batch_stats`` False), and the weight's and bias's, ``sum(g * xhat)`` and
    ``sum(g)`` over the ``lead`` axes. (``eps``: for tensors, whose namespace recomputes
    the statistics from ``x``, differentiably.)"""
    xhat = _fresh(F, x - mean)
    xhat = F.multiply(xhat, rstd, out=xhat)
    gx = dw = db = None
    if need_x:
        gh = g * w if w is not None else g
        if batch_stats:
            a = gh.sum(axis=axes, keepdims=True) * inv_n
            bb = (gh * xhat).sum(axis=axes, keepdims=True) * inv_n
            gx = _fresh(F, gh - a)
            gx = F.subtract(gx, xhat * bb, out=gx)
            gx = F.multiply(gx, rstd, out=gx)
        else:
            gx = gh * rstd
    if need_params:
        if lead:
            dw, db = (g * xhat).sum(axis=lead), g.sum(axis=lead)
        else:  # (g * 1: a new array, -0.0 kept)
            dw, db = g * xhat, g * 1
    return gx, dw, db


def softmax_xent_backward(F, logp, target, g, coef):
    """The input gradient of ``nll_loss(log_softmax(x, 1), target)`` from the saved
    log-probabilities ``logp`` (rows x classes): with ``v = g * coef`` per row,
    ``one_hot(target) * v - exp(logp) * v``, in the operations the two backward steps
    do one after the other (the one-hot row sums to ``v`` exactly; ``v`` in the loss's
    dtype, as nll_loss's step computes it)."""
    v = (g * coef)[:, None]
    out = F.exp(logp) * v
    F.subtract(0, out, out=out)  # 0 - e * v: +0.0 where v is 0, as the two steps give
    rows = F.arange(logp.shape[0])
    out[rows, target] = v[:, 0] + out[rows, target]
    return out


def softmax_xent_forward(F, x, target, weight, ignore_index):
    """cross_entropy's forward for class targets over the rows of ``x``: ``(logp, loss,
    wt, tsafe)``: the log-probabilities (log_softmax's operations), each row's target
    weight (0 where ignored), loss ``-(logp[t] * wt)`` (0 where ignored; computed in
    float32 for float16, as nll_loss does) and the targets with ignored ones made 0."""
    acc = _acc(x.dtype)
    logp = softmax_forward(F, x.astype(acc, copy=False), 1, True).astype(x.dtype, copy=False)
    valid = target != ignore_index
    tsafe = F.where(valid, target, 0).astype(np.int64, copy=False)
    # read at targets brought into range: one out of range is the caller's error
    # (check_range on tsafe: at once on the CPU, at the next read on a GPU), not
    # NumPy's IndexError nor a value read from the other end of the row
    inside = F.maximum(F.minimum(tsafe, x.shape[1] - 1), 0)
    if weight is None:
        wt = valid.astype(acc)
    else:
        wt = F.where(valid, weight.astype(acc, copy=False)[inside], 0).astype(acc, copy=False)
    picked = logp[F.arange(x.shape[0]), inside].astype(acc, copy=False)
    loss = F.where(valid, -(picked * wt), 0).astype(acc)
    return logp, loss, wt, tsafe


def index_bounds(F, idx):
    """``(least, greatest)``: an int64 index array's bounds, for a range check
    (``backend.check_range``); one launch on a device where a min and a max are two.
    Without elements, the int64 extremes the other way round (as the kernel leaves
    them: nothing to check)."""
    if not idx.size:
        return np.int64(np.iinfo(np.int64).max), np.int64(np.iinfo(np.int64).min)
    return idx.min(), idx.max()


def nll_reduce(F, loss, wt, tsafe, mode):
    """cross_entropy's reduction of its per-row ``loss`` (``softmax_xent_forward``'s):
    ``(out, coef, least, greatest)``: the loss (None for ``mode`` 0, no reduction; the
    sum for 1; for 2 the sum divided by ``total``, the sum of the rows' weights ``wt``),
    the gradient's coefficient of each row (``-wt``; ``-wt / total`` for the mean, 0 where
    ``total`` is 0: no target counted, no gradient) and the least and greatest target
    (``tsafe``: the caller's range check). One launch on a device (a block does it all)
    for what would take six: two sums, a division, the coefficients, a min and a max."""
    least, greatest = index_bounds(F, tsafe)
    if mode == 0:
        return None, -wt, least, greatest
    out = loss.sum()
    if mode == 1:
        return out, -wt, least, greatest
    total = wt.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        return out / total, F.where(total != 0, -wt / total, 0), least, greatest


def softmax_xent(F, x, target, weight, ignore_index, mode):
    """cross_entropy's forward and reduction for class targets over the rows of ``x``:
    :func:`softmax_xent_forward`'s ``(logp, loss, wt, tsafe)`` then :func:`nll_reduce`'s
    ``(out, coef, least, greatest)`` of them (``mode`` as there). One launch on a device
    for a small batch of narrow rows (``softmax_xent_small``), two otherwise."""
    logp, loss, wt, tsafe = F.softmax_xent_forward(x, target, weight, ignore_index)
    return (logp, loss, wt, tsafe) + tuple(F.nll_reduce(loss, wt, tsafe, mode))


def attention_softmax(F, scores, bias, scale, causal):
    """scaled_dot_product_attention's weights from its scores (``q @ k^T``): softmax over
    the last axis of ``scores * scale + bias`` (``bias`` None or an additive array that
    broadcasts to ``scores``), with the keys after each query at -inf where ``causal``
    (key ``j > i`` for query ``i``, the second-last axis: top-left aligned, as PyTorch's
    ``is_causal``). A row left with no key (-inf all along) gives zeros, not NaN (PyTorch's
    ``_safe_softmax``): its maximum is taken as 0, so its exponentials and their sum are
    0, and it is divided by 1. Other rows are softmax's operations (NaN for a row holding
    +inf or NaN, as softmax gives)."""
    s = _fresh(F, scores * scale)  # (arrays: updated in place)
    if bias is not None:
        s += bias
    if causal and s.ndim >= 2 and s.size:
        n_q, n_k = s.shape[-2:]
        # (where, not a boolean index: gc.compile replays no value-dependent shapes)
        s = F.where(F.arange(n_k) > F.arange(n_q)[:, None], s.dtype.type(-np.inf), s)
    if s.size == 0:
        return s
    mx = s.max(axis=-1, keepdims=True)
    s -= F.where(mx == -np.inf, 0, mx)
    F.exp(s, out=s)
    total = s.sum(axis=-1, keepdims=True)
    s /= F.where(total == 0, 1, total)
    return s


def attention_softmax_backward(F, g, y, scale, bias_shape, need_scores, need_bias):
    """The gradients of :func:`attention_softmax` (those asked for, else None), from its
    output ``y``: with ``d = softmax_backward(g, y)`` over the last axis, the scores'
    ``d * scale`` and the bias's ``d`` summed to ``bias_shape``. A row with no key has
    ``y`` 0, hence ``d`` 0: no gradient reaches its scores."""
    d = softmax_backward(F, g, y, -1)
    return (d * scale if need_scores else None,
            F.sum_to(d, tuple(bias_shape)) if need_bias else None)


def log_sigmoid(F, x):
    """``log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|))`` without overflow."""
    return F.minimum(x, 0) - F.log1p(F.exp(-F.abs(x)))


def bce_logits_backward(F, g, x, y, pw, need_x, need_y):
    """binary_cross_entropy_with_logits's gradients (those asked for, else None):
    ``dx = (sigmoid(x) * (pw * y + 1 - y) - pw * y) * g`` (``sigmoid(x) - y`` without
    ``pos_weight``), ``dy = (log_sigmoid(-x) - pw * log_sigmoid(x)) * g`` (``-x``)."""
    gx = gy = None
    if need_x:
        sig = F.sigmoid(x)
        gx = (sig - y) * g if pw is None else (sig * (pw * y + 1 - y) - pw * y) * g
    if need_y:
        gy = -x * g if pw is None else (F.log_sigmoid(-x) - pw * F.log_sigmoid(x)) * g
    return gx, gy


def _fresh(F, a):
    """``a`` as an array that may be updated in place (NumPy gives scalars for 0-d)."""
    return a if type(a) is F.ndarray else F.asarray(a)


def _acc(dtype):
    return np.dtype(np.float32) if dtype == np.float16 else np.dtype(dtype)


def _up(a):
    return a.astype(np.float32) if a is not None and a.dtype == np.float16 else a


# ---- the twins of the row kernels: the formulas above over the last axis of 2-D arrays
# (float16 computed in float32, as the kernels do), which the tests compare the CUDA
# kernels with
def softmax_backward_rows(xp, g, y):
    return softmax_backward(xp, g, y, -1)


def log_softmax_backward_rows(xp, g, y):
    return log_softmax_backward(xp, g, y, -1)


def softmax_forward_rows(xp, x, log):
    return softmax_forward(xp, _up(x), 1, log).astype(x.dtype)


def layer_norm_forward_rows(xp, x, w, b, eps, inv_n):
    acc = _acc(x.dtype)
    y, mean, rstd = layer_norm_forward(xp, x.astype(acc), _up(w), _up(b), 1, acc.type(eps),
                                       acc.type(inv_n))
    return y.astype(x.dtype), mean[:, 0], rstd[:, 0]


def layer_norm_backward_rows(xp, g, x, w, mean, rstd, inv_n):
    acc = _acc(x.dtype)
    gx, _, _ = layer_norm_backward(xp, g.astype(acc), x.astype(acc), _up(w), mean[:, None],
                                   rstd[:, None], 1, (0,), acc.type(inv_n), None, True,
                                   False)
    return gx.astype(x.dtype)


def layer_norm_param_grads(xp, g, x, mean, rstd):
    acc = _acc(x.dtype)
    _, dw, db = layer_norm_backward(xp, g.astype(acc), x.astype(acc), None, mean[:, None],
                                    rstd[:, None], 1, (0,), None, None, False, True)
    return dw.astype(x.dtype), db.astype(x.dtype)


def norm_forward_channels(xp, x, w, b, eps, inv_n):
    """Batch norm's layout: ``x`` ``(outer, C, inner)`` normalized per channel over the
    other two axes, ``w`` and ``b`` per channel (in the compute type)."""
    acc = _acc(x.dtype)
    p = (lambda a: None if a is None else a.astype(acc).reshape(1, -1, 1))
    y, mean, rstd = layer_norm_forward(xp, x.astype(acc), p(w), p(b), (0, 2), acc.type(eps),
                                       acc.type(inv_n))
    return y.astype(x.dtype), mean.reshape(-1), rstd.reshape(-1)


def norm_backward_channels(xp, g, x, w, mean, rstd, inv_n, need_x, need_params):
    """The gradients of :func:`norm_forward_channels`: the input's (None unless
    ``need_x``) and the weight's and bias's in the compute type (None unless
    ``need_params``)."""
    acc = _acc(x.dtype)
    gx, dw, db = layer_norm_backward(
        xp, g.astype(acc), x.astype(acc), None if w is None else w.astype(acc).reshape(1, -1, 1),
        mean.reshape(1, -1, 1), rstd.reshape(1, -1, 1), (0, 2), (0, 2), acc.type(inv_n), None,
        need_x, need_params)
    return None if gx is None else gx.astype(x.dtype), dw, db


def attention_softmax_rows(xp, s, bias, scale, n_q):
    """:func:`attention_softmax` over rows of ``cols`` keys: ``bias`` None or of the
    scores' shape, ``n_q`` the queries per matrix where causal (row ``r`` is query
    ``r % n_q``), else 0."""
    acc = _acc(s.dtype)
    shape = (s.shape[0] // n_q, n_q, s.shape[1]) if n_q else s.shape
    y = attention_softmax(xp, _up(s).reshape(shape),
                          None if bias is None else _up(bias).reshape(shape), acc.type(scale),
                          bool(n_q))
    return y.reshape(s.shape).astype(s.dtype)


def attention_softmax_backward_rows(xp, g, y, scale, need_d):
    """The scores' gradient of :func:`attention_softmax` over rows (``d * scale``) and,
    when ``need_d``, ``d`` itself in the compute type (which the bias's sums read)."""
    acc = _acc(y.dtype)
    d = softmax_backward(xp, _up(g), _up(y), -1)
    return (d * acc.type(scale)).astype(y.dtype), (d if need_d else None)


def softmax_xent_small(xp, x, target, weight, ignore_index, mode):
    """The twin of the one-launch kernel: :func:`softmax_xent`'s two formulas."""
    rows = softmax_xent_forward(xp, x, target, weight, ignore_index)
    return (*rows, *nll_reduce(xp, *rows[1:], mode))


def mul_sum_rows(xp, g, x):
    """``sum(g * x, axis=0)``: the gradient of a factor broadcast along the rows."""
    return (g * x).sum(axis=0)


TWINS = {f.__name__: f for f in (softmax_backward_rows, log_softmax_backward_rows,
                                  softmax_xent_backward, softmax_xent_forward, nll_reduce,
                                  index_bounds, softmax_xent_small,
                                  softmax_forward_rows,
                                  layer_norm_forward_rows, layer_norm_backward_rows,
                                  layer_norm_param_grads, mul_sum_rows,
                                  norm_forward_channels, norm_backward_channels,
                                  attention_softmax_rows, attention_softmax_backward_rows)}


# ---- what the registry serves -----------------------------------------------------
_FLOATS = ("float16", "float32", "float64")


def _last_axis(kernel, g, y, axis, out=None):
    if axis is not None and axis == y.ndim - 1 and y.dtype.name in _FLOATS:
        return kernel(g, y)  # one launch, a block per row
    return None


def _rows_2d(kernel, *args):
    return kernel(*args)  # (the pair's log-probabilities are 2-D)


#: The batches cross_entropy takes in one launch, a thread per row: up to this many
#: elements, rows of up to SMALL_XENT_COLS classes (above, two launches of a block per
#: row should be faster than one block doing it all: a bound chosen without a GPU, to
#: be measured on one, kept low).
SMALL_XENT_ELEMENTS = 1 << 14
SMALL_XENT_COLS = 64


def _xent_small_launch(kernel, x, target, weight, ignore_index, mode):
    rows, cols = x.shape
    if x.size and x.size <= SMALL_XENT_ELEMENTS and cols <= SMALL_XENT_COLS and \
            x.dtype.name in _FLOATS:
        return kernel(x, target, weight, ignore_index, mode)
    return None


def _softmax_forward_launch(kernel, x, axis, log):
    if axis is not None and axis == x.ndim - 1 and x.size and x.dtype.name in _FLOATS:
        cols = x.shape[-1]  # one launch, a block per row
        return kernel(x.reshape(-1, cols), log).reshape(x.shape)
    return None


def _ln_rows(x, axes, *params):
    """The columns of the rows layer_norm's row kernels see in ``x`` where they apply (a
    floating input with elements, normalized over its trailing ``axes``, the parameters
    of its dtype and of those axes' shape), else 0."""
    if not (x.size and x.dtype.name in _FLOATS):
        return 0
    k = len(axes)
    trailing = x.shape[x.ndim - k:]
    if tuple(axes) != tuple(range(x.ndim - k, x.ndim)):
        return 0
    for p in params:
        if p is not None and (p.dtype != x.dtype or p.shape[p.ndim - k:] != trailing or
                              p.size != int(np.prod(trailing, dtype=np.int64))):
            return 0
    return int(np.prod(trailing, dtype=np.int64))


def _channels(x, axes, *params):
    """``(outer, C, inner)`` where ``x`` is normalized as batch norm does (a floating
    ``(N, C, *)`` with elements, over every axis but the channel's, the parameters one
    floating value per channel), else None: the layout of the channel kernels."""
    if not (x.ndim >= 2 and x.size and x.dtype.name in _FLOATS and
            tuple(axes) == (0,) + tuple(range(2, x.ndim))):
        return None
    c = x.shape[1]
    for p in params:
        if p is not None and (p.size != c or p.dtype.name not in _FLOATS):
            return None
    return x.shape[0], c, x.size // (x.shape[0] * c)


def _ln_forward_launch(kernels, x, w, b, axes, eps, inv_n, stats=None):
    """One launch: a block per row (normalized over trailing axes) or per channel (batch
    norm's layout)."""
    if stats is not None:
        return None
    cols = _ln_rows(x, axes, w, b)
    if cols:
        k = len(axes)  # the trailing axes: a block per row
        y, mean, rstd = kernels[0](x.reshape(-1, cols), None if w is None else w.reshape(-1),
                                   None if b is None else b.reshape(-1), eps, inv_n)
        keep = x.shape[:x.ndim - k] + (1,) * k
        return y.reshape(x.shape), mean.reshape(keep), rstd.reshape(keep)
    layout = _channels(x, axes, w, b)
    if layout is None:
        return None
    y, mean, rstd = kernels[1](x.reshape(layout), None if w is None else w.reshape(-1),
                               None if b is None else b.reshape(-1), eps, inv_n)
    keep = (1, layout[1]) + (1,) * (x.ndim - 2)
    return y.reshape(x.shape), mean.reshape(keep), rstd.reshape(keep)


def _ln_backward_launch(kernels, g, x, w, mean, rstd, axes, lead, inv_n, eps, need_x,
                        need_params, batch_stats=True):
    """One launch for the input's gradient, one for both parameters' (one for the three
    in batch norm's layout)."""
    layout = _channels(x, axes, w)
    if layout is not None and batch_stats and mean.dtype == _acc(x.dtype) and \
            tuple(lead) == tuple(axes):
        gx, dw, db = kernels[2](g.reshape(layout), x.reshape(layout),
                                None if w is None else w.reshape(-1), mean.reshape(-1),
                                rstd.reshape(-1), inv_n, need_x, need_params)
        return None if gx is None else gx.reshape(x.shape), dw, db
    cols = _ln_rows(x, axes, w)
    if not (cols and batch_stats) or mean.dtype != _acc(x.dtype) or \
            tuple(lead) != tuple(range(x.ndim - len(axes))):
        return None
    g2, x2, mean, rstd = (g.reshape(-1, cols), x.reshape(-1, cols), mean.reshape(-1),
                          rstd.reshape(-1))
    gx = dw = db = None
    if need_x:
        gx = kernels[0](g2, x2, None if w is None else w.reshape(-1), mean, rstd,
                        inv_n).reshape(x.shape)
    if need_params:
        dw, db = kernels[1](g2, x2, mean, rstd)
        pshape = x.shape[len(lead):]
        dw, db = dw.reshape(pshape), db.reshape(pshape)
    return gx, dw, db


def _attention_launch(kernel, scores, bias, scale, causal):
    """One launch, a block per row of keys; the bias passed dense, of the scores'
    shape."""
    if not (scores.ndim and scores.size and scores.dtype.name in _FLOATS) or \
            (bias is not None and bias.dtype != scores.dtype):
        return None
    cols = scores.shape[-1]
    if bias is not None:
        if bias.shape != scores.shape:
            bias = math_of(scores).broadcast_to(bias, scores.shape)
        bias = bias.reshape(-1, cols)
    n_q = scores.shape[-2] if causal and scores.ndim >= 2 else 0  # (as the formula)
    return kernel(scores.reshape(-1, cols), bias, scale, n_q).reshape(scores.shape)


def _attention_backward_launch(kernel, g, y, scale, bias_shape, need_scores, need_bias):
    """One launch for the scores' gradient (and ``d``, in the compute type, for the
    bias's, then summed to its shape)."""
    if not (y.ndim and y.size and y.dtype.name in _FLOATS and g.dtype == y.dtype):
        return None
    cols = y.shape[-1]
    gs, d = kernel(g.reshape(-1, cols), y.reshape(-1, cols), scale, need_bias)
    gb = None
    if need_bias:
        gb = math_of(d).sum_to(d.reshape(y.shape), tuple(bias_shape))
        gb = gb.astype(y.dtype, copy=False)
    return (gs.reshape(y.shape) if need_scores else None), gb


@dataclass(frozen=True)
class Formula:
    """A formula of this module as the registry serves it on array namespaces:
    ``upcast``, the positions of the arguments (after ``F``) computed in float32 when
    they are float16, the results (the first ``rounded`` of them) rounded back to the
    first one's dtype; ``kernel``, the row kernel of :data:`ROW_KERNELS` (or a tuple of
    them) that ``launch(kernel, *args)`` runs on a device with kernels where it applies
    (None where it does not: then the formula runs). An ``out=`` argument (an array
    the result may be written into) is honoured where nothing is upcast."""

    fn: object
    upcast: tuple[int, ...] = ()
    kernel: str | tuple[str, ...] | None = None
    launch: object = None
    rounded: int | None = None


FORMULAS = {
    "softmax_forward": Formula(softmax_forward, (0,), "softmax_forward_rows",
                               _softmax_forward_launch),
    "softmax_backward": Formula(softmax_backward, (0, 1), "softmax_backward_rows",
                                _last_axis),
    "log_softmax_backward": Formula(log_softmax_backward, (0, 1),
                                    "log_softmax_backward_rows", _last_axis),
    "layer_norm_forward": Formula(layer_norm_forward, (0, 1, 2),
                                  ("layer_norm_forward_rows", "norm_forward_channels"),
                                  _ln_forward_launch, rounded=1),  # (stats in float32)
    "layer_norm_backward": Formula(layer_norm_backward, (1, 0, 2),
                                   ("layer_norm_backward_rows", "layer_norm_param_grads",
                                    "norm_backward_channels"),
                                   _ln_backward_launch),
    # (only logp computed in float32: g * coef in the loss's dtype, as nll_loss's step)
    "cross_entropy_backward": Formula(softmax_xent_backward, (0,), "softmax_xent_backward",
                                      _rows_2d),
    "softmax_xent": Formula(softmax_xent, (), "softmax_xent_small", _xent_small_launch),
    "attention_softmax": Formula(attention_softmax, (0, 1), "attention_softmax_rows",
                                 _attention_launch),
    "attention_softmax_backward": Formula(attention_softmax_backward, (0, 1),
                                          "attention_softmax_backward_rows",
                                          _attention_backward_launch),
    "log_sigmoid": Formula(log_sigmoid),
    "bce_logits_backward": Formula(bce_logits_backward, (1, 0, 2, 3)),
}


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
    RowKernel("norm_forward_channels", (
        ("in", "x"), ("cin", "w"), ("cin", "b"), ("int", "has_w"), ("int", "has_b"),
        ("scalar", "eps"), ("scalar", "inv_n"), ("out", "y"), ("cout", "mean"),
        ("cout", "rstd"), ("int", "outer"), ("int", "rows"), ("int", "cols"))),
    RowKernel("norm_backward_channels", (
        ("in", "g"), ("in", "x"), ("cin", "w"), ("int", "has_w"), ("cin", "mean"),
        ("cin", "rstd"), ("scalar", "inv_n"), ("int", "need_x"), ("int", "need_params"),
        ("out", "dx"), ("cout", "dw"), ("cout", "db"), ("int", "outer"), ("int", "rows"),
        ("int", "cols"))),
    RowKernel("softmax_xent_forward", (
        ("in", "x"), ("index", "target"), ("cin", "weight"), ("int", "has_weight"),
        ("int", "ignore_index"), ("out", "logp"), ("cout", "loss"), ("cout", "wt"),
        ("index_out", "tsafe"), ("int", "rows"), ("int", "cols"))),
    RowKernel("softmax_xent_small", (
        ("in", "x"), ("index", "target"), ("cin", "weight"), ("int", "has_weight"),
        ("int", "ignore_index"), ("int", "mode"), ("out", "logp"), ("cout", "loss"),
        ("cout", "wt"), ("index_out", "tsafe"), ("cout", "out"), ("cout", "coef"),
        ("index_out", "bounds"), ("int", "rows"), ("int", "cols"))),
    RowKernel("index_bounds", (("index", "idx"), ("index_out", "bounds"), ("int", "rows"),
                               ("int", "cols"))),
    RowKernel("nll_reduce", (
        ("cin", "loss"), ("cin", "wt"), ("index", "tsafe"), ("int", "mode"), ("cout", "out"),
        ("cout", "coef"), ("index_out", "bounds"), ("int", "rows"), ("int", "cols"))),
    RowKernel("attention_softmax_rows", (
        ("in", "s"), ("in", "bias"), ("int", "has_bias"), ("scalar", "scale"),
        ("int", "n_q"), ("out", "y"), ("int", "rows"), ("int", "cols"))),
    RowKernel("attention_softmax_backward_rows", (
        ("in", "g"), ("in", "y"), ("scalar", "scale"), ("int", "need_d"), ("out", "out"),
        ("cout", "d"), ("int", "rows"), ("int", "cols"))),
]}
