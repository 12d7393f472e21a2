"""Numerical gradient checking by central differences in float64."""

from __future__ import annotations

import warnings

import numpy as np

from .. import backend
from .functional import grad
from .tensor_base import Tensor, _wrap, from_data, zeros_like


class GradcheckError(RuntimeError):
    """What ``gradcheck`` and ``gradgradcheck`` raise when an analytical gradient and the
    finite differences disagree (a ``RuntimeError``, as PyTorch's)."""


def _host(t):
    # backend.to_host read at each call: gradcore.profile replaces it while counting
    return np.array(backend.to_host(t._data), dtype=np.float64)


def numerical_jacobian(fn, inputs, eps=1e-6):
    """d(outputs)/d(inputs) by central differences: one (n_out, n_in) matrix per input.

    The perturbed inputs require grad like the originals (with grad mode on), so that
    ``fn`` may differentiate itself: gradgradcheck's ``fn`` calls ``autograd.grad``.
    """
    base = [_host(t) for t in inputs]
    dev = [t.device for t in inputs]
    wants_grad = [t.requires_grad for t in inputs]

    def run(arrays):
        ts = []
        for a, d, rg in zip(arrays, dev, wants_grad):
            t = _wrap(d.asarray(a.copy()) if d.type != "cpu" else a.copy())
            t.requires_grad = rg
            ts.append(t)
        out = fn(*ts)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        return np.concatenate([_host(o).reshape(-1) for o in outs])

    jacobians = []
    for x in base:
        cols = []
        flat = x.reshape(-1)
        for i in range(flat.size):
            orig = flat[i]
            flat[i] = orig + eps
            plus = run(base)
            flat[i] = orig - eps
            minus = run(base)
            flat[i] = orig
            cols.append((plus - minus) / (2 * eps))
        jacobians.append(np.stack(cols, axis=1) if cols else np.zeros((0, 0)))
    return jacobians


def analytical_jacobian(fn, inputs):
    out = fn(*inputs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    sizes = [o.numel() for o in outs]
    n_out = sum(sizes)
    jac = [np.zeros((n_out, t.numel())) for t in inputs]
    row = 0
    for j, o in enumerate(outs):
        for i in range(sizes[j]):
            go = [zeros_like(x) for x in outs]
            go_flat = np.zeros(sizes[j])
            go_flat[i] = 1
            go[j] = _wrap(go[j].device.asarray(go_flat.reshape(o.shape).astype(o._data.dtype))
                          if o.device.type != "cpu" else go_flat.reshape(o.shape)
                          .astype(o._data.dtype))
            diff_outs = [x for x in outs if x.requires_grad]
            diff_go = [g for x, g in zip(outs, go) if x.requires_grad]
            grads = grad(diff_outs, list(inputs), diff_go, retain_graph=True,
                         allow_unused=True)
            for k, g in enumerate(grads):
                if g is not None:
                    jac[k][row] = _host(g).reshape(-1)
            row += 1
    return jac


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
    """Compare backward's gradients of ``fn`` at ``inputs`` with central differences.

    Inputs that require grad should be float64.  Returns True; on a mismatch raises
    (or returns False with ``raise_exception=False``), naming the input, the output
    and input element where the difference is largest, and both values.
    """
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    diff = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient")
    for t in diff:
        if t.dtype.name != "float64":
            warnings.warn(f"gradcheck: input of dtype {t.dtype} is not float64; the check "
                          "may fail from rounding alone", stacklevel=2)
    positions = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]

    def fn_of_diff(*ts):
        args = list(inputs)
        for p, t in zip(positions, ts):
            args[p] = t
        return fn(*args)

    numerical = numerical_jacobian(fn_of_diff, diff, eps)
    analytical = analytical_jacobian(fn_of_diff, diff)
    for k, (n, a) in enumerate(zip(numerical, analytical)):
        if n.shape != a.shape:
            a = a.reshape(n.shape) if a.size == n.size else a
        bad = np.abs(a - n) > atol + rtol * np.abs(n)
        if bad.any():
            err = np.abs(a - n)
            r, c = np.unravel_index(int(np.argmax(np.where(bad, err, -1))), err.shape)
            msg = (f"Jacobian mismatch for output {r} with respect to input {positions[k]} "
                   f"(element {c} of shape {tuple(diff[k].shape)}): numerical {n[r, c]:.8g}, "
                   f"analytical {a[r, c]:.8g}, largest difference {err.max():.3g} "
                   f"(atol={atol}, rtol={rtol}).\nnumerical:\n{n}\nanalytical:\n{a}")
            if raise_exception:
                raise GradcheckError(msg)
            return False
    return True


def gradgradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
    """gradcheck of the gradient: checks second derivatives (``create_graph=True``)."""
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    diff_pos = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    out = fn(*inputs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    rng = np.random.default_rng(0)
    gos = [from_data(rng.standard_normal(o.shape), dtype=o.dtype, device=o.device,
                  requires_grad=True) for o in outs]

    def first_grads(*args):
        ins = args[:len(inputs)]
        go = args[len(inputs):]
        o = fn(*ins)
        os_ = list(o) if isinstance(o, (tuple, list)) else [o]
        gs = grad(os_, [ins[i] for i in diff_pos], list(go), create_graph=True,
                  allow_unused=True, materialize_grads=True)
        return tuple(gs)

    return gradcheck(first_grads, tuple(inputs) + tuple(gos), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
