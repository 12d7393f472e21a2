"""``torch.backends.cudnn``: gradcore has no cuDNN. The flags programs set for PyTorch
are accepted and read nowhere."""

from __future__ import annotations

benchmark = False
deterministic = False
enabled = True
allow_tf32 = True


def is_available() -> bool:
    """False: gradcore does not use cuDNN."""
    return False


def version() -> None:
    """None: no cuDNN."""
    return None
