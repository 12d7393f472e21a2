"""What HalfNormal and HalfCauchy share: the distribution of ``|X|`` for ``X`` a
distribution centred on 0 (PyTorch writes it out in each)."""

from __future__ import annotations

import math

from . import _api as gc
from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform


class _Half(TransformedDistribution):
    """``|X|`` for ``X ~ _folded(0, scale)``; a subclass names ``_folded`` and gives its
    own ``expand``, ``mean`` and ``variance``."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _folded = None

    def __init__(self, scale, validate_args=None):
        base_dist = self._folded(0, scale, validate_args=False)
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    @property
    def scale(self):
        """The scale of the distribution folded at 0."""
        return self.base_dist.scale

    @property
    def mode(self):
        return gc.zeros_like(self.scale)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = self._log_prob_value(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return gc.where(value >= 0, log_prob, -math.inf)

    def _log_prob_value(self, value):
        """``value`` as ``log_prob`` passes it on, once checked."""
        return value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)
