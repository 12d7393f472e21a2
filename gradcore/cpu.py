"""``torch.cpu``: the CPU as a device module, beside ``gc.cuda`` (for code written
against any device's module). The CPU is always there, one device, nothing queued.

>>> import gradcore as gc
>>> gc.cpu.is_available(), gc.cpu.device_count(), gc.cpu.current_device()
(True, 1, 'cpu')
"""

from __future__ import annotations

from . import amp as _amp

__all__ = ["is_available", "is_initialized", "device_count", "current_device",
           "set_device", "synchronize", "amp"]


def is_available() -> bool:
    """True: the CPU can always be used."""
    return True


def is_initialized() -> bool:
    """True: the CPU needs no initialization."""
    return True


def device_count() -> int:
    """1: gradcore sees the CPU as one device."""
    return 1


def current_device() -> str:
    """``"cpu"``."""
    return "cpu"


def set_device(device) -> None:
    """Nothing to do: there is one CPU device (as in PyTorch).

    Args:
        device: ignored.
    """


def synchronize(device=None) -> None:
    """Nothing to wait for: CPU work is done when its call returns.

    Args:
        device: ignored (``"cpu"``).
    """


class amp:  # noqa: N801  (the namespace torch.cpu.amp)
    """``gc.cpu.amp``: the older spellings of ``gc.amp`` for the CPU (each deprecated,
    with PyTorch's FutureWarning). PyTorch's default dtype on the CPU is bfloat16, which
    gradcore lacks: pass ``dtype=gc.float16``."""

    autocast, GradScaler = _amp._older_spellings("cpu", "gradcore.cpu.amp")
