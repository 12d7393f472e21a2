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

A kernel may also name a hand-written CPU twin (``cpu=``) that avoids temporaries;
the tests check it against the expression on the same inputs. :class:`Update` declares
the in-place optimizer steps the same way (:mod:`.updates`). See
docs/kernels.md.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from ..backend import cpu
from .spec import Kernel

__all__ = ["KERNELS", "INPLACE_CPU", "numpy_names", "composite", "sliced", "CHUNK"]


def _tanh_backward_cpu(g, y):
    out = np.multiply(y, y)
    # 0-d inputs give NumPy scalars, which out= rejects; a broadcast g needs a new array
    if type(out) is not np.ndarray or np.shape(g) != out.shape:
        return g * (1 - out)
    np.subtract(1, out, out=out)
    np.multiply(out, g, out=out)
    return out


def _sigmoid_backward_cpu(g, y):
    out = np.subtract(1, y)
    if type(out) is not np.ndarray or np.shape(g) != out.shape:
        return g * (y * out)
    np.multiply(out, y, out=out)
    np.multiply(out, g, out=out)
    return out


def _tanh_backward_inplace_cpu(g, y):
    """``g *= 1 - y * y`` in place (the engine owns ``g``): one temporary, not three."""
    tmp = np.multiply(y, y)
    np.subtract(1, tmp, out=tmp)
    np.multiply(g, tmp, out=g)
    return g


def _sigmoid_backward_inplace_cpu(g, y):
    tmp = np.subtract(1, y)
    np.multiply(tmp, y, out=tmp)
    np.multiply(g, tmp, out=g)
    return g


def _tanh_backward_consume_cpu(g, y):
    """``g *= 1 - y * y`` using ``y``'s memory for the temporary (``y`` is dead after)."""
    np.multiply(y, y, out=y)
    np.subtract(1, y, out=y)
    np.multiply(g, y, out=g)
    return g


def _sigmoid_backward_consume_cpu(g, y):
    np.multiply(g, y, out=g)
    np.subtract(1, y, out=y)
    np.multiply(g, y, out=g)
    return g


def _relu_backward_cpu(g, y):
    # g * (y != 0): a multiply by the mask is ~10x faster in NumPy than where() or a
    # masked copy; it differs from where(y != 0, g, 0) only where g is inf or NaN.
    return np.multiply(g, y != 0)


# The twins below multiply by a mask where the expression selects with where(): with a
# random mask NumPy's where() runs about five times slower than a multiply (branch
# mispredictions). Like relu's, they differ from the expression only where g is inf or
# NaN (0 * inf is NaN, not 0), and may give -0.0 where it gives 0.0.
def _maximum_backward_a_cpu(g, a, b):
    w = np.multiply(a == b, 0.5, dtype=np.result_type(g, a, b))  # ties split the gradient
    wins = np.less_equal(a, b)  # a wins where not a <= b: a > b, or a NaN on either side
    w += np.logical_not(wins, out=wins) if type(wins) is np.ndarray else not wins
    w *= g
    return w


def _maximum_backward_b_cpu(g, a, b):
    return _maximum_backward_a_cpu(g, b, a)


def _where_backward_cpu(g, c):
    return g * c, g * np.logical_not(c)


def _clamp_backward_cpu(g, x, lo, hi):
    return g * ((x >= lo) & (x <= hi))


def _relu_backward_inplace_cpu(g, y):
    return np.multiply(g, y != 0, out=g)


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


# In-place variants for gradients the engine owns (``Node.apply_owned``): same math as
# the kernel of the same name without the trailing underscore (tests compare them).
INPLACE_CPU = {name: sliced(fn) for name, fn in {
    "tanh_backward_": _tanh_backward_inplace_cpu,
    "sigmoid_backward_": _sigmoid_backward_inplace_cpu,
    "relu_backward_": _relu_backward_inplace_cpu,
    # ... and variants that may also overwrite the saved output ``y`` (its last use)
    "tanh_backward__": _tanh_backward_consume_cpu,
    "sigmoid_backward__": _sigmoid_backward_consume_cpu,
}.items()}

def _erf_backward_cpu(g, x):
    """erf_backward with one new array, not three (a 1024 x 1024 float32 backward:
    2.3 ms, against 3.2 ms for the expression's twin)."""
    t = np.multiply(x, x)
    if type(t) is not np.ndarray or np.shape(g) != t.shape:
        return g * (np.exp(-t) * 1.1283791670955126)
    np.negative(t, out=t)
    np.exp(t, out=t)
    t *= 1.1283791670955126
    t *= g
    return t


# gelu's pieces, each written once (forward and backward use them)
_GELU_KAPPA = 0.044715
_GELU_BETA = 0.7978845608028654  # sqrt(2 / pi)
_GELU_CDF = "(erf(x * 0.7071067811865476) + 1) * 0.5"  # Phi(x)
_GELU_PDF = "exp(x * x * -0.5) * 0.3989422804014327"  # the normal density
_GELU_GRAD = "g * (cdf + x * pdf)"  # over the locals cdf and pdf
# tanh(sqrt(2 / pi) * (x + 0.044715 x^3)), over the local x_sq = x * x
_GELU_TANH = f"tanh((x + x_sq * x * {_GELU_KAPPA!r}) * {_GELU_BETA!r})"

# Forwards that keep a value for their backward where that pays, by the name the ops
# call: (the kernel giving the value kept as its last output, the kernel without it),
# results ``(out, kept)``, ``kept`` None where it does not pay: a device with kernels,
# whose backward recomputes Phi(x) in its one launch. On the CPU an erf costs seven
# times the copy (4M float32: a backward of 118 ms recomputing it, 22 ms keeping it).
KEEPING = {"gelu_forward_keep": ("gelu_forward_cdf", "gelu_forward")}

KERNELS: dict[str, Kernel] = {k.name: k for k in [
    Kernel("tanh_backward", ("g", "y"), "g * (1 - y * y)", cpu=_tanh_backward_cpu),
    Kernel("sigmoid_backward", ("g", "y"), "g * (y * (1 - y))", cpu=_sigmoid_backward_cpu),
    # y is relu's output: positive, +-0 or NaN. PyTorch's threshold_backward gives no
    # gradient where y <= 0, that is where y == 0 (NaN passes the gradient)
    Kernel("relu_backward", ("g", "y"), "where(y != 0, g, 0)", cpu=_relu_backward_cpu),
    Kernel("sqrt_backward", ("g", "y"), "g / (2 * y)"),
    Kernel("rsqrt_backward", ("g", "y"), "-0.5 * g * (y * y * y)"),
    Kernel("reciprocal_backward", ("g", "y"), "-g * (y * y)"),
    Kernel("abs_backward", ("g", "x"), "g * sign(x)"),  # PyTorch's sign: 0 at NaN
    Kernel("pow_backward", ("g", "x", "e"), "where(e == 0, 0 * g, g * e * pow(x, e - 1))"),
    Kernel("clamp_backward", ("g", "x", "lo", "hi"), "where((x >= lo) & (x <= hi), g, 0)",
           cpu=_clamp_backward_cpu),
    # PyTorch's rule: the side that is smaller gets nothing, a tie half, otherwise (a NaN
    # on either side included) the whole gradient
    Kernel("maximum_backward_a", ("g", "a", "b"),
           "where(a < b, 0, where(a == b, 0.5 * g, g))", cpu=_maximum_backward_a_cpu),
    Kernel("maximum_backward_b", ("g", "a", "b"),
           "where(b < a, 0, where(a == b, 0.5 * g, g))", cpu=_maximum_backward_b_cpu),
    Kernel("div_backward_b", ("g", "a", "b"), "-g * a / (b * b)"),
    Kernel("exp_backward", ("g", "y"), "g * y"),
    Kernel("log_backward", ("g", "x"), "g / x"),
    # both input gradients of a product or quotient in one pass over g, a and b
    Kernel("mul_backward", ("g", "a", "b"), ("g * b", "g * a")),
    Kernel("div_backward", ("g", "a", "b"), ("g / b", "-g * a / (b * b)")),
    Kernel("where_backward", ("g", "c"), ("where(c, g, 0)", "where(c, 0, g)"), masks=("c",),
           cpu=_where_backward_cpu),
    # PyTorch's formulas (GeluBackward0): cdf(x) + x * pdf(x), and the derivative of the
    # tanh approximation; float16 computed in float32 (upcast) everywhere
    Kernel("gelu_backward", ("g", "x"), _GELU_GRAD,
           lets=(("cdf", _GELU_CDF), ("pdf", _GELU_PDF)), upcast="x"),
    # ... with Phi(x) kept by the forward (gelu_forward_cdf, see KEEPING)
    Kernel("gelu_backward_cdf", ("g", "x", "cdf"), _GELU_GRAD,
           lets=(("pdf", _GELU_PDF),), upcast="x"),
    Kernel("gelu_tanh_backward", ("g", "x"), "g * (left + x * 0.5 * right * inner_d)", lets=(
        ("x_sq", "x * x"),
        ("th", _GELU_TANH),
        ("left", "(th + 1) * 0.5"),
        ("right", "1 - th * th"),
        ("inner_d", f"(x_sq * {3 * _GELU_KAPPA!r} + 1) * {_GELU_BETA!r}")), upcast="x"),
    # ... and their forwards
    Kernel("gelu_forward", ("x",), f"{_GELU_CDF} * x", upcast="x"),
    Kernel("gelu_forward_cdf", ("x",), ("cdf * x", "cdf"), lets=(("cdf", _GELU_CDF),),
           upcast="x"),
    Kernel("gelu_tanh_forward", ("x",), f"({_GELU_TANH} + 1) * 0.5 * x",
           lets=(("x_sq", "x * x"),), upcast="x"),
    # erf's derivative, 2 / sqrt(pi) * exp(-x * x)
    Kernel("erf_backward", ("g", "x"), "g * (exp(-(x * x)) * 1.1283791670955126)",
           cpu=_erf_backward_cpu, upcast="x"),
    # mse_loss: 2 * (x - y) * g, divided by the count for "mean" (scale = 2 or 2 / n)
    Kernel("mse_backward", ("g", "x", "y"), "(x - y) * (g * scale)", scalars=("scale",),
           upcast="x"),
    # nll_loss's gradient coefficients from the targets' weights for "mean": -wt / total
    # (no gradient when nothing is counted)
    Kernel("nll_coef", ("wt", "total"), "where(total != 0, -wt / total, 0)"),
]}

_NUMPY_NAMES = {
    "where": np.where, "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "sin": np.sin,
    "cos": np.cos, "tanh": np.tanh, "sign": None, "pow": np.power,
    "maximum": np.maximum,
}


def numpy_names() -> dict:
    """The functions kernel expressions may call, over NumPy (erf from the backend)."""
    return namespace_names(cpu.math)


def namespace_names(math) -> dict:
    """The functions kernel expressions may call, over an array namespace: its array
    module's, with the namespace's own ``erf`` and PyTorch's ``sign`` (0 at NaN)."""
    names = {k: getattr(math.xp, k) for k in _NUMPY_NAMES if k != "pow"}
    names["pow"] = math.xp.power
    names["erf"] = math.erf
    names["sign"] = math.sign
    return names



def composite(namespace: dict) -> dict:
    """The kernels as differentiable functions over ``namespace`` (tensor ops)."""
    return {k.name: k.compile(namespace) for k in KERNELS.values()}
