"""The half-Cauchy distribution, as ``torch.distributions.HalfCauchy``."""

from __future__ import annotations

import math

from . import _api as gc
from ._half import _Half
from .cauchy import Cauchy

__all__ = ["HalfCauchy"]


class HalfCauchy(_Half):
    """The distribution of ``|X|`` for ``X ~ Cauchy(0, scale)``.

    Args:
        scale: the scale of the Cauchy distribution (> 0).
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import HalfCauchy
    >>> HalfCauchy(1.0).log_prob(gc.tensor(0.0))
    tensor(-0.4516)
    """

    _folded = Cauchy

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfCauchy, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return gc.full(tuple(self._extended_shape()), math.inf, dtype=self.scale.dtype,
                       device=self.scale.device)

    @property
    def variance(self):
        return self.base_dist.variance

    def _log_prob_value(self, value):
        return gc.as_tensor(value, dtype=self.scale.dtype, device=self.scale.device)
