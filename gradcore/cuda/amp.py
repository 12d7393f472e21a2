"""``gc.cuda.amp``: the older spellings of ``gc.amp`` for CUDA (PyTorch's
``torch.cuda.amp``): ``from gradcore.cuda.amp import GradScaler, autocast``. Each says
it is deprecated with PyTorch's FutureWarning and does what its ``gc.amp`` twin does with
``"cuda"``."""

import warnings

from .. import amp as _amp

__all__ = ["autocast", "custom_bwd", "custom_fwd", "GradScaler"]


autocast, GradScaler = _amp._older_spellings("cuda", __name__)


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"`torch.cuda.amp.{old}(args...)` is deprecated. Please use "
                  f"`torch.amp.{new}` instead.", FutureWarning, stacklevel=3)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """``gc.amp.custom_fwd(..., device_type="cuda")``.

    Args:
        fwd: the ``forward`` staticmethod (None: a decorator).
        cast_inputs: the dtype to cast floating inputs to, or None.
    """
    _deprecated("custom_fwd", "custom_fwd(args..., device_type='cuda')")
    return _amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """``gc.amp.custom_bwd(..., device_type="cuda")``.

    Args:
        bwd: the ``backward`` staticmethod (None: a decorator).
    """
    _deprecated("custom_bwd", "custom_bwd(args..., device_type='cuda')")
    return _amp.custom_bwd(bwd, device_type="cuda")
