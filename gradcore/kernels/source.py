"""gradcore's CUDA kernels as C: source generation and the calling convention.

Each kernel of :data:`.pointwise.KERNELS` (pointwise) and :data:`.updates.UPDATE_KERNELS`
(in-place optimizer steps) is declared in the common subset of C and Python; the row
kernels (:data:`.rows.ROW_KERNELS`) are written by hand in ``kernels/gradcore_rows.cuh``,
the convolution's window kernels (:data:`.conv.CONV_KERNELS`) in
``kernels/gradcore_conv.cuh``.
This module turns the declarations into grid-stride CUDA kernels with an ``extern "C"``
entry point per dtype, written to ``kernels/pointwise_backward.cu`` (committed, shipped
in the wheel as ``gradcore/_kernels/``), and says how a call's arguments become a
launch's values (:func:`kernel_arguments`), for the host build (:mod:`.host`) and the
device (:mod:`.device`) alike::

    python -m gradcore.kernels --write   # regenerate kernels/pointwise_backward.cu
    python -m gradcore.kernels --check   # exit 1 if the committed file is stale

Nothing here runs at import time, and nothing here needs a GPU or CuPy. See
docs/kernels.md.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

import numpy as np

from .conv import CONV_KERNELS
from .philox import PHILOX_KERNELS
from .pointwise import KERNELS
from .rows import ROW_KERNELS
from .spec import RowKernel, Update
from .updates import (
    DEVICE_SCALAR_UPDATES,
    MULTI_TENSOR_UPDATES,
    ROW_WIDTH,
    SKIP_COLUMN,
    UPDATE_KERNELS,
)

__all__ = ["DTYPES", "kernels_dir", "expr_to_c", "generate", "host_entry_source",
           "all_kernels", "signature", "kernel_arguments", "check_arguments", "main"]

GENERATED = "pointwise_backward.cu"
HELPERS = ("gradcore_cuda.cuh", "gradcore_rows.cuh", "gradcore_conv.cuh",
           "gradcore_philox.cuh", "host_emulation.h")

# NumPy dtype name -> (CUDA storage type, compute type)
DTYPES: dict[str, tuple[str, str]] = {
    "float16": ("gc_half", "float"),
    "float32": ("float", "float"),
    "float64": ("double", "double"),
}

_CTYPES = {"in": "const {t}*", "mask": "const bool*", "stride": "long long",
           "pointers": "const unsigned long long*",
           "inout": "{t}*", "scalar": "{c}", "out": "{t}*", "n": "long long",
           "index": "const long long*", "int": "long long", "cin": "const {c}*",
           "cout": "{c}*", "index_out": "long long*"}
# array kinds: the NumPy dtype each holds (None: the kernel's storage dtype)
_ARRAY_KINDS = {"in": None, "inout": None, "out": None, "mask": "bool", "index": "int64",
                "pointers": "uint64",
                "index_out": "int64", "cin": "compute", "cout": "compute"}

# functions the expressions may call, with their number of arguments
_FUNCS = {"where": 3, "exp": 1, "log": 1, "sqrt": 1, "sin": 1, "cos": 1, "tanh": 1,
          "sign": 1, "pow": 2, "erf": 1, "maximum": 2}
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.BitAnd: "&"}
_CMPOPS = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<=", ast.Eq: "==",
           ast.NotEq: "!="}
# names the generated kernel body uses itself; parameters must not shadow them
_RESERVED = {"C", "T", "i", "n", "stride", "load", "store", "compute_type", "gradcore",
             "gc_half"} | set(_FUNCS)


_KERNELS_DIR: list[Path] = []  # kernels_dir's answer, once found (the package stays put)


def kernels_dir() -> Path:
    """The folder holding the kernel sources: ``gradcore/_kernels`` in an installed
    wheel, else ``kernels/`` next to the package (a source checkout or editable install).
    """
    if _KERNELS_DIR:  # (the CuPy stand-in asks on every launch)
        return _KERNELS_DIR[0]
    here = Path(__file__).resolve().parent.parent  # gradcore/
    for candidate in (here / "_kernels", here.parent / "kernels"):
        if (candidate / GENERATED).is_file():
            _KERNELS_DIR.append(candidate)
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
    bad = {p for p in params if p in _RESERVED or re.fullmatch(r"(a|out)[0-9]+", p)}
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
// Generated by `python -m gradcore.kernels --write` from the kernel
// declarations in gradcore/kernels/ (pointwise.py, updates.py, rows.py, conv.py,
// philox.py); `python -m gradcore.kernels.source --check` (and tests/test_kernels.py)
// fail when this file is out of date. See docs/kernels.md.
//
// One grid-stride kernel per declaration, as a template over the storage type T that
// computes in C (float for float16 and float32, double for float64), and extern "C"
// entry points with unmangled names <kernel>_<dtype>. Each dtype's entry points can be
// left out with -DGRADCORE_NO_<dtype>, so that a device compiles only the dtype it
// needs. The same source builds with nvcc/NVRTC and, with GRADCORE_HOST_BUILD, with a
// host C++ compiler (kernels/host_emulation.h).
#include "gradcore_cuda.cuh"
#include "gradcore_rows.cuh"
#include "gradcore_conv.cuh"
#include "gradcore_philox.cuh"
"""


_KERNEL_TABLES = (KERNELS, UPDATE_KERNELS, DEVICE_SCALAR_UPDATES, ROW_KERNELS, CONV_KERNELS,
                  PHILOX_KERNELS)


def all_kernels() -> dict:
    """Every declared kernel: the pointwise ones, the optimizer updates, the row kernels,
    the convolution's window kernels and the random ones, by name."""
    return {**KERNELS, **UPDATE_KERNELS, **DEVICE_SCALAR_UPDATES, **MULTI_TENSOR_UPDATES,
            **ROW_KERNELS,
            **CONV_KERNELS, **PHILOX_KERNELS}


def kernel_count() -> int:
    """How many kernels the tables declare (one more with each kernel declared), without
    building :func:`all_kernels`'s dict."""
    return sum(map(len, _KERNEL_TABLES))


# A kernel's parameters, in order, as (kind, name): "in" (const T*, read at i * stride),
# "stride" (long long: 1, or 0 for a value broadcast from one element), "mask" (const
# bool*), "inout" (T*, read and written at i), "scalar" (the compute type, by value),
# "out" (T*, written at i) and "n" (long long).
def signature(k) -> list[tuple[str, str]]:
    if isinstance(k, RowKernel):
        return list(k.params)
    if getattr(k, "multi_tensor", False):
        return [("pointers", "pointers"), ("index", "offsets"), ("cin", "scalars"),
                ("n", "n")]
    sig = []
    if isinstance(k, Update):
        sig += [("inout" if p in k.writes else "in", p) for p in k.params]
    else:
        for p in k.params:
            sig += [("mask" if p in k.masks else "in", p), ("stride", p)]
    if getattr(k, "device_scalars", False):
        sig.append(("cin", "scalars"))  # (read into the scalars' names: _kernel_source)
    else:
        sig += [("scalar", s) for s in k.scalars]
    if not isinstance(k, Update):
        sig += [("out", f"out{j}") for j in range(len(k.exprs))]
    return sig + [("n", "n")]


def _c_params(k, t: str, c: str) -> str:
    if isinstance(k, RowKernel):
        return ", ".join(_CTYPES[kind].format(t=t, c=c) + (" __restrict__ " if "*" in
                         _CTYPES[kind] else " ") + name for kind, name in k.params)
    if getattr(k, "multi_tensor", False):
        return ", ".join(_CTYPES[kind].format(t=t, c=c) + (" __restrict__ " if "*" in
                         _CTYPES[kind] else " ") + name for kind, name in signature(k))
    parts = []
    for j, (kind, name) in enumerate(signature(k)):
        parts.append({
            "in": f"const {t}* __restrict__ a{j}",
            "mask": f"const bool* __restrict__ a{j}",
            "stride": f"long long a{j}",
            "inout": f"{t}* __restrict__ a{j}",
            "scalar": f"{c} {name}",
            "cin": f"const {c}* __restrict__ {name}",
            "out": f"{t}* __restrict__ {name}",
            "n": "long long n",
        }[kind])
    return ", ".join(parts)


def _c_args(k) -> str:
    if isinstance(k, RowKernel) or getattr(k, "multi_tensor", False):
        return ", ".join(name for _, name in signature(k))
    names = []
    for j, (kind, name) in enumerate(signature(k)):
        names.append(name if kind in ("scalar", "cin", "out", "n") else f"a{j}")
    return ", ".join(names)


def _declaration_comment(k) -> str:
    if isinstance(k, RowKernel):
        return f"// {k.name}: hand-written in {k.source}"
    if isinstance(k, Update):
        steps = "; ".join(f"{t} = {e}" for t, e in k.body)
        over = f" over the tensors of ({', '.join(k.params)})" if k.multi_tensor else ""
        return f"// {k.name}({', '.join(k.arguments)}){over}: {steps}"
    lets = "".join(f"{n} = {e}; " for n, e in k.lets)
    outs = ", ".join(k.exprs)
    return f"// {k.name}({', '.join(k.arguments)}) = {lets}{outs}"


def _update_statements(k, names) -> list[str]:
    """An update's statements in C, in order: a name the body binds first is declared
    (the parameters are, by the code before)."""
    declared, lines = set(k.params), []
    for target, expr in k.body:
        c_expr = expr_to_c(expr, names)
        lines.append(f"        {target} = {c_expr};" if target in declared else
                     f"        C {target} = {c_expr};")
        declared.add(target)
    return lines


def _multi_tensor_source(k) -> str:
    """An update over many tensors in one launch: each thread walks the concatenation
    of the tensors (``offsets``), taking up the next tensor's arrays (``pointers``) and
    scalars (its row; a nonzero skip column leaves the tensor as it is) as its index
    passes into it. Indices only grow along a thread's loop, so the walk is linear."""
    names = set(k.params) | set(k.scalars) | {t for t, _ in k.body}
    width = len(k.params)
    lines = [
        _declaration_comment(k),
        "template <typename T, typename C>",
        f"__device__ __forceinline__ void {k.name}({_c_params(k, 'T', 'C')}) {{",
        "    const long long stride = (long long)blockDim.x * gridDim.x;",
        "    long long t = -1, begin = 0, end = 0;",
        "    bool skip = false;",
        *[f"    C {s} = C(0);" for s in k.scalars],
        *[f"    T* a{j} = nullptr;" for j in range(width)],
        "    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < n; "
        "j += stride) {",
        "        if (j >= end) {  // into the next tensor (or one further: empty ones)",
        "            do { ++t; } while (offsets[t + 1] <= j);",
        "            begin = offsets[t];",
        "            end = offsets[t + 1];",
        f"            const C* row = scalars + t * {ROW_WIDTH};",
        f"            skip = load(row[{SKIP_COLUMN}]) != C(0);",
        *[f"            {s} = load(row[{j}]);" for j, s in enumerate(k.scalars)],
        *[f"            a{j} = (T*)pointers[t * {width} + {j}];" for j in range(width)],
        "        }",
        "        if (skip) continue;  // a step GradScaler skipped",
        "        const long long i = j - begin;",
        *[f"        C {p} = load(a{j}[i]);" for j, p in enumerate(k.params)],
    ]
    lines += _update_statements(k, names)
    lines += [f"        a{j}[i] = store<T>({p});" for j, p in enumerate(k.params)
              if p in k.writes]
    lines += ["    }", "}"]
    return "\n".join(lines)


def _kernel_source(k) -> str:
    if getattr(k, "multi_tensor", False):
        return _multi_tensor_source(k)
    sig = signature(k)
    names = set(k.arguments) | set(k.scalars) | (
        {t for t, _ in k.body} if isinstance(k, Update) else {n for n, _ in k.lets})
    body = []
    for j, (kind, name) in enumerate(sig):
        if kind in ("in", "inout") and isinstance(k, Update):  # the body may rebind it
            body.append(f"        C {name} = load(a{j}[i]);")
        elif kind == "in":
            body.append(f"        const C {name} = load(a{j}[i & m{j + 1}]);")
        elif kind == "mask":
            body.append(f"        const bool {name} = a{j}[i & m{j + 1}];")
    if isinstance(k, Update):
        body += _update_statements(k, names)
        for j, (kind, name) in enumerate(sig):
            if kind == "inout":
                body.append(f"        a{j}[i] = store<T>({name});")
    else:
        for name, expr in k.lets:
            body.append(f"        const C {name} = {expr_to_c(expr, names)};")
        for j, expr in enumerate(k.exprs):
            body.append(f"        out{j}[i] = store<T>({expr_to_c(expr, names)});")
    # A stride is 1 or 0 (an input of one element, broadcast): element i of input j is
    # a{j}[i & m{j}], m{j} all ones or zero, rather than a 64-bit product per element.
    masks = [f"    const I m{j} = (I)0 - (I)a{j};" for j, (kind, _) in enumerate(sig)
             if kind == "stride"]
    if getattr(k, "device_scalars", False):  # the scalars, read once from device memory
        masks += [f"    if (load(scalars[{SKIP_COLUMN}]) != C(0)) return;  // a skipped step"]
        masks += [f"    const C {s} = load(scalars[{j}]);" for j, s in enumerate(k.scalars)]
    params = _c_params(k, "T", "C")
    loop_params = params.rsplit("long long n", 1)[0] + "I n"
    lines = [
        _declaration_comment(k),
        "template <typename T, typename C, typename I>",
        f"__device__ __forceinline__ void {k.name}_loop({loop_params}) {{",
        "    const I stride = (I)blockDim.x * gridDim.x;",
        *masks,
        "    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {",
        *body,
        "    }",
        "}",
        "",
        "// 32-bit indices where n allows (cheaper address arithmetic); i + stride stays",
        "// below 2^32 there, since n < 2^31 and stride < 2^31",
        "template <typename T, typename C>",
        f"__device__ __forceinline__ void {k.name}({params}) {{",
        "    if (n < 2147483648LL) {",
        f"        {k.name}_loop<T, C, unsigned int>({_c_args(k).rsplit('n', 1)[0]}"
        "(unsigned int)n);",
        "    } else {",
        f"        {k.name}_loop<T, C, long long>({_c_args(k)});",
        "    }",
        "}",
    ]
    return "\n".join(lines)


def _entry_name(k, dtype: str) -> str:
    return f"{k.name}_{dtype}"


def generate(kernels: dict | None = None) -> str:
    """The CUDA C source of ``kernels`` (default: :func:`all_kernels`)."""
    kernels = all_kernels() if kernels is None else kernels
    parts = [_HEADER, "namespace gradcore {\n",
             "\n\n".join(_kernel_source(k) for k in kernels.values()
                          if not isinstance(k, RowKernel)),
             "\n}  // namespace gradcore\n"]
    for dtype, (t, c) in DTYPES.items():
        parts.append(f"\n// ---- {dtype}: stored as {t}, computed in {c}\n"
                     f"#ifndef GRADCORE_NO_{dtype}\n")
        for k in kernels.values():
            comment = _declaration_comment(k) + "\n" if isinstance(k, RowKernel) else ""
            parts.append(f'{comment}extern "C" __global__ void {_entry_name(k, dtype)}('
                         f"{_c_params(k, t, c)}) {{\n"
                         f"    gradcore::{k.name}<{t}, {c}>({_c_args(k)});\n}}\n")
        parts.append(f"#endif  // GRADCORE_NO_{dtype}\n")
    return "".join(parts)


def host_entry_source(kernels: dict | None = None) -> str:
    """A host C++ file exposing ``<name>_<dtype>_launch(args, grid, block)`` for every
    kernel of the generated source. ``args[j]`` points at the value of parameter ``j``,
    as ``cuLaunchKernel``'s ``kernelParams`` do; the kernel runs over a ``grid`` x
    ``block`` launch with the emulated index variables."""
    kernels = all_kernels() if kernels is None else kernels
    out = ["// Host entry points for the generated kernels (generated, not committed).",
           "#include \"host_emulation.h\"", ""]
    for dtype, (t, c) in DTYPES.items():
        out.append(f"#ifndef GRADCORE_NO_{dtype}")
        for k in kernels.values():
            name = _entry_name(k, dtype)
            launcher = "launch_cooperative" if getattr(k, "cooperative", False) else "launch"
            types = [_CTYPES[kind].format(t=t, c=c) for kind, _ in signature(k)]
            args = ", ".join(f"*({ty}*)args[{j}]" for j, ty in enumerate(types))
            out += [
                f'extern "C" void {name}({_c_params(k, t, c)});',
                f'extern "C" void {name}_launch(void** args, int grid, int block) {{',
                f"    gradcore_host::{launcher}(grid, block, [&] {{ {name}({args}); }});",
                "}",
            ]
        out.append(f"#endif  // GRADCORE_NO_{dtype}")
    return "\n".join(out) + "\n"



_SCALAR_TYPES = {"float": np.float32, "double": np.float64}


def entry(name: str) -> tuple[object, str]:
    """The kernel and dtype of an entry point name such as ``tanh_backward_float32``."""
    base, _, dtype = name.rpartition("_")
    k = all_kernels().get(base)
    if k is None or dtype not in DTYPES:
        raise KeyError(f"no kernel entry point {name!r}")
    return k, dtype


def check_arguments(name: str, values) -> None:
    """Check ``values`` against entry point ``name``'s C parameters, as host arrays and
    NumPy scalars: contiguous arrays of the storage dtype (bool for masks), ``np.int64``
    for strides and sizes, the compute type's NumPy scalar for scalars. CuPy passes a
    Python float as a double and a Python int as a 64-bit integer whatever the kernel
    declares, so a wrong type here would be a silently wrong result on a GPU."""
    k, dtype = entry(name)
    sig = signature(k)
    if len(values) != len(sig):
        raise TypeError(f"{name} takes {len(sig)} arguments "
                        f"({', '.join(n for _, n in sig)}), got {len(values)}")
    compute = DTYPES[dtype][1]
    for (kind, pname), v in zip(sig, values):
        if kind in _ARRAY_KINDS:
            want = _ARRAY_KINDS[kind]
            want = np.dtype(dtype if want is None else
                            _SCALAR_TYPES[compute] if want == "compute" else want)
            ok = isinstance(v, np.ndarray) and v.dtype == want and v.flags.c_contiguous
            what = f"a C-contiguous {want} array"
        elif kind == "scalar":
            ok = type(v) is _SCALAR_TYPES[compute]
            what = f"np.{_SCALAR_TYPES[compute].__name__}"
        else:
            ok = type(v) is np.int64
            what = "np.int64"
        if not ok:
            got = (f"{type(v).__name__} {getattr(v, 'dtype', '')}").strip()
            raise TypeError(f"{name}: argument {pname!r} must be {what}, got {got}")
        if kind in ("inout", "out", "cout", "index_out") and not v.flags.writeable:
            raise ValueError(f"{name}: argument {pname!r} is read-only")


_ONE = np.int64(1)
_BOOL = np.dtype(bool)
_DTYPE_NAMES = {np.dtype(name): name for name in DTYPES}


def dtype_name(dtype) -> str:
    """``dtype.name`` by a dict lookup for the kernels' dtypes (the property is slow)."""
    return _DTYPE_NAMES.get(dtype) or np.dtype(dtype).name


def _same_shape_arguments(k, args, xp):
    """:func:`kernel_arguments` for the common case, in one pass with no copies: a
    pointwise kernel whose params are C-contiguous arrays of one shape and of one
    storage dtype (bool for masks), the first a value. None otherwise."""
    params = k.params
    if len(args) != len(params) + len(k.scalars):
        return None
    first = args[0]
    dtype = getattr(first, "dtype", None)
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        return None
    shape = first.shape
    masks = k.masks
    values = []
    for p, a in zip(params, args):
        if getattr(a, "shape", None) != shape or a.dtype != (_BOOL if p in masks else dtype) \
                or not a.flags.c_contiguous:
            return None
        values += (a, _ONE)
    if k.scalars:
        compute = _SCALAR_TYPES[DTYPES[name][1]]
        values += [compute(v) for v in args[len(params):]]
    outs = tuple(xp.empty(shape, dtype=dtype) for _ in k.exprs)
    n = first.size
    return _entry_name(k, name), values + list(outs) + [np.int64(n)], outs, n


def kernel_arguments(k, args, xp=np, out=None, constants=None):
    """The argument values of kernel ``k`` for the inputs ``args`` (arrays of ``xp`` or
    numbers for the params, numbers for the scalars), with the outputs they need.

    Pointwise kernels: the inputs broadcast to one shape; each input that holds a single
    element is passed as it is with stride 0, any other is made a contiguous array of
    the common dtype (a copy only where it is broadcast, strided or of another dtype).
    Returns ``(entry name, values, outputs, n)``. Updates: every array is the same
    contiguous array of one dtype, updated in place; ``outputs`` is empty.
    ``constants`` (a dict) keeps the one-element arrays made for numbers, by value.
    """
    arrays, scalars = args[:len(k.params)], args[len(k.params):]
    if len(scalars) != len(k.arguments) - len(k.params):
        raise TypeError(f"{k.name} takes {len(k.arguments)} arguments "
                        f"({', '.join(k.arguments)}), got {len(args)}")
    masks = getattr(k, "masks", ())
    typed = [a for p, a in zip(k.params, arrays) if p not in masks and hasattr(a, "dtype")]
    if not typed:
        raise TypeError(f"{k.name}: no array among the arguments")
    dtype = typed[0].dtype if isinstance(k, Update) else \
        np.result_type(*(a.dtype for a in typed))
    name = _DTYPE_NAMES.get(dtype)  # (dtype.name is a slow property)
    if name is None:
        raise TypeError(f"{k.name}: no kernel for dtype {dtype}")
    compute = _SCALAR_TYPES[DTYPES[name][1]]
    values = []
    if isinstance(k, Update):
        n = typed[0].size
        shape = typed[0].shape
        for p, a in zip(k.params, arrays):
            if getattr(a, "dtype", None) != dtype or a.shape != shape or \
                    not a.flags.c_contiguous:
                raise ValueError(f"{k.name}: {p} must be a contiguous {dtype} array of "
                                 f"shape {shape}, got {getattr(a, 'dtype', type(a).__name__)} "
                                 f"{getattr(a, 'shape', '')}")
            values.append(a)
        if k.device_scalars:  # one array of the compute type, in device memory
            (row,) = scalars
            if getattr(row, "dtype", None) != compute or row.size < ROW_WIDTH or \
                    not row.flags.c_contiguous:
                raise ValueError(f"{k.name}: scalars must be a contiguous {compute.__name__} "
                                 f"array of {ROW_WIDTH} values (its scalars, then a skip flag "
                                 f"at {SKIP_COLUMN})")
            values.append(row)
        else:
            values += [compute(v) for v in scalars]
        return _entry_name(k, name), values + [np.int64(n)], (), n
    shape = np.broadcast_shapes(*(getattr(a, "shape", ()) for a in arrays))
    n = int(np.prod(shape, dtype=np.int64))
    for p, a in zip(k.params, arrays):
        want = np.dtype(bool) if p in masks else dtype
        if not hasattr(a, "shape") and constants is not None:
            # a number (pow's exponent, clamp's bounds): one element on the device, made
            # once per value and dtype rather than copied from the host at every call
            key = (float(a), want.str)
            c = constants.get(key)
            if c is None:
                if len(constants) >= 256:
                    constants.clear()
                c = constants[key] = xp.full((1,), a, dtype=want)
            values += [c, np.int64(0)]
            continue
        a = xp.asarray(a)
        if a.size == 1 and n != 1:
            a, stride = xp.ascontiguousarray(a.reshape(1).astype(want, copy=False)), 0
        else:
            a, stride = xp.ascontiguousarray(xp.broadcast_to(a, shape), dtype=want), 1
        values += [a, np.int64(stride)]
    values += [compute(v) for v in scalars]
    if out is None:
        outs = tuple(xp.empty(shape, dtype=dtype) for _ in k.exprs)
    else:
        outs = out if isinstance(out, tuple) else (out,)
        for o in outs:
            if o.shape != shape or o.dtype != dtype or not o.flags.c_contiguous:
                raise ValueError(f"out must be a contiguous {dtype} array of shape {shape}")
    return _entry_name(k, name), values + list(outs) + [np.int64(n)], outs, n


# ----------------------------------------------------------------------------------
# command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gradcore.kernels",
        description=f"Generate kernels/{GENERATED} from the declarations in gradcore/kernels/.")
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
        path = Path(__file__).resolve().parents[2] / "kernels" / GENERATED
    if args.write:
        path.write_text(source)
        print(f"wrote {path}")
        return 0
    if not path.is_file() or path.read_text() != source:
        print(f"{path} is out of date with the declarations in gradcore/kernels/; run "
              "`python -m gradcore.kernels --write`", file=sys.stderr)
        return 1
    print(f"{path} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())


