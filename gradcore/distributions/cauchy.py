"""The Cauchy distribution, as ``torch.distributions.Cauchy``."""

from __future__ import annotations

import math

from .._size import Size
from . import _api as gc
from . import constraints
from .distribution import Distribution

__all__ = ["Cauchy"]


class Cauchy(Distribution):
    """The Cauchy (Lorentz) distribution of median ``loc`` and half width ``scale``.

    Args:
        loc: the median.
        scale: the half width at half maximum (> 0).
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import Cauchy
    >>> Cauchy(0.0, 1.0).log_prob(gc.tensor(0.0))
    tensor(-1.1447)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self._init_params(Cauchy, ('loc', 'scale'), (loc, scale,), validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Cauchy, ('loc', 'scale'), batch_shape, _instance)

    @property
    def mean(self):
        return gc.full(tuple(self._extended_shape()), math.nan, dtype=self.loc.dtype,
                       device=self.loc.device)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return gc.full(tuple(self._extended_shape()), math.inf, dtype=self.loc.dtype,
                       device=self.loc.device)

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        eps = gc.empty(shape, dtype=self.loc.dtype, device=self.loc.device).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (-math.log(math.pi) - self.scale.log()
                - (((value - self.loc) / self.scale) ** 2).log1p())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return gc.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return gc.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()
