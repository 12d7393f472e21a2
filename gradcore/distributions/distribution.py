"""The base class of the distributions, as ``torch.distributions.Distribution``."""

from __future__ import annotations

import numbers
import warnings

from .._size import Size
from . import _api as gc
from . import constraints
from .utils import _inherit_docstrings, _size_of, broadcast_all, lazy_property

__all__ = ["Distribution"]


class Distribution:
    """The base class of probability distributions.

    Args:
        batch_shape: the shape over which parameters are batched.
        event_shape: the shape of one sample (without batching).
        validate_args: whether to check the parameters (and the values given to
            ``log_prob``...) against ``arg_constraints`` and ``support``, raising a
            ``ValueError`` that names what was wrong; None takes the default
            (:meth:`set_default_validate_args`, on unless Python runs with ``-O``).

    >>> import gradcore as gc
    >>> from gradcore.distributions import Normal
    >>> d = Normal(gc.zeros(2), 1.0)
    >>> d.batch_shape, d.event_shape
    (gradcore.Size([2]), gradcore.Size([]))
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _inherit_docstrings(cls)

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Set whether new distributions validate their arguments by default.

        Args:
            value: True or False.
        """
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=Size(), event_shape=Size(), validate_args=None):
        self._batch_shape = _size_of(batch_shape)
        self._event_shape = _size_of(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              "`arg_constraints = {}` or initialize the distribution with "
                              "`validate_args=False` to turn off validation.", stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # (cannot be checked)
                if param not in self.__dict__ and isinstance(getattr(type(self), param),
                                                             lazy_property):
                    continue  # (made from another parameter, which was checked)
                value = getattr(self, param)
                if not bool(constraint.check(value).all()):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape "
                        f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                        f"constraint {constraint!r}, but found invalid values:\n{value}")
        super().__init__()

    def expand(self, batch_shape, _instance=None):
        """A new distribution of the same kind whose parameters are expanded (views, no
        copies) to ``batch_shape``.

        Args:
            batch_shape: the new batch shape.
        """
        raise NotImplementedError

    @property
    def batch_shape(self) -> Size:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """The shape of one sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict:
        """The constraint each parameter must satisfy, by name."""
        raise NotImplementedError

    @property
    def support(self):
        """The constraint the distribution's values satisfy."""
        raise NotImplementedError

    @property
    def mean(self):
        """The mean of the distribution."""
        raise NotImplementedError

    @property
    def mode(self):
        """The mode of the distribution."""
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        """The variance of the distribution."""
        raise NotImplementedError

    @property
    def stddev(self):
        """The standard deviation of the distribution."""
        return self.variance.sqrt()

    def sample(self, sample_shape=Size()):
        """A sample of shape ``sample_shape + batch_shape + event_shape``, not
        differentiable (drawn from gradcore's default generator: ``gc.manual_seed``
        repeats it).

        Args:
            sample_shape: how many samples to draw, as a shape.
        """
        with gc.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()):
        """A reparameterized sample of shape ``sample_shape + batch_shape + event_shape``:
        differentiable with respect to the parameters.

        Args:
            sample_shape: how many samples to draw, as a shape.
        """
        raise NotImplementedError

    def sample_n(self, n: int):
        """``sample((n,))`` (deprecated, as in PyTorch).

        Args:
            n: the number of samples.
        """
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
                      FutureWarning, stacklevel=2)
        return self.sample(Size((n,)))

    def log_prob(self, value):
        """The log of the probability density (or mass) function at ``value``.

        Args:
            value: a tensor whose rightmost dimensions broadcast with
                ``batch_shape + event_shape``.
        """
        raise NotImplementedError

    def cdf(self, value):
        """The cumulative distribution function at ``value``.

        Args:
            value: a tensor.
        """
        raise NotImplementedError

    def icdf(self, value):
        """The inverse of the cumulative distribution function at ``value``.

        Args:
            value: a tensor of probabilities.
        """
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True):
        """Every value of a discrete distribution's support, along dimension 0.

        Args:
            expand: whether to expand the values over the batch dimensions (else they
                are of size 1).
        """
        raise NotImplementedError

    def entropy(self):
        """The entropy, of shape ``batch_shape``."""
        raise NotImplementedError

    def perplexity(self):
        """``exp(entropy())``."""
        return gc.exp(self.entropy())

    def _extended_shape(self, sample_shape=Size()) -> Size:
        return Size(_size_of(sample_shape) + self._batch_shape + self._event_shape)

    def _validate_sample(self, value) -> None:
        if not isinstance(value, gc.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.size()) - len(self._event_shape)
        if value.size()[event_dim_start:] != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{value.size()} vs {self._event_shape}.")
        actual_shape = value.size()
        expected_shape = self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual_shape} vs {expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          "validation. Please initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=2)
            return
        if not bool(support.check(value).all()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape "
                f"{tuple(value.shape)}) to be within the support ({support!r}) of the "
                f"distribution {self!r}, but found invalid values:\n{value}")

    def _init_params(self, cls, names, values, validate_args):
        """``cls.__init__`` of a distribution whose parameters ``names`` broadcast
        together: set them to ``values`` broadcast (tensors), the batch shape theirs (or
        ``()`` when every value is a number), as each of PyTorch's classes does."""
        tensors = broadcast_all(*values)
        for name, t in zip(names, tensors):
            setattr(self, name, t)
        batch_shape = Size() if all(isinstance(v, numbers.Number) for v in values) \
            else tensors[0].size()
        super(cls, self).__init__(batch_shape, validate_args=validate_args)

    def _expand_params(self, cls, names, batch_shape, _instance):
        """``cls.expand`` of such a distribution: each parameter expanded."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = Size(batch_shape)
        for name in names:
            setattr(new, name, getattr(self, name).expand(batch_shape))
        super(cls, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        # (a one-element parameter is shown, as f"{tensor}" shows it; others by size)
        args = ", ".join(f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"  # noqa: E501
                         for p in names)
        return type(self).__name__ + "(" + args + ")"


class ExponentialFamily(Distribution):
    """A distribution of the exponential family, whose entropy follows from its natural
    parameters and log normalizer (Bregman divergence)."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """The entropy, from the natural parameters (``-carrier measure + A(theta) -
        <theta, grad A(theta)>``)."""
        result = -self._mean_carrier_measure
        natural = [p.detach().requires_grad_() for p in self._natural_params]
        with gc.enable_grad():
            lg_normal = self._log_normalizer(*natural)
            gradients = gc.autograd.grad(lg_normal.sum(), natural, create_graph=True)
        result = result + lg_normal
        for p, g in zip(natural, gradients):
            result = result - (p * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
