"""The CUDA code path, run by default on the CuPy stand-in (``tests/cupy_standin``).

The stand-in serves ``cuda`` with arrays that refuse implicit conversion to NumPy and
count every host synchronization, so these tests check that (1) the CUDA path of the
backend, ops, ``sum_to`` and the optimizers gives the CPU's results, and (2) a
training step makes no host synchronization until the loss is read.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradcore as gc
import gradcore.nn.functional as F

from conftest import host


def _mlp():
    return gc.nn.Sequential(gc.nn.Linear(8, 16), gc.nn.Tanh(), gc.nn.Linear(16, 4))


def _train(device, loss_fn, target, optimizer, steps, standin=None):
    """A few training steps on ``device``; the losses and the synchronizations of each."""
    gc.manual_seed(0)
    model = _mlp().to(device)
    opt = optimizer(model.parameters())
    x = gc.tensor(np.random.default_rng(0).standard_normal((32, 8)), dtype=gc.float32,
                  device=device)
    y = gc.tensor(target, device=device)
    losses, syncs = [], []
    for _ in range(steps):
        if standin is not None:
            standin.reset_syncs(log=True)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if standin is not None:
            syncs.append(standin.sync_log())
        losses.append(loss.item())  # the one synchronization a step needs
    return losses, syncs, model


_OPTIMIZERS = {
    "sgd": lambda p: gc.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    "adam": lambda p: gc.optim.Adam(p, lr=0.01, amsgrad=True),
    "adamw": lambda p: gc.optim.AdamW(p, lr=0.01),
}
_MSE_TARGET = np.random.default_rng(1).standard_normal((32, 4)).astype(np.float32)
_CLASSES = np.arange(32) % 4


@pytest.mark.parametrize("opt", sorted(_OPTIMIZERS))
def test_training_step_makes_no_host_synchronization(standin, opt):
    losses, syncs, model = _train("cuda", F.mse_loss, _MSE_TARGET, _OPTIMIZERS[opt], 3,
                                  standin)
    assert syncs == [[], [], []]
    standin.reset_syncs()
    model(gc.zeros(1, 8, device="cuda")).sum().item()
    assert standin.host_syncs() == 1  # reading a value is one synchronization
    cpu_losses, _, cpu_model = _train("cpu", F.mse_loss, _MSE_TARGET, _OPTIMIZERS[opt], 3)
    np.testing.assert_allclose(losses, cpu_losses, rtol=1e-6)
    for (name, p), (_, q) in zip(model.named_parameters(), cpu_model.named_parameters()):
        assert p.device == gc.device("cuda") and type(p._data).__module__ == "cupy", name
        np.testing.assert_allclose(host(p), host(q), rtol=1e-5, atol=1e-6, err_msg=name)


def test_cross_entropy_step_makes_no_host_synchronization(standin):
    losses, syncs, _ = _train("cuda", F.cross_entropy, _CLASSES, _OPTIMIZERS["sgd"], 2,
                              standin)
    assert syncs == [[], []]


def test_cross_entropy_step_matches_cpu(standin):
    losses, _, model = _train("cuda", F.cross_entropy, _CLASSES, _OPTIMIZERS["adam"], 3)
    cpu_losses, _, cpu_model = _train("cpu", F.cross_entropy, _CLASSES, _OPTIMIZERS["adam"], 3)
    np.testing.assert_allclose(losses, cpu_losses, rtol=1e-6)
    for p, q in zip(model.parameters(), cpu_model.parameters()):
        np.testing.assert_allclose(host(p), host(q), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------
# ops: the stand-in's results against the CPU's, forward and backward
def _run(fn, arrays, device):
    """``fn`` on tensors made from ``arrays`` on ``device``: its output and the inputs'
    gradients (of the sum of the output times fixed weights), as NumPy arrays."""
    xs = [gc.tensor(a, device=device, requires_grad=a.dtype.kind == "f") for a in arrays]
    out = fn(*xs)
    assert out.device == gc.device(device)
    if out.requires_grad:
        w = np.random.default_rng(7).standard_normal(out.shape).astype(out._data.dtype)
        (out * gc.tensor(w, device=device)).sum().backward()
    grads = [host(x.grad) if x.grad is not None else None for x in xs]
    for x in xs:
        assert x.grad is None or x.grad.device == gc.device(device)
    return host(out), grads


def _compare(standin, fn, *arrays, rtol=1e-6, atol=1e-7):
    want, want_g = _run(fn, arrays, "cpu")
    standin.reset_syncs(log=True)
    got, got_g = _run(fn, arrays, "cuda")
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    for g, wg in zip(got_g, want_g):
        if wg is None:
            assert g is None
        else:
            np.testing.assert_allclose(g, wg, rtol=rtol, atol=atol)


def _r(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


_POINTWISE = {
    "tanh": gc.tanh, "sigmoid": gc.sigmoid, "exp": gc.exp, "relu": gc.relu,
    "log_abs": lambda x: gc.log(x.abs() + 1), "sqrt": lambda x: (x * x + 1).sqrt(),
    "pow": lambda x: x ** 3, "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "erf": gc.erf, "clamp": lambda x: x.clamp(-0.5, 0.5),
}


@pytest.mark.parametrize("name", sorted(_POINTWISE))
def test_pointwise_matches_cpu(standin, name):
    _compare(standin, _POINTWISE[name], _r(5, 7) * 2, rtol=1e-12, atol=1e-14)


def test_binary_broadcasting_and_sum_to_match_cpu(standin):
    a, b, c = _r(3, 1, 4), _r(4, seed=1), _r(2, 3, 5, 4, seed=2)[0, :, :1]
    _compare(standin, lambda a, b: a * b + a / (b * b + 1) - b, a, b)
    _compare(standin, lambda a, c: gc.maximum(a, c) * 2, a, c)
    # the gradient of a sum is a broadcast (stride 0): sum_to's fast path
    _compare(standin, lambda a, b: (a + b).sum(dim=0, keepdim=True) * b, _r(6, 4), b)
    _compare(standin, lambda a: a.expand(2, 3, 5, 4).sum(dim=(0, 2)), a)


@pytest.mark.parametrize("name,fn", [
    ("sum", lambda x: x.sum(dim=1)), ("mean", lambda x: x.mean()),
    ("max_dim", lambda x: x.max(dim=0).values), ("amax", lambda x: x.amax(dim=(0, 2))),
    ("var", lambda x: x.var(dim=-1)), ("softmax", lambda x: F.softmax(x, dim=-1)),
    ("log_softmax", lambda x: F.log_softmax(x, dim=1)), ("norm", lambda x: x.norm()),
    ("logsumexp", lambda x: x.logsumexp(dim=2)), ("prod", lambda x: x.prod(dim=1)),
])
def test_reductions_match_cpu(standin, name, fn):
    _compare(standin, fn, _r(3, 4, 5), rtol=1e-10, atol=1e-12)


def test_matmul_matches_cpu(standin):
    _compare(standin, lambda a, b: a @ b, _r(4, 5), _r(5, 3, seed=1), rtol=1e-12)
    _compare(standin, lambda a, b: a @ b, _r(2, 4, 5), _r(5, 3, seed=1), rtol=1e-12)
    _compare(standin, lambda a, b: a @ b, _r(5), _r(2, 5, 3, seed=1), rtol=1e-12)
    _compare(standin, lambda x, w, b: F.linear(x, w, b), _r(6, 5), _r(3, 5, seed=1),
             _r(3, seed=2), rtol=1e-12)


def test_indexing_with_repeated_indices_matches_cpu(standin):
    idx = np.array([0, 2, 0, 0, 3])
    x = _r(4, 3)
    _compare(standin, lambda x, i: x[i], x, idx)  # gradients accumulate (add.at)
    _compare(standin, lambda x, i: x[i, 1:], x, idx)
    _compare(standin, lambda x, i: x.index_select(0, i), x, idx)
    _compare(standin, lambda x, i: x.gather(1, i), x, np.array([[0, 0], [2, 1], [1, 1],
                                                                 [2, 2]]))
    _compare(standin, lambda w, i: F.embedding(i, w), x, np.array([[1, 1], [3, 1]]))
    _compare(standin, lambda x: x[1:, ::2] * 3, x)
    _compare(standin, lambda x: x.T[::-1], x)


def test_boolean_mask_indexing_matches_cpu(standin):
    x = _r(4, 3)
    _compare(standin, lambda x: x[x > 0], x)  # CuPy must read the count back: one sync


def test_inplace_and_views_match_cpu(standin):
    def f(x):
        y = x * 1
        y[1:3] *= 2
        y.T[0] += 1
        return y.reshape(-1)[::2]
    _compare(standin, f, _r(4, 3))


def test_layer_norm_and_losses_match_cpu(standin):
    _compare(standin, lambda x, w, b: F.layer_norm(x, (5,), w, b), _r(3, 5), _r(5, seed=1),
             _r(5, seed=2), rtol=1e-10, atol=1e-12)
    _compare(standin, lambda x, y: F.mse_loss(x, y), _r(3, 5), _r(3, 5, seed=1))
    _compare(standin, lambda x, y: F.binary_cross_entropy_with_logits(x, y), _r(3, 5),
             (_r(3, 5, seed=1) > 0).astype(np.float64), rtol=1e-12)
    _compare(standin, lambda x, t: F.cross_entropy(x, t), _r(6, 4), np.array([0, 3, 1, 1, 2, 0]),
             rtol=1e-12)


# ---------------------------------------------------------------------------------------
# moving between devices
def test_save_and_load_across_devices(standin, tmp_path):
    w = gc.tensor(_r(3, 4), device="cuda", requires_grad=True)
    b = gc.tensor(_r(4, seed=1), device="cpu")
    path = tmp_path / "ckpt.safetensors"
    standin.reset_syncs()
    gc.save({"w": w, "b": b, "n": 3}, path)
    assert standin.host_syncs() == 1  # writing w is one device-to-host copy
    plain = gc.load(path)  # to the CPU unless map_location says otherwise
    assert plain["w"].device == gc.device("cpu") and plain["n"] == 3
    np.testing.assert_array_equal(host(plain["w"]), host(w))
    on_gpu = gc.load(path, map_location="cuda")
    assert on_gpu["w"].device == gc.device("cuda") == on_gpu["b"].device
    assert on_gpu["w"].requires_grad
    np.testing.assert_array_equal(host(on_gpu["w"]), host(w))
    back = gc.load(path, map_location={"cuda": "cuda"})
    assert back["w"].device == gc.device("cuda") and back["b"].device == gc.device("cpu")
    np.testing.assert_array_equal(host(back["b"]), host(b))


def test_to_and_from_the_device(standin):
    a = _r(2, 3)
    t = gc.tensor(a).to("cuda")
    assert t.device == gc.device("cuda")
    assert type(t._data).__module__ == "cupy"
    np.testing.assert_array_equal(t.cpu().numpy(), a)
    np.testing.assert_array_equal(np.asarray(t.tolist()), a)
    with pytest.raises(RuntimeError, match="same device"):
        t + gc.tensor(a)


def test_the_standin_refuses_implicit_conversion(standin):
    arr = gc.zeros(3, device="cuda")._data
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray(arr)
    with pytest.raises(TypeError):
        standin.add(arr, np.zeros(3))  # a host array as a device operand
    standin.reset_syncs()
    float(arr[0]), bool(arr[1] == 0), arr.get(), arr.sum().item()
    assert standin.host_syncs() == 4


def test_the_standin_takes_scalar_indices_as_cupy_does(standin):
    """CuPy indexes with int() of a scalar (a float truncates, where NumPy refuses) and
    words an out-of-range one itself: "Index", not NumPy's "index"
    (cupy/_core/_routines_indexing.pyx, _view_getitem)."""
    arr = gc.arange(6.0, device="cuda").reshape(2, 3)._data
    assert arr[1.5].get().tolist() == [3.0, 4.0, 5.0]
    with pytest.raises(IndexError, match="^Index 5 is out of bounds for axis 0 with size 2$"):
        arr[5]
    with pytest.raises(IndexError, match="^Index -4 is out of bounds for axis 1 with size 3$"):
        arr[:, -4] = 1.0
    # a 0-d mask (True) names no axis: the integer array picks along axis 1
    assert arr[0, True, standin.asarray([2, 5])].get().tolist() == [2.0, 2.0]


def test_pos_weight_of_bce_with_logits_matches_cpu(standin):
    _compare(standin, lambda x, y, p: F.binary_cross_entropy_with_logits(x, y, pos_weight=p),
             _r(3, 5), (_r(3, 5, seed=1) > 0).astype(np.float64), np.abs(_r(5, seed=2)),
             rtol=1e-12)


def test_double_backward_of_split_with_an_unused_piece(standin):
    x = gc.tensor(_r(4, 3), device="cuda", requires_grad=True)
    a, _ = x.split(2)
    (g,) = gc.autograd.grad((a * a).sum(), x, create_graph=True)
    (g * g).sum().backward()
    np.testing.assert_allclose(host(x.grad)[:2], 8 * _r(4, 3)[:2])


def test_repr_names_the_device_like_pytorch(standin):
    t = gc.tensor([1.0, 2.0], device="cuda")
    assert repr(t) == "tensor([1., 2.], device='cuda:0')"


def test_the_standin_refuses_what_cupy_where_refuses(standin):
    """CuPy's ``where(condition, x, y)`` calls ``condition.astype('?', copy=False)``
    (cupy/_sorting/search.py): a Python bool raises ``AttributeError``, a NumPy array
    ``TypeError``; a NumPy scalar passes; ``where(condition)`` is ``nonzero``."""
    x = gc.ones(3, device="cuda")._data
    with pytest.raises(AttributeError, match="'bool' object has no attribute 'astype'"):
        standin.where(True, x, x)
    with pytest.raises(TypeError):
        standin.where(np.array([True, False, True]), x, x)
    np.testing.assert_array_equal(standin.where(np.bool_(False), x, 0).get(), [0, 0, 0])
    standin.reset_syncs()
    standin.where(x > 0)
    assert standin.host_syncs() == 1


def test_the_standin_synchronizes_where_cupy_does(standin):
    """``unravel_index`` checks its indices' range on the host; ``linalg.pinv`` zeroes
    small singular values by a boolean mask, which reads a count back."""
    standin.reset_syncs()
    standin.unravel_index(standin.arange(4), (2, 2))
    assert standin.host_syncs() == 1
    standin.linalg.pinv(standin.eye(2))
    assert standin.host_syncs() == 2


def test_the_standin_s_maximum_is_cuda_s(standin):
    """CuPy's float ``maximum``/``minimum`` are CUDA's ``max``/``min`` (NaN if either is
    NaN): -0.0 is below +0.0, whatever the order (NumPy gives its second operand)."""
    z = np.array([-0.0, 0.0], dtype=np.float32)
    a, b = standin.asarray(z), standin.asarray(z[::-1].copy())
    assert np.signbit(standin.maximum(a, b).get()).tolist() == [False, False]
    assert np.signbit(standin.minimum(a, b).get()).tolist() == [True, True]
    assert np.signbit(standin.maximum(0, a).get()).tolist() == [False, False]
    nan = standin.maximum(standin.asarray(np.array([np.nan, 1.0])), 0.0).get()
    assert np.isnan(nan[0]) and nan[1] == 1.0


def test_the_standin_s_frexp_flushes_float32_subnormals(standin):
    """CuPy compiles its kernels with ``-ftz=true``: a float32 subnormal reads as 0."""
    m, e = standin.frexp(standin.asarray(np.array([1e-40, 3.0], dtype=np.float32)))
    assert m.get().tolist() == [0.0, 0.75] and e.get().tolist() == [0, 2]
    m, e = standin.frexp(standin.asarray(np.array([1e-310])))  # float64: not flushed
    assert e.get().tolist() == [np.frexp(1e-310)[1]]
