"""``torch.nn.modules.flatten``: flattening and unflattening. The names programs import
from here, bound to gradcore's own classes (those ``gradcore.nn`` holds)."""


from . import (  # noqa: F401  (re-exported)
    Flatten,
    Unflatten,
)

__all__ = ["Flatten", "Unflatten"]
