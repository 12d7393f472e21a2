"""How ``gc.profile`` counts launches: what a running profile installs and removes.

On entry a profile starts a :class:`_Session` here (one at a time: :func:`start`),
which installs, and on exit (:func:`stop`, also after an exception) removes:

* on every array namespace (``ArrayMath``) of a device in use that can be counted,
  instance attributes that shadow its fused kernels (every name of the kernel
  registry) and its array-module functions, and an ``xp`` that counts the calls the
  namespace's own helpers make (``sum_to``, ...);
* for NumPy arrays, whose operators and methods cannot be patched, a counting subclass
  of ``numpy.ndarray`` that the arrays of live tensors are swapped for;
* for array types written in Python (the CuPy stand-in of the tests), wrappers on the
  operators and methods of the class itself.

:mod:`gradcore.profile` says what counts as a launch and reports what was counted.
"""

from __future__ import annotations

import functools
import gc as _pygc
import inspect
import threading
import types
from dataclasses import dataclass

import numpy as np

from . import backend, creation, kernels
from .autograd import tensor_base
from .autograd.graph import Node
from .tensor import Tensor

__all__ = ["KernelStats", "StepStats", "start", "stop", "patchable"]

_lock = threading.Lock()
_session = None  # the _Session of the profile running now, or None

# ndarray methods that compute (or copy, or write): counted where they launch
# (views, such as transpose or squeeze, never launch and are left alone)
_METHODS = ("astype", "copy", "reshape", "ravel", "flatten", "sum", "prod", "max", "min",
            "mean", "var", "std", "any", "all", "argmax", "argmin", "cumsum", "cumprod",
            "clip", "take", "put", "repeat", "sort", "argsort", "dot", "fill", "nonzero",
            "round", "conj", "partition", "argpartition", "trace")
_INPLACE_METHODS = {"fill", "put", "sort", "partition"}
# operators, by the ufunc they are (a Python array class is patched with these names)
_OPERATORS = {}
for _ufunc, _ops in {
        "add": "add", "subtract": "sub", "multiply": "mul", "divide": "truediv",
        "floor_divide": "floordiv", "remainder": "mod", "power": "pow", "matmul": "matmul",
        "bitwise_and": "and", "bitwise_or": "or", "bitwise_xor": "xor"}.items():
    _OPERATORS.update({f"__{_ops}__": _ufunc, f"__r{_ops}__": _ufunc, f"__i{_ops}__": _ufunc})
_INPLACE_OPERATORS = {op for op in _OPERATORS if op.startswith("__i")}
_OPERATORS.update({"__eq__": "equal", "__ne__": "not_equal", "__lt__": "less",
                   "__le__": "less_equal", "__gt__": "greater", "__ge__": "greater_equal",
                   "__neg__": "negative", "__pos__": "positive", "__abs__": "absolute",
                   "__invert__": "invert"})
_REDUCTIONS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
               "logical_or": "any", "logical_and": "all"}
_SEED_DTYPES = (np.float16, np.float32, np.float64)  # of a backward's kept one
_ALLOCATE_ONLY = {"empty", "empty_like"}                  # memory, no kernel
_TRANSFERS = {"asarray", "array", "asanyarray", "ascontiguousarray"}  # from host data: a copy
_WRITE_ONLY = {"copyto", "put_along_axis", "place", "putmask", "put", "fill"}
# namespace helpers that are one kernel on CUDA; the other helpers count what they call
# (matmul_bias / matmul_bgrad: a product with cuBLASLt's epilogue, gemm.py)
_ONE_CALL_HELPERS = {"asarray", "erf", "matmul", "matmul_bias", "matmul_bgrad"}


# ---- results -----------------------------------------------------------------------------
@dataclass(frozen=True)
class KernelStats:
    """Launches of one kernel or array-module function, and the bytes they moved."""

    name: str
    kind: str  # "fused" (one of gradcore's kernels) or "array" (an array-module call)
    launches: float
    bytes_read: float
    bytes_written: float

    @property
    def bytes(self) -> float:
        return self.bytes_read + self.bytes_written


@dataclass(frozen=True)
class StepStats:
    """One step: its launches, the bytes they read and wrote, and the minimum (every
    buffer the step touches read once, if it reads it, and written once, if it writes
    it)."""

    launches: int
    bytes_read: int
    bytes_written: int
    min_bytes: int
    kernels: tuple[KernelStats, ...]

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written


class _Step:
    """What one step launched so far, and how much of each buffer it read and wrote."""

    def __init__(self):
        self.kernels: dict[str, list] = {}      # name -> [kind, launches, read, written]
        self.read: dict[int, int] = {}          # buffer -> bytes read from it
        self.written: dict[int, int] = {}
        self.size: dict[int, int] = {}          # buffer -> its size

    def add(self, name, kind, reads, writes):
        """``reads``/``writes``: (buffer key, buffer size, bytes) of one launch."""
        k = self.kernels.get(name)
        if k is None:
            k = self.kernels[name] = [kind, 0, 0, 0]
        k[1] += 1
        for key, size, n in reads:
            k[2] += n
            self.read[key] = self.read.get(key, 0) + n
            self.size[key] = size
        for key, size, n in writes:
            k[3] += n
            self.written[key] = self.written.get(key, 0) + n
            self.size[key] = size

    def stats(self) -> StepStats:
        size = self.size
        minimum = sum(min(n, size[k]) for k, n in self.read.items()) + \
            sum(min(n, size[k]) for k, n in self.written.items())
        kernels = [KernelStats(name, kind, n, r, w)
                   for name, (kind, n, r, w) in self.kernels.items()]
        return StepStats(sum(k.launches for k in kernels), sum(k.bytes_read for k in kernels),
                         sum(k.bytes_written for k in kernels), minimum,
                         tuple(sorted(kernels, key=_order)))


def _order(k: KernelStats):
    return (-k.bytes, -k.launches, k.name)


def _format_bytes(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def _mean(total: int, n: int) -> float:
    return total // n if total % n == 0 else total / n


def _number(x: float) -> str:
    return f"{x:.0f}" if x == int(x) else f"{x:.1f}"



_skipped_devices: list[str] = []


def start() -> _Session:
    """Start counting (a profile's entry): the session installed, or an error if another
    profile is running."""
    global _session
    with _lock:
        if _session is not None:
            raise RuntimeError("gc.profile(): another profile is running (one at a time)")
        session = _Session()
        try:
            session.install()
        except BaseException:
            session.uninstall()
            raise
        _session = session
    return session


def stop(session: _Session) -> None:
    """Stop counting (a profile's exit): everything ``session`` installed is removed."""
    global _session
    with _lock:
        _session = None
        session.uninstall()


def new_step(session: _Session) -> None:
    """Start counting a new step in ``session``."""
    session.step = _Step()


# ---- the session: what a running profile installed and what it counts ---------------------
def _root(arr):
    """The array that owns ``arr``'s memory (``arr`` itself when it owns it)."""
    base = getattr(arr, "base", None)
    while base is not None and hasattr(base, "nbytes"):
        arr, base = base, getattr(base, "base", None)
    return arr


def _span(arr) -> int:
    """Bytes of memory ``arr`` covers: a broadcast axis (stride 0) is read once."""
    n = arr.nbytes
    strides = arr.strides
    if 0 in strides and arr.size:
        n = arr.itemsize
        for dim, stride in zip(arr.shape, strides):
            if stride:
                n *= dim
    return n


def _arrays(obj, is_dev, out):
    """Append the device arrays in ``obj`` (an array, a tuple or list of them) to ``out``."""
    if is_dev(obj):
        out.append(obj)
    elif type(obj) is tuple or type(obj) is list:
        for v in obj:
            _arrays(v, is_dev, out)


def _address(arr) -> int:
    if isinstance(arr, np.ndarray):
        return arr.__array_interface__["data"][0]
    return int(arr.data.ptr)  # CuPy's arrays (and the stand-in's)


def _is_numpy(x) -> bool:
    return isinstance(x, np.ndarray)


class _Session:
    def __init__(self):
        self.thread = threading.get_ident()
        self.depth = 0  # > 0 inside a counted call: what it calls is part of it
        self.step = _Step()
        self.undo: list = []  # callables restoring what install() changed
        self._keys: dict[int, int] = {}  # buffer address -> buffer number
        self._next_key = 0
        self.fused = {}  # fused kernel name -> its declaration (see _fused_names)

    # -- counting ----------------------------------------------------------------------
    def call(self, name, fn, args, kwargs, is_dev, *, kind="array", this=None,
             writes=None, track=False):
        """``fn(*args, **kwargs)``, counted as one launch when it writes device memory.

        ``this``: the array a method was called on (read; written when ``writes`` is
        True for an in-place method); ``writes``: for a fused kernel, a function giving
        the arrays it updates in place.
        """
        if self.depth or threading.get_ident() != self.thread:
            return fn(*args, **kwargs)
        self.depth = 1
        try:
            result = fn(*args, **kwargs)
        finally:
            self.depth = 0
        return self._account(name, kind, args, kwargs, result, is_dev, this, writes, track)

    def _account(self, name, kind, args, kwargs, result, is_dev, this, writes, track):
        """Count the launch of a call that returned ``result`` (if it launched); return
        ``result`` (with ``track``, NumPy results as counting arrays)."""
        reads: list = []
        if this is not None and name != "setitem":
            reads.append(this)
        _arrays(args, is_dev, reads)
        for key, v in kwargs.items():
            if key != "out":
                _arrays(v, is_dev, reads)
        written: list = []
        _arrays(kwargs.get("out"), is_dev, written)
        known = {id(_root(a)) for a in reads} | {id(_root(a)) for a in written}
        if this is not None:
            known.add(id(_root(this)))
        if track:
            result = _track(result, known)
        results: list = []
        _arrays(result, is_dev, results)
        new = [r for r in results if id(_root(r)) not in known]
        if name.endswith("_like"):  # zeros_like(a) reads a's shape, not its memory
            reads = []
        read_sizes: dict[int, int] = {}
        write_sizes: dict[int, int] = {}
        if kind == "fused":
            new = results  # out of place on CUDA, even where the NumPy twin reused memory
            written += results
            if result is None:  # an update, in place
                _arrays(writes(args, kwargs), is_dev, written)
        elif name in _ALLOCATE_ONLY or (name in _TRANSFERS and not reads):
            new = []  # memory, but no launch
        elif name == "getitem":  # a launch only with index arrays (a gather)
            if _has_index_array(args[0]):
                read_sizes[id(this)] = min(_span(this), sum(r.nbytes for r in results))
                written += results
        elif name == "setitem":
            written.append(this)
            write_sizes[id(this)] = writes  # the bytes of the region written
        else:
            if this is not None and writes:
                written.append(this)  # an in-place method or operator
            if result is None and not written and reads:
                written.append(reads[0])  # copyto, put_along_axis, ufunc.at, ...
                if name in _WRITE_ONLY:
                    reads = reads[1:]
            written += new
        if not written and kind != "fused":
            for r in new:  # empty(), a host-to-device copy: new buffers all the same
                self._key(_root(r), fresh=True)
            return result  # or a view, a shape, a dtype: nothing launched
        read_buffers = self._buffers(reads, read_sizes)
        for r in new:  # a new allocation: a new buffer, whatever was at its address before
            self._key(_root(r), fresh=True)
        self.step.add(name, kind, read_buffers, self._buffers(written, write_sizes))
        return result

    def _buffers(self, arrays, sizes):
        """(buffer, buffer size, bytes) of each memory region in ``arrays`` (once)."""
        seen = set()
        out = []
        for a in arrays:
            root = _root(a)
            region = (_address(a), a.shape, a.strides)
            if region in seen:
                continue
            seen.add(region)
            n = sizes.get(id(a))
            if n is None:
                n = min(_span(a), root.nbytes)
            out.append((self._key(root), root.nbytes, n))
        return out

    def _key(self, root, fresh=False) -> int:
        """A number for the buffer ``root``: by address, and a new one for each new
        allocation seen at that address (array objects of some types come and go while
        their memory stays, so the address is what names a buffer)."""
        address = _address(root)
        key = None if fresh else self._keys.get(address)
        if key is None:
            self._next_key += 1
            key = self._keys[address] = self._next_key
        return key

    # -- installing -------------------------------------------------------------------
    def install(self) -> None:
        cpu_math = backend._cpu_math()  # (imports the kernel modules)
        for m in (cpu_math, *backend._cuda_maths.values()):
            for dtype in _SEED_DTYPES:  # made once per process, not per step: not counted
                m.backward_seed(np.empty((), dtype))
        self.fused = _fused_names()
        _skipped_devices.clear()
        self._instrument_math(cpu_math, _is_numpy, track=True)
        self._instrument_numpy(cpu_math)
        for index, m in list(backend._cuda_maths.items()):
            cls = m.ndarray
            if not _patchable(cls):
                _skipped_devices.append(f"cuda:{index}")
                continue
            is_dev = (lambda c: lambda x: isinstance(x, c))(cls)
            self._instrument_math(m, is_dev, track=False)
            _patch_class(self, cls, is_dev)

    def uninstall(self) -> None:
        """Undo everything install() did, in reverse (all of it, even if a step fails)."""
        error = None
        while self.undo:
            try:
                self.undo.pop()()
            except Exception as exc:  # noqa: BLE001 - restore the rest, then raise
                error = error or exc
        if error is not None:
            raise error

    def _instrument_math(self, m, is_dev, track) -> None:
        original = dict(m.__dict__)

        def restore():
            m.__dict__.clear()
            m.__dict__.update(original)

        self.undo.append(restore)
        for name in kernels.NAMES:  # every kernel looked up now, so that each is counted
            getattr(m, name)
        saved = dict(m.__dict__)
        m.device_kernels = True  # ops choose the kernels a CUDA device has
        m.values_on_host = False  # and skip the checks that read values back, as on a GPU
        for name, value in saved.items():
            if name in ("xp", "device", "ndarray") or not _is_function(value):
                continue
            if name in self.fused:
                inplace = saved.get(name + "_")
                setattr(m, name, self._fused_wrapper(
                    name, value, is_dev, track, inplace if _is_function(inplace) else None))
            elif getattr(saved["xp"], name, None) is value or name in _ONE_CALL_HELPERS:
                # an array-module function (or one launch of the namespace's own: a
                # product through cuBLAS called directly on CUDA)
                setattr(m, name, self._function_wrapper(name, value, is_dev, track))
            elif track:  # a helper attached to this namespace: counted by what it calls
                setattr(m, name, _tracking(value))
        for name in _helpers(type(m)):
            if name in saved:
                continue
            bound = getattr(m, name)
            if name in _ONE_CALL_HELPERS:
                setattr(m, name, self._function_wrapper(name, bound, is_dev, track))
            elif track:  # counted by what it calls; its results join the count
                setattr(m, name, _tracking(bound))
        m.xp = _Module(saved["xp"], self, is_dev, track)

    def _fused_wrapper(self, name, fn, is_dev, track, inplace=None):
        session, writes = self, _update_writes(self.fused[name], fn)

        def kernel(*args, **kwargs):
            if _session is not session:
                return fn(*args, **kwargs)
            out = kwargs.pop("out", None)  # the engine's gradient (see Node.writes_into_grad)
            if out is not None and inplace is not None and args and out is args[0]:
                # written into its first argument: counted as the in-place form
                return session.call(name + "_", inplace, args, kwargs, is_dev,
                                    kind="fused", writes=writes, track=track)
            return session.call(name, fn, args, kwargs, is_dev, kind="fused", writes=writes,
                                track=track)

        kernel.__name__ = name
        return kernel

    def _function_wrapper(self, name, fn, is_dev, track):
        if _is_ufunc(fn):
            return _Ufunc(fn, self, is_dev, track)
        session = self

        def function(*args, **kwargs):
            if _session is not session:
                return fn(*args, **kwargs)
            return session.call(name, fn, args, kwargs, is_dev, track=track)

        function.__name__ = name
        return function

    def _instrument_numpy(self, cpu_math) -> None:
        """NumPy arrays: live tensors' arrays become counting views (see the module)."""
        backend._math_by_type[_Counted] = cpu_math
        self.undo.append(lambda: backend._math_by_type.pop(_Counted, None))
        cpu_math.ndarray = _Counted
        wrap_data, wrap_new, to_host = creation._wrap, tensor_base._wrap_new, backend.to_host

        def wrap_tracked(arr):
            return wrap_data(_view(arr, _Counted) if type(arr) is np.ndarray else arr)

        def host_view(arr):  # what leaves for the host is a plain array, not counted
            return _view(arr, np.ndarray) if isinstance(arr, _Counted) else to_host(arr)

        # the tensors made from data: gc.zeros and friends (creation._wrap), gc.tensor
        # and the other copies of data (tensor_base._wrap_new)
        creation._wrap, tensor_base._wrap_new, backend.to_host = \
            wrap_tracked, wrap_tracked, host_view
        self.undo.append(lambda: setattr(creation, "_wrap", wrap_data))
        self.undo.append(lambda: setattr(tensor_base, "_wrap_new", wrap_new))
        self.undo.append(lambda: setattr(backend, "to_host", to_host))

        views: dict[int, tuple] = {}  # id(original array) -> (original, counting view)

        def counting(arr):
            entry = views.get(id(arr))
            if entry is None:
                entry = views[id(arr)] = (arr, _view(arr, _Counted))
            return entry[1]

        # a backward's kept one, read by the first rule (the namespace's own dict is put
        # back by _instrument_math's undo)
        cpu_math.__dict__["_seeds"] = {dtype: counting(one) for dtype, one in
                                       cpu_math.__dict__.get("_seeds", {}).items()}
        tensors, nodes = _live(Tensor, Node)
        for t in tensors:
            if type(t.__dict__.get("_data")) is np.ndarray:
                t._data = counting(t._data)
        for node in nodes:
            out = node.__dict__.get("out")
            if out is not None and type(out[0]) is np.ndarray:
                node.out = (counting(out[0]),) + tuple(out[1:])
        originals = {id(view): arr for arr, view in views.values()}
        # the views stay referenced by `views` until the restore: their ids are unique
        self.undo.append(lambda: _restore_arrays(Tensor, Node, originals, views))


def _restore_arrays(tensor_cls, node_cls, originals, views) -> None:
    """Give tensors and nodes plain arrays again: the originals where they still hold
    the counting view of one, else a plain array over the same memory."""
    def plain(arr):
        orig = originals.get(id(arr))
        return orig if orig is not None else _plain_array(arr)

    tensors, nodes = _live(tensor_cls, node_cls)
    for t in tensors:
        d = t.__dict__.get("_data")
        if isinstance(d, _Counted):
            t._data = plain(d)
    for node in nodes:
        out = node.__dict__.get("out")
        if out is not None and isinstance(out[0], _Counted):
            node.out = (plain(out[0]),) + tuple(out[1:])
    views.clear()


def _live(tensor_cls, node_cls):
    tensors, nodes = [], []
    for obj in _pygc.get_objects():
        cls = type(obj)
        if issubclass(cls, tensor_cls):
            tensors.append(obj)
        elif issubclass(cls, node_cls):
            nodes.append(obj)
    return tensors, nodes


def _plain_array(arr):
    """A plain ndarray over ``arr``'s memory: its base when that is all of it."""
    base = arr.base
    if type(base) is np.ndarray and base.base is None and base.shape == arr.shape and \
            base.strides == arr.strides and base.dtype == arr.dtype and \
            base.__array_interface__["data"][0] == arr.__array_interface__["data"][0]:
        return base
    return _view(arr, np.ndarray)


def _fused_names() -> dict:
    """Every fused kernel, by name: its declaration (a ``Kernel``/``Update``, or its
    NumPy function), read from the kernel registry's tables when a profile starts."""
    return kernels.declarations()


def _update_writes(decl, attribute):
    """The arrays a kernel updates in place, from its arguments (used when it returns
    None): its declaration's ``writes`` when it has them, else every array argument but
    the gradient (``grad``)."""
    params = getattr(decl, "params", None)
    writes = getattr(decl, "writes", None)
    if params is None or writes is None:
        params = _positional(attribute)
        if not params and inspect.isfunction(decl):  # a launcher taking (*args): its twin's
            params = _positional(decl)
            if params and params[0] in ("xp", "math"):
                params = params[1:]
        writes = [p for p in params if p not in ("grad", "g")]
    params, writes = tuple(params), set(writes)
    if getattr(decl, "multi_tensor", False):  # (table, rows, arrays of each tensor)
        def written_by_all(args, kwargs):
            return [a for arrays in args[2] for p, a in zip(params, arrays) if p in writes]
        return written_by_all

    def written(args, kwargs):
        out = [a for p, a in zip(params, args) if p in writes]
        return out + [v for k, v in kwargs.items() if k in writes]

    return written


def _positional(fn) -> list[str]:
    """The names of the positional parameters ``fn`` still takes (after a partial's)."""
    bound = 0
    while isinstance(fn, functools.partial):
        bound += len(fn.args)
        fn = fn.func
    try:
        return [p.name for p in inspect.signature(fn).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][bound:]
    except (TypeError, ValueError):
        return []


def _is_function(value) -> bool:
    return callable(value) and not isinstance(value, (type, types.ModuleType))


def _is_ufunc(value) -> bool:
    return isinstance(value, np.ufunc) or (hasattr(value, "reduce") and hasattr(value, "nin"))


def _helpers(cls) -> list[str]:
    """The public methods an ArrayMath class defines (``sum_to``, ``erf``, ...)."""
    names = []
    for klass in cls.__mro__:
        if klass is object:
            continue
        for name, value in vars(klass).items():
            if not name.startswith("_") and name not in names and \
                    isinstance(value, (types.FunctionType, staticmethod)):
                names.append(name)
    return names


def _tracking(fn):
    """A namespace helper whose NumPy results join the count (``broadcast_to`` makes a
    plain view)."""
    def helper(*args, **kwargs):
        result = fn(*args, **kwargs)
        if _session is None:
            return result
        inputs: list = []
        _arrays(args, _is_numpy, inputs)
        return _track(result, {id(_root(a)) for a in inputs})
    helper.__name__ = getattr(fn, "__name__", "helper")
    return helper


def _has_index_array(key) -> bool:
    if type(key) is tuple:
        return any(_has_index_array(k) for k in key)
    return isinstance(key, list) or hasattr(key, "shape") and hasattr(key, "dtype")


def _patchable(cls) -> bool:
    """Whether ``cls`` is an array class written in Python, whose attributes can be
    replaced (CuPy's compiled ndarray cannot)."""
    try:
        cls._gradcore_profile_probe = None
        del cls._gradcore_profile_probe
    except (TypeError, AttributeError):
        return False
    return True


# ---- array-module proxies -------------------------------------------------------------------
class _Module:
    """An array module whose functions count (the ``xp`` of a namespace, while profiling)."""

    def __init__(self, xp, session, is_dev, track):
        self._xp, self._session, self._is_dev, self._track = xp, session, is_dev, track

    def __getattr__(self, name):
        value = getattr(self._xp, name)
        if _is_function(value):
            value = self._session._function_wrapper(name, value, self._is_dev, self._track)
        self.__dict__[name] = value
        return value


class _Ufunc:
    """A ufunc whose calls and methods (``reduce``, ``at``, ...) count."""

    def __init__(self, ufunc, session, is_dev, track):
        self._u, self._session, self._is_dev, self._track = ufunc, session, is_dev, track
        self.__name__ = ufunc.__name__

    def _call(self, method, args, kwargs):
        fn = getattr(self._u, method) if method != "__call__" else self._u
        if _session is not self._session:
            return fn(*args, **kwargs)
        return self._session.call(_ufunc_name(self._u, method), fn, args, kwargs,
                                  self._is_dev, track=self._track)

    def __call__(self, *args, **kwargs):
        return self._call("__call__", args, kwargs)

    def reduce(self, *args, **kwargs):
        return self._call("reduce", args, kwargs)

    def accumulate(self, *args, **kwargs):
        return self._call("accumulate", args, kwargs)

    def outer(self, *args, **kwargs):
        return self._call("outer", args, kwargs)

    def reduceat(self, *args, **kwargs):
        return self._call("reduceat", args, kwargs)

    def at(self, *args, **kwargs):
        return self._call("at", args, kwargs)

    def __getattr__(self, name):
        return getattr(self._u, name)


def _ufunc_name(ufunc, method) -> str:
    name = ufunc.__name__
    if name.startswith("cupy_"):  # CuPy's ufuncs are named cupy_add, cupy_tanh...
        name = name[5:]
    if method == "__call__":
        return name
    if method == "reduce" and name in _REDUCTIONS:
        return _REDUCTIONS[name]
    return f"{name}.{method}"


# ---- NumPy: the counting subclass --------------------------------------------------------------
_view = np.ndarray.view


def _track(result, known=frozenset()):
    """NumPy results as counting arrays: a view of an input (a root in ``known``) as a
    counting view; a new array as a counting array that owns its memory, as the result
    would have (a copy, made while profiling only, so that ownership, and what gradcore
    decides from it, stays as without the profile); a scalar as a 0-d array (as CuPy)."""
    t = type(result)
    if t is np.ndarray:
        if id(_root(result)) in known:
            return _view(result, _Counted)
        order = "F" if result.flags.f_contiguous and not result.flags.c_contiguous else "C"
        out = np.ndarray.__new__(_Counted, result.shape, result.dtype, order=order)
        np.copyto(_view(out, np.ndarray), result)
        return out
    if t is tuple or t is list:
        return t(_track(r, known) for r in result)
    if isinstance(result, np.generic):
        out = np.ndarray.__new__(_Counted, (), result.dtype)
        _view(out, np.ndarray)[()] = result
        return out
    return result


def _plain(x):
    if isinstance(x, _Counted):
        return _view(x, np.ndarray)
    if type(x) is tuple or type(x) is list:
        return type(x)(_plain(v) for v in x)
    return x


class _Counted(np.ndarray):
    """A NumPy array whose operations count while a profile runs (and are plain NumPy
    otherwise: an array left over from a profile makes plain arrays)."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        args = tuple(_plain(x) for x in inputs)
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = _plain(out)
        fn = getattr(ufunc, method)
        session = _session
        if session is None:
            result = fn(*args, **kwargs)
        else:
            result = session.call(_ufunc_name(ufunc, method), fn, args, kwargs, _is_numpy,
                                  track=True)
        if out is not None and method != "at":  # the caller's own arrays, as NumPy does
            return out[0] if len(out) == 1 else tuple(out)
        return result

    def __array_function__(self, func, types, args, kwargs):
        args, kwargs = _plain(args), {k: _plain(v) for k, v in kwargs.items()}
        session = _session
        if session is None:
            return func(*args, **kwargs)
        return session.call(func.__name__, func, args, kwargs, _is_numpy, track=True)

    def __getitem__(self, key):
        return _method(self, "getitem", np.ndarray.__getitem__, (key,), {})

    def __setitem__(self, key, value):
        session = _session
        if session is None or session.depth:
            return np.ndarray.__setitem__(self, key, value)
        region = _region_bytes(self, key, value)
        return session.call("setitem", lambda k, v: np.ndarray.__setitem__(self, k, v),
                            (key, value), {}, _is_numpy, this=self, writes=region)


def _region_bytes(arr, key, value) -> int:
    """Bytes that ``arr[key] = value`` writes."""
    if not _has_index_array(key):
        return np.ndarray.__getitem__(_view(arr, np.ndarray), key).nbytes
    if hasattr(value, "shape") and getattr(value, "size", 0) > 1:
        return value.size * arr.itemsize
    return np.ndarray.__getitem__(_view(arr, np.ndarray), key).nbytes


def _method(self, name, fn, args, kwargs):
    session = _session
    if session is None:
        return fn(_view(self, np.ndarray), *args, **kwargs)
    if session.depth:
        return fn(self, *args, **kwargs)
    return session.call(name, lambda *a, **k: fn(self, *a, **k), args, kwargs, _is_numpy,
                        this=self, writes=name in _INPLACE_METHODS, track=True)


def _numpy_method(name):
    fn = getattr(np.ndarray, name)

    def method(self, *args, **kwargs):
        return _method(self, name, fn, args, kwargs)

    method.__name__ = name
    return method


for _name in _METHODS:
    setattr(_Counted, _name, _numpy_method(_name))


# ---- array classes written in Python: patched in place --------------------------------------
def _patch_class_method(session, cls, attr, name, is_dev, inplace):
    fn = getattr(cls, attr)
    if name == "getitem":
        def method(self, key):
            if _session is not session:
                return fn(self, key)
            return session.call(name, lambda k: fn(self, k), (key,), {}, is_dev, this=self)
    elif name == "setitem":
        def method(self, key, value):
            if _session is not session or session.depth:
                return fn(self, key, value)
            region = _python_region_bytes(self, key, value, fn_get=cls.__getitem__)
            return session.call(name, lambda k, v: fn(self, k, v), (key, value), {}, is_dev,
                                this=self, writes=region)
    else:
        def method(self, *args, **kwargs):
            if _session is not session:
                return fn(self, *args, **kwargs)
            return session.call(name, lambda *a, **k: fn(self, *a, **k), args, kwargs,
                                is_dev, this=self, writes=inplace)
    method.__name__ = attr
    return method


def _python_region_bytes(arr, key, value, fn_get):
    if hasattr(value, "shape") and getattr(value, "size", 0) > 1:
        return value.size * arr.itemsize
    return fn_get(arr, key).nbytes


def _patch_class(session, cls, is_dev) -> None:
    """Wrap the operators and methods of the Python array class ``cls`` (until exit)."""
    own = dict(vars(cls))
    names = dict(_OPERATORS)
    names.update({m: m for m in _METHODS})
    names.update({"__getitem__": "getitem", "__setitem__": "setitem"})
    patched = []
    for attr, name in names.items():
        if getattr(cls, attr, None) is None or getattr(cls, attr) is getattr(object, attr, None):
            continue
        inplace = attr in _INPLACE_OPERATORS or attr in _INPLACE_METHODS
        setattr(cls, attr, _patch_class_method(session, cls, attr, name, is_dev, inplace))
        patched.append(attr)
    getattr_fn = own.get("__getattr__")
    if getattr_fn is not None:  # methods resolved when asked for (the CuPy stand-in's)
        def dynamic(this, attr):
            value = getattr_fn(this, attr)
            if attr not in _METHODS or _session is not session:
                return value
            inplace = attr in _INPLACE_METHODS

            def method(*args, **kwargs):
                return session.call(attr, value, args, kwargs, is_dev, this=this,
                                    writes=inplace)
            return method

        cls.__getattr__ = dynamic
        patched.append("__getattr__")

    def restore():
        for attr in patched:
            if attr in own:
                setattr(cls, attr, own[attr])
            else:
                delattr(cls, attr)

    session.undo.append(restore)

patchable = _patchable  # (gradcore.profile.can_count reads it)
