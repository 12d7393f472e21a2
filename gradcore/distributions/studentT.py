"""Student's t-distribution, as ``torch.distributions.StudentT``."""

from __future__ import annotations

import math

from .._size import Size
from . import _api as gc
from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .utils import _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t-distribution of ``df`` degrees of freedom, location ``loc`` and scale
    ``scale``.

    Args:
        df: the degrees of freedom (> 0).
        loc: the location.
        scale: the scale (> 0).
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import StudentT
    >>> StudentT(gc.tensor(2.0)).log_prob(gc.tensor(0.0))
    tensor(-1.0397)
    """

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = Size(batch_shape)
        new.df = self.df.expand(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        super(StudentT, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return gc.where(self.df <= 1, math.nan, self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        finite = self.scale.pow(2) * self.df / (self.df - 2)
        infinite = gc.where(self.df > 1, math.inf, math.nan)
        return gc.where(self.df > 2, finite, infinite.to(self.df.dtype))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        x = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * (x * gc.rsqrt(z / self.df))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + gc.lgamma(0.5 * self.df) - gc.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * gc.log1p(y ** 2.0 / self.df) - z

    def entropy(self):
        lbeta = gc.lgamma(0.5 * self.df) + math.lgamma(0.5) - gc.lgamma(0.5 * (self.df + 1))
        return (self.scale.log()
                + 0.5 * (self.df + 1) * (gc.digamma(0.5 * (self.df + 1))
                                         - gc.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)
