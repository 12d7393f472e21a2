"""``torch.mps``: Apple's Metal GPUs, which gradcore cannot use (it runs on NumPy and
CuPy). ``is_available()`` is False and ``device_count()`` 0, so that programs choosing
a device fall through to the CPU; the calls that need the device raise PyTorch's
``RuntimeError``."""

from __future__ import annotations

__all__ = ["is_available", "device_count", "synchronize", "empty_cache", "manual_seed",
           "seed", "current_allocated_memory", "driver_allocated_memory"]


def _no_mps(what: str):
    raise RuntimeError(f"Cannot execute {what}() without MPS backend.")


def is_available() -> bool:
    """False: gradcore has no Metal (MPS) backend."""
    return False


def device_count() -> int:
    """0: no MPS device can be used."""
    return 0


def synchronize() -> None:
    """Raises ``RuntimeError``: there is no MPS device to wait for."""
    _no_mps("deviceSynchronize")


def empty_cache() -> None:
    """Raises ``RuntimeError``: there is no MPS memory cache."""
    _no_mps("emptyCache")


def manual_seed(seed: int) -> None:
    """Does nothing without an MPS device, as in PyTorch.

    Args:
        seed: ignored.
    """


def seed() -> None:
    """Raises ``RuntimeError``: there is no MPS generator."""
    _no_mps("getDefaultGenerator")


def current_allocated_memory() -> int:
    """Raises ``RuntimeError``: there is no MPS memory."""
    _no_mps("getCurrentAllocatedMemory")


def driver_allocated_memory() -> int:
    """Raises ``RuntimeError``: there is no MPS memory."""
    _no_mps("getDriverAllocatedMemory")
