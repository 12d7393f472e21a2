"""Matrix products on CUDA through cuBLAS called directly: products a CUDA graph captures.

CuPy refuses cuBLAS while a stream captures: every cuBLAS call it makes (``sgemm``,
``gemmEx``, ...) first sets its handle's stream through ``cublas.setStream``, which
raises ``NotImplementedError`` when that stream is capturing (CuPy 14,
``cupy_backends/cuda/libs/cublas.pyx``: ``setStream`` and ``_setStream``, called at the
top of each BLAS function). The guard is CuPy's, not cuBLAS's: cuBLAS supports stream
capture when the caller gives it a workspace (cuBLAS's "CUDA Graphs support"). So on a
CUDA device gradcore's matrix products (``math.matmul``) call ``cublasGemmEx`` and
``cublasGemmStridedBatchedEx`` through ctypes, on a handle of gradcore's own whose
workspace (32 MiB from CuPy's default pool, made on the first product, never during a
capture) is set again each time the handle moves to another stream (``cublasSetStream``
resets it). Each call sets the handle's stream to the current one: the capture's while
one captures. Eager products and captured ones are the same call, so a compiled step
gives eager's bits.

float16, float32 and float64 products of any layout (a transposed view is passed as
such; other strides are made contiguous first), 1-D operands and broadcast batch
dimensions; float16 accumulates in float32 (``CUBLAS_COMPUTE_32F``), float32 in float32
without TF32, as PyTorch's defaults. Other dtypes go to CuPy's ``matmul``.

The library is the ``libcublas`` CuPy loaded (found among the process's mapped files
after CuPy made its own handle, or by its soname). On first use per dtype, a small
product is checked against CuPy's; should loading fail or the check disagree, products
go to CuPy's ``matmul`` (with a warning) and a capture of a step with products runs
eagerly.
"""

from __future__ import annotations

import ctypes
import math as _math
import warnings

import numpy as np

__all__ = ["matmul_for", "use_stream", "CublasError", "WORKSPACE"]

#: Bytes of the workspace gradcore gives its cuBLAS handle (NVIDIA's advice for Hopper).
WORKSPACE = 32 << 20

OP_N, OP_T = 0, 1
_DATA_TYPE = {np.dtype(np.float16): 2, np.dtype(np.float32): 0, np.dtype(np.float64): 1}
COMPUTE_32F, COMPUTE_64F = 68, 70
_COMPUTE = {np.dtype(np.float16): COMPUTE_32F, np.dtype(np.float32): COMPUTE_32F,
            np.dtype(np.float64): COMPUTE_64F}
GEMM_DEFAULT = -1


class CublasError(RuntimeError):
    """A cuBLAS call that returned an error status."""

    def __init__(self, what, status):
        self.status = status
        super().__init__(f"cuBLAS {what} failed with status {status}")


def _check(what, status):
    if status:
        raise CublasError(what, status)


class _Library:
    """``libcublas`` through ctypes: the calls gradcore makes, each returning cuBLAS's
    status (the CuPy stand-in provides an object with the same methods)."""

    def __init__(self, cdll):
        c = ctypes
        vp, i, ll = c.c_void_p, c.c_int, c.c_longlong
        self._create = cdll.cublasCreate_v2
        self._create.argtypes, self._create.restype = [c.POINTER(vp)], i
        self._stream = cdll.cublasSetStream_v2
        self._stream.argtypes, self._stream.restype = [vp, vp], i
        self._workspace = cdll.cublasSetWorkspace_v2
        self._workspace.argtypes, self._workspace.restype = [vp, vp, c.c_size_t], i
        self._gemm = cdll.cublasGemmEx
        self._gemm.argtypes = [vp, i, i, i, i, i, vp, vp, i, i, vp, i, i, vp, vp, i, i, i, i]
        self._gemm.restype = i
        self._batched = cdll.cublasGemmStridedBatchedEx
        self._batched.argtypes = [vp, i, i, i, i, i, vp, vp, i, i, ll, vp, i, i, ll, vp, vp,
                                  i, i, ll, i, i, i]
        self._batched.restype = i

    def create(self):
        h = ctypes.c_void_p()
        status = self._create(ctypes.byref(h))
        return status, h.value

    def set_stream(self, handle, stream):
        return self._stream(handle, stream or None)

    def set_workspace(self, handle, ptr, nbytes):
        return self._workspace(handle, ptr, nbytes)

    @staticmethod
    def _scalar(value, compute):
        return ctypes.c_double(value) if compute == COMPUTE_64F else ctypes.c_float(value)

    def gemm_batched(self, handle, ta, tb, m, n, k, alpha, a, atype, lda, sa, b, btype, ldb,
                     sb, beta, c, ctype, ldc, sc, batch, compute):
        al, be = self._scalar(alpha, compute), self._scalar(beta, compute)
        if batch == 1:
            return self._gemm(handle, ta, tb, m, n, k, ctypes.byref(al), a, atype, lda, b,
                              btype, ldb, ctypes.byref(be), c, ctype, ldc, compute,
                              GEMM_DEFAULT)
        return self._batched(handle, ta, tb, m, n, k, ctypes.byref(al), a, atype, lda, sa, b,
                             btype, ldb, sb, ctypes.byref(be), c, ctype, ldc, sc, batch,
                             compute, GEMM_DEFAULT)


_test_library = None


def _use_library_for_tests(library) -> None:
    """TEST ONLY: serve cuBLAS with ``library`` (the CuPy stand-in's), or with None go
    back to the real one. Forgets the handles made with the other."""
    global _test_library, _loaded
    _test_library = library
    _loaded = None
    _handles.clear()


_loaded = None  # the _Library, or the reason it could not be loaded (a str)


def _load(xp):
    global _loaded
    if _test_library is not None:
        return _test_library
    if _loaded is None:
        try:
            xp.cuda.device.get_cublas_handle()  # CuPy loads libcublas for its handle
            _loaded = _Library(ctypes.CDLL(_library_path()))
        except Exception as exc:  # noqa: BLE001 - any failure: CuPy's matmul instead
            _loaded = f"libcublas could not be called directly ({exc})"
    return _loaded


def _library_path() -> str:
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rsplit(None, 1)[-1]
                if "/libcublas.so" in path:
                    return path
    except OSError:
        pass
    for name in ("libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"):
        try:
            ctypes.CDLL(name)
            return name
        except OSError:
            continue
    raise OSError("no libcublas found in the process or by its soname")


class _Handle:
    """gradcore's cuBLAS handle on a device: its workspace and the stream it is on."""

    def __init__(self, lib, xp):
        self.lib = lib
        status, self.handle = lib.create()
        _check("cublasCreate", status)
        pool = xp.get_default_memory_pool()  # (outlives any capture: not a graph's pool)
        with xp.cuda.using_allocator(pool.malloc):
            self.workspace = xp.empty(WORKSPACE, dtype=np.uint8)
        self.stream = None

    def on(self, stream_ptr):
        if self.stream != stream_ptr:
            _check("cublasSetStream", self.lib.set_stream(self.handle, stream_ptr))
            # (cublasSetStream gives the handle back its default workspace)
            _check("cublasSetWorkspace", self.lib.set_workspace(
                self.handle, self.workspace.data.ptr, WORKSPACE))
            self.stream = stream_ptr
        return self.handle


_handles: dict = {}


def use_stream(xp, stream_ptr) -> None:
    """Put the handle of the current device on stream ``stream_ptr`` now, with its
    workspace: before a capture begins, so that the captured products need no handle
    call of that kind during the capture."""
    h = _handles.get(xp.cuda.runtime.getDevice())
    if h is not None:
        h.on(stream_ptr)


def _layout(x, rows, cols):
    """``x`` (its last two axes a ``rows x cols`` matrix, row-major as NumPy sees it) as
    cuBLAS sees it: ``(x, column_major, ld)``: ``column_major`` when the memory holds
    the matrix column by column (a transposed view), else it holds ``x.T`` so; ``x`` is
    made contiguous when its strides fit neither."""
    it = x.itemsize
    s0, s1 = x.strides[-2], x.strides[-1]
    if cols == 1 or s1 == it:
        ld = s0 // it if rows > 1 else max(cols, 1)
        if s0 % it == 0 and ld >= max(cols, 1) and (rows == 1 or s0 > 0):
            return x, False, ld
    if rows == 1 or s0 == it:
        ld = s1 // it if cols > 1 else max(rows, 1)
        if s1 % it == 0 and ld >= max(rows, 1) and (cols == 1 or s1 > 0):
            return x, True, ld
    x = x.copy()  # C order
    return x, False, max(cols, 1)


def _batch_stride(x, batch, rows, cols, xp):
    """``x`` and the element stride between its matrices over the flattened ``batch``
    (0 for a matrix broadcast over it), making it contiguous where one stride cannot
    step through its batch dimensions."""
    if x.ndim == 2:
        return x, 0
    x = xp.broadcast_to(x, batch + (rows, cols))
    it = x.itemsize
    strides = [s for s, n in zip(x.strides[:-2], batch) if n != 1]
    sizes = [n for n in batch if n != 1]
    if not strides:
        return x, 0
    ok = all(s % it == 0 and s >= 0 for s in strides) and all(
        strides[j] == strides[j + 1] * sizes[j + 1] for j in range(len(strides) - 1))
    if ok and (strides[-1] != 0 or all(s == 0 for s in strides)):
        return x, strides[-1] // it
    x = xp.ascontiguousarray(x)
    return x, rows * cols


def matmul_for(math):
    """``math.matmul`` for a CUDA namespace: cuBLAS called directly where it applies
    (and checked on first use per dtype), CuPy's ``matmul`` otherwise."""
    xp = math.xp
    fallback = xp.matmul
    verified: dict = {}

    def product(a, b, lib):
        dtype = a.dtype
        a1, b1 = a.ndim == 1, b.ndim == 1
        A = a.reshape(1, -1) if a1 else a
        B = b.reshape(-1, 1) if b1 else b
        m, k = A.shape[-2:]
        n = B.shape[-1]
        if B.shape[-2] != k:
            return fallback(a, b)  # (its error)
        batch = tuple(np.broadcast_shapes(A.shape[:-2], B.shape[:-2]))
        out = xp.empty(batch + (m, n), dtype=dtype)
        if out.size and k == 0:
            out[...] = 0
        elif out.size:
            A, sa = _batch_stride(A, batch, m, k, xp)
            B, sb = _batch_stride(B, batch, k, n, xp)
            A, a_cols, lda = _layout(A, m, k)
            B, b_cols, ldb = _layout(B, k, n)
            index = xp.cuda.runtime.getDevice()
            h = _handles.get(index)
            if h is None:
                h = _handles[index] = _Handle(lib, xp)
            handle = h.on(xp.cuda.get_current_stream().ptr)
            dt, compute = _DATA_TYPE[dtype], _COMPUTE[dtype]
            # row-major C = A B is column-major C^T = B^T A^T: B's memory first
            _check("cublasGemmEx", lib.gemm_batched(
                handle, OP_T if b_cols else OP_N, OP_T if a_cols else OP_N, n, m, k, 1.0,
                B.data.ptr, dt, ldb, sb, A.data.ptr, dt, lda, sa, 0.0, out.data.ptr, dt, n,
                m * n, _math.prod(batch), compute))
        if a1:
            out = out.reshape(out.shape[:-2] + out.shape[-1:])
        if b1:
            out = out.reshape(out.shape[:-1])
        return out

    def matmul(a, b):
        dtype = a.dtype
        if dtype not in _DATA_TYPE or b.dtype != dtype or a.ndim == 0 or b.ndim == 0:
            return fallback(a, b)
        lib = _load(xp)
        if isinstance(lib, str):
            _warn_once(lib)
            return fallback(a, b)
        ok = verified.get(dtype)
        if ok is None:
            ok = verified[dtype] = _agrees(product, fallback, lib, xp, dtype)
        return product(a, b, lib) if ok else fallback(a, b)

    matmul.__name__ = "matmul"
    return matmul


_warned = set()


def _warn_once(why):
    if why not in _warned:
        _warned.add(why)
        warnings.warn(f"gradcore: matrix products on CUDA go through CuPy's matmul: {why}; "
                      "gc.compile then runs steps with products eagerly", stacklevel=3)


def _agrees(product, fallback, lib, xp, dtype) -> bool:
    """A small product through cuBLAS against CuPy's, in the layouts the ops use (a
    transposed operand, a broadcast batch): False, with a warning, if they differ."""
    rng = np.random.default_rng(0)
    a = xp.asarray(rng.standard_normal((2, 3, 5)).astype(dtype))
    b = xp.asarray(rng.standard_normal((4, 5)).astype(dtype))
    tol = 1e-2 if dtype == np.float16 else 1e-5
    try:
        same = all(bool(xp.allclose(product(x, y, lib), fallback(x, y), rtol=tol, atol=tol))
                   for x, y in ((a, b.T), (a[0], b.T), (a[1, 0], b.T), (a, b[0])))
    except Exception as exc:  # noqa: BLE001 - whatever failed: CuPy's matmul instead
        _warn_once(f"cuBLAS called directly failed ({exc})")
        return False
    if not same:
        _warn_once(f"cuBLAS called directly disagrees with CuPy's matmul for {dtype}")
    return same
