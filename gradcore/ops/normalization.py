"""Batch, instance and group normalization (PyTorch's ``batch_norm``, ``instance_norm``,
``group_norm``), one node each.

Each is layer_norm's formula (:func:`gradcore.kernels.rows.layer_norm_forward` and
``layer_norm_backward``, written once over a namespace ``F``) over other axes: batch
norm normalizes ``(N, C, *)`` over every axis but the channel's, with a per-channel
weight and bias broadcast as ``(1, C, 1, ...)``; instance norm the same over ``*``
only; group norm normalizes the input viewed as ``(N, G, C/G, S)`` over its last two
axes, the weight and bias broadcast as
``(1, G, C/G, 1)``. The parameters' gradients are the formula's sums over the other
axes. In evaluation batch norm normalizes by the running statistics (the formula's
``stats``), and its input's gradient is ``g * w * rstd``.

One node each (``NativeBatchNormBackward0``, ``NativeGroupNormBackward0``) whose
``apply(F, g)`` is one call of the formula: over arrays for a plain backward (on a
device the reductions run there), over tensors (:mod:`.tensor_math`, which recomputes
the statistics from the input) for ``create_graph=True``, so second derivatives come
from the same lines. float16 is computed in float32, the statistics kept in float32;
float16 inputs take float32 parameters and running statistics, as PyTorch's do.
"""

from __future__ import annotations

import numpy as np

from ..autograd.grad_mode import no_grad
from ..backend import math_of
from ._core import Node, Tensor, as_tensor, check_same_device, mode, record, wrap
from ._export import export

__all__ = ["batch_norm", "instance_norm", "group_norm"]

_f16 = np.dtype(np.float16)
_f32 = np.dtype(np.float32)


def _floating_input(x, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        x = as_tensor(x)
    if x._data.dtype.kind != "f":
        kind = {"i": "Long" if x._data.dtype.itemsize == 8 else "Int", "b": "Bool",
                "u": "Byte"}.get(x._data.dtype.kind, str(x.dtype))
        raise NotImplementedError(f'"{op}" not implemented for \'{kind}\'')
    return x


def _check_vector(x: Tensor, p, name: str, c: int, op: str):
    """``p`` (a per-channel tensor or None) checked against ``x``: ``c`` elements, ``x``'s
    device, ``x``'s dtype (float32 too for a float16 ``x``, PyTorch's mixed type)."""
    if p is None:
        return None
    if not isinstance(p, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(p).__name__}")
    if p.numel() != c:
        if op == "group_norm":
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {list(p.shape)} "
                               f"and input of shape {list(x.shape)}")
        raise RuntimeError(f"{name} should contain {c} elements not {p.numel()}")
    check_same_device(x._data, p._data, op)
    xd, pd = x._data.dtype, p._data.dtype
    if pd != xd and not (xd == _f16 and pd == _f32):
        raise RuntimeError(f"{op}: mixed dtype: expected {name} of dtype {x.dtype} (or "
                           f"float32 for a float16 input), got {p.dtype}")
    return p


def _backward(node, F, g, x, w):
    """The node's gradients, in its inputs' order (input, weight, bias)."""
    want_w = node.has_weight and node.needs(1)
    want_b = node.has_bias and node.needs(1 + node.has_weight)
    gx, dw, db = F.layer_norm_backward(g, x, w, node.mean, node.rstd, node.axes, node.lead,
                                       node.inv_n, node.eps, node.needs(0),
                                       want_w or want_b, node.batch_stats)
    grads = [gx]
    if want_w or want_b:
        c = node.channels
        dw, db = dw.reshape(c), db.reshape(c)
        if node.param_dtype != dw.dtype:
            dw, db = F.astype(dw, node.param_dtype), F.astype(db, node.param_dtype)
    if node.has_weight:
        grads.append(dw if want_w else None)
    if node.has_bias:
        grads.append(db if want_b else None)
    return tuple(grads)


def _record(cls, out, x, weight, bias, saved_x, **attrs):
    """``out`` as the output of a ``cls`` node over ``x``, ``weight`` and ``bias`` (those
    given), or plainly when no gradient is wanted."""
    inputs = [x] + [p for p in (weight, bias) if p is not None]
    if not (mode.enabled and any(t._rg for t in inputs)):
        return wrap(out)
    t = record(out, cls, *inputs)
    node = t.grad_fn
    for k, v in attrs.items():
        setattr(node, k, v)
    node.has_weight, node.has_bias = weight is not None, bias is not None
    node.param_dtype = (weight if weight is not None else bias if bias is not None
                        else x)._data.dtype
    node.save(*([saved_x, weight] if weight is not None else [saved_x]))
    return t


# ---- batch_norm ----------
class NativeBatchNormBackward0(Node):
    """Layer norm's gradients over every axis but the channel's
    (``kernels.rows.layer_norm_backward``); in evaluation (the running statistics
    given) ``dx = g * w * rstd``."""

    fresh_grads = True

    def apply(self, F, g):
        saved = self.unpack(F)
        w = saved[1].reshape(self.pshape) if self.has_weight else None
        return _backward(self, F, g, saved[0], w)


@export(torch=True)
def batch_norm(input, weight, bias, running_mean, running_var, training,  # noqa: A002
               momentum, eps, cudnn_enabled=True):
    """Batch normalization of ``(N, C, ...)`` (``torch.batch_norm``'s argument order;
    ``F.batch_norm`` is the usual entry): each channel normalized by its mean and biased
    variance over the batch and the other dimensions when ``training`` (``running_mean``
    and ``running_var``, when given, then move by ``momentum`` towards them, the variance
    unbiased, in place and without gradient), by the running statistics otherwise; then
    ``weight`` and ``bias`` per channel. One node (``NativeBatchNormBackward0``).
    ``cudnn_enabled`` is accepted and ignored."""
    return _by_channel(input, weight, bias, running_mean, running_var, training, momentum, eps,
                       "batch_norm")


@export(torch=True)
def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats,  # noqa: A002
                  momentum, eps, cudnn_enabled=True):
    """Instance normalization of ``(N, C, ...)`` (``torch.instance_norm``'s argument order;
    ``F.instance_norm`` is the usual entry): each channel of each sample normalized over
    the other dimensions when ``use_input_stats`` (the running statistics, when given,
    then move by ``momentum`` towards the batch's average of them), by the running
    statistics otherwise; then ``weight`` and ``bias`` per channel. One node
    (``NativeBatchNormBackward0``, batch norm's over the spatial axes)."""
    return _by_channel(input, weight, bias, running_mean, running_var, use_input_stats,
                       momentum, eps, "instance_norm")


def _by_channel(input, weight, bias, running_mean, running_var, training, momentum, eps,
                op):
    """batch_norm (``op``: normalized over the batch and the other axes) or instance_norm
    (over the other axes of each sample): layer norm's formula over those axes."""
    x = _floating_input(input, op)
    xd = x._data
    if xd.ndim < 2:
        raise RuntimeError(f"{op}: expected an input of at least 2 dimensions (N, C, ...), "
                           f"got {xd.ndim}")
    if momentum is None or isinstance(momentum, bool) or \
            not isinstance(momentum, (int, float, np.floating, np.integer)):
        raise TypeError(f"{op}(): argument 'momentum' (position 7) must be float, not "
                        f"{type(momentum).__name__}")
    c = xd.shape[1]
    weight, bias, running_mean, running_var = (
        _check_vector(x, p, name, c, op) for p, name in
        ((weight, "weight"), (bias, "bias"), (running_mean, "running_mean"),
         (running_var, "running_var")))
    if not training:
        if op == "instance_norm" and (running_mean is None or running_var is None):
            raise RuntimeError("Expected running_mean and running_var to be defined when "
                               "use_input_stats is false")
        for p, name in ((running_mean, "running_mean"), (running_var, "running_var")):
            if p is None:
                raise RuntimeError(f"{name} must be defined in evaluation mode")
    pshape = (1, c) + (1,) * (xd.ndim - 2)
    axes = ((0,) if op == "batch_norm" else ()) + tuple(range(2, xd.ndim))
    n = int(np.prod([xd.shape[a] for a in axes], dtype=np.int64))
    inv_n = 1.0 / n if n else float("nan")
    acc = _f32 if xd.dtype == _f16 else xd.dtype
    m = math_of(xd)
    w = None if weight is None else weight._data.reshape(pshape)
    b = None if bias is None else bias._data.reshape(pshape)
    if training:
        out, mean, rstd = m.layer_norm_forward(xd, w, b, axes, eps, inv_n, None)
        if xd.size:
            _update_running(running_mean, running_var, mean, rstd, n, momentum, eps, c)
    else:
        mean = m.astype(running_mean._data, acc).reshape(pshape)
        rstd = 1.0 / m.sqrt(m.astype(running_var._data, acc).reshape(pshape) + eps)
        out, _, _ = m.layer_norm_forward(xd, w, b, axes, eps, inv_n, (mean, rstd))
    lead = (0,) + tuple(range(2, xd.ndim))  # (the parameters': all but the channel's)
    return _record(NativeBatchNormBackward0, out, x, weight, bias, x, pshape=pshape,
                   axes=axes, lead=lead, inv_n=inv_n, eps=eps, channels=c, mean=mean,
                   rstd=rstd, batch_stats=bool(training))


def _update_running(running_mean, running_var, mean, rstd, n, momentum, eps, c):
    """PyTorch's update, in place and untracked: ``(1 - momentum) * running + momentum *
    batch``, the batch's statistics averaged over the samples for instance norm (one row
    of them each), its variance unbiased (``n / (n - 1)``) and found from ``rstd``."""
    with no_grad():
        if running_mean is not None:
            batch = wrap(mean.reshape(-1, c).mean(axis=0)).to(running_mean.dtype)
            running_mean.mul_(1 - momentum).add_(batch * momentum)
        if running_var is not None:
            var = (1.0 / (rstd * rstd) - eps) * (n / (n - 1) if n > 1 else float("nan"))
            batch = wrap(var.reshape(-1, c).mean(axis=0)).to(running_var.dtype)
            running_var.mul_(1 - momentum).add_(batch * momentum)


# ---- group_norm ----------
class NativeGroupNormBackward0(Node):
    """Layer norm's gradients over each group of the input viewed as ``(N, G, C/G, S)``
    (``kernels.rows.layer_norm_backward``); the parameters' over ``N`` and ``S``."""

    fresh_grads = True

    def apply(self, F, g):
        saved = self.unpack(F)
        x = saved[0].reshape(self.grouped)
        w = saved[1].reshape(self.pshape) if self.has_weight else None
        grads = _backward(self, F, g.reshape(self.grouped), x, w)
        gx = grads[0]
        return (None if gx is None else gx.reshape(self.shape),) + grads[1:]


@export(torch=True)
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5,  # noqa: A002
               cudnn_enabled=True):
    """Group normalization: the channels of ``(N, C, ...)`` split into ``num_groups``
    groups, each normalized (biased variance) over its channels and the other
    dimensions, then ``weight`` and ``bias`` per channel. One node
    (``NativeGroupNormBackward0``). ``cudnn_enabled`` is accepted and ignored.

    >>> import gradcore as gc
    >>> gc.group_norm(gc.tensor([[1.0, 3.0, 0.0, 4.0]]), 2, eps=0.0)
    tensor([[-1.,  1., -1.,  1.]])
    """
    x = _floating_input(input, "group_norm")
    xd = x._data
    if xd.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{xd.ndim}")
    n, c = xd.shape[0], xd.shape[1]
    g = int(num_groups)
    if g <= 0 or c % g:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(xd.shape)} and "
                           f"num_groups={num_groups}")
    weight, bias = (_check_vector(x, p, name, c, "group_norm")
                    for p, name in ((weight, "weight"), (bias, "bias")))
    s = int(np.prod(xd.shape[2:], dtype=np.int64))
    grouped = (n, g, c // g, s)
    pshape = (1, g, c // g, 1)
    count = c // g * s
    inv_n = 1.0 / count if count else float("nan")
    w = None if weight is None else weight._data.reshape(pshape)
    b = None if bias is None else bias._data.reshape(pshape)
    out, mean, rstd = math_of(xd).layer_norm_forward(xd.reshape(grouped), w, b, (2, 3), eps,
                                                     inv_n, None)
    return _record(NativeGroupNormBackward0, out.reshape(xd.shape), x, weight, bias, x,
                   shape=tuple(xd.shape), grouped=grouped, pshape=pshape, axes=(2, 3),
                   lead=(0, 3), inv_n=inv_n, eps=eps, channels=c, mean=mean, rstd=rstd,
                   batch_stats=True)

