"""The generalized Pareto distribution, as ``torch.distributions.GeneralizedPareto``."""

from __future__ import annotations

import math
import numbers

from .._size import Size
from . import _api as gc
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution of location ``loc``, scale ``scale`` and shape
    ``concentration``: the exponential at ``concentration`` 0, a Pareto above, bounded
    below 0 (uniform at -1).

    Args:
        loc: the location (the lower end of the support).
        scale: the scale (> 0).
        concentration: the shape (real).
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import GeneralizedPareto
    >>> GeneralizedPareto(0.0, 1.0, 0.5).log_prob(gc.tensor(1.0))
    tensor(-1.2164)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        if all(isinstance(v, numbers.Number) for v in (loc, scale, concentration)):
            batch_shape = Size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(GeneralizedPareto, ("loc", "scale", "concentration"),
                                   batch_shape, _instance)

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        u = gc.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def _safe_concentration(self):
        eq_zero = gc.isclose(self.concentration, gc.zeros_like(self.concentration))
        return eq_zero, gc.where(eq_zero, gc.ones_like(self.concentration),
                                 self.concentration)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        y = 1 / safe_conc + gc.ones_like(z)
        where_nonzero = gc.where(y == 0, y, y * gc.log1p(safe_conc * z))
        return -self.scale.log() - gc.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value):
        """``log(1 - cdf(value))``.

        Args:
            value: a tensor.
        """
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        where_nonzero = -gc.log1p(safe_conc * z) / safe_conc
        return gc.where(eq_zero, -z, where_nonzero)

    def log_cdf(self, value):
        """``log(cdf(value))``.

        Args:
            value: a tensor.
        """
        return gc.log1p(-gc.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return gc.exp(self.log_cdf(value))

    def icdf(self, value):
        eq_zero, safe_conc = self._safe_concentration()
        logu = gc.log1p(-value)
        where_nonzero = self.loc + self.scale / safe_conc * gc.expm1(-safe_conc * logu)
        where_zero = self.loc - self.scale * logu
        return gc.where(eq_zero, where_zero, where_nonzero)

    def _z(self, x):
        return (x - self.loc) / self.scale

    @property
    def mean(self):
        valid = self.concentration < 1
        safe_conc = gc.where(valid, self.concentration, 0.5)
        return gc.where(valid, self.loc + self.scale / (1 - safe_conc), math.nan)

    @property
    def variance(self):
        valid = self.concentration < 0.5
        safe_conc = gc.where(valid, self.concentration, 0.25)
        result = self.scale ** 2 / ((1 - safe_conc) ** 2 * (1 - 2 * safe_conc))
        return gc.where(valid, result, math.nan)

    def entropy(self):
        ans = gc.log(self.scale) + self.concentration + 1
        return ans.expand(tuple(self._batch_shape))

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = gc.where(self.concentration < 0, lower - self.scale / self.concentration,
                         math.inf)
        return constraints.interval(lower, upper)
