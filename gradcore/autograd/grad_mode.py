"""Thread-local switches: grad mode and anomaly detection."""

from __future__ import annotations

import functools
import threading

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
           "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "set_anomaly_enabled", "inference_mode"]


class _State(threading.local):
    enabled = True   # class attributes are each new thread's defaults
    anomaly = False  # anomaly detection on: ops keep where they were called
    check_nan = True  # ... and backward checks each gradient for NaN
    releasing = False  # inside a backward that frees saved values as it goes
    # inside autograd.grad / backward(inputs=...): gradients are captured, not
    # accumulated into leaves (reentrant checkpointing refuses to run then)
    capturing = False
    autocast = None  # {device type: dtype} inside gc.autocast blocks that are on


state = _State()

# How many gc.autocast blocks are open in any thread (the ops that autocast test this
# before the thread-local state)
autocast_blocks = [0]

# How many detect_anomaly blocks are open in any thread: a cheap global test that lets
# every op skip the thread-local one (and the traceback) in the usual case.
anomaly_blocks = [0]


def is_grad_enabled() -> bool:
    """Whether operations are being recorded for backward in this thread."""
    return state.enabled


class _Mode:
    """Base for the context managers that are also decorators."""

    _mode: bool

    def __enter__(self):
        self._prev = state.enabled
        state.enabled = self._mode

    def __exit__(self, *exc):
        state.enabled = self._prev
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__._fresh(self):
                return fn(*args, **kwargs)
        return wrapper

    @staticmethod
    def _fresh(mode):
        # A decorator may be re-entered (recursion, threads): give each call its own saved state.
        new = object.__new__(type(mode))
        new._mode = mode._mode
        return new


class no_grad(_Mode):
    """Context manager and decorator that turns recording off.

    >>> import gradcore as gc
    >>> x = gc.ones(2, requires_grad=True)
    >>> with gc.no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    def __init__(self):
        self._mode = False


class enable_grad(_Mode):
    """Context manager and decorator that turns recording on (inside ``no_grad``)."""

    def __init__(self):
        self._mode = True


class set_grad_enabled(_Mode):
    """Turn recording on or off: as a call, a context manager or a decorator.

    Like PyTorch's, calling it sets the mode at once; used with ``with`` the previous
    mode comes back on exit.
    """

    def __init__(self, mode: bool):
        self._prev = state.enabled
        self._mode = bool(mode)
        state.enabled = self._mode

    def __enter__(self):
        state.enabled = self._mode

    def __exit__(self, *exc):
        state.enabled = self._prev
        return False

    def __call__(self, fn):
        state.enabled = self._prev  # decorating does not change the mode (as in PyTorch)
        return super().__call__(fn)

    @staticmethod
    def _fresh(mode):
        # each call of a decorated function sets the mode anew and records the mode before
        return set_grad_enabled(mode._mode)


class inference_mode(_Mode):
    """PyTorch's ``torch.inference_mode``: like ``no_grad`` (a context manager and a
    decorator; ``inference_mode(False)`` leaves recording as it is set)."""

    def __init__(self, mode: bool = True):
        self._on = bool(mode)

    def __enter__(self):
        self._prev = state.enabled
        if self._on:
            state.enabled = False

    @staticmethod
    def _fresh(mode):
        return inference_mode(mode._on)


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on (``detect_anomaly()``, ``set_detect_anomaly(True)``):
    ops keep where they were called, and, unless ``check_nan=False`` was asked, a
    backward step that makes NaN raises, naming the op and that call."""
    return state.anomaly


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection checks the gradients for NaN (its ``check_nan``; True
    unless turned on with ``check_nan=False``)."""
    return state.check_nan


class _Held(threading.local):
    anomaly = False  # set_anomaly_enabled(True) holds one of anomaly_blocks in this thread


_held = _Held()


def set_anomaly_enabled(enabled, check_nan=True) -> None:
    """Turn anomaly detection on or off in this thread, as ``detect_anomaly(check_nan)``
    does for a block (PyTorch's ``torch.set_anomaly_enabled``)."""
    on = bool(enabled)
    if on and not _held.anomaly:
        anomaly_blocks[0] += 1
    elif not on and _held.anomaly:
        anomaly_blocks[0] -= 1
    _held.anomaly = on
    state.anomaly = on
    state.check_nan = bool(check_nan)


class detect_anomaly:
    """Context manager and decorator: backward checks every gradient for NaN.

    The error names the backward function that produced the NaN (``DivBackward0``)
    and shows where its forward op was called.
    """

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        self._prev = state.anomaly, state.check_nan
        state.anomaly, state.check_nan = True, bool(self.check_nan)
        anomaly_blocks[0] += 1

    def __exit__(self, *exc):
        state.anomaly, state.check_nan = self._prev
        anomaly_blocks[0] -= 1
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """Turn anomaly detection on or off (PyTorch's ``torch.autograd.set_detect_anomaly``):
    as a call it sets the mode at once, as a context manager it restores the previous
    mode on exit. ``check_nan`` as for :class:`detect_anomaly`."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self._prev = state.anomaly, state.check_nan
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        set_anomaly_enabled(*self._prev)
        return False
