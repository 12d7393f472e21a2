"""``torch.nn.modules.upsampling``: the upsampling layers. The names programs import from
here, bound to gradcore's own classes (those ``gradcore.nn`` holds)."""


from ..upsampling import (  # noqa: F401  (re-exported)
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]
