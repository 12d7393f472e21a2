"""Adamax, with PyTorch's defaults and update rule (``torch.optim.Adamax``)."""

from __future__ import annotations

from ..autograd import no_grad
from ..backend import math_of
from ..creation import zeros_like
from .adam import _check_adam_options
from .optimizer import Optimizer

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax (Kingma & Ba): Adam with the infinity norm, ``u = max(beta2 * u, |g| +
    eps)``, in place of the root of the second moment.

    Arguments as PyTorch's: ``lr=2e-3``, ``betas=(0.9, 0.999)``, ``eps=1e-8``,
    ``weight_decay=0`` (L2), ``maximize=False``; ``foreach`` and ``capturable`` are
    accepted (every update is one kernel per parameter here), ``differentiable=True``
    is not supported.

    State per parameter, as in PyTorch: ``step`` (an int here, a 0-d tensor in
    PyTorch), ``exp_avg`` and ``exp_inf``.

    >>> import gradcore as gc
    >>> w = gc.nn.Parameter(gc.tensor([1.0, -1.0]))
    >>> opt = gc.optim.Adamax([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()  # the first step moves every weight by lr against its gradient's sign
    >>> w
    Parameter containing:
    tensor([ 0.9000, -0.9000], requires_grad=True)
    """

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False):
        _check_adam_options(lr, betas, eps, weight_decay)
        self._check_implementation(differentiable)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter with a gradient; ``closure`` re-evaluates and
        returns the loss."""
        loss = self._evaluate(closure)
        with no_grad():
            for group in self.param_groups:
                beta1, beta2 = group["betas"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if not state:
                        state["step"] = 0
                        state["exp_avg"] = zeros_like(p)
                        state["exp_inf"] = zeros_like(p)
                    state["step"] += 1
                    math_of(p._data).adamax_update(
                        p._data, p.grad._data, state["exp_avg"]._data,
                        state["exp_inf"]._data, step=state["step"], lr=group["lr"],
                        beta1=beta1, beta2=beta2, eps=group["eps"],
                        weight_decay=group["weight_decay"], maximize=group["maximize"])
                    p._bump()
        return loss
