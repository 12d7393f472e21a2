"""Temporary elision: ops write into operands that nobody else can see, and only those.

Large tensors (at least ``_elide.MIN_BYTES``) make the ops consider elision. Each
safety case keeps a reference to a would-be temporary in a different way; its values
must survive. The positive cases check that elision happens at all (it saves memory
traffic in every expression of large tensors) and that results and gradients are
those computed without it.
"""

import threading

import numpy as np
import pytest

import gradcore as gc
from gradcore.ops import _elide

from conftest import host

N = 256 * 1024  # float32 elements: 1 MiB, above the threshold

pytestmark = pytest.mark.skipif(not _elide.ENABLED, reason="temporary elision is off on "
                                "this Python (or GRADCORE_ELIDE=0)")


@pytest.fixture
def x():
    return gc.tensor(np.linspace(-1, 1, N, dtype=np.float32))


def _elisions(fn):
    before = _elide.count
    result = fn()
    return result, _elide.count - before


def test_expression_temporaries_are_reused(x):
    out, n = _elisions(lambda: gc.tanh(x * 2.0 - 1.0).relu())
    assert n == 3  # the subtraction, tanh and relu each reuse the previous temporary
    np.testing.assert_allclose(host(out), np.maximum(np.tanh(host(x) * 2 - 1), 0),
                               rtol=1e-6)


def test_named_tensor_is_never_overwritten(x):
    a = x * 2.0
    expected = host(a).copy()
    b = a - 1.0
    c = a.tanh()
    d = gc.tanh(a)
    e = 1.0 - a
    f = gc.sub(a, 3.0)
    g = a + a
    np.testing.assert_array_equal(host(a), expected)
    for t in (b, c, d, e, f, g):
        assert t._data is not a._data


def test_tensor_in_a_container_or_attribute_is_never_overwritten(x):
    box = [x * 2.0]

    class Holder:
        pass

    h = Holder()
    h.t = x * 3.0
    keep_box, keep_h = host(box[0]).copy(), host(h.t).copy()
    _ = box[0] - 1.0
    _ = h.t.tanh()
    _ = (lambda: h.t * 2.0)()
    np.testing.assert_array_equal(host(box[0]), keep_box)
    np.testing.assert_array_equal(host(h.t), keep_h)


def test_arrays_shared_with_numpy_or_detach_are_never_overwritten(x):
    exported = []

    def export(t):
        exported.append(t.detach().numpy())  # the user keeps the memory
        return t

    out = export(x * 2.0) - 1.0
    np.testing.assert_allclose(exported[0], host(x) * 2, rtol=1e-6)
    assert out._data is not exported[0]
    twins = []

    def twin(t):
        twins.append(t.detach())
        return t

    _ = twin(x * 2.0).tanh()
    np.testing.assert_allclose(host(twins[0]), host(x) * 2, rtol=1e-6)


def test_saved_for_backward_is_never_overwritten(x):
    w = gc.tensor(np.full(N, 0.5, np.float32), requires_grad=True)
    h = (x * w).tanh()          # tanh saves its output ...
    loss = (h + 1.0).sum()      # ... so h + 1 must not write into it
    loss.backward()
    t = np.tanh(host(x) * 0.5)
    np.testing.assert_allclose(host(w.grad), (1 - t * t) * host(x), rtol=1e-5, atol=1e-6)


def test_gradients_are_the_same_with_and_without_elision(x, monkeypatch):
    def run():
        w = gc.tensor(np.linspace(0.5, 1.5, N, dtype=np.float32), requires_grad=True)
        b = gc.tensor(np.linspace(-0.2, 0.2, N, dtype=np.float32), requires_grad=True)
        loss = (gc.tanh(x * w * 3.0 - 2.0) * x + b).relu().sum()
        loss.backward()
        return host(w.grad).copy(), host(b.grad).copy(), loss.item()

    (gw, gb, loss), n = _elisions(run)
    assert n > 0
    monkeypatch.setattr(_elide, "ENABLED", False)
    gw0, gb0, loss0 = run()
    np.testing.assert_array_equal(gw, gw0)
    np.testing.assert_array_equal(gb, gb0)
    assert loss == loss0


def test_other_threads_references_count(x):
    shared = {}
    ready, done = threading.Event(), threading.Event()

    def worker():
        shared["t"] = x * 2.0
        ready.set()
        done.wait()

    th = threading.Thread(target=worker)
    th.start()
    ready.wait()
    keep = host(shared["t"]).copy()
    _ = shared["t"] - 1.0
    done.set()
    th.join()
    np.testing.assert_array_equal(host(shared["t"]), keep)


def test_small_tensors_are_left_alone():
    small = gc.tensor(np.ones(16, np.float32))
    _, n = _elisions(lambda: (small * 2.0) - 1.0)
    assert n == 0


def test_backward_reuses_a_saved_output_only_when_it_is_dead(x):
    w = gc.tensor(np.full(N, 0.5, np.float32), requires_grad=True)
    loss = (gc.tanh(x * w) * 3.0).sum()
    _, n = _elisions(loss.backward)
    assert n == 1  # tanh's saved output was free: its memory held 1 - y**2
    t = np.tanh(host(x) * 0.5)
    np.testing.assert_allclose(host(w.grad), 3 * (1 - t * t) * host(x), rtol=1e-5,
                               atol=1e-6)

    w.grad = None
    h = gc.tanh(x * w)          # the user keeps the output ...
    keep = host(h).copy()
    (h * 3.0).sum().backward()
    np.testing.assert_array_equal(host(h), keep)  # ... so backward leaves it alone
    w.grad = None
    h2 = gc.tanh(x * w)
    loss = (h2 * 3.0).sum()
    del h2
    loss.backward(retain_graph=True)  # saved values stay: the output must too
    first = host(w.grad).copy()
    loss.backward()
    np.testing.assert_allclose(host(w.grad), 2 * first, rtol=1e-6)


# Every op that asks _elide.reusable, by each of its paths: (name, op of an operand that
# `make()` returns, as a temporary when make builds one and a name when it returns it).
_REUSING_OPS = [
    ("add float", lambda make: make() + 0.5),
    ("add int", lambda make: gc.add(make(), 2)),           # _binary: tensor, scalar
    ("add tensor", lambda make: gc.add(make(), make() * 1.0)),  # _into_temporary
    ("radd", lambda make: 0.5 + make()),
    ("sub float", lambda make: make() - 0.5),
    ("sub tensor", lambda make: gc.sub(make(), make() * 1.0)),
    ("mul float", lambda make: make() * 3.0),
    ("neg", lambda make: gc.neg(make())),  # (`-t` is not a call: never reused)
    ("tanh", lambda make: gc.tanh(make())),
    ("relu", lambda make: gc.relu(make())),
    ("exp", lambda make: gc.exp(make())),
    ("sqrt", lambda make: gc.sqrt(make())),
    ("expm1", lambda make: gc.expm1(make())),
    ("sign", lambda make: gc.sign(make())),
]


@pytest.mark.parametrize("op", [fn for _, fn in _REUSING_OPS],
                         ids=[name for name, _ in _REUSING_OPS])
def test_each_reusing_op_leaves_a_named_operand_alone(x, op):
    a = gc.exp(x)                 # a temporary once (positive, for sqrt), but named here
    keep = host(a).copy()
    out, n = _elisions(lambda: op(lambda: a))
    np.testing.assert_array_equal(host(a), keep)
    assert out._data is not a._data
    same, n_temp = _elisions(lambda: op(lambda: gc.exp(x)))
    assert n_temp > n  # unnamed, the same operand is reused
    np.testing.assert_array_equal(host(same), host(out))
