"""``torch.serialization``: :func:`save` and :func:`load` (``gc.save``, ``gc.load``) and
the allow-list of globals that PyTorch's ``weights_only`` unpickler may build.

gradcore's checkpoints are safetensors files whose structure is JSON: :func:`load`
never unpickles and so never builds an object a checkpoint names. The allow-list
functions (:func:`add_safe_globals`, :func:`get_safe_globals`,
:func:`clear_safe_globals`, :class:`safe_globals`) keep the list as PyTorch's do, so a
program that registers its classes before loading runs unchanged, but the list changes
nothing that :func:`load` does or accepts.
"""

from __future__ import annotations

from collections.abc import Callable

from .io import load, save

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals"]

_safe: set = set()  # (what add_safe_globals was given; load reads nothing of it)


def add_safe_globals(safe_globals: list[Callable | tuple[Callable, str]]) -> None:
    """Add functions or classes (or ``(obj, "module.qualname")`` pairs) to the
    allow-list. gradcore's :func:`load` unpickles nothing, so the list does not change
    what it loads: kept for :func:`get_safe_globals`, as PyTorch keeps it.

    Args:
        safe_globals: the functions, classes or ``(obj, name)`` pairs.
    """
    global _safe
    _safe = _safe.union(set(safe_globals))


def get_safe_globals() -> list[Callable | tuple[Callable, str]]:
    """The allow-list: what :func:`add_safe_globals` added (in no set order)."""
    return list(_safe)


def clear_safe_globals() -> None:
    """Empty the allow-list."""
    global _safe
    _safe = set()


class safe_globals:  # noqa: N801  (PyTorch's name: a context manager)
    """``with safe_globals([...]):`` adds the globals to the allow-list on entry and
    takes them out on exit (see :func:`add_safe_globals`: it changes nothing that
    :func:`load` does).

    Args:
        safe_globals: the functions, classes or ``(obj, name)`` pairs.
    """

    def __init__(self, safe_globals: list[Callable | tuple[Callable, str]]):
        self.safe_globals = safe_globals

    def __enter__(self):
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        global _safe
        _safe = _safe - set(self.safe_globals)
