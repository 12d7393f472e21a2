"""Shared fixtures: every test that takes ``device`` runs once per device under test.

``GRADCORE_TEST_DEVICES`` (comma-separated) picks the devices. The default,
``cpu,cuda-standin``, runs every such test on the CPU and again as device ``cuda``
served by the CuPy stand-in of ``tests/cupy_standin`` (the CUDA code path, on the CPU,
with every host synchronization counted): that is how CI, which has no GPU, runs the
CUDA path. ``make gpu-test`` sets it to ``cuda``, a real GPU.
"""

from __future__ import annotations

import contextlib
import os
import sys

import numpy as np
import pytest

import gradcore as gc
from gradcore.kernels import gemm

DEVICES = [d.strip() for d in
           os.environ.get("GRADCORE_TEST_DEVICES", "cpu,cuda-standin").split(",")
           if d.strip()]


STANDIN = "cuda-standin"


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        # a module may narrow the devices (TEST_DEVICES), e.g. to compare CPU printouts
        wanted = getattr(metafunc.module, "TEST_DEVICES", None)
        devices = DEVICES if wanted is None else \
            ([d for d in DEVICES if d in wanted] or list(wanted))
        metafunc.parametrize("device", devices, scope="session", indirect=True)


def pytest_collection_finish(session):
    """A test marked ``start_early(start)`` has ``start(item)`` called once the session
    has collected it, before any test runs: ``start`` begins work the test will wait for
    in another process (a compiler), which then runs beside the tests before it on a
    free core. Not for a bare collection (--collect-only) or an xdist worker."""
    config = session.config
    if config.option.collectonly or hasattr(config, "workerinput"):
        return
    for item in session.items:
        for mark in item.iter_markers("start_early"):
            mark.args[0](item)


@pytest.fixture(scope="session")
def device(request):
    """The device under test, as gradcore spells it (``cuda-standin`` runs as ``cuda``:
    the stand-in is installed for each such test by ``_default_device``)."""
    return "cuda" if request.param == STANDIN else request.param


@contextlib.contextmanager
def cuda_standin():
    """Serve ``cuda`` with the CuPy stand-in (and its fake ``cupyx``) inside the block."""
    import cupy_standin  # noqa: PLC0415  (tests/ is on sys.path: pytest's rootdir)

    gc.get_default_device()  # resolve the default from GRADCORE_DEVICE first
    fakes = cupy_standin.cupyx_modules()
    saved = {name: sys.modules.get(name) for name in fakes}
    sys.modules.update(fakes)
    gc.backend._use_cuda_module_for_tests(cupy_standin)
    gemm._use_library_for_tests(cupy_standin.cublas_library())  # its cuBLAS calls
    try:
        yield cupy_standin
    finally:
        gemm._use_library_for_tests(None)
        gc.backend._use_cuda_module_for_tests(None)
        for name, mod in saved.items():
            if mod is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = mod


@pytest.fixture
def standin():
    """The CuPy stand-in serving ``cuda`` for this test (the default device stays)."""
    prev = gc.get_default_device()
    with cuda_standin() as module:
        yield module
    gc.set_default_device(prev)


@pytest.fixture(autouse=True)
def _default_device(request):
    """Tests that take ``device`` also make it the default for new tensors. The others
    run with the CPU as the default, whatever ``GRADCORE_DEVICE`` or a GPU would pick
    (the default is ``auto``): their printouts, NumPy sharing and PyTorch comparisons are
    the CPU's."""
    if "device" not in request.fixturenames:
        prev = gc.backend._default_device  # None: not resolved yet (kept so)
        gc.set_default_device("cpu")
        yield
        gc.set_default_device(prev)
    else:
        dev = request.getfixturevalue("device")
        standin = request.node.callspec.params.get("device") == STANDIN
        with cuda_standin() if standin else contextlib.nullcontext():
            if dev.startswith("cuda") and not gc.cuda.is_available():
                pytest.fail(f"GRADCORE_TEST_DEVICES asks for {dev}, but CUDA is unusable: "
                            f"{gc.cuda.unavailable_reason()}")
            prev = gc.get_default_device()
            gc.set_default_device(dev)
            yield
            gc.set_default_device(prev)


@pytest.fixture
def launched(monkeypatch):
    """The entry points (``<kernel>_<dtype>``) gradcore launches on a CUDA device from
    here on, in order: every launch goes through ``gradcore.kernels.device.launch``,
    which this wraps for the test. Clear the list where the test starts counting."""
    from gradcore.kernels import device as kdevice  # noqa: PLC0415

    names = []
    real = kdevice.launch

    def spy(math, name, *args, **kwargs):
        names.append(name)
        return real(math, name, *args, **kwargs)

    monkeypatch.setattr(kdevice, "launch", spy)
    return names


@pytest.fixture(autouse=True)
def _no_pending_checks():
    """A range check a test left unread (backend.check_range) must not fail the next."""
    yield
    gc.backend._pending_checks.clear()


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def host(t) -> np.ndarray:
    """A tensor's values as a NumPy array (from any device)."""
    return np.asarray(gc.backend.to_host(t._data))


def assert_same(ours, theirs, where=""):
    """Two results as plain data (tensors as ``("tensor", values, dtype name, shape)``,
    nested in tuples) agree: the same dtypes and shapes, values to ``rtol=1e-5,
    atol=1e-6`` (NaNs where PyTorch has them), all else equal; ``where`` names the case."""
    if isinstance(theirs, tuple) and theirs and theirs[0] == "tensor":
        assert isinstance(ours, tuple) and ours[0] == "tensor", where
        assert ours[2:] == theirs[2:], (where, ours[2:], theirs[2:])
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-5, atol=1e-6, equal_nan=True,
                                   err_msg=where)
    elif isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs), (where, ours, theirs)
        for k, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, f"{where}[{k}]")
    else:
        assert ours == theirs, (where, ours, theirs)


try:  # PyTorch is optional: comparisons skip, with a reason, when it is absent
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:  # pragma: no cover - depends on the environment
    HAVE_TORCH = False

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="PyTorch is not installed "
                                 "(pip install torch==2.13.0 to run the comparisons)")

# what changed between PyTorch versions is compared with the pinned one only (a GPU
# machine may have another torch: 2.11 there): printouts (the norms' bias=, from 2.12 on),
# the argument parser's and a few other messages, derivatives that came later (aminmax,
# nextafter). A test skips (needs_pinned_torch), or guards only the assertion that
# depends on the version (``if PINNED_TORCH:``) and runs the rest with any torch.
TORCH_VERSION = torch.__version__ if HAVE_TORCH else None
PINNED_TORCH = HAVE_TORCH and TORCH_VERSION.startswith("2.13.")
needs_pinned_torch = pytest.mark.skipif(
    not PINNED_TORCH,
    reason=f"compared with PyTorch 2.13's printout (pip install torch==2.13.0); installed: "
           f"{TORCH_VERSION or 'none'}")


def pinned_torch_only(why: str):
    """A mark skipping a comparison that only PyTorch 2.13 passes, saying ``why`` (what
    older PyTorch does otherwise)."""
    return pytest.mark.skipif(not PINNED_TORCH,
                              reason=f"{why}; compared with PyTorch 2.13 only "
                                     f"(installed: {TORCH_VERSION or 'none'})")
