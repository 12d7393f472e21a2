"""The multinomial distribution, as ``torch.distributions.Multinomial``."""

from __future__ import annotations

import math

from .._size import Size
from . import _api as gc
from . import constraints
from .binomial import Binomial
from .categorical import Categorical
from .distribution import Distribution
from .utils import _size_of, broadcast_all

__all__ = ["Multinomial"]


class Multinomial(Distribution):
    """The counts of each of ``K`` categories in ``total_count`` independent draws of a
    :class:`Categorical` of ``probs`` (or ``logits``; give one).

    Args:
        total_count: the number of draws (an int).
        probs: event weights, ``(..., K)``.
        logits: event log-weights, ``(..., K)``.
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import Multinomial
    >>> Multinomial(2, gc.tensor([0.5, 0.5])).log_prob(gc.tensor([1.0, 1.0]))
    tensor(-0.6931)
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = Size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        super(Multinomial, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    @property
    def logits(self):
        """The normalized log probabilities of the categories."""
        return self._categorical.logits

    @property
    def probs(self):
        """The normalized probabilities of the categories."""
        return self._categorical.probs

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter given."""
        return self._categorical.param_shape

    def sample(self, sample_shape=Size()):
        sample_shape = _size_of(sample_shape)
        samples = self._categorical.sample(Size((self.total_count,)) + sample_shape)
        order = list(range(1, samples.dim())) + [0]
        samples = samples.permute(*order)  # (draws last)
        counts = gc.zeros(tuple(self._extended_shape(sample_shape)), dtype=gc.long,
                          device=samples.device)
        counts.scatter_add_(-1, samples, gc.ones_like(samples))
        return counts.to(self.probs.dtype)

    def entropy(self):
        n = gc.tensor(float(self.total_count), dtype=self.probs.dtype,
                      device=self.probs.device)
        term1 = n * self._categorical.entropy() - gc.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = gc.exp(self._binomial.log_prob(support))
        weights = gc.lgamma(support + 1)
        return term1 + (binomial_probs * weights).sum([0, -1])

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = gc.lgamma(value.sum(-1) + 1)
        log_factorial_xs = gc.lgamma(value + 1).sum(-1)
        # (a category of probability 0 that was drawn 0 times adds nothing)
        logits = gc.where((value == 0) & (logits == -math.inf), 0.0, logits)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)
