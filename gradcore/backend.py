"""The one module that knows NumPy from CuPy.

A :class:`Device` says which array module serves it (``xp``) and how to move arrays
there.  Everything else asks a device (or :func:`math_of` for an array) instead of
importing CuPy or testing for it.  CUDA is probed lazily, the first time something
asks for it, never at import time.
"""

from __future__ import annotations

import collections
import math as _math
import os
import re
import threading

import numpy as np

from . import _cephes

__all__ = [
    "Device",
    "device",
    "cpu",
    "cuda_is_available",
    "cuda_unavailable_reason",
    "get_default_device",
    "set_default_device",
    "device_of",
    "math_of",
    "CudaUnavailableError",
]


class DeviceStringError(RuntimeError, ValueError):
    """A device string gradcore cannot parse: PyTorch's RuntimeError (and a ValueError,
    which gradcore raised before)."""


class CudaUnavailableError(RuntimeError):
    """CUDA was asked for explicitly but cannot be used; the message says why."""


# the device types PyTorch 2.13 knows (its error for others lists them)
_TORCH_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep",
                       "hip", "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta",
                       "hpu", "mtia", "privateuseone")
_DEVICE_STRING = re.compile(r"([a-z_]+)(?::(0|[1-9][0-9]*))?")


class _DeviceType(type):
    """``gc.device(...)`` is PyTorch's ``torch.device(...)``: the class (``isinstance(x,
    gc.device)``) whose call parses a string, a type and an index, or a GPU's number,
    into the one Device of that place."""

    def __call__(cls, type=None, index=None):  # noqa: A002 - PyTorch's argument names
        if isinstance(type, Device) and index is None:
            return type
        if isinstance(type, bool) or not isinstance(type, (str, int)) or \
                (index is not None and (isinstance(index, bool) or not isinstance(index, int))):
            got = ", ".join(x.__class__.__name__ for x in (type, index) if x is not None)
            raise TypeError(f"device() received an invalid combination of arguments - got "
                            f"({got or 'NoneType'}), but expected one of:\n"
                            " * (torch.device device)\n * (str type, int index = -1)")
        if isinstance(type, int):  # (a number: the accelerator's device of that index)
            if index is not None or not cuda_is_available():
                raise RuntimeError("Cannot access accelerator device when none is available.")
            return device(f"cuda:{type}")
        m = _DEVICE_STRING.fullmatch(type)
        kind, idx = m.groups() if m else (type.split(":")[0], None)
        if kind not in _TORCH_DEVICE_TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_TORCH_DEVICE_TYPES)} device type "
                               f"at start of device string: {type}")
        if m is None:
            raise RuntimeError(f"Invalid device string: '{type}'")
        if kind not in ("cpu", "cuda"):
            raise RuntimeError(f"gradcore has no '{kind}' device: its tensors live on 'cpu' "
                               "(NumPy) or 'cuda' (CuPy)")
        if index is not None:
            if idx is not None:
                raise RuntimeError(f"type (string) must not include an index because index "
                                   f"was passed explicitly: {type}")
            if index < 0:
                raise RuntimeError(f"Device index must not be negative, got {index}")
            idx = str(index)
        return device(kind if idx is None or kind == "cpu" else f"{kind}:{idx}")


class Device(metaclass=_DeviceType):
    """A place where arrays live: ``cpu``, ``cuda`` or ``cuda:N``: PyTorch's
    ``torch.device`` (``gc.device``). ``gc.device("cuda:0")``, ``gc.device("cuda", 0)``
    and ``gc.device(0)`` (a GPU's number) give the one Device of that place; it is
    equal to its string (``device == "cpu"``), and ``with gc.device("cuda"):`` makes it
    the default device inside the block, as in PyTorch.

    Attributes:
        type: ``"cpu"`` or ``"cuda"``.
        index: the GPU's index, or None (the CPU, or ``"cuda"`` without one).

    >>> Device("cpu")
    device(type='cpu')
    """

    __slots__ = ("type", "index", "_math", "_outer")

    @classmethod
    def _make(cls, type: str, index: int | None = None) -> Device:  # noqa: A002
        """A new Device (only the parser ``device()`` makes them: one per place)."""
        dev = object.__new__(cls)
        dev.type, dev.index, dev._math, dev._outer = type, index, None, []
        return dev

    def __reduce__(self):  # (unpickled: the one Device of that place)
        return device, (str(self),)

    def __enter__(self):
        """The default device inside the block (PyTorch's ``with torch.device(...)``)."""
        self._outer.append(get_default_device())
        set_default_device(self)
        return self

    def __exit__(self, *exc):
        set_default_device(self._outer.pop())
        return False

    # -- identity -------------------------------------------------------------------
    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except (ValueError, CudaUnavailableError):
                return False
        if not isinstance(other, Device):
            return NotImplemented
        return self.type == other.type and (self.index or 0) == (other.index or 0)

    def __hash__(self):
        return hash((self.type, self.index or 0))

    # -- arrays ---------------------------------------------------------------------
    @property
    def math(self) -> ArrayMath:
        """The array namespace (NumPy or CuPy, plus the fused kernels) of this device."""
        if self._math is None:
            if self.type == "cpu":
                self._math = _cpu_math()
            else:
                self._math = _cuda_math(self.index or 0)
        return self._math

    @property
    def xp(self):
        """The array module: ``numpy`` on the CPU, ``cupy`` on CUDA."""
        return self.math.xp

    def asarray(self, data, dtype=None):
        """``data`` (list, scalar, NumPy or device array) as an array on this device."""
        return self.math.asarray(data, dtype)


_devices: dict[tuple[str, int | None], Device] = {}
cpu = Device._make("cpu")
_devices[("cpu", None)] = cpu


def device(spec) -> Device:
    """Parse ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or a :class:`Device` into a Device."""
    if isinstance(spec, Device):
        return spec
    if spec is None:
        return get_default_device()
    if not isinstance(spec, str):
        type_name = getattr(spec, "type", None)  # e.g. torch.device
        if isinstance(type_name, str):
            spec = str(spec)
        else:
            raise TypeError(f"expected a device string like 'cpu' or 'cuda:0', got {spec!r}")
    text = spec.strip().lower()
    kind, _, idx = text.partition(":")
    if kind not in ("cpu", "cuda"):
        raise DeviceStringError(f"unknown device {spec!r}: expected 'cpu', 'cuda' or "
                                "'cuda:N'")
    index = None
    if idx:
        if not idx.isdigit():
            raise DeviceStringError(f"bad device index in {spec!r}")
        index = int(idx)
    if kind == "cpu":
        return cpu
    key = (kind, index)
    dev = _devices.get(key)
    if dev is None:
        dev = _devices[key] = Device._make(kind, index)
    return dev


# --------------------------------------------------------------------------------------
# CUDA probing (lazy)
# --------------------------------------------------------------------------------------
_cuda_lock = threading.Lock()
_cuda_probe: tuple[object, str | None] | None = None  # (cupy module or None, reason)


def _probe_cuda():
    """Import CuPy and look for a usable GPU once; remember why not if it fails."""
    global _cuda_probe
    with _cuda_lock:
        if _cuda_probe is not None:
            return _cuda_probe
        try:
            import cupy  # noqa: PLC0415  (the only CuPy import in gradcore)
        except Exception as exc:  # ImportError, or a broken install raising anything
            _cuda_probe = (None, f"CuPy is not installed or failed to import ({exc}); "
                                 "install gradcore[cuda12] or gradcore[cuda13]")
            return _cuda_probe
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:
            msg = str(exc)
            if "driver" in msg.lower() or "libcuda" in msg.lower():
                reason = f"the NVIDIA driver is missing or unusable ({msg})"
            else:
                reason = f"no usable CUDA device ({msg})"
            _cuda_probe = (None, reason)
            return _cuda_probe
        if count == 0:
            _cuda_probe = (None, "no CUDA device found (the driver reports 0 GPUs)")
            return _cuda_probe
        _cuda_probe = (cupy, None)
        return _cuda_probe


def _use_cuda_module_for_tests(module) -> None:
    """TEST ONLY, not part of the API: serve CUDA with ``module`` (the CuPy stand-in
    kept under ``tests/``), or with ``None`` forget it and probe the real CuPy again.

    Only the test suite calls this (``tests/conftest.py``, device ``cuda-standin``);
    nothing reads ``GRADCORE_DEVICE`` or any other setting to reach it.
    """
    global _cuda_probe
    with _cuda_lock:
        global _tracking
        if _tracking is not None and _cuda_probe is not None and _cuda_probe[0] is not None:
            cuda = _cuda_probe[0].cuda  # (the module served until now gets its own back)
            if cuda.get_allocator() is _tracking:
                cuda.set_allocator(_cuda_probe[0].get_default_memory_pool().malloc)
        _tracking = None
        _memory_stats.clear()
        _cuda_probe = None if module is None else (module, None)
        _cuda_maths.clear()
        for dev in _devices.values():
            if dev.type == "cuda":
                dev._math = None


def cuda_runtime_version() -> str | None:
    """The CUDA runtime version CuPy was built against, as ``"12.4"`` (``torch.version.cuda``
    reads it), or None where CuPy cannot be imported or does not say. Needs no GPU."""
    cupy = _probe_cuda()[0]
    if cupy is None:
        try:
            import cupy  # noqa: PLC0415  (as in _probe_cuda: a GPU is not needed here)
        except Exception:  # ImportError, or a broken install raising anything
            return None
    try:
        v = int(cupy.cuda.runtime.runtimeGetVersion())
    except Exception:  # (no CUDA runtime library, or a stand-in without one)
        return None
    return f"{v // 1000}.{v % 1000 // 10}"


def cuda_is_available() -> bool:
    """True when CuPy imports and at least one GPU is usable."""
    return _probe_cuda()[0] is not None


def cuda_unavailable_reason() -> str | None:
    """Why CUDA cannot be used, or None when it can."""
    return _probe_cuda()[1]


def cuda_device_count() -> int:
    cupy = _probe_cuda()[0]
    return 0 if cupy is None else int(cupy.cuda.runtime.getDeviceCount())


def _cuda_index(dev) -> int:
    """The GPU index that ``dev`` (None: the current one, an int, ``"cuda:1"``, a
    Device) names."""
    cupy = _require_cupy()
    if dev is None:
        return int(cupy.cuda.runtime.getDevice())
    if isinstance(dev, int) and not isinstance(dev, bool):
        index = dev
    else:
        d = device(dev)
        if d.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {d}")
        index = d.index if d.index is not None else int(cupy.cuda.runtime.getDevice())
    count = int(cupy.cuda.runtime.getDeviceCount())
    if not 0 <= index < count:
        raise RuntimeError(f"CUDA error: invalid device ordinal (device {index}; "
                           f"{count} device(s))")
    return index


def cuda_synchronize(dev=None) -> None:
    """Wait for all work on the GPU ``dev`` (the current one by default)."""
    index = _cuda_index(dev)
    _require_cupy().cuda.Device(index).synchronize()


def cuda_current_device() -> int:
    return _cuda_index(None)


def cuda_set_device(dev) -> None:
    _require_cupy().cuda.Device(_cuda_index(dev)).use()


def cuda_device_properties(dev=None) -> dict:
    """``name``, ``total_memory``, ``major``, ``minor``, ``multi_processor_count`` of a GPU."""
    props = _require_cupy().cuda.runtime.getDeviceProperties(_cuda_index(dev))
    name = props.get("name", b"")
    return {"name": name.decode() if isinstance(name, bytes) else str(name),
            "total_memory": int(props.get("totalGlobalMem", 0)),
            "major": int(props.get("major", 0)), "minor": int(props.get("minor", 0)),
            "multi_processor_count": int(props.get("multiProcessorCount", 0))}


def cuda_empty_cache() -> None:
    """Give the unused blocks of CuPy's default memory pool back to the driver (its
    counts: :func:`cuda_memory_of`)."""
    _require_cupy().get_default_memory_pool().free_all_blocks()


def cuda_init() -> None:
    """Set up gradcore's CUDA state on the current GPU now rather than at first use."""
    _cuda_math(cuda_current_device())


def cuda_is_initialized() -> bool:
    """Whether gradcore has set up its CUDA state (a GPU used, or :func:`cuda_init`)."""
    return bool(_cuda_maths)


def cuda_memory_of(index: int) -> tuple:
    """``(used, reserved)`` bytes of CuPy's default memory pool on GPU ``index``: held by
    arrays, and taken from the driver."""
    cupy = _require_cupy()
    pool = cupy.get_default_memory_pool()
    with cupy.cuda.Device(index):  # (a pool's counts are its current device's)
        return int(pool.used_bytes()), int(pool.total_bytes())


class CudaMemoryStats:
    """What gradcore tracks of one GPU's memory: the peaks of the default pool's used
    and reserved bytes, the allocations served and the out-of-memory failures. Read at
    each allocation through the default pool once :func:`track_cuda_memory` has put its
    allocator in place (they start from the counts of that moment, or of the last
    reset)."""

    __slots__ = ("peak_used", "peak_reserved", "allocations", "ooms")

    def __init__(self):
        self.peak_used = self.peak_reserved = self.allocations = self.ooms = 0


# (a GPU's statistics made at its first allocation, or first read: zeros, its peaks
# then raised to the counts of that moment)
_memory_stats: collections.defaultdict[int, CudaMemoryStats] = \
    collections.defaultdict(CudaMemoryStats)
_tracking = None  # the allocator wrapping the default pool's malloc, once in place


def cuda_memory_stats(index: int) -> CudaMemoryStats:
    """The tracked statistics of GPU ``index`` (its peaks at least the counts of now)."""
    track_cuda_memory()
    used, reserved = cuda_memory_of(index)
    stats = _memory_stats[index]
    stats.peak_used = max(stats.peak_used, used)
    stats.peak_reserved = max(stats.peak_reserved, reserved)
    return stats


def cuda_reset_peaks(index: int) -> None:
    """Peaks from now on: the counts of now."""
    track_cuda_memory()
    used, reserved = cuda_memory_of(index)
    stats = _memory_stats[index]
    stats.peak_used, stats.peak_reserved = used, reserved


def track_cuda_memory() -> bool:
    """Put in place (once) the allocator that reads the default pool's counts at each
    allocation (``cupy.cuda.set_allocator``): the peaks of ``gc.cuda.max_memory_*``.
    Done when gradcore first uses a GPU. Where another allocator than the default pool's
    was set, it is left alone and nothing is tracked (False). An allocation the pool
    cannot serve raises ``OutOfMemoryError`` (gradcore's, PyTorch's
    ``torch.OutOfMemoryError``), CuPy's message kept."""
    global _tracking
    cupy = _require_cupy()
    current = cupy.cuda.get_allocator()
    if _tracking is not None and current is _tracking:
        return True
    pool = cupy.get_default_memory_pool()
    if current != pool.malloc:
        return False
    malloc, used_bytes, total_bytes = pool.malloc, pool.used_bytes, pool.total_bytes
    cupy_oom = cupy.cuda.memory.OutOfMemoryError

    def allocate(size):
        try:
            ptr = malloc(size)
        except cupy_oom as exc:
            _memory_stats[int(cupy.cuda.runtime.getDevice())].ooms += 1
            raise OutOfMemoryError(str(exc)) from exc
        stats = _memory_stats[ptr.device_id]
        stats.allocations += 1
        used = used_bytes()  # (the pool's counts are the current device's: ptr's)
        if used > stats.peak_used:
            stats.peak_used = used
        reserved = total_bytes()
        if reserved > stats.peak_reserved:
            stats.peak_reserved = reserved
        return ptr

    cupy.cuda.set_allocator(allocate)
    _tracking = allocate
    return True


class OutOfMemoryError(RuntimeError):
    """A GPU allocation failed: the memory is exhausted (PyTorch's
    ``torch.OutOfMemoryError``, also ``torch.cuda.OutOfMemoryError``). Raised in place of
    CuPy's ``OutOfMemoryError`` by allocations through the default memory pool."""

    __module__ = "gradcore"


def cuda_module():
    """CuPy, for ``gc.cuda``'s streams, events and NVTX ranges (the error saying why
    when CUDA is unusable)."""
    return _require_cupy()


def _require_cupy():
    cupy, reason = _probe_cuda()
    if cupy is None:
        raise CudaUnavailableError(f"CUDA was requested but cannot be used: {reason}")
    return cupy


# --------------------------------------------------------------------------------------
# The default device
# --------------------------------------------------------------------------------------
_default_device: Device | None = None


def _device_from_env() -> Device:
    spec = os.environ.get("GRADCORE_DEVICE", "auto").strip().lower() or "auto"
    if spec == "auto":
        return device("cuda") if cuda_is_available() else cpu
    dev = device(spec)
    if dev.type == "cuda":
        _require_cupy()
    return dev


def get_default_device() -> Device:
    """The device new tensors go to: ``GRADCORE_DEVICE`` (cpu, cuda, auto; default auto)."""
    global _default_device
    if _default_device is None:
        _default_device = _device_from_env()
    return _default_device


def set_default_device(spec) -> None:
    """Set the device new tensors go to (``None`` re-reads ``GRADCORE_DEVICE``)."""
    global _default_device
    if spec is None:
        _default_device = None
        return
    dev = device(spec)
    if dev.type == "cuda":
        _require_cupy()
    _default_device = dev


# --------------------------------------------------------------------------------------
# Array namespaces
# --------------------------------------------------------------------------------------
# The kernel registry (gradcore.kernels fills it when it is imported, with the package):
# the names it answers and the function that makes a kernel for a namespace.
_kernel_names: set | frozenset = frozenset()
_kernel_implementation = None


def register_kernels(implementation, names) -> None:
    """Let array namespaces answer ``names`` with ``implementation(math, name)``
    (called by :mod:`gradcore.kernels`, the layer above, at import). ``names`` is kept
    as given, not copied: a set the registry adds to later (a kernel an op declares
    when its module is imported) is answered too."""
    global _kernel_names, _kernel_implementation
    _kernel_names, _kernel_implementation = names, implementation
    for m in (_cpu_math_obj, *_cuda_maths.values()):
        if m is not None:
            m.use_device_kernels(m.device_kernels)


def cuda_kernels_enabled() -> bool:
    """Whether CUDA devices run gradcore's own kernels (the default) rather than the
    same expressions over CuPy's ufuncs (``GRADCORE_CUDA_KERNELS=0``)."""
    return os.environ.get("GRADCORE_CUDA_KERNELS", "1") != "0"


_INT64 = np.dtype(np.int64)
# the dtypes PyTorch's CPU cumsum/cumprod accumulate in (``acc_type``)
_CUM_ACC = {np.dtype(np.float16): np.dtype(np.float32),
            np.dtype(np.float32): np.dtype(np.float64)}


class ArrayMath:
    """The array module of one device plus the few helpers the ops need.

    Attribute access falls through to the array module (``math.tanh`` is ``xp.tanh``),
    and a kernel's name (``math.tanh_backward``) to the kernel registry of
    :mod:`gradcore.kernels`, which says where it is declared; either answer is kept.
    """

    device_kernels = False  # whether the kernels are device launches (CUDA only)
    # whether ops may read array values to check them (an index in range, ...): on a GPU
    # that would wait for the device, so only the CPU does
    values_on_host = False

    def __init__(self, xp, dev: Device):
        self.xp = xp
        self.device = dev
        self.ndarray = xp.ndarray

    def __getattr__(self, name):
        if name in _kernel_names:
            value = _kernel_implementation(self, name)
        else:
            value = getattr(self.xp, name)
        self.__dict__[name] = value  # kept: later lookups are plain attribute reads
        return value

    def use_device_kernels(self, on: bool) -> None:
        """Run the kernels as device launches or not (a CUDA device whose compiler
        failed turns them off): the kernels are looked up again on next use."""
        self.device_kernels = bool(on)
        for name in _kernel_names:
            self.__dict__.pop(name, None)

    def either(self, cond, if_true, if_false):
        """``where(cond, if_true(), if_false())`` for a 0-d ``cond``, the branches given
        as functions. Where values are on the host, reading ``cond`` costs nothing and
        only the branch needed is computed; on a device both are, and the choice is
        made there (reading ``cond`` back would wait for the device)."""
        if self.values_on_host:
            return if_true() if cond else if_false()
        return self.where(cond, if_true(), if_false())

    def asarray(self, data, dtype=None):
        return self.xp.asarray(data, dtype=dtype)

    def backward_seed(self, like):
        """Ones of ``like``'s shape (one element) and dtype to start a backward pass
        from: a view of a one kept per dtype, so that no launch makes it after the
        first (read-only on NumPy; the engine never writes into a gradient it did not
        make). While a step is recorded on the CPU, or captured before a one was made,
        a new array: a one made there would belong to the recording or to the graph's
        memory."""
        ones = self.__dict__.setdefault("_seeds", {})
        dtype = like.dtype
        one = ones.get(dtype)
        host = self.xp is np
        if _capture_read is not None and (one is None or host):
            # (a CPU recording replays what it made alone; a graph reads a one made
            # before its capture)
            return self.xp.ones_like(like)
        if one is None:
            if host:
                one = np.ones((), dtype=dtype)
                one.flags.writeable = False
            else:
                one = self.asarray(np.ones((), dtype=dtype))  # (on this device)
            ones[dtype] = one
        return one if like.ndim == 0 else self.xp.broadcast_to(one, like.shape)

    @staticmethod
    def constant(arr):
        """A saved array as a rule's operand: the array itself (under
        ``create_graph=True`` the tensor namespace wraps it as a constant tensor)."""
        return arr

    @staticmethod
    def to_device(arr, dev):
        """``arr`` copied to device ``dev`` (a gradient going back across devices)."""
        if dev.type == "cuda":
            return dev.asarray(arr)
        return to_host(arr).copy()  # (to_host read at call time: a profile replaces it)

    def sum_to(self, grad, shape):
        """Undo broadcasting: sum ``grad`` down to ``shape`` (the one shared rule).

        Axes along which ``grad`` is itself a broadcast (stride 0, e.g. the gradient of
        a ``sum``) are not read element by element: their sum is one slice times the
        length of the axis.  The result is always a new array.
        """
        gshape = grad.shape
        if gshape == shape:
            return grad
        axes = _SUM_AXES.get((gshape, shape))
        if axes is None:
            axes = summed_axes(gshape, shape)
        strides = getattr(grad, "strides", None)
        if strides is not None:
            for a in axes:
                if strides[a] == 0:
                    return self._sum_to_broadcast(grad, shape, axes)
        out = grad.sum(axis=axes)
        if type(out) is not self.ndarray:  # NumPy gives a scalar for a full reduction
            out = self.xp.asarray(out)
        return out if out.shape == shape else out.reshape(shape)

    def _sum_to_broadcast(self, grad, shape, axes):
        if grad.size == 0:  # (expanded to a zero-size shape: nothing flowed back)
            return self.xp.zeros(shape, dtype=grad.dtype)
        flat = tuple(a for a in axes if grad.strides[a] == 0)
        count = 1
        for a in flat:
            count *= grad.shape[a]
        grad = grad[tuple(slice(0, 1) if a in flat else slice(None) for a in range(grad.ndim))]
        rest = tuple(a for a in axes if a not in flat)
        out = grad.sum(axis=rest, keepdims=True) if rest else grad
        return self.xp.asarray(out * count).reshape(shape)

    def mul_sum_to_any(self, g, other, shape):
        """``sum_to(g * other, shape)`` without materialising ``g * other`` (what the
        registry's ``mul_sum_to`` runs, unless a device kernel does it in one pass).

        The gradient of a broadcast operand of ``mul`` (a weight or scale vector): when
        ``g`` is a broadcast constant (the gradient of ``sum``/``mean``) this is one
        reduction of ``other``; otherwise one ``einsum`` pass with no temporary.
        """
        full = g.shape
        if tuple(shape) == full:  # nothing to reduce: a plain product (einsum is slower)
            return self.xp.asarray(g * other)  # (an array, also for 0-d operands)
        if getattr(g, "strides", None) is not None and not any(g.strides) and g.size:
            c = g.reshape(-1)[0]
            o = other if getattr(other, "shape", ()) == full else self.xp.broadcast_to(other,
                                                                                      full)
            return self.sum_to(o, shape) * c
        if self.xp is not np:  # CuPy's einsum calls cuBLAS, which a CUDA graph cannot
            return self.sum_to(self.xp.asarray(g * other), shape)  # capture through CuPy
        nd = len(full)
        letters = "abcdefghijklmnopqrstuvwxyz"[:nd]
        o_nd = getattr(other, "ndim", 0)
        keep = nd - len(shape)
        out_sub = "".join(letters[i] for i in range(keep, nd) if shape[i - keep] != 1 or
                          full[i] == 1)
        res = self.xp.einsum(f"{letters},{letters[nd - o_nd:]}->{out_sub}", g, other)
        return self.xp.asarray(res).reshape(shape)

    def scatter_into_zeros(self, g, axis, index, shape):
        """Zeros of ``shape`` with ``g`` put at ``index`` along ``axis``."""
        out = self.xp.zeros(shape, dtype=g.dtype)
        self.xp.put_along_axis(out, index, g, axis=axis)
        return out

    def index_add_into_zeros(self, g, index, shape, keep_zero=None):
        """Zeros of ``shape`` plus ``g`` added at ``index`` (repeated indices accumulate);
        the rows at ``keep_zero`` (an embedding's padding row) stay zero."""
        out = self.xp.zeros(shape, dtype=g.dtype)
        self.add_at(out, index, g)
        if keep_zero is not None:
            out[keep_zero] = 0
        return out

    def place_into_zeros(self, g, index, shape):
        """Zeros of ``shape`` with ``g`` written at the (basic) ``index``."""
        out = self.xp.zeros(shape, dtype=g.dtype)
        out[index] = g
        return out

    def zero_at(self, g, index):
        """A copy of ``g`` with the elements at ``index`` set to zero."""
        out = g.copy()
        out[index] = 0
        return out

    def einsum(self, subscripts, *operands):
        """``xp.einsum`` with its contractions ordered (``optimize="greedy"``: BLAS
        products, several times faster from a few hundred elements on, where the plain
        loop is faster below), float16 computed in float32 and rounded once (PyTorch
        accumulates half products in float32), and an array, never a scalar."""
        half = operands and operands[0].dtype == np.float16
        if half:
            operands = [o.astype(np.float32) for o in operands]
        big = len(operands) > 2 or max((o.size for o in operands), default=0) >= 512
        out = self.xp.asarray(self.xp.einsum(subscripts, *operands,
                                             optimize="greedy" if big else False))
        return out.astype(np.float16) if half else out

    def address(self, arr) -> int:
        """The address of ``arr``'s first element."""
        return int(arr.__array_interface__["data"][0])

    def positions_in(self, view, base) -> tuple:
        """Where each element of ``view`` lies in ``base`` (``view`` looks into
        ``base``'s memory): a tuple of ``view``-shaped index arrays into ``base``."""
        xp = self.xp

        def byte_offsets(arr, start):
            off = xp.full(arr.shape, start, dtype=np.int64)
            for k, (n, stride) in enumerate(zip(arr.shape, arr.strides)):
                shape = [1] * arr.ndim
                shape[k] = n
                off = off + (xp.arange(n, dtype=np.int64) * stride).reshape(shape)
            return off

        wanted = byte_offsets(view, self.address(view) - self.address(base))
        if base.flags.c_contiguous:
            flat = wanted // base.itemsize
        else:
            have = byte_offsets(base, 0).reshape(-1)
            order = xp.argsort(have)
            flat = order[xp.searchsorted(have[order], wanted)]
        # (flat positions to indices by division, not unravel_index: CuPy's checks the
        # positions' range on the host, which waits for the device)
        index = []
        for n in reversed(base.shape):
            index.append(flat % n)
            flat = flat // n
        return tuple(reversed(index))

    def pinv(self, a, rcond):
        """The Moore-Penrose pseudo-inverse of each matrix of ``a`` (its last two axes),
        from its singular value decomposition: the reciprocals of the singular values
        above ``rcond`` times the largest, zero for the others (as NumPy's and PyTorch's,
        but through ``where``: CuPy's ``linalg.pinv`` zeroes them by a boolean mask,
        whose count it reads back to the host)."""
        xp = self.xp
        if a.size == 0:
            return xp.zeros(a.shape[:-2] + (a.shape[-1], a.shape[-2]), dtype=a.dtype)
        u, s, vt = xp.linalg.svd(a.conj() if a.dtype.kind == "c" else a,
                                 full_matrices=False)
        large = s > rcond * s.max(axis=-1, keepdims=True)
        s_inv = xp.where(large, 1 / xp.where(large, s, 1), 0).astype(s.dtype, copy=False)
        return xp.matmul(vt.swapaxes(-1, -2), s_inv[..., None] * u.swapaxes(-1, -2))

    @staticmethod
    def astype(arr, dtype):
        return arr.astype(dtype)

    def owns(self, arr) -> bool:
        """True when ``arr`` is a writable array that views no other array."""
        return arr.base is None and arr.flags.writeable

    def cumsum(self, a, axis, dtype=None):
        """PyTorch's ``cumsum`` of an array along ``axis`` (:meth:`_cumulative`)."""
        return self._cumulative(self.xp.cumsum, a, axis, dtype)

    def cumprod(self, a, axis, dtype=None):
        """PyTorch's ``cumprod`` of an array along ``axis`` (:meth:`_cumulative`)."""
        return self._cumulative(self.xp.cumprod, a, axis, dtype)

    def _cumulative(self, fn, a, axis, dtype):
        """A new array of ``dtype`` (default ``a``'s; int64 for integers and bools, as
        PyTorch promotes them), ``a`` cast to it first; float16 accumulated in float32
        and float32 in float64, each output rounded, as PyTorch's CPU kernels do. A 0-d
        ``a`` is its own result."""
        res = np.dtype(dtype) if dtype is not None else \
            _INT64 if a.dtype.kind in "biu" else a.dtype
        if a.dtype != res:
            a = a.astype(res)
        if a.ndim == 0:
            return a.copy()
        out = fn(a, axis=axis, dtype=_CUM_ACC.get(res, res))
        return out if out.dtype == res else out.astype(res)

    def scan(self, a, axis, combine):
        """The inclusive scan of ``a`` along ``axis`` under the associative, elementwise
        ``combine(earlier, later)``: ``out[k] = a[0] (+) a[1] (+) ... (+) a[k]``, by
        doubling (log2(n) whole-array steps, the same on every device; no ``ufunc``
        method CuPy may lack, no value read back)."""
        xp = self.xp
        n = a.shape[axis] if a.ndim else 1
        lead = (slice(None),) * axis
        d = 1
        while d < n:
            head = a[lead + (slice(0, d),)]
            tail = combine(a[lead + (slice(0, n - d),)], a[lead + (slice(d, n),)])
            a = xp.concatenate([head, tail], axis=axis)
            d *= 2
        return a.copy() if n <= 1 else a

    def logcumsumexp(self, a, axis):
        """``log(cumsum(exp(a)))`` along ``axis``, without overflow: a scan of
        ``logaddexp`` (float16 computed in float32, rounded once)."""
        if a.ndim == 0:
            return a.copy()
        wide = a.astype(np.float32) if a.dtype == np.float16 else a
        out = self.scan(wide, axis, self.xp.logaddexp)
        return out.astype(a.dtype) if out.dtype != a.dtype else out

    def cummax(self, a, axis, largest=True):
        """PyTorch's ``cummax`` (``cummin`` when not ``largest``) of an array along
        ``axis``: the running maximum, NaN once one is met, and the int64 index where each
        running value was last met (ties and later NaNs move it on, as in PyTorch)."""
        xp = self.xp
        if a.ndim == 0:
            return a.copy(), xp.zeros((), dtype=_INT64)
        if a.dtype.kind == "b":
            best = self.scan(a, axis, xp.logical_or if largest else xp.logical_and)
        else:
            best = self.scan(a, axis, xp.maximum if largest else xp.minimum)
        # where a new running value is met: the last such place is its index
        met = a == best
        if a.dtype.kind == "f":
            met |= xp.isnan(a)
        shape = [1] * a.ndim
        shape[axis] = a.shape[axis]
        places = xp.arange(a.shape[axis], dtype=_INT64).reshape(shape)
        return best, self.scan(xp.where(met, places, 0), axis, xp.maximum)

    def multiply_at(self, out, index, values):
        """``out[index] *= values`` in place, repeated indices multiplying in turn
        (``multiply.at``)."""
        self.xp.multiply.at(out, index, values)

    def add_at(self, out, index, values):
        """``out[index] += values`` in place, repeated indices accumulating
        (``add.at``), for every dtype (bool: or)."""
        self.xp.add.at(out, index, values)

    def maximum_at(self, out, index, values):
        """``out[index] = maximum(out[index], values)`` in place, repeated indices in
        turn (``maximum.at``): NaN wins, as in PyTorch's amax; every dtype."""
        self.xp.maximum.at(out, index, values)

    def minimum_at(self, out, index, values):
        """:meth:`maximum_at` for the minimum (NaN wins too)."""
        self.xp.minimum.at(out, index, values)

    def expm1(self, x, out=None):
        """``exp(x) - 1``; float32 computed in float64 and rounded once: NumPy's own
        float32 expm1 is an ulp off the correctly rounded value for about 7% of inputs
        (PyTorch's for 0.1%), and no faster."""
        return self._widened(self.xp.expm1, x, out)

    def log1p(self, x, out=None):
        """``log(1 + x)``; float32 computed in float64 and rounded once, as
        :meth:`expm1` (NumPy's float32 log1p is an ulp off for about 6% of inputs)."""
        return self._widened(self.xp.log1p, x, out)

    # float32 computed in float64 and rounded once, as expm1: NumPy's own float32 sinh,
    # cosh, arctanh and log10 differ from PyTorch's by an ulp for 19-26% of inputs (0.1%
    # this way); its log2, arcsinh, arccosh are as close already
    def sinh(self, x, out=None):
        return self._widened(self.xp.sinh, x, out)

    def cosh(self, x, out=None):
        return self._widened(self.xp.cosh, x, out)

    def arctanh(self, x, out=None):
        return self._widened(self.xp.arctanh, x, out)

    def log10(self, x, out=None):
        return self._widened(self.xp.log10, x, out)

    def sigmoid(self, x):
        """``1 / (1 + exp(-x))`` without overflow warnings and with one temporary;
        float16 computed in float32 and rounded once, as PyTorch does."""
        if x.dtype == np.float16:
            return self.sigmoid(x.astype(np.float32)).astype(np.float16)
        out = self.negative(x)
        if not isinstance(out, self.ndarray):
            out = self.asarray(out)
        self.exp(out, out=out)
        self.add(out, 1, out=out)
        return self.divide(1, out, out=out)

    def _widened(self, fn, x, out):
        """``fn(x)``, float32 computed in float64 and rounded once."""
        if getattr(x, "dtype", None) != np.float32:
            return fn(x) if out is None else fn(x, out=out)
        wide = fn(x.astype(np.float64))
        if out is None:
            return wide.astype(np.float32)
        out[...] = wide
        return out

    def sign(self, x, out=None):
        """PyTorch's sign: -1, 0 or 1, and 0 at NaN (NumPy's sign gives NaN there)."""
        xp = self.xp
        x = xp.asarray(x)
        if x.dtype.kind != "f":
            return xp.sign(x, out=out)
        return xp.subtract(x > 0, x < 0, dtype=x.dtype, out=out)

    def erf(self, x):
        """The error function, elementwise (NumPy has none).

        Accurate to one ulp in float64 (checked against mpmath); float16 and float32
        inputs are computed in float64 and rounded back.  ``|x| < 1``: ``x * P(x*x)``;
        ``1 <= |x| < 6``: ``1 - exp(-x*x) * erfcx(|x|)`` with ``erfcx`` a polynomial on
        each of three intervals; beyond, ``sign(x)`` (``erfc(6)`` is below 2**-55).
        The first formula runs over the whole array (most inputs are small); the
        other intervals' elements are gathered by index (cheaper than boolean masks).
        """
        xp = self.xp
        if _capture_compute is not None and xp is np and type(x) is not np.ndarray:
            return _capture_compute(self.erf, x)  # (recording: one call of the tape)
        x = xp.asarray(x)
        dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
        flat = x.reshape(-1)
        n = flat.size
        if n <= 128 and xp is np:  # small: the C library's erf, element by element
            out = np.array([_math.erf(v) for v in flat.tolist()], dtype=np.float64)
        elif n <= _ERF_BLOCK:
            out = self._erf_flat(flat.astype(np.float64, copy=False))
        else:  # in blocks that stay in the CPU cache: twice as fast as whole-array passes
            out = xp.empty(n, dtype=dtype)
            for i in range(0, n, _ERF_BLOCK):
                out[i:i + _ERF_BLOCK] = self._erf_flat(
                    flat[i:i + _ERF_BLOCK].astype(np.float64, copy=False))
        return out.reshape(x.shape).astype(dtype, copy=False)

    def _erf_flat(self, x64):
        """:meth:`erf` of a 1-D float64 array."""
        xp = self.xp
        a = xp.abs(x64)
        t = xp.minimum(a, 1.0)  # every element through the small-|x| polynomial ...
        t *= t
        out = _horner(_ERF_SMALL, t)
        out *= x64
        big = xp.flatnonzero(~(a < 1.0))  # ... then the others (and NaN) fixed up
        if big.size:
            s = a.take(big)
            vals = xp.full(s.shape, np.nan)
            for lo, hi, center, coeffs in _ERFCX_PIECES:
                j = xp.flatnonzero((s >= lo) & (s < hi))
                if j.size:
                    sj = s.take(j)
                    v = xp.exp(-(sj * sj))
                    v *= _horner(coeffs, sj - center)
                    vals[j] = 1.0 - v
            vals[s >= 6.0] = 1.0
            out[big] = xp.copysign(vals, x64.take(big))
        return out

    def erfc(self, x, out=None):
        """``1 - erf(x)``, accurate where it is small (large ``x``): W. J. Cody's
        rational approximations (CALERF, :func:`_cody_erf_erfc`), within 4 ulp of the
        exact value (checked against mpmath). float16 and float32 are computed in float64
        and rounded once."""
        x = self.xp.asarray(x)
        return _into(_cody_erf_erfc(self.xp, x.astype(np.float64))[1], x, out)

    def erfinv(self, x, out=None):
        """The inverse of the error function, computed as PyTorch's ``calc_erfinv``: a
        rational first guess (central up to 0.7 in magnitude, a tail formula above)
        refined by Newton steps (three: PyTorch's two leave the far tail thousands of ulp
        off); the residual is ``erf(r) - y`` up to 0.5 and ``(1 - y) - erfc(r)`` above
        (``1 - y`` is exact there), which keeps the tail to a few ulp where ``erf(r) - y``
        would lose it. inf at -1 and 1, NaN outside; float16 and float32 are computed in
        float64 and rounded once. Whole-array operations only: no value is read back."""
        xp = self.xp
        x = xp.asarray(x)
        y = x.astype(np.float64)
        a = xp.abs(y)
        z = a * a
        num = ((-0.140543331 * z + 0.914624893) * z - 1.645349621) * z + 0.886226899
        den = (((0.012229801 * z - 0.329097515) * z + 1.442710462) * z - 2.118377725) * \
            z + 1.0
        central = a * num / den
        w = xp.sqrt(-xp.log(xp.clip((1.0 - a) / 2.0, 1e-300, 1.0)))
        num = ((1.641345311 * w + 3.429567803) * w - 1.624906493) * w - 1.970840454
        den = (1.6370678 * w + 3.5438892) * w + 1.0
        r = xp.where(a <= 0.7, central, num / den)
        upper = a > 0.5
        for _ in range(3):  # Newton steps on erf(r) = a (the tail guess is the coarser)
            erf, erfc = _cody_erf_erfc(xp, r)
            residual = xp.where(upper, (1.0 - a) - erfc, erf - a)
            r = r - residual / (1.1283791670955126 * xp.exp(-(r * r)))
        r = xp.where(a == 1.0, np.inf, xp.where(a > 1.0, np.nan, r))
        return _into(xp.copysign(r, y), x, out)

    # ---- the gamma family, whole-array formulas in float64 (no value read back), the
    # same on every device; float16 and float32 inputs rounded once at the end ----------
    def lgamma(self, x):
        """``log|Gamma(x)|``: ``x`` reflected below 0.5 (``log(pi / |sin(pi x)|) -
        lgamma(1 - x)``, inf at 0 and the negative integers); on ``[0.5, 2.5)`` the Taylor
        series of ``lgamma(2 + t)`` (``- log1p(t)`` below 1.5: no cancellation at the
        roots 1 and 2); above, Stirling's series from ``x >= 8`` (shifted up by a
        product below it). Within a few ulp in float64, and to a few 1e-16 absolute near
        the roots."""
        xp = self.xp
        x = xp.asarray(x)
        y = x.astype(np.float64)
        reflect = y < 0.5
        z = xp.where(reflect, 1.0 - y, y)  # >= 0.5 (NaN stays NaN)
        near = z < 2.5
        t = xp.where(z < 1.5, z - 1.0, z - 2.0)
        t = xp.where(near, t, 0.0)
        series = _horner(_LGAMMA2_TAYLOR, t.reshape(-1)).reshape(t.shape) * t  # lgamma(2+t)
        series = xp.where(z < 1.5, series - xp.log1p(t), series)
        # z >= 2.5: shift to w >= 8, Stirling's series there
        w = xp.where(near, 8.0, z)
        shift = xp.ones_like(w)
        for _ in range(6):  # 2.5 + 6 > 8
            low = w < 8.0
            shift = xp.where(low, shift * w, shift)
            w = xp.where(low, w + 1.0, w)
        r = 1.0 / (w * w)
        stirling = (w - 0.5) * xp.log(w) - w + 0.9189385332046728 + \
            _horner(_STIRLING, r.reshape(-1)).reshape(r.shape) / w - xp.log(shift)
        out = xp.where(near, series, stirling)
        out = xp.where(z == np.inf, np.inf, out)
        # the reflection: |sin(pi y)| from y's distance to the nearest integer (exact)
        frac = y - xp.rint(y)
        s = xp.abs(xp.sin(np.pi * xp.where(reflect, frac, 0.5)))
        with np.errstate(divide="ignore"):
            reflected = xp.log(np.pi / s) - out
        out = xp.where(reflect, xp.where(frac == 0, np.inf, reflected), out)
        out = xp.where(y == -np.inf, np.inf, out)
        return _into(out, x, None)

    def digamma(self, x):
        """The logarithmic derivative of Gamma, as PyTorch's ``calc_digamma``: -inf at
        +0, inf at -0, NaN at the negative integers, reflected below 0 (``digamma(1 - x)
        - pi / tan(pi frac(x))``), shifted up to 10 and the asymptotic series there."""
        xp = self.xp
        x = xp.asarray(x)
        y = x.astype(np.float64)
        negative = y < 0
        z = xp.where(negative, 1.0 - y, y)
        out = xp.zeros_like(z)
        for _ in range(10):
            low = z < 10.0
            with np.errstate(divide="ignore"):
                out = out - xp.where(low, 1.0 / xp.where(low, z, 1.0), 0.0)
            z = xp.where(low, z + 1.0, z)
        r = 1.0 / (z * z)
        tail = xp.where(z < 1e17, r * _horner(_DIGAMMA_A, r.reshape(-1)).reshape(r.shape), 0.0)
        out = out + xp.log(z) - 0.5 / z - tail
        frac = y - xp.trunc(y)  # (modf's fractional part)
        with np.errstate(divide="ignore", invalid="ignore"):
            reflected = out - np.pi / xp.tan(np.pi * frac)
        out = xp.where(negative, xp.where(frac == 0, np.nan, reflected), out)
        out = xp.where(y == 0, xp.copysign(np.inf, -y), out)
        out = xp.where(y == np.inf, np.inf, out)
        return _into(out, x, None)

    def polygamma(self, n, x):
        """The ``n``-th derivative of :meth:`digamma`, as PyTorch computes it: digamma
        for 0, ``calc_trigamma`` for 1 (reflected below 0.5, six recurrence steps and an
        asymptotic series), ``(-1)**(n+1) n! zeta(n + 1, x)`` above (Cephes' Hurwitz
        zeta)."""
        if n == 0:
            return self.digamma(x)
        xp = self.xp
        x = xp.asarray(x)
        y = x.astype(np.float64)
        if n == 1:
            reflect = y < 0.5
            if x.dtype in (np.float16, np.float32):  # PyTorch's pi * x and its sine in
                x32 = x.astype(np.float32)           # float (huge, finite at the poles)
                s = xp.sin(np.pi * x32)  # (weak Python floats: float32 arithmetic)
                with np.errstate(divide="ignore", over="ignore"):
                    pole = ((np.pi * np.pi) / (s * s)).astype(np.float64)
            else:
                s = xp.sin(np.pi * y)
                with np.errstate(divide="ignore"):
                    pole = (np.pi * np.pi) / (s * s)
            out = xp.where(reflect, -pole, 0.0)
            z = xp.where(reflect, 1.0 - y, y)
            acc = xp.zeros_like(z)
            for _ in range(6):
                with np.errstate(divide="ignore"):
                    acc = acc + 1.0 / (z * z)
                z = z + 1.0
            r = 1.0 / (z * z)
            acc = acc + (1.0 + 1.0 / (2.0 * z) +
                         r * (1.0 / 6 - r * (1.0 / 30 - r * (1.0 / 42)))) / z
            out = xp.where(reflect, -(out + acc), out + acc)
            return _into(out, x, None)
        sign = 1.0 if n % 2 else -1.0
        return _into(sign * float(_math.factorial(n)) * _hurwitz_zeta(xp, n + 1.0, y), x,
                     None)

    def igamma(self, a, x, upper=False):
        """The regularized lower incomplete gamma function ``P(a, x)`` (``upper``: ``Q(a,
        x) = 1 - P``), as PyTorch's ``calc_igamma``/``calc_igammac`` (Cephes): the power
        series, the continued fraction for large ``x``, DLMF 8.7.3 for ``Q`` at small
        ``x``, each picked per element as there; PyTorch's asymptotic series for ``a``
        near ``x`` is left out (the series and the fraction converge there too, in more
        steps). Iterations run over the whole array until every element has converged
        (one value read back every 32 steps)."""
        xp = self.xp
        a = xp.asarray(a).astype(np.float64)
        x = xp.asarray(x).astype(np.float64)
        a, x = xp.broadcast_arrays(a, x)
        ok = (a > 0) & (x > 0) & xp.isfinite(a) & xp.isfinite(x)
        aa = xp.where(ok, a, 1.0)
        xx = xp.where(ok, x, 1.0)
        log_x = xp.log(xx)
        fac = xp.exp(aa * log_x - xx - self.lgamma(aa))
        p_series = self._igam_series(aa, xx) * fac / aa  # P by its series
        q_fraction = self._igamc_fraction(aa, xx) * fac
        with np.errstate(over="ignore"):  # (where another branch is taken)
            q_small = self._igamc_series(aa, xx, log_x)
        if upper:
            use_fraction = (xx > 1.1) & (xx >= aa)
            with np.errstate(divide="ignore"):
                small_a = xp.where(xx <= 0.5, -0.4 / log_x < aa, xx * 1.1 < aa)
            use_p = ((xx > 1.1) & (xx < aa)) | ((xx <= 1.1) & small_a)
            out = xp.where(use_fraction, q_fraction, xp.where(use_p, 1.0 - p_series, q_small))
        else:
            big = (xx > 1.0) & (xx > aa)  # 1 - Q, Q as calc_igammac takes it there
            q = xp.where(xx > 1.1, q_fraction, q_small)
            out = xp.where(big, 1.0 - q, p_series)
        # the edges, as PyTorch's
        lo, hi = (1.0, 0.0) if upper else (0.0, 1.0)
        nan = (x < 0) | (a < 0) | xp.isnan(a) | xp.isnan(x) | ((a == 0) & (x == 0)) | \
            (xp.isinf(a) & xp.isinf(x))
        out = xp.where(ok, out, xp.where(a == 0, hi, xp.where(x == 0, lo, xp.where(
            xp.isinf(a), lo, hi))))
        return xp.where(nan, np.nan, out)

    @staticmethod
    def _until_converged(step, state, done):
        """``step`` repeated (at most 2000 times, Cephes' limit) until every element is
        done."""
        for i in range(2000):
            state, done = step(state, done)
            if i % 32 == 31 and bool(done.all()):
                break
        return state

    def _igam_series(self, a, x):
        """``sum_k x^k / ((a + 1) ... (a + k))`` (Cephes' igam series, less its factor)."""
        xp = self.xp

        def step(state, done):
            r, c, total = state
            r = r + 1.0
            c = xp.where(done, c, c * x / r)
            total = xp.where(done, total, total + c)
            return (r, c, total), done | (c <= 1.1102230246251565e-16 * total)
        return self._until_converged(step, (a, xp.ones_like(a), xp.ones_like(a)),
                                     xp.zeros(a.shape, dtype=bool))[2]

    def _igamc_fraction(self, a, x):
        """Cephes' continued fraction of ``Q(a, x) / fac`` (large ``x``)."""
        xp = self.xp
        y = 1.0 - a
        z = x + y + 1.0
        state = (y, z, xp.zeros_like(a), xp.ones_like(a), x, x + 1.0, z * x, (x + 1.0) / (z * x))

        def step(state, done):
            y, z, c, pkm2, qkm2, pkm1, qkm1, ans = state
            c, y, z = c + 1.0, y + 1.0, z + 2.0
            yc = y * c
            pk = pkm1 * z - pkm2 * yc
            qk = qkm1 * z - qkm2 * yc
            nonzero = qk != 0
            r = pk / xp.where(nonzero, qk, 1.0)
            t = xp.where(nonzero, xp.abs((ans - r) / r), 1.0)
            ans = xp.where(done | ~nonzero, ans, r)
            big = xp.abs(pk) > 4.503599627370496e15
            scale = xp.where(big, 2.220446049250313e-16, 1.0)
            keep = lambda new, old: xp.where(done, old, new)  # noqa: E731
            state = (y, z, c, keep(pkm1 * scale, pkm2), keep(qkm1 * scale, qkm2),
                     keep(pk * scale, pkm1), keep(qk * scale, qkm1), ans)
            return state, done | (t <= 1.1102230246251565e-16)
        return self._until_converged(step, state, xp.zeros(a.shape, dtype=bool))[7]

    def _igamc_series(self, a, x, log_x):
        """``Q(a, x)`` by DLMF 8.7.3 (small ``x``), as Cephes' ``igamc_series``."""
        xp = self.xp

        def step(state, done):
            n, fac, total = state
            fac = xp.where(done, fac, fac * -x / n)
            term = fac / (a + n)
            total = xp.where(done, total, total + term)
            return (n + 1.0, fac, total), done | (xp.abs(term) <= 1.1102230246251565e-16 *
                                                  xp.abs(total))
        total = self._until_converged(step, (1.0, xp.ones_like(a), xp.zeros_like(a)),
                                      xp.zeros(a.shape, dtype=bool))[2]
        head = -xp.expm1(a * log_x - self.lgamma(a + 1.0))
        return head - xp.exp(a * log_x - self.lgamma(a)) * total

    def i0(self, x):
        """The modified Bessel function of the first kind of order 0 (the array
        module's, Cephes' Chebyshev expansions), computed in float64 and rounded once."""
        x = self.xp.asarray(x)
        with np.errstate(over="ignore"):  # (inf, as PyTorch, beyond about 713)
            return _into(self.xp.i0(x.astype(np.float64)), x, None)

    def i1(self, x):
        """The modified Bessel function of the first kind of order 1 (see
        :meth:`_bessel_i`)."""
        return self._bessel_i(x, 1, scaled=False)

    def i0e(self, x):
        """``exp(-|x|) * i0(x)``, finite where ``i0`` overflows (see :meth:`_bessel_i`)."""
        return self._bessel_i(x, 0, scaled=True)

    def i1e(self, x):
        """``exp(-|x|) * i1(x)``, finite where ``i1`` overflows (see :meth:`_bessel_i`)."""
        return self._bessel_i(x, 1, scaled=True)

    def _bessel_i(self, x, order, scaled):
        """The modified Bessel function of the first kind of ``order`` 0 or 1 (times
        ``exp(-|x|)`` when ``scaled``): its power series up to ``|x| = 30``, the
        asymptotic series beyond (unscaled, ``e**|x|`` split in two halves, so that it
        overflows only with the result). Computed in float64, rounded once."""
        xp = self.xp
        x = xp.asarray(x)
        y = x.astype(np.float64)
        a = xp.abs(y)
        small = xp.minimum(a, 30.0)
        q = (small * 0.5) ** 2
        term = small * 0.5 if order else xp.ones_like(small)
        total = term
        for k in range(1, 80):  # (x/2)^(2k+n) / (k! (k+n)!): enough terms at 30
            term = term * q / (k * (k + order))
            total = total + term
        big = xp.maximum(a, 30.0)
        u = 1.0 / (8.0 * big)
        series = xp.ones_like(big)
        coef = xp.ones_like(big)
        for k in range(1, 25):
            coef = coef * -(4.0 * order * order - (2 * k - 1) ** 2) * u / k
            series = series + coef
        if scaled:
            total = total * xp.exp(-small)
            asymptotic = series / xp.sqrt(2 * np.pi * big)
        else:
            half = xp.exp(big * 0.5)
            asymptotic = half * (half * series / xp.sqrt(2 * np.pi * big))
        out = xp.where(a <= 30.0, total, asymptotic)
        if order:
            out = xp.copysign(out, y)
        return _into(out, x, None)

    def erfcx(self, x):
        """The scaled complementary error function ``exp(x*x) * erfc(x)``: W. J. Cody's
        rational approximations (CALERF) of it for ``|x| > 0.46875``, where ``erfc``
        itself would underflow; inf below about -26.6, as PyTorch. float16 and float32
        are computed in float64 and rounded once."""
        xp = self.xp
        x = xp.asarray(x)
        y = x.astype(np.float64)
        erf_small = _cody_erf_erfc(xp, xp.clip(y, -0.46875, 0.46875))[0]
        t = xp.maximum(xp.abs(y), 0.46875)
        with np.errstate(over="ignore", invalid="ignore"):
            out = xp.where(xp.abs(y) <= 0.46875, xp.exp(y * y) * (1.0 - erf_small),
                           xp.where(y < 0, 2.0 * xp.exp(y * y) - _cody_erfcx(xp, t),
                                    _cody_erfcx(xp, t)))
        return _into(out, x, None)

    def ndtri(self, p):
        """The inverse of the standard normal distribution function: Abramowitz and
        Stegun's 26.2.23 as a first guess, refined by four Newton steps on
        ``log(ndtr(x)) = log(min(p, 1 - p))`` (through :meth:`erfcx`: exact far into the
        tail); -inf at 0, inf at 1, NaN outside. Computed in float64, rounded once."""
        xp = self.xp
        p = xp.asarray(p)
        y = p.astype(np.float64)
        q = xp.clip(xp.minimum(y, 1.0 - y), 1e-320, 0.5)
        log_q = xp.log(q)
        t = xp.sqrt(-2.0 * log_q)
        x = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) /
              (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))))
        for _ in range(4):
            x = xp.minimum(x, 0.0)
            s = self.erfcx(-x / np.sqrt(2.0))  # ndtr(x) = s / 2 exp(-x*x/2)
            log_ndtr = xp.log(0.5 * s) - 0.5 * x * x
            x = x - (log_ndtr - log_q) * (0.5 * np.sqrt(2.0 * np.pi)) * s
        out = xp.where(y > 0.5, -x, x)
        out = xp.where(y == 0.5, 0.0, out)
        out = xp.where(y == 0.0, -np.inf, xp.where(y == 1.0, np.inf, out))
        out = xp.where((y < 0) | (y > 1) | xp.isnan(y), np.nan, out)
        return _into(out, p, None)

    def zeta(self, x, q):
        """The Hurwitz zeta function ``sum_k (k + q)**-x``, as Cephes' ``zeta`` (PyTorch's):
        inf at ``x == 1`` and at the non-positive integers ``q``, NaN for ``x < 1`` and for
        a negative ``q`` with a fractional ``x``. Broadcast, computed in float64 and rounded
        once to ``x``'s floating dtype."""
        xp = self.xp
        like = xp.asarray(x)
        x, q = xp.broadcast_arrays(xp.asarray(x, dtype=np.float64),
                                   xp.asarray(q, dtype=np.float64))
        bad = (x < 1) | ((q < 0) & (q != xp.floor(q)) & (x != xp.floor(x))) | \
            xp.isnan(x) | xp.isnan(q)
        s = xp.where((x > 1) & ~bad, x, 2.0)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            total = _hurwitz_zeta(xp, s, xp.where(bad, 1.0, q))
            far = (1.0 / (s - 1.0) + 0.5 / q) * q ** (1.0 - s)  # Cephes' q > 1e8
        total = xp.where((q > 1e8) & (q < np.inf), far, total)
        total = xp.where(x == 1, np.inf, total)
        return _into(xp.where(bad, np.nan, total), like, None)


    # ---- torch.special's Bessel functions and orthogonal polynomials (see _cephes) -----
    def bessel(self, name, x):
        """The Cephes-based function ``name`` of :mod:`gradcore._cephes` (``bessel_j0``,
        ``modified_bessel_k1``, ``airy_ai``, ...) of ``x``: computed in float64, rounded
        once to ``x``'s floating dtype."""
        x = self.xp.asarray(x)
        out = getattr(_cephes, name)(self.xp, x.astype(np.float64))
        with np.errstate(over="ignore"):  # (float32's inf, as PyTorch's)
            return _into(out, x, None)

    def orthogonal_polynomial(self, name, x, n):
        """The polynomial ``name`` (``chebyshev_polynomial_t``, ...,
        ``shifted_chebyshev_polynomial_w``, ``hermite_polynomial_h``,
        ``hermite_polynomial_he``, ``laguerre_polynomial_l``, ``legendre_polynomial_p``)
        of degree ``n`` (int64, broadcast against ``x``) at ``x``, in ``x``'s dtype."""
        xp = self.xp
        x = xp.asarray(x)
        if name.startswith(("chebyshev", "shifted")):
            return _cephes.chebyshev_polynomial(xp, name[-1], x, n, name.startswith("s"))
        if name.startswith("hermite"):
            return _cephes.hermite_polynomial(xp, name.endswith("_h"), x, n)
        return getattr(_cephes, name)(xp, x, n)

# lgamma(2 + t) = (1 - euler_gamma) t + sum_k>=2 (-1)^k (zeta(k) - 1) t^k / k, |t| <= 0.5,
# as _horner's coefficients of lgamma(2 + t) / t (highest power first)
def _zeta_minus_one(k: int) -> float:
    """``zeta(k) - 1`` to double precision: the sum to 30 and Euler-Maclaurin's tail."""
    n = 200
    head = sum(j ** -float(k) for j in range(n - 1, 1, -1))  # (the small terms first)
    return head + n ** (1.0 - k) / (k - 1) + 0.5 * n ** -float(k) + \
        k * n ** (-k - 1.0) / 12 - k * (k + 1) * (k + 2) * n ** (-k - 3.0) / 720


_LGAMMA2_TAYLOR = tuple(reversed(
    [0.42278433509846713] +  # 1 - euler_gamma
    [(-1) ** k * _zeta_minus_one(k) / k for k in range(2, 60)]))
# Stirling's series: sum B_2k / (2k (2k-1) w^(2k-1)), as _horner's polynomial in 1/w^2
_STIRLING = (-3617 / 122400, 1 / 156, -691 / 360360, 1 / 1188, -1 / 1680, 1 / 1260,
             -1 / 360, 1 / 12)
# digamma's asymptotic series (Cephes' and PyTorch's A, highest power first)
_DIGAMMA_A = (8.33333333333333333333e-2, -2.10927960927960927961e-2,
              7.57575757575757575758e-3, -4.16666666666666666667e-3,
              3.96825396825396825397e-3, -8.33333333333333333333e-3,
              8.33333333333333333333e-2)
# Cephes' zeta: the Euler-Maclaurin coefficients (2k)! / B_2k
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
           7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
           -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18)


def _hurwitz_zeta(xp, s: float, q):
    """Cephes' ``zeta(s, q) = sum_k (k + q)**-s`` for an integer ``s > 1`` and a float64
    array ``q``, elementwise (inf at the non-positive integers): terms summed until
    ``q + k > 9``, then Euler-Maclaurin's tail, each element stopping where Cephes
    does."""
    pole = (q <= 0) & (q == xp.floor(q))
    a = xp.where(pole, 1.0, q)
    total = a ** -s
    done = xp.zeros(q.shape, dtype=bool)
    steps = 9
    # (one value read: a finite q below -9 needs more steps, as Cephes takes)
    lowest = float(xp.where(xp.isfinite(a), a, 0.0).min()) if a.size else 0.0
    if lowest < 0:
        steps = max(steps, int(np.ceil(9.0 - lowest)) + 1)
    for i in range(steps):
        active = ~done & ((i < 9) | (a <= 9))
        a = xp.where(active, a + 1.0, a)
        b = a ** -s
        total = xp.where(active, total + b, total)
        done = done | (active & (xp.abs(b / total) < 1.1102230246251565e-16))
    w = a
    b = a ** -s
    total = xp.where(done, total, total + b * w / (s - 1) - 0.5 * b)
    fac = xp.ones_like(w)
    k = 0.0
    for coeff in _ZETA_A:
        fac = fac * (s + k)
        b = b / w
        t = fac * b / coeff
        total = xp.where(done, total, total + t)
        done = done | (xp.abs(t / total) < 1.1102230246251565e-16)
        k += 1.0
        fac = fac * (s + k)
        b = b / w
        k += 1.0
    # (PyTorch's values at the infinities: NaN at inf, as inf * 0 there; inf at -inf)
    return xp.where(pole | (q == -np.inf), np.inf, xp.where(q == np.inf, np.nan, total))


_ERF_BLOCK = 65536


# W. J. Cody's rational approximations of erf and erfc (CALERF, 1969): erf(x) on
# [0, 0.46875] as x A(x*x) / B(x*x); exp(x*x) * erfc(x) on [0.46875, 4] as C(x) / D(x),
# and beyond as (1/sqrt(pi) - r P(r) / Q(r)) / x, r = 1 / (x*x)
_CODY_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
           3.20937758913846947e03, 1.85777706184603153e-1)
_CODY_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
           2.84423683343917062e03)
_CODY_C = (5.64188496988670089e-1, 8.88314979438837594e0, 6.61191906371416295e1,
           2.98635138197400131e2, 8.81952221241769090e2, 1.71204761263407058e3,
           2.05107837782607147e3, 1.23033935479799725e3, 2.15311535474403846e-8)
_CODY_D = (1.57449261107098347e1, 1.17693950891312499e2, 5.37181101862009858e2,
           1.62138957456669019e3, 3.29079923573345963e3, 4.36261909014324716e3,
           3.43936767414372164e3, 1.23033935480374942e3)
_CODY_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
           1.60837851487422766e-2, 6.58749161529837803e-4, 1.63153871373020978e-2)
_CODY_Q = (2.56852019228982242e0, 1.87295284992346725e0, 5.27905102951428412e-1,
           6.05183413124413191e-2, 2.33520497626869185e-3)


def _cody_erf_erfc(xp, x):
    """``(erf(x), erfc(x))`` of a float64 array by W. J. Cody's approximations, each to a
    few ulp: near 0 ``erf`` from its own, elsewhere ``erfc`` of ``|x|`` (times
    ``exp(-x*x)``, taken as ``exp(-h*h) * exp(-(x-h)(x+h))`` with ``h`` ``|x|`` to 1/16,
    whose square is exact) and the other by ``1 - ``, ``2 - `` and the symmetry. Whole-
    array operations only (no value read back, nothing gathered)."""
    y = xp.abs(x)
    z = x * x
    num, den = _CODY_A[4] * z, z
    for a, b in zip(_CODY_A[:3], _CODY_B[:3]):
        num, den = (num + a) * z, (den + b) * z
    erf_small = x * (num + _CODY_A[3]) / (den + _CODY_B[3])
    t = xp.clip(y, 0.46875, 27.3)  # (erfc(27.3) is below the smallest double)
    num, den = _CODY_C[8] * t, t
    for c, d in zip(_CODY_C[:7], _CODY_D[:7]):
        num, den = (num + c) * t, (den + d) * t
    middle = (num + _CODY_C[7]) / (den + _CODY_D[7])
    r = 1.0 / (t * t)
    num, den = _CODY_P[5] * r, r
    for p, q in zip(_CODY_P[:4], _CODY_Q[:4]):
        num, den = (num + p) * r, (den + q) * r
    tail = (0.5641895835477563 - r * (num + _CODY_P[4]) / (den + _CODY_Q[4])) / t
    h = xp.floor(t * 16.0) / 16.0
    upper = xp.exp(-(h * h)) * xp.exp(-((t - h) * (t + h))) * xp.where(t <= 4.0, middle, tail)
    upper = xp.where(y >= 27.3, 0.0, upper)  # erfc(|x|), and NaN stays NaN
    small = y <= 0.46875
    erf = xp.where(small, erf_small, xp.copysign(1.0 - upper, x))
    erfc = xp.where(small, 1.0 - erf_small, xp.where(x < 0, 2.0 - upper, upper))
    return erf, erfc


def _cody_erfcx(xp, t):
    """``exp(t*t) * erfc(t)`` of a float64 array ``t >= 0.46875`` by W. J. Cody's
    approximations (CALERF's scaled result): ``C(t) / D(t)`` up to 4, the asymptotic
    rational form beyond (``1 / (t sqrt(pi))`` for the largest)."""
    c = xp.minimum(t, 4.0)
    num, den = _CODY_C[8] * c, c
    for cc, d in zip(_CODY_C[:7], _CODY_D[:7]):
        num, den = (num + cc) * c, (den + d) * c
    middle = (num + _CODY_C[7]) / (den + _CODY_D[7])
    b = xp.maximum(t, 4.0)
    with np.errstate(over="ignore"):
        r = 1.0 / (b * b)
    num, den = _CODY_P[5] * r, r
    for pp, qq in zip(_CODY_P[:4], _CODY_Q[:4]):
        num, den = (num + pp) * r, (den + qq) * r
    tail = (0.5641895835477563 - r * (num + _CODY_P[4]) / (den + _CODY_Q[4])) / b
    return xp.where(t <= 4.0, middle, tail)


def _into(result, x, out):
    """A float64 ``result`` of a function of ``x``, in ``x``'s floating dtype (float64
    for others), written into ``out`` when one is given."""
    dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    if out is None:
        return result.astype(dtype, copy=False)
    out[...] = result
    return out


def _horner(coeffs, t, block=32768):
    """``coeffs[0] * t**(n-1) + ... + coeffs[-1]`` (highest power first), a new array.

    Large arrays go in blocks that stay in the CPU cache: each step of the recurrence
    is one pass over memory, and a polynomial of degree 11 would otherwise make 22.
    """
    out = t * coeffs[0]
    n = out.size
    for i in range(0, n, block) if n > block else (None,):
        r = out if i is None else out[i:i + block]
        tb = t if i is None else t[i:i + block]
        r += coeffs[1]
        for c in coeffs[2:]:
            r *= tb
            r += c
    return out


# Coefficients of erf, made with mpmath (40 digits) by Chebyshev fits, highest power
# first: erf(x) / x as a polynomial in x*x on [0, 1] (12 terms, error 7e-18), and
# erfcx(x) = exp(x*x) * erfc(x) as a polynomial in x - center on [1, 2], [2, 3.5],
# [3.5, 6] (16, 14 and 12 terms; errors 7e-18, 5e-15 and 2e-14 relative to erfcx,
# i.e. below 1e-16 on erf after the factor exp(-x*x)).  Regenerate with
#   mpmath.chebyfit(lambda u: erf(sqrt(u)) / sqrt(u), [0, 1], 12)
#   mpmath.chebyfit(lambda s: erfcx(s + c), [lo - c, hi - c], n)
_ERF_SMALL = (
    -7.795898827002142e-10, 1.3720064546777686e-08, -1.6208483801871705e-07,
    1.6447424703317362e-06, -1.492473690741966e-05, 0.00012055294904839707,
    -0.0008548325975389692, 0.0052239776071164225, -0.02686617064323777,
    0.11283791670945006, -0.37612638903183543, 1.1283791670955126)
_ERFCX_PIECES = (
    (1.0, 2.0, 1.5, (
        -4.932844202000261e-08, 1.8038197652346406e-07, -5.946998373950516e-07,
        2.061689065129881e-06, -6.975285854904505e-06, 2.286543658874603e-05,
        -7.265888759557882e-05, 0.00022330981211640024, -0.0006619300686179933,
        0.0018861348854630824, -0.005145957547915988, 0.013377340952802835,
        -0.03293090529956347, 0.07615103985548055, -0.16362291773256007,
        0.3215854164543175)),
    (2.0, 3.5, 2.75, (
        -7.955138295165297e-09, 3.4612796372094925e-08, -1.3203061704134594e-07,
        5.492933047233588e-07, -2.247603557558032e-06, 8.94119416776573e-06,
        -3.46985640532243e-05, 0.00013118159513017018, -0.0004821950892606839,
        0.001719581904600076, -0.005934337896847314, 0.019758592986643002,
        -0.0632376375606357, 0.19366209627907258)),
    (3.5, 6.0, 4.75, (
        -1.2397154955686125e-09, 7.185117567525625e-09, -3.5308951693218504e-08,
        1.9859009944209772e-07, -1.1118029273174716e-06, 6.082510682228709e-06,
        -3.277569444797808e-05, 0.00017392778941474965, -0.000908098908675339,
        0.004661326438113046, -0.023503448597910273, 0.11630270720874594)),
)


class _NumpyMath(ArrayMath):
    values_on_host = True

    @staticmethod
    def _widened(fn, x, out):
        """:meth:`ArrayMath._widened` without float64 temporaries: NumPy's float64 loop
        converts its inputs and results a buffer at a time (as fast as NumPy's own
        float32 expm1; log1p about 8% slower)."""
        if getattr(x, "dtype", None) != np.float32:
            return fn(x) if out is None else fn(x, out=out)
        if out is None:
            out = np.empty_like(x)
        return fn(x, out=out, dtype=np.float64, casting="same_kind")

    def asarray(self, data, dtype=None):
        out = np.asarray(data, dtype=dtype)
        return out

    @staticmethod
    def broadcast_to(arr, shape):
        """``np.broadcast_to`` (read-only), four times cheaper for one-element arrays."""
        if arr.size == 1:
            out = np.ndarray(shape, arr.dtype, arr, 0, (0,) * len(shape))
            out.flags.writeable = False
            return out
        return np.broadcast_to(arr, shape)


class _CupyMath(ArrayMath):
    # shape arithmetic, no arrays: NumPy's, whichever CuPy version is installed
    broadcast_shapes = staticmethod(np.broadcast_shapes)

    def address(self, arr) -> int:
        return int(arr.data.ptr)

    def owns(self, arr) -> bool:
        return arr.base is None

    def erf(self, x):
        """``cupyx.scipy.special.erf`` (imported on first use). float16 and float32 are
        computed in float64 and rounded once, as on the CPU: CUDA's float32 ``erff`` is
        off by up to 2 ulp, and both devices then give the same values."""
        fn = self.__dict__.get("_erf")
        if fn is None:
            from cupyx.scipy.special import erf as fn  # noqa: PLC0415
            self._erf = fn
        x = self.xp.asarray(x)
        if x.dtype in (np.float16, np.float32):
            return fn(x.astype(np.float64)).astype(x.dtype)
        return fn(x)

    def frexp(self, x):
        """``(mantissa, exponent)``, float32 subnormals included: CuPy builds its kernels
        with ``-ftz=true``, for which a float32 subnormal reads as 0 (in ``frexp`` as in
        a conversion to float64: ``frexp(1e-40)`` would be ``(0.0, 0)``, not PyTorch's
        ``(0.5444, -132)``). A subnormal is its 23 fraction bits times 2 ** -149: those
        bits, an integer, convert to a normal float32, whose ``frexp`` is exact."""
        xp = self.xp
        mantissa, exponent = xp.frexp(x)
        if x.dtype != np.float32:
            return mantissa, exponent
        bits = x.view(np.int32)
        fraction = bits & 0x7FFFFF
        subnormal = ((bits & 0x7F800000) == 0) & (fraction != 0)
        sub_m, sub_e = xp.frexp(fraction.astype(np.float32))
        mantissa = xp.where(subnormal, xp.where(bits < 0, -sub_m, sub_m), mantissa)
        return mantissa, xp.where(subnormal, sub_e - 149, exponent).astype(exponent.dtype)

    def multiply_at(self, out, index, values):
        """``out[index] *= values`` (CuPy has no ``multiply.at``; ``out`` contiguous): the
        values sorted by the place they go, each run of one place multiplied by a
        segmented scan, and each run's product multiplied in."""
        xp = self.xp
        idx = xp.broadcast_arrays(*[xp.asarray(i) for i in index])
        values = xp.broadcast_to(values, idx[0].shape).reshape(-1)
        flat = xp.zeros(idx[0].shape, dtype=_INT64)
        for i, n in zip(idx, out.shape):
            flat = flat * n + i
        flat = flat.reshape(-1)
        if not flat.size:
            return
        order = xp.argsort(flat, kind="stable")
        place, vals = flat[order], values[order]
        k = xp.arange(place.size, dtype=_INT64)
        starts = xp.concatenate([xp.ones(1, dtype=bool), place[1:] != place[:-1]])
        run_start = self.scan(xp.where(starts, k, 0), 0, xp.maximum)
        d = 1
        while d < place.size:  # vals[k] *= vals[k - d] while k - d is in k's run
            inside = (k[d:] - d) >= run_start[d:]
            vals = xp.concatenate([vals[:d], xp.where(inside, vals[d:] * vals[:-d],
                                                      vals[d:])])
            d *= 2
        # every member of a run reads the run's product at its end, so that the writes
        # to one place agree (no nonzero(): it would read a size back)
        last = xp.concatenate([place[1:] != place[:-1], xp.ones(1, dtype=bool)])
        run_end = self.scan(xp.where(last, k, place.size)[::-1], 0, xp.minimum)[::-1]
        target = out.reshape(-1)  # (out: a new, contiguous array)
        target[place] = target[place] * vals[run_end]

    # ``ufunc.at`` with an index array is a CUDA atomic per element in CuPy, which has
    # them for these dtypes only (and refuses the others)
    _ADD_AT = frozenset(np.dtype(t) for t in ("int32", "int64", "uint32", "uint64",
                                              "float16", "float32", "float64"))
    _EXTREMUM_AT = frozenset(np.dtype(t) for t in ("int32", "int64", "uint32", "uint64"))

    def add_at(self, out, index, values):
        """``add.at``; where CUDA has no atomic add for ``out``'s dtype (bool, 8 and
        16-bit integers), the sums are taken in int64 and written back: exact, the cast
        back wrapping as adding in the narrow type does (bool: nonzero, an or)."""
        xp, dt = self.xp, out.dtype
        if dt in self._ADD_AT:
            xp.add.at(out, index, values)
        else:
            wide = out.astype(_INT64)
            xp.add.at(wide, index, xp.asarray(values).astype(_INT64))
            out[...] = wide.astype(dt)

    def maximum_at(self, out, index, values):
        self._extremum_at(out, index, values, True)

    def minimum_at(self, out, index, values):
        self._extremum_at(out, index, values, False)

    def _extremum_at(self, out, index, values, largest):
        """``maximum.at`` (``minimum.at``) on the integer atomics CUDA has: CuPy's own for
        floating types compares by ``fmaxf``, in float32 (float64 values come back
        rounded to float32) and dropping NaN. Floating values go in as integers of their
        order (NaN first, as PyTorch's amax propagates it), the narrow integers and bool
        as int32, and come back exactly."""
        xp, dt = self.xp, out.dtype
        at = (xp.maximum if largest else xp.minimum).at
        if dt in self._EXTREMUM_AT:
            at(out, index, values)
            return
        values = xp.asarray(values)
        if dt.kind == "f":
            key = _order_key(xp, out, largest)
            at(key, index, _order_key(xp, values.astype(dt), largest))
            out[...] = _from_order_key(xp, key, dt)
        else:
            wide = out.astype(np.int32)
            at(wide, index, values.astype(np.int32))
            out[...] = wide.astype(dt)

    def asarray(self, data, dtype=None):
        with self.xp.cuda.Device(self.device.index or 0):
            return self.xp.asarray(data, dtype=dtype)


def _order_key(xp, a, largest):
    """Integers ordered as the floating values of ``a`` (float16 as float32): the bits,
    the negative ones with all but the sign flipped; NaN the largest key if ``largest``,
    else the smallest (so that a maximum, or a minimum, of keys meets it first)."""
    if a.dtype == np.float16:
        a = a.astype(np.float32)
    it = np.dtype(np.int32 if a.dtype == np.float32 else np.int64)
    info = np.iinfo(it)
    bits = a.view(it)
    key = xp.where(bits < 0, bits ^ it.type(info.max), bits)
    return xp.where(xp.isnan(a), it.type(info.max if largest else info.min), key)


def _from_order_key(xp, key, dt):
    """The floating values of dtype ``dt`` that :func:`_order_key` ordered (NaN for
    the NaN keys)."""
    it = key.dtype
    bits = xp.where(key < 0, key ^ it.type(np.iinfo(it).max), key)
    a = bits.view(np.float32 if it == np.int32 else np.float64)
    return a.astype(dt) if a.dtype != dt else a


_SUM_AXES: dict[tuple, tuple] = {}


def summed_axes(gshape, shape) -> tuple:
    """The axes ``sum_to`` sums to bring a gradient of ``gshape`` to ``shape`` (cached)."""
    key = (tuple(gshape), tuple(shape))
    axes = _SUM_AXES.get(key)
    if axes is None:
        axes = _SUM_AXES[key] = _sum_axes(*key)
    return axes


def _sum_axes(gshape, shape) -> tuple:
    """The axes of an array of ``gshape`` to sum so that it takes ``shape``."""
    lead = len(gshape) - len(shape)
    if lead < 0:
        raise RuntimeError(f"sum_to: cannot sum a gradient of shape {gshape} to the larger "
                           f"shape {shape}")
    for i, n in enumerate(shape):
        if n != 1 and n != gshape[i + lead]:
            raise RuntimeError(f"sum_to: a gradient of shape {gshape} does not broadcast "
                               f"from shape {shape}")
    return tuple(range(lead)) + tuple(i + lead for i, n in enumerate(shape)
                                      if n == 1 and gshape[i + lead] != 1)


_cpu_math_obj: ArrayMath | None = None
_math_by_type: dict[type, ArrayMath] = {}


def _cpu_math() -> ArrayMath:
    global _cpu_math_obj
    if _cpu_math_obj is None:
        _cpu_math_obj = _NumpyMath(np, cpu)
        _math_by_type[np.ndarray] = _cpu_math_obj
    return _cpu_math_obj


_cuda_maths: dict[int, ArrayMath] = {}


def _cuda_math(index: int) -> ArrayMath:
    m = _cuda_maths.get(index)
    if m is None:
        cupy = _require_cupy()
        if index >= cupy.cuda.runtime.getDeviceCount():
            raise CudaUnavailableError(
                f"cuda:{index} requested but only {cupy.cuda.runtime.getDeviceCount()} "
                "CUDA device(s) exist")
        m = _cuda_maths[index] = _CupyMath(cupy, device(f"cuda:{index}"))
        m.device_kernels = cuda_kernels_enabled()
        track_cuda_memory()
    return m


def math_of(arr) -> ArrayMath:
    """The array namespace serving ``arr`` (NumPy for host arrays, CuPy for device ones)."""
    m = _math_by_type.get(type(arr))  # holds NumPy only: CuPy arrays vary in device
    if m is not None:
        return m
    if isinstance(arr, (np.ndarray, np.generic)):
        return _cpu_math()
    return device_of(arr).math


_cuda_by_id: dict[int, Device] = {}   # a CuPy device id -> its Device (no string parsing)


def device_of(arr) -> Device:
    """The device an array lives on."""
    if isinstance(arr, (np.ndarray, np.generic)):
        return cpu
    dev = getattr(arr, "device", None)
    idx = getattr(dev, "id", None)
    if idx is not None and type(arr).__module__.startswith("cupy"):
        found = _cuda_by_id.get(idx)
        if found is None:
            found = _cuda_by_id[idx] = device(f"cuda:{idx}") if idx else device("cuda")
        return found
    raise TypeError(f"unsupported array type {type(arr).__name__}")


def is_device_array(obj) -> bool:
    """True for NumPy arrays and for arrays of a CUDA array module (CuPy)."""
    if isinstance(obj, np.ndarray):
        return True
    return type(obj).__module__.startswith("cupy") and hasattr(obj, "__cuda_array_interface__")


# Set by gradcore.capture while it records a function (None otherwise): told of every
# read of values back to the host, and given the range checks (a recording repeats them
# at each replay instead of reading the values now).
_capture_read = None
_capture_check = None
_capture_compute = None  # given the functions that read values to compute (erf)


# While gradcore.capture captures a CUDA graph: the host work (a list) to run before each
# of its launches (host_work), None otherwise
_host_work = None


def host_work(fn) -> None:
    """Run ``fn``, host work that the device work after it depends on (an optimizer's
    scalars, formed on the host and copied to the device), now; or, while a CUDA graph
    captures the step, before each launch of that graph (a graph replays no Python)."""
    if _host_work is None:
        fn()
    else:
        _host_work.append(fn)


def set_capture_hooks(read, check, compute=None) -> None:
    """Install (or, with None, remove) the hooks of a recording gc.compile."""
    global _capture_read, _capture_check, _capture_compute
    _capture_read, _capture_check, _capture_compute = read, check, compute


def to_host(arr):
    """A NumPy copy (or view, on the CPU) of ``arr``. From a GPU, the range checks left
    pending by earlier ops are read first (:func:`check_range`): a failed one raises."""
    if _capture_read is not None:
        _capture_read(arr)
    if isinstance(arr, np.ndarray):
        return arr
    if _pending_checks:
        raise_failed_checks()
    return arr.get()


# --------------------------------------------------------------------------------------
# Range checks that do not wait for the device
# --------------------------------------------------------------------------------------
# NumPy raises for an out-of-range integer index; CuPy wraps it around, silently. Testing
# the values on the host would make every indexing op wait for the GPU, so there the op
# reduces its index to its least and greatest value on the device (one small launch,
# no wait) and leaves them here; the next read of values back to the host (to_host: item,
# tolist, numpy, printing, saving, .cpu()) reads the pending ones with it (one transfer)
# and raises the first failed check's error. PyTorch likewise reports a kernel's
# device-side assertion at its next synchronization, but leaves the CUDA context
# unusable; here the error is the op's own, and the device stays usable.
_pending_checks: list = []
_pending_lock = threading.Lock()  # ops on other threads may add checks meanwhile
PENDING_CHECKS_LIMIT = 256   # then they are read at once, so that the list stays short


def check_range(idx, low: int, high: int, error, bounds=None) -> None:
    """Raise ``error(value)`` (an exception naming ``value``, an element of the integer
    array ``idx`` outside ``[low, high)``) if there is one: at once for host memory (the
    first such element), else at the next read from the device (the least or the
    greatest; :func:`raise_failed_checks`). On a GPU (or in a profile) the check costs
    one launch for int64 indices (``index_bounds``), a min and a max for others, none
    where the caller passes ``bounds``, ``idx``'s least and greatest element, which a
    kernel of its own found."""
    if idx.size == 0 or (_capture_check is not None and _capture_check(idx, low, high, error)):
        return
    if bounds is not None:
        least, greatest = bounds
    elif idx.dtype == np.int64:
        least, greatest = math_of(idx).index_bounds(idx)  # (one launch on a device)
    else:
        least, greatest = idx.min(), idx.max()
    if isinstance(least, (np.ndarray, np.generic)):  # host memory: no wait to read them
        if int(least) < low or int(greatest) >= high:
            flat = idx.reshape(-1)
            raise error(int(flat[int(((flat < low) | (flat >= high)).argmax())]))
        return
    with _pending_lock:
        _pending_checks.append((least, greatest, low, high, error))
        full = len(_pending_checks) >= PENDING_CHECKS_LIMIT
    if full:
        raise_failed_checks()


def raise_failed_checks() -> None:
    """Read the pending range checks (one transfer per device) and raise the first failed
    one's error. The checks are cleared either way."""
    with _pending_lock:
        pending = _pending_checks[:]
        _pending_checks.clear()
    by_math: dict = {}  # the device's namespace -> the indices of its checks
    for i, check in enumerate(pending):
        by_math.setdefault(math_of(check[0]), []).append(i)
    read = {}
    for m, indices in by_math.items():
        values = m.stack([v.astype(np.int64, copy=False) for i in indices
                          for v in pending[i][:2]])
        for i, pair in zip(indices, values.get().reshape(-1, 2).tolist()):
            read[i] = pair
    for i, (_, _, low, high, error) in enumerate(pending):
        least, greatest = read[i]
        if least < low or greatest >= high:
            raise error(least if least < low else greatest)
