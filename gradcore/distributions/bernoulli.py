"""The Bernoulli distribution, as ``torch.distributions.Bernoulli``."""

from __future__ import annotations

import math

from .._size import Size
from . import _api as gc
from . import constraints
from .distribution import ExponentialFamily
from .utils import (
    ShapedBinaryParams,
    broadcast_all,
)

__all__ = ["Bernoulli"]


def _bce_with_logits(logits, target):
    """Elementwise binary cross-entropy of ``target`` under ``logits`` (PyTorch's stable
    form, ``max(x, 0) - x * t + log1p(exp(-|x|))``)."""
    return logits.clamp(min=0) - logits * target + gc.log1p(gc.exp(-logits.abs()))


class Bernoulli(ExponentialFamily, ShapedBinaryParams):
    """The Bernoulli distribution: 1 with probability ``probs``, else 0. Give ``probs``
    or ``logits`` (log-odds), not both.

    Args:
        probs: the probability of 1.
        logits: the log-odds of 1.
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import Bernoulli
    >>> Bernoulli(logits=gc.tensor([0.0])).log_prob(gc.tensor([1.0]))
    tensor([-0.6931])
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, validate_args=None):
        batch_shape = self._init_binary(probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Bernoulli, _instance)
        batch_shape = Size(batch_shape)
        self._expand_binary(new, batch_shape)
        super(Bernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return gc.where(self.probs == 0.5, math.nan, mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with gc.no_grad():
            return gc.bernoulli(self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -_bce_with_logits(logits, value)

    def entropy(self):
        return _bce_with_logits(self.logits, self.probs)

    def enumerate_support(self, expand=True):
        values = gc.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values

    @property
    def _natural_params(self):
        return (gc.logit(self.probs),)

    def _log_normalizer(self, x):
        return gc.log1p(gc.exp(x))
