"""Fused optimizer updates, each written once: the seam for one kernel per parameter.

An optimizer's whole per-parameter update (weight decay, moments, bias correction, the
parameter write) is one function on arrays, attached to every device's array namespace
(``math_of(p._data).adam_update(...)``), in place and with as few temporaries as the
arithmetic allows (NumPy ufuncs with ``out=``).  The optimizers in :mod:`gradcore.optim`
never do the arithmetic themselves, so a device can swap in a single CUDA kernel per
parameter (issue 4) without touching them.

The functions follow PyTorch's single-tensor CPU update rules operation by operation, in
PyTorch's order, so results agree with PyTorch to the rounding of the dtype.  They are
not bit-identical: PyTorch's CPU kernels fuse some multiply-adds (``add`` with
``alpha``, ``lerp``, ``addcmul``) and its ``sqrt`` is not correctly rounded, while
NumPy rounds every step.

Per element, with ``g`` the gradient (negated when ``maximize``):

``sgd_update``::

    g = g + weight_decay * p                          (when weight_decay != 0)
    buf = g  on the first step, else
    buf = momentum * buf + (1 - dampening) * g        (when momentum != 0)
    g = g + momentum * buf  if nesterov  else  buf    (when momentum != 0)
    p = p - lr * g

``adam_update`` (scalars from :func:`adam_scalars`)::

    p = p * (1 - lr * weight_decay)                   (decoupled, AdamW)
    g = g + weight_decay * p                          (coupled, Adam)
    m = lerp(m, g, 1 - beta1)
    v = beta2 * v + (1 - beta2) * g * g
    vmax = max(vmax, v)                               (amsgrad; v below reads vmax)
    p = p - step_size * m / (sqrt(v) / bias_correction2_sqrt + eps)
"""

from __future__ import annotations

from .pointwise import CHUNK, sliced  # noqa: F401 (CHUNK: the slice size the updates use)
from .spec import Update

__all__ = ["adam_scalars", "UPDATES", "UPDATE_KERNELS", "sgd_kernel_scalars",
           "adam_kernel_scalars"]


def adam_scalars(step: int, lr: float, beta1: float, beta2: float) -> tuple[float, float]:
    """``(step_size, bias_correction2_sqrt)`` for Adam's ``step``-th update (from 1).

    Python float arithmetic in PyTorch's order (``torch.optim.adam._single_tensor_adam``),
    shared by every device so that a CUDA kernel receives the very same scalars.
    """
    bias_correction1 = 1 - beta1**step
    bias_correction2 = 1 - beta2**step
    step_size = lr / bias_correction1
    bias_correction2_sqrt = bias_correction2**0.5
    return step_size, bias_correction2_sqrt


def _sgd_update(xp, param, grad, momentum_buffer, *, lr, momentum=0.0, dampening=0.0,
                weight_decay=0.0, nesterov=False, maximize=False, first_step=False):
    """One SGD step for one parameter, in place on ``param`` and ``momentum_buffer``.

    ``grad`` is only read.  ``momentum_buffer`` (needed when ``momentum != 0``) is
    overwritten with the direction on the ``first_step``, as PyTorch's ``buf =
    grad.clone()``.  ``nesterov`` requires ``dampening == 0`` (the optimizer checks).
    """
    work = None  # the one parameter-sized temporary, made when first needed
    if weight_decay != 0:
        work = xp.multiply(param, weight_decay, out=xp.empty_like(param))
        if maximize:
            xp.subtract(work, grad, out=work)     # -g + wd * p
        else:
            xp.add(work, grad, out=work)          # g + wd * p
        d = work
    elif maximize:
        d = work = xp.negative(grad, out=xp.empty_like(param))
    else:
        d = grad

    if momentum != 0:
        buf = momentum_buffer
        if first_step:
            xp.copyto(buf, d)
        else:
            xp.multiply(buf, momentum, out=buf)
            if dampening == 0:
                xp.add(buf, d, out=buf)
            else:
                if work is None or nesterov:
                    scaled = xp.multiply(d, 1 - dampening, out=xp.empty_like(param))
                else:
                    scaled = xp.multiply(d, 1 - dampening, out=work)
                xp.add(buf, scaled, out=buf)
        if nesterov:
            step = xp.multiply(buf, momentum, out=xp.empty_like(param))
            xp.add(d, step, out=step)             # g + momentum * buf
            d = work = step
        else:
            d = buf

    if work is None:
        work = xp.multiply(d, -lr, out=xp.empty_like(param))
    else:
        xp.multiply(d, -lr, out=work)
    xp.add(param, work, out=param)


def _adam_update(xp, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq=None, *, step, lr,
                 beta1, beta2, eps, weight_decay=0.0, amsgrad=False, maximize=False,
                 decoupled_weight_decay=False):
    """One Adam (or AdamW, ``decoupled_weight_decay=True``) step for one parameter.

    In place on ``param``, ``exp_avg``, ``exp_avg_sq`` and (``amsgrad``)
    ``max_exp_avg_sq``; ``grad`` is only read; ``step`` counts this update (1 first).
    At most two parameter-sized temporaries.
    """
    if weight_decay != 0 and not decoupled_weight_decay:
        g = xp.multiply(param, weight_decay, out=xp.empty_like(param))
        if maximize:
            xp.subtract(g, grad, out=g)                   # -grad + wd * p
        else:
            xp.add(g, grad, out=g)                        # grad + wd * p
    else:
        g = xp.negative(grad, out=xp.empty_like(param)) if maximize else grad
        if weight_decay != 0:
            xp.multiply(param, 1 - lr * weight_decay, out=param)

    # v = beta2 * v + ((1 - beta2) * g) * g   (PyTorch: mul_(beta2).addcmul_(g, g, 1 - beta2))
    tmp = xp.multiply(g, 1 - beta2, out=xp.empty_like(param))
    xp.multiply(tmp, g, out=tmp)
    xp.multiply(exp_avg_sq, beta2, out=exp_avg_sq)
    xp.add(exp_avg_sq, tmp, out=exp_avg_sq)

    # m = lerp(m, g, 1 - beta1), with PyTorch's two branches for a small or large weight
    weight = 1 - beta1
    xp.subtract(g, exp_avg, out=tmp)                  # g - m
    if abs(weight) < 0.5:
        xp.multiply(tmp, weight, out=tmp)
        xp.add(exp_avg, tmp, out=exp_avg)             # m + w * (g - m)
    else:
        one = param.dtype.type(1)  # PyTorch forms 1 - w in the tensor's arithmetic type
        xp.multiply(tmp, one - param.dtype.type(weight), out=tmp)
        xp.subtract(g, tmp, out=exp_avg)              # g - (g - m) * (1 - w)

    step_size, bias_correction2_sqrt = adam_scalars(step, lr, beta1, beta2)
    if amsgrad:
        xp.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
        second = max_exp_avg_sq
    else:
        second = exp_avg_sq
    denom = tmp
    xp.sqrt(second, out=denom)
    xp.divide(denom, bias_correction2_sqrt, out=denom)
    xp.add(denom, eps, out=denom)

    # p = p + ((-step_size) * m) / denom   (PyTorch: addcdiv_(m, denom, value=-step_size))
    if g is grad:
        upd = xp.multiply(exp_avg, -step_size, out=xp.empty_like(param))
    else:
        upd = xp.multiply(exp_avg, -step_size, out=g)
    xp.divide(upd, denom, out=upd)
    xp.add(param, upd, out=param)


UPDATES = {
    "sgd_update": _sgd_update,
    "adam_update": _adam_update,
}

# ---- the same updates as single kernels (one launch per parameter on CUDA) -------------
# Flags are numbers (0 or 1) and every derived scalar (1 - dampening, -lr, ...) is formed
# on the host in Python floats, as the NumPy functions above form them, so the kernel
# does the very operations of the NumPy function in the same order (tests compare them
# on the same inputs through the host build of the kernels).
_SGD_DIRECTION = ("d", "where(wd != 0, where(maximize != 0, p * wd - g, p * wd + g), "
                       "where(maximize != 0, -g, g))")
_ADAM_GRAD = ("g", "where(coupled != 0, where(maximize != 0, p * wd - g, p * wd + g), "
                   "where(maximize != 0, -g, g))")
_ADAM_MOMENTS = (
    ("p", "where(decay != 0, p * decay_factor, p)"),
    ("v", "v * beta2 + g * one_minus_beta2 * g"),
    ("m", "where(small_weight != 0, m + (g - m) * weight, g - (g - m) * one_minus_weight)"),
)
_ADAM_SCALARS = ("coupled", "wd", "maximize", "decay", "decay_factor", "beta2",
                 "one_minus_beta2", "small_weight", "weight", "one_minus_weight",
                 "neg_step_size", "bias_correction2_sqrt", "eps")

UPDATE_KERNELS = {k.name: k for k in [
    Update("sgd_step", ("p", "g"), (_SGD_DIRECTION, ("p", "p + d * neg_lr")),
           writes=("p",), scalars=("neg_lr", "wd", "maximize")),
    Update("sgd_momentum_step", ("p", "g", "buf"), (
        _SGD_DIRECTION,
        ("buf", "where(first != 0, d, where(no_dampening != 0, buf * momentum + d, "
                "buf * momentum + d * one_minus_dampening))"),
        ("d", "where(nesterov != 0, d + buf * momentum, buf)"),
        ("p", "p + d * neg_lr"),
    ), writes=("p", "buf"), scalars=("neg_lr", "wd", "maximize", "momentum", "first",
                                     "no_dampening", "one_minus_dampening", "nesterov")),
    Update("adam_step", ("p", "g", "m", "v"), (
        _ADAM_GRAD, *_ADAM_MOMENTS,
        ("p", "p + m * neg_step_size / (sqrt(v) / bias_correction2_sqrt + eps)"),
    ), writes=("p", "m", "v"), scalars=_ADAM_SCALARS),
    Update("adam_amsgrad_step", ("p", "g", "m", "v", "vmax"), (
        _ADAM_GRAD, *_ADAM_MOMENTS,
        ("vmax", "maximum(vmax, v)"),
        ("p", "p + m * neg_step_size / (sqrt(vmax) / bias_correction2_sqrt + eps)"),
    ), writes=("p", "m", "v", "vmax"), scalars=_ADAM_SCALARS),
]}


def sgd_kernel_scalars(*, lr, momentum=0.0, dampening=0.0, weight_decay=0.0,
                       nesterov=False, maximize=False, first_step=False) -> tuple:
    """The scalars of ``sgd_step`` (``momentum == 0``) or ``sgd_momentum_step``."""
    head = (-lr, weight_decay, float(maximize))
    if momentum == 0:
        return head
    return head + (momentum, float(first_step), float(dampening == 0), 1 - dampening,
                   float(nesterov))


def adam_kernel_scalars(dtype, *, step, lr, beta1, beta2, eps, weight_decay=0.0,
                        maximize=False, decoupled_weight_decay=False) -> tuple:
    """The scalars of ``adam_step`` / ``adam_amsgrad_step`` for parameters of ``dtype``."""
    decoupled = weight_decay != 0 and decoupled_weight_decay
    coupled = weight_decay != 0 and not decoupled_weight_decay
    weight = 1 - beta1
    # PyTorch forms 1 - weight in the parameter's dtype (see _adam_update)
    one_minus_weight = float(dtype.type(1) - dtype.type(weight))
    step_size, bias_correction2_sqrt = adam_scalars(step, lr, beta1, beta2)
    return (float(coupled), weight_decay, float(maximize), float(decoupled),
            1 - lr * weight_decay, beta2, 1 - beta2, float(abs(weight) < 0.5), weight,
            one_minus_weight, -step_size, bias_correction2_sqrt, eps)


def _contiguous(xp, a):
    return a if a.flags.c_contiguous else xp.ascontiguousarray(a)


def _sgd_update_kernel(math, param, grad, momentum_buffer, *, lr, momentum=0.0,
                       dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False,
                       first_step=False):
    scalars = sgd_kernel_scalars(lr=lr, momentum=momentum, dampening=dampening,
                                 weight_decay=weight_decay, nesterov=nesterov,
                                 maximize=maximize, first_step=first_step)
    grad = _contiguous(math.xp, grad.astype(param.dtype, copy=False))
    if momentum == 0:
        math.sgd_step(param, grad, *scalars)
    else:
        math.sgd_momentum_step(param, grad, momentum_buffer, *scalars)


def _adam_update_kernel(math, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq=None, *,
                        step, lr, beta1, beta2, eps, weight_decay=0.0, amsgrad=False,
                        maximize=False, decoupled_weight_decay=False):
    scalars = adam_kernel_scalars(param.dtype, step=step, lr=lr, beta1=beta1, beta2=beta2,
                                  eps=eps, weight_decay=weight_decay, maximize=maximize,
                                  decoupled_weight_decay=decoupled_weight_decay)
    grad = _contiguous(math.xp, grad.astype(param.dtype, copy=False))
    if amsgrad:
        math.adam_amsgrad_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, *scalars)
    else:
        math.adam_step(param, grad, exp_avg, exp_avg_sq, *scalars)
