"""PyTorch's ``torch.<name>`` functions that are another namespace's in gradcore: the
dropouts with PyTorch's ``(input, p, train)`` arguments, ``torch.embedding(weight,
indices)``, the losses, activations and normalizations of ``nn.functional`` with ATen's
arguments (``reduction`` an int: 0 none, 1 mean, 2 sum; ``native_layer_norm`` and the
other ``native_*`` forms also return the statistics they saved), and the in-place
function forms (``torch.relu_(x)`` is ``x.relu_()``).
"""

from __future__ import annotations

import math

from . import creation, dtypes
from .autograd.grad_mode import no_grad
from .nn import functional as F
from .tensor import Tensor

__all__ = ["empty_strided", "dropout", "dropout_", "alpha_dropout", "alpha_dropout_",
           "feature_dropout", "feature_dropout_", "feature_alpha_dropout",
           "feature_alpha_dropout_", "embedding",
           "is_floating_point", "get_device", "INPLACE_FUNCTIONS",
           "binary_cross_entropy_with_logits", "kl_div", "cosine_embedding_loss",
           "margin_ranking_loss", "hinge_embedding_loss", "triplet_margin_loss",
           "poisson_nll_loss", "threshold", "threshold_", "rrelu", "rrelu_",
           "native_channel_shuffle", "max_pool1d_with_indices", "native_layer_norm",
           "native_batch_norm", "native_group_norm", "native_dropout"]

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


# ---- torch.<name> forms of gradcore.nn.functional's ops, with PyTorch's ATen arguments:
# the reduction an int (0 'none', 1 'mean', 2 'sum'), no size_average/reduce/inplace
_REDUCTIONS = ("none", "mean", "sum")


def _reduction(reduction, op, position) -> str:
    if type(reduction) is not int:
        raise TypeError(f"{op}(): argument 'reduction' (position {position}) must be int, "
                        f"not {type(reduction).__name__}")
    if reduction not in (0, 1, 2):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _REDUCTIONS[reduction]


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None,  # noqa: A002
                                     reduction=1):
    """:func:`gradcore.nn.functional.binary_cross_entropy_with_logits` with PyTorch's
    ``torch.binary_cross_entropy_with_logits`` arguments (``reduction`` 0 none, 1 mean,
    2 sum)."""
    return F.binary_cross_entropy_with_logits(input, target, weight,
                                              reduction=_reduction(
                                                  reduction, "binary_cross_entropy_with_logits", 5),
                                              pos_weight=pos_weight)


def kl_div(input, target, reduction=1, *, log_target=False):  # noqa: A002
    """:func:`gradcore.nn.functional.kl_div` with PyTorch's ``torch.kl_div`` arguments
    (``reduction`` 0 none, 1 mean over all elements, 2 sum)."""
    reduction = _reduction(reduction, "kl_div", 3)
    if reduction == "mean":  # (F.kl_div's warning about 'batchmean' is not torch.kl_div's)
        return F.kl_div(input, target, reduction="none", log_target=log_target).mean()
    return F.kl_div(input, target, reduction=reduction, log_target=log_target)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    """:func:`gradcore.nn.functional.cosine_embedding_loss` (``reduction`` an int)."""
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction(reduction, "cosine_embedding_loss", 5))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    """:func:`gradcore.nn.functional.margin_ranking_loss` (``reduction`` an int)."""
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction(reduction, "margin_ranking_loss", 5))


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):  # noqa: A002
    """:func:`gradcore.nn.functional.hinge_embedding_loss` (``reduction`` an int)."""
    reduction = _reduction(reduction, "hinge_embedding_loss", 4)
    return F.hinge_embedding_loss(input, target, margin, reduction=reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False,
                        reduction=1):
    """:func:`gradcore.nn.functional.triplet_margin_loss` (``reduction`` an int)."""
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction(reduction, "triplet_margin_loss", 8))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):  # noqa: A002
    """:func:`gradcore.nn.functional.poisson_nll_loss` with every argument given, as
    PyTorch's ``torch.poisson_nll_loss`` takes them (``reduction`` an int)."""
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction(reduction, "poisson_nll_loss", 6))


def threshold(input, threshold, value):  # noqa: A002
    """``input`` where ``input > threshold``, else ``value``
    (:func:`gradcore.nn.functional.threshold`)."""
    return F.threshold(input, threshold, value)


def threshold_(input, threshold, value):  # noqa: A002
    """:func:`threshold` written into ``input``."""
    return F.threshold_(input, threshold, value)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):  # noqa: A002
    """Randomized leaky ReLU (:func:`gradcore.nn.functional.rrelu`), its slopes drawn
    from ``generator`` (None: the default generator)."""
    return F._rrelu(input, lower, upper, training, False, generator)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):  # noqa: A002
    """:func:`rrelu` written into ``input``."""
    return F._rrelu(input, lower, upper, training, True, generator)


def native_channel_shuffle(input, groups):  # noqa: A002
    """:func:`gradcore.nn.functional.channel_shuffle` (PyTorch's native form)."""
    return F.channel_shuffle(input, groups)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,  # noqa: A002
                            ceil_mode=False):
    """``(values, indices)`` of :func:`gradcore.nn.functional.max_pool1d` (``stride``
    empty or None: the kernel size)."""
    return F.max_pool1d(input, kernel_size, stride if stride not in ((), []) else None,
                        padding, dilation, ceil_mode, True)


def native_layer_norm(input, normalized_shape, weight, bias, eps):  # noqa: A002
    """``(output, mean, rstd)``: :func:`gradcore.nn.functional.layer_norm` and the mean
    and ``1 / sqrt(var + eps)`` of each normalized group, kept as dimensions of size 1
    (those two outside the graph, as PyTorch's)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
        tuple(normalized_shape)
    out = F.layer_norm(input, shape, weight, bias, eps)
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    with no_grad():
        x = input.detach()
        mean = x.mean(dims, keepdim=True)
        rstd = (x.var(dims, correction=0, keepdim=True) + eps).rsqrt()
    return out, mean, rstd


def native_batch_norm(input, weight, bias, running_mean, running_var, training,  # noqa: A002
                      momentum, eps):
    """``(output, save_mean, save_invstd)``: :func:`gradcore.nn.functional.batch_norm`
    (running statistics updated in training) and, in training, the batch's mean and
    ``1 / sqrt(var + eps)`` per channel (empty tensors outside training)."""
    out = F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    with no_grad():
        if not training:
            empty = creation.empty(0, dtype=input.dtype, device=input.device)
            return out, empty, empty.clone()
        x = input.detach()
        dims = (0,) + tuple(range(2, input.ndim))
        mean = x.mean(dims)
        invstd = (x.var(dims, correction=0) + eps).rsqrt()
    return out, mean, invstd


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):  # noqa: A002, N803
    """``(output, mean, rstd)``: :func:`gradcore.nn.functional.group_norm` of ``input``
    seen as ``(N, C, HxW)``, and each group's mean and ``1 / sqrt(var + eps)``, of shape
    ``(N, group)``."""
    if N * C * HxW != input.numel():
        raise RuntimeError(f"Expected input to have {N * C * HxW} elements, but got "
                           f"{input.numel()}")
    out = F.group_norm(input, group, weight, bias, eps)
    with no_grad():
        x = input.detach().reshape(N, group, -1)
        mean = x.mean(2)
        rstd = (x.var(2, correction=0) + eps).rsqrt()
    return out, mean, rstd


def native_dropout(input, p, train):  # noqa: A002
    """``(output, mask)``: in training each element zeroed with probability ``p`` and
    the others scaled by ``1 / (1 - p)``, with the boolean mask of those kept; outside
    training (``train`` False) a copy of ``input`` and a mask of ones."""
    if train is None or train:
        if not 0.0 <= p <= 1.0:
            raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
        with no_grad():
            ones = creation.ones(tuple(input.shape), dtype=input.dtype, device=input.device)
            noise = F.dropout(ones, p, True) if p < 1 else ones * 0
        return input * noise, noise != 0
    return input.clone(), creation.ones(tuple(input.shape), dtype=dtypes.bool_,
                                        device=input.device)
