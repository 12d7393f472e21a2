"""Gradient clipping, as ``torch.nn.utils``: :func:`clip_grad_norm_`,
:func:`clip_grad_value_`, :func:`get_total_norm`, :func:`clip_grads_with_norm_`.

No value is read on the host: the clipping coefficient stays a tensor (``max_norm /
(total + 1e-6)`` clamped to 1, PyTorch's formula), so a clipped step on a GPU does not
wait for the device, and ``gc.compile`` can capture it.

>>> import gradcore as gc
>>> w = gc.nn.Parameter(gc.tensor([3.0, 4.0]))
>>> w.grad = gc.tensor([3.0, 4.0])
>>> gc.nn.utils.clip_grad_norm_([w], max_norm=1.0)
tensor(5.)
>>> w.grad
tensor([0.6000, 0.8000])
"""

from __future__ import annotations

import types
import warnings

from ...autograd.grad_mode import no_grad
from ...creation import tensor as _tensor
from ...ops import stack
from ...tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _tensors(x) -> list:
    return [x] if isinstance(x, Tensor) else list(x)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:
    """The ``norm_type`` norm of all ``tensors`` together (as if concatenated): the norm
    of their norms. ``inf`` is the largest absolute value. ``error_if_nonfinite``: a
    ``RuntimeError`` when it is NaN or infinite (a host read)."""
    tensors = _tensors(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return _tensor(0.0)
    with no_grad():
        first = tensors[0].device
        norms = [t.norm(norm_type) for t in tensors]
        total = stack([n.to(first) for n in norms]).norm(norm_type)
    if error_if_nonfinite and bool(total.isnan() | total.isinf()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor,
                          foreach=None) -> None:
    """Scale the parameters' gradients by ``max_norm / (total_norm + 1e-6)`` where that
    is below 1 (in place; no host read)."""
    grads = [p.grad for p in _tensors(parameters) if p.grad is not None]
    if not grads:
        return
    with no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.device))


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Scale the gradients of ``parameters`` (a tensor or an iterable) so that their
    total ``norm_type`` norm is at most ``max_norm``; return the total norm before
    clipping (a tensor)."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if generator and not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will "
                          "occur.", stacklevel=2)
    grads = [p.grad for p in parameters if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient of ``parameters`` into ``[-clip_value, clip_value]``, in
    place."""
    clip_value = float(clip_value)
    with no_grad():
        for p in _tensors(parameters):
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """:func:`clip_grad_norm_` by its deprecated name (PyTorch's, with its
    ``FutureWarning``)."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)
