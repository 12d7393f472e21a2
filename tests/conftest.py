"""Shared fixtures: every test that takes ``device`` runs once per device under test.

``GRADCORE_TEST_DEVICES`` (comma-separated, default ``cpu``) picks the devices:
``make gpu-test`` sets it to ``cuda``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import gradcore as gc

DEVICES = [d.strip() for d in os.environ.get("GRADCORE_TEST_DEVICES", "cpu").split(",")
           if d.strip()]


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", DEVICES, scope="session")


@pytest.fixture(autouse=True)
def _default_device(request):
    """Tests that take ``device`` also make it the default for new tensors."""
    if "device" in request.fixturenames:
        dev = request.getfixturevalue("device")
        if dev.startswith("cuda") and not gc.cuda.is_available():
            pytest.fail(f"GRADCORE_TEST_DEVICES asks for {dev}, but CUDA is unusable: "
                        f"{gc.cuda.unavailable_reason()}")
        prev = gc.get_default_device()
        gc.set_default_device(dev)
        yield
        gc.set_default_device(prev)
    else:
        yield


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def host(t) -> np.ndarray:
    """A tensor's values as a NumPy array (from any device)."""
    return np.asarray(gc.backend.to_host(t.data))


try:  # PyTorch is optional: comparisons skip, with a reason, when it is absent
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:  # pragma: no cover - depends on the environment
    HAVE_TORCH = False

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="PyTorch is not installed "
                                 "(pip install torch==2.13.0 to run the comparisons)")
