"""Creating tensors: ``tensor``, ``zeros``, ``arange``, ``randn`` and friends."""

from __future__ import annotations

import numbers

import numpy as np

from . import backend, dtypes
from ._random import manual_seed, seed_generator
from .autograd.tensor_base import Tensor, _wrap, from_data

__all__ = ["tensor", "as_tensor", "from_numpy", "from_dlpack", "zeros", "ones", "full",
           "empty", "arange", "linspace", "eye", "randn", "rand", "randint", "zeros_like",
           "ones_like", "full_like", "empty_like", "randn_like", "rand_like", "manual_seed",
           "seed_generator"]


def _dev(device):
    return backend.device(device) if device is not None else backend.get_default_device()


def _np_dtype(dtype):
    return None if dtype is None else dtypes.to_dtype(dtype).np


def _finish(arr, requires_grad):
    t = _wrap(arr)
    if requires_grad:
        t.requires_grad = True
    return t


def tensor(data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new tensor holding a copy of ``data`` (scalar, nested lists, NumPy/CuPy array,
    Tensor).

    >>> import gradcore as gc
    >>> gc.tensor([[1, 2], [3, 4.5]])
    tensor([[1.0000, 2.0000],
            [3.0000, 4.5000]])
    """
    return from_data(data, dtype=dtype, device=device, requires_grad=requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    if isinstance(data, Tensor) and dtype is None and device is None:
        return data
    if isinstance(data, np.ndarray) and (device is None or _dev(device).type == "cpu") and \
            dtype is None:
        return _wrap(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(arr: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with ``arr``."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    dtypes.from_numpy_dtype(arr.dtype)
    return _wrap(arr)


def from_dlpack(obj) -> Tensor:
    """A tensor sharing memory with any DLPack producer (NumPy, CuPy, PyTorch)."""
    if isinstance(obj, Tensor):
        return obj
    kind, dev_id = obj.__dlpack_device__()
    if int(kind) == 1:  # kDLCPU
        return _wrap(np.from_dlpack(obj))
    xp = backend.device(f"cuda:{dev_id}").xp
    return _wrap(xp.from_dlpack(obj))


class NegativeDimensionError(RuntimeError, ValueError):
    """A negative size: a RuntimeError, as PyTorch raises, and a ValueError, as NumPy
    does."""


def _as_int(v):
    """``v`` as an int where PyTorch takes one (an int, a NumPy integer, a 0-d integer
    tensor), else None: a float or a bool is never silently truncated."""
    if type(v) is int:
        return v
    if isinstance(v, Tensor):
        d = v._data
        return int(v.item()) if d.ndim == 0 and d.dtype.kind in "iu" else None
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    return None


def _type_name(v):
    t = type(v)
    return t.__name__ if t.__module__ in ("builtins", "gradcore.tensor") else \
        f"{t.__module__.split('.')[0]}.{t.__name__}"


def _size(size, name="", size_kw=None):
    """A factory's size, as PyTorch takes it: ``2, 3``, ``(2, 3)``, ``[2, 3]`` or the
    keyword ``size=(2, 3)``; anything but ints is PyTorch's TypeError, naming ``name``."""
    if size_kw is not None:
        if size:
            raise TypeError(f"{name}() got multiple values for argument 'size'")
        if not isinstance(size_kw, (tuple, list)):
            raise TypeError(f"{name}(): argument 'size' must be tuple of ints, not "
                            f"{_type_name(size_kw)}")
        seq, varargs = size_kw, False
    elif len(size) == 1 and isinstance(size[0], (tuple, list)):
        seq, varargs = size[0], False
    elif not size:
        raise TypeError(f'{name}() missing 1 required positional arguments: "size"')
    else:
        seq, varargs = size, True
    shape = []
    for i, d in enumerate(seq):
        n = _as_int(d)
        if n is None:
            if varargs and len(seq) == 1:
                raise TypeError(f"{name}(): argument 'size' (position 1) must be tuple of "
                                f"ints, not {_type_name(d)}")
            if varargs:
                raise TypeError(f"{name}(): argument 'size' failed to unpack the object at pos "
                                f"{i + 1} with error \"type must be tuple of ints,but got "
                                f"{_type_name(d)}\"")
            raise TypeError(f"{name}(): argument 'size' (position 1) must be tuple of ints, "
                            f"but found element of type {_type_name(d)} at pos {i}")
        shape.append(n)
    for d in shape:
        if d < 0:  # checked here: CuPy and NumPy word it differently
            raise NegativeDimensionError(
                f"Trying to create tensor with negative dimension {d}: {shape}")
    return tuple(shape)


def _factory(name, fill, doc):
    def factory(*size, size_=None, dtype=None, device=None, requires_grad=False):
        shape = _size(size, name, size_)
        npd = _np_dtype(dtype) or dtypes.default_float.np
        arr = fill(_dev(device).math, shape, npd)
        return _finish(arr, requires_grad)
    return _with_size_keyword(factory, name, doc)


def _with_size_keyword(impl, name, doc):
    """``impl`` as the public ``name(*size, size=None, ...)``: Python cannot spell a
    keyword named like the varargs, so it is renamed on the way in; an unknown keyword
    names the public function, as PyTorch's message does."""
    allowed = ("dtype", "device", "requires_grad")

    def public(*size, **kwargs):
        if "size" in kwargs:
            kwargs["size_"] = kwargs.pop("size")
        for k in kwargs:
            if k not in allowed and k != "size_":
                raise TypeError(f"{name}() got an unexpected keyword argument '{k}'")
        return impl(*size, **kwargs)
    public.__name__ = public.__qualname__ = name
    public.__doc__ = doc
    return public


zeros = _factory("zeros", lambda m, s, d: m.zeros(s, dtype=d),
                 "A tensor of zeros: ``zeros(2, 3)``, ``zeros((2, 3))`` or ``zeros(size=(2, 3))``.")
ones = _factory("ones", lambda m, s, d: m.ones(s, dtype=d), "A tensor of ones.")
empty = _factory("empty", lambda m, s, d: m.empty(s, dtype=d), "An uninitialized tensor.")


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor filled with ``fill_value`` (its dtype inferred as PyTorch does)."""
    if dtype is None:
        if isinstance(fill_value, bool):
            dtype = dtypes.bool_
        elif isinstance(fill_value, numbers.Integral):
            dtype = dtypes.int64
        else:
            dtype = dtypes.default_float
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{_type_name(size)}")
    shape = _size((size,), "full")
    arr = _dev(device).math.full(shape, fill_value, dtype=_np_dtype(dtype))
    return _finish(arr, requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """Values from ``start`` to ``end`` (exclusive) by ``step``; int64 unless any is float."""
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if dtype is None:
        floaty = any(isinstance(v, float) for v in vals)
        dtype = dtypes.default_float if floaty else dtypes.int64
    if vals[2] == 0:
        raise RuntimeError("arange: step must be nonzero")
    arr = _dev(device).math.arange(vals[0], vals[1], vals[2], dtype=_np_dtype(dtype))
    return _finish(arr, requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    npd = _np_dtype(dtype) or dtypes.default_float.np
    n = _as_int(steps)
    if n is None:
        raise TypeError(f"linspace(): argument 'steps' (position 3) must be int, not "
                        f"{_type_name(steps)}")
    if n < 0:
        raise RuntimeError("linspace(): number of steps must be non-negative")
    arr = _dev(device).math.linspace(start, end, n, dtype=np.float64).astype(npd)
    return _finish(arr, requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    """The identity matrix (``n`` x ``m``)."""
    npd = _np_dtype(dtype) or dtypes.default_float.np
    for name, pos, v in (("n", 1, n), ("m", 2, m)):
        if v is not None and _as_int(v) is None:
            raise TypeError(f"eye(): argument '{name}' (position {pos}) must be int, not "
                            f"{_type_name(v)}")
    n, m = _as_int(n), (None if m is None else _as_int(m))
    for name, v in (("n", n), ("m", m)):
        if v is not None and v < 0:
            raise RuntimeError(f"eye(): {name} must be greater or equal to 0, got {v}")
    return _finish(_dev(device).math.eye(n, m, dtype=npd), requires_grad)


# ---- random numbers: from gradcore's generator (gradcore._random, seeded by manual_seed) --
def _random(name, sample, kernel, doc):
    def factory(*size, size_=None, dtype=None, device=None, requires_grad=False):
        shape = _size(size, name, size_)
        dt = dtypes.to_dtype(dtype) if dtype is not None else dtypes.default_float
        if not dt.is_floating_point:  # PyTorch has no integer normal or uniform samples
            raise NotImplementedError(f'"{kernel}" not implemented for '
                                      f"'{dtypes.torch_name(dt)}' ({name}() samples floating "
                                      f"point dtypes only; use randint for integers)")
        host = sample(shape).astype(dt.np)
        dev = _dev(device)
        return _finish(dev.asarray(host) if dev.type != "cpu" else host, requires_grad)
    return _with_size_keyword(factory, name, doc)


randn = _random("randn", lambda s: seed_generator().standard_normal(s), "normal",
                "Samples of the standard normal distribution.")
rand = _random("rand", lambda s: seed_generator().random(s), "uniform",
               "Samples of the uniform distribution on [0, 1).")

_MISSING = object()


def randint(*args, low=_MISSING, high=_MISSING, size=_MISSING, dtype=None, device=None,
            requires_grad=False) -> Tensor:
    """Random integers in ``[low, high)`` of ``size`` (int64), as PyTorch's
    ``randint(high, size)`` and ``randint(low, high, size)``."""
    names = ("low", "high", "size") if len(args) + (high is not _MISSING) + \
        (size is not _MISSING) + (low is not _MISSING) >= 3 else ("high", "size")
    given = dict(zip(names, args))
    if len(args) > len(names):
        raise TypeError(f"randint() takes at most 3 positional arguments ({len(args)} given)")
    for k, v in (("low", low), ("high", high), ("size", size)):
        if v is not _MISSING:
            if k in given:
                raise TypeError(f"randint() got multiple values for argument '{k}'")
            given[k] = v
    if "high" not in given or "size" not in given:
        missing = [k for k in ("high", "size") if k not in given]
        raise TypeError(f"randint() missing required argument '{missing[0]}' (randint(high, "
                        f"size) or randint(low, high, size))")
    lo, hi = given.get("low", 0), given["high"]
    for k, v, pos in (("low", lo, 1), ("high", hi, 2 if "low" in given else 1)):
        if _as_int(v) is None:
            raise TypeError(f"randint(): argument '{k}' (position {pos}) must be int, not "
                            f"{_type_name(v)}")
    lo, hi = _as_int(lo), _as_int(hi)
    sz = given["size"]
    if not isinstance(sz, (tuple, list)):
        raise TypeError(f"randint(): argument 'size' must be tuple of ints, not "
                        f"{_type_name(sz)}")
    shape = _size((sz,), "randint")
    if lo >= hi:
        raise RuntimeError(f"randint(): expects 'low' to be less than 'high', but got "
                           f"low={lo} >= high={hi}")
    host = seed_generator().integers(lo, hi, size=shape).astype(_np_dtype(dtype) or np.int64)
    dev = _dev(device)
    return _finish(dev.asarray(host) if dev.type != "cpu" else host, requires_grad)


def _like(factory):
    def like(t, *, dtype=None, device=None, requires_grad=False):
        return factory(tuple(t.shape), dtype=dtype or t.dtype, device=device or t.device,
                       requires_grad=requires_grad)
    return like


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)
randn_like = _like(randn)
rand_like = _like(rand)


def full_like(t, fill_value, *, dtype=None, device=None, requires_grad=False):
    return full(tuple(t.shape), fill_value, dtype=dtype or t.dtype, device=device or t.device,
                requires_grad=requires_grad)
