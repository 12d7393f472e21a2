"""Convolution, window and padding modules: ``Conv1d``, ``Conv2d``, ``ConvTranspose1d``,
``ConvTranspose2d``, ``Unfold``, ``Fold`` and the padding layers (``ZeroPad2d``,
``ReflectionPad2d``, ...), with PyTorch's arguments, checks, initialization and
printouts. The math is :mod:`gradcore.ops.conv`'s.

>>> import gradcore as gc
>>> from gradcore import nn
>>> conv = nn.Conv2d(1, 4, 3, padding=1)
>>> conv
Conv2d(1, 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
>>> conv(gc.zeros(2, 1, 8, 8)).shape
gradcore.Size([2, 4, 8, 8])
>>> [name for name, _ in conv.named_parameters()]
['weight', 'bias']
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from ..creation import empty
from ..ops import conv as _conv
from ..tensor import Parameter
from . import init
from .modules import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d", "Unfold", "Fold",
           "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d"]


def _ntuple(n, name="parse"):
    """PyTorch's ``_single``/``_pair``/...: an iterable as a tuple, else ``n`` copies."""
    def parse(x):
        if isinstance(x, Iterable) and not isinstance(x, str):
            return tuple(x)
        return (x,) * n
    parse.__name__ = name
    return parse


_single, _pair, _triple = _ntuple(1, "_single"), _ntuple(2, "_pair"), _ntuple(3, "_triple")


def _reverse_repeat_tuple(t, n):
    """``(a, b)`` as ``(b, b, a, a)`` for ``n = 2``: a padding in ``F.pad``'s order."""
    return tuple(x for x in reversed(t) for _ in range(n))


class _ConvNd(Module):
    """What the convolutions share: PyTorch's ``_ConvNd`` (checks, parameters, init,
    printout)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 transposed, output_padding, groups, bias, padding_mode, device=None,
                 dtype=None):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_padding_modes:
            raise ValueError(f"padding_mode must be one of {valid_padding_modes}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        # the padding F.pad takes (last dimension first), for the non-zero padding modes
        if isinstance(self.padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size,
                                   range(len(kernel_size) - 1, -1, -1)):
                    total_padding = d * (k - 1)
                    left_pad = total_padding // 2
                    self._reversed_padding_repeated_twice[2 * i] = left_pad
                    self._reversed_padding_repeated_twice[2 * i + 1] = total_padding - left_pad
        else:
            self._reversed_padding_repeated_twice = _reverse_repeat_tuple(self.padding, 2)
        shape = (in_channels, out_channels // groups) if transposed else \
            (out_channels, in_channels // groups)
        self.weight = Parameter(empty(shape + tuple(kernel_size), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty((out_channels,), device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's initialization: Kaiming uniform with ``a = sqrt(5)`` for the weight
        (uniform in ``+-1/sqrt(fan_in)``), the bias uniform in ``+-1/sqrt(fan_in)``."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)


class Conv1d(_ConvNd):
    """A 1-D convolution over ``(N, C_in, L)`` (or ``(C_in, L)``) inputs: weight
    ``(out_channels, in_channels / groups, kernel_size)``, bias ``(out_channels,)``;
    ``padding`` an int, a 1-tuple, ``"valid"`` or ``"same"``; ``padding_mode`` ``"zeros"``,
    ``"reflect"``, ``"replicate"`` or ``"circular"``."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__(in_channels, out_channels, _single(kernel_size), _single(stride),
                         padding if isinstance(padding, str) else _single(padding),
                         _single(dilation), False, _single(0), groups, bias, padding_mode,
                         device=device, dtype=dtype)

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            return _conv.conv1d(_conv.pad(input, self._reversed_padding_repeated_twice,
                                          mode=self.padding_mode),
                                weight, bias, self.stride, _single(0), self.dilation,
                                self.groups)
        return _conv.conv1d(input, weight, bias, self.stride, self.padding, self.dilation,
                            self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv2d(_ConvNd):
    """A 2-D convolution over ``(N, C_in, H, W)`` (or ``(C_in, H, W)``) inputs: weight
    ``(out_channels, in_channels / groups, kh, kw)``, bias ``(out_channels,)``;
    ``kernel_size``, ``stride``, ``padding``, ``dilation`` an int or a pair (``padding``
    also ``"valid"`` or ``"same"``); ``padding_mode`` ``"zeros"``, ``"reflect"``,
    ``"replicate"`` or ``"circular"``.

    >>> import gradcore as gc
    >>> from gradcore import nn
    >>> nn.Conv2d(3, 8, 3, stride=2, bias=False)(gc.zeros(4, 3, 9, 9)).shape
    gradcore.Size([4, 8, 4, 4])
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__(in_channels, out_channels, _pair(kernel_size), _pair(stride),
                         padding if isinstance(padding, str) else _pair(padding),
                         _pair(dilation), False, _pair(0), groups, bias, padding_mode,
                         device=device, dtype=dtype)

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            return _conv.conv2d(_conv.pad(input, self._reversed_padding_repeated_twice,
                                          mode=self.padding_mode),
                                weight, bias, self.stride, _pair(0), self.dilation,
                                self.groups)
        return _conv.conv2d(input, weight, bias, self.stride, self.padding, self.dilation,
                            self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv3d(_ConvNd):
    """A 3-D convolution over ``(N, C_in, D, H, W)`` (or ``(C_in, D, H, W)``) inputs:
    weight ``(out_channels, in_channels / groups, kd, kh, kw)``, bias
    ``(out_channels,)``; ``kernel_size``, ``stride``, ``padding``, ``dilation`` an int or
    a triple (``padding`` also ``"valid"`` or ``"same"``); ``padding_mode`` ``"zeros"``,
    ``"reflect"``, ``"replicate"`` or ``"circular"``.

    >>> import gradcore as gc
    >>> from gradcore import nn
    >>> nn.Conv3d(2, 4, 3, padding=1)(gc.zeros(1, 2, 4, 5, 5)).shape
    gradcore.Size([1, 4, 4, 5, 5])
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__(in_channels, out_channels, _triple(kernel_size), _triple(stride),
                         padding if isinstance(padding, str) else _triple(padding),
                         _triple(dilation), False, _triple(0), groups, bias, padding_mode,
                         device=device, dtype=dtype)

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            return _conv.conv3d(_conv.pad(input, self._reversed_padding_repeated_twice,
                                          mode=self.padding_mode),
                                weight, bias, self.stride, _triple(0), self.dilation,
                                self.groups)
        return _conv.conv3d(input, weight, bias, self.stride, self.padding, self.dilation,
                            self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class _ConvTransposeNd(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 transposed, output_padding, groups, bias, padding_mode, device=None,
                 dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{self.__class__.__name__}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         transposed, output_padding, groups, bias, padding_mode,
                         device=device, dtype=dtype)

    def _output_padding(self, input, output_size, stride, padding, kernel_size,
                        num_spatial_dims, dilation=None):
        """The output padding that gives ``output_size`` (PyTorch's, its checks)."""
        if output_size is None:
            return _single(self.output_padding)
        has_batch_dim = input.dim() == num_spatial_dims + 2
        num_non_spatial_dims = 2 if has_batch_dim else 1
        output_size = list(output_size)
        if len(output_size) == num_non_spatial_dims + num_spatial_dims:
            output_size = output_size[num_non_spatial_dims:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, "
                             f"output_size must have {num_spatial_dims} or "
                             f"{num_non_spatial_dims + num_spatial_dims} elements (got "
                             f"{len(output_size)})")
        min_sizes, max_sizes = [], []
        for d in range(num_spatial_dims):
            dim_size = ((input.size(d + num_non_spatial_dims) - 1) * stride[d] -
                        2 * padding[d] +
                        (dilation[d] if dilation is not None else 1) * (kernel_size[d] - 1) +
                        1)
            min_sizes.append(dim_size)
            max_sizes.append(min_sizes[d] + stride[d] - 1)
        for i, size in enumerate(output_size):
            if size < min_sizes[i] or size > max_sizes[i]:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                                 f"range from {min_sizes} to {max_sizes} (for an input of "
                                 f"{input.size()[2:]})")
        return [output_size[d] - min_sizes[d] for d in range(num_spatial_dims)]


class ConvTranspose1d(_ConvTransposeNd):
    """A 1-D transposed convolution (the gradient of ``Conv1d`` with respect to its
    input): weight ``(in_channels, out_channels / groups, kernel_size)``; ``forward``
    takes an optional ``output_size`` that picks the output padding."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, _single(kernel_size), _single(stride),
                         _single(padding), _single(dilation), True, _single(output_padding),
                         groups, bias, padding_mode, device=device, dtype=dtype)

    def forward(self, input, output_size=None):
        if self.padding_mode != "zeros":
            raise ValueError("Only `zeros` padding mode is supported for ConvTranspose1d")
        output_padding = self._output_padding(input, output_size, self.stride, self.padding,
                                              self.kernel_size, 1, self.dilation)
        return _conv.conv_transpose1d(input, self.weight, self.bias, self.stride,
                                      self.padding, output_padding, self.groups,
                                      self.dilation)


class ConvTranspose2d(_ConvTransposeNd):
    """A 2-D transposed convolution: weight ``(in_channels, out_channels / groups, kh,
    kw)``, output size ``(H - 1) * stride - 2 * padding + dilation * (kh - 1) +
    output_padding + 1``; ``forward`` takes an optional ``output_size`` that picks the
    output padding.

    >>> import gradcore as gc
    >>> from gradcore import nn
    >>> up = nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1)
    >>> up(gc.zeros(1, 8, 5, 5), output_size=(10, 10)).shape
    gradcore.Size([1, 4, 10, 10])
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, _pair(kernel_size), _pair(stride),
                         _pair(padding), _pair(dilation), True, _pair(output_padding),
                         groups, bias, padding_mode, device=device, dtype=dtype)

    def forward(self, input, output_size=None):
        if self.padding_mode != "zeros":
            raise ValueError("Only `zeros` padding mode is supported for ConvTranspose2d")
        output_padding = self._output_padding(input, output_size, self.stride, self.padding,
                                              self.kernel_size, 2, self.dilation)
        return _conv.conv_transpose2d(input, self.weight, self.bias, self.stride,
                                      self.padding, output_padding, self.groups,
                                      self.dilation)


class ConvTranspose3d(_ConvTransposeNd):
    """A 3-D transposed convolution: weight ``(in_channels, out_channels / groups, kd,
    kh, kw)``, each output size ``(S - 1) * stride - 2 * padding + dilation * (k - 1) +
    output_padding + 1``; ``forward`` takes an optional ``output_size`` that picks the
    output padding."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, _triple(kernel_size), _triple(stride),
                         _triple(padding), _triple(dilation), True, _triple(output_padding),
                         groups, bias, padding_mode, device=device, dtype=dtype)

    def forward(self, input, output_size=None):
        if self.padding_mode != "zeros":
            raise ValueError("Only `zeros` padding mode is supported for ConvTranspose3d")
        output_padding = self._output_padding(input, output_size, self.stride, self.padding,
                                              self.kernel_size, 3, self.dilation)
        return _conv.conv_transpose3d(input, self.weight, self.bias, self.stride,
                                      self.padding, output_padding, self.groups,
                                      self.dilation)


class Fold(Module):
    """Sums sliding blocks into an image (``F.fold``)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return _conv.fold(input, self.output_size, self.kernel_size, self.dilation,
                          self.padding, self.stride)

    def extra_repr(self):
        return ("output_size={output_size}, kernel_size={kernel_size}, "
                "dilation={dilation}, padding={padding}, stride={stride}".format(
                    **self.__dict__))


class Unfold(Module):
    """An image's sliding blocks as columns (``F.unfold``)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return _conv.unfold(input, self.kernel_size, self.dilation, self.padding,
                            self.stride)

    def extra_repr(self):
        return ("kernel_size={kernel_size}, dilation={dilation}, padding={padding},"
                " stride={stride}".format(**self.__dict__))


# ---- padding layers ----------
class _PadNd(Module):
    """``F.pad(input, self.padding, mode)``; ``padding`` an int (every side) or a tuple
    in ``F.pad``'s order (last dimension first)."""

    mode = "constant"
    sides = 2

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(self.sides)(padding)

    def forward(self, input):
        return _conv.pad(input, self.padding, self.mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return _conv.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dimension with ``value``: ``padding`` an int or ``(left, right)``."""


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two dimensions with ``value``: ``(left, right, top, bottom)``."""

    sides = 4


class ConstantPad3d(_ConstantPadNd):
    """Pads the last three dimensions with ``value``: six sides, last dimension first."""

    sides = 6


class ZeroPad1d(ConstantPad1d):
    """Pads the last dimension with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pads the last two dimensions with zeros: ``(left, right, top, bottom)``."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pads the last three dimensions with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class _ReflectionPadNd(_PadNd):
    mode = "reflect"


class ReflectionPad1d(_ReflectionPadNd):
    """Pads the last dimension with its reflection (the edge not repeated)."""


class ReflectionPad2d(_ReflectionPadNd):
    """Pads the last two dimensions with their reflection."""

    sides = 4


class ReflectionPad3d(_ReflectionPadNd):
    """Pads the last three dimensions with their reflection."""

    sides = 6


class _ReplicationPadNd(_PadNd):
    mode = "replicate"


class ReplicationPad1d(_ReplicationPadNd):
    """Pads the last dimension with copies of its edge."""


class ReplicationPad2d(_ReplicationPadNd):
    """Pads the last two dimensions with copies of their edges."""

    sides = 4


class ReplicationPad3d(_ReplicationPadNd):
    """Pads the last three dimensions with copies of their edges."""

    sides = 6


class _CircularPadNd(_PadNd):
    mode = "circular"

    def forward(self, input):
        dims = self.sides // 2
        if input.dim() not in (dims + 1, dims + 2):
            raise ValueError(f"expected {dims + 1}D or {dims + 2}D input (got {input.dim()}D "
                             f"input)")
        return _conv.pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    """Pads the last dimension by wrapping it around."""


class CircularPad2d(_CircularPadNd):
    """Pads the last two dimensions by wrapping them around."""

    sides = 4


class CircularPad3d(_CircularPadNd):
    """Pads the last three dimensions by wrapping them around."""

    sides = 6
