"""The Dirichlet distribution, as ``torch.distributions.Dirichlet``, with the implicit
reparameterization gradient of its draws."""

from __future__ import annotations

import numpy as np

from .. import _random, backend
from .._size import Size
from . import _api as gc
from . import constraints
from .distribution import ExponentialFamily
from .gamma import _digamma

__all__ = ["Dirichlet"]

# The rational correction of the middle region (PyTorch's fit, after Jankowiak &
# Obermeyer 2018): [numerator, denominator][power of u][power of a][power of b], with
# u = log(x), a = log(alpha) - u, b = log(total) - a.
_RATIONAL = np.array([
    [[[1.003668233, -0.01061107488, -0.0657888334, 0.01201642863],
      [0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033],
      [-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013]],
     [[0.221950385, -0.3187676331, 0.01799915743, 0.01074823814],
      [-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057],
      [0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05]],
     [[-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565],
      [0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181],
      [0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05]]],
    [[[1.0, -0.02924021934, -0.04438342661, 0.007285809825],
      [0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521],
      [-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149]],
     [[0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273],
      [0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956],
      [-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05]],
     [[0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05],
      [0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05],
      [-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06]]]])


def _beta_grad_alpha_small(x, alpha, beta):
    """d x / d alpha of Beta(alpha, beta) draws near 0: a Taylor series in x."""
    factor = _digamma(alpha) - _digamma(alpha + beta) - np.log(x)
    term = np.ones_like(x)
    series = term / alpha * (factor + 1 / alpha)
    for i in range(1, 11):
        term = term * (i - beta) * x / i
        denom = alpha + i
        series = series + term / denom * (factor + 1 / denom)
    grad = x * (1 - x) ** -beta * series
    return np.where(np.isnan(grad), 0.0, grad)


def _beta_grad_beta_small(x, alpha, beta):
    """d x / d beta of Beta(alpha, beta) draws near 0: a Taylor series in x."""
    factor = _digamma(alpha + beta) - _digamma(beta)
    term, betas, dbetas = np.ones_like(x), np.ones_like(x), np.zeros_like(x)
    series = factor / alpha
    for i in range(1, 9):
        term = term * -x / i
        dbetas = dbetas * (beta - i) + betas
        betas = betas * (beta - i)
        series = series + term / (alpha + i) * (dbetas + factor * betas)
    grad = -(1 - x) ** (1 - beta) * series
    return np.where(np.isnan(grad), 0.0, grad)


def _beta_grad_alpha_mid(x, alpha, beta):
    """d x / d alpha when alpha and beta are both large: Rice's saddle-point expansion,
    with its limit near the mean."""
    total = alpha + beta
    mean = alpha / total
    std = np.sqrt(alpha * beta / (total + 1)) / total
    near = (mean - 0.1 * std <= x) & (x <= mean + 0.1 * std)
    poly = 47 * x * beta ** 4 + alpha * (
        (43 + 20 * (16 + 27 * beta) * x) * beta ** 3 + alpha * (
            3 * (59 + 180 * beta - 90 * x) * beta ** 2 + alpha * (
                (453 + 1620 * beta * (1 - x) - 455 * x) * beta + alpha * (
                    8 * (1 - x) * (135 * beta - 11)))))
    prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / total ** 2
    prefactor_den = 12960 * alpha ** 3 * beta ** 2 * (1 + 12 * total)
    at_mean = prefactor_num / (1 - x) * poly / prefactor_den
    prefactor = -x / np.sqrt(2 * alpha * beta / total)
    stirling = ((1 + 1 / (12 * alpha) + 1 / (288 * alpha ** 2))
                * (1 + 1 / (12 * beta) + 1 / (288 * beta ** 2))
                / (1 + 1 / (12 * total) + 1 / (288 * total ** 2)))
    term1_num = 2 * alpha ** 2 * (x - 1) + alpha * beta * (x - 1) - x * beta ** 2
    axbx = alpha * (x - 1) + beta * x
    term1_den = np.sqrt(2 * alpha / beta) * total ** 1.5 * axbx ** 2
    term1 = term1_num / term1_den
    term2 = 0.5 * np.log(alpha / (total * x))
    term3 = np.sqrt(8 * alpha * beta / total) / (beta * x + alpha * (x - 1))
    term4 = (beta * np.log(beta / (total * (1 - x)))
             + alpha * np.log(alpha / (total * x))) ** -1.5
    away = stirling * prefactor * (term1 + term2 * (term3 + np.where(x < mean, term4, -term4)))
    return np.where(near, at_mean, away)


def _beta_grad_rational(x, alpha, total):
    u = np.log(x)
    a = np.log(alpha) - u
    b = np.log(total) - a
    powers_u, powers_a = (np.ones_like(u), u, u * u), (np.ones_like(a), a, a * a)
    p, q = np.zeros_like(x), np.zeros_like(x)
    for i in range(3):
        for j in range(3):
            ua = powers_u[i] * powers_a[j]
            cp, cq = _RATIONAL[0, i, j], _RATIONAL[1, i, j]
            p = p + ua * (cp[0] + b * (cp[1] + b * (cp[2] + b * cp[3])))
            q = q + ua * (cq[0] + b * (cq[1] + b * (cq[2] + b * cq[3])))
    approx = x * (_digamma(total) - _digamma(alpha)) / (total - alpha)
    return p / q * approx


def dirichlet_grad(x, alpha, total) -> np.ndarray:
    """``-(d cdf / d alpha) / pdf / (1 - x)`` for ``x`` drawn from Beta(alpha, total -
    alpha), the marginal of a Dirichlet component of concentration ``alpha`` among
    concentrations summing to ``total`` (float64, elementwise)."""
    x, alpha, total = (a.reshape(-1) for a in np.broadcast_arrays(
        np.asarray(x, np.float64), np.asarray(alpha, np.float64),
        np.asarray(total, np.float64)))
    beta = total - alpha
    boundary = total * x * (1 - x)
    near_zero = (x <= 0.5) & (boundary < 2.5)
    near_one = ~near_zero & (x >= 0.5) & (boundary < 0.75)
    both_large = ~near_zero & ~near_one & (alpha > 6) & (beta > 6)
    rest = ~(near_zero | near_one | both_large)
    grad = np.empty_like(x)
    with np.errstate(all="ignore"):
        grad[near_zero] = _beta_grad_alpha_small(x[near_zero], alpha[near_zero],
                                                 beta[near_zero])
        grad[near_one] = -_beta_grad_beta_small(1 - x[near_one], beta[near_one],
                                                alpha[near_one])
        grad[both_large] = _beta_grad_alpha_mid(x[both_large], alpha[both_large],
                                                beta[both_large])
        grad[rest] = _beta_grad_rational(x[rest], alpha[rest], total[rest])
    return grad


class _Dirichlet(gc.autograd.Function):
    """Dirichlet draws (normalized gamma draws), differentiable in the concentrations by
    implicit reparameterization, as PyTorch's."""

    @staticmethod
    def forward(ctx, concentration):
        host = np.asarray(backend.to_host(concentration.detach()._data), dtype=np.float64)
        rng = _random.stream(None, concentration.device.type, "_sample_dirichlet")
        gammas = rng.standard_gamma(host) if host.size else host.copy()
        with np.errstate(invalid="ignore"):
            draws = gammas / gammas.sum(-1, keepdims=True)
        tiny = gc.finfo(concentration.dtype).tiny
        x = gc.tensor(np.maximum(draws, tiny), dtype=concentration.dtype,
                      device=concentration.device)
        ctx.save_for_backward(x, concentration)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        x, concentration = ctx.saved_tensors
        alpha = np.asarray(backend.to_host(concentration.detach()._data), np.float64)
        total = np.broadcast_to(alpha.sum(-1, keepdims=True), alpha.shape)
        grad = dirichlet_grad(backend.to_host(x.detach()._data), alpha, total)
        grad = gc.tensor(grad.reshape(tuple(x.shape)), dtype=x.dtype, device=x.device)
        return grad * (grad_output - (x * grad_output).sum(-1, True))


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution over the probability simplex, of concentrations
    ``concentration`` (the last dimension is the event's).

    ``rsample`` is differentiable by implicit reparameterization, with PyTorch's
    gradient (its approximation of each component's Beta marginal).

    Args:
        concentration: the concentrations (> 0), ``(..., K)``.
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import Dirichlet
    >>> Dirichlet(gc.tensor([1.0, 1.0])).log_prob(gc.tensor([0.3, 0.7]))
    tensor(0.)
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self.event_shape)
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        return _Dirichlet.apply(self.concentration.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (gc.xlogy(self.concentration - 1.0, value).sum(-1)
                + gc.lgamma(self.concentration.sum(-1))
                - gc.lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        # (all concentrations below 1: the mass piles up at the largest one's vertex)
        all_below_one = (self.concentration < 1).all(dim=-1, keepdim=True)
        vertex = gc.nn.functional.one_hot(mode.argmax(dim=-1),
                                          concentrationm1.shape[-1]).to(mode.dtype)
        return gc.where(all_below_one, vertex, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (gc.lgamma(self.concentration).sum(-1) - gc.lgamma(a0)
                - (k - a0) * gc.digamma(a0)
                - ((self.concentration - 1.0) * gc.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - gc.lgamma(x.sum(-1))
