"""What ``gc.autocast`` does to an op's operands: the ops of PyTorch's lower-precision
list (matrix products, ``linear``) cast floating operands to the block's dtype, those
of its float32 list (softmax, log_softmax, layer_norm, the losses) cast float16
operands up to float32; each cast is the differentiable ``to``, so gradients flow back
in the operands' own dtypes. Outside an autocast block this is one list read."""

from __future__ import annotations

from ..autograd.grad_mode import autocast_blocks as _blocks
from ..autograd.grad_mode import state as _state
from ..autograd.tensor_base import Tensor

__all__ = ["lower", "full"]


def _device_type(t) -> str:
    return "cpu" if type(t._data).__module__ == "numpy" else "cuda"


def lower(*tensors):
    """``tensors`` for an op of the lower-precision list (unchanged outside autocast)."""
    if not _blocks[0] or not _state.autocast:
        return tensors
    ac = _state.autocast
    out = []
    for t in tensors:
        if isinstance(t, Tensor) and t._data.dtype.kind == "f":
            dt = ac.get(_device_type(t))
            if dt is not None and t._data.dtype != dt.np:
                t = t.to(dtype=dt)
        out.append(t)
    return tuple(out)


def full(*tensors, cpu=True):
    """``tensors`` for an op of the float32 list: float16 ones cast to float32 inside an
    autocast block for their device. ``cpu=False``: an op on CUDA's list only (softmax,
    log_softmax, layer_norm: PyTorch's CPU autocast leaves them in the lower dtype)."""
    if not _blocks[0] or not _state.autocast:
        return tensors
    ac = _state.autocast
    out = []
    for t in tensors:
        if isinstance(t, Tensor) and t._data.dtype.kind == "f" and \
                t._data.dtype.itemsize < 4:
            where = _device_type(t)
            if where in ac and (cpu or where != "cpu"):
                t = t.to(dtype="float32")
        out.append(t)
    return tuple(out)
