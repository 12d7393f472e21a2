"""The five speed targets of issue 3, each written three ways: gradcore, NumPy by hand, torch.

Shared by ``bench/test_targets.py`` (pytest-benchmark) and ``bench/report.py``
(timeit-style medians). Every target builds its inputs from a fixed seed as NumPy
arrays; ``make(impl, inputs)`` copies them into fresh state for one implementation and
returns a zero-argument ``step`` that runs one forward + backward (+ SGD update for the
MLPs) and returns ``(loss, grads)`` in that implementation's own types. ``to_numpy`` and
``check_grads`` turn those into arrays and compare them with the NumPy baseline.

The NumPy baseline is the backward pass of the same graph written by hand, with NumPy's
best idioms (in-place ufuncs, ``out=``, reused buffers). It treats the upstream gradient
of ``.sum()`` / ``.mean()`` as what it is, a broadcast of one scalar (no copy), but does
not drop the multiplications by it: a library cannot know that a gradient is all ones,
so the floor for a NumPy library is the generic chain rule.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import gradcore as gc

SEED = 0
IMPLS = ("numpy", "gradcore", "compiled", "torch")  # compiled: gradcore's step, gc.compile

try:  # PyTorch is optional: its benchmarks skip (pytest) or print "n/a" (report)
    import torch
except ImportError:  # pragma: no cover - depends on the environment
    torch = None

TORCH_MISSING = "PyTorch is not installed (pip install torch==2.13.0 to compare with it)"


def _ones_like_grad(shape):
    """The gradient of a sum with respect to its input: 1 broadcast to ``shape``."""
    return np.broadcast_to(np.ones((), np.float32), shape)


def _gc(arr, requires_grad=False):
    return gc.tensor(arr, dtype=gc.float32 if arr.dtype == np.float32 else None,
                     device="cpu", requires_grad=requires_grad)


def _torch(arr, requires_grad=False):
    return torch.from_numpy(arr.copy()).requires_grad_(requires_grad)


def _library(impl):
    """The module and the tensor maker of an autograd implementation: gradcore mirrors
    torch's API, so each workload is written once for both."""
    return (gc, _gc) if impl == "gradcore" else (torch, _torch)


# ---------------------------------------------------------------------------------------
# (a) a chain of 100 pointwise ops on 16 float32 values
# ---------------------------------------------------------------------------------------
CHAIN_OPS = tuple(("mul", "add", "tanh")[i % 3] for i in range(100))


def chain_inputs():
    rng = np.random.default_rng(SEED)
    return {"x": rng.standard_normal(16).astype(np.float32)}


def chain_numpy(inputs):
    x = inputs["x"].copy()

    def step():
        h = x
        saved = []  # the output of each tanh, for its derivative 1 - y^2
        for op in CHAIN_OPS:
            if op == "mul":
                h = h * 1.0001
            elif op == "add":
                h = h + 0.001
            else:
                h = np.tanh(h)
                saved.append(h)
        loss = h.sum()
        g = _ones_like_grad(h.shape)
        for op in reversed(CHAIN_OPS):
            if op == "mul":
                g = g * 1.0001
            elif op == "tanh":
                y = saved.pop()
                d = np.multiply(y, y)
                np.subtract(1, d, out=d)
                np.multiply(d, g, out=d)
                g = d
        return loss, [g]

    return step


def chain_autograd(inputs, impl):
    m, tensor = _library(impl)
    x = tensor(inputs["x"], requires_grad=True)

    def step():
        h = x
        for op in CHAIN_OPS:
            if op == "mul":
                h = h * 1.0001
            elif op == "add":
                h = h + 0.001
            else:
                h = h.tanh()
        loss = h.sum()
        loss.backward()
        g = x.grad
        x.grad = None
        return loss, [g]

    return step


# ---------------------------------------------------------------------------------------
# (b), (c) an MLP training step with raw tensors: Linear-ReLU-Linear-ReLU-Linear, softmax
# cross-entropy (mean over the batch), SGD update p -= lr * p.grad under no_grad
# ---------------------------------------------------------------------------------------
LR = 0.01


def mlp_inputs(sizes, batch):
    rng = np.random.default_rng(SEED)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        w = rng.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in)
        b = rng.standard_normal(fan_out) * 0.01
        params += [w.astype(np.float32), b.astype(np.float32)]
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    labels = rng.integers(0, sizes[-1], size=batch).astype(np.int64)
    return {"params": params, "x": x, "labels": labels}


def mlp_numpy(inputs):
    w1, b1, w2, b2, w3, b3 = (p.copy() for p in inputs["params"])
    params = (w1, b1, w2, b2, w3, b3)
    x, labels = inputs["x"], inputs["labels"]
    n = x.shape[0]
    rows = np.arange(n)

    def step():
        # forward
        h1 = x @ w1
        h1 += b1
        np.maximum(h1, 0, out=h1)
        h2 = h1 @ w2
        h2 += b2
        np.maximum(h2, 0, out=h2)
        z = h2 @ w3
        z += b3
        z -= z.max(axis=1, keepdims=True)  # softmax is shift-invariant
        e = np.exp(z)
        s = e.sum(axis=1, keepdims=True)
        loss = (np.log(s[:, 0]) - z[rows, labels]).mean()
        # backward: dL/dz = (softmax - onehot) * 1/n, the upstream gradient of the mean
        dz = np.divide(e, s, out=e)
        dz[rows, labels] -= 1
        dz *= 1.0 / n
        gw3 = h2.T @ dz
        gb3 = dz.sum(axis=0)
        dh2 = dz @ w3.T
        dh2 *= h2 > 0
        gw2 = h1.T @ dh2
        gb2 = dh2.sum(axis=0)
        dh1 = dh2 @ w2.T
        dh1 *= h1 > 0
        gw1 = x.T @ dh1
        gb1 = dh1.sum(axis=0)
        grads = [gw1, gb1, gw2, gb2, gw3, gb3]
        # SGD
        for p, g in zip(params, grads):
            p -= LR * g
        return loss, grads

    return step


def mlp_autograd(inputs, impl):
    m, tensor = _library(impl)
    params = [tensor(p, requires_grad=True) for p in inputs["params"]]
    w1, b1, w2, b2, w3, b3 = params
    x, labels = tensor(inputs["x"]), tensor(inputs["labels"])
    rows = tensor(np.arange(x.shape[0]))

    def step():
        h1 = (x @ w1 + b1).relu()
        h2 = (h1 @ w2 + b2).relu()
        logits = h2 @ w3 + b3
        logp = logits - logits.logsumexp(dim=1, keepdim=True)
        loss = -logp[rows, labels].mean()
        loss.backward()
        grads = []
        with m.no_grad():
            for p in params:
                g = p.grad
                p -= LR * g
                p.grad = None
                grads.append(g)
        return loss, grads

    return step


# ---------------------------------------------------------------------------------------
# (d) tanh(3*x - 2) * x on 4M float32 values
# ---------------------------------------------------------------------------------------
def tanh_inputs():
    rng = np.random.default_rng(SEED)
    return {"x": rng.standard_normal(4 * 1024 * 1024, dtype=np.float32)}


def tanh_numpy(inputs):
    """In-place ufuncs with ``out=``: two buffers in the forward, one more in backward."""
    x = inputs["x"].copy()

    def step():
        t = np.multiply(x, 3)
        np.subtract(t, 2, out=t)
        np.tanh(t, out=t)               # t = tanh(3x - 2)
        y = np.multiply(t, x)
        loss = y.sum()
        g = _ones_like_grad(y.shape)    # d loss / d y
        gx = np.multiply(g, t)          # through the direct x factor
        gt = np.multiply(g, x, out=y)   # through the tanh factor (y's buffer is free)
        np.multiply(t, t, out=t)
        np.subtract(1, t, out=t)
        np.multiply(gt, t, out=gt)      # d/d(3x - 2)
        np.multiply(gt, 3, out=gt)
        np.add(gx, gt, out=gx)
        return loss, [gx]

    return step


def tanh_autograd(inputs, impl):
    m, tensor = _library(impl)
    x = tensor(inputs["x"], requires_grad=True)

    def step():
        loss = (m.tanh(3 * x - 2) * x).sum()
        loss.backward()
        g = x.grad
        x.grad = None
        return loss, [g]

    return step


# ---------------------------------------------------------------------------------------
# (e) (x[256,1024] * w[1024] + b[1024]).sum(): broadcasting undone by sum_to
# ---------------------------------------------------------------------------------------
def bcast_inputs():
    rng = np.random.default_rng(SEED)
    return {"x": rng.standard_normal((256, 1024), dtype=np.float32),
            "w": rng.standard_normal(1024, dtype=np.float32),
            "b": rng.standard_normal(1024, dtype=np.float32)}


def bcast_numpy(inputs):
    x, w, b = inputs["x"], inputs["w"].copy(), inputs["b"].copy()

    def step():
        y = np.multiply(x, w)
        np.add(y, b, out=y)
        loss = y.sum()
        g = _ones_like_grad(y.shape)
        gb = g.sum(axis=0)                        # sum_to(g, b.shape)
        gw = np.multiply(g, x, out=y).sum(axis=0)  # sum_to(g * x, w.shape)
        return loss, [gw, gb]

    return step


def bcast_autograd(inputs, impl):
    m, tensor = _library(impl)
    x = tensor(inputs["x"])
    w, b = tensor(inputs["w"], requires_grad=True), tensor(inputs["b"], requires_grad=True)

    def step():
        loss = (x * w + b).sum()
        loss.backward()
        grads = [w.grad, b.grad]
        w.grad = b.grad = None
        return loss, grads

    return step


# ---------------------------------------------------------------------------------------
# The table both runners read
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Target:
    key: str                 # short id: test ids and report rows
    title: str               # the wording: benchmark group
    ratio: float             # the goal, gradcore / NumPy-by-hand
    inputs: Callable[[], dict]
    impls: dict              # impl name -> factory(inputs) -> step
    rtol: float = 1e-4
    atol: float = 1e-6

    def make(self, impl: str, inputs: dict):
        if impl == "torch" and torch is None:
            raise RuntimeError(TORCH_MISSING)
        return self.impls[impl](inputs)


def _compiled(autograd_fn, inputs):
    return gc.compile(autograd_fn(inputs, impl="gradcore"))


def _three(numpy_fn, autograd_fn):
    """NumPy by hand, and the one autograd workload for gradcore (eager and compiled)
    and for torch."""
    return {"numpy": numpy_fn, "gradcore": functools.partial(autograd_fn, impl="gradcore"),
            "compiled": functools.partial(_compiled, autograd_fn),
            "torch": functools.partial(autograd_fn, impl="torch")}


TARGETS = (
    Target("chain100", "(a) chain of 100 pointwise ops, 16 float32", 2.5, chain_inputs,
           _three(chain_numpy, chain_autograd)),
    Target("mlp784", "(b) MLP step 784-512-512-10, batch 256", 1.10,
           lambda: mlp_inputs((784, 512, 512, 10), 256),
           _three(mlp_numpy, mlp_autograd), rtol=1e-3, atol=1e-5),
    Target("mlp64", "(c) MLP step 64-128-128-10, batch 32", 2.0,
           lambda: mlp_inputs((64, 128, 128, 10), 32),
           _three(mlp_numpy, mlp_autograd), rtol=1e-3, atol=1e-5),
    Target("tanh4m", "(d) tanh(3*x - 2) * x, 4M float32", 1.15, tanh_inputs,
           _three(tanh_numpy, tanh_autograd)),
    Target("bcast", "(e) (x[256,1024] * w + b).sum()", 1.3, bcast_inputs,
           _three(bcast_numpy, bcast_autograd)),
)


# ---------------------------------------------------------------------------------------
# Checking a step against the baseline
# ---------------------------------------------------------------------------------------
def to_numpy(value) -> np.ndarray:
    """A gradcore tensor, torch tensor or NumPy array/scalar as a NumPy array."""
    if value is None:
        raise AssertionError("a gradient is None: backward did not reach that parameter")
    if isinstance(value, gc.Tensor):
        return np.asarray(gc.backend.to_host(value._data))
    if torch is not None and isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def check_grads(target: Target, impl: str, reference, result) -> None:
    """Raise AssertionError unless ``result`` (loss, grads) matches the baseline's."""
    ref_loss, ref_grads = reference
    loss, grads = result
    problems = []
    if len(grads) != len(ref_grads):
        problems.append(f"{len(grads)} gradients, expected {len(ref_grads)}")
    for i, (r, g) in enumerate(zip(ref_grads, grads)):
        r, g = to_numpy(r), to_numpy(g)
        if r.shape != g.shape:
            problems.append(f"grad {i}: shape {g.shape}, expected {r.shape}")
        elif g.dtype != r.dtype:
            problems.append(f"grad {i}: dtype {g.dtype}, expected {r.dtype}")
        elif not np.allclose(g, r, rtol=target.rtol, atol=target.atol):
            diff = np.abs(g.astype(np.float64) - r)
            at = np.unravel_index(int(np.argmax(diff)), diff.shape)
            problems.append(f"grad {i}: largest difference {diff[at]:.3g} at {at} "
                            f"({g[at]!r} vs baseline {r[at]!r})")
    ref_l, l = float(to_numpy(ref_loss)), float(to_numpy(loss))
    if not np.isclose(l, ref_l, rtol=1e-4, atol=1e-5):
        problems.append(f"loss {l!r}, baseline {ref_l!r}")
    if problems:
        raise AssertionError(f"{target.key} [{impl}] does not match the NumPy baseline: "
                             + "; ".join(problems))


def verified_step(target: Target, impl: str, inputs: dict):
    """A fresh ``step`` for ``impl``, after checking its first step against the baseline.

    The check runs on its own fresh state (the MLP steps update their parameters), so
    the returned step starts from the seeded inputs too.
    """
    # a compiled step is checked at a replay (its first two calls record)
    calls = 4 if impl == "compiled" else 1
    ref_step = target.make("numpy", inputs)
    for _ in range(calls):
        reference = ref_step()
    if impl != "numpy":
        try:
            step = target.make(impl, inputs)
            for _ in range(calls):
                result = step()
        except Exception as exc:
            raise AssertionError(f"{target.key} [{impl}] raised {type(exc).__name__} in its "
                                 f"checked first step: {exc}") from exc
        check_grads(target, impl, reference, result)
    return target.make(impl, inputs)
