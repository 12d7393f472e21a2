"""The half-normal distribution, as ``torch.distributions.HalfNormal``."""

from __future__ import annotations

import math

from ._half import _Half
from .normal import Normal

__all__ = ["HalfNormal"]


class HalfNormal(_Half):
    """The distribution of ``|X|`` for ``X ~ Normal(0, scale)``.

    Args:
        scale: the scale of the normal distribution (> 0).
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import HalfNormal
    >>> HalfNormal(1.0).log_prob(gc.tensor(0.0))
    tensor(-0.2258)
    """

    _folded = Normal

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)
