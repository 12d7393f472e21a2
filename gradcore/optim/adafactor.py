"""Adafactor, with PyTorch's defaults and update rule (``torch.optim.Adafactor``)."""

from __future__ import annotations

import numpy as np

from ..autograd import no_grad
from ..backend import math_of
from ..creation import zeros
from ..tensor import Tensor
from ._arrays import host_floats, lerp_, norm
from .optimizer import Optimizer

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """Adafactor (Shazeer & Stern) as PyTorch implements it: the second moment of a
    parameter with more than one dimension kept as a row and a column factor over its
    last two dimensions, a relative step size ``rho_t = min(lr, 1 / sqrt(t))`` scaled by
    the parameter's root mean square, update clipping at ``d``, and ``lr * weight_decay``
    decoupled weight decay.

    Arguments as PyTorch's: ``lr=1e-2``, ``beta2_decay=-0.8`` (``1 - beta2_t =
    t ** beta2_decay``), ``eps=(None, 1e-3)`` (``eps1``, ``None`` for the dtype's machine
    epsilon, keeps the variance estimate and the row factors' mean off zero; ``eps2`` is
    the least scale of a step), ``d=1.0``, ``weight_decay=0.0``, ``foreach`` (accepted,
    kept in the groups as PyTorch does; the same update either way), ``maximize=False``.

    State per parameter, as in PyTorch: ``step`` (an int here, a 0-d tensor in
    PyTorch), and ``row_var`` and ``col_var`` (the gradient's shape with the last,
    respectively the second-to-last, dimension 1) for a parameter of two or more
    dimensions, else ``variance``.

    Each step reads the norms of the parameters and of their updates on the host, as
    PyTorch's does (one transfer per device and group here): on a GPU ``gc.compile``
    runs it eagerly outside a CUDA graph, as other optimizers without device scalars.

    >>> import gradcore as gc
    >>> w = gc.nn.Parameter(gc.tensor([1.0, -1.0]))
    >>> opt = gc.optim.Adafactor([w])
    >>> (w * w).sum().backward()
    >>> opt.step()  # rho = min(0.01, 1) times RMS(w) = 1, the update clipped to RMS 1
    >>> w
    Parameter containing:
    tensor([ 0.9900, -0.9900], requires_grad=True)
    """

    def __init__(self, params, lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach: bool | None = None,
                 maximize: bool = False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                        weight_decay=weight_decay, foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    @staticmethod
    def _state_shape(param, key: str) -> tuple:
        shape = tuple(param.shape)
        if key == "row_var":
            return (*shape[:-1], 1)
        if key == "col_var":
            return (*shape[:-2], 1, *shape[-1:])
        return shape

    def step(self, closure=None):
        """One update of every parameter with a gradient; ``closure`` re-evaluates and
        returns the loss."""
        loss = self._evaluate(closure)
        with no_grad():
            for group in self.param_groups:
                self._step_group(group)
        return loss

    def _step_group(self, group) -> None:
        lr = group["lr"]
        lr = lr.item() if isinstance(lr, Tensor) else lr
        eps1, eps2 = group["eps"]
        work = []
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if not state:
                state["step"] = 0
                g = p.grad
                if g.ndim > 1:
                    state["row_var"] = zeros((*g.shape[:-1], 1), dtype=g.dtype,
                                             device=g.device)
                    state["col_var"] = zeros((*g.shape[:-2], 1, g.shape[-1]),
                                             dtype=g.dtype, device=g.device)
                else:
                    state["variance"] = zeros(g.shape, dtype=g.dtype, device=g.device)
            work.append((p, state))
        if not work:
            return
        if eps1 is None:  # (PyTorch takes the first parameter's dtype for the group)
            eps1 = float(np.finfo(work[0][0]._data.dtype).eps)
        # the parameters' root mean squares, before the weight decay (read together)
        rms = host_floats([norm(p._data) for p, _ in work])
        updates, scales = [], []
        for (p, state), p_norm in zip(work, rms):
            state["step"] += 1
            t = float(state["step"])
            one_minus_beta2 = t ** group["beta2_decay"]
            rho = min(lr, 1 / (t ** 0.5))
            scales.append(max(eps2, p_norm / (p._data.size ** 0.5)) * rho)
            x = p._data
            m = math_of(x)
            if group["weight_decay"] != 0:
                x *= x.dtype.type(1 - lr * group["weight_decay"])
            g = p.grad._data
            if group["maximize"]:
                g = -g
            if g.ndim > 1:
                row_var, col_var = state["row_var"]._data, state["col_var"]._data
                lerp_(row_var, _mean_square(g, -1), one_minus_beta2)
                lerp_(col_var, _mean_square(g, -2), one_minus_beta2)
                var = row_var * col_var  # (PyTorch's row_var @ col_var: an outer product)
                var /= m.maximum(m.mean(row_var, axis=-2, keepdims=True),
                                 row_var.dtype.type(eps1))
            else:
                variance = state["variance"]._data
                lerp_(variance, g * g, one_minus_beta2)
                var = variance.copy()
            m.maximum(var, var.dtype.type(eps1 * eps1), out=var)
            update = m.sqrt(var, out=var)  # (PyTorch's rsqrt, times the gradient)
            m.reciprocal(update, out=update)
            update *= g
            updates.append(update)
        u_norms = host_floats([norm(u) for u in updates])
        for (p, _state), update, scale, u_norm in zip(work, updates, scales, u_norms):
            denom = max(1.0, u_norm / ((update.size ** 0.5) * group["d"]))
            update *= update.dtype.type(-scale / denom)
            x = p._data
            x += update  # (in place: p._data itself is never rebound)
            p._bump()


def _mean_square(g, axis):
    """``norm(g, dim=axis, keepdim=True).square_().div_(g.size(axis))``, PyTorch's
    mean of squares along ``axis``, in ``g``'s dtype."""
    out = norm(g, axis=axis, keepdims=True)
    out *= out
    out /= out.dtype.type(g.shape[axis])
    return out
