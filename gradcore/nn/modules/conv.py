"""``torch.nn.modules.conv``: the convolutions. The names programs import from here, bound
to gradcore's own classes (those ``gradcore.nn`` holds)."""


from ..conv import (  # noqa: F401  (re-exported)
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
    _ConvNd,
    _ConvTransposeNd,
)
from ..lazy import (  # noqa: F401  (re-exported)
    LazyConv1d,
    LazyConv2d,
    LazyConv3d,
    LazyConvTranspose1d,
    LazyConvTranspose2d,
    LazyConvTranspose3d,
)

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d"]
