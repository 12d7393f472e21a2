"""``bench/test_suites.py`` (issue 6's benchmark suites) still collects and runs.

CI does not run the benchmarks; these tests import the suite's module, check its
device parametrization and that every fused kernel has a fused-vs-unfused case, and run
each workload once at a tiny size on every device under test (the CuPy stand-in
included), so a change that breaks the suite fails ``make test``.
"""

import importlib.util
import pathlib

import pytest

import gradcore as gc
from gradcore.kernels import pointwise as fused

_PATH = pathlib.Path(__file__).resolve().parent.parent / "bench" / "test_suites.py"
_spec = importlib.util.spec_from_file_location("bench_test_suites", _PATH)
suites = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(suites)

TINY = {"mlp": (16, 4), "pointwise": (64,), "broadcast": (32,), "cross_entropy": (8, 5),
        "step": (16,)}


def _ids(params):
    return [p.id for p in params]


def test_devices_come_from_the_environment(monkeypatch):
    assert suites.bench_devices("cpu") == ["cpu"]
    assert suites.bench_devices("cuda") == ["cuda"]
    assert suites.bench_devices(" CPU, cuda,cpu ") == ["cpu", "cuda"]
    monkeypatch.delenv(suites.ENV, raising=False)
    assert suites.bench_devices() == ["cpu", "cuda"]
    monkeypatch.setenv(suites.ENV, "cuda")
    assert suites.bench_devices() == ["cuda"]
    for bad in ("gpu", "", "cpu,tpu"):
        with pytest.raises(ValueError, match=suites.ENV):
            suites.bench_devices(bad)


@pytest.mark.parametrize("suite", sorted(suites.SIZES))
def test_every_case_is_named_by_device_and_size(suite):
    for dev in suites.KNOWN_DEVICES:
        params = suites.fused_cases([dev]) if suite == "fused" else suites.cases(suite, [dev])
        assert params, (suite, dev)
        ids = _ids(params)
        assert len(set(ids)) == len(ids)
        assert all(i.startswith(dev + "-") for i in ids)
        assert all(p.values[0] == dev for p in params)


def test_every_fused_kernel_has_a_fused_and_an_unfused_case():
    for dev in suites.KNOWN_DEVICES:
        ids = set(_ids(suites.fused_cases([dev])))
        for name in [*fused.KERNELS, "adam_update", "sgd_update"]:
            for impl in ("fused", "unfused"):
                assert f"{dev}-{name}-{impl}" in ids
        assert {f"{dev}-copy-n{n}" for n in suites.SIZES["fused"][dev]} == set(
            _ids(suites.copy_cases([dev])))


@pytest.mark.parametrize("suite", sorted(TINY))
def test_each_workload_runs_once(device, suite):
    dev = gc.device(device)
    build = {"mlp": suites.mlp_backward, "pointwise": suites.pointwise_backward,
             "broadcast": suites.broadcast_backward,
             "cross_entropy": suites.cross_entropy_backward,
             "step": suites.train_step}[suite]
    prepare, timed = build(dev, *TINY[suite])
    for _ in range(2):
        timed(prepare())


@pytest.mark.parametrize("kernel", sorted(fused.KERNELS))
def test_fused_and_unfused_agree_and_run(device, kernel):
    dev = gc.device(device)
    k = fused.KERNELS[kernel]
    for impl in ("fused", "unfused"):
        prepare, timed, what, nbytes = suites.fused_vs_unfused(kernel, dev, 64, impl)
        out = timed(prepare())
        outs = out if isinstance(out, tuple) else (out,)
        for o in outs:
            assert o.shape == (64,)
        assert what
        # every array argument read once, every output written once
        mask_bytes = 64 * len(k.masks)
        assert nbytes == 4 * 64 * (len(k.params) - len(k.masks) + len(outs)) + mask_bytes


@pytest.mark.parametrize("name", ["adam_update", "sgd_update"])
def test_updates_and_copy_run(device, name):
    dev = gc.device(device)
    for impl in ("fused", "unfused"):
        prepare, timed, what, nbytes = suites.fused_vs_unfused(name, dev, 64, impl)
        timed(prepare())
        assert nbytes == (7 if name == "adam_update" else 5) * 4 * 64 and what
    prepare, timed, nbytes = suites.copy_case(dev, 64)
    timed(prepare())
    assert nbytes == 2 * 4 * 64
