"""The optimizer base class: parameter groups, per-parameter state, state dicts.

Subclasses implement ``step``; their arithmetic lives in :mod:`gradcore.kernels.updates`
(one update function per optimizer, attached to each device's array namespace).
"""

from __future__ import annotations

import copy
import functools
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from itertools import chain
from typing import NamedTuple

import numpy as np

from .. import _live, backend
from ..autograd import enable_grad
from ..autograd.tensor_base import _wrap
from ..backend import math_of
from ..kernels.updates import DEVICE_SCALAR_UPDATES, ROW_WIDTH, SKIP_COLUMN
from ..tensor import Tensor

__all__ = ["Optimizer", "required", "DeviceUpdate", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]

# state values kept as Python numbers here, 0-d tensors in PyTorch: step counts (ints),
# NAdam's running product of momentum coefficients and ASGD's eta and mu (floats)
_NUMBER_STATE = {"step": int, "mu_product": float, "eta": float, "mu": float}


class DeviceUpdate(NamedTuple):
    """One parameter's update on a CUDA device (:meth:`Optimizer._device_updates`)."""

    param: Tensor
    kernel: str       # the update kernel, "<step>_dev"
    arrays: tuple     # its arrays, in the kernel's order
    scalars: Callable  # scalars(step): the kernel's scalars for the step-th update
    hyper: Callable   # hyper(): what _step_columns reads besides the count (lr, betas)
    counter: object   # the state dict holding "step", or the count before this update


class _Rows:
    """The device memory of one layout of updates, per slot (the device, the kernel and
    the parameters' dtype: what one multi-tensor launch updates): the kernels' scalars
    (a row per parameter, of the compute dtype), the table of where each parameter's
    elements begin and of its arrays' addresses (``<step>_multi``'s), the
    :attr:`DeviceUpdate.hyper` values and, once counted on the device, the step counts
    (float32, as PyTorch keeps them)."""

    def __init__(self, work):
        sizes: dict = {}
        self.where = []
        for u in work:
            dt = u.param._data.dtype
            slot = (math_of(u.param._data), u.kernel, dt)
            sizes.setdefault(slot, []).append(u.param._data.size)
            self.where.append((slot, len(sizes[slot]) - 1))
        self.rows, self.table, self.offsets, self.hyper = {}, {}, {}, {}
        for slot, n in sizes.items():
            m, _kernel, dt = slot
            compute = np.float64 if dt == np.float64 else np.float32
            self.rows[slot] = m.empty((len(n), ROW_WIDTH), dtype=compute)  # (set each step)
            self.hyper[slot] = m.empty((len(n), 4), dtype=np.float64)
            self.offsets[slot] = np.concatenate([[0], np.cumsum(n)]).astype(np.int64)
            width = len(DEVICE_SCALAR_UPDATES[slot[1]].params)  # (arrays per tensor)
            self.table[slot] = m.empty((len(n) + 1 + len(n) * width,), dtype=np.int64)
        self.steps = None
        self.views: list = []
        self.uploaded = {}  # slot -> the table last copied to the device (its bytes)

    def count_on_device(self, work) -> None:
        """Make the device's step counts the true ones: made from the host's counts
        (or the device tensors already in the states) the first time, brought up to
        date where a state's "step" was replaced since (``load_state_dict``), and put
        in the states as 0-d views."""
        fresh = self.steps is None
        if fresh:
            host = {slot: np.zeros(len(rows), dtype=np.float32)
                    for slot, rows in self.rows.items()}
            for u, (slot, r) in zip(work, self.where):
                now = u.counter.get("step", 0) if isinstance(u.counter, dict) else u.counter
                if not isinstance(now, Tensor):
                    host[slot][r] = now
            self.steps = {slot: slot[0].asarray(host[slot]) for slot in self.rows}
            self.views = [_wrap(self.steps[slot][r]) for slot, r in self.where]
        for u, (slot, r), view in zip(work, self.where, self.views):
            if not isinstance(u.counter, dict):  # a count known when the layout began
                continue
            now = u.counter.get("step", 0)
            if now is view:
                continue
            if isinstance(now, Tensor) or not fresh:
                self.steps[slot][r] = now._data if isinstance(now, Tensor) else now
            u.counter["step"] = view


class _RequiredParameter:
    """Marks a hyper-parameter that has no default (``lr`` of an optimizer that asks)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


# the hooks of every optimizer's step (register_optimizer_step_pre_hook / _post_hook)
_global_step_pre_hooks: OrderedDict = OrderedDict()
_global_step_post_hooks: OrderedDict = OrderedDict()


def _add_hook(hooks: OrderedDict, hook):
    """``hook`` added to ``hooks``; the handle whose ``remove()`` takes it out."""
    from ..nn.modules import RemovableHandle  # noqa: PLC0415  (nn and optim: one layer)

    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def register_optimizer_step_pre_hook(hook):
    """Call ``hook(optimizer, args, kwargs)`` before every optimizer's ``step``; it may
    return ``(new_args, new_kwargs)`` for the step. Returns a handle whose ``remove()``
    unregisters it."""
    return _add_hook(_global_step_pre_hooks, hook)


def register_optimizer_step_post_hook(hook):
    """Call ``hook(optimizer, args, kwargs)`` after every optimizer's ``step``. Returns
    a handle whose ``remove()`` unregisters it."""
    return _add_hook(_global_step_post_hooks, hook)


def _with_step_hooks(step):
    """``step`` running the step hooks around it, as PyTorch wraps each optimizer class's
    ``step``: the global pre-hooks then the optimizer's, each ``hook(optimizer, args,
    kwargs)`` with ``args`` starting with the optimizer (a pre-hook may return new
    ``(args, kwargs)``); after the step the optimizer's post-hooks then the global ones."""
    @functools.wraps(step)
    def hooked(*args, **kwargs):
        self = args[0]
        pre = self.__dict__.get("_optimizer_step_pre_hooks")
        post = self.__dict__.get("_optimizer_step_post_hooks")
        if not (pre or post or _global_step_pre_hooks or _global_step_post_hooks):
            return step(*args, **kwargs)
        for hook in (*_global_step_pre_hooks.values(), *(pre or {}).values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(f"{step} must return None or a tuple of (new_args, "
                                       f"new_kwargs), but got {result}.")
        out = step(*args, **kwargs)
        for hook in (*(post or {}).values(), *_global_step_post_hooks.values()):
            hook(self, args, kwargs)
        return out
    hooked._step_hooks = True
    return hooked


class Optimizer(_live.Registered):  # (registered for gc.compile)
    """Base class of all optimizers, as ``torch.optim.Optimizer``.

    ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts that
    each hold ``"params"`` and per-group options overriding ``defaults``.

    >>> import gradcore as gc
    >>> w = gc.nn.Parameter(gc.ones(2))
    >>> opt = gc.optim.SGD([w], lr=0.5)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    Parameter containing:
    tensor([0., 0.], requires_grad=True)
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_step_hooks", False):
            cls.step = _with_step_hooks(step)

    def __init__(self, params, defaults: dict):
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict = OrderedDict()
        self.state: defaultdict = defaultdict(dict)  # parameter -> its state dict
        self.param_groups: list[dict] = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable "
                            "of Tensors or dicts, but got a Tensor")
        if isinstance(params, (set, frozenset)):
            raise TypeError("optimizer parameters need to be organized in ordered "
                            "collections, but the ordering of tensors in sets will change "
                            "between runs. Please use a list instead.")
        param_groups = list(params)
        if not param_groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(dict(group))

    # -- parameter groups -----------------------------------------------------------
    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters (a dict with ``"params"`` and optional options)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, (set, frozenset)):
            raise TypeError("optimizer parameters need to be organized in ordered "
                            "collections, but the ordering of tensors in sets will change "
                            "between runs. Please use a list instead.")
        else:
            params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some "
                                 "param names are missing")
            params = [p[1] for p in params]
            param_group["param_names"] = names
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params "
                                f"is {type(p).__module__}.{type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        param_group["params"] = params
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        if len({id(p) for p in params}) != len(params):
            raise ValueError("optimizer contains a parameter group with duplicate parameters")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        for g in self.param_groups:
            if ("param_names" in g) != ("param_names" in param_group):
                raise ValueError("all optimizer param groups should be with/without names")
        self.param_groups.append(param_group)

    # -- the step ---------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to ``None`` (default) or to zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if g.grad_fn is not None:  # a gradient built with create_graph=True
                        g = p.grad = g.detach()
                    else:
                        g.requires_grad = False
                    g._data[...] = 0
                    g._bump()

    def step(self, closure=None):
        """Update the parameters once; ``closure`` re-evaluates and returns the loss."""
        raise NotImplementedError

    def register_step_pre_hook(self, hook):
        """Call ``hook(optimizer, args, kwargs)`` before each ``step`` of this optimizer;
        it may return ``(new_args, new_kwargs)`` for the step. Returns a handle whose
        ``remove()`` unregisters it."""
        return _add_hook(self.__dict__.setdefault("_optimizer_step_pre_hooks",
                                                  OrderedDict()), hook)

    def register_step_post_hook(self, hook):
        """Call ``hook(optimizer, args, kwargs)`` after each ``step`` of this optimizer.
        Returns a handle whose ``remove()`` unregisters it."""
        return _add_hook(self.__dict__.setdefault("_optimizer_step_post_hooks",
                                                  OrderedDict()), hook)

    @staticmethod
    def _check_implementation(differentiable: bool = False) -> None:
        """PyTorch's choices of implementation (``foreach``, ``fused``, ``capturable``)
        give the same updates here, where each parameter's update is one kernel; a
        ``differentiable`` step (autograd through the update) is not offered."""
        if differentiable:
            raise NotImplementedError("differentiable=True is not supported: gradcore's "
                                      "optimizer steps run without recording a graph")

    #: Whether the optimizer's CUDA updates read their scalars from device memory
    #: (:meth:`_device_updates`): ``gc.compile`` then lets ``lr`` change between launches,
    #: and ``GradScaler`` skips a step on the device, without reading its verdict back
    _scalars_on_device = False

    @property
    def _step_supports_amp_scaling(self) -> bool:
        """Whether ``GradScaler.step`` may hand this optimizer the device's inf/NaN
        verdict (``self.found_inf``, PyTorch's attribute) rather than read it: every
        parameter's update reads its scalars from device memory."""
        return self._scalars_on_device and all(
            not isinstance(p._data, np.ndarray)
            for g in self.param_groups for p in g["params"])

    @staticmethod
    def _step_columns(steps, hyper) -> dict:
        """The columns of the update kernels' scalars that depend on the step count,
        formed on the device from ``steps`` (each row's count, this step included) and
        ``hyper`` (each row's :attr:`DeviceUpdate.hyper` values): ``{column: values}``."""
        return {}

    def _device_updates(self, work, found_inf=None) -> None:
        """Run updates on a CUDA device with their scalars in device memory.

        ``work`` lists :class:`DeviceUpdate` items: the update kernel (``<step>_dev``, see
        ``gradcore.kernels.updates.DEVICE_SCALAR_UPDATES``), its arrays, and functions
        forming its scalars on the host. Those host parts run through
        ``backend.host_work`` (now; or, while ``gc.compile`` captures the step into a
        CUDA graph, before each launch, so that a learning rate a scheduler changes and
        the step counts are read then) and end in one copy to the device per compute
        dtype; the kernels read the copies.

        With ``found_inf`` (a 0-d device tensor, nonzero when a gradient is inf or NaN:
        ``GradScaler``'s verdict) the step happens or not on the device, nothing read
        back: the kernels skip (their skip column), and the step counts, which decide
        the bias corrections, are counted on the device from then on (``state["step"]``
        becomes a 0-d device tensor, as in PyTorch's fused optimizers), the columns that
        depend on them formed there (:meth:`_step_columns`)."""
        key = tuple((id(u.param), u.kernel) for u in work)
        cache = self.__dict__.setdefault("_device_rows", {})
        entry = cache.get(key)
        if entry is None:
            if len(cache) >= 8:  # (layouts of the past: a parameter that got no .grad)
                cache.clear()
            entry = cache[key] = _Rows(work)
        counted_on_device = entry.steps is not None or found_inf is not None or any(
            isinstance(u.counter, dict) and isinstance(u.counter.get("step"), Tensor)
            for u in work)
        if counted_on_device:
            entry.count_on_device(work)

        # the tables of the arrays' addresses: fixed for this step's arrays (a graph's
        # launches run host() with the arrays it captured), so formed once here
        tables = {slot: [entry.offsets[slot]] for slot in entry.rows}
        for u, (slot, _r) in zip(work, entry.where):
            tables[slot].append(np.array([a.data.ptr for a in u.arrays],
                                         dtype=np.uint64).view(np.int64))
        tables = {slot: np.concatenate(t) for slot, t in tables.items()}
        table_bytes = {slot: t.tobytes() for slot, t in tables.items()}

        def host():
            staged = {slot: np.zeros(arr.shape, dtype=arr.dtype)
                      for slot, arr in entry.rows.items()}
            hyper = {slot: np.zeros(arr.shape, dtype=np.float64)
                     for slot, arr in entry.hyper.items()}
            for u, (slot, r) in zip(work, entry.where):
                if counted_on_device:  # (the step's columns are formed on the device)
                    values = u.scalars(1)
                    h = u.hyper()
                    hyper[slot][r, :len(h)] = h
                elif isinstance(u.counter, dict):
                    u.counter["step"] += 1
                    values = u.scalars(u.counter["step"])
                else:
                    values = u.scalars(u.counter + 1)
                staged[slot][r, :len(values)] = values
            for slot, arr in entry.rows.items():
                arr.set(staged[slot])
                if entry.uploaded.get(slot) != table_bytes[slot]:  # (the arrays moved)
                    entry.table[slot].set(tables[slot])
                    entry.uploaded[slot] = table_bytes[slot]
                if counted_on_device:
                    entry.hyper[slot].set(hyper[slot])

        backend.host_work(host)
        if counted_on_device:
            found = None if found_inf is None else found_inf._data
            for slot, rows in entry.rows.items():
                steps = entry.steps[slot]
                if found is None:
                    steps += 1
                else:
                    steps += found == 0
                    rows[:, SKIP_COLUMN] = found
                for column, values in self._step_columns(steps, entry.hyper[slot]).items():
                    rows[:, column] = values
        arrays: dict = {}
        for u, (slot, _r) in zip(work, entry.where):
            arrays.setdefault(slot, []).append(u.arrays)
        for slot, rows in entry.rows.items():  # one launch per slot (``<step>_multi``)
            m, kernel, _dtype = slot
            getattr(m, kernel[:-len("_dev")] + "_multi")(entry.table[slot], rows,
                                                         arrays[slot])
        for u in work:
            u.param._bump()

    def _device_state(self) -> list:
        """The device memory that the multi-tensor updates carry from one step to the
        next outside the tensors the step's Python reaches: the step counts counted on
        the device (:class:`_Rows`; their 0-d views sit in ``state["step"]``, which the
        step does not read through). A CUDA graph of the step writes them
        (:mod:`gradcore._live`). The rows of scalars, their inputs and the tables of
        addresses are not state: each launch sets them from the host first (and a table
        put back behind the cache of what was uploaded would point at old arrays)."""
        arrays = []
        for entry in self.__dict__.get("_device_rows", {}).values():
            if entry.steps is not None:
                arrays.extend(entry.steps.values())
        return arrays

    @staticmethod
    def _evaluate(closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # -- state dicts ------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The optimizer's state, in PyTorch's layout.

        ``{"state": {index: {name: value}}, "param_groups": [{option: value, ...,
        "params": [index, ...]}]}``: parameters are numbered in the order of the groups;
        buffers are the optimizer's own tensors (not copies, as in PyTorch: save the
        dict or copy it before stepping further), counters are Python numbers.
        """
        index_of: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index_of.setdefault(id(p), len(index_of))
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {}
        for p, s in self.state.items():
            key = index_of[id(p)] if isinstance(p, Tensor) else p
            state[key] = dict(s)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Load a state made by :meth:`state_dict` (possibly through ``gc.save``/``gc.load``).

        Buffers are copied onto each parameter's device and floating dtype, so the
        source dict is never aliased.  Raises ``ValueError`` naming the mismatch when the
        state dict does not fit this optimizer.
        """
        if not isinstance(state_dict, dict) or "state" not in state_dict \
                or "param_groups" not in state_dict:
            raise ValueError("an optimizer state dict is a dict with keys 'state' and "
                             f"'param_groups', got {_describe(state_dict)}")
        saved_groups = state_dict["param_groups"]
        groups = self.param_groups
        name = type(self).__name__
        if len(saved_groups) != len(groups):
            raise ValueError(f"loaded state dict has {len(saved_groups)} parameter group(s) "
                             f"but this {name} has {len(groups)}")
        for i, (saved, group) in enumerate(zip(saved_groups, groups)):
            n_saved, n_have = len(saved["params"]), len(group["params"])
            if n_saved != n_have:
                raise ValueError(f"loaded state dict contains a parameter group that doesn't "
                                 f"match the size of optimizer's group: parameter group {i} "
                                 f"holds {n_saved} parameter(s) in the state dict but "
                                 f"{n_have} in this {name}")
            missing = [k for k in self.defaults if k not in saved]
            if missing:
                raise ValueError(f"loaded state dict's parameter group {i} lacks the "
                                 f"option(s) {missing} of {name}: was it saved from another "
                                 "kind of optimizer?")

        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        new_state: defaultdict = defaultdict(dict)
        for key, value in state_dict["state"].items():
            param = id_map.get(key)
            if param is None:
                new_state[key] = copy.deepcopy(value)
                continue
            if not isinstance(value, dict):
                raise ValueError(f"loaded state dict's state for parameter {key} is "
                                 f"{_describe(value)}, not a dict")
            new_state[param] = {k: _cast_state(param, key, k, v, self._state_shape(param, k))
                                for k, v in value.items()}

        self.state = new_state
        new_groups = []
        for saved, group in zip(saved_groups, groups):
            new_group = {k: copy.deepcopy(v) for k, v in saved.items() if k != "params"}
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                new_group["param_names"] = group["param_names"]
            new_groups.append(new_group)
        self.param_groups = new_groups

    @staticmethod
    def _state_shape(param: Tensor, key: str) -> tuple:
        """The shape of the state tensor ``key`` of ``param`` (``load_state_dict``
        checks it): the parameter's, unless an optimizer keeps another (Adafactor's
        factors)."""
        return tuple(param.shape)

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(k for k in group if k != "params"):
                lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)


def _cast_state(param: Tensor, index, key: str, value, shape: tuple):
    """A copy of a saved state value, made ready for ``param`` (its device and dtype);
    a tensor of ``shape``."""
    if not isinstance(value, Tensor):
        return copy.deepcopy(value)
    if key in _NUMBER_STATE:  # PyTorch keeps these in 0-d tensors; here they are numbers
        return _NUMBER_STATE[key](value.item())
    if value.ndim and tuple(value.shape) != shape:
        what = "the parameter has" if shape == tuple(param.shape) else "it should have"
        raise ValueError(f"loaded state dict's '{key}' for parameter {index} has shape "
                         f"{tuple(value.shape)} but {what} shape {shape}")
    dtype = param.dtype if param.dtype.is_floating_point else value.dtype
    value = value.detach()
    if value.device == param.device and value.dtype == dtype:
        return value.clone()  # never alias the caller's state dict
    return value.to(device=param.device, dtype=dtype)


def _describe(obj) -> str:
    if isinstance(obj, dict):
        return f"a dict with keys {sorted(map(str, obj))}"
    return f"a {type(obj).__name__}"
