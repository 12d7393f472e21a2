"""``gc.cuda.nvtx``: NVIDIA Tools Extension ranges and marks (PyTorch's
``torch.cuda.nvtx``), which profilers such as Nsight Systems show on the timeline. They
go through CuPy's ``cupy.cuda.nvtx``; without a usable GPU they raise, saying why (as
PyTorch's CPU build refuses them), and so they do when CuPy was built without NVTX."""

import contextlib as _contextlib
import threading as _threading

from .. import backend as _backend

__all__ = ["range_push", "range_pop", "range", "mark"]

_depth = _threading.local()  # the ranges pushed and not popped, per thread (NVTX's are)


def _nvtx():
    nvtx = getattr(_backend.cuda_module().cuda, "nvtx", None)
    if nvtx is None or not getattr(nvtx, "available", False):
        raise RuntimeError("NVTX functions not installed: this CuPy was built without "
                           "NVTX")
    return nvtx


def range_push(msg: str) -> int:
    """Open a range named ``msg`` (nested in the ranges open on this thread). Returns
    the zero-based depth of the range opened."""
    _nvtx().RangePush(msg)
    depth = getattr(_depth, "n", 0)
    _depth.n = depth + 1
    return depth


def range_pop() -> int:
    """Close the range opened last on this thread. Returns the zero-based depth of the
    range closed, or -1 when none was open (as NVTX's ``nvtxRangePop``)."""
    nvtx = _nvtx()
    depth = getattr(_depth, "n", 0)
    if depth == 0:
        return -1
    nvtx.RangePop()
    _depth.n = depth - 1
    return depth - 1


def mark(msg: str) -> None:
    """An instant event named ``msg``."""
    _nvtx().Mark(msg)


@_contextlib.contextmanager
def range(msg, *args, **kwargs):  # noqa: A001  (PyTorch's name)
    """A context manager (and decorator) that opens a range named
    ``msg.format(*args, **kwargs)`` for its block and closes it after."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
