"""Batch, instance and group normalization layers (``nn.BatchNorm1d/2d/3d``,
``nn.InstanceNorm1d/2d/3d``, ``nn.GroupNorm``), PyTorch's modules over ``F.batch_norm``,
``F.instance_norm`` and ``F.group_norm``.

>>> import gradcore as gc
>>> from gradcore import nn
>>> bn = nn.BatchNorm2d(3)
>>> bn
BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
>>> list(bn.state_dict())
['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked']
"""

from __future__ import annotations

import warnings

from .. import creation, dtypes
from ..tensor import Parameter
from . import functional as F
from . import init
from .modules import Module, _DropoutNd

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "GroupNorm", "Dropout1d", "Dropout2d",
           "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _NormBase(Module):
    """The base of the batch and instance normalization layers (PyTorch's
    ``torch.nn.modules.batchnorm._NormBase``): the per-channel affine parameters and the
    running statistics, their resets and the repr; the subclasses' ``forward``
    normalizes."""
    _dims: tuple = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None,
                 dtype=None, *, bias: bool = True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.bias_enabled = affine and bias  # (PyTorch's repr says bias=...)
        _affine_parameters(self, num_features, affine, bias, device, dtype)
        if track_running_stats:
            kw = dict(device=device, dtype=dtype)
            self.register_buffer("running_mean", creation.zeros(num_features, **kw))
            self.register_buffer("running_var", creation.ones(num_features, **kw))
            self.register_buffer("num_batches_tracked",
                                 creation.tensor(0, dtype=dtypes.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        """Running mean to zeros, variance to ones, the batch count to zero."""
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """The running statistics reset, the weight to ones and the bias to zeros."""
        self.reset_running_stats()
        _reset_affine(self)

    def _check_input_dim(self, input):
        if input.ndim not in self._dims:
            want = " or ".join(f"{d}D" for d in self._dims)
            raise ValueError(f"expected {want} input (got {input.ndim}D input)")

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias_enabled}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    """The base of the batch normalization layers (``BatchNorm1d/2d/3d``,
    ``SyncBatchNorm``): ``forward`` is ``F.batch_norm`` with the running statistics."""

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative average (a host read of the count)
                factor = 1.0 / float(self.num_batches_tracked)
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if keep else None,
                            self.running_var if keep else None, self.weight, self.bias,
                            use_batch, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalization of ``(N, C)`` or ``(N, C, L)`` (``F.batch_norm``): running
    statistics (``momentum``; ``None``: a cumulative average) in ``state_dict``."""
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of ``(N, C, H, W)`` per channel (``F.batch_norm``)."""
    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalization of ``(N, C, D, H, W)`` per channel (``F.batch_norm``)."""
    _dims = (5,)


class _InstanceNorm(_NormBase):  # (not a _BatchNorm, as in PyTorch)
    _dims: tuple = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device=None,
                 dtype=None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def forward(self, input):
        if input.ndim not in self._dims:
            raise ValueError(f"expected {self._dims[0]}D or {self._dims[1]}D input (got "
                             f"{input.ndim}D input)")
        dim = input.ndim - self._dims[0]  # (the channels' axis)
        if input.shape[dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={dim} to match num_features "
                                 f"({self.num_features}), but got: {input.shape[dim]}.")
            warnings.warn(f"input's size at dim={dim} does not match num_features. You can "
                          "silence this warning by not passing in num_features, which is not "
                          "used because affine=False", stacklevel=2)
        unbatched = input.ndim == self._dims[0]
        x = input.unsqueeze(0) if unbatched else input
        y = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            self.training or not self.track_running_stats,
                            self.momentum if self.momentum is not None else 0.0, self.eps)
        return y.squeeze(0) if unbatched else y


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of ``(N, C, L)`` or ``(C, L)`` (``F.instance_norm``): each
    channel of each sample normalized over its length; no affine and no running
    statistics unless asked (``affine``, ``track_running_stats``)."""
    _dims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of ``(N, C, H, W)`` or ``(C, H, W)`` (``F.instance_norm``)."""
    _dims = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of ``(N, C, D, H, W)`` or ``(C, D, H, W)``."""
    _dims = (4, 5)


class GroupNorm(Module):
    """Group normalization (``F.group_norm``): ``num_channels`` split into
    ``num_groups`` groups normalized separately, with a per-channel affine."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device=None, dtype=None, *, bias: bool = True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = \
            num_groups, num_channels, eps, affine
        self.bias_enabled = affine and bias
        _affine_parameters(self, num_channels, affine, bias, device, dtype)

    def reset_parameters(self) -> None:
        """The weight to ones and the bias to zeros."""
        _reset_affine(self)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias_enabled}")


def _affine_parameters(module, n, affine, bias, device, dtype) -> None:
    """``weight`` (ones) and ``bias`` (zeros) of ``n`` channels, or ``None`` each."""
    if affine:
        module.weight = Parameter(creation.ones(n, device=device, dtype=dtype))
    else:
        module.register_parameter("weight", None)
    if affine and bias:
        module.bias = Parameter(creation.zeros(n, device=device, dtype=dtype))
    else:
        module.register_parameter("bias", None)


def _reset_affine(module) -> None:
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class Dropout1d(_DropoutNd):
    """Zero whole channels of ``(N, C, L)`` or ``(C, L)`` in training (``F.dropout1d``)."""

    def forward(self, input):
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels of ``(N, C, H, W)`` in training (``F.dropout2d``)."""

    def forward(self, input):
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zero whole channels of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` in training
    (``F.dropout3d``)."""

    def forward(self, input):
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Alpha dropout for SELU networks in training (``F.alpha_dropout``): dropped elements
    set to SELU's negative saturation, the result kept at zero mean and unit variance."""

    def forward(self, input):
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels in training (``F.feature_alpha_dropout``)."""

    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training)


class RMSNorm(Module):
    """Root mean square normalization over the trailing ``normalized_shape`` dimensions
    (``F.rms_norm``), then a learnable ``weight`` (ones) when ``elementwise_affine``;
    ``eps=None`` is the input dtype's machine epsilon."""

    def __init__(self, normalized_shape, eps: float | None = None,
                 elementwise_affine: bool = True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(creation.empty(self.normalized_shape, device=device,
                                                   dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Set the weight to ones again."""
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class LocalResponseNorm(Module):
    """Local response normalization across neighbouring channels
    (``F.local_response_norm``)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class SyncBatchNorm(_BatchNorm):
    """Batch normalization whose statistics would be synchronized across the processes
    of a distributed group; gradcore runs one process, where it is batch normalization
    of ``(N, C, ...)`` inputs (``F.batch_norm``). :meth:`convert_sync_batchnorm` swaps
    the batch normalization layers of a model for it."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group=None,
                 device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        return super().forward(input)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with each ``BatchNorm1d/2d/3d`` in it (itself included) replaced by a
        :class:`SyncBatchNorm` holding the same parameters, buffers and training mode."""
        out = module
        if isinstance(module, _BatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group)
            if module.affine:
                out.weight = module.weight
                out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        del module
        return out


__all__ += ["Dropout3d", "AlphaDropout", "FeatureAlphaDropout", "RMSNorm",
            "LocalResponseNorm", "SyncBatchNorm"]
