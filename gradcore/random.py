"""Random number generators, as ``torch.Generator`` and ``torch.random``.

Every random function of gradcore takes ``generator=``: a :class:`Generator`, or None
for the default generator ``gc.default_generator`` (what ``gc.manual_seed`` seeds).
Draws are made on the host by a NumPy ``PCG64`` generator and moved to the tensor's
device, so one seed gives the same values on the CPU and on a GPU; the sequences are
not PyTorch's (another algorithm), but the semantics are: a seed fixes every draw after
it, and ``get_state``/``set_state`` replay them exactly.

>>> import gradcore as gc
>>> g = gc.Generator().manual_seed(42)
>>> a = gc.rand(3, generator=g)
>>> b = gc.rand(3, generator=gc.Generator().manual_seed(42))
>>> bool((a == b).all())
True
"""

from __future__ import annotations

import contextlib

import numpy as np

from . import _live, _random, backend, dtypes
from .autograd.tensor_base import Tensor, _wrap

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state", "fork_rng", "device_state"]

_U64 = 1 << 64
# get_state's layout: initial seed (8 bytes), PCG64 state and increment (16 each), the
# bit generator's buffered 32-bit half (a flag and the value, 4 each); little-endian
_STATE_SIZE = 48


def _seed_value(seed, name="manual_seed") -> int:
    """``seed`` as the unsigned 64-bit seed PyTorch makes of it (negative values wrap)."""
    if isinstance(seed, Tensor):
        seed = seed.item()
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise RuntimeError(f"{name} expected a long, but got {type(seed).__name__}")
    seed = int(seed)
    if not -(1 << 63) <= seed < _U64:
        raise ValueError("Overflow when unpacking long long")
    return seed % _U64


class Generator:
    """A random number generator: its own stream of draws, for ``generator=`` of every
    random function (``gc.rand``, ``gc.randperm``, ``Tensor.normal_``, samplers and
    ``DataLoader(shuffle=True)``...).

    Args:
        device: the device whose tensors it draws for (``"cpu"``, the default, or
            ``"cuda"``); a draw for a tensor of another device type raises, as in
            PyTorch. Values are drawn on the host either way.

    A new generator starts from PyTorch's fixed seed (67280421310721): two new
    generators give the same draws until one is seeded.

    >>> import gradcore as gc
    >>> g = gc.Generator().manual_seed(0)
    >>> state = g.get_state()
    >>> x = gc.randn(2, generator=g)
    >>> _ = g.set_state(state)
    >>> bool((gc.randn(2, generator=g) == x).all())
    True
    """

    def __init__(self, device="cpu"):
        self._device = backend.device("cpu" if device is None else device)
        self._is_default = False
        self._seed = _random.DEFAULT_SEED
        self._np = np.random.default_rng(self._seed)

    @classmethod
    def _default(cls) -> Generator:
        """The default generator: its NumPy generator is ``gradcore._random._rng``."""
        g = cls.__new__(cls)
        g._device = backend.cpu
        g._is_default = True
        g._seed = _random.default_seed
        g._np = None
        return g

    # the NumPy generator the draws come from (gradcore._random.stream reads it)
    @property
    def _stream(self) -> np.random.Generator:
        return _random._rng if self._is_default else self._np

    @_stream.setter
    def _stream(self, rng):
        if self._is_default:
            _random._rng = rng
        else:
            self._np = rng

    @property
    def device(self) -> backend.Device:
        """The device whose tensors this generator draws for."""
        return self._device

    def manual_seed(self, seed) -> Generator:
        """Seed the generator (an int; negative seeds wrap to 64 bits, as in PyTorch);
        returns the generator itself."""
        self._seed = _seed_value(seed)
        self._stream = np.random.default_rng(self._seed)
        return self

    def seed(self) -> int:
        """Seed the generator from the operating system's entropy; returns the seed."""
        value = _random.fresh_seed()
        self.manual_seed(value)
        return value

    def initial_seed(self) -> int:
        """The seed the current stream started from (the last ``manual_seed``/``seed``)."""
        return self._seed

    def get_state(self) -> Tensor:
        """The generator's whole state as a uint8 CPU tensor, for :meth:`set_state`."""
        state = self._stream.bit_generator.state
        fields = ((self._seed, 8), (state["state"]["state"], 16), (state["state"]["inc"], 16),
                  (state["has_uint32"], 4), (state["uinteger"], 4))
        raw = b"".join(int(v).to_bytes(n, "little") for v, n in fields)
        return _wrap(np.frombuffer(raw, dtype=np.uint8).copy())

    def set_state(self, new_state) -> Generator:
        """Restore a state returned by :meth:`get_state` (draws then repeat exactly);
        returns the generator itself."""
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a uint8 tensor (gradcore.uint8), but got "
                            f"{type(new_state).__name__}")
        if new_state.dtype != dtypes.uint8:
            raise TypeError(f"RNG state must be a uint8 tensor (gradcore.uint8), got "
                            f"{new_state.dtype}")
        raw = np.asarray(backend.to_host(new_state._data)).reshape(-1).tobytes()
        if len(raw) != _STATE_SIZE:
            raise RuntimeError(f"Expected a gradcore generator state of size {_STATE_SIZE} "
                               f"but found the input RNG state size to be {len(raw)}")
        seed = int.from_bytes(raw[0:8], "little")
        bits = np.random.PCG64()
        bits.state = {"bit_generator": "PCG64",
                      "state": {"state": int.from_bytes(raw[8:24], "little"),
                                "inc": int.from_bytes(raw[24:40], "little")},
                      "has_uint32": int.from_bytes(raw[40:44], "little"),
                      "uinteger": int.from_bytes(raw[44:48], "little")}
        self._seed = seed
        self._stream = np.random.Generator(bits)
        return self

    def clone_state(self) -> Generator:
        """A new generator (on the same device) in this one's state."""
        return Generator(self._device).set_state(self.get_state())

    def __reduce__(self):
        return (_restored, (str(self._device), self.get_state().numpy()))

    def __repr__(self):
        kind = "default generator" if self._is_default else "generator"
        return f"<gradcore.Generator: {kind} on {self._device}, initial seed {self._seed}>"


def _restored(device, state):
    return Generator(device).set_state(_wrap(np.asarray(state, dtype=np.uint8)))


default_generator = Generator._default()
"""The generator every random function draws from when given no ``generator=``
(``gc.manual_seed`` seeds it), for CPU and GPU tensors alike."""

# (id of a NumPy generator, device) -> (that generator, its Philox state on the device)
_DEVICE_STATES: dict = {}
_DEVICE_STATES_KEPT = 16
# (named for gc.compile: what a captured draw moves, reached or not by the step's Python)
_live.add_state_source(lambda: [state._data for _rng, state in _DEVICE_STATES.values()])


def device_state(generator, device) -> Tensor:
    """The state, on CUDA ``device``, of the counter-based draws a generator makes there
    (dropout; :mod:`gradcore.kernels.philox`): a tensor of two int64, the Philox key
    (a seed drawn from the generator's stream when first asked for, so ``manual_seed``
    makes it reproducible) and the counter offset the draws move on the device, where a
    CUDA graph that captured a draw moves it at each launch. ``generator``: None for the
    default generator, or a ``gc.Generator``. A reseeded generator gets a new state."""
    rng = _random.stream(generator)
    key = (id(rng), device)
    entry = _DEVICE_STATES.get(key)
    if entry is None or entry[0] is not rng:
        seed = int(rng.integers(0, (1 << 63) - 1))
        state = _wrap(device.asarray(np.array([seed, 0], dtype=np.int64)))
        while len(_DEVICE_STATES) >= _DEVICE_STATES_KEPT:  # (the oldest: a past seed's)
            _DEVICE_STATES.pop(next(iter(_DEVICE_STATES)))
        entry = _DEVICE_STATES[key] = (rng, state)
    return entry[1]


def manual_seed(seed) -> Generator:
    """Seed the default generator (every random function without ``generator=``, dropout,
    ``nn.init``, ``DataLoader(shuffle=True)``); returns it, as ``torch.manual_seed``
    does. ``seed`` is anything ``int()`` takes.

    >>> import gradcore as gc
    >>> gc.manual_seed(0) is gc.default_generator
    True
    """
    return default_generator.manual_seed(_seed_value(int(seed)))


def seed() -> int:
    """Seed the default generator from the operating system's entropy; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The default generator's initial seed (random at start, as PyTorch's)."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default generator's state (a uint8 tensor)."""
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    """Restore the default generator's state from :func:`get_rng_state`."""
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type="cuda"):
    """A block whose draws from the default generator leave it as it was: its state is
    restored on exit (``torch.random.fork_rng``; gradcore's GPUs draw from the same
    generator, so ``devices`` has nothing more to save).

    >>> import gradcore as gc
    >>> with gc.random.fork_rng():
    ...     _ = gc.rand(3)
    """
    if not enabled:
        yield
        return
    state = default_generator.get_state()
    try:
        yield
    finally:
        default_generator.set_state(state)
