"""Adam and AdamW, with PyTorch's defaults and update rules (``torch.optim.Adam/AdamW``)."""

from __future__ import annotations

import numpy as np

from ..autograd import no_grad
from ..backend import math_of
from ..creation import zeros_like
from ..kernels.updates import UPDATE_KERNELS, adam_kernel_scalars, adam_scalars
from .optimizer import DeviceUpdate, Optimizer

__all__ = ["Adam", "AdamW"]


def _check_adam_options(lr, betas, eps, weight_decay) -> None:
    """PyTorch's checks of the options Adam and its kin share, in PyTorch's order."""
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


class Adam(Optimizer):
    """Adam (Kingma & Ba), optionally AMSGrad, L2 or (``decoupled_weight_decay``) AdamW decay.

    State per parameter, as in PyTorch: ``step`` (an int here, a 0-d tensor in
    PyTorch), ``exp_avg``, ``exp_avg_sq`` and, with ``amsgrad``, ``max_exp_avg_sq``.
    ``foreach``, ``capturable`` and ``fused`` are accepted (every update is one kernel
    per parameter here); ``differentiable=True`` is not supported.

    >>> import gradcore as gc
    >>> w = gc.nn.Parameter(gc.tensor([1.0, -1.0]))
    >>> opt = gc.optim.Adam([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()  # the first step moves every weight by lr against its gradient's sign
    >>> w
    Parameter containing:
    tensor([ 0.9000, -0.9000], requires_grad=True)
    """

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False):
        _check_adam_options(lr, betas, eps, weight_decay)
        self._check_implementation(differentiable)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    _scalars_on_device = True

    def step(self, closure=None):
        loss = self._evaluate(closure)
        on_device = []  # the CUDA parameters' updates: scalars in device memory
        with no_grad():
            for group in self.param_groups:
                beta1, beta2 = group["betas"]
                amsgrad = group["amsgrad"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if not state:
                        state["step"] = 0
                        state["exp_avg"] = zeros_like(p)
                        state["exp_avg_sq"] = zeros_like(p)
                        if amsgrad:
                            state["max_exp_avg_sq"] = zeros_like(p)
                    elif amsgrad and "max_exp_avg_sq" not in state:
                        raise RuntimeError(
                            "amsgrad=True but the optimizer state of a parameter has no "
                            "'max_exp_avg_sq' (was it loaded from a state dict saved with "
                            "amsgrad=False?)")
                    if not isinstance(p._data, np.ndarray):
                        arrays = (p._data, p.grad._data, state["exp_avg"]._data,
                                  state["exp_avg_sq"]._data)
                        if amsgrad:
                            arrays += (state["max_exp_avg_sq"]._data,)
                        on_device.append(DeviceUpdate(
                            p, "adam_amsgrad_step_dev" if amsgrad else "adam_step_dev",
                            arrays, _adam_scalars(group, p._data.dtype),
                            _adam_hyper(group), state))
                        continue
                    state["step"] += 1
                    vmax = state["max_exp_avg_sq"]._data if amsgrad else None
                    math_of(p._data).adam_update(
                        p._data, p.grad._data, state["exp_avg"]._data, state["exp_avg_sq"]._data,
                        vmax, step=state["step"], lr=group["lr"], beta1=beta1, beta2=beta2,
                        eps=group["eps"], weight_decay=group["weight_decay"],
                        amsgrad=amsgrad, maximize=group["maximize"],
                        decoupled_weight_decay=group["decoupled_weight_decay"])
                    p._bump()
            if on_device:
                self._device_updates(on_device, getattr(self, "found_inf", None))
        return loss

    @staticmethod
    def _step_columns(steps, hyper) -> dict:
        step_size, bias_correction2_sqrt = adam_scalars(steps, hyper[:, 0], hyper[:, 1],
                                                        hyper[:, 2])
        return {_NEG_STEP_SIZE: -step_size, _BIAS_CORRECTION2_SQRT: bias_correction2_sqrt}


_NEG_STEP_SIZE, _BIAS_CORRECTION2_SQRT = (
    UPDATE_KERNELS["adam_step"].scalars.index(n)
    for n in ("neg_step_size", "bias_correction2_sqrt"))


def _adam_scalars(group, dtype):
    """The scalars of the step-th update, formed when it runs: the group's options read
    then (a learning rate a scheduler changed)."""
    def scalars(step):
        beta1, beta2 = group["betas"]
        return adam_kernel_scalars(dtype, step, group["lr"], beta1, beta2,
                                   group["eps"], group["weight_decay"], group["maximize"],
                                   group["decoupled_weight_decay"])
    return scalars


def _adam_hyper(group):
    """What the step's columns need besides the count (:meth:`Adam._step_columns`)."""
    def hyper():
        return (group["lr"], *group["betas"])
    return hyper


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): PyTorch's ``AdamW``.

    Before each update, ``p *= 1 - lr * weight_decay``; default ``weight_decay=1e-2``.
    """

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         differentiable=differentiable, decoupled_weight_decay=True)

    def load_state_dict(self, state_dict: dict) -> None:
        super().load_state_dict(state_dict)
        for group in self.param_groups:  # AdamW always decouples, as in PyTorch
            group["decoupled_weight_decay"] = True
