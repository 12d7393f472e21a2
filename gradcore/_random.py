"""The NumPy generators that gradcore's random numbers come from.

A leaf, so that every layer can draw: the factories (``randn``, ``rand``, ``randint``,
``randperm``), the samplers (``multinomial``, ``normal``, ``bernoulli``), the in-place
fills (``normal_``, ``uniform_``, ...), dropout and ``nn.init``. Every draw is made on
the host from a ``numpy.random.Generator`` (PCG64) and moved to the tensor's device.

``_rng`` is the NumPy generator of the default generator (``gc.default_generator``,
which ``gc.manual_seed`` reseeds by replacing it); gradcore.capture swaps it for a
recording proxy while it records a step, so it is read through :func:`seed_generator`
at each draw, never kept. A ``gc.Generator`` (gradcore/random.py) holds its own NumPy
generator, reached through :func:`stream` as ``type(g)._stream``.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["seed_generator", "stream", "fresh_seed", "DEFAULT_SEED"]

# PyTorch's seed of a new torch.Generator() (c10's default_rng_seed_val)
DEFAULT_SEED = 67280421310721


def fresh_seed() -> int:
    """A non-deterministic 64-bit seed (the default generator's at start, ``gc.seed()``)."""
    return int.from_bytes(os.urandom(8), "little")


default_seed = fresh_seed()  # the default generator's initial seed
_rng = np.random.default_rng(default_seed)

# Set by gradcore.capture while it records: wraps a gc.Generator's NumPy generator so
# that its draws are recorded too (the default generator's is swapped in `_rng`)
_wrap_stream = None


def seed_generator() -> np.random.Generator:
    """The default generator's NumPy generator, the one ``gc.manual_seed`` seeds."""
    return _rng


def stream(generator=None, device_type: str | None = None, name: str = "generator"):
    """The NumPy generator a draw with ``generator=generator`` reads: the default
    generator's for None, a ``gc.Generator``'s own, or a ``numpy.random.Generator``
    itself. ``device_type`` (the tensor's) is checked against the generator's device, as
    PyTorch checks it."""
    if generator is None:
        return _rng
    if isinstance(generator, np.random.Generator):
        return generator
    if not hasattr(type(generator), "_stream"):
        raise TypeError(f"{name}(): argument 'generator' must be gradcore.Generator, not "
                        f"{type(generator).__name__}")
    if device_type is not None and generator.device.type != device_type:
        raise RuntimeError(f"Expected a '{device_type}' device type for generator but found "
                           f"'{generator.device.type}'")
    if _wrap_stream is not None and not generator._is_default:
        return _wrap_stream(generator)
    return generator._stream
