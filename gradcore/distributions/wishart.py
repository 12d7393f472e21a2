"""The Wishart distribution, as ``torch.distributions.Wishart``."""

from __future__ import annotations

import math
import numbers
import warnings

from .._size import Size
from . import _api as gc
from . import constraints
from .chi2 import Chi2
from .distribution import ExponentialFamily
from .multivariate_normal import _scale_tril_of
from .utils import _standard_normal, lazy_property, vec_to_tril_matrix

__all__ = ["Wishart"]

_log_2 = math.log(2)


def _mvdigamma(x, p: int):
    """The multivariate digamma function, the derivative of ``mvlgamma(x, p)``."""
    if not bool((x > (p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    offsets = gc.arange(p, dtype=x.dtype, device=x.device) / 2
    return gc.digamma(x.unsqueeze(-1) - offsets.expand(tuple(x.shape) + (-1,))).sum(-1)


def _clamp_above_eps(x):
    return x.clamp(min=gc.finfo(x.dtype).eps)


class Wishart(ExponentialFamily):
    """The Wishart distribution of positive-definite ``p x p`` matrices with ``df``
    degrees of freedom (> p - 1) and scale matrix given by one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril``: the law of ``sum_k x_k x_k^T`` for ``df``
    normal vectors ``x_k`` of that covariance. ``rsample`` uses Bartlett's decomposition
    (differentiable in the scale, and in ``df`` through the chi-squared draws), drawing
    again (up to ``max_try_correction`` times, with a warning) where a draw is singular.

    Args:
        df: the degrees of freedom (> p - 1).
        covariance_matrix: the positive-definite scale matrix, ``(..., p, p)``.
        precision_matrix: its inverse.
        scale_tril: its lower Cholesky factor.
        validate_args: whether to check the arguments (see ``Distribution``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import Wishart
    >>> Wishart(gc.tensor(4.0), covariance_matrix=gc.eye(2)).log_prob(gc.eye(2))
    tensor(-4.2242)
    """

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if ((covariance_matrix is not None) + (scale_tril is not None) +
                (precision_matrix is not None)) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or "
                                 "scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril)
                     if p is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if isinstance(df, numbers.Number):
            batch_shape = Size(param.shape[:-2])
            self.df = gc.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = Size(gc.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(tuple(batch_shape))
        event_shape = param.shape[-2:]
        if bool((self.df <= event_shape[-1] - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = "
                             f"{event_shape[-1] - 1}.")
        full_shape = tuple(batch_shape) + (-1, -1)
        if scale_tril is not None:
            self.scale_tril = param.expand(full_shape)
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(full_shape)
        else:
            self.precision_matrix = param.expand(full_shape)
        if bool((self.df < event_shape[-1]).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur "
                          "for ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        self._unbroadcasted_scale_tril = _scale_tril_of(scale_tril, covariance_matrix,
                                                        precision_matrix)
        self._dist_chi2 = self._chi2(batch_shape)

    def _chi2(self, batch_shape):
        """The chi-squared laws of the Bartlett factor's squared diagonal."""
        p = self._event_shape[-1]
        offsets = gc.arange(p, dtype=self._unbroadcasted_scale_tril.dtype,
                            device=self._unbroadcasted_scale_tril.device)
        return Chi2(df=self.df.unsqueeze(-1) - offsets.expand(tuple(batch_shape) + (-1,)))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = Size(batch_shape)
        cov_shape = tuple(batch_shape + self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(tuple(batch_shape))
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(cov_shape))
        super(Wishart, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._dist_chi2 = new._chi2(batch_shape)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        """The lower Cholesky factor of the scale matrix."""
        return self._unbroadcasted_scale_tril.expand(tuple(self._batch_shape +
                                                           self._event_shape))

    @lazy_property
    def covariance_matrix(self):
        """The scale matrix."""
        return (self._unbroadcasted_scale_tril @
                self._unbroadcasted_scale_tril.transpose(-2, -1)).expand(
            tuple(self._batch_shape + self._event_shape))

    @lazy_property
    def precision_matrix(self):
        """The inverse of the scale matrix."""
        identity = gc.eye(self._event_shape[-1], device=self._unbroadcasted_scale_tril.device,
                          dtype=self._unbroadcasted_scale_tril.dtype)
        return gc.cholesky_solve(identity, self._unbroadcasted_scale_tril).expand(
            tuple(self._batch_shape + self._event_shape))

    @property
    def mean(self):
        return self.df.view(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = gc.where(factor <= 0, math.nan, factor)
        return factor.view(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix  # noqa: N806
        diag_V = V.diagonal(dim1=-2, dim2=-1)  # noqa: N806
        return self.df.view(tuple(self._batch_shape) + (1, 1)) * (
            V.pow(2) + diag_V.unsqueeze(-1) * diag_V.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape=Size()):
        p = self._event_shape[-1]
        diagonal = gc.diag_embed(_clamp_above_eps(self._dist_chi2.rsample(sample_shape).sqrt()))
        below = _standard_normal(tuple(Size(sample_shape) + self._batch_shape) +
                                 (p * (p - 1) // 2,), dtype=diagonal.dtype,
                                 device=diagonal.device)
        noise = diagonal + vec_to_tril_matrix(below, diag=-1)
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.transpose(-2, -1)

    def rsample(self, sample_shape=Size(), max_try_correction=None):
        """A reparameterized draw by Bartlett's decomposition; draws that are singular
        (not positive-definite in floating point) are drawn again, up to
        ``max_try_correction`` times (10 by default), with a warning.

        Args:
            sample_shape: how many samples to draw, as a shape.
            max_try_correction: the most redraws.
        """
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = Size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)

        def singular(s):
            bad = ~self.support.check(s)
            return bad.amax(self._batch_dims) if self._batch_shape else bad

        is_singular = singular(sample)
        if bool(is_singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                fresh = self._bartlett_sampling(sample_shape)
                mask = is_singular.reshape(tuple(is_singular.shape) +
                                           (1,) * (len(self._batch_shape) + 2))
                sample = gc.where(mask, fresh, sample)
                is_singular = is_singular & singular(sample)
                if not bool(is_singular.any()):
                    break
        return sample

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        log_det_scale = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return (-nu * (p * _log_2 / 2 + log_det_scale) - gc.mvlgamma(nu / 2, p) +
                (nu - p - 1) / 2 * gc.linalg.slogdet(value).logabsdet -
                gc.cholesky_solve(value, self._unbroadcasted_scale_tril)
                .diagonal(dim1=-2, dim2=-1).sum(dim=-1) / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        log_det_scale = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return ((p + 1) * (p * _log_2 / 2 + log_det_scale) + gc.mvlgamma(nu / 2, p) -
                (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2)

    @property
    def _natural_params(self):
        nu = self.df
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (nu - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return (y + (p + 1) / 2) * (-gc.linalg.slogdet(-2 * x).logabsdet + _log_2 * p) + \
            gc.mvlgamma(y + (p + 1) / 2, p)
