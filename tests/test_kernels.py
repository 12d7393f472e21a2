"""The CUDA kernel sources generated from gradcore/fused.py (issue 4, items 2, 5 and 7).

* the committed kernels/pointwise_backward.cu is what the declarations generate;
* nvcc compiles every kernel, every dtype, for sm_80 and sm_90;
* the same source built for the host (kernels/host_emulation.h) matches the NumPy twin
  and the expression compiled over NumPy, on random inputs of awkward sizes and
  layouts, in every dtype;
* the wheel ships the sources.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

from gradcore.backend import cpu
from gradcore.kernels import device as kdev
from gradcore.kernels import host as khost
from gradcore.kernels import pointwise as fused
from gradcore.kernels import source as kc

ROOT = Path(__file__).resolve().parents[1]
KERNEL_NAMES = sorted(fused.KERNELS)
DTYPES = list(kc.DTYPES)
# (rtol, atol) of the host build against NumPy in the same dtype. float16: NumPy rounds
# every intermediate to float16 while the kernel computes in float32.
TOL = {"float16": (1e-2, 1e-3), "float32": (1e-5, 1e-7), "float64": (1e-12, 1e-14)}
SHAPES = [(1, 1), (15, 17), (40, 25), (17, 241)]  # 1, 255, 1000, 4097 elements


# ------------------------------------------------------------------ generated source

def test_committed_source_is_up_to_date():
    committed = (kc.kernels_dir() / kc.GENERATED).read_text()
    assert committed == kc.generate(), (
        "kernels/pointwise_backward.cu is stale: run `python -m gradcore.kernels "
        "--write`")


def test_check_command_detects_a_stale_file(tmp_path, monkeypatch):
    ok = subprocess.run([sys.executable, "-m", "gradcore.kernels", "--check"],
                        cwd=ROOT, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    # a copy of the sources with an edited .cu: --check must fail, --write must fix it
    copy = tmp_path / "kernels"
    shutil.copytree(kc.kernels_dir(), copy)
    (copy / kc.GENERATED).write_text(kc.generate().replace("C(0.5)", "0.5"))
    monkeypatch.setattr(kc, "kernels_dir", lambda: copy)
    assert kc.main(["--check"]) == 1
    assert kc.main(["--write"]) == 0
    assert kc.main(["--check"]) == 0
    assert (copy / kc.GENERATED).read_text() == kc.generate()


def test_every_kernel_and_dtype_has_an_entry_point():
    src = kc.generate()
    for name, k in kc.all_kernels().items():
        assert kc._declaration_comment(k) in src
        for dtype in DTYPES:
            assert f'extern "C" __global__ void {name}_{dtype}(' in src
    # the optimizer updates are in the same file
    assert {"sgd_step", "sgd_momentum_step", "adam_step", "adam_amsgrad_step",
            "rmsprop_step", "rmsprop_momentum_step", "rmsprop_centered_step",
            "rmsprop_centered_momentum_step", "adagrad_step", "adadelta_step", "adamax_step",
            "nadam_step", "radam_step", "rprop_step", "asgd_step"} <= set(kc.all_kernels())


@pytest.mark.parametrize("expr, params, c", [
    ("g * (1 - y * y)", ("g", "y"), "g * (C(1) - (y * y))"),
    ("-0.5 * g * (y * y * y)", ("g", "y"), "-C(0.5) * g * (y * y * y)"),
    ("a - b + c", ("a", "b", "c"), "a - b + c"),
    ("a - (b + c)", ("a", "b", "c"), "a - (b + c)"),
    ("a / (b * c)", ("a", "b", "c"), "a / (b * c)"),
    ("-(-a)", ("a",), "-(-a)"),
    ("-g * a / (b * b)", ("g", "a", "b"), "-g * a / (b * b)"),
    # Python's & binds tighter than ==; C's looser: the C must keep Python's meaning
    ("where(a == b & c, a, 0)", ("a", "b", "c"), "where(a == (b & c), a, C(0))"),
    ("where((x >= lo) & (x <= hi), g, 0)", ("g", "x", "lo", "hi"),
     "where((x >= lo) & (x <= hi), g, C(0))"),
    ("pow(x, e - 1) + 1e-3", ("x", "e"), "pow(x, e - C(1)) + C(0.001)"),
])
def test_expression_translation(expr, params, c):
    assert kc.expr_to_c(expr, params) == c


@pytest.mark.parametrize("expr, params, message", [
    ("a < b < c", ("a", "b", "c"), "chained"),
    ("a ** 2", ("a",), "unsupported operator"),
    ("erfc(a)", ("a",), "unsupported call"),
    ("a * z", ("a",), "unknown name"),
    ("where(a, a)", ("a",), "takes 3"),
    ("a if a else a", ("a",), "unsupported syntax"),
    ("~a", ("a",), "unsupported unary"),
    ("a * True", ("a",), "unsupported constant"),
    ("n * 2", ("n",), "clash"),
    ("a0 * 2", ("a0",), "clash"),
    ("out1 * 2", ("out1",), "clash"),
])
def test_expression_translation_rejects(expr, params, message):
    with pytest.raises(ValueError, match=message):
        kc.expr_to_c(expr, params)


# ------------------------------------------------------------------ nvcc

def _find_nvcc() -> str | None:
    return shutil.which("nvcc") or next(
        (str(p) for p in [Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin/nvcc"]
         if p.is_file()), None)


def _nvcc():
    found = _find_nvcc()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("nvcc not found, and CI is set: CI must compile the CUDA kernels")
        pytest.skip("nvcc not found (CI unset): the CUDA kernels are not compiled here")
    return found


_NVCC_JOBS: dict[str, tuple[subprocess.Popen, list[str], Path]] = {}


def _nvcc_job(arch: str):
    """nvcc compiling the generated source to an ``arch`` cubin, in a process of its own
    (stdout and stderr to files, for the test to read): started once, by the first to ask,
    which is conftest's ``start_early`` as soon as the session has collected the test, so
    that the compile (~25 s of CPU an architecture) runs beside the tests before it.
    Nothing when there is no nvcc (the test skips or fails, saying so)."""
    job = _NVCC_JOBS.get(arch)
    nvcc = _find_nvcc()
    if job is None and nvcc is not None:
        if not _NVCC_JOBS:
            atexit.register(_stop_nvcc_jobs)
        out = Path(tempfile.mkdtemp(prefix=f"gradcore-nvcc-{arch}-"))
        cubin = out / f"kernels_{arch}.cubin"
        cmd = [nvcc, "-cubin", f"-arch={arch}", "-Werror", "all-warnings",
               f"-I{kc.kernels_dir()}", "-o", str(cubin), str(kc.kernels_dir() / kc.GENERATED)]
        with open(out / "stdout", "w") as stdout, open(out / "stderr", "w") as stderr:
            # a session of its own: stopping it stops the cicc or ptxas it runs
            proc = subprocess.Popen(cmd, stdout=stdout, stderr=stderr, text=True,
                                    start_new_session=True)
        job = _NVCC_JOBS[arch] = (proc, cmd, out)
    return job


def _stop_nvcc_jobs():
    """At exit: a compile no test waited for (deselected by -x, a failure, ^C) ends."""
    for proc, _, out in _NVCC_JOBS.values():
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(out, ignore_errors=True)


@pytest.mark.start_early(lambda item: _nvcc_job(item.callspec.params["arch"]))
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvcc_compiles_every_kernel(arch):
    _nvcc()
    proc, cmd, out = _nvcc_job(arch)
    proc.wait()
    logs = [(out / name).read_text() for name in ("stdout", "stderr")]
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{logs[0]}\n{logs[1]}"
    image = (out / f"kernels_{arch}.cubin").read_bytes()
    missing = [f"{name}_{dtype}" for name in kc.all_kernels() for dtype in DTYPES
               if f"{name}_{dtype}\0".encode() not in image]
    assert not missing, f"no entry point in the {arch} cubin for {missing}"


# ------------------------------------------------------------------ NVRTC

def _nvrtc():
    """libnvrtc, as CuPy loads it: from the nvidia-cuda-nvrtc wheel (a dev dependency on
    Linux x86-64) or the CUDA toolkit. The builtins library is loaded first, globally,
    so that libnvrtc finds it (CuPy does the same through its library path setup)."""
    import ctypes
    import importlib.util

    folders = []
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        folders += sorted(Path(root).glob("cu*/lib")) + sorted(Path(root).glob("cuda_nvrtc/lib"))
    cuda_home = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))
    folders += [cuda_home / "lib64", cuda_home / "lib"]
    for folder in folders:
        libs = sorted(folder.glob("libnvrtc.so*"))
        builtins = sorted(folder.glob("libnvrtc-builtins.so*"))
        if libs and builtins:
            ctypes.CDLL(str(builtins[0]), mode=ctypes.RTLD_GLOBAL)
            return ctypes.CDLL(str(libs[0]))
    if os.environ.get("CI"):
        pytest.fail("libnvrtc not found, and CI is set: install the dev extras "
                    "(nvidia-cuda-nvrtc) so that CI compiles the kernels as CuPy does")
    pytest.skip("libnvrtc not found (CI unset): `pip install nvidia-cuda-nvrtc` to check "
                "that NVRTC compiles the kernels")


def nvrtc_compile(lib, source: str, name: str, options) -> tuple[int, str, bytes]:
    """Compile ``source`` with NVRTC: (result code, log, PTX)."""
    import ctypes

    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0,
                                  None, None) == 0
    try:
        opts = [o.encode() for o in options]
        rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        ptx = b""
        if rc == 0:
            lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
            buf = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetPTX(prog, buf)
            ptx = buf.raw
        return rc, log.value.decode(errors="replace"), ptx
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


@pytest.mark.parametrize("arch", ["compute_80", "compute_90"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_nvrtc_compiles_each_dtype_as_the_device_does(dtype, arch):
    """What CuPy's RawModule does on a GPU: NVRTC compiles the source with the options
    of ``kernels.device.nvrtc_options`` (one dtype at a time) and CuPy's own, without the
    CUDA toolkit's headers, to PTX holding that dtype's entry points and no other. (The
    source also compiles as C++11, 14 and 20, should CuPy add another -std.)"""
    lib = _nvrtc()
    source = (kc.kernels_dir() / kc.GENERATED).read_text()
    # CuPy adds -ftz=true and the architecture to the options it is given
    options = (*kdev.nvrtc_options(dtype), "-ftz=true", f"--gpu-architecture={arch}")
    rc, log, ptx = nvrtc_compile(lib, source, kc.GENERATED, options)
    assert rc == 0, f"NVRTC {' '.join(options)}:\n{log}"
    entries = set(re.findall(rb"\.entry\s+(\w+)", ptx))
    want = {f"{name}_{dtype}".encode() for name in kc.all_kernels()}
    assert entries == want, (sorted(want - entries), sorted(entries - want))


# ------------------------------------------------------------------ host build

@pytest.fixture(scope="session")
def host_lib():
    """The host build, compiled once per cache (``GRADCORE_CACHE_DIR`` or ~/.cache)."""
    if shutil.which(os.environ.get("CXX") or "g++") is None:
        pytest.skip("no host C++ compiler (g++ or $CXX) to build the kernel source")
    return khost.host_library()


def test_host_build_is_cached(tmp_path, monkeypatch):
    """A build lands in its own folder of the cache and is reused. (Unoptimized here, a
    third of -O2's time: the flags are part of the key, and the library the other tests
    load, host_lib, is the -O2 build.)"""
    if shutil.which(os.environ.get("CXX") or "g++") is None:
        pytest.skip("no host C++ compiler (g++ or $CXX) to build the kernel source")
    assert "-O2" in khost.HOST_FLAGS
    monkeypatch.setattr(khost, "HOST_FLAGS",
                        tuple("-O0" if f == "-O2" else f for f in khost.HOST_FLAGS))
    lib = khost.build_host_library(tmp_path)
    assert lib.is_file() and tmp_path in lib.parents
    stamp = lib.stat().st_mtime_ns
    assert khost.build_host_library(tmp_path) == lib
    assert lib.stat().st_mtime_ns == stamp  # reused, not rebuilt
    assert list((tmp_path / "host-kernels").iterdir()) == [lib.parent]


def _uniform(lo, hi):
    return lambda rng, shape: rng.uniform(lo, hi, shape)


def _normal(rng, shape):
    return rng.standard_normal(shape)


def _grid(*values):
    """Draws from a few values, so that ties (a == b, x == lo, y == 0) happen often."""
    return lambda rng, shape: rng.choice(np.asarray(values, dtype=float), shape)


def _mask(rng, shape):
    return rng.random(shape) < 0.5


def _away_from_zero(lo, hi):
    return lambda rng, shape: rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)


# each kernel's inputs, drawn from where the formula is used and well conditioned: the
# kernels whose parameters need a special domain, one draw per parameter; any other
# kernel draws every parameter from the normal distribution (a mask: half true), which
# test_default_domain_is_finite checks gives it finite values
DOMAINS = {
    "tanh_backward": [_normal, _uniform(-0.9, 0.9)],
    "sigmoid_backward": [_normal, _uniform(0.02, 0.98)],
    # NaN: PyTorch's conventions (relu passes the gradient at NaN, abs's is 0, maximum
    # gives a NaN side the whole gradient), the same in the kernel and its twins; y is
    # relu's output
    "relu_backward": [_normal, _grid(-0.0, 0.0, 0.0, 0.25, 1.0, 2.0, np.nan)],
    "sqrt_backward": [_normal, _uniform(0.1, 3.0)],
    "rsqrt_backward": [_normal, _uniform(0.2, 3.0)],
    "reciprocal_backward": [_normal, _uniform(-3.0, 3.0)],
    "abs_backward": [_normal, _grid(-2.0, -0.5, 0.0, 0.75, 3.0, np.nan)],
    # positive x: the exponents are not all integers; e == 0 takes the other branch
    "pow_backward": [_normal, _uniform(0.1, 3.0), _grid(0.0, 0.5, 1.0, 1.5, 2.0, 3.0, -0.5)],
    "clamp_backward": [_normal, _grid(-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5),
                       _grid(-1.0, -0.5), _grid(0.5, 1.0)],
    "maximum_backward_a": [_normal, _grid(-1.0, 0.0, 0.5, 2.0, np.nan),
                           _grid(-1.0, 0.0, 0.5, 2.0, np.nan)],
    "maximum_backward_b": [_normal, _grid(-1.0, 0.0, 0.5, 2.0, np.nan),
                           _grid(-1.0, 0.0, 0.5, 2.0, np.nan)],
    "div_backward_b": [_normal, _normal, _away_from_zero(0.5, 2.0)],
    "exp_backward": [_normal, _uniform(0.05, 3.0)],
    "log_backward": [_normal, _uniform(0.2, 3.0)],
    "div_backward": [_normal, _normal, _away_from_zero(0.5, 2.0)],
    "gelu_backward": [_normal, _uniform(-4.0, 4.0)],
    "gelu_tanh_backward": [_normal, _uniform(-4.0, 4.0)],
    "nll_coef": [_uniform(0.0, 2.0), _grid(0.0, 3.0, 7.5)],
    "gelu_forward": [_uniform(-4.0, 4.0)],
    "gelu_tanh_forward": [_uniform(-4.0, 4.0)],
    "gelu_backward_cdf": [_normal, _uniform(-4.0, 4.0), _uniform(0.0, 1.0)],
    "gelu_forward_cdf": [_uniform(-4.0, 4.0)],
    "erf_backward": [_normal, _uniform(-3.0, 3.0)],
    "tan_backward": [_normal, _uniform(-3.0, 3.0)],
    "asin_backward": [_normal, _uniform(-0.9, 0.9)],
    "acos_backward": [_normal, _uniform(-0.9, 0.9)],
    "atanh_backward": [_normal, _uniform(-0.9, 0.9)],
    "acosh_backward": [_normal, _uniform(1.2, 3.0)],
    "log2_backward": [_normal, _uniform(0.2, 3.0)],
    "log10_backward": [_normal, _uniform(0.2, 3.0)],
    "exp2_backward": [_normal, _uniform(0.05, 3.0)],
    # binary_cross_entropy's: probabilities in (0, 1); the kinks of the activations drawn
    # exactly (PyTorch's values there are the kernels' business)
    "bce_backward": [_normal, _uniform(0.05, 0.95), _uniform(0.0, 1.0)],
    "bce_target_backward": [_normal, _uniform(0.05, 0.95)],
    "hardtanh_backward": [_normal, _grid(-1.5, -0.5, 0.0, 0.5, 1.0, np.nan)],
    "hardswish_backward": [_normal, _grid(-4.0, -3.0, -1.0, 0.0, 2.0, 3.0, 4.0)],
    "hardsigmoid_backward": [_normal, _grid(-4.0, -3.0, -1.0, 0.0, 2.0, 3.0, 4.0)],
    "shrink_backward": [_normal, _grid(-1.0, -0.5, 0.0, 0.5, 1.0, np.nan)],
    "threshold_backward": [_normal, _grid(-1.0, 0.0, 0.5, 1.0, np.nan)],  # at the bound too
    "leaky_relu_backward": [_normal, _grid(-1.0, 0.0, 0.5, np.nan)],
    "elu_backward": [_normal, _grid(-800.0, -1.0, 0.0, 0.5, 800.0)],
    "silu_backward": [_normal, _grid(-800.0, -1.0, 0.0, 0.5, 800.0)],
    "mish_backward": [_normal, _grid(-800.0, -1.0, 0.0, 0.5, 19.5, 20.5, 800.0)],
    "log_sigmoid_backward": [_normal, _grid(-800.0, -1.0, 0.0, 0.5, 800.0)],
    # the log's argument positive; a's zeros take the other branch
    "xlogy_backward": [_normal, _grid(-1.0, 0.0, 0.5, 2.0), _uniform(0.2, 3.0)],
    "hypot_backward": [_normal, _normal, _normal, _uniform(0.5, 3.0)],  # y: the result
    "atan2_backward": [_normal, _grid(-1.0, 0.0, 0.5), _grid(-0.5, 0.0, 1.0)],  # (0, 0) too
    "copysign_backward": [_normal, _grid(-1.5, 0.0, 0.5, 2.0), _away_from_zero(0.5, 2.0)],
    "erfinv_backward": [_normal, _uniform(-2.0, 2.0)],  # y: erfinv's result
    "logit_backward": [_normal, _uniform(0.05, 0.95)],
    "logit_backward_eps": [_normal, _grid(0.05, 0.125, 0.3, 0.5, 0.875, 0.95, np.nan),
                           _grid(0.125), _grid(0.875)],
    # ties and NaN on either side, PyTorch's rules
    "fmax_backward": [_normal, _grid(-1.0, 0.0, 0.5, 2.0, np.nan),
                      _grid(-1.0, 0.0, 0.5, 2.0, np.nan)],
    "fmin_backward": [_normal, _grid(-1.0, 0.0, 0.5, 2.0, np.nan),
                      _grid(-1.0, 0.0, 0.5, 2.0, np.nan)],
    "nextafter_backward": [_normal, _grid(-1.0, 0.0, 0.5), _grid(-1.0, 0.0, 0.5)],
    "sinc_backward": [_normal, _grid(-2.5, -1.0, 0.0, 0.25, 0.5, 1.75)],  # 0 exactly too
}
# gelu_tanh_backward's 1 - tanh(u)^2 cancels where |u| > 2: a one-ulp difference between
# the C library's tanhf and NumPy's float32 tanh becomes ~1e-6 absolute (of results ~1)
LOOSER_ATOL = {"gelu_tanh_backward": {"float32": 5e-6},
               # erf(u) + 1 and tanh(u) + 1 cancel where u < -2: an ulp of erff/tanhf
               "gelu_forward": {"float32": 1e-6}, "gelu_tanh_forward": {"float32": 1e-6},
               "gelu_forward_cdf": {"float32": 1e-6}}
# the scalars of the kernels that take some (others: 0.5 each)
SCALARS = {"mse_backward": (2 / 7,)}


def _domain(name):
    """Kernel ``name``'s draws, one per parameter: its own, or the default."""
    k = fused.KERNELS[name]
    return DOMAINS.get(name) or [_mask if p in k.masks else _normal for p in k.params]


def _scalars(name):
    return SCALARS.get(name, (0.5,) * len(fused.KERNELS[name].scalars))


def test_listed_test_domains_are_kernels_ones():
    assert set(DOMAINS) <= set(KERNEL_NAMES) and set(SCALARS) <= set(KERNEL_NAMES)
    for name, draws in DOMAINS.items():
        assert len(draws) == len(fused.KERNELS[name].params), name
    for name, values in SCALARS.items():
        assert len(values) == len(fused.KERNELS[name].scalars), name


@pytest.mark.parametrize("name", sorted(set(KERNEL_NAMES) - set(DOMAINS)))
def test_default_domain_is_finite(name):
    """A kernel without a listed domain gives finite values on the default one (one that
    needs another, a log's or a quotient's, fails here until it lists it in DOMAINS)."""
    rng = np.random.default_rng(0)
    k = fused.KERNELS[name]
    ins = [draw(rng, (64,)).astype(bool if p in k.masks else np.float64)
           for p, draw in zip(k.params, _domain(name))]
    for out in _outputs(k.compile(fused.numpy_names())(*ins, *_scalars(name))):
        assert np.isfinite(out).all(), name


def _inputs(name, dtype, shape, layout, rng):
    """Inputs of ``shape`` (broadcast to it, for "broadcast") in the given layout."""
    r, c = shape
    arrays = []
    k = fused.KERNELS[name]
    for j, draw in enumerate(_domain(name)):
        dt = bool if k.params[j] in k.masks else dtype
        if layout == "contiguous":
            a = draw(rng, shape).astype(dt)
        elif layout == "strided":  # transposed views and every-other-column slices
            if j % 2 == 0:
                a = draw(rng, (c, r)).astype(dt).T
            else:
                a = draw(rng, (r, 2 * c)).astype(dt)[:, ::2]
            assert not a.flags.c_contiguous or a.size == 1
        elif layout == "broadcast":  # the gradient is full; the others broadcast
            sub = [shape, (r, 1), (1, c), ()][j % 4] if j else shape
            a = draw(rng, sub).astype(dt)
        arrays.append(a)
    return arrays + list(_scalars(name))


def _outputs(result) -> tuple:
    return result if isinstance(result, tuple) else (result,)


def _upcast(a):
    return a.astype(np.float32) if getattr(a, "dtype", None) == np.float16 else a


def _check(name, dtype, layout, lib, seed):
    if not khost.host_supports(dtype, lib):
        pytest.skip(reason=f"the host compiler has no _Float16, so the {dtype} kernels are not "
                    "in the host build")
    rng = np.random.default_rng(seed)
    k = fused.KERNELS[name]
    twin = getattr(cpu.math, name)
    expression = k.compile(fused.numpy_names())
    rtol, atol = TOL[dtype]
    atol = max(atol, LOOSER_ATOL.get(name, {}).get(dtype, 0))
    for shape in SHAPES:
        ins = _inputs(name, dtype, shape, layout, rng)
        # every element must be written
        out = tuple(np.full(shape, np.nan, dtype) for _ in k.exprs)
        got = _outputs(khost.run_host(name, *ins, out=out if len(out) > 1 else out[0], lib=lib))
        assert all(a is b for a, b in zip(got, out)) and len(got) == len(out)
        with np.errstate(all="ignore"):
            if dtype == "float16":  # the twin in float32, rounded once, as the kernel does
                want_twin = tuple(a.astype(dtype) for a in _outputs(
                    twin(*[_upcast(a) for a in ins])))
            else:
                want_twin = _outputs(twin(*ins))
            want_expr = _outputs(expression(*ins))
            # the kernel computes in float32 and rounds once: float16 results are the
            # float32 expression rounded to float16, to within one float16 ulp
            ref = _outputs(expression(*[_upcast(a) for a in ins]))
        what = f"{name} {dtype} {layout} {shape}"
        for j, g in enumerate(got):
            assert g.dtype == dtype and g.shape == shape
            assert np.asarray(want_twin[j]).dtype == dtype, what
            np.testing.assert_allclose(g, want_twin[j], rtol=rtol, atol=atol,
                                       err_msg=f"{what} output {j}: host kernel vs twin")
            if dtype != "float16":
                np.testing.assert_allclose(g, want_expr[j], rtol=rtol, atol=atol,
                                           err_msg=f"{what} output {j}: vs expression")
            else:
                np.testing.assert_allclose(g, ref[j].astype(np.float16), rtol=1e-3, atol=1e-5,
                                           err_msg=f"{what} output {j}: vs float32 rounded")


@pytest.mark.parametrize("layout", ["contiguous", "strided", "broadcast"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", KERNEL_NAMES)
def test_host_build_matches_numpy(name, dtype, layout, host_lib):
    _check(name, dtype, layout, host_lib, seed=zlib.crc32(f"{name} {dtype} {layout}".encode()))


def test_host_launch_covers_every_element_for_any_launch_shape(host_lib):
    g = np.arange(1, 1001, dtype=np.float64)
    y = np.zeros(1000)
    for grid, block in [(1, 1), (1, 7), (3, 64), (5, 96), (40, 32), (2000, 1)]:
        out = np.full(1000, np.nan)
        khost.run_host("sigmoid_backward", g, y + 0.5, grid=grid, block=block, out=out,
                    lib=host_lib)
        np.testing.assert_array_equal(out, g * 0.25, err_msg=f"grid={grid} block={block}")
    assert khost.run_host("relu_backward", g[:0], y[:0], lib=host_lib).shape == (0,)
    for n in (1, 255, 1000, 4097):
        grid, block = khost._launch_shape(n)
        assert n % block and n % (grid * block) if n > 1 else True, (n, grid, block)


_TRANSCENDENTAL = ("exp(", "log(", "sqrt(", "sin(", "cos(", "tanh(", "pow(", "erf(")


def _text(k) -> str:
    return " ".join(k.exprs + tuple(e for _, e in k.lets))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_arithmetic_kernels_are_bitwise_numpy(dtype, host_lib):
    """Kernels of + - * / and where only: the host build (no FMA contraction) does the
    same correctly rounded operations in the same order as NumPy in the same dtype, so
    the results are identical. Double arithmetic on float (a literal left as 0.5 or 1
    instead of C(...)) would round differently and fail this."""
    names = [n for n in KERNEL_NAMES
             if not any(f in _text(fused.KERNELS[n]) for f in _TRANSCENDENTAL)]
    assert len(names) >= 15
    rng = np.random.default_rng(1)
    for name in names:
        ins = _inputs(name, dtype, (17, 241), "contiguous", rng)
        with np.errstate(all="ignore"):  # where() evaluates both branches, as C does
            want = _outputs(fused.KERNELS[name].compile(fused.numpy_names())(*ins))
        got = _outputs(khost.run_host(name, *ins, lib=host_lib))
        for j, (a, b) in enumerate(zip(got, want)):
            np.testing.assert_array_equal(a, b, err_msg=f"{name} {dtype} output {j}")


def test_literals_are_in_the_compute_type():
    src = kc.generate()
    body = [line for line in src.splitlines() if re.search(r"out[0-9]+\[i\] = store<T>\(", line)]
    assert len(body) == sum(len(k.exprs) for k in fused.KERNELS.values())
    body += [line.split(" = ", 1)[1] for line in src.splitlines()
             if re.match(r"\s+(const )?C \w+ = (?!load)", line)]  # locals and statements
    assert len(body) > len(KERNEL_NAMES)
    for line in body:
        stripped = re.sub(r"C\([0-9.e+-]+\)", "", line).replace("store<T>", "")
        stripped = re.sub(r"(a|out)[0-9]+\[i\]", "", stripped)
        assert not re.search(r"(?<![A-Za-z_0-9])[0-9]", stripped), line


def test_run_host_rejects_bad_calls(host_lib):
    x = np.ones(3)
    with pytest.raises(TypeError, match="takes 2 arguments"):
        khost.run_host("tanh_backward", x, lib=host_lib)
    with pytest.raises(TypeError, match="no kernel for dtype"):
        khost.run_host("tanh_backward", x.astype(np.int64), x.astype(np.int64), lib=host_lib)


# ------------------------------------------------------------------ packaging

def test_wheel_ships_the_kernel_sources(tmp_path):
    """Build the wheel from a copy of the tree; it must hold every kernel source and
    every module of gradcore/, and the installed package must find its sources."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "gradcore", src / "gradcore", ignore=ignore)
    shutil.copytree(ROOT / "kernels", src / "kernels", ignore=ignore)
    wheels = tmp_path / "wheels"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation",
         "--no-cache-dir", "-q", "-w", str(wheels)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (wheel,) = wheels.glob("gradcore-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        z.extractall(tmp_path / "site")
    kernel_files = sorted(p.name for p in (ROOT / "kernels").iterdir()
                          if p.suffix in (".cu", ".cuh", ".h"))
    assert {"pointwise_backward.cu", "gradcore_cuda.cuh", "host_emulation.h"} <= set(
        kernel_files)
    for f in kernel_files:
        assert f"gradcore/_kernels/{f}" in names, f"{f} is not in {wheel.name}"
    modules = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "gradcore").rglob("*.py")
                     if "__pycache__" not in p.parts)
    missing = [m for m in modules if m not in names]
    assert not missing, (f"{missing} not in the wheel: add new subpackages to "
                         "[tool.setuptools] packages in pyproject.toml")
    # the unpacked wheel, first on the path, finds its own copy of the sources
    code = ("import gradcore, gradcore.kernels.source as k; "
            "print(gradcore.__file__); print(k.kernels_dir())")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "site"))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    pkg, kdir = run.stdout.split()
    assert Path(pkg).is_relative_to(tmp_path / "site")
    assert Path(kdir) == tmp_path / "site" / "gradcore" / "_kernels"


# ------------------------------------------------------------------ optimizer updates

SGD_CASES = [
    dict(lr=0.1),
    dict(lr=0.05, weight_decay=0.01, maximize=True),
    dict(lr=0.1, momentum=0.9, first_step=True),
    dict(lr=0.1, momentum=0.9),
    dict(lr=0.1, momentum=0.9, dampening=0.25, weight_decay=1e-3),
    dict(lr=0.1, momentum=0.8, nesterov=True, maximize=True),
]
ADAM_CASES = [
    dict(step=1, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8),
    dict(step=7, lr=1e-2, beta1=0.9, beta2=0.99, eps=1e-6, weight_decay=0.1),
    dict(step=3, lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.05,
         decoupled_weight_decay=True, maximize=True),
    dict(step=5, lr=1e-3, beta1=0.3, beta2=0.999, eps=1e-8, amsgrad=True),  # lerp's 2nd branch
]


def _state(dtype, n, rng, k):
    return [rng.standard_normal(n).astype(dtype) if j != 3 else
            rng.uniform(0.0, 1.0, n).astype(dtype) for j in range(k)]  # v >= 0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(SGD_CASES)))
def test_sgd_kernels_match_the_numpy_update(case, dtype, host_lib):
    """The host build of sgd_step / sgd_momentum_step against the CPU's update (the
    declaration generated as NumPy code), on the same inputs (bitwise in float32 and
    float64: same operations, same order, no contraction)."""
    if not khost.host_supports(dtype, host_lib):
        pytest.skip(reason=f"no {dtype} kernels in the host build (no _Float16)")
    from gradcore.kernels import updates as fo

    kw = SGD_CASES[case]
    rng = np.random.default_rng(case)
    p, g, buf = _state(dtype, 1000, rng, 3)
    want = [p.copy(), buf.copy()]
    cpu.math.sgd_update(want[0], g, want[1], **kw)
    scalars = fo.sgd_kernel_scalars(**kw)
    if kw.get("momentum", 0) == 0:
        khost.run_host("sgd_step", p, g, *scalars, lib=host_lib)
    else:
        khost.run_host("sgd_momentum_step", p, g, buf, *scalars, lib=host_lib)
        np.testing.assert_allclose(buf, want[1], **_update_tol(dtype))
    np.testing.assert_allclose(p, want[0], **_update_tol(dtype))


def _update_tol(dtype):
    return dict(rtol=0, atol=0) if dtype != "float16" else dict(rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(ADAM_CASES)))
def test_adam_kernels_match_the_numpy_update(case, dtype, host_lib):
    if not khost.host_supports(dtype, host_lib):
        pytest.skip(reason=f"no {dtype} kernels in the host build (no _Float16)")
    from gradcore.kernels import updates as fo

    kw = dict(ADAM_CASES[case])
    amsgrad = kw.pop("amsgrad", False)
    rng = np.random.default_rng(10 + case)
    p, g, m, v, vmax = _state(dtype, 1000, rng, 5)
    vmax = np.abs(vmax)
    want = [a.copy() for a in (p, m, v, vmax)]
    cpu.math.adam_update(want[0], g, want[1], want[2], want[3], amsgrad=amsgrad, **kw)
    scalars = fo.adam_kernel_scalars(np.dtype(dtype), **kw)
    if amsgrad:
        khost.run_host("adam_amsgrad_step", p, g, m, v, vmax, *scalars, lib=host_lib)
    else:
        khost.run_host("adam_step", p, g, m, v, *scalars, lib=host_lib)
    # sqrt is correctly rounded on both sides; float16 computes in float32 in the kernel
    for got, ref, what in zip((p, m, v, vmax), want, ("p", "m", "v", "vmax")):
        np.testing.assert_allclose(got, ref, err_msg=f"{what} {dtype}", **_update_tol(dtype))


# the updates of the other optimizers: (entry, options, the state arrays after the
# gradient by what they hold: "any", "small" (a mean gradient), "positive")
UPDATE_CASES = [
    ("rmsprop_update", dict(lr=1e-2, alpha=0.99, eps=1e-8), ("positive",)),
    ("rmsprop_update", dict(lr=1e-2, alpha=0.9, eps=1e-8, momentum=0.9, weight_decay=0.1,
                            maximize=True), ("positive", "any")),
    ("rmsprop_update", dict(lr=1e-2, alpha=0.3, eps=1e-8, centered=True),
     ("positive", "any", "small")),
    ("rmsprop_update", dict(lr=1e-2, alpha=0.99, eps=1e-8, momentum=0.5, centered=True,
                            weight_decay=0.01), ("positive", "any", "small")),
    ("adagrad_update", dict(step=1, lr=1e-2, eps=1e-10), ("positive",)),
    ("adagrad_update", dict(step=6, lr=1e-2, eps=1e-10, lr_decay=0.1, weight_decay=0.1,
                            maximize=True), ("positive",)),
    ("adadelta_update", dict(lr=1.0, rho=0.9, eps=1e-6), ("positive", "positive")),
    ("adadelta_update", dict(lr=0.5, rho=0.5, eps=1e-6, weight_decay=0.1, maximize=True),
     ("positive", "positive")),
    ("adamax_update", dict(step=1, lr=2e-3, beta1=0.9, beta2=0.999, eps=1e-8),
     ("any", "positive")),
    ("adamax_update", dict(step=4, lr=2e-3, beta1=0.3, beta2=0.5, eps=1e-8,
                           weight_decay=0.1, maximize=True), ("any", "positive")),
    ("nadam_update", dict(step=1, mu_product=0.45, lr=2e-3, beta1=0.9, beta2=0.999,
                          eps=1e-8), ("any", "positive")),
    ("nadam_update", dict(step=5, mu_product=0.07, lr=2e-3, beta1=0.3, beta2=0.99, eps=1e-8,
                          weight_decay=0.1, maximize=True), ("any", "positive")),
    ("nadam_update", dict(step=3, mu_product=0.3, lr=2e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                          weight_decay=0.1, decoupled_weight_decay=True),
     ("any", "positive")),
    ("radam_update", dict(step=2, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8),  # not rectified
     ("any", "positive")),
    ("radam_update", dict(step=9, lr=1e-3, beta1=0.3, beta2=0.999, eps=1e-8,   # rectified
                          weight_decay=0.1, maximize=True), ("any", "positive")),
    ("radam_update", dict(step=12, lr=1e-3, beta1=0.9, beta2=0.99, eps=1e-8,
                          weight_decay=0.1, decoupled_weight_decay=True), ("any", "positive")),
    ("rprop_update", dict(etaminus=0.5, etaplus=1.2, step_size_min=1e-6, step_size_max=50),
     ("any", "positive")),
    ("rprop_update", dict(etaminus=0.3, etaplus=1.5, step_size_min=0.6, step_size_max=1.0,
                          maximize=True), ("any", "positive")),
    ("asgd_update", dict(eta=0.01, mu=1.0, lambd=1e-4), ("any",)),
    ("asgd_update", dict(eta=0.05, mu=0.25, lambd=0.1, weight_decay=0.1, maximize=True),
     ("any",)),
]


class _HostSteps:
    """The steps an update's entry calls, run through the host build of the CUDA source
    (``steps.rmsprop_step(...)`` -> ``run_host("rmsprop_step", ...)``); names them."""

    def __init__(self, lib):
        self.lib, self.called = lib, []

    def __getattr__(self, name):
        def step(*args):
            self.called.append(name)
            khost.run_host(name, *args, lib=self.lib)
        return step


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(UPDATE_CASES)))
def test_update_kernels_match_the_numpy_update(case, dtype, host_lib):
    """The host build of each optimizer's step kernel against the CPU's update (the same
    declaration generated as NumPy code), called by the same entry with the same
    scalars: bitwise in float32 and float64; float16 computes in float32 in the kernel,
    in float16 in NumPy."""
    if not khost.host_supports(dtype, host_lib):
        pytest.skip(reason=f"no {dtype} kernels in the host build (no _Float16)")
    from gradcore.kernels import updates

    name, kw, kinds = UPDATE_CASES[case]
    rng = np.random.default_rng(20 + case)

    def make(kind):
        a = rng.standard_normal(1000)
        return {"any": a, "small": 0.1 * a, "positive": np.abs(a) + 0.5}[kind].astype(dtype)

    arrays = [make("any"), make("any"), *[make(kind) for kind in kinds]]
    want = [a.copy() for a in arrays]
    getattr(cpu.math, name)(*want, **kw)
    steps = _HostSteps(host_lib)
    updates.ENTRIES[name](steps, *arrays, **kw)
    assert len(steps.called) == 1
    assert np.array_equal(arrays[1], want[1])  # the gradient is only read
    for got, ref in zip(arrays, want):
        if dtype == "float16":
            np.testing.assert_allclose(got, ref, rtol=2e-3, atol=2e-3, err_msg=steps.called[0])
        else:
            np.testing.assert_array_equal(got, ref, err_msg=f"{steps.called[0]} {dtype}")


def test_launch_checks_argument_types(host_lib):
    """What CuPy would pass wrongly without a word: a Python float where the kernel takes
    a float, a float64 array for a float32 kernel, a non-contiguous array."""
    x = np.ones(4, np.float32)
    good = [x, np.int64(1), x, np.int64(1), x, np.int64(4)]
    khost.launch_host("tanh_backward_float32", good, 1, 4, lib=host_lib)
    with pytest.raises(TypeError, match="'g' must be a C-contiguous float32 array"):
        khost.launch_host("tanh_backward_float32", [x.astype(np.float64)] + good[1:], 1, 4,
                       lib=host_lib)
    with pytest.raises(TypeError, match="must be np.int64"):
        khost.launch_host("tanh_backward_float32", good[:-1] + [4], 1, 4, lib=host_lib)
    with pytest.raises(TypeError, match="'scale' must be np.float32, got float"):
        khost.launch_host("mse_backward_float32", good[:4] + [x, np.int64(1), 0.5, x,
                                                           np.int64(4)], 1, 4, lib=host_lib)
    with pytest.raises(TypeError, match="takes 6 arguments"):
        khost.launch_host("tanh_backward_float32", good[:-1], 1, 4, lib=host_lib)
    with pytest.raises(KeyError, match="no kernel entry point"):
        khost.launch_host("tanh_backward_int8", good, 1, 4, lib=host_lib)


# ------------------------------------------------------------------ row kernels

ROW_SHAPES = [(1, 1), (3, 10), (7, 257), (40, 33)]
ROW_LAUNCHES = [(1, 1), (2, 7), (3, 32), (5, 96), (64, 200)]  # grid < rows: grid-stride


def _row_tol(dtype):
    return {"float16": dict(rtol=2e-3, atol=2e-3), "float32": dict(rtol=2e-5, atol=1e-6),
            "float64": dict(rtol=1e-12, atol=1e-13)}[dtype]


def _row_reference(name, *args):
    """The twin in float64 (float16 and float32 kernels sum in float32, in another order
    than NumPy's pairwise sums)."""
    from gradcore.kernels import rows as fused_rows

    up = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in args]
    return fused_rows.TWINS[name](np, *up)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["softmax_backward_rows", "log_softmax_backward_rows"])
def test_row_softmax_kernels_match_the_twin(name, dtype, host_lib):
    """Block-per-row kernels with a shared-memory sum (__syncthreads through fibers in
    the host build), for block sizes that are and are not powers of two."""
    if not khost.host_supports(dtype, host_lib):
        pytest.skip(reason=f"no {dtype} kernels in the host build (no _Float16)")
    rng = np.random.default_rng(zlib.crc32(f"{name} {dtype}".encode()))
    for rows, cols in ROW_SHAPES:
        x = rng.standard_normal((rows, cols))
        y = np.exp(x - x.max(1, keepdims=True))
        y /= y.sum(1, keepdims=True)
        if name.startswith("log"):
            y = np.log(y)
        g = rng.standard_normal((rows, cols)).astype(dtype)
        y = y.astype(dtype)
        want = _row_reference(name, g, y)
        for grid, block in ROW_LAUNCHES:
            out = np.full((rows, cols), np.nan, dtype)
            khost.launch_host(f"{name}_{dtype}", [g, y, out, np.int64(rows), np.int64(cols)],
                           grid, block, lib=host_lib)
            np.testing.assert_allclose(out, want, err_msg=f"{rows}x{cols} {grid}x{block}",
                                       **_row_tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_xent_kernel_matches_the_two_backward_steps(dtype, host_lib):
    """One pass from the log-probabilities equals nll_loss's one-hot gradient followed by
    log_softmax's backward, computed as the CPU does."""
    if not khost.host_supports(dtype, host_lib):
        pytest.skip(reason=f"no {dtype} kernels in the host build (no _Float16)")
    rng = np.random.default_rng(3)
    for rows, cols in ROW_SHAPES:
        x = rng.standard_normal((rows, cols))
        logp = (x - np.log(np.exp(x).sum(1, keepdims=True))).astype(dtype)
        target = rng.integers(0, cols, rows).astype(np.int64)
        coef = rng.uniform(-1, 0, rows).astype(dtype)
        coef[::3] = 0  # ignored targets
        for g in (np.array([0.7], dtype), rng.standard_normal(rows).astype(dtype)):
            stride = 1 if g.size == rows and rows != 1 else 0
            # the two steps, as NllLossBackward0 and LogSoftmaxBackward0 compute them
            vals = (g if stride else g[0]) * coef
            onehot = np.zeros((rows, cols), dtype)
            onehot[np.arange(rows), target] = vals
            want = onehot - np.exp(logp) * onehot.sum(1, keepdims=True)
            out = np.full((rows, cols), np.nan, dtype)
            khost.launch_host(f"softmax_xent_backward_{dtype}",
                           [logp, target, g, np.int64(stride), coef, out, np.int64(rows),
                            np.int64(cols)], 3, 64, lib=host_lib)
            # (the C library's exp and NumPy's may differ in the last bit)
            tol = {"float16": 2e-3, "float32": 1e-6, "float64": 1e-15}[dtype]
            np.testing.assert_allclose(out, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_mul_sum_rows_kernel_matches_the_twin(dtype, host_lib):
    if not khost.host_supports(dtype, host_lib):
        pytest.skip(reason=f"no {dtype} kernels in the host build (no _Float16)")
    rng = np.random.default_rng(4)
    for rows, cols in ROW_SHAPES + [(300, 70)]:
        g = rng.standard_normal((rows, cols)).astype(dtype)
        x = rng.standard_normal((rows, cols)).astype(dtype)
        want = _row_reference("mul_sum_rows", g, x)
        for grid, block in ROW_LAUNCHES + [(1, 256)]:
            out = np.full(cols, np.nan, dtype)
            khost.launch_host(f"mul_sum_rows_{dtype}", [g, x, out, np.int64(rows),
                                                      np.int64(cols)], grid, block,
                           lib=host_lib)
            tol = _row_tol(dtype)
            np.testing.assert_allclose(out, want, err_msg=f"{rows}x{cols} {grid}x{block}",
                                       rtol=tol["rtol"], atol=tol["atol"] * np.sqrt(rows))


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_xent_forward_kernel_matches_the_twin(dtype, host_lib):
    """Log-probabilities, per-row weights and losses and safe targets of cross_entropy's
    forward, with and without class weights, ignored targets, rows of 1 to 257 classes,
    and a NaN loss for a target out of range (kept in the targets, for the range
    check)."""
    if not khost.host_supports(dtype, host_lib):
        pytest.skip(reason=f"no {dtype} kernels in the host build (no _Float16)")
    from gradcore.kernels import rows as fused_rows

    acc = np.float32 if dtype == "float16" else dtype
    rng = np.random.default_rng(6)
    for rows, cols in ROW_SHAPES:
        x = (3 * rng.standard_normal((rows, cols))).astype(dtype)
        target = rng.integers(0, cols, rows).astype(np.int64)
        target[::4] = -100
        for weight in (None, rng.uniform(0.5, 2.0, cols).astype(acc)):
            want = fused_rows.softmax_xent_forward(np, x, target, weight, -100)
            got = (np.full((rows, cols), np.nan, dtype), np.full(rows, np.nan, acc),
                   np.full(rows, np.nan, acc), np.full(rows, -1, np.int64))
            w = weight if weight is not None else np.zeros(1, acc)
            for grid, block in ROW_LAUNCHES:
                khost.launch_host(f"softmax_xent_forward_{dtype}",
                               [x, target, w, np.int64(weight is not None), np.int64(-100),
                                *got, np.int64(rows), np.int64(cols)], grid, block,
                               lib=host_lib)
                for name, a, b in zip(("logp", "loss", "wt", "tsafe"), got, want):
                    np.testing.assert_allclose(a, b, err_msg=f"{name} {rows}x{cols}",
                                               **_row_tol(dtype))
    bad = np.array([0, 5], np.int64)  # 5 is out of range for 3 classes
    x = np.zeros((2, 3), dtype)
    out = (np.empty((2, 3), dtype), np.empty(2, acc), np.empty(2, acc), np.empty(2, np.int64))
    khost.launch_host(f"softmax_xent_forward_{dtype}",
                   [x, bad, np.zeros(1, acc), np.int64(0), np.int64(-100), *out,
                    np.int64(2), np.int64(3)], 1, 32, lib=host_lib)
    # the loss is NaN, and the target stays as it is for the caller's range check
    assert np.isfinite(out[1][0]) and np.isnan(out[1][1]) and out[3][1] == 5


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nll_reduce_kernel_matches_the_twin(dtype, host_lib):
    """cross_entropy's reduction in one launch: the loss (none, sum, mean), the gradient's
    coefficients (0 for a mean over no counted target) and the targets' bounds, for a
    block per row of 1 to 700 losses and blocks smaller than a row."""
    from gradcore.kernels import rows as fused_rows

    rng = np.random.default_rng(8)
    for n in (1, 5, 33, 700):
        loss = rng.uniform(0, 3, n).astype(dtype)
        tsafe = rng.integers(-3, 40, n).astype(np.int64)
        for wt in (rng.uniform(0.5, 2, n).astype(dtype), np.zeros(n, dtype)):
            for mode in (0, 1, 2):
                want = fused_rows.nll_reduce(np, loss, wt, tsafe, mode)
                for block in (1, 32, 96, 256):
                    out, coef = np.full(1, np.nan, dtype), np.full(n, np.nan, dtype)
                    bounds = np.zeros(2, np.int64)
                    khost.launch_host(f"nll_reduce_{dtype}",
                                      [loss, wt, tsafe, np.int64(mode), out, coef, bounds,
                                       np.int64(1), np.int64(n)], 1, block, lib=host_lib)
                    where = f"n={n} mode={mode} block={block}"
                    if mode:
                        np.testing.assert_allclose(out[0], want[0], err_msg=where,
                                                   **_row_tol(dtype))
                    else:
                        assert np.isnan(out[0]), where  # (no reduction: out untouched)
                    # (the mean's coefficients divide by a total summed in another order)
                    np.testing.assert_allclose(coef, want[1], err_msg=where, **_row_tol(dtype))
                    assert (bounds[0], bounds[1]) == (want[2], want[3]), where
    # rows of losses, a block each, fewer blocks than rows (grid-stride)
    loss, wt = np.ones((3, 4), "float32"), np.full((3, 4), 2, "float32")
    tsafe = np.arange(12, dtype=np.int64).reshape(3, 4)
    out, coef, bounds = np.zeros(3, "float32"), np.zeros((3, 4), "float32"), np.zeros(6, np.int64)
    khost.launch_host("nll_reduce_float32", [loss, wt, tsafe, np.int64(2), out, coef, bounds,
                                             np.int64(3), np.int64(4)], 2, 32, lib=host_lib)
    assert out.tolist() == [0.5] * 3 and (coef == -0.25).all()
    assert bounds.tolist() == [0, 3, 4, 7, 8, 11]


# the language standard is the front end's business: its syntax and semantic checks
# (templates instantiated) decide whether a standard takes the source, the back end
# (NVVM, a few seconds a dtype) sees the same code whatever -std was
SYNTAX_ONLY = "--fdevice-syntax-only"
NVRTC_ERROR_INVALID_OPTION = 5


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("std", ["c++11", "c++14", "c++20"])
def test_nvrtc_compiles_in_other_language_standards(std, dtype):
    """Should CuPy pass its own -std after ours, the last one wins (NVRTC warns): the
    source must compile in any standard from C++11, every dtype. NVRTC's front end
    checks it (an NVRTC without --fdevice-syntax-only compiles it all), and a line no
    standard takes must fail the same check."""
    lib = _nvrtc()
    source = (kc.kernels_dir() / kc.GENERATED).read_text()
    options = (*kdev.nvrtc_options(dtype), f"-std={std}", "--gpu-architecture=compute_80")
    rc, log, _ = nvrtc_compile(lib, source, kc.GENERATED, (*options, SYNTAX_ONLY))
    if rc == NVRTC_ERROR_INVALID_OPTION and SYNTAX_ONLY in log:
        rc, log, _ = nvrtc_compile(lib, source, kc.GENERATED, options)
    else:
        options = (*options, SYNTAX_ONLY)
    assert rc == 0, f"NVRTC {' '.join(options)}:\n{log}"
    # an error only a template's instantiation finds
    bad = source + ("\ntemplate <typename T> __device__ T gc_not_a_member(T x) { return x.nope; }"
                    "\n__device__ float gc_use(float x) { return gc_not_a_member(x); }\n")
    rc, log, _ = nvrtc_compile(lib, bad, kc.GENERATED, options)
    assert rc != 0 and "nope" in log, log


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(fused.INPLACE_CPU))
def test_sliced_cpu_twins_equal_the_whole_array_twins(name, dtype):
    """The in-place CPU twins run a cache-sized slice at a time on large arrays: bit for
    bit what one pass over the whole arrays gives; small or strided arrays go whole."""
    fn = fused.INPLACE_CPU[name]
    rng = np.random.default_rng(8)
    n = 5 * fused.CHUNK + 123
    g = rng.standard_normal(n).astype(dtype).reshape(-1, 1)
    y = np.tanh(rng.standard_normal(n)).astype(dtype).reshape(-1, 1)
    if "sigmoid" in name:
        y = (y + 1) / 2
    want_g, want_y = g.copy(), y.copy()
    fn.whole(want_g, want_y)
    got = fn(g, y)
    assert got is g
    np.testing.assert_array_equal(g, want_g)
    np.testing.assert_array_equal(y, want_y)  # the consuming variants overwrite y alike


@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_kernels_match_the_twins(dtype, host_lib):
    """layer_norm's forward (a block per row), input gradient (a block per row) and
    parameter gradients (column sums) against their twins, with and without weight and
    bias, for rows of 1 to 257 elements and block sizes that are not powers of two."""
    if not khost.host_supports(dtype, host_lib):
        pytest.skip(reason=f"no {dtype} kernels in the host build (no _Float16)")
    from gradcore.kernels import rows as fused_rows

    acc = np.dtype(np.float32 if dtype == "float16" else dtype)
    rng = np.random.default_rng(10)
    tol = _row_tol(dtype)
    for rows, cols in ROW_SHAPES + [(300, 70)]:
        x = (2 * rng.standard_normal((rows, cols)) + 1).astype(dtype)
        g = rng.standard_normal((rows, cols)).astype(dtype)
        w = rng.uniform(0.5, 1.5, cols).astype(dtype)
        b = rng.standard_normal(cols).astype(dtype)
        inv_n = 1.0 / cols
        for ww, bb in ((w, b), (None, None)):
            want = fused_rows.layer_norm_forward_rows(np, x, ww, bb, 1e-5, inv_n)
            dummy = np.zeros(1, dtype)
            for grid, block in ROW_LAUNCHES:
                got = (np.full((rows, cols), np.nan, dtype), np.full(rows, np.nan, acc),
                       np.full(rows, np.nan, acc))
                khost.launch_host(f"layer_norm_forward_rows_{dtype}",
                               [x, dummy if ww is None else ww, dummy if bb is None else bb,
                                np.int64(ww is not None), np.int64(bb is not None),
                                acc.type(1e-5), acc.type(inv_n), *got, np.int64(rows),
                                np.int64(cols)], grid, block, lib=host_lib)
                for a, e in zip(got, want):
                    np.testing.assert_allclose(a, e, err_msg=f"forward {rows}x{cols}", **tol)
            _, mean, rstd = want
            want_dx = fused_rows.layer_norm_backward_rows(np, g, x, ww, mean, rstd, inv_n)
            dx = np.full((rows, cols), np.nan, dtype)
            khost.launch_host(f"layer_norm_backward_rows_{dtype}",
                           [g, x, dummy if ww is None else ww, np.int64(ww is not None),
                            mean, rstd, acc.type(inv_n), dx, np.int64(rows), np.int64(cols)],
                           3, 96, lib=host_lib)
            np.testing.assert_allclose(dx, want_dx, err_msg=f"dx {rows}x{cols}", **tol)
        want_dw, want_db = fused_rows.layer_norm_param_grads(np, g, x, mean, rstd)
        for grid, block in ((1, 256), (2, 96), (5, 7)):
            dw, db = np.full(cols, np.nan, dtype), np.full(cols, np.nan, dtype)
            khost.launch_host(f"layer_norm_param_grads_{dtype}",
                           [g, x, mean, rstd, np.int64(1), np.int64(1), dw, db,
                            np.int64(rows), np.int64(cols)], grid, block, lib=host_lib)
            scale = dict(rtol=tol["rtol"], atol=tol["atol"] * np.sqrt(rows))
            np.testing.assert_allclose(dw, want_dw, err_msg=f"dw {rows}x{cols}", **scale)
            np.testing.assert_allclose(db, want_db, err_msg=f"db {rows}x{cols}", **scale)


@pytest.mark.parametrize("dtype", DTYPES)
def test_attention_softmax_kernels_match_the_twins(dtype, host_lib):
    """scaled_dot_product_attention's weights (a block per row: scale, bias, causal
    mask, safe softmax) and their gradients against the twins, for rows of 1 to 257
    keys, causal and not, with and without a bias, and rows with no key left (a bias
    of -inf all along: zeros forward, zero gradients back)."""
    if not khost.host_supports(dtype, host_lib):
        pytest.skip(reason=f"no {dtype} kernels in the host build (no _Float16)")
    from gradcore.kernels import rows as fused_rows

    acc = np.dtype(np.float32 if dtype == "float16" else dtype)
    rng = np.random.default_rng(12)
    tol = _row_tol(dtype)
    scale = 0.37
    for rows, cols in ROW_SHAPES + [(12, 5)]:
        s = (3 * rng.standard_normal((rows, cols))).astype(dtype)
        g = rng.standard_normal((rows, cols)).astype(dtype)
        bias = rng.standard_normal((rows, cols))
        bias[rng.random((rows, cols)) < 0.3] = -np.inf
        bias[rows // 2] = -np.inf  # a row with no key
        bias = bias.astype(dtype)
        for b in (bias, None):
            for n_q in sorted({0, 1, rows} | ({3} if rows % 3 == 0 else set())):
                want = fused_rows.attention_softmax_rows(np, s, b, scale, n_q)
                if b is not None:
                    assert np.all(want[rows // 2] == 0)
                for grid, block in ROW_LAUNCHES:
                    y = np.full((rows, cols), np.nan, dtype)
                    khost.launch_host(f"attention_softmax_rows_{dtype}",
                                      [s, s if b is None else b, np.int64(b is not None),
                                       acc.type(scale), np.int64(n_q), y, np.int64(rows),
                                       np.int64(cols)], grid, block, lib=host_lib)
                    np.testing.assert_allclose(
                        y, want, err_msg=f"{rows}x{cols} n_q={n_q} {grid}x{block}", **tol)
                for need_d in (True, False):
                    want_out, want_d = fused_rows.attention_softmax_backward_rows(
                        np, g, want, scale, need_d)
                    out = np.full((rows, cols), np.nan, dtype)
                    d = np.full((rows, cols) if need_d else (1,), np.nan, acc)
                    khost.launch_host(f"attention_softmax_backward_rows_{dtype}",
                                      [g, want, acc.type(scale), np.int64(need_d), out, d,
                                       np.int64(rows), np.int64(cols)], 3, 96, lib=host_lib)
                    np.testing.assert_allclose(out, want_out, err_msg=f"grad {rows}x{cols}",
                                               **tol)
                    if need_d:
                        np.testing.assert_allclose(d, want_d, err_msg=f"d {rows}x{cols}",
                                                   **tol)
                        if b is not None:
                            assert np.all(d[rows // 2] == 0)
                    else:
                        assert np.isnan(d).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_norm_channel_kernels_match_the_twins(dtype, host_lib):
    """Batch norm's channel kernels (x as (outer, C, inner), a block per channel) against
    their twins: the forward with and without weight and bias, the three gradients in
    one launch, each of them alone, for channels of 1 to 3 * 70 elements and launches
    with fewer blocks than channels."""
    if not khost.host_supports(dtype, host_lib):
        pytest.skip(reason=f"no {dtype} kernels in the host build (no _Float16)")
    from gradcore.kernels import rows as fused_rows

    acc = np.dtype(np.float32 if dtype == "float16" else dtype)
    rng = np.random.default_rng(11)
    tol = _row_tol(dtype)
    for outer, c, inner in [(1, 1, 1), (4, 3, 1), (2, 5, 9), (3, 4, 70), (1, 7, 33)]:
        shape = (outer, c, inner)
        x = (2 * rng.standard_normal(shape) + 1).astype(dtype)
        g = rng.standard_normal(shape).astype(dtype)
        w = rng.uniform(0.5, 1.5, c).astype(acc)
        b = rng.standard_normal(c).astype(acc)
        inv_n = 1.0 / (outer * inner)
        sums = dict(rtol=tol["rtol"], atol=tol["atol"] * np.sqrt(outer * inner))
        dims = [np.int64(outer), np.int64(c), np.int64(inner)]
        for ww, bb in ((w, b), (None, None), (w, None)):
            want = fused_rows.norm_forward_channels(np, x, ww, bb, 1e-5, inv_n)
            dummy = np.zeros(1, acc)
            for grid, block in ((1, 1), (2, 7), (3, 32), (64, 200)):
                got = (np.full(shape, np.nan, dtype), np.full(c, np.nan, acc),
                       np.full(c, np.nan, acc))
                khost.launch_host(f"norm_forward_channels_{dtype}",
                                  [x, dummy if ww is None else ww, dummy if bb is None else bb,
                                   np.int64(ww is not None), np.int64(bb is not None),
                                   acc.type(1e-5), acc.type(inv_n), *got, *dims], grid, block,
                                  lib=host_lib)
                for a, e in zip(got, want):
                    np.testing.assert_allclose(a, e, err_msg=f"forward {shape}", **tol)
            _, mean, rstd = want
            for need_x, need_params in ((1, 1), (1, 0), (0, 1)):
                want_dx, want_dw, want_db = fused_rows.norm_backward_channels(
                    np, g, x, ww, mean, rstd, inv_n, need_x, need_params)
                dx = np.full(shape, np.nan, dtype)
                dw, db = np.full(c, np.nan, acc), np.full(c, np.nan, acc)
                khost.launch_host(f"norm_backward_channels_{dtype}",
                                  [g, x, dummy if ww is None else ww, np.int64(ww is not None),
                                   mean, rstd, acc.type(inv_n), np.int64(need_x),
                                   np.int64(need_params), dx, dw, db, *dims], 2, 96,
                                  lib=host_lib)
                if need_x:
                    np.testing.assert_allclose(dx, want_dx, err_msg=f"dx {shape}", **sums)
                else:
                    assert np.isnan(dx).all()  # not written
                if need_params:
                    np.testing.assert_allclose(dw, want_dw, err_msg=f"dw {shape}", **sums)
                    np.testing.assert_allclose(db, want_db, err_msg=f"db {shape}", **sums)
                else:
                    assert np.isnan(dw).all() and np.isnan(db).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_forward_kernel_matches_the_twin(log, dtype, host_lib):
    if not khost.host_supports(dtype, host_lib):
        pytest.skip(reason=f"no {dtype} kernels in the host build (no _Float16)")
    from gradcore.kernels import rows as fused_rows

    rng = np.random.default_rng(11)
    for rows, cols in ROW_SHAPES:
        x = (4 * rng.standard_normal((rows, cols))).astype(dtype)
        want = fused_rows.softmax_forward_rows(np, x.astype(np.float64), log)
        for grid, block in ROW_LAUNCHES:
            y = np.full((rows, cols), np.nan, dtype)
            khost.launch_host(f"softmax_forward_rows_{dtype}",
                           [x, np.int64(log), y, np.int64(rows), np.int64(cols)], grid,
                           block, lib=host_lib)
            np.testing.assert_allclose(y, want, err_msg=f"{rows}x{cols} {grid}x{block}",
                                       **_row_tol(dtype))


def test_one_numpy_generator_forms_host_numbers_as_python_does():
    """kernels.numpy_code (the generator of the CPU twins and updates) forms numbers of
    scalars and constants in Python, with the expression's grouping: (-2) ** s is not
    -(2 ** s)."""
    from gradcore.kernels import numpy_code, twin
    from gradcore.kernels.spec import Kernel
    ops, env = numpy_code.linearize("k", [("y", "x * (-2) ** s + -0.5")], ("x",), ("s",))
    assert [op.func for op in ops] == ["multiply", "add"]
    s = 3
    assert eval(ops[0].args[1]) == (-2) ** s and ops[1].args[1] == "-0.5"
    k = Kernel("k", ("x",), "x * (-0.5 * s) + -0.5", scalars=("s",))
    fn = twin.build(k, {"pow": np.power}, dead_argument=lambda *a: -1, note=lambda: None,
                    min_bytes=0)
    x = np.linspace(-1, 1, 7, dtype=np.float32)
    np.testing.assert_array_equal(fn(x, 3), x * (-0.5 * 3) + -0.5)
    assert fn(x, 3).dtype == np.float32
    # comparisons and where are not generated for pointwise kernels
    assert twin.generate(Kernel("k", ("x",), "where(x > 0, x, 0.0)")) is None


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_xent_small_kernel_matches_the_twin(dtype, host_lib):
    """cross_entropy's forward and reduction in one block, a thread per row: every output
    of the two kernels it stands for, with and without class weights, ignored targets,
    each reduction, rows more than threads, blocks past the first doing nothing, and a
    target out of range (a NaN loss, kept in the bounds)."""
    if not khost.host_supports(dtype, host_lib):
        pytest.skip(reason=f"no {dtype} kernels in the host build (no _Float16)")
    from gradcore.kernels import rows as fused_rows

    acc = np.float32 if dtype == "float16" else dtype
    rng = np.random.default_rng(10)
    names = ("logp", "loss", "wt", "tsafe", "out", "coef", "least", "greatest")
    for rows, cols in ((1, 1), (3, 10), (40, 33), (300, 7)):
        x = (3 * rng.standard_normal((rows, cols))).astype(dtype)
        target = rng.integers(0, cols, rows).astype(np.int64)
        target[::4] = -100
        for weight in (None, rng.uniform(0.5, 2.0, cols).astype(acc)):
            w = weight if weight is not None else np.zeros(1, acc)
            for mode in (0, 1, 2):
                want = fused_rows.softmax_xent_small(np, x, target, weight, -100, mode)
                for grid, block in ((1, 32), (2, 256), (1, 64)):
                    got = [np.full((rows, cols), np.nan, dtype), np.full(rows, np.nan, acc),
                           np.full(rows, np.nan, acc), np.full(rows, -1, np.int64),
                           np.full(1, np.nan, acc), np.full(rows, np.nan, acc),
                           np.zeros(2, np.int64)]
                    khost.launch_host(f"softmax_xent_small_{dtype}",
                                      [x, target, w, np.int64(weight is not None),
                                       np.int64(-100), np.int64(mode), *got,
                                       np.int64(rows), np.int64(cols)], grid, block,
                                      lib=host_lib)
                    got = got[:4] + [got[4][0], got[5], got[6][0], got[6][1]]
                    for name, a, b in zip(names, got, want):
                        where = f"{name} {rows}x{cols} mode {mode} {grid}x{block}"
                        if b is None:  # (no reduction: out left as it was)
                            assert np.isnan(a), where
                        else:
                            np.testing.assert_allclose(a, b, err_msg=where, **_row_tol(dtype))
    bad = np.array([0, 5], np.int64)  # 5 is out of range for 3 classes
    got = [np.empty((2, 3), dtype), np.empty(2, acc), np.empty(2, acc), np.empty(2, np.int64),
           np.empty(1, acc), np.empty(2, acc), np.empty(2, np.int64)]
    khost.launch_host(f"softmax_xent_small_{dtype}",
                      [np.zeros((2, 3), dtype), bad, np.zeros(1, acc), np.int64(0),
                       np.int64(-100), np.int64(1), *got, np.int64(2), np.int64(3)], 1, 32,
                      lib=host_lib)
    assert np.isnan(got[1][1]) and np.isnan(got[4][0]) and got[6].tolist() == [0, 5]


def test_index_bounds_kernel_matches_the_twin(host_lib):
    """An int64 index array's least and greatest in one launch: a block per row, blocks
    smaller than a row, negative and huge values."""
    from gradcore.kernels import rows as fused_rows

    rng = np.random.default_rng(9)
    for n in (1, 7, 300, 1000):
        idx = rng.integers(-(1 << 40), 1 << 40, n).astype(np.int64)
        want = fused_rows.index_bounds(np, idx)
        for block in (1, 32, 256):
            bounds = np.zeros(2, np.int64)
            khost.launch_host("index_bounds_float32", [idx, bounds, np.int64(1), np.int64(n)],
                              1, block, lib=host_lib)
            assert (bounds[0], bounds[1]) == want, (n, block)
    idx = np.arange(12, dtype=np.int64).reshape(3, 4)[::-1].copy()
    bounds = np.zeros(6, np.int64)
    khost.launch_host("index_bounds_float64", [idx, bounds, np.int64(3), np.int64(4)], 2, 32,
                      lib=host_lib)
    assert bounds.tolist() == [8, 11, 4, 7, 0, 3]
