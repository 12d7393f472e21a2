"""``torch.nn.modules.dropout``: the dropout layers. The names programs import from here,
bound to gradcore's own classes (those ``gradcore.nn`` holds)."""


from ..normalization import (  # noqa: F401  (re-exported)
    AlphaDropout,
    Dropout1d,
    Dropout2d,
    Dropout3d,
    FeatureAlphaDropout,
)
from . import (  # noqa: F401  (re-exported)
    Dropout,
    _DropoutNd,
)

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
           "FeatureAlphaDropout"]
