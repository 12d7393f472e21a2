"""``torch.backends.mkldnn``: gradcore does not use oneDNN; ``enabled`` is accepted."""

from __future__ import annotations

__all__ = ["enabled", "is_available"]

enabled = True
"""PyTorch's switch for oneDNN: settable, read nowhere."""


def is_available() -> bool:
    """False: gradcore does not use oneDNN."""
    return False
