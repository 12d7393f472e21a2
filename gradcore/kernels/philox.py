"""Counter-based random numbers on a device: Philox-4x32-10, its kernels and twins.

A draw on a CUDA device reads its generator's state, two int64 on the device
``(seed, offset)``, and a second launch moves the offset past what it used: nothing is
drawn on the host or copied from it, so a CUDA graph that captured a draw draws fresh
numbers at each launch, and an eager draw and a captured one are the same kernels
(``gc.compile`` gives eager's bits). Element ``i`` of a draw takes word ``i % 4`` of
``Philox(key=seed, counter=offset + i // 4)`` (Salmon et al., SC'11), and its uniform
number is the word's top 24 bits times 2**-24.

The CUDA kernels are written by hand in ``kernels/gradcore_philox.cuh`` (declared here,
parameter by parameter, as :data:`PHILOX_KERNELS`); :func:`dropout_mask` and
:func:`philox_advance` are their twins over any array module, which the registry serves
where the kernels do not run (the CPU, a CUDA device without gradcore's kernels) and
which the tests compare with the host build of the CUDA source.
"""

from __future__ import annotations

import numpy as np

from .spec import RowKernel

__all__ = ["PHILOX_KERNELS", "dropout_mask", "philox_advance", "philox4x32_10", "TWINS"]

PHILOX_KERNELS = {k.name: k for k in [
    RowKernel("dropout_mask", (("out", "out"), ("index", "state"), ("scalar", "keep"),
                               ("scalar", "scale"), ("int", "n")), cooperative=False),
    RowKernel("philox_advance", (("index_out", "state"), ("int", "n")), cooperative=False),
]}

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
_LOW = np.uint64(0xFFFFFFFF)
_32 = np.uint64(32)


def philox4x32_10(xp, c0, c1, c2, c3, k0, k1):
    """Ten Philox-4x32 rounds over uint64 arrays holding 32-bit words: the four words."""
    for r in range(10):
        if r:
            k0 = (k0 + _W0) & _LOW
            k1 = (k1 + _W1) & _LOW
        p0 = c0 * _M0  # (32 x 32 bits: exact in 64)
        p1 = c2 * _M1
        c0, c1, c2, c3 = (p1 >> _32) ^ c1 ^ k0, p1 & _LOW, (p0 >> _32) ^ c3 ^ k1, p0 & _LOW
    return c0, c1, c2, c3


def dropout_mask(xp, out, state, keep, scale):
    """``out[...] = scale`` where ``u < keep``, else 0, with ``u`` the draw's uniform
    numbers (``out`` C-contiguous; ``state`` only read)."""
    n = out.size
    compute = np.float64 if out.dtype == np.float64 else np.float32
    seed = state[0].astype(np.uint64)
    i = xp.arange(n, dtype=np.uint64)
    ctr = state[1].astype(np.uint64) + (i >> np.uint64(2))
    zero = xp.zeros_like(ctr)
    words = philox4x32_10(xp, ctr & _LOW, ctr >> _32, zero, zero, seed & _LOW, seed >> _32)
    lane = i & np.uint64(3)
    word = xp.where(lane == 0, words[0], xp.where(lane == 1, words[1],
                                                  xp.where(lane == 2, words[2], words[3])))
    u = (word >> np.uint64(8)).astype(compute) * compute(1.0 / 16777216.0)
    mask = xp.where(u < compute(keep), compute(scale), compute(0))
    out[...] = mask.reshape(out.shape).astype(out.dtype)


def philox_advance(xp, state, n):
    """Move ``state``'s offset past the counters a draw of ``n`` numbers used."""
    state[1:2] += (int(n) + 3) // 4


TWINS = {"dropout_mask": dropout_mask, "philox_advance": philox_advance}
