"""Adagrad, with PyTorch's defaults and update rule (``torch.optim.Adagrad``)."""

from __future__ import annotations

from ..autograd import no_grad
from ..backend import math_of
from ..creation import full_like
from .optimizer import Optimizer

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.): each step divides the gradient by the root of the sum of
    all its squares so far; the rate decays as ``lr / (1 + (step - 1) * lr_decay)``.

    Arguments as PyTorch's: ``lr=1e-2``, ``lr_decay=0``, ``weight_decay=0`` (L2),
    ``initial_accumulator_value=0`` (the sums' start), ``eps=1e-10``,
    ``maximize=False``; ``foreach`` and ``fused`` are accepted (every update is one
    kernel per parameter here), ``differentiable=True`` is not supported.

    As in PyTorch, the state of every parameter is made by the constructor: ``step``
    (an int here, a 0-d tensor in PyTorch) and ``sum``; like PyTorch, every parameter's
    sum starts at the constructor's ``initial_accumulator_value``, whatever its group
    says.

    >>> import gradcore as gc
    >>> w = gc.nn.Parameter(gc.tensor([1.0, -2.0]))
    >>> opt = gc.optim.Adagrad([w], lr=0.5)
    >>> (w * w).sum().backward()
    >>> opt.step()  # the first step: lr * g / sqrt(g * g) = lr * sign(g)
    >>> w
    Parameter containing:
    tensor([ 0.5000, -1.5000], requires_grad=True)
    """

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: "
                             f"{initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        self._check_implementation(differentiable)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value,
                        maximize=maximize)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p)

    def _init_state(self, p) -> dict:
        state = self.state[p]
        state["step"] = 0
        state["sum"] = full_like(p, self.defaults["initial_accumulator_value"])
        return state

    def step(self, closure=None):
        """One update of every parameter with a gradient; ``closure`` re-evaluates and
        returns the loss."""
        loss = self._evaluate(closure)
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p] or self._init_state(p)  # (added groups)
                    state["step"] += 1
                    math_of(p._data).adagrad_update(
                        p._data, p.grad._data, state["sum"]._data, step=state["step"],
                        lr=group["lr"], eps=group["eps"],
                        weight_decay=group["weight_decay"], lr_decay=group["lr_decay"],
                        maximize=group["maximize"])
                    p._bump()
        return loss
