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

nn.Linear's products (``linear``, ``linear_weight_grads``: the formulas, once, over any
namespace) fold the bias in on CUDA through cuBLASLt (``libcublasLt``, found the same
way): the forward is one ``cublasLtMatmul`` with ``CUBLASLT_EPILOGUE_BIAS`` (the bias,
of the output's dtype, added to the accumulator before its one rounding: float32 and
float64 give the two steps' values, float16 rounds once instead of twice), the weight
gradient one with ``CUBLASLT_EPILOGUE_BGRADB`` (row-major ``g2.T @ x2`` is cuBLAS's
``x2^T g2`` with ``g2`` as its B: the bias gradient, ``g2`` summed over its rows, is B
summed over k; in cuBLASLt's order of summation). Descriptors, layouts and the
heuristic's algorithm are made once per product (device, epilogue, dtype, transposes,
sizes, leading dimensions, alignments) and kept (``MAX_PLANS``), never while a stream
captures: then only the descriptor's bias pointer is set (host memory) and the product
launched, on the current stream, with the handle's own workspace. Checked on first use
per dtype and epilogue against CuPy's two steps; where cuBLASLt fails or disagrees (a
warning) or has no algorithm (none), the two steps run, as on the CPU.
"""

from __future__ import annotations

import ctypes
import math as _math
import os
import warnings
import weakref

import numpy as np

__all__ = ["matmul_for", "use_stream", "CublasError", "WORKSPACE", "linear",
           "linear_weight_grads", "matmul_bias_plain", "matmul_bgrad_plain",
           "epilogues_for"]

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
    """TEST ONLY: serve cuBLAS (and cuBLASLt) with ``library`` (the CuPy stand-in's), or
    with None go back to the real ones. Forgets the handles, plans and checks made with
    the other."""
    global _test_library, _loaded, _lt_loaded
    _test_library = library
    _loaded = _lt_loaded = None
    _handles.clear()
    _lt_forget()


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


def _library_path(stem="libcublas") -> str:
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rsplit(None, 1)[-1]
                if f"/{stem}.so" in path:
                    return path
    except OSError:
        pass
    for name in (f"{stem}.so.13", f"{stem}.so.12", f"{stem}.so.11", f"{stem}.so"):
        try:
            ctypes.CDLL(name)
            return name
        except OSError:
            continue
    raise OSError(f"no {stem} found in the process or by its soname")


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


# ---- nn.Linear's bias folded into its products: cuBLASLt's epilogues --------------------
# The formulas, once, over any namespace F (arrays or gradcore.ops.tensor_math's tensors):
# x2 and g2 2-D. ``applies(epilogue, *operands)`` says whether F has the product with
# the epilogue for these operands (F.matmul_bias / F.matmul_bgrad: one launch).
def linear(F, applies, x2, w, b):
    """``x2 @ w.T + b`` (``b`` None: no bias)."""
    if b is None:
        return F.matmul(x2, w.swapaxes(-1, -2))
    if applies(EPILOGUE_BIAS, x2, w, b):
        return F.matmul_bias(x2, w, b)
    return matmul_bias_plain(F, x2, w, b)


def linear_weight_grads(F, applies, g2, x2, need_bias):
    """``(g2.T @ x2, sum(g2, axis=0))``: the weight's and the bias's gradients (the
    bias's None unless ``need_bias``)."""
    if not need_bias:
        return F.matmul(g2.swapaxes(-1, -2), x2), None
    if applies(EPILOGUE_BGRADB, g2, x2):
        return F.matmul_bgrad(g2, x2)
    return matmul_bgrad_plain(F, g2, x2)


def matmul_bias_plain(F, x2, w, b):
    """What ``F.matmul_bias`` computes, as two steps: the product, then the bias added
    into it (the CPU's, bit for bit what ``linear`` always did)."""
    out = F.matmul(x2, w.swapaxes(-1, -2))
    return F.add(out, b, out=out)


def matmul_bgrad_plain(F, g2, x2):
    """What ``F.matmul_bgrad`` computes, as two steps: ``(g2.T @ x2, sum(g2, axis=0))``."""
    return F.matmul(g2.swapaxes(-1, -2), x2), F.sum(g2, axis=0)


def always(epilogue, *operands) -> bool:
    return True


def never(epilogue, *operands) -> bool:
    return False


# cuBLASLt's values, from NVIDIA's cublasLt.h:
# cublasLtMatmulDescAttributes_t
DESC_TRANSA = 3        # CUBLASLT_MATMUL_DESC_TRANSA: int32_t (cublasOperation_t)
DESC_TRANSB = 4        # CUBLASLT_MATMUL_DESC_TRANSB: int32_t
DESC_EPILOGUE = 7      # CUBLASLT_MATMUL_DESC_EPILOGUE: uint32_t (cublasLtEpilogue_t)
DESC_BIAS_POINTER = 8  # CUBLASLT_MATMUL_DESC_BIAS_POINTER: (const) void *
# cublasLtEpilogue_t
EPILOGUE_DEFAULT = 1   # CUBLASLT_EPILOGUE_DEFAULT
EPILOGUE_BIAS = 4      # CUBLASLT_EPILOGUE_BIAS: + bias (length: D's rows), over D's columns
EPILOGUE_BGRADA = 256  # CUBLASLT_EPILOGUE_BGRADA: op(A) summed over k (length: D's rows)
EPILOGUE_BGRADB = 512  # CUBLASLT_EPILOGUE_BGRADB: op(B) summed over k (length: D's columns)
# cublasLtMatmulPreferenceAttributes_t
PREF_MAX_WORKSPACE_BYTES = 1  # CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: uint64_t
PREF_MIN_ALIGNMENT = (5, 6, 7, 8)  # CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_{A,B,C,D}_BYTES: uint32_t
# the scale type (alpha, beta) of each compute type: cudaDataType_t CUDA_R_32F, CUDA_R_64F
_SCALE = {COMPUTE_32F: 0, COMPUTE_64F: 1}
_DESC_CTYPES = {DESC_TRANSA: ctypes.c_int32, DESC_TRANSB: ctypes.c_int32,
                DESC_EPILOGUE: ctypes.c_uint32, DESC_BIAS_POINTER: ctypes.c_void_p}
_PREF_CTYPES = {PREF_MAX_WORKSPACE_BYTES: ctypes.c_uint64,
                **dict.fromkeys(PREF_MIN_ALIGNMENT, ctypes.c_uint32)}
_EPILOGUE_NAMES = {EPILOGUE_BIAS: "matmul_bias", EPILOGUE_BGRADB: "matmul_bgrad"}


class _HeuristicResult(ctypes.Structure):
    """cublasLtMatmulHeuristicResult_t: the algorithm (cublasLtMatmulAlgo_t, 8 uint64,
    first: its address is the struct's), its workspace size, state, waves count."""

    _fields_ = [("algo", ctypes.c_uint64 * 8), ("workspaceSize", ctypes.c_size_t),
                ("state", ctypes.c_int), ("wavesCount", ctypes.c_float),
                ("reserved", ctypes.c_int * 4)]


class _LtLibrary:
    """``libcublasLt`` through ctypes: the calls gradcore makes, each returning cuBLAS's
    status (the CuPy stand-in's cuBLAS provides the same ``lt_*`` methods). Enums are
    C ints; descriptors, handles and the stream are pointers."""

    def __init__(self, cdll):
        c = ctypes
        vp, i, pvp = c.c_void_p, c.c_int, c.POINTER(c.c_void_p)

        def fn(name, *args):
            f = getattr(cdll, name)
            f.argtypes, f.restype = list(args), i
            return f

        self._create = fn("cublasLtCreate", pvp)
        self._destroy = fn("cublasLtDestroy", vp)
        # (cublasLtMatmulDesc_t*, cublasComputeType_t, cudaDataType_t scaleType)
        self._desc_create = fn("cublasLtMatmulDescCreate", pvp, i, i)
        self._desc_destroy = fn("cublasLtMatmulDescDestroy", vp)
        # (desc, cublasLtMatmulDescAttributes_t, const void *buf, size_t sizeInBytes)
        self._desc_set = fn("cublasLtMatmulDescSetAttribute", vp, i, vp, c.c_size_t)
        # (cublasLtMatrixLayout_t*, cudaDataType, uint64_t rows, uint64_t cols, int64_t ld)
        self._layout_create = fn("cublasLtMatrixLayoutCreate", pvp, i, c.c_uint64,
                                 c.c_uint64, c.c_int64)
        self._layout_destroy = fn("cublasLtMatrixLayoutDestroy", vp)
        self._pref_create = fn("cublasLtMatmulPreferenceCreate", pvp)
        self._pref_destroy = fn("cublasLtMatmulPreferenceDestroy", vp)
        self._pref_set = fn("cublasLtMatmulPreferenceSetAttribute", vp, i, vp, c.c_size_t)
        # (handle, desc, Adesc, Bdesc, Cdesc, Ddesc, preference, int requestedAlgoCount,
        #  cublasLtMatmulHeuristicResult_t[], int *returnAlgoCount)
        self._heuristic = fn("cublasLtMatmulAlgoGetHeuristic", vp, vp, vp, vp, vp, vp, vp, i,
                             c.POINTER(_HeuristicResult), c.POINTER(i))
        # (handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc,
        #  const cublasLtMatmulAlgo_t*, void *workspace, size_t, cudaStream_t)
        self._matmul = fn("cublasLtMatmul", vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, vp, vp,
                          vp, vp, c.c_size_t, vp)

    @staticmethod
    def _made(create, *args):
        out = ctypes.c_void_p()
        status = create(ctypes.byref(out), *args)
        return status, out.value

    def lt_create(self):
        return self._made(self._create)

    def lt_destroy(self, handle):
        return self._destroy(handle)

    def lt_desc_create(self, compute, scale):
        return self._made(self._desc_create, compute, scale)

    def lt_desc_set(self, desc, attr, value):
        buf = _DESC_CTYPES[attr](value)
        return self._desc_set(desc, attr, ctypes.byref(buf), ctypes.sizeof(buf))

    def lt_desc_destroy(self, desc):
        return self._desc_destroy(desc)

    def lt_layout_create(self, dtype, rows, cols, ld):
        return self._made(self._layout_create, dtype, rows, cols, ld)

    def lt_layout_destroy(self, layout):
        return self._layout_destroy(layout)

    def lt_pref_create(self):
        return self._made(self._pref_create)

    def lt_pref_set(self, pref, attr, value):
        buf = _PREF_CTYPES[attr](value)
        return self._pref_set(pref, attr, ctypes.byref(buf), ctypes.sizeof(buf))

    def lt_pref_destroy(self, pref):
        return self._pref_destroy(pref)

    def lt_heuristic(self, handle, desc, a, b, c, d, pref):
        """``(status, algo, workspace bytes)``: the heuristic's first algorithm (None
        where it found none)."""
        result, count = _HeuristicResult(), ctypes.c_int(0)
        status = self._heuristic(handle, desc, a, b, c, d, pref, 1, ctypes.byref(result),
                                 ctypes.byref(count))
        if status or count.value < 1 or result.state:
            return status, None, 0
        return status, result, result.workspaceSize

    def lt_matmul(self, handle, desc, alpha, a, adesc, b, bdesc, beta, c, cdesc, d, ddesc,
                  algo, workspace, workspace_bytes, stream, compute):
        al, be = _Library._scalar(alpha, compute), _Library._scalar(beta, compute)
        return self._matmul(handle, desc, ctypes.byref(al), a, adesc, b, bdesc,
                            ctypes.byref(be), c, cdesc, d, ddesc, ctypes.addressof(algo),
                            workspace, workspace_bytes, stream or None)


_lt_loaded = None  # the _LtLibrary, or why it could not be loaded (a str)
_lt_handles: dict = {}   # device -> _LtHandle
_plans: dict = {}        # a product's key -> its _Plan, or None where cuBLASLt has none
_lt_checked: dict = {}   # (device, dtype, epilogue) -> whether cuBLASLt agreed on first use
MAX_PLANS = 64


def _lt_forget() -> None:
    _lt_handles.clear()
    _plans.clear()
    _lt_checked.clear()


def _lt_load(xp):
    global _lt_loaded
    if _test_library is not None:
        return _test_library if hasattr(_test_library, "lt_matmul") else \
            "the test's cuBLAS has no cuBLASLt"
    if _lt_loaded is None:
        try:
            xp.cuda.device.get_cublas_handle()  # (CuPy's libcublas loads libcublasLt)
            _lt_loaded = _LtLibrary(ctypes.CDLL(_library_path("libcublasLt")))
        except Exception as exc:  # noqa: BLE001 - any failure: the bias added apart
            _lt_loaded = f"libcublasLt could not be called ({exc})"
    return _lt_loaded


class _LtHandle:
    """gradcore's cuBLASLt handle on a device and its workspace (its own: a product
    with an epilogue may run beside a cuBLAS one on another stream)."""

    def __init__(self, lib, xp):
        status, self.handle = lib.lt_create()
        _check("cublasLtCreate", status)
        pool = xp.get_default_memory_pool()  # (outlives any capture: not a graph's pool)
        with xp.cuda.using_allocator(pool.malloc):
            self.workspace = xp.empty(WORKSPACE, dtype=np.uint8)


class _Plan:
    """A product's descriptor, layouts (A, B, D) and algorithm, made once."""

    __slots__ = ("desc", "layouts", "algo", "workspace")

    def __init__(self, desc, layouts, algo, workspace):
        self.desc, self.layouts, self.algo, self.workspace = desc, layouts, algo, workspace


#: The alignment gradcore tells cuBLASLt's heuristic where an address has it: 16
#: bytes, the widest access its kernels make (128-bit loads); an address less aligned
#: is told as it is. (Not the address's own, up to 256, as PyTorch tells it: that would
#: make the plans of one product differ from call to call as addresses do, and a step
#: captured in a CUDA graph run another algorithm than eagerly, or none.)
ALIGNMENT = 16


def _align(ptr) -> int:
    """What the heuristic is told of address ``ptr``'s alignment (``ALIGNMENT`` at most)."""
    return min(ALIGNMENT, ptr & -ptr) if ptr else ALIGNMENT


def _lt_warn_once(why):
    if why not in _warned:
        _warned.add(why)
        warnings.warn(f"gradcore: nn.Linear's bias on CUDA is added (and its gradient "
                      f"summed) by a launch of its own: {why}", stacklevel=4)


def _destroy_plan(lib, plan) -> None:
    for layout in plan.layouts:
        lib.lt_layout_destroy(layout)
    lib.lt_desc_destroy(plan.desc)


def _make_plan(lib, handle, key, bias_ptr):
    """The plan of ``key`` (see ``_Call``; cuBLAS's M, N, K, lda, ldb, ldd and the
    alignments of A, B, C, D and the vector), or None where cuBLASLt has no algorithm for
    it. Never while a stream captures (cuBLASLt's calls besides the product itself are
    not made then)."""
    _dev, epilogue, dtype, transa, transb, m, n, k, lda, ldb, ldd, aligns = key
    dt, compute = _DATA_TYPE[dtype], _COMPUTE[dtype]
    status, desc = lib.lt_desc_create(compute, _SCALE[compute])
    _check("cublasLtMatmulDescCreate", status)
    layouts = []
    try:
        for attr, value in ((DESC_TRANSA, transa), (DESC_TRANSB, transb),
                            (DESC_EPILOGUE, epilogue), (DESC_BIAS_POINTER, bias_ptr)):
            _check("cublasLtMatmulDescSetAttribute", lib.lt_desc_set(desc, attr, value))
        # the layouts of the memory as it is (before op): op(A) m x k, op(B) k x n
        for rows, cols, ld in (((m, k) if transa == OP_N else (k, m)) + (lda,),
                               ((k, n) if transb == OP_N else (n, k)) + (ldb,),
                               (m, n, ldd)):
            status, layout = lib.lt_layout_create(dt, rows, cols, ld)
            _check("cublasLtMatrixLayoutCreate", status)
            layouts.append(layout)
        status, pref = lib.lt_pref_create()
        _check("cublasLtMatmulPreferenceCreate", status)
        try:
            _check("cublasLtMatmulPreferenceSetAttribute",
                   lib.lt_pref_set(pref, PREF_MAX_WORKSPACE_BYTES, WORKSPACE))
            for attr, align in zip(PREF_MIN_ALIGNMENT, aligns):
                _check("cublasLtMatmulPreferenceSetAttribute",
                       lib.lt_pref_set(pref, attr, align))
            a, b, d = layouts
            status, algo, need = lib.lt_heuristic(handle, desc, a, b, d, d, pref)
        finally:
            lib.lt_pref_destroy(pref)
    except BaseException:
        _destroy_plan(lib, _Plan(desc, layouts, None, 0))
        raise
    plan = _Plan(desc, tuple(layouts), algo, need)
    if status or algo is None or need > WORKSPACE:  # none for this product: the plain path
        _destroy_plan(lib, plan)
        return None
    return plan


class _Call:
    """One product with an epilogue, ready to launch: row-major ``C = A @ B`` (``m x
    k`` by ``k x n``) as cuBLAS's column-major ``C^T = B^T A^T`` (B's memory is
    cuBLAS's A), ``vec`` the bias (BIAS: length n, C's columns, which are D's rows) or
    None (BGRADB: the sum of A over k, length m, C's rows, which are D's columns)."""

    __slots__ = ("epilogue", "A", "B", "vec", "out", "grad", "key", "m", "n")

    def __init__(self, xp, index, epilogue, A, B, vec):
        dtype = A.dtype
        m, k = A.shape
        n = B.shape[1]
        A, a_cols, lda = _layout(A, m, k)
        B, b_cols, ldb = _layout(B, k, n)
        if vec is not None and n > 1 and vec.strides[0] != vec.itemsize:
            vec = xp.ascontiguousarray(vec)  # (cuBLASLt: a packed vector)
        self.epilogue, self.A, self.B, self.m, self.n = epilogue, A, B, m, n
        self.out = xp.empty((m, n), dtype=dtype)
        self.grad = xp.empty((m,), dtype=dtype) if vec is None else None
        self.vec = vec if vec is not None else self.grad
        d_ptr = self.out.data.ptr
        # cuBLAS's (M, N, K) = (n, m, k); its A is B's memory, its B is A's; C is D.
        # The addresses' alignments are part of it (the heuristic is told them, and
        # reads the vector's from the descriptor: an algorithm may want more).
        self.key = (index, epilogue, dtype, OP_T if b_cols else OP_N,
                    OP_T if a_cols else OP_N, n, m, k, ldb, lda, n,
                    (_align(B.data.ptr), _align(A.data.ptr), _align(d_ptr), _align(d_ptr),
                     _align(self.vec.data.ptr)))

    def launch(self, lib, lt, plan, stream_ptr) -> int:
        dtype = self.out.dtype
        # (the vector's address in the cached descriptor: a write to host memory, which
        # the product a capture records reads then)
        status = lib.lt_desc_set(plan.desc, DESC_BIAS_POINTER, self.vec.data.ptr)
        if status:
            return status
        a, b, d = plan.layouts
        out = self.out.data.ptr
        return lib.lt_matmul(lt.handle, plan.desc, 1.0, self.B.data.ptr, a, self.A.data.ptr,
                             b, 0.0, out, d, out, d, plan.algo, lt.workspace.data.ptr,
                             WORKSPACE, stream_ptr, _COMPUTE[dtype])

    def result(self):
        return self.out if self.grad is None else (self.out, self.grad)


class _Epilogues:
    """cuBLASLt's epilogues on a CUDA namespace: ``applies(epilogue, *operands)`` (and
    the first-use check per dtype and epilogue), and the products themselves
    (``matmul_bias``, ``matmul_bgrad``), each one ``cublasLtMatmul``."""

    def __init__(self, math):
        self.math, self.xp = math, math.xp
        self._ready = None  # (operands' ids, _Call, plan) that applies() made last

    @staticmethod
    def _operands(epilogue, ops):
        """Row-major ``(A, B, vec)`` of the linear's operands."""
        if epilogue == EPILOGUE_BIAS:
            x2, w, b = ops
            return x2, w.swapaxes(-1, -2), b
        g2, x2 = ops
        return g2.swapaxes(-1, -2), x2, None

    def applies(self, epilogue, *ops) -> bool:
        A, B, vec = self._operands(epilogue, ops)
        dtype = A.dtype
        if dtype not in _DATA_TYPE or B.dtype != dtype or A.ndim != 2 or B.ndim != 2 or \
                not (A.shape[0] and A.shape[1] and B.shape[1]) or A.shape[1] != B.shape[0]:
            return False
        if vec is not None and (vec.dtype != dtype or vec.shape != (B.shape[1],)):
            return False
        if os.environ.get("GRADCORE_CUBLASLT", "1") == "0":  # (the two steps, asked for)
            return False
        xp = self.xp
        lib = _lt_load(xp)
        if isinstance(lib, str):
            _lt_warn_once(lib)
            return False
        index = xp.cuda.runtime.getDevice()
        capturing = xp.cuda.get_current_stream().is_capturing()
        check = (index, dtype, epilogue)
        ok = _lt_checked.get(check)
        if ok is None:
            if capturing:  # (the check reads values back: not while a stream captures)
                return False
            ok = _lt_checked[check] = self._agrees(lib, index, epilogue, dtype)
        if not ok:
            return False
        ready = self._prepare(lib, index, epilogue, A, B, vec, capturing)
        if ready is None:
            return False
        self._ready = (tuple(map(id, ops)),) + ready
        return True

    def _prepare(self, lib, index, epilogue, A, B, vec, capturing):
        """``(call, plan, lt)`` for these operands, or None (no plan, and none made now)."""
        xp = self.xp
        try:
            lt = _lt_handles.get(index)
            if lt is None:
                if capturing:
                    return None
                lt = _lt_handles[index] = _LtHandle(lib, xp)
            # (the array module looked up now: a profile counts a copy _Call makes)
            call = _Call(self.math.xp, index, epilogue, A, B, vec)
            plan = _plans.get(call.key, _plans)
            if plan is _plans:
                if capturing:
                    return None
                if len(_plans) >= MAX_PLANS:  # (the oldest goes: a dict keeps its order)
                    old = _plans.pop(next(iter(_plans)))
                    if old is not None:
                        _destroy_plan(lib, old)
                plan = _plans[call.key] = _make_plan(lib, lt.handle, call.key,
                                                     call.vec.data.ptr)
        except Exception as exc:  # noqa: BLE001 - any failure: the plain path from now on
            self._fail(index, A.dtype, epilogue, exc)
            return None
        return None if plan is None else (call, plan, lt)

    def _fail(self, index, dtype, epilogue, why):
        _lt_checked[(index, dtype, epilogue)] = False
        _lt_warn_once(f"cuBLASLt's {_EPILOGUE_NAMES[epilogue]} for {np.dtype(dtype)} "
                      f"failed ({why})")

    def _take(self, epilogue, ops):
        """The call that ``applies`` made ready for ``ops`` (again if it was for others)."""
        ready, self._ready = self._ready, None
        if ready is None or ready[0] != tuple(map(id, ops)):
            if not self.applies(epilogue, *ops):
                return None
            ready, self._ready = self._ready, None
        return ready[1:]

    def product(self, epilogue, *ops):
        """The product with ``epilogue`` (call ``applies`` first); the plain two steps
        should cuBLASLt fail now (with a warning, and from then on)."""
        ready = self._take(epilogue, ops)
        if ready is not None:
            call, plan, lt = ready
            lib = _lt_load(self.xp)
            status = call.launch(lib, lt, plan, self.xp.cuda.get_current_stream().ptr)
            if not status:
                return call.result()
            self._fail(call.key[0], call.out.dtype, epilogue,
                       CublasError("cublasLtMatmul", status))
        plain = matmul_bias_plain if epilogue == EPILOGUE_BIAS else matmul_bgrad_plain
        return plain(self.math, *ops)

    def _agrees(self, lib, index, epilogue, dtype) -> bool:
        """Small products through cuBLASLt against CuPy's two steps (a transposed
        operand among them): False, with a warning, if they differ or fail; False
        without one where cuBLASLt has no algorithm for them (not supported)."""
        xp = self.xp
        rng = np.random.default_rng(0)
        x = xp.asarray(rng.standard_normal((6, 5)).astype(dtype))
        w = xp.asarray(rng.standard_normal((4, 5)).astype(dtype))
        b = xp.asarray(rng.standard_normal(4).astype(dtype))
        g = xp.asarray(rng.standard_normal((6, 4)).astype(dtype))
        if epilogue == EPILOGUE_BIAS:
            # (a column-major x, a column-major w: the transposed layouts)
            cases = [(x, w, b), (_fortran(xp, x), w, b), (x[:3], _fortran(xp, w), b)]
        else:
            cases = [(g, x), (_fortran(xp, g), x), (g, _fortran(xp, x))]
        tol = 1e-2 if dtype == np.float16 else 1e-5
        try:
            for ops in cases:
                A, B, vec = self._operands(epilogue, ops)
                ready = self._prepare(lib, index, epilogue, A, B, vec, False)
                if ready is None:  # (none for it, or it failed: warned then)
                    return False
                call, plan, lt = ready
                _check("cublasLtMatmul",
                       call.launch(lib, lt, plan, xp.cuda.get_current_stream().ptr))
                got = call.result()
                # (all through the array module as it was when the namespace was made:
                # a profile running now counts none of it)
                if epilogue == EPILOGUE_BIAS:
                    wants = (xp.add(xp.matmul(ops[0], ops[1].T), ops[2]),)
                    got = (got,)
                else:
                    wants = (xp.matmul(ops[0].T, ops[1]), xp.sum(ops[0], axis=0))
                if not all(bool(xp.allclose(u, v, rtol=tol, atol=tol))
                           for u, v in zip(got, wants)):
                    _lt_warn_once(f"cuBLASLt's {_EPILOGUE_NAMES[epilogue]} disagrees with "
                                  f"CuPy's two steps for {np.dtype(dtype)}")
                    return False
        except Exception as exc:  # noqa: BLE001 - whatever failed: the plain path
            _lt_warn_once(f"cuBLASLt's {_EPILOGUE_NAMES[epilogue]} for {np.dtype(dtype)} "
                          f"failed ({exc})")
            return False
        return True


def _fortran(xp, a):
    """``a`` as a column-major copy (a transposed view of a C-contiguous one)."""
    return xp.ascontiguousarray(a.T).T


_epilogues = weakref.WeakKeyDictionary()  # namespace -> its _Epilogues


def epilogues_for(math) -> _Epilogues:
    """cuBLASLt's epilogues on the CUDA namespace ``math``, one per namespace (its
    ``applies`` and ``product`` serve the kernel registry's ``linear``,
    ``matmul_bias``, ...)."""
    e = _epilogues.get(math)
    if e is None:
        e = _epilogues[math] = _Epilogues(math)
    return e
