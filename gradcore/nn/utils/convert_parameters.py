"""``parameters_to_vector`` and ``vector_to_parameters``, as ``torch.nn.utils``.

>>> import gradcore as gc
>>> model = gc.nn.Linear(2, 1)
>>> v = gc.nn.utils.parameters_to_vector(model.parameters())
>>> v.shape
gradcore.Size([3])
>>> gc.nn.utils.vector_to_parameters(gc.zeros(3), model.parameters())
>>> model.bias
Parameter containing:
tensor([0.], requires_grad=True)
"""

from __future__ import annotations

from ...ops import cat
from ...tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _one_device(param, device):
    if device is None:
        return param.device
    if param.device != device:
        raise TypeError("Found two parameters on different devices, this is currently not "
                        "supported.")
    return device


def parameters_to_vector(parameters) -> Tensor:
    """The parameters flattened and concatenated into one vector (differentiable)."""
    device, parts = None, []
    for p in parameters:
        device = _one_device(p, device)
        parts.append(p.reshape(-1))
    return cat(parts)


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Set the parameters' data from consecutive slices of ``vec`` (their sizes in
    order), as ``torch.nn.utils.vector_to_parameters``."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    device, at = None, 0
    for p in parameters:
        device = _one_device(p, device)
        n = p.numel()
        p.data = vec[at:at + n].view_as(p).data
        at += n
