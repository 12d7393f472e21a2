"""L-BFGS, with PyTorch's algorithm and options (``torch.optim.LBFGS``)."""

from __future__ import annotations

from ..autograd import enable_grad, no_grad
from ..creation import zeros
from ..ops import cat
from .optimizer import Optimizer

__all__ = ["LBFGS"]


def _cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimizer of the cubic through ``(x1, f1)`` and ``(x2, f2)`` with slopes
    ``g1``, ``g2``, clamped to ``bounds`` (default: between the two points); their
    middle when the cubic has no minimum."""
    lo, hi = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (lo + hi) / 2.0
    d2 = d2_square.sqrt() if hasattr(d2_square, "sqrt") else d2_square ** 0.5
    if x1 <= x2:
        at = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        at = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(at, lo), hi)


def _strong_wolfe(evaluate, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """A step ``t`` along ``d`` meeting the strong Wolfe conditions (sufficient decrease
    ``c1``, curvature ``c2``): a bracketing phase, then zoom by cubic interpolation,
    as minFunc's and PyTorch's. ``evaluate(x, t, d)`` gives the loss and flat gradient
    at ``x + t d``. Returns the loss, gradient, step and evaluation count."""
    d_norm = d.abs().max()
    g = g.clone()
    f_new, g_new = evaluate(x, t, d)
    evals = 1
    gtd_new = g_new.dot(d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    it = 0
    bracket_gtd = None
    while it < max_ls:  # bracketing
        no_decrease = f_new > (f + c1 * t * gtd) or (it > 1 and f_new >= f_prev)
        if not no_decrease and abs(gtd_new) <= -c2 * gtd:  # (tested before the slope's sign)
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if no_decrease or gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.clone()], [gtd_prev, gtd_new]
            break
        t_next = _cubic_minimum(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                                bounds=(t + 0.01 * (t - t_prev), t * 10))
        t_prev, f_prev, g_prev, gtd_prev = t, f_new, g_new.clone(), gtd_new
        t = t_next
        f_new, g_new = evaluate(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        it += 1
    if it == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]
    insufficient = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and it < max_ls:  # zoom
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_minimum(bracket[0], bracket_f[0], bracket_gtd[0],
                           bracket[1], bracket_f[1], bracket_gtd[1])
        top, bottom = max(bracket), min(bracket)
        eps = 0.1 * (top - bottom)
        if min(top - t, t - bottom) < eps:  # too near an end: move away once stuck
            if insufficient or t >= top or t <= bottom:
                t = top - eps if abs(t - top) < abs(t - bottom) else bottom + eps
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        f_new, g_new = evaluate(x, t, d)
        evals += 1
        gtd_new = g_new.dot(d)
        it += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high] = t, f_new
            bracket_g[high], bracket_gtd[high] = g_new.clone(), gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low] = t, f_new
            bracket_g[low], bracket_gtd[low] = g_new.clone(), gtd_new
    return bracket_f[low], bracket_g[low], bracket[low], evals


class LBFGS(Optimizer):
    """Limited-memory BFGS (PyTorch's, after minFunc): each :meth:`step` runs up to
    ``max_iter`` iterations, re-evaluating the model through ``closure``.

    Args: ``lr`` (step scale, default 1), ``max_iter`` (iterations per step, 20),
    ``max_eval`` (closure calls per step, default ``max_iter * 5 // 4``),
    ``tolerance_grad`` (stop when the largest gradient value is at most this, 1e-7),
    ``tolerance_change`` (stop when the step or the loss changes less, 1e-9),
    ``history_size`` (curvature pairs kept, 100), ``line_search_fn`` (``None``: fixed
    steps, or ``"strong_wolfe"``). One parameter group only, as in PyTorch. Its loop
    reads numbers on the host (losses, tests of convergence), as PyTorch's does.

    >>> import gradcore as gc
    >>> w = gc.nn.Parameter(gc.tensor([3.0, -2.0]))
    >>> opt = gc.optim.LBFGS([w], line_search_fn="strong_wolfe")
    >>> def closure():
    ...     opt.zero_grad()
    ...     loss = ((w - 1) ** 2).sum()
    ...     loss.backward()
    ...     return loss
    >>> _ = opt.step(closure)
    >>> w.detach().round(decimals=4)
    tensor([1., 1.])
    """

    def __init__(self, params, lr: float = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9,
                 history_size: int = 100, line_search_fn: str | None = None):
        if hasattr(lr, "numel") and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                        tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                        history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _flat_grad(self):
        return cat([p.grad.reshape(-1) if p.grad is not None
                    else zeros(p.numel(), dtype=p.dtype, device=p.device)
                    for p in self._params], 0)

    def _add_grad(self, step, direction) -> None:
        at = 0
        for p in self._params:
            n = p.numel()
            p.add_(direction[at:at + n].view_as(p), alpha=step)
            at += n

    def _evaluate_at(self, closure, x, t, d):
        """The loss and flat gradient at ``x + t d``; the parameters are put back."""
        self._add_grad(t, d)
        loss = float(closure())
        flat = self._flat_grad()
        for p, saved in zip(self._params, x):
            p.copy_(saved)
        return loss, flat

    def step(self, closure):
        """Run the iterations of one step; ``closure`` (required) zeroes the gradients,
        computes the loss, calls ``backward`` and returns the loss. Returns the loss
        ``closure`` gave first."""
        if closure is None:
            raise RuntimeError("LBFGS.step needs a closure that re-evaluates the model and "
                               "returns the loss")
        with no_grad():
            return self._step(closure)

    def _step(self, closure):
        group = self.param_groups[0]
        lr = float(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        line_search, history = group["line_search_fn"], group["history_size"]
        if line_search is not None and line_search != "strong_wolfe":
            raise RuntimeError("only 'strong_wolfe' is supported")

        def call():
            with enable_grad():
                return closure()

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = call()
        loss = float(orig_loss)
        evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if flat_grad.abs().max() <= tol_grad:
            return orig_loss
        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        h_diag = state.get("H_diag")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:  # the first direction: steepest descent
                d = flat_grad.neg()
                old_dirs, old_stps, ro, h_diag = [], [], [], 1
            else:  # the two-loop recursion over the kept curvature pairs
                y = flat_grad.sub(prev_flat_grad)
                s = d.mul(t)
                ys = y.dot(s)
                if ys > 1e-10:
                    if len(old_dirs) == history:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / y.dot(y)
                if "al" not in state:
                    state["al"] = [None] * history
                al = state["al"]
                q = flat_grad.neg()
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    q.add_(old_dirs[i], alpha=-al[i])
                d = r = q * h_diag
                for i in range(len(old_dirs)):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    r.add_(old_stps[i], alpha=al[i] - be_i)
            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.clone()
            else:
                prev_flat_grad.copy_(flat_grad)
            prev_loss = loss
            t = min(1.0, 1.0 / flat_grad.abs().sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)
            if gtd > -tol_change:  # not a descent direction
                break
            ls_evals = 0
            if line_search is not None:
                x0 = [p.clone() for p in self._params]
                loss, flat_grad, t, ls_evals = _strong_wolfe(
                    lambda x, step, dd: self._evaluate_at(call, x, step, dd),
                    x0, t, d, loss, flat_grad, gtd, max_ls=max_eval - evals)
                self._add_grad(t, d)
                done = flat_grad.abs().max() <= tol_grad
            else:
                self._add_grad(t, d)
                done = False
                if n_iter != max_iter:  # re-evaluate (the last iteration's is not needed)
                    loss = float(call())
                    flat_grad = self._flat_grad()
                    done = flat_grad.abs().max() <= tol_grad
                    ls_evals = 1
            evals += ls_evals
            state["func_evals"] += ls_evals
            if (n_iter == max_iter or evals >= max_eval or done
                    or d.mul(t).abs().max() <= tol_change or abs(loss - prev_loss) < tol_change):
                break
        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss
