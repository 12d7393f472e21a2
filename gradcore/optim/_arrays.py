"""Array helpers of the optimizers whose updates are not one pointwise kernel (Adafactor,
Muon): PyTorch's ``lerp_``, norms read to the host in one transfer per device, and
bfloat16 rounding. They run on any device's array namespace (NumPy, CuPy)."""

from __future__ import annotations

import numpy as np

from .. import backend
from ..backend import math_of

__all__ = ["lerp_", "norm", "host_floats", "round_to_bfloat16"]


def lerp_(x, end, weight: float) -> None:
    """``x.lerp_(end, weight)`` in place, as PyTorch's kernel computes it: from ``x`` for
    weights below one half, from ``end`` otherwise, in the arrays' dtype."""
    m = math_of(x)
    w = x.dtype.type(weight)
    if abs(weight) < 0.5:
        diff = m.subtract(end, x)
        diff *= w
        x += diff
    else:
        diff = m.subtract(end, x)
        diff *= x.dtype.type(1) - w
        m.subtract(end, diff, out=x)


def norm(x, axis=None, keepdims=False):
    """The 2-norm of ``x`` (over ``axis``), summed in float64 and rounded once to
    ``x``'s dtype (PyTorch accumulates wider than float32 too)."""
    m = math_of(x)
    wide = x.astype(np.float64) if x.dtype != np.float64 else x
    return m.sqrt(m.sum(wide * wide, axis=axis, keepdims=keepdims)).astype(x.dtype)


def host_floats(arrays) -> list[float]:
    """The values of 0-d arrays as Python floats: one transfer per device (a GPU's
    values are stacked there and read together)."""
    out: list = [None] * len(arrays)
    by_math: dict = {}
    for i, a in enumerate(arrays):
        by_math.setdefault(math_of(a), []).append(i)
    for m, idx in by_math.items():
        values = backend.to_host(m.stack([arrays[i].astype(np.float64) for i in idx]))
        for i, v in zip(idx, np.asarray(values).tolist()):
            out[i] = v
    return out


def round_to_bfloat16(x):
    """``x`` (float32) rounded to bfloat16's precision, to nearest even, kept in float32:
    what PyTorch's bfloat16 tensors hold. Float64 arrays are rounded through float32."""
    m = math_of(x)
    bits = m.ascontiguousarray(x.astype(np.float32)).view(np.uint32)
    bits = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    bits &= np.uint32(0xFFFF0000)
    return bits.view(np.float32)
