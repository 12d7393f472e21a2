"""gradcore's random number generator: one NumPy generator, seeded by ``manual_seed``.

A leaf, so that every layer can draw from it: the factories (``randn``, ``rand``,
``randint``), the in-place fills (``normal_``, ``uniform_``), dropout and ``nn.init``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["manual_seed", "seed_generator"]

_rng = np.random.default_rng()


def manual_seed(seed: int):
    """Seed gradcore's random number generator (randn, rand, randint, dropout, init)."""
    global _rng
    _rng = np.random.default_rng(int(seed))
    return _rng


def seed_generator() -> np.random.Generator:
    return _rng
