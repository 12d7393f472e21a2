"""The geometric distribution, as ``torch.distributions.Geometric``."""

from __future__ import annotations

import numbers

from .._size import Size
from . import _api as gc
from . import constraints
from .bernoulli import _bce_with_logits
from .distribution import Distribution
from .utils import BinaryParams, broadcast_all

__all__ = ["Geometric"]


class Geometric(Distribution, BinaryParams):
    """The number of failures before the first success in Bernoulli trials of success
    probability ``probs`` (or log-odds ``logits``; give one): values 0, 1, 2, ...

    Args:
        probs: the probability of success, in (0, 1].
        logits: the log-odds of success.
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import Geometric
    >>> Geometric(gc.tensor(0.5)).log_prob(gc.tensor(1.0))
    tensor(-1.3863)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        given = probs if probs is not None else logits
        batch_shape = Size() if isinstance(given, numbers.Number) else given.size()
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            value = self.probs
            valid = value > 0
            if not bool(valid.all()):
                raise ValueError(
                    f"Expected parameter probs ({type(value).__name__} of shape "
                    f"{tuple(value.shape)}) of distribution {self!r} to be positive but "
                    f"found invalid values:\n{value.detach()[~valid]}")

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Geometric, _instance)
        batch_shape = Size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
        super(Geometric, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return gc.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        tiny = gc.finfo(self.probs.dtype).tiny
        with gc.no_grad():
            u = gc.empty(shape, dtype=self.probs.dtype, device=self.probs.device)
            u = u.uniform_(tiny, 1)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # (probability 1 of success: 0 failures is certain, log(0 ** 0) = 0)
        probs = gc.where((probs == 1) & (value == 0), 0.0, probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        return _bce_with_logits(self.logits, self.probs) / self.probs
