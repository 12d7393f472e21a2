"""Fused pointwise backward kernels, each declared once.

A kernel is a name, its parameters and one expression (or one per output) written in
the common subset of C and Python (arithmetic, comparisons, and the functions
``where``, ``exp``, ``log``, ``sqrt``, ``sin``, ``cos``, ``tanh``, ``sign``, ``pow``,
``erf``, ``maximum``). From that one declaration come

* the NumPy twin, what the CPU array namespace answers for ``math.tanh_backward``
  (the registry, :mod:`gradcore.kernels`);
* the differentiable composite used when ``create_graph=True``
  (``tensor_math.tanh_backward``), so second derivatives come for free;
* the body of the CUDA kernel (:mod:`.source`), one launch per call on a
  CUDA device.

On the CPU the twin is generated from the expression (:mod:`.twin`: ufunc calls that
reuse their temporaries and write into ``out=``); a kernel may instead name a
hand-written CPU twin (``cpu=``, the mask-multiplying ones below, which the ops'
declarations name); the tests check it against the expression on the same inputs.

An op's kernels are declared beside the op, in its stanza of ``gradcore/ops/<family>.py``
(``kernels.declare``); :data:`KERNELS` here holds them all once the ops are imported,
and the few that serve no single op. :class:`Update` declares
the in-place optimizer steps the same way (:mod:`.updates`). See
docs/kernels.md.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from ..backend import cpu
from . import twin
from .spec import Kernel

__all__ = ["KERNELS", "INPLACE_CPU", "numpy_names", "composite", "sliced", "CHUNK",
           "relu_forward_cpu", "relu_backward_cpu", "clamp_backward_cpu", "maximum_backward_a_cpu",
           "maximum_backward_b_cpu", "where_backward_cpu", "where_backward_a_cpu",
           "where_backward_b_cpu"]


def _fits(out, g, *others):
    """Whether ``out`` can take the result of a mask twin over ``g``: g's shape and dtype,
    which the other arrays share (no broadcasting)."""
    return type(out) is np.ndarray and type(g) is np.ndarray and out.shape == g.shape and \
        out.dtype == g.dtype and all(getattr(o, "shape", None) == g.shape for o in others)


def relu_forward_cpu(x, out=None):
    # one ufunc: NumPy's maximum(0, x) gives its second operand where the two are equal
    # (-0.0 stays -0.0) and NaN where x is NaN, as where(x < 0, 0, x)
    return np.maximum(0, x) if out is None else np.maximum(0, x, out=out)


def relu_backward_cpu(g, y, out=None):
    # g * (y != 0): a multiply by the mask is ~10x faster in NumPy than where() or a
    # masked copy; it differs from where(y != 0, g, 0) only where g is inf or NaN.
    if out is not None and _fits(out, g, y):
        return _relu_backward_into(out, g, y)
    return np.multiply(g, y != 0)


# The twins below multiply by a mask where the expression selects with where(): with a
# random mask NumPy's where() runs about five times slower than a multiply (branch
# mispredictions). Like relu's, they differ from the expression only where g is inf or
# NaN (0 * inf is NaN, not 0), and may give -0.0 where it gives 0.0.
def maximum_backward_a_cpu(g, a, b, out=None):  # (out: new arrays here)
    w = np.multiply(a == b, 0.5, dtype=np.result_type(g, a, b))  # ties split the gradient
    wins = np.less_equal(a, b)  # a wins where not a <= b: a > b, or a NaN on either side
    w += np.logical_not(wins, out=wins) if type(wins) is np.ndarray else not wins
    w *= g
    return w


def maximum_backward_b_cpu(g, a, b, out=None):
    return maximum_backward_a_cpu(g, b, a)


def where_backward_cpu(g, c, out=None):
    return g * c, g * np.logical_not(c)


def where_backward_a_cpu(g, c, out=None):
    return g * c


def where_backward_b_cpu(g, c, out=None):
    return g * np.logical_not(c)


def clamp_backward_cpu(g, x, lo, hi, out=None):
    return g * ((x >= lo) & (x <= hi))


# NumPy makes one pass over memory per operation. Over arrays of several MB each pass
# streams them from main memory again; a slice at a time, each slice small enough to
# stay in the CPU's cache across a kernel's few operations, gives the very same results
# (the operations are elementwise) two to three times faster. The optimizer updates of
# fused_optim go slice by slice too.
CHUNK = 65536  # elements: 256 KiB a float32 array


def sliced(fn, *bound):
    """``fn(*bound, *arrays, **kwargs)``, an elementwise in-place kernel (the twins
    below, the optimizer updates of fused_optim), run a ``CHUNK`` slice at a time when
    its arrays (``None`` allowed after the first) are large, of one shape and
    contiguous; otherwise over the whole arrays, with the same results."""
    def run(*arrays, **kwargs):
        first = arrays[0]
        n = first.size
        if n < 4 * CHUNK or not all(a is None or (type(a) is np.ndarray and a.shape ==
                                                  first.shape and a.flags.c_contiguous)
                                    for a in arrays):
            return fn(*bound, *arrays, **kwargs)
        flat = [None if a is None else a.reshape(-1) for a in arrays]
        for i in range(0, n, CHUNK):
            result = fn(*bound, *[None if a is None else a[i:i + CHUNK] for a in flat],
                        **kwargs)
        return None if result is None else first  # (an update returns None)

    functools.update_wrapper(run, fn)
    # fn's signature without the bound arguments, as a partial shows it (gc.profile
    # reads the names of the arrays an update writes from it)
    sig = inspect.signature(fn)
    run.__signature__ = sig.replace(parameters=list(sig.parameters.values())[len(bound):])
    run.whole = functools.partial(fn, *bound)  # over the whole arrays (the tests compare)
    return run


# relu's gradient written into an array given (the engine's own gradient), a slice at a
# time on large arrays
_relu_backward_into = sliced(lambda out, g, y: np.multiply(g, y != 0, out=out))


# Forwards that keep a value for their backward where that pays, by the name the ops
# call: (the kernel giving the value kept as its last output, the kernel without it),
# results ``(out, kept)``, ``kept`` None where it does not pay: a device with kernels,
# whose backward recomputes Phi(x) in its one launch. On the CPU an erf costs seven
# times the copy (4M float32: a backward of 118 ms recomputing it, 22 ms keeping it).
# (Both kernels are declared with gelu, in gradcore/ops/activation.py.)
KEEPING = {"gelu_forward_keep": ("gelu_forward_cdf", "gelu_forward")}

# Every pointwise kernel by name, in the order declared. An op's kernels are declared in
# its stanza (gradcore/ops/<family>.py, ``kernels.declare(Kernel(...))``), which adds
# them here when its module is imported; only kernels that serve no single op are
# declared here.
KERNELS: dict[str, Kernel] = {}

_NUMPY_NAMES = {
    "where": np.where, "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "sin": np.sin,
    "cos": np.cos, "tanh": np.tanh, "sign": None, "pow": np.power,
    "maximum": np.maximum,
}


def numpy_names() -> dict:
    """The functions kernel expressions may call, over NumPy (erf from the backend)."""
    return namespace_names(cpu.math)


def where_of(xp):
    """``xp.where``, taking a condition that is a Python number too (one on scalars only,
    ``where(e == 0, ...)`` with ``e`` a number): CuPy's takes arrays and NumPy scalars
    only (it calls ``condition.astype``); such a condition becomes a 0-d array there,
    filled on the device (no copy from the host), so the result broadcasts as NumPy's."""
    if xp is np:
        return np.where
    where, full = xp.where, xp.full

    def where_taking_numbers(condition, x, y):
        if isinstance(condition, (bool, int, float)):
            condition = full((), condition, dtype=bool)
        return where(condition, x, y)

    return where_taking_numbers


def namespace_names(math) -> dict:
    """The functions kernel expressions may call, over an array namespace: its array
    module's, with the namespace's own ``erf`` and PyTorch's ``sign`` (0 at NaN)."""
    names = {k: getattr(math.xp, k) for k in _NUMPY_NAMES if k != "pow"}
    names["where"] = where_of(math.xp)
    names["pow"] = math.xp.power
    names["erf"] = math.erf
    names["sign"] = math.sign
    return names



def composite(namespace: dict) -> dict:
    """The kernels as differentiable functions over ``namespace`` (tensor ops); they
    take ``out=`` and ignore it, as rules pass it through."""
    return {k.name: twin.expression(k, namespace) for k in KERNELS.values()}


# Which array a generated twin may overwrite is decided above the kernels, by the
# elision of gradcore.ops._elide (a saved output the engine offers as dead); the ops hand
# its functions down when they are imported (set_reuse), as they hand the engine its
# differentiable namespace.
_reuse: dict = {"dead_argument": lambda *arrays: -1, "note": lambda: None,
                "min_bytes": 1 << 62}  # (no reuse until the ops say how)


def set_reuse(dead_argument, note, min_bytes: int) -> None:
    """Let generated twins reuse the memory ``dead_argument(*arrays)`` names (an index,
    or -1), calling ``note()`` when they do, for arrays of ``min_bytes`` or more."""
    _reuse.update(dead_argument=dead_argument, note=note, min_bytes=min_bytes)
    cpu_twin.cache_clear()


@functools.cache
def cpu_twin(name: str, whole: bool = False):
    """Kernel ``name`` over NumPy, taking ``out=``: its hand twin (``cpu=``), else the
    twin generated from its expression (:mod:`.twin`), else the expression. ``whole``:
    without the slice-at-a-time loop (the tests compare the two)."""
    k = KERNELS[name]
    if k.cpu is not None:
        return k.cpu.__wrapped__ if whole and hasattr(k.cpu, "__wrapped__") else k.cpu
    fn = twin.build(k, numpy_names(), None if whole else CHUNK, **_reuse)
    return fn or twin.expression(k, numpy_names())


def _into_first(name):
    """Kernel ``name`` written into its first argument (the gradient), in place."""
    def run(g, *args):
        return cpu_twin(name)(g, *args, out=g)

    def whole(g, *args):
        if name == "relu_backward":
            return _relu_backward_into.whole(g, g, *args)
        return cpu_twin(name, whole=True)(g, *args, out=g)

    run.__name__ = f"{name}_"
    run.whole = whole
    return run


# In-place forms (``F.tanh_backward_(g, y)``: ``g`` becomes the result), the kernels with
# ``out=`` their gradient; the tests compare their slice-at-a-time and whole-array runs.
INPLACE_CPU = {f"{name}_": _into_first(name)
               for name in ("tanh_backward", "sigmoid_backward", "relu_backward")}
