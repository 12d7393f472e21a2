"""``torch.nn.modules.container``: the containers. The names programs import from here,
bound to gradcore's own classes (those ``gradcore.nn`` holds)."""


from . import (  # noqa: F401  (re-exported)
    Container,
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)

__all__ = ["Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
           "ParameterDict"]
