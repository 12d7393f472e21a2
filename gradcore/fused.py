"""Fused pointwise backward kernels, each declared once.

A kernel is a name, its parameters and one expression written in the common subset
of C and Python (arithmetic, comparisons, and the functions ``where``, ``exp``,
``log``, ``sqrt``, ``sin``, ``cos``, ``tanh``, ``sign``, ``pow``).  From that one
expression come

* the NumPy twin, attached to the CPU array namespace (``math.tanh_backward``);
* the differentiable composite used when ``create_graph=True``
  (``tensor_math.tanh_backward``), so second derivatives come for free;
* later, the body of the CUDA elementwise kernel on GPUs.

A kernel may also name a hand-written CPU twin (``cpu=``) that avoids temporaries;
the tests check it against the expression on the same inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Kernel", "KERNELS", "attach", "composite"]


@dataclass(frozen=True)
class Kernel:
    name: str
    params: tuple[str, ...]
    expr: str
    cpu: object = None  # optional faster NumPy implementation with the same meaning
    _code: object = field(default=None, compare=False, repr=False)

    def compile(self, namespace: dict):
        """The expression as a Python function of ``params`` over ``namespace``."""
        src = f"lambda {', '.join(self.params)}: {self.expr}"
        # __name__ attributes NumPy's floating-point warnings to gradcore (see __init__)
        scope = dict(namespace, __name__=__name__)
        return eval(compile(src, f"<kernel {self.name}>", "eval"), scope)


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
    # g * (y > 0): a multiply by the mask is ~10x faster in NumPy than where() or a
    # masked copy; it differs from where(y > 0, g, 0) only where g is inf or NaN.
    return np.multiply(g, y > 0)


def _relu_backward_inplace_cpu(g, y):
    return np.multiply(g, y > 0, out=g)


# In-place variants for gradients the engine owns (``Node.apply_owned``): same math as
# the kernel of the same name without the trailing underscore (tests compare them).
INPLACE_CPU = {
    "tanh_backward_": _tanh_backward_inplace_cpu,
    "sigmoid_backward_": _sigmoid_backward_inplace_cpu,
    "relu_backward_": _relu_backward_inplace_cpu,
    # ... and variants that may also overwrite the saved output ``y`` (its last use)
    "tanh_backward__": _tanh_backward_consume_cpu,
    "sigmoid_backward__": _sigmoid_backward_consume_cpu,
}

KERNELS: dict[str, Kernel] = {k.name: k for k in [
    Kernel("tanh_backward", ("g", "y"), "g * (1 - y * y)", cpu=_tanh_backward_cpu),
    Kernel("sigmoid_backward", ("g", "y"), "g * (y * (1 - y))", cpu=_sigmoid_backward_cpu),
    Kernel("relu_backward", ("g", "y"), "where(y > 0, g, 0)", cpu=_relu_backward_cpu),
    Kernel("sqrt_backward", ("g", "y"), "g / (2 * y)"),
    Kernel("rsqrt_backward", ("g", "y"), "-0.5 * g * (y * y * y)"),
    Kernel("reciprocal_backward", ("g", "y"), "-g * (y * y)"),
    Kernel("abs_backward", ("g", "x"), "g * sign(x)"),
    Kernel("pow_backward", ("g", "x", "e"), "where(e == 0, 0 * g, g * e * pow(x, e - 1))"),
    Kernel("clamp_backward", ("g", "x", "lo", "hi"), "where((x >= lo) & (x <= hi), g, 0)"),
    Kernel("maximum_backward_a", ("g", "a", "b"),
           "where(a > b, g, where(a == b, 0.5 * g, 0))"),
    Kernel("maximum_backward_b", ("g", "a", "b"),
           "where(b > a, g, where(a == b, 0.5 * g, 0))"),
    Kernel("div_backward_b", ("g", "a", "b"), "-g * a / (b * b)"),
]}

_NUMPY_NAMES = {
    "where": np.where, "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "sin": np.sin,
    "cos": np.cos, "tanh": np.tanh, "sign": np.sign, "pow": np.power,
}


def attach(math) -> None:
    """Give an array namespace its kernels (the NumPy twins, for now, on every device)."""
    names = {k: getattr(math.xp, k) for k in _NUMPY_NAMES if k != "pow"}
    names["pow"] = math.xp.power
    device_kernels = None
    if math.xp is not np:
        from . import kernels_cuda  # the generated CUDA kernels, opt-in for now

        if kernels_cuda.device_kernels_enabled():
            device_kernels = kernels_cuda
    for k in KERNELS.values():
        if device_kernels is not None:
            fn = device_kernels.device_kernel(math, k)
        elif k.cpu is not None and math.xp is np:
            fn = k.cpu
        else:
            fn = k.compile(names)
        setattr(math, k.name, fn)
    for name, fn in INPLACE_CPU.items():
        # elsewhere (until the CUDA kernels land) the out-of-place kernel stands in
        setattr(math, name, fn if math.xp is np else getattr(math, name.rstrip("_")))


def composite(namespace: dict) -> dict:
    """The kernels as differentiable functions over ``namespace`` (tensor ops)."""
    return {k.name: k.compile(namespace) for k in KERNELS.values()}
