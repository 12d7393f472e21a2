"""``gc.compile``: record what one call of a training step computes, replay it after.

The first call of a compiled function with a given signature (its tensors' shapes,
dtypes, devices and ``requires_grad``, its other arguments' values, the grad mode) runs
eagerly and records the array calls it makes (:mod:`.trace`); the second does the same,
and when both recordings agree, the later calls replay the tape: the array calls alone,
into the same buffers, with the optimizers' ``step``/``zero_grad`` (and schedulers'
``step``) run as themselves at their points, so that the learning rate, step counts
and state are eager's.

What a replay cannot repeat is refused, never frozen: a read of values by the host
(``.item()``, ``bool()`` of a tensor, printing), Python attributes of modules that the
function changes, values that differ between the two recordings (a Python number the
function reads that changed, randomness not drawn from gradcore's generator) make the
function run eagerly for that signature, with a warning that says why and where
(``fullgraph=True`` raises instead). Guards checked before each replay (the arrays of
the tensors the tape reads, the modules' attributes) send a changed state back to
recording. On CUDA the step is captured into one CUDA graph instead (:mod:`.cuda`).
"""

from __future__ import annotations

import functools
import warnings
import weakref

from .. import tensor as _tensor_module
from ..autograd import functional as _functional
from ..autograd import grad_mode
from ..autograd.tensor_base import Tensor, _wrap
from ..nn.modules import Module
from ..optim.lr_scheduler import LRScheduler
from ..optim.optimizer import Optimizer
from . import cuda, trace
from .trace import Refused

__all__ = ["compile", "CompiledFunction", "OptimizedModule", "Refused", "cache_size_limit",
           "is_compiling"]

#: Signatures a compiled function keeps tapes for (PyTorch's ``cache_size_limit``);
#: past it, new signatures run eagerly, with a warning.
cache_size_limit = 8
#: Recordings of one signature that may disagree before it runs eagerly for good.
_RECORD_ATTEMPTS = 4
#: Tapes kept for one signature (states its guards tell apart: train and eval, ...).
_TAPES_PER_SIGNATURE = 4
#: Every compiled function alive (what reset() clears).
_compiled: weakref.WeakSet = weakref.WeakSet()


def reset() -> None:
    """Forget what every compiled function recorded (its tapes, its CUDA graphs, the
    signatures it ran eagerly for good): their next calls record again, as after
    ``torch._dynamo.reset()``."""
    for fn in list(_compiled):
        fn._cache.clear()
        fn.__dict__.pop("_limit_warned", None)


def is_compiling() -> bool:
    """True while a compiled function records, or is captured into a CUDA graph
    (``torch.compiler.is_compiling``)."""
    return trace.active() is not None or cuda.capturing is not None


def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend="inductor",
            mode=None, options=None, disable: bool = False):
    """Compile a function or a module: PyTorch's ``torch.compile``, as a call or a
    decorator (``@gc.compile`` or ``@gc.compile(fullgraph=True)``).

    A function is recorded and replayed (see :mod:`gradcore.capture`). A module comes
    back wrapped (``OptimizedModule``, its original in ``_orig_mod`` as in PyTorch):
    its forward is captured where the graph is not built (under ``no_grad``) and runs
    eagerly otherwise, or as part of a compiled step that calls it. ``dynamic``,
    ``backend``, ``mode`` and ``options`` are accepted for PyTorch's programs and change
    nothing; ``disable=True`` returns the model as it is.
    """
    if model is None:
        return functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic,
                                 backend=backend, mode=mode, options=options,
                                 disable=disable)
    if disable:
        return model
    if isinstance(model, Module):
        return OptimizedModule(model, fullgraph=fullgraph)
    if not callable(model):
        raise TypeError(f"gc.compile expects a callable or a Module, got "
                        f"{type(model).__name__}")
    return CompiledFunction(model, fullgraph=fullgraph)


def _flatten(x, out):
    return trace.leaves(x, Tensor, out)


def _signature(x):
    if isinstance(x, Tensor):
        d = x._data
        return ("T", type(x), d.shape, d.dtype.str, type(d), x._rg)
    t = type(x)
    if t is tuple or t is list:
        return (t, tuple(_signature(v) for v in x))
    if t is dict:
        return ("dict", tuple((k, _signature(v)) for k, v in x.items()))
    if t in (bool, int, float, str, type(None)):
        return (t, x)
    return ("id", id(x))


class _Entry:
    """What a compiled function knows of one signature."""

    __slots__ = ("tapes", "pending", "attempts", "eager", "graph", "graph_pending", "warm",
                 "cuda", "xp")

    def __init__(self):
        self.tapes = []      # ready tapes (their guards choose)
        self.pending = None  # (tape, desc) of the last recording, waiting to be confirmed
        self.attempts = 0
        self.eager = None    # why this signature runs eagerly for good, or None
        self.graph = None          # CUDA: the confirmed capture (a cuda.GraphStep)
        self.graph_pending = None  # CUDA: the last capture, waiting for the next to agree
        self.warm = False          # CUDA: whether the eager first call has run
        self.cuda = None           # whether the signature's calls are CUDA steps
        self.xp = None             # CUDA: the array module of a step without CUDA arguments


class CompiledFunction:
    """A function compiled by :func:`compile`; call it as the function."""

    def __init__(self, fn, fullgraph=False):
        functools.update_wrapper(self, fn)
        self._fn = fn
        self.fullgraph = fullgraph
        self._cache: dict = {}
        self.replays = 0     # how many calls replayed (read by the tests and benchmarks)
        self.recordings = 0
        _compiled.add(self)

    def __get__(self, obj, objtype=None):  # a compiled method binds as a function does
        return self if obj is None else functools.partial(self, obj)

    def _warn(self, why, stacklevel=3):
        if self.fullgraph:
            raise Refused(f"gc.compile(fullgraph=True): {why}")
        warnings.warn(f"gc.compile: {getattr(self._fn, '__qualname__', self._fn)} runs "
                      f"eagerly: {why}", stacklevel=stacklevel)

    def __call__(self, *args, **kwargs):
        if trace.active() is not None or cuda.open_sessions:
            # called inside another recording or capture (gc.compile's or a
            # gc.cuda.graph by hand): part of it
            return self._fn(*args, **kwargs)
        key = (_signature(args), _signature(kwargs), grad_mode.state.enabled)
        entry = self._cache.get(key)
        if entry is None:
            if len(self._cache) >= cache_size_limit:
                if not getattr(self, "_limit_warned", False):
                    self._limit_warned = True
                    self._warn(f"it was compiled for {cache_size_limit} signatures "
                               "(gc.capture.cache_size_limit); new ones run eagerly")
                return self._fn(*args, **kwargs)
            entry = self._cache[key] = _Entry()
        if entry.eager is not None:
            return self._fn(*args, **kwargs)
        flat = _flatten((args, kwargs), [])
        if entry.cuda is None:
            entry.cuda = cuda.on_cuda(flat)
        if entry.cuda:
            return self._call_cuda(entry, flat, args, kwargs)
        for tape in entry.tapes:
            if tape.guards_hold():
                self.replays += 1
                return tape.run(flat, _wrap)
        why = self._cannot_record(flat)
        if why is not None:
            entry.eager = why
            self._warn(why)
            return self._fn(*args, **kwargs)
        return self._record(entry, flat, args, kwargs)

    @staticmethod
    def _cannot_record(flat):
        for t in flat:
            if t._rg:
                return "an argument requires grad (its .grad would not be replayed)"
        return trace.unwatchable(Tensor)

    def _call_cuda(self, entry, flat, args, kwargs):
        """A call on CUDA tensors: eager first (what the step makes once is made), then
        captured into a CUDA graph; kept once two captures agree (:mod:`.cuda`)."""
        step = entry.graph
        if step is not None:
            if cuda.guards_hold(step):
                self.replays += 1
                return step.run(flat, _wrap)
            entry.graph = None  # the state it was captured from changed: capture again
        if not entry.warm:
            entry.warm = True
            return self._fn(*args, **kwargs)
        why = self._cannot_record(flat)
        if why is None:
            try:
                new = cuda.capture(self._fn, args, kwargs, flat, Tensor, Module,
                                   (Optimizer, LRScheduler), (_tensor_module, _functional),
                                   entry.xp)
            except cuda.CaptureFailed as exc:
                why = str(exc)
        if why is not None:
            entry.eager = why
            self._warn(why, 4)
            return self._fn(*args, **kwargs)
        self.recordings += 1
        earlier = entry.graph_pending
        if earlier is None:
            entry.graph_pending = new
            return new.run(flat, _wrap)
        same, out = cuda.agree(earlier, new, flat, _wrap)
        if same:
            entry.graph, entry.graph_pending, entry.attempts = new, None, 0
            return out
        entry.attempts += 1
        if entry.attempts >= _RECORD_ATTEMPTS:
            entry.eager = (f"{entry.attempts + 1} CUDA graphs of consecutive calls leave "
                           "different values: a value it reads changes between calls (a "
                           "Python number, or a step count or learning rate kept on the "
                           "host)")
            entry.graph_pending = None
            self._warn(entry.eager, 4)
        else:
            entry.graph_pending = new
        return out

    def _record(self, entry, flat, args, kwargs):
        rec = trace.Recorder(Tensor, Module, (Optimizer, LRScheduler), self.fullgraph,
                             backward_hosts=(_tensor_module, _functional))
        rec.start(flat)
        try:
            result = self._fn(*args, **kwargs)
        finally:
            rec.stop(flat)
        if rec.other_device is not None:
            # a step whose arguments did not tell its device reached a CUDA tensor: a
            # CUDA step, whose first call (this one, eager for the CUDA work) is done
            entry.cuda, entry.xp, entry.warm = True, rec.other_device, True
            return result
        self.recordings += 1
        tape = rec.finish(flat, result)
        if tape is None:
            entry.eager = rec.refusal
            self._warn(rec.refusal)
            return result
        desc = rec.desc
        pending = entry.pending
        if pending is not None and pending[1] == desc:
            if len(entry.tapes) >= _TAPES_PER_SIGNATURE:  # (guards that keep failing)
                entry.tapes.pop(0)
            entry.tapes.append(tape)
            entry.pending = None
            entry.attempts = 0
        else:
            entry.attempts += 1
            if entry.attempts >= _RECORD_ATTEMPTS:
                why = _difference(pending[1], desc) if pending is not None else "unknown"
                entry.eager = (f"{entry.attempts} recordings in a row differ ({why}): a value "
                               "it reads changes between calls")
                entry.pending = None
                self._warn(entry.eager)
            else:
                entry.pending = (tape, desc)
        return result


def _difference(a, b) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"call {i} of the tape: {x[0]!s} differs"
    return f"{len(a)} against {len(b)} calls"


class OptimizedModule(Module):
    """A module compiled by :func:`compile`: ``_orig_mod`` is the module itself (its
    parameters are the same tensors; its ``state_dict`` keys gain the ``_orig_mod.``
    prefix, as PyTorch's do)."""

    def __init__(self, mod, fullgraph=False):
        super().__init__()
        self._orig_mod = mod
        self.__dict__["_compiled_forward"] = CompiledFunction(mod, fullgraph=fullgraph)

    def __call__(self, *args, **kwargs):
        if grad_mode.state.enabled or trace.active() is not None or cuda.open_sessions:
            return self._orig_mod(*args, **kwargs)
        return self.__dict__["_compiled_forward"](*args, **kwargs)

    def forward(self, *args, **kwargs):
        return self(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.__dict__["_modules"]["_orig_mod"], name)
