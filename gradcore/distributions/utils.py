"""Helpers of the distributions, as ``torch.distributions.utils``: broadcasting
parameters, converting between probabilities and logits, lazily computed attributes.

>>> import gradcore as gc
>>> from gradcore.distributions.utils import broadcast_all, probs_to_logits
>>> [tuple(t.shape) for t in broadcast_all(gc.zeros(3), 1.0)]
[(3,), (3,)]
>>> probs_to_logits(gc.tensor([0.5]), is_binary=True)
tensor([0.])
"""

from __future__ import annotations

import functools
import numbers

import numpy as np

from .._size import Size
from . import _api as gc

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits",
           "lazy_property", "tril_matrix_to_vec", "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060  # (the Euler-Mascheroni constant)


def _is_number(value) -> bool:
    return isinstance(value, (numbers.Number, np.number)) and not isinstance(value, bool) \
        or isinstance(value, bool)


def broadcast_all(*values):
    """Broadcast tensors and numbers to one shape: numbers become tensors of the first
    tensor's dtype and device (of the default dtype when all are numbers).

    Args:
        *values: tensors and numbers.
    """
    if not all(isinstance(v, gc.Tensor) or _is_number(v) for v in values):
        raise ValueError("Input arguments must all be instances of Number, gradcore.Tensor or "
                         "objects implementing __torch_function__.")
    if not all(isinstance(v, gc.Tensor) for v in values):
        options = {"dtype": gc.get_default_dtype()}
        for v in values:
            if isinstance(v, gc.Tensor):
                options = {"dtype": v.dtype, "device": v.device}
                break
        values = [v if isinstance(v, gc.Tensor) else gc.tensor(v, **options) for v in values]
    return gc.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device, generator=None):
    return gc.empty(tuple(shape), dtype=dtype, device=device).normal_(generator=generator)


def _sum_rightmost(value, dim: int):
    """``value`` summed over its ``dim`` rightmost dimensions."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary: bool = False):
    """Probabilities from logits: ``sigmoid`` of log-odds (``is_binary``), else
    ``softmax`` over the last dimension.

    Args:
        logits: the logits.
        is_binary: whether each value is the log-odds of one event.
    """
    if is_binary:
        return gc.sigmoid(logits)
    return gc.softmax(logits, dim=-1)


def clamp_probs(probs):
    """``probs`` clamped to ``[eps, 1 - eps]``, ``eps`` the machine epsilon of its dtype.

    Args:
        probs: probabilities.
    """
    eps = gc.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary: bool = False):
    """Logits from probabilities (clamped first): log-odds (``is_binary``), else logs.

    Args:
        probs: probabilities.
        is_binary: whether each value is the probability of one event.
    """
    clamped = clamp_probs(probs)
    if is_binary:
        return gc.log(clamped) - gc.log1p(-clamped)
    return gc.log(clamped)


class lazy_property:  # noqa: N801  (PyTorch's name)
    """A decorator for attributes computed on first access: the value then replaces the
    descriptor on the instance (Bernoulli's ``probs`` made from ``logits``, ...).

    Args:
        wrapped: the function computing the value from the instance.
    """

    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with gc.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def tril_matrix_to_vec(mat, diag: int = 0):
    """The lower triangle (from diagonal ``diag``) of the last two dimensions of ``mat``
    as a vector, row by row.

    Args:
        mat: a batch of square matrices.
        diag: the diagonal the triangle starts at (0: the main one).
    """
    n = mat.shape[-1]
    if not -n <= diag < n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = np.tril_indices(n, k=diag)
    return mat[..., gc.tensor(rows, device=mat.device), gc.tensor(cols, device=mat.device)]


def vec_to_tril_matrix(vec, diag: int = 0):
    """The inverse of :func:`tril_matrix_to_vec`: square matrices whose lower triangle
    (from diagonal ``diag``) holds ``vec``'s last dimension, zeros elsewhere.

    Args:
        vec: vectors of a triangular number of elements.
        diag: the diagonal the triangle starts at (0: the main one).
    """
    m = vec.shape[-1]
    n = round((-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1))
               ** 0.5) / 2)
    eps = gc.finfo(vec.dtype).eps
    if not (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1))
            ** 0.5) / 2 - n < eps:
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    rows, cols = np.tril_indices(n, k=diag)
    mat = gc.zeros(tuple(vec.shape[:-1]) + (n, n), dtype=vec.dtype, device=vec.device)
    mat[..., gc.tensor(rows, device=vec.device), gc.tensor(cols, device=vec.device)] = vec
    return mat


def _size_of(sample_shape) -> Size:
    return sample_shape if isinstance(sample_shape, Size) else Size(sample_shape)


def _inherit_docstrings(cls) -> None:
    """Give the properties ``cls`` overrides without a docstring their base's (a
    distribution's ``mean`` is documented once, on ``Distribution.mean``)."""
    for name, value in vars(cls).items():
        if isinstance(value, property) and not value.__doc__:
            for base in cls.__mro__[1:]:
                inherited = base.__dict__.get(name)
                doc = getattr(inherited, "__doc__", None) if isinstance(
                    inherited, property) else None
                if doc:
                    value.__doc__ = doc
                    break


class BinaryParams:
    """``logits`` and ``probs`` of a distribution given one of them (each made from the
    other when first read), as Bernoulli, Binomial, Geometric, NegativeBinomial and
    LogitRelaxedBernoulli have them."""

    @lazy_property
    def logits(self):
        """The log-odds of 1 (a success)."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        """The probability of 1 (a success)."""
        return logits_to_probs(self.logits, is_binary=True)


class ShapedBinaryParams(BinaryParams):
    """:class:`BinaryParams` and the shape of the one given (``param_shape``)."""

    @property
    def param_shape(self):
        """The shape of the parameter given."""
        return self._param.size()

    def _init_binary(self, probs, logits):
        """Keep ``probs`` or ``logits``, whichever is given (PyTorch's ValueError unless
        exactly one), as ``_param`` too; return the batch shape: ``()`` for a number, the
        tensor's shape otherwise."""
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, numbers.Number)
            (self.probs,) = broadcast_all(probs)
        else:
            is_scalar = isinstance(logits, numbers.Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        return Size() if is_scalar else self._param.size()

    def _expand_binary(self, new, batch_shape):
        """Give ``new`` (an ``expand``'s instance) this one's ``probs`` and ``logits``,
        those known so far, expanded to ``batch_shape``, and its ``_param``."""
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
