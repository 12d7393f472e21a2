"""``torch.backends.mkldnn``: gradcore does not use oneDNN; ``enabled`` is accepted."""

from __future__ import annotations

enabled = True


def is_available() -> bool:
    """False: gradcore does not use oneDNN."""
    return False
