"""CUDA C source for the fused pointwise backward kernels, generated from their declarations.

Each kernel of :data:`gradcore.fused.KERNELS` is one expression in the common subset of
C and Python. This module turns every declaration into a grid-stride CUDA kernel,
written to ``kernels/pointwise_backward.cu`` (committed, shipped in the wheel as
``gradcore/_kernels/``), and builds that same file for the host so the tests can run it
on the CPU against the NumPy twins (``host_library``, ``run_host``)::

    python -m gradcore.kernels_cuda --write   # regenerate kernels/pointwise_backward.cu
    python -m gradcore.kernels_cuda --check   # exit 1 if the committed file is stale

Nothing here runs at import time, and nothing here needs a GPU or CuPy. See
docs/kernels.md.
"""

from __future__ import annotations

import ast
import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from .fused import KERNELS, Kernel

__all__ = ["DTYPES", "kernels_dir", "expr_to_c", "generate", "host_entry_source",
           "build_host_library", "host_library", "host_supports", "run_host", "main"]

GENERATED = "pointwise_backward.cu"
HELPERS = ("gradcore_cuda.cuh", "host_emulation.h")

# NumPy dtype name -> (CUDA storage type, compute type)
DTYPES: dict[str, tuple[str, str]] = {
    "float16": ("__half", "float"),
    "float32": ("float", "float"),
    "float64": ("double", "double"),
}

# functions the expressions may call, with their number of arguments
_FUNCS = {"where": 3, "exp": 1, "log": 1, "sqrt": 1, "sin": 1, "cos": 1, "tanh": 1,
          "sign": 1, "pow": 2}
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.BitAnd: "&"}
_CMPOPS = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<=", ast.Eq: "==",
           ast.NotEq: "!="}
# names the generated kernel body uses itself; parameters must not shadow them
_RESERVED = {"C", "T", "i", "n", "out", "stride", "load", "store", "compute_type",
             "gradcore"} | set(_FUNCS)


def kernels_dir() -> Path:
    """The folder holding the kernel sources: ``gradcore/_kernels`` in an installed
    wheel, else ``kernels/`` next to the package (a source checkout or editable install).
    """
    here = Path(__file__).resolve().parent
    for candidate in (here / "_kernels", here.parent / "kernels"):
        if (candidate / GENERATED).is_file():
            return candidate
    raise FileNotFoundError(
        f"gradcore's CUDA kernel sources ({GENERATED}) are neither in {here / '_kernels'} "
        f"(installed wheel) nor in {here.parent / 'kernels'} (source checkout)")


# ----------------------------------------------------------------------------------
# expression -> C


def expr_to_c(expr: str, params: tuple[str, ...] | list[str]) -> str:
    """Translate a kernel expression to C over the compute type ``C``.

    The expression is parsed as Python (the language its NumPy twin runs in), so the C
    is fully parenthesized wherever the two languages' precedences could differ (``&``
    binds tighter than ``==`` in Python, looser in C). Numeric literals become ``C(...)``
    so that ``0.5 * g`` stays single precision for float.

    >>> expr_to_c("-0.5 * g * (y * y * y)", ("g", "y"))
    '-C(0.5) * g * (y * y * y)'
    >>> expr_to_c("where((x >= lo) & (x <= hi), g, 0)", ("g", "x", "lo", "hi"))
    'where((x >= lo) & (x <= hi), g, C(0))'
    """
    bad = set(params) & _RESERVED
    if bad:
        raise ValueError(f"kernel parameter names {sorted(bad)} clash with names the "
                         "generated CUDA code uses")
    tree = ast.parse(expr, mode="eval").body
    return _Emit(set(params)).emit(tree)


class _Emit:
    """Python AST -> C, parenthesizing every compound operand except the left one of a
    left-associative chain of the same level (``a * b * c``, ``a - b + c``)."""

    def __init__(self, params: set[str]):
        self.params = params

    def emit(self, node) -> str:
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ValueError(f"unsupported constant {v!r} in a kernel expression")
            return f"C({v!r})"
        if isinstance(node, ast.Name):
            if node.id not in self.params:
                raise ValueError(f"unknown name {node.id!r} in a kernel expression")
            return node.id
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.USub):
                return "-" + self.wrapped(node.operand, unary=True)
            if isinstance(node.op, ast.UAdd):
                return self.emit(node.operand)
            raise ValueError(f"unsupported unary operator {type(node.op).__name__}")
        if isinstance(node, ast.BinOp):
            op = _BINOPS.get(type(node.op))
            if op is None:
                raise ValueError(f"unsupported operator {type(node.op).__name__}")
            if isinstance(node.left, ast.BinOp) and _same_level(node.left.op, node.op):
                left = self.emit(node.left)
            else:
                left = self.wrapped(node.left)
            return f"{left} {op} {self.wrapped(node.right)}"
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise ValueError("chained comparisons mean different things in C and "
                                 "Python; write them with & and parentheses")
            op = _CMPOPS.get(type(node.ops[0]))
            if op is None:
                raise ValueError(f"unsupported comparison {type(node.ops[0]).__name__}")
            return f"{self.wrapped(node.left)} {op} {self.wrapped(node.comparators[0])}"
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS:
                raise ValueError(f"unsupported call {ast.unparse(node.func)!r}; kernels "
                                 f"may call {sorted(_FUNCS)}")
            if node.keywords or len(node.args) != _FUNCS[node.func.id]:
                raise ValueError(f"{node.func.id} takes {_FUNCS[node.func.id]} "
                                 "positional arguments")
            return f"{node.func.id}({', '.join(self.emit(a) for a in node.args)})"
        raise ValueError(f"unsupported syntax {ast.unparse(node)!r} in a kernel expression")

    def wrapped(self, node, unary: bool = False) -> str:
        s = self.emit(node)
        compound = isinstance(node, (ast.BinOp, ast.Compare)) or (
            unary and isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub))
        return f"({s})" if compound else s


def _same_level(inner, outer) -> bool:
    add = (ast.Add, ast.Sub)
    mul = (ast.Mult, ast.Div)
    return (isinstance(inner, add) and isinstance(outer, add)) or (
        isinstance(inner, mul) and isinstance(outer, mul))


# ----------------------------------------------------------------------------------
# source generation

_HEADER = """\
// GENERATED FILE: do not edit by hand.
// Generated by `python -m gradcore.kernels_cuda --write` from the kernel declarations
// in gradcore/fused.py; `python -m gradcore.kernels_cuda --check` (and
// tests/test_kernels.py) fail when this file is out of date. See docs/kernels.md.
//
// One grid-stride kernel per declaration, as a template over the storage type T that
// computes in C (float for __half and float, double for double), and extern "C"
// entry points with unmangled names <kernel>_<dtype> for float16 (__half), float32
// and float64. The same source builds with nvcc/NVRTC and, with GRADCORE_HOST_BUILD,
// with a host C++ compiler (kernels/host_emulation.h).
#include "gradcore_cuda.cuh"
"""


def _pointer_params(k: Kernel, t: str) -> str:
    ins = ", ".join(f"const {t}* __restrict__ p{j}" for j in range(len(k.params)))
    return f"{ins}, {t}* __restrict__ out, long long n"


def _kernel_source(k: Kernel) -> str:
    body = expr_to_c(k.expr, k.params)
    loads = "\n".join(f"        const C {p} = load(p{j}[i]);" for j, p in enumerate(k.params))
    args = ", ".join(f"p{j}" for j in range(len(k.params)))
    lines = [
        f"// {k.name}({', '.join(k.params)}) = {k.expr}",
        "template <typename T>",
        f"__device__ __forceinline__ void {k.name}({_pointer_params(k, 'T')}) {{",
        "    typedef typename compute_type<T>::type C;",
        "    const long long stride = (long long)blockDim.x * gridDim.x;",
        "    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;"
        " i += stride) {",
        loads,
        f"        out[i] = store<T>({body});",
        "    }",
        "}",
    ]
    return "\n".join(lines), args


def _entry_name(k: Kernel, dtype: str) -> str:
    return f"{k.name}_{dtype}"


def generate(kernels: dict[str, Kernel] | None = None) -> str:
    """The CUDA C source of ``kernels`` (default: all of :data:`fused.KERNELS`)."""
    kernels = KERNELS if kernels is None else kernels
    templates, entries = [], {d: [] for d in DTYPES}
    for k in kernels.values():
        src, args = _kernel_source(k)
        templates.append(src)
        for dtype, (t, _) in DTYPES.items():
            entries[dtype].append(
                f'extern "C" __global__ void {_entry_name(k, dtype)}('
                f"{_pointer_params(k, t)}) {{\n"
                f"    gradcore::{k.name}<{t}>({args}, out, n);\n}}")
    parts = [_HEADER, "namespace gradcore {\n", "\n\n".join(templates),
             "\n}  // namespace gradcore\n"]
    for dtype, (t, c) in DTYPES.items():
        guard = dtype == "float16"
        parts.append(f"\n// ---- {dtype}: stored as {t}, computed in {c}\n")
        if guard:
            parts.append("#ifndef GRADCORE_NO_FLOAT16\n")
        parts.append("\n".join(entries[dtype]) + "\n")
        if guard:
            parts.append("#endif  // GRADCORE_NO_FLOAT16\n")
    return "".join(parts)


def host_entry_source(kernels: dict[str, Kernel] | None = None) -> str:
    """A host C++ file exposing ``<name>_<dtype>_launch(inputs, out, n, grid, block)``
    for every kernel of the generated source: it runs the kernel over a ``grid`` x
    ``block`` launch with the emulated index variables."""
    kernels = KERNELS if kernels is None else kernels
    out = ["// Host entry points for the generated kernels (generated, not committed).",
           "#include \"host_emulation.h\"", ""]
    for dtype, (t, _) in DTYPES.items():
        if dtype == "float16":
            out.append("#ifndef GRADCORE_NO_FLOAT16")
        for k in kernels.values():
            name = _entry_name(k, dtype)
            casts = ", ".join(f"(const {t}*)inputs[{j}]" for j in range(len(k.params)))
            out += [
                f'extern "C" void {name}({_pointer_params(k, t)});',
                f'extern "C" void {name}_launch(const void** inputs, void* out, long long n,'
                " int grid, int block) {",
                f"    gradcore_host::launch(grid, block, [&] {{ {name}({casts}, ({t}*)out, n); "
                "});",
                "}",
            ]
        if dtype == "float16":
            out.append("#endif  // GRADCORE_NO_FLOAT16")
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------------
# host build


def _cxx() -> str:
    return os.environ.get("CXX") or "g++"


# -ffp-contract=off: no fused multiply-adds, so the host build rounds every operation
# as NumPy does (the tests compare some kernels bit for bit; GPUs do contract).
HOST_FLAGS = ("-O2", "-shared", "-fPIC", "-std=c++17", "-ffp-contract=off",
              "-DGRADCORE_HOST_BUILD")
_LIB_NAME = "libgradcore_kernels_host.so"


def _cache_root() -> Path:
    env = os.environ.get("GRADCORE_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "gradcore"


def build_host_library(cache_dir: str | os.PathLike | None = None) -> Path:
    """Compile ``kernels/pointwise_backward.cu`` for the host, once, and return the path.

    The library lands in ``<cache>/host-kernels/<key>/`` where the cache is
    ``cache_dir``, ``$GRADCORE_CACHE_DIR`` or ``~/.cache/gradcore`` and the key hashes
    the kernel sources, the generated entry file, the compiler and its flags: an
    unchanged build is reused, a changed one gets a new folder.
    """
    cxx = _cxx()
    if shutil.which(cxx) is None:
        raise RuntimeError(f"no host C++ compiler {cxx!r} (set CXX) to build the kernels")
    src_dir = kernels_dir()
    entry = host_entry_source()
    h = hashlib.sha256()
    for name in (GENERATED, *HELPERS):
        h.update(name.encode() + b"\0" + (src_dir / name).read_bytes() + b"\0")
    version = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout
    h.update(entry.encode() + b"\0" + cxx.encode() + b"\0" + version.encode() + b"\0")
    h.update(" ".join(HOST_FLAGS).encode())
    root = Path(cache_dir) if cache_dir is not None else _cache_root()
    out_dir = root / "host-kernels" / h.hexdigest()[:20]
    lib = out_dir / _LIB_NAME
    if lib.is_file():
        return lib
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        entry_path = Path(tmp) / "host_entry.cpp"
        entry_path.write_text(entry)
        tmp_lib = Path(tmp) / _LIB_NAME
        cmd = [cxx, *HOST_FLAGS, f"-I{src_dir}", "-x", "c++", str(src_dir / GENERATED),
               str(entry_path), "-o", str(tmp_lib)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"host build of the CUDA kernels failed:\n{' '.join(cmd)}\n"
                               f"{proc.stderr}")
        os.replace(tmp_lib, lib)  # atomic: concurrent builders never see half a file
    return lib


_LIBS: dict[str, ctypes.CDLL] = {}


def host_library(cache_dir: str | os.PathLike | None = None) -> ctypes.CDLL:
    """The host build of the kernels, loaded with ctypes (built on first use)."""
    path = str(build_host_library(cache_dir))
    lib = _LIBS.get(path)
    if lib is None:
        lib = _LIBS[path] = ctypes.CDLL(path)
    return lib


def host_supports(dtype: str, lib: ctypes.CDLL | None = None) -> bool:
    """Whether the host build has the kernels of ``dtype`` (float16 needs _Float16)."""
    lib = host_library() if lib is None else lib
    name = _entry_name(next(iter(KERNELS.values())), dtype) + "_launch"
    return hasattr(lib, name)


def _launch_shape(n: int) -> tuple[int, int]:
    """A grid and block that do not divide ``n``: tails and grid-stride loops run."""
    block = next((b for b in (96, 80, 112, 72) if n % b), 96)
    grid = max(1, min(7, -(-n // block)))
    while grid > 1 and n % (grid * block) == 0:
        grid -= 1
    return grid, block


def run_host(name: str, *arrays, grid: int | None = None, block: int | None = None,
             out: np.ndarray | None = None, lib: ctypes.CDLL | None = None) -> np.ndarray:
    """Run kernel ``name`` through the host build on NumPy arrays (any layout).

    The inputs are broadcast to one shape and made contiguous in their common dtype
    (float16, float32 or float64); the result has that shape and dtype.
    """
    k = KERNELS[name]
    if len(arrays) != len(k.params):
        raise TypeError(f"{name} takes {len(k.params)} arrays ({', '.join(k.params)}), "
                        f"got {len(arrays)}")
    dtype = np.result_type(*arrays)
    if dtype.name not in DTYPES:
        raise TypeError(f"{name}: no kernel for dtype {dtype}")
    arrays = np.broadcast_arrays(*(np.asarray(a) for a in arrays))
    ins = [np.ascontiguousarray(a, dtype=dtype) for a in arrays]
    shape = ins[0].shape if ins else ()
    if out is None:
        out = np.empty(shape, dtype)
    elif out.shape != shape or out.dtype != dtype or not out.flags.c_contiguous:
        raise ValueError(f"out must be a contiguous {dtype} array of shape {shape}")
    n = out.size
    if n == 0:
        return out
    lib = host_library() if lib is None else lib
    fn_name = f"{_entry_name(k, dtype.name)}_launch"
    try:
        fn = getattr(lib, fn_name)
    except AttributeError:
        raise RuntimeError(f"the host build has no {fn_name}: the compiler lacks _Float16, "
                           "or kernels/pointwise_backward.cu is stale (run "
                           "`python -m gradcore.kernels_cuda --write`)") from None
    if grid is None or block is None:
        g, b = _launch_shape(n)
        grid = g if grid is None else grid
        block = b if block is None else block
    ptrs = (ctypes.c_void_p * len(ins))(*[a.ctypes.data for a in ins])
    fn.restype = None
    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_longlong,
                   ctypes.c_int, ctypes.c_int]
    fn(ptrs, out.ctypes.data, n, grid, block)
    return out


# ----------------------------------------------------------------------------------
# command line


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m gradcore.kernels_cuda",
        description=f"Generate kernels/{GENERATED} from gradcore/fused.py.")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true",
                       help="exit 1 if the committed file differs from the declarations")
    group.add_argument("--write", action="store_true", help="rewrite the committed file")
    args = parser.parse_args(argv)
    source = generate()
    if not (args.check or args.write):
        sys.stdout.write(source)
        return 0
    try:
        path = kernels_dir() / GENERATED
    except FileNotFoundError:
        path = Path(__file__).resolve().parent.parent / "kernels" / GENERATED
    if args.write:
        path.write_text(source)
        print(f"wrote {path}")
        return 0
    if not path.is_file() or path.read_text() != source:
        print(f"{path} is out of date with gradcore/fused.py; run "
              "`python -m gradcore.kernels_cuda --write`", file=sys.stderr)
        return 1
    print(f"{path} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())


# ----------------------------------------------------------------------------------
# on the device (CuPy): opt-in until a GPU session has validated it


def device_kernels_enabled() -> bool:
    """Whether CUDA devices run the generated kernels (``GRADCORE_CUDA_KERNELS=1``)
    rather than the expressions over CuPy's ufuncs. Off by default: this path has run
    through the CuPy stand-in of the tests, never on a GPU yet."""
    return os.environ.get("GRADCORE_CUDA_KERNELS", "0") == "1"


_modules: dict[int, object] = {}


def _module(math):
    """The generated source compiled for ``math``'s device (once per process)."""
    mod = _modules.get(id(math))
    if mod is None:
        folder = kernels_dir()
        code = (folder / GENERATED).read_text()
        mod = _modules[id(math)] = math.xp.RawModule(
            code=code, options=("-std=c++17", f"-I{folder}"))
    return mod


def device_kernel(math, k: Kernel):
    """Kernel ``k`` as a function of device arrays (or Python scalars) on ``math``'s
    device: the inputs are broadcast to one shape and made contiguous in the first
    array's dtype, and one launch writes a new output array."""
    xp = math.xp

    def run(*args):
        ref = next(a for a in args if hasattr(a, "dtype"))
        dtype = ref.dtype
        if dtype.name not in DTYPES:
            raise TypeError(f"{k.name}: no kernel for dtype {dtype}")
        arrays = xp.broadcast_arrays(*(xp.asarray(a, dtype=dtype) for a in args))
        ins = [xp.ascontiguousarray(a) for a in arrays]
        out = xp.empty(ins[0].shape, dtype=dtype)
        n = out.size
        if n:
            block = 256
            grid = min(-(-n // block), 65535)
            fn = _module(math).get_function(_entry_name(k, dtype.name))
            fn((grid,), (block,), (*ins, out, np.int64(n)))
        return out

    run.__name__ = k.name
    return run
