"""The multivariate normal distribution, as
``torch.distributions.MultivariateNormal``."""

from __future__ import annotations

import math

from .._size import Size
from . import _api as gc
from . import constraints
from .distribution import Distribution
from .utils import _standard_normal, lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mv(bmat, bvec):
    return gc.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL, bx):  # noqa: N803
    """The squared Mahalanobis distance ``x^T (L L^T)^-1 x`` of each vector of ``bx``,
    through one triangular solve with ``L`` broadcast to the vectors' batch shape."""
    n = bx.size(-1)
    batch = gc.broadcast_shapes(tuple(bL.shape[:-2]), tuple(bx.shape[:-1]))
    L = bL.expand(tuple(batch) + (n, n))  # noqa: N806
    x = bx.expand(tuple(batch) + (n,)).unsqueeze(-1)
    return gc.linalg.solve_triangular(L, x, upper=False).squeeze(-1).pow(2).sum(-1)


def _precision_to_scale_tril(P):  # noqa: N803
    """The lower Cholesky factor of ``P^-1``, without inverting ``P`` first."""
    Lf = gc.linalg.cholesky(gc.flip(P, (-2, -1)))  # noqa: N806
    L_inv = gc.transpose(gc.flip(Lf, (-2, -1)), -2, -1)  # noqa: N806
    eye = gc.eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return gc.linalg.solve_triangular(L_inv, eye, upper=False)


def _scale_tril_of(scale_tril, covariance_matrix, precision_matrix):
    """The lower Cholesky factor of the covariance, from whichever of the three is not
    None (the first that is not)."""
    if scale_tril is not None:
        return scale_tril
    if covariance_matrix is not None:
        return gc.linalg.cholesky(covariance_matrix)
    return _precision_to_scale_tril(precision_matrix)


class MultivariateNormal(Distribution):
    """The multivariate normal distribution of mean ``loc`` and covariance given by one
    of ``covariance_matrix``, ``precision_matrix`` (its inverse) or ``scale_tril`` (its
    lower Cholesky factor, the cheapest).

    Args:
        loc: the mean, ``(..., D)``.
        covariance_matrix: positive-definite covariance matrices, ``(..., D, D)``.
        precision_matrix: positive-definite precision matrices, ``(..., D, D)``.
        scale_tril: lower-triangular factors with a positive diagonal, ``(..., D, D)``.
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import MultivariateNormal
    >>> d = MultivariateNormal(gc.zeros(2), covariance_matrix=gc.eye(2))
    >>> d.log_prob(gc.zeros(2))
    tensor(-1.8379)
    """

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + \
                (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        given = {"scale_tril": scale_tril, "covariance_matrix": covariance_matrix,
                 "precision_matrix": precision_matrix}
        name, matrix = next((k, v) for k, v in given.items() if v is not None)
        if matrix.dim() < 2:
            what = "scale_tril matrix" if name == "scale_tril" else name
            raise ValueError(f"{what} must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        batch_shape = Size(gc.broadcast_shapes(tuple(matrix.shape[:-2]),
                                               tuple(loc.shape[:-1])))
        setattr(self, name, matrix.expand(tuple(batch_shape) + (-1, -1)))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        self._unbroadcasted_scale_tril = _scale_tril_of(scale_tril, covariance_matrix,
                                                        precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = Size(batch_shape)
        loc_shape = tuple(batch_shape + self.event_shape)
        cov_shape = tuple(batch_shape + self.event_shape + self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        super(MultivariateNormal, new).__init__(batch_shape, self.event_shape,
                                                validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def scale_tril(self):
        """The lower Cholesky factor of the covariance."""
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        """The covariance matrix."""
        tril = self._unbroadcasted_scale_tril
        return gc.matmul(tril, tril.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        """The precision matrix (the covariance's inverse)."""
        return gc.cholesky_inverse(self._unbroadcasted_scale_tril).expand(
            self._matrix_shape())

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            tuple(self._batch_shape + self._event_shape))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        mahalanobis = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + mahalanobis) \
            - half_log_det

    def entropy(self):
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        entropy = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        return entropy if len(self._batch_shape) == 0 else entropy.expand(
            tuple(self._batch_shape))
