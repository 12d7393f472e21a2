"""The gamma distribution, as ``torch.distributions.Gamma``, and the standard gamma draw
with its implicit reparameterization gradient (what ``Dirichlet`` and ``Beta`` build on).
"""

from __future__ import annotations

import numpy as np

from .. import _random, backend
from .._size import Size
from . import _api as gc
from . import constraints
from .distribution import ExponentialFamily

__all__ = ["Gamma"]

# The rational approximation of d x / d alpha in the middle region (coefficients of
# Jankowiak & Obermeyer, "Pathwise derivatives beyond the reparameterization trick",
# 2018, as PyTorch uses them): rows are the constant, linear and quadratic terms in
# u = log(x / alpha); columns the numerator's and denominator's cubics in log(alpha).
_RATIONAL = np.array([
    [0.16009398, -0.094634809, 0.025146376, -0.0030648343,
     1.0, 0.32668115, 0.10406089, 0.0014179084],
    [0.53487893, 0.1298071, 0.065735949, -0.0015649758,
     0.16639465, 0.020070113, -0.0035938915, -0.00058392623],
    [0.040121004, -0.0065914022, -0.0026286047, -0.0013441777,
     0.017050642, -0.0021309326, 0.00085092367, -1.5247877e-07]])


def _digamma(x: np.ndarray) -> np.ndarray:
    # (on the host whatever the default device: these are host arrays)
    return gc.digamma(gc.tensor(x, dtype=gc.float64, device="cpu")).numpy()


def _gamma_grad_small_x(alpha, x):
    """Taylor series of the regularized incomplete gamma function in ``x`` (x < 0.8)."""
    term, denom = np.ones_like(x), alpha.copy()
    cdf_series, dcdf_series = 1 / denom, 1 / denom ** 2
    for i in range(1, 6):
        term = term * -x / i
        denom = denom + 1
        cdf_series = cdf_series + term / denom
        dcdf_series = dcdf_series + term / denom ** 2
    x_pow_alpha = x ** alpha
    pdf = x ** (alpha - 1) * np.exp(-x)
    cdf = x_pow_alpha * cdf_series
    dcdf_dalpha = (np.log(x) - _digamma(alpha)) * cdf - x_pow_alpha * dcdf_series
    grad = -dcdf_dalpha / pdf
    return np.where(np.isnan(grad), 0.0, grad)


def _gamma_grad_large_alpha(alpha, x):
    """Rice's saddle-point expansion (alpha > 8), with its limit near x = alpha."""
    near = (0.9 * alpha <= x) & (x <= 1.1 * alpha)
    at_mode = ((1 + 24 * alpha * (1 + 12 * alpha))
               * (1440 * alpha ** 2 + 6 * x * (53 - 120 * x) - 65 * x ** 2 / alpha
                  + alpha * (107 + 3600 * x)) / (1244160 * alpha ** 4))
    with np.errstate(all="ignore"):
        denom = np.sqrt(8 * alpha)
        term2 = denom / (alpha - x)
        term3 = (x - alpha - alpha * np.log(x / alpha)) ** -1.5
        term23 = np.where(x < alpha, term2 - term3, term2 + term3)
        term1 = np.log(x / alpha) * term23 \
            - np.sqrt(2 / alpha) * (alpha + x) / (alpha - x) ** 2
        stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
        away = -stirling * x * term1 / denom
    return np.where(near, at_mode, away)


def _gamma_grad_rational(alpha, x):
    u, v = np.log(x / alpha), np.log(alpha)
    coef = _RATIONAL[0][:, None] + u * (_RATIONAL[1][:, None] + u * _RATIONAL[2][:, None])
    p = coef[0] + v * (coef[1] + v * (coef[2] + v * coef[3]))
    q = coef[4] + v * (coef[5] + v * (coef[6] + v * coef[7]))
    return np.exp(p / q)


def standard_gamma_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``d x / d alpha`` for ``x`` drawn from Gamma(alpha, 1), held at a fixed quantile:
    ``-(d cdf / d alpha) / pdf`` (implicit reparameterization), in float64."""
    alpha, x = np.broadcast_arrays(np.asarray(alpha, np.float64), np.asarray(x, np.float64))
    alpha, x = alpha.reshape(-1), x.reshape(-1)
    grad = np.empty_like(x)
    small = x < 0.8
    large = ~small & (alpha > 8)
    middle = ~small & ~large
    with np.errstate(all="ignore"):
        grad[small] = _gamma_grad_small_x(alpha[small], x[small])
        grad[large] = _gamma_grad_large_alpha(alpha[large], x[large])
        grad[middle] = _gamma_grad_rational(alpha[middle], x[middle])
    return grad


class _StandardGamma(gc.autograd.Function):
    """Gamma(alpha, 1) draws, differentiable in alpha by implicit reparameterization."""

    @staticmethod
    def forward(ctx, alpha):
        host = np.asarray(backend.to_host(alpha.detach()._data), dtype=np.float64)
        rng = _random.stream(None, alpha.device.type, "_standard_gamma")
        draws = rng.standard_gamma(host) if host.size else host.copy()
        # (clamped to the smallest normal number, as PyTorch clamps its draws)
        tiny = gc.finfo(alpha.dtype).tiny
        x = gc.tensor(np.maximum(draws, tiny), dtype=alpha.dtype, device=alpha.device)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        alpha, x = ctx.saved_tensors
        dx_dalpha = standard_gamma_grad(backend.to_host(alpha.detach()._data),
                                        backend.to_host(x.detach()._data))
        dx_dalpha = gc.tensor(dx_dalpha.reshape(tuple(x.shape)), dtype=x.dtype,
                              device=x.device)
        return grad_output * dx_dalpha


def _standard_gamma(concentration):
    """Draws of Gamma(concentration, 1), differentiable in ``concentration``."""
    return _StandardGamma.apply(concentration)


class Gamma(ExponentialFamily):
    """The gamma distribution of shape ``concentration`` and rate ``rate`` (mean
    ``concentration / rate``). ``rsample`` is differentiable in both (implicit
    reparameterization for the concentration).

    Args:
        concentration: the shape parameter (> 0).
        rate: the rate, 1 / scale (> 0).
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import Gamma
    >>> Gamma(2.0, 1.0).log_prob(gc.tensor(1.0))
    tensor(-1.)
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        self._init_params(Gamma, ('concentration', 'rate'), (concentration, rate,), validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Gamma, ('concentration', 'rate'), batch_shape, _instance)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        return _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)

    def log_prob(self, value):
        value = gc.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (gc.xlogy(self.concentration, self.rate)
                + gc.xlogy(self.concentration - 1, value)
                - self.rate * value - gc.lgamma(self.concentration))

    def entropy(self):
        return (self.concentration - gc.log(self.rate) + gc.lgamma(self.concentration)
                + (1.0 - self.concentration) * gc.digamma(self.concentration))

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return gc.lgamma(x + 1) + (x + 1) * gc.log(-y.reciprocal())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return gc.igamma(self.concentration, self.rate * value)
