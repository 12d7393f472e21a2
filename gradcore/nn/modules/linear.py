"""``torch.nn.modules.linear``: the linear layers. The names programs import from here,
bound to gradcore's own classes (those ``gradcore.nn`` holds)."""


from ..attention import (  # noqa: F401  (re-exported)
    NonDynamicallyQuantizableLinear,
)
from ..lazy import (  # noqa: F401  (re-exported)
    LazyLinear,
)
from . import (  # noqa: F401  (re-exported)
    Bilinear,
    Identity,
    Linear,
)

__all__ = ["Identity", "Linear", "Bilinear", "LazyLinear"]
