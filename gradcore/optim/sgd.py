"""Stochastic gradient descent, with PyTorch's update rule (``torch.optim.SGD``)."""

from __future__ import annotations

import numpy as np

from ..autograd import no_grad
from ..backend import math_of
from ..creation import empty_like, zeros_like
from ..kernels.updates import UPDATE_KERNELS, sgd_kernel_scalars
from .optimizer import DeviceUpdate, Optimizer

__all__ = ["SGD"]


class SGD(Optimizer):
    """SGD with optional momentum, dampening, weight decay and Nesterov momentum.

    As in PyTorch, the momentum buffer starts as the first (weight-decayed) gradient,
    and the update is ``p -= lr * d`` where ``d`` is the gradient, the momentum buffer,
    or for Nesterov ``g + momentum * buf``.  State per parameter: ``momentum_buffer``
    (when ``momentum != 0``). ``foreach`` and ``fused`` are accepted (every update is one
    kernel per parameter here); ``differentiable=True`` is not supported.

    >>> import gradcore as gc
    >>> w = gc.nn.Parameter(gc.tensor([1.0]))
    >>> opt = gc.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> for _ in range(2):
    ...     opt.zero_grad()
    ...     (w * w).sum().backward()
    ...     opt.step()
    >>> round(w.item(), 4)  # 1 - 0.2 = 0.8; then buf = 0.9 * 2 + 1.6 = 3.4: 0.8 - 0.34
    0.46
    """

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False,
                 fused: bool | None = None):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        self._check_implementation(differentiable)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    _scalars_on_device = True

    def step(self, closure=None):
        loss = self._evaluate(closure)
        on_device = []  # the CUDA parameters' updates: scalars in device memory
        with no_grad():
            for group in self.param_groups:
                momentum = group["momentum"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    buf = None
                    first = False
                    if momentum != 0:
                        state = self.state[p]
                        buf = state.get("momentum_buffer")
                        if buf is None:
                            # (zeros where GradScaler may skip this first step on the
                            # device: the buffer is then saved before it is written)
                            new = empty_like if getattr(self, "found_inf", None) is None \
                                else zeros_like
                            buf = state["momentum_buffer"] = new(p, requires_grad=False)
                            first = True
                    if not isinstance(p._data, np.ndarray):
                        arrays = (p._data, p.grad._data) + (() if buf is None else (buf._data,))
                        on_device.append(DeviceUpdate(
                            p, "sgd_step_dev" if buf is None else "sgd_momentum_step_dev",
                            arrays, _sgd_scalars(group, first), tuple, 0 if first else 1))
                        continue
                    math_of(p._data).sgd_update(
                        p._data, p.grad._data, None if buf is None else buf._data,
                        lr=group["lr"], momentum=momentum, dampening=group["dampening"],
                        weight_decay=group["weight_decay"], nesterov=group["nesterov"],
                        maximize=group["maximize"], first_step=first)
                    p._bump()
            if on_device:
                self._device_updates(on_device, getattr(self, "found_inf", None))
        return loss

    @staticmethod
    def _step_columns(steps, hyper) -> dict:
        # counted on the device (a step GradScaler skipped is not counted), the first
        # step that ran is the one that starts the momentum buffer
        return {_FIRST: steps == 1}


_FIRST = UPDATE_KERNELS["sgd_momentum_step"].scalars.index("first")


def _sgd_scalars(group, first):
    """The scalars of a step, formed from the group's options when the step runs."""
    def scalars(_step):
        return sgd_kernel_scalars(group["lr"], group["momentum"], group["dampening"],
                                  group["weight_decay"], group["nesterov"], group["maximize"],
                                  first)
    return scalars
