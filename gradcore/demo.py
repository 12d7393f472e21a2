"""``make demo``: train a small network with raw tensors on the best available device.

Until ``gradcore train`` lands (nn, optim and the digits data set), the demo trains a
two-layer MLP on a synthetic two-spirals problem, written with nothing but tensors,
autograd and a hand-written SGD step, and reports loss, accuracy and speed.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import gradcore as gc


def spirals(n_per_class: int, rng: np.random.Generator):
    """Two interleaved spirals: a problem a linear model cannot solve."""
    t = rng.uniform(0.25, 1.0, n_per_class) * 3 * np.pi
    arm = np.stack([t * np.cos(t), t * np.sin(t)], axis=1) / (3 * np.pi)
    x = np.concatenate([arm, -arm]) + rng.normal(0, 0.02, (2 * n_per_class, 2))
    y = np.concatenate([np.zeros(n_per_class), np.ones(n_per_class)]).astype(np.int64)
    return x.astype(np.float32), y


def cross_entropy(logits, targets):
    """Mean softmax cross-entropy of integer targets."""
    logp = logits - logits.logsumexp(1, keepdim=True)
    return -logp.gather(1, targets.unsqueeze(1)).mean()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=300)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    dev = gc.get_default_device()
    print(f"gradcore {gc.__version__} on {dev}"
          + ("" if gc.cuda.is_available() else f" (no GPU: {gc.cuda.unavailable_reason()})"))
    rng = np.random.default_rng(args.seed)
    x_np, y_np = spirals(500, rng)
    order = rng.permutation(len(y_np))
    split = int(0.8 * len(order))
    tr, te = order[:split], order[split:]
    x, y = gc.tensor(x_np[tr], device=dev), gc.tensor(y_np[tr], device=dev)
    xt, yt = gc.tensor(x_np[te], device=dev), gc.tensor(y_np[te], device=dev)

    gc.manual_seed(args.seed)
    h = args.hidden
    params = [gc.randn(2, h) * (2 / 2) ** 0.5, gc.zeros(h), gc.randn(h, h) * (2 / h) ** 0.5,
              gc.zeros(h), gc.randn(h, 2) * (1 / h) ** 0.5, gc.zeros(2)]
    for q in params:
        q.requires_grad_()

    def forward(inp):
        w1, b1, w2, b2, w3, b3 = params
        return ((inp @ w1 + b1).tanh() @ w2 + b2).relu() @ w3 + b3

    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        loss = cross_entropy(forward(x), y)
        loss.backward()
        with gc.no_grad():
            for q in params:
                q -= args.lr * q.grad
                q.grad = None
        if epoch % 50 == 0 or epoch == 1:
            with gc.no_grad():
                acc = (forward(xt).argmax(1) == yt).float().mean().item()
            print(f"epoch {epoch:4d}  loss {loss.item():.4f}  held-out accuracy {acc:.1%}")
    elapsed = time.perf_counter() - start
    print(f"{args.epochs} steps in {elapsed:.2f} s "
          f"({args.epochs * len(tr) / elapsed:,.0f} samples/s) on {dev}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
