"""The LKJ distribution of correlation matrices' Cholesky factors, as
``torch.distributions.LKJCholesky``."""

from __future__ import annotations

import math

from .._size import Size
from . import _api as gc
from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import _standard_normal, broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """The LKJ distribution (Lewandowski, Kurowicka and Joe, 2009) of the lower Cholesky
    factors ``L`` of ``dim x dim`` correlation matrices ``L @ L.T``, of density
    proportional to ``det(L @ L.T) ** (concentration - 1)``; samples by the onion method.
    No ``rsample``.

    Args:
        dim: the matrices' size (>= 2).
        concentration: the shape (> 0): 1 is uniform over correlation matrices, larger
            values favour the identity.
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import LKJCholesky
    >>> LKJCholesky(2, 2.0).log_prob(gc.eye(2))
    tensor(-0.2877)
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found "
                             f"dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = Size((dim, dim))
        # the marginal concentrations of the onion method's Beta draws
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = gc.arange(self.dim - 1, dtype=self.concentration.dtype,
                           device=self.concentration.device)
        offset = gc.cat([offset.new_zeros((1,)), offset])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=Size()):
        """Draws by the onion method (Lewandowski et al., 2009; PyTorch's variant: each
        row a Beta-distributed radius times a uniform direction).

        Args:
            sample_shape: how many samples to draw, as a shape.
        """
        with gc.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u_normal = _standard_normal(tuple(self._extended_shape(sample_shape)),
                                        dtype=y.dtype, device=y.device).tril(-1)
            first_row = (gc.arange(self.dim, device=y.device) == 0).unsqueeze(-1)
            norm = u_normal.norm(dim=-1, keepdim=True)
            u_hypersphere = gc.where(first_row, 0.0, u_normal / gc.where(first_row, 1.0, norm))
            w = gc.sqrt(y) * u_hypersphere
            eps = gc.finfo(w.dtype).tiny
            diag_elems = gc.clamp(1 - (w ** 2).sum(dim=-1), min=eps).sqrt()
            return w + gc.diag_embed(diag_elems)

    def log_prob(self, value):
        # (PyTorch's normalization: Lewandowski et al.'s, in the form of the LKJ
        # distribution of the Cholesky factor, Stan's lkj_corr_cholesky)
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = gc.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = (order * diag_elems.log()).sum(dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = gc.lgamma(alpha) * dm1
        numerator = gc.mvlgamma(alpha - 0.5, dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        return unnormalized_log_pdf - (pi_constant + numerator - denominator)
