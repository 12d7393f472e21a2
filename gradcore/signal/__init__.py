"""``gradcore.signal``: PyTorch's ``torch.signal``, its window functions
(:mod:`gradcore.signal.windows`)."""

from . import windows

__all__ = ["windows"]
