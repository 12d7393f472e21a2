"""``torch.backends.mps``: gradcore has no Metal backend."""

from __future__ import annotations


def is_available() -> bool:
    """False: no MPS device."""
    return False


def is_built() -> bool:
    """False: gradcore is not built with MPS."""
    return False
