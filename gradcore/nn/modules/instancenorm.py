"""``torch.nn.modules.instancenorm``: instance normalization. The names programs import
from here, bound to gradcore's own classes (those ``gradcore.nn`` holds)."""


from ..normalization import (  # noqa: F401  (re-exported)
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    _InstanceNorm,
)

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]
