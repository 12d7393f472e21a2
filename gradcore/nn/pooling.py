"""Pooling layers (``nn.MaxPool1d/2d``, ``nn.AvgPool1d/2d`` and the adaptive pools),
PyTorch's modules over :mod:`gradcore.ops.pool`.

>>> import gradcore as gc
>>> from gradcore import nn
>>> nn.MaxPool2d(2)
MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
>>> nn.AdaptiveAvgPool2d((1, 1))(gc.ones(2, 3, 5, 5)).shape
gradcore.Size([2, 3, 1, 1])
"""

from __future__ import annotations

from ..ops import pool as _pool
from . import functional as F
from .modules import Module

__all__ = ["MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "MaxUnpool1d",
           "MaxUnpool2d", "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d"]


def _single(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,)


class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"
                f", dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """The maximum of each window along the last axis (``F.max_pool1d``): input
    ``(N, C, L)`` or ``(C, L)``."""

    def forward(self, input):
        return _pool.max_pool1d(input, self.kernel_size, self.stride, self.padding,
                                self.dilation, ceil_mode=self.ceil_mode,
                                return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """The maximum of each window (``F.max_pool2d``): input ``(N, C, H, W)`` or
    ``(C, H, W)``; ``stride`` defaults to ``kernel_size``."""

    def forward(self, input):
        return _pool.max_pool2d(input, self.kernel_size, self.stride, self.padding,
                                self.dilation, ceil_mode=self.ceil_mode,
                                return_indices=self.return_indices)


class AvgPool1d(Module):
    """The mean of each window along the last axis (``F.avg_pool1d``)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True):
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):
        return _pool.avg_pool1d(input, self.kernel_size, self.stride, self.padding,
                                self.ceil_mode, self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """The mean of each window (``F.avg_pool2d``: ``count_include_pad``,
    ``divisor_override``)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        return _pool.avg_pool2d(input, self.kernel_size, self.stride, self.padding,
                                self.ceil_mode, self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AdaptivePool(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePool):
    """Average pooling to ``output_size`` values along the last axis."""

    def __init__(self, output_size):
        super().__init__(output_size)

    def forward(self, input):
        return _pool.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptivePool):
    """Average pooling to ``output_size`` (an int, a pair, ``None`` keeping an axis)."""

    def __init__(self, output_size):
        super().__init__(output_size)

    def forward(self, input):
        return _pool.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveMaxPool1d(_AdaptivePool):
    """Max pooling to ``output_size`` values along the last axis."""

    def __init__(self, output_size, return_indices: bool = False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):
        return _pool.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptivePool):
    """Max pooling to ``output_size`` (an int, a pair, ``None`` keeping an axis)."""

    def __init__(self, output_size, return_indices: bool = False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):
        return _pool.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class _MaxUnpoolNd(Module):
    _n = 1

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        n = self._n
        as_tuple = (lambda v: tuple(v) if isinstance(v, (tuple, list)) else (v,) * n)
        self.kernel_size = as_tuple(kernel_size)
        self.stride = as_tuple(stride if stride is not None else kernel_size)
        self.padding = as_tuple(padding)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The inverse of :class:`MaxPool1d` (``F.max_unpool1d``): ``forward(input, indices,
    output_size=None)``."""

    _n = 1

    def forward(self, input, indices, output_size=None):
        return _pool.max_unpool1d(input, indices, self.kernel_size, self.stride,
                                  self.padding, output_size)


class MaxUnpool2d(_MaxUnpoolNd):
    """The inverse of :class:`MaxPool2d` (``F.max_unpool2d``): ``forward(input, indices,
    output_size=None)``."""

    _n = 2

    def forward(self, input, indices, output_size=None):
        return _pool.max_unpool2d(input, indices, self.kernel_size, self.stride,
                                  self.padding, output_size)


class MaxPool3d(_MaxPoolNd):
    """The maximum of each window (``F.max_pool3d``): input ``(N, C, D, H, W)`` or
    ``(C, D, H, W)``; ``stride`` defaults to ``kernel_size``."""

    def forward(self, input):
        return _pool.max_pool3d(input, self.kernel_size, self.stride, self.padding,
                                self.dilation, ceil_mode=self.ceil_mode,
                                return_indices=self.return_indices)


class AvgPool3d(AvgPool2d):
    """The mean of each window (``F.avg_pool3d``: ``count_include_pad``,
    ``divisor_override``): input ``(N, C, D, H, W)`` or ``(C, D, H, W)``."""

    def forward(self, input):
        return _pool.avg_pool3d(input, self.kernel_size, self.stride, self.padding,
                                self.ceil_mode, self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool3d(_AdaptivePool):
    """Average pooling to ``output_size`` (an int, a triple, ``None`` keeping an axis)."""

    def __init__(self, output_size):
        super().__init__(output_size)

    def forward(self, input):
        return _pool.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_AdaptivePool):
    """Max pooling to ``output_size`` (an int, a triple, ``None`` keeping an axis)."""

    def __init__(self, output_size, return_indices: bool = False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):
        return _pool.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class MaxUnpool3d(_MaxUnpoolNd):
    """The inverse of :class:`MaxPool3d` (``F.max_unpool3d``): ``forward(input, indices,
    output_size=None)``."""

    _n = 3

    def forward(self, input, indices, output_size=None):
        return _pool.max_unpool3d(input, indices, self.kernel_size, self.stride,
                                  self.padding, output_size)


class _LPPoolNd(Module):
    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode: bool = False):
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """Power-average pooling over ``(N, C, L)`` (``F.lp_pool1d``)."""

    def forward(self, input):
        return F.lp_pool1d(input, float(self.norm_type), self.kernel_size, self.stride,
                           self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """Power-average pooling over ``(N, C, H, W)`` (``F.lp_pool2d``)."""

    def forward(self, input):
        return F.lp_pool2d(input, float(self.norm_type), self.kernel_size, self.stride,
                           self.ceil_mode)


class LPPool3d(_LPPoolNd):
    """Power-average pooling over ``(N, C, D, H, W)`` (``F.lp_pool3d``)."""

    def forward(self, input):
        return F.lp_pool3d(input, float(self.norm_type), self.kernel_size, self.stride,
                           self.ceil_mode)


__all__ += ["AdaptiveMaxPool3d", "MaxUnpool3d", "LPPool1d", "LPPool2d", "LPPool3d"]


def _n(value, nd):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * nd


class _FractionalMaxPoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None,
                 return_indices: bool = False, _random_samples=None):
        super().__init__()
        nd = self._nd
        if nd == 3 and ((isinstance(kernel_size, int) and kernel_size <= 0) or (
                isinstance(kernel_size, (tuple, list)) and not all(k > 0 for k in kernel_size))):
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")
        self.kernel_size = _n(kernel_size, nd)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _n(output_size, nd) if output_size is not None else None
        self.output_ratio = _n(output_ratio, nd) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"FractionalMaxPool{nd}d requires specifying either an output "
                             f"size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio[:nd]):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):  # noqa: A002
        pool = F.fractional_max_pool2d if self._nd == 2 else F.fractional_max_pool3d
        return pool(input, self.kernel_size, self.output_size, self.output_ratio,
                    self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling (``F.fractional_max_pool2d``) of ``(N, C, H, W)`` or
    ``(C, H, W)``: ``kernel_size`` windows at pseudo-random steps, to ``output_size``
    or ``output_ratio`` (in ``(0, 1)``) of the input's size; ``_random_samples`` (a
    buffer) fixes the steps, else each call draws them."""

    _nd = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling (``F.fractional_max_pool3d``) of ``(N, C, D, H, W)`` or
    ``(C, D, H, W)``; arguments as :class:`FractionalMaxPool2d`, ints or triples."""

    _nd = 3


__all__ += ["FractionalMaxPool2d", "FractionalMaxPool3d"]
