"""``torch.nn.modules.fold``: folding and unfolding. The names programs import from here,
bound to gradcore's own classes (those ``gradcore.nn`` holds)."""


from ..conv import (  # noqa: F401  (re-exported)
    Fold,
    Unfold,
)

__all__ = ["Fold", "Unfold"]
