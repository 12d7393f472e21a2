"""tinygrad's op tests (test/backend/test_ops.py, written against PyTorch) run with
gradcore in tinygrad's place: each test's PyTorch function runs once with ``torch`` and
once with ``torch`` meaning gradcore (the tests' lambdas read the name when called),
and the forward values and input gradients are compared with the tests' tolerances.

    python dev/programs/tinygrad_ops.py PATH/TO/test_ops.py [-k substring] [-v]

tinygrad's own functions (a test's second lambda, ``Tensor`` used directly) are not
run; a test that builds tinygrad tensors itself fails here and is reported as such
("harness"), apart from gradcore's real failures.
"""

from __future__ import annotations

import argparse
import functools
import sys
import traceback
import types
import unittest

import numpy as np
import torch as real_torch

import gradcore


class _Switch(types.ModuleType):
    """``torch`` inside the tests: real PyTorch or gradcore, as ``use`` says."""

    def __init__(self):
        super().__init__("torch")
        self.__dict__["use"] = real_torch

    def __getattr__(self, name):
        return getattr(self.__dict__["use"], name)


class _Anything:
    """tinygrad's names the tests read at import: every attribute and call answers."""

    def __init__(self, *a, **k):
        pass

    def __getattr__(self, name):
        return _Anything()

    def __call__(self, *a, **k):
        return _Anything()

    def __getitem__(self, key):
        return _Anything()

    def __bool__(self):
        return False

    def __eq__(self, other):
        return False

    __lt__ = __le__ = __gt__ = __ge__ = __eq__

    def __iter__(self):
        return iter(())

    def __contains__(self, item):
        return False

    def __int__(self):
        return 0

    def __str__(self):
        return ""

    __hash__ = object.__hash__


class _Tinygrad(types.ModuleType):
    def __getattr__(self, name):
        if name == "getenv":
            return lambda key, default=0: default
        if name == "DEBUG":
            return 0
        if name == "NIRRenderer":
            return type("NIRRenderer", (), {})
        return _Anything()


def _install_stubs():
    for name in ("tinygrad", "tinygrad.helpers", "tinygrad.tensor", "tinygrad.renderer",
                 "tinygrad.renderer.nir", "tinygrad.nn", "tinygrad.nn.torch",
                 "tinygrad.device", "tinygrad.dtype", "tinygrad.engine",
                 "tinygrad.engine.realize", "tinygrad.uop", "tinygrad.uop.ops"):
        sys.modules[name] = _Tinygrad(name)
    sys.modules["tinygrad.tensor"]._to_np_dtype = lambda d: np.float32


SWITCH = _Switch()


def _prepare(low, high, shps, vals, forward_only=False):
    if shps is None:
        data = list(vals)  # (Python values: each library's own default dtypes)
    else:
        np.random.seed(0)
        data = [np.random.uniform(low=low, high=high, size=size).astype(np.float32)
                for size in shps]
    out = []
    for m in (real_torch, gradcore):
        ts = []
        for d in data:
            t = m.tensor(d)
            t.requires_grad_((not forward_only) and t.dtype.is_floating_point)
            if t.dtype == m.int64:
                t = t.type(m.int32)
            ts.append(t)
        out.append(ts)
    return out


def _as_gradcore(fxn):
    """A PyTorch function passed itself (``torch.sigmoid``, ``torch.Tensor.relu``,
    ``torch.nn.functional.gelu``) as gradcore's of the same name; a lambda as it is."""
    if isinstance(fxn, functools.partial):
        return functools.partial(_as_gradcore(fxn.func), *fxn.args, **fxn.keywords)
    if isinstance(fxn, types.FunctionType) and fxn.__module__ == "tinygrad_test_ops":
        return fxn
    name = getattr(fxn, "__name__", None) or ""
    qual = getattr(fxn, "__qualname__", "") or ""
    module = getattr(fxn, "__module__", None) or ""
    if qual.split(".")[0] in ("Tensor", "TensorBase", "_TensorBase"):
        return getattr(gradcore.Tensor, name)
    first = gradcore.nn.functional if "nn" in module else gradcore
    for gc_mod in (first, gradcore.nn.functional, gradcore):
        if hasattr(gc_mod, name):
            return getattr(gc_mod, name)
    return fxn


def _run(m, fxn, ts):
    if m is gradcore:
        fxn = _as_gradcore(fxn)
    SWITCH.__dict__["use"] = m
    try:
        return fxn(*ts)
    finally:
        SWITCH.__dict__["use"] = real_torch


def helper_test_op(shps, torch_fxn, tinygrad_fxn=None, atol=1e-6, rtol=1e-3, grad_atol=1e-4,
                   grad_rtol=1e-3, forward_only=False, vals=None, low=-2, high=2):
    ts, gs = _prepare(low, high, shps, vals, forward_only)
    want = _run(real_torch, torch_fxn, ts)
    got = _run(gradcore, torch_fxn, gs)

    def compare(what, g, w, atol, rtol):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, f"{what}: shape gradcore {g.shape} torch {w.shape}"
        assert g.dtype == w.dtype, f"{what}: dtype gradcore {g.dtype} torch {w.dtype}"
        if np.issubdtype(g.dtype, np.floating):
            np.testing.assert_allclose(g, w, atol=atol, rtol=rtol, err_msg=what)
        else:
            np.testing.assert_equal(g, w, err_msg=what)

    compare("forward", got.detach().cpu().numpy(), want.detach().cpu().numpy(), atol, rtol)
    grads_for = [i for i, t in enumerate(ts) if t.requires_grad]
    if forward_only or not grads_for:
        return
    tw = real_torch.autograd.grad(_run(real_torch, torch_fxn, ts).sum(),
                                  [ts[i] for i in grads_for], allow_unused=True)
    tg = gradcore.autograd.grad(_run(gradcore, torch_fxn, gs).sum(),
                                [gs[i] for i in grads_for], allow_unused=True)
    for i, (g, w) in enumerate(zip(tg, tw)):
        if w is None and g is None:
            continue
        assert (g is None) == (w is None), f"backward {i}: None on one side"
        compare(f"backward {i}", g.detach().cpu().numpy(), w.detach().cpu().numpy(),
                grad_atol, grad_rtol)


def helper_test_exception(self, shps, torch_fxn, tinygrad_fxn=None, expected=None,
                          forward_only=False, exact=False, vals=None, low=-1.5, high=1.5):
    ts, gs = _prepare(low, high, shps, vals, forward_only)
    try:
        _run(real_torch, torch_fxn, ts)
    except expected:
        pass
    else:
        raise unittest.SkipTest("PyTorch raises no such error (tinygrad's own check)")
    try:
        _run(gradcore, torch_fxn, gs)
    except expected:
        return
    raise AssertionError(f"gradcore raised no {expected}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("-k", default="")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    _install_stubs()
    sys.modules["torch"] = SWITCH
    src = open(a.path).read()
    ns = {"__name__": "tinygrad_test_ops"}
    exec(compile(src, a.path, "exec"), ns)
    sys.modules["torch"] = real_torch
    ns["helper_test_op"] = helper_test_op
    ns["prepare_test_op"] = _prepare
    ns["torch"] = SWITCH
    counts = {"passed": 0, "gradcore": 0, "harness": 0, "skipped": 0}
    failures = []
    for cls_name in ("TestOps",):
        cls = ns[cls_name]
        cls.helper_test_exception = helper_test_exception
        for name in sorted(n for n in dir(cls) if n.startswith("test_") and a.k in n):
            test = cls(name)
            try:
                getattr(test, name)()
                counts["passed"] += 1
            except unittest.SkipTest:
                counts["skipped"] += 1
            except Exception as e:  # noqa: BLE001
                tb = traceback.format_exc()
                harness = "_Anything" in tb or "tinygrad" in str(e)
                counts["harness" if harness else "gradcore"] += 1
                if not harness:
                    failures.append((name, f"{type(e).__name__}: {str(e)[:300]}"))
                    if a.v:
                        print(tb)
    for name, msg in failures:
        print(f"FAIL {name}: {msg}")
    print(counts)


if __name__ == "__main__":
    main()
