"""``gradcore.nn`` modules: :class:`Module` and the layers and losses built on it.

A :class:`Module` registers the :class:`~gradcore.nn.Parameter` objects, buffers and
sub-modules assigned to its attributes, in assignment order, and derives from them
what PyTorch's does: ``parameters()``/``named_parameters()`` with dotted names,
``state_dict()``/``load_state_dict()``, ``train()``/``eval()``, ``to()``,
``zero_grad()`` and PyTorch's ``repr``.

>>> import gradcore as gc
>>> from gradcore import nn
>>> model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
>>> model
Sequential(
  (0): Linear(in_features=3, out_features=2, bias=True)
  (1): ReLU()
)
>>> [name for name, _ in model.named_parameters()]
['0.weight', '0.bias']
"""

from __future__ import annotations

import math
import operator
import warnings
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Iterable, Mapping

from ... import _live, dtypes
from ..._settings import _object_typename
from ...autograd.grad_mode import no_grad
from ...backend import Device
from ...creation import empty, tensor
from ...ops import activation as _act
from ...tensor import Parameter, Tensor
from .. import functional as F
from .. import init

__all__ = ["Module", "Sequential", "ModuleList", "Linear", "Embedding", "LayerNorm", "Dropout",
           "ReLU", "Tanh", "Sigmoid", "GELU", "Softplus", "Softmax", "LogSoftmax", "Flatten",
           "Identity", "MSELoss", "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss",
           "ModuleDict", "ParameterList", "ParameterDict", "Unflatten", "RemovableHandle", "SiLU",
           "Mish", "LeakyReLU", "ELU", "SELU", "CELU", "Hardtanh", "ReLU6", "Hardswish",
           "Hardsigmoid", "LogSigmoid", "Softsign", "Tanhshrink", "Softshrink", "Hardshrink",
           "PReLU", "GLU", "Softmin", "L1Loss", "SmoothL1Loss", "HuberLoss", "BCELoss",
           "KLDivLoss", "CosineEmbeddingLoss", "MarginRankingLoss", "SoftMarginLoss",
           "MultiLabelSoftMarginLoss", "TripletMarginLoss", "PairwiseDistance",
           "CosineSimilarity", "Buffer"]


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What :meth:`Module.load_state_dict` returns (PyTorch's named tuple)."""

    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s, num_spaces):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join(" " * num_spaces + line for line in lines)


def _shape_str(shape) -> str:
    return f"({', '.join(str(int(n)) for n in shape)}{',' if len(shape) == 1 else ''})"


def _typename(obj) -> str:
    """What PyTorch's messages call an object's type (``torch.typename``): a tensor's
    tensor type, else the qualified name of its class (builtins without a module)."""
    return _tensor_type(obj) if isinstance(obj, Tensor) else _object_typename(obj)


_TENSOR_TYPES = {"float16": "HalfTensor", "float32": "FloatTensor", "float64": "DoubleTensor",
                 "int8": "CharTensor", "int16": "ShortTensor", "int32": "IntTensor",
                 "int64": "LongTensor", "uint8": "ByteTensor", "bool": "BoolTensor"}


def _tensor_type(t) -> str:
    """PyTorch's ``Tensor.type()`` name, under gradcore: ``gradcore.FloatTensor``,
    ``gradcore.cuda.FloatTensor``."""
    kind = _TENSOR_TYPES.get(t.dtype.name, t.dtype.name)
    return f"gradcore.cuda.{kind}" if t.device.type == "cuda" else f"gradcore.{kind}"


class _BufferMeta(type):
    """``isinstance(t, Buffer)`` is True of the tensors :class:`Buffer` made (PyTorch's
    ``_BufferMeta``): they are plain tensors flagged ``_is_buffer``."""

    def __instancecheck__(cls, instance) -> bool:
        if cls is Buffer and isinstance(instance, Tensor) and \
                getattr(instance, "_is_buffer", False):
            return True
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """A tensor that a module registers as a buffer when assigned to one of its
    attributes (``self.steps = nn.Buffer(gc.zeros(1))``), as :meth:`Module.register_buffer`
    does; ``persistent=False`` keeps it out of ``state_dict``. ``Buffer(t)`` is ``t``
    detached (sharing its memory), flagged ``persistent`` and as a buffer.

    >>> import gradcore as gc
    >>> from gradcore import nn
    >>> m = nn.Module()
    >>> m.steps = nn.Buffer(gc.zeros(1))
    >>> m.cache = nn.Buffer(gc.zeros(2), persistent=False)
    >>> list(m.state_dict()), len(list(m.buffers()))
    (['steps'], 2)
    """

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = empty((0,))
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


class RemovableHandle:
    """What ``register_forward_hook`` and ``register_forward_pre_hook`` return:
    ``remove()`` unregisters the hook (again: nothing happens); also a context manager
    that removes it on exit. ``id`` is the hook's key in its module's table."""

    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        if isinstance(extra_dict, dict):
            extra_dict = [extra_dict]
        self.extra_dict_ref = tuple(weakref.ref(d) for d in (extra_dict or ()))

    def remove(self) -> None:
        """Unregister the hook (a second call does nothing)."""
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            d = ref()
            if d is not None:
                d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class Module(_live.Registered):  # (registered for gc.compile)
    """Base class of every layer: assign Parameters and Modules as attributes in
    ``__init__`` and write ``forward``; call the module to run it."""

    training: bool

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks_with_kwargs", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "_forward_hooks_with_kwargs", OrderedDict())
        object.__setattr__(self, "_forward_hooks_always_called", OrderedDict())
        object.__setattr__(self, "_backward_hooks", OrderedDict())
        object.__setattr__(self, "_backward_pre_hooks", OrderedDict())

    # -- running ----------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        """The module's computation, written by each subclass. Call the module
        (``module(x)``) rather than ``forward``: the call runs the hooks too."""
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  f'"forward" function')

    def __call__(self, *args, **kwargs):
        d = self.__dict__
        if d.get("_backward_hooks") or d.get("_backward_pre_hooks"):
            return _call_with_backward_hooks(self, args, kwargs)
        if d.get("_forward_pre_hooks") or d.get("_forward_hooks"):
            return self._call_with_hooks(args, kwargs)
        return self.forward(*args, **kwargs)

    def register_full_backward_hook(self, hook, prepend: bool = False):
        """Call ``hook(module, grad_input, grad_output)`` when the gradients with respect
        to the module's positional tensor inputs have been computed (``None`` for inputs
        that need none); a tuple it returns replaces ``grad_input``. With no input needing
        a gradient it is called once the output gradients are known. Returns a handle.

        >>> import gradcore as gc
        >>> seen = []
        >>> layer = gc.nn.Linear(2, 1)
        >>> _ = layer.register_full_backward_hook(
        ...     lambda m, gin, gout: seen.append((gin[0].shape, gout[0].shape)))
        >>> layer(gc.ones(3, 2, requires_grad=True)).sum().backward()
        >>> seen
        [(gradcore.Size([3, 2]), gradcore.Size([3, 1]))]
        """
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend: bool = False):
        """Call ``hook(module, grad_output)`` when the gradients with respect to the
        module's outputs are known, before those of its inputs; a tuple it returns
        replaces ``grad_output``. Returns a handle."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def _call_with_hooks(self, args, kwargs):
        """``forward`` between the forward pre-hooks and the forward hooks, as PyTorch's
        ``Module.__call__`` runs them (hooks registered ``always_call=True`` run even when
        ``forward`` raises)."""
        result = None
        called = set()
        try:
            for hook_id, hook in list(self._forward_pre_hooks.items()):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    new = hook(self, args, kwargs)
                    if new is not None:
                        if not (isinstance(new, tuple) and len(new) == 2):
                            raise RuntimeError("forward pre-hook must return None or a tuple "
                                               f"of (new_args, new_kwargs), but got {new}.")
                        args, kwargs = new
                else:
                    new = hook(self, args)
                    if new is not None:
                        args = new if isinstance(new, tuple) else (new,)
            result = self.forward(*args, **kwargs)
            for hook_id, hook in list(self._forward_hooks.items()):
                called.add(hook_id)
                if hook_id in self._forward_hooks_with_kwargs:
                    new = hook(self, args, kwargs, result)
                else:
                    new = hook(self, args, result)
                if new is not None:
                    result = new
            return result
        except Exception:
            for hook_id, hook in list(self._forward_hooks.items()):
                if hook_id not in self._forward_hooks_always_called or hook_id in called:
                    continue
                try:
                    if hook_id in self._forward_hooks_with_kwargs:
                        new = hook(self, args, kwargs, result)
                    else:
                        new = hook(self, args, result)
                    if new is not None:
                        result = new
                except Exception as e:
                    warnings.warn("module forward hook with ``always_call=True`` raised an "
                                  "exception that was silenced as another error was raised "
                                  f"in forward: {e}", stacklevel=2)
            raise

    def register_forward_pre_hook(self, hook, *, prepend: bool = False,
                                  with_kwargs: bool = False):
        """Call ``hook(module, args)`` before each ``forward``; a value it returns (a
        tuple, or one value) replaces the positional arguments. With
        ``with_kwargs=True`` it is ``hook(module, args, kwargs)`` and returns None or
        ``(args, kwargs)``. ``prepend`` runs it before the hooks registered so far.
        Returns a handle whose ``remove()`` unregisters it.

        >>> from gradcore import nn
        >>> layer = nn.Identity()
        >>> handle = layer.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
        >>> layer(3)
        6
        >>> handle.remove()
        >>> layer(3)
        3
        """
        handle = RemovableHandle(self._forward_pre_hooks,
                                 extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False):
        """Call ``hook(module, args, output)`` after each ``forward``; a value it returns
        replaces the output. With ``with_kwargs=True`` it is ``hook(module, args, kwargs,
        output)``; ``always_call=True`` runs it even when ``forward`` raises;
        ``prepend`` runs it before the hooks registered so far. Returns a handle whose
        ``remove()`` unregisters it (also a context manager).

        >>> import gradcore as gc
        >>> from gradcore import nn
        >>> seen = []
        >>> layer = nn.ReLU()
        >>> with layer.register_forward_hook(lambda m, args, out: seen.append(out.shape)):
        ...     _ = layer(gc.zeros(2, 3))
        >>> seen
        [gradcore.Size([2, 3])]
        """
        handle = RemovableHandle(self._forward_hooks,
                                 extra_dict=[self._forward_hooks_with_kwargs,
                                             self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    # -- registration -----------------------------------------------------------------
    def _check_init(self, what):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {what} before Module.__init__() call")

    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            self._check_init("parameters")
            if isinstance(getattr(type(self), name, None), property):  # (parametrized)
                raise KeyError(f"attribute '{name}' already exists")
            self._forget(name, keep="_parameters")
            params[name] = value
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter "
                                f"'{name}' (gradcore.nn.Parameter or None expected)")
            params[name] = None
            return
        if isinstance(value, Module):
            self._check_init("module")
            self._forget(name, keep="_modules")
            d["_modules"][name] = value
            return
        modules = d.get("_modules")
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (gradcore.nn.Module or None expected)")
            modules[name] = None
            return
        buffers = d.get("_buffers")
        if isinstance(value, Buffer):  # nn.Buffer(t, persistent=...): registers a buffer
            self.register_buffer(name, value, value.persistent)
            return
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                f"(gradcore.Tensor or None expected)")
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    def _forget(self, name, keep=None):
        """Drop ``name`` from the attributes and the tables, except ``keep`` (the table it
        is being assigned in again: the entry keeps its place, as in PyTorch, so that
        ``parameters()`` keeps its order when a subclass replaces a submodule)."""
        d = self.__dict__
        d.pop(name, None)
        for key in ("_parameters", "_buffers", "_modules"):
            if key != keep:
                d[key].pop(name, None)
        d["_non_persistent_buffers"].discard(name)

    def __getattr__(self, name):
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            group = d.get(key)
            if group is not None and name in group:
                return group[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            if name in d[key]:
                del d[key][name]
                d["_non_persistent_buffers"].discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = set(super().__dir__())
        for key in ("_parameters", "_buffers", "_modules"):
            keys.update(self.__dict__.get(key, ()))
        return sorted(keys)

    def register_parameter(self, name: str, param) -> None:
        """Add ``param`` (a Parameter, or None: a parameter slot left empty) under
        ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter", self._parameters)
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter "
                            f"'{name}' (gradcore.nn.Parameter or None required)")
        elif param.grad_fn:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly. To express '{name}' "
                             "as a function of another Tensor, compute the value in "
                             "the forward() method.")
        else:
            self._parameters[name] = param

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Add a tensor that is part of the module's state but not a parameter: moved and
        cast by ``to()``, saved in ``state_dict`` unless ``persistent=False``.

        >>> import gradcore as gc
        >>> from gradcore import nn
        >>> m = nn.Module()
        >>> m.register_buffer("steps", gc.zeros(1))
        >>> m.register_buffer("cache", gc.zeros(2), persistent=False)
        >>> list(m.state_dict())
        ['steps']
        """
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer", self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(gradcore Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module) -> None:
        """Add a child module (or None) under ``name``."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    def register_module(self, name: str, module) -> None:
        """Alias of :meth:`add_module`."""
        self.add_module(name, module)

    def _check_name(self, name, what, group):
        if not isinstance(name, str):
            raise TypeError(f"{what} name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError(f'{what} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{what} name can\'t be empty string ""')
        if hasattr(self, name) and name not in group:
            raise KeyError(f"attribute '{name}' already exists")

    def get_submodule(self, target: str):
        """The module at the dotted path ``target`` (``""``: this module)."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target: str):
        """The parameter at the dotted path ``target`` (``"0.weight"``)."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str):
        """The buffer at the dotted path ``target``."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        buffer = getattr(mod, name)
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return buffer

    # -- traversal --------------------------------------------------------------------
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """``(name, module)`` for this module and every descendant, depth first."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self):
        """This module and every descendant, depth first (each module once)."""
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        """``(name, module)`` for the direct children (each module once)."""
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def children(self):
        """The direct child modules (each once)."""
        for _, module in self.named_children():
            yield module

    def _named_members(self, get, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in get(module):
                if value is None or (remove_duplicate and value in memo):
                    continue
                if remove_duplicate:
                    memo.add(value)
                yield module_prefix + ("." if module_prefix else "") + name, value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """``(dotted name, Parameter)`` in registration order, each parameter once."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                       remove_duplicate)

    def parameters(self, recurse=True):
        """Every parameter, in registration order, each once: this module's and (with
        ``recurse``, the default) its descendants'. What an optimizer takes."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """``(dotted name, tensor)`` for every buffer (``register_buffer``), each once."""
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                       remove_duplicate)

    def buffers(self, recurse=True):
        """Every buffer (``register_buffer``), each once."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn):
        """Call ``fn`` on every child (recursively), then on this module."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # -- modes and gradients ----------------------------------------------------------
    def train(self, mode: bool = True):
        """Set training mode (Dropout drops; ``eval()`` turns it off) here and below."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        """Set evaluation mode here and below (``train(False)``); returns the module."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True):
        """Set ``requires_grad`` of every parameter (to freeze or unfreeze a part of a
        model); returns the module."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the parameters' gradients: to None (the default), or to zeros in place."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                if p.grad.grad_fn is not None:
                    p.grad = p.grad.detach()
                else:
                    p.grad.requires_grad_(False)
                with no_grad():
                    p.grad.zero_()

    # -- devices and dtypes -----------------------------------------------------------
    def _apply_to_tensors(self, fn):
        """Replace every parameter's and buffer's data (and gradient) by ``fn(tensor)``,
        in place: the Parameter objects stay the same (optimizers keep working)."""
        for module in self.modules():
            for p in module._parameters.values():
                if p is None:
                    continue
                new = fn(p)
                if new is not p:
                    p._data = new._data
                    p._vc = None
                    p._version_cell()
                if p.grad is not None:
                    g = fn(p.grad)
                    if g is not p.grad:
                        p.grad = g
            for key, b in module._buffers.items():
                if b is not None:
                    module._buffers[key] = fn(b)
        return self

    def to(self, *args, **kwargs):
        """Move parameters and buffers to a device and/or cast their floating point
        ones to a dtype, in place; returns the module. ``to(device)``, ``to(dtype)``,
        ``to(device, dtype)``, ``to(tensor)``, or ``device=``/``dtype=`` keywords;
        ``memory_format=gc.channels_last`` lays out the 4-d and 5-d parameters and
        buffers so (their values unchanged), as PyTorch's."""
        device = kwargs.pop("device", None)
        dtype = kwargs.pop("dtype", None)
        kwargs.pop("non_blocking", None)
        fmt = kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, Tensor):
                device, dtype = a.device, a.dtype
            elif isinstance(a, (str, Device)) and not (isinstance(a, str) and
                                                       a in dtypes._BY_NAME):
                device = a
            elif a is not None:
                dtype = a
        if dtype is not None:
            dtype = dtypes.to_dtype(dtype)
            if not dtype.is_floating_point:
                raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got "
                                f"desired dtype={dtype!r}")

        def convert(t):
            with no_grad():
                out = t
                if dtype is not None and t.dtype.is_floating_point:
                    out = out.to(dtype=dtype)
                if device is not None:
                    out = out.to(device)
                if fmt is not None and t.ndim in (4, 5):
                    out = out.to(memory_format=fmt)
                return out
        return self._apply_to_tensors(convert)

    def share_memory(self):
        """``Tensor.share_memory_()`` on every parameter, gradient and buffer: processes
        forked afterwards update the same memory (Hogwild); returns the module."""
        return self._apply_to_tensors(lambda t: t.share_memory_())

    def cpu(self):
        """Move the parameters and buffers to the CPU, in place; returns the module."""
        return self.to("cpu")

    def cuda(self, device=None):
        """Move the parameters and buffers to a GPU (the current one, or ``device``), in
        place; returns the module."""
        return self.to("cuda" if device is None else
                       (f"cuda:{device}" if isinstance(device, int) else device))

    def float(self):  # noqa: A003
        """Cast the floating point parameters and buffers to float32, in place."""
        return self.to(dtype=dtypes.float32)

    def double(self):
        """Cast the floating point parameters and buffers to float64, in place."""
        return self.to(dtype=dtypes.float64)

    def half(self):
        """Cast the floating point parameters and buffers to float16, in place."""
        return self.to(dtype=dtypes.float16)

    # -- state ------------------------------------------------------------------------
    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An OrderedDict of dotted name -> tensor for every parameter and persistent
        buffer; the tensors are detached and share memory with the module's."""
        if args:  # PyTorch's deprecated positional (destination, prefix, keep_vars)
            destination = args[0] if len(args) > 0 else destination
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers:
                destination[prefix + name] = b if keep_vars else b.detach()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        return destination

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy the values of ``state_dict`` into the parameters and buffers, in place.

        Returns ``(missing_keys, unexpected_keys)``.  With ``strict`` (the default), any
        missing or unexpected key is an error; a shape mismatch always is.  The error
        lists every problem, like PyTorch's.
        """
        if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        hooked = [(name, m) for name, m in self.named_modules()
                  if m.__dict__.get("_load_state_dict_pre_hooks")]
        if hooked:  # they may rename keys (a copy: the caller's dict is left as it is)
            state_dict = OrderedDict(state_dict)
            for name, m in hooked:
                for hook in list(m._load_state_dict_pre_hooks.values()):
                    hook(state_dict, name + "." if name else "", {}, strict, [], [], [])
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict.keys() if k not in own]
        errors = []
        for key, target in own.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                try:
                    value = tensor(value)
                except (TypeError, ValueError):
                    errors.append(f'While copying the parameter named "{key}", expected '
                                  f'a tensor in the state_dict, got {type(value).__name__}.')
                    continue
            if getattr(target, "_uninitialized", False):  # a lazy layer's: takes the shape
                target.materialize(tuple(value.shape))
            if tuple(value.shape) != tuple(target.shape):
                errors.append(f"size mismatch for {key}: copying a param with shape "
                              f"{_shape_str(value.shape)} from checkpoint, the shape in "
                              f"current model is {_shape_str(target.shape)}.")
                continue
            if assign:
                self._assign(key, target, value)
                continue
            with no_grad():
                target.copy_(value)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:"
                               "\n\t" + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False):
        """Call ``hook(state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` (``with_module``: ``hook(module, ...)``) before
        ``load_state_dict`` reads this module's keys (``prefix``: their dotted prefix),
        as PyTorch's private hook of that name; the hook may change ``state_dict`` (a
        copy of the one given). Returns a handle whose ``remove()`` unregisters it."""
        hooks = self.__dict__.setdefault("_load_state_dict_pre_hooks", OrderedDict())
        handle = RemovableHandle(hooks)
        hooks[handle.id] = (hook if not with_module
                            else lambda *args: hook(self, *args))
        return handle

    def _assign(self, key, target, value):
        module_path, _, name = key.rpartition(".")
        module = self.get_submodule(module_path)
        if isinstance(target, Parameter):
            new = value if isinstance(value, Parameter) else \
                Parameter(value, requires_grad=target.requires_grad)
            module._parameters[name] = new
        else:
            module._buffers[name] = value

    # -- printing ---------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The module's own settings, shown inside its ``repr``'s parentheses."""
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        extra_lines = []
        extra = self.extra_repr()
        if extra:
            extra_lines = extra.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            child_lines.append("(" + key + "): " + _addindent(repr(module), 2))
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


# ---- containers ----------
class Sequential(Module):
    """Modules applied one after another; ``Sequential(a, b)`` or
    ``Sequential(OrderedDict(name=module, ...))``."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def _index(self, idx: int) -> int:
        n = len(self._modules)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range")
        return idx % n

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[self._index(idx)]

    def __setitem__(self, idx, module):
        key = list(self._modules.keys())[self._index(idx)]
        self.add_module(key, module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for key in list(self._modules.keys())[idx]:
                del self._modules[key]
        else:
            del self._modules[list(self._modules.keys())[self._index(idx)]]
        # keep the names 0..n-1, as PyTorch does
        items = list(self._modules.values())
        self._modules.clear()
        for i, module in enumerate(items):
            self._modules[str(i)] = module

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        """Add ``module`` at the end; returns the Sequential."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        """Add the modules of an iterable at the end; returns the Sequential."""
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module):
        """Put ``module`` at position ``index`` (negative counts from the end), the ones from there
        on moving one place; returns the Sequential."""
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)
        return self

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules, registered (their parameters belong to the owner)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _index(self, idx: int) -> int:
        n = len(self._modules)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range")
        return idx % n

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(self._index(idx))]

    def __setitem__(self, idx, module):
        self.add_module(str(self._index(idx)), module)

    def __delitem__(self, idx):
        items = list(self._modules.values())
        if isinstance(idx, slice):
            del items[idx]
        else:
            del items[self._index(idx)]
        self._modules.clear()
        for i, m in enumerate(items):
            self._modules[str(i)] = m

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def append(self, module):
        """Add ``module`` at the end; returns the list."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        """Add the modules of an iterable at the end; returns the list."""
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module):
        """Put ``module`` before position ``index``, the ones from there on moving one place."""
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)

    def __repr__(self):
        """PyTorch's: runs of identical children are shown once, ``(0-2): 3 x ...``."""
        reprs = [repr(m) for m in self._modules.values()]
        if not reprs:
            return self._get_name() + "()"
        lines = []
        start = 0
        for i in range(1, len(reprs) + 1):
            if i == len(reprs) or reprs[i] != reprs[start]:
                body = _addindent(reprs[start], 2)
                if i - start == 1:
                    lines.append(f"({start}): {body}")
                else:
                    lines.append(f"({start}-{i - 1}): {i - start} x {body}")
                start = i
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of modules, registered (their parameters belong to the owner):
    ``d["name"]``, ``d["name"] = module``, ``del``, ``len``, iteration over the keys,
    ``keys()``/``items()``/``values()``, ``update``, ``pop``, ``clear``.

    >>> from gradcore import nn
    >>> heads = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.ReLU()})
    >>> list(heads), [name for name, _ in heads.named_parameters()]
    (['a', 'b'], ['a.weight', 'a.bias'])
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def pop(self, key):
        """Remove the module under ``key`` and return it."""
        v = self[key]
        del self[key]
        return v

    def keys(self):
        """The names, in insertion order."""
        return self._modules.keys()

    def items(self):
        """``(name, module)`` pairs, in insertion order."""
        return self._modules.items()

    def values(self):
        """The modules, in insertion order."""
        return self._modules.values()

    def update(self, modules) -> None:
        """Add the modules of a mapping (in its order), a ModuleDict or an iterable of
        ``(name, module)`` pairs."""
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleDict.update should be called with an iterable of "
                            "key/value pairs, but got " + type(modules).__name__)
        if isinstance(modules, (Mapping, ModuleDict)):
            for key, module in modules.items():
                self[key] = module
            return
        for j, m in enumerate(modules):
            if not isinstance(m, Iterable):
                raise TypeError("ModuleDict update sequence element #" + str(j) +
                                " should be Iterable; is" + type(m).__name__)
            if not len(m) == 2:
                raise ValueError("ModuleDict update sequence element #" + str(j) +
                                 " has length " + str(len(m)) + "; 2 is required")
            self[m[0]] = m[1]


def _tensor_line(key, p) -> str:
    """A ParameterList's or ParameterDict's repr line for one entry (PyTorch's)."""
    if isinstance(p, Tensor):
        size = "x".join(str(n) for n in p.shape)
        device = f" ({p.device})" if p.device.type == "cuda" else ""
        return (f"  ({key}): {'Parameter' if isinstance(p, Parameter) else 'Tensor'} "
                f"containing: [{p.dtype} of size {size}{device}]")
    return f"  ({key}): Object of type: {type(p).__name__}"


class ParameterList(Module):
    """A list of parameters, registered (named ``"0"``, ``"1"``, ...): tensors put in it
    become Parameters; other objects are kept as they are.

    >>> import gradcore as gc
    >>> from gradcore import nn
    >>> params = nn.ParameterList([gc.zeros(2), gc.ones(3)])
    >>> [(name, tuple(p.shape)) for name, p in params.named_parameters()]
    [('0', (2,)), ('1', (3,))]
    """

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _get_abs_string_index(self, idx):
        idx = operator.index(idx)
        if not (-len(self) <= idx < len(self)):
            raise IndexError(f"index {idx} is out of range")
        if idx < 0:
            idx += len(self)
        return str(idx)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = self.__class__()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, self._get_abs_string_index(idx))

    def __setitem__(self, idx, param):
        idx = self._get_abs_string_index(idx)
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, idx, param)

    def __len__(self):
        return self._size

    def __iter__(self):
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def __dir__(self):
        return [key for key in super().__dir__() if not key.isdigit()]

    def append(self, value):
        """Add ``value`` at the end (a tensor becomes a Parameter); returns the list."""
        new_idx = len(self)
        self._size += 1
        self[new_idx] = value
        return self

    def extend(self, values):
        """Add the values of an iterable at the end; returns the list."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self):
        return "\n".join(_tensor_line(k, p) for k, p in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """A dict of parameters, registered under their (string) keys: tensors put in it
    become Parameters. A plain dict given to the constructor or ``update`` is added in
    sorted key order, an OrderedDict or ParameterDict in its own (PyTorch's rule).

    >>> import gradcore as gc
    >>> from gradcore import nn
    >>> params = nn.ParameterDict({"scale": gc.ones(2), "bias": gc.zeros(2)})
    >>> list(params)
    ['bias', 'scale']
    """

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    def _key_to_attr(self, key):
        if not isinstance(key, str):
            raise TypeError("Index given to ParameterDict cannot be used as a key as it is "
                            f"not a string (type is '{type(key).__name__}'). Open an issue on "
                            "github if you need non-string keys.")
        return key

    def __getitem__(self, key):
        return getattr(self, self._key_to_attr(key))

    def __setitem__(self, key, value):
        self._keys[key] = None
        attr = self._key_to_attr(key)
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, attr, value)

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, self._key_to_attr(key))

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(self._keys)

    def __contains__(self, key):
        return key in self._keys

    def copy(self):
        """A new ParameterDict holding the same parameters (not copies of them)."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key, default=None):
        """The parameter under ``key``, after putting ``default`` there when the key is missing."""
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        """Remove every parameter."""
        for k in self._keys.copy():
            del self[k]

    def pop(self, key):
        """Remove the parameter under ``key`` and return it."""
        v = self[key]
        del self[key]
        return v

    def popitem(self):
        """Remove the last-inserted ``(key, parameter)`` pair and return it."""
        k, _ = self._keys.popitem()
        self._keys[k] = None  # (deleted below through __delitem__)
        val = self[k]
        del self[k]
        return k, val

    def get(self, key, default=None):
        """The parameter under ``key``, or ``default`` when there is none."""
        return self[key] if key in self else default

    def fromkeys(self, keys, default=None):
        """A new ParameterDict with ``default`` under each of ``keys``."""
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        """The keys, in insertion order."""
        return self._keys.keys()

    def items(self):
        """``(key, parameter)`` pairs, in insertion order."""
        return ((k, self[k]) for k in self._keys)

    def values(self):
        """The parameters, in insertion order."""
        return (self[k] for k in self._keys)

    def update(self, parameters) -> None:
        """Add the entries of a mapping, a ParameterDict or an iterable of pairs."""
        if not isinstance(parameters, Iterable):
            raise TypeError("ParametersDict.update should be called with an iterable of "
                            "key/value pairs, but got " + type(parameters).__name__)
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            for key, parameter in parameters.items():
                self[key] = parameter
        elif isinstance(parameters, Mapping):
            for key, parameter in sorted(parameters.items()):
                self[key] = parameter
        else:
            for j, p in enumerate(parameters):
                if not isinstance(p, Iterable):
                    raise TypeError("ParameterDict update sequence element #" + str(j) +
                                    " should be Iterable; is" + type(p).__name__)
                if not len(p) == 2:
                    raise ValueError("ParameterDict update sequence element #" + str(j) +
                                     " has length " + str(len(p)) + "; 2 is required")
                self[p[0]] = p[1]

    def extra_repr(self):
        lines = []
        for k, p in self.items():
            if isinstance(p, Tensor):  # (the tensor type here, the dtype in a list)
                size = "x".join(str(n) for n in p.shape)
                device = f" ({p.device})" if p.device.type == "cuda" else ""
                lines.append(f"  ({k}): {'Parameter' if isinstance(p, Parameter) else 'Tensor'}"
                             f" containing: [{_tensor_type(p)} of size {size}{device}]")
            else:
                lines.append(_tensor_line(k, p))
        return "\n".join(lines)

    def __call__(self, input):
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other):
        copy = self.copy()
        copy.update(other)
        return copy

    def __ror__(self, other):
        copy = other.copy()
        copy.update(self)
        return copy

    def __ior__(self, other):
        self.update(other)
        return self


# ---- layers ----------
class Identity(Module):
    """Returns its input unchanged (any constructor arguments are ignored, as in
    PyTorch)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x @ weight.T + bias`` with ``weight`` of shape ``(out_features,
    in_features)``, initialized as PyTorch's (Kaiming uniform with ``a = sqrt(5)``, bias
    uniform in ``+-1/sqrt(in_features)``)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in_features), device=device,
                                      dtype=dtype))
        if bias:
            self.bias = Parameter(empty((out_features,), device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Initialize the weight and bias again, as the constructor does (Kaiming uniform, bias
        uniform in ``+-1/sqrt(in_features)``)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return _act.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Embedding(Module):
    """A table of ``num_embeddings`` vectors of size ``embedding_dim`` (N(0, 1) init; the
    ``padding_idx`` row starts at zero and gets no gradient)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None,
                 max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False,
                 _weight=None, _freeze=False, device=None, dtype=None):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        if padding_idx is not None:
            if padding_idx > 0:
                assert padding_idx < num_embeddings, \
                    "Padding_idx must be within num_embeddings"
            elif padding_idx < 0:
                assert padding_idx >= -num_embeddings, \
                    "Padding_idx must be within num_embeddings"
                padding_idx = num_embeddings + padding_idx
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            self.weight = Parameter(empty((num_embeddings, embedding_dim), device=device,
                                          dtype=dtype), requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise AssertionError("Shape of weight does not match num_embeddings and "
                                     "embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        """Draw the weight again from the standard normal distribution (the ``padding_idx`` row
        zero)."""
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None,
                        norm_type=2.0, scale_grad_by_freq=False, sparse=False):
        """An Embedding whose weight is ``embeddings`` (a 2-D tensor, ``(num_embeddings,
        embedding_dim)``), frozen (not requiring grad) unless ``freeze=False``."""
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)

    def forward(self, input):
        return _act.embedding(input, self.weight, self.padding_idx, self.max_norm,
                              self.norm_type, self.scale_grad_by_freq, self.sparse)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if self.sparse is not False:
            s += ", sparse=True"
        return s


class LayerNorm(Module):
    """Normalize over the trailing ``normalized_shape`` dimensions, then scale and shift
    (``weight`` ones, ``bias`` zeros)."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(n) for n in normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(self.normalized_shape, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(empty(self.normalized_shape, device=device,
                                            dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Set the weight to ones and the bias to zeros again."""
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return _act.layer_norm(input, self.normalized_shape, self.weight, self.bias,
                               self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class _DropoutNd(Module):
    """The base of the dropout layers (PyTorch's ``torch.nn.modules.dropout._DropoutNd``):
    the probability ``p`` (checked to lie in [0, 1]) and ``inplace``."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero elements with probability ``p`` in training mode (scaling the others by
    ``1 / (1 - p)``); the identity after ``eval()``."""

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)


class ReLU(Module):
    """``max(x, 0)`` (``F.relu``); ``inplace=True`` writes into the input."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Tanh(Module):
    """``tanh(x)``."""

    def forward(self, input):
        return F.tanh(input)


class Sigmoid(Module):
    """``1 / (1 + exp(-x))``."""

    def forward(self, input):
        return F.sigmoid(input)


class GELU(Module):
    """``x * Phi(x)`` (``F.gelu``; ``approximate="tanh"``: PyTorch's tanh form)."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``, ``x`` above ``threshold`` (``F.softplus``)."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class _Inplace(Module):
    """An activation with PyTorch's ``inplace`` option (shown by repr when True)."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class SiLU(_Inplace):
    """``x * sigmoid(x)`` (``F.silu``)."""

    def forward(self, input):
        return F.silu(input, inplace=self.inplace)


class Mish(_Inplace):
    """``x * tanh(softplus(x))`` (``F.mish``)."""

    def forward(self, input):
        return F.mish(input, inplace=self.inplace)


class Hardswish(_Inplace):
    """``x * relu6(x + 3) / 6`` (``F.hardswish``)."""

    def forward(self, input):
        return F.hardswish(input, self.inplace)

    def extra_repr(self):  # (PyTorch shows nothing, inplace or not)
        return ""


class Hardsigmoid(_Inplace):
    """``relu6(x + 3) / 6`` (``F.hardsigmoid``)."""

    def forward(self, input):
        return F.hardsigmoid(input, self.inplace)

    def extra_repr(self):  # (PyTorch shows nothing, inplace or not)
        return ""


class SELU(_Inplace):
    """``scale * elu(x, alpha)`` with PyTorch's constants (``F.selu``)."""

    def forward(self, input):
        return F.selu(input, self.inplace)


class LeakyReLU(Module):
    """``x`` where positive, else ``negative_slope * x`` (``F.leaky_relu``)."""

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}{', inplace=True' if self.inplace else ''}"


class _AlphaInplace(Module):
    """An activation with an ``alpha`` and PyTorch's ``inplace`` option."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def extra_repr(self):
        return f"alpha={self.alpha}{', inplace=True' if self.inplace else ''}"


class ELU(_AlphaInplace):
    """``x`` where positive, else ``alpha * (exp(x) - 1)`` (``F.elu``)."""

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)


class CELU(_AlphaInplace):  # (not an ELU, as in PyTorch)
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`` (``F.celu``)."""

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class Hardtanh(Module):
    """``x`` clamped to ``[min_val, max_val]`` (``F.hardtanh``); ``min_value`` and
    ``max_value`` are PyTorch's deprecated spellings."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value=None, max_value=None):
        super().__init__()
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and renamed to "
                          "`min_val`", FutureWarning, stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and renamed to "
                          "`max_val`", FutureWarning, stacklevel=2)
            max_val = max_value
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise AssertionError(f"max_val ({self.max_val}) must be greater than min_val "
                                 f"({self.min_val})")

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return (f"min_val={self.min_val}, max_val={self.max_val}"
                f"{', inplace=True' if self.inplace else ''}")


class ReLU6(Hardtanh):
    """``min(max(0, x), 6)`` (a Hardtanh from 0 to 6, as in PyTorch)."""

    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class LogSigmoid(Module):
    """``log(sigmoid(x))`` (``F.logsigmoid``)."""

    def forward(self, input):
        return F.logsigmoid(input)


class Softsign(Module):
    """``x / (1 + |x|)`` (``F.softsign``)."""

    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(Module):
    """``x - tanh(x)`` (``F.tanhshrink``)."""

    def forward(self, input):
        return F.tanhshrink(input)


class _Shrink(Module):
    """A shrinkage with its ``lambd`` (shown alone by repr, as PyTorch does)."""

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def extra_repr(self):
        return str(self.lambd)


class Softshrink(_Shrink):
    """Shrink towards 0 by ``lambd``, 0 within ``[-lambd, lambd]`` (``F.softshrink``)."""

    def forward(self, input):
        return F.softshrink(input, self.lambd)


class Hardshrink(_Shrink):  # (not a Softshrink, as in PyTorch)
    """``x`` where ``|x| > lambd``, else 0 (``F.hardshrink``)."""

    def forward(self, input):
        return F.hardshrink(input, self.lambd)


class PReLU(Module):
    """``x`` where positive, else ``weight * x``, with a learnable ``weight`` of
    ``num_parameters`` slopes (1, or the number of channels: dimension 1 of the input),
    each starting at ``init``.

    >>> from gradcore import nn
    >>> nn.PReLU(3)
    PReLU(num_parameters=3)
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(empty((num_parameters,), device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Set every slope to ``init`` again."""
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class GLU(Module):
    """The gated linear unit along ``dim`` (``F.glu``)."""

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class _SoftmaxAlong(Module):
    """A softmax-like function along ``dim`` (its ``_fn``)."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return self._fn(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_SoftmaxAlong):
    """``exp(x) / sum(exp(x), dim)`` (``F.softmax``)."""

    _fn = staticmethod(F.softmax)


class LogSoftmax(_SoftmaxAlong):  # not a Softmax, as in PyTorch
    """``x - logsumexp(x, dim)`` (``F.log_softmax``)."""

    _fn = staticmethod(F.log_softmax)


class Softmin(_SoftmaxAlong):
    """``softmax(-x, dim)`` (``F.softmin``)."""

    _fn = staticmethod(F.softmin)


class Flatten(Module):
    """Merge dimensions ``start_dim..end_dim`` (by default all but the batch one)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dimension ``dim`` into ``unflattened_size`` (a tuple or list of ints, one
    of which may be -1).

    >>> import gradcore as gc
    >>> from gradcore import nn
    >>> nn.Unflatten(1, (2, 3))(gc.zeros(4, 6)).shape
    gradcore.Size([4, 2, 3])
    """

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        if isinstance(dim, str):
            raise TypeError("invalid argument type for dim parameter (named tensors are not "
                            "supported)")
        self._require_tuple_int(unflattened_size)
        self.dim = dim
        self.unflattened_size = unflattened_size

    @staticmethod
    def _require_tuple_int(sizes):
        if isinstance(sizes, (tuple, list)):
            for idx, elem in enumerate(sizes):
                if not isinstance(elem, int):
                    raise TypeError("unflattened_size must be tuple of ints, but found element "
                                    f"of type {type(elem).__name__} at pos {idx}")
            return
        raise TypeError(f"unflattened_size must be a tuple of ints, but found type "
                        f"{type(sizes).__name__}")

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


# ---- losses ----------
class _Loss(Module):
    """The base of the losses (PyTorch's ``torch.nn.modules.loss._Loss``): ``reduction``
    (``"mean"``, ``"sum"`` or ``"none"``; the deprecated ``size_average`` and ``reduce``
    mapped onto it, as PyTorch does). A program's own loss may derive from it."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        self.reduction = F._legacy_reduction(size_average, reduce, reduction)


class _WeightedLoss(_Loss):
    """A :class:`_Loss` with a per-class ``weight`` (a buffer, None without one)."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """``F.mse_loss``: the squared difference, reduced."""

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """``F.cross_entropy`` with its options fixed at construction (``weight`` is a
    buffer, as in PyTorch: saved in ``state_dict`` and moved by ``to()``)."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight,
                               ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


class NLLLoss(_WeightedLoss):
    """``F.nll_loss`` of log-probabilities and class targets (``weight`` is a buffer)."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class NLLLoss2d(NLLLoss):
    """:class:`NLLLoss` by its old name (PyTorch keeps ``NLLLoss2d`` as a subclass for old
    programs, and warns that it is deprecated); inputs of any number of dimensions, as
    ``NLLLoss``."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean"):
        warnings.warn("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a "
                      "drop-in replacement and see "
                      "https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for more "
                      "details.", FutureWarning, stacklevel=2)
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


class BCEWithLogitsLoss(_Loss):
    """``F.binary_cross_entropy_with_logits`` (``weight`` and ``pos_weight`` are
    buffers)."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean",
                 pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class L1Loss(_Loss):
    """``F.l1_loss``: the absolute difference, reduced."""

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """``F.smooth_l1_loss``: quadratic below ``beta``, linear above."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """``F.huber_loss``: quadratic below ``delta``, ``delta``-scaled linear above."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        if not isinstance(delta, (float, int)):
            raise TypeError(f"delta must be a float or int, got: {type(delta)}")
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class BCELoss(_WeightedLoss):
    """``F.binary_cross_entropy`` of probabilities (``weight`` is a buffer)."""

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class KLDivLoss(_Loss):
    """``F.kl_div``: the KL divergence of the target from the input (log-probabilities);
    ``reduction='batchmean'`` is the mathematical definition."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 log_target: bool = False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class CosineEmbeddingLoss(_Loss):
    """``F.cosine_embedding_loss`` of two inputs and targets 1 or -1."""

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None,
                 reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)


class MarginRankingLoss(_Loss):
    """``F.margin_ranking_loss``: ``max(0, -target * (input1 - input2) + margin)``."""

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None,
                 reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """``F.soft_margin_loss``: ``log(1 + exp(-target * input))``, reduced."""

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """``F.multilabel_soft_margin_loss``: per-class logistic losses averaged over the
    classes (``weight`` is a buffer)."""

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """``F.triplet_margin_loss`` of anchors, positives and negatives."""

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                 swap: bool = False, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got "
                             f"{margin} instead")
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)


# ---- distances ----------
class PairwiseDistance(Module):
    """``F.pairwise_distance`` (``p`` is kept as ``norm``, as in PyTorch)."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """``F.cosine_similarity`` along ``dim``."""

    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


# ---- module backward hooks ----------
class _HookState:
    """One call's bookkeeping: the output gradients, once known."""

    def __init__(self, module, n_args, wrapped):
        self.module, self.n_args, self.wrapped = module, n_args, wrapped
        self.grad_output = None


def _run_backward_hooks(state, grad_input):
    for hook in list(state.module._backward_hooks.values()):
        new = hook(state.module, grad_input, state.grad_output)
        if new is not None:
            new = tuple(new) if isinstance(new, (tuple, list)) else (new,)
            if len(new) != len(grad_input):
                raise RuntimeError(f"Backward hook returned an invalid number of grad_input, "
                                   f"got {len(new)}, but expected {len(grad_input)}")
            grad_input = new
    return grad_input


def _hook_functions():
    from ...autograd import Function  # noqa: PLC0415  (the engine, a layer below)

    class BackwardHookFunctionBackward(Function):
        """Identity on the module's inputs; its backward runs the full backward hooks."""

        @staticmethod
        def forward(ctx, state, *xs):
            ctx.state = state
            return tuple(x.view_as(x) for x in xs)

        @staticmethod
        def backward(ctx, *grads):
            state = ctx.state
            grad_input = [None] * state.n_args
            for i, g in zip(state.wrapped, grads):
                grad_input[i] = g
            grad_input = _run_backward_hooks(state, tuple(grad_input))
            return (None,) + tuple(grad_input[i] for i in state.wrapped)

    class BackwardHookOutputBackward(Function):
        """Identity on the module's outputs; its backward records (and lets the pre-hooks
        replace) the output gradients."""

        @staticmethod
        def forward(ctx, state, *ys):
            ctx.state = state
            return tuple(y.view_as(y) for y in ys)

        @staticmethod
        def backward(ctx, *grads):
            state = ctx.state
            for hook in list(state.module._backward_pre_hooks.values()):
                new = hook(state.module, grads)
                if new is not None:
                    grads = tuple(new) if isinstance(new, (tuple, list)) else (new,)
            state.grad_output = grads
            if not state.wrapped and state.module._backward_hooks:
                # no input needs a gradient: the hooks run now, as PyTorch warns
                warnings.warn("Full backward hook is firing when gradients are computed with "
                              "respect to module outputs since no inputs require gradients. "
                              "See https://docs.pytorch.org/docs/main/generated/torch.nn.Module"
                              ".html#torch.nn.Module.register_full_backward_hook for more "
                              "details.", stacklevel=2)
                _run_backward_hooks(state, (None,) * state.n_args)
            return (None,) + tuple(grads)

    return BackwardHookFunctionBackward, BackwardHookOutputBackward


_HOOK_FUNCTIONS = []


def _call_with_backward_hooks(module, args, kwargs):
    from ...autograd.grad_mode import is_grad_enabled  # noqa: PLC0415

    if not _HOOK_FUNCTIONS:
        _HOOK_FUNCTIONS.extend(_hook_functions())
    into, out_of = _HOOK_FUNCTIONS
    grad = is_grad_enabled()
    wrapped = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
    state = _HookState(module, len(args), wrapped if grad else [])
    if grad and wrapped:
        new = into.apply(state, *[args[i] for i in wrapped])
        args = list(args)
        for i, t in zip(wrapped, new):
            args[i] = t
        args = tuple(args)
    d = module.__dict__
    if d.get("_forward_pre_hooks") or d.get("_forward_hooks"):
        result = module._call_with_hooks(args, kwargs)
    else:
        result = module.forward(*args, **kwargs)
    if not grad:
        return result
    single = isinstance(result, Tensor)
    outs = (result,) if single else result
    if not isinstance(outs, tuple) or not all(isinstance(o, Tensor) for o in outs):
        return result  # (PyTorch hooks tensors and tuples of tensors)
    needing = [i for i, o in enumerate(outs) if o.requires_grad]
    if not needing:
        return result
    new = out_of.apply(state, *[outs[i] for i in needing])
    outs = list(outs)
    for i, t in zip(needing, new):
        outs[i] = t
    return outs[0] if single else tuple(outs)


# ---- thresholds, random slopes, bilinear maps, 2-D softmax, shuffles ----------
class Threshold(Module):
    """``input`` where ``input > threshold``, else ``value`` (``F.threshold``)."""

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return (f"threshold={self.threshold}, value={self.value}"
                f"{', inplace=True' if self.inplace else ''}")


class RReLU(Module):
    """Randomized leaky ReLU (``F.rrelu``): a slope drawn from ``[lower, upper)`` per
    element in training, ``(lower + upper) / 2`` after ``eval()``."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}{', inplace=True' if self.inplace else ''}"


class Bilinear(Module):
    """``y = x1^T A x2 + b`` (``F.bilinear``): ``weight`` ``(out_features, in1_features,
    in2_features)`` and ``bias`` uniform in ``+-1/sqrt(in1_features)``."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in1_features, in2_features),
                                      device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty((out_features,), device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the weight and bias again, uniform in ``+-1/sqrt(in1_features)``."""
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class Softmax2d(Module):
    """Softmax over the channels of ``(N, C, H, W)`` or ``(C, H, W)``, at each place."""

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D "
                             f"instead")
        return F.softmax(input, -3, _stacklevel=5)


class ChannelShuffle(Module):
    """The channels of ``(N, C, *)`` as ``groups`` groups, interleaved
    (``F.channel_shuffle``)."""

    def __init__(self, groups: int):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"


# ---- more losses ----------
class GaussianNLLLoss(_Loss):
    """``F.gaussian_nll_loss``: ``forward(input, target, var)``."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
        super().__init__(None, None, reduction)
        self.full = full
        self.eps = eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """``F.poisson_nll_loss``: ``forward(log_input, target)``."""

    def __init__(self, log_input: bool = True, full: bool = False, size_average=None,
                 eps: float = 1e-8, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """``F.hinge_embedding_loss`` with ``margin``."""

    def __init__(self, margin: float = 1.0, size_average=None, reduce=None,
                 reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin,
                                      reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """``F.multi_margin_loss`` (``p`` 1 or 2, ``margin``; ``weight`` is a buffer)."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight=None, size_average=None,
                 reduce=None, reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.ndim != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got "
                             f"{weight.ndim}D instead")
        self.p = p
        self.margin = margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """``F.multilabel_margin_loss``: targets list each sample's classes up to a -1."""

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """``F.triplet_margin_with_distance_loss``; ``distance_function`` defaults to a
    :class:`PairwiseDistance` (a child module, as in PyTorch)."""

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean"):
        super().__init__(None, None, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater "
                             f"than 0, got {margin} instead")
        self.distance_function = distance_function if distance_function is not None \
            else PairwiseDistance()
        self.margin = margin
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


# ---- bags of embeddings ----------
class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embedding rows (``F.embedding_bag``): a table of
    ``num_embeddings`` vectors of size ``embedding_dim`` (N(0, 1) init, the
    ``padding_idx`` row zero); ``forward(input, offsets=None, per_sample_weights=None)``."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm=None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight=None, include_last_offset: bool = False,
                 padding_idx=None, device=None, dtype=None):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        if padding_idx is not None:
            if padding_idx > 0:
                assert padding_idx < num_embeddings, \
                    "padding_idx must be within num_embeddings"
            elif padding_idx < 0:
                assert padding_idx >= -num_embeddings, \
                    "padding_idx must be within num_embeddings"
                padding_idx = num_embeddings + padding_idx
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(empty((num_embeddings, embedding_dim), device=device,
                                          dtype=dtype))
            self.reset_parameters()
        else:
            assert list(_weight.shape) == [num_embeddings, embedding_dim], \
                "Shape of weight does not match num_embeddings and embedding_dim"
            self.weight = Parameter(_weight)
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset

    def reset_parameters(self) -> None:
        """Draw the weight again from the standard normal distribution (the ``padding_idx`` row
        zero)."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, mode="mean", sparse=False,
                        include_last_offset=False, padding_idx=None):
        """An EmbeddingBag whose weight is ``embeddings`` (2-D), frozen unless
        ``freeze=False``."""
        assert embeddings.ndim == 2, "Embeddings parameter is expected to be 2-dimensional"
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
                  embeddings, include_last_offset, padding_idx)
        bag.weight.requires_grad = not freeze
        return bag


__all__ += ["Threshold", "RReLU", "Bilinear", "Softmax2d",
            "ChannelShuffle", "GaussianNLLLoss", "PoissonNLLLoss", "HingeEmbeddingLoss",
            "MultiMarginLoss", "MultiLabelMarginLoss", "TripletMarginWithDistanceLoss",
            "EmbeddingBag"]


class Container(Module):
    """Deprecated: a :class:`Module` holding the modules given as keyword arguments
    (PyTorch's ``nn.Container``, with its ``FutureWarning``); subclass :class:`Module`
    instead."""

    def __init__(self, **kwargs):
        warnings.warn("`nn.Container` is deprecated. All of its functionality is now "
                      "implemented in `nn.Module`. Subclass that instead.", FutureWarning,
                      stacklevel=2)
        super().__init__()
        for key, value in kwargs.items():
            self.add_module(key, value)


__all__ += ["Container"]


class CTCLoss(_Loss):
    """``F.ctc_loss``, the connectionist temporal classification loss, with ``blank``,
    ``reduction`` and ``zero_infinity`` fixed at construction; ``forward(log_probs,
    targets, input_lengths, target_lengths)``."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)


__all__ += ["CTCLoss"]
