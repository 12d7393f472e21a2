"""Rprop, with PyTorch's defaults and update rule (``torch.optim.Rprop``)."""

from __future__ import annotations

from ..autograd import no_grad
from ..backend import math_of
from ..creation import full_like, zeros_like
from .optimizer import Optimizer

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Resilient backpropagation: each element moves by its own step size against the
    sign of its gradient; the step size grows by ``etas[1]`` while the gradient keeps
    its sign, shrinks by ``etas[0]`` when it flips (and that step is skipped), clamped
    to ``step_sizes``.

    Arguments as PyTorch's: ``lr=1e-2`` (the first step size), ``etas=(0.5, 1.2)``,
    ``step_sizes=(1e-6, 50)``, keyword-only ``maximize=False``; ``capturable`` and
    ``foreach`` are accepted (every update is one kernel per parameter here),
    ``differentiable=True`` is not supported.

    State per parameter, as in PyTorch: ``step`` (an int here, a 0-d tensor in
    PyTorch), ``prev`` (the last gradient used) and ``step_size``.

    >>> import gradcore as gc
    >>> w = gc.nn.Parameter(gc.tensor([1.0, -1.0]))
    >>> opt = gc.optim.Rprop([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()  # the first step moves every weight by lr against its gradient's sign
    >>> w
    Parameter containing:
    tensor([ 0.9000, -0.9000], requires_grad=True)
    """

    def __init__(self, params, lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        self._check_implementation(differentiable)
        defaults = dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes),
                        maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter with a gradient; ``closure`` re-evaluates and
        returns the loss."""
        loss = self._evaluate(closure)
        with no_grad():
            for group in self.param_groups:
                etaminus, etaplus = group["etas"]
                step_size_min, step_size_max = group["step_sizes"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if not state:
                        state["step"] = 0
                        state["prev"] = zeros_like(p)
                        state["step_size"] = full_like(p.grad, group["lr"])
                    state["step"] += 1
                    math_of(p._data).rprop_update(
                        p._data, p.grad._data, state["prev"]._data,
                        state["step_size"]._data, etaminus=etaminus, etaplus=etaplus,
                        step_size_min=step_size_min, step_size_max=step_size_max,
                        maximize=group["maximize"])
                    p._bump()
        return loss
