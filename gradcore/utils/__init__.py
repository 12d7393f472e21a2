"""``gradcore.utils``, as ``torch.utils``: :mod:`gradcore.utils.data` (datasets,
samplers, ``DataLoader``) and :mod:`gradcore.utils.checkpoint` (activation
checkpointing)."""

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
