"""The Laplace distribution, as ``torch.distributions.Laplace``."""

from __future__ import annotations

from .._size import Size
from . import _api as gc
from . import constraints
from .distribution import Distribution

__all__ = ["Laplace"]


class Laplace(Distribution):
    """The Laplace (double exponential) distribution of location ``loc`` and scale
    ``scale``.

    Args:
        loc: the mean.
        scale: the scale (> 0).
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import Laplace
    >>> Laplace(0.0, 1.0).log_prob(gc.tensor(1.0))
    tensor(-1.6931)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self._init_params(Laplace, ('loc', 'scale'), (loc, scale,), validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Laplace, ('loc', 'scale'), batch_shape, _instance)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return (2 ** 0.5) * self.scale

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        eps = gc.finfo(self.loc.dtype).eps
        u = gc.empty(shape, dtype=self.loc.dtype, device=self.loc.device).uniform_(eps - 1, 1)
        return self.loc - self.scale * u.sign() * gc.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -gc.log(2 * self.scale) - gc.abs(value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * gc.expm1(
            -(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * gc.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + gc.log(2 * self.scale)
