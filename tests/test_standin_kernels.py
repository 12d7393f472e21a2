"""The generated CUDA kernels on the CUDA code path, run by the CuPy stand-in through the
host build of the same source (``GRADCORE_CUDA_KERNELS=1``; opt-in until a GPU session
has validated it)."""

import numpy as np
import pytest

import gradcore as gc
from gradcore import fused
from gradcore import kernels_cuda as kc

pytestmark = pytest.mark.skipif(not kc.host_supports("float32"),
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


@pytest.mark.parametrize("name", sorted(fused.KERNELS))
def test_every_kernel_matches_the_cpu_twin(name, kernels_on):
    k = fused.KERNELS[name]
    rng = np.random.default_rng(1)
    args = [rng.uniform(0.3, 0.9, size=(3, 5)) for _ in k.params]
    want = getattr(gc.device("cpu").math, name)(*args)
    math = gc.device("cuda").math
    got = getattr(math, name)(*(math.asarray(a) for a in args)).get()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


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
