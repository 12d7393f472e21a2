"""gradcore's CUDA kernels on the CUDA code path, run by the CuPy stand-in through the
host build of the same source: on by default, off with ``GRADCORE_CUDA_KERNELS=0``, and
a device whose compiler fails falls back to CuPy's own kernels with a warning."""

import numpy as np
import pytest

import gradcore as gc
from gradcore.kernels import host as khost
from gradcore.kernels import pointwise as fused
from gradcore.kernels import source as kc
from gradcore.kernels import updates
from gradcore.kernels.spec import Update

pytestmark = pytest.mark.skipif(not khost.host_supports("float32"),
                                reason="no host build of the kernels on this machine")


@pytest.fixture
def kernels_on(monkeypatch, standin):
    monkeypatch.setenv("GRADCORE_CUDA_KERNELS", "1")
    gc.backend._use_cuda_module_for_tests(standin)  # fresh namespaces read the setting
    yield standin
    monkeypatch.delenv("GRADCORE_CUDA_KERNELS")
    gc.backend._use_cuda_module_for_tests(standin)


def test_cuda_namespace_runs_the_generated_kernels(kernels_on):
    math = gc.device("cuda").math
    assert math.tanh_backward.__name__ == "tanh_backward"   # the device kernel, not numpy
    rng = np.random.default_rng(0)
    g = rng.normal(size=(5, 7)).astype(np.float32)
    y = np.tanh(rng.normal(size=(7,))).astype(np.float32)    # broadcast, as a row
    got = math.tanh_backward(math.asarray(g), math.asarray(y)).get()
    np.testing.assert_allclose(got, g * (1 - y * y), rtol=1e-6)
    x = rng.uniform(0.5, 2.0, size=(4, 3))
    got = math.pow_backward(math.asarray(np.ones_like(x)), math.asarray(x), 2.5).get()
    np.testing.assert_allclose(got, 2.5 * x ** 1.5, rtol=1e-12)


def _args(k, rng, shape=(3, 5)):
    arrays = [rng.uniform(0.3, 0.9, size=shape) if p not in k.masks else
              rng.random(shape) < 0.5 for p in k.params]
    return arrays + [0.25] * len(k.scalars)


@pytest.mark.parametrize("name", sorted(fused.KERNELS))
def test_every_kernel_matches_the_cpu_twin(name, kernels_on):
    k = fused.KERNELS[name]
    args = _args(k, np.random.default_rng(1))
    want = getattr(gc.device("cpu").math, name)(*args)
    math = gc.device("cuda").math
    got = getattr(math, name)(*(math.asarray(a) if hasattr(a, "shape") else a for a in args))
    want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
    assert len(got) == len(k.exprs)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.get(), b, rtol=1e-12, atol=1e-15)


def test_kernels_compile_lazily_once_per_dtype(kernels_on):
    kernels_on.COMPILED.clear()
    math = gc.device("cuda").math  # attaching the kernels compiles nothing
    assert kernels_on.COMPILED == []
    g = math.asarray(np.ones(4, np.float32))
    for _ in range(3):
        math.tanh_backward(g, g)
        math.relu_backward(g, g)
    assert len(kernels_on.COMPILED) == 1
    assert "-DGRADCORE_NO_float64" in kernels_on.COMPILED[0]
    assert "-DGRADCORE_NO_float32" not in kernels_on.COMPILED[0]
    math.tanh_backward(g.astype(np.float64), g.astype(np.float64))
    assert len(kernels_on.COMPILED) == 2


def test_scalar_operands_pass_with_stride_zero(kernels_on):
    """A number or one-element array is passed as one element with stride 0, not
    broadcast into a full-size copy."""
    math = gc.device("cuda").math
    x = np.linspace(0.5, 2.0, 12).reshape(3, 4)
    got = math.pow_backward(math.asarray(np.ones_like(x)), math.asarray(x), 2.5).get()
    np.testing.assert_allclose(got, 2.5 * x ** 1.5, rtol=1e-12)
    _, values, _, _ = kc.kernel_arguments(
        fused.KERNELS["pow_backward"], (math.asarray(x), math.asarray(x), 2.5), math.xp)
    assert [int(v) for v in values[1:6:2]] == [1, 1, 0] and values[4].size == 1


def test_the_same_shape_path_passes_what_the_general_one_does(kernels_on):
    """Arrays of one shape, contiguous, of the kernel's dtype skip the broadcasting
    (the host's cost of a launch): the same arguments as kernel_arguments, for every
    pointwise kernel; anything else takes the general path."""
    xp = gc.device("cuda").math.xp
    rng = np.random.default_rng(0)
    for k in fused.KERNELS.values():
        if isinstance(k, Update):
            continue
        args = [xp.asarray(rng.random((3, 4)) > 0.5) if p in k.masks else
                xp.asarray(rng.standard_normal((3, 4)).astype(np.float32)) for p in k.params]
        args += [0.5] * len(k.scalars)
        fast = kc._same_shape_arguments(k, tuple(args), xp)
        general = kc.kernel_arguments(k, tuple(args), xp, constants={})
        assert fast is not None, k.name
        assert fast[0] == general[0] and fast[3] == general[3] == 12
        for a, b in zip(fast[1], general[1]):
            assert type(a) is type(b), k.name
            if hasattr(a, "shape") and a.shape and a is not b:  # outputs: new arrays
                assert (a.shape, a.dtype) == (b.shape, b.dtype)
            elif not hasattr(a, "shape") or not a.shape:
                assert a == b, k.name
        if len(k.params) < 2 or k.params[1] in k.masks:
            continue
        second = args[1]
        square = xp.asarray(rng.standard_normal((4, 4)).astype(np.float32))
        for odd in (second[:1],                     # broadcast
                    square.T[:3],                   # strided, the same shape
                    second.astype(np.float64)):     # another dtype
            assert kc._same_shape_arguments(k, (args[0], odd, *args[2:]), xp) is None


@pytest.fixture
def launches(kernels_on, monkeypatch):
    """The entry points launched, in order (cleared by the test as it needs)."""
    names = []
    real = kernels_on._HostKernel.__call__
    monkeypatch.setattr(kernels_on._HostKernel, "__call__",
                        lambda self, *a, **kw: (names.append(self.name), real(self, *a, **kw)))
    return names


def _grads(device, build, *shapes, seed=0):
    rng = np.random.default_rng(seed)
    xs = [gc.tensor(rng.standard_normal(s), dtype=gc.float32, device=device,
                    requires_grad=True) for s in shapes]
    build(*xs).backward()
    return [x.grad.cpu().numpy() for x in xs]


@pytest.mark.parametrize("log", [False, True])
def test_softmax_backward_is_one_row_kernel(log, launches):
    def build(x, g):
        y = (gc.log_softmax if log else gc.softmax)(x, dim=-1)
        return (y * g).sum()

    launches.clear()
    got = _grads("cuda", build, (6, 37), (6, 37))
    name = ("log_softmax" if log else "softmax") + "_backward_rows_float32"
    assert launches == ["softmax_forward_rows_float32", "mul_backward_float32", name]
    want = _grads("cpu", build, (6, 37), (6, 37))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # another axis: the composite (no row kernel)
    launches.clear()
    _grads("cuda", lambda x, g: (gc.softmax(x, dim=0) * g).sum(), (6, 37), (6, 37))
    assert not any("rows" in n for n in launches)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_backward_is_one_kernel(reduction, launches):
    """The input gradient of cross_entropy is one softmax_xent_backward launch; the graph
    keeps PyTorch's NllLossBackward0 -> LogSoftmaxBackward0; weights and ignore_index
    give the CPU's gradient."""
    rng = np.random.default_rng(5)
    logits = rng.standard_normal((8, 11)).astype(np.float32)
    target = rng.integers(0, 11, 8)
    target[2] = -100
    weight = rng.uniform(0.5, 2.0, 11).astype(np.float32)

    def run(device):
        x = gc.tensor(logits, device=device, requires_grad=True)
        loss = gc.nn.functional.cross_entropy(
            x, gc.tensor(target, device=device), weight=gc.tensor(weight, device=device),
            reduction=reduction)
        assert loss.grad_fn.name() == "NllLossBackward0"
        assert loss.grad_fn.next_functions[0][0].name() == "LogSoftmaxBackward0"
        launches.clear()
        (loss.sum() if reduction == "none" else loss).backward()
        return x.grad.cpu().numpy(), list(launches)

    got, names = run("cuda")
    assert [n for n in names if "xent" in n or "rows" in n] == ["softmax_xent_backward_float32"]
    want, _ = run("cpu")
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("classes", [13, 70])
def test_cross_entropy_forward_is_one_row_kernel(reduction, weighted, dtype, classes,
                                                 launches):
    """cross_entropy's forward on CUDA: softmax_xent_forward and nll_reduce (the
    reduction, the gradient's coefficients and the range check: not some twenty), or
    for a small batch of narrow rows softmax_xent_small, both in one launch; the same
    loss, gradient and graph as the CPU, ignored targets included."""
    rng = np.random.default_rng(7)
    logits = (3 * rng.standard_normal((9, classes))).astype(dtype)
    target = rng.integers(0, classes, 9)
    target[[1, 4]] = -100
    weight = rng.uniform(0.5, 2.0, classes).astype(dtype)

    def run(device):
        x = gc.tensor(logits, device=device, requires_grad=True)
        launches.clear()
        loss = gc.nn.functional.cross_entropy(
            x, gc.tensor(target, device=device), reduction=reduction,
            weight=gc.tensor(weight, device=device) if weighted else None)
        forward = list(launches)
        assert loss.grad_fn.name() == "NllLossBackward0"
        assert loss.grad_fn.next_functions[0][0].name() == "LogSoftmaxBackward0"
        assert loss.dtype == getattr(gc, dtype)
        (loss.sum() if reduction == "none" else loss).backward()
        return loss.detach().cpu().numpy(), x.grad.cpu().numpy(), forward

    got_loss, got_grad, forward = run("cuda")
    acc = "float32" if dtype == "float16" else dtype
    # the log-probabilities and row losses, then the loss, the gradient's coefficients
    # and the targets' range in one launch (a float16 loss's cast is CuPy's); a small
    # batch of narrow rows in one launch for both
    assert forward == ([f"softmax_xent_small_{dtype}"] if classes <= 64 else
                       [f"softmax_xent_forward_{dtype}", f"nll_reduce_{acc}"]), forward
    want_loss, want_grad, _ = run("cpu")
    tol = dict(rtol=2e-3, atol=2e-3) if dtype == "float16" else dict(rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_loss.astype(np.float64), want_loss, **tol)
    np.testing.assert_allclose(got_grad.astype(np.float64), want_grad, **tol)


def test_cross_entropy_rows_not_for_other_shapes(launches):
    """3-D inputs, probability targets and label smoothing take the general path."""
    x = gc.randn(2, 5, 3, device="cuda", requires_grad=True)
    gc.nn.functional.cross_entropy(x, gc.randint(0, 5, (2, 3), device="cuda")).backward()
    p = gc.softmax(gc.randn(4, 5, device="cuda"), dim=1)
    gc.nn.functional.cross_entropy(gc.randn(4, 5, device="cuda"), p)
    gc.nn.functional.cross_entropy(gc.randn(4, 5, device="cuda"),
                                   gc.randint(0, 5, (4,), device="cuda"), label_smoothing=0.1)
    assert not any("xent_forward" in n for n in launches)


def test_row_broadcast_factor_gradient_is_one_pass(launches):
    """x * w with w broadcast along the rows: w's gradient is mul_sum_rows, one pass."""
    launches.clear()
    got = _grads("cuda", lambda x, w: (x * w).tanh().sum(), (33, 70), (70,))
    assert "mul_sum_rows_float32" in launches
    want = _grads("cpu", lambda x, w: (x * w).tanh().sum(), (33, 70), (70,))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_training_step_with_kernels_makes_no_host_sync(kernels_on):
    """A cross-entropy training step with Adam on CUDA, kernels on: no host sync until
    the loss is read."""
    gc.manual_seed(0)
    model = gc.nn.Sequential(gc.nn.Linear(6, 16), gc.nn.GELU(), gc.nn.Linear(16, 4)).to("cuda")
    opt = gc.optim.Adam(model.parameters(), lr=1e-2)
    x = gc.tensor(np.linspace(-1, 1, 48).reshape(8, 6), dtype=gc.float32, device="cuda")
    t = gc.tensor(np.arange(8) % 4, device="cuda")
    for _ in range(2):
        kernels_on.reset_syncs()
        loss = gc.nn.functional.cross_entropy(model(x), t, label_smoothing=0.1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        assert kernels_on.host_syncs() == 0, kernels_on.sync_log()
        loss.item()


def test_numbers_become_device_constants_once(kernels_on, monkeypatch):
    """pow's exponent and clamp's bounds (Python numbers) are made one-element device
    arrays once per value and dtype, not copied from the host at every call."""
    math = gc.device("cuda").math
    made = []
    real_full = kernels_on.full
    monkeypatch.setattr(kernels_on, "full", lambda *a, **k: (made.append(a), real_full(*a, **k))[1])
    x = math.asarray(np.linspace(0.5, 2.0, 12))
    g = math.asarray(np.ones(12))
    for _ in range(3):
        got = math.pow_backward(g, x, 2.5)
        math.clamp_backward(g, x, 0.75, 1.5)
    np.testing.assert_allclose(got.get(), 2.5 * np.linspace(0.5, 2.0, 12) ** 1.5)
    assert sorted(a[1] for a in made) == [0.75, 1.5, 2.5]


def test_optimizer_updates_are_one_kernel_per_parameter_or_one_for_all(launches):
    """On CUDA with the kernels, every optimizer (SGD with momentum or nesterov, Adam and
    AdamW with amsgrad, RMSprop in its four forms, Adagrad, Adadelta, Adamax, NAdam,
    RAdam) launches one kernel per parameter (SGD, Adam, AdamW: one for all of them)
    and matches the CPU."""

    def run(device, make_opt):
        gc.manual_seed(0)
        model = gc.nn.Linear(5, 3).to(device)
        opt = make_opt(model.parameters())
        x = gc.tensor(np.linspace(-1, 1, 20).reshape(4, 5), dtype=gc.float32, device=device)
        for _ in range(7):  # (RAdam rectifies from the sixth step on)
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            launches.clear()
            opt.step()
        return [p.detach().cpu().numpy() for p in model.parameters()], list(launches)

    makers = {
        "sgd_momentum_step": lambda ps: gc.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True,
                                                     weight_decay=0.01),
        "sgd_step": lambda ps: gc.optim.SGD(ps, lr=0.1),
        "adam_step": lambda ps: gc.optim.AdamW(ps, lr=0.01),
        "adam_amsgrad_step": lambda ps: gc.optim.Adam(ps, lr=0.01, amsgrad=True,
                                                      weight_decay=0.1),
        "rmsprop_step": lambda ps: gc.optim.RMSprop(ps, lr=0.01, weight_decay=0.01),
        "rmsprop_momentum_step": lambda ps: gc.optim.RMSprop(ps, lr=0.01, momentum=0.9),
        "rmsprop_centered_step": lambda ps: gc.optim.RMSprop(ps, lr=0.01, centered=True,
                                                             maximize=True),
        "rmsprop_centered_momentum_step": lambda ps: gc.optim.RMSprop(
            ps, lr=0.01, centered=True, momentum=0.5),
        "adagrad_step": lambda ps: gc.optim.Adagrad(ps, lr=0.1, lr_decay=0.01),
        "adadelta_step": lambda ps: gc.optim.Adadelta(ps, weight_decay=0.01),
        "adamax_step": lambda ps: gc.optim.Adamax(ps, lr=0.01),
        "nadam_step": lambda ps: gc.optim.NAdam(ps, lr=0.01, weight_decay=0.1,
                                                decoupled_weight_decay=True),
        "radam_step": lambda ps: gc.optim.RAdam(ps, lr=0.01, weight_decay=0.1),
        "rprop_step": lambda ps: gc.optim.Rprop(ps, lr=0.01, maximize=True),
        "asgd_step": lambda ps: gc.optim.ASGD(ps, lr=0.01, t0=3, weight_decay=0.1),
    }
    for kernel, make in makers.items():
        got, names = run("cuda", make)
        want, _ = run("cpu", make)
        # (SGD's and Adam's read their scalars from device memory, all parameters in
        # one launch: the _multi kernels)
        if f"{kernel}_multi" in updates.MULTI_TENSOR_UPDATES:
            assert names == [f"{kernel}_multi_float32"], (kernel, names)
        else:
            assert names == [f"{kernel}_float32"] * 2, (kernel, names)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7, err_msg=kernel)


@pytest.mark.parametrize("setting", ["1", "0", None])
def test_kernels_are_on_by_default_and_off_with_zero(setting, monkeypatch, standin):
    if setting is None:
        monkeypatch.delenv("GRADCORE_CUDA_KERNELS", raising=False)
    else:
        monkeypatch.setenv("GRADCORE_CUDA_KERNELS", setting)
    gc.backend._use_cuda_module_for_tests(standin)
    try:
        math = gc.device("cuda").math
        assert math.device_kernels is (setting != "0")
        # the same step either way
        loss_cuda, params_cuda = _sgd_run("cuda")
        loss_cpu, params_cpu = _sgd_run("cpu")
        assert abs(loss_cuda - loss_cpu) < 1e-6
        for a, b in zip(params_cuda, params_cpu):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    finally:
        monkeypatch.undo()
        gc.backend._use_cuda_module_for_tests(standin)


def test_a_compiler_failure_falls_back_to_cupy_kernels(kernels_on, monkeypatch):
    """The first kernel call compiles; if that fails, one warning names the device and
    the reason, the namespace takes CuPy's own kernels, and every call still works,
    the one that met the failure included."""
    def broken(*args, **kwargs):
        raise RuntimeError("nvrtc: error: invalid option")

    monkeypatch.setattr(kernels_on, "RawModule", broken)
    math = gc.device("cuda").math
    assert math.device_kernels
    g = math.asarray(np.full(3, 2.0))
    y = math.asarray(np.full(3, 0.5))
    with pytest.warns(RuntimeWarning, match="did not compile on cuda:0.*invalid option"):
        got = math.tanh_backward(g, y)
    np.testing.assert_allclose(got.get(), 2.0 * 0.75)
    assert not math.device_kernels
    loss_cuda, params_cuda = _sgd_run("cuda", momentum=0.9)  # fused_optim fell back too
    loss_cpu, params_cpu = _sgd_run("cpu", momentum=0.9)
    for a, b in zip(params_cuda, params_cpu):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_an_update_falls_back_as_a_whole(kernels_on, monkeypatch):
    monkeypatch.setattr(kernels_on, "RawModule", lambda *a, **k: 1 / 0)
    with pytest.warns(RuntimeWarning, match="ZeroDivisionError"):
        loss_cuda, params_cuda = _sgd_run("cuda", steps=1, adam=True)
    loss_cpu, params_cpu = _sgd_run("cpu", steps=1, adam=True)
    for a, b in zip(params_cuda, params_cpu):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _sgd_run(device, steps=3, momentum=0.0, adam=False):
    gc.manual_seed(0)
    model = gc.nn.Sequential(gc.nn.Linear(6, 8), gc.nn.Tanh(), gc.nn.Linear(8, 3),
                             gc.nn.Sigmoid()).to(device)
    opt = gc.optim.Adam(model.parameters(), lr=0.01) if adam else \
        gc.optim.SGD(model.parameters(), lr=0.1, momentum=momentum)
    x = gc.tensor(np.linspace(-1, 1, 24).reshape(4, 6), dtype=gc.float32, device=device)
    for _ in range(steps):
        loss = ((model(x) - 0.5) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item(), [p.detach().cpu().numpy() for p in model.parameters()]


def test_training_step_with_kernels_matches_cpu(kernels_on):
    def run(device):
        gc.manual_seed(0)
        model = gc.nn.Sequential(gc.nn.Linear(6, 8), gc.nn.Tanh(), gc.nn.Linear(8, 3),
                                 gc.nn.Sigmoid()).to(device)
        opt = gc.optim.SGD(model.parameters(), lr=0.1)
        x = gc.tensor(np.linspace(-1, 1, 24).reshape(4, 6), dtype=gc.float32, device=device)
        for _ in range(3):
            loss = ((model(x) - 0.5) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        return loss.item(), [p.detach().cpu().numpy() for p in model.parameters()]

    loss_cuda, params_cuda = run("cuda")
    loss_cpu, params_cpu = run("cpu")
    assert abs(loss_cuda - loss_cpu) < 1e-6
    for a, b in zip(params_cuda, params_cpu):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_is_row_kernels(dtype, affine, launches):
    """layer_norm on CUDA: one launch forward, two backward (the input's gradient, both
    parameters' gradients), the CPU's values, over two normalized dimensions too."""
    rng = np.random.default_rng(9)
    xs = (2 * rng.standard_normal((3, 5, 4, 6)) + 1).astype(dtype)
    w0 = rng.uniform(0.5, 1.5, (4, 6)).astype(dtype)
    b0 = rng.standard_normal((4, 6)).astype(dtype)
    g0 = rng.standard_normal(xs.shape).astype(dtype)

    def run(device):
        x = gc.tensor(xs, device=device, requires_grad=True)
        w = gc.tensor(w0, device=device, requires_grad=True) if affine else None
        b = gc.tensor(b0, device=device, requires_grad=True) if affine else None
        launches.clear()
        y = gc.nn.functional.layer_norm(x, (4, 6), w, b, eps=1e-5)
        forward = list(launches)
        launches.clear()
        y.backward(gc.tensor(g0, device=device))
        grads = [t.grad.cpu().numpy() for t in (x, w, b) if t is not None]
        return y.detach().cpu().numpy(), grads, forward, list(launches)

    y, grads, forward, backward = run("cuda")
    assert forward == [f"layer_norm_forward_rows_{dtype}"]
    want = [f"layer_norm_backward_rows_{dtype}"] + (
        [f"layer_norm_param_grads_{dtype}"] if affine else [])
    assert [n for n in backward if "layer_norm" in n] == want
    y_cpu, grads_cpu, _, _ = run("cpu")
    tol = dict(rtol=5e-3, atol=5e-3) if dtype == "float16" else dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y.astype(np.float64), y_cpu, **tol)
    for a, b in zip(grads, grads_cpu, strict=True):
        np.testing.assert_allclose(a.astype(np.float64), b, **tol)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_gelu_is_one_launch_each_way(approximate, dtype, launches):
    xs = np.linspace(-4, 4, 45).reshape(5, 9).astype(dtype)

    def run(device):
        x = gc.tensor(xs, device=device, requires_grad=True)
        launches.clear()
        y = gc.nn.functional.gelu(x, approximate=approximate)
        forward = list(launches)
        y.sum().backward()
        return y.detach().cpu().numpy(), x.grad.cpu().numpy(), forward, list(launches)

    y, gx, forward, both = run("cuda")
    suffix = "_tanh" if approximate == "tanh" else ""
    assert forward == [f"gelu{suffix}_forward_{dtype}"]
    assert both[1:] == [f"gelu{suffix}_backward_{dtype}"]
    y_cpu, gx_cpu, _, _ = run("cpu")
    tol = dict(rtol=2e-3, atol=2e-3) if dtype == "float16" else dict(rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y.astype(np.float64), y_cpu, **tol)
    np.testing.assert_allclose(gx.astype(np.float64), gx_cpu, **tol)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_weight_on_another_device_is_an_error(smoothing, kernels_on):
    x = gc.randn(4, 3, device="cuda", requires_grad=True)
    t = gc.randint(0, 3, (4,), device="cuda")
    with pytest.raises(RuntimeError, match="same device.*(cuda(:0)? and cpu|cpu and cuda)"):
        gc.nn.functional.cross_entropy(x, t, weight=gc.ones(3), label_smoothing=smoothing)
