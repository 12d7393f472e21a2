"""The DataLoader's internals, laid out as PyTorch's (``_utils.collate``)."""

from . import collate

__all__ = ["collate"]
