"""PyTorch's process-wide switches that programs set (``torch.set_printoptions``,
``torch.set_num_threads``, ``torch.use_deterministic_algorithms``, ...): gradcore's
``gc.<name>``, each with PyTorch's arguments and errors.

What each one changes in gradcore: the print options change how tensors print, as in
PyTorch; ``set_anomaly_enabled`` is ``detect_anomaly`` without a block. The others are
recorded and read back, and change nothing else: gradcore's CPU arithmetic is NumPy's,
whose thread pool (its BLAS's) is sized when NumPy loads and cannot be resized while
the program runs (set ``OMP_NUM_THREADS`` before starting it); gradcore's ops give the
same result on every run (no nondeterministic kernels to refuse); and its float32
matrix products are computed in float32 whatever precision is asked for.
"""

from __future__ import annotations

import builtins
import math
import os

from . import _format
from .autograd import grad_mode

__all__ = ["set_flush_denormal", "set_printoptions", "set_num_threads", "get_num_threads",
           "set_num_interop_threads", "get_num_interop_threads",
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_float32_matmul_precision",
           "get_float32_matmul_precision", "is_anomaly_enabled", "set_anomaly_enabled",
           "set_warn_always", "is_warn_always_enabled",
           "typename"]

_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80),
             "full": (4, math.inf, 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None) -> None:
    """How tensors print, as PyTorch's: ``precision`` (digits after the point, 4),
    ``threshold`` (more elements than this print summarized, 1000), ``edgeitems``
    (elements shown at each end of a summarized dimension, 3), ``linewidth``
    (characters per line, 80), ``profile`` (``"default"``, ``"short"``: precision 2 and
    2 edge items, ``"full"``: never summarized; set first, then the other arguments)
    and ``sci_mode`` (True or False forces scientific notation on or off; None, the
    default, lets each tensor's values choose). The arguments left None keep their
    setting, except ``sci_mode``, which every call sets.

    >>> import gradcore as gc
    >>> gc.set_printoptions(precision=2)
    >>> gc.tensor([1.12345])
    tensor([1.12])
    >>> gc.set_printoptions(profile="default")
    """
    if profile in _PROFILES:  # (PyTorch ignores an unknown profile)
        (_format.PRECISION, _format.THRESHOLD, _format.EDGEITEMS,
         _format.LINEWIDTH) = _PROFILES[profile]
    if precision is not None:
        _format.PRECISION = precision
    if threshold is not None:
        _format.THRESHOLD = threshold
    if edgeitems is not None:
        _format.EDGEITEMS = edgeitems
    if linewidth is not None:
        _format.LINEWIDTH = linewidth
    _format.SCI_MODE = sci_mode


# ---- threads ----------
def _default_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (not on every platform)
        return os.cpu_count() or 1


_threads = {"intra": _default_threads(), "interop": _default_threads(), "interop_set": False}


def _positive_int(n, what) -> int:
    if not isinstance(n, int) or isinstance(n, bool):
        raise RuntimeError(f"{what} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{what} expects a positive integer")
    return n


def set_num_threads(int) -> None:  # noqa: A002  (PyTorch's parameter name)
    """Record the number of threads for intra-op parallelism (a positive int), which
    ``get_num_threads()`` returns. gradcore's CPU work runs in NumPy, whose thread pool
    cannot be resized while the program runs: set ``OMP_NUM_THREADS`` (or
    ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``) before starting it instead."""
    _threads["intra"] = _positive_int(int, "set_num_threads")


def get_num_threads() -> int:
    """The number set by ``set_num_threads``; at first, the number of CPUs this process
    may run on."""
    return _threads["intra"]


def set_num_interop_threads(int) -> None:  # noqa: A002
    """Record the number of threads for inter-op parallelism (a positive int); as in
    PyTorch, it can be set once. gradcore runs ops one after another: nothing else
    changes."""
    n = _positive_int(int, "set_num_interop_threads")
    if _threads["interop_set"]:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work "
                           "has started or set_num_interop_threads called")
    _threads["interop"], _threads["interop_set"] = n, True


def get_num_interop_threads() -> int:
    """The number set by ``set_num_interop_threads``; at first, the number of CPUs this
    process may run on."""
    return _threads["interop"]


# ---- determinism ----------
_deterministic = {"on": False, "warn_only": False}


def _bool_arg(value, what, fn="_set_deterministic_algorithms"):
    if not isinstance(value, builtins.bool):
        where = "'mode' (position 1)" if what == "mode" else f"'{what}'"
        raise TypeError(f"{fn}(): argument {where} must be bool, not {type(value).__name__}")
    return value


def use_deterministic_algorithms(mode, *, warn_only=False) -> None:
    """Ask for deterministic algorithms only (``warn_only``: warn, not raise, where
    an op has none). gradcore records the setting: every one of its ops gives the same
    result on every run already."""
    _deterministic["on"] = _bool_arg(mode, "mode")
    _deterministic["warn_only"] = _bool_arg(warn_only, "warn_only")


def are_deterministic_algorithms_enabled() -> bool:
    """Whether ``use_deterministic_algorithms(True)`` is set."""
    return _deterministic["on"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether ``use_deterministic_algorithms`` was set with ``warn_only=True``."""
    return _deterministic["warn_only"]


def set_deterministic_debug_mode(debug_mode) -> None:
    """``use_deterministic_algorithms`` by a level: ``0``/``"default"`` (off),
    ``1``/``"warn"`` (on, warn only), ``2``/``"error"`` (on)."""
    if not isinstance(debug_mode, (int, str)):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if isinstance(debug_mode, str):
        levels = {"default": 0, "warn": 1, "error": 2}
        if debug_mode not in levels:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, "
                               f"`warn`, `error`, but got {debug_mode}")
        debug_mode = levels[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    _deterministic["on"], _deterministic["warn_only"] = debug_mode != 0, debug_mode == 1


def get_deterministic_debug_mode() -> int:
    """The level ``set_deterministic_debug_mode`` sets: 0, 1 (warn only) or 2."""
    if not _deterministic["on"]:
        return 0
    return 1 if _deterministic["warn_only"] else 2


# ---- matmul precision ----------
_matmul = {"precision": "highest"}


def set_float32_matmul_precision(precision) -> None:
    """Record ``"highest"``, ``"high"`` or ``"medium"`` (another value: a warning, and no
    change, as in PyTorch). gradcore multiplies float32 matrices in float32 whatever
    the setting."""
    if precision not in ("highest", "high", "medium"):
        import warnings  # noqa: PLC0415

        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the "
                      f"currentsetFloat32MatmulPrecision call has no effect.", stacklevel=2)
        return
    _matmul["precision"] = precision


def get_float32_matmul_precision() -> str:
    """The precision ``set_float32_matmul_precision`` set (``"highest"`` at first)."""
    return _matmul["precision"]


# ---- anomaly detection, warnings ----------
is_anomaly_enabled = grad_mode.is_anomaly_enabled
set_anomaly_enabled = grad_mode.set_anomaly_enabled

_warn = {"always": False}


def set_flush_denormal(mode) -> bool:
    """Whether flushing denormal floats to zero could be set: False, as PyTorch answers on
    a CPU without the flag. gradcore computes with NumPy and CuPy, which keep denormal
    numbers; ``mode`` changes nothing.

    >>> import gradcore as gc
    >>> gc.set_flush_denormal(True)
    False
    """
    if not isinstance(mode, builtins.bool):
        raise TypeError(f"set_flush_denormal(): argument 'mode' (position 1) must be bool, "
                        f"not {type(mode).__name__}")
    return False


def set_warn_always(b, /) -> None:
    """Record whether warnings that PyTorch shows once per process should be shown every
    time (gradcore's warnings follow Python's ``warnings`` filters either way)."""
    if not isinstance(b, builtins.bool):
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    _warn["always"] = b


def is_warn_always_enabled() -> bool:
    """Whether ``set_warn_always(True)`` is set."""
    return _warn["always"]


def typename(obj, /) -> str:
    """The type name of a tensor (``'torch.FloatTensor'``, as ``Tensor.type()``), or of
    any other object: its module and qualified name.

    >>> import gradcore as gc
    >>> gc.typename(gc.tensor([1, 2])), gc.typename(3)
    ('torch.LongTensor', 'int')
    """
    from .autograd.tensor_base import Tensor  # noqa: PLC0415

    if isinstance(obj, Tensor):
        return obj.type()
    return _object_typename(obj)


def _object_typename(obj) -> str:
    """:func:`typename` of anything but a tensor: a class's or function's own module and
    qualified name, else its class's (no module for builtins)."""
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in {"", "builtins"}:
        return qualname
    return f"{module}.{qualname}"
