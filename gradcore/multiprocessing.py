"""``torch.multiprocessing``: Python's :mod:`multiprocessing`, and ``spawn``.

``Tensor.share_memory_()`` / ``Module.share_memory()`` move a CPU tensor's data into a
shared memory block, which processes forked afterwards share, and which a tensor
handed to a process started by "spawn" or "forkserver" is pickled as (by name): every
process reads and writes the same parameters (Hogwild training). Other tensors refuse
pickling (save them with ``gradcore.save``).

>>> import gradcore.multiprocessing as mp
>>> sorted(mp.get_all_sharing_strategies())
['file_descriptor', 'file_system']
"""

from __future__ import annotations

import multiprocessing as _mp
from multiprocessing import *  # noqa: F403  (torch.multiprocessing re-exports it)

__all__ = sorted(set(_mp.__all__) | {  # noqa: PLE0605
    "spawn", "start_processes", "ProcessContext", "ProcessExitedException",
    "set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies"})

_STRATEGIES = {"file_descriptor", "file_system"}
_strategy = ["file_descriptor"]


def get_all_sharing_strategies() -> set:
    """The strategies PyTorch offers on Linux (gradcore shares by fork either way)."""
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    """The strategy set by :func:`set_sharing_strategy` ("file_descriptor" at first)."""
    return _strategy[0]


def set_sharing_strategy(new_strategy: str) -> None:
    """Record the strategy (one of :func:`get_all_sharing_strategies`), as programs set it
    for PyTorch; it changes nothing in how gradcore shares memory."""
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"Invalid sharing strategy: {new_strategy!r}, expected one of "
                         f"{sorted(_STRATEGIES)}")
    _strategy[0] = new_strategy


class ProcessExitedException(Exception):  # noqa: N818  (PyTorch's name)
    """A process started by :func:`spawn` ended with a nonzero exit code."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int):
        super().__init__(msg)
        self.error_index, self.pid, self.exit_code = error_index, error_pid, exit_code


class ProcessContext:
    """The processes :func:`start_processes` started; ``join()`` waits for them."""

    def __init__(self, processes):
        self.processes = processes

    def pids(self) -> list:
        return [p.pid for p in self.processes]

    def join(self, timeout=None) -> bool:
        """Wait for every process (up to ``timeout`` seconds each); True when all have
        ended. Raises :class:`ProcessExitedException` for the first that failed."""
        for p in self.processes:
            p.join(timeout)
        for i, p in enumerate(self.processes):
            if p.exitcode not in (None, 0):
                raise ProcessExitedException(
                    f"process {i} terminated with exit code {p.exitcode}", i, p.pid,
                    p.exitcode)
        return all(p.exitcode is not None for p in self.processes)


def start_processes(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False,
                    start_method: str = "spawn"):
    """Run ``fn(i, *args)`` in ``nprocs`` processes (``i`` their index) started by
    ``start_method``; with ``join``, wait for them (None), else return the
    :class:`ProcessContext`."""
    ctx = _mp.get_context(start_method)
    processes = []
    for i in range(nprocs):
        p = ctx.Process(target=fn, args=(i, *args), daemon=daemon)
        p.start()
        processes.append(p)
    context = ProcessContext(processes)
    if not join:
        return context
    context.join()
    return None


def spawn(fn, args=(), nprocs: int = 1, join: bool = True, daemon: bool = False,
          start_method: str = "spawn"):
    """PyTorch's ``torch.multiprocessing.spawn``: :func:`start_processes` with the
    "spawn" start method by default."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
