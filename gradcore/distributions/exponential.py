"""The exponential distribution, as ``torch.distributions.Exponential``."""

from __future__ import annotations

from .._size import Size
from . import _api as gc
from . import constraints
from .distribution import ExponentialFamily

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    """The exponential distribution of rate ``rate`` (mean ``1 / rate``).

    Args:
        rate: the rate (> 0).
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import Exponential
    >>> Exponential(2.0).log_prob(gc.tensor(1.0))
    tensor(-1.3069)
    """

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, rate, validate_args=None):
        self._init_params(Exponential, ('rate',), (rate,), validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Exponential, ('rate',), batch_shape, _instance)

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return gc.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        draws = gc.empty(shape, dtype=self.rate.dtype, device=self.rate.device).exponential_()
        return draws / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - gc.exp(-self.rate * value)

    def icdf(self, value):
        return -gc.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - gc.log(self.rate)

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -gc.log(-x)
