"""The live components that ``gc.compile`` must know of, registered as they are made.

Modules, optimizers, learning-rate schedulers and gradient scalers are made rarely and
each registers itself here when constructed (by ``__new__``, so that a subclass whose
``__init__`` does not call its parent's is registered too), held weakly: a recording or
a CUDA capture reads this list instead of walking every live object of the process
(``gc.get_objects()``: a hundred thousand objects or more with large libraries loaded).

The device memory that captured kernels write without the step's Python reaching a
tensor bound to it (the optimizers' step counts and multi-tensor tables, the Philox
states of the device draws) is named by its owner: a registered component through a
method ``_device_state()`` returning the arrays, module-level state through a function
given to :func:`add_state_source`.
"""

from __future__ import annotations

import weakref

__all__ = ["Registered", "register", "live", "add_state_source", "device_state"]

# id(component) -> weak reference to it, in the order of construction (a dict, not a
# WeakSet: a component need not be hashable, a module defining __eq__ alone is not)
_components: dict[int, weakref.ref] = {}
_sources: list = []


def _forget(ref, key):
    if _components.get(key) is ref:
        del _components[key]


def register(obj) -> None:
    """Note ``obj`` (a module, optimizer, scheduler or scaler) as live until collected."""
    key = id(obj)
    if key not in _components or _components[key]() is not obj:
        _components[key] = weakref.ref(obj, lambda r, k=key: _forget(r, k))


class Registered:
    """A base whose instances register themselves as they are made (``__new__``: also
    where a subclass's ``__init__`` does not call its parent's): ``Module``,
    ``Optimizer``, ``LRScheduler``, ``GradScaler``. (No ``__slots__``: a module's
    ``__class__`` is reassigned between classes whose layouts must agree, as
    ``LazyLinear`` becomes ``Linear``.)"""

    def __new__(cls, *args, **kwargs):
        self = object.__new__(cls)
        register(self)
        return self


def live(cls=object) -> list:
    """The registered components alive now that are instances of ``cls`` (a class or a
    tuple of classes), in the order they were made."""
    found = []
    for ref in list(_components.values()):
        obj = ref()
        if obj is not None and isinstance(obj, cls):
            found.append(obj)
    return found


def add_state_source(fn) -> None:
    """Name module-level device state: ``fn()`` returns the arrays, asked each time."""
    _sources.append(fn)


def device_state() -> list:
    """The device arrays the registered components and sources name: what a captured
    step may write that no tensor it reaches is bound to."""
    arrays = []
    for obj in live():
        # (looked up on the class: a module's __getattr__ is not asked for every module)
        named = getattr(type(obj), "_device_state", None)
        if named is not None:
            arrays.extend(named(obj))
    for fn in _sources:
        arrays.extend(fn())
    return arrays
