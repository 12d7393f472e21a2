"""RMSprop, with PyTorch's defaults and update rule (``torch.optim.RMSprop``)."""

from __future__ import annotations

from ..autograd import no_grad
from ..backend import math_of
from ..creation import zeros_like
from .optimizer import Optimizer

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop (Hinton): each step divides the gradient by the root of a running average
    of its square; optionally centered (less the squared running mean gradient), with
    momentum, L2 weight decay, or ascending (``maximize``).

    Arguments as PyTorch's: ``lr=1e-2``, ``alpha=0.99`` (the averages' smoothing),
    ``eps=1e-8``, ``weight_decay=0``, ``momentum=0``, ``centered=False``,
    ``maximize=False``; ``capturable`` and ``foreach`` are accepted (every update is one
    kernel per parameter here), ``differentiable=True`` is not supported.

    State per parameter, as in PyTorch: ``step`` (an int here, a 0-d tensor in
    PyTorch), ``square_avg``, ``momentum_buffer`` (``momentum > 0``) and ``grad_avg``
    (``centered``).

    >>> import gradcore as gc
    >>> w = gc.nn.Parameter(gc.tensor([1.0, -1.0]))
    >>> opt = gc.optim.RMSprop([w], lr=0.01)
    >>> (w * w).sum().backward()
    >>> opt.step()  # the first step: g / sqrt(0.01 * g * g) = 10 * sign(g)
    >>> w
    Parameter containing:
    tensor([ 0.9000, -0.9000], requires_grad=True)
    """

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 capturable: bool = False, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        self._check_implementation(differentiable)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter with a gradient; ``closure`` re-evaluates and
        returns the loss."""
        loss = self._evaluate(closure)
        with no_grad():
            for group in self.param_groups:
                momentum, centered = group["momentum"], group["centered"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if not state:
                        state["step"] = 0
                        state["square_avg"] = zeros_like(p)
                        if momentum > 0:
                            state["momentum_buffer"] = zeros_like(p)
                        if centered:
                            state["grad_avg"] = zeros_like(p)
                    for key, wanted in (("momentum_buffer", momentum > 0),
                                        ("grad_avg", centered)):
                        if wanted and key not in state:
                            raise RuntimeError(
                                f"the RMSprop state of a parameter has no '{key}': was it "
                                "created or loaded with other momentum/centered options?")
                    state["step"] += 1
                    buf = state["momentum_buffer"]._data if momentum > 0 else None
                    grad_avg = state["grad_avg"]._data if centered else None
                    math_of(p._data).rmsprop_update(
                        p._data, p.grad._data, state["square_avg"]._data, buf, grad_avg,
                        lr=group["lr"], alpha=group["alpha"], eps=group["eps"],
                        weight_decay=group["weight_decay"], momentum=momentum,
                        centered=centered, maximize=group["maximize"])
                    p._bump()
        return loss
