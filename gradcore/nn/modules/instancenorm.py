"""``torch.nn.modules.instancenorm``: instance normalization. The names programs import
from here, bound to gradcore's own classes (those ``gradcore.nn`` holds)."""


from ..lazy import (  # noqa: F401  (re-exported)
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
)
from ..normalization import (  # noqa: F401  (re-exported)
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    _InstanceNorm,
)

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]
