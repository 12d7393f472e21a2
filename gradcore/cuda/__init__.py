"""``gc.cuda``: PyTorch's ``torch.cuda``, over CuPy (``gradcore/backend.py``).

``device`` arguments take an index, ``"cuda:1"`` or a device; None is the current GPU.
Without a usable GPU, ``is_available()`` is False, ``device_count()`` 0, the memory
counts 0 and the lists empty (as in PyTorch's CPU build), and the functions that need a
GPU raise ``CudaUnavailableError`` (a ``RuntimeError``) saying why. The seeding
functions seed gradcore's one default generator (every draw is made on the host, for CPU
and GPU tensors alike).

Streams and events are CuPy's: gradcore launches its kernels and cuBLAS products on
CuPy's current stream, which ``with gc.cuda.stream(s):`` sets.

Memory: ``memory_allocated`` and ``memory_reserved`` are the bytes of CuPy's default
memory pool (held by arrays, taken from the driver). The peaks (``max_memory_allocated``,
``memory_stats``' ``*.peak``) are read at each allocation through that pool, by an
allocator gradcore puts in place when it first uses a GPU: exact for those allocations,
from that moment (or the last reset) on. They leave out what is allocated by other
allocators (a ``gc.compile`` CUDA graph's private pool, an allocator of the program's
own), and nothing is tracked when the program set its own allocator first.
"""

import builtins as _builtins
import collections as _collections
import collections.abc

from .. import backend as _backend
from .. import random as _random
from ..backend import CudaUnavailableError, OutOfMemoryError
from ..tensor import CUDA_TENSOR_TYPES as _TENSOR_TYPES
from . import amp, graphs, nvtx
from .graphs import CUDAGraph, graph, graph_pool_handle, make_graphed_callables

# (torch.cuda.FloatTensor, ...: legacy constructors of tensors on the current GPU)
globals().update(_TENSOR_TYPES)

__all__ = [
    "is_available", "device_count", "unavailable_reason", "is_initialized", "init",
    "synchronize", "current_device", "set_device", "get_device_name",
    "get_device_capability", "get_device_properties", "get_arch_list", "get_gencode_flags",
    "is_bf16_supported", "Stream", "Event", "StreamContext", "stream", "current_stream",
    "default_stream", "set_stream", "is_current_stream_capturing", "empty_cache",
    "memory_allocated", "memory_reserved", "max_memory_allocated", "max_memory_reserved",
    "memory_cached", "max_memory_cached", "reset_peak_memory_stats",
    "reset_max_memory_allocated", "reset_max_memory_cached", "memory_stats",
    "memory_summary", "mem_get_info", "OutOfMemoryError",
    "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state",
    "set_rng_state", "get_rng_state_all", "set_rng_state_all", "default_generators",
    "CUDAGraph", "graph", "graph_pool_handle", "make_graphed_callables",
    "amp", "nvtx", "graphs", *_TENSOR_TYPES,
]

_int, _bool = _builtins.int, _builtins.bool


class _DeviceProperties:
    """What ``gc.cuda.get_device_properties`` tells of a GPU."""

    def __init__(self, props: dict):
        self.__dict__.update(props)

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // 2**20}MB, "
                f"multi_processor_count={self.multi_processor_count})")


# ---------------------------------------------------------------------------- devices

def is_available() -> _bool:
    """Whether a GPU can be used: CuPy imports, a driver answers and a device is
    there. Never raises."""
    return _backend.cuda_is_available()


def device_count() -> _int:
    """The number of usable GPUs (0 without one)."""
    return _backend.cuda_device_count()


def unavailable_reason():
    """Why CUDA cannot be used (CuPy missing, no driver, no device), or None when it
    can. gradcore's own addition to ``torch.cuda``."""
    return _backend.cuda_unavailable_reason()


def is_initialized() -> _bool:
    """Whether gradcore's CUDA state is set up: a GPU was used (a tensor made there) or
    :func:`init` was called. False without a usable GPU."""
    return _backend.cuda_is_available() and _backend.cuda_is_initialized()


def init() -> None:
    """Set up gradcore's CUDA state now rather than at the first use of a GPU (nothing
    when it is already). Raises without a usable GPU."""
    _backend.cuda_init()


def synchronize(device=None) -> None:
    """Wait for the work queued on the GPU."""
    _backend.cuda_synchronize(device)


def current_device() -> _int:
    """The index of the current GPU (where ``"cuda"`` without an index goes)."""
    return _backend.cuda_current_device()


def set_device(device) -> None:
    """Make ``device`` (an index, ``"cuda:1"`` or a device) the current GPU."""
    _backend.cuda_set_device(device)


def get_device_name(device=None) -> str:
    """The GPU's name, as ``"NVIDIA H100 80GB HBM3"``."""
    return _backend.cuda_device_properties(device)["name"]


def get_device_capability(device=None) -> tuple:
    """The GPU's compute capability ``(major, minor)``, as ``(9, 0)``."""
    p = _backend.cuda_device_properties(device)
    return (p["major"], p["minor"])


def get_device_properties(device=None) -> _DeviceProperties:
    """The GPU's ``name``, ``major``, ``minor``, ``total_memory`` (bytes) and
    ``multi_processor_count``, as attributes."""
    return _DeviceProperties(_backend.cuda_device_properties(device))


def get_arch_list() -> list:
    """The architectures gradcore's kernels are built for, as ``["sm_90"]``: those of
    the GPUs here (the kernels are compiled at run time, by NVRTC, for the GPU that runs
    them). Empty without a usable GPU."""
    if not _backend.cuda_is_available():
        return []
    caps = {get_device_capability(i) for i in _builtins.range(device_count())}
    return [f"sm_{major}{minor}" for major, minor in sorted(caps)]


def get_gencode_flags() -> str:
    """:func:`get_arch_list` as NVCC's ``-gencode`` flags (empty without a GPU)."""
    return " ".join(f"-gencode compute=compute_{arch},code={kind}_{arch}"
                    for kind, arch in (a.split("_") for a in get_arch_list()))


def is_bf16_supported(including_emulation: _bool = True) -> _bool:
    """False: gradcore has no bfloat16 (NumPy has none)."""
    return False


# ---------------------------------------------------------------------------- streams

def _index(device) -> _int:
    """The GPU index ``device`` names (None or a negative int: the current one)."""
    if isinstance(device, _int) and not isinstance(device, _bool) and device < 0:
        device = None
    return _backend._cuda_index(device)


def _cupy_stream(stream):
    if isinstance(stream, Stream):
        return stream._stream
    raise TypeError(f"expected a gradcore.cuda.Stream, got {type(stream).__name__}")


class Stream:
    """A CUDA stream (CuPy's ``cupy.cuda.Stream``): a queue of work on one GPU that
    runs in order, apart from the work of other streams. ``with stream:`` (or
    ``gc.cuda.stream(stream)``) makes it current: gradcore's kernels and matrix products
    issued inside go to it. Made, as PyTorch's, not blocking with the legacy default
    stream (order work across streams with events, :meth:`wait_stream` or
    :meth:`wait_event`).

    Args:
        device: the GPU (None or a negative int: the current one).
        priority: lower numbers run first (CUDA maps it into the device's range).
    """

    def __init__(self, device=None, priority=0, **kwargs):
        index = _index(device)
        cupy = _backend.cuda_module()
        with cupy.cuda.Device(index):
            self._stream = cupy.cuda.Stream(non_blocking=True, priority=priority)
        self._index = index

    @classmethod
    def _of(cls, cupy_stream, index):
        s = object.__new__(cls)
        s._stream, s._index = cupy_stream, index
        return s

    @property
    def device(self):
        """The stream's GPU, as a device."""
        return _backend.device(f"cuda:{self._index}")

    @property
    def device_index(self) -> _int:
        """The index of the stream's GPU."""
        return self._index

    @property
    def cuda_stream(self) -> _int:
        """The stream's handle (``cudaStream_t``) as an int; 0 for the legacy default
        stream."""
        return _int(self._stream.ptr)

    @property
    def priority(self) -> _int:
        """The priority the stream was made with."""
        return _int(getattr(self._stream, "priority", 0) or 0)

    def wait_event(self, event) -> None:
        """Make the work issued to this stream from now on wait for ``event``."""
        event.wait(self)

    def wait_stream(self, stream) -> None:
        """Make the work issued to this stream from now on wait for the work issued to
        ``stream`` until now."""
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        """Record ``event`` (a new one by default) on this stream; returns it."""
        if event is None:
            event = Event()
        event.record(self)
        return event

    def query(self) -> _bool:
        """Whether all the work issued to this stream is done."""
        return _bool(self._stream.done)

    def synchronize(self) -> None:
        """Wait for all the work issued to this stream."""
        self._stream.synchronize()

    def __enter__(self):
        self._context = StreamContext(self)
        self._context.__enter__()
        return self

    def __exit__(self, *exc):
        self._context.__exit__(*exc)
        return False

    def __eq__(self, other):
        if isinstance(other, Stream):
            return self.cuda_stream == other.cuda_stream and self._index == other._index
        return False

    def __hash__(self):
        return hash((self.cuda_stream, self._index))

    def __repr__(self):
        return (f"<gradcore.cuda.Stream device={self.device} "
                f"cuda_stream={self.cuda_stream:#x}>")


class Event:
    """A CUDA event (CuPy's ``cupy.cuda.Event``): a marker recorded on a stream, to
    wait for the work before it, order streams or time GPU work.

    Args:
        enable_timing: whether :meth:`elapsed_time` can measure from or to it.
        blocking: whether :meth:`synchronize` blocks the thread (rather than spins).
        interprocess: whether it can be shared with other processes (not with timing).
    """

    def __init__(self, enable_timing=False, blocking=False, interprocess=False,
                 external=False):
        cupy = _backend.cuda_module()
        self.enable_timing = _bool(enable_timing)
        self._event = cupy.cuda.Event(block=_bool(blocking),
                                      disable_timing=not self.enable_timing,
                                      interprocess=_bool(interprocess))
        self._index = None  # the GPU of the stream it was recorded on (None: never)

    def record(self, stream=None) -> None:
        """Record the event on ``stream`` (the current stream by default): it completes
        when the work issued there before it is done."""
        if stream is None:
            stream = current_stream()
        if self._index is not None and stream._index != self._index:
            raise RuntimeError(f"Event device {self._index} does not match recording "
                               f"stream's device {stream._index}.")
        self._event.record(_cupy_stream(stream))
        self._index = stream._index

    def wait(self, stream=None) -> None:
        """Make the work issued to ``stream`` (the current stream by default) from now on
        wait for this event. Nothing when it was never recorded."""
        if self._index is None:
            return
        if stream is None:
            stream = current_stream()
        _cupy_stream(stream).wait_event(self._event)

    def query(self) -> _bool:
        """Whether the work before the event is done (True when never recorded)."""
        return self._index is None or _bool(self._event.done)

    def synchronize(self) -> None:
        """Wait for the work before the event (nothing when never recorded)."""
        if self._index is not None:
            self._event.synchronize()

    def elapsed_time(self, end_event) -> float:
        """Milliseconds from this event to ``end_event``: both recorded, made with
        ``enable_timing=True``, and done (:meth:`synchronize` ``end_event`` first)."""
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument "
                             "'enable_timing=True'.")
        if self._index is None or end_event._index is None:
            raise ValueError("Both events must be recorded before calculating elapsed "
                             "time.")
        if not (self.query() and end_event.query()):
            raise RuntimeError("Both events must be completed before calculating elapsed "
                               "time.")
        return float(_backend.cuda_module().cuda.get_elapsed_time(self._event,
                                                                  end_event._event))

    @property
    def device(self):
        """The GPU of the stream it was recorded on (None before)."""
        return None if self._index is None else _backend.device(f"cuda:{self._index}")

    @property
    def cuda_event(self) -> _int:
        """The event's handle (``cudaEvent_t``) as an int."""
        return _int(self._event.ptr)

    def __repr__(self):
        return f"<gradcore.cuda.Event {self.cuda_event:#x}>"


def current_stream(device=None) -> Stream:
    """The stream work on ``device`` goes to now (CuPy's current stream there)."""
    index = _index(device)
    cupy = _backend.cuda_module()
    with cupy.cuda.Device(index):
        return Stream._of(cupy.cuda.get_current_stream(), index)


def default_stream(device=None) -> Stream:
    """``device``'s default stream: CUDA's legacy stream, current unless another is
    set."""
    index = _index(device)
    return Stream._of(_backend.cuda_module().cuda.Stream.null, index)


def set_stream(stream) -> None:
    """Make ``stream`` current on its GPU (nothing for None). Prefer
    ``with gc.cuda.stream(s):``, which puts the previous one back."""
    if stream is None:
        return
    cupy_stream = _cupy_stream(stream)
    with _backend.cuda_module().cuda.Device(stream._index):
        cupy_stream.use()


class StreamContext:
    """A context manager making ``stream`` current inside its block (nothing for None,
    or without a usable GPU), then putting back the stream current before."""

    def __init__(self, stream):
        self.stream = stream
        self._prev = None

    def __enter__(self):
        if self.stream is None or not _backend.cuda_is_available():
            return None
        _cupy_stream(self.stream)
        index = self.stream._index
        prev_device = current_device()
        # (the current stream of the stream's GPU, and of the current one if another)
        self._prev = [current_stream(prev_device)]
        if index != prev_device:
            self._prev.append(current_stream(index))
        set_stream(self.stream)
        return None

    def __exit__(self, *exc):
        if self._prev is not None:
            for s in reversed(self._prev):
                set_stream(s)
            self._prev = None
        return False


def stream(stream) -> StreamContext:
    """``with gc.cuda.stream(s):``: ``s`` is the current stream inside the block (a
    no-op for None)."""
    return StreamContext(stream)


def is_current_stream_capturing() -> _bool:
    """Whether the current stream is capturing a CUDA graph (inside
    ``with gc.cuda.graph(g):``, or while ``gc.compile`` captures a step). False before
    gradcore has used a GPU; raises without one."""
    cupy = _backend.cuda_module()
    if not _backend.cuda_is_initialized():
        return False
    return _bool(cupy.cuda.get_current_stream().is_capturing())


# ----------------------------------------------------------------------------- memory

def empty_cache() -> None:
    """Give the memory pool's unused blocks back to the driver."""
    if _backend.cuda_is_available():
        _backend.cuda_empty_cache()


def _counts(device):
    """``(used, reserved)`` now, or None without a usable GPU."""
    if not _backend.cuda_is_available():
        return None
    return _backend.cuda_memory_of(_index(device))


def memory_allocated(device=None) -> _int:
    """Bytes held by tensors' arrays on the GPU (CuPy's default memory pool); 0 without
    a GPU."""
    counts = _counts(device)
    return 0 if counts is None else counts[0]


def memory_reserved(device=None) -> _int:
    """Bytes the memory pool holds from the driver; 0 without a GPU."""
    counts = _counts(device)
    return 0 if counts is None else counts[1]


def max_memory_allocated(device=None) -> _int:
    """The most bytes held by arrays at once since gradcore first used the GPU or the
    last :func:`reset_peak_memory_stats` (see the module's note on precision); 0
    without a GPU."""
    if not _backend.cuda_is_available():
        return 0
    return _backend.cuda_memory_stats(_index(device)).peak_used


def max_memory_reserved(device=None) -> _int:
    """The most bytes the pool held from the driver at once, since the same moment as
    :func:`max_memory_allocated`; 0 without a GPU."""
    if not _backend.cuda_is_available():
        return 0
    return _backend.cuda_memory_stats(_index(device)).peak_reserved


def reset_peak_memory_stats(device=None) -> None:
    """Start the peaks again from the counts of now. Raises without a GPU."""
    _backend.cuda_reset_peaks(_index(device))


def _reset_peaks_as(name, device) -> None:
    """``torch.cuda.<name>`` (deprecated): :func:`reset_peak_memory_stats`, with PyTorch's
    FutureWarning, pointing at the caller's caller."""
    import warnings  # noqa: PLC0415

    warnings.warn(f"torch.cuda.{name} now calls torch.cuda.reset_peak_memory_stats, which "
                  "resets /all/ peak memory stats.", FutureWarning, stacklevel=3)
    reset_peak_memory_stats(device)


def reset_max_memory_allocated(device=None) -> None:
    """:func:`reset_peak_memory_stats` (which resets every peak), with PyTorch's
    FutureWarning."""
    _reset_peaks_as("reset_max_memory_allocated", device)


def reset_max_memory_cached(device=None) -> None:
    """:func:`reset_peak_memory_stats` (which resets every peak), with PyTorch's
    FutureWarning."""
    _reset_peaks_as("reset_max_memory_cached", device)


def _warn_renamed(old, new) -> None:
    """PyTorch's FutureWarning for ``torch.cuda.<old>``, now ``<new>``, pointing at the
    caller's caller."""
    import warnings  # noqa: PLC0415

    warnings.warn(f"`torch.cuda.{old}` has been renamed to `torch.cuda.{new}`",
                  FutureWarning, stacklevel=3)


def memory_cached(device=None) -> _int:
    """Deprecated; see :func:`memory_reserved`."""
    _warn_renamed("memory_cached", "memory_reserved")
    return memory_reserved(device)


def max_memory_cached(device=None) -> _int:
    """Deprecated; see :func:`max_memory_reserved`."""
    _warn_renamed("max_memory_cached", "max_memory_reserved")
    return max_memory_reserved(device)


def memory_stats(device=None) -> dict:
    """PyTorch's allocator statistics, those gradcore knows (an empty dict without a
    GPU), by PyTorch's keys: ``allocated_bytes.all.current`` / ``.peak`` (bytes held by
    arrays), ``active_bytes.all.*`` (the same: CuPy's pool holds no block that is freed
    but still in use by a stream), ``reserved_bytes.all.*`` (taken from the driver),
    ``allocation.all.allocated`` (the allocations the pool served), ``num_ooms``. The
    peaks and counts are from gradcore's first use of the GPU, or the last reset (the
    module's note says what they leave out)."""
    if not _backend.cuda_is_available():
        return _collections.OrderedDict()
    index = _index(device)
    used, reserved = _backend.cuda_memory_of(index)
    stats = _backend.cuda_memory_stats(index)
    values = {
        "allocated_bytes.all.current": used, "allocated_bytes.all.peak": stats.peak_used,
        "active_bytes.all.current": used, "active_bytes.all.peak": stats.peak_used,
        "reserved_bytes.all.current": reserved,
        "reserved_bytes.all.peak": stats.peak_reserved,
        "allocation.all.allocated": stats.allocations, "num_ooms": stats.ooms,
    }
    return _collections.OrderedDict(sorted(values.items()))


def _format_bytes(n: _int) -> str:
    for unit, size in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= 10 * size:  # (PyTorch's rule: a unit once the number reaches 10 of it)
            return f"{n // size:6d} {unit}"
    return f"{n:6d} B  "


def memory_summary(device=None, abbreviated: _bool = False) -> str:
    """A table of :func:`memory_stats` for a person to read: the bytes held by arrays,
    active and reserved, now and at their peaks, and the counts. Raises without a GPU."""
    index = _index(device)
    s = memory_stats(index)
    rule, thin = "|" + "=" * 75 + "|", "|" + "-" * 75 + "|"
    lines = [rule,
             f"| {'gradcore CUDA memory summary, device ID ' + str(index):<74}|", thin,
             f"| {'CuPy default memory pool; peaks since first use or last reset':<74}|",
             rule,
             f"| {'Metric':<27}| {'Cur Usage':>12}  | {'Peak Usage':>12}  | {'':>14}|",
             thin]
    for name, key in (("Allocated memory", "allocated_bytes"),
                      ("Active memory", "active_bytes"),
                      ("GPU reserved memory", "reserved_bytes")):
        cur, peak = s[f"{key}.all.current"], s[f"{key}.all.peak"]
        lines.append(f"| {name:<27}| {_format_bytes(cur):>12}  | "
                     f"{_format_bytes(peak):>12}  | {'':>14}|")
    lines += [thin,
              f"| {'Allocations served':<27}| {s['allocation.all.allocated']:>12}  | "
              f"{'':>12}  | {'':>14}|",
              f"| {'Out-of-memory errors':<27}| {s['num_ooms']:>12}  | {'':>12}  | "
              f"{'':>14}|",
              rule]
    return "\n".join(lines) + "\n"


def mem_get_info(device=None) -> tuple:
    """``(free, total)`` bytes of the GPU's memory, as its driver reports them
    (``cudaMemGetInfo``): what other processes and CuPy's pool took is not free."""
    index = _index(device)
    cupy = _backend.cuda_module()
    with cupy.cuda.Device(index):
        free, total = cupy.cuda.runtime.memGetInfo()
    return (_int(free), _int(total))


# ------------------------------------------------------------------------------ seeds

def manual_seed(value) -> None:
    """Seed the default generator (the one GPU tensors' draws come from too)."""
    _random.manual_seed(value)


manual_seed_all = manual_seed


def seed() -> None:
    """Seed the default generator from the operating system's entropy."""
    _random.seed()


seed_all = seed


def initial_seed() -> _int:
    """The seed the default generator was last seeded with (``gc.initial_seed()``)."""
    return _random.initial_seed()


def get_rng_state(device="cuda"):
    """The default generator's state (GPU draws come from it)."""
    return _random.get_rng_state()


def set_rng_state(new_state, device="cuda") -> None:
    """Restore the default generator's state from ``get_rng_state()``."""
    _random.set_rng_state(new_state)


def get_rng_state_all() -> list:
    """One state per GPU, as PyTorch's: here the default generator's, once for each
    (every GPU's draws come from it); empty without a GPU."""
    return [get_rng_state(i) for i in _builtins.range(device_count())]


def set_rng_state_all(new_states) -> None:
    """Restore the states of :func:`get_rng_state_all`, one per GPU (all of them the
    default generator's, so the last one given is the state it keeps)."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


class _DefaultGenerators(_collections.abc.Sequence):
    """``gc.cuda.default_generators``: one generator per GPU, as PyTorch's tuple; here
    ``gc.default_generator`` for each (every GPU's draws come from it); empty without a
    GPU. The GPUs are counted when it is read, never at import."""

    def _items(self) -> tuple:
        return tuple(_random.default_generator for _ in _builtins.range(device_count()))

    def __getitem__(self, i):
        return self._items()[i]

    def __len__(self):
        return device_count()

    def __eq__(self, other):
        return self._items() == (tuple(other) if isinstance(other, (tuple, list)) else other)

    __hash__ = None

    def __repr__(self):
        return repr(self._items())


default_generators = _DefaultGenerators()
