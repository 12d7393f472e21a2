"""The connectionist temporal classification loss (PyTorch's ``torch.ctc_loss``).

The forward is the alpha recursion of Graves et al. (2006) in log space, one step per
time step, each step vectorised over the batch and the label positions ``s`` of the
extended targets ``l'`` (blanks between the labels and at both ends): ``alpha[t, s] =
logsumexp(alpha[t-1, s], alpha[t-1, s-1], alpha[t-1, s-2]) + lp[t, l'(s)]``, the last
term only where ``l'(s) != l'(s-2)``, written with PyTorch's own max-shifted sum. The
backward (``CtcLossBackward0``) runs the beta recursion the same way and gives
PyTorch's gradient with respect to ``log_probs``::

    grad[t, c] = (exp(lp[t, c]) - sum_{s: l'(s) = c} exp(alpha + beta - lp + nll)) * g

(zero past each input length). Its first term is PyTorch's: it makes the gradient the
one a ``log_softmax`` before the loss passes on unchanged, and it is there whether or
not ``log_probs`` are normalised. As in PyTorch the backward has no derivative itself.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..autograd.graph import differentiable
from ..backend import check_range, math_of, to_host
from ._core import Node, Tensor, mode, record, wrap
from ._export import export

__all__ = ["ctc_loss"]

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _signature_error(log_probs, targets, input_lengths, target_lengths):
    def kind(v):
        if isinstance(v, Tensor):
            return "Tensor"
        if isinstance(v, (list, tuple)):
            inner = ", ".join(type(e).__name__ for e in v)
            return f"{type(v).__name__} of ({inner})"
        return type(v).__name__
    got = ", ".join(kind(v) for v in (log_probs, targets, input_lengths, target_lengths))
    return TypeError(
        f"ctc_loss() received an invalid combination of arguments - got ({got}, ...), but "
        "expected one of:\n * (Tensor log_probs, Tensor targets, tuple of ints input_lengths, "
        "tuple of ints target_lengths, int blank = 0, int reduction = at::Reduction::Mean, "
        "bool zero_infinity = False)\n * (Tensor log_probs, Tensor targets, Tensor "
        "input_lengths, Tensor target_lengths, int blank = 0, int reduction = "
        "at::Reduction::Mean, bool zero_infinity = False)")


def _lengths(value, name):
    """A length argument (a tensor, or a list or tuple of ints or 0-d tensors) as a host
    int64 vector."""
    if isinstance(value, Tensor):
        if value._data.dtype.kind not in "iub":
            raise RuntimeError(f"{name} must be integral")
        return np.asarray(to_host(value._data)).astype(np.int64).reshape(-1)
    return np.asarray([int(to_host(v._data)) if isinstance(v, Tensor) else int(v)
                       for v in value], dtype=np.int64)


def _valid_lengths(values):
    return isinstance(values, Tensor) or (
        isinstance(values, (list, tuple)) and all(
            isinstance(v, Tensor) and v.ndim == 0 or
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values))


def _logsumexp3(m, a, b, c):
    """PyTorch's ``max + log(exp(a - max) + exp(b - max) + exp(c - max))`` (the max
    taken as 0 where all three are ``-inf``)."""
    top = m.maximum(m.maximum(a, b), c)
    top = m.where(top == -np.inf, 0, top)
    with np.errstate(divide="ignore"):  # (log(0): -inf where no path arrives)
        return m.log(m.exp(a - top) + m.exp(b - top) + m.exp(c - top)) + top


def _shift(m, x, k):
    """``x[..., s - k]`` along the last axis (``-inf`` where ``s - k`` is outside),
    ``k`` negative for ``x[..., s + |k|]``."""
    if abs(k) >= x.shape[-1]:
        return m.full(x.shape, -np.inf, dtype=x.dtype)
    pad = m.full(x.shape[:-1] + (abs(k),), -np.inf, dtype=x.dtype)
    if k > 0:
        return m.concatenate([pad, x[..., :-k]], axis=-1)
    return m.concatenate([x[..., -k:], pad], axis=-1)


class _Problem:
    """What the recursions read: the log-probabilities at each extended label
    ``lpg`` ``(T, N, L)``, the extended labels, which positions exist, which may skip."""

    def __init__(self, m, lp, prime, il, tl, blank):
        self.m, self.il, self.tl, self.blank = m, il, tl, blank
        n, width = prime.shape
        s = np.arange(width)
        self.valid = m.asarray(s[None, :] <= 2 * tl[:, None])         # (N, L)
        self.prime = prime
        self.lpg = m.take_along_axis(                                    # (T, N, L)
            lp, m.broadcast_to(prime[None], (lp.shape[0], n, width)), axis=2)
        differs = prime[:, 2:] != prime[:, :-2]
        self.skip_from = m.zeros((n, width), dtype=bool)  # alpha[s] may come from s - 2
        self.skip_from[:, 2:] = differs
        self.skip_to = m.zeros((n, width), dtype=bool)  # beta[s] from s + 2
        self.skip_to[:, :-2] = differs
        self.skip_to &= m.asarray(s[None, :] < 2 * tl[:, None] - 1)

    def alpha(self):
        m, lpg, valid = self.m, self.lpg, self.valid
        t_len, n, width = lpg.shape
        first = m.full((n, width), -np.inf, dtype=lpg.dtype)
        first[:, 0] = lpg[0, :, 0]
        if width > 1:
            first[:, 1] = m.where(m.asarray(self.tl > 0), lpg[0, :, 1], -np.inf)
        rows = [first]
        for t in range(1, t_len):
            prev = rows[-1]
            skip = m.where(self.skip_from, _shift(m, prev, 2), -np.inf)
            rows.append(m.where(valid, _logsumexp3(m, prev, _shift(m, prev, 1), skip) +
                                lpg[t], -np.inf))
        return m.stack(rows, 0)

    def beta(self):
        m, lpg, valid = self.m, self.lpg, self.valid
        t_len, n, width = lpg.shape
        s = np.arange(width)
        tl, il = self.tl, self.il
        ends = m.asarray((s[None, :] == 2 * tl[:, None]) |
                         ((s[None, :] == 2 * tl[:, None] - 1) & (tl[:, None] > 0)))
        steps = np.arange(t_len)[:, None, None]  # (one transfer each, not one per step)
        last = m.asarray(steps == il[None, :, None] - 1)                  # (T, N, 1)
        inside = m.asarray(steps < il[None, :, None] - 1)
        nxt = m.full((n, width), -np.inf, dtype=lpg.dtype)
        rows = [None] * t_len
        for t in range(t_len - 1, -1, -1):
            skip = m.where(self.skip_to, _shift(m, nxt, -2), -np.inf)
            rec = _logsumexp3(m, nxt, _shift(m, nxt, -1), skip) + lpg[t]
            row = m.where(last[t] & ends, lpg[t], m.where(inside[t] & valid, rec, -np.inf))
            rows[t] = nxt = row
        return m.stack(rows, 0)

    def nll(self, alpha):
        m, il, tl = self.m, self.il, self.tl
        n = il.shape[0]
        at = np.maximum(il - 1, 0)
        rows = m.asarray(np.arange(n))
        l1 = alpha[m.asarray(at), rows, m.asarray(2 * tl)]
        l2 = m.where(m.asarray(tl > 0), alpha[m.asarray(at), rows,
                                               m.asarray(np.maximum(2 * tl - 1, 0))], -np.inf)
        top = m.maximum(l1, l2)
        top = m.where(top == -np.inf, 0, top)
        like = m.log(m.exp(l1 - top) + m.exp(l2 - top)) + top
        empty = np.where(tl == 0, 0.0, -np.inf)  # (no input: PyTorch's likelihood)
        like = m.where(m.asarray(il == 0), m.asarray(empty.astype(like.dtype)), like)
        return -like


class CtcLossBackward0(Node):
    """PyTorch's CTC gradient with respect to ``log_probs`` from the alpha and beta
    recursions (see the module); zero for samples whose loss is infinite when
    ``zero_infinity``. Not differentiable itself, as in PyTorch."""

    def apply(self, F, g):
        (lp,) = self.unpack(F)
        graph = differentiable(F)
        lp_d, g_d = (lp._data, g._data) if graph else (lp, g)
        grad = _ctc_grad(self.problem(lp_d), lp_d, self.alpha, self.nll_d, g_d,
                         self.zero_infinity)
        if not graph:
            return (grad,)
        if not (g._rg or lp._rg):
            return (wrap(grad),)
        t = record(grad, _NoDerivative, g, lp)
        return (t,)

    def problem(self, lp_d):
        return _Problem(math_of(lp_d), lp_d, self.prime, self.il, self.tl, self.blank)


class _NoDerivative(Node):
    def apply(self, F, g):
        raise RuntimeError("derivative for aten::_ctc_loss_backward is not implemented")

    def name(self):
        return "CtcLossBackward0Backward0"


def _ctc_grad(problem, lp, alpha, nll, g, zero_infinity):
    m = problem.m
    beta = problem.beta()
    with np.errstate(invalid="ignore", over="ignore"):
        share = m.exp(alpha + beta - problem.lpg + nll[None, :, None])     # (T, N, L)
    share = m.where(problem.valid[None], share, 0)
    # PyTorch's CPU kernel sets the last step's gradient at the last label, where it
    # would add to the final blank's when that label is the blank itself: the final
    # blank's share at that step is dropped then (its targets should not hold the blank)
    n, width = problem.prime.shape
    tl, il = problem.tl, problem.il
    last_label = problem.prime[m.asarray(np.arange(n)), m.asarray(np.maximum(2 * tl - 1, 0))]
    dropped = (last_label == problem.blank) & m.asarray((tl > 0) & (il > 0))
    at_end = m.asarray((np.arange(lp.shape[0])[:, None] == il[None, :] - 1)[:, :, None] &
                       (np.arange(width)[None, None, :] == 2 * tl[None, :, None]))
    share = m.where(at_end & dropped[None, :, None], 0, share)
    share = m.where(m.isnan(nll)[None, :, None] | (nll == np.inf)[None, :, None],
                    np.nan, share)  # (PyTorch: exp(-inf + inf) at every class)
    c = lp.shape[2]
    onehot = (problem.prime[:, :, None] == m.arange(c)[None, None, :]).astype(lp.dtype)
    onehot = onehot * problem.valid[:, :, None].astype(lp.dtype)
    summed = m.matmul(m.transpose(share, (1, 0, 2)), onehot)             # (N, T, C)
    grad = (m.exp(lp) - m.transpose(summed, (1, 0, 2))) * g[None, :, None]
    inside = m.asarray(np.arange(lp.shape[0])[:, None] < problem.il[None, :])[:, :, None]
    keep = inside
    if zero_infinity:
        keep = keep & ~(nll == np.inf)[None, :, None]
    return m.where(keep, grad, 0).astype(lp.dtype, copy=False)


@export(torch=True)
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0,
             reduction=0, zero_infinity=False):
    """The CTC loss with PyTorch's ``torch.ctc_loss`` arguments: ``reduction`` an int
    (1 mean, 2 sum, any other none; when omitted the losses are not reduced, as
    ``torch.ctc_loss`` does), the lengths tensors or tuples of ints. See
    :func:`gradcore.nn.functional.ctc_loss`."""
    if not (isinstance(log_probs, Tensor) and isinstance(targets, Tensor)) or \
            not (_valid_lengths(input_lengths) and _valid_lengths(target_lengths)) or \
            isinstance(input_lengths, Tensor) != isinstance(target_lengths, Tensor) or \
            isinstance(reduction, bool) or not isinstance(reduction, (int, np.integer)):
        raise _signature_error(log_probs, targets, input_lengths, target_lengths)
    batched = log_probs.ndim == 3
    x = log_probs if batched else log_probs.unsqueeze(1)
    il = _lengths(input_lengths, "input_lengths")
    tl = _lengths(target_lengths, "target_lengths")
    nll = _ctc_nll(x, targets, il, tl, int(blank), bool(zero_infinity))
    if zero_infinity:
        nll = nll.where(nll != np.inf, wrap(math_of(nll._data).zeros((), nll._data.dtype)))
    kind = _REDUCTIONS.get(int(reduction), "none")
    if kind == "mean":
        div = math_of(nll._data).asarray(np.maximum(tl, 1).astype(nll._data.dtype))
        return (nll / wrap(div)).mean()
    if kind == "sum":
        return nll.sum()
    return nll if batched else nll.squeeze(0)


def _ctc_nll(lp, targets, il, tl, blank, zero_infinity):
    """The per-sample negative log likelihoods ``(N,)``, one ``CtcLossBackward0`` node."""
    what = "(while checking arguments for ctc_loss_allocate_outputs)"
    if lp.ndim != 3:
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {lp.ndim}-dimensional "
                           f"tensor for argument #1 'log_probs' {what}")
    if lp.numel() == 0:
        raise RuntimeError("log_probs tensor must not be empty")
    if lp._data.dtype.kind != "f" or lp.dtype in (dtypes.float16, dtypes.bfloat16):
        raise NotImplementedError(f"\"ctc_loss_cpu\" not implemented for "
                                  f"'{dtypes.torch_name(lp._data.dtype)}'")
    t_len, n, c = lp.shape
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    if il.shape[0] != n:
        raise RuntimeError("input_lengths must be of size batch_size")
    if tl.shape[0] != n:
        raise RuntimeError("target_lengths must be of size batch_size")
    for name, v in (("input_lengths", il), ("target_lengths", tl)):
        if v.size and v.min() < 0:
            raise RuntimeError(f"Expected {name} to have value at least 0, but got value "
                               f"{int(v.min())} {what}")
    if il.size and il.max() > t_len:
        raise RuntimeError(f"Expected input_lengths to have value at most {t_len}, but got "
                           f"value {int(il.max())} {what}")
    max_tl = int(tl.max()) if tl.size else 0
    m = math_of(lp._data)
    tg = targets._data
    if math_of(tg) is not m:  # (targets may live on the host, as PyTorch allows)
        tg = m.asarray(to_host(tg))
    if targets.ndim == 1:
        total = int(tl.sum())
        if targets.shape[0] != total:
            raise RuntimeError(f"Expected tensor to have size {total} at dimension 0, but got "
                               f"size {targets.shape[0]} for argument #2 'targets' {what}")
        offsets = np.concatenate([[0], np.cumsum(tl)[:-1]]).astype(np.int64)
        at = offsets[:, None] + np.minimum(np.arange(max_tl)[None, :], np.maximum(tl - 1, 0)[
            :, None])
        padded = tg[m.asarray(np.minimum(at, max(total - 1, 0)))] if total else \
            m.zeros((n, max_tl), dtype=np.int64)
    elif targets.ndim == 2:
        if targets.shape[0] != n:
            raise RuntimeError(f"Expected tensor to have size {n} at dimension 0, but got "
                               f"size {targets.shape[0]} for argument #2 'targets' {what}")
        if targets.shape[1] < max_tl:
            raise RuntimeError(f"Expected tensor to have size at least {max_tl} at dimension "
                               f"1, but got size {targets.shape[1]} for argument #2 'targets' "
                               f"{what}")
        padded = tg[:, :max_tl]
    else:
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {targets.ndim}-dimensional "
                           f"tensor for argument #2 'targets' {what}")
    padded = padded.astype(np.int64)
    used = m.asarray(np.arange(max_tl)[None, :] < tl[:, None])
    labels = m.where(used, padded, blank)
    check_range(labels, 0, c, lambda bad: RuntimeError(
        f"ctc_loss: target {bad} is out of range for {c} classes"))
    prime = m.full((n, 2 * max_tl + 1), blank, dtype=np.int64)
    prime[:, 1::2] = labels
    problem = _Problem(m, lp._data, prime, il, tl, blank)
    alpha = problem.alpha()
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        nll_d = problem.nll(alpha)
    if not (mode.enabled and lp._rg):
        return wrap(nll_d)
    out = record(nll_d, CtcLossBackward0, lp)
    node = out.grad_fn
    node.save(lp)
    node.prime, node.il, node.tl, node.alpha, node.nll_d = prime, il, tl, alpha, nll_d
    node.zero_infinity, node.blank = zero_infinity, blank
    return out
