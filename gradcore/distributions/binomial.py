"""The binomial distribution, as ``torch.distributions.Binomial``."""

from __future__ import annotations

import numpy as np

from .. import _random, backend
from .._size import Size
from . import _api as gc
from . import constraints
from .distribution import Distribution
from .utils import (
    ShapedBinaryParams,
    broadcast_all,
)

__all__ = ["Binomial"]


def _clamp_by_zero(x):
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(Distribution, ShapedBinaryParams):
    """The binomial distribution: the number of successes in ``total_count`` independent
    trials of success probability ``probs`` (or log-odds ``logits``; give one).

    Args:
        total_count: the number of trials (a non-negative integer, as a number or tensor).
        probs: the probability of success of each trial.
        logits: the log-odds of success.
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import Binomial
    >>> Binomial(2, gc.tensor(0.5)).log_prob(gc.tensor(1.0))
    tensor(-0.6931)
    """

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
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
        new = self._get_checked_instance(Binomial, _instance)
        batch_shape = Size(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        self._expand_binary(new, batch_shape)
        super(Binomial, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        device = self._param.device
        counts = np.broadcast_to(backend.to_host(self.total_count.detach()._data), shape)
        probs = np.broadcast_to(backend.to_host(self.probs.detach()._data), shape)
        rng = _random.stream(None, device.type, "binomial")
        draws = rng.binomial(counts.astype(np.int64), np.clip(probs, 0.0, 1.0))
        return gc.tensor(draws, dtype=self._param.dtype, device=device)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = gc.lgamma(self.total_count + 1)
        log_factorial_k = gc.lgamma(value + 1)
        log_factorial_nmk = gc.lgamma(self.total_count - value + 1)
        normalize_term = (self.total_count * _clamp_by_zero(self.logits)
                          + self.total_count * gc.log1p(gc.exp(-gc.abs(self.logits)))
                          - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def entropy(self):
        total_count = int(self.total_count.max())
        if not self.total_count.min() == total_count:
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(gc.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total_count = int(self.total_count.max())
        if not self.total_count.min() == total_count:
            raise NotImplementedError(
                "Inhomogeneous total count not supported by `enumerate_support`.")
        values = gc.arange(1 + total_count, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
