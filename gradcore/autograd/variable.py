"""PyTorch's ``torch.autograd.Variable``, from before tensors recorded their history
themselves: calling it gives a tensor, and every tensor is an instance of it."""

from __future__ import annotations

import warnings

import numpy as np

from .. import dtypes
from .tensor_base import Tensor, _wrap


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False)``: a tensor sharing ``data``'s memory, cut
    from its graph, that requires grad if asked (``data.detach().requires_grad_(...)``);
    ``Variable()`` is an empty tensor. ``isinstance(t, Variable)`` is true of every
    tensor. ``volatile`` has no effect (use ``no_grad``), as in PyTorch.

    >>> import gradcore as gc
    >>> from gradcore.autograd import Variable
    >>> v = Variable(gc.ones(2), requires_grad=True)
    >>> type(v) is gc.Tensor, v.requires_grad, isinstance(v, Variable)
    (True, True, True)
    """

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with "
                          "torch.no_grad():` instead.", UserWarning, stacklevel=2)
        if data is None:
            out = _wrap(np.zeros((0,), dtype=dtypes.get_default_dtype().np))
        elif not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got "
                            f"{type(data).__name__}")
        else:
            out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out
