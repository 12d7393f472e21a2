"""Streams, memory pools and stream capture for the CuPy stand-in, as CuPy 14 spells them.

CUDA's semantics, modelled on the host:

* a :class:`Stream` is current inside ``with stream:`` (or after ``use()``); work is
  issued to the current stream, and ``Stream.null`` (the legacy stream) is current by
  default;
* ``stream.begin_capture(mode)`` starts a capture: from then on, work issued to that
  stream is recorded into a graph, **not executed**. The stand-in computes each
  operation at once (NumPy tells it the result's shape and dtype) but, at
  ``end_capture()``, puts back the contents every array had when the capture began and
  fills the arrays made during the capture with garbage (NaN for floats), as a GPU
  would leave them; ``Graph.launch()`` runs the recorded operations again, in order,
  over the same memory;
* what CuPy refuses while the current stream is capturing raises CuPy's error: a copy
  from or to the host (``RuntimeError``: "the current stream is capturing, so H2D / D2H
  transfers are disallowed"), cuBLAS (``NotImplementedError`` from CuPy's
  ``cublas.setStream``, which every cuBLAS call makes first), synchronizing the stream
  or the device (``CUDARuntimeError`` ``cudaErrorStreamCaptureUnsupported``, and the
  capture is invalidated: ``end_capture`` then raises
  ``cudaErrorStreamCaptureInvalidated``), work on the legacy stream while a blocking
  stream captures (``cudaErrorStreamCaptureImplicit``), and, in the global and
  thread-local capture modes, a memory pool that must grow (``cudaMalloc``);
* memory comes from a :class:`MemoryPool` (the default one, or the allocator set by
  ``cupy.cuda.set_allocator`` / ``using_allocator``), which keeps freed blocks for
  reuse as CuPy's does. An array's block is freed when the last array over it goes.
  Stricter than CUDA, which corrupts memory silently: a graph whose memory was reused
  by other work after the capture (a temporary of the capture, freed when the capture
  ended, handed out again by the same pool) refuses to launch. Memory handed out again
  to a later capture from the same pool is shared between the graphs (PyTorch's shared
  graph pools), not counted as reused.
"""

from __future__ import annotations

import contextlib
import itertools
import time
import weakref

import numpy as _np

# ---- CUDA's errors, as cupy_backends.cuda.api.runtime raises them ------------------------
_ERRORS = {
    400: ("cudaErrorInvalidResourceHandle", "invalid resource handle"),
    600: ("cudaErrorNotReady", "device not ready"),
    401: ("cudaErrorIllegalState",
          "the operation cannot be performed in the present state"),
    900: ("cudaErrorStreamCaptureUnsupported",
          "operation not permitted when stream is capturing"),
    901: ("cudaErrorStreamCaptureInvalidated",
          "operation failed due to a previous error during capture"),
    906: ("cudaErrorStreamCaptureImplicit",
          "operation would make the legacy stream depend on a capturing blocking stream"),
}


class CUDARuntimeError(RuntimeError):
    """``cupy_backends.cuda.api.runtime.CUDARuntimeError``: a failed CUDA call."""

    def __init__(self, status):
        self.status = status
        name, msg = _ERRORS.get(status, (f"cudaError{status}", "unknown error"))
        super().__init__(f"{name}: {msg}")


# cupy.cuda.runtime's constants
streamCaptureModeGlobal = 0  # noqa: N816
streamCaptureModeThreadLocal = 1  # noqa: N816
streamCaptureModeRelaxed = 2  # noqa: N816
streamDefault = 0  # noqa: N816
streamNonBlocking = 1  # noqa: N816
streamLegacy = 1  # noqa: N816
streamPerThread = 2  # noqa: N816


# ---- memory ------------------------------------------------------------------------------
class _Block:
    """One allocation of a pool: freed when the last array over it goes."""

    __slots__ = ("pool", "size", "live", "uses")

    def __init__(self, pool, size):
        self.pool, self.size, self.live, self.uses = pool, size, 0, 0

    def drop(self):
        self.live -= 1
        if self.live == 0:
            self.pool._release(self)


class OutOfMemoryError(MemoryError):
    """``cupy.cuda.memory.OutOfMemoryError``, with CuPy's message."""

    def __init__(self, size, total, limit=0):
        msg = f"Out of memory allocating {size:,} bytes (allocated so far: {total:,} bytes"
        if limit:
            msg += f", limit set to: {limit:,} bytes"
        super().__init__(msg + ").")


class MemoryPool:
    """``cupy.cuda.MemoryPool``: blocks rounded up to 512 bytes, freed ones kept for reuse.

    Beyond CuPy's ``used_bytes``/``total_bytes``/``free_bytes``/``n_free_blocks``, the
    stand-in counts the allocations it served (``n_allocations``) and the ones that had
    to take new device memory (``n_device_allocations``, CuPy's ``cudaMalloc``)."""

    def __init__(self, allocator=None):
        self._free: dict[int, list] = {}
        self._used = self._total = 0
        self._limit = 0
        _pools.add(self)
        self.n_allocations = 0
        self.n_device_allocations = 0

    def malloc(self, size):  # what an allocator is; the stand-in calls _allocate
        return _Pointer(self._allocate(int(size)))

    def _allocate(self, nbytes: int) -> _Block:
        size = -(-nbytes // 512) * 512
        free = self._free.get(size)
        if free:
            block = free.pop()
            cap = _capture
            if cap is None or _current != cap.stream or _outside[0]:
                # (handed to another capture, the block is shared between graphs, as a
                # pool PyTorch's graphs share: correct when they are launched one after
                # the other, each writing its temporaries before reading them)
                block.uses += 1
        else:
            cap = _capture
            if cap is not None and cap.mode != streamCaptureModeRelaxed:
                # cudaMalloc is an unsafe call in the global and thread-local modes
                cap.invalidate()
                raise CUDARuntimeError(900)
            if self._limit and self._total + size > self._limit:
                self.free_all_blocks()  # (CuPy frees the cached blocks, then tries again)
                if self._total + size > self._limit:
                    raise OutOfMemoryError(size, self._total, self._limit)
            block = _Block(self, size)
            self._total += size
            self.n_device_allocations += 1
        self._used += size
        self.n_allocations += 1
        return block

    def _release(self, block):
        self._used -= block.size
        self._free.setdefault(block.size, []).append(block)

    def used_bytes(self):
        return self._used

    def total_bytes(self):
        return self._total

    def free_bytes(self):
        return self._total - self._used

    def n_free_blocks(self):
        return sum(len(v) for v in self._free.values())

    def free_all_blocks(self, stream=None):
        for blocks in self._free.values():
            for b in blocks:
                self._total -= b.size
                b.uses += 1  # (that memory may go to anyone now)
        self._free.clear()

    def set_limit(self, size=None, fraction=None):
        """A cap on the bytes taken from the device (0 or None: none), as CuPy's."""
        if fraction is not None:
            raise NotImplementedError("the CuPy stand-in has no device memory to take a "
                                      "fraction of")
        self._limit = int(size or 0)

    def get_limit(self):
        return self._limit


_pools: weakref.WeakSet = weakref.WeakSet()


def device_bytes_taken() -> int:
    """The bytes every live pool holds from the device."""
    return sum(p._total for p in _pools)


class _Pointer:
    __slots__ = ("block", "ptr", "device_id")

    def __init__(self, block):
        self.block, self.ptr, self.device_id = block, id(block), 0


def _is_pool_malloc(allocator) -> bool:
    return isinstance(getattr(allocator, "__self__", None), MemoryPool)


default_pool = MemoryPool()
_allocator = None  # None: the default pool's


def set_allocator(allocator=None):
    """``cupy.cuda.set_allocator``: a MemoryPool's ``malloc``, or any function of a size
    returning what one returns (a pointer into a MemoryPool's block), as CuPy's; None:
    the default pool's. Like CuPy's, refused inside ``using_allocator``."""
    global _allocator
    if _local_allocator:
        raise ValueError("Can't change the global allocator inside ``using_allocator`` "
                         "context manager")
    _allocator = None if allocator == default_pool.malloc else allocator


_local_allocator: list = []  # using_allocator's, innermost last (CuPy's are per thread)


@contextlib.contextmanager
def using_allocator(allocator=None):
    """``cupy.cuda.using_allocator``: ``allocator`` inside the block."""
    if allocator is not None and not callable(allocator):
        raise TypeError("allocator must be callable")
    _local_allocator.append(allocator or default_pool.malloc)
    try:
        yield
    finally:
        _local_allocator.pop()


def get_allocator():
    """``cupy.cuda.get_allocator``: ``using_allocator``'s inside one, else the global."""
    if _local_allocator:
        return _local_allocator[-1]
    return default_pool.malloc if _allocator is None else _allocator


def _allocate(nbytes: int) -> _Block:
    """A block of ``nbytes`` from the current allocator (called, as CuPy calls it, unless
    it is a MemoryPool's own malloc)."""
    allocator = get_allocator()
    if _is_pool_malloc(allocator):
        return allocator.__self__._allocate(nbytes)
    return allocator(nbytes).block


_outside = [False]  # True while work of another stream runs during a capture


@contextlib.contextmanager
def outside_capture():
    """Work issued to a stream that is not capturing, while another one captures: it
    runs, and what it writes or makes is left as it is when the capture ends."""
    _outside[0] = True
    try:
        yield
    finally:
        _outside[0] = False


# the live allocations, by the NumPy array owning the memory
_roots: dict[int, tuple] = {}


def _root_of(a):
    while isinstance(a.base, _np.ndarray):
        a = a.base
    return a


def hold(a):
    """The block under NumPy array ``a`` (a new allocation from the current pool when its
    memory is new), counted as held by one more device array."""
    root = _root_of(a)
    key = id(root)
    entry = _roots.get(key)
    block = None
    if entry is not None and entry[0]() is root and entry[1].live > 0:
        block = entry[1]
    elif root.nbytes:
        block = _allocate(root.nbytes)
        _roots[key] = (weakref.ref(root, functools_partial_forget(key)), block)
        cap = _capture
        if cap is not None and _current == cap.stream and not _outside[0]:
            cap.made.append((weakref.ref(root), block))
    if block is not None:
        block.live += 1
    return block


def functools_partial_forget(key):
    def forget(ref):
        entry = _roots.get(key)
        if entry is not None and entry[0] is ref:
            del _roots[key]
    return forget


def block_of(a):
    entry = _roots.get(id(_root_of(a)))
    return None if entry is None else entry[1]


count_sync = None  # the stand-in's counter of host synchronizations (set by it)

# ---- streams -----------------------------------------------------------------------------
_ptrs = itertools.count(0x7000)


class Event:
    """``cupy.cuda.Event``: work is done when it is issued here, so events are markers.
    A recorded event's time is the host's clock when it was recorded (the work before it
    is done then); as CUDA's, an event made with ``disable_timing`` has none, and an
    interprocess event must be one."""

    def __init__(self, block=False, disable_timing=False, interprocess=False):
        if interprocess and not disable_timing:
            raise ValueError("Timing must be disabled for interprocess events")
        self.ptr = next(_ptrs)
        self._clock: dict = {}  # the work this event marks (see "ordering" below)
        self._timing = not disable_timing
        self._time = None  # perf_counter() when last recorded (None: never)

    def record(self, stream=None):
        (stream or get_current_stream()).record(self)

    def synchronize(self):
        _synchronize(None, "Event.synchronize()", count_sync)
        _merge(_host_clock, self._clock)

    @property
    def done(self):
        return True


class Stream:
    """``cupy.cuda.Stream``: ``Stream.null`` (the legacy stream, current by default),
    ``Stream(non_blocking=True)`` (one that does not synchronize with it)."""

    null = None
    ptds = None

    def __init__(self, null=False, non_blocking=False, ptds=False, priority=None):
        self.priority = 0 if priority is None else int(priority)
        if null:
            self.ptr, self.device_id, self._non_blocking = 0, -1, False
        elif ptds:
            self.ptr, self.device_id, self._non_blocking = streamPerThread, -1, False
        else:
            self.ptr, self.device_id = next(_ptrs), 0
            self._non_blocking = bool(non_blocking)
            _streams[self.ptr] = self
        self._seq = 0        # the work issued to this stream so far
        self._clock: dict = {}  # stream ptr -> the work of it this stream is ordered after

    def __eq__(self, other):
        return isinstance(other, Stream) and other.ptr == self.ptr

    def __hash__(self):
        return self.ptr

    def __repr__(self):
        return f"<Stream {self.ptr} (device {self.device_id})>"

    def __enter__(self):
        global _current
        _previous.append(_current)
        _current = self
        return self

    def __exit__(self, *exc):
        global _current
        _current = _previous.pop()
        return False

    def use(self):
        global _current
        _current = self
        return self

    @property
    def is_non_blocking(self):
        return self._non_blocking

    @property
    def done(self):
        if _capture is not None and _capture.stream == self:
            _capture.invalidate()
            raise CUDARuntimeError(900)
        return True

    def synchronize(self):
        _synchronize(self, "stream.synchronize()", count_sync)
        _merge(_host_clock, self._clock)
        _merge(_host_clock, {self.ptr: self._seq})

    def record(self, event=None):
        if event is None:
            event = Event()
        event._clock = dict(self._clock)
        event._clock[self.ptr] = self._seq
        event._time = time.perf_counter()
        return event

    def wait_event(self, event):
        _merge(self._clock, event._clock)

    def begin_capture(self, mode=None):
        """Record the work issued to this stream from now on into a graph."""
        global _capture
        if self.ptr in (0, streamLegacy):
            raise RuntimeError("cannot capture on the default (legacy) stream")
        if _capture is not None:
            if _capture.stream == self:
                raise CUDARuntimeError(401)
            raise NotImplementedError("the CuPy stand-in captures one stream at a time")
        if mode is None:
            mode = streamCaptureModeRelaxed
        _capture = _Capture(self, mode)

    def end_capture(self):
        """The graph of the work recorded since ``begin_capture``."""
        global _capture
        cap = _capture
        if cap is None or cap.stream != self:
            raise CUDARuntimeError(401)
        _capture = None
        cap.finish()
        if cap.invalidated:
            raise CUDARuntimeError(901)
        return Graph._from_capture(cap)

    def is_capturing(self):
        cap = _capture
        if cap is None or cap.stream != self:
            return False
        if cap.invalidated:
            raise RuntimeError("the stream was capturing, but an error has invalidated "
                               "the capture sequence")
        return True


_streams: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def get_elapsed_time(start_event, end_event):
    """``cupy.cuda.get_elapsed_time``: milliseconds between two recorded events
    (``cudaEventElapsedTime``: an event never recorded, or made with ``disable_timing``,
    is CUDA's ``cudaErrorInvalidResourceHandle``)."""
    for e in (start_event, end_event):
        if e._time is None or not e._timing:
            raise CUDARuntimeError(400)
    return (end_event._time - start_event._time) * 1000.0


def stream_by_ptr(ptr):
    """The stream whose handle is ``ptr`` (0 or None: the legacy stream)."""
    if not ptr:
        return Stream.null
    if ptr == streamPerThread:
        return Stream.ptds
    return _streams[ptr]


Stream.null = Stream(null=True)
Stream.ptds = Stream(ptds=True)
_current = Stream.null
_previous: list = []


def get_current_stream(device_id=-1):
    return _current


# ---- ordering between streams ---------------------------------------------------------------
# The stand-in runs every stream's work at once, in the order it is issued, so work on two
# streams that a GPU may run at the same time never races here. Instead, each piece of
# work is checked to be ordered after the last work, on another stream, that used the same
# memory: through an event recorded there and waited on (Stream.wait_event), a
# synchronization of the host, or the legacy stream's implicit ordering with blocking
# streams. Work that is not raises, naming both streams (on a GPU: a race, silent).
# Checked from the first work issued to a stream other than the legacy one (the suite's
# single-stream tests pay nothing); memory use is counted per root array.
_ordering = False
_host_clock: dict = {}  # the work of each stream the host has waited for
# id(root) -> [weakref to root, (stream ptr, work) of its last write, {ptr: work} of the
# reads since]
_uses: dict = {}


class StreamRace(RuntimeError):
    """Work on one stream read memory that work on another wrote, or wrote memory that
    work on another read or wrote, without being ordered after it: on a GPU the two may
    run at once."""


def _merge(into: dict, other: dict) -> None:
    for k, v in other.items():
        if into.get(k, -1) < v:
            into[k] = v


def _use(root):
    key = id(root)
    u = _uses.get(key)
    if u is None or u[0]() is not root:
        u = _uses[key] = [weakref.ref(root), None, {}]
    return u


def _race(stream, a, other, what):
    raise StreamRace(
        f"CuPy stand-in: work on stream {stream.ptr} {what} memory (an array of shape "
        f"{a.shape}) that work on stream {other} used before it, and is not ordered after "
        "that work (no event recorded there and waited on, no synchronization): on a GPU "
        "the two may run at once")


def issue(stream, reads, writes=()) -> None:
    """Work issued to ``stream`` (not captured) that reads the arrays ``reads`` and
    writes ``writes``: check that it is ordered after the last write of their memory on
    any other stream (and, for a write, after the reads there since), then note it."""
    global _ordering
    stream = _current if stream is None else stream
    if not _ordering:
        if stream.ptr in (0, streamLegacy):
            return
        _ordering = True
    clock = stream._clock
    _merge(clock, _host_clock)  # (work issued after the host waited comes after it)
    if not stream._non_blocking:  # the legacy stream and blocking streams wait for
        for other in (Stream.null, *_streams.values()):  # each other's earlier work
            if other is not stream and not other._non_blocking:
                _merge(clock, other._clock)
                if clock.get(other.ptr, -1) < other._seq:
                    clock[other.ptr] = other._seq
    stream._seq += 1
    ptr, seq = stream.ptr, stream._seq
    written = {id(_root_of(a)) for a in writes if isinstance(a, _np.ndarray)}
    for a in reads:
        if isinstance(a, _np.ndarray) and id(_root_of(a)) not in written:
            u = _use(_root_of(a))
            w = u[1]
            if w is not None and w[0] != ptr and clock.get(w[0], -1) < w[1]:
                _race(stream, a, w[0], "reads")
            u[2][ptr] = seq
    for a in writes:
        if isinstance(a, _np.ndarray):
            u = _use(_root_of(a))
            w = u[1]
            if w is not None and w[0] != ptr and clock.get(w[0], -1) < w[1]:
                _race(stream, a, w[0], "writes")
            for other, when in u[2].items():
                if other != ptr and clock.get(other, -1) < when:
                    _race(stream, a, other, "writes")
            u[1], u[2] = (ptr, seq), {}


def note_results(stream, arrays) -> None:
    """The arrays just made by work issued to ``stream``: written there last."""
    if not _ordering:
        return
    stream = _current if stream is None else stream
    for a in arrays:
        if isinstance(a, _np.ndarray):
            u = _use(_root_of(a))
            u[1], u[2] = (stream.ptr, stream._seq), {}


def host_waits_for(stream) -> None:
    """The host read from ``stream`` (a device-to-host copy): it has waited for it."""
    stream = _current if stream is None else stream
    _merge(_host_clock, stream._clock)
    _merge(_host_clock, {stream.ptr: stream._seq})


# ---- capture -----------------------------------------------------------------------------
_capture = None  # the _Capture running now (one stream at a time)


def _flat(x, out):
    if isinstance(x, _np.ndarray):
        out.append(x)
    elif type(x) in (tuple, list):
        for v in x:
            _flat(v, out)
    elif type(x) is dict:
        for v in x.values():
            _flat(v, out)
    return out


def _flat_results(x, out):
    if isinstance(x, (_np.ndarray, _np.generic)):
        out.append(x)
    elif type(x) in (tuple, list):
        for v in x:
            _flat_results(v, out)
    return out


class _Capture:
    def __init__(self, stream, mode):
        self.stream, self.mode = stream, mode
        self.ops: list = []
        self.invalidated = False
        self.made: list = []  # (weakref to root, block) allocated while capturing
        # what every live array holds now: put back when the capture ends
        self.snapshot = {}
        for ref, block in list(_roots.values()):
            root = ref()
            if root is not None and block.live > 0:
                self.snapshot[id(root)] = (root, root.copy())

    def exempt(self, arrays):
        """Arrays that work outside the capture wrote: their contents stay."""
        for a in _flat_results(arrays, []):
            if isinstance(a, _np.ndarray):
                self.snapshot.pop(id(_root_of(a)), None)

    def invalidate(self):
        self.invalidated = True

    def record(self, fn, args, kwargs, result, writes=()):
        """``fn(*args, **kwargs)`` (NumPy arrays in, ``result`` out, already computed):
        a node of the graph. Results over new memory are written again at each launch;
        views of the operands need nothing."""
        operands = {id(_root_of(a)) for a in _flat((args, kwargs), [])}
        results = _flat_results(result, [])
        fresh = [(i, r) for i, r in enumerate(results)
                 if isinstance(r, _np.ndarray) and id(_root_of(r)) not in operands]
        blocks = [b for b in (block_of(a) for a in _flat((args, kwargs), []) + [
            r for _i, r in fresh]) if b is not None]
        self.ops.append((fn, args, kwargs, fresh, blocks, tuple(writes)))

    def finish(self):
        for root, before in self.snapshot.values():
            _np.copyto(root, before)
        for ref, _block in self.made:  # what the GPU would leave there: anything
            root = ref()
            if root is not None:
                kind = root.dtype.kind
                root[...] = _np.nan if kind in "fc" else True if kind == "b" else \
                    _np.iinfo(root.dtype).max // 3
        self.snapshot = None


def capturing(stream=None):
    """The capture recording work issued to ``stream`` (the current one by default), or
    None. Work on the legacy stream while a blocking stream captures is CUDA's error."""
    cap = _capture
    if cap is None:
        return None
    stream = _current if stream is None else stream
    if stream == cap.stream:
        return cap
    if stream.ptr == 0 and not cap.stream._non_blocking:
        cap.invalidate()
        raise CUDARuntimeError(906)
    return None


def refuse_transfer(direction: str, stream=None):
    """CuPy's refusal of a host transfer while the current stream captures."""
    if capturing(stream) is not None:
        raise RuntimeError(f"the current stream is capturing, so {direction} transfers "
                           "are disallowed")


def refuse_cublas():
    """CuPy's ``cublas.setStream`` guard, run by every cuBLAS call it makes."""
    if capturing() is not None:
        raise NotImplementedError("calling cuBLAS API during stream capture is currently "
                                  "unsupported")


def _synchronize(stream, what, count=None):
    """Waiting for ``stream`` (None: the device) while something captures: CUDA's error,
    and the capture is invalidated. Otherwise ``count(what)`` (a host synchronization)."""
    cap = _capture
    if cap is not None and (stream is None or stream == cap.stream or
                            cap.mode != streamCaptureModeRelaxed):
        cap.invalidate()
        raise CUDARuntimeError(900)
    if count is not None:
        count(what)
    if stream is None:  # the device: the host has waited for every stream
        for other in (Stream.null, *_streams.values()):
            host_waits_for(other)


class Graph:
    """``cupy.cuda.graph.Graph``: made by ``Stream.end_capture()`` only."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("currently this class cannot be initiated by the user "
                                  "and must be created via stream capture")

    @classmethod
    def _from_capture(cls, cap):
        g = object.__new__(cls)
        g._ops = cap.ops
        g._blocks = {id(b): (b, b.uses) for op in cap.ops for b in op[4]}
        g.launches = 0  # (the stand-in's count)
        return g

    def launch(self, stream=None):
        """Run the recorded work again, in order, over the same memory."""
        if capturing(stream) is not None:
            raise NotImplementedError("the CuPy stand-in does not capture a graph launch")
        for block, uses in self._blocks.values():
            if block.uses != uses:
                raise RuntimeError(
                    "CuPy stand-in: memory this graph uses was handed out again by its pool "
                    "after the capture (on a GPU the graph would silently corrupt it): "
                    "allocate a capture's memory from a private pool kept with the graph")
        stream = _current if stream is None else stream
        for fn, args, kwargs, fresh, _blocks, writes in self._ops:
            issue(stream, _flat((args, kwargs), []), [*writes, *(r for _i, r in fresh)])
            result = fn(*args, **kwargs)
            if fresh:
                results = _flat_results(result, [])
                for i, target in fresh:
                    _np.copyto(target, results[i], casting="unsafe")
        self.launches += 1

    def upload(self, stream=None):
        pass
