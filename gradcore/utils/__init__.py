"""``gradcore.utils``, as ``torch.utils``: :mod:`gradcore.utils.data` (datasets,
samplers, ``DataLoader``), :mod:`gradcore.utils.checkpoint` (activation
checkpointing), :mod:`gradcore.utils.benchmark` (``Timer``) and
:mod:`gradcore.utils.hooks` (``RemovableHandle``)."""

from . import benchmark, checkpoint, data, hooks

__all__ = ["benchmark", "checkpoint", "data", "hooks"]
