"""``torch.nn.parameter``: :class:`Parameter`, :class:`Buffer` and the lazy layers'
:class:`UninitializedParameter` (the objects ``gradcore.nn`` holds)."""

from ..tensor import Parameter
from .lazy import UninitializedBuffer, UninitializedParameter
from .modules import Buffer

__all__ = ["Parameter", "UninitializedParameter", "UninitializedBuffer", "is_lazy", "Buffer"]


def is_lazy(param) -> bool:
    """Whether ``param`` is a lazy layer's parameter not yet given its shape (an
    :class:`UninitializedParameter`)."""
    return isinstance(param, UninitializedParameter)
