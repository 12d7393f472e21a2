"""The multivariate normal distribution of low-rank-plus-diagonal covariance, as
``torch.distributions.LowRankMultivariateNormal``."""

from __future__ import annotations

import math

from .._size import Size
from . import _api as gc
from . import constraints
from .distribution import Distribution
from .multivariate_normal import _batch_mahalanobis, _batch_mv
from .utils import _standard_normal, lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _batch_capacitance_tril(W, D):  # noqa: N803
    """The Cholesky factor of the capacitance ``I + W^T D^-1 W``."""
    m = W.size(-1)
    Wt_Dinv = W.mT / D.unsqueeze(-2)  # noqa: N806
    K = gc.matmul(Wt_Dinv, W) + gc.eye(m, dtype=W.dtype, device=W.device)  # noqa: N806
    return gc.linalg.cholesky(K)


def _batch_lowrank_logdet(W, D, capacitance_tril):  # noqa: N803
    """``log|W W^T + D| = log|C| + log|D|`` (the matrix determinant lemma)."""
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)


def _batch_lowrank_mahalanobis(W, D, x, capacitance_tril):  # noqa: N803
    """``x^T (W W^T + D)^-1 x`` by Woodbury's identity."""
    Wt_Dinv = W.mT / D.unsqueeze(-2)  # noqa: N806
    Wt_Dinv_x = _batch_mv(Wt_Dinv, x)  # noqa: N806
    return (x.pow(2) / D).sum(-1) - _batch_mahalanobis(capacitance_tril, Wt_Dinv_x)


class LowRankMultivariateNormal(Distribution):
    """The multivariate normal distribution of mean ``loc`` and covariance ``cov_factor
    @ cov_factor.T + diag(cov_diag)``; log-probabilities and entropies through the small
    capacitance matrix ``I + cov_factor.T @ diag(cov_diag)^-1 @ cov_factor`` (Woodbury's
    identity and the matrix determinant lemma).

    Args:
        loc: the mean, ``batch_shape + (D,)``.
        cov_factor: the low-rank factor, ``batch_shape + (D, rank)``.
        cov_diag: the diagonal part (> 0), ``batch_shape + (D,)``.
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import LowRankMultivariateNormal
    >>> d = LowRankMultivariateNormal(gc.zeros(2), gc.tensor([[1.0], [0.0]]), gc.ones(2))
    >>> d.log_prob(gc.zeros(2))
    tensor(-2.1845)
    """

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if cov_factor.shape[-2:-1] != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape "
                             f"{event_shape[0]} x m")
        if cov_diag.shape[-1:] != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        loc_ = loc.unsqueeze(-1)
        cov_diag_ = cov_diag.unsqueeze(-1)
        try:
            loc_, self.cov_factor, cov_diag_ = gc.broadcast_tensors(loc_, cov_factor, cov_diag_)
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor "
                             f"{cov_factor.shape}, cov_diag {cov_diag.shape}") from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        batch_shape = self.loc.shape[:-1]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = Size(batch_shape)
        loc_shape = tuple(batch_shape + self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + tuple(self.cov_factor.shape[-1:]))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        super(LowRankMultivariateNormal, new).__init__(batch_shape, self.event_shape,
                                                       validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        """The diagonal of the covariance."""
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1) +
                self._unbroadcasted_cov_diag).expand(tuple(self._batch_shape +
                                                           self._event_shape))

    @lazy_property
    def scale_tril(self):
        """The lower Cholesky factor of the covariance."""
        n = self._event_shape[0]
        cov_diag_sqrt_unsqueeze = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        Dinvsqrt_W = self._unbroadcasted_cov_factor / cov_diag_sqrt_unsqueeze  # noqa: N806
        K = gc.matmul(Dinvsqrt_W, Dinvsqrt_W.mT) + \
            gc.eye(n, dtype=self.loc.dtype, device=self.loc.device)  # noqa: N806
        scale_tril = cov_diag_sqrt_unsqueeze * gc.linalg.cholesky(K)
        return scale_tril.expand(tuple(self._batch_shape + self._event_shape +
                                       self._event_shape))

    @lazy_property
    def covariance_matrix(self):
        """``cov_factor @ cov_factor.T + diag(cov_diag)``."""
        covariance_matrix = gc.matmul(self._unbroadcasted_cov_factor,
                                      self._unbroadcasted_cov_factor.mT) + \
            gc.diag_embed(self._unbroadcasted_cov_diag)
        return covariance_matrix.expand(tuple(self._batch_shape + self._event_shape +
                                              self._event_shape))

    @lazy_property
    def precision_matrix(self):
        """The inverse of the covariance, by Woodbury's identity."""
        Wt_Dinv = self._unbroadcasted_cov_factor.mT / \
            self._unbroadcasted_cov_diag.unsqueeze(-2)  # noqa: N806
        A = gc.linalg.solve_triangular(self._capacitance_tril, Wt_Dinv,  # noqa: N806
                                       upper=False)
        precision_matrix = gc.diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - A.mT @ A
        return precision_matrix.expand(tuple(self._batch_shape + self._event_shape +
                                             self._event_shape))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        W_shape = tuple(shape[:-1]) + tuple(self.cov_factor.shape[-1:])  # noqa: N806
        eps_W = _standard_normal(W_shape, dtype=self.loc.dtype, device=self.loc.device)  # noqa: N806
        eps_D = _standard_normal(tuple(shape), dtype=self.loc.dtype,  # noqa: N806
                                 device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_W) + \
            self._unbroadcasted_cov_diag.sqrt() * eps_D

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor,  # noqa: N806
                                       self._unbroadcasted_cov_diag, diff,
                                       self._capacitance_tril)
        log_det = _batch_lowrank_logdet(self._unbroadcasted_cov_factor,
                                        self._unbroadcasted_cov_diag, self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + log_det + M)

    def entropy(self):
        log_det = _batch_lowrank_logdet(self._unbroadcasted_cov_factor,
                                        self._unbroadcasted_cov_diag, self._capacitance_tril)
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det)  # noqa: N806
        if len(self._batch_shape) == 0:
            return H
        return H.expand(tuple(self._batch_shape))
