"""``gradcore.nn.init``: PyTorch's initializers, in place and untracked.

Each fills its tensor from gradcore's default generator (``gc.manual_seed`` makes the
values reproducible; they are not PyTorch's stream of numbers, only its
distributions) or from ``generator=`` (a ``gc.Generator``), writes into the tensor's
memory without recording anything (like PyTorch's, which run under ``no_grad``) and
returns the tensor.

>>> import gradcore as gc
>>> w = gc.nn.init.kaiming_uniform_(gc.empty(4, 9), a=5 ** 0.5)
>>> bool((w.abs() <= 1 / 3).all())
True
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np

from .. import _random
from ..tensor import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_", "eye_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "trunc_normal_"]


def _write(tensor: Tensor, host) -> Tensor:
    """Copy the host array ``host`` into ``tensor``'s memory, untracked."""
    d = tensor._data
    if type(d) is np.ndarray:
        d[...] = host
    else:
        d[...] = tensor.device.asarray(np.ascontiguousarray(host, dtype=d.dtype))
    tensor._bump()
    return tensor


def _no_op_for_empty(tensor) -> bool:
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return True
    return False


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for ``nonlinearity`` (PyTorch's table)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                  "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif (not isinstance(param, bool) and isinstance(param, int)) or \
                isinstance(param, float):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    dimensions = tensor.ndim
    if dimensions < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than "
                         "2 dimensions")
    num_input_fmaps = tensor.shape[1]
    num_output_fmaps = tensor.shape[0]
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return num_input_fmaps * receptive_field_size, num_output_fmaps * receptive_field_size


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with samples of U(a, b)."""
    rng = _random.stream(generator, tensor.device.type, "uniform_")
    return _write(tensor, rng.uniform(a, b, size=tuple(tensor.shape)))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with samples of N(mean, std**2)."""
    rng = _random.stream(generator, tensor.device.type, "normal_")
    return _write(tensor, rng.normal(mean, std, size=tuple(tensor.shape)))


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill with samples of N(mean, std**2) truncated to [a, b], by PyTorch's rejection
    sampling: normal draws redrawn until they lie in [a, b] when [a, b] holds more than
    30% of the normal's mass, else uniform draws on [a, b] each kept with probability
    ``pdf(x) / max pdf`` (so far tails cost no more than near ones). Warns, as PyTorch,
    when ``mean`` is more than two ``std`` outside [a, b]."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                      "distribution of values may be incorrect.", stacklevel=2)
    rng = _random.stream(generator, tensor.device.type, "trunc_normal_")
    shape = tuple(tensor.shape)
    mass = _normal_cdf((b - mean) / std) - _normal_cdf((a - mean) / std)
    if mass > 0.3:
        out = rng.normal(mean, std, size=shape)
        pending = (out < a) | (out > b)
        while pending.any():
            out[pending] = rng.normal(mean, std, size=int(pending.sum()))
            pending = (out < a) | (out > b)
        return _write(tensor, out)
    mode = max(a, min(mean, b))  # where the density peaks on [a, b]
    log_peak = -0.5 * ((mode - mean) / std) ** 2
    out = np.empty(shape)
    pending = np.ones(shape, dtype=bool)
    while pending.any():
        candidates = rng.uniform(a, b, size=int(pending.sum()))
        log_ratio = -0.5 * ((candidates - mean) / std) ** 2 - log_peak
        accepted = np.log(rng.uniform(size=candidates.shape)) <= log_ratio
        where = np.flatnonzero(pending)[accepted]
        out.flat[where] = candidates[accepted]
        pending.flat[where] = False
    return _write(tensor, out)


def _normal_cdf(x):
    """The standard normal's cumulative distribution function."""
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def constant_(tensor, val):
    """Fill with ``val``."""
    return _write(tensor, val)


def zeros_(tensor):
    """Fill ``tensor`` with zeros, in place and without recording a gradient; returns it."""
    return _write(tensor, 0)


def ones_(tensor):
    """Fill ``tensor`` with ones, in place and without recording a gradient; returns it."""
    return _write(tensor, 1)


def eye_(tensor):
    """The identity matrix (2-D tensors only)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _write(tensor, np.eye(*tensor.shape))


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))`` (Glorot)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """N(0, std**2) with ``std = gain * sqrt(2 / (fan_in + fan_out))`` (Glorot)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(-bound, bound) with ``bound = gain * sqrt(3 / fan)`` (He)."""
    if _no_op_for_empty(tensor):
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """N(0, std**2) with ``std = gain / sqrt(fan)`` (He)."""
    if _no_op_for_empty(tensor):
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix, scaled by ``gain``: the Q of the QR decomposition of a
    Gaussian matrix, its columns' signs fixed by R's diagonal (PyTorch's method), over
    the tensor flattened to ``(shape[0], -1)``."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor  # (as PyTorch: nothing to fill)
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    rng = _random.stream(generator, tensor.device.type, "orthogonal_")
    flat = rng.normal(0.0, 1.0, size=(rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _write(tensor, (q * gain).reshape(tuple(tensor.shape)))


def dirac_(tensor, groups=1):
    """The identity of a convolution (3-D, 4-D or 5-D weights): a one at the centre of
    the kernel of each output channel's own input channel, per group; zeros elsewhere."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = sizes[0] // groups
    out = np.zeros(sizes)
    centre = tuple(s // 2 for s in sizes[2:])
    for g in range(groups):
        for d in range(min(per_group, sizes[1])):
            out[(g * per_group + d, d) + centre] = 1
    return _write(tensor, out)


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """A 2-D tensor of N(0, std**2) values with a ``sparsity`` fraction of each column
    (rounded up) set to zero, at random rows."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    zeros = int(math.ceil(sparsity * rows))
    rng = _random.stream(generator, tensor.device.type, "sparse_")
    out = rng.normal(0.0, std, size=(rows, cols))
    for c in range(cols):
        out[rng.permutation(rows)[:zeros], c] = 0
    return _write(tensor, out)


__all__ += ["orthogonal_", "dirac_", "sparse_"]


def _make_deprecate(method):
    """PyTorch's old name of ``method`` (without the trailing underscore): warns with
    PyTorch's FutureWarning, then calls ``method``."""
    new_name = method.__name__
    old_name = new_name[:-1]

    @functools.wraps(method)
    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of "
                      f"`nn.init.{new_name}`.", FutureWarning, stacklevel=2)
        return method(*args, **kwargs)

    deprecated_init.__name__ = deprecated_init.__qualname__ = old_name
    deprecated_init.__doc__ = (f"Deprecated (as in PyTorch): warns with a FutureWarning and "
                               f"calls :func:`{new_name}`.")
    return deprecated_init


# PyTorch's deprecated names
uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)

__all__ += ["uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
            "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]
