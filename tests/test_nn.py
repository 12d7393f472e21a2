"""gradcore.nn against torch.nn: parameter names and order, forward values and the
gradients of inputs and parameters (parameters copied from PyTorch's modules), state
dicts, strict loading errors, train/eval, zero_grad, to(), repr, containers and the
initializers' bounds and statistics.  Comparisons with PyTorch skip, with a reason,
when it is not installed."""

from __future__ import annotations

import math
import re
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import gradcore as gc
import gradcore.nn.functional as F
from gradcore import nn

from conftest import host, needs_pinned_torch, needs_torch


def _torch():
    import torch
    return torch


def _copy_from_torch(gmod, tmod):
    """Load PyTorch's parameters and buffers into the gradcore module (float64)."""
    state = {k: gc.tensor(v.detach().numpy()) for k, v in tmod.state_dict().items()}
    result = gmod.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []


def _compare_module(gmod, tmod, inputs, grad_inputs=True, rtol=1e-10, atol=1e-12):
    """Same forward values, input gradients and parameter gradients."""
    torch = _torch()
    tmod = tmod.double()
    gmod = gmod.double()
    _copy_from_torch(gmod, tmod)
    g_in = [gc.tensor(a, requires_grad=grad_inputs and a.dtype.kind == "f") for a in inputs]
    t_in = [torch.tensor(a, requires_grad=grad_inputs and a.dtype.kind == "f")
            for a in inputs]
    gout, tout = gmod(*g_in), tmod(*t_in)
    assert tuple(gout.shape) == tuple(tout.shape)
    np.testing.assert_allclose(host(gout), tout.detach().numpy(), rtol=rtol, atol=atol)
    u = np.random.default_rng(0).standard_normal(tuple(tout.shape))
    gout.backward(gc.tensor(u))
    tout.backward(torch.tensor(u))
    for a, b in zip(g_in, t_in):
        if b.grad is not None:
            np.testing.assert_allclose(host(a.grad), b.grad.numpy(), rtol=rtol, atol=atol)
    tparams = dict(tmod.named_parameters())
    gparams = dict(gmod.named_parameters())
    assert list(gparams) == list(tparams)
    for name, tp in tparams.items():
        gp = gparams[name]
        if tp.grad is None:
            assert gp.grad is None or not np.any(host(gp.grad))
        else:
            np.testing.assert_allclose(host(gp.grad), tp.grad.numpy(), rtol=rtol, atol=atol,
                                       err_msg=name)


RNG = np.random.default_rng(99)
X = RNG.standard_normal((4, 6))
X3 = RNG.standard_normal((2, 3, 6))
TOKENS = np.array([[1, 4, 4], [0, 9, 1]])
TARGET = np.array([2, 0, 4, 4])


def _zoo(m):
    """The same modules built with gradcore's nn or torch's (``m`` is the nn module)."""
    return {
        "linear": (lambda: m.Linear(6, 5), [X]),
        "linear_3d": (lambda: m.Linear(6, 5), [X3]),
        "linear_no_bias": (lambda: m.Linear(6, 2, bias=False), [X]),
        "embedding": (lambda: m.Embedding(10, 4), [TOKENS]),
        "embedding_padding": (lambda: m.Embedding(10, 4, padding_idx=4), [TOKENS]),
        "layer_norm": (lambda: m.LayerNorm(6), [X3]),
        "layer_norm_2d": (lambda: m.LayerNorm([3, 6], eps=1e-3), [X3]),
        "layer_norm_no_affine": (lambda: m.LayerNorm(6, elementwise_affine=False), [X]),
        "layer_norm_no_bias": (lambda: m.LayerNorm(6, bias=False), [X]),
        "relu": (lambda: m.ReLU(), [X]),
        "tanh": (lambda: m.Tanh(), [X]),
        "sigmoid": (lambda: m.Sigmoid(), [X]),
        "gelu": (lambda: m.GELU(), [X]),
        "gelu_tanh": (lambda: m.GELU(approximate="tanh"), [X]),
        "softplus": (lambda: m.Softplus(), [X]),
        "softplus_threshold": (lambda: m.Softplus(beta=2.0, threshold=1.0), [X]),
        "softmax": (lambda: m.Softmax(dim=-1), [X3]),
        "log_softmax": (lambda: m.LogSoftmax(dim=1), [X]),
        "flatten": (lambda: m.Flatten(), [X3]),
        "flatten_range": (lambda: m.Flatten(0, 1), [X3]),
        "identity": (lambda: m.Identity(), [X]),
        "dropout_eval": (lambda: m.Dropout(0.5).eval(), [X]),
        "mse": (lambda: m.MSELoss(), [X, X[::-1].copy()]),
        "mse_sum": (lambda: m.MSELoss(reduction="sum"), [X, X[::-1].copy()]),
        "cross_entropy": (lambda: m.CrossEntropyLoss(), [X[:, :5].copy(), TARGET]),
        "cross_entropy_options": (lambda: m.CrossEntropyLoss(ignore_index=4,
                                                             label_smoothing=0.15,
                                                             reduction="sum"),
                                  [X[:, :5].copy(), TARGET]),
        "nll": (lambda: m.NLLLoss(reduction="none"), [X[:, :5].copy(), TARGET]),
        "bce_logits": (lambda: m.BCEWithLogitsLoss(), [X, (X > 0).astype(np.float64)]),
        "mlp": (lambda: m.Sequential(m.Linear(6, 8), m.ReLU(), m.Linear(8, 8), m.GELU(),
                                     m.LayerNorm(8), m.Linear(8, 3)), [X]),
        "nested": (lambda: m.Sequential(m.Sequential(m.Linear(6, 4), m.Tanh()),
                                        m.ModuleList([m.Linear(4, 4)])[0], m.Sigmoid()), [X]),
    }


@needs_torch
@pytest.mark.parametrize("name", sorted(_zoo(nn)))
def test_module_matches_pytorch(name, device):
    torch = _torch()
    g_make, inputs = _zoo(nn)[name]
    t_make, _ = _zoo(torch.nn)[name]
    _compare_module(g_make(), t_make(), inputs)


@needs_pinned_torch
@pytest.mark.parametrize("name", sorted(_zoo(nn)))
def test_repr_matches_pytorch(name):
    torch = _torch()
    assert repr(_zoo(nn)[name][0]()) == repr(_zoo(torch.nn)[name][0]())


@needs_pinned_torch
def test_repr_of_nested_containers_and_options_matches_pytorch():
    torch = _torch()

    def build(m):
        return m.Sequential(
            m.Linear(3, 2, bias=False), m.ReLU(inplace=True),
            m.ModuleList([m.Linear(2, 2), m.Linear(2, 2), m.Linear(2, 2), m.Tanh(),
                          m.Sequential(m.Dropout(0.25), m.Softmax(1))]),
            m.Embedding(5, 2, padding_idx=0, max_norm=1.0, scale_grad_by_freq=True),
            m.LayerNorm((2, 3), elementwise_affine=False), m.Softmax(), m.Flatten(),
            m.CrossEntropyLoss(weight=torch.ones(2) if m is torch.nn else gc.ones(2)),
            m.ModuleList(), m.Sequential(), m.GELU(), m.Softplus(beta=2.0))
    assert repr(build(nn)) == repr(build(torch.nn))


# ---- names, order, traversal ----------
def _block(m):
    """The same architecture as a subclass of gradcore's or torch's ``nn.Module``."""
    class Block(m.Module):
        def __init__(self):
            super().__init__()
            self.norm = m.LayerNorm(4)
            self.proj = m.Linear(4, 4)
            self.layers = m.ModuleList([m.Linear(4, 4), m.ReLU(), m.Linear(4, 4, bias=False)])
            self.head = m.Sequential(OrderedDict([("fc", m.Linear(4, 2)),
                                                  ("act", m.Sigmoid())]))
            self.tied = self.proj  # the same module twice: listed once
    return Block()


@needs_torch
def test_named_parameters_modules_and_children_match_pytorch():
    torch = _torch()
    g, t = _block(nn), _block(torch.nn)
    assert [(n, tuple(p.shape)) for n, p in g.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in t.named_parameters()]
    assert [n for n, _ in g.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in g.named_children()] == [n for n, _ in t.named_children()]
    assert len(list(g.parameters())) == len(list(t.parameters()))
    assert len(list(g.modules())) == len(list(t.modules()))
    assert [type(c).__name__ for c in g.children()] == \
        [type(c).__name__ for c in t.children()]
    assert list(g.state_dict()) == list(t.state_dict())
    assert [n for n, _ in g.named_parameters(remove_duplicate=False)] == \
        [n for n, _ in t.named_parameters(remove_duplicate=False)]
    assert [n for n, _ in g.named_parameters(prefix="model", recurse=False)] == \
        [n for n, _ in t.named_parameters(prefix="model", recurse=False)]


def test_named_parameters_lists_a_shared_parameter_once(device):
    lin = nn.Linear(3, 3)
    model = nn.Sequential(lin, nn.ReLU(), lin)
    assert [n for n, _ in model.named_parameters()] == ["0.weight", "0.bias"]
    assert len(list(model.parameters())) == 2
    assert [n for n, _ in model.named_modules()] == ["", "0", "1"]
    assert list(model.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_registration_follows_assignment_and_reassignment(device):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.b = nn.Parameter(gc.zeros(2))
            self.a = nn.Linear(2, 2)
            self.register_buffer("running", gc.ones(2))
            self.register_buffer("scratch", gc.zeros(2), persistent=False)
            self.plain = 3

    m = M()
    assert [n for n, _ in m.named_parameters()] == ["b", "a.weight", "a.bias"]
    assert [n for n, _ in m.named_buffers()] == ["running", "scratch"]
    assert list(m.state_dict()) == ["b", "running", "a.weight", "a.bias"]
    m.b = None
    assert [n for n, _ in m.named_parameters()] == ["a.weight", "a.bias"]
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'b'"):
        m.b = gc.zeros(2)
    m.a = nn.ReLU()  # a module replaces a module
    assert list(m.state_dict()) == ["running"]
    m.running = gc.full((2,), 5.0)  # buffers stay buffers when reassigned
    assert "running" in m.state_dict()
    del m.a
    assert not hasattr(m, "a") and m.plain == 3
    with pytest.raises(AttributeError, match="'M' object has no attribute 'missing'"):
        m.missing  # noqa: B018

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(gc.zeros(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        nn.ModuleList([nn.ReLU()])(gc.zeros(1))


# ---- state dicts ----------
def test_state_dict_shares_memory_is_detached_and_round_trips(device):
    gc.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.LayerNorm(3), nn.Linear(3, 2))
    sd = model.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["0.weight", "0.bias", "1.weight", "1.bias", "2.weight", "2.bias"]
    assert all(not t.requires_grad and t.grad_fn is None for t in sd.values())
    with gc.no_grad():
        sd["0.bias"][0] = 7.0  # the state dict views the parameter's memory
    assert model[0].bias[0].item() == 7.0
    other = nn.Sequential(nn.Linear(4, 3), nn.LayerNorm(3), nn.Linear(3, 2))
    x = gc.randn(5, 4)
    assert not np.allclose(host(other(x).detach()), host(model(x).detach()))
    result = other.load_state_dict(sd)
    assert repr(result) == "<All keys matched successfully>"
    assert result.missing_keys == [] and result.unexpected_keys == []
    np.testing.assert_array_equal(host(other(x).detach()), host(model(x).detach()))
    # copied, not shared: the loaded model has its own memory
    with gc.no_grad():
        sd["2.bias"].fill_(0.0)
    assert np.any(host(other[2].bias.detach()))
    weights = model.state_dict(keep_vars=True)
    assert weights["0.weight"] is model[0].weight


def test_load_state_dict_copies_in_place_keeping_parameter_objects(device):
    model = nn.Linear(2, 2)
    w = model.weight
    model.load_state_dict({"weight": gc.ones(2, 2, dtype=gc.float64), "bias": [1.0, 2.0]})
    assert model.weight is w and w.dtype == gc.float32 and w.requires_grad
    np.testing.assert_array_equal(host(w.detach()), np.ones((2, 2)))
    np.testing.assert_array_equal(host(model.bias.detach()), [1.0, 2.0])


def _torch_message(msg):
    """PyTorch's error with its shapes written as gradcore's tuples."""
    def shape(m):
        dims = [d.strip() for d in m.group(1).split(",") if d.strip()]
        return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"
    return re.sub(r"torch\.Size\(\[([^\]]*)\]\)", shape, msg)


@needs_torch
def test_strict_load_errors_match_pytorchs_message():
    torch = _torch()

    def build(m):
        return m.Sequential(m.Linear(2, 3), m.ReLU(), m.Linear(3, 1))

    def bad_state(m):
        tensor = torch.zeros if m is torch.nn else gc.zeros
        return OrderedDict([("0.weight", tensor(2, 2)), ("0.bias", tensor(3)),
                            ("2.weight", tensor(1, 3)), ("extra.weight", tensor(1)),
                            ("2.bias", tensor(4)), ("more", tensor(1))])

    state_g = bad_state(nn)
    del state_g["0.bias"]
    state_t = bad_state(torch.nn)
    del state_t["0.bias"]
    with pytest.raises(RuntimeError) as g_err:
        build(nn).load_state_dict(state_g)
    with pytest.raises(RuntimeError) as t_err:
        build(torch.nn).load_state_dict(state_t)
    assert str(g_err.value) == _torch_message(str(t_err.value))
    assert '"0.bias"' in str(g_err.value) and '"extra.weight", "more"' in str(g_err.value)
    # strict=False: shape mismatches are still errors, key mismatches are not
    with pytest.raises(RuntimeError) as g_err:
        build(nn).load_state_dict(state_g, strict=False)
    with pytest.raises(RuntimeError) as t_err:
        build(torch.nn).load_state_dict(state_t, strict=False)
    assert str(g_err.value) == _torch_message(str(t_err.value))
    assert "size mismatch for 0.weight: copying a param with shape (2, 2) from checkpoint, " \
           "the shape in current model is (3, 2)." in str(g_err.value)


def test_non_strict_load_reports_missing_and_unexpected_keys(device):
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    state = model.state_dict()
    del state["1.bias"]
    state["1.scale"] = gc.ones(1)
    result = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2)).load_state_dict(state,
                                                                           strict=False)
    assert result == (["1.bias"], ["1.scale"])
    assert result.missing_keys == ["1.bias"] and result.unexpected_keys == ["1.scale"]
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "1.bias"'):
        nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2)).load_state_dict(state)


def test_buffers_are_saved_loaded_and_moved(device):
    loss = nn.CrossEntropyLoss(weight=gc.tensor([1.0, 2.0]))
    assert list(loss.state_dict()) == ["weight"]
    assert list(nn.CrossEntropyLoss().state_dict()) == []

    class WithStats(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)
            self.register_buffer("count", gc.tensor([3]))
            self.register_buffer("mean", gc.zeros(2))

    m = WithStats()
    m.load_state_dict({**m.state_dict(), "mean": gc.tensor([1.0, 2.0])})
    np.testing.assert_array_equal(host(m.mean), [1.0, 2.0])
    m.double()
    assert m.mean.dtype == gc.float64 and m.count.dtype == gc.int64  # ints keep their type
    assert m.lin.weight.dtype == gc.float64


# ---- modes, gradients, dtypes ----------
def test_train_and_eval_switch_every_module_and_dropout(device):
    model = nn.Sequential(nn.Linear(50, 50), nn.Dropout(0.5), nn.Sequential(nn.Dropout(0.2)))
    assert model.training and all(m.training for m in model.modules())
    assert model.eval() is model
    assert not any(m.training for m in model.modules())
    x = gc.ones(8, 50)
    gc.manual_seed(0)
    a, b = host(model(x).detach()), host(model(x).detach())
    np.testing.assert_array_equal(a, b)  # deterministic in eval mode
    model.train()
    assert all(m.training for m in model.modules())
    drop = model[1]
    y = host(drop(x))
    assert 0.35 < (y == 0).mean() < 0.65 and set(np.unique(y).tolist()) <= {0.0, 2.0}
    drop.train(False)
    assert drop(x) is x
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        model.train("yes")


def test_zero_grad_sets_none_or_zeros_in_place(device):
    model = nn.Linear(3, 2)
    model(gc.randn(4, 3)).sum().backward()
    grad = model.weight.grad
    model.zero_grad(set_to_none=False)
    assert model.weight.grad is grad and not np.any(host(grad))
    model.zero_grad()
    assert model.weight.grad is None and model.bias.grad is None


def test_to_converts_in_place_and_keeps_parameter_objects(device):
    model = nn.Sequential(nn.Linear(3, 2), nn.LayerNorm(2))
    params = list(model.parameters())
    model(gc.randn(4, 3)).sum().backward()
    assert model.to(gc.float64) is model
    assert [p for p in model.parameters()] == params
    assert all(p.dtype == gc.float64 and p.grad.dtype == gc.float64 for p in params)
    assert all(p.is_leaf and p.requires_grad for p in params)
    out = model(gc.randn(4, 3, dtype=gc.float64))
    assert out.dtype == gc.float64
    model.to(dtype=gc.float16)
    assert model[0].weight.dtype == gc.float16
    model.float().to(device)
    assert model[0].weight.dtype == gc.float32 and model[0].weight.device == gc.device(device)
    assert model.to(device, gc.float64)[1].bias.dtype == gc.float64
    with pytest.raises(TypeError, match="floating point"):
        model.to(gc.int64)


# ---- containers ----------
def test_sequential_indexing_and_editing(device):
    a, b, c = nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1)
    seq = nn.Sequential(a, b, c)
    assert len(seq) == 3 and seq[0] is a and seq[-1] is c and list(seq) == [a, b, c]
    head = seq[:2]
    assert isinstance(head, nn.Sequential) and list(head) == [a, b]
    with pytest.raises(IndexError):
        seq[3]  # noqa: B018
    seq.append(nn.Sigmoid())
    assert len(seq) == 4 and [n for n, _ in seq.named_children()] == ["0", "1", "2", "3"]
    del seq[1]
    assert list(seq)[:2] == [a, c] and [n for n, _ in seq.named_children()] == ["0", "1", "2"]
    seq.insert(1, nn.Tanh())
    assert isinstance(seq[1], nn.Tanh) and len(seq) == 4
    seq[1] = nn.ReLU()
    assert isinstance(seq[1], nn.ReLU)
    named = nn.Sequential(OrderedDict([("inp", nn.Linear(2, 3)), ("out", nn.Linear(3, 1))]))
    assert [n for n, _ in named.named_parameters()] == ["inp.weight", "inp.bias",
                                                       "out.weight", "out.bias"]
    assert named(gc.randn(5, 2)).shape == (5, 1)


def test_module_list_registers_its_modules(device):
    class Tower(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])

        def forward(self, x):
            for block in self.blocks:
                x = block(x).tanh()
            return x

    t = Tower()
    assert len(t.blocks) == 3 and len(list(t.parameters())) == 6
    assert [n for n, _ in t.named_parameters()][:3] == ["blocks.0.weight", "blocks.0.bias",
                                                       "blocks.1.weight"]
    t.blocks.append(nn.Linear(2, 2))
    t.blocks.extend([nn.Linear(2, 2)])
    assert len(list(t.parameters())) == 10 and t.blocks[-1] is list(t.blocks)[4]
    assert t(gc.randn(3, 2)).shape == (3, 2)
    assert isinstance(t.blocks[1:3], nn.ModuleList) and len(t.blocks[1:3]) == 2


# ---- end to end ----------
@needs_torch
def test_training_steps_follow_pytorch(device):
    """Five steps of plain gradient descent on an MLP with a cross-entropy loss: the
    same weights as PyTorch's afterwards."""
    torch = _torch()

    def build(m):
        return m.Sequential(m.Linear(6, 16), m.ReLU(), m.Linear(16, 16), m.GELU(),
                            m.LayerNorm(16), m.Linear(16, 5))

    tmodel = build(torch.nn).double()
    gmodel = build(nn).double()
    _copy_from_torch(gmodel, tmodel)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((32, 6))
    y = rng.integers(0, 5, 32)
    for _ in range(5):
        tloss = torch.nn.functional.cross_entropy(tmodel(torch.tensor(x)), torch.tensor(y),
                                                  label_smoothing=0.05)
        tmodel.zero_grad()
        tloss.backward()
        gloss = F.cross_entropy(gmodel(gc.tensor(x)), gc.tensor(y), label_smoothing=0.05)
        gmodel.zero_grad()
        gloss.backward()
        np.testing.assert_allclose(gloss.item(), tloss.item(), rtol=1e-12)
        with torch.no_grad():
            for p in tmodel.parameters():
                p -= 0.5 * p.grad
        with gc.no_grad():
            for p in gmodel.parameters():
                p -= 0.5 * p.grad
    for (name, gp), (_, tp) in zip(gmodel.named_parameters(), tmodel.named_parameters()):
        np.testing.assert_allclose(host(gp.detach()), tp.detach().numpy(), rtol=1e-10,
                                   atol=1e-12, err_msg=name)


def test_a_small_classifier_learns(device):
    gc.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 2))
    y = (x[:, 0] * x[:, 1] > 0).astype(np.int64)  # XOR of the signs: not linearly separable
    model = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 2))
    xs, ys = gc.tensor(x, dtype=gc.float32), gc.tensor(y)
    for _ in range(300):
        loss = F.cross_entropy(model(xs), ys)
        model.zero_grad()
        loss.backward()
        with gc.no_grad():
            for p in model.parameters():
                p -= 0.5 * p.grad
    accuracy = (host(model(xs).argmax(1)) == y).mean()
    assert accuracy > 0.95


# ---- init ----------
def test_linear_embedding_and_layer_norm_initialization(device):
    gc.manual_seed(1)
    lin = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)  # kaiming_uniform_(a=sqrt(5)) and the bias rule agree here
    w, b = host(lin.weight.detach()), host(lin.bias.detach())
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound  # std of U(-a, a): a/sqrt(3)
    assert np.abs(b).max() <= bound and abs(w.mean()) < 0.01 * bound
    assert lin.weight.is_leaf and lin.weight.grad_fn is None and lin.weight.requires_grad
    emb = host(nn.Embedding(1000, 50, padding_idx=3).weight.detach())
    assert abs(emb.mean()) < 0.01 and abs(emb.std() - 1) < 0.01
    assert not np.any(emb[3])
    ln = nn.LayerNorm(5)
    np.testing.assert_array_equal(host(ln.weight.detach()), np.ones(5))
    np.testing.assert_array_equal(host(ln.bias.detach()), np.zeros(5))
    assert nn.Linear(3, 2, dtype=gc.float64).weight.dtype == gc.float64


def test_init_functions_bounds_statistics_and_reproducibility(device):
    init = nn.init
    t = gc.empty(300, 200)
    assert init.kaiming_uniform_(t) is t
    # a=0 is the slope: gain sqrt(2), as in PyTorch (0.01 is the slope only for a=None;
    # the bound used to be that one's, and the draw passed or not with the seed's state)
    bound = math.sqrt(2.0) * math.sqrt(3.0 / 200)
    v = host(t)
    assert np.abs(v).max() <= bound and np.abs(v).max() > 0.99 * bound
    init.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu")
    bound = math.sqrt(2.0) * math.sqrt(3.0 / 300)
    assert np.abs(host(t)).max() <= bound
    init.xavier_uniform_(t, gain=2.0)
    bound = 2.0 * math.sqrt(6.0 / 500)
    assert bound * 0.99 < np.abs(host(t)).max() <= bound
    init.xavier_normal_(t)
    assert abs(host(t).std() - math.sqrt(2.0 / 500)) < 0.02 * math.sqrt(2.0 / 500)
    init.kaiming_normal_(t, nonlinearity="relu")
    assert abs(host(t).std() - math.sqrt(2.0 / 200)) < 0.02 * math.sqrt(2.0 / 200)
    init.normal_(t, mean=3.0, std=0.5)
    assert abs(host(t).mean() - 3.0) < 0.01 and abs(host(t).std() - 0.5) < 0.01
    init.uniform_(t, -2.0, -1.0)
    assert host(t).min() >= -2.0 and host(t).max() < -1.0
    init.trunc_normal_(t, std=1.0, a=-0.5, b=0.5)
    assert np.abs(host(t)).max() <= 0.5
    for fn, value in ((init.zeros_, 0.0), (init.ones_, 1.0),
                      (lambda x: init.constant_(x, 2.5), 2.5)):
        assert fn(t) is t
        assert np.all(host(t) == value)
    init.eye_(t)
    np.testing.assert_array_equal(host(t), np.eye(300, 200))
    gc.manual_seed(7)
    a = host(init.normal_(gc.empty(4, 4))).copy()
    gc.manual_seed(7)
    np.testing.assert_array_equal(host(init.normal_(gc.empty(4, 4))), a)



DEPRECATED_INITS = ["uniform", "normal", "constant", "eye", "dirac", "xavier_uniform",
                    "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal",
                    "sparse"]


@pytest.mark.parametrize("old", DEPRECATED_INITS)
def test_init_s_deprecated_names_warn_as_pytorch_and_call_the_new_ones(old):
    args = {"constant": (0.5,), "sparse": (0.5,)}.get(old, ())
    shape = (2, 3, 3) if old == "dirac" else (4, 6)
    gc.manual_seed(3)
    expected = host(getattr(nn.init, old + "_")(gc.empty(*shape), *args)).copy()
    gc.manual_seed(3)
    t = gc.empty(*shape)
    with pytest.warns(FutureWarning) as record:
        assert getattr(nn.init, old)(t, *args) is t
    assert str(record[0].message) == (f"`nn.init.{old}` is now deprecated in favor of "
                                      f"`nn.init.{old}_`.")
    assert record[0].filename == __file__  # (stacklevel: the caller's line)
    np.testing.assert_array_equal(host(t), expected)
    assert old in nn.init.__all__


@pytest.mark.parametrize("mean, std, a, b", [(0.0, 1.0, -2.0, 2.0), (0.0, 1.0, 1.5, 3.0),
                                             (0.5, 2.0, -1.0, 0.2), (0.0, 1.0, 3.0, 4.0)])
def test_trunc_normal_has_the_truncated_normal_s_distribution(mean, std, a, b):
    """Both of PyTorch's samplers (normal redraws when [a, b] holds over 30% of the mass,
    uniform proposals accepted by density otherwise): values in [a, b] whose empirical
    CDF is the truncated normal's (Kolmogorov-Smirnov distance), even four std out."""
    gc.manual_seed(0)
    n = 20000
    warn = mean < a - 2 * std or mean > b + 2 * std
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if warn:
            with pytest.warns(UserWarning, match="mean is more than 2 std from"):
                t = nn.init.trunc_normal_(gc.empty(n, dtype=gc.float64), mean, std, a, b)
        else:
            t = nn.init.trunc_normal_(gc.empty(n, dtype=gc.float64), mean, std, a, b)
    x = np.sort(host(t))
    assert a <= x[0] and x[-1] <= b
    cdf = np.vectorize(lambda z: 0.5 * (1 + math.erf((z - mean) / (std * math.sqrt(2)))))
    lo, hi = cdf(a), cdf(b)
    expected = (cdf(x) - lo) / (hi - lo)
    distance = np.max(np.maximum(np.arange(1, n + 1) / n - expected,
                                 expected - np.arange(n) / n))
    assert distance < 1.63 / math.sqrt(n)  # (the 1% critical value)


def test_init_writes_into_parameters_without_recording(device):
    p = nn.Parameter(gc.zeros(3, 4))
    v0 = p._version
    out = nn.init.uniform_(p, -1, 1)
    assert out is p and p.is_leaf and p.grad_fn is None and p.requires_grad
    assert p._version > v0 and np.any(host(p.detach()))
    half = nn.init.normal_(gc.empty(3, 3, dtype=gc.float16))
    assert half.dtype == gc.float16


@needs_torch
def test_gain_and_fans_match_pytorch():
    torch = _torch()
    for name, param in [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None),
                        ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2),
                        ("leaky_relu", 3), ("selu", None)]:
        assert nn.init.calculate_gain(name, param) == \
            torch.nn.init.calculate_gain(name, param)
    for shape in [(3, 4), (5, 2, 3), (6, 4, 3, 2)]:
        assert nn.init._calculate_fan_in_and_fan_out(gc.empty(*shape)) == \
            torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))


def test_init_errors(device):
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        nn.init.xavier_uniform_(gc.empty(5))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        nn.init.kaiming_uniform_(gc.empty(2, 2), mode="fan_avg")
    with pytest.raises(ValueError, match="Unsupported nonlinearity softsign"):
        nn.init.calculate_gain("softsign")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        nn.init.calculate_gain("leaky_relu", True)
    with pytest.warns(UserWarning, match="no-op"):
        nn.init.kaiming_uniform_(gc.empty(0, 3))
