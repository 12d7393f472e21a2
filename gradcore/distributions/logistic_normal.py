"""The logistic-normal distribution, as ``torch.distributions.LogisticNormal``."""

from __future__ import annotations

from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import StickBreakingTransform

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    """The distribution on the simplex of a normal vector sent through the stick-breaking
    transform: ``log(X / (1 - X.cumsum(-1)))[..., :-1] ~ Normal(loc, scale)``.

    Args:
        loc: the mean of the base normal distribution.
        scale: its standard deviation (> 0).
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import LogisticNormal
    >>> LogisticNormal(gc.zeros(2), gc.ones(2)).log_prob(gc.tensor([0.2, 0.3, 0.5]))
    tensor(1.2980)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self):
        """The mean of the base normal distribution."""
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        """The standard deviation of the base normal distribution."""
        return self.base_dist.base_dist.scale
