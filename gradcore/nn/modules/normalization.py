"""``torch.nn.modules.normalization``: layer, group, RMS and local response normalization.
The names programs import from here, bound to gradcore's own classes (those
``gradcore.nn`` holds)."""


from ..normalization import (  # noqa: F401  (re-exported)
    GroupNorm,
    LocalResponseNorm,
    RMSNorm,
)
from . import (  # noqa: F401  (re-exported)
    LayerNorm,
)

__all__ = ["LayerNorm", "GroupNorm", "LocalResponseNorm", "RMSNorm"]
