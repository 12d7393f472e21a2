"""``torch.nn.modules.module``: Module, the base class of every layer. The names programs
import from here, bound to gradcore's own classes (those ``gradcore.nn`` holds)."""


from . import (  # noqa: F401  (re-exported)
    Module,
    _addindent,
    _IncompatibleKeys,
)

__all__ = ["Module"]
