"""``gradcore.compiler``: the names of PyTorch's ``torch.compiler`` that programs and
libraries call to ask about or steer ``torch.compile``. gradcore's compiler is
:func:`gradcore.compile`; these do not compile anything and do not change what it does:
``disable`` and ``allow_in_graph`` return what they are given, ``is_compiling`` and its
neighbours say False.

>>> import gradcore as gc
>>> @gc.compiler.disable
... def f(x):
...     return x + 1
>>> f(gc.ones(1)), gc.compiler.is_compiling()
(tensor([2.]), False)
"""

from __future__ import annotations

__all__ = ["disable", "allow_in_graph", "is_compiling", "is_dynamo_compiling",
           "is_exporting"]


def disable(fn=None, recursive=True, *, reason=None):
    """A decorator that keeps a function out of PyTorch's compiler: in gradcore, the
    function as it is (``disable()`` without ``fn`` returns the decorator).

    Args:
        fn: the function.
        recursive: accepted.
        reason: accepted.
    """
    if fn is None:
        return lambda f: disable(f, recursive, reason=reason)
    if not callable(fn):
        raise AssertionError("fn must be callable")
    return fn


def allow_in_graph(fn):
    """``fn`` itself (a function, or a list or tuple of them): PyTorch's compiler would
    put calls to it in its graph unexamined."""
    if isinstance(fn, (list, tuple)):
        return [allow_in_graph(x) for x in fn]
    if not callable(fn):
        raise AssertionError("allow_in_graph expects a callable")
    return fn


def is_compiling() -> bool:
    """False: no PyTorch compiler traces gradcore code (code guarded by it runs as
    written, also under :func:`gradcore.compile`, which records what the code runs)."""
    return False


def is_dynamo_compiling() -> bool:
    """False, as :func:`is_compiling`."""
    return False


def is_exporting() -> bool:
    """False: gradcore has no ``torch.export``."""
    return False
