"""Averaged SGD, with PyTorch's defaults and update rule (``torch.optim.ASGD``)."""

from __future__ import annotations

import numpy as np

from ..autograd import no_grad
from ..backend import math_of
from ..creation import zeros_like
from ..kernels.updates import asgd_schedule
from .optimizer import Optimizer

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """Averaged stochastic gradient descent (Polyak & Juditsky): SGD with a decaying
    rate ``eta = lr / (1 + lambd * lr * step) ** alpha`` and a decay of the weights by
    ``1 - lambd * eta``, keeping a running average ``ax`` of the parameter from step
    ``t0`` on (``mu = 1 / max(1, step - t0)``).

    Arguments as PyTorch's: ``lr=1e-2``, ``lambd=1e-4``, ``alpha=0.75``, ``t0=1e6``,
    ``weight_decay=0`` (L2), ``maximize=False``; ``foreach`` and ``capturable`` are
    accepted (every update is one kernel per parameter here), ``differentiable=True``
    is not supported.

    State per parameter, as in PyTorch: ``step`` (an int here), ``eta`` and ``mu``
    (Python floats rounded to float32 here, float32 0-d tensors in PyTorch) and ``ax``
    (the average).

    >>> import gradcore as gc
    >>> w = gc.nn.Parameter(gc.tensor([1.0, -1.0]))
    >>> opt = gc.optim.ASGD([w], lr=0.1, lambd=0.0)
    >>> (w * w).sum().backward()
    >>> opt.step()  # w - 0.1 * 2w
    >>> w
    Parameter containing:
    tensor([ 0.8000, -0.8000], requires_grad=True)
    """

    def __init__(self, params, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        self._check_implementation(differentiable)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter with a gradient; ``closure`` re-evaluates and
        returns the loss."""
        loss = self._evaluate(closure)
        with no_grad():
            for group in self.param_groups:
                lr, lambd = group["lr"], group["lambd"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if not state:
                        state["step"] = 0
                        state["eta"] = float(np.float32(lr))  # (a float32 in PyTorch)
                        state["mu"] = 1.0
                        state["ax"] = zeros_like(p)
                    state["step"] += 1
                    math_of(p._data).asgd_update(
                        p._data, p.grad._data, state["ax"]._data, eta=state["eta"],
                        mu=state["mu"], lambd=lambd, weight_decay=group["weight_decay"],
                        maximize=group["maximize"])
                    p._bump()
                    state["eta"], state["mu"] = asgd_schedule(
                        state["step"], lr, lambd, group["alpha"], group["t0"])
        return loss
