"""nn.RNN, nn.LSTM, nn.GRU, their cells and nn.utils.rnn against PyTorch: a PyTorch
module's state dict loaded into gradcore's gives the same outputs, final states and
gradients (input, initial states, every parameter) in float64, for the options that
change the computation; names, shapes, init, repr and error messages are PyTorch's;
gradients check against finite differences; the layers run on the CUDA stand-in and
replay under ``gc.compile`` as eager runs. The comparisons skip, with a reason, when
PyTorch is not installed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradcore as gc
import gradcore.nn.functional as F
from gradcore import nn
from gradcore.nn import rnn as _rnn
from gradcore.nn.utils.rnn import (
    PackedSequence,
    invert_permutation,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
    unpack_sequence,
    unpad_sequence,
)

from conftest import host, needs_torch


def _torch():
    import torch
    return torch


def _pair(kind, kwargs):
    """The same layer from torch.nn and gradcore.nn, float64, gradcore's loaded with
    torch's state dict."""
    torch = _torch()
    torch.manual_seed(0)
    tm = getattr(torch.nn, kind)(**kwargs).double()
    gm = getattr(nn, kind)(**kwargs).double()
    result = gm.load_state_dict({k: gc.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    assert not result.missing_keys and not result.unexpected_keys
    return tm, gm


def _leaf(a, lib):
    return (gc.tensor(a, requires_grad=True) if lib is gc else
            _torch().tensor(a, requires_grad=True))


def _flat(out):
    """The tensors of a layer's result, in order."""
    if type(out).__name__ == "PackedSequence":  # (a tuple: tested first)
        return [out.data]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


def _backward_and_compare(tm, gm, touts, gouts, leaves, rtol=1e-9, atol=1e-12):
    """Same outputs; then backward of a random projection of all of them, and the same
    gradients for the leaves (pairs of (torch, gradcore) tensors) and every parameter."""
    torch = _torch()
    tflat, gflat = _flat(touts), _flat(gouts)
    assert len(tflat) == len(gflat)
    rng = np.random.default_rng(7)
    tloss, gloss = 0, 0
    for t, g in zip(tflat, gflat):
        assert tuple(g.shape) == tuple(t.shape)
        np.testing.assert_allclose(host(g), t.detach().numpy(), rtol=rtol, atol=atol)
        u = rng.standard_normal(tuple(t.shape))
        tloss = tloss + (t * torch.tensor(u)).sum()
        gloss = gloss + (g * gc.tensor(u)).sum()
    tloss.backward()
    gloss.backward()
    for i, (t, g) in enumerate(leaves):
        np.testing.assert_allclose(host(g.grad), t.grad.numpy(), rtol=rtol, atol=atol,
                                   err_msg=f"gradient of input {i}")
    tparams, gparams = dict(tm.named_parameters()), dict(gm.named_parameters())
    assert list(tparams) == list(gparams)
    for name, p in tparams.items():
        np.testing.assert_allclose(host(gparams[name].grad), p.grad.numpy(), rtol=rtol,
                                   atol=atol, err_msg=name)


# (kind, constructor arguments, batched, with initial states)
LAYERS = [
    ("LSTM", dict(num_layers=1), True, False),
    ("LSTM", dict(num_layers=2, bidirectional=True, batch_first=True), True, True),
    ("LSTM", dict(num_layers=2, bidirectional=True, proj_size=2), True, True),
    ("LSTM", dict(bias=False, batch_first=True), False, True),
    ("GRU", dict(num_layers=2), True, True),
    ("GRU", dict(bidirectional=True, batch_first=True), True, False),
    ("GRU", dict(num_layers=2, bidirectional=True), False, True),
    ("RNN", dict(num_layers=2, nonlinearity="relu", bidirectional=True), True, True),
    ("RNN", dict(batch_first=True), True, False),
    ("RNN", dict(num_layers=2, bias=False), False, False),
]


@needs_torch
@pytest.mark.parametrize("kind,kwargs,batched,given", LAYERS,
                         ids=[f"{k}-{i}" for i, (k, *_) in enumerate(LAYERS)])
def test_layers_match_pytorch(kind, kwargs, batched, given):
    hidden, steps, batch, features = 4, 5, 3, 3
    tm, gm = _pair(kind, dict(input_size=features, hidden_size=hidden, **kwargs))
    rng = np.random.default_rng(1)
    if not batched:
        shape = (steps, features)
    else:
        shape = (batch, steps, features) if kwargs.get("batch_first") else \
            (steps, batch, features)
    x = rng.standard_normal(shape)
    tx, gx = _leaf(x, _torch()), _leaf(x, gc)
    leaves = [(tx, gx)]
    targs, gargs = [tx], [gx]
    if given:
        dirs = 2 if kwargs.get("bidirectional") else 1
        lead = (kwargs.get("num_layers", 1) * dirs,) + ((batch,) if batched else ())
        h = rng.standard_normal(lead + (kwargs.get("proj_size") or hidden,))
        th, gh = _leaf(h, _torch()), _leaf(h, gc)
        leaves.append((th, gh))
        if kind == "LSTM":
            c = rng.standard_normal(lead + (hidden,))
            tc, gcc = _leaf(c, _torch()), _leaf(c, gc)
            leaves.append((tc, gcc))
            targs.append((th, tc))
            gargs.append((gh, gcc))
        else:
            targs.append(th)
            gargs.append(gh)
    _backward_and_compare(tm, gm, tm(*targs), gm(*gargs), leaves)


@needs_torch
def test_float32_lstm_matches_pytorch():
    torch = _torch()
    torch.manual_seed(0)
    tm = torch.nn.LSTM(6, 8, num_layers=2, batch_first=True)
    gm = nn.LSTM(6, 8, num_layers=2, batch_first=True)
    gm.load_state_dict({k: gc.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((4, 7, 6)).astype(np.float32)
    tx, gx = _leaf(x, torch), _leaf(x, gc)
    _backward_and_compare(tm, gm, tm(tx), gm(gx), [(tx, gx)], rtol=1e-4, atol=1e-5)
    assert gm(gx)[0].dtype == gc.float32


# (cell, constructor arguments, batched, with the state)
CELLS = [("RNNCell", {}, True, True), ("RNNCell", dict(nonlinearity="relu"), False, True),
         ("LSTMCell", {}, True, True), ("LSTMCell", dict(bias=False), False, False),
         ("GRUCell", {}, True, False), ("GRUCell", {}, False, True)]


@needs_torch
@pytest.mark.parametrize("kind,kwargs,batched,given", CELLS,
                         ids=[f"{k}-{i}" for i, (k, *_) in enumerate(CELLS)])
def test_cells_match_pytorch(kind, kwargs, batched, given):
    torch = _torch()
    tm, gm = _pair(kind, dict(input_size=3, hidden_size=4, **kwargs))
    rng = np.random.default_rng(2)
    lead = (2,) if batched else ()
    x = rng.standard_normal(lead + (3,))
    tx, gx = _leaf(x, torch), _leaf(x, gc)
    leaves = [(tx, gx)]
    targs, gargs = [tx], [gx]
    if given:
        states = [rng.standard_normal(lead + (4,)) for _ in range(2 if kind == "LSTMCell"
                                                                 else 1)]
        ts = [_leaf(s, torch) for s in states]
        gs = [_leaf(s, gc) for s in states]
        leaves += list(zip(ts, gs))
        targs.append(tuple(ts) if kind == "LSTMCell" else ts[0])
        gargs.append(tuple(gs) if kind == "LSTMCell" else gs[0])
    _backward_and_compare(tm, gm, tm(*targs), gm(*gargs), leaves)


def _lstm_cell_fn(x, h, c, w_ih, w_hh, b_ih, b_hh):
    from gradcore.ops import activation
    return _rnn._lstm_step(activation.linear(x, w_ih, b_ih), (h, c), w_hh, b_hh, None)


def _gru_cell_fn(x, h, w_ih, w_hh, b_ih, b_hh):
    from gradcore.ops import activation
    return _rnn._gru_step(activation.linear(x, w_ih, b_ih), (h,), w_hh, b_hh, None)[0]


@pytest.mark.parametrize("fn,n_states,gates", [(_lstm_cell_fn, 2, 4), (_gru_cell_fn, 1, 3)])
def test_cell_gradients_match_finite_differences(fn, n_states, gates):
    rng = np.random.default_rng(3)
    hidden = 2
    shapes = [(2, 3)] + [(2, hidden)] * n_states + [(gates * hidden, 3),
                                                    (gates * hidden, hidden),
                                                    (gates * hidden,), (gates * hidden,)]
    inputs = [gc.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]
    assert gc.autograd.gradcheck(fn, inputs)
    assert gc.autograd.gradgradcheck(fn, inputs)


def test_parameters_names_shapes_and_init_as_pytorch():
    gc.manual_seed(0)
    lstm = nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)
    shapes = {name: tuple(p.shape) for name, p in lstm.named_parameters()}
    assert list(shapes) == [f"{kind}_l{layer}{suffix}" for layer in (0, 1)
                            for suffix in ("", "_reverse")
                            for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh",
                                         "weight_hr")]
    assert shapes["weight_ih_l0"] == (16, 3) and shapes["weight_hh_l0"] == (16, 2)
    assert shapes["weight_ih_l1_reverse"] == (16, 4) and shapes["weight_hr_l1"] == (2, 4)
    assert shapes["bias_hh_l1_reverse"] == (16,)
    for p in lstm.parameters():
        values = host(p)
        assert np.abs(values).max() <= 0.5 and values.std() > 0.1  # uniform(+-1/sqrt(4))
    assert [[tuple(p.shape) for p in ps] for ps in lstm.all_weights][1] == \
        [(16, 3), (16, 2), (16,), (16,), (2, 4)]
    assert lstm._flat_weights_names[:3] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0"]
    assert lstm._flat_weights[0] is lstm.weight_ih_l0
    assert lstm.flatten_parameters() is None
    gru = nn.GRU(3, 5, bias=False)
    assert [n for n, _ in gru.named_parameters()] == ["weight_ih_l0", "weight_hh_l0"]
    assert tuple(gru.weight_ih_l0.shape) == (15, 3)
    cell = nn.LSTMCell(3, 4, bias=False)
    assert cell.bias_ih is None and tuple(cell.weight_hh.shape) == (16, 4)
    rnn = nn.RNN(3, 4, 1, "relu", device="cpu", dtype=gc.float64)
    assert rnn.nonlinearity == "relu" and rnn.weight_ih_l0.dtype == gc.float64


@needs_torch
def test_pytorch_state_dict_keys_and_repr():
    torch = _torch()
    made = [
        lambda m: m.LSTM(4, 3, 2, bias=False, batch_first=True, dropout=0.5,
                         bidirectional=True, proj_size=2),
        lambda m: m.RNN(4, 3, 2, "relu"), lambda m: m.GRU(4, 3, dropout=0.0),
        lambda m: m.LSTM(4, 3), lambda m: m.RNNCell(4, 3, bias=False, nonlinearity="relu"),
        lambda m: m.LSTMCell(4, 3), lambda m: m.GRUCell(4, 3, False),
        lambda m: m.Sequential(m.GRU(2, 2), m.Linear(2, 1)),
    ]
    for make in made:
        t, g = make(torch.nn), make(nn)
        assert repr(g) == repr(t)
        assert list(g.state_dict()) == list(t.state_dict())


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (the type is what is compared)
        return type(e), str(e).replace("torch.", "gradcore.")
    return None


@needs_torch
def test_errors_as_pytorch():
    torch = _torch()

    def cases(m, lib):
        r = lambda *s: lib.randn(*s)  # noqa: E731
        lstm, gru, rnn = m.LSTM(4, 3, 2), m.GRU(4, 3, 2), m.RNN(4, 3)
        cell, lcell = m.RNNCell(4, 3), m.LSTMCell(4, 3)
        return [
            lambda: lstm(r(5, 2, 5)),
            lambda: lstm(r(5, 2, 4).double()),
            lambda: lstm(r(5, 2, 4), (r(2, 2, 3), r(2, 3, 3))),
            lambda: lstm(r(5, 2, 4), (r(2, 3, 3), r(2, 3, 3))),
            lambda: lstm(r(5, 2, 4), (r(2, 3), r(2, 3, 3))),
            lambda: lstm(r(5, 4), (r(2, 1, 3), r(2, 3, 3))),
            lambda: lstm(r(5, 2, 2, 4)),
            lambda: gru(r(5, 2, 4), r(2, 3, 3)),
            lambda: gru(r(5, 2, 4), r(2, 3)),
            lambda: gru(r(5, 4), r(2, 1, 3)),
            lambda: gru(r(5, 2, 2, 4)),
            lambda: gru(r(0, 2, 4)),
            lambda: rnn(r(5, 2, 2, 4)),
            lambda: rnn(r(5, 2, 3)),
            lambda: cell(r(2, 5)),
            lambda: cell(r(2, 4), r(2, 5)),
            lambda: cell(r(2, 4), r(3, 3)),
            lambda: cell(r(4), r(2, 3)),
            lambda: cell(r(1, 2, 4)),
            lambda: cell(r(2, 4), r(1, 2, 3)),
            lambda: lcell(r(2, 4), (r(2, 3), r(2, 5))),
            lambda: lcell(r(2, 4), (r(2, 3),)),
            lambda: lcell(r(2, 4), (r(2, 3), r(1, 2, 3))),
            lambda: m.RNNCell(4, 3, nonlinearity="foo")(r(2, 4)),
            lambda: m.RNN(4, 3, nonlinearity="x"),
            lambda: m.RNN(4, 3, proj_size=2),
            lambda: m.GRU(4, 3, proj_size=2),
            lambda: m.LSTM(4, 3, proj_size=3),
            lambda: m.LSTM(4, 3, proj_size=-1),
            lambda: m.LSTM(4, 3, dropout=1.5),
            lambda: m.LSTM(4, 3, dropout=True),
            lambda: m.LSTM(4.0, 3),
            lambda: m.LSTM(4, 3.0),
            lambda: m.LSTM(4, 0),
            lambda: m.LSTM(0, 3),
            lambda: m.LSTM(4, 3, num_layers=0),
            lambda: m.LSTM(4, 3, bias=1),
            lambda: m.LSTM(4, 3, batch_first=None),
        ]

    for i, (t, g) in enumerate(zip(cases(torch.nn, torch), cases(nn, gc))):
        expected = _error(t)
        assert expected is not None, i
        got = _error(g)
        assert got is not None, f"case {i}: no error, PyTorch raises {expected}"
        if expected[1].startswith("mat1 and mat2"):  # (a dtype mismatch: the same type)
            assert got[0] is expected[0], (i, got, expected)
        else:
            assert got == expected, f"case {i}"
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.GRU(4, 3, dropout=0.5)


@needs_torch
def test_dropout_between_layers_in_training_only():
    torch = _torch()
    # dropout=1 zeroes the first layer's output: deterministic, so comparable with PyTorch
    tm, gm = _pair("LSTM", dict(input_size=3, hidden_size=4, num_layers=2, dropout=1.0))
    x = np.random.default_rng(4).standard_normal((5, 2, 3))
    tx, gx = _leaf(x, torch), _leaf(x, gc)
    _backward_and_compare(tm, gm, tm(tx), gm(gx), [(tx, gx)])
    gm.eval()
    tm.eval()
    np.testing.assert_allclose(host(gm(gc.tensor(x))[0]), tm(torch.tensor(x))[0].detach(),
                               rtol=1e-10)
    # a drop probability in (0, 1): the masks come from gradcore's generator
    gm = nn.GRU(3, 4, num_layers=2, dropout=0.5).double()
    gm.eval()
    reference = host(gm(gc.tensor(x))[0])
    gm.train()
    gc.manual_seed(11)
    first = host(gm(gc.tensor(x))[0])
    gc.manual_seed(11)
    again = host(gm(gc.tensor(x))[0])
    np.testing.assert_array_equal(first, again)
    assert not np.allclose(first, reference)
    single = nn.GRU(3, 4, num_layers=1).double()  # (nothing between layers: no dropout)
    single.dropout = 0.5
    np.testing.assert_array_equal(host(single(gc.tensor(x))[0]),
                                  host(single.eval()(gc.tensor(x))[0]))


def test_layers_on_each_device_match_the_cpu(device):
    """The same values and gradients on every device; on the CUDA stand-in, without a
    host synchronization (padded and packed inputs alike)."""
    gc.manual_seed(0)
    lstm = nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    gru = nn.GRU(3, 4, bidirectional=True)
    cell = nn.GRUCell(3, 4)
    x = np.random.default_rng(5).standard_normal((2, 3, 3)).astype(np.float32)
    results = {}
    for dev in ("cpu", device):
        for m in (lstm, gru, cell):
            m.to(dev)
            m.zero_grad()
        xt = gc.tensor(x, device=dev, requires_grad=True)
        xp = gc.device(dev).xp
        counting = getattr(xp, "__name__", "") == "cupy_standin"
        if counting:
            xp.reset_syncs(log=True)
        out, (h, c) = lstm(xt)
        packed = pack_padded_sequence(xt, [3, 2], batch_first=True)
        packed_out, h_gru = gru(packed)
        step = cell(xt[:, 0], h[-1])
        (out.sum() + c.sum() + (step * step).sum() + packed_out.data.sum() +
         h_gru.sum()).backward()
        if counting:
            assert xp.host_syncs() == 0, xp.sync_log()
        results[dev] = [host(t) for t in (out, h, c, step, packed_out.data, h_gru, xt.grad)]
        results[dev] += [host(p.grad) for m in (lstm, gru, cell) for p in m.parameters()]
        assert out.device == gc.device(dev)
    for a, b in zip(results["cpu"], results[device]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_compiled_training_step_with_an_lstm_replays_as_eager():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(3, 5, num_layers=2, batch_first=True, dropout=0.3)
            self.head = nn.Linear(5, 2)

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.head(out[:, -1])

    def run(compiled):
        gc.manual_seed(0)
        model = Model()
        opt = gc.optim.Adam(model.parameters(), lr=0.01)
        gc.manual_seed(5)  # (the dropout masks: the same draws in both runs)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        fn = gc.compile(step) if compiled else step
        rng = np.random.default_rng(0)
        losses = []
        for _ in range(5):
            x = gc.tensor(rng.standard_normal((4, 6, 3)).astype(np.float32))
            y = gc.tensor(rng.integers(0, 2, 4))
            losses.append(host(fn(x, y)))
        params = [host(p).copy() for p in model.parameters()]
        return losses, params, getattr(fn, "replays", None)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (a refused recording would warn)
        eager_losses, eager_params, _ = run(False)
        losses, params, replays = run(True)
    assert replays >= 3
    np.testing.assert_array_equal(np.array(losses), np.array(eager_losses))
    for a, b in zip(params, eager_params):
        np.testing.assert_array_equal(a, b)


# ---- nn.utils.rnn ----------
@needs_torch
@pytest.mark.parametrize("batch_first,side", [(False, "right"), (True, "left")])
def test_pad_sequence_matches_pytorch(batch_first, side):
    torch = _torch()
    rng = np.random.default_rng(6)
    arrays = [rng.standard_normal((n, 2)) for n in (2, 4, 1)]
    ts = [_leaf(a, torch) for a in arrays]
    gs = [_leaf(a, gc) for a in arrays]
    tout = torch.nn.utils.rnn.pad_sequence(ts, batch_first, -2.0, side)
    gout = pad_sequence(gs, batch_first, -2.0, side)
    np.testing.assert_array_equal(host(gout), tout.detach().numpy())
    assert gout.is_contiguous()
    u = rng.standard_normal(tuple(tout.shape))
    tout.backward(torch.tensor(u))
    gout.backward(gc.tensor(u))
    for t, g in zip(ts, gs):
        np.testing.assert_array_equal(host(g.grad), t.grad.numpy())
    ints = [torch.ones(2, dtype=torch.long), torch.ones(3, dtype=torch.long)]
    np.testing.assert_array_equal(
        host(pad_sequence([gc.ones(2, dtype=gc.int64), gc.ones(3, dtype=gc.int64)],
                          padding_value=2.5)),
        torch.nn.utils.rnn.pad_sequence(ints, padding_value=2.5).numpy())
    for bad in ([], 5, [np.ones(2)], ["x"]):
        with pytest.raises((RuntimeError, TypeError)):
            pad_sequence(bad)
    with pytest.raises(RuntimeError, match="Expected padding_side to be one of left or "
                                           "right, but got middle."):
        pad_sequence([gc.ones(2)], padding_side="middle")
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size "
                                           r"of tensor b \(4\) at non-singleton dimension 1"):
        pad_sequence([gc.ones(2, 3), gc.ones(3, 4)])


@needs_torch
def test_packing_round_trip_matches_pytorch():
    torch = _torch()
    tr = torch.nn.utils.rnn
    x = np.random.default_rng(7).standard_normal((3, 4, 2))  # (B, T, *): lengths 2, 4, 1
    lengths = [2, 4, 1]
    tx, gx = _leaf(x, torch), _leaf(x, gc)
    tp = tr.pack_padded_sequence(tx, lengths, batch_first=True, enforce_sorted=False)
    gp = pack_padded_sequence(gx, lengths, batch_first=True, enforce_sorted=False)
    for name in ("data", "batch_sizes", "sorted_indices", "unsorted_indices"):
        np.testing.assert_array_equal(host(getattr(gp, name)),
                                      getattr(tp, name).detach().numpy(), err_msg=name)
    assert gp.batch_sizes.device == gc.device("cpu") and gp.batch_sizes.dtype == gc.int64
    tout, tlen = tr.pad_packed_sequence(tp, batch_first=True, padding_value=9.0,
                                        total_length=5)
    gout, glen = pad_packed_sequence(gp, batch_first=True, padding_value=9.0, total_length=5)
    np.testing.assert_array_equal(host(gout), tout.detach().numpy())
    np.testing.assert_array_equal(host(glen), tlen.numpy())
    u = np.random.default_rng(8).standard_normal(tuple(tout.shape))
    tout.backward(torch.tensor(u))
    gout.backward(gc.tensor(u))
    np.testing.assert_array_equal(host(gx.grad), tx.grad.numpy())
    time_major = pad_packed_sequence(pack_padded_sequence(gc.tensor(x).transpose(0, 1),
                                                          [4, 2, 1]))[0]
    np.testing.assert_array_equal(
        host(time_major),
        tr.pad_packed_sequence(tr.pack_padded_sequence(torch.tensor(x).transpose(0, 1),
                                                       [4, 2, 1]))[0].numpy())
    seqs = [gc.tensor([1.0, 2.0]), gc.tensor([3.0]), gc.tensor([4.0, 5.0, 6.0])]
    assert [s.tolist() for s in unpack_sequence(pack_sequence(seqs, enforce_sorted=False))] \
        == [[1.0, 2.0], [3.0], [4.0, 5.0, 6.0]]
    assert [s.tolist() for s in unpad_sequence(pad_sequence(seqs), gc.tensor([2, 1, 3]))] \
        == [[1.0, 2.0], [3.0], [4.0, 5.0, 6.0]]
    assert invert_permutation(gc.tensor([2, 0, 1])).tolist() == [1, 2, 0]
    assert invert_permutation(None) is None


@needs_torch
def test_packing_errors_as_pytorch():
    torch = _torch()

    def cases(lib, utils):
        x = lib.ones(3, 2, 1)
        return [
            lambda: utils.pack_padded_sequence(x, [2, 3]),
            lambda: utils.pack_padded_sequence(x, [2, 0]),
            lambda: utils.pack_padded_sequence(x, [2, 0], enforce_sorted=False),
            lambda: utils.pack_padded_sequence(x, [2]),
            lambda: utils.pack_padded_sequence(x, lib.tensor([[3, 2]])),
            lambda: utils.pack_padded_sequence(lib.ones(0, 2, 1), [3, 2]),
            lambda: utils.pad_packed_sequence(utils.pack_padded_sequence(x, [3, 1]),
                                              total_length=2),
            lambda: utils.pack_sequence([lib.ones(2), lib.ones(3)]),
            lambda: utils.PackedSequence(lib.ones(3)),
        ]

    from gradcore.nn.utils import rnn as utils
    for i, (t, g) in enumerate(zip(cases(torch, torch.nn.utils.rnn), cases(gc, utils))):
        assert _error(g) == _error(t), f"case {i}"
    with pytest.raises(RuntimeError, match="does not fit in the padded input's 3 time steps"):
        pack_padded_sequence(gc.ones(3, 2, 1), [4, 2])


@needs_torch
@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_layers_take_packed_sequences_as_pytorch(kind):
    """Each sequence stops at its own length: its final state is after its last step
    (forwards) and starts from its last step (backwards)."""
    torch = _torch()
    tr = torch.nn.utils.rnn
    tm, gm = _pair(kind, dict(input_size=2, hidden_size=3, num_layers=2,
                              bidirectional=True, batch_first=True))
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 5, 2))
    lengths = [3, 5, 1, 3]
    tx, gx = _leaf(x, torch), _leaf(x, gc)
    h = rng.standard_normal((4, 4, 3))
    th, gh = _leaf(h, torch), _leaf(h, gc)
    leaves = [(tx, gx), (th, gh)]
    thx, ghx = th, gh
    if kind == "LSTM":
        c = rng.standard_normal((4, 4, 3))
        tc, gcc = _leaf(c, torch), _leaf(c, gc)
        leaves.append((tc, gcc))
        thx, ghx = (th, tc), (gh, gcc)
    tp = tr.pack_padded_sequence(tx, lengths, batch_first=True, enforce_sorted=False)
    gp = pack_padded_sequence(gx, lengths, batch_first=True, enforce_sorted=False)
    tout, tstate = tm(tp, thx)
    gout, gstate = gm(gp, ghx)
    assert isinstance(gout, PackedSequence)
    tpad = tr.pad_packed_sequence(tout, batch_first=True)[0]
    gpad = pad_packed_sequence(gout, batch_first=True)[0]
    _backward_and_compare(tm, gm, (tpad, tstate), (gpad, gstate), leaves)
    # without initial states, and sorted
    order = np.argsort([-n for n in lengths], kind="stable")
    xs = x[order]
    tout, tstate = tm(tr.pack_padded_sequence(torch.tensor(xs), sorted(lengths, reverse=True),
                                              batch_first=True))
    gout, gstate = gm(pack_padded_sequence(gc.tensor(xs), sorted(lengths, reverse=True),
                                           batch_first=True))
    for t, g in zip(_flat((tout, tstate)), _flat((gout, gstate))):
        np.testing.assert_allclose(host(g), t.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_split_into_one_piece_gives_a_gradient_of_the_input_shape():
    """A split (chunk, unbind) into a single piece passes the gradient through whole
    (it was once iterated over rows, losing the first dimension)."""
    h = gc.randn(1, 2, 4, requires_grad=True)
    (piece,) = gc.unbind(h, 0)
    (piece * piece).sum().backward()
    assert h.grad.shape == (1, 2, 4)
    np.testing.assert_allclose(host(h.grad), 2 * host(h.detach()))
    x = gc.randn(3, 2, requires_grad=True)
    (whole,) = gc.chunk(x, 1, 1)
    (g,) = gc.autograd.grad((whole ** 3).sum(), x, create_graph=True)
    g.sum().backward()
    np.testing.assert_allclose(host(x.grad), 6 * host(x.detach()), rtol=1e-6)


def test_nn_page_recurrent_section_shows_what_it_says():
    """docs/nn.md, "Recurrent layers": its blocks run in order, and each bare expression
    evaluates to what its comment shows."""
    import ast
    import pathlib
    import re

    text = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "nn.md").read_text()
    section = text[text.index("## Recurrent layers"):]
    section = section[:section.index("\n## ", 3)]  # (up to the next section)
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 2
    namespace, shown = {}, 0
    for block in blocks:
        lines = block.splitlines()
        for stmt in ast.parse(block).body:
            code = compile(ast.Module([stmt], []), "docs/nn.md", "exec")
            line = lines[stmt.lineno - 1]
            if isinstance(stmt, ast.Expr) and "#" in line:
                expected = line.split("#", 1)[1].strip()
                value = eval(compile(ast.Expression(stmt.value), "docs/nn.md", "eval"),
                             namespace)
                assert repr(value) == expected, line
                shown += 1
            else:
                exec(code, namespace)
    assert shown == 5
