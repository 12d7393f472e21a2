"""Adadelta, with PyTorch's defaults and update rule (``torch.optim.Adadelta``)."""

from __future__ import annotations

from ..autograd import no_grad
from ..backend import math_of
from ..creation import zeros_like
from .optimizer import Optimizer

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta (Zeiler): steps scaled by the ratio of the roots of running averages of
    the squared updates and the squared gradients, times ``lr`` (1.0 by default).

    Arguments as PyTorch's: ``lr=1.0``, ``rho=0.9`` (the averages' smoothing),
    ``eps=1e-6``, ``weight_decay=0`` (L2), ``maximize=False``; ``foreach`` and
    ``capturable`` are accepted (every update is one kernel per parameter here),
    ``differentiable=True`` is not supported.

    State per parameter, as in PyTorch: ``step`` (an int here, a 0-d tensor in
    PyTorch), ``square_avg`` and ``acc_delta``.

    >>> import gradcore as gc
    >>> w = gc.nn.Parameter(gc.tensor([1.0]))
    >>> opt = gc.optim.Adadelta([w], lr=1.0, rho=0.9, eps=1e-6)
    >>> (w * w).sum().backward()
    >>> opt.step()  # sqrt(eps) / sqrt(0.1 * g * g + eps) * g: about sqrt(10 * eps)
    >>> round(1.0 - w.item(), 5)
    0.00316
    """

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        self._check_implementation(differentiable)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter with a gradient; ``closure`` re-evaluates and
        returns the loss."""
        loss = self._evaluate(closure)
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if not state:
                        state["step"] = 0
                        state["square_avg"] = zeros_like(p)
                        state["acc_delta"] = zeros_like(p)
                    state["step"] += 1
                    math_of(p._data).adadelta_update(
                        p._data, p.grad._data, state["square_avg"]._data,
                        state["acc_delta"]._data, lr=group["lr"], rho=group["rho"],
                        eps=group["eps"], weight_decay=group["weight_decay"],
                        maximize=group["maximize"])
                    p._bump()
        return loss
