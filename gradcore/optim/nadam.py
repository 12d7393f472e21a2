"""NAdam, with PyTorch's defaults and update rule (``torch.optim.NAdam``)."""

from __future__ import annotations

from ..autograd import no_grad
from ..backend import math_of
from ..creation import zeros_like
from ..kernels.updates import nadam_mu_product
from .adam import _check_adam_options
from .optimizer import Optimizer

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """NAdam (Dozat): Adam with Nesterov momentum, the momentum coefficient warmed up
    as ``mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))``.

    Arguments as PyTorch's: ``lr=2e-3``, ``betas=(0.9, 0.999)``, ``eps=1e-8``,
    ``weight_decay=0`` (L2, or with ``decoupled_weight_decay=True`` AdamW's decay),
    ``momentum_decay=4e-3``, ``maximize=False``; ``foreach`` and ``capturable`` are
    accepted (every update is one kernel per parameter here), ``differentiable=True``
    is not supported.

    State per parameter, as in PyTorch: ``step`` (an int here), ``mu_product`` (the
    product of the ``mu_t`` so far: a float here, rounded to float32 at each step as
    PyTorch's float32 0-d tensor is), ``exp_avg`` and ``exp_avg_sq``.

    >>> import gradcore as gc
    >>> w = gc.nn.Parameter(gc.tensor([1.0, -1.0]))
    >>> opt = gc.optim.NAdam([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> [round(x, 4) for x in w.tolist()]
    [0.8944, -0.8944]
    """

    def __init__(self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False):
        _check_adam_options(lr, betas, eps, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        self._check_implementation(differentiable)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter with a gradient; ``closure`` re-evaluates and
        returns the loss."""
        loss = self._evaluate(closure)
        with no_grad():
            for group in self.param_groups:
                beta1, beta2 = group["betas"]
                momentum_decay = group["momentum_decay"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if not state:
                        state["step"] = 0
                        state["mu_product"] = 1.0
                        state["exp_avg"] = zeros_like(p)
                        state["exp_avg_sq"] = zeros_like(p)
                    state["step"] += 1
                    state["mu_product"] = nadam_mu_product(state["mu_product"], state["step"],
                                                           beta1, momentum_decay)
                    math_of(p._data).nadam_update(
                        p._data, p.grad._data, state["exp_avg"]._data,
                        state["exp_avg_sq"]._data, step=state["step"],
                        mu_product=state["mu_product"], lr=group["lr"], beta1=beta1,
                        beta2=beta2, eps=group["eps"], weight_decay=group["weight_decay"],
                        momentum_decay=momentum_decay, maximize=group["maximize"],
                        decoupled_weight_decay=group["decoupled_weight_decay"])
                    p._bump()
        return loss
