"""gc.compile: a compiled step replays what eager computes, bit for bit, and refuses
(runs eagerly, with a warning that says why and where) what a replay cannot repeat.

Every test that expects replays checks that replays happened (``fn.replays``), so that
a compile that silently ran eagerly would fail them.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

import gradcore as gc
import gradcore.capture as capture
from gradcore import nn
from gradcore.nn import functional as F

STEPS = 6


def _mlp(seed=0, dropout=0.0):
    gc.manual_seed(seed)
    layers = [nn.Linear(12, 16), nn.ReLU()]
    if dropout:
        layers.append(nn.Dropout(dropout))
    layers += [nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 5)]
    return nn.Sequential(*layers)


def _batches(n=STEPS, batch=8, seed=1):
    rng = np.random.default_rng(seed)
    return [(gc.tensor(rng.standard_normal((batch, 12)).astype(np.float32)),
             gc.tensor(rng.integers(0, 5, batch))) for _ in range(n)]


def _state(model, opt):
    params = [p.detach().numpy().copy() for p in model.parameters()]
    grads = [None if p.grad is None else p.grad.numpy().copy() for p in model.parameters()]
    state = []
    for s in opt.state.values():
        for k in sorted(s):
            v = s[k]
            state.append(v.numpy().copy() if isinstance(v, gc.Tensor) else v)
    return params, grads, state


def _same(a, b):
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b


def _run(make_opt, compiled, step_body=None, dropout=0.0, scheduler=None, batches=None,
         zero="none"):
    model = _mlp(dropout=dropout)
    opt = make_opt(model.parameters())
    sched = scheduler(opt) if scheduler else None
    gc.manual_seed(123)  # the generator dropout draws from: the same in both runs

    def step(x, y):
        if zero == "none":
            opt.zero_grad()
        elif zero == "zeros":
            opt.zero_grad(set_to_none=False)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    fn = gc.compile(step) if compiled else step
    losses = []
    for x, y in batches or _batches():
        losses.append(fn(x, y))
        if sched is not None:
            sched.step()
    if compiled:
        # (a first call that makes .grad and a second that adds into it record apart)
        assert fn.replays >= len(losses) - (3 if zero != "none" else 2), \
            "the compiled step did not replay"
    return [loss.item() for loss in losses], _state(model, opt), fn


OPTIMIZERS = {
    "sgd": lambda p: gc.optim.SGD(p, lr=0.1),
    "sgd-momentum": lambda p: gc.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=1e-3),
    "sgd-nesterov": lambda p: gc.optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True),
    "sgd-dampening": lambda p: gc.optim.SGD(p, lr=0.05, momentum=0.5, dampening=0.3,
                                            maximize=True),
    "adam": lambda p: gc.optim.Adam(p, lr=1e-2),
    "adam-amsgrad": lambda p: gc.optim.Adam(p, lr=1e-2, amsgrad=True, weight_decay=1e-2),
    "adamw": lambda p: gc.optim.AdamW(p, lr=1e-2),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_replay_matches_eager_bit_for_bit(name):
    eager = _run(OPTIMIZERS[name], False)
    compiled = _run(OPTIMIZERS[name], True)
    assert compiled[0] == eager[0]
    _same(compiled[1][0], eager[1][0])  # parameters
    _same(compiled[1][1], eager[1][1])  # .grad
    _same(compiled[1][2], eager[1][2])  # optimizer state (step counts included)


@pytest.mark.parametrize("zero", ["none", "zeros", "never"])
def test_grad_left_as_eager_leaves_it(zero):
    eager = _run(OPTIMIZERS["sgd"], False, zero=zero)
    compiled = _run(OPTIMIZERS["sgd"], True, zero=zero)
    assert compiled[0] == eager[0]
    _same(compiled[1], eager[1])


def test_scheduler_changing_lr_between_calls():
    def sched(opt):
        return gc.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    eager = _run(OPTIMIZERS["adam"], False, scheduler=sched)
    compiled = _run(OPTIMIZERS["adam"], True, scheduler=sched)
    assert compiled[0] == eager[0]
    _same(compiled[1], eager[1])


def test_scheduler_stepped_inside_the_compiled_function():
    results = []
    for compiled in (False, True):
        model = _mlp()
        opt = gc.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        sched = gc.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)

        def step(x, y):
            opt.zero_grad()
            loss = F.mse_loss(model(x), gc.zeros(x.shape[0], 5))
            loss.backward()
            opt.step()
            sched.step()
            return loss

        fn = gc.compile(step) if compiled else step
        losses = [fn(x, y).item() for x, y in _batches()]
        results.append((losses, _state(model, opt), opt.param_groups[0]["lr"]))
        if compiled:
            assert fn.replays == STEPS - 2
    assert results[0][0] == results[1][0]
    _same(results[0][1], results[1][1])
    assert results[0][2] == results[1][2]


def test_dropout_draws_fresh_masks_as_eager_does():
    eager = _run(OPTIMIZERS["sgd"], False, dropout=0.5)
    compiled = _run(OPTIMIZERS["sgd"], True, dropout=0.5)
    assert compiled[0] == eager[0]
    _same(compiled[1], eager[1])
    # and the masks change between calls (the losses of one batch differ)
    x, y = _batches(1)[0]
    out = _run(OPTIMIZERS["sgd"], True, dropout=0.5, batches=[(x, y)] * STEPS)
    assert len(set(out[0])) > 1


def test_returned_tensors_are_the_callers():
    losses, _, fn = _run(OPTIMIZERS["sgd"], True)
    assert fn.replays > 0
    # each call's loss kept its value after later calls (no shared buffer)
    eager, _, _ = _run(OPTIMIZERS["sgd"], False)
    assert losses == eager


def test_host_read_runs_eagerly_with_a_warning_naming_it_and_the_line():
    model = _mlp()
    opt = gc.optim.SGD(model.parameters(), lr=0.1)
    seen = []

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        seen.append(loss.item())  # a host read
        return loss

    fn = gc.compile(step)
    with pytest.warns(UserWarning, match=r"\.item\(\) reads values on the host .*test_co"):
        fn(*_batches(1)[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once: later calls run eagerly, silently
        for x, y in _batches(4):
            fn(x, y)
    assert fn.replays == 0 and len(seen) == 5


def test_python_branch_on_a_tensor_is_refused():
    w = nn.Parameter(gc.ones(3))

    def f(x):
        y = (w * x).sum()
        return y * 2 if y > 0 else y  # bool() of a tensor

    fn = gc.compile(f)
    with pytest.warns(UserWarning, match=r"bool\(\) of a tensor reads values"):
        out = fn(gc.tensor([1.0, 2.0, 3.0]))
    assert out.item() == 12.0
    assert fn(gc.tensor([-1.0, -2.0, -3.0])).item() == -6.0


def test_fullgraph_raises_at_the_host_read():
    @gc.compile(fullgraph=True)
    def f(x):
        return x * float(x.sum())

    with pytest.raises(capture.Refused, match="float"):
        f(gc.ones(3))


def test_printing_inside_is_refused(capsys):
    fn = gc.compile(lambda x: print(x * 2) or x + 1)
    with pytest.warns(UserWarning, match="printing"):
        fn(gc.ones(2))


def test_forward_under_no_grad_and_changing_inputs():
    model = _mlp()

    @gc.compile
    def predict(x):
        with gc.no_grad():
            return model(x).softmax(dim=1)

    xs = [x for x, _ in _batches()]
    outs = [predict(x) for x in xs]
    assert predict.replays == len(xs) - 2
    for x, out in zip(xs, outs):
        with gc.no_grad():
            np.testing.assert_array_equal(out.numpy(), model(x).softmax(dim=1).numpy())


def test_a_python_number_argument_is_part_of_the_signature():
    w = nn.Parameter(gc.tensor([1.0, 2.0]))

    @gc.compile
    def f(x, scale):
        with gc.no_grad():
            return (w * x * scale).sum()

    x = gc.tensor([3.0, 4.0])
    for _ in range(3):
        assert f(x, 2.0).item() == 22.0
        assert f(x, 3.0).item() == 33.0
    assert f.replays == 2


def test_new_shapes_record_again_and_the_cache_has_a_limit(monkeypatch):
    monkeypatch.setattr(capture, "cache_size_limit", 3)
    w = gc.ones(1)
    fn = gc.compile(lambda x: (x * w).sum())
    for n in (1, 2, 3):
        for _ in range(3):
            assert fn(gc.ones(n)).item() == n
    assert fn.replays == 3
    with pytest.warns(UserWarning, match="3 signatures"):
        assert fn(gc.ones(7)).item() == 7
    assert fn(gc.ones(8)).item() == 8


def test_module_attribute_changed_between_calls_is_seen():
    model = _mlp(dropout=0.5)
    model.eval()

    @gc.compile
    def f(x):
        with gc.no_grad():
            return model(x)

    x = _batches(1)[0][0]
    for _ in range(3):
        a = f(x)
    model.train()  # dropout now draws masks: the tape recorded in eval cannot serve
    gc.manual_seed(5)
    b = f(x)
    gc.manual_seed(5)
    with gc.no_grad():
        expect = model(x)
    np.testing.assert_array_equal(b.numpy(), expect.numpy())
    assert not np.array_equal(a.numpy(), b.numpy())


def test_another_models_modes_do_not_disturb_the_replay():
    model, other = _mlp(), _mlp(dropout=0.2)

    @gc.compile
    def f(x):
        with gc.no_grad():
            return model(x)

    x = _batches(1)[0][0]
    for k in range(6):
        other.train(k % 2 == 0)  # not read by f: not guarded
        f(x)
    assert f.replays == 4


def test_parameter_data_replaced_between_calls_is_seen():
    lin = nn.Linear(3, 2)

    @gc.compile
    def f(x):
        with gc.no_grad():
            return lin(x)

    x = gc.ones(1, 3)
    for _ in range(3):
        f(x)
    lin.weight.data = gc.zeros(2, 3)  # a new array: the tape's guard sees it
    lin.bias.data = gc.ones(2)
    np.testing.assert_array_equal(f(x).numpy(), np.ones((1, 2), np.float32))


def test_inputs_written_in_place_reach_the_caller():
    w = nn.Parameter(gc.tensor([2.0]))

    @gc.compile
    def f(x):
        with gc.no_grad():
            x.mul_(w)
        return x.sum()

    for k in range(4):
        x = gc.tensor([1.0, float(k)])
        f(x)
        np.testing.assert_array_equal(x.numpy(), [2.0, 2.0 * k])
    assert f.replays == 2


def test_python_side_effects_on_modules_are_refused():
    model = nn.Linear(2, 2)

    def f(x):
        model.calls = getattr(model, "calls", 0) + 1
        return model(x).sum()

    fn = gc.compile(f)
    with pytest.warns(UserWarning, match="changes the attribute"):
        fn(gc.ones(1, 2))
    fn(gc.ones(1, 2))
    assert model.calls == 2


def test_compiled_module():
    model = _mlp()
    cm = gc.compile(model)
    assert isinstance(cm, nn.Module) and cm._orig_mod is model
    assert list(cm.state_dict()) == ["_orig_mod." + k for k in model.state_dict()]
    assert [p is q for p, q in zip(cm.parameters(), model.parameters())] == \
        [True] * len(list(model.parameters()))
    x = _batches(1)[0][0]
    out = cm(x)  # grad mode: eager, with a graph
    assert out.grad_fn is not None
    out.sum().backward()
    with gc.no_grad():
        outs = [cm(x) for _ in range(4)]
        expect = model(x)
    for o in outs:
        np.testing.assert_array_equal(o.numpy(), expect.numpy())
    assert cm._compiled_forward.replays == 2


def test_decorator_forms_and_disable():
    def f(x):
        return x + 1

    assert gc.compile(f, disable=True) is f
    g = gc.compile(mode="reduce-overhead", dynamic=False)(f)
    assert isinstance(g, capture.CompiledFunction) and g.__wrapped__ is f
    assert g(gc.ones(2)).tolist() == [2.0, 2.0]
    assert not capture.is_compiling()


def test_a_result_with_a_graph_for_a_later_backward_runs_eagerly():
    """Compiling a forward whose result is backpropagated outside: a replay builds no
    graph, so it is refused (a leaf result would leave the parameters without .grad)."""
    lin = nn.Linear(3, 1)
    fn = gc.compile(lambda x: lin(x).sum())
    with pytest.warns(UserWarning, match="graph for a later backward"):
        fn(gc.ones(2, 3)).backward()
    for _ in range(3):
        lin.weight.grad = None
        fn(gc.ones(2, 3)).backward()
        assert lin.weight.grad is not None
    assert fn.replays == 0


def test_arguments_that_require_grad_run_eagerly():
    fn = gc.compile(lambda x: (x * x).sum())
    x = gc.ones(3, requires_grad=True)
    with pytest.warns(UserWarning, match="requires grad"):
        fn(x).backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_replays_keep_memory_flat():
    import tracemalloc
    model = _mlp()
    opt = gc.optim.Adam(model.parameters(), lr=1e-3)

    @gc.compile
    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    x, y = _batches(1)[0]
    for _ in range(5):
        step(x, y)
    tracemalloc.start()
    for _ in range(20):
        step(x, y)
    base = tracemalloc.get_traced_memory()[0]
    for _ in range(300):
        step(x, y)
    grown = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert step.replays == 323
    assert grown < 50_000, f"replays grew memory by {grown} bytes"


def test_cuda_tensors_are_captured_into_a_graph(standin):
    # (tests/test_compile_cuda.py has the CUDA path's tests)
    w = gc.ones(3, device="cuda")
    fn = gc.compile(lambda x: (x * w).sum())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [fn(gc.full((3,), float(k), device="cuda")).item() for k in range(4)] == \
            [0.0, 3.0, 6.0, 9.0]
    assert fn.replays == 1


def _workloads():
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parent.parent / "bench" / "workloads.py"
    spec = importlib.util.spec_from_file_location("_bench_workloads", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("key", ["chain100", "mlp64", "mlp784", "bcast", "tanh4m"])
def test_benchmark_steps_replay_as_eager(key):
    """The speed targets' gradcore steps (raw tensors, indexing, logsumexp, a hand SGD
    under no_grad, .grad set to None inside the step), compiled, give eager's losses,
    gradients and parameters at every step."""
    w = _workloads()
    target = next(t for t in w.TARGETS if t.key == key)
    inputs = target.inputs()
    eager = target.make("gradcore", inputs)
    compiled = gc.compile(target.make("gradcore", inputs))
    for _ in range(5):
        (le, ge), (lc, gcs) = eager(), compiled()
        assert le.item() == lc.item()
        for a, b in zip(ge, gcs):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert compiled.replays >= 2


def test_exact_gelu_on_small_tensors_replays():
    """erf of a few elements is computed value by value on the host (the C library's
    erf): the recording takes the whole call as one tape call instead of refusing."""
    gc.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 1))
    opt = gc.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    eager_model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 1))
    eager_model.load_state_dict(model.state_dict())
    eager_opt = gc.optim.SGD(eager_model.parameters(), lr=0.1)
    fn = gc.compile(step)
    xs = [gc.randn(3, 4) for _ in range(5)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        losses = [fn(x).item() for x in xs]
    expect = []
    for x in xs:
        eager_opt.zero_grad()
        loss = eager_model(x).pow(2).mean()
        loss.backward()
        eager_opt.step()
        expect.append(loss.item())
    assert losses == expect and fn.replays == 3
