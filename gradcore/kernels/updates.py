"""The optimizers' updates, each declared once: one ``Update`` drives the CPU and CUDA.

An optimizer's whole per-parameter update (weight decay, moments, bias correction, the
parameter write) is one :class:`~.spec.Update` declaration per set of state arrays
(``sgd_step`` and ``sgd_momentum_step``, ``adam_step`` and ``adam_amsgrad_step``,
``rmsprop_step`` and its momentum and centered forms, ``adagrad_step``,
``adadelta_step``, ``adamax_step``, ``nadam_step``, ``radam_step``, ``rprop_step``,
``asgd_step``), and one entry per
optimizer (:func:`sgd_update`, :func:`adam_update`, :func:`rmsprop_update`, ...) that
forms the declaration's scalars on the host and calls the step. The optimizers in
:mod:`gradcore.optim` call the entry on their parameter's array namespace
(``math_of(p._data).adam_update(...)``), never doing the arithmetic themselves. From
the one declaration come

* on CUDA, one kernel launch per parameter (:mod:`.source`, :mod:`.device`);
* on the CPU, NumPy code generated from the body (:func:`inplace_source`): ufuncs with
  ``out=`` into the arrays of ``writes`` and into scratch buffers reused once their
  value is dead, the flags (``where(flag != 0, A, B)`` with a condition on scalars
  only) decided when the code is made, one function per combination of them, run a
  cache-sized slice at a time on large parameters;
* :data:`UPDATES`, the same update composed naively from array-module calls (one
  temporary per operation, both branches of every ``where``), which the benchmarks
  and tests compare against.

The declarations follow PyTorch's single-tensor CPU update rules operation by
operation, in PyTorch's order, so results agree with PyTorch to the rounding of the
dtype. They are not bit-identical: PyTorch's CPU kernels fuse some multiply-adds
(``add`` with ``alpha``, ``lerp``, ``addcmul``) and its ``sqrt`` is not correctly
rounded, while NumPy and the kernels round every step. Every derived number
(``1 - beta2``, ``-lr``, the bias corrections) is formed on the host in Python floats
(:func:`sgd_kernel_scalars`, :func:`adam_kernel_scalars`, ...), so every device does the
very same operations. What PyTorch decides per step from the step count alone (RAdam's
rectification, ``rho_t > 5``) is decided there too, as a flag.

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

``rmsprop_update`` (``g`` weight-decayed, as SGD's)::

    sq = alpha * sq + (1 - alpha) * g * g
    ga = lerp(ga, g, 1 - alpha); avg = sqrt(sq - ga * ga) + eps    (centered)
    avg = sqrt(sq) + eps                                           (otherwise)
    buf = momentum * buf + g / avg; p = p - lr * buf               (momentum > 0)
    p = p - lr * g / avg                                           (otherwise)

``adagrad_update`` (``clr = lr / (1 + (step - 1) * lr_decay)``)::

    sum = sum + g * g
    p = p - clr * g / (sqrt(sum) + eps)

``adadelta_update``::

    sq = rho * sq + (1 - rho) * g * g
    delta = sqrt(acc + eps) / sqrt(sq + eps) * g
    acc = rho * acc + (1 - rho) * delta * delta
    p = p - lr * delta

``adamax_update`` (``clr = lr / (1 - beta1 ** step)``)::

    m = lerp(m, g, 1 - beta1)
    u = max(beta2 * u, |g| + eps)
    p = p - clr * m / u

``nadam_update`` (``mu_t``, their running product ``mu_product`` and the coefficients
from :func:`nadam_kernel_scalars`; weight decay as Adam's or AdamW's)::

    m, v as Adam's
    denom = sqrt(v / (1 - beta2 ** step)) + eps
    p = p - lr * (1 - mu_t) / (1 - mu_product) * g / denom
    p = p - lr * mu_next / (1 - mu_product * mu_next) * m / denom

``radam_update`` (``rho_t`` and the rectification ``r_t`` from
:func:`radam_kernel_scalars`; weight decay as Adam's or AdamW's)::

    m, v as Adam's
    p = p - m / (1 - beta1 ** step) * lr * (1 / (sqrt(v) + eps) * sqrt(1 - beta2 ** step)) * r_t
                                                                   (rho_t > 5)
    p = p - m / (1 - beta1 ** step) * lr                           (otherwise)

``rprop_update`` (``g`` negated when ``maximize``; no weight decay)::

    s = etaplus if g * prev > 0, etaminus if g * prev < 0, else 1
    step_size = min(max(step_size * s, step_size_min), step_size_max)
    g = 0 where s == etaminus
    p = p - sign(g) * step_size
    prev = g

``asgd_update`` (``eta`` and ``mu`` the state's, as float32 numbers; ``g``
weight-decayed, as SGD's)::

    p = p * (1 - lambd * eta)
    p = p - eta * g
    ax = ax + (p - ax) * mu     (mu != 1; otherwise ax = p)
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect

import numpy as np

from .numpy_code import emit, is_where, linearize
from .pointwise import CHUNK, where_of  # (CHUNK: the slice size of the CPU updates)
from .spec import Update

__all__ = ["UPDATE_KERNELS", "DEVICE_SCALAR_UPDATES", "MULTI_TENSOR_UPDATES", "ROW_WIDTH",
           "SKIP_COLUMN", "ENTRIES", "UPDATES", "sgd_update",
           "adam_update", "rmsprop_update", "adagrad_update", "adadelta_update", "adamax_update",
           "nadam_update", "radam_update", "rprop_update", "asgd_update", "adam_scalars",
           "sgd_kernel_scalars",
           "adam_kernel_scalars", "rmsprop_kernel_scalars", "adagrad_kernel_scalars",
           "adadelta_kernel_scalars", "adamax_kernel_scalars", "nadam_kernel_scalars",
           "nadam_mu_product", "radam_kernel_scalars", "radam_rho", "rprop_kernel_scalars",
           "asgd_kernel_scalars", "asgd_schedule", "inplace_step",
           "inplace_source", "host_conditions", "CHUNK"]


# ---- the declarations: the only formulas ------------------------------------------------
# Flags are numbers (0 or 1) read as where(flag != 0, ...); the generated CPU code
# decides them when it is made, a CUDA kernel when it runs.
def _lerp(x: str, end: str) -> tuple[str, str]:
    """``x.lerp_(end, weight)`` as PyTorch's kernel computes it: from ``x`` for weights
    below one half, from ``end`` otherwise (scalars ``small_weight``, ``weight``,
    ``one_minus_weight``: :func:`_lerp_scalars`)."""
    return (x, f"where(small_weight != 0, {x} + ({end} - {x}) * weight, "
               f"{end} - ({end} - {x}) * one_minus_weight)")


_LERP_SCALARS = ("small_weight", "weight", "one_minus_weight")
# the gradient, negated (maximize) and weight-decayed (grad + weight_decay * param)
_DECAYED = "where(wd != 0, where(maximize != 0, p * wd - g, p * wd + g), " \
           "where(maximize != 0, -g, g))"
_SGD_DIRECTION = ("d", _DECAYED)
_DECAYED_GRAD = ("g", _DECAYED)
_DECAYED_SCALARS = ("wd", "maximize")
# Adam's and its kin's: the coupled decay (Adam) on the gradient, or the decoupled one
# (AdamW) on the parameter; the two moments
_ADAM_GRAD = ("g", "where(coupled != 0, where(maximize != 0, p * wd - g, p * wd + g), "
                   "where(maximize != 0, -g, g))")
_ADAM_DECAY = ("p", "where(decay != 0, p * decay_factor, p)")
_ADAM_MOMENTS = (
    _ADAM_DECAY,
    ("v", "v * beta2 + g * one_minus_beta2 * g"),
    _lerp("m", "g"),
)
_ADAM_SCALARS = ("coupled", "wd", "maximize", "decay", "decay_factor", "beta2",
                 "one_minus_beta2", *_LERP_SCALARS, "neg_step_size",
                 "bias_correction2_sqrt", "eps")
_ADAM_KIN_SCALARS = ("coupled", "wd", "maximize", "decay", "decay_factor", "beta2",
                     "one_minus_beta2", *_LERP_SCALARS)
# RMSprop's parts: the square average, its root (centered: less the squared mean
# gradient), and the step with or without a momentum buffer
_RMSPROP_SQ = ("sq", "sq * alpha + g * one_minus_alpha * g")
_RMSPROP_AVG = ("avg", "sqrt(sq) + eps")
_RMSPROP_CENTERED = (_lerp("ga", "g"), ("avg", "sqrt(sq - ga * ga) + eps"))
_RMSPROP_DIRECT = ("p", "p + g * neg_lr / avg")
_RMSPROP_MOMENTUM = (("buf", "buf * momentum + g / avg"), ("p", "p + buf * neg_lr"))
_RMSPROP_SCALARS = ("neg_lr", *_DECAYED_SCALARS, "alpha", "one_minus_alpha", "eps")

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
    Update("rmsprop_step", ("p", "g", "sq"), (
        _DECAYED_GRAD, _RMSPROP_SQ, _RMSPROP_AVG, _RMSPROP_DIRECT,
    ), writes=("p", "sq"), scalars=_RMSPROP_SCALARS),
    Update("rmsprop_momentum_step", ("p", "g", "sq", "buf"), (
        _DECAYED_GRAD, _RMSPROP_SQ, _RMSPROP_AVG, *_RMSPROP_MOMENTUM,
    ), writes=("p", "sq", "buf"), scalars=(*_RMSPROP_SCALARS, "momentum")),
    Update("rmsprop_centered_step", ("p", "g", "sq", "ga"), (
        _DECAYED_GRAD, _RMSPROP_SQ, *_RMSPROP_CENTERED, _RMSPROP_DIRECT,
    ), writes=("p", "sq", "ga"), scalars=(*_RMSPROP_SCALARS, *_LERP_SCALARS)),
    Update("rmsprop_centered_momentum_step", ("p", "g", "sq", "buf", "ga"), (
        _DECAYED_GRAD, _RMSPROP_SQ, *_RMSPROP_CENTERED, *_RMSPROP_MOMENTUM,
    ), writes=("p", "sq", "buf", "ga"),
        scalars=(*_RMSPROP_SCALARS, *_LERP_SCALARS, "momentum")),
    Update("adagrad_step", ("p", "g", "sum_sq"), (
        _DECAYED_GRAD,
        ("sum_sq", "sum_sq + g * g"),
        ("p", "p + g * neg_clr / (sqrt(sum_sq) + eps)"),
    ), writes=("p", "sum_sq"), scalars=("neg_clr", *_DECAYED_SCALARS, "eps")),
    Update("adadelta_step", ("p", "g", "sq", "acc"), (
        _DECAYED_GRAD,
        ("sq", "sq * rho + g * one_minus_rho * g"),
        ("delta", "sqrt(acc + eps) / sqrt(sq + eps) * g"),
        ("acc", "acc * rho + delta * one_minus_rho * delta"),
        ("p", "p + delta * neg_lr"),
    ), writes=("p", "sq", "acc"),
        scalars=("neg_lr", *_DECAYED_SCALARS, "rho", "one_minus_rho", "eps")),
    Update("adamax_step", ("p", "g", "m", "u"), (
        _DECAYED_GRAD,
        _lerp("m", "g"),
        ("u", "maximum(u * beta2, maximum(g, -g) + eps)"),  # maximum(g, -g): |g|
        ("p", "p + m * neg_clr / u"),
    ), writes=("p", "m", "u"),
        scalars=("neg_clr", *_DECAYED_SCALARS, *_LERP_SCALARS, "beta2", "eps")),
    Update("nadam_step", ("p", "g", "m", "v"), (
        _ADAM_GRAD, *_ADAM_MOMENTS,
        ("denom", "sqrt(v / bias_correction2) + eps"),
        ("p", "p + g * grad_coef / denom"),
        ("p", "p + m * avg_coef / denom"),
    ), writes=("p", "m", "v"),
        scalars=(*_ADAM_KIN_SCALARS, "bias_correction2", "eps", "grad_coef", "avg_coef")),
    Update("radam_step", ("p", "g", "m", "v"), (
        _ADAM_GRAD, *_ADAM_MOMENTS,
        ("m_hat", "m / bias_correction1 * lr"),
        ("p", "where(rectify != 0, "
              "p - m_hat * (1 / (sqrt(v) + eps) * bias_correction2_sqrt) * rect, "
              "p - m_hat)"),
    ), writes=("p", "m", "v"),
        scalars=(*_ADAM_KIN_SCALARS, "bias_correction1", "lr", "rectify",
                 "bias_correction2_sqrt", "eps", "rect")),
    Update("rprop_step", ("p", "g", "prev", "step_size"), (
        ("g", "where(maximize != 0, -g, g)"),
        ("s", "g * prev"),
        # step_size * (etaplus, etaminus or 1 by the sign of s), then clamp_(min, max);
        # a NaN s or g counts as zero, as PyTorch's sign() of NaN is 0
        ("step_size", "where(s > 0, step_size * etaplus, "
                      "where(s < 0, step_size * etaminus, step_size))"),
        ("step_size", "maximum(step_size, step_size_min)"),
        ("step_size", "where(step_size > step_size_max, step_size_max, step_size)"),
        ("g", "where(s < 0, 0, g)"),  # PyTorch's sign == etaminus (0 < etaminus < 1)
        ("p", "p - where(g > 0, step_size, where(g < 0, -step_size, 0))"),  # sign(g)
        ("prev", "g"),
    ), writes=("p", "prev", "step_size"),
        scalars=("maximize", "etaminus", "etaplus", "step_size_min", "step_size_max")),
    Update("asgd_step", ("p", "g", "ax"), (
        _DECAYED_GRAD,
        ("p", "p * decay"),
        ("p", "p + g * neg_eta"),
        ("ax", "where(average != 0, ax + (p - ax) * mu, p)"),
    ), writes=("p", "ax"), scalars=(*_DECAYED_SCALARS, "decay", "neg_eta", "average", "mu")),
]}


# ---- the scalars, formed once for every device ---------------------------------------
def adam_scalars(step: int, lr: float, beta1: float, beta2: float) -> tuple[float, float]:
    """``(step_size, bias_correction2_sqrt)`` for Adam's ``step``-th update (from 1).

    Python float arithmetic in PyTorch's order (``torch.optim.adam._single_tensor_adam``).
    """
    bias_correction1 = 1 - beta1**step
    bias_correction2 = 1 - beta2**step
    step_size = lr / bias_correction1
    bias_correction2_sqrt = bias_correction2**0.5
    return step_size, bias_correction2_sqrt


#: SGD's and Adam's steps reading their scalars from device memory (``<step>_dev``): what
#: the optimizers launch on a CUDA device, where the scalars are copied from the host
#: before each step (eagerly) or each launch of a CUDA graph that captured it. The same
#: body, so the same bits as the step by value. A kernel reads its scalars from one row
#: of ``ROW_WIDTH`` values; a nonzero value in column ``SKIP_COLUMN`` makes it leave its
#: arrays as they are (a step ``GradScaler`` skips, decided on the device).
ROW_WIDTH = 16
SKIP_COLUMN = ROW_WIDTH - 1
DEVICE_SCALAR_UPDATES = {f"{n}_dev": dataclasses.replace(UPDATE_KERNELS[n], name=f"{n}_dev",
                                                         device_scalars=True)
                         for n in ("sgd_step", "sgd_momentum_step", "adam_step",
                                   "adam_amsgrad_step")}
assert all(len(k.scalars) < SKIP_COLUMN for k in DEVICE_SCALAR_UPDATES.values())

#: The same steps over all the parameters of a dtype in one launch (``<step>_multi``,
#: as PyTorch's ``fused=True``): the kernel walks the concatenation of the tensors, each
#: with its own arrays (a table of addresses) and its own row of scalars.
MULTI_TENSOR_UPDATES = {f"{n}_multi": dataclasses.replace(k, name=f"{n}_multi",
                                                          multi_tensor=True)
                        for n, k in ((n[:-len("_dev")], k)
                                     for n, k in DEVICE_SCALAR_UPDATES.items())}


def sgd_kernel_scalars(lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
                       maximize=False, first_step=False) -> tuple:
    """The scalars of ``sgd_step`` (``momentum == 0``) or ``sgd_momentum_step``."""
    head = (-lr, weight_decay, float(maximize))
    if momentum == 0:
        return head
    return head + (momentum, float(first_step), float(dampening == 0), 1 - dampening,
                   float(nesterov))


@functools.lru_cache(maxsize=64)
def _one_minus_in(dtype, weight: float) -> float:
    # PyTorch forms 1 - weight (lerp's second branch) in the tensor's arithmetic type
    return float(dtype.type(1) - dtype.type(weight))


def _lerp_scalars(dtype, weight: float) -> tuple[float, float, float]:
    """The scalars of :func:`_lerp` for ``weight``."""
    return float(abs(weight) < 0.5), weight, _one_minus_in(dtype, weight)


def _adam_kin_scalars(dtype, lr, beta1, beta2, weight_decay, maximize,
                      decoupled_weight_decay) -> tuple:
    """The scalars of the weight decay and the moments (``_ADAM_KIN_SCALARS``)."""
    decoupled = weight_decay != 0 and decoupled_weight_decay
    coupled = weight_decay != 0 and not decoupled_weight_decay
    return (float(coupled), weight_decay, float(maximize), float(decoupled),
            1 - lr * weight_decay, beta2, 1 - beta2, *_lerp_scalars(dtype, 1 - beta1))


def adam_kernel_scalars(dtype, step, lr, beta1, beta2, eps, weight_decay=0.0,
                        maximize=False, decoupled_weight_decay=False) -> tuple:
    """The scalars of ``adam_step`` / ``adam_amsgrad_step`` for parameters of ``dtype``."""
    step_size, bias_correction2_sqrt = adam_scalars(step, lr, beta1, beta2)
    return (*_adam_kin_scalars(dtype, lr, beta1, beta2, weight_decay, maximize,
                               decoupled_weight_decay),
            -step_size, bias_correction2_sqrt, eps)


def rmsprop_kernel_scalars(dtype, lr, alpha, eps, weight_decay=0.0, momentum=0.0,
                           centered=False, maximize=False) -> tuple:
    """The scalars of ``rmsprop_step`` and its momentum (``momentum > 0``) and centered
    forms for parameters of ``dtype``."""
    scalars = (-lr, weight_decay, float(maximize), alpha, 1 - alpha, eps)
    if centered:
        scalars += _lerp_scalars(dtype, 1 - alpha)
    if momentum > 0:
        scalars += (momentum,)
    return scalars


def adagrad_kernel_scalars(step, lr, eps, weight_decay=0.0, lr_decay=0.0,
                           maximize=False) -> tuple:
    """The scalars of ``adagrad_step`` for its ``step``-th update (from 1): the rate
    decayed as PyTorch's ``clr = lr / (1 + (step - 1) * lr_decay)``."""
    clr = lr / (1 + (step - 1) * lr_decay)
    return (-clr, weight_decay, float(maximize), eps)


def adadelta_kernel_scalars(lr, rho, eps, weight_decay=0.0, maximize=False) -> tuple:
    """The scalars of ``adadelta_step``."""
    return (-lr, weight_decay, float(maximize), rho, 1 - rho, eps)


def adamax_kernel_scalars(dtype, step, lr, beta1, beta2, eps, weight_decay=0.0,
                          maximize=False) -> tuple:
    """The scalars of ``adamax_step`` for its ``step``-th update (from 1) for parameters
    of ``dtype``: the rate bias-corrected as PyTorch's ``lr / (1 - beta1 ** step)``."""
    clr = lr / (1 - beta1**step)
    return (-clr, weight_decay, float(maximize), *_lerp_scalars(dtype, 1 - beta1), beta2,
            eps)


def _nadam_mu(step, beta1, momentum_decay) -> float:
    """NAdam's momentum coefficient ``mu_step``, as PyTorch forms it."""
    return beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))


def nadam_mu_product(mu_product: float, step: int, beta1: float,
                     momentum_decay: float) -> float:
    """NAdam's running product of the momentum coefficients after the ``step``-th update
    (from 1), from the product before it (1.0 at the start).

    PyTorch keeps the product in a float32 tensor (the optimizers' scalar dtype while
    the default dtype is float32, as gradcore's always is), so every product is rounded
    to float32, as PyTorch's ``mu_product *= mu`` is.
    """
    mu = _nadam_mu(step, beta1, momentum_decay)
    return float(np.float32(mu_product) * np.float32(mu))


def nadam_kernel_scalars(dtype, step, mu_product, lr, beta1, beta2, eps, weight_decay=0.0,
                         momentum_decay=4e-3, maximize=False,
                         decoupled_weight_decay=False) -> tuple:
    """The scalars of ``nadam_step`` for its ``step``-th update (from 1) for parameters
    of ``dtype``; ``mu_product``: :func:`nadam_mu_product` after this step.

    PyTorch's order (``torch.optim.nadam._single_tensor_nadam``)::

        mu = beta1 * (1 - 0.5 * 0.96 ** (step * momentum_decay))
        mu_next = beta1 * (1 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
        grad_coef = -lr * (1 - mu) / (1 - mu_product)
        avg_coef = (-lr * mu_next) / (1 - mu_product * mu_next)
    """
    bias_correction2 = 1 - beta2**step
    mu = _nadam_mu(step, beta1, momentum_decay)
    mu_next = _nadam_mu(step + 1, beta1, momentum_decay)
    mu_product_next = mu_product * mu_next
    grad_coef = -lr * (1.0 - mu) / (1.0 - mu_product)
    avg_coef = (-lr * mu_next) / (1.0 - mu_product_next)
    return (*_adam_kin_scalars(dtype, lr, beta1, beta2, weight_decay, maximize,
                               decoupled_weight_decay),
            bias_correction2, eps, grad_coef, avg_coef)


def radam_rho(step: int, beta2: float) -> tuple[float, float]:
    """RAdam's ``(rho_inf, rho_t)``: the maximum and the ``step``-th length of the
    approximated simple moving average (``rho_t > 5`` rectifies the update)."""
    bias_correction2 = 1 - beta2**step
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
    return rho_inf, rho_t


def radam_kernel_scalars(dtype, step, lr, beta1, beta2, eps, weight_decay=0.0,
                         maximize=False, decoupled_weight_decay=False) -> tuple:
    """The scalars of ``radam_step`` for its ``step``-th update (from 1) for parameters
    of ``dtype``.

    Whether the step is rectified (``rho_t > 5``, :func:`radam_rho`) depends on the
    step count alone: it is decided here, as PyTorch's single-tensor RAdam decides it in
    Python, and passed as the flag ``rectify``.
    """
    bias_correction1 = 1 - beta1**step
    bias_correction2 = 1 - beta2**step
    rho_inf, rho_t = radam_rho(step, beta2)
    rectify = rho_t > 5.0
    rect = 0.0
    if rectify:
        rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
    return (*_adam_kin_scalars(dtype, lr, beta1, beta2, weight_decay, maximize,
                               decoupled_weight_decay),
            bias_correction1, lr, float(rectify), bias_correction2**0.5, eps, rect)


def rprop_kernel_scalars(etaminus, etaplus, step_size_min, step_size_max,
                         maximize=False) -> tuple:
    """The scalars of ``rprop_step``."""
    return (float(maximize), etaminus, etaplus, step_size_min, step_size_max)


def asgd_kernel_scalars(eta, mu, lambd, weight_decay=0.0, maximize=False) -> tuple:
    """The scalars of ``asgd_step`` from the state's ``eta`` and ``mu`` (the values
    PyTorch reads from its float32 0-d tensors): the decay ``1 - lambd * eta`` and
    the averaging, by ``mu`` or (``mu == 1``) a copy, decided here as PyTorch decides
    it in Python."""
    return (weight_decay, float(maximize), 1 - lambd * eta, -eta, float(mu != 1), mu)


def asgd_schedule(step: int, lr: float, lambd: float, alpha: float,
                  t0: float) -> tuple[float, float]:
    """ASGD's ``(eta, mu)`` after its ``step``-th update, rounded to float32 as
    PyTorch's ``eta.copy_(torch.as_tensor(lr / (1 + lambd * lr * step) ** alpha))``
    and ``mu.copy_(torch.as_tensor(1 / max(1, step - t0)))`` store them."""
    eta = lr / ((1 + lambd * lr * step) ** alpha)
    mu = 1 / max(1, step - t0)
    return float(np.float32(eta)), float(np.float32(mu))


# ---- the entries the optimizers call -------------------------------------------------
def sgd_update(steps, param, grad, momentum_buffer, *, lr, momentum=0.0, dampening=0.0,
               weight_decay=0.0, nesterov=False, maximize=False, first_step=False):
    """One SGD step for one parameter, in place on ``param`` and ``momentum_buffer``:
    ``steps.sgd_step`` or ``steps.sgd_momentum_step`` (``steps``: an array namespace).

    ``grad`` is only read.  ``momentum_buffer`` (needed when ``momentum != 0``) is
    overwritten with the direction on the ``first_step``, as PyTorch's ``buf =
    grad.clone()``.  ``nesterov`` requires ``dampening == 0`` (the optimizer checks).
    """
    scalars = sgd_kernel_scalars(lr, momentum, dampening, weight_decay, nesterov, maximize,
                                 first_step)
    if momentum == 0:
        steps.sgd_step(param, grad, *scalars)
    else:
        steps.sgd_momentum_step(param, grad, momentum_buffer, *scalars)


def adam_update(steps, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq=None, *, step, lr,
                beta1, beta2, eps, weight_decay=0.0, amsgrad=False, maximize=False,
                decoupled_weight_decay=False):
    """One Adam (or AdamW, ``decoupled_weight_decay=True``) step for one parameter:
    ``steps.adam_step`` or ``steps.adam_amsgrad_step``.

    In place on ``param``, ``exp_avg``, ``exp_avg_sq`` and (``amsgrad``)
    ``max_exp_avg_sq``; ``grad`` is only read; ``step`` counts this update (1 first).
    """
    scalars = adam_kernel_scalars(param.dtype, step, lr, beta1, beta2, eps, weight_decay,
                                  maximize, decoupled_weight_decay)
    if amsgrad:
        steps.adam_amsgrad_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, *scalars)
    else:
        steps.adam_step(param, grad, exp_avg, exp_avg_sq, *scalars)


def rmsprop_update(steps, param, grad, square_avg, momentum_buffer=None, grad_avg=None, *,
                   lr, alpha, eps, weight_decay=0.0, momentum=0.0, centered=False,
                   maximize=False):
    """One RMSprop step for one parameter: ``steps.rmsprop_step``, or its
    ``_momentum``, ``_centered`` or ``_centered_momentum`` form.

    In place on ``param``, ``square_avg``, ``momentum_buffer`` (needed when
    ``momentum > 0``) and ``grad_avg`` (needed when ``centered``); ``grad`` is only read.
    """
    scalars = rmsprop_kernel_scalars(param.dtype, lr, alpha, eps, weight_decay, momentum,
                                     centered, maximize)
    if centered and momentum > 0:
        steps.rmsprop_centered_momentum_step(param, grad, square_avg, momentum_buffer,
                                             grad_avg, *scalars)
    elif centered:
        steps.rmsprop_centered_step(param, grad, square_avg, grad_avg, *scalars)
    elif momentum > 0:
        steps.rmsprop_momentum_step(param, grad, square_avg, momentum_buffer, *scalars)
    else:
        steps.rmsprop_step(param, grad, square_avg, *scalars)


def adagrad_update(steps, param, grad, state_sum, *, step, lr, eps, weight_decay=0.0,
                   lr_decay=0.0, maximize=False):
    """One Adagrad step for one parameter (``steps.adagrad_step``), in place on ``param``
    and ``state_sum``; ``grad`` is only read; ``step`` counts this update (1 first)."""
    steps.adagrad_step(param, grad, state_sum,
                       *adagrad_kernel_scalars(step, lr, eps, weight_decay, lr_decay,
                                               maximize))


def adadelta_update(steps, param, grad, square_avg, acc_delta, *, lr, rho, eps,
                    weight_decay=0.0, maximize=False):
    """One Adadelta step for one parameter (``steps.adadelta_step``), in place on
    ``param``, ``square_avg`` and ``acc_delta``; ``grad`` is only read."""
    steps.adadelta_step(param, grad, square_avg, acc_delta,
                        *adadelta_kernel_scalars(lr, rho, eps, weight_decay, maximize))


def adamax_update(steps, param, grad, exp_avg, exp_inf, *, step, lr, beta1, beta2, eps,
                  weight_decay=0.0, maximize=False):
    """One Adamax step for one parameter (``steps.adamax_step``), in place on ``param``,
    ``exp_avg`` and ``exp_inf``; ``grad`` is only read; ``step`` counts this update."""
    steps.adamax_step(param, grad, exp_avg, exp_inf,
                      *adamax_kernel_scalars(param.dtype, step, lr, beta1, beta2, eps,
                                             weight_decay, maximize))


def nadam_update(steps, param, grad, exp_avg, exp_avg_sq, *, step, mu_product, lr, beta1,
                 beta2, eps, weight_decay=0.0, momentum_decay=4e-3, maximize=False,
                 decoupled_weight_decay=False):
    """One NAdam step for one parameter (``steps.nadam_step``), in place on ``param``,
    ``exp_avg`` and ``exp_avg_sq``; ``grad`` is only read; ``step`` counts this update
    and ``mu_product`` is the product of the momentum coefficients up to it
    (:func:`nadam_mu_product`, which the optimizer keeps)."""
    steps.nadam_step(param, grad, exp_avg, exp_avg_sq,
                     *nadam_kernel_scalars(param.dtype, step, mu_product, lr, beta1, beta2,
                                           eps, weight_decay, momentum_decay, maximize,
                                           decoupled_weight_decay))


def radam_update(steps, param, grad, exp_avg, exp_avg_sq, *, step, lr, beta1, beta2, eps,
                 weight_decay=0.0, maximize=False, decoupled_weight_decay=False):
    """One RAdam step for one parameter (``steps.radam_step``), in place on ``param``,
    ``exp_avg`` and ``exp_avg_sq``; ``grad`` is only read; ``step`` counts this update."""
    steps.radam_step(param, grad, exp_avg, exp_avg_sq,
                     *radam_kernel_scalars(param.dtype, step, lr, beta1, beta2, eps,
                                           weight_decay, maximize, decoupled_weight_decay))


def rprop_update(steps, param, grad, prev, step_size, *, etaminus, etaplus, step_size_min,
                 step_size_max, maximize=False):
    """One Rprop step for one parameter (``steps.rprop_step``), in place on ``param``,
    ``prev`` and ``step_size``; ``grad`` is only read."""
    steps.rprop_step(param, grad, prev, step_size,
                     *rprop_kernel_scalars(etaminus, etaplus, step_size_min, step_size_max,
                                           maximize))


def asgd_update(steps, param, grad, ax, *, eta, mu, lambd, weight_decay=0.0,
                maximize=False):
    """One ASGD step for one parameter (``steps.asgd_step``), in place on ``param`` and
    ``ax``; ``grad`` is only read; ``eta`` and ``mu`` are the state's before this update
    (:func:`asgd_schedule` makes the next ones)."""
    steps.asgd_step(param, grad, ax,
                    *asgd_kernel_scalars(eta, mu, lambd, weight_decay, maximize))


ENTRIES = {"sgd_update": sgd_update, "adam_update": adam_update,
           "rmsprop_update": rmsprop_update, "adagrad_update": adagrad_update,
           "adadelta_update": adadelta_update, "adamax_update": adamax_update,
           "nadam_update": nadam_update, "radam_update": radam_update,
           "rprop_update": rprop_update, "asgd_update": asgd_update}


# ---- the declaration as in-place array code (the CPU's update) -----------------------------
_FUNCTIONS = ("where", "exp", "log", "sqrt", "sin", "cos", "tanh", "maximum", "power",
              "add", "subtract", "multiply", "true_divide", "negative", "less",
              "less_equal", "greater", "greater_equal", "equal", "not_equal", "bitwise_and",
              "bitwise_or", "invert", "empty_like", "copyto")


def array_names(math) -> dict:
    """What the generated code calls, over ``math``'s array module (its own ``erf`` and
    ``sign`` where it has them: ``math`` may also be an array module)."""
    xp = getattr(math, "xp", math)
    names = {k: getattr(xp, k) for k in _FUNCTIONS}
    names["where"] = where_of(xp)  # (a flag passed by value is a number)
    names["pow"] = xp.power
    for k in ("erf", "sign"):
        if xp is not math:
            names[k] = getattr(math, k)
    return names


def host_conditions(k: Update) -> tuple[str, ...]:
    """The conditions of ``k``'s ``where`` calls that read only scalars (its flags),
    as source: known on the host when the update is called."""
    scalars, found = set(k.scalars), []
    for _, expr in k.body:
        for node in ast.walk(ast.parse(expr, mode="eval")):
            if is_where(node):
                names = {n.id for n in ast.walk(node.args[0]) if isinstance(n, ast.Name)}
                cond = ast.unparse(node.args[0])
                if names <= scalars and cond not in found:
                    found.append(cond)
    return tuple(found)


def inplace_source(k: Update, flags: tuple = ()) -> str:
    """``k`` as Python over an array namespace, in place: the body's operations in the
    body's order (Python's evaluation order), each one call, with the values of
    :func:`host_conditions` given (``flags``) so that only the branch taken is computed.

    Every result is written with ``out=`` (:func:`.numpy_code.emit`): the value an array
    of ``writes`` ends with straight into it, other values into a buffer (an array of
    ``writes`` whose old value is dead, or a scratch buffer ``_tmp0``, ``_tmp1``, ...:
    trailing arguments, made by ``empty_like`` of the first parameter when not given)
    once the value that held it is dead. Values are those of :meth:`Update.compile`
    bit for bit: the same operations on the same operands, only the memory differs.
    """
    known = dict(zip(host_conditions(k), flags, strict=True))
    ops, env = linearize(k.name, k.body, k.params, k.scalars, known)
    finals = {w: env[w] for w in k.writes}
    scratch: list[str] = []

    def new(i, result):
        scratch.append(f"_tmp{len(scratch)}")
        return scratch[-1], [f"if {scratch[-1]} is None:",
                             f"    {scratch[-1]} = empty_like({k.params[0]})"], False, False

    body, home, _ = emit(ops, k.params, finals=finals,
                         donors={w: k.params.index(w) for w in k.writes}, new=new)
    lines = [f"def {k.name}({', '.join(k.arguments)}):", *body]

    # the arrays of writes whose final value is elsewhere: copies (a copy whose target
    # another copy reads goes after that one), then numbers
    copies = [(w, home[v]) for w, v in finals.items()
              if not isinstance(v, str) and home[v] != w]
    while copies:
        sources = {src for _, src in copies}
        j = next((j for j, (dst, _) in enumerate(copies) if dst not in sources), None)
        if j is None:
            raise NotImplementedError(f"{k.name}: the writes exchange values")
        dst, src = copies.pop(j)
        lines.append(f"    copyto({dst}, {src})")
    lines += [f"    {w}[...] = {v}" for w, v in finals.items() if isinstance(v, str)]
    # the scratch buffers may be given (a slice at a time: one set for all slices)
    given = tuple(f"{t}=None" for t in scratch)
    lines[0] = f"def {k.name}({', '.join(k.arguments + given)}):"
    if len(lines) == 1:
        lines.append("    pass")
    return "\n".join(lines) + "\n"


def _tuple(names) -> str:
    return f"({''.join(f'{n}, ' for n in names)})"


def _by_slices(fn, n_scratch, arrays, scalars):
    """``fn`` over contiguous same-shaped ``arrays`` a ``CHUNK`` slice at a time, with
    one set of scratch buffers for all slices."""
    flat = [a.reshape(-1) for a in arrays]
    size = flat[0].size
    scratch = [np.empty(CHUNK, flat[0].dtype) for _ in range(n_scratch)]
    for i in range(0, size, CHUNK):
        part = [a[i:i + CHUNK] for a in flat]
        if part[0].size < CHUNK:
            scratch = [t[:part[0].size] for t in scratch]
        fn(*part, *scalars, *scratch)


def _sliceable(arrays) -> bool:
    first = arrays[0]
    return all(type(a) is np.ndarray and a.shape == first.shape and a.flags.c_contiguous
               for a in arrays)


def inplace_step(k: Update, names: dict, sliced: bool = True):
    """``k`` as a function of its params then scalars, in place: :func:`inplace_source`
    compiled over ``names`` once per combination of its flags, chosen by the flags'
    values on each call; with ``sliced`` (NumPy), large contiguous arrays are updated a
    ``CHUNK`` slice at a time (the cache-sized pieces of :func:`.pointwise.sliced`).
    """
    made: dict = {}  # flags -> (the compiled function, its number of scratch buffers)

    def make(flags):
        scope = dict(names, __name__=__name__)
        exec(compile(inplace_source(k, flags), f"<update {k.name} {flags}>", "exec"), scope)
        fn = scope[k.name]
        made[flags] = fn, fn.__code__.co_argcount - len(k.arguments)
        return made[flags]

    # the dispatcher, written out so that a call costs as little as the arithmetic allows
    # (small parameters: per-call work is most of the time)
    args, arrays = ", ".join(k.arguments), _tuple(k.params)
    whole = (f"{k.params[0]}.size < {4 * CHUNK} or not _sliceable({arrays})" if sliced
             else "True")
    source = (f"def {k.name}({args}):\n"
              f"    _flags = {_tuple(host_conditions(k))}\n"
              f"    _fn, _n_scratch = _made.get(_flags) or _make(_flags)\n"
              f"    if {whole}:\n"
              f"        _fn({args})\n"
              f"    else:\n"
              f"        _by_slices(_fn, _n_scratch, {arrays}, {_tuple(k.scalars)})\n")
    scope = {"_made": made, "_make": make, "_by_slices": _by_slices,
             "_sliceable": _sliceable, "__name__": __name__}
    exec(compile(source, f"<update {k.name}>", "exec"), scope)
    step = scope[k.name]
    step.made = made
    return step


# ---- the same update composed naively (the benchmarks' and tests' "unfused") ---------------
class _Composed:
    """The declared steps as ``Update.compile`` makes them over an array module: one
    array-module call and one new array per operation, both branches of a ``where``."""

    def __init__(self, xp):
        names = array_names(xp)
        for name, k in UPDATE_KERNELS.items():
            setattr(self, name, k.compile(names))


@functools.cache
def _composed(xp):
    return _Composed(xp)


def _composed_entry(entry):
    """``entry`` over the array module ``xp`` (its first argument) with the steps
    composed naively; its signature names the arrays (gradcore.profile reads them)."""
    def update(xp, *args, **kwargs):
        entry(_composed(xp), *args, **kwargs)

    sig = inspect.signature(entry)
    first, *rest = sig.parameters.values()
    update.__signature__ = sig.replace(parameters=[first.replace(name="xp"), *rest])
    update.__name__ = update.__qualname__ = entry.__name__
    return update


# name -> the update over an array module ``xp`` (the first argument), composed naively
UPDATES = {name: _composed_entry(entry) for name, entry in ENTRIES.items()}
