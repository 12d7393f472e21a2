"""``torch.nn.modules.pixelshuffle``: the pixel shuffles. The names programs import from
here, bound to gradcore's own classes (those ``gradcore.nn`` holds)."""


from ..upsampling import (  # noqa: F401  (re-exported)
    PixelShuffle,
    PixelUnshuffle,
)

__all__ = ["PixelShuffle", "PixelUnshuffle"]
