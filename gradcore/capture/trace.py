"""Recording the array calls of one call of a function on the CPU, and replaying them.

While a :class:`Recorder` runs, the arrays of the tensors the function reaches are
swapped, at its first reach of each (:class:`Reach`), for views of class
:class:`Traced` (a subclass of ``numpy.ndarray`` sharing their memory), and the
arguments' tensors for views of private input buffers. NumPy hands every ufunc call,
reduction and array function on a ``Traced`` operand to the class
(``__array_ufunc__``, ``__array_function__``); the methods NumPy does not route through
those protocols (``astype``, ``copy``, indexing, ...) are overridden. Each such call is
computed at once, as eagerly, and appended to the tape as a call that writes the same
result into the same memory (``ufunc(a, b, out=buffer)``). A replay runs the tape:
no dispatch, no promotion, no graph, no engine, only the array calls.

What a tape cannot hold is refused, never frozen: a read of values by the host (an
``item()``, a ``bool()``, printing) marks the recording refused, and the caller runs
the function eagerly. Optimizers' ``step``/``zero_grad`` and schedulers' ``step`` run
as themselves at replay ("opaque" calls: their Python reads the learning rate and
counts the steps); the ``.grad`` and data bindings that the recorded code made between
them are set again at the same points.
"""

from __future__ import annotations

import functools
import hashlib
import os
import traceback

import numpy as np

from .. import _live, _random, backend

__all__ = ["Traced", "Recorder", "Tape", "Reach", "active", "Refused"]

_ndarray = np.ndarray
_active = None  # the Recorder recording now, or None
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Refused(Exception):
    """Raised (under ``fullgraph=True``) where a call cannot be captured."""


def active():
    """The recorder running now (None outside a recording)."""
    return _active


def _plain(x):
    """``x`` with every Traced array in it (also inside tuples, lists and dicts) seen as
    a plain ndarray over the same memory."""
    t = type(x)
    if t is Traced:
        return x.view(_ndarray)
    if t is tuple or t is list:
        return t(_plain(v) for v in x)
    if t is dict:
        return {k: _plain(v) for k, v in x.items()}
    return x


def _traced(x):
    if type(x) is _ndarray:
        return x.view(Traced)
    if type(x) is tuple or type(x) is list:
        return type(x)(_traced(v) for v in x)
    return x


def _root(arr):
    while True:
        b = arr.base
        if not isinstance(b, _ndarray):
            # a view made by NumPy's as_strided (the convolution's windows) holds its
            # operand through a DummyArray, whose own base is the operand
            b = getattr(b, "base", None)
            if not isinstance(b, _ndarray):
                return arr
        arr = b


def _address(arr) -> int:
    return arr.__array_interface__["data"][0]


def _subclasses(cls) -> list:
    """``cls`` and every class derived from it, defined now."""
    found, todo = [], [cls]
    while todo:
        k = todo.pop()
        if k not in found:
            found.append(k)
            todo.extend(k.__subclasses__())
    return found


def unwatchable(tensor_cls):
    """Why the tensors a step reaches cannot be watched (a subclass of ``tensor_cls``
    that defines ``_data`` itself, which :class:`Reach` would not see), or None."""
    for k in _subclasses(tensor_cls):
        if k is not tensor_cls and "_data" in k.__dict__:
            return (f"the Tensor subclass {k.__qualname__} defines _data itself, and "
                    "gc.compile could not see which tensors the function reaches")
    return None


class Reach:
    """Which tensors a step reaches, found from what its Python reaches, not by a pass
    over every live object (a process with large libraries loaded holds a hundred
    thousand objects or more).

    While a step records or is captured, data descriptors are put on the tensor class
    for ``_data``, and for ``grad`` on each tensor class that defines it (``Tensor``'s
    unset-gradient default, ``Parameter``'s None): every read and write of a tensor's
    array or gradient passes here. A tensor that existed before (it had an array when
    first reached) is noted in ``first`` with its bindings as they were, before any
    change (``on_first(t, data, grad)`` is told then); a tensor given its first array
    is ``fresh`` (made during the step). ``reached``: id() of the tensors whose array
    was read or written (a CUDA graph can read no other tensor's memory); ``written``:
    the tensors given an array (kept alive, so that the ids stay theirs). The tensors
    of ``skip`` (the arguments, whose arrays the caller swaps itself) are not noted in
    ``first``."""

    def __init__(self, tensor_cls, skip=(), on_first=None):
        self.cls = tensor_cls
        self.on_first = on_first
        self.reached: set = set()
        self.first: dict = {}      # id -> (tensor, _data before, grad before)
        self.fresh: set = set()
        self.written: list = []
        self._seen = {id(t) for t in skip}  # ids in first or fresh, and the skipped
        self._installed = []       # (class, name, the class's value before or _MISSING)

    @classmethod
    def install(cls, tensor_cls, skip=(), on_first=None):
        """A log installed on ``tensor_cls`` and its subclasses; None (nothing
        installed) where :func:`unwatchable` says why not, or one is installed."""
        if unwatchable(tensor_cls) is not None or "_data" in tensor_cls.__dict__:
            return None
        log = cls(tensor_cls, skip, on_first)
        log._put(tensor_cls, "_data", _DataNote(log))
        for k in _subclasses(tensor_cls):
            if "grad" in k.__dict__:
                log._put(k, "grad", _GradNote(log, k.__dict__["grad"]))
        return log

    def _put(self, k, name, value):
        self._installed.append((k, name, k.__dict__.get(name, _MISSING)))
        setattr(k, name, value)

    def remove(self):
        for k, name, value in reversed(self._installed):
            if value is _MISSING:
                delattr(k, name)
            else:
                setattr(k, name, value)
        self._installed = []

    def note(self, t):
        """``t`` reached: noted in ``first`` if it had an array before."""
        k = id(t)
        if k in self._seen:
            return
        d = t.__dict__
        data = d.get("_data", _MISSING)
        if data is _MISSING:  # (being made: its array comes next)
            return
        self._seen.add(k)
        grad = d.get("grad", _MISSING)
        self.first[k] = (t, data, grad)
        if self.on_first is not None:
            self.on_first(t, data, grad)

    def made_before(self, t) -> bool:
        """Whether ``t`` existed before the step (it is not one the step made)."""
        return id(t) not in self.fresh


class _DataNote:
    """``Tensor._data`` while a :class:`Reach` is installed."""

    __slots__ = ("log",)

    def __init__(self, log):
        self.log = log

    def __get__(self, t, owner=None):
        if t is None:
            return self
        log = self.log
        k = id(t)
        log.reached.add(k)
        if k not in log._seen:
            log.note(t)
        try:
            return t.__dict__["_data"]
        except KeyError:
            raise AttributeError("_data") from None

    def __set__(self, t, value):
        log = self.log
        k = id(t)
        log.reached.add(k)
        if k not in log._seen:
            if "_data" in t.__dict__:
                log.note(t)
            else:
                log._seen.add(k)
                log.fresh.add(k)
        log.written.append(t)
        t.__dict__["_data"] = value

    def __delete__(self, t):
        t.__dict__.pop("_data", None)


class _GradNote:
    """``Tensor.grad`` (and each subclass's own ``grad``) while a :class:`Reach` is
    installed: notes the tensor, then behaves as the class's own value (``Tensor``'s
    unset-gradient descriptor, ``Parameter``'s None, a property of a subclass)."""

    __slots__ = ("log", "value", "data_descriptor")

    def __init__(self, log, value):
        self.log, self.value = log, value
        self.data_descriptor = hasattr(type(value), "__set__")

    def __get__(self, t, owner=None):
        v = self.value
        get = getattr(type(v), "__get__", None)
        if t is None:
            return v if get is None else get(v, None, owner)
        if id(t) not in self.log._seen:
            self.log.note(t)
        if not self.data_descriptor:
            try:
                return t.__dict__["grad"]
            except KeyError:
                pass
        read = getattr(type(v), "read", None)
        if read is not None:  # (the unset gradient's: its warning names the reader's line)
            return read(t)
        return v if get is None else get(v, t, owner)

    def __set__(self, t, value):
        if id(t) not in self.log._seen:
            self.log.note(t)
        if self.data_descriptor:
            self.value.__set__(t, value)
        else:
            t.__dict__["grad"] = value

    def __delete__(self, t):
        if id(t) not in self.log._seen:
            self.log.note(t)
        if self.data_descriptor:
            self.value.__delete__(t)
            return
        try:
            del t.__dict__["grad"]
        except KeyError:
            raise AttributeError("grad") from None


def leaves(x, cls, out):
    """Append to ``out`` the instances of ``cls`` in ``x`` (through tuples, lists and
    dicts, in order); return ``out``."""
    t = type(x)
    if isinstance(x, cls):
        out.append(x)
    elif t is tuple or t is list:
        for v in x:
            leaves(v, cls, out)
    elif t is dict:
        for v in x.values():
            leaves(v, cls, out)
    return out


def _arrays(x, out):
    return leaves(x, _ndarray, out)


# How a refusal names the gradcore function the user's line called
_FRIENDLY = {"__bool__": "bool() of a tensor", "__float__": "float() of a tensor",
             "__int__": "int() of a tensor", "__index__": "a tensor used as an index",
             "item": ".item()", "tolist": ".tolist()", "numpy": ".numpy()",
             "__repr__": "printing a tensor", "__str__": "printing a tensor",
             "__format__": "formatting a tensor", "__array__": "NumPy reading a tensor"}


def _user_line() -> tuple[str, str | None]:
    """``file:line`` of the innermost frame outside gradcore (the user's line), and the
    gradcore function that line called (None when the line is gradcore's own)."""
    stack = traceback.extract_stack()
    for k in range(len(stack) - 1, -1, -1):
        frame = stack[k]
        if not os.path.abspath(frame.filename).startswith(_PACKAGE_DIR):
            called = stack[k + 1].name if k + 1 < len(stack) else None
            return f"{frame.filename}:{frame.lineno}", _FRIENDLY.get(called, called)
    return "<unknown>", None


# ---- the traced array ------------------------------------------------------------------
class Traced(np.ndarray):
    """A view that reports what is computed from it to the running recorder."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        pin = tuple(_plain(x) for x in inputs)
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = tuple(_plain(o) for o in out)
        if "where" in kwargs:
            kwargs["where"] = _plain(kwargs["where"])
        fn = getattr(ufunc, method)
        result = fn(*pin, **kwargs)
        rec = _active
        if rec is None or rec.paused:
            return result
        if method == "at":
            rec.call(fn, pin, kwargs, writes=pin[:1])
            return None
        if out is not None:
            rec.call(fn, pin, kwargs, writes=kwargs["out"])
            return out[0] if len(out) == 1 else out
        many = ufunc.nout > 1 and method == "__call__"
        results = tuple(np.asarray(r) for r in (result if many else (result,)))
        rec.call(fn, pin, dict(kwargs, out=results), writes=results, fresh=True)
        traced = tuple(r.view(Traced) for r in results)
        return traced if many else traced[0]

    def __array_function__(self, func, types, args, kwargs):
        pargs, pkw = _plain(args), _plain(kwargs)
        result = func(*pargs, **pkw)
        rec = _active
        if rec is None or rec.paused:
            return result
        return rec.produced(func, pargs, pkw, result)

    # host reads: what a replay cannot repeat
    def item(self, *args):
        _host_read(self, ".item()")
        return _ndarray.item(self.view(_ndarray), *args)

    def tolist(self):
        _host_read(self, ".tolist()")
        return _ndarray.tolist(self.view(_ndarray))

    def __bool__(self):
        _host_read(self, "bool()")
        return bool(self.view(_ndarray))

    def __float__(self):
        _host_read(self, "float()")
        return float(self.view(_ndarray))

    def __int__(self):
        _host_read(self, "int()")
        return int(self.view(_ndarray))

    def __index__(self):
        _host_read(self, "an index")
        return _ndarray.__index__(self.view(_ndarray))

    def tobytes(self, *args, **kwargs):
        _host_read(self, ".tobytes()")
        return _ndarray.tobytes(self.view(_ndarray), *args, **kwargs)

    def nonzero(self):
        _host_read(self, ".nonzero() (a shape that depends on values)")
        return _traced(_ndarray.nonzero(self.view(_ndarray)))

    def __getitem__(self, key):
        p = self.view(_ndarray)
        pkey = _plain(key)
        result = p[pkey]
        rec = _active
        if rec is None or rec.paused:
            return result
        if _is_bool_mask(pkey):
            _host_read(self, "a boolean mask (a shape that depends on values)")
        return rec.produced(_ndarray.__getitem__, (p, pkey), {}, result)

    def __setitem__(self, key, value):
        p = self.view(_ndarray)
        pkey, pvalue = _plain(key), _plain(value)
        p[pkey] = pvalue
        rec = _active
        if rec is not None and not rec.paused:
            if _is_bool_mask(pkey):
                _host_read(self, "a boolean mask (a shape that depends on values)")
            rec.call(_ndarray.__setitem__, (p, pkey, pvalue), {}, writes=(p,))


def _is_bool_mask(key) -> bool:
    keys = key if type(key) is tuple else (key,)
    return any(isinstance(k, _ndarray) and k.dtype == bool for k in keys)


def _host_read(arr, what):
    rec = _active
    if rec is not None and not rec.paused:
        called = _user_line()[1]  # what the user wrote (bool() of a tensor), if known
        rec.refuse(f"{called if called in _FRIENDLY.values() else what} reads values on "
                   "the host")


def _method(name):
    base = getattr(_ndarray, name)

    def method(self, *args, **kwargs):
        p = self.view(_ndarray)
        pargs, pkw = _plain(args), _plain(kwargs)
        result = base(p, *pargs, **pkw)
        rec = _active
        if rec is None or rec.paused:
            return result
        return rec.produced(base, (p, *pargs), pkw, result)

    method.__name__ = name
    return method


# Methods that compute without going through NumPy's protocols (views, such as
# transpose, keep the class by themselves and need nothing).
for _name in ("astype", "copy", "reshape", "ravel", "flatten", "argmax", "argmin", "take",
              "repeat", "dot", "argsort", "sort", "fill", "put", "round", "trace",
              "searchsorted", "compress", "choose", "diagonal", "view_as"):
    if hasattr(_ndarray, _name):
        setattr(Traced, _name, _method(_name))


class _RandomProxy:
    """Stands in for a NumPy generator of gradcore's while recording (the default
    generator's, or a ``gc.Generator``'s reached through ``generator=``): each draw is a
    tape call that draws again, from the generator ``source()`` returns at replay, into
    the same buffer, so that replays draw fresh values in eager's order (dropout masks)."""

    def __init__(self, real, source):
        self._real = real
        self._source = source

    def __getattr__(self, name):
        draw = getattr(self._real, name)
        rec = _active
        source = self._source

        def recorded(*args, **kwargs):
            result = draw(*args, **kwargs)
            if rec is None or rec.paused or _active is not rec:
                return result
            if not isinstance(result, _ndarray):
                rec.refuse(f"a random draw of a Python number ({name})")
                return result
            rec.call(functools.partial(_draw_into, source, name, args, kwargs), (), {},
                     writes=(result,), fresh=True, out=result, name=f"random.{name}")
            return result.view(Traced)

        return recorded


def _draw_into(source, name, args, kwargs, buf):
    np.copyto(buf, getattr(source(), name)(*args, **kwargs))


def _generator_proxy(generator):
    """The recording stand-in for a ``gc.Generator``'s NumPy generator."""
    return _RandomProxy(generator._stream, lambda: generator._stream)


# ---- the tape --------------------------------------------------------------------------
class Tape:
    """What a replay runs: a program of calls, with the data it moves in and out."""

    def __init__(self):
        self.program = []        # zero-argument callables, in order
        self.inputs = []         # (position in the flattened arguments, private buffer)
        self.copy_back = []      # (position, buffer): inputs the function writes into
        self.restore = []        # (array, snapshot): constants the tape writes into
        self.guards = []         # (tensor, array): tensor._data must still be array
        self.grad_guards = []    # (tensor, grad tensor): tensor.grad must still be it
        self.module_flags = ()   # (module, attribute names, their values)
        self.output = None       # the returned structure, with _Out leaves

    def guards_hold(self) -> bool:
        for t, arr in self.guards:
            if t.__dict__.get("_data") is not arr:
                return False
        for t, g in self.grad_guards:
            if t.__dict__.get("grad") is not g:
                return False
        for m, names, values in self.module_flags:
            d = m.__dict__
            for k, v in zip(names, values):
                if d.get(k, _MISSING) != v:
                    return False
        return True

    def run(self, flat_inputs, wrap):
        for pos, buf in self.inputs:
            np.copyto(buf, flat_inputs[pos]._data)
        for arr, snap in self.restore:
            np.copyto(arr, snap)
        for step in self.program:
            step()
        for pos, buf in self.copy_back:
            np.copyto(flat_inputs[pos]._data, buf)
        return _build(self.output, wrap)


class _Out:
    """A returned tensor: the same tensor object, or a new one holding a copy."""

    __slots__ = ("tensor", "array", "requires_grad")

    def __init__(self, tensor=None, array=None, requires_grad=False):
        self.tensor, self.array, self.requires_grad = tensor, array, requires_grad


def _build(x, wrap):
    t = type(x)
    if t is _Out:
        if x.tensor is not None:
            return x.tensor
        out = wrap(x.array.copy())
        if x.requires_grad:
            out._rg = True
        return out
    if t is tuple or t is list:
        return t(_build(v, wrap) for v in x)
    if t is dict:
        return {k: _build(v, wrap) for k, v in x.items()}
    return x


_MISSING = object()
_SIMPLE = (bool, int, float, str, type(None))


def _simple_attrs(obj) -> tuple:
    d = obj.__dict__
    names = tuple(k for k, v in d.items() if type(v) in _SIMPLE)
    return names, tuple(d[k] for k in names)


def _steps(program, calls):
    """Close a run of tape calls into one program step."""
    if calls:
        run = tuple(calls)

        def run_calls():
            for c in run:
                c()
        program.append(run_calls)
        calls.clear()


class Recorder:
    """Records one call of a function; ``finish`` gives a :class:`Tape` or a refusal."""

    def __init__(self, tensor_cls, module_cls, opaque_types, fullgraph=False,
                 backward_hosts=()):
        self.paused = False
        self.backward_ran = False  # whether a backward pass ran while recording
        self._backward_hosts = backward_hosts  # modules whose run_backward is watched
        self.fullgraph = fullgraph
        self.refusal = None
        self._tensor_cls = tensor_cls
        self._module_cls = module_cls
        self._opaque_types = opaque_types
        self.desc = []           # what the tape does, comparable between recordings
        self._calls = []         # the current run of tape calls
        self.tape = Tape()
        self._origin = {}        # id(root array) -> its origin in desc terms
        self._roots = []         # the roots named in _origin (kept alive)
        self._written = set()    # id(root) of every root the tape writes into
        self._persistent = {}    # id(root) -> (tensor, its array) for the guards
        self._constants = {}     # id(root) -> (root, snapshot at first sight)
        self._n_out = 0
        self._used = set()       # id(root) of every root a call reads or writes
        self._bound = set()      # id() of the values the bindings set
        self._bound_values = []  # (kept alive)
        self._input_pairs = []   # (input tensor, the caller's array)
        self._reach = None       # the Reach log (kept after the recording)
        self.other_device = None  # the array module of a CUDA tensor it reached

    # -- origins ---------------------------------------------------------------------------
    def _describe(self, x):
        if isinstance(x, _ndarray):
            root = _root(x)
            key = id(root)
            self._used.add(key)
            origin = self._origin.get(key)
            if origin is None:
                if not self.paused:
                    self.refuse("an array computed outside the recording (by code that "
                                "took a plain view of a traced array) is used")
                origin = ("c", len(self._constants))
                self._origin[key] = origin
                self._roots.append(root)
                self._constants[key] = (root, np.array(root, copy=True))
            return (origin, _address(x) - _address(root), x.shape, x.strides, x.dtype.str)
        t = type(x)
        if t is tuple or t is list:
            return (t.__name__, tuple(self._describe(v) for v in x))
        if t is dict:
            return ("dict", tuple((k, self._describe(v)) for k, v in x.items()))
        if t is float:
            return ("f", repr(x))
        if isinstance(x, np.generic):
            return ("g", x.dtype.str, repr(x.item()))
        if isinstance(x, (bool, int, str, type(None), slice, type(Ellipsis), np.dtype, type)):
            return x
        if callable(x):
            return ("fn", getattr(x, "__qualname__", None) or getattr(x, "__name__", None)
                    or repr(type(x)))
        return ("obj", type(x).__name__, id(x))

    def constant(self, arr, scratch=False):
        """``arr``, just made by NumPy from no traced array, as a constant of the tape
        (its contents now are what a replay starts from) or, when ``scratch``, as a
        buffer the tape fills; traced from now on, so that what is written into it
        and computed from it is seen."""
        key = id(arr)
        if scratch:
            self._origin[key] = ("o", self._n_out)
            self._n_out += 1
        else:
            self._origin[key] = ("c", len(self._constants))
            self._constants[key] = (arr, arr.copy())
        self._roots.append(arr)
        return arr.view(Traced)

    def _register(self, arrays, origin_prefix):
        for a in arrays:
            root = _root(a)
            key = id(root)
            if key not in self._origin:
                self._origin[key] = (origin_prefix, self._n_out)
                self._roots.append(root)
                self._n_out += 1

    # -- what the traced arrays report ----------------------------------------------------
    def call(self, fn, args, kwargs, writes=(), fresh=False, out=None, name=None):
        """Append ``fn(*args, **kwargs)`` (already computed) to the tape. ``fresh``:
        the arrays of ``writes`` were just made by this call (they become outputs)."""
        label = name or getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))
        ins = self._describe(args), self._describe({k: v for k, v in kwargs.items()
                                                    if k != "out"})
        # an array first seen as this call's target (np.empty then out=) is scratch
        # that the tape fills: an output, not a constant (one read first was described
        # above, with its contents)
        self._register(writes, "o")
        if not fresh:
            for w in writes:
                self._written.add(id(_root(w)))
        outs = self._describe(kwargs.get("out") if out is None else out)
        self.desc.append((label, ins, outs))
        if out is not None:
            self._calls.append(functools.partial(fn, out))
        else:
            self._calls.append(_ufunc_call(fn, args, kwargs) or
                               functools.partial(fn, *args, **kwargs))

    def produced(self, fn, args, kwargs, result):
        """A call outside the ufunc protocol made ``result``: new memory is refilled by
        the tape at replay; a view of an operand needs nothing."""
        results = result if type(result) in (tuple, list) else (result,)
        operand_roots = {id(_root(a)) for a in _arrays((args, kwargs), [])}
        fresh = []
        converted = []
        for r in results:
            if isinstance(r, np.generic) or (not isinstance(r, _ndarray) and
                                             isinstance(r, (int, float, bool))):
                r = np.asarray(r)  # a value read back later is a host read, not a constant
            if isinstance(r, _ndarray) and id(_root(r)) not in operand_roots:
                fresh.append(r)
            converted.append(r)
        if fresh:
            self.call(functools.partial(_refill, fn, args, kwargs, len(results) > 1
                                        or type(result) in (tuple, list)), (), {},
                      writes=tuple(fresh), fresh=True, out=tuple(converted),
                      name=getattr(fn, "__qualname__", getattr(fn, "__name__", "call")))
            self.desc[-1] = (self.desc[-1][0], (self._describe(args),
                                                self._describe(kwargs)), self.desc[-1][2])
        elif result is None:  # an in-place function (copyto, put_along_axis, ...)
            self.call(fn, args, kwargs, writes=tuple(_arrays(args[:1], [])))
        if type(result) in (tuple, list):
            return type(result)(_traced(r) for r in converted)
        return _traced(converted[0])

    def refuse(self, why: str):
        where, _called = _user_line()
        if self.refusal is None:
            self.refusal = f"{why} (at {where})"
        if self.fullgraph:
            raise Refused(f"gc.compile(fullgraph=True): {why} (at {where}); a replay "
                          "cannot repeat it")

    # -- opaque calls -------------------------------------------------------------------
    def opaque(self, method, args, kwargs):
        _steps(self.tape.program, self._calls)
        self._sync()
        self.desc.append(("opaque", self._describe(method), self._describe(args),
                          self._describe(kwargs)))
        self.paused = True
        try:
            result = method(*args, **kwargs)
        finally:
            self.paused = False
        self.tape.program.append(functools.partial(method, *args, **kwargs))
        self._after_opaque = self._bindings()
        return result

    def _bindings(self):
        return [(_norm(t.__dict__.get("_data", _MISSING)), t.__dict__.get("grad", _MISSING))
                for t in self._watched]

    def _sync(self):
        """Record the bindings (``_data``, ``.grad``) changed since the last opaque call
        (or the start), to set again at this point of a replay."""
        now = self._bindings()
        changes = []
        for t, (d0, g0), (d1, g1) in zip(self._watched, self._after_opaque, now):
            if d1 is not d0:
                changes.append((t, "_data", d1))
            if g1 is not g0:
                changes.append((t, "grad", g1))
        changes.sort(key=lambda c: (id(c[0]), c[1]))
        if changes:
            fixed = [(t, a, _real(v) if type(v) is Traced else v) for t, a, v in changes]
            self._bound.update(id(v) for _t, _a, v in fixed)
            self._bound_values.extend(v for _t, _a, v in fixed)
            self.tape.program.append(functools.partial(_bind, fixed))
            self.desc.append(("bind", tuple((id(t), a,
                                             self._describe_bound(v)) for t, a, v in fixed)))

    # -- start and finish ------------------------------------------------------------------
    def start(self, flat_inputs):
        global _active
        if _active is not None:
            raise RuntimeError("gc.compile: a compiled function is already recording")
        tensor_cls = self._tensor_cls
        # the modules, optimizers and schedulers: registered as they were made
        self._modules = _live.live(self._module_cls)
        opaque = _live.live(self._opaque_types)
        # the other tensors: watched as the function reaches them (_reached)
        self._watched = []
        self._after_opaque = []
        self._swapped = []
        for k, t in enumerate(flat_inputs):
            d = t._data
            buf = np.array(d, copy=True, order="K")
            self._origin[id(buf)] = ("i", k)
            self._roots.append(buf)
            self.tape.inputs.append((k, buf))
            self._input_pairs.append((t, d))
            t._data = buf.view(Traced)
        self._module_attrs = [_simple_attrs(m) for m in self._modules]
        self._installed = []
        for obj in opaque:
            for name in ("step", "zero_grad"):
                if hasattr(obj, name):
                    self._install_opaque(obj, name)
        self._cpu = backend.device("cpu").math
        self._patched = []  # (namespace dict, name, value before or _MISSING)
        # `type(a) is F.ndarray` is how the engine and the ops know a gradient array
        # they own: traced arrays are the CPU namespace's arrays while recording
        patches = [(self._cpu.__dict__, "ndarray", Traced),
                   (self._cpu.__dict__, "owns", _owns),
                   (self._cpu.__dict__, "broadcast_to", _broadcast_to)]
        for name, value in (("asarray", _asarray), ("asanyarray", _asarray),
                            ("ascontiguousarray", _ascontiguousarray), ("array", _array)):
            patches += [(self._cpu.__dict__, name, value), (np.__dict__, name, value)]
        for name in _CREATORS:  # what they make is a constant of the tape, not an escape
            value = _creator(getattr(np, name))
            patches += [(self._cpu.__dict__, name, value), (np.__dict__, name, value)]
        for host in self._backward_hosts:
            patches.append((host.__dict__, "run_backward",
                            _watching_backward(host.run_backward, self)))
        for d, name, value in patches:
            self._patched.append((d, name, d.get(name, _MISSING)))
            d[name] = value
        backend.set_capture_hooks(_host_array_read, self._check_range, _host_computed)
        _random._rng = _RandomProxy(_random._rng, _random.seed_generator)
        _random._wrap_stream = _generator_proxy
        self._log = Reach.install(tensor_cls, flat_inputs, self._reached)
        if self._log is None:
            self.stop(flat_inputs)
            raise RuntimeError(f"gc.compile: {unwatchable(tensor_cls) or 'a recording'} "
                               "(is another recording running?)")
        _active = self

    def _reached(self, t, d, g):
        """The function reached ``t``, a tensor that existed before, for the first time
        (``d``, ``g``: its array and gradient then): watched from now on, its array
        traced (views of the memory it shares with the tape from now on)."""
        self._watched.append(t)
        self._after_opaque.append((_norm(d) if d is not _MISSING else d, g))
        if type(d) is _ndarray:
            root = _root(d)
            key = id(root)
            if key not in self._origin:  # named by identity: the same in each recording
                self._origin[key] = ("p", key)
                self._roots.append(root)
                self._persistent[key] = (t, d)
            self._swapped.append((t, d))
            t.__dict__["_data"] = d.view(Traced)
        elif d is not None and d is not _MISSING and type(d) is not Traced and \
                not isinstance(d, _ndarray):
            # an array of another device (CUDA): not a step a CPU recording can hold
            self.other_device = backend.math_of(d).xp
            if self.refusal is None:
                self.refusal = "it reaches a tensor on another device than the CPU"

    def _install_opaque(self, obj, name):
        method = getattr(obj, name)
        rec = self

        def opaque(*args, **kwargs):
            if _active is rec and not rec.paused:
                return rec.opaque(method, args, kwargs)
            return method(*args, **kwargs)

        obj.__dict__[name] = opaque
        self._installed.append((obj, name))

    def _check_range(self, idx, low, high, error) -> bool:
        if type(idx) is not Traced or self.paused:
            return False
        p = idx.view(_ndarray)
        backend.check_range(p, low, high, error)  # now, as eagerly
        self.call(functools.partial(backend.check_range, p, low, high, error), (), {},
                  name="check_range")
        return True

    def stop(self, flat_inputs):
        """Undo what start did (also after an exception)."""
        global _active
        _active = None
        log, self._log = getattr(self, "_log", None), None
        if log is not None:
            log.remove()
        if isinstance(_random._rng, _RandomProxy):
            _random._rng = _random._rng._real
        _random._wrap_stream = None
        backend.set_capture_hooks(None, None)
        for d, name, value in reversed(self._patched):
            if value is _MISSING:
                d.pop(name, None)
            else:
                d[name] = value
        for obj, name in self._installed:
            obj.__dict__.pop(name, None)
        for t, d in self._input_pairs:
            t._data = d
        for t, d in self._swapped:
            if type(t.__dict__.get("_data")) is Traced and _root(t._data) is _root(d) \
                    and t._data.shape == d.shape and _address(t._data) == _address(d):
                t._data = d
        # everything else made while recording (new .grad tensors, optimizer state, the
        # outputs) holds plain arrays from now on
        for o in (log.written if log is not None else ()):
            d = o.__dict__.get("_data")
            if type(d) is Traced:
                o._data = _real(d)
        self._reach = log  # (what the function made: the outputs ask)

    def finish(self, flat_inputs, result):
        """The tape of this recording (None when refused; ``self.refusal`` says why)."""
        _steps(self.tape.program, self._calls)
        self._sync()
        if self.refusal is not None:
            return None
        for m, (names, values) in zip(self._modules, self._module_attrs):
            now_names, now_values = _simple_attrs(m)
            if (now_names, now_values) != (names, values):
                changed = [k for k in set(names) | set(now_names)
                           if m.__dict__.get(k, _MISSING) != dict(zip(names, values)).get(
                               k, _MISSING)]
                self.refusal = (f"the function changes the attribute(s) {changed} of a "
                                f"{type(m).__name__}, which a replay would not")
                return None
        tape = self.tape
        for key, (t, arr) in self._persistent.items():
            if key in self._used:
                tape.guards.append((t, arr))
                owner = _grad_owner(t, self._watched)
                if owner is not None:
                    tape.grad_guards.append((owner, t))
        tape.restore = [(root, snap) for key, (root, snap) in self._constants.items()
                        if key in self._written]
        tape.copy_back = [(k, buf) for k, buf in tape.inputs if id(buf) in self._written]
        for k, buf in tape.copy_back:  # as eagerly, the caller's tensor took the writes
            np.copyto(flat_inputs[k]._data, buf)
        read = self._modules_read()
        tape.module_flags = [(m, n, v) for m, (n, v) in zip(self._modules, self._module_attrs)
                             if n and id(m) in read]
        self.desc.append(("return", self._describe_output(result)))
        tape.output = self._outputs(result)
        if self.refusal is not None:
            return None
        self.desc.append(("constants", tuple(
            (snap.shape, snap.dtype.str, hashlib.blake2b(snap.tobytes()).hexdigest())
            for _root_arr, snap in self._constants.values())))
        return tape

    def _outputs(self, x):
        t = type(x)
        if isinstance(x, self._tensor_cls):
            if id(x) in self._bound or self._made_before(x):
                return _Out(tensor=x)  # state the caller sees anyway (a parameter, .grad)
            if x.grad_fn is not None and not self.backward_ran:
                self.refusal = ("it returns a tensor with a graph for a later backward, "
                                "and a replay builds no graph (call backward inside the "
                                "compiled function, or compile it under no_grad)")
            arr = x._data
            # the caller keeps this call's result: the tape's buffer stays private
            x._data = arr.copy()
            return _Out(array=arr, requires_grad=x._rg)
        if t is tuple or t is list:
            return t(self._outputs(v) for v in x)
        if t is dict:
            return {k: self._outputs(v) for k, v in x.items()}
        if isinstance(x, _ndarray):
            self.refusal = "the function returns a NumPy array"
        return x

    def _made_before(self, x) -> bool:
        """Whether the returned tensor ``x`` existed before the call (a parameter, a
        global) and is not an argument."""
        log = self._reach
        return log is not None and log.made_before(x) and \
            not any(x is t for t, _d in self._input_pairs)

    def _modules_read(self) -> set:
        """id() of the modules whose attributes the tape may depend on: those holding a
        parameter or buffer the tape reads, and everything below them (a Dropout has
        none, its parent does); other live modules (another model) are not guarded."""
        used = self._used
        found = set()
        for m in self._modules:
            if id(m) in found:
                continue
            tensors = list(m.parameters()) + list(m.buffers())
            if any(id(_root(t._data)) in used for t in tensors
                   if isinstance(t._data, _ndarray)):
                found.update(id(sub) for sub in m.modules())
        return found

    def _describe_output(self, x):
        if isinstance(x, self._tensor_cls):
            return ("tensor", self._describe(x._data))
        t = type(x)
        if t is tuple or t is list:
            return (t.__name__, tuple(self._describe_output(v) for v in x))
        if t is dict:
            return ("dict", tuple((k, self._describe_output(v)) for k, v in x.items()))
        return self._describe(x)


    def _describe_bound(self, v):
        if isinstance(v, self._tensor_cls):
            return ("tensor", self._describe(v._data))
        if isinstance(v, _ndarray):
            return self._describe(v)
        return None if v is _MISSING else ("obj", type(v).__name__)


def _host_computed(fn, *args):
    """``fn(*args)``, a namespace function that reads its input's values on the host to
    compute (erf of a few elements, through the C library one value at a time), as one
    tape call: computed on the plain arrays, its result refilled at each replay."""
    rec = _active
    pargs = _plain(args)
    if rec is None or rec.paused:
        return fn(*pargs)
    rec.paused = True
    try:
        result = fn(*pargs)
    finally:
        rec.paused = False
    return rec.produced(fn, pargs, {}, result)


def _watching_backward(run_backward, rec):
    def run(*args, **kwargs):
        rec.backward_ran = True
        return run_backward(*args, **kwargs)
    return run


def _grad_owner(g, watched):
    for t in watched:
        if t.__dict__.get("grad") is g:
            return t
    return None


def _norm(x):
    return _real(x) if type(x) is Traced else x


def _bind(changes):
    for t, attr, value in changes:
        if value is _MISSING:
            t.__dict__.pop(attr, None)
        else:
            t.__dict__[attr] = value


_PY_SCALARS = (float, int, bool)


def _ufunc_call(fn, args, kwargs):
    """A ufunc's call as a replay makes it, or None where it takes other keywords than
    ``out``: ``out`` passed by position, and each Python scalar made a NumPy scalar of
    the dtype the ufunc's loop takes it as (NumPy parses keywords and converts Python
    scalars on every call, which costs more than the loop itself on a small array).
    The scalars are converted only where the converted call gives the recorded result
    bit for bit (its outputs hold it now; an output that is also an input was
    overwritten, and such a call keeps its Python scalars)."""
    ufunc = getattr(fn, "__self__", None)
    if type(ufunc) is not np.ufunc or getattr(fn, "__name__", "") != "__call__" or \
            kwargs.keys() != {"out"}:
        return None
    outs = kwargs["out"]
    if len(args) != ufunc.nin or len(outs) != ufunc.nout:
        return None
    if any(type(a) in _PY_SCALARS for a in args):
        try:
            loop = ufunc.resolve_dtypes(
                tuple(type(a) if type(a) in _PY_SCALARS else a.dtype for a in args)
                + (None,) * ufunc.nout)
            typed = tuple(loop[i].type(a) if type(a) in _PY_SCALARS else a
                          for i, a in enumerate(args))
            with np.errstate(all="ignore"):
                again = ufunc(*typed)
        except Exception:  # noqa: BLE001 - any doubt: the call as recorded
            again = None
        if again is not None:
            again = again if ufunc.nout > 1 else (again,)
            if all(np.asarray(r).dtype == o.dtype and np.asarray(r).shape == o.shape and
                   np.ascontiguousarray(r).tobytes() == np.ascontiguousarray(o).tobytes()
                   for r, o in zip(again, outs)):  # (bit for bit: signed zeros, NaNs)
                args = typed
    if ufunc is np.maximum or ufunc is np.minimum:  # (NumPy 2.4 deprecates their
        return functools.partial(ufunc, *args, out=outs)  # positional out)
    return functools.partial(ufunc, *args, *outs)


def _refill(fn, args, kwargs, many, out):
    result = fn(*args, **kwargs)
    if many:
        for buf, r in zip(out, result):
            np.copyto(buf, r)
    else:
        np.copyto(out[0], result)


def _real(arr):
    """The plain array behind a Traced one (its base when it is the whole of it)."""
    b = arr.base
    if type(b) is _ndarray and b.shape == arr.shape and b.strides == arr.strides and \
            b.dtype == arr.dtype and _address(b) == _address(arr):
        return b
    return arr.view(_ndarray)


def _owns(arr) -> bool:
    if type(arr) is Traced:
        arr = _real(arr)
    return arr.base is None and arr.flags.writeable


_np_asarray = np.asarray
_np_ascontiguousarray = np.ascontiguousarray


def _asarray(data, dtype=None, *args, **kwargs):
    """``asarray`` while recording (NumPy's and the CPU namespace's): a traced array
    stays traced (NumPy's would hand back a plain view, and what is computed from that
    would escape the tape)."""
    if type(data) is Traced:
        return data if dtype is None or data.dtype == dtype else data.astype(dtype)
    return _np_asarray(data, dtype, *args, **kwargs)


_np_array = np.array
_np_broadcast_to = np.broadcast_to
# NumPy's functions that make arrays from no array: patched while recording, so that
# what they make is known as a constant of the tape
_CREATORS = ("zeros", "ones", "empty", "full", "arange", "eye", "identity", "linspace")


def _creator(fn):
    scratch = fn.__name__ == "empty"  # no contents: what the tape writes into it

    def create(*args, **kwargs):
        out = fn(*args, **kwargs)
        rec = _active
        if type(out) is _ndarray and rec is not None and not rec.paused:
            return rec.constant(out, scratch)
        return out
    create.__name__ = fn.__name__
    return create


def _array(data, dtype=None, *args, copy=True, **kwargs):
    if type(data) is Traced:
        if not copy and (dtype is None or data.dtype == dtype):
            return data
        return data.astype(data.dtype if dtype is None else dtype)
    out = _np_array(data, dtype, *args, copy=copy, **kwargs)
    rec = _active
    if rec is not None and not rec.paused and type(out) is _ndarray:
        if out is data and id(_root(out)) in rec._origin:
            # no copy of a plain view of a traced array (NumPy's own functions, such as
            # broadcast_to, call np.array(view, copy=None) on the views their dispatch
            # hands them): the same memory, already known to the tape
            return out
        return rec.constant(out)  # from Python data or a plain array: a constant
    return out


def _broadcast_to(arr, shape):
    if type(arr) is Traced:
        return np.broadcast_to(arr, shape)
    return _np_broadcast_to(arr, shape)


def _ascontiguousarray(data, dtype=None, **kwargs):
    if type(data) is Traced:
        if data.flags.c_contiguous and (dtype is None or data.dtype == dtype):
            return data
        return data.astype(data.dtype if dtype is None else dtype, order="C")
    return _np_ascontiguousarray(data, dtype=dtype, **kwargs)


def _host_array_read(arr):
    if type(arr) is Traced:
        _host_read(arr, "reading values to the host (printing, .numpy(), .tolist())")

