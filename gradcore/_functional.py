"""PyTorch's ``torch.<name>`` functions that are another namespace's in gradcore: the
dropouts with PyTorch's ``(input, p, train)`` arguments, ``torch.embedding(weight,
indices)``, and the in-place function forms (``torch.relu_(x)`` is ``x.relu_()``).
"""

from __future__ import annotations

import math

from . import creation
from .nn import functional as F
from .tensor import Tensor

__all__ = ["empty_strided", "dropout", "dropout_", "alpha_dropout", "alpha_dropout_",
           "feature_dropout", "feature_dropout_", "feature_alpha_dropout",
           "feature_alpha_dropout_", "embedding",
           "is_floating_point", "get_device", "INPLACE_FUNCTIONS"]

_ALPHA = 1.7580993408473766  # SELU's -scale * alpha: where alpha dropout sends a dropped value


def _dropout(input, p, train, feature, alpha, inplace):  # noqa: A002
    # PyTorch's _dropout_impl: a keep mask (per channel for the feature forms), scaled
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    if feature and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 0 or not train or input.numel() == 0:
        return input
    if p == 1:
        zero = creation.zeros((), dtype=input.dtype, device=input.device)
        return input.mul_(zero) if inplace else input * zero
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2) if feature else tuple(input.shape)
    ones = creation.ones(shape, dtype=input.dtype, device=input.device)
    if not alpha:
        noise = F.dropout(ones, p, True)  # (1 - p)^-1 where kept, 0 where dropped
        return input.mul_(noise) if inplace else input * noise
    keep = F.dropout(ones, p, True) * (1 - p)  # 1 where kept, 0 where dropped
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    b = (keep - 1) * (_ALPHA * a) + _ALPHA * a * p
    if inplace:
        return input.mul_(keep * a).add_(b)
    return input * (keep * a) + b


def dropout(input, p, train):  # noqa: A002
    """Zero each element with probability ``p`` and scale the others by ``1 / (1 - p)``
    when ``train`` (else ``input`` itself): ``gc.nn.functional.dropout(input, p,
    train)``, with PyTorch's ``torch.dropout`` arguments. Differentiable."""
    return _dropout(input, p, train, False, False, False)


def dropout_(input, p, train):  # noqa: A002
    """:func:`dropout` written into ``input``."""
    return _dropout(input, p, train, False, False, True)


def alpha_dropout(input, p, train):  # noqa: A002
    """Dropout that keeps SELU's zero mean and unit variance: dropped elements are set to
    SELU's negative saturation value, and an affine map restores the statistics
    (``gc.nn.functional.alpha_dropout``). Differentiable."""
    return _dropout(input, p, train, False, True, False)


def alpha_dropout_(input, p, train):  # noqa: A002
    """:func:`alpha_dropout` written into ``input``."""
    return _dropout(input, p, train, False, True, True)


def feature_dropout(input, p, train):  # noqa: A002
    """:func:`dropout` of whole channels: one draw per ``input.shape[:2]`` (at least 2
    dimensions)."""
    return _dropout(input, p, train, True, False, False)


def feature_dropout_(input, p, train):  # noqa: A002
    """:func:`feature_dropout` written into ``input``."""
    return _dropout(input, p, train, True, False, True)


def feature_alpha_dropout(input, p, train):  # noqa: A002
    """:func:`alpha_dropout` of whole channels: one draw per ``input.shape[:2]``."""
    return _dropout(input, p, train, True, True, False)


def feature_alpha_dropout_(input, p, train):  # noqa: A002
    """:func:`feature_alpha_dropout` written into ``input``."""
    return _dropout(input, p, train, True, True, True)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """The rows ``indices`` of ``weight``: ``gc.nn.functional.embedding(indices, weight)``
    with PyTorch's ``torch.embedding`` argument order (the table first; a
    ``padding_idx`` of -1 is none). Differentiable for ``weight``."""
    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False) -> Tensor:
    """A tensor of ``size`` whose elements lie ``stride`` elements apart along each
    dimension, in memory of its own (zeros here; uninitialized in PyTorch).

    >>> import gradcore as gc
    >>> gc.empty_strided((2, 3), (1, 2)).stride()
    (1, 2)
    """
    if len(tuple(size)) != len(tuple(stride)):
        raise RuntimeError(f"dimensionality of sizes ({len(tuple(size))}) must match "
                           f"dimensionality of strides ({len(tuple(stride))})")
    return creation.empty(0, dtype=dtype, device=device).new_empty_strided(
        tuple(size), tuple(stride), requires_grad=requires_grad)


def is_floating_point(input) -> bool:  # noqa: A002
    """Whether ``input``'s dtype is a floating-point one (``input.is_floating_point()``)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_floating_point(): argument 'input' (position 1) must be Tensor, "
                        f"not {type(input).__name__}")
    return input.is_floating_point()


def get_device(input) -> int:  # noqa: A002
    """The CUDA device index of ``input``, or -1 on the CPU (``input.get_device()``)."""
    return input.get_device()


# PyTorch's torch.<name>_ functions that are one of gradcore's Tensor methods: each is
# input.<name>_(...). (The set is PyTorch 2.13's `torch.*_` functions.)
_METHOD_FORMS = (
    "abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
    "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_",
    "clamp_min_", "clip_", "cos_", "cosh_", "deg2rad_", "detach_", "erf_", "erfc_", "exp2_",
    "exp_", "expm1_", "fill_", "fix_", "floor_", "frac_", "gcd_", "i0_", "lcm_", "ldexp_",
    "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_",
    "rad2deg_", "reciprocal_", "relu_", "resize_as_", "round_", "rsqrt_", "sigmoid_", "sin_",
    "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_")


def _method_form(name):
    def fn(input, *args, **kwargs):  # noqa: A002
        return getattr(input, name)(*args, **kwargs)
    fn.__name__, fn.__qualname__ = name, f"_method_form.<locals>.{name}"  # (made here)
    fn.__doc__ = f"``input.{name}(...)``: the op written into ``input``, in place."
    return fn


def celu_(input, alpha=1.0):  # noqa: A002
    """``gc.nn.functional.celu(input, alpha, inplace=True)``."""
    return F.celu(input, alpha, inplace=True)


def selu_(input):  # noqa: A002
    """``gc.nn.functional.selu(input, inplace=True)``."""
    return F.selu(input, inplace=True)


INPLACE_FUNCTIONS = {name: _method_form(name) for name in _METHOD_FORMS}
INPLACE_FUNCTIONS.update(celu_=celu_, selu_=selu_)
