"""The Poisson distribution, as ``torch.distributions.Poisson``."""

from __future__ import annotations

from .._size import Size
from . import _api as gc
from . import constraints
from .distribution import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    """The Poisson distribution of rate ``rate``: counts ``k`` with probability
    ``rate**k * exp(-rate) / k!``.

    Args:
        rate: the rate (>= 0).
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import Poisson
    >>> Poisson(2.0).log_prob(gc.tensor(0.0))
    tensor(-2.)
    """

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        self._init_params(Poisson, ('rate',), (rate,), validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Poisson, ('rate',), batch_shape, _instance)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        with gc.no_grad():
            return gc.poisson(self.rate.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()

    @property
    def _natural_params(self):
        return (gc.log(self.rate),)

    def _log_normalizer(self, x):
        return gc.exp(x)
