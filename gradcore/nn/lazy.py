"""Lazy layers: ``nn.LazyLinear``, ``nn.LazyConv1d/2d/3d``, ``nn.LazyConvTranspose1d/2d/3d``,
``nn.LazyBatchNorm1d/2d/3d`` and ``nn.LazyInstanceNorm1d/2d/3d``, whose input size is read
from the first input, and the :class:`UninitializedParameter` and
:class:`UninitializedBuffer` they hold until then.

At its first call a lazy layer materializes its parameters (their shapes from the
input), initializes them as the ordinary layer does, and becomes that layer
(``LazyLinear`` a :class:`~gradcore.nn.Linear`), as in PyTorch.

>>> import gradcore as gc
>>> from gradcore import nn
>>> layer = nn.LazyLinear(3)
>>> layer
LazyLinear(in_features=0, out_features=3, bias=True)
>>> layer(gc.ones(2, 5)).shape
gradcore.Size([2, 3])
>>> layer
Linear(in_features=5, out_features=3, bias=True)
"""

from __future__ import annotations

from ..autograd.grad_mode import no_grad
from ..creation import empty
from ..creation import tensor as _tensor
from ..dtypes import int64
from ..tensor import Parameter, Tensor
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .modules import Linear
from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
)

__all__ = ["UninitializedParameter", "UninitializedBuffer", "LazyLinear", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
           "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class UninitializedParameter(Parameter):
    """A parameter whose shape is not known yet: it holds no data (its ``shape`` raises)
    until :meth:`materialize` gives it one, and with it the class :class:`Parameter`.
    ``device`` and ``dtype`` are those it materializes with."""

    cls_to_become = Parameter
    _uninitialized = True  # (Module.load_state_dict materializes it with the loaded shape)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        super().__init__(empty((0,), device=device, dtype=dtype), requires_grad)

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the parameter uninitialized memory of ``shape`` (on ``device``, of
        ``dtype``: by default its own), making it a :class:`Parameter`."""
        device = self.device if device is None else device
        dtype = self.dtype if dtype is None else dtype
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        requires_grad = self.requires_grad
        self.__class__ = self.cls_to_become
        Parameter.__init__(self, empty(shape, device=device, dtype=dtype), requires_grad)

    @property
    def shape(self):
        """Raises: an uninitialized parameter has no shape yet (PyTorch's error)."""
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. "
                           "This error usually happens in `load_state_dict` when trying to "
                           "load an uninitialized parameter into an initialized one. Call "
                           "`forward` to initialize the parameters before accessing their "
                           "attributes.")

    def __repr__(self):
        return "<UninitializedParameter>"

    __str__ = __repr__


class UninitializedBuffer(Tensor):
    """A buffer whose shape is not known yet (a lazy normalization layer's running
    statistics): no data (its ``shape`` raises) until :meth:`materialize` gives it one,
    and with it the class :class:`~gradcore.Tensor`."""

    cls_to_become = Tensor
    _uninitialized = True

    def __init__(self, requires_grad=False, device=None, dtype=None):
        super().__init__(empty((0,), device=device, dtype=dtype)._data)
        if requires_grad:
            self.requires_grad_(True)

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the buffer uninitialized memory of ``shape`` (on ``device``, of ``dtype``:
        by default its own), making it a :class:`~gradcore.Tensor`."""
        device = self.device if device is None else device
        dtype = self.dtype if dtype is None else dtype
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.__class__ = self.cls_to_become
        self._data = empty(shape, device=device, dtype=dtype)._data
        self._bump()

    shape = UninitializedParameter.shape

    def __repr__(self):
        return "<UninitializedBuffer>"

    __str__ = __repr__


class _LazyModuleMixin:
    """PyTorch's ``LazyModuleMixin``: a forward pre-hook that calls
    ``initialize_parameters(*args)`` at the first call, then removes itself and turns
    the module into ``cls_to_become``."""

    cls_to_become = None

    def _register_lazy_hook(self) -> None:
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters)

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer of this module (not of its children) is
        uninitialized."""
        return any(isinstance(p, (UninitializedParameter, UninitializedBuffer))
                   for p in (*self._parameters.values(), *self._buffers.values()))


def _infer_parameters(module, args):
    module.initialize_parameters(*args)
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {type(module).__name__} has not been fully initialized")
    module._initialize_hook.remove()
    del module._initialize_hook
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become


class LazyLinear(_LazyModuleMixin, Linear):
    """A :class:`~gradcore.nn.Linear` whose ``in_features`` is the last dimension of its
    first input (``in_features=0`` until then)."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        self._register_lazy_hook()

    def reset_parameters(self) -> None:
        """Initialize as :class:`~gradcore.nn.Linear` does, once materialized."""
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        """Materialize the weight ``(out_features, input.shape[-1])`` and the bias."""
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
        if self.in_features == 0:  # (parameters loaded from a state_dict)
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(f"The in_features inferred from input: "
                                     f"{input.shape[-1]} is not equal to in_features from "
                                     f"self.weight: {self.weight.shape[-1]}")
            self.in_features = input.shape[-1]


class _LazyConvMixin(_LazyModuleMixin):
    def _lazy_init(self, out_channels, bias, device, dtype) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        self._register_lazy_hook()

    def reset_parameters(self) -> None:
        """Initialize as the convolution does, once materialized."""
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args) -> None:
        """Materialize the weight and bias, ``in_channels`` read from ``input``'s channel
        dimension."""
        if not self.has_uninitialized_params():
            return
        spatial = len(self.kernel_size)
        if input.ndim not in (spatial + 1, spatial + 2):
            raise RuntimeError(f"Expected {spatial + 1}D (unbatched) or {spatial + 2}D "
                               f"(batched) input to {type(self).__name__}, but got input of "
                               f"size: {input.shape}")
        self.in_channels = input.shape[1] if input.ndim == spatial + 2 else input.shape[0]
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if self.transposed:
            shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
        else:
            shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
        with no_grad():
            self.weight.materialize(shape)
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()


def _lazy_conv(base, dims):
    class LazyConv(_LazyConvMixin, base):
        cls_to_become = base

        def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                     groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                     device=None, dtype=None):
            super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                             padding_mode)
            self._lazy_init(out_channels, bias, device, dtype)

    LazyConv.__name__ = LazyConv.__qualname__ = f"LazyConv{dims}d"
    LazyConv.__doc__ = (f"A :class:`~gradcore.nn.Conv{dims}d` whose ``in_channels`` is read "
                        f"from its first input's channel dimension.")
    return LazyConv


LazyConv1d = _lazy_conv(Conv1d, 1)
LazyConv2d = _lazy_conv(Conv2d, 2)
LazyConv3d = _lazy_conv(Conv3d, 3)


def _lazy_conv_transpose(base, dims):
    class LazyConvTranspose(_LazyConvMixin, base):
        cls_to_become = base

        def __init__(self, out_channels: int, kernel_size, stride=1, padding=0,
                     output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                     padding_mode: str = "zeros", device=None, dtype=None):
            super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False,
                             dilation, padding_mode)
            self._lazy_init(out_channels, bias, device, dtype)

    LazyConvTranspose.__name__ = LazyConvTranspose.__qualname__ = f"LazyConvTranspose{dims}d"
    LazyConvTranspose.__doc__ = (
        f"A :class:`~gradcore.nn.ConvTranspose{dims}d` whose ``in_channels`` is read from "
        f"its first input's channel dimension.")
    return LazyConvTranspose


LazyConvTranspose1d = _lazy_conv_transpose(ConvTranspose1d, 1)
LazyConvTranspose2d = _lazy_conv_transpose(ConvTranspose2d, 2)
LazyConvTranspose3d = _lazy_conv_transpose(ConvTranspose3d, 3)


class _LazyNormMixin(_LazyModuleMixin):
    def _lazy_init(self, affine, track_running_stats, device, dtype, bias) -> None:
        self.affine, self.track_running_stats = affine, track_running_stats
        self.bias_enabled = affine and bias
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = _tensor(0, dtype=int64, device=device)
        self._register_lazy_hook()

    def reset_parameters(self) -> None:
        """Reset as the normalization does, once materialized."""
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        """Materialize the weight, bias and running statistics, ``num_features`` read
        from ``input.shape[1]`` (as PyTorch's)."""
        if not self.has_uninitialized_params():
            return
        self.num_features = input.shape[1]
        with no_grad():
            if self.affine:
                self.weight.materialize((self.num_features,))
                if self.bias is not None:
                    self.bias.materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
            self.reset_parameters()


def _lazy_norm(base, name):
    class LazyNorm(_LazyNormMixin, base):
        cls_to_become = base

        def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1,
                     affine: bool = True, track_running_stats: bool = True, device=None,
                     dtype=None, *, bias: bool = True):
            super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
            self._lazy_init(affine, track_running_stats, device, dtype, bias)

    LazyNorm.__name__ = LazyNorm.__qualname__ = f"Lazy{name}"
    LazyNorm.__doc__ = (f"A :class:`~gradcore.nn.{name}` whose ``num_features`` is read "
                        f"from its first input's ``shape[1]`` (``affine`` and "
                        f"``track_running_stats`` True by default, as PyTorch's).")
    return LazyNorm


LazyBatchNorm1d = _lazy_norm(BatchNorm1d, "BatchNorm1d")
LazyBatchNorm2d = _lazy_norm(BatchNorm2d, "BatchNorm2d")
LazyBatchNorm3d = _lazy_norm(BatchNorm3d, "BatchNorm3d")
LazyInstanceNorm1d = _lazy_norm(InstanceNorm1d, "InstanceNorm1d")
LazyInstanceNorm2d = _lazy_norm(InstanceNorm2d, "InstanceNorm2d")
LazyInstanceNorm3d = _lazy_norm(InstanceNorm3d, "InstanceNorm3d")
