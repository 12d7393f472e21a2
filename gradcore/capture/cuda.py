"""``gc.compile`` on CUDA: a training step captured into one CUDA graph, then launched.

A step on CUDA tensors runs eagerly on its first call (what it makes once, optimizer
state and ``.grad``, is made then, and the kernels are compiled). The next call runs the
function's Python once more, on a non-blocking stream under CuPy's stream capture
(``Stream.begin_capture``): its kernels are recorded into a graph, not run, with every
allocation served by a memory pool of the graph's own (``cupy.cuda.MemoryPool``,
through ``using_allocator``), so that a launch allocates nothing and nothing else is
handed the graph's memory. The arguments' tensors are swapped for input buffers from
that pool; a launch copies the call's arguments into them first.

Two captures of consecutive calls must agree before the graph is kept: launched from the
same state (the memory of the CUDA tensors the step reached, and the device state the
components name, is copied before and put back between the two), they must leave the
same values, bit for bit, in the parameters, the optimizer state, the gradients and the
results. A Python value the function reads that changed
between the calls (a learning rate not on the device, a step count, a global) shows as
a difference, and is never baked in silently. Guards checked before each launch (the
tensors' arrays and ``.grad`` the graph reads, the modules' ``training`` flags, the
optimizers' options) send a changed state back to capturing.

What CuPy refuses during a capture (a read of values by the host, a copy from the host,
its cuBLAS calls, a synchronization) makes the capture fail: the function runs
eagerly, with a warning naming the refusal and the line (``fullgraph=True`` raises).
"""

from __future__ import annotations

import os
import traceback

from .. import _live, backend
from ..kernels import gemm
from .trace import _MISSING, Reach, _bind, _build, _Out

__all__ = ["GraphStep", "CaptureFailed", "on_cuda", "capture", "launch", "agree",
           "guards_hold", "Session", "begin", "end", "refusal", "watch_steps",
           "unwatch_steps", "pend"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: The function gc.compile is capturing now (None outside such a capture:
#: ``gc.compiler.is_compiling``)
capturing = None


class CaptureFailed(Exception):
    """A capture that CuPy or CUDA refused; ``str()`` says what and where."""


def on_cuda(flat) -> bool:
    """Whether a call with the tensors ``flat`` is a CUDA step: one of its arguments'
    tensors lives on a CUDA device. (A step whose arguments tell nothing, one that takes
    no tensor, is recorded as a CPU step first, and found a CUDA step when it reaches a
    CUDA tensor: ``Recorder.other_device``.)"""
    return any(_is_cuda(t._data) for t in flat)


class GraphStep:
    """One captured call: its graph, stream and pool, and what a launch does around it."""

    __slots__ = ("xp", "graph", "stream", "pool", "inputs", "copy_back", "output",
                 "changes", "guards", "flags", "options", "checks", "roots", "host_work",
                 "optimizers")

    def run(self, flat, wrap):
        """Launch for a call with arguments ``flat``: copy them in, launch, set the
        bindings the function made, and return its results (new tensors)."""
        out = launch(self, flat, wrap)
        _bind(self.changes)
        pend(self.checks)
        return out


def pend(checks) -> None:
    """After a launch: the range checks its graph computes (captured with it), left to
    be read at the next read from the device (``backend.check_range``)."""
    pending = backend._pending_checks
    for check in checks:
        if not any(check is p for p in pending):
            pending.append(check)


def _is_cuda(arr) -> bool:
    return arr is not _MISSING and arr is not None and \
        type(arr).__module__.startswith("cupy")


def _root(arr):
    b = arr.base
    return arr if b is None else b


def _on_device(binding) -> bool:
    d, g = binding
    return _is_cuda(d) or _is_cuda(getattr(g, "_data", None))


def _bindings(tensors):
    return [(t.__dict__.get("_data", _MISSING), t.__dict__.get("grad", _MISSING))
            for t in tensors]


def _host_state(optimizers):
    """What the function's Python may change on the host besides tensors: optimizers'
    groups and per-parameter state, schedulers' attributes (put back after a failed
    capture, whose Python ran but whose work did not)."""
    saved = []
    for o in optimizers:
        d = o.__dict__
        saved.append((d, dict(d)))
        for group in d.get("param_groups", ()):
            saved.append((group, dict(group)))
        for s in d.get("state", {}).values():
            if isinstance(s, dict):
                saved.append((s, dict(s)))
    return saved


def _put_back(saved):
    for d, copy in saved:
        d.clear()
        d.update(copy)


def _options(optimizers):
    """The optimizers' options a graph bakes in: every group's but its parameters, and
    but ``lr`` where the updates read their scalars from device memory, copied there
    before each launch (``Optimizer._scalars_on_device``); and the state dict itself."""
    found = []
    for o in optimizers:
        d = o.__dict__
        if "param_groups" in d:
            skip = ("params", "lr") if getattr(o, "_scalars_on_device", False) else ("params",)
            found.append((d, {"param_groups": d["param_groups"], "state": d.get("state")}))
            for group in o.param_groups:
                found.append((group, {k: v for k, v in group.items() if k not in skip}))
    return found


def _refused_read(arr):
    raise _HostRead()


class _HostRead(Exception):
    pass


def _line_of(exc) -> str:
    """``file:line`` of the innermost frame of ``exc``'s traceback outside gradcore and
    CuPy (the user's line)."""
    where = "<unknown>"
    for frame in traceback.extract_tb(exc.__traceback__):
        name = os.path.abspath(frame.filename)
        if not name.startswith(_PACKAGE_DIR) and "cupy" not in name:
            where = f"{frame.filename}:{frame.lineno}"
    return where


def _why(exc) -> str:
    where = _line_of(exc)
    msg = str(exc)
    if isinstance(exc, _HostRead):
        what = "a read of values by the host (.item(), .tolist(), .numpy(), printing, " \
               "bool() or if on a tensor)"
    elif "cuBLAS" in msg:
        what = f"a matrix product through CuPy's cuBLAS, which CuPy refuses during stream " \
               f"capture ({msg})"
    elif "H2D" in msg:
        what = "a copy from the host (a tensor made from Python or NumPy data, or random " \
               f"numbers drawn on the host) ({msg})"
    elif "D2H" in msg:
        what = f"a read of values by the host ({msg})"
    else:
        what = f"{type(exc).__name__}: {msg}"
    return f"CUDA graph capture refused {what} (at {where})"


class Session:
    """A stream capture under way (:func:`begin`): its stream, the pool that serves its
    allocations, and the host work it collects (``backend.host_work``: the optimizers'
    scalars, formed and copied to the device before each launch)."""

    __slots__ = ("xp", "stream", "pool", "host_work", "checks", "_allocator", "_n_checks",
                 "_open")


# captures under way (gc.compile's, or gc.cuda.graph's by hand): a compiled function
# called inside one runs eagerly, its work captured with the rest
open_sessions = 0


def begin(xp, stream, pool, mode=None) -> Session:
    """Begin capturing the work issued to ``stream`` (a CuPy stream, current already)
    into a graph, every allocation served by ``pool`` (a ``MemoryPool``): cuBLAS put on
    the stream first (gradcore's products need no handle call during the capture), reads
    of values by the host refused (``.item()``, printing: :func:`refusal` names them),
    the optimizers' host work kept for each launch. ``mode``: CUDA's capture mode (None:
    CuPy's default, relaxed). :func:`end` ends it, and puts all that back."""
    gemm.use_stream(xp, stream.ptr)  # (cuBLAS's stream and workspace set before capture)
    s = Session()
    s.xp, s.stream, s.pool, s.host_work, s.checks = xp, stream, pool, [], []
    s._n_checks = len(backend._pending_checks)
    s._allocator = xp.cuda.using_allocator(pool.malloc)
    s._allocator.__enter__()
    backend.set_capture_hooks(_refused_read, None)
    backend._host_work = s.host_work
    try:
        stream.begin_capture(mode)
    except BaseException:
        _restore(s)
        raise
    global open_sessions
    open_sessions += 1
    s._open = True
    return s


def _restore(session) -> None:
    global open_sessions
    if getattr(session, "_open", False):
        session._open = False
        open_sessions -= 1
    # the range checks the captured work left read arrays a launch fills: kept with the
    # graph (pend() after each launch), not read now
    pending = backend._pending_checks
    session.checks = pending[session._n_checks:]
    del pending[session._n_checks:]
    backend._host_work = None
    backend.set_capture_hooks(None, None)
    session._allocator.__exit__(None, None, None)


def end(session, failed=False):
    """End the capture :func:`begin` began: the graph (a ``cupy.cuda.graph.Graph``).
    ``failed``: the captured code raised, and the capture is ended and dropped (CUDA's
    error for an invalidated capture is the body's, not raised here; None is
    returned)."""
    try:
        graph = session.stream.end_capture()
    except Exception:
        if not failed:
            raise
        graph = None
    finally:
        _restore(session)
    return None if failed else graph


def refusal(exc) -> str | None:
    """What CuPy or CUDA refused during a capture, when ``exc`` says so (a read of
    values by the host, a copy from or to it, a synchronization, CuPy's cuBLAS), said for
    a person with the user's line; None for any other error (the program's own)."""
    msg = str(exc)
    if isinstance(exc, _HostRead) or type(exc).__name__ == "CUDARuntimeError" or \
            "cuBLAS" in msg or "transfers are disallowed" in msg:
        return _why(exc)
    return None


def capture(fn, args, kwargs, flat, tensor_cls, module_cls, opt_types, backward_hosts,
            xp=None):
    """Capture one call of ``fn`` into a :class:`GraphStep` (launched by the caller for
    this call's results) on the device of its CUDA arguments (or of ``xp``, the array
    module of a step that takes none). Raises :class:`CaptureFailed` with the reason, the tensors'
    bindings and the optimizers' Python state put back as they were.

    What the graph may read or write is found from what the function's Python reaches
    (:class:`~gradcore.capture.trace.Reach`: the tensors whose array or gradient it
    reads or sets, their bindings noted before their first change) and from what the
    components registered at construction name (:mod:`gradcore._live`: the modules,
    the optimizers and schedulers, and the device state written through no reached
    tensor: the optimizers' step counts and tables, the Philox states), not by a pass
    over every live object."""
    modules = _live.live(module_cls)
    optimizers = _live.live(opt_types)
    on = [t._data for t in flat if _is_cuda(t._data)]
    xp = backend.math_of(on[0]).xp if on else xp
    host = _host_state(optimizers)
    versions = [t._version for t in flat]
    stream = xp.cuda.Stream(non_blocking=True)
    pool = xp.cuda.MemoryPool()
    current = xp.cuda.get_current_stream()
    stream.wait_event(current.record())
    originals = [t._data for t in flat]
    with stream:
        with xp.cuda.using_allocator(pool.malloc):
            buffers = [d.copy() for d in originals]
    # (the work issued next on the current stream, which may write the arguments'
    # memory, waits for those copies)
    current.wait_event(stream.record())
    pending = backend._pending_checks
    n_checks = len(pending)
    ran_backward = []
    patched = []
    for host_module in backward_hosts:
        run_backward = host_module.run_backward

        def watching(*a, _run=run_backward, **k):
            ran_backward.append(True)
            return _run(*a, **k)
        patched.append((host_module, run_backward))
        host_module.run_backward = watching
    stepped = []  # optimizers and schedulers whose Python step a launch would not repeat
    patched_steps = watch_steps(optimizers, stepped.append)
    for t, b in zip(flat, buffers):
        t._data = b
    graph = session = None
    noted = Reach.install(tensor_cls, flat)
    global capturing
    capturing = fn
    try:
        if noted is None:  # (a subclass defines _data: the caller checked; or a recording)
            raise CaptureFailed("the tensors the function reaches cannot be watched")
        reached, first = noted.reached, noted.first
        with stream:
            session = begin(xp, stream, pool)
            try:
                result = fn(*args, **kwargs)
            except BaseException:
                end(session, failed=True)
                raise
            graph = end(session)
    except CaptureFailed:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever refused, the function runs eagerly
        noted.remove()
        _undo(first, host, pending, n_checks)
        raise CaptureFailed(_why(exc)) from exc
    finally:
        capturing = None
        if noted is not None:
            noted.remove()
        unwatch_steps(patched_steps)
        for host_module, run_backward in patched:
            host_module.run_backward = run_backward
        for t, d in zip(flat, originals):
            t._data = d

    # the CUDA tensors that existed before and that the function reached, with their
    # bindings as they were (a tensor reached only through its .grad among them)
    watched, before = [], []
    for t, d, g in first.values():
        now = (t.__dict__.get("_data", _MISSING), t.__dict__.get("grad", _MISSING))
        if _on_device((d, g)) or _on_device(now):
            watched.append(t)
            before.append((d, g))
    if stepped:
        _undo(first, host, pending, n_checks)
        kind = type(stepped[0]).__name__
        raise CaptureFailed(
            f"CUDA graph capture refused the step() of a {kind}, whose Python (its step "
            "count, the scalars it forms) a launch would not repeat: on CUDA, SGD, Adam "
            "and AdamW read their scalars from device memory; step other optimizers and "
            "schedulers outside the compiled function")
    step = GraphStep()
    step.xp, step.graph, step.stream, step.pool = xp, graph, stream, pool
    step.host_work, step.optimizers = session.host_work, optimizers
    step.inputs = list(enumerate(buffers))
    step.copy_back = [(k, buffers[k]) for k, t in enumerate(flat) if t._version != versions[k]]
    step.checks = session.checks
    after = _bindings(watched)
    changes, guards = [], []
    for t, (d0, g0), (d1, g1) in zip(watched, before, after):
        for attr, v0, v1 in (("_data", d0, d1), ("grad", g0, g1)):
            if v1 is not v0:
                changes.append((t, attr, v1))
            elif v0 is not _MISSING and id(t if attr == "_data" else v0) in reached:
                # (a .grad is guarded where the graph reached the gradient's array)
                guards.append((t, attr, v0))
    step.changes, step.guards = changes, guards
    step.flags = [(m, m.__dict__.get("training")) for m in modules]
    step.options = _options(optimizers)
    step.roots = _persistent_roots(before, _live.device_state())
    why = []
    inputs = {id(t) for t in flat}
    step.output = _outputs(result, tensor_cls,
                           lambda x: noted.made_before(x) and id(x) not in inputs,
                           bool(ran_backward), why)
    if why:
        raise CaptureFailed(why[0])
    return step


def _undo(first, host, pending, n_checks):
    """What a refused capture's Python did, put back: the reached tensors' bindings as
    they were first (``Reach.first``), the optimizers' host state, the range checks it
    left."""
    _bind([(t, a, v) for t, d, g in first.values() for a, v in (("_data", d), ("grad", g))])
    _put_back(host)
    del pending[n_checks:]


def watch_steps(components, on_step) -> list:
    """Have each of ``components`` (optimizers, schedulers) whose updates do not read
    their scalars from device memory (``_scalars_on_device``) call ``on_step(obj)`` when
    its ``step`` is called, before it steps: its Python (a step count, scalars formed on
    the host) is what a launch of a graph would not repeat. Returns what
    :func:`unwatch_steps` puts back."""
    patched = []
    for o in components:
        if ("step" in type(o).__dict__ or hasattr(o, "step")) and \
                not getattr(o, "_scalars_on_device", False):
            method = type(o).step.__get__(o)

            def step(*args, _obj=o, _method=method, **kwargs):
                on_step(_obj)
                return _method(*args, **kwargs)
            o.__dict__["step"] = step
            patched.append(o)
    return patched


def unwatch_steps(patched) -> None:
    """Put back the steps :func:`watch_steps` watched."""
    for o in patched:
        o.__dict__.pop("step", None)


def _persistent_roots(bindings, named=()):
    """The memory the graph may read or write that outlives it (snapshotted by
    :func:`agree`): the roots of the arrays bound to the tensors it reached when the
    capture began, and of the device state the components name (``named``)."""
    roots, seen = [], set()
    arrays = [a for d, g in bindings for a in (d, getattr(g, "_data", None))]
    for arr in arrays + list(named):
        if _is_cuda(arr):
            r = _root(arr)
            if id(r) not in seen:
                seen.add(id(r))
                roots.append(r)
    return roots


def _outputs(x, tensor_cls, kept, backward_ran, why):
    """The structure a launch returns: ``kept(x)`` tensors (made before the call, a
    parameter) as themselves, the others' arrays as new tensors."""
    t = type(x)
    if isinstance(x, tensor_cls):
        if kept(x):
            return _Out(tensor=x)
        if x.grad_fn is not None and not backward_ran:
            why.append("it returns a tensor with a graph for a later backward, and a "
                       "replay builds no graph (call backward inside the compiled "
                       "function, or compile it under no_grad)")
        return _Out(array=x._data, requires_grad=x._rg)
    if t is tuple or t is list:
        return t(_outputs(v, tensor_cls, kept, backward_ran, why) for v in x)
    if t is dict:
        return {k: _outputs(v, tensor_cls, kept, backward_ran, why) for k, v in x.items()}
    return x


def launch(step, flat, wrap):
    """Copy the arguments into the graph's input buffers, launch it, copy the results
    out (new arrays from the default pool), all on the current stream: ordered after the
    work already issued to it and before the work issued next, with no event between
    streams (each event recorded and waited on is a call into CUDA from Python, which
    a small step's launch is made of)."""
    current = step.xp.cuda.get_current_stream()
    for k, buf in step.inputs:
        buf[...] = flat[k]._data
    for work in step.host_work:  # (the optimizers' scalars, copied to the device)
        work()
    step.graph.launch(current)
    for k, buf in step.copy_back:
        flat[k]._data[...] = buf
    return _build(step.output, wrap)


def guards_hold(step) -> bool:
    """Whether the state the graph was captured from still holds: the same arrays
    bound to the tensors it reads, the modules' flags, the optimizers' options."""
    for t, attr, v in step.guards:
        if t.__dict__.get(attr, _MISSING) is not v:
            return False
    for m, training in step.flags:
        if m.__dict__.get("training") != training:
            return False
    for group, opts in step.options:
        for k, v in opts.items():
            now = group.get(k, _MISSING)
            if now is not v and now != v:
                return False
    return True


def _results(step, out, roots):
    """What a launch of ``step`` left, in a fixed order: the persistent memory
    (``roots``), the arrays bound by the function, the returned arrays."""
    arrays = list(roots)
    for _t, _attr, v in sorted(step.changes, key=lambda c: (id(c[0]), c[1])):
        arr = getattr(v, "_data", v)
        if _is_cuda(arr):
            arrays.append(arr)
    arrays.extend(t._data for t in _leaves(out))
    return arrays


def _leaves(x, out=None):
    out = [] if out is None else out
    if hasattr(x, "_data") and hasattr(x, "grad_fn"):
        out.append(x)
    elif type(x) in (tuple, list):
        for v in x:
            _leaves(v, out)
    elif type(x) is dict:
        for v in x.values():
            _leaves(v, out)
    return out


def agree(earlier, later, flat, wrap):
    """Launch ``earlier`` and ``later`` from the same state (the memory ``later`` was
    captured from, copied first and put back between the two) and compare what they
    leave. Returns ``(same, results of later's launch)``; the state is ``later``'s."""
    xp = later.xp
    if [(id(t), a) for t, a, _v in sorted(earlier.changes, key=lambda c: (id(c[0]), c[1]))] \
            != [(id(t), a) for t, a, _v in sorted(later.changes, key=lambda c: (id(c[0]),
                                                                             c[1]))]:
        return False, later.run(flat, wrap)
    # the copies and the comparison run on the current stream, which each launch is
    # ordered after and before (a copy on another stream would race with the launches)
    saved = [r.copy() for r in later.roots]
    # the memory both read or write, but not what ``earlier`` bound and ``later`` binds
    # afresh (last call's gradients): those are compared through the bindings
    rebound = {id(_root(a)) for a in (getattr(v, "_data", v) for _t, _a, v in earlier.changes)
               if _is_cuda(a)}
    shared = [r for r in later.roots if id(r) not in rebound]
    host = _host_state(later.optimizers)  # (the launch's host work counts steps)
    first = launch(earlier, flat, wrap)
    _put_back(host)
    left = [a.copy() for a in _results(earlier, first, shared)]
    for r, s in zip(later.roots, saved):
        r[...] = s
    out = later.run(flat, wrap)
    now = _results(later, out, shared)
    if len(now) != len(left) or any(a.shape != b.shape or a.dtype != b.dtype
                                     for a, b in zip(left, now)):
        return False, out
    same = all(bool(xp.array_equal(a, b, equal_nan=True)) for a, b in zip(left, now))
    return same and _same_python(earlier.output, later.output), out


def _same_python(a, b):
    if type(a) is _Out or type(b) is _Out:
        return type(a) is type(b)
    if type(a) in (tuple, list, dict):
        if type(a) is not type(b) or len(a) != len(b):
            return False
        if type(a) is dict:
            return a.keys() == b.keys() and all(_same_python(a[k], b[k]) for k in a)
        return all(_same_python(x, y) for x, y in zip(a, b))
    return a == b
