"""``gradcore.nn.utils.weight_norm``: weight normalization by a forward pre-hook, as
``torch.nn.utils.weight_norm`` (deprecated there in favour of
:func:`gradcore.nn.utils.parametrizations.weight_norm`, with the same warning here).

The weight ``w`` becomes two parameters, its magnitude ``w_g`` (its norm over every
dimension but ``dim``) and its direction ``w_v``; before each forward, ``w = w_g * w_v /
||w_v||``.
"""

from __future__ import annotations

import warnings

from ...tensor import Parameter
from ..modules import Module

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


def _norm_except_dim(v, pow: float = 2, dim: int = 0):  # noqa: A002 (PyTorch's name)
    """``torch.norm_except_dim``: the ``pow``-norm of ``v`` over every dimension but
    ``dim``, keeping ``v``'s number of dimensions (``dim == -1``: over all, a 0-d
    tensor)."""
    if dim == -1:
        return v.norm(pow)
    if dim == 0:
        shape = (v.shape[0],) + (1,) * (v.ndim - 1)
        return v.contiguous().view(v.shape[0], -1).norm(pow, 1).view(shape)
    if dim == v.ndim - 1:
        shape = (1,) * (v.ndim - 1) + (v.shape[-1],)
        return v.contiguous().view(-1, v.shape[-1]).norm(pow, 0).view(shape)
    return _norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


def _weight_norm(v, g, dim: int = 0):
    """``torch._weight_norm``: ``v * (g / ||v||)``, the norm over every dimension but
    ``dim``."""
    return v * (g / _norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook of :func:`weight_norm`: sets ``module.<name>`` from
    ``<name>_g`` and ``<name>_v`` before each forward."""

    name: str
    dim: int

    def __init__(self, name: str, dim: int) -> None:
        if dim is None:
            dim = -1
        self.name = name
        self.dim = dim

    def compute_weight(self, module: Module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module, name: str, dim: int) -> WeightNorm:
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning,
                      stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError("Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        if dim is None:
            dim = -1
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if getattr(weight, "_uninitialized", False):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized "
                             "parameters. Make sure to run the dummy forward before applying "
                             "weight normalization")
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, 2, dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int = 0) -> Module:
    """Split ``module.<name>`` into ``<name>_g`` (magnitude) and ``<name>_v``
    (direction) parameters, recombined before each forward (``dim=None``: one
    magnitude for the whole tensor). Deprecated, as in PyTorch (a ``FutureWarning``):
    :func:`gradcore.nn.utils.parametrizations.weight_norm` is the current form.

    >>> import warnings
    >>> from gradcore import nn
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", FutureWarning)
    ...     layer = nn.utils.weight_norm(nn.Linear(3, 2))
    >>> sorted(layer.state_dict())
    ['bias', 'weight_g', 'weight_v']
    """
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Undo :func:`weight_norm`: ``module.<name>`` is one parameter again."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
