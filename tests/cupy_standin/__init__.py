"""A CuPy stand-in for the tests: the CUDA code path of gradcore, run on the CPU.

Never shipped and never selectable by users: only ``tests/conftest.py`` installs it
(through ``gradcore.backend._use_cuda_module_for_tests``), for the test device
``cuda-standin``.  It mimics the subset of CuPy's API that gradcore calls, and where
CuPy is stricter than NumPy it is strict too:

* arrays refuse implicit conversion to NumPy (``np.asarray(a)`` raises ``TypeError``
  like CuPy), and NumPy functions or ufuncs applied to them raise instead of silently
  computing on the host (stricter than CuPy, which dispatches some of them itself);
* CuPy functions and operators refuse NumPy arrays as operands (``TypeError``, as
  CuPy does); ``asarray``/``array`` (host to device) accept them;
* every host synchronization is counted in :func:`host_syncs`: ``.get()``,
  ``.item()``, ``.tolist()``, ``float()``, ``int()``, ``bool()``, ``len()`` of a
  mask result, stream synchronization, and the operations for which CuPy itself must
  read a value back to size their result (boolean-mask indexing and assignment,
  ``nonzero``, ``flatnonzero``, ``argwhere``, ``unique``, ``bincount``);
* out-of-range integer-array indices wrap around, as in CuPy (NumPy raises): in
  ``a[idx]``, ``a[idx] = v`` and ``ufunc.at``;
* there is no ``ufunc.at`` other than on the ufuncs CuPy supports it for, and with an
  integer-array index (CUDA atomics) it refuses the dtypes CuPy refuses, and computes
  ``maximum.at``/``minimum.at`` of floating types as CuPy's ``atomicMax``/``atomicMin``
  do: by ``fmaxf``/``fminf`` (NaN dropped; float64 compared, and stored, in float32);
* no ``flags.writeable``; reductions return 0-d arrays, never scalars, and refuse an
  axis on a 0-d array (``axis=0`` or ``-1``, which NumPy's take);
* streams, memory pools and stream capture (``Stream(non_blocking=True)``,
  ``begin_capture``/``end_capture``, ``Graph.launch``, ``MemoryPool``,
  ``using_allocator``) behave as CUDA's, and what CuPy refuses during a capture raises
  CuPy's error: see :mod:`._graph`.

The values are computed by NumPy, so results match the CPU path bit for bit wherever
the same NumPy calls are made.
"""

from __future__ import annotations

import builtins as _b
import operator as _op
import weakref as _weakref

import numpy as _np

from . import _graph
from ._graph import CUDARuntimeError, Event, Graph, MemoryPool, Stream

__version__ = "14.0.0-standin"

# ----------------------------------------------------------------------------------
# host synchronizations
_syncs = 0
_sync_log: list[str] | None = None


def host_syncs() -> int:
    """How many host synchronizations happened since the last :func:`reset_syncs`."""
    return _syncs


def reset_syncs(log: bool = False) -> None:
    """Zero the counter; with ``log``, also record what synchronized (``sync_log()``)."""
    global _syncs, _sync_log
    _syncs = 0
    _sync_log = [] if log else None


def sync_log() -> list[str]:
    return list(_sync_log or ())


def _sync(what: str) -> None:
    """A read of device values by the host: counted; while the current stream captures,
    CuPy's refusal of the device-to-host copy."""
    _graph.refuse_transfer("D2H")
    _count_sync(what)


def _count_sync(what: str) -> None:
    global _syncs
    _syncs += 1
    if _sync_log is not None:
        import traceback  # noqa: PLC0415

        frames = [f for f in traceback.extract_stack()[:-2]
                  if "cupy_standin" not in f.filename]
        where = frames[-1] if frames else None
        _sync_log.append(f"{what} at {where.filename}:{where.lineno}" if where else what)


# ----------------------------------------------------------------------------------
# wrapping
_wrappers: _weakref.WeakValueDictionary = _weakref.WeakValueDictionary()


def _is_host_array(x) -> bool:
    return isinstance(x, _np.ndarray)


def _unwrap(x, where="argument"):
    t = type(x)
    if t is ndarray:
        return x._a
    if t is tuple or t is list:
        return t(_unwrap(v, where) for v in x)
    if isinstance(x, _np.ndarray):
        raise TypeError(f"Unsupported type {type(x)} (a NumPy array as a CuPy {where}; "
                        "move it with cupy.asarray first)")
    return x


def _unwrap_index(x):
    t = type(x)
    if t is ndarray:
        return x._a
    if t is tuple:
        return tuple(_unwrap_index(v) for v in x)
    return x  # CuPy accepts lists and NumPy arrays as indices (it copies them over)


def _wrap_around(key, shape):
    """CuPy wraps out-of-range integer-array indices around (NumPy raises): the key with
    each integer array taken modulo the size of the axis it picks along. A scalar index
    CuPy takes as ``int()`` of it (a float truncates: ``a[1.5]`` is ``a[1]``, where
    NumPy raises) and checks itself, in its words ("Index 5 is out of bounds for axis 0
    with size 2", NumPy's "index ..."): ``_view_getitem`` in
    cupy/_core/_routines_indexing.pyx."""
    parts = key if type(key) is tuple else (key,)

    def is_array(v):
        return isinstance(v, _np.ndarray) and v.ndim > 0

    def is_mask(v):  # (``bool`` here is CuPy's name, NumPy's bool_: Python's is _b.bool)
        return isinstance(v, (_np.ndarray, _np.bool_, _b.bool)) and \
            _np.asarray(v).dtype == _np.bool_

    named = _b.sum(_np.ndim(v) if is_mask(v) else 1
                   for v in parts if v is not None and v is not Ellipsis)
    out, axis = [], 0
    for v in parts:
        if v is Ellipsis:
            axis += len(shape) - named
        elif v is None:
            pass
        elif is_mask(v):
            axis += _np.ndim(v)
        else:
            if is_array(v) and v.dtype.kind in "iu" and axis < len(shape) and shape[axis]:
                v = v % shape[axis]
            elif _np.isscalar(v) and not isinstance(v, (str, bytes)) and axis < len(shape):
                ind = int(v)
                if not -shape[axis] <= ind < shape[axis]:
                    raise IndexError(f"Index {v} is out of bounds for axis {axis} with size "
                                     f"{shape[axis]}")
                v = ind
            axis += 1
        out.append(v)
    return tuple(out) if type(key) is tuple else out[0]


def _wrap(r):
    if isinstance(r, _np.ndarray):
        return ndarray._new(r)
    if isinstance(r, _np.generic):
        return ndarray._new(_np.asarray(r))  # CuPy returns 0-d arrays, not scalars
    if type(r) is tuple:
        return tuple(_wrap(v) for v in r)
    if type(r) is list:
        return [_wrap(v) for v in r]
    return r


# the functions and methods that write into their first operand (for _graph.issue)
_WRITE_FIRST = {"copyto", "put_along_axis", "place", "putmask", "put", "fill_diagonal",
                "fill", "sort", "partition", "itemset", "setfield"}


def _call(fn, args, kwargs, where="argument", name=None):
    args = _unwrap(args, where)
    kwargs = {k: _unwrap(v, where) for k, v in kwargs.items()}
    writes = args[:1] if name in _WRITE_FIRST and args else ()
    return _exec(fn, args, kwargs, writes=writes)


def _exec(fn, args, kwargs=None, stream=None, writes=()):
    """``fn(*args, **kwargs)`` over NumPy arrays, its result wrapped: device work, issued
    to ``stream`` (the current one); recorded into the graph when that stream captures.
    ``writes``: the operands it writes into (besides ``out=``), for the check of the
    ordering between streams (``_graph.issue``)."""
    kwargs = {} if kwargs is None else kwargs
    writes = (*writes, *_graph._flat(kwargs.get("out"), []))
    cap = _graph.capturing(stream)
    if cap is None:  # (run now: ordered after the last uses of its memory elsewhere?)
        _graph.issue(stream, _graph._flat((args, kwargs), []), writes)
    if cap is None and _graph._capture is not None:  # another stream's work: it runs
        with _graph.outside_capture():
            result = _wrap(fn(*args, **kwargs))
        _graph._capture.exempt((args, list(kwargs.values()), _unwrap_all(result)))
        _graph.note_results(stream, _graph._flat_results(_unwrap_all(result), []))
        return result
    result = _wrap(fn(*args, **kwargs))
    if cap is not None:
        cap.record(fn, args, kwargs, _unwrap_all(result), writes)
    else:
        _graph.note_results(stream, _graph._flat_results(_unwrap_all(result), []))
    return result


def _unwrap_all(x):
    if type(x) is ndarray:
        return x._a
    if type(x) in (tuple, list):
        return type(x)(_unwrap_all(v) for v in x)
    return x


def _float_operands(args):
    return _b.any(isinstance(a, (ndarray, _np.ndarray)) and _unwrap(a).dtype.kind in "fc"
                  for a in args)


# ----------------------------------------------------------------------------------
# ndarray
class _Flags:
    __slots__ = ("c_contiguous", "f_contiguous", "owndata")

    def __init__(self, a):
        self.c_contiguous = _b.bool(a.flags.c_contiguous)
        self.f_contiguous = _b.bool(a.flags.f_contiguous)
        self.owndata = a.base is None

    def __getitem__(self, key):
        return {"C_CONTIGUOUS": self.c_contiguous, "F_CONTIGUOUS": self.f_contiguous,
                "OWNDATA": self.owndata}[key]

    def __repr__(self):
        return (f"  C_CONTIGUOUS : {self.c_contiguous}\n  F_CONTIGUOUS : "
                f"{self.f_contiguous}\n  OWNDATA : {self.owndata}")


class _MemoryPointer:
    __slots__ = ("ptr", "device_id")

    def __init__(self, ptr):
        self.ptr = ptr
        self.device_id = 0


class _DeviceRef:
    __slots__ = ("id",)

    def __init__(self, id_=0):
        self.id = id_

    def __repr__(self):
        return f"<CUDA Device {self.id}>"


_METHODS = {  # ndarray methods computed by NumPy, results wrapped
    "reshape", "transpose", "swapaxes", "astype", "copy", "sum", "max", "min", "mean",
    "argmax", "argmin", "prod", "var", "std", "all", "any", "ravel", "flatten", "take",
    "squeeze", "clip", "view", "cumsum", "cumprod", "dot", "repeat", "sort", "argsort",
    "conj", "round", "diagonal", "trace", "fill", "put", "partition", "argpartition",
}


# CuPy's reductions (``_reduction._get_axis``): an axis is checked against ``ndim`` as
# given, so a 0-d array refuses ``axis=0`` and ``axis=-1``, where NumPy's ufunc
# reductions take them
_REDUCTIONS = {"sum", "prod", "max", "min", "mean", "var", "std", "argmax", "argmin", "all",
               "any", "amax", "amin", "nansum", "nanmax", "nanmin", "nanmean", "nanargmax",
               "nanargmin", "ptp"}


def _refuse_0d_axis(a, axis):
    if axis is None or _np.ndim(_unwrap(a)) != 0:
        return
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if axes:
        raise _np.exceptions.AxisError(f"axis {axes[0]} is out of bounds for array of "
                                       "dimension 0")


class ndarray:  # noqa: N801  (CuPy's name)
    """A device array: a NumPy array that will not leave the device implicitly."""

    __slots__ = ("_a", "_blk", "__weakref__")
    __array_priority__ = 100

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        if memptr is not None:
            raise NotImplementedError("the stand-in does not support memptr")
        self._blk = None
        self._a = _np.empty(shape, dtype=dtype, order=order)
        _wrappers[id(self._a)] = self
        self._blk = _graph.hold(self._a)

    @classmethod
    def _new(cls, a):
        w = _wrappers.get(id(a))
        if w is not None and w._a is a:
            return w
        w = object.__new__(cls)
        w._a = a
        w._blk = None
        _wrappers[id(a)] = w
        w._blk = _graph.hold(a)  # (its memory: held from a pool, new or not)
        return w

    def __del__(self):
        b = self._blk
        if b is not None:
            self._blk = None
            b.drop()

    # -- attributes ---------------------------------------------------------------
    @property
    def shape(self):
        return self._a.shape

    @shape.setter
    def shape(self, newshape):  # CuPy reshapes in place without copying, or raises
        try:
            self._a.shape = newshape
        except AttributeError:
            raise AttributeError("incompatible shape") from None

    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    strides = property(lambda self: self._a.strides)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    flags = property(lambda self: _Flags(self._a))
    T = property(lambda self: ndarray._new(self._a.T))
    mT = property(lambda self: ndarray._new(_np.swapaxes(self._a, -1, -2)))
    real = property(lambda self: ndarray._new(self._a.real))
    imag = property(lambda self: ndarray._new(self._a.imag))
    device = property(lambda self: _DeviceRef(0))

    @property
    def base(self):
        b = self._a.base
        if not isinstance(b, _np.ndarray):
            return None
        while isinstance(b.base, _np.ndarray):
            b = b.base
        return ndarray._new(b)

    @property
    def data(self):
        return _MemoryPointer(self._a.__array_interface__["data"][0])

    @property
    def __cuda_array_interface__(self):
        a = self._a
        return {"shape": a.shape, "typestr": a.dtype.str,
                "data": (a.__array_interface__["data"][0], False),
                "strides": None if a.flags.c_contiguous else a.strides, "version": 3}

    def diagonal(self, offset=0, axis1=0, axis2=1):
        d = self._a.diagonal(offset, axis1, axis2)
        if self._a.flags.writeable:
            d.flags.writeable = True  # CuPy's diagonal is a writable view
        return ndarray._new(d)

    def __getattr__(self, name):
        if name in _METHODS:
            meth = getattr(_np.ndarray, name)
            w = self

            def method(*args, **kwargs):
                if name == "dot" and _float_operands((w,) + args):
                    _graph.refuse_cublas()
                if name in _REDUCTIONS:
                    _refuse_0d_axis(w, kwargs["axis"] if "axis" in kwargs else
                                    args[0] if args else None)
                return _call(meth, (w,) + args, kwargs, name=name)

            method.__name__ = name
            return method
        raise AttributeError(f"'cupy.ndarray' object has no attribute {name!r}")

    # -- leaving the device: explicit only, and counted ---------------------------
    def get(self, stream=None, order="C", out=None, blocking=True):
        if stream is not None:
            _graph.refuse_transfer("D2H", stream)
        _sync("get()")
        _graph.issue(stream, [self._a])  # (the copy, on that stream; the host waits)
        _graph.host_waits_for(stream)
        out_a = _np.array(self._a, order=order)
        if out is not None:
            out[...] = out_a
            return out
        return out_a

    def set(self, arr, stream=None):
        """Host data into this array (``ndarray.set``): a host-to-device copy."""
        _graph.refuse_transfer("H2D", stream)
        if not isinstance(arr, _np.ndarray):
            raise TypeError(f"Only numpy.ndarray can be set to cupy.ndarray, got {type(arr)}")
        if arr.dtype != self.dtype:
            raise TypeError(f"{arr.dtype} array cannot be set to {self.dtype} array")
        if arr.shape != self.shape:
            raise ValueError("Shape mismatch")
        if _graph._capture is not None:  # (runs as it comes: not the capturing stream)
            _graph._capture.exempt(self._a)
        self._a[...] = arr

    def _host_read(self, what):
        """A read of this array's values by the host: a copy on the current stream,
        which the host waits for."""
        _sync(what)
        _graph.issue(None, [self._a])
        _graph.host_waits_for(None)

    def item(self):
        self._host_read("item()")
        return self._a.item()

    def tolist(self):
        self._host_read("tolist()")
        return self._a.tolist()

    def __float__(self):
        self._host_read("float()")
        return float(self._a)

    def __int__(self):
        self._host_read("int()")
        return int(self._a)

    def __index__(self):
        self._host_read("index")
        return _op.index(self._a)

    def __bool__(self):
        self._host_read("bool()")
        return _b.bool(self._a.__bool__())

    def __complex__(self):
        self._host_read("complex()")
        return complex(self._a)

    def __array__(self, *args, **kwargs):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. "
                        "Please use `.get()` to construct a NumPy array explicitly.")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise TypeError(f"cupy stand-in: NumPy ufunc {ufunc.__name__}.{method} applied to "
                        "a device array (use the array module of the device)")

    def __array_function__(self, func, types, args, kwargs):
        raise TypeError(f"cupy stand-in: NumPy function {func.__name__} applied to a "
                        "device array (use the array module of the device)")

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __repr__(self):
        return "stand-in " + repr(self._a).replace("array", "cupy.array", 1)

    __str__ = __repr__

    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA, device 0

    def __dlpack__(self, stream=None, **kwargs):
        raise BufferError("the CuPy stand-in cannot export DLPack capsules (its memory "
                          "is host memory pretending to be device memory)")

    # -- indexing -----------------------------------------------------------------
    def __getitem__(self, key):
        k = _unwrap_index(key)
        if _has_bool_mask(k):
            _sync("boolean-mask indexing")
        return _exec(_getitem, (self._a, k))

    def __setitem__(self, key, value):
        k = _unwrap_index(key)
        if _has_bool_mask(k, nonempty=True):  # CuPy counts the true elements first (an
            _sync("boolean-mask assignment")  # int() of a scan's last element)
        _exec(_setitem, (self._a, k, _unwrap(value, "value")), writes=(self._a,))

    def __copy__(self):
        return _exec(_np.copy, (self._a,))

    def __deepcopy__(self, memo):
        return _exec(_np.copy, (self._a,))

    def __reduce__(self):
        raise TypeError("the CuPy stand-in does not pickle")

    def __hash__(self):
        raise TypeError("unhashable type: 'cupy.ndarray'")


def _getitem(a, key):
    k = _wrap_around(key, a.shape)  # (at each launch of a graph: the index's values then)
    r = a[k]
    if isinstance(r, _np.generic):  # CuPy: an element is a 0-d view, not a copy
        r = a[(k if type(k) is tuple else (k,)) + (Ellipsis,)]
    return r


def _setitem(a, key, value):
    a[_wrap_around(key, a.shape)] = value


def _has_bool_mask(k, nonempty=False):
    if type(k) is tuple:
        return _b.any(_has_bool_mask(v, nonempty) for v in k)
    return isinstance(k, _np.ndarray) and k.dtype == _np.bool_ and k.ndim > 0 and \
        not (nonempty and k.size == 0)


def _has_int_array(k):
    """Whether an index holds an integer array (CuPy's scatter kernels: atomics)."""
    if type(k) is tuple:
        return _b.any(_has_int_array(v) for v in k)
    if type(k) is list:
        return True
    return isinstance(k, _np.ndarray) and k.dtype != _np.bool_


def _binop(fn):
    def method(self, other):
        if isinstance(other, _np.ndarray):
            raise TypeError(f"Unsupported type {type(other)}")
        if not isinstance(other, (ndarray, int, float, complex, bool, _np.generic)):
            return NotImplemented
        if fn is _op.matmul and _float_operands((self, other)):
            _graph.refuse_cublas()
        return _exec(fn, (self._a, _unwrap(other)))
    return method


def _rbinop(fn):
    def method(self, other):
        if isinstance(other, _np.ndarray):
            raise TypeError(f"Unsupported type {type(other)}")
        if not isinstance(other, (int, float, complex, bool, _np.generic)):
            return NotImplemented
        return _exec(fn, (other, self._a))
    return method


def _ibinop(fn):
    def method(self, other):
        if isinstance(other, _np.ndarray):
            raise TypeError(f"Unsupported type {type(other)}")
        _exec(fn, (self._a, _unwrap(other)), writes=(self._a,))
        return self
    return method


for _name, _fn in {"add": _op.add, "sub": _op.sub, "mul": _op.mul,
                   "truediv": _op.truediv, "floordiv": _op.floordiv, "mod": _op.mod,
                   "pow": _op.pow, "matmul": _op.matmul, "and": _op.and_, "or": _op.or_,
                   "xor": _op.xor, "lshift": _op.lshift, "rshift": _op.rshift}.items():
    setattr(ndarray, f"__{_name}__", _binop(_fn))
    setattr(ndarray, f"__r{_name}__", _rbinop(_fn))
for _name, _fn in {"iadd": _op.iadd, "isub": _op.isub, "imul": _op.imul,
                   "itruediv": _op.itruediv, "ifloordiv": _op.ifloordiv, "imod": _op.imod,
                   "ipow": _op.ipow, "iand": _op.iand, "ior": _op.ior,
                   "ixor": _op.ixor}.items():
    setattr(ndarray, f"__{_name}__", _ibinop(_fn))
for _name, _fn in {"eq": _op.eq, "ne": _op.ne, "lt": _op.lt, "le": _op.le, "gt": _op.gt,
                   "ge": _op.ge}.items():
    setattr(ndarray, f"__{_name}__", _binop(_fn))
for _name, _fn in {"neg": _op.neg, "pos": _op.pos, "abs": _b.abs, "invert": _op.invert}.items():
    setattr(ndarray, f"__{_name}__", (lambda f: lambda self: _exec(f, (self._a,)))(_fn))
ndarray.__rmatmul__ = _rbinop(_op.matmul)
ndarray.__module__ = "cupy"  # what gradcore's device_of looks at (CuPy's is "cupy")


# ----------------------------------------------------------------------------------
# ufuncs
class ufunc:  # noqa: N801
    """A NumPy ufunc behind CuPy's interface (``at`` only where CuPy has it)."""

    _AT = {"add", "subtract", "maximum", "minimum", "bitwise_and", "bitwise_or",
           "bitwise_xor"}

    def __init__(self, np_ufunc):
        self._u = np_ufunc
        self.__name__ = np_ufunc.__name__
        self.nin, self.nout, self.nargs = np_ufunc.nin, np_ufunc.nout, np_ufunc.nargs

    def __call__(self, *args, **kwargs):
        return _call(self._u, args, kwargs)

    def reduce(self, *args, **kwargs):
        if args:  # (CuPy's add.reduce is sum(axis), its axis 0 by default)
            _refuse_0d_axis(args[0], kwargs["axis"] if "axis" in kwargs else
                            args[1] if len(args) > 1 else 0)
        return _call(self._u.reduce, args, kwargs)

    def accumulate(self, *args, **kwargs):
        return _call(self._u.accumulate, args, kwargs)

    def outer(self, *args, **kwargs):
        return _call(self._u.outer, args, kwargs)

    def at(self, a, indices, b=None):
        if self.__name__ not in self._AT:
            raise NotImplementedError(f"cupy.{self.__name__}.at is not supported")
        if type(a) is not ndarray:
            raise TypeError("ufunc.at needs a cupy.ndarray")
        u = self._u
        idx = _unwrap_index(indices)
        atomic = _has_int_array(idx) and not _has_bool_mask(idx)
        if atomic:
            _refuse_at_dtype(self.__name__, a.dtype)
        if atomic and self.__name__ in ("maximum", "minimum") and a.dtype.kind == "f":
            fmax = _np.fmax if self.__name__ == "maximum" else _np.fmin

            def at(arr, idx, value):  # CuPy's atomicMax/atomicMin of floating types
                idx = _wrap_around(idx, arr.shape)
                fmax.at(arr, idx, value)
                if arr.dtype == _np.float64:
                    with _np.errstate(over="ignore"):
                        arr[idx] = arr[idx].astype(_np.float32).astype(_np.float64)
        else:
            def at(arr, idx, *value):
                u.at(arr, _wrap_around(idx, arr.shape), *value)

        _exec(at, (a._a, idx) + (() if b is None else (_unwrap(b),)), writes=(a._a,))

    def __repr__(self):
        return f"<ufunc '{self.__name__}'>"


# the dtypes CuPy's scatter kernels (an atomic per element: ``ufunc.at`` with an integer
# array index) take, by ufunc; ``a``'s dtype decides (the values are cast to it)
_I32_64 = ("int32", "int64", "uint32", "uint64")
_AT_DTYPES = {"add": ("int32", "int64", "float16", "float32", "float64", "uint32", "uint64"),
              "subtract": ("int32", "uint32"),
              "maximum": ("int32", "int64", "float32", "float64", "uint32", "uint64"),
              "minimum": ("int32", "int64", "float32", "float64", "uint32", "uint64"),
              "bitwise_and": _I32_64, "bitwise_or": _I32_64, "bitwise_xor": _I32_64}
_AT_MESSAGES = {"add": "int32, int64, float16, float32, float64, uint32, uint64",
                "subtract": "int32, uint32,",
                "maximum": "int32, int64, float32, float64, uint32, uint64",
                "minimum": "int32, int64, float32, float64, uint32, uint64",
                "bitwise_and": "int32, int64, uint32, uint64",
                "bitwise_or": "int32, int64, uint32, uint64",
                "bitwise_xor": "int32, int64, uint32, uint64"}


def _refuse_at_dtype(name, dtype):
    """CuPy's refusal of ``cupy.<name>.at`` on an array of a dtype CUDA has no atomic
    for (``_scatter_op_single``'s TypeError, word for word)."""
    if _np.dtype(dtype).name not in _AT_DTYPES[name]:
        raise TypeError(f"cupy.{name}.at only supports {_AT_MESSAGES[name]} as data type")


_UFUNCS = (
    "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "negative",
    "positive", "power", "float_power", "remainder", "mod", "fmod", "absolute", "abs",
    "fabs", "rint", "sign", "exp", "exp2", "log", "log2", "log10", "expm1", "log1p",
    "sqrt", "cbrt", "square", "reciprocal", "logaddexp", "logaddexp2", "sin", "cos",
    "tan", "arcsin", "arccos", "arctan", "arctan2", "hypot", "sinh", "cosh", "tanh",
    "arcsinh", "arccosh", "arctanh", "deg2rad", "rad2deg", "degrees", "radians",
    "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "bitwise_not", "left_shift",
    "right_shift", "greater", "greater_equal", "less", "less_equal", "not_equal", "equal",
    "logical_and", "logical_or", "logical_xor", "logical_not", "maximum", "minimum",
    "fmax", "fmin", "isfinite", "isinf", "isnan", "signbit", "copysign", "nextafter",
    "ldexp", "frexp", "gcd", "lcm", "floor", "ceil", "trunc", "heaviside", "conjugate",
    "conj",
)
for _name in _UFUNCS:
    globals()[_name] = ufunc(getattr(_np, _name))


def _cuda_extremum(np_ufunc, is_max):
    """CuPy's float ``maximum``/``minimum`` (cupy/_math/misc.py): NaN where either
    operand is NaN, else CUDA's ``max``/``min``, for which -0.0 is below +0.0:
    ``maximum(0, -0.0)`` is +0.0 (NumPy's gives -0.0 there, its second operand)."""
    def extremum(a, b, out=None, **kwargs):
        r = np_ufunc(a, b, out=out, **kwargs)
        if _np.result_type(r).kind != "f":
            return r
        both_zero = (_np.asarray(a) == 0) & (_np.asarray(b) == 0)
        if not both_zero.any():
            return r
        neg = _np.signbit(a) & _np.signbit(b) if is_max else _np.signbit(a) | _np.signbit(b)
        zeros = _np.where(neg, -0.0, 0.0).astype(_np.result_type(r))
        if _np.ndim(r) == 0:
            return zeros[()] if out is None else _np.copyto(r, zeros) or r
        _np.copyto(r, _np.broadcast_to(zeros, r.shape), where=both_zero)
        return r

    extremum.__name__ = np_ufunc.__name__
    return extremum


class _ExtremumUfunc(ufunc):
    def __init__(self, np_ufunc):
        super().__init__(np_ufunc)
        self._call_fn = _cuda_extremum(np_ufunc, np_ufunc is _np.maximum)

    def __call__(self, *args, **kwargs):
        return _call(self._call_fn, args, kwargs)


maximum = _ExtremumUfunc(_np.maximum)
minimum = _ExtremumUfunc(_np.minimum)


def _flush_subnormals(a):
    """A float32 array with its subnormal values as zeros of their sign: CuPy compiles
    every kernel with ``-ftz=true`` (cupy/cuda/compiler.py), and the float32
    instructions then read and write subnormals as zeros."""
    a = _np.asarray(a)
    if a.dtype != _np.float32:
        return a
    tiny = _np.abs(a) < _np.finfo(_np.float32).tiny
    return _np.where(tiny, _np.copysign(_np.float32(0), a), a) if tiny.any() else a


class _FlushingUfunc(ufunc):
    """A ufunc whose CuPy kernel calls a CUDA float32 math function, built with
    ``-ftz=true``: float32 subnormal inputs are read as zeros (``frexp(1e-40)`` is
    ``(0.0, 0)`` on a GPU)."""

    def __call__(self, *args, **kwargs):
        u = self._u

        def flushed(*xs, **kw):
            return u(*(_flush_subnormals(x) if isinstance(x, _np.ndarray) else x
                       for x in xs), **kw)

        flushed.__name__ = u.__name__
        return _call(flushed, args, kwargs)


frexp = _FlushingUfunc(_np.frexp)


# ----------------------------------------------------------------------------------
# functions
_CUBLAS = {"dot", "vdot", "inner", "matmul", "tensordot", "einsum"}


def _plain(name, np_name=None, syncs=False):
    fn = getattr(_np, np_name or name)
    cublas = name in _CUBLAS

    def f(*args, **kwargs):
        if cublas and _float_operands(args) and (name != "einsum" or len(args) > 2):
            _graph.refuse_cublas()  # CuPy computes float products with cuBLAS
        if name in _REDUCTIONS and args:
            _refuse_0d_axis(args[0], kwargs["axis"] if "axis" in kwargs else
                            args[1] if len(args) > 1 else None)
        out = _call(fn, args, kwargs, name=name)
        if syncs:  # CuPy reads a size back to the host to shape the result
            _sync(name)
        return out

    f.__name__ = name
    return f


_FUNCS = (
    # creation
    "empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like",
    "full_like", "arange", "linspace", "logspace", "eye", "identity", "tri", "tril",
    "triu", "diag", "diagflat", "meshgrid", "indices",
    # shape
    "reshape", "ravel", "transpose", "swapaxes", "moveaxis", "rollaxis", "expand_dims",
    "squeeze", "broadcast_to", "broadcast_arrays", "atleast_1d", "atleast_2d",
    "atleast_3d", "concatenate", "stack", "vstack", "hstack", "dstack", "column_stack",
    "split", "array_split", "tile", "repeat", "flip", "fliplr", "flipud", "roll",
    "rot90", "pad",
    # indexing
    "take", "take_along_axis", "put_along_axis", "choose", "diagonal",
    "triu_indices", "tril_indices", "ravel_multi_index", "put",
    "compress", "select", "searchsorted", "extract", "place", "putmask", "copyto",
    # math / reductions
    "sum", "prod", "cumsum", "cumprod", "mean", "var", "std", "average", "median",
    "max", "min", "amax", "amin", "nanmax", "nanmin", "nansum", "nanmean", "argmax",
    "argmin", "nanargmax", "nanargmin", "all", "any", "clip", "around", "round",
    "dot", "vdot", "inner", "outer", "matmul", "tensordot", "einsum", "kron", "cross",
    "trace", "sort", "argsort", "partition", "argpartition", "lexsort", "count_nonzero",
    "allclose", "isclose", "array_equal", "diff", "convolve", "histogram", "fix", "real",
    "imag", "angle", "sinc", "i0", "isreal", "iscomplex", "nan_to_num", "interp",
    "cov", "corrcoef", "ptp", "percentile", "quantile",
    # dtypes and shapes (no arrays involved)
    "result_type", "can_cast", "promote_types", "min_scalar_type", "common_type",
    "shape", "ndim", "size", "isscalar",
)
for _name in _FUNCS:
    globals()[_name] = _plain(_name)
# CuPy reads a size back to the host to shape the result; unravel_index checks its
# indices' range with ``(indices < 0).any()`` and ``(indices > 0).any()`` on the host
for _name in ("nonzero", "flatnonzero", "argwhere", "unique", "bincount", "unravel_index"):
    globals()[_name] = _plain(_name, syncs=True)


def where(condition, x=None, y=None):
    """CuPy's ``where`` (cupy/_sorting/search.py): with ``x`` and ``y``, its ufunc over
    ``condition.astype('?', copy=False)``, so a condition that is a Python ``bool``
    (or number) raises ``AttributeError`` as CuPy's does, and a NumPy array
    ``TypeError``; with neither, ``nonzero(condition)``, which synchronizes."""
    missing = (x is None, y is None).count(True)
    if missing == 1:
        raise ValueError("Must provide both 'x' and 'y' or neither.")
    if missing == 2:
        return nonzero(condition)  # noqa: F821  (defined above)
    return _call(_np.where, (condition.astype("?", copy=False), x, y), {})


def _np_broadcast_to(a, shape, subok=False):
    """CuPy's broadcast views are writable (NumPy's are read-only): the same strides over
    ``a``'s memory, written through as CuPy would."""
    b = _np.broadcast_to(a, shape, subok=subok)
    root = a
    while isinstance(root.base, _np.ndarray):
        root = root.base
    if not (a.flags.writeable and root.flags.writeable and root.flags.c_contiguous):
        return b
    offset = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    # a view of the owner's memory (its base is the owner, as a view's is)
    return _np.ndarray(b.shape, b.dtype, buffer=root, offset=offset, strides=b.strides)


def broadcast_to(array, shape, subok=False):
    return _call(_np_broadcast_to, (array, shape), {"subok": subok})

for _name in ("float16", "float32", "float64", "complex64", "complex128", "int8", "int16",
              "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool_", "intp",
              "uintp", "dtype", "finfo", "iinfo", "pi", "e", "inf", "nan", "newaxis",
              "integer", "floating", "signedinteger", "unsignedinteger", "number",
              "complexfloating", "generic", "euler_gamma"):
    globals()[_name] = getattr(_np, _name)
globals()["bool"] = _np.bool_


def asarray(a, dtype=None, order=None, *, blocking=False):
    """Host data to the device (not a host synchronization), or an array as is."""
    if type(a) is ndarray:
        return a if dtype is None or a.dtype == _np.dtype(dtype) else a.astype(dtype)
    if isinstance(a, (list, tuple)) and _b.any(type(v) is ndarray for v in _flat(a)):
        parts = [asarray(v, dtype)._a for v in a]  # (a stack on the device: a kernel)
        return _exec(lambda *xs: _np.stack(xs), parts)
    if hasattr(a, "__array_interface__") or hasattr(a, "__array__") or \
            isinstance(a, (list, tuple, int, float, complex, bool, _np.generic)):
        out = _np.array(a, dtype=dtype, order=order or "K", copy=True)
        if out.ndim == 0:
            # CuPy fills a 0-d array with a kernel whose argument is the value (core.pyx,
            # _array_default: `a.fill(a_cpu)`), no transfer: allowed during a capture,
            # which bakes the value into the graph
            return _exec(lambda: out.copy(), ())
        _graph.refuse_transfer("H2D")
        return ndarray._new(out)
    raise TypeError(f"Unsupported type {type(a)}")


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, *, blocking=False):
    out = asarray(obj, dtype)
    if copy and out is obj:
        out = out.copy()
    while out.ndim < ndmin:
        out = out.reshape((1,) + out.shape)
    return out


ascontiguousarray = (lambda a, dtype=None: _call(_np.ascontiguousarray, (a,),
                                                 {"dtype": dtype}))


def asnumpy(a, stream=None, order="C", out=None, *, blocking=True):
    if type(a) is ndarray:
        return a.get(order=order, out=out)
    return _np.asarray(a, order=order)


def get_array_module(*args):
    import sys  # noqa: PLC0415

    if _b.any(type(a) is ndarray for a in args):
        return sys.modules[__name__]
    return _np


def from_dlpack(x, *, device=None, copy=None):
    if type(x) is ndarray:
        return x
    dev = x.__dlpack_device__() if hasattr(x, "__dlpack_device__") else None
    if dev is None or dev[0] not in (2, 3):  # CuPy imports CUDA (managed) memory only
        raise RuntimeError("Unsupported device type in DLPack tensor: CuPy imports "
                           "CUDA device memory only (the stand-in imports none)")
    raise BufferError("the CuPy stand-in cannot import DLPack capsules")


def _flat(seq):
    for v in seq:
        if isinstance(v, (list, tuple)):
            yield from _flat(v)
        else:
            yield v


# ----------------------------------------------------------------------------------
# cupy.cuda
_DEVICE_MEMORY = 16 * 2 ** 30  # the stand-in's nominal device memory


class _Runtime:
    CUDARuntimeError = CUDARuntimeError
    streamCaptureModeGlobal = _graph.streamCaptureModeGlobal  # noqa: N815
    streamCaptureModeThreadLocal = _graph.streamCaptureModeThreadLocal  # noqa: N815
    streamCaptureModeRelaxed = _graph.streamCaptureModeRelaxed  # noqa: N815
    streamDefault = _graph.streamDefault  # noqa: N815
    streamNonBlocking = _graph.streamNonBlocking  # noqa: N815
    streamLegacy = _graph.streamLegacy  # noqa: N815
    streamPerThread = _graph.streamPerThread  # noqa: N815

    @staticmethod
    def streamIsCapturing(ptr):  # noqa: N802
        cap = _graph._capture
        if cap is None or cap.stream.ptr != ptr:
            return False
        if cap.invalidated:
            raise RuntimeError("the stream was capturing, but an error has invalidated "
                               "the capture sequence")
        return True

    @staticmethod
    def getDeviceCount():  # noqa: N802
        return 1

    @staticmethod
    def getDevice():  # noqa: N802
        return 0

    @staticmethod
    def getDeviceProperties(i):  # noqa: N802
        return {"name": b"CuPy stand-in (NumPy)", "totalGlobalMem": _DEVICE_MEMORY, "major": 9,
                "minor": 0}

    @staticmethod
    def memGetInfo():  # noqa: N802
        """``(free, total)``: the stand-in's nominal device memory less what the pools
        took from it."""
        total = _DEVICE_MEMORY
        return (total - _graph.device_bytes_taken(), total)

    @staticmethod
    def runtimeGetVersion():  # noqa: N802
        return 13000

    @staticmethod
    def deviceSynchronize():  # noqa: N802
        _graph._synchronize(None, "deviceSynchronize()", _count_sync)


class _Device:
    def __init__(self, device=None):
        self.id = int(device or 0)
        if self.id != 0:
            raise RuntimeError(f"CUDARuntimeError: cudaErrorInvalidDevice (device {self.id})")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def use(self):
        pass

    def synchronize(self):
        _graph._synchronize(None, "Device.synchronize()", _count_sync)

    @property
    def compute_capability(self):
        return "90"

    def __repr__(self):
        return f"<CUDA Device {self.id}>"


class _GraphModule:
    Graph = Graph


class _MemoryModule:
    OutOfMemoryError = _graph.OutOfMemoryError


class _Nvtx:
    """``cupy.cuda.nvtx``: the ranges and marks are kept in ``log`` (a profiler would
    show them), as ``("push" | "pop" | "mark", message)``."""

    available = True

    def __init__(self):
        self.log: list = []

    def RangePush(self, message, id_color=-1, argb_color=None):  # noqa: N802
        self.log.append(("push", message))

    def RangePop(self):  # noqa: N802
        self.log.append(("pop", None))

    def Mark(self, message, id_color=-1, argb_color=None):  # noqa: N802
        self.log.append(("mark", message))


class _Cuda:
    runtime = _Runtime()
    Device = _Device
    Stream = Stream
    Event = Event
    MemoryPool = MemoryPool
    graph = _GraphModule()
    memory = _MemoryModule()
    nvtx = _Nvtx()
    get_elapsed_time = staticmethod(_graph.get_elapsed_time)
    set_allocator = staticmethod(_graph.set_allocator)
    get_allocator = staticmethod(_graph.get_allocator)
    using_allocator = staticmethod(_graph.using_allocator)
    get_current_stream = staticmethod(_graph.get_current_stream)

    def is_available(self):
        return True


cuda = _Cuda()


_graph.count_sync = _count_sync


def cublas_library():
    """The cuBLAS calls gradcore makes directly, served over the stand-in's memory
    (:mod:`._cublas`; conftest hands it to ``gradcore.kernels.gemm``)."""
    global _cublas_lib
    if _cublas_lib is None:
        from ._cublas import Library  # noqa: PLC0415

        _cublas_lib = Library()
    return _cublas_lib


_cublas_lib = None


def get_default_memory_pool():
    """The pool arrays come from unless an allocator is set (``cupy.cuda.MemoryPool``)."""
    return _graph.default_pool


# ----------------------------------------------------------------------------------
# cupyx (installed as the modules ``cupyx``, ``cupyx.scipy``, ``cupyx.scipy.special``
# while the stand-in is in use: see tests/conftest.py)
def _erf(x):
    """``cupyx.scipy.special.erf``: computed by the C library, element by element."""
    import math  # noqa: PLC0415

    a = _unwrap(x)
    if not isinstance(a, _np.ndarray):
        a = _np.asarray(a)
    dtype = a.dtype if a.dtype.kind == "f" else _np.dtype(_np.float64)
    if dtype == _np.float16:
        raise TypeError("cupyx.scipy.special.erf: no float16 loop (like CuPy's)")

    def erf(a):  # (an elementwise kernel on a GPU: recorded by a capture like any)
        flat = [math.erf(v) for v in a.reshape(-1).tolist()]
        return _np.array(flat, dtype=dtype).reshape(a.shape)

    return _exec(erf, (a,))


class _StrideTricks:
    """``cupy.lib.stride_tricks``: ``as_strided`` (a view of the same memory, as CuPy's,
    which does not check bounds either)."""

    @staticmethod
    def as_strided(x, shape=None, strides=None):
        return _call(_np.lib.stride_tricks.as_strided, (x, shape, strides), {})


class _Lib:
    stride_tricks = _StrideTricks()


lib = _Lib()


class _Linalg:
    """``cupy.linalg``: NumPy's, on the device arrays."""

    def __getattr__(self, name):
        if name not in ("inv", "det", "slogdet", "pinv", "svd", "solve", "norm", "cholesky",
                        "qr", "eigh"):
            raise AttributeError(name)
        numpy_fn = getattr(_np.linalg, name)

        def fn(*args, **kwargs):  # NumPy's named tuples (SVDResult, ...) as CuPy's tuples
            out = numpy_fn(*args, **kwargs)
            return tuple(out) if isinstance(out, tuple) else out

        def f(*args, **kwargs):
            out = _call(fn, args, kwargs)
            if name == "pinv":  # CuPy's zeroes the small singular values by a boolean
                _sync("linalg.pinv")  # mask, s[s <= cutoff] = 0, which reads a count back
            return out
        return f


linalg = _Linalg()


def scatter_add(a, slices, value):
    add.at(a, slices, value)  # noqa: F821  (defined above by the ufunc loop)


def cupyx_modules() -> dict:
    """The fake ``cupyx`` modules, by name, for ``sys.modules``."""
    import types  # noqa: PLC0415

    cupyx = types.ModuleType("cupyx")
    scipy = types.ModuleType("cupyx.scipy")
    special = types.ModuleType("cupyx.scipy.special")
    special.erf = _erf
    scipy.special = special
    cupyx.scipy = scipy
    cupyx.scatter_add = scatter_add
    return {"cupyx": cupyx, "cupyx.scipy": scipy, "cupyx.scipy.special": special}


# ---- raw kernels: the CUDA source runs through gradcore's host build -------------------
class RawModule:
    """Like ``cupy.RawModule``: ``get_function(name)`` gives a kernel that runs the very
    source it was given, compiled for the host (``gradcore.kernels.host``'s build
    of ``kernels/pointwise_backward.cu``; the code passed in must be that file). As with
    NVRTC, ``-DGRADCORE_NO_<dtype>`` in ``options`` leaves that dtype's kernels out."""

    def __init__(self, code=None, options=(), name_expressions=None, **kwargs):
        from gradcore.kernels import host as khost
        from gradcore.kernels import source as kc

        expected = (kc.kernels_dir() / kc.GENERATED).read_text()
        if code != expected:
            raise RuntimeError("the stand-in can only run kernels/pointwise_backward.cu")
        self.options = tuple(options)
        self.left_out = {o[len("-DGRADCORE_NO_"):] for o in self.options
                         if o.startswith("-DGRADCORE_NO_")}
        COMPILED.append(self.options)

    def get_function(self, name):
        from gradcore.kernels import host as khost
        from gradcore.kernels import source as kc

        _, dtype = kc.entry(name)
        if dtype in self.left_out:  # CuPy: cuModuleGetFunction fails, named not found
            raise RuntimeError(f"CUDA_ERROR_NOT_FOUND: named symbol not found ({name})")
        return _HostKernel(name)


COMPILED: list = []  # the options of every RawModule made (one per device and dtype)


class _HostKernel:
    def __init__(self, name):
        self.name = name

    def __call__(self, grid, block, args, shared_mem=0, stream=None):
        """Run the kernel on the host. Arguments are what CuPy takes: device arrays
        (contiguous, of the kernel's dtype: CuPy passes a pointer whatever the array) and
        NumPy scalars of the parameter's exact type (CuPy passes Python numbers as
        64-bit, which a float parameter would misread)."""
        from gradcore.kernels import host as khost
        from gradcore.kernels import source as kc

        values = []
        for a in args:
            if isinstance(a, _np.ndarray):
                raise TypeError(f"{self.name}: a host (NumPy) array passed to a kernel")
            values.append(a._a if type(a) is ndarray else a)
        _exec(khost.launch_host, (self.name, values, int(grid[0]), int(block[0])),
              stream=stream, writes=values)  # (any array it is given it may write)
