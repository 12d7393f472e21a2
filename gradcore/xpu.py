"""``torch.xpu``: Intel GPUs, which gradcore cannot use (it runs on NumPy and CuPy).
``is_available()`` is False and ``device_count()`` 0, so that programs choosing a
device fall through to the CPU; the calls that need a device raise PyTorch's
``AssertionError`` (not compiled with XPU), the others do nothing, as PyTorch's."""

from __future__ import annotations

__all__ = ["is_available", "is_initialized", "device_count", "current_device",
           "synchronize", "empty_cache", "manual_seed", "manual_seed_all", "seed",
           "seed_all", "get_device_name", "memory_allocated", "is_bf16_supported"]


def _no_xpu():
    raise AssertionError("Torch not compiled with XPU enabled")


def is_available() -> bool:
    """False: gradcore has no XPU backend."""
    return False


def is_initialized() -> bool:
    """False: no XPU is ever initialized."""
    return False


def device_count() -> int:
    """0: no XPU can be used."""
    return 0


def current_device() -> int:
    """Raises ``AssertionError``: there is no XPU."""
    _no_xpu()


def synchronize(device=None) -> None:
    """Raises ``AssertionError``: there is no XPU to wait for.

    Args:
        device: the XPU (there is none).
    """
    _no_xpu()


def get_device_name(device=None) -> str:
    """Raises ``AssertionError``: there is no XPU.

    Args:
        device: the XPU (there is none).
    """
    _no_xpu()


def empty_cache() -> None:
    """Does nothing: no XPU memory is cached."""


def manual_seed(seed: int) -> None:
    """Does nothing without an XPU, as in PyTorch.

    Args:
        seed: ignored.
    """


def manual_seed_all(seed: int) -> None:
    """Does nothing without an XPU, as in PyTorch.

    Args:
        seed: ignored.
    """


def seed() -> None:
    """Does nothing without an XPU, as in PyTorch."""


def seed_all() -> None:
    """Does nothing without an XPU, as in PyTorch."""


def memory_allocated(device=None) -> int:
    """0: no XPU memory is allocated.

    Args:
        device: ignored.
    """
    return 0


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False: no XPU.

    Args:
        including_emulation: ignored.
    """
    return False
