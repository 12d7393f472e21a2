"""Fused optimizer updates, each written once: the seam for one kernel per parameter.

An optimizer's whole per-parameter update (weight decay, moments, bias correction, the
parameter write) is one function on arrays, attached to every device's array namespace
(``math_of(p.data).adam_update(...)``), in place and with as few temporaries as the
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

import functools

__all__ = ["adam_scalars", "attach", "UPDATES"]


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


def attach(math) -> None:
    """Give an array namespace the fused updates, written over its array module.

    A device with real fused kernels (CUDA, issue 4) replaces these attributes after
    this call; the optimizers only ever call ``math.sgd_update`` / ``math.adam_update``.
    """
    for name, fn in UPDATES.items():
        setattr(math, name, functools.partial(fn, math.xp))

