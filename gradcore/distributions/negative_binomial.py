"""The negative binomial distribution, as ``torch.distributions.NegativeBinomial``."""

from __future__ import annotations

from .._size import Size
from . import _api as gc
from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import (
    ShapedBinaryParams,
    broadcast_all,
    lazy_property,
)

__all__ = ["NegativeBinomial"]


class NegativeBinomial(Distribution, ShapedBinaryParams):
    """The number of successes before ``total_count`` failures in Bernoulli trials of
    success probability ``probs`` (or log-odds ``logits``; give one).

    Args:
        total_count: the number of failures (>= 0; need not be an integer).
        probs: the probability of success, in [0, 1).
        logits: the log-odds of success.
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import NegativeBinomial
    >>> NegativeBinomial(2.0, gc.tensor(0.5)).log_prob(gc.tensor(0.0))
    tensor(-1.3863)
    """

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(NegativeBinomial, _instance)
        batch_shape = Size(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        self._expand_binary(new, batch_shape)
        super(NegativeBinomial, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.total_count * gc.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / gc.sigmoid(-self.logits)

    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=gc.exp(-self.logits),
                     validate_args=False)

    def sample(self, sample_shape=Size()):
        with gc.no_grad():
            return gc.poisson(self._gamma.sample(sample_shape=sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logsigmoid = gc.nn.functional.logsigmoid
        log_unnormalized_prob = (self.total_count * logsigmoid(-self.logits)
                                 + value * logsigmoid(self.logits))
        log_normalization = (-gc.lgamma(self.total_count + value) + gc.lgamma(1.0 + value)
                             + gc.lgamma(self.total_count))
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0,
                                                          0.0)
        return log_unnormalized_prob - log_normalization
