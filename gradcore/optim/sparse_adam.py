"""SparseAdam's interface and checks (``torch.optim.SparseAdam``)."""

from __future__ import annotations

from ..tensor import Tensor
from .optimizer import Optimizer

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """PyTorch's Adam for sparse gradients: its options, checks and errors.

    PyTorch's ``SparseAdam`` updates only the entries a sparse gradient holds and
    refuses a dense gradient (``RuntimeError: SparseAdam does not support dense
    gradients, please consider Adam instead``). gradcore has no sparse tensors (its
    ``nn.Embedding(sparse=True)`` produces dense gradients), so every gradient is dense
    and ``step()`` raises that error for the first parameter with a gradient, as
    PyTorch's would for it: use :class:`Adam` here. The constructor checks its options
    as PyTorch's does (``lr > 0``, ``eps > 0``, betas in ``[0, 1)``), and a step with no
    gradients does nothing.

    >>> import gradcore as gc
    >>> w = gc.nn.Parameter(gc.ones(2))
    >>> opt = gc.optim.SparseAdam([w])
    >>> opt.defaults["betas"]
    (0.9, 0.999)
    """

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, maximize: bool = False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = dict(lr=lr, betas=betas, eps=eps, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """Raises for the first parameter with a gradient (every gradient is dense
        here, see :class:`SparseAdam`); ``closure`` is evaluated first, as in PyTorch."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    raise RuntimeError("SparseAdam does not support dense gradients, please "
                                       "consider Adam instead")
        return loss
