"""``torch.backends.openmp``: gradcore does not use OpenMP."""

from __future__ import annotations


def is_available() -> bool:
    """False."""
    return False
