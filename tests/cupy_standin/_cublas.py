"""The cuBLAS calls gradcore makes directly (``gradcore.kernels.gemm``), for the CuPy
stand-in: the same methods as gemm's ctypes binding, over the stand-in's memory.

cuBLAS's semantics: a handle issues its work to the stream last set
(``cublasSetStream``), which also takes back a workspace set by the user; matrices are
column-major, given by pointer, leading dimension and batch stride. Work issued to a
capturing stream is recorded into the graph like any other (``_graph``); while a stream
captures, a handle without a workspace of the user's refuses
(``CUBLAS_STATUS_NOT_SUPPORTED``), the condition cuBLAS puts on capture. The product is
computed as NumPy's row-major product over the same memory, so that values are the
CPU's, bit for bit.
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


class Library:
    """cuBLAS as the stand-in serves it (see the module)."""

    def __init__(self):
        self._handles: dict = {}
        self._ids = itertools.count(1)
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
