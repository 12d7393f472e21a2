"""The continuous Bernoulli distribution, as ``torch.distributions.ContinuousBernoulli``.
"""

from __future__ import annotations

import math

from .._size import Size
from . import _api as gc
from . import constraints
from .bernoulli import _bce_with_logits
from .distribution import ExponentialFamily
from .utils import (
    ShapedBinaryParams,
    broadcast_all,
    clamp_probs,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily, ShapedBinaryParams):
    """The continuous Bernoulli distribution on [0, 1] (Loaiza-Ganem and Cunningham,
    2019): density ``C(p) p^x (1 - p)^(1-x)``. Give ``probs`` or ``logits``, not both;
    near ``probs = 0.5`` (inside ``lims``) Taylor expansions replace the unstable closed
    forms.

    Args:
        probs: the parameter ``p`` in [0, 1].
        logits: its log-odds.
        lims: the interval around 0.5 where the Taylor expansions are used.
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import ContinuousBernoulli
    >>> ContinuousBernoulli(gc.tensor(0.8)).log_prob(gc.tensor(0.6))
    tensor(0.0598)
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        batch_shape = self._init_binary(probs, logits)
        if probs is not None:
            if validate_args is not None and \
                    not bool(self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = self._param = clamp_probs(self.probs)
        self._lims = lims
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = Size(batch_shape)
        self._expand_binary(new, batch_shape)
        super(ContinuousBernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        return gc.where(self._outside_unstable_region(), self.probs,
                        self._lims[0] * gc.ones_like(self.probs))

    def _cont_bern_log_norm(self):
        """The log normalizing constant, as a function of ``probs``."""
        cut_probs = self._cut_probs()
        below_half = gc.where(cut_probs <= 0.5, cut_probs, gc.zeros_like(cut_probs))
        above_half = gc.where(cut_probs >= 0.5, cut_probs, gc.ones_like(cut_probs))
        log_norm = gc.log(gc.abs(gc.log1p(-cut_probs) - gc.log(cut_probs))) - gc.where(
            cut_probs <= 0.5, gc.log1p(-2.0 * below_half), gc.log(2.0 * above_half - 1.0))
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return gc.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut_probs = self._cut_probs()
        mus = cut_probs / (2.0 * cut_probs - 1.0) + 1.0 / (gc.log1p(-cut_probs) -
                                                           gc.log(cut_probs))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return gc.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return self.variance.sqrt()

    @property
    def variance(self):
        cut_probs = self._cut_probs()
        variances = cut_probs * (cut_probs - 1.0) / (1.0 - 2.0 * cut_probs).pow(2) + \
            1.0 / (gc.log1p(-cut_probs) - gc.log(cut_probs)).pow(2)
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return gc.where(self._outside_unstable_region(), variances, taylor)

    @lazy_property
    def logits(self):
        """The log-odds of ``probs``."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        """The parameter ``p`` (clamped away from 0 and 1)."""
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        u = gc.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        with gc.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        u = gc.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -_bce_with_logits(logits, value) + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut_probs = self._cut_probs()
        cdfs = (cut_probs.pow(value) * (1.0 - cut_probs).pow(1.0 - value) + cut_probs -
                1.0) / (2.0 * cut_probs - 1.0)
        unbounded = gc.where(self._outside_unstable_region(), cdfs, value)
        return gc.where(value <= 0.0, gc.zeros_like(value),
                        gc.where(value >= 1.0, gc.ones_like(value), unbounded))

    def icdf(self, value):
        cut_probs = self._cut_probs()
        return gc.where(self._outside_unstable_region(),
                        (gc.log1p(-cut_probs + value * (2.0 * cut_probs - 1.0)) -
                         gc.log1p(-cut_probs)) / (gc.log(cut_probs) - gc.log1p(-cut_probs)),
                        value)

    def entropy(self):
        log_probs0 = gc.log1p(-self.probs)
        log_probs1 = gc.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        """The log normalizing constant, as a function of the natural parameter."""
        out_unst_reg = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut_nat_params = gc.where(out_unst_reg, x, (self._lims[0] - 0.5) * gc.ones_like(x))
        log_norm = gc.log(gc.abs(gc.expm1(cut_nat_params))) - gc.log(gc.abs(cut_nat_params))
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return gc.where(out_unst_reg, log_norm, taylor)
