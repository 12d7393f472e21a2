"""The beta distribution, as ``torch.distributions.Beta``."""

from __future__ import annotations

import numbers

from .._size import Size
from . import _api as gc
from . import constraints
from .dirichlet import Dirichlet
from .distribution import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Beta"]


class Beta(ExponentialFamily):
    """The beta distribution on [0, 1] of concentrations ``concentration1`` (alpha) and
    ``concentration0`` (beta), a two-category :class:`Dirichlet` (whose ``rsample`` it
    uses).

    Args:
        concentration1: the first concentration, alpha (> 0).
        concentration0: the second concentration, beta (> 0).
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import Beta
    >>> Beta(2.0, 2.0).log_prob(gc.tensor(0.5))
    tensor(0.4055)
    """

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        if isinstance(concentration1, numbers.Real) and isinstance(concentration0,
                                                                   numbers.Real):
            concentration1_concentration0 = gc.tensor([float(concentration1),
                                                       float(concentration0)])
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            concentration1_concentration0 = gc.stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(concentration1_concentration0,
                                    validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = Size(batch_shape)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        super(Beta, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        heads_tails = gc.stack([value, 1.0 - value], -1)
        return self._dirichlet.log_prob(heads_tails)

    def entropy(self):
        return self._dirichlet.entropy()

    @property
    def concentration1(self):
        """The first concentration, alpha."""
        result = self._dirichlet.concentration[..., 0]
        return gc.tensor([result]) if isinstance(result, numbers.Number) else result

    @property
    def concentration0(self):
        """The second concentration, beta."""
        result = self._dirichlet.concentration[..., 1]
        return gc.tensor([result]) if isinstance(result, numbers.Number) else result

    @property
    def _natural_params(self):
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x, y):
        return gc.lgamma(x) + gc.lgamma(y) - gc.lgamma(x + y)
