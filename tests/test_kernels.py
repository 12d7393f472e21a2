"""The CUDA kernel sources generated from gradcore/fused.py (issue 4, items 2, 5 and 7).

* the committed kernels/pointwise_backward.cu is what the declarations generate;
* nvcc compiles every kernel, every dtype, for sm_80 and sm_90;
* the same source built for the host (kernels/host_emulation.h) matches the NumPy twin
  and the expression compiled over NumPy, on random inputs of awkward sizes and
  layouts, in every dtype;
* the wheel ships the sources.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

from gradcore import fused
from gradcore import kernels_cuda as kc
from gradcore.backend import cpu

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
        "kernels/pointwise_backward.cu is stale: run `python -m gradcore.kernels_cuda "
        "--write`")


def test_check_command_detects_a_stale_file(tmp_path, monkeypatch):
    ok = subprocess.run([sys.executable, "-m", "gradcore.kernels_cuda", "--check"],
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
    for name in KERNEL_NAMES:
        k = fused.KERNELS[name]
        assert f"// {name}({', '.join(k.params)}) = {k.expr}" in src
        for dtype in DTYPES:
            assert f'extern "C" __global__ void {name}_{dtype}(' in src


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
    ("erf(a)", ("a",), "unsupported call"),
    ("a * z", ("a",), "unknown name"),
    ("where(a, a)", ("a",), "takes 3"),
    ("a if a else a", ("a",), "unsupported syntax"),
    ("~a", ("a",), "unsupported unary"),
    ("a * True", ("a",), "unsupported constant"),
    ("n * 2", ("n",), "clash"),
])
def test_expression_translation_rejects(expr, params, message):
    with pytest.raises(ValueError, match=message):
        kc.expr_to_c(expr, params)


# ------------------------------------------------------------------ nvcc

def _nvcc():
    found = shutil.which("nvcc") or next(
        (str(p) for p in [Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin/nvcc"]
         if p.is_file()), None)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("nvcc not found, and CI is set: CI must compile the CUDA kernels")
        pytest.skip("nvcc not found (CI unset): the CUDA kernels are not compiled here")
    return found


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvcc_compiles_every_kernel(arch, tmp_path):
    nvcc = _nvcc()
    cubin = tmp_path / f"kernels_{arch}.cubin"
    cmd = [nvcc, "-cubin", f"-arch={arch}", "-Werror", "all-warnings",
           f"-I{kc.kernels_dir()}", "-o", str(cubin), str(kc.kernels_dir() / kc.GENERATED)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}"
    image = cubin.read_bytes()
    missing = [f"{name}_{dtype}" for name in KERNEL_NAMES for dtype in DTYPES
               if f"{name}_{dtype}\0".encode() not in image]
    assert not missing, f"no entry point in the {arch} cubin for {missing}"


# ------------------------------------------------------------------ host build

@pytest.fixture(scope="session")
def host_lib():
    """The host build, compiled once per cache (``GRADCORE_CACHE_DIR`` or ~/.cache)."""
    if shutil.which(os.environ.get("CXX") or "g++") is None:
        pytest.skip("no host C++ compiler (g++ or $CXX) to build the kernel source")
    return kc.host_library()


def test_host_build_is_cached(tmp_path):
    if shutil.which(os.environ.get("CXX") or "g++") is None:
        pytest.skip("no host C++ compiler (g++ or $CXX) to build the kernel source")
    lib = kc.build_host_library(tmp_path)
    assert lib.is_file() and tmp_path in lib.parents
    stamp = lib.stat().st_mtime_ns
    assert kc.build_host_library(tmp_path) == lib
    assert lib.stat().st_mtime_ns == stamp  # reused, not rebuilt
    assert list((tmp_path / "host-kernels").iterdir()) == [lib.parent]


def _uniform(lo, hi):
    return lambda rng, shape: rng.uniform(lo, hi, shape)


def _normal(rng, shape):
    return rng.standard_normal(shape)


def _grid(*values):
    """Draws from a few values, so that ties (a == b, x == lo, y == 0) happen often."""
    return lambda rng, shape: rng.choice(np.asarray(values, dtype=float), shape)


def _away_from_zero(lo, hi):
    return lambda rng, shape: rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape)


# each kernel's inputs, drawn from where the formula is used and well conditioned
DOMAINS = {
    "tanh_backward": [_normal, _uniform(-0.9, 0.9)],
    "sigmoid_backward": [_normal, _uniform(0.02, 0.98)],
    "relu_backward": [_normal, _grid(-1.5, -0.5, 0.0, 0.0, 0.25, 1.0, 2.0)],
    "sqrt_backward": [_normal, _uniform(0.1, 3.0)],
    "rsqrt_backward": [_normal, _uniform(0.2, 3.0)],
    "reciprocal_backward": [_normal, _uniform(-3.0, 3.0)],
    "abs_backward": [_normal, _grid(-2.0, -0.5, 0.0, 0.75, 3.0)],
    # positive x: the exponents are not all integers; e == 0 takes the other branch
    "pow_backward": [_normal, _uniform(0.1, 3.0), _grid(0.0, 0.5, 1.0, 1.5, 2.0, 3.0, -0.5)],
    "clamp_backward": [_normal, _grid(-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5),
                       _grid(-1.0, -0.5), _grid(0.5, 1.0)],
    "maximum_backward_a": [_normal, _grid(-1.0, 0.0, 0.5, 2.0), _grid(-1.0, 0.0, 0.5, 2.0)],
    "maximum_backward_b": [_normal, _grid(-1.0, 0.0, 0.5, 2.0), _grid(-1.0, 0.0, 0.5, 2.0)],
    "div_backward_b": [_normal, _normal, _away_from_zero(0.5, 2.0)],
}


def test_every_kernel_has_a_test_domain():
    assert sorted(DOMAINS) == KERNEL_NAMES
    for name, draws in DOMAINS.items():
        assert len(draws) == len(fused.KERNELS[name].params), name


def _inputs(name, dtype, shape, layout, rng):
    """Inputs of ``shape`` (broadcast to it, for "broadcast") in the given layout."""
    r, c = shape
    arrays = []
    for j, draw in enumerate(DOMAINS[name]):
        if layout == "contiguous":
            a = draw(rng, shape).astype(dtype)
        elif layout == "strided":  # transposed views and every-other-column slices
            if j % 2 == 0:
                a = draw(rng, (c, r)).astype(dtype).T
            else:
                a = draw(rng, (r, 2 * c)).astype(dtype)[:, ::2]
            assert not a.flags.c_contiguous or a.size == 1
        elif layout == "broadcast":  # the gradient is full; the others broadcast
            sub = [shape, (r, 1), (1, c), ()][j % 4] if j else shape
            a = draw(rng, sub).astype(dtype)
        arrays.append(a)
    return arrays


def _check(name, dtype, layout, lib, seed):
    if not kc.host_supports(dtype, lib):
        pytest.skip(reason=f"the host compiler has no _Float16, so the {dtype} kernels are not "
                    "in the host build")
    rng = np.random.default_rng(seed)
    twin = getattr(cpu.math, name)
    expression = fused.KERNELS[name].compile(fused._NUMPY_NAMES)
    rtol, atol = TOL[dtype]
    for shape in SHAPES:
        ins = _inputs(name, dtype, shape, layout, rng)
        out = np.full(shape, np.nan, dtype)  # every element must be written
        got = kc.run_host(name, *ins, out=out, lib=lib)
        assert got is out and got.dtype == dtype and got.shape == shape
        with np.errstate(all="ignore"):
            want_twin = twin(*ins)
            want_expr = expression(*ins)
        assert np.asarray(want_twin).dtype == dtype
        what = f"{name} {dtype} {layout} {shape}"
        np.testing.assert_allclose(got, want_twin, rtol=rtol, atol=atol,
                                   err_msg=f"{what}: host kernel vs NumPy twin")
        np.testing.assert_allclose(got, want_expr, rtol=rtol, atol=atol,
                                   err_msg=f"{what}: host kernel vs expression")
        if dtype == "float16":
            # the kernel computes in float32 and rounds once: exactly the float32
            # expression rounded to float16, to within one float16 ulp
            with np.errstate(all="ignore"):
                ref = expression(*[a.astype(np.float32) for a in ins]).astype(np.float16)
            np.testing.assert_allclose(got, ref, rtol=1e-3, atol=1e-7,
                                       err_msg=f"{what}: host kernel vs float32 rounded")


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
        kc.run_host("sigmoid_backward", g, y + 0.5, grid=grid, block=block, out=out,
                    lib=host_lib)
        np.testing.assert_array_equal(out, g * 0.25, err_msg=f"grid={grid} block={block}")
    assert kc.run_host("relu_backward", g[:0], y[:0], lib=host_lib).shape == (0,)
    for n in (1, 255, 1000, 4097):
        grid, block = kc._launch_shape(n)
        assert n % block and n % (grid * block) if n > 1 else True, (n, grid, block)


_TRANSCENDENTAL = ("exp(", "log(", "sqrt(", "sin(", "cos(", "tanh(", "pow(")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_arithmetic_kernels_are_bitwise_numpy(dtype, host_lib):
    """Kernels of + - * / and where only: the host build (no FMA contraction) does the
    same correctly rounded operations in the same order as NumPy in the same dtype, so
    the results are identical. Double arithmetic on float (a literal left as 0.5 or 1
    instead of C(...)) would round differently and fail this."""
    names = [n for n in KERNEL_NAMES
             if not any(f in fused.KERNELS[n].expr for f in _TRANSCENDENTAL)]
    assert len(names) >= 10
    rng = np.random.default_rng(1)
    for name in names:
        ins = _inputs(name, dtype, (17, 241), "contiguous", rng)
        want = fused.KERNELS[name].compile(fused._NUMPY_NAMES)(*ins)
        got = kc.run_host(name, *ins, lib=host_lib)
        np.testing.assert_array_equal(got, want, err_msg=f"{name} {dtype}")


def test_literals_are_in_the_compute_type():
    body = [line for line in kc.generate().splitlines() if "out[i] = store<T>(" in line]
    assert len(body) == len(KERNEL_NAMES)
    for line in body:
        stripped = re.sub(r"C\([0-9.e+-]+\)", "", line)
        assert not re.search(r"(?<![A-Za-z_0-9])[0-9]", stripped.split("store<T>", 1)[1]), line


def test_run_host_rejects_bad_calls(host_lib):
    x = np.ones(3)
    with pytest.raises(TypeError, match="takes 2 arrays"):
        kc.run_host("tanh_backward", x, lib=host_lib)
    with pytest.raises(TypeError, match="no kernel for dtype"):
        kc.run_host("tanh_backward", x.astype(np.int64), x.astype(np.int64), lib=host_lib)


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
    code = ("import gradcore, gradcore.kernels_cuda as k; "
            "print(gradcore.__file__); print(k.kernels_dir())")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "site"))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    pkg, kdir = run.stdout.split()
    assert Path(pkg).is_relative_to(tmp_path / "site")
    assert Path(kdir) == tmp_path / "site" / "gradcore" / "_kernels"
