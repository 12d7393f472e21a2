"""``gradcore.library``: PyTorch's ``torch.library``, custom ops defined in Python.

:func:`custom_op` turns a function with type annotations into an op: its schema is
inferred from the annotations (:func:`infer_schema`), calls are checked against it
(PyTorch's messages), the function runs as the op's kernel (per device with
:meth:`CustomOpDef.register_kernel`), and gradients flow through the backward given to
:meth:`CustomOpDef.register_autograd` (an ``autograd.Function`` made for the op). The op
is also ``gc.ops.<namespace>.<name>``. :func:`opcheck` tests a registration.

>>> import gradcore as gc
>>> @gc.library.custom_op("mylib::scale", mutates_args=())
... def scale(x: gc.Tensor, a: float) -> gc.Tensor:
...     return x * a
>>> def backward(ctx, grad):
...     return grad * ctx.a, None
>>> def setup_context(ctx, inputs, output):
...     ctx.a = inputs[1]
>>> scale.register_autograd(backward, setup_context=setup_context)
>>> x = gc.tensor([1., 2.], requires_grad=True)
>>> gc.ops.mylib.scale(x, 3.0).sum().backward()
>>> x.grad
tensor([3., 3.])

Not provided: ``Library``, ``define`` and ``impl`` (PyTorch's dispatcher registrations
by dispatch key: gradcore has no dispatcher keys for them to name), ``register_vmap``,
``register_autocast``, ``register_torch_dispatch``, ``triton_op`` and ``get_ctx``
(fake tensors' dynamic sizes), and ``tags`` (``torch.Tag``).
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import numbers
import re
import typing
from collections.abc import Callable, Sequence
from types import GenericAlias

import numpy as np

from . import backend, dtypes
from .autograd.function import Function
from .autograd.functional import grad as _grad
from .autograd.grad_mode import no_grad
from .autograd.grad_mode import state as _grad_state
from .autograd.gradcheck import gradcheck as _gradcheck
from .backend import Device
from .backend import device as _device_fn
from .ops import _library as _registry
from .tensor import Tensor

__all__ = ["custom_op", "CustomOpDef", "infer_schema", "register_fake", "register_autograd",
           "register_kernel", "opcheck", "OpCheckError"]

# ---- schemas ---------------------------------------------------------------------------


def _derived(base, name, list_base, optional_base_list, optional_list_base):
    out = [(base, name), (typing.Optional[base], f"{name}?")]  # noqa: UP045

    def seqs(t):
        return (typing.Sequence[t], typing.List[t],  # noqa: UP006
                GenericAlias(Sequence, (t,)), GenericAlias(list, (t,)))
    if list_base:
        out += [(s, f"{name}[]") for s in seqs(base)]
    if optional_base_list:
        out += [(s, f"{name}?[]") for s in seqs(typing.Optional[base])]  # noqa: UP045
    if optional_list_base:
        out += [(typing.Optional[s], f"{name}[]?") for s in seqs(base)]  # noqa: UP045
    return out


_Number = typing.Union[int, float, bool]  # noqa: UP007  (torch.types.Number)


SUPPORTED_PARAM_TYPES = {}
for _row in [(Tensor, "Tensor", True, True, False), (int, "SymInt", True, False, True),
             (float, "float", True, False, True), (bool, "bool", True, False, True),
             (str, "str", False, False, False), (_Number, "Scalar", True, False, False),
             (dtypes.DType, "ScalarType", False, False, False),
             (Device, "Device", False, False, False)]:
    SUPPORTED_PARAM_TYPES.update(_derived(*_row))
del _row
SUPPORTED_PARAM_TYPES[_device_fn] = "Device"  # (gc.device, the function torch.device is)

SUPPORTED_RETURN_TYPES = {Tensor: "Tensor", typing.List[Tensor]: "Tensor[]",  # noqa: UP006
                          list[Tensor]: "Tensor[]", int: "SymInt", float: "float",
                          bool: "bool", _Number: "Scalar"}


def infer_schema(prototype_function: Callable, /, *, mutates_args, op_name: str | None = None,
                 tags=()) -> str:
    """The schema of an op, as PyTorch writes it, inferred from ``prototype_function``'s
    type annotations: ``"(Tensor x, float a=1.0, *, SymInt k=2) -> Tensor"`` (with
    ``op_name`` in front when given). ``mutates_args`` names the Tensor arguments the
    function writes into (``"unknown"``: all of them), marked ``Tensor(a0!)``.

    Parameter types: ``Tensor``, ``int``, ``float``, ``bool``, ``str``, numbers
    (``int | float | bool``), ``gc.dtype``, ``gc.device``, their ``Optional`` and lists
    (``list[Tensor]``, ``Sequence[int]``, ...); returns: ``Tensor``, ``list[Tensor]``,
    ``int``, ``float``, ``bool``, a number, a tuple of these, or None. Anything else,
    a missing annotation, ``*args``/``**kwargs`` or a positional-only parameter raise
    PyTorch's ValueError.

    >>> import gradcore as gc
    >>> def f(x: gc.Tensor, n: int = 2) -> gc.Tensor:
    ...     return x * n
    >>> gc.library.infer_schema(f, mutates_args=())
    '(Tensor x, SymInt n=2) -> Tensor'
    """
    if tags:
        raise NotImplementedError("infer_schema: gradcore has no torch.Tag; tags are not "
                                  "supported")
    sig = inspect.signature(prototype_function)
    pf_globals = getattr(prototype_function, "__globals__", {})
    if type(mutates_args) is not str:
        mutates_args = tuple(mutates_args)

    def error_fn(what):
        raise ValueError(f"infer_schema(func): {what} Got func with signature {sig})")

    def convert(ann):
        if isinstance(ann, str):
            try:
                return eval(ann, pf_globals)  # noqa: S307  (PyTorch evaluates them too)
            except Exception as e:  # noqa: BLE001
                error_fn(f"Unsupported type annotation {ann}. It is not a type. "
                         f"({type(e).__name__}: {e})")
        origin = typing.get_origin(ann)
        if origin is not None:
            args = typing.get_args(ann)
            if any(isinstance(a, str) for a in args):
                return GenericAlias(origin, tuple(convert(a) for a in args))
        return ann

    params, seen, saw_kwonly = [], set(), False
    for idx, (name, param) in enumerate(sig.parameters.items()):
        if param.kind not in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                              inspect.Parameter.KEYWORD_ONLY):
            error_fn("We do not support positional-only args, varargs, or varkwargs.")
        if param.kind == inspect.Parameter.KEYWORD_ONLY and not saw_kwonly:
            params.append("*")
            saw_kwonly = True
        if param.annotation is inspect.Parameter.empty:
            error_fn(f"Parameter {name} must have a type annotation.")
        ann = convert(param.annotation)
        try:
            schema_type = SUPPORTED_PARAM_TYPES.get(ann)
        except TypeError:  # an unhashable annotation
            schema_type = None
        if schema_type is None:
            if typing.get_origin(ann) is tuple:
                error_fn(f"Parameter {name} has unsupported type {param.annotation}. We do "
                         "not support Tuple inputs in schema. As a workaround, please try "
                         "to use List instead.")
            error_fn(f"Parameter {name} has unsupported type {param.annotation}. The valid "
                     f"types are: {SUPPORTED_PARAM_TYPES.keys()}.")
        if type(mutates_args) is str:
            if mutates_args != "unknown":
                raise ValueError("mutates_args must either be a sequence of the names of the "
                                 "arguments that are mutated or the string 'unknown'. ")
            if schema_type.startswith("Tensor"):
                schema_type = f"Tensor(a{idx}!){schema_type[len('Tensor'):]}"
        elif name in mutates_args:
            if not schema_type.startswith("Tensor"):
                error_fn(f"Parameter {name} is in mutable_args but only Tensors or "
                         "collections of Tensors can be mutated")
            schema_type = f"Tensor(a{idx}!){schema_type[len('Tensor'):]}"
        seen.add(name)
        default = param.default
        if default is inspect.Parameter.empty:
            params.append(f"{schema_type} {name}")
            continue
        if default is None or isinstance(default, (int, float, bool)):
            rep = str(default)
        elif isinstance(default, str):
            rep = f'"{default}"'
        elif isinstance(default, Device):
            rep = f'"{default}"'
        elif isinstance(default, dtypes.DType):
            rep = str(default).split(".")[-1]
        else:
            error_fn(f"Parameter {name} has an unsupported default value type "
                     f"{type(default)}. Please file an issue on GitHub so we can prioritize "
                     "this.")
        params.append(f"{schema_type} {name}={rep}")
    if mutates_args != "unknown":
        missing = set(mutates_args) - seen
        if missing:
            error_fn(f"{missing} in mutates_args were not found in the custom op's "
                     "signature. mutates_args should contain the names of all args that the "
                     "custom op mutates, or just the string 'unknown' if you don't know.")
    ret = _parse_return(convert(sig.return_annotation), error_fn)
    if op_name is not None:
        return f"{op_name}({', '.join(params)}) -> {ret}"
    return f"({', '.join(params)}) -> {ret}"


def _parse_return(annotation, error_fn):
    if annotation is None:
        return "()"
    if annotation is inspect.Parameter.empty:
        error_fn("No return type annotation was provided. Please add one.")
    if typing.get_origin(annotation) is not tuple:
        if annotation not in SUPPORTED_RETURN_TYPES:
            error_fn(f"Return has unsupported type {annotation}. The valid types are: "
                     f"{SUPPORTED_RETURN_TYPES}.")
        return SUPPORTED_RETURN_TYPES[annotation]
    args = typing.get_args(annotation)
    for a in args:
        if a not in SUPPORTED_RETURN_TYPES:
            error_fn(f"Return has unsupported type {annotation}. The valid types are: "
                     f"{SUPPORTED_RETURN_TYPES}.")
    out = ", ".join(SUPPORTED_RETURN_TYPES[a] for a in args)
    return f"(({out}))" if len(args) == 1 else f"({out})"


class _Arg:
    __slots__ = ("name", "type", "kwarg_only", "has_default", "default", "mutable")


_ARG = re.compile(r"^(?P<base>[A-Za-z]+)(?P<alias>\([^)]*\))?(?P<mods>(?:\[\d*\]|\?)*)\s+"
                  r"(?P<name>\w+)(?:\s*=\s*(?P<default>.+))?$")


def _split_top(s: str) -> list[str]:
    parts, depth, cur, quote = [], 0, "", None
    for ch in s:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def _parse_default(text: str):
    if text in dtypes.__dict__ and isinstance(dtypes.__dict__[text], dtypes.DType):
        return dtypes.__dict__[text]
    try:
        return ast.literal_eval(text.replace("true", "True").replace("false", "False"))
    except (ValueError, SyntaxError):
        return text


class _Schema:
    """A parsed schema: its arguments and returns."""

    def __init__(self, text: str):
        self.text = text
        body = text[text.index("("):]
        head, arrow, ret = body.rpartition("->")
        if not arrow:
            raise RuntimeError(f"Expected '->' in the schema {text!r}")
        head = head.strip()
        if not (head.startswith("(") and head.endswith(")")):
            raise RuntimeError(f"Could not parse the schema {text!r}")
        self.args, kwonly = [], False
        for part in _split_top(head[1:-1]):
            if part == "*":
                kwonly = True
                continue
            m = _ARG.match(part)
            if m is None:
                raise RuntimeError(f"Could not parse the argument {part!r} of the schema "
                                   f"{text!r}")
            a = _Arg()
            a.name, a.kwarg_only = m["name"], kwonly
            a.type = m["base"] + m["mods"]
            a.mutable = bool(m["alias"]) and m["alias"].endswith("!)")
            a.has_default = m["default"] is not None
            a.default = _parse_default(m["default"].strip()) if a.has_default else None
            self.args.append(a)
        ret = ret.strip()
        if ret.startswith("("):
            inner = ret[1:-1].strip()
            if inner.startswith("(") and inner.endswith(")"):  # ((Tensor)): one-tuple
                inner = inner[1:-1]
            self.returns = [re.sub(r"\([^)]*\)", "", r) for r in _split_top(inner)]
            self.returns_tuple = True
        else:
            self.returns = [re.sub(r"\([^)]*\)", "", ret)]
            self.returns_tuple = False
        self.is_mutable = any(a.mutable for a in self.args)
        # (derived once: every call of the op binds its arguments against them)
        self.positional = [a for a in self.args if not a.kwarg_only]
        self.names = {a.name for a in self.args}

    def __str__(self):
        return self.text


def _type_name(t: str) -> str:
    if t.endswith("?"):
        return f"Optional[{_type_name(t[:-1])}]"
    if t.endswith("]"):
        return f"List[{_type_name(t[:t.rindex('[')])}]"
    return {"SymInt": "int", "ScalarType": "int"}.get(t, t)


def _matches(v, t: str) -> bool:
    if t.endswith("?"):
        return v is None or _matches(v, t[:-1])
    if t.endswith("]"):
        return isinstance(v, (list, tuple)) and all(_matches(e, t[:t.rindex("[")]) for e in v)
    if t == "Tensor":
        return isinstance(v, Tensor)
    if t in ("SymInt", "int"):
        return isinstance(v, numbers.Integral)
    if t == "float":
        return isinstance(v, numbers.Real) and not isinstance(v, Tensor)
    if t == "bool":
        return isinstance(v, (bool, np.bool_))
    if t == "str":
        return isinstance(v, str)
    if t == "Scalar":
        return isinstance(v, numbers.Number)
    if t == "ScalarType":
        return isinstance(v, dtypes.DType)
    if t == "Device":
        return isinstance(v, (str, Device))
    return True


def _is_tensor_list(t: str) -> bool:
    return t.startswith("Tensor") and t.rstrip("?").endswith("]")


# ---- the op ----------------------------------------------------------------------------

def _root(arr):
    while getattr(arr, "base", None) is not None:
        arr = arr.base
    return arr


def _tensors_in(values):
    for v in values:
        if isinstance(v, Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from (t for t in v if isinstance(t, Tensor))


class _Meta:
    """What the op's autograd.Function carries beside the flat inputs."""

    def __init__(self, lengths, kwargs):
        self.lengths, self.kwargs = lengths, kwargs  # (per positional arg: None or a length)
        self.out_spec = None


class CustomOpDef:
    """A custom op made by :func:`custom_op`: call it like the function it wraps; its
    methods register its kernels per device, its fake implementation and its backward.
    Not made directly."""

    def __init__(self, namespace: str, name: str, schema: str, fn: Callable):
        self._namespace, self._name = namespace, name
        self._schema = schema
        self._parsed = _Schema(self._name + schema)
        self._init_fn = fn
        self._backend_fns: dict[str | None, Callable] = {}
        self._abstract_fn: Callable | None = None
        self._setup_context_fn: Callable | None = None
        self._backward_fn: Callable | None = None
        self._disabled_kernel: set = set()
        self._generated = self._make_function()
        args = self._parsed.args
        kwonly_tensors = [a for a in args if a.kwarg_only and a.type.startswith("Tensor")]
        if kwonly_tensors:
            raise NotImplementedError(f"custom_op with kwarg-only Tensor args. Please make "
                                      f"your tensors not kwarg-only. Got: {name}{schema}")
        self._opoverload = _registry.register(namespace, name, self).default

    @property
    def _qualname(self) -> str:
        return f"{self._namespace}::{self._name}"

    def __repr__(self):
        return f"<CustomOpDef({self._qualname})>"

    def __call__(self, *args, **kwargs):
        return self._dispatch(args, kwargs)

    # -- registration ---------------------------------------------------------------------
    def register_kernel(self, device_types, fn: Callable | None = None, /) -> Callable:
        """Register ``fn`` as the op's implementation on the device types named
        (``"cpu"``, ``"cuda"``, or a sequence of them; None: every device without its
        own); a decorator when ``fn`` is omitted. A call runs the kernel of the device
        of its tensors (``"cuda"`` when one is on a GPU), else the default one.
        An op with no Tensor argument needs a ``device: gc.device`` argument for that.

        >>> import gradcore as gc
        >>> @gc.library.custom_op("mylib::twice", mutates_args=())
        ... def twice(x: gc.Tensor) -> gc.Tensor:
        ...     return x * 2
        >>> @twice.register_kernel("cpu")
        ... def _(x):
        ...     return gc.from_numpy(x.numpy() * 2)
        >>> twice(gc.tensor([1., 2.]))
        tensor([2., 4.])
        """
        def inner(fn):
            kinds = [device_types] if device_types is None or isinstance(device_types, str) \
                else list(device_types)
            for kind in kinds:
                if kind is not None and kind not in ("cpu", "cuda"):
                    raise ValueError(f"register_kernel: unknown device type {kind!r} (gradcore "
                                     "has 'cpu' and 'cuda')")
                self._backend_fns[kind] = fn
            return fn

        if device_types is not None and not any(
                a.type.startswith("Tensor") for a in self._parsed.args):
            if not any(a.type.rstrip("?") == "Device" for a in self._parsed.args):
                raise ValueError("Functions without tensor inputs are required to have a "
                                 "`device: torch.device` argument")
        if fn is None:
            return inner
        return inner(fn)

    def register_fake(self, fn: Callable, /) -> Callable:
        """Register the op's fake implementation: ``fn`` takes the op's arguments and
        returns empty tensors of the outputs' shapes, dtypes and devices (PyTorch's
        FakeTensor kernel, for compilation). gradcore has no fake tensors: :func:`opcheck`
        runs ``fn`` on the real arguments and compares what it returns with the op's
        outputs. Returns ``fn``."""
        self._abstract_fn = fn
        return fn

    def register_autograd(self, backward: Callable, /, *,
                          setup_context: Callable | None = None) -> None:
        """Make the op differentiable: ``backward(ctx, *grads)`` returns one gradient
        per positional argument of the op (None for non-Tensors; a list for a
        ``list[Tensor]`` argument), given one gradient per output, as
        ``autograd.Function.backward``. ``setup_context(ctx, inputs, output)`` runs after
        the forward (``inputs``: the positional arguments, defaults filled in; ops with
        keyword-only arguments get ``setup_context(ctx, inputs, keyword_only_inputs,
        output)``) and saves what ``backward`` needs on ``ctx``. Without it, a
        backward through the op raises. An op that mutates its arguments cannot have
        one (RuntimeError)."""
        if self._parsed.is_mutable:
            raise RuntimeError(f"Cannot register autograd formula for non-functional "
                               f"operator {self} with schema {self._qualname}{self._schema}. "
                               "Please create a functional operator and register an "
                               "autograd formula for that.")
        self._backward_fn = backward
        self._setup_context_fn = setup_context

    @contextlib.contextmanager
    def set_kernel_enabled(self, device_type: str, enabled: bool = True):
        """A context manager in which the kernel registered for ``device_type`` is
        disabled (``enabled=False``: the op's own function runs instead) or enabled
        again."""
        was_disabled = device_type in self._disabled_kernel
        if enabled:
            self._disabled_kernel.discard(device_type)
        else:
            self._disabled_kernel.add(device_type)
        try:
            yield
        finally:
            if was_disabled:
                self._disabled_kernel.add(device_type)
            else:
                self._disabled_kernel.discard(device_type)

    # -- calls ----------------------------------------------------------------------------
    def _declaration(self) -> str:
        return f"{self._qualname}{self._schema}"

    def _bind(self, args, kwargs):
        """The positional values (defaults filled in) and the keyword-only ones, checked
        against the schema with PyTorch's messages."""
        q, decl = self._qualname, self._declaration()
        schema_args = self._parsed.args
        positional, known = self._parsed.positional, self._parsed.names
        if len(args) > len(positional):
            raise RuntimeError(f"{q}() takes {len(positional)} positional argument(s) but "
                               f"{len(args)} was/were given.  Declaration: {decl}")
        unknown = [k for k in kwargs if k not in known]
        if len(args) + len(kwargs) > len(schema_args):
            raise RuntimeError(f"{q}() expected at most {len(schema_args)} argument(s) but "
                               f"received {len(args) + len(kwargs)} argument(s). "
                               f"Declaration: {decl}")
        if unknown:
            raise RuntimeError(f"Unknown keyword argument '{unknown[0]}' for operator '{q}'. "
                               f"Schema: {decl}")
        pos, kw = [], {}
        for i, a in enumerate(schema_args):
            if i < len(args):
                if a.name in kwargs:
                    raise RuntimeError(f"{q}() got multiple values for argument '{a.name}'. "
                                       f"Declaration: {decl}")
                v = args[i]
            elif a.name in kwargs:
                v = kwargs[a.name]
            elif a.has_default:
                v = a.default
            else:
                raise RuntimeError(f"{q}() is missing value for argument '{a.name}'. "
                                   f"Declaration: {decl}")
            if not _matches(v, a.type):
                raise RuntimeError(f"{q}() Expected a value of type '{_type_name(a.type)}' for "
                                   f"argument '{a.name}' but instead found type "
                                   f"'{type(v).__name__}'.\nPosition: {i}\nValue: {v!r}\n"
                                   f"Declaration: {decl}")
            if a.kwarg_only:
                kw[a.name] = v
            else:
                pos.append(v)
        return pos, kw

    def _kernel_for(self, pos, kw):
        tensors = list(_tensors_in(pos))
        if tensors:
            kind = "cuda" if any(t.device.type == "cuda" for t in tensors) else "cpu"
        else:
            kind = None
            for a, v in zip(self._parsed.args, [*pos, *kw.values()]):
                if a.type.rstrip("?") == "Device" and v is not None:
                    kind = _device_fn(v).type
                    break
        if kind is not None and kind in self._backend_fns:
            if kind in self._disabled_kernel:
                return self._init_fn
            return self._backend_fns[kind]
        if None in self._backend_fns:
            return self._backend_fns[None]
        have = ", ".join(k.upper() for k in self._backend_fns if k)
        raise NotImplementedError(f"Could not run '{self._qualname}' with arguments from the "
                                  f"'{(kind or 'cpu').upper()}' backend. This could be because "
                                  f"the operator doesn't exist for this backend. "
                                  f"'{self._qualname}' is only available for these backends: "
                                  f"[{have}].")

    def _run_kernel(self, pos, kw):
        """The kernel on the bound arguments; the aliasing check; version bumps."""
        fn = self._kernel_for(pos, kw)
        result = fn(*pos, **kw)
        self._check_returns(result)
        self._check_aliasing(fn, pos, kw, result)
        for a, v in zip(self._parsed.positional, pos):
            if a.mutable:
                for t in _tensors_in([v]):
                    t._bump()
        return result

    def _check_returns(self, result):
        rets = self._parsed.returns
        if not rets:
            return
        vals = result if self._parsed.returns_tuple else (result,)
        if not isinstance(vals, (tuple, list)) or len(vals) != len(rets):
            raise RuntimeError(f"{self._qualname}: the kernel returned {result!r}, but the "
                               f"schema's returns are {'(' + ', '.join(rets) + ')'}")
        for v, t in zip(vals, rets):
            bad_tensor = t == "Tensor" and not isinstance(v, Tensor)
            bad_list = t == "Tensor[]" and not (
                isinstance(v, (list, tuple)) and all(isinstance(e, Tensor) for e in v))
            if bad_tensor or bad_list:
                raise RuntimeError(f"Unable to cast {v!r} to {t}")

    def _check_aliasing(self, fn, pos, kw, result):
        outs = result if isinstance(result, (tuple, list)) else (result,)
        out_tensors = list(_tensors_in(outs))
        if not out_tensors:
            return
        roots = [id(_root(t._data)) for t in _tensors_in([*pos, *kw.values()])]
        seen = set(roots)
        for t in out_tensors:
            r = id(_root(t._data))
            if r in seen:
                raise RuntimeError(
                    f"{self._name} (with implementation in {inspect.getmodule(fn)}): The "
                    "output of this custom operator (1) must not also be an input to this "
                    "custom operator and (2) may not alias any inputs to this custom "
                    "operator or other returns. The most common way to trigger this error "
                    "is if we have y = custom_op(x) and y and x are the same Tensor. Please "
                    "instead return a clone of the offending output tensor(s) (e.g. return "
                    "x.clone()) or refactor the custom operator to not return y.")
            seen.add(r)

    def _dispatch(self, args, kwargs):
        pos, kw = self._bind(args, kwargs)
        if _grad_state.enabled and any(t._rg for t in _tensors_in(pos)):
            flat, lengths = [], []
            for a, v in zip(self._parsed.positional, pos):
                if _is_tensor_list(a.type) and v is not None:
                    flat.extend(v)
                    lengths.append(len(v))
                else:
                    flat.append(v)
                    lengths.append(None)
            meta = _Meta(lengths, kw)
            outs = self._generated.apply(*flat, meta)
            return _unflatten_outputs(list(outs), meta.out_spec)
        return self._run_kernel(pos, kw)

    def _make_function(self):
        op = self

        def forward(ctx, *args):
            meta, flat = args[-1], args[:-1]
            pos = _unflatten(flat, meta.lengths)
            result = op._run_kernel(pos, meta.kwargs)
            if op._setup_context_fn is not None:
                if len(op._parsed.positional) != len(op._parsed.args):
                    op._setup_context_fn(ctx=ctx, inputs=tuple(pos),
                                         keyword_only_inputs=meta.kwargs, output=result)
                else:
                    op._setup_context_fn(ctx=ctx, inputs=tuple(pos), output=result)
            leaves, meta.out_spec = _flatten_outputs(result)
            ctx._pt_meta = meta
            return tuple(leaves)

        def backward(ctx, *grads):
            if op._backward_fn is None:
                raise RuntimeError(f"Trying to backward through {op._opoverload} but no "
                                   "autograd formula was registered. Please use "
                                   "register_autograd to add one.")
            meta = ctx._pt_meta
            structured = _unflatten_outputs(list(grads), meta.out_spec, grads=True)
            if not meta.out_spec[0]:
                structured = (structured,)
            prev = ctx.needs_input_grad
            try:
                ctx.needs_input_grad = tuple(_unflatten(prev[:-1], meta.lengths))
                result = op._backward_fn(ctx, *structured)
            finally:
                ctx.needs_input_grad = prev
            if not isinstance(result, tuple):
                result = (result,)
            if any(n is not None for n in meta.lengths):
                flat = []
                ok = len(result) == len(meta.lengths)
                for g, n in zip(result, meta.lengths):
                    if n is None:
                        ok = ok and not isinstance(g, (list, tuple))
                        flat.append(g)
                    elif isinstance(g, (list, tuple)) and len(g) == n:
                        flat.extend(g)
                    else:
                        ok = False
                if not ok:
                    raise RuntimeError("Expected the return from backward to be of the same "
                                       "structure as the inputs. Got: "
                                       f"{_structure(result)} (return from backward), "
                                       f"{_structure_of_lengths(meta.lengths)} (inputs)")
                result = tuple(flat)
            return (*result, None)

        name = f"GeneratedBackwardFor_{self._namespace}_{self._name}_default"
        return type(name, (Function,), {"forward": staticmethod(forward),
                                        "backward": staticmethod(backward)})


def _unflatten(flat, lengths):
    out, i = [], 0
    for n in lengths:
        if n is None:
            out.append(flat[i])
            i += 1
        else:
            out.append(list(flat[i:i + n]))
            i += n
    return out


def _structure(values):
    return "(" + ", ".join(f"[{len(v)} values]" if isinstance(v, (list, tuple)) else "*"
                           for v in values) + ")"


def _structure_of_lengths(lengths):
    return "(" + ", ".join("*" if n is None else f"[{n} values]" for n in lengths) + ")"


def _flatten_outputs(result):
    """The tensors of an op's result and how to rebuild it: (is_tuple, entries) where an
    entry is ("t",) a tensor, ("l", n) a list of n tensors, ("v", value) anything else."""
    is_tuple = isinstance(result, tuple)
    items = result if is_tuple else (result,)
    leaves, entries = [], []
    for r in items:
        if isinstance(r, Tensor):
            leaves.append(r)
            entries.append(("t",))
        elif isinstance(r, list) and all(isinstance(t, Tensor) for t in r):
            leaves.extend(r)
            entries.append(("l", len(r)))
        else:
            entries.append(("v", r))
    return leaves, (is_tuple, entries)


def _unflatten_outputs(leaves, spec, grads=False):
    is_tuple, entries = spec
    out, i = [], 0
    for e in entries:
        if e[0] == "t":
            out.append(leaves[i])
            i += 1
        elif e[0] == "l":
            out.append(list(leaves[i:i + e[1]]))
            i += e[1]
        else:
            out.append(None if grads else e[1])
    return tuple(out) if is_tuple else out[0]


def custom_op(name: str, fn: Callable | None = None, /, *, mutates_args, device_types=None,
              schema: str | None = None, tags=None):
    """Wrap ``fn`` into the custom op ``name`` (``"namespace::opname"``); a decorator when
    ``fn`` is omitted. Returns a :class:`CustomOpDef`, also reachable as
    ``gc.ops.<namespace>.<opname>``.

    ``fn`` needs type annotations, from which the schema is inferred
    (:func:`infer_schema`) unless ``schema`` gives it. ``mutates_args``: the names of the
    Tensor arguments ``fn`` writes into (their version counters are bumped after each
    call), or ``"unknown"``. ``device_types``: the devices ``fn`` serves (``"cpu"``,
    ``"cuda"``; None: all). Calls are checked against the schema (RuntimeError with
    PyTorch's words), and an output may not be, or be a view of, an input or another
    output (RuntimeError, as in PyTorch). Without :meth:`CustomOpDef.register_autograd`,
    a backward through the op raises. ``tags`` (``torch.Tag``) are not supported.

    >>> import gradcore as gc
    >>> @gc.library.custom_op("mylib::add_one", mutates_args=())
    ... def add_one(x: gc.Tensor) -> gc.Tensor:
    ...     return x + 1
    >>> add_one(gc.tensor([1., 2.]))
    tensor([2., 3.])
    """
    if tags:
        raise NotImplementedError("custom_op: gradcore has no torch.Tag; tags are not "
                                  "supported")

    def inner(fn):
        schema_str = infer_schema(fn, mutates_args=mutates_args) if schema is None else schema
        namespace, opname = name.split("::")
        result = CustomOpDef(namespace, opname, schema_str, fn)
        if schema is not None:
            expected = {a.name for a in result._parsed.args if a.mutable}
            if expected != set(mutates_args):
                raise ValueError(f"Attempted to create a custom op with `mutates_args="
                                 f"{mutates_args}` and `schema={schema}. The schema suggests "
                                 f"that the op mutates {expected}which is different from "
                                 "what was provided to us in `mutates_args`. Please make "
                                 "these consistent.")
        result.register_kernel(device_types)(fn)
        return result

    if fn is None:
        return inner
    return inner(fn)


def _lookup(op, what: str) -> CustomOpDef:
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, (_registry.OpOverload, _registry.OpOverloadPacket)):
        return op._op
    if isinstance(op, str):
        packet = _registry.OPS.get(op)
        if packet is None:
            if what == "autograd":
                ns, _, short = op.partition("::")
                raise AttributeError(f"'_OpNamespace' '{ns}' object has no attribute "
                                     f"'{short}'")
            raise RuntimeError(f"operator {op} does not exist")
        return packet._op
    raise TypeError(f"register_{what}: op must be a custom op, its qualified name "
                    f"('namespace::name') or gc.ops.<namespace>.<name>, got {type(op)}")


def register_fake(op, func: Callable | None = None, /, *, lib=None, _stacklevel: int = 1,
                  allow_override: bool = True):
    """:meth:`CustomOpDef.register_fake` for ``op`` (the op, ``"namespace::name"`` or
    ``gc.ops.<namespace>.<name>``); a decorator when ``func`` is omitted. ``lib``
    (a ``Library``) is not supported."""
    if lib is not None:
        raise NotImplementedError("register_fake: gradcore has no Library; lib= is not "
                                  "supported")
    opdef = _lookup(op, "fake")

    def register(func):
        return opdef.register_fake(func)
    return register if func is None else register(func)


def register_autograd(op, backward: Callable, /, *, setup_context: Callable | None = None,
                      lib=None) -> None:
    """:meth:`CustomOpDef.register_autograd` for ``op`` (the op, ``"namespace::name"`` or
    ``gc.ops.<namespace>.<name>``). ``lib`` is not supported."""
    if lib is not None:
        raise NotImplementedError("register_autograd: gradcore has no Library; lib= is not "
                                  "supported")
    _lookup(op, "autograd").register_autograd(backward, setup_context=setup_context)


def register_kernel(op, device_types, func: Callable | None = None, /, *, lib=None):
    """:meth:`CustomOpDef.register_kernel` for ``op`` (the op, ``"namespace::name"`` or
    ``gc.ops.<namespace>.<name>``); a decorator when ``func`` is omitted. ``lib`` is not
    supported."""
    if lib is not None:
        raise NotImplementedError("register_kernel: gradcore has no Library; lib= is not "
                                  "supported")
    return _lookup(op, "kernel").register_kernel(device_types, func)


# ---- opcheck ---------------------------------------------------------------------------

class OpCheckError(Exception):
    """What :func:`opcheck` raises when one of its tests fails (PyTorch's
    ``torch.testing._internal.optests.OpCheckError``)."""


def _clone_args(values):
    def one(v):
        if isinstance(v, Tensor):
            c = v.detach().clone()
            return c.requires_grad_() if v.requires_grad else c
        if isinstance(v, (list, tuple)):
            return type(v)(one(e) for e in v)
        return v
    return [one(v) for v in values]


def _host(t: Tensor):
    return np.array(backend.to_host(t._data), copy=True)


def _test_schema(opdef, args, kwargs, rtol, atol):
    args, kwargs = _clone_args(args), dict(zip(kwargs, _clone_args(kwargs.values())))
    pos, kw = opdef._bind(args, kwargs)
    before = [[_host(t) for t in _tensors_in([v])] for v in pos]
    with no_grad():
        opdef._dispatch(args, kwargs)
    for a, v, old in zip(opdef._parsed.positional, pos, before):
        if a.mutable:
            continue
        for t, o in zip(_tensors_in([v]), old):
            new = _host(t)
            if new.shape != o.shape or not np.array_equal(new, o, equal_nan=True):
                raise RuntimeError(f"Argument {a.name} is not defined as mutable but was "
                                   "mutated")


def _test_autograd_registration(opdef, args, kwargs, rtol, atol):
    args, kwargs = _clone_args(args), dict(zip(kwargs, _clone_args(kwargs.values())))
    inputs = list(_tensors_in(args))
    if not any(t.requires_grad for t in inputs):
        return  # (nothing to check, as in PyTorch)
    out = opdef._dispatch(args, kwargs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for t in _tensors_in(outs):
        if t.dtype.is_floating_point and not t.requires_grad:
            raise AssertionError(f"{opdef._opoverload}: an input requires grad but the output "
                                 "does not: the op has no autograd kernel")


def _test_faketensor(opdef, args, kwargs, rtol, atol):
    args, kwargs = _clone_args(args), dict(zip(kwargs, _clone_args(kwargs.values())))
    if opdef._abstract_fn is None:
        if opdef._parsed.returns == [] or opdef._parsed.returns == [""]:
            return  # (PyTorch generates the fake of an op returning nothing)
        raise RuntimeError(f"There was no fake impl registered for {opdef}. This is "
                           "necessary for torch.compile/export/fx tracing to work. Please "
                           f"use `{opdef._init_fn.__name__}.register_fake` to add an fake "
                           "impl.")
    with no_grad():
        real = opdef._dispatch(args, kwargs)
        pos, kw = opdef._bind(args, kwargs)
        fake = opdef._abstract_fn(*pos, **kw)
    where = (f"When comparing the output of {opdef._opoverload} on FakeTensor and concrete "
             "Tensors, found mismatched tensor metadata: ")
    rs = real if isinstance(real, (tuple, list)) else (real,)
    fs = fake if isinstance(fake, (tuple, list)) else (fake,)
    if len(rs) != len(fs) or isinstance(real, (tuple, list)) != isinstance(fake, (tuple, list)):
        raise RuntimeError(where + f"the fake impl returned {len(fs)} output(s), the op "
                           f"{len(rs)}")
    for r, f in zip(rs, fs):
        if isinstance(r, (list, tuple)):
            if not isinstance(f, (list, tuple)) or len(f) != len(r):
                raise RuntimeError(where + "a list of outputs differs in length")
            pairs = zip(r, f)
        else:
            pairs = [(r, f)]
        for rt, ft in pairs:
            if not isinstance(rt, Tensor):
                continue
            if not isinstance(ft, Tensor):
                raise RuntimeError(where + f"the fake impl returned {type(ft).__name__} for "
                                   "a Tensor output")
            if tuple(rt.shape) != tuple(ft.shape):
                raise RuntimeError(where + f"Shapes {rt.shape} and {ft.shape} are not equal!")
            if rt.dtype != ft.dtype:
                raise RuntimeError(where + f"Dtypes {rt.dtype} and {ft.dtype} are not equal!")
            if rt.device != ft.device:
                raise RuntimeError(where + f"Devices {rt.device} and {ft.device} are not "
                                   "equal!")


def _test_gradients(opdef, args, kwargs, rtol, atol):
    args, kwargs = _clone_args(args), dict(zip(kwargs, _clone_args(kwargs.values())))
    with no_grad():
        plain = opdef._dispatch(_clone_args(args), kwargs)
    inputs = [t for t in _tensors_in(args) if t.requires_grad]
    if not inputs:
        return
    out = opdef._dispatch(args, kwargs)
    for r, p in zip(_tensors_in([out] if isinstance(out, Tensor) else out),
                    _tensors_in([plain] if isinstance(plain, Tensor) else plain)):
        if r.dtype.is_floating_point:
            if not np.allclose(_host(r.detach()), _host(p), rtol=rtol or 1e-5, atol=atol or 1e-8,
                               equal_nan=True):
                raise RuntimeError(f"{opdef._opoverload}: outputs differ with and without "
                                   "autograd")
    diff = [t for t in _tensors_in([out] if isinstance(out, Tensor) else out)
            if t.requires_grad]
    if not diff:
        return
    loss = sum((t * t).sum() for t in diff)  # (nonuniform weights for the backward)
    grads_ = _grad(loss, inputs, allow_unused=True)
    for t, g in zip(inputs, grads_):
        if g is not None and (tuple(g.shape) != tuple(t.shape) or g.dtype != t.dtype):
            raise RuntimeError(f"{opdef._opoverload}: the gradient of an input of shape "
                               f"{list(t.shape)} ({t.dtype}) has shape {list(g.shape)} "
                               f"({g.dtype})")
    if not all(t.dtype == dtypes.float64 for t in inputs):
        return

    def fn(*ts):
        it = iter(ts)
        new = []
        for v in args:
            if isinstance(v, Tensor) and v.requires_grad:
                new.append(next(it))
            elif isinstance(v, (list, tuple)):
                new.append(type(v)(next(it) if isinstance(e, Tensor) and e.requires_grad
                                   else e for e in v))
            else:
                new.append(v)
        r = opdef._dispatch(new, kwargs)
        rs = [r] if isinstance(r, Tensor) else list(_tensors_in(r))
        return tuple(t for t in rs if t.requires_grad)

    try:
        _gradcheck(fn, tuple(inputs), atol=atol or 1e-5, rtol=rtol or 1e-3)
    except RuntimeError as e:
        raise RuntimeError(f"{opdef._opoverload}: the registered backward disagrees with "
                           f"central differences: {e}") from e


_OPCHECK_TESTS = {"test_schema": _test_schema,
                  "test_autograd_registration": _test_autograd_registration,
                  "test_faketensor": _test_faketensor,
                  "test_aot_dispatch_dynamic": _test_gradients}


def opcheck(op, args: tuple, kwargs: dict | None = None, *,
            test_utils: str | Sequence[str] = ("test_schema", "test_autograd_registration",
                                               "test_faketensor",
                                               "test_aot_dispatch_dynamic"),
            raise_exception: bool = True, atol=None, rtol=None) -> dict[str, str]:
    """Test that the custom op ``op`` is registered correctly, on sample ``args`` and
    ``kwargs`` (copies of them: the arguments are not touched). Returns
    ``{test: "SUCCESS" or the exception}``; with ``raise_exception`` (the default) the
    first failure raises :class:`OpCheckError`. The tests (``test_utils``; ``"ALL"``: all):

    - ``test_schema``: the op runs, its outputs alias no input (the op's own check), and
      no Tensor argument outside ``mutates_args`` changed value;
    - ``test_autograd_registration``: when an input requires grad, the op's
      floating-point outputs require grad;
    - ``test_faketensor``: the fake implementation (``register_fake``), run on the same
      arguments (gradcore has no fake tensors), returns the structure, shapes, dtypes and
      devices of the real outputs; an op without one fails, as in PyTorch, unless it
      returns nothing;
    - ``test_aot_dispatch_dynamic`` (in PyTorch: the op under compilation; gradcore has
      no ahead-of-time compilation, so it checks eager autograd): the outputs with and
      without autograd agree, a backward through the op runs (it raises without
      ``register_autograd``) and gives gradients of the inputs' shapes and dtypes, and,
      when every input that requires grad is float64, the gradients agree with central
      differences (``gc.autograd.gradcheck``, ``atol``/``rtol`` when given; PyTorch does
      not compare with differences).

    ``atol`` and ``rtol`` go together (ValueError otherwise).
    """
    if (rtol is None) ^ (atol is None):
        raise ValueError("opcheck(op, ...): if you specify one of rtol/atol, you must specify "
                         "both")
    kwargs = {} if kwargs is None else kwargs
    opdef = _lookup(op, "opcheck") if not isinstance(op, str) else None
    if opdef is None:
        raise ValueError(f"opcheck(op, ...): op must be instance of torch._ops.OpOverload, "
                         f"e.g. torch.ops.aten.sin.default, got {type(op)}")
    if test_utils == "ALL":
        test_utils = tuple(_OPCHECK_TESTS)
    if isinstance(test_utils, str):
        test_utils = (test_utils,)
    if not isinstance(test_utils, (tuple, list)) or not set(test_utils) <= set(_OPCHECK_TESTS):
        raise ValueError(f"opcheck(op, ..., test_utils={test_utils}), expected test_utils to "
                         f"be subset of {tuple(_OPCHECK_TESTS)} but it was not")
    results = {}
    for name in test_utils:
        try:
            _OPCHECK_TESTS[name](opdef, tuple(args), kwargs, rtol, atol)
            results[name] = "SUCCESS"
        except Exception as ex:  # noqa: BLE001
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {name} failed with {ex} (scroll up for "
                                   "stack trace)") from ex
            results[name] = ex
    return results
