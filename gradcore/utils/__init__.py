"""``gradcore.utils``, as ``torch.utils``: :mod:`gradcore.utils.data` (datasets,
samplers, ``DataLoader``)."""

from . import data

__all__ = ["data"]
