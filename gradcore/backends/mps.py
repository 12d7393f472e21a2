"""``torch.backends.mps``: gradcore has no Metal backend."""

from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """False: no MPS device."""
    return False


def is_built() -> bool:
    """False: gradcore is not built with MPS."""
    return False
