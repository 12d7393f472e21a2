"""Muon, with PyTorch's defaults and update rule (``torch.optim.Muon``)."""

from __future__ import annotations

import math

import numpy as np

from ..autograd import no_grad
from ..backend import math_of
from ..creation import zeros_like
from ..tensor import Tensor
from ._arrays import lerp_, norm, round_to_bfloat16
from .optimizer import Optimizer

__all__ = ["Muon"]

# Keller Jordan's constants, PyTorch's defaults
EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


class Muon(Optimizer):
    """Muon (Keller Jordan): momentum, then the update orthogonalized by a quintic
    Newton-Schulz iteration, for the 2-D parameters of hidden layers.

    Each step: ``buf = lerp(buf, g, 1 - momentum)`` (``momentum * buf + (1 - momentum) *
    g``), the update ``lerp(g, buf, momentum)`` with ``nesterov`` else ``buf``,
    orthogonalized by ``ns_steps`` iterations of ``X = a X + (b A + c A A) X`` with ``A
    = X X^T`` (from ``X`` divided by its Frobenius norm, at least ``eps``, and transposed
    when it has more rows than columns), then ``p *= 1 - lr * weight_decay`` and ``p -=
    lr' * X`` where ``lr'`` is ``lr * sqrt(max(1, rows / cols))`` (``adjust_lr_fn=None``
    or ``"original"``) or ``0.2 * lr * sqrt(max(rows, cols))`` (``"match_rms_adamw"``).

    PyTorch runs the iteration in bfloat16; gradcore, which has no bfloat16, runs it in
    float32 and rounds every result to bfloat16's precision as PyTorch's kernels do
    (computed in float32, rounded once), so the updates are PyTorch's.

    Arguments as PyTorch's: ``lr=1e-3``, ``weight_decay=0.1``, ``momentum=0.95``,
    ``nesterov=True``, ``ns_coefficients=(3.4445, -4.7750, 2.0315)``, ``eps=1e-7``,
    ``ns_steps=5``, ``adjust_lr_fn=None``. Every parameter must be 2-D. State per
    parameter: ``momentum_buffer``. On a GPU ``gc.compile`` runs the step eagerly
    outside a CUDA graph, as other optimizers without device scalars.

    >>> import gradcore as gc
    >>> w = gc.nn.Parameter(gc.tensor([[2.0, 0.0], [0.0, 0.5]]))
    >>> opt = gc.optim.Muon([w], lr=0.1, weight_decay=0.0)
    >>> (w * w).sum().backward()
    >>> opt.step()  # the gradient's singular values (4 and 1) both become about 1
    >>> [round(v, 4) for v in w.detach().diagonal().tolist()]
    [1.927, 0.427]
    """

    def __init__(self, params, lr: float = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients: tuple[float, float, float] = (DEFAULT_A, DEFAULT_B,
                                                                DEFAULT_C),
                 eps: float = EPS, ns_steps: int = DEFAULT_NS_STEPS,
                 adjust_lr_fn: str | None = None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                        nesterov=nesterov, ns_coefficients=ns_coefficients, eps=eps,
                        ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def step(self, closure=None):
        """One update of every parameter with a gradient; ``closure`` re-evaluates and
        returns the loss."""
        loss = self._evaluate(closure)
        with no_grad():
            for group in self.param_groups:
                lr = group["lr"]
                lr = lr.item() if isinstance(lr, Tensor) else lr
                momentum = group["momentum"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if "momentum_buffer" not in state:
                        state["momentum_buffer"] = zeros_like(p.grad)
                    g = p.grad._data
                    if g.ndim != 2:
                        raise ValueError("Param gradient must be a 2D matrix")
                    buf = state["momentum_buffer"]._data
                    lerp_(buf, g, 1 - momentum)
                    if group["nesterov"]:
                        update = g.copy()
                        lerp_(update, buf, momentum)
                    else:
                        update = buf
                    update = _zeropower_via_newtonschulz(update, group["ns_coefficients"],
                                                         group["ns_steps"], group["eps"])
                    adjusted_lr = _adjust_lr(lr, group["adjust_lr_fn"], p.shape)
                    x = p._data
                    x *= x.dtype.type(1 - lr * group["weight_decay"])
                    update = update.astype(x.dtype, copy=False)
                    update *= x.dtype.type(-adjusted_lr)
                    x += update
                    p._bump()
        return loss


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps: int, eps: float):
    """PyTorch's ``_zeropower_via_newtonschulz`` (its checks and messages), over float32
    arrays holding bfloat16 values: each product and sum in float32, rounded once."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    m = math_of(grad)
    bf16 = round_to_bfloat16
    f32 = np.float32
    a, b, c = (f32(v) for v in ns_coefficients)
    x = bf16(grad)
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    scale = bf16(m.maximum(bf16(norm(x)), bf16(m.asarray(eps, dtype=f32))))
    x = bf16(x / scale)
    for _ in range(ns_steps):
        gram = bf16(m.matmul(x, x.T))
        gram_update = bf16(m.multiply(gram, b) + m.multiply(m.matmul(gram, gram), c))
        x = bf16(m.multiply(x, a) + m.matmul(gram_update, x))
    return x.T if tall else x


def _adjust_lr(lr: float, adjust_lr_fn, shape) -> float:
    """PyTorch's learning rate for a parameter of ``shape`` (see :class:`Muon`)."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio
