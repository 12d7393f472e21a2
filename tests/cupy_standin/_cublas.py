"""The cuBLAS and cuBLASLt calls gradcore makes directly (``gradcore.kernels.gemm``), for
the CuPy stand-in: the same methods as gemm's ctypes bindings, over the stand-in's memory.

cuBLAS's semantics: a handle issues its work to the stream last set
(``cublasSetStream``), which also takes back a workspace set by the user; matrices are
column-major, given by pointer, leading dimension and batch stride. Work issued to a
capturing stream is recorded into the graph like any other (``_graph``); while a stream
captures, a handle without a workspace of the user's refuses
(``CUBLAS_STATUS_NOT_SUPPORTED``), the condition cuBLAS puts on capture. The product is
computed as NumPy's row-major product over the same memory, so that values are the
CPU's, bit for bit.

cuBLASLt (``lt_*``): a handle, matmul descriptors (compute and scale type, TRANSA,
TRANSB, EPILOGUE, BIAS_POINTER), matrix layouts (type, rows, columns, leading dimension,
column-major), preferences (workspace, minimum alignments) and the heuristic, whose
algorithm holds the configuration it was chosen for: ``cublasLtMatmul`` refuses an
algorithm chosen for another one, addresses less aligned than the preference said, a
workspace smaller than the algorithm's, a null vector with BIAS/BGRAD epilogues and
mismatched types (cuBLASLt's INVALID_VALUE / NOT_SUPPORTED). The product accumulates in
the compute type (float32 for float16) and rounds once after the epilogue: BIAS adds the
vector (D's rows) across D's columns, BGRADA/BGRADB write op(A)/op(B) summed over k.
Each product is one launch, issued to the stream it is given (recorded into a graph
when that stream captures). Stricter than cuBLASLt, as gradcore's rule: creating or
destroying a descriptor and the heuristic are refused (NOT_SUPPORTED) while the current
stream captures; setting a descriptor's attribute (host memory) is not.
"""

from __future__ import annotations

import collections
import ctypes
import itertools

import numpy as _np

from . import _graph

STATUS_SUCCESS = 0
STATUS_INVALID_VALUE = 7
STATUS_NOT_SUPPORTED = 15
_DTYPES = {2: _np.float16, 0: _np.float32, 1: _np.float64}
# cuBLASLt (cublasLt.h): descriptor attributes, epilogues, preference attributes
_COMPUTE_SCALE = {68: 0, 70: 1}  # CUBLAS_COMPUTE_32F -> CUDA_R_32F, _64F -> CUDA_R_64F
_DESC_ATTRS = {3: "transa", 4: "transb", 7: "epilogue", 8: "bias"}
_EPILOGUES = {1, 4, 256, 512}  # DEFAULT, BIAS, BGRADA, BGRADB
_PREF_ATTRS = {1: "workspace", 5: "align_a", 6: "align_b", 7: "align_c", 8: "align_d"}
ALGO_WORKSPACE = 4096  # the bytes of workspace the stand-in's algorithms ask for


class _HandleState:
    __slots__ = ("stream", "workspace")

    def __init__(self):
        self.stream = _graph.Stream.null
        self.workspace = None


def _view(ptr, dtype, shape, strides):
    """A NumPy view of device memory at ``ptr`` (element strides)."""
    it = _np.dtype(dtype).itemsize
    extent = 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    buf = (ctypes.c_char * (extent * it)).from_address(ptr)
    flat = _np.frombuffer(buf, dtype=dtype)
    return _np.lib.stride_tricks.as_strided(flat, shape, tuple(s * it for s in strides))


class _Algo:
    """A heuristic's algorithm: the configuration it was chosen for."""

    __slots__ = ("config", "aligns", "workspace")

    def __init__(self, config, aligns, workspace):
        self.config, self.aligns, self.workspace = config, aligns, workspace


class Library:
    """cuBLAS as the stand-in serves it (see the module)."""

    def __init__(self):
        self._handles: dict = {}
        self._ids = itertools.count(1)
        self._lt: dict = {}  # cuBLASLt's objects by id: ("handle"|"desc"|..., state)
        # (name, stream ptr) of the latest calls (read by tests; bounded: no growth)
        self.calls: collections.deque = collections.deque(maxlen=256)

    def create(self):
        h = next(self._ids)
        self._handles[h] = _HandleState()
        return STATUS_SUCCESS, h

    def set_stream(self, handle, stream):
        st = self._handles[handle]
        st.stream = _graph.stream_by_ptr(stream)
        st.workspace = None  # cuBLAS: "resets the user workspace to the default pool"
        return STATUS_SUCCESS

    def set_workspace(self, handle, ptr, nbytes):
        self._handles[handle].workspace = (ptr, nbytes)
        return STATUS_SUCCESS

    def gemm_batched(self, handle, ta, tb, m, n, k, alpha, a, atype, lda, sa, b, btype, ldb,
                     sb, beta, c, ctype, ldc, sc, batch, compute):
        st = self._handles[handle]
        if _graph.capturing(st.stream) is not None and st.workspace is None:
            return STATUS_NOT_SUPPORTED
        if atype != btype or atype != ctype or atype not in _DTYPES:
            return STATUS_INVALID_VALUE
        dtype = _DTYPES[atype]
        # op(A) is m x k, op(B) k x n, C m x n, all column-major: as row-major views,
        # column-major X (r x c, ld) is the transpose of a (c x r) row-major one
        a_rows, a_cols = (m, k) if ta == 0 else (k, m)
        b_rows, b_cols = (k, n) if tb == 0 else (n, k)
        if lda < max(1, a_rows) or ldb < max(1, b_rows) or ldc < max(1, m):
            return STATUS_INVALID_VALUE
        A = _view(a, dtype, (batch, a_rows, a_cols), (sa, 1, lda))
        B = _view(b, dtype, (batch, b_rows, b_cols), (sb, 1, ldb))
        C = _view(c, dtype, (batch, m, n), (sc, 1, ldc))
        opA = A if ta == 0 else A.transpose(0, 2, 1)
        opB = B if tb == 0 else B.transpose(0, 2, 1)
        self.calls.append(("gemm", st.stream.ptr))

        def run(opA, opB, C):
            # C^T = op(B)^T op(A)^T: NumPy's row-major product of the same memory, the
            # layouts it saw before (so the CPU's values, bit for bit)
            lhs, rhs = opB.transpose(0, 2, 1), opA.transpose(0, 2, 1)
            prod = _np.matmul(lhs[0], rhs[0])[None] if batch == 1 else _np.matmul(lhs, rhs)
            if beta == 0:
                out = prod if alpha == 1 else prod * dtype(alpha)
            else:
                out = prod * dtype(alpha) + C.transpose(0, 2, 1) * dtype(beta)
            C.transpose(0, 2, 1)[...] = out

        from . import _exec  # noqa: PLC0415  (the stand-in's way of issuing work)

        _exec(run, (opA, opB, C), stream=st.stream, writes=(C,))
        return STATUS_SUCCESS

    # ---- cuBLASLt ----------------------------------------------------------------------
    def _lt_new(self, kind, state):
        if _graph.capturing() is not None:
            return STATUS_NOT_SUPPORTED, None
        h = next(self._ids)
        self._lt[h] = (kind, state)
        return STATUS_SUCCESS, h

    def _lt_get(self, kind, h):
        entry = self._lt.get(h)
        return entry[1] if entry is not None and entry[0] == kind else None

    def _lt_drop(self, kind, h):
        if _graph.capturing() is not None:
            return STATUS_NOT_SUPPORTED
        if self._lt_get(kind, h) is None:
            return STATUS_INVALID_VALUE
        del self._lt[h]
        return STATUS_SUCCESS

    def lt_create(self):
        return self._lt_new("handle", {})

    def lt_destroy(self, handle):
        return self._lt_drop("handle", handle)

    def lt_desc_create(self, compute, scale):
        if _COMPUTE_SCALE.get(compute) != scale:
            return STATUS_NOT_SUPPORTED, None
        return self._lt_new("desc", {"compute": compute, "transa": 0, "transb": 0,
                                     "epilogue": 1, "bias": 0})

    def lt_desc_set(self, desc, attr, value):
        d = self._lt_get("desc", desc)
        name = _DESC_ATTRS.get(attr)
        if d is None or name is None or (name == "epilogue" and value not in _EPILOGUES) or \
                (name in ("transa", "transb") and value not in (0, 1)):
            return STATUS_INVALID_VALUE
        d[name] = int(value or 0)
        return STATUS_SUCCESS

    def lt_desc_destroy(self, desc):
        return self._lt_drop("desc", desc)

    def lt_layout_create(self, dtype, rows, cols, ld):
        if dtype not in _DTYPES or ld < max(1, rows):
            return STATUS_INVALID_VALUE, None
        return self._lt_new("layout", (dtype, rows, cols, ld))

    def lt_layout_destroy(self, layout):
        return self._lt_drop("layout", layout)

    def lt_pref_create(self):
        return self._lt_new("pref", {"workspace": 0, "align_a": 256, "align_b": 256,
                                     "align_c": 256, "align_d": 256})

    def lt_pref_set(self, pref, attr, value):
        p = self._lt_get("pref", pref)
        if p is None or attr not in _PREF_ATTRS:
            return STATUS_INVALID_VALUE
        p[_PREF_ATTRS[attr]] = int(value)
        return STATUS_SUCCESS

    def lt_pref_destroy(self, pref):
        return self._lt_drop("pref", pref)

    def _config(self, desc, a, b, c, d):
        """The product the descriptors describe, ``(config, dtype)``, or a status."""
        ds = self._lt_get("desc", desc)
        lays = [self._lt_get("layout", x) for x in (a, b, c, d)]
        if ds is None or any(x is None for x in lays):
            return STATUS_INVALID_VALUE
        dts = {x[0] for x in lays}
        if len(dts) != 1:
            return STATUS_NOT_SUPPORTED  # (mixed types: not a configuration gradcore uses)
        dt = dts.pop()
        if ds["compute"] != (70 if dt == 1 else 68):
            return STATUS_NOT_SUPPORTED
        (_, ar, ac, _lda), (_, br, bc, _ldb), (_, cr, cc, _ldc), (_, dr, dc, _ldd) = lays
        m, k = (ar, ac) if ds["transa"] == 0 else (ac, ar)
        k2, n = (br, bc) if ds["transb"] == 0 else (bc, br)
        if k != k2 or (dr, dc) != (m, n) or (cr, cc) != (m, n):
            return STATUS_INVALID_VALUE
        config = (ds["compute"], ds["transa"], ds["transb"], ds["epilogue"], tuple(lays))
        return config, dt

    def lt_heuristic(self, handle, desc, a, b, c, d, pref):
        if _graph.capturing() is not None:
            return STATUS_NOT_SUPPORTED, None, 0
        p = self._lt_get("pref", pref)
        if self._lt_get("handle", handle) is None or p is None:
            return STATUS_INVALID_VALUE, None, 0
        got = self._config(desc, a, b, c, d)
        if type(got) is int:
            return got, None, 0
        need = min(ALGO_WORKSPACE, p["workspace"])
        aligns = (p["align_a"], p["align_b"], p["align_c"], p["align_d"])
        return STATUS_SUCCESS, _Algo(got[0], aligns, need), need

    def lt_matmul(self, handle, desc, alpha, a, adesc, b, bdesc, beta, c, cdesc, d, ddesc,
                  algo, workspace, workspace_bytes, stream, compute):
        if self._lt_get("handle", handle) is None or not isinstance(algo, _Algo):
            return STATUS_INVALID_VALUE
        got = self._config(desc, adesc, bdesc, cdesc, ddesc)
        if type(got) is int:
            return got
        config, dt = got
        ds = self._lt_get("desc", desc)
        epilogue, vec = ds["epilogue"], ds["bias"]
        if config != algo.config or compute != ds["compute"]:
            return STATUS_INVALID_VALUE  # (an algorithm chosen for another product)
        if workspace_bytes < algo.workspace or (algo.workspace and not workspace):
            return STATUS_INVALID_VALUE
        if epilogue != 1 and not vec:
            return STATUS_INVALID_VALUE  # (BIAS / BGRAD* read or write the vector)
        if any(ptr % align for ptr, align in zip((a, b, c, d), algo.aligns)):
            return STATUS_INVALID_VALUE  # (less aligned than the heuristic was told)
        if c != d and beta != 0:
            return STATUS_NOT_SUPPORTED  # (gradcore passes C = D with beta 0)
        dtype = _DTYPES[dt]
        (_, ar, ac, lda), (_, br, bc, ldb), _c, (_, m, n, ldd) = config[4]
        A = _view(a, dtype, (ar, ac), (1, lda))
        B = _view(b, dtype, (br, bc), (1, ldb))
        D = _view(d, dtype, (m, n), (1, ldd))
        opA = A if ds["transa"] == 0 else A.T
        opB = B if ds["transb"] == 0 else B.T
        V = None
        if epilogue in (4, 256):
            V = _view(vec, dtype, (m,), (1,))
        elif epilogue == 512:
            V = _view(vec, dtype, (n,), (1,))
        acc = _np.float32 if dtype == _np.float16 else dtype
        st = _graph.stream_by_ptr(stream)
        self.calls.append(("lt_matmul", st.ptr))

        def run(opA, opB, D, V):
            # D^T = op(B)^T op(A)^T: NumPy's row-major product of the same memory (the
            # CPU's values for float32/64), in the compute type, the epilogue, one rounding
            prod = _np.matmul(opB.T.astype(acc, copy=False), opA.T.astype(acc, copy=False))
            if alpha != 1:
                prod = prod * acc(alpha)
            if epilogue == 4:
                prod = prod + V.astype(acc, copy=False)
            elif epilogue == 256:
                V[...] = opA.astype(acc, copy=False).sum(axis=1)
            elif epilogue == 512:
                V[...] = opB.astype(acc, copy=False).sum(axis=0)
            D.T[...] = prod

        from . import _exec  # noqa: PLC0415  (the stand-in's way of issuing work)

        writes = (D,) if epilogue in (1, 4) else (D, V)
        _exec(run, (opA, opB, D, V), stream=st, writes=writes)
        return STATUS_SUCCESS
