"""Creating tensors: ``tensor``, ``zeros``, ``arange``, ``randn`` and friends."""

from __future__ import annotations

import numbers
from builtins import range as range_

import numpy as np

from . import _random as _random_mod
from . import backend, dtypes
from ._random import seed_generator
from .autograd.tensor_base import Tensor, _wrap, from_data
from .ops import shape as _shape

__all__ = ["tensor", "as_tensor", "from_numpy", "from_dlpack", "zeros", "ones", "full",
           "empty", "empty_permuted", "arange", "linspace", "logspace", "eye", "randn", "rand",
           "randint", "randperm",
           "zeros_like", "ones_like", "full_like", "empty_like", "randn_like", "rand_like",
           "randint_like", "seed_generator", "scalar_tensor", "range", "asarray", "frombuffer",
           "hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]


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
    """``data`` as a tensor, without a copy where none is needed: a tensor of the dtype
    and device asked is returned as it is, a NumPy array (for the CPU, no dtype given)
    shares its memory; anything else is copied as by :func:`tensor`.

    >>> import numpy as np
    >>> import gradcore as gc
    >>> a = np.zeros(3)
    >>> t = gc.as_tensor(a)
    >>> a[0] = 5
    >>> t
    tensor([5., 0., 0.], dtype=gradcore.float64)
    """
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


def _factory(name, fill, doc, more=()):
    """The public ``name(*size, dtype=, device=, requires_grad=)``: ``fill(math, shape,
    np_dtype, **options)`` makes the array; ``more`` names the options it also takes."""
    def factory(*size, size_=None, dtype=None, device=None, requires_grad=False, **options):
        shape = _size(size, name, size_)
        npd = _np_dtype(dtype) or dtypes.default_float.np
        arr = fill(_dev(device).math, shape, npd, **options)
        return _finish(arr, requires_grad)
    return _with_size_keyword(factory, name, doc, more)


def _with_size_keyword(impl, name, doc, more=()):
    """``impl`` as the public ``name(*size, size=None, ...)``: Python cannot spell a
    keyword named like the varargs, so it is renamed on the way in; an unknown keyword
    names the public function, as PyTorch's message does."""
    allowed = ("dtype", "device", "requires_grad") + tuple(more)

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


def _empty_in(m, shape, npd, memory_format=None):
    """An uninitialized array laid out in ``memory_format`` (None or contiguous: row
    major; a channels-last format: a transposed view of the order it stores)."""
    if memory_format is None or memory_format is _shape.contiguous_format:
        return m.empty(shape, dtype=npd)
    # (preserve_format: PyTorch's RuntimeError)
    _shape._check_format(memory_format, "empty", len(shape))
    return _shape.permuted_empty(m, shape, _shape._STORED_ORDER[memory_format], npd)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False) -> Tensor:
    """An uninitialized tensor of ``size`` whose dimensions lie in memory in the order
    ``physical_layout`` (outermost first): ``empty_permuted((N, C, H, W), (0, 2, 3, 1))``
    is laid out as ``gc.channels_last``.

    >>> import gradcore as gc
    >>> gc.empty_permuted((2, 3, 4), (2, 0, 1)).stride()
    (3, 1, 6)
    """
    shape = _size((size,), "empty_permuted", None)
    order = tuple(int(d) for d in physical_layout)
    if len(set(order)) != len(order):
        raise RuntimeError("Duplicate dim not allowed")
    if sorted(order) != list(range_(len(shape))):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; or physical_layout is not a permutation: "
                           f"size={list(shape)}, physical_layout={list(order)}")
    npd = _np_dtype(dtype) or dtypes.default_float.np
    return _finish(_shape.permuted_empty(_dev(device).math, shape, order, npd),
                   requires_grad)


empty = _factory(
    "empty", _empty_in, "An uninitialized tensor; ``memory_format=gc.channels_last`` (4-d) "
    "or ``gc.channels_last_3d`` (5-d) lays it out channels-last.", more=("memory_format",))


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
    _no_bool(dtype, "arange")
    if vals[2] == 0:
        raise RuntimeError("arange: step must be nonzero")
    arr = _dev(device).math.arange(vals[0], vals[1], vals[2], dtype=_np_dtype(dtype))
    return _finish(arr, requires_grad)


def _no_bool(dtype, op):
    if dtype is not None and dtypes.to_dtype(dtype) == dtypes.bool_:
        raise NotImplementedError(f'"{op}_cpu" not implemented for \'Bool\'')


def _steps(steps, op):
    n = _as_int(steps)
    if n is None:
        raise TypeError(f"{op}(): argument 'steps' (position 3) must be int, not "
                        f"{_type_name(steps)}")
    if n < 0:
        raise RuntimeError(f"{op}(): number of steps must be non-negative")
    return n


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    _no_bool(dtype, "linspace")
    npd = _np_dtype(dtype) or dtypes.default_float.np
    n = _steps(steps, "linspace")
    arr = _dev(device).math.linspace(start, end, n, dtype=np.float64).astype(npd)
    return _finish(arr, requires_grad)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    """``steps`` values from ``base ** start`` to ``base ** end`` inclusive, evenly
    spaced in the exponent (PyTorch's ``logspace``).

    >>> import gradcore as gc
    >>> gc.logspace(0, 2, 3)
    tensor([  1.,  10., 100.])
    """
    _no_bool(dtype, "logspace")
    npd = _np_dtype(dtype) or dtypes.default_float.np
    n = _steps(steps, "logspace")
    exps = np.linspace(start, end, n, dtype=np.float64)
    arr = _dev(device).math.asarray(np.power(float(base), exps).astype(npd))
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


# ---- random numbers: drawn on the host from a NumPy generator (gradcore._random: the
# default generator's, or generator='s), then moved to the device ----------------------
def _to_device(dev, host):
    return dev.asarray(host) if dev.type != "cpu" else host


def uniform_samples(rng, shape, npd):
    """Samples of U[0, 1) of NumPy dtype ``npd`` drawn from ``rng`` (float16 drawn in
    float32 and kept below 1 after rounding)."""
    if npd == np.float64 or npd == np.float32:
        return rng.random(shape, dtype=npd)
    u = rng.random(shape, dtype=np.float32).astype(npd)
    return np.minimum(u, np.nextafter(npd.type(1), npd.type(0)))


def normal_samples(rng, shape, npd):
    """Samples of N(0, 1) of NumPy dtype ``npd`` drawn from ``rng``."""
    if npd == np.float64 or npd == np.float32:
        return rng.standard_normal(shape, dtype=npd)
    return rng.standard_normal(shape, dtype=np.float32).astype(npd)


# the C names PyTorch's range messages give integer dtypes ("... out of bounds for int")
C_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short int",
           "int32": "int", "int64": "long int"}


def check_integer_range(low: int, last: int, dt, who: str = "to - 1") -> None:
    """PyTorch's check that ``[low, last]`` fits the integer (or bool) dtype ``dt``."""
    if dt.is_floating_point:
        return
    if dt.np == np.bool_:
        lo, hi = 0, 1
    else:
        info = np.iinfo(dt.np)
        lo, hi = int(info.min), int(info.max)
    if not lo <= low <= hi:
        raise RuntimeError(f"from is out of bounds for {C_NAMES[dt.name]}")
    if not lo <= last <= hi:
        raise RuntimeError(f"{who} is out of bounds for {C_NAMES[dt.name]}")


def _random(name, sample, kernel, doc):
    def factory(*size, size_=None, generator=None, dtype=None, device=None,
                requires_grad=False):
        shape = _size(size, name, size_)
        dt = dtypes.to_dtype(dtype) if dtype is not None else dtypes.default_float
        if not dt.is_floating_point:  # PyTorch has no integer normal or uniform samples
            raise NotImplementedError(f'"{kernel}" not implemented for '
                                      f"'{dtypes.torch_name(dt)}' ({name}() samples floating "
                                      f"point dtypes only; use randint for integers)")
        dev = _dev(device)
        host = sample(_random_mod.stream(generator, dev.type, name), shape, dt.np)
        return _finish(_to_device(dev, host), requires_grad)
    return _with_size_keyword(factory, name, doc, ("generator",))


randn = _random("randn", normal_samples, "normal_kernel_cpu",
                "Samples of the standard normal distribution: ``randn(2, 3, generator=None, "
                "dtype=None, device=None, requires_grad=False)``.")
rand = _random("rand", uniform_samples, "check_uniform_bounds",
               "Samples of the uniform distribution on [0, 1): ``rand(2, 3, generator=None, "
               "dtype=None, device=None, requires_grad=False)``.")

_MISSING = object()


def randint(*args, low=_MISSING, high=_MISSING, size=_MISSING, generator=None, dtype=None,
            device=None, requires_grad=False) -> Tensor:
    """Random integers in ``[low, high)`` of ``size`` (int64), as PyTorch's
    ``randint(high, size)`` and ``randint(low, high, size)``; ``generator=`` draws from
    a ``gc.Generator`` instead of the default one."""
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
    dt = dtypes.to_dtype(dtype) if dtype is not None else dtypes.int64
    check_integer_range(lo, hi - 1, dt)
    dev = _dev(device)
    rng = _random_mod.stream(generator, dev.type, "randint")
    host = rng.integers(lo, hi, size=shape).astype(dt.np)
    return _finish(_to_device(dev, host), requires_grad)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A random permutation of ``0 .. n-1`` (int64 unless ``dtype`` says otherwise).

    >>> import gradcore as gc
    >>> sorted(gc.randperm(5, generator=gc.Generator().manual_seed(1)).tolist())
    [0, 1, 2, 3, 4]
    """
    count = _as_int(n)
    if count is None:
        raise TypeError(f"randperm(): argument 'n' (position 1) must be int, not "
                        f"{_type_name(n)}")
    dt = dtypes.to_dtype(dtype) if dtype is not None else dtypes.int64
    if dt.np == np.bool_:
        raise NotImplementedError("\"randperm\" not implemented for 'Bool'")
    if count < 0:
        raise NegativeDimensionError(
            f"Trying to create tensor with negative dimension {count}: [{count}]")
    if dt.is_floating_point:
        limit = 2 ** (np.finfo(dt.np).nmant + 1) + 1
        if count > limit:
            raise RuntimeError(f"n cannot be greater than {limit} for "
                               f"{dtypes.torch_name(dt)} type.")
    elif count > 0 and count - 1 > np.iinfo(dt.np).max:
        raise RuntimeError(f"value cannot be converted to type {dt.np.name}_t without "
                           f"overflow")
    dev = _dev(device)
    host = _random_mod.stream(generator, dev.type, "randperm").permutation(count)
    return _finish(_to_device(dev, host.astype(dt.np, copy=False)), requires_grad)


def _like(factory):
    def like(t, *, dtype=None, device=None, requires_grad=False, memory_format=None):
        out = factory(tuple(t.shape), dtype=dtype or t.dtype, device=device or t.device,
                      requires_grad=False)
        fmt = memory_format
        if fmt is None or fmt is _shape.preserve_format:
            fmt = _shape.suggest_format(t._data)
        if fmt is not _shape.contiguous_format or memory_format is not None:
            _shape._check_format(fmt, like.__name__, out.ndim)
            if fmt is not _shape.contiguous_format:
                out._data = _shape.laid_out(out._data, fmt)
        if requires_grad:
            out.requires_grad = True
        return out
    like.__name__ = like.__qualname__ = f"{factory.__name__}_like"
    like.__doc__ = (f"``{factory.__name__}`` of ``t``'s shape, with ``t``'s dtype and device "
                    "unless ``dtype`` or ``device`` is given; laid out as ``t`` (channels-last "
                    "or contiguous) unless ``memory_format`` says otherwise.")
    return like


def _random_like(factory, name):
    def like(input, *, generator=None, dtype=None, device=None, requires_grad=False):
        return factory(tuple(input.shape), generator=generator, dtype=dtype or input.dtype,
                       device=device or input.device, requires_grad=requires_grad)
    like.__name__ = like.__qualname__ = name
    like.__doc__ = f"``{factory.__name__}`` of ``input``'s shape, dtype and device."
    return like


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)
randn_like = _random_like(randn, "randn_like")
rand_like = _random_like(rand, "rand_like")


def randint_like(input, low=None, high=None, *, generator=None, dtype=None, device=None,
                 requires_grad=False) -> Tensor:
    """``randint`` of ``input``'s shape, dtype and device: ``randint_like(x, high)`` or
    ``randint_like(x, low, high)``."""
    if low is None and high is None:
        raise TypeError("randint_like() missing required argument 'high'")
    if high is None:
        low, high = 0, low
    elif low is None:
        low = 0
    return randint(low, high, tuple(input.shape), generator=generator,
                   dtype=dtype or input.dtype, device=device or input.device,
                   requires_grad=requires_grad)


def full_like(t, fill_value, *, dtype=None, device=None, requires_grad=False):
    """``fill_value`` everywhere in ``t``'s shape, with ``t``'s dtype and device unless
    ``dtype`` or ``device`` is given.

    >>> import gradcore as gc
    >>> gc.full_like(gc.zeros(2, dtype=gc.int64), 7)
    tensor([7, 7])
    """
    return full(tuple(t.shape), fill_value, dtype=dtype or t.dtype, device=device or t.device,
                requires_grad=requires_grad)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A 0-d tensor holding the number ``s``, of the default float dtype unless
    ``dtype`` says otherwise (an int or a bool too, as in PyTorch).

    >>> import gradcore as gc
    >>> gc.scalar_tensor(1)
    tensor(1.)
    """
    if isinstance(s, Tensor):
        s = s.item()
    npd = _np_dtype(dtype) or dtypes.default_float.np
    return _finish(_dev(device).math.asarray(s, dtype=npd).reshape(()), requires_grad)


def range(start=0, end=None, step=1, *, dtype=None, device=None,  # noqa: A001
          requires_grad=False) -> Tensor:
    """Values from ``start`` to ``end`` *inclusive* by ``step``, of the default float
    dtype unless ``dtype`` says otherwise; deprecated in PyTorch for :func:`arange`
    (whose ``end`` is exclusive), and warns so.

    >>> import gradcore as gc
    >>> gc.range(1, 4)
    tensor([1., 2., 3., 4.])
    """
    import warnings  # noqa: PLC0415

    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    if end is None:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = int(np.floor((end - start) / step)) + 1
    npd = _np_dtype(dtype) or dtypes.default_float.np
    arr = (start + np.arange(n, dtype=np.float64) * step).astype(npd)
    return _finish(_to_device(_dev(device), arr), requires_grad)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False) -> Tensor:
    """``obj`` (a tensor, a NumPy array, a number or nested sequences) as a tensor,
    sharing its memory where it can: ``copy=True`` always copies, ``copy=False`` never
    does (and raises where the dtype or device asked needs a copy), ``None`` copies only
    where needed.

    >>> import gradcore as gc
    >>> gc.asarray([1, 2])
    tensor([1, 2])
    """
    if isinstance(obj, Tensor):
        out = obj
        if dtype is not None and dtypes.to_dtype(dtype) != obj.dtype:
            if copy is False:
                raise ValueError(f"can't alias tensor with dtype '{_scalar_name(obj.dtype)}' "
                                 f"into dtype '{_scalar_name(dtypes.to_dtype(dtype))}'.")
            out = out.to(dtype=dtype)
        if device is not None and backend.device(device) != obj.device:
            if copy is False:
                raise ValueError(f"can't alias tensor from device '{obj.device}' to "
                                 f"'{backend.device(device)}'.")
            out = out.to(device=device)
        if copy and out is obj:
            out = obj.clone()
        if not requires_grad and out.requires_grad:
            out = out.detach()
        elif requires_grad and not out.requires_grad:
            out = out.detach().requires_grad_(True)
        return out
    if copy:
        return from_data(obj, dtype=dtype, device=device, requires_grad=requires_grad)
    out = as_tensor(obj, dtype=dtype, device=device)
    if copy is False and isinstance(obj, np.ndarray) and not np.shares_memory(out._data, obj):
        raise ValueError("can't alias NumPy array: its dtype or device asks for a copy")
    if requires_grad:
        out.requires_grad = True
    return out


def _scalar_name(dt) -> str:
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool", "float32": "Float", "float64": "Double",
            "float16": "Half"}.get(dt.name, dt.name)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False) -> Tensor:
    """A 1-D CPU tensor over the memory of ``buffer`` (any object of Python's buffer
    protocol: ``bytes``, ``bytearray``, ``array.array``, ...), read as ``dtype``:
    ``count`` elements (-1: all) from byte ``offset``. It shares the memory; a
    read-only buffer (``bytes``) gives a tensor that refuses in-place writes.

    >>> import gradcore as gc
    >>> gc.frombuffer(bytearray(b"\\x01\\x00\\x00\\x00"), dtype=gc.int32)
    tensor([1], dtype=gradcore.int32)
    """
    npd = dtypes.to_dtype(dtype).np
    length = memoryview(buffer).nbytes
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset >= length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    size = npd.itemsize
    if count < 0:
        if (length - offset) % size:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} "
                             f"bytes) must be a multiple of element size ({size})")
        count = (length - offset) // size
    elif offset + count * size > length:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    return _finish(np.frombuffer(buffer, dtype=npd, count=count, offset=offset), requires_grad)


# ---- window functions (PyTorch's formulas; computed in float64, then cast) ----------
def _window(name, n, periodic, dtype, device, requires_grad, formula):
    if dtype is not None and not dtypes.to_dtype(dtype).is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: "
                           f"{dtypes.to_dtype(dtype)}")
    if n < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={n}")
    npd = _np_dtype(dtype) or dtypes.default_float.np
    if n <= 1:
        values = np.ones(n)
    else:
        m = n + 1 if periodic else n
        values = formula(m)[:n]
    return _finish(_to_device(_dev(device), values.astype(npd)), requires_grad)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, requires_grad=False) -> Tensor:
    """The Hamming window ``alpha - beta * cos(2 pi k / (N - 1))``; ``periodic`` (the
    default) computes ``window_length + 1`` points and drops the last, for spectral
    analysis.

    >>> import gradcore as gc
    >>> gc.hamming_window(4, periodic=False)
    tensor([0.0800, 0.7700, 0.7700, 0.0800])
    """
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   lambda m: alpha - beta * np.cos(np.arange(m) * (2 * np.pi / (m - 1))))


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                requires_grad=False) -> Tensor:
    """The Hann window ``0.5 - 0.5 * cos(2 pi k / (N - 1))`` (``periodic``: as in
    :func:`hamming_window`).

    >>> import gradcore as gc
    >>> gc.hann_window(4, periodic=False)
    tensor([0.0000, 0.7500, 0.7500, 0.0000])
    """
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   lambda m: 0.5 - 0.5 * np.cos(np.arange(m) * (2 * np.pi / (m - 1))))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False) -> Tensor:
    """The Blackman window ``0.42 - 0.5 cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k / (N -
    1))`` (``periodic``: as in :func:`hamming_window`)."""
    def formula(m):
        w = np.arange(m) * (np.pi / (m - 1))
        return 0.08 * np.cos(4 * w) - 0.5 * np.cos(2 * w) + 0.42
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   formula)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False) -> Tensor:
    """The Bartlett (triangular) window, rising from 0 to 1 and back (``periodic``: as
    in :func:`hamming_window`)."""
    def formula(m):
        w = np.arange(m) * (2.0 / (m - 1))
        half = ((m - 1) >> 1) + 1
        w[half:] = 2 - w[half:]
        return w
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   formula)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, requires_grad=False) -> Tensor:
    """The Kaiser window ``I0(beta sqrt(1 - (2k / (N - 1) - 1)^2)) / I0(beta)``
    (``periodic``: as in :func:`hamming_window`)."""
    def formula(m):
        a = (m - 1) / 2.0
        k = np.arange(m)
        return np.i0(beta * np.sqrt(np.clip(1 - ((k - a) / a) ** 2, 0, None))) / np.i0(beta)
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   formula)
