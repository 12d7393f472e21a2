"""gc.compile finds the state a step touches from what its Python reaches (the tensors
whose array or ``.grad`` it reads or sets) and from the components registered as they
were made (modules, optimizers, schedulers, scalers, and the device state they name),
with no pass over every live object: what that pass used to catch is still caught.

Each test runs on the CPU (recorded tapes) and on the CuPy stand-in (CUDA graphs), and
compares with eager bit for bit; every one that expects replays checks ``fn.replays``.
"""

from __future__ import annotations

import gc as pygc
import sys
import warnings

import numpy as np
import pytest

import gradcore as gc
import gradcore.capture as capture
from gradcore import _live

N = 6


def _replays(device, n=N):
    """Replays of ``n`` calls: on the CPU two recordings, on CUDA an eager call and two
    captures come first."""
    return n - (3 if device == "cuda" else 2)


def _host(t):
    return None if t is None else t.detach().cpu().numpy().copy()


def _batches(device, n=N, seed=0):
    rng = np.random.default_rng(seed)
    return [(gc.tensor(rng.standard_normal((4, 8)).astype(np.float32), device=device),
             gc.tensor(rng.standard_normal((4, 3)).astype(np.float32), device=device))
            for _ in range(n)]


def _mse_step(model, opt):
    """A training step of ``model`` on a mean squared error, stepping ``opt``."""
    def step(x, y):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss
    return step


def _eq(a, b):
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _eq(x, y)
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b


def test_a_global_tensor_read_and_written_in_place(device):
    """A tensor neither an argument nor a parameter, read and written in place by the
    step (a running total): the replays write it as eager does."""
    def run(compiled):
        gc.manual_seed(0)
        model = gc.nn.Linear(8, 3).to(device)
        opt = gc.optim.SGD(model.parameters(), lr=0.1)
        total = gc.zeros(3, device=device)

        def step(x, y):
            opt.zero_grad()
            loss = ((model(x) + total * 0.01 - y) ** 2).mean()
            loss.backward()
            opt.step()
            total.add_(model(x).detach().sum(0))
            return loss

        fn = gc.compile(step) if compiled else step
        losses = [fn(x, y).item() for x, y in _batches(device)]
        return fn, losses, _host(total), [_host(p) for p in model.parameters()]

    eager = run(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = run(True)
    assert compiled[0].replays == _replays(device)
    _eq(list(compiled[1:]), list(eager[1:]))


def test_a_tensor_reached_only_through_a_closure(device):
    """A tensor the step reaches only through a closure: read, and guarded (rebinding
    its array sends the step back to recording, and the new array is used)."""
    def make(scale):
        def step(x):
            return (x * scale).sum(1)
        return step

    scale = gc.full((8,), 2.0, device=device)
    fn = gc.compile(make(scale))
    xs = [x for x, _y in _batches(device)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for x in xs:
            np.testing.assert_array_equal(_host(fn(x)), _host((x * scale).sum(1)))
        assert fn.replays == _replays(device)
        scale.data = gc.full((8,), 3.0, device=device)
        for x in xs:
            np.testing.assert_array_equal(_host(fn(x)), _host((x * 3.0).sum(1)))
    assert fn.replays > _replays(device)


def test_a_tensor_reached_only_through_its_grad(device):
    """A tensor whose array the step never reads, whose ``.grad`` it sets: the binding
    is made again by every replay."""
    v = gc.zeros(8, device=device)

    def step(x):
        v.grad = x.sum(0) * 2
        return x.mean()

    fn = gc.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for x, _y in _batches(device):
            fn(x)
            np.testing.assert_array_equal(_host(v.grad), _host(x.sum(0) * 2))
    assert fn.replays == _replays(device)


def test_a_module_made_after_the_first_compile_is_guarded(device):
    """A module made after another step was compiled and ran: its ``training`` flag is
    guarded (``eval()`` stops the dropout of the train-mode replays)."""
    gc.manual_seed(0)
    first = gc.nn.Linear(8, 3).to(device)
    warm = gc.compile(lambda x: first(x).sum())
    with gc.no_grad():
        for x, _y in _batches(device, 4):
            warm(x)
    model = gc.nn.Sequential(gc.nn.Linear(8, 3), gc.nn.Dropout(0.5)).to(device)
    assert any(m is model for m in _live.live(gc.nn.Module))
    fn = gc.compile(lambda x: model(x))
    xs = [x for x, _y in _batches(device)]
    with gc.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")
        for x in xs:
            fn(x)
        assert fn.replays == _replays(device)
        model.eval()
        for x in xs:
            np.testing.assert_array_equal(_host(fn(x)), _host(model[0](x)))


def test_an_optimizer_whose_state_is_made_in_the_first_call(device):
    """Adam's state is made by the first call (CPU: the first recording; CUDA: the
    eager call); every later call replays with it, as eager."""
    def run(compiled):
        gc.manual_seed(0)
        model = gc.nn.Linear(8, 3).to(device)
        opt = gc.optim.Adam(model.parameters(), lr=0.01)
        assert not opt.state

        step = _mse_step(model, opt)
        fn = gc.compile(step) if compiled else step
        losses = [fn(x, y).item() for x, y in _batches(device)]
        state = [_host(v) if isinstance(v, gc.Tensor) else v
                 for s in opt.state.values() for k, v in sorted(s.items())]
        return fn, losses, [_host(p) for p in model.parameters()], state

    eager = run(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = run(True)
    assert compiled[0].replays == _replays(device)
    _eq(compiled[1:3], eager[1:3])
    _eq([float(v) for v in compiled[3] if not isinstance(v, np.ndarray) or v.ndim == 0],
        [float(v) for v in eager[3] if not isinstance(v, np.ndarray) or v.ndim == 0])


def test_an_optimizer_that_skips_its_base_init_is_still_known():
    """An optimizer subclass whose ``__init__`` does not call ``Optimizer.__init__``
    (as users write them) is registered all the same: on the CPU its ``step`` runs as
    itself at each replay, reading the learning rate then."""
    class Plain(gc.optim.Optimizer):
        def __init__(self, params, lr):
            self.param_groups = [{"params": list(params), "lr": lr}]
            self.state = {}

        def step(self):
            with gc.no_grad():
                for g in self.param_groups:
                    for p in g["params"]:
                        p.sub_(p.grad * g["lr"])

    w = gc.ones(8, device="cpu", requires_grad=True)
    opt = Plain([w], 0.1)
    assert any(o is opt for o in _live.live(gc.optim.Optimizer))

    def step(x):
        opt.zero_grad()
        (x * w).sum().backward()
        opt.step()

    fn = gc.compile(step)
    x = gc.ones(8, device="cpu")
    expect = gc.ones(8, device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in range(N):
            opt.param_groups[0]["lr"] = 0.1 * (k + 1)
            fn(x)
            expect -= 0.1 * (k + 1)
            np.testing.assert_allclose(_host(w), _host(expect), rtol=1e-6)
    assert fn.replays == _replays("cpu")


def test_a_failed_capture_leaves_bindings_and_optimizer_state_as_they_were(device):
    """A step that raises part-way (after backward and the optimizer's step made
    state): the recording or capture puts the tensors' bindings, the optimizer's state
    and the arrays back as they were."""
    gc.manual_seed(0)
    model = gc.nn.Linear(8, 3).to(device)
    opt = gc.optim.Adam(model.parameters(), lr=0.01)
    total = gc.zeros(3, device=device)
    fail = [False]

    def step(x, y):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        total.data = total.data + 1  # a rebinding of a tensor that is not a parameter
        opt.step()
        if fail[0]:
            raise KeyError("part-way")
        return loss

    fn = gc.compile(step, fullgraph=True)
    (x, y), = _batches(device, 1)
    if device == "cuda":
        fn(x, y)  # (the eager call: state made here)
    w = model.weight
    before = (w.__dict__["_data"], w.grad, total.__dict__["_data"], dict(opt.state),
              [dict(s) for s in opt.state.values()], _host(w), _host(total))
    fail[0] = True
    with pytest.raises((KeyError, capture.Refused)):
        fn(x, y)
    after = (w.__dict__["_data"], w.grad, total.__dict__["_data"], dict(opt.state),
             [dict(s) for s in opt.state.values()], _host(w), _host(total))
    if device == "cuda":  # (the capture ran nothing: everything is as it was)
        assert after[0] is before[0] and after[1] is before[1] and after[2] is before[2]
        assert after[3].keys() == before[3].keys()
        for s0, s1 in zip(before[4], after[4]):
            assert s0.keys() == s1.keys() and all(s0[k] is s1[k] for k in s0)
        _eq(list(after[5:]), list(before[5:]))
    else:  # (a recording runs the step eagerly as it records: the arrays are plain)
        assert type(w.__dict__["_data"]) is np.ndarray
        assert type(total.__dict__["_data"]) is np.ndarray
        assert all(type(v.__dict__["_data"]) is np.ndarray
                   for s in opt.state.values() for v in s.values() if isinstance(v, gc.Tensor))
    # the classes are as they were (no descriptor left behind)
    assert "_data" not in gc.Tensor.__dict__
    assert gc.nn.Parameter.__dict__["grad"] is None
    assert type(gc.Tensor.__dict__["grad"]).__name__ == "_UnsetGrad"


def test_two_compiled_steps_in_turn_a_gan(device):
    """A GAN's loop: the discriminator's step and the generator's (whose loss goes
    through the discriminator, whose gradients it leaves for the next step to clear),
    compiled, called in turn: both replay, and give eager's results bit for bit."""
    def run(compiled):
        gc.manual_seed(0)
        gen = gc.nn.Sequential(gc.nn.Linear(4, 8), gc.nn.Tanh()).to(device)
        disc = gc.nn.Sequential(gc.nn.Linear(8, 1)).to(device)
        opt_g = gc.optim.Adam(gen.parameters(), lr=0.01)
        opt_d = gc.optim.SGD(disc.parameters(), lr=0.05, momentum=0.9)
        z = gc.randn(5, 4, device=device)
        real = gc.randn(5, 8, device=device)

        def d_step():
            opt_d.zero_grad()
            fake = gen(z).detach()
            loss = (disc(fake) - disc(real)).mean()
            loss.backward()
            opt_d.step()
            return loss

        def g_step():
            opt_g.zero_grad()
            loss = -disc(gen(z)).mean()
            loss.backward()
            opt_g.step()
            return loss

        d = gc.compile(d_step) if compiled else d_step
        g = gc.compile(g_step) if compiled else g_step
        losses = [(d().item(), g().item()) for _ in range(N)]
        params = [_host(p) for m in (gen, disc) for p in m.parameters()]
        return (d, g), losses, params

    eager = run(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = run(True)
    d, g = compiled[0]
    # (on the CPU the generator's tape reads the discriminator's gradients, which the
    # discriminator's step rebinds: it records once more)
    assert d.replays == _replays(device) and g.replays >= _replays(device) - 1
    _eq(list(compiled[1:]), list(eager[1:]))


def test_a_grad_scaler_step_two_captures_agree(device):
    """A mixed-precision step (GradScaler, Adam skipping on the device, dropout drawing
    from the device's Philox state): on CUDA the two captures agree at once (the step
    counts, the scale and the Philox offset are snapshotted between them, named by
    their owners), and the launches give eager's bits."""
    if device != "cuda":
        pytest.skip("GradScaler's device path")
    inf = float("inf")

    def run(compiled):
        gc.manual_seed(0)
        model = gc.nn.Sequential(gc.nn.Linear(8, 8), gc.nn.Dropout(0.25),
                                 gc.nn.Linear(8, 3)).to(device)
        opt = gc.optim.Adam(model.parameters(), lr=0.01)
        scaler = gc.amp.GradScaler("cuda", init_scale=2.0 ** 8, growth_interval=2)
        (x, y), = _batches(device, 1)
        factors = [1.0, 1.0, 1.0, inf, 0.5, 2.0, 1.0, 1.0]
        k = gc.zeros((), device=device)

        def step(f):
            opt.zero_grad()
            loss = ((model(x) * f - y) ** 2).mean()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            return loss

        fn = gc.compile(step) if compiled else step
        for f in factors:
            k.copy_(gc.tensor(f, device=device))
            fn(k)
        return (fn, [_host(p) for p in model.parameters()], scaler.state_dict(),
                [float(opt.state[p]["step"]) for p in model.parameters()])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (the inf step's overflows)
        eager = run(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", RuntimeWarning)
        compiled = run(True)
    assert compiled[0].recordings == 2 and compiled[0].replays == 8 - 3
    _eq(compiled[1], eager[1])
    assert compiled[2] == eager[2] and compiled[3] == eager[3] == [7.0] * 4


def test_no_pass_over_the_live_objects(device, monkeypatch):
    """Recording and capturing never walk the collector's objects."""
    def refused():
        raise AssertionError("gc.get_objects() called")

    gc.manual_seed(0)
    model = gc.nn.Linear(8, 3).to(device)
    opt = gc.optim.SGD(model.parameters(), lr=0.1)

    fn = gc.compile(_mse_step(model, opt))
    monkeypatch.setattr(pygc, "get_objects", refused)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for x, y in _batches(device):
            fn(x, y)
    assert fn.replays == _replays(device)


def test_a_step_without_arguments_finds_its_device(device):
    """A step taking no tensor: its device is the one of the tensors it reaches (a
    CUDA step found by its first recording is captured from the next call on)."""
    gc.manual_seed(0)
    w = gc.randn(8, device=device, requires_grad=True)
    opt = gc.optim.SGD([w], lr=0.1)
    (x, _y), = _batches(device, 1)

    def step():
        opt.zero_grad()
        loss = (x * w).tanh().sum()
        loss.backward()
        opt.step()
        return loss

    fn = gc.compile(step)
    ref_w = w.detach().clone()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        losses = [fn().item() for _ in range(N)]
    expect = []
    for _ in range(N):
        r = ref_w.clone().requires_grad_()
        loss = (x * r).tanh().sum()
        loss.backward()
        expect.append(loss.item())
        ref_w = (r - 0.1 * r.grad).detach()
    assert losses == expect
    assert fn.replays == _replays(device)
    assert fn._cache[next(iter(fn._cache))].cuda == (device == "cuda")


def test_a_compiled_module_called_inside_a_compiled_step(device):
    """A compiled module (its forward compiled under no_grad) called by a compiled step
    is part of the step's tape or graph: it neither records nor captures by itself."""
    gc.manual_seed(0)
    model = gc.nn.Linear(8, 3).to(device)
    inner = gc.compile(model)

    @gc.compile
    def outer(x):
        with gc.no_grad():
            return inner(x) * 2

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for x, _y in _batches(device):
            got = outer(x)
            with gc.no_grad():
                np.testing.assert_array_equal(_host(got), _host(model(x) * 2))
    assert outer.replays == _replays(device)
    assert inner.__dict__["_compiled_forward"].recordings == 0


def test_is_compiling_while_a_call_is_recorded_or_captured(device):
    """torch.compiler.is_compiling() is True while the compiled function's Python runs
    to be replayed (a CPU recording, a CUDA capture), False in its eager calls and
    outside; code it guards runs eagerly only, and no host read it keeps out of the
    recording makes the function fall back."""
    seen = []
    w = gc.ones(3, device=device, requires_grad=True)
    opt = gc.optim.SGD([w], lr=0.1)

    @gc.compile
    def step(x):
        seen.append(gc.compiler.is_compiling())
        loss = (w * x).sum()
        if not gc.compiler.is_compiling():
            seen.append(loss.item())  # (a host read: only where nothing records)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()

    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="gc.compile")  # nothing runs eagerly
        for _ in range(5):
            step(gc.ones(3, device=device))
    assert step.replays >= 2
    flags = [s for s in seen if isinstance(s, bool)]
    assert True in flags and flags[0] is (device == "cpu")  # (CUDA: an eager call first)
    assert not gc.compiler.is_compiling() and not gc.compiler.is_dynamo_compiling()


def test_a_non_leaf_grad_warning_names_the_user_s_line_while_recording(device):
    """PyTorch's warning for reading a non-leaf's .grad points at the line that read it,
    also while gc.compile records or captures the call (a descriptor stands in front of
    .grad then)."""
    w = gc.ones(2, device=device, requires_grad=True)
    opt = gc.optim.SGD([w], lr=0.1)
    lines = []

    @gc.compile
    def step(x):
        y = w * x
        lines.append(sys._getframe().f_lineno + 1)
        assert y.grad is None
        loss = y.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):  # (CUDA: eager, then captured twice)
            step(gc.ones(2, device=device))
    found = [(r.filename, r.lineno) for r in caught if "not a leaf" in str(r.message)]
    assert found and set(found) == {(__file__, lines[0])}, found
