"""The relaxed (Concrete) Bernoulli distributions, as
``torch.distributions.RelaxedBernoulli`` and ``LogitRelaxedBernoulli``."""

from __future__ import annotations

from .._size import Size
from . import _api as gc
from . import constraints
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import (
    ShapedBinaryParams,
    broadcast_all,
    clamp_probs,
)

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


class LogitRelaxedBernoulli(Distribution, ShapedBinaryParams):
    """The logit of a :class:`RelaxedBernoulli` sample: ``(logit(u) + logits) /
    temperature`` for uniform ``u``.

    Args:
        temperature: the relaxation temperature (a tensor).
        probs: the probability of 1.
        logits: the log-odds of 1.
        validate_args: whether to check the arguments (see ``Distribution``).
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        batch_shape = self._init_binary(probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogitRelaxedBernoulli, _instance)
        batch_shape = Size(batch_shape)
        new.temperature = self.temperature
        self._expand_binary(new, batch_shape)
        super(LogitRelaxedBernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        probs = clamp_probs(self.probs.expand(shape))
        uniforms = clamp_probs(gc.rand(shape, dtype=probs.dtype, device=probs.device))
        return (uniforms.log() - (-uniforms).log1p() + probs.log()
                - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """The relaxed (Concrete) Bernoulli distribution on (0, 1): differentiable samples
    that approach 0/1 Bernoulli draws as ``temperature`` goes to 0.

    Args:
        temperature: the relaxation temperature (a tensor).
        probs: the probability of 1.
        logits: the log-odds of 1.
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import RelaxedBernoulli
    >>> d = RelaxedBernoulli(gc.tensor(0.5), probs=gc.tensor([0.3, 0.9]))
    >>> d.rsample().shape
    gradcore.Size([2])
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base_dist, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def temperature(self):
        """The relaxation temperature."""
        return self.base_dist.temperature

    @property
    def logits(self):
        """The log-odds of 1."""
        return self.base_dist.logits

    @property
    def probs(self):
        """The probability of 1."""
        return self.base_dist.probs
