"""Mixed precision: ``gc.autocast`` and ``gc.amp.GradScaler``, PyTorch's ``torch.amp``.

``autocast(device_type, dtype=...)`` runs matrix products and ``linear`` in the
block's dtype (float16) and softmax, log_softmax, layer_norm and the losses in
float32, casting their operands on the way in (differentiably: gradients flow back in
the operands' own dtypes). ``GradScaler`` scales the loss so that float16 gradients do
not underflow, unscales them before the optimizer steps, skips the steps whose
gradients hold an inf or a NaN, and adapts the scale, as PyTorch's does.

>>> import gradcore as gc
>>> w = gc.nn.Parameter(gc.ones(4, 4))
>>> with gc.autocast("cpu", dtype=gc.float16):
...     y = gc.ones(2, 4) @ w
>>> y.dtype, w.dtype
(gradcore.float16, gradcore.float32)
"""

from __future__ import annotations

import functools
import warnings

from . import _live, backend, dtypes
from .autograd import no_grad
from .autograd.grad_mode import autocast_blocks as _blocks
from .autograd.grad_mode import state as _state
from .creation import full
from .tensor import Tensor

__all__ = ["autocast", "GradScaler", "is_autocast_available", "custom_fwd", "custom_bwd"]

# PyTorch's default autocast dtype of each device type
_DEFAULT_DTYPE = {"cuda": "float16", "cpu": "bfloat16"}


def is_autocast_available(device_type: str) -> bool:
    """Whether ``gc.autocast`` supports ``device_type`` (``"cpu"`` and ``"cuda"``)."""
    return device_type in _DEFAULT_DTYPE


class autocast:
    """``with gc.autocast("cuda"):`` (or ``gc.amp.autocast``, ``gc.cuda.amp.autocast()``):
    PyTorch's mixed precision region; also a decorator. ``dtype`` defaults to PyTorch's
    for the device (float16 on CUDA; bfloat16 on the CPU, which gradcore lacks: pass
    ``dtype=gc.float16`` there). ``enabled=False`` turns an enclosing block off."""

    def __init__(self, device_type: str, dtype=None, enabled: bool = True,
                 cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: "
                             f"`{type(device_type)}`")
        if device_type not in _DEFAULT_DTYPE:
            raise RuntimeError(f"User specified an unsupported autocast device_type "
                               f"'{device_type}'")
        self.device = device_type
        dtype = _DEFAULT_DTYPE[device_type] if dtype is None else dtype
        if not enabled:  # (the dtype of a block that is off is never used)
            dtype = "float32" if dtype in ("bfloat16", dtypes.bfloat16) else dtype
        self.fast_dtype = dtypes.to_dtype(dtype)
        if enabled and self.fast_dtype not in (dtypes.float16, dtypes.float32,
                                               dtypes.float64):
            raise RuntimeError(f"In {device_type} autocast, gradcore supports float16 as "
                               f"the autocast dtype, got {self.fast_dtype!r}")
        self._enabled = bool(enabled)

    def __enter__(self):
        self._prev = _state.autocast
        table = dict(self._prev or {})
        if self._enabled:
            table[self.device] = self.fast_dtype
        else:
            table.pop(self.device, None)
        _state.autocast = table or None
        _blocks[0] += 1
        return self

    def __exit__(self, *exc):
        _state.autocast = self._prev
        _blocks[0] -= 1
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled):
                return fn(*args, **kwargs)
        return run


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether an ``autocast`` block is on for ``device_type`` here (``"cuda"`` when
    not given, as in PyTorch)."""
    table = _state.autocast
    return bool(table) and (device_type or "cuda") in table


def get_autocast_dtype(device_type: str):
    """The dtype an ``autocast`` block runs ``device_type``'s products in: the enclosing
    block's, else PyTorch's default for the device (float16 on CUDA, bfloat16 on the
    CPU)."""
    if not is_autocast_available(device_type):
        raise RuntimeError(f"unsupported autocast device_type '{device_type}'")
    table = _state.autocast or {}
    return table.get(device_type) or getattr(dtypes, _DEFAULT_DTYPE[device_type])


def is_autocast_cpu_enabled() -> bool:
    """``is_autocast_enabled("cpu")``, PyTorch's deprecated spelling (with its warning)."""
    warnings.warn("torch.is_autocast_cpu_enabled() is deprecated. Please use "
                  "torch.is_autocast_enabled('cpu') instead.", DeprecationWarning,
                  stacklevel=2)
    return is_autocast_enabled("cpu")


def get_autocast_cpu_dtype():
    """``get_autocast_dtype("cpu")``, PyTorch's deprecated spelling (with its warning)."""
    warnings.warn("torch.get_autocast_cpu_dtype() is deprecated. Please use "
                  "torch.get_autocast_dtype('cpu') instead.", DeprecationWarning,
                  stacklevel=2)
    return get_autocast_dtype("cpu")


def get_autocast_gpu_dtype():
    """``get_autocast_dtype("cuda")``, PyTorch's deprecated spelling (with its warning)."""
    warnings.warn("torch.get_autocast_gpu_dtype() is deprecated. Please use "
                  "torch.get_autocast_dtype('cuda') instead.", DeprecationWarning,
                  stacklevel=2)
    return get_autocast_dtype("cuda")


def _cast(value, device_type: str, dtype):
    """Floating tensors of ``device_type`` in ``value`` (nested lists, tuples, dicts)
    cast to ``dtype``; everything else as it is (PyTorch's ``torch.amp._cast``)."""
    if isinstance(value, Tensor):
        return value.to(dtype) if value.is_floating_point() and \
            value.device.type == device_type else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast(v, device_type, dtype) for k, v in value.items()}
    return value


def _check_device_type(device_type) -> None:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: "
                         f"`{type(device_type)}`")


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorator for the ``forward`` of a ``gc.autograd.Function`` under ``autocast``
    (PyTorch's ``torch.amp.custom_fwd``). Inside an enabled block, ``cast_inputs`` (a
    dtype) casts the floating tensors among the arguments to it and runs ``forward``
    with autocast off; without it ``forward`` runs in the block's state. Outside a
    block it changes nothing. ``custom_bwd`` then runs ``backward`` in the state
    ``forward`` ran in.

    Args:
        fwd: the ``forward`` staticmethod (None: a decorator taking the keywords).
        device_type: ``"cuda"`` or ``"cpu"``.
        cast_inputs: the dtype to cast floating inputs to, or None.
    """
    _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type,
                                 cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if is_autocast_enabled(device_type):
            with autocast(device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs),
                           **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorator for the ``backward`` of a ``gc.autograd.Function`` whose ``forward``
    has ``custom_fwd``: runs it with the autocast state and dtype ``forward`` ran with
    (PyTorch's ``torch.amp.custom_bwd``).

    Args:
        bwd: the ``backward`` staticmethod (None: a decorator taking ``device_type``).
        device_type: ``"cuda"`` or ``"cpu"``.
    """
    _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd


def _older_spellings(device_type: str, module: str):
    """PyTorch's deprecated ``torch.<device_type>.amp.autocast`` and ``GradScaler``: the
    ``gc.amp`` classes for ``device_type``, each saying so with PyTorch's FutureWarning
    (``gc.cuda.amp`` and ``gc.cpu.amp``; ``module`` is where they are public)."""

    def deprecated(name):
        warnings.warn(f"`torch.{device_type}.amp.{name}(args...)` is deprecated. Please use "
                      f"`torch.amp.{name}('{device_type}', args...)` instead.",
                      FutureWarning, stacklevel=3)

    class Autocast(autocast):
        __doc__ = (f'``gc.amp.autocast("{device_type}", ...)``: '
                   f'{_DEFAULT_DTYPE[device_type]} unless ``dtype`` says otherwise.')

        def __init__(self, enabled: bool = True, dtype=None, cache_enabled: bool = True):
            deprecated("autocast")
            super().__init__(device_type, dtype=dtype or _DEFAULT_DTYPE[device_type],
                             enabled=enabled, cache_enabled=cache_enabled)

    class Scaler(GradScaler):
        __doc__ = f'``gc.amp.GradScaler("{device_type}", ...)`` with the same arguments.'

        def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                     backoff_factor: float = 0.5, growth_interval: int = 2000,
                     enabled: bool = True):
            deprecated("GradScaler")
            super().__init__(device_type, init_scale, growth_factor, backoff_factor,
                             growth_interval, enabled)

    for cls, name in ((Autocast, "autocast"), (Scaler, "GradScaler")):
        cls.__module__, cls.__name__, cls.__qualname__ = module, name, name
        cls.__init__.__doc__ = "The arguments of the ``gc.amp`` class, but the device type."
    return Autocast, Scaler


def _leaves(x, fn):
    if isinstance(x, Tensor):
        return fn(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_leaves(v, fn) for v in x)
    if isinstance(x, dict):
        return {k: _leaves(v, fn) for k, v in x.items()}
    raise ValueError("outputs must be a Tensor or an iterable of Tensors")


_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"


class GradScaler(_live.Registered):  # (registered for gc.compile)
    """Dynamic loss scaling for float16 training: PyTorch's ``torch.amp.GradScaler``.

    ``scaler.scale(loss).backward()``; ``scaler.step(optimizer)`` unscales the
    gradients (unless ``unscale_`` did) and steps unless one of them is inf or NaN;
    ``scaler.update()`` halves the scale after a skipped step and doubles it after
    ``growth_interval`` steps without one. Disabled (``enabled=False``, or CUDA asked for
    and unavailable, with a warning), every method passes through.

    As in PyTorch, the scale and the count of good steps live on the device of the
    first output scaled, and the inf/NaN verdict stays there: ``update()`` adapts the
    scale there, and ``step()`` hands the verdict to optimizers that take it (SGD, Adam
    and AdamW on CUDA skip the step on the device), so a step reads nothing back to the
    host (``gc.compile`` can capture it). Other optimizers, and all on the CPU, are
    stepped or not after one read of the verdict.
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True):
        self._device = str(device)
        self._enabled = bool(enabled)
        if self._enabled and self._device.startswith("cuda") and \
                not backend.cuda_is_available():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not "
                          "available.  Disabling.", stacklevel=2)
            self._enabled = False
        if growth_factor <= 1.0:
            raise ValueError("The growth factor must be > 1.0.")
        if backoff_factor >= 1.0:
            raise ValueError("The backoff factor must be < 1.0.")
        self._init_scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._init_growth_tracker = 0
        self._scale = None           # 0-d float32 tensor, made by the first scale()
        self._growth_tracker = None  # 0-d int32 tensor: good steps since the scale changed
        self._per_optimizer: dict[int, dict] = {}

    # -- scaling ------------------------------------------------------------------------
    def scale(self, outputs):
        """``outputs`` (a tensor or nested lists/tuples of them) times the scale."""
        if not self._enabled:
            return outputs

        def one(t):
            if self._scale is None:
                self._scale = full((), self._init_scale, dtype=dtypes.float32,
                                   device=t.device)
                self._growth_tracker = full((), self._init_growth_tracker,
                                            dtype=dtypes.int32, device=t.device)
            return t * self._scale.to(t.device)
        return _leaves(outputs, one)

    def _device_state(self) -> list:
        """The scale and the count of good steps, on the device (:mod:`gradcore._live`)."""
        return [t._data for t in (self._scale, self._growth_tracker) if t is not None]

    def _check_scale(self, funcname: str) -> None:
        if self._scale is None:
            raise AssertionError(
                f"Attempted {funcname} but _scale is None.  This may indicate your script "
                "did not use scaler.scale(loss or outputs) earlier in the iteration.")

    def _state(self, optimizer) -> dict:
        return self._per_optimizer.setdefault(id(optimizer), {"stage": _READY,
                                                              "found_inf": None})

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale, in place, noting on the device
        whether any is inf or NaN (once per optimizer between two ``update()`` calls)."""
        if not self._enabled:
            return
        self._check_scale("unscale_")
        state = self._state(optimizer)
        if state["stage"] == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer "
                               "since the last update().")
        if state["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        with no_grad():
            inv = self._scale.double().reciprocal().float()  # as PyTorch: in float32
            finite = None  # "every gradient is finite", kept on the device
            for group in optimizer.param_groups:
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    if g.dtype == dtypes.float16:  # (PyTorch's: keep float32 weights)
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    ok = g.isfinite().all()
                    finite = ok if finite is None else finite.logical_and(ok)
                    g.mul_(inv.to(g.device))
        state["found_inf"] = None if finite is None else finite.logical_not()
        state["stage"] = _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)`` after unscaling, unless a gradient is inf
        or NaN (then the step is skipped and None returned)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale("step")
        state = self._state(optimizer)
        if state["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == _READY:
            self.unscale_(optimizer)
        found = state["found_inf"]
        if found is None:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if getattr(optimizer, "_step_supports_amp_scaling", False):
            # the optimizer skips on the device (PyTorch's attributes for fused steps)
            optimizer.grad_scale, optimizer.found_inf = None, found
            try:
                retval = optimizer.step(*args, **kwargs)
            finally:
                del optimizer.grad_scale, optimizer.found_inf
        elif not found.item():  # one read of the device's verdict
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Adapt the scale to the steps since the last update (or set ``new_scale``)."""
        if not self._enabled:
            return
        self._check_scale("update")
        with no_grad():
            if new_scale is not None:
                if isinstance(new_scale, Tensor):
                    if new_scale.numel() != 1 or new_scale.requires_grad:
                        raise ValueError("new_scale should be a float or a 1-element "
                                         "torch.cuda.FloatTensor or torch.FloatTensor with "
                                         "requires_grad=False.")
                    self._scale.copy_(new_scale.reshape(()))
                else:
                    self._scale.fill_(float(new_scale))
            else:
                found = [s["found_inf"] for s in self._per_optimizer.values()
                         if s["found_inf"] is not None]
                if not found:
                    raise AssertionError("No inf checks were recorded prior to update.")
                any_found = found[0]
                for f in found[1:]:
                    any_found = any_found.logical_or(f.to(any_found.device))
                self._update_scale(any_found.to(self._scale.device))
        self._per_optimizer = {}

    def _update_scale(self, found) -> None:
        """PyTorch's ``_amp_update_scale_``, on the scale's device: back off after a
        step with an inf or NaN, grow (when the result is finite) after
        ``growth_interval`` good steps in a row."""
        scale, tracker = self._scale, self._growth_tracker
        successful = tracker + 1
        grow = successful == self._growth_interval
        grown = (scale.double() * self._growth_factor).float()
        backed_off = (scale.double() * self._backoff_factor).float()
        kept = grown.where(grow.logical_and(grown.isfinite()), scale)
        scale.copy_(backed_off.where(found, kept))
        tracker.copy_(successful.where(found.logical_or(grow).logical_not(),
                                       successful.new_zeros(())))

    # -- state ------------------------------------------------------------------------
    def get_scale(self) -> float:
        """The current scale the loss is multiplied by (1.0 when disabled); a read of
        the device's value."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale.item()

    def _get_growth_tracker(self) -> int:
        if self._growth_tracker is None:
            return self._init_growth_tracker
        return int(self._growth_tracker.item())

    def get_growth_factor(self) -> float:
        """What the scale is multiplied by after ``growth_interval`` good steps."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Set the growth factor."""
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        """What the scale is multiplied by after a step with an inf or NaN gradient."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Set the backoff factor."""
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        """The number of steps in a row without inf or NaN after which the scale grows."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Set the growth interval."""
        self._growth_interval = int(new_interval)

    def is_enabled(self) -> bool:
        """Whether the scaler scales (``enabled=True`` and its device can use it)."""
        return self._enabled

    def state_dict(self) -> dict:
        """PyTorch's layout; empty when disabled."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the scale, factors, interval and good-step count of ``state_dict()``
        (nothing when disabled; an empty dict raises)."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was "
                               "saved from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(self._init_scale)
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(self._init_growth_tracker)
