"""``torch.nn.modules.batchnorm``: batch normalization. The names programs import from
here, bound to gradcore's own classes (those ``gradcore.nn`` holds)."""


from ..lazy import (  # noqa: F401  (re-exported)
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
)
from ..normalization import (  # noqa: F401  (re-exported)
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    SyncBatchNorm,
    _BatchNorm,
    _NormBase,
)

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LazyBatchNorm1d",
           "LazyBatchNorm2d", "LazyBatchNorm3d"]
