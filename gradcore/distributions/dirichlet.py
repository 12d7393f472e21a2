"""The Dirichlet distribution, as ``torch.distributions.Dirichlet``."""

from __future__ import annotations

from .._size import Size
from . import _api as gc
from . import constraints
from .distribution import ExponentialFamily
from .gamma import _standard_gamma

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution over the probability simplex, of concentrations
    ``concentration`` (the last dimension is the event's).

    ``rsample`` normalizes gamma draws, ``z / z.sum(-1)`` with ``z ~ Gamma(alpha, 1)``
    each differentiable by implicit reparameterization: an unbiased pathwise gradient,
    though not, sample by sample, the one PyTorch computes (its own ``_dirichlet_grad``).

    Args:
        concentration: the concentrations (> 0), ``(..., K)``.
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import Dirichlet
    >>> Dirichlet(gc.tensor([1.0, 1.0])).log_prob(gc.tensor([0.3, 0.7]))
    tensor(0.)
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self.event_shape)
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        gammas = _standard_gamma(self.concentration.expand(shape))
        return gammas / gammas.sum(-1, keepdim=True)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (gc.xlogy(self.concentration - 1.0, value).sum(-1)
                + gc.lgamma(self.concentration.sum(-1))
                - gc.lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        # (all concentrations below 1: the mass piles up at the largest one's vertex)
        all_below_one = (self.concentration < 1).all(dim=-1, keepdim=True)
        vertex = gc.nn.functional.one_hot(mode.argmax(dim=-1),
                                          concentrationm1.shape[-1]).to(mode.dtype)
        return gc.where(all_below_one, vertex, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (gc.lgamma(self.concentration).sum(-1) - gc.lgamma(a0)
                - (k - a0) * gc.digamma(a0)
                - ((self.concentration - 1.0) * gc.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - gc.lgamma(x.sum(-1))
