"""Thread-local switches: grad mode and anomaly detection."""

from __future__ import annotations

import functools
import threading

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
           "detect_anomaly", "is_anomaly_enabled", "set_anomaly_enabled"]


class _State(threading.local):
    enabled = True   # class attributes are each new thread's defaults
    anomaly = False
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


def is_anomaly_enabled() -> bool:
    """Whether ``detect_anomaly()`` is on: a backward step that makes NaN then raises,
    naming the op."""
    return state.anomaly


class _Held(threading.local):
    anomaly = False  # set_anomaly_enabled(True) holds one of anomaly_blocks in this thread


_held = _Held()


def set_anomaly_enabled(enabled, check_nan=True) -> None:
    """Turn anomaly detection on or off in this thread, as ``detect_anomaly(check_nan)``
    does for a block (PyTorch's ``torch.set_anomaly_enabled``). As with
    ``detect_anomaly``, it is on only when ``check_nan`` is true: NaN is what
    gradcore's detection looks for."""
    on = bool(enabled) and bool(check_nan)
    if on and not _held.anomaly:
        anomaly_blocks[0] += 1
    elif not on and _held.anomaly:
        anomaly_blocks[0] -= 1
    _held.anomaly = on
    state.anomaly = on


class detect_anomaly:
    """Context manager and decorator: backward checks every gradient for NaN.

    The error names the backward function that produced the NaN (``DivBackward0``)
    and shows where its forward op was called.
    """

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        self._prev = state.anomaly
        state.anomaly = self.check_nan
        anomaly_blocks[0] += 1

    def __exit__(self, *exc):
        state.anomaly = self._prev
        anomaly_blocks[0] -= 1
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper
