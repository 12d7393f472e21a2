"""The Kumaraswamy distribution, as ``torch.distributions.Kumaraswamy``."""

from __future__ import annotations

import math

from . import _api as gc
from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _moments(a, b, n):
    """The ``n``-th moment ``b B(1 + n / a, b)``, through lgamma."""
    arg1 = 1 + n / a
    log_value = gc.lgamma(arg1) + gc.lgamma(b) - gc.lgamma(arg1 + b)
    return b * gc.exp(log_value)


class Kumaraswamy(TransformedDistribution):
    """The Kumaraswamy distribution on (0, 1), of density ``a b x^(a-1) (1 - x^a)^(b-1)``:
    ``(1 - U^(1/b))^(1/a)`` for ``U`` uniform.

    Args:
        concentration1: ``a`` (> 0).
        concentration0: ``b`` (> 0).
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import Kumaraswamy
    >>> Kumaraswamy(2.0, 3.0).log_prob(gc.tensor(0.5))
    tensor(0.5232)
    """

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1,
                                                                 concentration0)
        base_dist = Uniform(gc.full_like(self.concentration0, 0),
                            gc.full_like(self.concentration0, 1), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(tuple(batch_shape))
        new.concentration0 = self.concentration0.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        # (PyTorch's formula, in log space)
        log_mode = self.concentration0.reciprocal() * (-self.concentration0).log1p() - \
            (-self.concentration0 * self.concentration1).log1p()
        bad = (self.concentration0 < 1) | (self.concentration1 < 1)
        return gc.where(bad, math.nan, log_mode).exp()

    @property
    def variance(self):
        return _moments(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self):
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        h0 = gc.digamma(self.concentration0 + 1) + euler_constant
        return t0 + t1 * h0 - gc.log(self.concentration1) - gc.log(self.concentration0)
