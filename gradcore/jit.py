"""``gradcore.jit``: the names of PyTorch's ``torch.jit`` that programs call, so that
they run unchanged. Nothing is compiled: gradcore has no TorchScript. ``script`` returns
what it is given, ``trace`` runs the function or module once on the example inputs (as
PyTorch's does) and returns it, and the decorators return what they decorate.
``save`` and ``load`` refuse, saying so. To compile a training step, use
:func:`gradcore.compile`.

PyTorch deprecates TorchScript; as PyTorch 2.13 does, ``script`` and ``trace`` warn
with a ``DeprecationWarning``.

>>> import gradcore as gc
>>> f = gc.jit.trace(lambda x: x * 2, gc.ones(2))
>>> f(gc.tensor([1., 2.]))
tensor([2., 4.])
>>> gc.jit.is_scripting()
False
"""

from __future__ import annotations

import threading
import warnings

from .autograd.tensor_base import Tensor
from .nn import Module

__all__ = ["ScriptModule", "ScriptFunction", "script", "trace", "trace_module", "ignore",
           "unused", "export", "is_scripting", "is_tracing", "annotate", "script_if_tracing",
           "save", "load"]


class ScriptModule(Module):
    """PyTorch's class of compiled modules. gradcore compiles none, so no module is one
    (``isinstance(m, gc.jit.ScriptModule)`` is False for every module ``script`` or
    ``trace`` returns); a class written as a subclass of it is an ordinary
    :class:`gradcore.nn.Module`."""


class ScriptFunction:
    """PyTorch's class of compiled functions. gradcore compiles none: nothing is an
    instance of it (``script`` and ``trace`` return the function itself)."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("gradcore.jit.ScriptFunction cannot be created: gradcore has no "
                           "TorchScript (gradcore.jit.script returns the function itself)")


class _Tracing(threading.local):
    depth = 0


_tracing = _Tracing()


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """``obj`` itself (a function, module or class), with PyTorch's
    ``DeprecationWarning``: gradcore runs it as Python. ``example_inputs`` and the other
    arguments are accepted."""
    warnings.warn("`torch.jit.script` is deprecated. Please switch to `torch.compile` or "
                  "`torch.export`.", DeprecationWarning, stacklevel=2)
    return obj


def _call_traced(func, example_inputs, example_kwarg_inputs):
    if example_inputs is None and example_kwarg_inputs is not None and \
            not isinstance(example_kwarg_inputs, dict):
        raise RuntimeError("example_kwarg_inputs should be a dict")
    _tracing.depth += 1
    try:
        if isinstance(example_kwarg_inputs, dict):
            func(**example_kwarg_inputs)
        elif isinstance(example_inputs, Tensor):
            func(example_inputs)
        elif isinstance(example_inputs, dict):
            func(example_inputs)
        else:
            func(*tuple(example_inputs))
    finally:
        _tracing.depth -= 1


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-5, strict=True, _force_outplace=False, _module_class=None,
          _compilation_unit=None, example_kwarg_inputs=None, _store_inputs=True):
    """Run ``func`` (a function or a module) once on ``example_inputs`` (a tensor, or a
    tuple of arguments; ``example_kwarg_inputs``: a dict of keyword arguments), with
    ``is_tracing()`` True meanwhile, as PyTorch's ``trace`` does; return ``func`` itself,
    which later calls run as Python (so control flow follows the inputs, where a real
    trace would have fixed it). Warns with PyTorch's ``DeprecationWarning``.

    Args:
        func: a function or a module.
        example_inputs: a tensor, or a tuple of arguments.
        optimize: accepted.
        check_trace: accepted (there is no trace to check).
        check_inputs: accepted.
        check_tolerance: accepted.
        strict: accepted.
        example_kwarg_inputs: a dict of keyword arguments, instead of ``example_inputs``.
    """
    warnings.warn("`torch.jit.trace` is deprecated. Please switch to `torch.compile` or "
                  "`torch.export`.", DeprecationWarning, stacklevel=2)
    if optimize is not None:
        warnings.warn("`optimize` is deprecated and has no effect. Use `with "
                      "torch.jit.optimized_execution()` instead", FutureWarning, stacklevel=2)
    if isinstance(getattr(func, "__self__", None), Module) and not isinstance(func, Module) \
            and func.__name__ != "forward":
        raise AttributeError("trace doesn't support compiling individual module's "
                             "functions.\nPlease use trace_module")
    _call_traced(func, example_inputs, example_kwarg_inputs)
    return func


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None,
                 check_tolerance=1e-5, strict=True, _force_outplace=False,
                 _module_class=None, _compilation_unit=None, example_inputs_is_kwarg=False,
                 _store_inputs=True):
    """Run each named method of ``mod`` once on its example inputs (``inputs``: a dict
    of method name to a tensor or a tuple of arguments) and return ``mod`` itself, as
    :func:`trace` does for one function."""
    warnings.warn("`torch.jit.trace_method` is deprecated. Please switch to `torch.compile` "
                  "or `torch.export`.", DeprecationWarning, stacklevel=2)
    if not isinstance(mod, Module):
        raise AttributeError("expected torch.nn.Module as the first argument")
    if not isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    for name, example in inputs.items():
        method = getattr(mod, name)
        if example_inputs_is_kwarg:
            _call_traced(method, None, example)
        else:
            _call_traced(method, example, None)
    return mod


def is_scripting() -> bool:
    """False: gradcore never compiles TorchScript (code guarded by it runs as Python)."""
    return False


def is_tracing() -> bool:
    """True while :func:`trace` runs its example inputs through a function, in this
    thread; False otherwise."""
    return _tracing.depth > 0


def ignore(drop=False, **kwargs):
    """A decorator (``@ignore`` or ``@ignore(drop=False)``) that returns the function:
    TorchScript would leave it to Python, which is what gradcore does anyway."""
    if callable(drop):
        return drop
    if not isinstance(drop, bool):
        raise RuntimeError(f"Argument to @torch.jit.ignore must be a bool or a function but "
                           f"got {drop}")
    drop_on_export = kwargs.pop("drop_on_export", None)
    if drop_on_export or drop:
        what = "ignore(drop_on_export=True)" if drop_on_export else "ignore(True)"
        warnings.warn(f"{what} has been deprecated. TorchScript will now drop the function "
                      "call on compilation. Use torch.jit.unused now. {}", FutureWarning,
                      stacklevel=2)
    return lambda fn: fn


def unused(fn):
    """A decorator that returns the function (or property) as it is: TorchScript would
    replace it by an exception; gradcore runs Python."""
    return fn


def export(fn):
    """A decorator that returns the function as it is (TorchScript would compile it as
    an entry point of the module)."""
    return fn


def script_if_tracing(fn):
    """A decorator that returns the function as it is (TorchScript would compile it
    when called during a trace)."""
    return fn


def annotate(the_type, the_value):
    """``the_value``: the type is a hint for TorchScript's compiler."""
    return the_value


def save(m, f, _extra_files=None):
    """Refused: gradcore has no TorchScript archive. Save the module's ``state_dict()``
    with :func:`gradcore.save` (or the module itself) instead."""
    raise RuntimeError("gradcore.jit.save: gradcore has no TorchScript, so there is no "
                       "scripted module to save. Save the state_dict with "
                       "gradcore.save(model.state_dict(), f) instead.")


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """Refused: gradcore cannot read TorchScript archives. Load a ``state_dict`` saved
    with :func:`gradcore.save` into a module built in Python instead."""
    raise RuntimeError("gradcore.jit.load: gradcore cannot load TorchScript archives. "
                       "Build the module in Python and load a state_dict saved with "
                       "gradcore.save instead.")
