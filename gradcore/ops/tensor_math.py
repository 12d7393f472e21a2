"""The math the backward formulas run on when ``create_graph=True``: tensor ops.

It mirrors the few NumPy-style names the formulas use (``F.sum``, ``F.where``,
``F.broadcast_to``, the fused kernels, ...) so that one formula serves both a plain
backward (arrays) and a differentiable one (tensors).  Where arrays and tensors share
a method (``g.reshape(shape)``, ``a.swapaxes(-1, -2)``), formulas call it directly: a
method call is cheaper than NumPy's Python-level wrappers. Products are ``F.matmul``
(on a CUDA device, cuBLAS called directly: :mod:`gradcore.kernels.gemm`).
"""

from __future__ import annotations

import sys

from ..autograd.tensor_base import Tensor, _new, _wrap
from ..backend import math_of
from ..kernels import conv as _conv_formulas
from ..kernels import gemm as _gemm
from ..kernels import pointwise as _kernels
from ..kernels import rows as _rows
from . import conv as _conv
from . import index as _index
from . import linalg as _linalg
from . import pointwise as _pw
from . import reduce as _red
from . import shape as _shape
from .activation import erf as _erf

wrap = _wrap


def wrap_output(data, node, nr):
    t = _new(Tensor)
    t._data, t.grad_fn, t._out_nr, t._rg = data, node, nr, True
    return t


def constant(arr):
    """A saved array as a constant tensor (``ArrayMath.constant``)."""
    return _wrap(arr)


def to_device(x, dev):
    """``x`` copied to ``dev``, differentiably."""
    return x.to(dev)


def broadcast_to(x, shape):
    return _shape.broadcast_to(x, tuple(shape))


def expand_dims(x, axis):
    return _shape.unsqueeze(x, axis)


def transpose(x, axes):
    return _shape.permute(x, *axes)


def concatenate(xs, axis=0):
    return _shape.cat(xs, axis)


def roll(x, shift, axis=None):
    return _shape.roll(x, shift, axis)


def matmul(a, b):
    return _linalg.matmul(a, b)


def linear(x2, w, b):
    """``x2 @ w.T + b``: :func:`gradcore.kernels.gemm.linear` over tensors."""
    return _gemm.linear(_this, _gemm.never, x2, w, b)


def linear_weight_grads(g2, x2, need_bias):
    """nn.Linear's weight and bias gradients (:mod:`gradcore.kernels.gemm`'s formula)."""
    return _gemm.linear_weight_grads(_this, _gemm.never, g2, x2, need_bias)


def einsum(subscripts, *operands):
    return _linalg.einsum(subscripts, *operands)


def cross(a, b, axis=-1):
    return _linalg.cross(a, b, dim=axis)


def sum(x, axis=None, keepdims=False, dtype=None):  # noqa: A001
    if x._data.dtype.kind == "b" and dtype is not None:
        x = x.to(dtype=dtype)
        dtype = None
    return _red.sum(x, axis, keepdims, dtype=dtype)


def sum_to(x, shape):
    return _shape.sum_to(x, shape)


def mul_sum_to(g, other, shape):
    return _shape.sum_to(g * other, shape)


ndarray = Tensor  # (the formulas' "a new array" checks: every result is new)


def multiply(a, b, out=None):
    """``a * b`` (``out``, where a formula over arrays would write, is not used)."""
    return a * b


def add(a, b, out=None):
    """``a + b`` (``out`` as :func:`multiply`'s)."""
    return a + b


def subtract(a, b, out=None):
    """``a - b`` (``out`` as :func:`multiply`'s)."""
    return a - b


def where(c, a, b):
    return _pw.where(c, a, b)


def either(c, if_true, if_false):
    """``ArrayMath.either`` over tensors: the branch ``c`` (0-d) selects, alone. The
    graph holds only that branch: selecting by ``where`` would differentiate the other
    one too, and its derivative, taken where it is not valid (``g * y / x`` at a zero
    of ``x``), is NaN times the zero gradient ``where`` hands it. As PyTorch's formulas
    under create_graph do (prod's, cumprod's), the condition is read back."""
    return if_true() if bool(c._data) else if_false()


def cumsum(x, axis, dtype=None):
    return _red.cumsum(x, axis, dtype=dtype)


def cumprod(x, axis, dtype=None):
    return _red.cumprod(x, axis, dtype=dtype)


def logcumsumexp(x, axis):
    return _red.logcumsumexp(x, axis)


def astype(x, dtype):
    return _pw.to_dtype(x, dtype)


def zeros_like(ref, shape=None, dtype=None):
    """Zeros on ``ref``'s device (of ``shape`` and ``dtype`` when given)."""
    d = ref._data
    return _wrap(math_of(d).zeros_like(d, dtype=dtype, shape=shape))


exp, log, sqrt, sin, cos, tanh, sign = (_pw.exp, _pw.log, _pw.sqrt, _pw.sin, _pw.cos,
                                       _pw.tanh, _pw.sign)
pow = _pw.pow  # noqa: A001
# the gamma family's and i0's derivatives (differentiable ops themselves)
digamma = _pw.digamma
lgamma = _pw.lgamma
polygamma = _pw.polygamma
i0 = _pw.i0
i1 = _pw.i1
# torch.special's (gradcore.special)
i0e, i1e, erfcx, zeta = _pw.i0e, _pw.i1e, _pw.erfcx, _pw.zeta
maximum, minimum = _pw.maximum, _pw.minimum
sigmoid, log1p, abs = _pw.sigmoid, _pw.log1p, _pw.abs  # noqa: A001
floor, trunc = _pw.floor, _pw.trunc


def scatter_into_zeros(g, axis, index, shape):
    return _index.into_zeros(g, index, shape, kind="along", axis=axis)


def index_add_into_zeros(g, index, shape, keep_zero=None):
    out = _index.into_zeros(g, index, shape, kind="add")
    return out if keep_zero is None else _index.zero_at(out, keep_zero)


def place_into_zeros(g, index, shape):
    return _index.into_zeros(g, index, shape, kind="place")


zero_at = _index.zero_at
take_along_axis = _index.take_along_axis

# The fused kernels as differentiable composites, built from the same expressions as
# their NumPy twins and CUDA bodies: ``tensor_math.tanh_backward`` and so on.
_FUNCTIONS = {
    "where": where, "exp": exp, "log": log, "sqrt": sqrt, "sin": sin, "cos": cos,
    "tanh": tanh, "sign": sign, "pow": pow, "maximum": maximum,
    "erf": _erf,
}
_composites = _kernels.composite(_FUNCTIONS)


# The formulas of kernels.rows over tensors: the same lines as the arrays' twins, so
# second derivatives come from them. Statistics a forward saved as arrays (layer_norm's
# mean and rstd, gelu's Phi(x)) are recomputed here from the input, differentiably.
_this = sys.modules[__name__]


def softmax_backward(g, y, axis, out=None):
    return _rows.softmax_backward(_this, g, y, axis)


def log_softmax_backward(g, y, axis, out=None):
    return _rows.log_softmax_backward(_this, g, y, axis)


def attention_softmax_backward(g, y, scale, bias_shape, need_scores, need_bias):
    return _rows.attention_softmax_backward(_this, g, y, scale, bias_shape, need_scores,
                                            need_bias)


def _ln_stats(x, axes, inv_n, eps):
    mean = sum(x, axis=axes, keepdims=True) * inv_n
    xc = x - mean
    return mean, 1 / sqrt(sum(xc * xc, axis=axes, keepdims=True) * inv_n + eps)


def layer_norm_backward(g, x, w, mean, rstd, axes, lead, inv_n, eps, need_x, need_params,
                        batch_stats=True):
    if batch_stats:
        mean, rstd = _ln_stats(x, axes, inv_n, eps)
    else:  # (given statistics: constants, as batch_norm's running ones)
        mean, rstd = _wrap(mean), _wrap(rstd)
    return _rows.layer_norm_backward(_this, g, x, w, mean, rstd, axes, lead, inv_n, eps,
                                     need_x, need_params, batch_stats)


def cross_entropy_backward(logp, target, g, coef):
    """The input gradient of cross_entropy's pair (``kernels.rows``), as the two steps
    compute it: ``one_hot(target) * v - exp(logp) * v``, ``v = g * coef``. ``logp``'s
    node passes the gradient to ``x`` unchanged (``LogSoftmaxPairBackward0``), so
    ``logp`` enters through ``logp - (z - z.detach())``, ``z = logsumexp(logp)``:
    exactly ``logp`` in value, log_softmax's derivatives (``log_softmax(logp) + c``) in
    every order, which is what ``x`` needs."""
    z = _red.logsumexp(logp, 1, True)
    logp = logp - (z - z.detach())
    v = expand_dims(g * coef, 1)
    index = target[:, None]
    onehot = scatter_into_zeros(v, 1, index, tuple(logp.shape))
    return _rows.log_softmax_backward(_this, onehot, logp, 1)


def log_sigmoid(x):
    return _rows.log_sigmoid(_this, x)


def bce_logits_backward(g, x, y, pw, need_x, need_y):
    pw = None if pw is None else _wrap(pw)
    return _rows.bce_logits_backward(_this, g, x, y, pw, need_x, need_y)


def gelu_backward_cdf(g, x, cdf):
    """``gelu_backward`` (Phi(x) recomputed from ``x``, differentiably)."""
    return _composites["gelu_backward"](g, x)


# The convolution over tensors: its two window primitives as differentiable ops (each
# one's backward is the other), and its formulas (kernels.conv) over them.
im2col, col2im = _conv.im2col, _conv.col2im


def ascontiguousarray(x):
    return x.contiguous()


def windows_batch_inner(a, windows):
    """The columns' order the device of ``a`` prefers (``kernels.conv``)."""
    return math_of(a._data).windows_batch_inner(a._data, windows)


def conv_backward(g, x, w, geometry, transposed, need_x, need_w, need_b):
    return _conv_formulas.conv_backward(_this, g, x, w, geometry, transposed, need_x,
                                        need_w, need_b)


def max_pool_backward(g, idx, size, kernel, dilation, padding, stride):
    return _conv_formulas.max_pool_backward(_this, g, idx, size, kernel, dilation, padding,
                                            stride)


def __getattr__(name):
    try:
        return _composites[name]
    except KeyError:
        if name in _kernels.KERNELS:  # declared after this module was imported
            _composites.update(_kernels.composite(_FUNCTIONS))
            return _composites[name]
        raise AttributeError(f"tensor_math has no {name!r}") from None
