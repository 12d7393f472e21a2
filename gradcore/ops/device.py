"""Copies: ``clone`` and moves between devices (differentiable)."""

from __future__ import annotations

from .. import backend
from ..backend import Device, math_of
from ._core import Node, mode, record, wrap


class CloneBackward0(Node):
    def apply(self, F, g):
        return (g,)


def clone(x, out=None):
    """A copy of ``x`` with its own memory (``out``: that copy, made by the caller in
    another layout)."""
    out = x._data.copy() if out is None else out
    if not (mode.enabled and x._rg):
        return wrap(out)
    return record(out, CloneBackward0, x)


class ToCopyBackward0(Node):
    def apply(self, F, g):
        return (F.to_device(g, self.src_device),)


def _to_host(arr):
    # backend.to_host read at each call: gradcore.profile replaces it while counting
    return backend.to_host(arr).copy() if arr is not None else None


def to_device(x, dev: Device):
    """``x`` copied to ``dev``; the gradient flows back to ``x``'s device."""
    src = x.device
    xd = x._data
    out = dev.asarray(xd) if dev.type == "cuda" else _to_host(xd)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record(out, ToCopyBackward0, x)
    t.grad_fn.src_device = src
    return t


__all__ = ["clone", "to_device", "math_of"]
