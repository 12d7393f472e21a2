"""``torch.backends.cudnn``: gradcore has no cuDNN. The flags programs set for PyTorch
are accepted and read nowhere."""

from __future__ import annotations

__all__ = ["benchmark", "deterministic", "enabled", "allow_tf32", "is_available", "version"]

benchmark = False
"""PyTorch's cuDNN autotuning switch: settable, read nowhere."""
deterministic = False
"""PyTorch's switch to deterministic cuDNN kernels: settable, read nowhere."""
enabled = True
"""PyTorch's switch for cuDNN: settable, read nowhere."""
allow_tf32 = True
"""PyTorch's TF32 switch for cuDNN convolutions: settable, read nowhere."""


def is_available() -> bool:
    """False: gradcore does not use cuDNN."""
    return False


def version() -> None:
    """None: no cuDNN."""
    return None
