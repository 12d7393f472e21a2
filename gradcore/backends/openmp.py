"""``torch.backends.openmp``: gradcore does not use OpenMP."""

from __future__ import annotations

__all__ = ["is_available"]


def is_available() -> bool:
    """False."""
    return False
