"""gradcore: PyTorch-style autograd over NumPy (CPU) and CuPy (NVIDIA GPUs).

>>> import gradcore as gc
>>> x = gc.tensor([1., 2., 3.], requires_grad=True)
>>> y = gc.tensor([4.], requires_grad=True)
>>> (x * y).sum().backward()
>>> y.grad
tensor([6.])
"""

import functools as _functools
import warnings as _warnings

from . import autograd, backend, dtypes, kernels, nn, optim
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .backend import Device, get_default_device, set_default_device
from .backend import device as device
from .capture import compile
from .creation import (
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    linspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    tensor,
    zeros,
    zeros_like,
)
from .dtypes import DType, bool_, float16, float32, float64, int8, int16, int32, int64, uint8
from .io import load, save
from .ops import _export
from .profile import profile
from .tensor import Parameter, Tensor

# PyTorch's torch.<name> functions among the ops: each is declared where it is written
# (`@export(torch=...)` above its `def` in gradcore/ops/; `grep "def tanh"` finds it).
globals().update(_export.FUNCTIONS)
del _export

bool = bool_  # noqa: A001  (gc.bool, as torch.bool)
half, double, long = float16, float64, int64
float = float32  # noqa: A001
int = int32  # noqa: A001

__version__ = "0.1.0"


class _Cuda:
    """``gc.cuda``: is_available(), device_count()."""

    @staticmethod
    def is_available() -> bool:  # noqa: A003
        return backend.cuda_is_available()

    @staticmethod
    def device_count() -> "builtins.int":  # noqa: F821
        return backend.cuda_device_count()

    @staticmethod
    def unavailable_reason():
        return backend.cuda_unavailable_reason()


cuda = _Cuda()


def is_tensor(obj) -> "builtins.bool":  # noqa: F821
    return isinstance(obj, Tensor)


def numel(t) -> "builtins.int":  # noqa: F821
    return t.numel()


def clone(t):
    return t.clone()


def detach(t):
    return t.detach()


# Like PyTorch, gradcore computes inf and NaN silently: NumPy's floating-point warnings
# raised inside gradcore's own modules (1/0, inf*0, exp overflow) are not shown. User
# code calling NumPy directly keeps its warnings.
_warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"gradcore(\.|$)",
                         message=r".*(divide by zero|invalid value|overflow) encountered")


def _tensor_input(fn):
    """``fn`` refusing a first argument that is not a tensor with PyTorch's TypeError
    (``gc.reshape(ndarray, ...)`` raised NumPy's AttributeError). The check runs only
    when ``fn`` fails: a call with a tensor costs one frame. Not for the pointwise ops,
    whose temporary elision counts the references the caller's frames hold."""
    name = fn.__name__

    @_functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AttributeError:
            if not args or isinstance(args[0], Tensor):
                raise
            kind = type(args[0])
            kind = kind.__name__ if kind.__module__ == "builtins" else \
                f"{kind.__module__.split('.')[0]}.{kind.__qualname__}"
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{kind}") from None
    return call


# (the ops' own names, as PyTorch's messages say them)
for _name in ("all", "amax", "amin", "any", "argmax", "argmin", "broadcast_to", "diag",
              "diagonal", "expand", "flatten", "max", "mean", "min", "movedim", "nonzero",
              "norm", "permute", "prod", "repeat", "reshape", "squeeze", "std", "sum",
              "unbind", "unflatten", "unsqueeze", "transpose", "swapaxes", "var", "numel",
              "clone", "detach", "aminmax", "argsort", "bincount", "count_nonzero", "cross",
              "flip", "fliplr", "flipud", "histc", "index_add", "index_copy", "kthvalue",
              "masked_scatter", "masked_select", "msort", "nan_to_num", "repeat_interleave",
              "roll", "scatter", "sort", "std_mean", "take_along_dim", "topk", "trace",
              "tril", "triu", "unique", "var_mean"):
    globals()[_name] = _tensor_input(globals()[_name])
del _name

# `from gradcore import *`: every public name (generated: the ops' come from their
# declarations)
__all__ = sorted(_n for _n in globals() if not _n.startswith("_"))
