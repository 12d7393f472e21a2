"""``gradcore.special``: PyTorch's ``torch.special``, the functions of it that gradcore's
real dtypes can hold, with PyTorch's signatures, results and gradients.

Most are gradcore's own ops under torch.special's names (``expit`` is :func:`sigmoid`,
``gammaln`` is :func:`lgamma`, ``psi`` is :func:`digamma`, ``multigammaln`` is
:func:`mvlgamma`); the others (``erfcx``, ``i0e``, ``i1``, ``i1e``, ``ndtr``, ``ndtri``,
``log_ndtr``, ``xlog1py``, ``entr``, ``zeta``) are primitives of
:mod:`gradcore.ops.pointwise` or compositions of differentiable ops, so gradients of any
order come with them (``zeta``, ``gammainc`` and ``gammaincc`` have one for ``other``
only, as in PyTorch). The Bessel functions (``bessel_j0`` ... ``airy_ai``) and the
orthogonal polynomials (``chebyshev_polynomial_t`` ... ``legendre_polynomial_p``) are
PyTorch's Cephes-based implementations written as array code: like PyTorch's, their
results never require grad (PyTorch defines no derivative for them), and they refuse
float16. Integer inputs give float32. gradcore's ops take no ``out=``, and neither do
these.

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

__all__ = ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
           "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2",
           "expit", "expm1", "gammainc", "gammaincc", "gammaln", "hermite_polynomial_h",
           "hermite_polynomial_he", "i0", "i0e", "i1", "i1e", "laguerre_polynomial_l",
           "legendre_polynomial_p", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp",
           "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
           "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round",
           "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
           "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
           "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc",
           "softmax", "spherical_bessel_j0", "xlog1py", "xlogy", "zeta"]


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


def gammainc(input, other):  # noqa: A002
    """The regularized lower incomplete gamma function ``P(input, other)``
    (:func:`gradcore.igamma`); differentiable in ``other`` only, as PyTorch's.

    >>> import gradcore as gc
    >>> gc.special.gammainc(gc.tensor([1.0, 2.0]), gc.tensor([1.0, 0.5]))
    tensor([0.6321, 0.0902])
    """
    _pw._tensor_pair("special_gammainc", input, other)
    return _ops.igamma(input, other)


def gammaincc(input, other):  # noqa: A002
    """The regularized upper incomplete gamma function ``Q(input, other) = 1 -
    P(input, other)`` (:func:`gradcore.igammac`); differentiable in ``other`` only."""
    _pw._tensor_pair("special_gammaincc", input, other)
    return _ops.igammac(input, other)


# ---- Bessel functions: PyTorch's Cephes code, no derivatives (outputs never require
# grad); tensors only, computed in float64 and rounded to the input's dtype
def bessel_j0(input):  # noqa: A002
    """The Bessel function of the first kind of order 0, ``J_0``.

    >>> import gradcore as gc
    >>> gc.special.bessel_j0(gc.tensor([0.0, 1.0]))
    tensor([1.0000, 0.7652])
    """
    return _pw.special_bessel("bessel_j0", input)


def bessel_j1(input):  # noqa: A002
    """The Bessel function of the first kind of order 1, ``J_1`` (odd)."""
    return _pw.special_bessel("bessel_j1", input)


def bessel_y0(input):  # noqa: A002
    """The Bessel function of the second kind of order 0, ``Y_0``: -inf at 0, NaN
    below."""
    return _pw.special_bessel("bessel_y0", input)


def bessel_y1(input):  # noqa: A002
    """The Bessel function of the second kind of order 1, ``Y_1``: -inf at 0, NaN
    below."""
    return _pw.special_bessel("bessel_y1", input)


def modified_bessel_i0(input):  # noqa: A002
    """The modified Bessel function of the first kind of order 0, ``I_0`` (inf beyond
    about 713)."""
    return _pw.special_bessel("modified_bessel_i0", input)


def modified_bessel_i1(input):  # noqa: A002
    """The modified Bessel function of the first kind of order 1, ``I_1`` (odd)."""
    return _pw.special_bessel("modified_bessel_i1", input)


def modified_bessel_k0(input):  # noqa: A002
    """The modified Bessel function of the second kind of order 0, ``K_0``: inf at 0,
    NaN below."""
    return _pw.special_bessel("modified_bessel_k0", input)


def modified_bessel_k1(input):  # noqa: A002
    """The modified Bessel function of the second kind of order 1, ``K_1``: inf at 0,
    NaN below."""
    return _pw.special_bessel("modified_bessel_k1", input)


def scaled_modified_bessel_k0(input):  # noqa: A002
    """``exp(input) * K_0(input)``, finite where ``K_0`` underflows."""
    return _pw.special_bessel("scaled_modified_bessel_k0", input)


def scaled_modified_bessel_k1(input):  # noqa: A002
    """``exp(input) * K_1(input)``, finite where ``K_1`` underflows."""
    return _pw.special_bessel("scaled_modified_bessel_k1", input)


def spherical_bessel_j0(input):  # noqa: A002
    """The spherical Bessel function of the first kind of order 0, ``sin(x) / x`` (1 at
    0, 0 at the infinities)."""
    return _pw.special_bessel("spherical_bessel_j0", input)


def airy_ai(input):  # noqa: A002
    """Airy's function ``Ai``, the solution of ``y'' = x y`` that decays as ``x`` grows
    (NaN at the infinities, as PyTorch's).

    >>> import gradcore as gc
    >>> gc.special.airy_ai(gc.tensor([0.0, 1.0]))
    tensor([0.3550, 0.1353])
    """
    return _pw.special_bessel("airy_ai", input)


# ---- orthogonal polynomials of degree n: PyTorch's recurrences (and closed forms), no
# derivatives; input or n may be a number, n is truncated to an integer (0 below 0)
def chebyshev_polynomial_t(input, n):  # noqa: A002
    """The Chebyshev polynomial of the first kind ``T_n(input)``.

    >>> import gradcore as gc
    >>> gc.special.chebyshev_polynomial_t(gc.tensor([0.5, 2.0]), 3)
    tensor([-1., 26.])
    """
    return _pw.special_polynomial("chebyshev_polynomial_t", input, n)


def chebyshev_polynomial_u(input, n):  # noqa: A002
    """The Chebyshev polynomial of the second kind ``U_n(input)``."""
    return _pw.special_polynomial("chebyshev_polynomial_u", input, n)


def chebyshev_polynomial_v(input, n):  # noqa: A002
    """The Chebyshev polynomial of the third kind ``V_n(input)``."""
    return _pw.special_polynomial("chebyshev_polynomial_v", input, n)


def chebyshev_polynomial_w(input, n):  # noqa: A002
    """The Chebyshev polynomial of the fourth kind ``W_n(input)``."""
    return _pw.special_polynomial("chebyshev_polynomial_w", input, n)


def shifted_chebyshev_polynomial_t(input, n):  # noqa: A002
    """The shifted Chebyshev polynomial of the first kind, ``T_n(2 input - 1)``."""
    return _pw.special_polynomial("shifted_chebyshev_polynomial_t", input, n)


def shifted_chebyshev_polynomial_u(input, n):  # noqa: A002
    """The shifted Chebyshev polynomial of the second kind, ``U_n(2 input - 1)``."""
    return _pw.special_polynomial("shifted_chebyshev_polynomial_u", input, n)


def shifted_chebyshev_polynomial_v(input, n):  # noqa: A002
    """The shifted Chebyshev polynomial of the third kind, ``V_n(2 input - 1)``."""
    return _pw.special_polynomial("shifted_chebyshev_polynomial_v", input, n)


def shifted_chebyshev_polynomial_w(input, n):  # noqa: A002
    """The shifted Chebyshev polynomial of the fourth kind, ``W_n(2 input - 1)``."""
    return _pw.special_polynomial("shifted_chebyshev_polynomial_w", input, n)


def hermite_polynomial_h(input, n):  # noqa: A002
    """The physicists' Hermite polynomial ``H_n(input)`` (NaN above degree 128 in
    float32, 512 in float64, as PyTorch's)."""
    return _pw.special_polynomial("hermite_polynomial_h", input, n)


def hermite_polynomial_he(input, n):  # noqa: A002
    """The probabilists' Hermite polynomial ``He_n(input)`` (NaN above degree 128 in
    float32, 512 in float64)."""
    return _pw.special_polynomial("hermite_polynomial_he", input, n)


def laguerre_polynomial_l(input, n):  # noqa: A002
    """The Laguerre polynomial ``L_n(input)``."""
    return _pw.special_polynomial("laguerre_polynomial_l", input, n)


def legendre_polynomial_p(input, n):  # noqa: A002
    """The Legendre polynomial ``P_n(input)``.

    >>> import gradcore as gc
    >>> gc.special.legendre_polynomial_p(gc.tensor([0.5, 1.0]), 2)
    tensor([-0.1250,  1.0000])
    """
    return _pw.special_polynomial("legendre_polynomial_p", input, n)
