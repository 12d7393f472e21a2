"""Where each op is public, declared at the op: ``@export(torch=True, method=True)``.

The decorator records the op in three tables, which ``gradcore/ops/__init__.py``,
``gradcore/__init__.py`` and ``ops.bind_methods`` read, so that adding an op of
``torch.*`` and ``Tensor`` is its stanza alone:

- ``torch=``: ``gradcore.<name>`` (PyTorch's ``torch.<name>``), in ``FUNCTIONS``;
- ``method=``: ``Tensor.<name>``, in ``METHODS``;
- every exported name that is not a dunder is also ``gradcore.ops.<name>``, in ``OPS``
  (``@export()`` with neither: public in ``gradcore.ops`` only).

Each of ``torch=`` and ``method=`` is ``True`` (the function's own name), a name, or a
tuple of names (aliases: ``torch=("clamp", "clip")``). The function itself is returned,
unwrapped: the pointwise ops' temporary elision counts the references its caller's
frames hold, and a wrapper would cost a frame per call. A value that is not a function
(a ``memory_format``) is exported with its name given: ``export(torch="name")(value)``.

>>> from gradcore.ops._export import FUNCTIONS, METHODS
>>> FUNCTIONS["tanh"] is METHODS["tanh"]
True
>>> FUNCTIONS["clip"] is FUNCTIONS["clamp"]
True
"""

from __future__ import annotations

__all__ = ["export", "FUNCTIONS", "METHODS", "OPS"]

FUNCTIONS: dict = {}  # gradcore.<name> -> op
METHODS: dict = {}  # Tensor.<name> -> op
OPS: dict = {}  # gradcore.ops.<name> -> op


def _names(where, obj, what) -> tuple:
    if where is True:
        return (obj.__name__,)
    if isinstance(where, str):
        return (where,)
    if isinstance(where, tuple) and where and all(isinstance(n, str) for n in where):
        return where
    raise TypeError(f"export({what}=...) takes True, a name or a tuple of names, not "
                    f"{where!r}")


def _enter(table, name, obj):
    old = table.get(name, obj)
    if old is not obj:
        raise ValueError(f"export: {name!r} is already {old!r}")
    table[name] = obj


def export(torch=False, method=False):
    """Record the decorated op as ``gradcore.<name>`` (``torch=``), ``Tensor.<name>``
    (``method=``) and ``gradcore.ops.<name>``; return it unchanged."""
    def mark(obj):
        functions = _names(torch, obj, "torch") if torch else ()
        methods = _names(method, obj, "method") if method else ()
        for name in functions:
            _enter(FUNCTIONS, name, obj)
        for name in methods:
            _enter(METHODS, name, obj)
        for name in functions + methods or (obj.__name__,):
            if not name.startswith("__"):
                _enter(OPS, name, obj)
        return obj
    return mark
