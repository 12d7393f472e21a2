"""``gradcore.special``: PyTorch's ``torch.special``, the functions of it that gradcore's
real dtypes can hold, with PyTorch's signatures, results and gradients.

Most are gradcore's own ops under torch.special's names (``expit`` is :func:`sigmoid`,
``gammaln`` is :func:`lgamma`, ``psi`` is :func:`digamma`, ``multigammaln`` is
:func:`mvlgamma`); the others (``erfcx``, ``i0e``, ``i1``, ``i1e``, ``ndtr``, ``ndtri``,
``log_ndtr``, ``xlog1py``, ``entr``, ``zeta``) are primitives of
:mod:`gradcore.ops.pointwise` or compositions of differentiable ops, so gradients of any
order come with them (``zeta`` has one for ``other`` only, as in PyTorch). Integer inputs
give float32. gradcore's ops take no ``out=``, and neither do these.

>>> import gradcore as gc
>>> gc.special.expit(gc.tensor([0.0, 2.0]))
tensor([0.5000, 0.8808])
>>> gc.special.ndtr(gc.tensor([0.0, 1.0]))
tensor([0.5000, 0.8413])
"""

from __future__ import annotations

from . import ops as _ops
from .ops import pointwise as _pw
from .ops._core import as_tensor as _as_tensor
from .tensor import Tensor

__all__ = ["digamma", "entr", "erf", "erfc", "erfcx",
           "erfinv", "exp2", "expit", "expm1", "gammaln", "i0", "i0e", "i1", "i1e", "log1p",
           "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri",
           "polygamma", "psi", "round", "sinc", "softmax", "xlog1py", "xlogy", "zeta"]


def erf(input):  # noqa: A002
    """The error function ``2 / sqrt(pi) * integral_0^x exp(-t**2) dt``.

    >>> import gradcore as gc
    >>> gc.special.erf(gc.tensor([0.0, 1.0]))
    tensor([0.0000, 0.8427])
    """
    return _ops.erf(input)


def erfc(input):  # noqa: A002
    """``1 - erf(input)``, accurate where it is small."""
    return _ops.erfc(input)


def erfcx(input):  # noqa: A002
    """The scaled complementary error function ``exp(input**2) * erfc(input)``, finite
    where ``erfc`` underflows (inf below about -26.6).

    >>> import gradcore as gc
    >>> gc.special.erfcx(gc.tensor([0.0, 30.0]))
    tensor([1.0000, 0.0188])
    """
    return _pw.erfcx(input)


def erfinv(input):  # noqa: A002
    """The inverse error function on ``(-1, 1)`` (-inf and inf at -1 and 1)."""
    return _ops.erfinv(input)


def expit(input):  # noqa: A002
    """The logistic sigmoid ``1 / (1 + exp(-input))`` (:func:`gradcore.sigmoid`)."""
    return _ops.sigmoid(input)


def logit(input, eps=None):  # noqa: A002
    """``log(p / (1 - p))``, with ``input`` clamped to ``[eps, 1 - eps]`` when ``eps`` is
    given (:func:`gradcore.logit`)."""
    return _ops.logit(input, eps)


def exp2(input):  # noqa: A002
    """``2 ** input``."""
    return _ops.exp2(input)


def expm1(input):  # noqa: A002
    """``exp(input) - 1``, accurate near 0."""
    return _ops.expm1(input)


def log1p(input):  # noqa: A002
    """``log(1 + input)``, accurate near 0."""
    return _ops.log1p(input)


def sinc(input):  # noqa: A002
    """The normalized sinc ``sin(pi x) / (pi x)``, 1 at 0."""
    return _ops.sinc(input)


def round(input, *, decimals=0):  # noqa: A001, A002
    """``input`` rounded half to even, to ``decimals`` decimal places."""
    return _ops.round(input, decimals=decimals)


def xlogy(input, other):  # noqa: A002
    """``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN); either
    may be a number."""
    return _ops.xlogy(input, other)


def xlog1py(input, other):  # noqa: A002
    """``input * log1p(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN); either
    may be a number, integers give float32.

    >>> import gradcore as gc
    >>> gc.special.xlog1py(gc.tensor([0.0, 2.0]), gc.tensor([-1.0, 0.0]))
    tensor([0., 0.])
    """
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"special_xlog1py(): argument 'input' (position 1) must be Tensor, "
                        f"not {type(input).__name__}")
    x = input if isinstance(input, Tensor) else _as_tensor(input, other)
    y = other if isinstance(other, Tensor) else _as_tensor(other, input)
    product = x * _ops.log1p(y)
    if not product.dtype.is_floating_point:  # (int * int stays int: log1p gave float32)
        product = product.float()
    return _ops.where((x == 0) & (y == y), 0.0, product)


def entr(input):  # noqa: A002
    """The elementwise entropy ``-input * log(input)``: 0 at 0, -inf below 0.

    >>> import gradcore as gc
    >>> gc.special.entr(gc.tensor([0.0, 0.5, 1.0]))
    tensor([0.0000, 0.3466, -0.0000])
    """
    return _pw.entr(input)


def ndtr(input):  # noqa: A002
    """The standard normal distribution function ``(1 + erf(input / sqrt(2))) / 2``,
    computed so, as PyTorch's (:func:`log_ndtr` is accurate in the lower tail)."""
    x = _as_tensor(input)
    if not x.dtype.is_floating_point:
        x = x.float()
    return (1 + _ops.erf(x * 0.7071067811865476)) * 0.5


def ndtri(input):  # noqa: A002
    """The inverse of :func:`ndtr`: -inf at 0, inf at 1, NaN outside ``[0, 1]``.

    >>> import gradcore as gc
    >>> gc.special.ndtri(gc.tensor([0.5, 0.975]))
    tensor([0.0000, 1.9600])
    """
    return _pw.ndtri(input)


def log_ndtr(input):  # noqa: A002
    """``log(ndtr(input))``, accurate in both tails."""
    return _pw.log_ndtr(input)


def i0(input):  # noqa: A002
    """The modified Bessel function of the first kind of order 0."""
    return _ops.i0(input)


def i0e(input):  # noqa: A002
    """``exp(-|input|) * i0(input)``, finite where ``i0`` overflows."""
    return _pw.i0e(input)


def i1(input):  # noqa: A002
    """The modified Bessel function of the first kind of order 1."""
    return _pw.i1(input)


def i1e(input):  # noqa: A002
    """``exp(-|input|) * i1(input)``, finite where ``i1`` overflows."""
    return _pw.i1e(input)


def gammaln(input):  # noqa: A002
    """``log|Gamma(input)|`` (:func:`gradcore.lgamma`)."""
    return _ops.lgamma(input)


def digamma(input):  # noqa: A002
    """The logarithmic derivative of Gamma, ``Gamma'(x) / Gamma(x)``."""
    return _ops.digamma(input)


psi = digamma


def polygamma(n, input):  # noqa: A002
    """The ``n``-th derivative of :func:`digamma`."""
    return _ops.polygamma(n, input)


def multigammaln(input, p):  # noqa: A002
    """The multivariate log-gamma function of dimension ``p``
    (:func:`gradcore.mvlgamma`)."""
    return _ops.mvlgamma(input, p)


def zeta(input, other):  # noqa: A002
    """The Hurwitz zeta function ``sum_k (k + other)**-input``; either may be a number.
    Differentiable in ``other`` only: PyTorch has no derivative for ``input``.

    >>> import gradcore as gc
    >>> gc.special.zeta(gc.tensor([2.0, 4.0]), 1.0)
    tensor([1.6449, 1.0823])
    """
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"special_zeta(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return _pw.zeta(input, other)


def softmax(input, dim, *, dtype=None):  # noqa: A002
    """``exp(input) / sum(exp(input))`` along ``dim`` (computed in ``dtype`` when
    given)."""
    return _ops.softmax(input, dim, dtype)


def log_softmax(input, dim, *, dtype=None):  # noqa: A002
    """``log(softmax(input, dim))``, computed stably (in ``dtype`` when given)."""
    return _ops.log_softmax(input, dim, dtype)


def logsumexp(input, dim, keepdim=False):  # noqa: A002
    """``log(sum(exp(input)))`` over ``dim`` (an int or a tuple), computed stably."""
    return _ops.logsumexp(input, dim, keepdim)
