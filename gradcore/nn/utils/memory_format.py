"""Laying out a model's convolution weights channels-last
(``torch.nn.utils.convert_conv2d_weight_memory_format``); values are unchanged."""

from __future__ import annotations

from ...ops import shape as _shape

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module, memory_format, kinds):
    if isinstance(module, kinds):
        weight = module.weight.detach()
        if memory_format is _shape.preserve_format:
            data = weight.clone()
        else:
            data = weight.contiguous(memory_format=memory_format)
            if data is weight:
                data = weight.clone().contiguous(memory_format=memory_format)
        module.weight.data = data
    for child in module.children():
        _convert(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Lay out the weight of every ``Conv2d`` and ``ConvTranspose2d`` in ``module`` (and
    its children) in ``memory_format`` (``gc.channels_last``); returns ``module``."""
    from ..conv import Conv2d, ConvTranspose2d  # noqa: PLC0415

    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """Lay out the weight of every ``Conv3d`` and ``ConvTranspose3d`` in ``module`` (and
    its children) in ``memory_format`` (``gc.channels_last_3d``); returns ``module``."""
    from ..conv import Conv3d, ConvTranspose3d  # noqa: PLC0415

    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))
