"""Primitives of neural networks with their own backward nodes.

softmax, log_softmax, erf, gelu, softplus, layer_norm, linear, embedding and the losses
(nll_loss, mse_loss, binary_cross_entropy_with_logits); ``attention_softmax``, the
scale, masks and safe softmax of ``F.scaled_dot_product_attention``.  Written from
smaller ops they would record five to ten nodes each; as primitives they record one, with PyTorch's
name and derivative formula (``SoftmaxBackward0``: ``g*y - y*sum(g*y)``), and run
their forward in a few array passes.

Each op is one stanza, as in :mod:`.pointwise`: the node (its ``apply(F, g)`` one call
of a formula written once: ``F.softmax_backward(g, y, axis)``, over arrays for a plain
backward, over tensors when ``create_graph=True``, so that second derivatives come from
the same formula) followed by the forward. The formulas live in
:mod:`gradcore.kernels` (``rows`` and ``pointwise``), which also decides, per device,
whether one kernel launch runs them and computes float16 in float32 as PyTorch does.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import dtypes
from ..autograd.grad_mode import autocast_blocks as _autocast_blocks
from ..backend import check_range, math_of
from ..kernels import Kernel, declare
from . import _autocast
from . import linalg as _linalg
from . import pointwise as _pw
from . import reduce as _red
from . import shape as _shape
from ._core import (
    Node,
    Tensor,
    as_tensor,
    binary_operands,
    check_same_device,
    mode,
    normalize_dim,
    record,
    record1,
    wrap,
)
from ._export import export

__all__ = ["softmax", "log_softmax", "erf", "gelu", "softplus", "silu", "mish", "leaky_relu",
           "elu", "selu", "celu", "hardtanh", "hardswish", "hardsigmoid", "logsigmoid",
           "softshrink", "hardshrink", "threshold", "prelu", "layer_norm",
           "linear", "embedding", "nll_loss", "mse_loss", "binary_cross_entropy_with_logits",
           "binary_cross_entropy"]

_ndarray = np.ndarray
_f16 = np.dtype(np.float16)
_f32 = np.dtype(np.float32)



def _up(a):
    """float16 arrays as float32 (the type PyTorch computes half ops in)."""
    return a.astype(_f32) if a.dtype == _f16 else a


def _fresh(F, a):
    """``a`` as an array that may be updated in place (NumPy gives scalars for 0-d)."""
    return a if type(a) is F.ndarray else F.asarray(a)


def _floating(x: Tensor, op: str, dtype=None) -> Tensor:
    if not isinstance(x, Tensor):
        x = as_tensor(x)
    if dtype is not None:
        x = x.to(dtype=dtype)
    if x._data.dtype.kind != "f":
        raise RuntimeError(f"{op}(): expected a floating point input, got {x.dtype!r} "
                           f"(pass dtype= to compute in a floating point type)")
    return x


# ---- softmax / log_softmax ----------
class SoftmaxBackward0(Node):
    """``g * y - y * sum(g * y, dim)`` (``kernels.rows.softmax_backward``)."""

    fresh_grads = True
    writes_into_grad = True  # on NumPy a new array costs more than the formula

    def apply(self, F, g, out=None):
        return (F.softmax_backward(g, self.output(F), self.axis, out=out),)


def _softmax_op(x, dim, dtype, log, cls, op):
    x = _floating(x, op, dtype)
    xd = x._data
    axis = normalize_dim(dim, xd.ndim, op)
    axis = axis if xd.ndim else None
    out = math_of(xd).softmax_forward(xd, axis, log)
    if not (mode.enabled and x._rg):
        return wrap(out)
    return _record_softmax(out, cls, axis, x)


def _record_softmax(out, cls, axis, x):
    """``out`` as the output of a softmax-like node ``cls`` over ``axis`` of ``x``."""
    t = record1(out, cls, x)
    node = t.grad_fn
    node.axis = axis
    node.save_output(t)
    return t


@export(torch=True, method=True)
def softmax(x, dim=None, dtype=None, *, axis=None):
    """``exp(x) / sum(exp(x), dim)``, computed without overflow; one node."""
    if axis is not None:  # (NumPy's names, which PyTorch accepts too)
        dim = axis
    if dim is None:
        raise TypeError("softmax() missing 1 required positional argument: 'dim'")
    return _softmax_op(x, dim, dtype, False, SoftmaxBackward0, "softmax")


# ---- attention_softmax (scaled_dot_product_attention's weights) ----------
class SafeSoftmaxBackward0(Node):
    """The weights' gradients (``kernels.rows.attention_softmax_backward``): with
    ``d = g * y - y * sum(g * y)`` over the keys, the scores' ``d * scale`` and the
    bias's ``d`` summed to its shape. (PyTorch's name for the safe softmax this node
    ends with; the scale, mask and bias before it are in the same node.)"""

    fresh_grads = True

    def apply(self, F, g):
        want_bias = self.has_bias and self.needs(1)
        gs, gb = F.attention_softmax_backward(g, self.output(F), self.scale, self.bias_shape,
                                              self.needs(0), want_bias)
        return (gs, gb) if self.has_bias else (gs,)


def attention_softmax(scores: Tensor, bias: Tensor | None, scale: float,
                      causal: bool) -> Tensor:
    """scaled_dot_product_attention's weights from its scores ``q @ k^T``: the softmax
    over the last dimension of ``scores * scale + bias`` (``bias``: None or a floating
    tensor of the scores' dtype that broadcasts to them), the keys after each query
    (top-left aligned) masked when ``causal``; a query left with no key gets zeros and
    passes no gradient back (PyTorch's ``_safe_softmax``). One node
    (``SafeSoftmaxBackward0``) and, on a device with kernels, one launch each way."""
    sd = scores._data
    bd = None
    if bias is not None:
        bd = bias._data
        check_same_device(sd, bd, "scaled_dot_product_attention")
        if bd.dtype != sd.dtype:
            raise RuntimeError(f"attention_softmax: expected a bias of the scores' dtype "
                               f"{scores.dtype}, got {bias.dtype}")
    out = math_of(sd).attention_softmax(sd, bd, float(scale), bool(causal))
    inputs = (scores,) if bias is None else (scores, bias)
    if not (mode.enabled and any(t._rg for t in inputs)):
        return wrap(out)
    t = record(out, SafeSoftmaxBackward0, *inputs)
    node = t.grad_fn
    node.scale, node.has_bias = float(scale), bias is not None
    node.bias_shape = None if bias is None else tuple(bd.shape)
    node.save_output(t)
    return t


class LogSoftmaxBackward0(Node):
    """``g - exp(y) * sum(g, dim)`` (``kernels.rows.log_softmax_backward``)."""

    fresh_grads = True
    writes_into_grad = True

    def apply(self, F, g, out=None):
        return (F.log_softmax_backward(g, self.output(F), self.axis, out=out),)


@export(torch=True, method=True)
def log_softmax(x, dim=None, dtype=None, *, axis=None):
    """``x - logsumexp(x, dim)``; one node."""
    if axis is not None:  # (NumPy's names, which PyTorch accepts too)
        dim = axis
    if dim is None:
        raise TypeError("log_softmax() missing 1 required positional argument: 'dim'")
    return _softmax_op(x, dim, dtype, True, LogSoftmaxBackward0, "log_softmax")


# ---- erf / gelu ----------
# erf's derivative, 2 / sqrt(pi) * exp(-x * x)
declare(Kernel("erf_backward", ("g", "x"), "g * (exp(-(x * x)) * 1.1283791670955126)",
               upcast="x"))
class ErfBackward0(Node):
    """``g * 2 / sqrt(pi) * exp(-x * x)`` (``kernels.pointwise``: erf_backward)."""

    fresh_grads = True
    writes_into_grad = True

    def apply(self, F, g, out=None):
        (x,) = self.unpack(F)
        return (F.erf_backward(g, x, out=out),)


@export(torch=True, method=True)
def erf(x):
    """The error function ``2 / sqrt(pi) * integral of exp(-t*t) from 0 to x``."""
    if not isinstance(x, Tensor):
        x = as_tensor(x)
    x = _pw._float(x)
    xd = x._data
    out = math_of(xd).erf(xd)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record1(out, ErfBackward0, x)
    t.grad_fn.save(x)
    return t


# gelu's pieces, each written once (forward and backward use them)
_GELU_KAPPA = 0.044715
_GELU_BETA = 0.7978845608028654  # sqrt(2 / pi)
_GELU_CDF = "(erf(x * 0.7071067811865476) + 1) * 0.5"  # Phi(x)
_GELU_PDF = "exp(x * x * -0.5) * 0.3989422804014327"  # the normal density
_GELU_GRAD = "g * (cdf + x * pdf)"  # over the locals cdf and pdf
# tanh(sqrt(2 / pi) * (x + 0.044715 x^3)), over the local x_sq = x * x
_GELU_TANH = f"tanh((x + x_sq * x * {_GELU_KAPPA!r}) * {_GELU_BETA!r})"
# PyTorch's formulas (GeluBackward0): cdf(x) + x * pdf(x), and the derivative of the
# tanh approximation; float16 computed in float32 (upcast) everywhere
declare(Kernel("gelu_backward", ("g", "x"), _GELU_GRAD,
               lets=(("cdf", _GELU_CDF), ("pdf", _GELU_PDF)), upcast="x"))
# ... with Phi(x) kept by the forward (gelu_forward_cdf: kernels.pointwise.KEEPING)
declare(Kernel("gelu_backward_cdf", ("g", "x", "cdf"), _GELU_GRAD,
               lets=(("pdf", _GELU_PDF),), upcast="x"))
declare(Kernel("gelu_tanh_backward", ("g", "x"), "g * (left + x * 0.5 * right * inner_d)",
               lets=(("x_sq", "x * x"),
                     ("th", _GELU_TANH),
                     ("left", "(th + 1) * 0.5"),
                     ("right", "1 - th * th"),
                     ("inner_d", f"(x_sq * {3 * _GELU_KAPPA!r} + 1) * {_GELU_BETA!r}")),
               upcast="x"))
# ... and their forwards
declare(Kernel("gelu_forward", ("x",), f"{_GELU_CDF} * x", upcast="x"))
declare(Kernel("gelu_forward_cdf", ("x",), ("cdf * x", "cdf"), lets=(("cdf", _GELU_CDF),),
               upcast="x"))
declare(Kernel("gelu_tanh_forward", ("x",), f"({_GELU_TANH} + 1) * 0.5 * x",
               lets=(("x_sq", "x * x"),), upcast="x"))
class GeluBackward0(Node):
    """PyTorch's formulas (``kernels.pointwise``: gelu_backward, gelu_tanh_backward):
    ``cdf(x) + x * pdf(x)`` exactly, or the derivative of the tanh approximation."""

    fresh_grads = True
    # `out` holds (Phi(x),) where the exact forward kept it (gelu_forward_keep: the CPU):
    # the engine frees it with the other saved values

    def apply(self, F, g):
        (x,) = self.unpack(F)
        if self.approximate == "tanh":
            return (F.gelu_tanh_backward(g, x),)
        if self.out is not None:
            return (F.gelu_backward_cdf(g, x, self.out[0]),)
        return (F.gelu_backward(g, x),)


@export()
def gelu(x, approximate="none"):
    """``x * Phi(x)`` (``approximate='none'``) or PyTorch's tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"approximate argument must be either none or tanh, got "
                           f"{approximate!r}")
    x = _floating(x, "gelu")
    xd = x._data
    m = math_of(xd)
    track = mode.enabled and x._rg
    cdf = None
    if approximate == "tanh":
        out = m.gelu_tanh_forward(xd)
    elif track:  # Phi(x) kept for the backward where that pays (None where it does not)
        out, cdf = m.gelu_forward_keep(xd)
    else:
        out = m.gelu_forward(xd)
    if not track:
        return wrap(out)
    t = record1(out, GeluBackward0, x)
    node = t.grad_fn
    node.approximate = approximate
    if cdf is not None:
        node.out = (cdf,)
    node.save(x)
    return t


# ---- softplus ----------
# PyTorch's SoftplusBackward0: g * sigmoid(beta * x), as z / (z + 1) with z = exp(beta * x),
# where beta * x <= threshold; g where softplus is x itself
declare(Kernel("softplus_backward", ("g", "x"),
               "where(x * beta > threshold, g, g * z / (z + 1))", scalars=("beta", "threshold"),
               lets=(("z", "exp(x * beta)"),), upcast="x"))
class SoftplusBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.softplus_backward(g, x, self.beta, self.threshold),)


def softplus(x, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta * x)) / beta``; ``x`` where ``beta * x > threshold``."""
    x = _floating(x, "softplus")
    xd = x._data
    m = math_of(xd)
    xu = _up(xd)  # (float16 computed in float32, as PyTorch does)
    xb = xu * beta
    soft = m.log1p(m.exp(m.minimum(xb, threshold))) / beta  # (no overflow where unused)
    out = m.asarray(m.where(xb > threshold, xu, soft)).astype(xd.dtype, copy=False)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record1(out, SoftplusBackward0, x)
    node = t.grad_fn
    node.beta, node.threshold = float(beta), float(threshold)
    node.save(x)
    return t


# ---- more activations (PyTorch's nn.functional pointwise ones) ----------
# Each forward computes float16 in float32 (as PyTorch does) and each backward is
# PyTorch's formula (derivatives.yaml and its CPU kernels), including the value it takes
# at a kink: leaky_relu's slope at 0, elu's alpha at 0, hardtanh's 0 at its bounds ...
def _torch_type(dtype) -> str:
    """PyTorch's name of a scalar type (``Long``, ``Float``) in its messages."""
    return dtypes.torch_name(np.dtype(dtype))


def _float_only(x, kernel: str) -> Tensor:
    """``x`` as a tensor; integer and bool inputs refused as PyTorch's kernels refuse
    them (``NotImplementedError: "elu_cpu" not implemented for 'Long'``)."""
    if not isinstance(x, Tensor):
        x = as_tensor(x)
    dt = x._data.dtype
    if dt.kind != "f":
        raise NotImplementedError(f'"{kernel}_{x.device.type}" not implemented for '
                                  f"'{_torch_type(dt)}'")
    return x


def _in_dtype(m, value, like):
    """A forward's result (computed in float32 for float16) as an array of ``like``'s
    dtype (NumPy returns scalars from 0-d arithmetic)."""
    return m.asarray(value).astype(like.dtype, copy=False)


def _record_saving_input(out, cls, x: Tensor) -> Tensor:
    """``out`` as the output of the one-input node ``cls``, which saves ``x``."""
    t = record1(out, cls, x)
    t.grad_fn.save(x)
    return t


# silu: PyTorch's SiluBackward0, g * s * (1 + x * (1 - s)) with s = sigmoid(x), s made
# from exp(-|x|) (no overflow, so no inf * 0 in a second derivative either)
declare(Kernel("silu_backward", ("g", "x"), "g * s * (1 + x * (1 - s))",
               lets=(("e", "exp(where(x < 0, x, -x))"),
                     ("s", "where(x < 0, e / (1 + e), 1 / (1 + e))")), upcast="x"))
class SiluBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.silu_backward(g, x),)


def silu(x):
    """``x * sigmoid(x)``, the sigmoid-weighted linear unit (swish)."""
    x = _float_only(x, "silu")
    xd = x._data
    m = math_of(xd)
    xu = _up(xd)
    with np.errstate(over="ignore"):  # (exp(-x) is inf below -709: x / inf is -0.0)
        out = _in_dtype(m, xu / (1 + m.exp(-xu)), xd)  # (PyTorch's kernel)
    if not (mode.enabled and x._rg):
        return wrap(out)
    return _record_saving_input(out, SiluBackward0, x)


# mish: PyTorch's MishBackward0, g * (tsp + x * s * (1 - tsp * tsp)) with tsp =
# tanh(softplus(x)) = q / (q + 2), q = e * (e + 2), e = exp(x) (exactly 1 from x = 20 on,
# where e stops growing; s = sigmoid(x) = e / (1 + e) is then multiplied by 0)
declare(Kernel("mish_backward", ("g", "x"), "g * (tsp + x * s * (1 - tsp * tsp))",
               lets=(("e", "exp(where(x > 20, 20, x))"), ("q", "e * (e + 2)"),
                     ("tsp", "q / (q + 2)"), ("s", "e / (1 + e)")), upcast="x"))
class MishBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.mish_backward(g, x),)


def mish(x):
    """``x * tanh(softplus(x))``."""
    x = _float_only(x, "mish")
    xd = x._data
    m = math_of(xd)
    xu = _up(xd)
    with np.errstate(over="ignore"):  # (exp(x) is inf above 709: tanh(inf) is 1)
        out = _in_dtype(m, xu * m.tanh(m.log1p(m.exp(xu))), xd)
    if not (mode.enabled and x._rg):
        return wrap(out)
    return _record_saving_input(out, MishBackward0, x)


# leaky_relu: LeakyReluBackward0, the slope where x <= 0 (at 0 too)
declare(Kernel("leaky_relu_backward", ("g", "x"), "where(x > 0, g, g * slope)",
               scalars=("slope",), upcast="x"))
class LeakyReluBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.leaky_relu_backward(g, x, self.negative_slope),)


def leaky_relu(x, negative_slope=0.01):
    """``x`` where ``x > 0``, else ``negative_slope * x``."""
    x = _float_only(x, "leaky_relu")
    xd = x._data
    m = math_of(xd)
    xu = _up(xd)
    out = _in_dtype(m, m.where(xu > 0, xu, xu * negative_slope), xd)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = _record_saving_input(out, LeakyReluBackward0, x)
    t.grad_fn.negative_slope = float(negative_slope)
    return t


# elu, selu, celu: PyTorch's elu(x, alpha, scale, input_scale) and its elu_backward,
# negiptcoef * negcoef * exp(x * negiptcoef) where x <= 0 (at 0 too), poscoef above
# (the exp's argument kept <= 0: no overflow where it is not used)
declare(Kernel("elu_backward", ("g", "x"),
               "where(x <= 0, g * negiptcoef * negcoef * exp(where(x <= 0, x, 0) * negiptcoef),"
               " g * poscoef)", scalars=("poscoef", "negcoef", "negiptcoef"), upcast="x"))
class EluBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.elu_backward(g, x, self.poscoef, self.negcoef, self.negiptcoef),)


class CeluBackward0(EluBackward0):
    """elu_backward with ``input_scale = 1 / alpha`` (``alpha`` rounded to float32 first,
    as PyTorch's derivative formula does: ``1.0 / alpha.toFloat()``)."""


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _elu(x, alpha, scale, input_scale, cls, backward_input_scale=None):
    x = _float_only(x, "elu")
    xd = x._data
    m = math_of(xd)
    xu = _up(xd)
    negcoef = alpha * scale
    with np.errstate(over="ignore"):  # (the exponential where it is not used, or inf)
        neg = m.expm1(xu * input_scale) * negcoef
    out = _in_dtype(m, m.where(xu <= 0, neg, xu * scale), xd)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = _record_saving_input(out, cls, x)
    node = t.grad_fn
    node.poscoef, node.negcoef = float(scale), float(negcoef)
    node.negiptcoef = float(input_scale if backward_input_scale is None
                            else backward_input_scale)
    return t


def elu(x, alpha=1.0):
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``."""
    return _elu(x, alpha, 1.0, 1.0, EluBackward0)


@export(torch=True)
def selu(x):
    """``scale * elu(x, alpha)`` with PyTorch's constants (alpha ~ 1.6733, scale ~ 1.0507)."""
    return _elu(x, _SELU_ALPHA, _SELU_SCALE, 1.0, EluBackward0)


@export(torch=True)
def celu(x, alpha=1.0):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _elu(x, alpha, 1.0, 1.0 / alpha, CeluBackward0,
                backward_input_scale=1.0 / float(np.float32(alpha)))


# hardtanh (and relu6 = hardtanh(x, 0, 6)): HardtanhBackward0, no gradient where
# x <= min_val or x >= max_val (at the bounds themselves too, unlike clamp)
declare(Kernel("hardtanh_backward", ("g", "x"), "where(x <= lo, 0, where(x >= hi, 0, g))",
               scalars=("lo", "hi")))
class HardtanhBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.hardtanh_backward(g, x, self.min_val, self.max_val),)


def hardtanh(x, min_val=-1.0, max_val=1.0):
    """``x`` clamped to ``[min_val, max_val]``."""
    if not isinstance(x, Tensor):
        x = as_tensor(x)
    xd = x._data
    m = math_of(xd)
    if xd.dtype.kind != "f":  # integers stay integers (PyTorch's clamp)
        return wrap(_in_dtype(m, m.clip(xd, min_val, max_val), xd))
    out = _in_dtype(m, m.clip(_up(xd), min_val, max_val), xd)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = _record_saving_input(out, HardtanhBackward0, x)
    t.grad_fn.min_val, t.grad_fn.max_val = float(min_val), float(max_val)
    return t


# hardswish: HardswishBackward0, 0 where x <= -3, g * (x / 3 + 0.5) where x < 3, g above
declare(Kernel("hardswish_backward", ("g", "x"),
               "where(x <= -3, 0, where(x < 3, g * (x / 3 + 0.5), g))", upcast="x"))
class HardswishBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.hardswish_backward(g, x),)


def hardswish(x):
    """``x * relu6(x + 3) / 6``."""
    x = _float_only(x, "hardswish")
    xd = x._data
    m = math_of(xd)
    xu = _up(xd)
    out = _in_dtype(m, xu * m.minimum(m.maximum(xu + 3, 0), 6) / 6, xd)
    if not (mode.enabled and x._rg):
        return wrap(out)
    return _record_saving_input(out, HardswishBackward0, x)


# hardsigmoid: HardsigmoidBackward0, g / 6 strictly inside (-3, 3), with PyTorch's 1/6
# rounded to float32 for every dtype (its kernel's constant is 1.0f / 6.0f)
declare(Kernel("hardsigmoid_backward", ("g", "x"),
               "where((x > -3) & (x < 3), g * 0.1666666716337204, 0)", upcast="x"))
class HardsigmoidBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.hardsigmoid_backward(g, x),)


def hardsigmoid(x):
    """``relu6(x + 3) / 6``."""
    x = _float_only(x, "hardsigmoid")
    xd = x._data
    m = math_of(xd)
    out = _in_dtype(m, m.minimum(m.maximum(_up(xd) + 3, 0), 6) / 6, xd)
    if not (mode.enabled and x._rg):
        return wrap(out)
    return _record_saving_input(out, HardsigmoidBackward0, x)


# logsigmoid: LogSigmoidBackward0, sigmoid(-x) from z = exp(-|x|) (PyTorch's kernel:
# 1 - z / (1 + z) for negative x, z / (1 + z) otherwise)
declare(Kernel("log_sigmoid_backward", ("g", "x"),
               "where(x < 0, g * (1 - z / (1 + z)), g * (z / (1 + z)))",
               lets=(("z", "exp(where(x < 0, x, -x))"),), upcast="x"))
class LogSigmoidBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.log_sigmoid_backward(g, x),)


def logsigmoid(x):
    """``log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|))``, without overflow."""
    x = _float_only(x, "log_sigmoid")
    xd = x._data
    m = math_of(xd)
    out = _in_dtype(m, m.log_sigmoid(_up(xd)), xd)
    if not (mode.enabled and x._rg):
        return wrap(out)
    return _record_saving_input(out, LogSigmoidBackward0, x)


# softshrink, hardshrink: no gradient where -lambd <= x <= lambd (the bounds included)
declare(Kernel("shrink_backward", ("g", "x"), "where(x >= -lambd, where(x <= lambd, 0, g), g)",
               scalars=("lambd",)))
class SoftshrinkBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.shrink_backward(g, x, self.lambd),)


class HardshrinkBackward0(SoftshrinkBackward0):
    pass


def softshrink(x, lambd=0.5):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, 0 between."""
    x = _float_only(x, "softshrink_check")
    xd = x._data
    top = float(np.finfo(xd.dtype).max)
    if not 0 <= lambd <= top:
        raise RuntimeError(f"lambda must be in range [0, {top:g}] for input dtype "
                           f"{_torch_type(xd.dtype)}, but found {lambd:g}")
    m = math_of(xd)
    xu = _up(xd)
    # (x * 0 between: NaN stays NaN)
    out = _in_dtype(m, m.where(xu > lambd, xu - lambd,
                               m.where(xu < -lambd, xu + lambd, xu * 0)), xd)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = _record_saving_input(out, SoftshrinkBackward0, x)
    t.grad_fn.lambd = float(lambd)
    return t


@export(torch=True, method=True)
def hardshrink(x, lambd=0.5):
    """``x`` where ``|x| > lambd``, else 0."""
    x = _float_only(x, "hardshrink")
    xd = x._data
    m = math_of(xd)
    out = _in_dtype(m, m.where((xd >= -lambd) & (xd <= lambd), 0, xd), xd)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = _record_saving_input(out, HardshrinkBackward0, x)
    t.grad_fn.lambd = float(lambd)
    return t


# threshold: ThresholdBackward0, no gradient where x <= threshold (the bound included)
declare(Kernel("threshold_backward", ("g", "x"), "where(x <= threshold, 0, g)",
               scalars=("threshold",)))
class ThresholdBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.threshold_backward(g, x, self.threshold),)


def threshold(x, threshold, value):
    """``x`` where ``x > threshold``, else ``value`` (integer inputs stay integers)."""
    if not isinstance(x, Tensor):
        x = as_tensor(x)
    xd = x._data
    if xd.dtype == np.bool_:
        raise NotImplementedError(f'"threshold_{x.device.type}" not implemented for \'Bool\'')
    m = math_of(xd)
    xu = _up(xd)
    out = _in_dtype(m, m.where(xu > threshold, xu, m.asarray(value, dtype=xu.dtype)), xd)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = _record_saving_input(out, ThresholdBackward0, x)
    t.grad_fn.threshold = float(threshold)
    return t


# prelu: PreluKernelBackward0 over the input and the weight reshaped to broadcast along
# dimension 1 (PyTorch's graph has that reshape too): the weight's gradient is summed
# back by the engine (node.shapes)
declare(Kernel("prelu_backward", ("g", "x", "w"),
               ("where(x > 0, g, w * g)", "where(x > 0, 0, x * g)"), upcast="x"))
class PreluKernelBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        x, w = self.unpack(F)
        gx, gw = F.prelu_backward(g, x, w)
        return (gx if self.needs(0) else None), (gw if self.needs(1) else None)


@export(torch=True, method=True)
def prelu(input, weight):
    """``x`` where ``x > 0``, else ``weight * x``; ``weight`` holds one slope, or one per
    channel (dimension 1 of ``input``)."""
    x = input if isinstance(input, Tensor) else as_tensor(input)
    w = weight if isinstance(weight, Tensor) else as_tensor(weight, x)
    xd, wd = x._data, w._data
    if xd.dtype != wd.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got "
                           f"{_torch_type(xd.dtype)} and {_torch_type(wd.dtype)}")
    if wd.size != 1:
        if xd.ndim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = xd.shape[1] if xd.ndim > 1 else 1
        if channels != wd.size:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {wd.size} and channel size = "
                               f"{channels}.")
    if wd.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {wd.ndim}")
    x = _float_only(x, "prelu")
    check_same_device(xd, wd, "prelu")
    if xd.ndim != wd.ndim:  # one slope per channel, broadcast along dimension 1
        dims = [1] * xd.ndim
        if xd.ndim > 1:
            dims[1] = wd.size
        w = _shape.reshape(w, tuple(dims))
        wd = w._data
    m = math_of(xd)
    xu = _up(xd)
    out = _in_dtype(m, m.where(xu > 0, xu, _up(wd) * xu), xd)
    if not (mode.enabled and (x._rg or w._rg)):
        return wrap(out)
    t = record(out, PreluKernelBackward0, x, w)
    node = t.grad_fn
    if xd.shape != out.shape or wd.shape != out.shape:
        node.shapes = (xd.shape, wd.shape)
    node.save(x, w)
    return t


# ---- layer_norm ----------
class NativeLayerNormBackward0(Node):
    """``dx = rstd * (gh - mean(gh) - xhat * mean(gh * xhat))`` with ``gh = g * w``;
    ``dw = sum(g * xhat)``, ``db = sum(g)`` over the leading dimensions
    (``kernels.rows.layer_norm_backward``)."""

    fresh_grads = True

    def apply(self, F, g):
        saved = self.unpack(F)
        x = saved[0]
        w = saved[1] if self.has_weight else None
        want_w = self.has_weight and self.needs(1)
        want_b = self.has_bias and self.needs(1 + self.has_weight)
        gx, dw, db = F.layer_norm_backward(g, x, w, self.mean, self.rstd, self.axes,
                                           self.lead, self.inv_n, self.eps, self.needs(0),
                                           want_w or want_b)
        if (want_w or want_b) and self.param_dtype != x.dtype:
            dw, db = F.astype(dw, self.param_dtype), F.astype(db, self.param_dtype)
        grads = [gx]
        if self.has_weight:
            grads.append(dw if want_w else None)
        if self.has_bias:
            grads.append(db if want_b else None)
        return tuple(grads)


@export(torch=True)
def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize over the trailing ``normalized_shape`` dimensions (biased variance),
    then scale by ``weight`` and shift by ``bias``; one node."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    ns = tuple(int(n) for n in normalized_shape)
    x = _floating(x, "layer_norm")
    xd = x._data
    k = len(ns)
    if k == 0 or xd.ndim < k or tuple(xd.shape[xd.ndim - k:]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*, {', '.join(str(n) for n in ns)}], but got input of size"
                           f"{list(xd.shape)}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None:
            if tuple(p.shape) != ns:
                raise RuntimeError(f"layer_norm: expected {name} of shape {list(ns)}, got "
                                   f"{list(p.shape)}")
            check_same_device(xd, p._data, "layer_norm")
    axes = tuple(range(xd.ndim - k, xd.ndim))
    lead = tuple(range(xd.ndim - k))
    n = int(np.prod(ns))
    inv_n = 1.0 / n if n else float("nan")
    out, mean, rstd = math_of(xd).layer_norm_forward(
        xd, None if weight is None else weight._data, None if bias is None else bias._data,
        axes, eps, inv_n)
    inputs = [x] + [p for p in (weight, bias) if p is not None]
    if not (mode.enabled and any(t._rg for t in inputs)):
        return wrap(out)
    t = record(out, NativeLayerNormBackward0, *inputs)
    node = t.grad_fn
    node.axes, node.lead, node.inv_n, node.eps = axes, lead, inv_n, eps
    node.has_weight, node.has_bias = weight is not None, bias is not None
    node.mean, node.rstd = mean, rstd
    node.param_dtype = (weight if weight is not None else bias if bias is not None
                        else x)._data.dtype
    node.save(*([x, weight] if weight is not None else [x]))
    return t


# ---- linear ----------
class LinearBackward(Node):
    """``out = x @ w.T + b`` over any leading dimensions of ``x``:
    ``dx = g @ w``, ``dw = g.T @ x``, ``db = sum(g)`` (2-D views of ``x`` and ``g``;
    ``dw`` and ``db`` by ``F.linear_weight_grads``: one product on CUDA, cuBLASLt's
    epilogue summing ``g``)."""

    fresh_grads = True

    def apply(self, F, g):
        x, w = self.unpack(F)
        out_f, in_f = w.shape
        g2 = g.reshape((-1, out_f)) if g.ndim != 2 else g
        gx = gw = gb = None
        first = 1 if self.has_bias else 0  # (the inputs: bias first, as PyTorch's addmm)
        if self.needs(first):
            gx = F.matmul(g2, w)
            if x.ndim != 2:
                gx = gx.reshape(x.shape)
        need_b = self.has_bias and self.needs(0)
        if self.needs(first + 1):
            x2 = x.reshape((-1, in_f)) if x.ndim != 2 else x
            gw, gb = F.linear_weight_grads(g2, x2, need_b)
        elif need_b:
            gb = F.sum(g2, axis=0)  # (a new array: g2 is 2-D)
        if self.has_bias:
            return gb, gx, gw
        return gx, gw

    def name(self):
        return self._name


def linear(x, weight, bias=None):
    """``x @ weight.T + bias`` (weight: ``(out_features, in_features)``); one node."""
    if _autocast_blocks[0]:  # inside gc.autocast: in the block's dtype
        x, weight, bias = _autocast.lower(x, weight, bias)
    xd, wd = x._data, weight._data
    bd = None if bias is None else bias._data
    if wd.ndim == 2 and xd.ndim >= 1 and xd.shape[-1] == wd.shape[1] and \
            xd.dtype == wd.dtype and xd.dtype.kind == "f" and type(xd) is type(wd) and \
            (bd is None or (bd.shape == (wd.shape[0],) and bd.dtype == xd.dtype and
                            type(bd) is type(xd))):
        if type(xd) is not _ndarray:
            check_same_device(xd, wd, "linear")
            if bd is not None:
                check_same_device(xd, bd, "linear")
        x2 = xd if xd.ndim == 2 else xd.reshape(-1, wd.shape[1])
        # (on CUDA: cuBLAS, capturable; the bias added by cuBLASLt's epilogue)
        out = math_of(xd).linear(x2, wd, bd)
        if xd.ndim != 2:
            out = out.reshape(xd.shape[:-1] + (wd.shape[0],))
        if not (mode.enabled and (x._rg or weight._rg or (bias is not None and bias._rg))):
            return wrap(out)
        # inputs in the order of PyTorch's AddmmBackward0 / MmBackward0: (bias,) x, weight
        # (its next_functions, which a graph walk reads)
        t = record(out, LinearBackward, x, weight) if bias is None else \
            record(out, LinearBackward, bias, x, weight)
        node = t.grad_fn
        node.has_bias = bias is not None
        node._name = ("LinearBackward0" if xd.ndim != 2 else
                      "AddmmBackward0" if bias is not None else "MmBackward0")
        node.saved = (x, weight)
        node.versions = (x._version, weight._version)
        return t
    # anything else (mixed dtypes, a 1-D weight, ...): matmul's rules and errors
    out = _linalg.matmul(x, weight.transpose(0, 1) if weight.ndim == 2 else weight)
    return out if bias is None else _pw.add(out, bias)


# ---- embedding ----------
class EmbeddingBackward0(Node):
    """The rows of ``g`` added into zeros at their indices (repeats accumulate); the
    padding row gets none."""

    fresh_grads = True

    def apply(self, F, g):
        scale = self.scale
        if scale is not None:
            g = g * F.constant(scale)
        return (F.index_add_into_zeros(g, self.index, self.weight_shape,
                                       keep_zero=self.padding_idx),)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """The rows of ``weight`` at the (integer) ``input`` indices."""
    if sparse:
        raise NotImplementedError("embedding: sparse gradients are not supported")
    idx_t = input if isinstance(input, Tensor) else as_tensor(input)
    idx = idx_t._data
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {idx_t.dtype!r} "
                           f"instead (while checking arguments for embedding)")
    wd = weight._data
    if wd.ndim != 2:
        raise RuntimeError(f"'weight' must be 2-D, got shape {list(wd.shape)}")
    check_same_device(wd, idx, "embedding")
    num = wd.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = padding_idx % num
    m = math_of(wd)
    # on a GPU without waiting: raised at the next read from the device
    check_range(idx, 0, num, _embedding_index_error)
    if max_norm is not None:
        _embedding_renorm(weight, idx, max_norm, norm_type)
        wd = weight._data
    out = wd[idx]
    if not (mode.enabled and weight._rg):
        return wrap(out)
    t = record1(out, EmbeddingBackward0, weight)
    node = t.grad_fn
    node.index, node.weight_shape, node.padding_idx = idx, wd.shape, padding_idx
    node.scale = None
    if scale_grad_by_freq:
        counts = m.bincount(idx.reshape(-1), minlength=num)
        node.scale = (1.0 / counts[idx]).astype(wd.dtype)[..., None]
    return t


def _embedding_renorm(weight, idx, max_norm, norm_type):
    """Rows of ``weight`` used by ``idx`` with a norm above ``max_norm`` scaled down to it,
    in place and untracked (PyTorch's ``embedding_renorm_``)."""
    wd = weight._data
    m = math_of(wd)
    rows = m.unique(idx.reshape(-1))
    sub = wd[rows]
    norms = (m.abs(sub) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
    scale = m.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(wd.dtype)
    wd[rows] = sub * scale[:, None]
    weight._bump()


# ---- losses ----------
_REDUCTIONS = ("mean", "sum", "none")


def check_reduction(reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


class NllLossBackward0(Node):
    """``-weight[t] * g`` (divided by the total weight for ``mean``) at each target's
    class; zeros elsewhere and at ignored targets."""

    fresh_grads = True

    def apply(self, F, g):
        axis = self.axis
        vals = F.expand_dims(g * self.coef, axis)
        index = self.target[(slice(None),) * axis + (None,)]
        return (F.scatter_into_zeros(vals, axis, index, self.in_shape),)


class CrossEntropyBackward(NllLossBackward0):
    """``cross_entropy``'s ``nll_loss(log_softmax(x, 1), target)`` of a 2-D ``x``: the
    input gradient of the pair in one step, ``one_hot(target) * v - exp(logp) * v``
    with ``v = g * coef`` (``F.cross_entropy_backward``: one kernel on CUDA, its twin on
    the CPU, a composite over tensors under ``create_graph``), from the
    log-probabilities ``logp`` it saved (its input, which nothing else reads).

    The graph keeps PyTorch's two nodes and names: this node (``NllLossBackward0``)
    over a :class:`LogSoftmaxPairBackward0` (``LogSoftmaxBackward0``), which passes the
    gradient on unchanged. A hook on that node therefore sees the gradient with respect
    to ``x``, not to the log-probabilities, and what it returns goes to ``x``."""

    def apply(self, F, g):
        (logp,) = self.unpack(F)
        return (F.cross_entropy_backward(logp, self.target, g, self.coef),)

    def name(self):
        return "NllLossBackward0"


class LogSoftmaxPairBackward0(Node):
    """The log_softmax node of a :class:`CrossEntropyBackward` pair: the gradient it
    receives is already the input's (see there), passed on unchanged."""

    passes = (0,)

    def apply(self, F, g):
        return (g,)

    def name(self):
        return "LogSoftmaxBackward0"


def _target_error(value):
    return IndexError(f"Target {value} is out of bounds.")


def _embedding_index_error(value):
    return IndexError(f"index out of range in self (index {value})")


# nll_loss's gradient coefficients from the targets' weights for "mean": -wt / total (no
# gradient when nothing is counted); cross_entropy's come from its nll_reduce
declare(Kernel("nll_coef", ("wt", "total"), "where(total != 0, -wt / total, 0)"))


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """The negative log likelihood of integer class targets, ``-input[n, target[n]]``
    (times ``weight[target[n]]``), over the class dimension 1 (0 for a 1-D input);
    ``mean`` divides by the total weight of the targets that are not ``ignore_index``.
    """
    return _nll_loss(input, target, weight, ignore_index, reduction, NllLossBackward0)


def _nll_loss(input, target, weight, ignore_index, reduction, cls):
    check_reduction(reduction)
    x = _floating(input, "nll_loss")
    t = target if isinstance(target, Tensor) else as_tensor(target)
    xd, td = x._data, t._data
    if td.dtype.kind not in "iu":
        raise RuntimeError(f"expected target dtype to be Long or Byte (any integer type), "
                           f"but got {t.dtype!r}")
    if xd.ndim == 0:
        raise ValueError("nll_loss: the input must have at least one dimension (classes)")
    axis = 0 if xd.ndim == 1 else 1
    want = xd.shape[:axis] + xd.shape[axis + 1:]
    if tuple(td.shape) != want:
        if xd.ndim >= 2 and (td.ndim == 0 or td.shape[0] != xd.shape[0]):
            raise ValueError(f"Expected input batch_size ({xd.shape[0]}) to match target "
                             f"batch_size ({td.shape[0] if td.ndim else 0}).")
        raise RuntimeError(f"nll_loss: expected target of shape {list(want)} for an input "
                           f"of shape {list(xd.shape)}, got {list(td.shape)}")
    check_same_device(xd, td, "nll_loss")
    if weight is not None:
        check_same_device(xd, weight._data, "nll_loss")
    m = math_of(xd)
    C = xd.shape[axis]
    valid = td != ignore_index
    on_host = m.values_on_host
    # Tests of the values are made on the host only: on a GPU they would wait for them.
    all_valid = on_host and bool(valid.all())
    tsafe = td if all_valid else m.where(valid, td, 0)
    tsafe = tsafe.astype(np.int64, copy=False)
    # on a GPU without waiting: raised at the next read from the device
    check_range(tsafe, 0, C, _target_error)
    w = _up(xd)
    if xd.ndim == 2:
        picked = w[m.arange(xd.shape[0]), tsafe]
    elif xd.ndim == 1:
        picked = w[tsafe]
    else:
        picked = m.take_along_axis(w, m.expand_dims(tsafe, 1), axis=1).squeeze(1)
    acc = w.dtype
    if weight is not None:
        wt = _up(weight._data).astype(acc, copy=False)[tsafe]
        if not all_valid:
            wt = m.where(valid, wt, 0)
    else:
        wt = None if all_valid else valid.astype(acc)
    # (fancy indexing copies: the losses never share the input's memory)
    losses = _fresh(m, picked * wt) if wt is not None else _fresh(m, picked)
    m.negative(losses, out=losses)
    if not all_valid:  # ignored targets lose 0 (even where the input is -inf)
        losses = m.where(valid, losses, 0)
    if reduction == "none":
        out = losses
    else:
        out = losses.sum(dtype=acc)
    if reduction == "mean":
        total = wt.sum(dtype=acc) if wt is not None else acc.type(td.size)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = out / total
            # no targets counted: no gradient (and no reading `total` back)
            coef = m.nll_coef(wt if wt is not None else m.ones(td.shape, dtype=acc), total)
            coef = coef.astype(acc, copy=False)
    else:
        coef = -wt if wt is not None else m.full(td.shape, -1.0, dtype=acc)
    out = m.asarray(out).astype(xd.dtype, copy=False)
    if not (mode.enabled and x._rg):
        return wrap(out)
    return _record_nll(out, m.asarray(coef), tsafe, axis, x, cls)


def _record_nll(out, coef, target, axis, x, cls=NllLossBackward0):
    """``out`` as the output of nll_loss over ``x`` (class ``axis``), whose gradient puts
    ``coef`` at each (safe) ``target`` (``cls``: or the pair's, from log-probabilities
    ``x``)."""
    xd = x._data
    t = record1(out, cls, x)
    node = t.grad_fn
    node.coef = coef.astype(xd.dtype, copy=False)
    node.target, node.axis, node.in_shape = target, axis, xd.shape
    if cls is CrossEntropyBackward:
        node.save(x)
    return t


def cross_entropy_classes(x, t, weight, ignore_index, reduction):
    """``nll_loss(log_softmax(x, 1), t, weight, ignore_index, reduction)`` for a 2-D
    ``x`` and class targets ``t``, whose backward is one step
    (:class:`CrossEntropyBackward`)."""
    logp = _softmax_op(x, 1, None, True, LogSoftmaxPairBackward0, "log_softmax")
    return _nll_loss(logp, t, weight, ignore_index, reduction, CrossEntropyBackward)


def cross_entropy_rows(x, t, weight, ignore_index, reduction):
    """``nll_loss(log_softmax(x, 1), t, weight, ignore_index, reduction)`` for a 2-D
    ``x`` and class targets ``t``: one row formula for the log-probabilities and the
    per-row losses (``softmax_xent_forward``: one kernel on a device with kernels, its
    NumPy twin on the CPU, as fast there as log_softmax then nll_loss), a few for the
    reduction, and the graph of the two ops (:class:`CrossEntropyBackward`: one kernel
    backward too). The caller has checked the shapes and dtypes
    (``nn.functional.cross_entropy``)."""
    check_reduction(reduction)
    xd, td = x._data, t._data
    check_same_device(xd, td, "nll_loss")
    if weight is not None:
        check_same_device(xd, weight._data, "nll_loss")
    m = math_of(xd)
    wd = None if weight is None else weight._data
    # the log-probabilities and row losses, then the loss, the gradient's coefficients and
    # the targets' bounds (two launches on a device; one for a small batch)
    logp, losses, wt, tsafe, out, coef, least, greatest = m.softmax_xent(
        xd, td, wd, ignore_index, _REDUCTIONS[reduction])
    # tsafe: the targets with ignored ones made 0 (one out of range kept as it is): the
    # check is read at the next read from the device
    check_range(tsafe, 0, xd.shape[1], _target_error, (least, greatest))
    out = m.asarray(losses if out is None else out).astype(xd.dtype, copy=False)
    if not (mode.enabled and x._rg):
        return wrap(out)
    logp_t = _record_softmax(logp, LogSoftmaxPairBackward0, 1, x)
    return _record_nll(out, coef, tsafe, 1, logp_t, CrossEntropyBackward)


_REDUCTIONS = {"none": 0, "sum": 1, "mean": 2}  # (nll_reduce's modes)


# 2 * (x - y) * g, divided by the count for "mean" (scale = 2 or 2 / n)
declare(Kernel("mse_backward", ("g", "x", "y"), "(x - y) * (g * scale)", scalars=("scale",),
               upcast="x"))
class MseLossBackward0(Node):
    """``2 * (x - y) * g`` (divided by the element count for ``mean``); minus that for
    the target (``kernels.pointwise``: mse_backward)."""

    fresh_grads = True

    def apply(self, F, g):
        x, y = self.unpack(F)
        gd = F.mse_backward(g, x, y, self.scale)
        return (gd if self.needs(0) else None), (-gd if self.needs(1) else None)


def mse_loss(input, target, reduction="mean"):
    """The mean (or sum, or elementwise) squared difference; one node."""
    check_reduction(reduction)
    if isinstance(input, Tensor) and isinstance(target, Tensor) and \
            tuple(input.shape) != tuple(target.shape):
        warnings.warn(f"Using a target size ({tuple(target.shape)}) that is different to the "
                      f"input size ({tuple(input.shape)}). This will likely lead to incorrect "
                      f"results due to broadcasting. Please ensure they have the same size.",
                      stacklevel=3)
    x, y = binary_operands(input, target, "mse_loss", float_result=True)
    x = x if isinstance(x, Tensor) else as_tensor(x, y)
    y = y if isinstance(y, Tensor) else as_tensor(y, x)
    xd, yd = x._data, y._data
    m = math_of(xd)
    d = _fresh(m, _up(xd) - _up(yd))
    d *= d
    n = d.size
    if reduction == "none":
        out, scale = d, 2.0
    else:
        out = d.sum()
        scale = 2.0
        if reduction == "mean":
            out = out * (1.0 / n) if n else out * np.nan
            scale = 2.0 / n if n else float("nan")
    out = m.asarray(out).astype(xd.dtype, copy=False)
    if not (mode.enabled and (x._rg or y._rg)):
        return wrap(out)
    t = record(out, MseLossBackward0, x, y)
    node = t.grad_fn
    node.scale = scale
    if xd.shape != yd.shape:
        node.shapes = (xd.shape, yd.shape)
    node.save(x, y)
    return t


class BinaryCrossEntropyWithLogitsBackward0(Node):
    """``dx = (sigmoid(x) * (pw * y + 1 - y) - pw * y) * g`` (``sigmoid(x) - y`` without
    ``pos_weight``), ``dy = (log_sigmoid(-x) - pw * log_sigmoid(x)) * g`` (``-x``)
    (``kernels.rows.bce_logits_backward``)."""

    fresh_grads = True

    def apply(self, F, g):
        x, y = self.unpack(F)
        return F.bce_logits_backward(g, x, y, self.pos_weight, self.needs(0), self.needs(1))


def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean",
                                     pos_weight=None):
    """``-[pw * y * log(sigmoid(x)) + (1 - y) * log(1 - sigmoid(x))]``, computed
    stably as ``(1 - y) * x - (1 + (pw - 1) * y) * log_sigmoid(x)``."""
    check_reduction(reduction)
    x = _floating(input, "binary_cross_entropy_with_logits")
    y = target if isinstance(target, Tensor) else as_tensor(target, x)
    if tuple(y.shape) != tuple(x.shape):
        raise ValueError(f"Target size ({tuple(y.shape)}) must be the same as input size "
                         f"({tuple(x.shape)})")
    if y.dtype != x.dtype:
        y = y.to(dtype=x.dtype)
    xd, yd = x._data, y._data
    check_same_device(xd, yd, "binary_cross_entropy_with_logits")
    m = math_of(xd)
    w, yw = _up(xd), _up(yd)
    pwd = None
    if pos_weight is not None:
        pwd = (pos_weight._data if isinstance(pos_weight, Tensor) else
               m.asarray(pos_weight)).astype(xd.dtype, copy=False)
        if m.broadcast_shapes(pwd.shape, xd.shape) != xd.shape:
            raise RuntimeError(f"binary_cross_entropy_with_logits: pos_weight of shape "
                               f"{tuple(pwd.shape)} does not broadcast to the input's shape "
                               f"{tuple(xd.shape)}")
    ls = m.log_sigmoid(w)
    if pwd is not None:
        ls *= (_up(pwd) - 1) * yw + 1
    loss = _fresh(m, (1 - yw) * w)
    loss -= ls
    out = wrap(loss.astype(xd.dtype, copy=False))
    if mode.enabled and (x._rg or y._rg):
        out = record(out._data, BinaryCrossEntropyWithLogitsBackward0, x, y)
        node = out.grad_fn
        node.pos_weight = pwd
        node.save(x, y)
    if weight is not None:
        out = _pw.mul(out, weight)
    if reduction == "none":
        return out
    return _red.mean(out) if reduction == "mean" else _red.sum(out)



# PyTorch's BinaryCrossEntropyBackward0: g * (x - y) / max((1 - x) * x, EPSILON), then times
# the weight and divided by the count for "mean"; the target's, -logit(x) * g. PyTorch's
# EPSILON is 1e-12 rounded to float32 (9.99999996e-13), for float64 too
declare(Kernel("bce_backward", ("g", "x", "y"),
               "g * (x - y) / maximum((1 - x) * x, 9.999999960041972e-13)", upcast="x"))
declare(Kernel("bce_target_backward", ("g", "x"), "-log(x / (1 - x)) * g", upcast="x"))
class BinaryCrossEntropyBackward0(Node):
    """The gradients of ``binary_cross_entropy`` (its reduction included) for the input
    and the target (``kernels.pointwise``: bce_backward, bce_target_backward)."""

    fresh_grads = True

    def apply(self, F, g):
        x, y = self.unpack(F)
        gx = F.bce_backward(g, x, y) if self.needs(0) else None
        gy = F.bce_target_backward(g, x) if self.needs(1) else None
        grads = []
        for grad in (gx, gy):
            if grad is not None:
                if self.weight is not None:
                    grad = grad * F.constant(self.weight)
                if self.count is not None:
                    grad = grad / self.count
            grads.append(grad)
        return tuple(grads)


def _check_unit_interval(m, arr, what):
    """PyTorch's check that every element of ``arr`` is in [0, 1] (NaN is not): on a GPU
    raised at the next read from the device, as index checks are."""
    bad = m.asarray(~((arr >= 0) & (arr <= 1)).all()).astype(np.int64).reshape(1)
    check_range(bad, 0, 1, lambda _: RuntimeError(f"all elements of {what} should be "
                                                  f"between 0 and 1"))


def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """``-weight * (y * log(x) + (1 - y) * log(1 - x))`` of probabilities ``x`` and
    targets ``y`` in [0, 1], each log clamped at -100 as PyTorch does; one node (its
    reduction included)."""
    check_reduction(reduction)
    x = _float_only(input, "binary_cross_entropy")
    y = target if isinstance(target, Tensor) else as_tensor(target, x)
    xd, yd = x._data, y._data
    if yd.dtype != xd.dtype:
        raise RuntimeError(f"Found dtype {_torch_type(yd.dtype)} but expected "
                           f"{_torch_type(xd.dtype)}")
    check_same_device(xd, yd, "binary_cross_entropy")
    m = math_of(xd)
    wd = None
    if weight is not None:
        if isinstance(weight, Tensor) and weight._rg and mode.enabled:
            raise RuntimeError("The function 'binary_cross_entropy' is not differentiable "
                               "with respect to argument 'weight'. This input cannot have "
                               "requires_grad True.")
        wd = weight._data if isinstance(weight, Tensor) else m.asarray(weight)
        check_same_device(xd, wd, "binary_cross_entropy")
        if m.broadcast_shapes(wd.shape, xd.shape) != xd.shape:
            raise RuntimeError(f"binary_cross_entropy: weight of shape {tuple(wd.shape)} does "
                               f"not broadcast to the input's shape {tuple(xd.shape)}")
        wd = wd.astype(xd.dtype, copy=False)
    _check_unit_interval(m, xd, "input")
    _check_unit_interval(m, yd, "target")
    xu, yu = _up(xd), _up(yd)
    with np.errstate(divide="ignore"):  # (log(0) is -inf: clamped to -100)
        loss = _fresh(m, (yu - 1) * m.maximum(m.log1p(-xu), -100))
        loss -= yu * m.maximum(m.log(xu), -100)
    loss = loss.astype(xd.dtype, copy=False)
    if wd is not None:
        loss = loss * wd
    count = None
    if reduction == "none":
        out = loss
    elif reduction == "sum":
        out = _up(loss).sum()
    else:
        count = xd.size
        out = _up(loss).sum() / count if count else m.asarray(np.nan)
    out = _in_dtype(m, out, xd)
    if not (mode.enabled and (x._rg or y._rg)):
        return wrap(out)
    t = record(out, BinaryCrossEntropyBackward0, x, y)
    node = t.grad_fn
    node.weight, node.count = wd, count
    node.save(x, y)
    return t
