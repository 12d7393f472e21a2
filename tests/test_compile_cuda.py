"""gc.compile on CUDA: one captured CUDA graph per step, whose launches give eager's
results bit for bit and allocate nothing; what CuPy refuses during a capture makes the
function run eagerly, with a warning naming it and the line.

The tests that take ``device`` run on the CuPy stand-in in CI and on the GPU under
``make gpu-test`` (GRADCORE_TEST_DEVICES=cuda); those that take ``standin`` check the
stand-in's model itself. Every test that expects launches checks ``fn.replays``, so
that a compile that silently ran eagerly fails it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradcore as gc
import gradcore.capture as capture

from conftest import DEVICES, STANDIN

STEPS = 6
# the CUDA devices under test (the stand-in where none is asked for: GRADCORE_TEST_DEVICES=cpu)
TEST_DEVICES = tuple(d for d in DEVICES if d in (STANDIN, "cuda")) or (STANDIN,)


def _batches(n=STEPS, seed=0):
    rng = np.random.default_rng(seed)
    return [(gc.tensor(rng.standard_normal((4, 8)).astype(np.float32), device="cuda"),
             gc.tensor(rng.standard_normal((4, 8)).astype(np.float32), device="cuda"))
            for _ in range(n)]


def _params():
    gc.manual_seed(0)
    return (gc.nn.Parameter(gc.randn(8, device="cuda")),
            gc.nn.Parameter(gc.zeros(8, device="cuda")))


def _host(t):
    return t.detach().cpu().numpy()


def _run(compiled, make_opt, body=None, batches=None, sched=None):
    w, b = _params()
    opt = make_opt([w, b])
    scheduler = sched(opt) if sched else None

    def step(x, y):
        opt.zero_grad()
        loss = (((x * w + b).tanh() - y) ** 2).mean()
        if body is not None:
            loss = body(loss)
        loss.backward()
        opt.step()
        return loss

    fn = gc.compile(step) if compiled else step
    losses = []
    for x, y in batches or _batches():
        losses.append(fn(x, y))
        if scheduler is not None:
            scheduler.step()
    state = [_host(v) if isinstance(v, gc.Tensor) else np.asarray(v)  # (step counts)
             for s in opt.state.values() for v in s.values()]
    return [loss.item() for loss in losses], [_host(w), _host(b), _host(w.grad)], state, fn


def _same(a, b):
    assert a[0] == b[0]
    for x, y in zip(a[1] + a[2], b[1] + b[2]):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("opt", [
    lambda p: gc.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3),
    lambda p: gc.optim.SGD(p, lr=0.05),
], ids=["sgd-nesterov", "sgd"])
def test_launches_match_eager_bit_for_bit(device, opt):
    eager = _run(False, opt)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = _run(True, opt)
    _same(compiled, eager)
    # the first call runs eagerly, the next two are captured; the rest launch the graph
    assert compiled[3].replays == STEPS - 3 and compiled[3].recordings == 2


def test_a_launch_allocates_nothing(device):
    w, b = _params()
    opt = gc.optim.SGD([w, b], lr=0.1, momentum=0.9)

    @gc.compile
    def step(x, y):
        opt.zero_grad()
        loss = (((x * w + b).tanh() - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    batches = _batches()
    for x, y in batches[:4]:
        step(x, y)
    assert step.replays == 1
    (entry,) = step._cache.values()
    xp = gc.device("cuda").xp
    default = xp.get_default_memory_pool()
    private = entry.graph.pool
    counted = hasattr(private, "n_allocations")  # (the stand-in's count)
    mine = private.n_allocations if counted else None
    other = default.n_allocations if counted else None
    used, total = private.used_bytes(), private.total_bytes()
    for x, y in batches[4:]:
        step(x, y)
    assert step.replays == 3
    # the graph's pool served nothing, and took no memory; the default pool, the
    # returned loss only
    assert private.used_bytes() == used and private.total_bytes() == total
    if counted:
        assert private.n_allocations == mine and default.n_allocations - other == 2


def _step_without_arguments():
    """``(step, w)``: an SGD step of its own parameters and batch, taking no argument."""
    w, b = _params()
    opt = gc.optim.SGD([w, b], lr=0.1)
    x, y = _batches(1)[0]

    def step():
        opt.zero_grad()
        loss = (((x * w + b).tanh() - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss
    return step, w


def test_a_step_without_arguments_is_captured(device):
    # (no argument tells the device: the parameters do, all on CUDA)
    results = []
    for compiled in (False, True):
        step, w = _step_without_arguments()
        fn = gc.compile(step) if compiled else step
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            results.append(([fn().item() for _ in range(5)], _host(w)))
    # (once seen failing in a full run, not alone: the warnings say why it ran eagerly)
    assert fn.replays == 2, [str(w.message) for w in caught]
    assert results[0][0] == results[1][0]
    np.testing.assert_array_equal(results[0][1], results[1][1])


def _refused(body, match):
    eager = _run(False, lambda p: gc.optim.SGD(p, lr=0.1), body=body)
    with pytest.warns(UserWarning, match=match):
        compiled = _run(True, lambda p: gc.optim.SGD(p, lr=0.1), body=body)
    _same(compiled, eager)  # eagerly, then: the same results
    assert compiled[3].replays == 0


def test_a_host_read_runs_eagerly_with_the_line(device):
    _refused(lambda loss: loss * float(loss.detach() > 0),
             r"refused a read of values by the host.*test_compile_cuda.py:\d+")


def test_a_copy_from_the_host_runs_eagerly(device):
    _refused(lambda loss: loss * gc.tensor([2.0], device="cuda").sum(),
             r"refused a copy from the host.*H2D.*test_compile_cuda.py:\d+")


def test_a_scalar_made_in_the_step_is_captured_and_a_changing_one_refused(device):
    """CuPy makes a 0-d array from the host with a fill kernel (the value its
    argument), not a copy: a graph captures it with the value baked in. A constant
    replays as eager; a value that changes between calls shows as two captures that
    disagree, and the function runs eagerly, saying so."""
    eager = _run(False, lambda p: gc.optim.SGD(p, lr=0.1),
                 body=lambda loss: loss * gc.tensor(2.0, device="cuda"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = _run(True, lambda p: gc.optim.SGD(p, lr=0.1),
                        body=lambda loss: loss * gc.tensor(2.0, device="cuda"))
    _same(compiled, eager)
    assert compiled[3].replays == STEPS - 3
    calls = iter(range(100))
    changing = lambda loss: loss * gc.tensor(float(next(calls)), device="cuda")  # noqa: E731
    with pytest.warns(UserWarning, match="CUDA graphs of consecutive calls leave different"):
        compiled = _run(True, lambda p: gc.optim.SGD(p, lr=0.1), body=changing,
                        batches=_batches(8))
    assert compiled[3].replays == 0


def test_fullgraph_raises_instead(device):
    w, b = _params()

    @gc.compile(fullgraph=True)
    def f(x):
        return (x * w).sum().item()

    x = _batches(1)[0][0]
    f(x)  # the eager first call
    with pytest.raises(capture.Refused, match="read of values by the host"):
        f(x)


def test_a_python_value_that_changes_is_not_baked_in(device):
    scale = [1.0]

    def body(loss):
        scale[0] *= 1.5  # the function reads a Python number that changes every call
        return loss * scale[0]

    eager = _run(False, lambda p: gc.optim.SGD(p, lr=0.1), body=body)
    scale[0] = 1.0
    with pytest.warns(UserWarning, match="leave different values"):
        compiled = _run(True, lambda p: gc.optim.SGD(p, lr=0.1), body=body,
                        batches=_batches(8))
    assert compiled[3].replays == 0
    assert compiled[0][:STEPS] == eager[0]


def _sched(opt):
    return gc.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)


@pytest.mark.parametrize("opt", [
    lambda p: gc.optim.AdamW(p, lr=0.05, amsgrad=True),
    lambda p: gc.optim.SGD(p, lr=0.1, momentum=0.5, dampening=0.1),
], ids=["adamw-amsgrad", "sgd-momentum"])
def test_a_scheduler_changes_lr_between_launches(device, opt):
    # the step count, lr and what comes of them are copied to the device before each
    # launch: the graph is kept, and the steps are eager's, bit for bit
    batches = _batches(8)
    eager = _run(False, opt, batches=batches, sched=_sched)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = _run(True, opt, batches=batches, sched=_sched)
    _same(compiled, eager)
    assert compiled[3].replays == 8 - 3


def test_optimizers_with_scalars_on_the_host_run_eagerly(device):
    # RMSprop forms its scalars and counts its steps in Python, which a launch would not
    # repeat: refused, with a warning, and eager's results
    def opt(p):
        return gc.optim.RMSprop(p, lr=0.01)
    eager = _run(False, opt)
    with pytest.warns(UserWarning, match="refused the step\\(\\) of a RMSprop"):
        compiled = _run(True, opt)
    _same(compiled, eager)
    assert compiled[3].replays == 0


# ---- matrix products: cuBLAS called directly (gradcore.kernels.gemm) ---------------------
def _mlp_run(compiled, steps=STEPS):
    import gradcore.nn.functional as F  # noqa: PLC0415

    gc.manual_seed(0)
    model = gc.nn.Sequential(gc.nn.Linear(8, 16), gc.nn.ReLU(),
                             gc.nn.Linear(16, 4)).to("cuda")
    opt = gc.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    fn = gc.compile(step) if compiled else step
    rng = np.random.default_rng(3)
    losses = [fn(gc.tensor(rng.standard_normal((4, 8)).astype(np.float32), device="cuda"),
                 gc.tensor(rng.integers(0, 4, 4), device="cuda")) for _ in range(steps)]
    return [v.item() for v in losses], [_host(p) for p in model.parameters()], fn


def test_products_are_captured_through_cublas_called_directly(device):
    eager = _mlp_run(False)
    xp = gc.device("cuda").xp
    calls = xp.cublas_library().calls if hasattr(xp, "cublas_library") else None
    if calls is not None:
        calls.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = _mlp_run(True)
    assert compiled[0] == eager[0]
    for p, q in zip(compiled[1], eager[1]):
        np.testing.assert_array_equal(p, q)
    assert compiled[2].replays == STEPS - 3
    if calls is not None:  # (the stand-in logs cuBLAS's calls: some on the capture's stream)
        (entry,) = compiled[2]._cache.values()
        assert entry.graph.stream.ptr in {ptr for _name, ptr in calls}
        # (the biases through cuBLASLt's epilogues, captured too)
        assert ("lt_matmul", entry.graph.stream.ptr) in set(calls)


def test_products_through_cupy_are_refused_during_capture(device, monkeypatch):
    from gradcore.kernels import gemm  # noqa: PLC0415

    monkeypatch.setattr(gemm, "_test_library", None)
    monkeypatch.setattr(gemm, "_loaded", "libcublas could not be called directly (test)")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        compiled = _mlp_run(True, steps=3)
    assert compiled[2].replays == 0
    assert any("refused a matrix product through CuPy's cuBLAS" in str(w.message)
               for w in seen)


def test_cublas_directly_matches_numpy_products(device):
    m = gc.device("cuda").math
    xp = m.xp
    exact = hasattr(xp, "cublas_library")  # the stand-in: NumPy's products, bit for bit
    rng = np.random.default_rng(0)
    cases = [((3, 5), (5, 4)), ((2, 3, 5), (5, 4)), ((5,), (5, 4)), ((3, 5), (5,)),
             ((5,), (5,)), ((2, 1, 3, 5), (4, 5, 2)), ((0, 5), (5, 3)), ((3, 0), (0, 2))]
    for (sa, sb), dt in zip(cases * 3, [np.float32] * 8 + [np.float64] * 8 + [np.float16] * 8):
        a, b = rng.standard_normal(sa).astype(dt), rng.standard_normal(sb).astype(dt)
        out = m.matmul(xp.asarray(a), xp.asarray(b)).get()
        assert out.dtype == dt and out.shape == np.matmul(a, b).shape
        _close(out, np.matmul(a, b), exact, f"{sa} @ {sb} {dt}")
    a = rng.standard_normal((4, 6)).astype(np.float32)
    d = xp.asarray(a)
    _close(m.matmul(d.T, d).get(), a.T @ a, exact, "a transposed view")
    _close(m.matmul(d[:, ::2], d.T[::2]).get(), a[:, ::2] @ a.T[::2], exact, "strided")


def _close(got, want, exact, what):
    if exact:
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        tol = 1e-2 if want.dtype == np.float16 else 1e-5
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what)


def test_stand_in_cublas_wants_a_workspace_during_capture(standin):
    lib = standin.cublas_library()
    _, h = lib.create()
    a = standin.ones((2, 2), dtype=np.float32)
    s = standin.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        lib.set_stream(h, s.ptr)
        args = (h, 0, 0, 2, 2, 2, 1.0, a.data.ptr, 0, 2, 0, a.data.ptr, 0, 2, 0, 0.0,
                a.data.ptr, 0, 2, 0, 1, 68)
        assert lib.gemm_batched(*args) == 15  # CUBLAS_STATUS_NOT_SUPPORTED
        lib.set_workspace(h, a.data.ptr, 16)
        assert lib.gemm_batched(*args) == 0
        s.end_capture()


# ---- nn.Linear's bias: cuBLASLt's epilogues (gradcore.kernels.gemm) ----------------------
def _linear_case(dev, dtype, shape, bias, bias_grad, strided, create_graph=False):
    """nn.functional.linear forward and backward on ``dev``: the output and the
    gradients of x, w and b (None where not asked)."""
    rng = np.random.default_rng(7)
    full = rng.standard_normal(shape[:-1] + (2 * shape[-1],)).astype(dtype)
    xa = full[..., ::2] if strided else np.ascontiguousarray(full[..., ::2])
    x = gc.tensor(np.ascontiguousarray(xa), device=dev)
    if strided:  # (a non-contiguous view on the device too)
        x = gc.tensor(full, device=dev)[..., ::2]
    x.requires_grad_(True) if x.is_leaf else x.retain_grad()
    w = gc.tensor(rng.standard_normal((3, shape[-1])).astype(dtype), device=dev,
                  requires_grad=True)
    b = gc.tensor(rng.standard_normal(3).astype(dtype), device=dev,
                  requires_grad=bias_grad) if bias else None
    y = gc.nn.functional.linear(x, w, b)
    u = gc.tensor(rng.standard_normal(y.shape).astype(dtype), device=dev)
    if create_graph:  # (a second derivative: through tensor_math's linear_weight_grads)
        (gw,) = gc.autograd.grad((y * u).sum(), [w], create_graph=True)
        (gw * gw).sum().backward()
        return [_host(y), _host(x.grad), _host(gw)]
    y.backward(u)
    return [_host(y), _host(x.grad), _host(w.grad),
            None if b is None or b.grad is None else _host(b.grad)]


_LINEAR_CASES = [((6, 5), True, True, False), ((2, 3, 5), True, True, False),
                 ((6, 5), False, False, False), ((6, 5), True, False, False),
                 ((4, 5), True, True, True), ((2, 4, 5), True, True, True)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_linear_through_cublaslt_matches_the_cpu_and_torch(device, dtype):
    """The product with the bias (BIAS) and the weight gradient with the bias's (BGRADB)
    give the CPU's values: float32/64 bit for bit on the stand-in (one rounding of the
    same fp32/64 sums), float16 within its tolerance (rounded once, not twice); and
    PyTorch's."""
    exact = hasattr(gc.device("cuda").xp, "cublas_library") and dtype != np.float16
    tol = 2e-2 if dtype == np.float16 else 1e-5
    for shape, bias, bias_grad, strided in _LINEAR_CASES:
        got = _linear_case("cuda", dtype, shape, bias, bias_grad, strided)
        want = _linear_case("cpu", dtype, shape, bias, bias_grad, strided)
        for g, w in zip(got, want):
            assert (g is None) == (w is None)
            if g is None:
                continue
            assert g.dtype == dtype
            if exact:
                np.testing.assert_array_equal(g, w, err_msg=f"{shape} {bias} {strided}")
            else:
                np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
        torch = pytest.importorskip("torch")
        rng = np.random.default_rng(7)
        full = rng.standard_normal(shape[:-1] + (2 * shape[-1],)).astype(dtype)
        x = torch.tensor(full[..., ::2].astype(np.float64), requires_grad=True)
        w = torch.tensor(rng.standard_normal((3, shape[-1])).astype(dtype).astype(np.float64),
                         requires_grad=True)
        b = torch.tensor(rng.standard_normal(3).astype(dtype).astype(np.float64),
                         requires_grad=bias_grad) if bias else None
        y = torch.nn.functional.linear(x, w, b)
        y.backward(torch.tensor(rng.standard_normal(tuple(y.shape)).astype(dtype)
                                .astype(np.float64)))
        ref = [y, x.grad, w.grad, None if b is None or not bias_grad else b.grad]
        for g, r in zip(got, ref):
            if g is not None:
                np.testing.assert_allclose(g.astype(np.float64), r.detach().numpy(),
                                           rtol=tol * 5, atol=tol * 5)


def test_linear_double_backward_goes_through_tensor_math(device):
    for dtype in (np.float32, np.float64):
        got = _linear_case("cuda", dtype, (2, 3, 5), True, True, False, create_graph=True)
        want = _linear_case("cpu", dtype, (2, 3, 5), True, True, False, create_graph=True)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_a_linear_is_one_launch_forward_and_one_for_its_weight_and_bias(device):
    lin = gc.nn.Linear(5, 3).to("cuda")
    x = gc.randn(4, 5, device="cuda")
    lin(x).sum().backward()  # (the first use: cuBLASLt checked, plans made)
    lin.zero_grad()
    with gc.profile() as prof:
        lin(x).sum().backward()
    counts = {k.name: k.launches for k in prof.key_averages()}
    assert counts["matmul_bias"] == 1 and counts["matmul_bgrad"] == 1
    assert "add" not in counts and "matmul" not in counts  # (x needs no gradient)
    assert counts["sum"] == 1  # (the loss's own)


@pytest.fixture
def fresh_lt(monkeypatch):
    """cuBLASLt's state forgotten (checks, plans, warnings) before and after the test."""
    from gradcore.kernels import gemm  # noqa: PLC0415

    monkeypatch.setattr(gemm, "_warned", set())
    gemm._lt_forget()
    yield gemm
    gemm._lt_forget()


def _linear_step(dev):
    gc.manual_seed(0)
    lin = gc.nn.Linear(5, 3).to(dev)
    x = gc.tensor(np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32),
                  device=dev)
    y = lin(x)
    y.square().sum().backward()
    return [_host(y), _host(lin.weight.grad), _host(lin.bias.grad)]


@pytest.mark.parametrize("fault", ["fails", "disagrees"])
def test_a_cublaslt_that_fails_or_disagrees_falls_back_with_one_warning(standin, fresh_lt,
                                                                        monkeypatch, fault):
    lib = standin.cublas_library()
    real = lib.lt_matmul

    def broken(*args):
        if fault == "fails":
            return 13  # CUBLAS_STATUS_EXECUTION_FAILED
        status = real(*args)
        ptr, ddesc = args[10], args[11]  # (then 1s written over D: a wrong product)
        _kind, (_dt, m, n, ld) = lib._lt[ddesc]
        from cupy_standin._cublas import _view  # noqa: PLC0415
        _view(ptr, np.float32, (m, n), (1, ld))[...] = 1
        return status

    monkeypatch.setattr(lib, "lt_matmul", broken)
    want = _linear_step("cpu")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        first = _linear_step("cuda")
        second = _linear_step("cuda")
    for got in (first, second):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    msgs = [str(w.message) for w in seen if "cuBLASLt" in str(w.message)]
    assert len(msgs) == 2 and len(set(msgs)) == 2  # (once each: the bias, its gradient)
    assert all(("failed" if fault == "fails" else "disagrees") in m for m in msgs)


def test_a_linear_falls_back_where_cublaslt_has_no_algorithm(standin, fresh_lt, monkeypatch):
    """No algorithm from the heuristic (cuBLASLt does not support the product): the two
    steps, silently."""
    lib = standin.cublas_library()
    monkeypatch.setattr(lib, "lt_heuristic", lambda *a: (15, None, 0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _linear_step("cuda")
    for g, w in zip(got, _linear_step("cpu")):
        np.testing.assert_array_equal(g, w)


def test_stand_in_cublaslt_refuses_what_cublaslt_refuses(standin):
    from gradcore.kernels import gemm  # noqa: PLC0415

    lib = standin.cublas_library()
    _, h = lib.lt_create()
    a = standin.ones((4, 4), dtype=np.float32)
    p = a.data.ptr

    def plan(epilogue=gemm.EPILOGUE_BIAS, types=(0, 0, 0), compute=68):
        _, desc = lib.lt_desc_create(compute, 0 if compute == 68 else 1)
        assert lib.lt_desc_set(desc, gemm.DESC_EPILOGUE, epilogue) == 0
        lays = [lib.lt_layout_create(t, 4, 4, 4)[1] for t in types]
        _, pref = lib.lt_pref_create()
        lib.lt_pref_set(pref, gemm.PREF_MAX_WORKSPACE_BYTES, gemm.WORKSPACE)
        for attr in gemm.PREF_MIN_ALIGNMENT:
            lib.lt_pref_set(pref, attr, 4)
        status, algo, need = lib.lt_heuristic(h, desc, lays[0], lays[1], lays[2], lays[2],
                                              pref)
        return status, desc, lays, algo

    def matmul(desc, lays, algo, bias=p):
        lib.lt_desc_set(desc, gemm.DESC_BIAS_POINTER, bias)
        return lib.lt_matmul(h, desc, 1.0, p, lays[0], p, lays[1], 0.0, p, lays[2], p,
                             lays[2], algo, p, 1 << 20, 0, 68)

    status, desc, lays, algo = plan()
    assert status == 0 and matmul(desc, lays, algo) == 0
    assert matmul(desc, lays, algo, bias=0) == 7  # a null bias with BIAS: INVALID_VALUE
    assert plan(types=(0, 2, 0))[0] == 15  # mixed types: NOT_SUPPORTED
    assert plan(compute=70)[0] == 15  # float32 data with a 64F compute type
    _, desc2, lays2, _ = plan(gemm.EPILOGUE_BGRADB)
    assert matmul(desc2, lays2, algo) == 7  # an algorithm chosen for another product
    s = standin.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        assert lib.lt_desc_set(desc, gemm.DESC_BIAS_POINTER, p) == 0  # (host memory)
        assert lib.lt_desc_create(68, 0)[0] == 15  # gradcore's rule: none while capturing
        assert lib.lt_heuristic(h, desc, lays[0], lays[1], lays[2], lays[2], None)[0] == 15
        assert lib.lt_matmul(h, desc, 1.0, p, lays[0], p, lays[1], 0.0, p, lays[2], p,
                             lays[2], algo, p, 1 << 20, s.ptr, 68) == 0
        s.end_capture()


# ---- random numbers: Philox on the device (gradcore.kernels.philox) ----------------------
def test_philox_known_answer_and_host_build_matches_its_twin():
    from gradcore.kernels import host as khost  # noqa: PLC0415
    from gradcore.kernels import philox  # noqa: PLC0415

    zero = np.zeros(1, np.uint64)
    words = philox.philox4x32_10(np, zero, zero, zero, zero, zero, zero)
    # Random123's known answer for philox4x32_10 (counter 0, key 0)
    assert [int(w[0]) for w in words] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    for dtype, compute in (("float32", np.float32), ("float64", np.float64),
                           ("float16", np.float32)):
        if not khost.host_supports(dtype):
            continue  # (a compiler without _Float16)
        state = np.array([(1 << 62) + 12345, 77], dtype=np.int64)
        got, want = np.empty(1003, dtype=dtype), np.empty(1003, dtype=dtype)
        khost.launch_host(f"dropout_mask_{dtype}", [got, state, compute(0.7),
                                                    compute(1 / 0.7), np.int64(1003)], 5, 96)
        philox.dropout_mask(np, want, state, 0.7, 1 / 0.7)
        np.testing.assert_array_equal(got, want)
        assert 0.66 < (got != 0).mean() < 0.74
        khost.launch_host(f"philox_advance_{dtype}", [state, np.int64(1003)], 1, 1)
        assert state.tolist() == [(1 << 62) + 12345, 77 + 251]


def _dropout_run(compiled, steps=STEPS):
    import gradcore.nn.functional as F  # noqa: PLC0415

    gc.manual_seed(0)
    model = gc.nn.Sequential(gc.nn.Linear(8, 16), gc.nn.ReLU(), gc.nn.Dropout(0.3),
                             gc.nn.Linear(16, 4)).to("cuda")
    opt = gc.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    gc.manual_seed(123)  # the generator dropout draws from: the same in both runs

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    fn = gc.compile(step) if compiled else step
    x = gc.tensor(np.random.default_rng(5).standard_normal((4, 8)).astype(np.float32),
                  device="cuda")
    y = gc.tensor(np.arange(4) % 4, device="cuda")
    losses = [fn(x, y) for _ in range(steps)]  # the same batch: only the masks change
    return [v.item() for v in losses], [_host(p) for p in model.parameters()], fn


def test_dropout_draws_fresh_masks_in_a_graph_as_eagerly(device):
    eager = _dropout_run(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = _dropout_run(True)
    assert compiled[2].replays == STEPS - 3
    assert compiled[0] == eager[0]
    for p, q in zip(compiled[1], eager[1]):
        np.testing.assert_array_equal(p, q)
    # the state moved on the device at each launch: the masks (and losses) kept changing
    assert len(set(compiled[0])) == STEPS


def test_dropout_on_cuda_draws_on_the_device(device):
    gc.manual_seed(7)
    x = gc.ones(4000, device="cuda")
    xp = gc.device("cuda").xp
    if hasattr(xp, "reset_syncs"):
        xp.reset_syncs()
    a = gc.nn.functional.dropout(x, 0.25)
    b = gc.nn.functional.dropout(x, 0.25)
    if hasattr(xp, "host_syncs"):  # (the stand-in counts them)
        assert xp.host_syncs() == 0
    a, b = _host(a), _host(b)
    assert set(np.unique(a)) == {0.0, np.float32(1 / 0.75)}
    assert 0.22 < (a == 0).mean() < 0.28 and not np.array_equal(a, b)
    gc.manual_seed(7)
    np.testing.assert_array_equal(_host(gc.nn.functional.dropout(x, 0.25)), a)


# ---- optimizer scalars in device memory (gradcore.kernels.updates.DEVICE_SCALAR_UPDATES) --
@pytest.mark.parametrize("name", ["sgd_momentum_step", "adam_amsgrad_step"])
def test_update_reading_scalars_from_memory_equals_by_value(name):
    from gradcore.kernels import host as khost  # noqa: PLC0415
    from gradcore.kernels import updates  # noqa: PLC0415

    k = updates.UPDATE_KERNELS[name]
    rng = np.random.default_rng(2)
    arrays = [rng.uniform(0.1, 1.0, 257).astype(np.float32) for _ in k.params]
    if name == "sgd_momentum_step":
        scalars = updates.sgd_kernel_scalars(0.1, 0.9, 0.1, 1e-3, False, True, False)
    else:
        scalars = updates.adam_kernel_scalars(np.dtype(np.float32), 3, 1e-2, 0.9, 0.999,
                                              1e-8, 1e-2, False, True)
    by_value = [a.copy() for a in arrays]
    khost.run_host(name, *by_value, *scalars)
    row = np.zeros(updates.ROW_WIDTH, dtype=np.float32)
    row[:len(scalars)] = scalars
    from_memory = [a.copy() for a in arrays]
    khost.run_host(f"{name}_dev", *from_memory, row)
    for a, b in zip(by_value, from_memory):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(by_value[0], arrays[0])
    row[updates.SKIP_COLUMN] = 1  # a step GradScaler skips: nothing written
    skipped = [a.copy() for a in arrays]
    khost.run_host(f"{name}_dev", *skipped, row)
    for a, b in zip(skipped, arrays):
        np.testing.assert_array_equal(a, b)


def test_a_step_with_a_grad_scaler_is_captured(device):
    """GradScaler keeps its scale and verdict on the device and Adam skips there: the
    whole mixed-precision step (a skipped one among them) is one graph."""
    inf = float("inf")
    results = []
    for compiled in (False, True):
        w, b = _params()
        opt = gc.optim.Adam([w, b], lr=0.1)
        scaler = gc.amp.GradScaler("cuda", init_scale=2.0 ** 8, growth_interval=2)
        x, y = _batches(1)[0]
        factors = [gc.tensor(v, device="cuda") for v in (1.0, inf, 1.0, 0.5, 2.0, 1.0)]
        k = gc.zeros((), device="cuda")

        def step(f):
            opt.zero_grad()
            loss = (((x * w * f + b).tanh() - y) ** 2).mean()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            return loss

        fn = gc.compile(step) if compiled else step
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for f in factors:
                k.copy_(f)
                fn(k)
        results.append((_host(w), _host(b), scaler.state_dict(),
                        float(opt.state[w]["step"])))
    assert fn.replays >= 3, [str(c.message) for c in caught]
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    assert results[0][2] == results[1][2] and results[0][3] == results[1][3] == 5.0


@pytest.mark.parametrize("name", ["sgd_momentum_step", "adam_step"])
def test_multi_tensor_update_equals_one_launch_per_tensor(name):
    """``<step>_multi`` walks several tensors (an empty one, one element, sizes that
    split across threads) in one launch, each with its own scalars; a skipped row
    leaves its tensor alone: the same bits as ``<step>_dev`` tensor by tensor."""
    from gradcore.kernels import host as khost  # noqa: PLC0415
    from gradcore.kernels import updates  # noqa: PLC0415

    k = updates.UPDATE_KERNELS[name]
    rng = np.random.default_rng(5)
    sizes = [300, 0, 1, 77, 1025]
    tensors = [[rng.uniform(0.1, 1.0, n).astype(np.float32) for _ in k.params]
               for n in sizes]
    rows = np.zeros((len(sizes), updates.ROW_WIDTH), dtype=np.float32)
    for r in range(len(sizes)):
        if name == "sgd_momentum_step":
            s = updates.sgd_kernel_scalars(0.1 * (r + 1), 0.9, 0.1, 1e-3, False, False, r == 0)
        else:
            s = updates.adam_kernel_scalars(np.dtype(np.float32), r + 1, 1e-2, 0.9, 0.999,
                                            1e-8, 1e-2 * r, False, r % 2 == 0)
        rows[r, :len(s)] = s
    rows[3, updates.SKIP_COLUMN] = 1
    one_by_one = [[a.copy() for a in t] for t in tensors]
    for r, t in enumerate(one_by_one):
        if t[0].size:
            khost.run_host(f"{name}_dev", *t, rows[r].copy())
    together = [[a.copy() for a in t] for t in tensors]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    pointers = np.array([[a.ctypes.data for a in t] for t in together], dtype=np.uint64)
    khost.launch_host(f"{name}_multi_float32", [pointers.reshape(-1), offsets, rows,
                                                np.int64(offsets[-1])], grid=3, block=64)
    for t1, t2 in zip(one_by_one, together):
        for a, b in zip(t1, t2):
            np.testing.assert_array_equal(a, b)
    for a, b in zip(together[3], tensors[3]):  # the skipped tensor
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(together[0][0], tensors[0][0])


def test_two_compiled_steps_called_in_turn_both_replay(device):
    """A GAN's loop: two compiled steps of two models, called in turn. Each rebinds its
    own gradients; neither graph reads the other's, so neither captures again (guards
    on every live CUDA tensor made both capture on every call), and both give eager's
    results bit for bit."""
    def make(seed, compiled):
        gc.manual_seed(seed)
        m = gc.nn.Linear(4, 2).to("cuda")
        opt = gc.optim.Adam(m.parameters(), lr=0.1)
        x = gc.randn(3, 4, device="cuda")

        def step():
            opt.zero_grad()
            loss = m(x).square().mean()
            loss.backward()
            opt.step()
            return loss
        return (gc.compile(step) if compiled else step), m

    runs = []
    for compiled in (False, True):
        (a, ma), (b, mb) = make(0, compiled), make(1, compiled)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            losses = [(a().item(), b().item()) for _ in range(STEPS)]
        runs.append((losses, [_host(p) for p in [*ma.parameters(), *mb.parameters()]]))
    assert a.replays == b.replays == STEPS - 3
    assert runs[0][0] == runs[1][0]
    for p, q in zip(runs[0][1], runs[1][1]):
        np.testing.assert_array_equal(p, q)


def test_a_graph_is_captured_again_when_a_tensor_it_reads_is_rebound(device):
    """The guards that remain: rebinding a parameter the step reads (``p.data = ...``)
    sends the step back to capturing, and the next calls use the new array."""
    step, w = _step_without_arguments()
    fn = gc.compile(step)
    for _ in range(4):
        fn()
    assert fn.replays == 1
    w.data = gc.zeros(8, device="cuda")
    fn()
    assert fn.replays == 1 and fn.recordings == 3  # captured again, not replayed
    assert _host(w).any()  # the step updated the new array (it was zeros)


def test_gradcore_cublaslt_0_adds_the_bias_apart(standin, monkeypatch):
    """GRADCORE_CUBLASLT=0 turns the epilogues off: the product, then the bias added, the
    same values."""
    x = gc.randn(5, 4, device="cuda")
    lin = gc.nn.Linear(4, 3).to("cuda")
    want = lin(x).detach().cpu().numpy()
    monkeypatch.setenv("GRADCORE_CUBLASLT", "0")
    with gc.profile() as prof:
        got = lin(x)
    names = {k.name for k in prof.key_averages()}
    assert "matmul_bias" not in names and {"matmul", "add"} <= names
    np.testing.assert_allclose(got.detach().cpu().numpy(), want, rtol=1e-6, atol=1e-6)
