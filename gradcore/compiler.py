"""``gradcore.compiler``: the names of PyTorch's ``torch.compiler`` that programs and
libraries call to ask about or steer ``torch.compile``. gradcore's compiler is
:func:`gradcore.compile`; these do not compile anything and do not change what it does:
``disable`` and ``allow_in_graph`` return what they are given; ``is_compiling`` (and
``is_dynamo_compiling``) say whether :func:`gradcore.compile` is recording or capturing
a call now, when the function's Python runs to be replayed later, as PyTorch's say
whether ``torch.compile`` traces it.

>>> import gradcore as gc
>>> @gc.compiler.disable
... def f(x):
...     return x + 1
>>> f(gc.ones(1)), gc.compiler.is_compiling()
(tensor([2.]), False)
"""

from __future__ import annotations

from . import capture as _capture

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
    """True while :func:`gradcore.compile` records a call (on the CPU) or captures one
    into a CUDA graph: the Python running now is what later calls replay, without
    running it (``torch.compiler.is_compiling``: True while ``torch.compile`` traces).
    Code guarded by ``if not is_compiling()`` runs in the eager calls only."""
    return _capture.is_compiling()


def is_dynamo_compiling() -> bool:
    """As :func:`is_compiling`."""
    return _capture.is_compiling()


def is_exporting() -> bool:
    """False: gradcore has no ``torch.export``."""
    return False
