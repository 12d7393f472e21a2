"""CUDA graphs captured by hand (``gc.cuda.CUDAGraph``, ``gc.cuda.graph``,
``gc.cuda.make_graphed_callables``): replays give eager's results bit for bit, dropout
draws fresh masks at each replay, pools are shared, and what CuPy refuses during a
capture raises and leaves gradcore usable.

The tests that take ``device`` run on the CuPy stand-in in CI and on the GPU under
``make gpu-test`` (GRADCORE_TEST_DEVICES=cuda)."""

from __future__ import annotations

import numpy as np
import pytest

import gradcore as gc

from conftest import DEVICES, STANDIN, needs_torch

TEST_DEVICES = tuple(d for d in DEVICES if d in (STANDIN, "cuda")) or (STANDIN,)
STEPS = 5


def _host(t):
    return t.detach().cpu().numpy()


def _data(n=STEPS, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((4, 8)).astype(np.float32),
             rng.standard_normal((4, 3)).astype(np.float32)) for _ in range(n)]


def _model(dropout=0.0):
    gc.manual_seed(0)
    layers = [gc.nn.Linear(8, 16), gc.nn.Tanh()]
    if dropout:
        layers.append(gc.nn.Dropout(dropout))
    return gc.nn.Sequential(*layers, gc.nn.Linear(16, 3)).to("cuda")


OPTIMIZERS = {
    "sgd": lambda p: gc.optim.SGD(p, lr=0.1, momentum=0.9),
    "adam": lambda p: gc.optim.Adam(p, lr=0.01, capturable=True),
    "adamw": lambda p: gc.optim.AdamW(p, lr=0.01, capturable=True),
}


def _step(model, opt, x, y):
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    return loss


def _warm_up(model, opt, x, y):
    """PyTorch's recipe: a few steps on a side stream before the capture (the
    optimizer's state is made then, not inside the graph)."""
    s = gc.cuda.Stream()
    s.wait_stream(gc.cuda.current_stream())
    with gc.cuda.stream(s):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            _step(model, opt, x, y)
    gc.cuda.current_stream().wait_stream(s)


def _train(graphed, make_opt, dropout=0.0):
    model = _model(dropout)
    opt = make_opt(model.parameters())
    batches = _data()
    x = gc.tensor(batches[0][0], device="cuda")
    y = gc.tensor(batches[0][1], device="cuda")
    _warm_up(model, opt, x, y)
    losses = []
    if graphed:
        g = gc.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with gc.cuda.graph(g):
            static_loss = _step(model, opt, x, y)
        for bx, by in batches:
            x.copy_(gc.tensor(bx, device="cuda"))
            y.copy_(gc.tensor(by, device="cuda"))
            g.replay()
            losses.append(static_loss.item())
    else:
        for bx, by in batches:
            opt.zero_grad(set_to_none=True)
            losses.append(_step(model, opt, gc.tensor(bx, device="cuda"),
                                gc.tensor(by, device="cuda")).item())
    return losses, [_host(p) for p in model.parameters()], opt


@pytest.mark.parametrize("opt", list(OPTIMIZERS))
def test_a_captured_training_step_replays_eagers_steps_bit_for_bit(device, opt):
    eager = _train(False, OPTIMIZERS[opt])
    graphed = _train(True, OPTIMIZERS[opt])
    assert graphed[0] == eager[0]
    for a, b in zip(graphed[1], eager[1]):
        np.testing.assert_array_equal(a, b)
    # the step counts are eager's: each replay counted one step
    assert all(s.get("step", 3 + STEPS) == 3 + STEPS for s in graphed[2].state.values())


def test_static_outputs_follow_the_static_inputs(device):
    x = gc.zeros(3, device="cuda")
    g = gc.cuda.CUDAGraph()
    with gc.cuda.graph(g):
        y = x * 2 + 1
        assert gc.cuda.is_current_stream_capturing()
    assert not gc.cuda.is_current_stream_capturing()
    for v in (1.0, 5.0):
        x.copy_(gc.tensor([v, v, v], device="cuda"))
        g.replay()
        np.testing.assert_array_equal(_host(y), [2 * v + 1] * 3)


def test_a_compiled_function_inside_a_hand_capture_is_part_of_it(device):
    """gc.compile's function called inside gc.cuda.graph runs eagerly (it would start a
    capture of its own otherwise): its work is in the user's graph."""
    @gc.compile
    def double(t):
        return t * 2

    x = gc.zeros(3, device="cuda")
    g = gc.cuda.CUDAGraph()
    with gc.cuda.graph(g):
        y = double(x) + 1
    assert not double._cache  # (nothing recorded: it ran as part of the capture)
    x.copy_(gc.tensor([1.0, 2.0, 3.0], device="cuda"))
    g.replay()
    np.testing.assert_array_equal(_host(y), [3.0, 5.0, 7.0])


def test_dropout_draws_fresh_masks_at_each_replay_as_eager_does(device):
    x = gc.ones(64, device="cuda")
    gc.manual_seed(3)
    state = gc.random.device_state(None, x.device)
    saved = state.clone()
    g = gc.cuda.CUDAGraph()
    with gc.cuda.graph(g):
        y = gc.nn.functional.dropout(x, 0.5)
    masks = []
    for _ in range(3):
        g.replay()
        masks.append(_host(y))
    assert not np.array_equal(masks[0], masks[1])
    assert not np.array_equal(masks[1], masks[2])
    state.copy_(saved)  # the same generator state: eager draws the same masks
    for m in masks:
        np.testing.assert_array_equal(_host(gc.nn.functional.dropout(x, 0.5)), m)


def test_two_graphs_share_a_pool(device):
    x = gc.arange(4.0, device="cuda")
    g1, g2 = gc.cuda.CUDAGraph(), gc.cuda.CUDAGraph()
    with gc.cuda.graph(g1):
        a = (x + 1) * 2  # (x + 1: a temporary, freed in the pool)
    with gc.cuda.graph(g2, pool=g1.pool()):
        b = (a - 1) * 3
    assert g2.pool() == g1.pool()
    handle = gc.cuda.graph_pool_handle()
    g3 = gc.cuda.CUDAGraph()
    with gc.cuda.graph(g3, pool=handle):
        c = b + a
    assert g3.pool() == handle and handle != g1.pool()
    for v in (0.0, 10.0):
        x.copy_(gc.arange(4.0, device="cuda") + v)
        g1.replay()
        g2.replay()
        g3.replay()
        want_a = (np.arange(4.0) + v + 1) * 2
        np.testing.assert_array_equal(_host(a), want_a)
        np.testing.assert_array_equal(_host(c), (want_a - 1) * 3 + want_a)


def test_capture_begin_and_end_by_hand(device):
    x = gc.ones(2, device="cuda")
    s = gc.cuda.Stream()
    g = gc.cuda.CUDAGraph()
    gc.cuda.synchronize()
    with gc.cuda.stream(s):
        g.capture_begin()
        y = x + x
        g.capture_end()
    g.replay()
    np.testing.assert_array_equal(_host(y), [2, 2])
    with pytest.raises(RuntimeError, match="already owns a captured graph"):
        with gc.cuda.stream(s):
            g.capture_begin()
    g.reset()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.pool()


def _usable_after(device):
    assert not gc.cuda.is_current_stream_capturing()
    assert gc.cuda.current_stream() == gc.cuda.default_stream()
    z = gc.ones(3, device="cuda") * 2
    assert z.sum().item() == 6.0


@pytest.mark.parametrize("body, what", [
    (lambda x: x.sum().item(), "read of values by the host"),
    (lambda x: print(x), "read of values by the host"),
    (lambda x: x.cpu(), "read of values by the host"),
    (lambda x: x[x > 0], "host"),
    (lambda x: gc.cuda.synchronize(), "CUDA graph capture refused"),
    (lambda x: x + gc.tensor([1.0, 2.0, 3.0], device="cuda"), "copy from the host"),
], ids=["item", "print", "cpu", "mask", "synchronize", "from-host"])
def test_what_cupy_refuses_raises_and_leaves_gradcore_usable(device, body, what):
    x = gc.ones(3, device="cuda")
    g = gc.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match=what):
        with gc.cuda.graph(g):
            body(x)
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()
    _usable_after(device)


def test_the_programs_own_error_passes_through(device):
    g = gc.cuda.CUDAGraph()
    with pytest.raises(KeyError, match="mine"):
        with gc.cuda.graph(g):
            raise KeyError("mine")
    _usable_after(device)


def test_optimizers_with_host_scalars_and_schedulers_are_refused(device):
    model = _model()
    opt = gc.optim.RMSprop(model.parameters(), lr=0.01)
    x, y = gc.ones(4, 8, device="cuda"), gc.zeros(4, 3, device="cuda")
    _warm_up(model, opt, x, y)
    g = gc.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="step\\(\\) for an instance of RMSprop"):
        with gc.cuda.graph(g):
            _step(model, opt, x, y)
    sgd = gc.optim.SGD(model.parameters(), lr=0.1)
    sched = gc.optim.lr_scheduler.StepLR(sgd, 1)
    with pytest.raises(RuntimeError, match="instance of StepLR"):
        with gc.cuda.graph(gc.cuda.CUDAGraph()):
            sched.step()
    _usable_after(device)
    sched.step()  # (outside a capture it steps as always)


def test_bad_arguments(device):
    g = gc.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="Unknown capture error mode"):
        with gc.cuda.graph(g, capture_error_mode="loose"):
            pass
    _usable_after(device)
    with pytest.raises(RuntimeError, match="non-default stream"):
        g.capture_begin()
    with pytest.raises(TypeError, match="pool must be"):
        with gc.cuda.graph(g, pool=3):
            pass
    for mode in ("global", "thread_local", "relaxed"):
        h = gc.cuda.CUDAGraph()
        with gc.cuda.graph(h, capture_error_mode=mode):
            pass
        h.replay()


def test_debug_dump_needs_the_mode_and_says_what_cupy_lacks(device, tmp_path):
    g = gc.cuda.CUDAGraph()
    x = gc.ones(2, device="cuda")
    with gc.cuda.graph(g):
        x.add_(1)
    with pytest.warns(UserWarning, match="enable_debug_mode"):
        g.debug_dump(tmp_path / "g.dot")
    g.enable_debug_mode()
    if hasattr(g._graph, "debug_dot_graph"):
        g.debug_dump(tmp_path / "g.dot")
        assert (tmp_path / "g.dot").exists()
    else:
        with pytest.raises(RuntimeError, match="debug_dot_graph"):
            g.debug_dump(tmp_path / "g.dot")


def test_make_graphed_callables_gives_eagers_gradients(device, monkeypatch):
    replays = []
    replay = gc.cuda.CUDAGraph.replay
    monkeypatch.setattr(gc.cuda.CUDAGraph, "replay",
                        lambda self: (replays.append(self), replay(self))[1])

    def run(graphed):
        model = _model()
        fn = lambda a, b: (a * b).sin()  # noqa: E731
        x = gc.randn(4, 8, device="cuda", requires_grad=True)
        w = gc.randn(4, 3, device="cuda", requires_grad=True)
        if graphed:
            model, fn = gc.cuda.make_graphed_callables(
                (model, fn), ((x,), (gc.randn(4, 3, device="cuda", requires_grad=True), w)))
        results = []
        for bx, _by in _data(3):
            xi = gc.tensor(bx, device="cuda", requires_grad=True)
            out = fn(model(xi), w)
            out.sum().backward()
            results += [_host(out), _host(xi.grad), _host(w.grad)]
            results += [_host(p.grad) for p in model.parameters()]
            w.grad = None
            model.zero_grad()
        return results

    eager, graphed = run(False), run(True)
    assert len(replays) == 3 * 4  # (two callables, a forward and a backward graph each)
    for a, b in zip(graphed, eager):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_a_graphed_module_runs_eagerly_in_another_mode(device):
    model = _model()
    x = gc.randn(4, 8, device="cuda")
    graphed = gc.cuda.make_graphed_callables(model, (x,))
    assert graphed is model
    model.eval()
    x2 = gc.randn(4, 8, device="cuda")
    np.testing.assert_allclose(_host(model(x2)), _host(model[2](model[1](model[0](x2)))))


def test_make_graphed_callables_checks_its_arguments(device):
    model = _model()
    model.register_forward_hook(lambda *a: None)
    with pytest.raises(AssertionError, match="hooks"):
        gc.cuda.make_graphed_callables(model, (gc.ones(4, 8, device="cuda"),))
    with pytest.raises(AssertionError, match="only Tensors"):
        gc.cuda.make_graphed_callables(lambda a, b: a * b, (gc.ones(2, device="cuda"), 2))


@needs_torch
def test_without_a_gpu_as_pytorchs_cpu_build(monkeypatch):
    import torch  # noqa: PLC0415

    monkeypatch.setattr(gc.backend, "_probe_cuda", lambda: (None, "no GPU here"))
    for name, call in (("CUDAGraph", lambda m: m.cuda.CUDAGraph()),
                       ("graph_pool_handle", lambda m: m.cuda.graph_pool_handle()),
                       ("graph", lambda m: m.cuda.graph(None)),
                       ("is_current_stream_capturing",
                        lambda m: m.cuda.is_current_stream_capturing())):
        with pytest.raises(RuntimeError):
            call(torch)
        with pytest.raises(gc.backend.CudaUnavailableError):
            call(gc)
        assert name in gc.cuda.__all__
