"""Pointwise ops: arithmetic, transcendental functions, comparisons, casts.

Each op is one stanza: the declaration of the kernel its backward calls, if it has one
(``declare(Kernel("tanh_backward", ("g", "y"), "g * (1 - y * y)"))``: the expression
from which the NumPy twin, the differentiable composite and the CUDA kernel come, see
:mod:`gradcore.kernels`), its backward node (the derivative rule, written once over
``F``: arrays for a plain backward, tensors when ``create_graph=True``) and its
forward, on consecutive lines.  Broadcasting is undone by the engine through the shared ``sum_to``;
an op only records its input shapes in ``node.shapes`` when they differ.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import dtypes
from ..backend import check_range, math_of
from ..kernels import Kernel, declare
from ..kernels import pointwise as _twins
from . import index as _index
from ._core import (
    TENSOR_TYPES,
    Node,
    Tensor,
    as_tensor,
    binary_operands,
    check_same_device,
    mode,
    record,
    record1,
    wrap,
)
from ._elide import MIN_BYTES, op_function, reusable
from ._export import export


def _broadcast_error(op, a, b, exc):
    """PyTorch's error for operands that do not broadcast, with both shapes; a ValueError
    of another cause (NumPy's integer power) is reported as itself."""
    sa = tuple(a.shape) if hasattr(a, "shape") else ()
    sb = tuple(b.shape) if hasattr(b, "shape") else ()
    n = max(len(sa), len(sb))
    for k in range(1, n + 1):
        da = sa[-k] if k <= len(sa) else 1
        db = sb[-k] if k <= len(sb) else 1
        if da != db and da != 1 and db != 1:
            return RuntimeError(f"The size of tensor a ({da}) must match the size of tensor b "
                                f"({db}) at non-singleton dimension {n - k} ({op} of shapes "
                                f"{sa} and {sb})")
    return RuntimeError(f"{op}: {exc}")


@op_function
def _binary(op, cls_tt, cls_ts, cls_st, fwd, a, b, save_inputs=False, save_out=False,
            float_result=False):
    """Shared body of the binary ops: promote, compute, record.

    ``cls_tt``/``cls_ts``/``cls_st`` are the backward nodes for tensor-tensor,
    tensor-scalar and scalar-tensor; ``save_inputs`` and ``save_out`` say what the
    derivative rule reads.  The first two branches are fast paths for the common
    same-dtype cases; everything else goes through PyTorch's type promotion.
    """
    if type(a) in TENSOR_TYPES:
        ad = a._data
        tb = type(b)
        if tb in TENSOR_TYPES:
            bd = b._data
            if ad.dtype is bd.dtype and type(ad) is type(bd) and type(ad) is _ndarray and \
                    (not float_result or ad.dtype.kind == "f"):
                return _finish_tt(op, cls_tt, fwd, a, b, ad, bd, save_inputs, save_out)
        elif (tb is float or tb is int) and ad.dtype.kind == "f":
            out = fwd(ad, b) if ad.nbytes < MIN_BYTES or save_inputs or \
                fwd not in _UFUNCS or (o := reusable(a, ad)) is None \
                else _UFUNCS[fwd](ad, b, out=o)
            return _finish_ts(op, cls_ts, out, a, b, save_inputs, save_out)
    x, y = binary_operands(a, b, op, float_result)
    tx = isinstance(x, Tensor)
    ty = isinstance(y, Tensor)
    if tx and ty:
        return _finish_tt(op, cls_tt, fwd, x, y, x._data, y._data, save_inputs, save_out)
    try:
        out = fwd(x._data, y) if tx else fwd(x, y._data)
    except ValueError as exc:
        raise _broadcast_error(op, x, y, exc) from None
    if tx:
        return _finish_ts(op, cls_ts, out, x, y, save_inputs, save_out)
    return _finish_ts(op, cls_st, out, y, x, save_inputs, save_out)


@op_function
def _finish_tt(op, cls, fwd, x, y, xd, yd, save_inputs, save_out):
    out = None
    if not save_inputs and (xd.nbytes >= MIN_BYTES or yd.nbytes >= MIN_BYTES) and \
            fwd in _UFUNCS:
        out = _into_temporary(fwd, x, y, xd, yd)
    if out is None:
        try:
            out = fwd(xd, yd)
        except ValueError as exc:
            raise _broadcast_error(op, x, y, exc) from None
    if not mode.enabled or not (x._rg or y._rg):
        return wrap(out)
    t = record(out, cls, x, y)
    node = t.grad_fn
    if xd.shape != yd.shape:
        node.shapes = (xd.shape, yd.shape)
    if save_inputs:
        node.save(x, y)
    if save_out:
        node.save_output(t)
    return t


@op_function
def _into_temporary(fwd, x, y, xd, yd):
    """``fwd(xd, yd)`` written into whichever operand is a temporary of the result's
    shape (see :mod:`._elide`), or None."""
    shape = xd.shape if xd.shape == yd.shape else None
    if shape is None:
        try:
            shape = math_of(xd).broadcast_shapes(xd.shape, yd.shape)
        except ValueError:
            return None  # the caller raises the broadcasting error
    o = reusable(x, xd) if xd.shape == shape else None
    if o is None and yd.shape == shape:
        o = reusable(y, yd)
    return None if o is None else _UFUNCS[fwd](xd, yd, out=o)


def _finish_ts(op, cls, out, tensor, scalar, save_inputs, save_out):
    if not (mode.enabled and tensor._rg):
        return wrap(out)
    t = record1(out, cls, tensor)
    node = t.grad_fn
    node.scalar = scalar
    if save_inputs:
        node.saved = (tensor,)
        node.versions = (tensor._version,)
    if save_out:
        node.save_output(t)
    return t


_ndarray = np.ndarray


# ---- add / sub ----------
class AddBackward0(Node):
    passes = (0, 1)

    def apply(self, F, g):
        return g, g


class AddBackward1(Node):
    passes = (0,)

    def apply(self, F, g):
        return (g,)

    def name(self):  # PyTorch wraps a Python scalar in a tensor: `x + 2` is AddBackward0
        return "AddBackward0"


@export(torch=True, method=True)
@op_function
def add(a, b, *, alpha=1):
    """``a + alpha * b`` with broadcasting."""
    if type(b) is float and type(a) in TENSOR_TYPES:  # fast path: tensor + float
        ad = a._data
        if ad.dtype.kind == "f" and alpha == 1:
            out = ad + b if ad.nbytes < MIN_BYTES or (o := reusable(a, ad)) is None \
                else np.add(ad, b, out=o)
            if not (a._rg and mode.enabled):
                return wrap(out)
            return record1(out, AddBackward1, a)
    if alpha != 1:
        b = mul(b, alpha)
    return _binary("add", AddBackward0, AddBackward1, AddBackward1, _np_add, a, b)


def _np_add(x, y):
    return x + y


class SubBackward0(Node):
    fresh_grads = True  # -g, the second output, is new
    passes = (0,)

    def apply(self, F, g):
        return g, -g


class SubBackward1(Node):
    passes = (0,)

    def apply(self, F, g):
        return (g,)

    def name(self):  # `x - 2` prints SubBackward0 in PyTorch
        return "SubBackward0"


class RsubBackward1(Node):
    def apply(self, F, g):
        return (-g,)


@export(torch=("sub", "subtract"), method=("sub", "subtract"))
@op_function
def sub(a, b, *, alpha=1):
    """``a - alpha * b`` with broadcasting."""
    if alpha != 1:
        b = mul(b, alpha)
    # (one isinstance per operand on the common path: sub is hot)
    a_t, b_t = isinstance(a, Tensor), isinstance(b, Tensor)
    a_bool = a._data.dtype.kind == "b" if a_t else isinstance(a, (bool, np.bool_))
    b_bool = b._data.dtype.kind == "b" if b_t else isinstance(b, (bool, np.bool_))
    if a_bool or b_bool:
        if a_bool and b_bool:
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                               "supported. Use the `^` or `logical_xor()` operator instead.")
        if a_bool and a_t or b_bool and b_t:
            raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not "
                               "supported. If you are trying to invert a mask, use the `~` "
                               "or `logical_not()` operator instead.")
    return _binary("sub", SubBackward0, SubBackward1, RsubBackward1, _np_sub, a, b)


def _np_sub(x, y):
    return x - y


def rsub(a, b):
    return sub(b, a)


class NegBackward0(Node):
    fresh_grads = True
    writes_into_grad = True

    def apply(self, F, g, out=None):
        return (-g if out is None else F.negative(g, out=out),)


@export(torch=("neg", "negative"), method=("neg", "negative"))
@op_function
def neg(x):
    """``-x``."""
    xd = x._data
    if xd.dtype.kind == "b":
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    out = -xd if xd.nbytes < MIN_BYTES or xd.dtype.kind not in "fi" or \
        (o := reusable(x, xd)) is None else np.negative(xd, out=o)
    if not (mode.enabled and x._rg):
        return wrap(out)
    return record(out, NegBackward0, x)


@export(torch=True, method=True)
def positive(input):  # noqa: A002
    """``+input``: ``input`` itself (bool tensors raise, as in PyTorch).

    >>> import gradcore as gc
    >>> x = gc.tensor([1, -2])
    >>> gc.positive(x) is x
    True
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"positive(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if input._data.dtype.kind == "b":
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def _times(F, g, other, out):
    """``g * other``, written into ``out`` (the engine's gradient) when the
    result has its shape and dtype; a new array otherwise."""
    if out is not None:
        shape = getattr(other, "shape", ())
        if (shape == g.shape or F.broadcast_shapes(g.shape, shape) == g.shape) and \
                getattr(other, "dtype", g.dtype) == g.dtype:
            return F.multiply(g, other, out=out)
    return g * other


# ---- mul / div ----------
# both input gradients of a product or quotient in one pass over g, a and b
declare(Kernel("mul_backward", ("g", "a", "b"), ("g * b", "g * a")))
class MulBackward0(Node):
    fresh_grads = True
    writes_into_grad = True

    def apply(self, F, g, out=None):
        a, b = self.unpack(F)
        shapes = self.shapes
        if shapes is not None:  # an operand was broadcast: reduce as we multiply
            return ((F.mul_sum_to(g, b, shapes[0]) if self.needs(0) else None),
                    (F.mul_sum_to(g, a, shapes[1]) if self.needs(1) else None))
        if self.needs(0) and self.needs(1):
            # one pass over g, a and b on a device; g * a may go into out
            return F.mul_backward(g, a, b, out=(None, out))
        return ((_times(F, g, b, out) if self.needs(0) else None),
                (_times(F, g, a, out) if self.needs(1) else None))


class MulBackward1(Node):
    fresh_grads = True
    writes_into_grad = True

    def apply(self, F, g, out=None):
        return (g * self.scalar if out is None else F.multiply(g, self.scalar, out=out),)

    def name(self):  # `x * 2` prints MulBackward0 in PyTorch
        return "MulBackward0"


@export(torch=("mul", "multiply"), method=("mul", "multiply"))
@op_function
def mul(a, b):
    """``a * b`` with broadcasting."""
    if type(b) is float and type(a) in TENSOR_TYPES:  # fast path: tensor * float
        ad = a._data
        if ad.dtype.kind == "f":
            out = ad * b if ad.nbytes < MIN_BYTES or (o := reusable(a, ad)) is None \
                else np.multiply(ad, b, out=o)
            if not (a._rg and mode.enabled):
                return wrap(out)
            t = record1(out, MulBackward1, a)
            t.grad_fn.scalar = b
            return t
    return _binary("mul", MulBackward0, MulBackward1, MulBackward1, _np_mul, a, b,
                   save_inputs=True)


def _np_mul(x, y):
    return x * y


# (float16 in float32, as PyTorch: b * b overflows float16 from |b| = 256)
declare(Kernel("div_backward", ("g", "a", "b"), ("g / b", "-g * a / (b * b)"), upcast="b"))
declare(Kernel("div_backward_b", ("g", "a", "b"), "-g * a / (b * b)", upcast="b"))
class DivBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        a, b = self.unpack(F)
        if self.needs(0) and self.needs(1):
            return F.div_backward(g, a, b)  # both in one pass on a device
        ga = g / b if self.needs(0) else None
        gb = F.div_backward_b(g, a, b) if self.needs(1) else None
        return ga, gb


class DivBackward1(Node):
    fresh_grads = True
    writes_into_grad = True

    def apply(self, F, g, out=None):
        return (g / self.scalar if out is None else F.divide(g, self.scalar, out=out),)

    def name(self):  # `x / 2` prints DivBackward0 in PyTorch
        return "DivBackward0"


class RdivBackward(Node):  # scalar / tensor
    fresh_grads = True

    def apply(self, F, g):
        (b,) = self.unpack(F)
        return (F.div_backward_b(g, self.scalar, b),)

    def name(self):  # PyTorch computes `2 / x` as reciprocal(x) * 2
        return "MulBackward0"


@export(torch=("div", "divide", "true_divide"), method=("div", "divide", "true_divide"))
@op_function
def div(a, b, *, rounding_mode=None):
    """``a / b`` (true division: integers give float32, as in PyTorch)."""
    if rounding_mode == "floor":
        return floor_divide(a, b)
    if rounding_mode == "trunc":
        _no_bool_pair("div_trunc", a, b)
        return _no_grad_binary("div", a, b, _trunc_div, division=True)
    if rounding_mode is not None:
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or "
                         f"'floor' but found '{rounding_mode}'")
    return _binary("div", DivBackward0, DivBackward1, RdivBackward, _np_div, a, b,
                   save_inputs=True, float_result=True)


def _np_div(x, y):
    return x / y


def _trunc_div(x, y):
    """The quotient rounded toward zero, in the operands' dtype (integers stay integers,
    as in PyTorch)."""
    if getattr(x, "dtype", getattr(y, "dtype", None)).kind in "iub":
        q = x // y  # the floor: one more toward zero where negative and inexact
        return q + ((q < 0) & (q * y != x))
    q = x / y
    return math_of(q).trunc(q).astype(q.dtype, copy=False)


def _zero_division(value):
    return RuntimeError("ZeroDivisionError")


def _no_grad_binary(op, a, b, fwd, division=False):
    """``fwd`` of the operands, untracked (``division``: an integer division, which
    refuses a zero divisor)."""
    x, y = binary_operands(a, b, op)
    xd = x._data if isinstance(x, Tensor) else x
    yd = y._data if isinstance(y, Tensor) else y
    if division and (xd if isinstance(x, Tensor) else yd).dtype.kind in "iu":
        # an integer divided by zero raises, as on PyTorch's CPU (NumPy gives 0); on a
        # GPU the check is read with the next values read back (backend.check_range)
        if not isinstance(y, Tensor):
            if yd == 0:
                raise _zero_division(0)
        else:
            check_range(yd == 0, 0, 1, _zero_division)
    try:
        return wrap(fwd(xd, yd))
    except ValueError as exc:
        raise _broadcast_error(op, x, y, exc) from None


def _no_bool_pair(op, a, b):
    """PyTorch has no boolean kernel for ``op``: two bool operands (a bool tensor and a
    bool tensor or Python bool) are refused, as PyTorch does."""
    if (isinstance(a, (bool, np.bool_)) or isinstance(a, Tensor) and a._data.dtype.kind == "b") \
            and (isinstance(b, (bool, np.bool_)) or
                 isinstance(b, Tensor) and b._data.dtype.kind == "b"):
        raise NotImplementedError(f"\"{op}\" not implemented for 'Bool'")


@export(torch=True, method=True)
def floor_divide(a, b):
    """``a // b``: not differentiable (the result does not require grad)."""
    _no_bool_pair("div_floor", a, b)
    return _no_grad_binary("floor_divide", a, b, lambda x, y: x // y, division=True)


# ---- remainder / fmod: the gradient of the quotient's rounded part is zero ----------
def _floating_operand(v) -> bool:
    return isinstance(v, Tensor) and v._data.dtype.kind == "f" or \
        isinstance(v, (float, np.floating))


class RemainderBackward1(Node):  # tensor % tensor: a - b * floor(a / b)
    fresh_grads = True  # (the second output; the first is g, passed on)
    passes = (0,)

    def apply(self, F, g):
        a, b = self.unpack(F)
        return g, (-g * F.floor(a / b) if self.needs(1) else None)


class RemainderBackward0(Node):  # tensor % number
    passes = (0,)

    def apply(self, F, g):
        return (g,)


class RemainderBackward2(Node):  # number % tensor (PyTorch leaves it underived)
    fresh_grads = True

    def apply(self, F, g):
        (b,) = self.unpack(F)
        return (-g * F.floor(self.scalar / b),)


def _np_remainder(x, y):
    return x % y


@export(torch=True, method=True)
def remainder(a, b):
    """``a % b`` with the sign of ``b`` (Python's and PyTorch's convention):
    ``a - b * floor(a / b)``; differentiable for floats (``a``'s gradient is ``g``,
    ``b``'s ``-g * floor(a / b)``), integers divided by zero raise.

    >>> import gradcore as gc
    >>> gc.remainder(gc.tensor([5., -5.]), 3)
    tensor([2., 1.])
    """
    _no_bool_pair("remainder", a, b)
    if not (_floating_operand(a) or _floating_operand(b)):
        return _no_grad_binary("remainder", a, b, _np_remainder, division=True)
    return _binary("remainder", RemainderBackward1, RemainderBackward0, RemainderBackward2,
                   _np_remainder, a, b, save_inputs=True)


class FmodBackward1(Node):  # fmod(tensor, tensor): a - b * trunc(a / b)
    fresh_grads = True  # (the second output; the first is g, passed on)
    passes = (0,)

    def apply(self, F, g):
        a, b = self.unpack(F)
        return g, (-g * F.trunc(a / b) if self.needs(1) else None)


class FmodBackward0(Node):  # fmod(tensor, number)
    passes = (0,)

    def apply(self, F, g):
        return (g,)


def _np_fmod(x, y):
    return math_of(x if hasattr(x, "dtype") and not isinstance(x, np.generic) else y).fmod(x, y)


@export(torch=True, method=True)
def fmod(input, other):  # noqa: A002
    """The remainder of ``input / other`` with the sign of ``input`` (C's ``fmod``):
    ``input - other * trunc(input / other)``; ``other`` a tensor or a number. Gradients
    as :func:`remainder`'s, with ``trunc``; integers divided by zero raise.

    >>> import gradcore as gc
    >>> gc.fmod(gc.tensor([5., -5.]), 3)
    tensor([ 2., -2.])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"fmod(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    _no_bool_pair("fmod", input, other)
    if not (_floating_operand(input) or _floating_operand(other)):
        return _no_grad_binary("fmod", input, other, _np_fmod, division=True)
    return _binary("fmod", FmodBackward1, FmodBackward0, None, _np_fmod, input, other,
                   save_inputs=True)


# ---- pow ----------
declare(Kernel("pow_backward", ("g", "x", "e"),
               "where(e == 0, 0 * g, g * e * pow(x, e - 1))"))
class PowBackward0(Node):  # tensor ** scalar
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.pow_backward(g, x, self.scalar),)


class PowBackward1(Node):  # tensor ** tensor
    fresh_grads = True

    def apply(self, F, g):
        a, b = self.unpack(F)
        ga = F.pow_backward(g, a, b) if self.needs(0) else None
        gb = None
        if self.needs(1):
            y = self.output(F)
            # PyTorch's rule: 0 where the base is 0 and the exponent >= 0, else
            # y * log(a) (-inf at a zero base and a negative exponent, as y is inf)
            gb = F.where((a == 0) & (b >= 0), 0 * g, g * y * F.log(a))
        return ga, gb


class PowBackward2(Node):  # scalar ** tensor
    fresh_grads = True

    def apply(self, F, g):
        y = self.output(F)
        if self.scalar != 0:
            return (g * y * float(np.log(self.scalar)),)
        (b,) = self.unpack(F)  # PowBackward1's rule at a zero base
        return (F.where(b >= 0, 0 * g, g * y * float("-inf")),)


@export(torch=True, method=True)
def pow(a, b):  # noqa: A001 - PyTorch's name
    """``a ** b`` with broadcasting."""
    if isinstance(b, Tensor):
        _no_bool_pair("pow", a, b)
    if isinstance(a, Tensor) and not isinstance(b, Tensor) and \
            isinstance(b, (int, np.integer)) and a._data.dtype.kind in "iu" and b < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return _binary("pow", PowBackward1, PowBackward0, PowBackward2, _np_pow, a, b,
                   save_inputs=True, save_out=True)


def _np_pow(x, y):
    # an integer tensor exponent may hold negative values, which NumPy refuses and CuPy
    # computes otherwise than PyTorch: integer powers take PyTorch's rule on every device
    if hasattr(y, "dtype") and not isinstance(y, np.generic) and y.dtype.kind in "iu" and \
            (x.dtype.kind if hasattr(x, "dtype") else "f" if isinstance(x, float) else "i") \
            in "iu":
        return _int_pow(x, y)
    return x ** y


def _int_pow(x, y):
    """PyTorch's integer power of a tensor exponent with negative elements: there
    1 ** e is 1, (-1) ** e is 1 or -1 by parity, and any other base gives 0."""
    m = math_of(y if hasattr(y, "dtype") else x)
    negative = y < 0
    out = x ** m.where(negative, 0, y)
    if hasattr(x, "dtype"):
        at_negative = m.where(x == 1, 1, m.where(x == -1, 1 - 2 * (y % 2), 0))
    else:  # a number base: its case known on the host (where() takes array conditions)
        at_negative = 1 if x == 1 else 1 - 2 * (y % 2) if x == -1 else 0
    return m.where(negative, at_negative, out).astype(out.dtype, copy=False)


@export(torch=True, method=True)
def square(x):
    """``x * x`` (PyTorch records it as ``pow(x, 2)``)."""
    return pow(x, 2)


# ---- unary functions ----------
def _float(x: Tensor) -> Tensor:
    """Integer and bool inputs of float functions compute in float32, as in PyTorch."""
    if x._data.dtype.kind != "f":
        return x.to(dtype=dtypes.default_float)
    return x


@op_function
def _unary(x, fn_name, cls, save_input=False, save_output=False, floating=True):
    if not isinstance(x, Tensor):
        x = as_tensor(x)
    if floating and x._data.dtype.kind != "f":
        x = _float(x)
    xd = x._data
    f = getattr(math_of(xd), fn_name)
    out = f(xd) if save_input or xd.nbytes < MIN_BYTES or xd.dtype.kind != "f" or \
        (o := reusable(x, xd)) is None else f(xd, out=o)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record1(out, cls, x)
    node = t.grad_fn
    if save_input:
        node.saved = (x,)
        node.versions = (x._version,)
    if save_output:
        node.save_output(t)
    return t


declare(Kernel("exp_backward", ("g", "y"), "g * y"))
class ExpBackward0(Node):
    fresh_grads = True
    writes_into_grad = True

    def apply(self, F, g, out=None):
        return (F.exp_backward(g, self.output(F), out=out),)


@export(torch=True, method=True)
@op_function
def exp(x):
    """``e ** x``."""
    return _unary(x, "exp", ExpBackward0, save_output=True)


declare(Kernel("log_backward", ("g", "x"), "g / x"))
class LogBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.log_backward(g, x),)


@export(torch=True, method=True)
def log(x):
    """Natural logarithm."""
    return _unary(x, "log", LogBackward0, save_input=True)


class Log1PBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (g / (x + 1),)


@export(torch=True, method=True)
def log1p(x):
    """``log(1 + x)``, accurate for small ``x``."""
    return _unary(x, "log1p", Log1PBackward0, save_input=True)


class Expm1Backward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        return (g * (self.output(F) + 1),)


@export(torch=True, method=True)
@op_function
def expm1(x):
    """``exp(x) - 1``, accurate for small ``x``."""
    return _unary(x, "expm1", Expm1Backward0, save_output=True)


declare(Kernel("sqrt_backward", ("g", "y"), "g / (2 * y)"))
class SqrtBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        return (F.sqrt_backward(g, self.output(F)),)


@export(torch=True, method=True)
@op_function
def sqrt(x):
    """Square root."""
    return _unary(x, "sqrt", SqrtBackward0, save_output=True)


declare(Kernel("rsqrt_backward", ("g", "y"), "-0.5 * g * (y * y * y)"))
class RsqrtBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        return (F.rsqrt_backward(g, self.output(F)),)


def _np_rsqrt(xd):
    m = math_of(xd)
    out = m.sqrt(xd)
    return m.divide(1, out, out=out) if isinstance(out, m.ndarray) else 1 / out


@export(torch=True, method=True)
def rsqrt(x):
    """``1 / sqrt(x)``."""
    x = _float(as_tensor(x))
    out = _np_rsqrt(x._data)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record(out, RsqrtBackward0, x)
    t.grad_fn.save_output(t)
    return t


declare(Kernel("reciprocal_backward", ("g", "y"), "-g * (y * y)"))
class ReciprocalBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        return (F.reciprocal_backward(g, self.output(F)),)


@export(torch=True, method=True)
def reciprocal(x):
    """``1 / x``."""
    x = _float(as_tensor(x))
    out = 1 / x._data
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record(out, ReciprocalBackward0, x)
    t.grad_fn.save_output(t)
    return t


declare(Kernel("abs_backward", ("g", "x"), "g * sign(x)"))  # PyTorch's sign: 0 at NaN
class AbsBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.abs_backward(g, x),)


@export(torch=("abs", "absolute"), method=("abs", "absolute"))
def abs(x):  # noqa: A001
    """Absolute value (gradient 0 at 0, as in PyTorch)."""
    if isinstance(x, Tensor) and x._data.dtype.kind == "b":
        raise NotImplementedError("\"abs\" not implemented for 'Bool'")
    return _unary(x, "abs", AbsBackward0, save_input=True, floating=False)


class SignBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        return (0 * g,)


@export(torch=True, method=True)
@op_function
def sign(x):
    """-1, 0 or 1 (zero gradient)."""
    if isinstance(x, Tensor) and x._data.dtype.kind == "b":
        return wrap(x._data.copy())  # PyTorch: the sign of a bool is itself
    return _unary(x, "sign", SignBackward0, floating=False)


class SinBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (g * F.cos(x),)


@export(torch=True, method=True)
def sin(x):
    """Sine, elementwise (radians)."""
    return _unary(x, "sin", SinBackward0, save_input=True)


class CosBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (-g * F.sin(x),)


@export(torch=True, method=True)
def cos(x):
    """Cosine, elementwise (radians)."""
    return _unary(x, "cos", CosBackward0, save_input=True)


declare(Kernel("tanh_backward", ("g", "y"), "g * (1 - y * y)"))
class TanhBackward0(Node):
    fresh_grads = True
    writes_into_grad = True

    def apply(self, F, g, out=None):
        return (F.tanh_backward(g, self.output(F), out=out),)


@export(torch=True, method=True)
@op_function
def tanh(x):
    """Hyperbolic tangent."""
    xd = x._data
    if type(xd) is not _ndarray or xd.dtype.kind != "f":
        return _unary(x, "tanh", TanhBackward0, save_output=True)
    out = _np_tanh(xd) if xd.nbytes < MIN_BYTES or (o := reusable(x, xd)) is None \
        else _np_tanh(xd, out=o)  # fast path: a float array on the CPU
    if not (x._rg and mode.enabled):
        return wrap(out)
    t = record1(out, TanhBackward0, x)
    t.grad_fn.save_output(t)
    return t


_np_tanh = np.tanh


# ---- more unary functions (PyTorch's derivatives.yaml formulas) ----------
declare(Kernel("tan_backward", ("g", "y"), "g * (1 + y * y)"))
class TanBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        return (F.tan_backward(g, self.output(F)),)


@export(torch=True, method=True)
def tan(x):
    """Tangent."""
    return _unary(x, "tan", TanBackward0, save_output=True)


declare(Kernel("asin_backward", ("g", "x"), "g / sqrt(1 - x * x)"))
class AsinBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.asin_backward(g, x),)


@export(torch=("asin", "arcsin"), method=("asin", "arcsin"))
def asin(x):
    """Inverse sine."""
    return _unary(x, "arcsin", AsinBackward0, save_input=True)


declare(Kernel("acos_backward", ("g", "x"), "-g / sqrt(1 - x * x)"))
class AcosBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.acos_backward(g, x),)


@export(torch=("acos", "arccos"), method=("acos", "arccos"))
def acos(x):
    """Inverse cosine."""
    return _unary(x, "arccos", AcosBackward0, save_input=True)


declare(Kernel("atan_backward", ("g", "x"), "g / (x * x + 1)"))
class AtanBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.atan_backward(g, x),)


@export(torch=("atan", "arctan"), method=("atan", "arctan"))
def atan(x):
    """Inverse tangent."""
    return _unary(x, "arctan", AtanBackward0, save_input=True)


# g * cosh(x), cosh written with exp (kernels have no cosh)
declare(Kernel("sinh_backward", ("g", "x"), "g * ((exp(x) + exp(-x)) * 0.5)"))
class SinhBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.sinh_backward(g, x),)


@export(torch=True, method=True)
def sinh(x):
    """Hyperbolic sine."""
    return _unary(x, "sinh", SinhBackward0, save_input=True)


# g * sinh(x), sinh as tanh(x) * cosh(x): no cancellation near 0 (as exp(x) - exp(-x))
declare(Kernel("cosh_backward", ("g", "x"), "g * (tanh(x) * ((exp(x) + exp(-x)) * 0.5))"))
class CoshBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.cosh_backward(g, x),)


@export(torch=True, method=True)
def cosh(x):
    """Hyperbolic cosine."""
    return _unary(x, "cosh", CoshBackward0, save_input=True)


declare(Kernel("asinh_backward", ("g", "x"), "g / sqrt(x * x + 1)"))
class AsinhBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.asinh_backward(g, x),)


@export(torch=("asinh", "arcsinh"), method=("asinh", "arcsinh"))
def asinh(x):
    """Inverse hyperbolic sine."""
    return _unary(x, "arcsinh", AsinhBackward0, save_input=True)


# PyTorch's real case: g * rsqrt(x * x - 1)
declare(Kernel("acosh_backward", ("g", "x"), "g / sqrt(x * x - 1)"))
class AcoshBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.acosh_backward(g, x),)


@export(torch=("acosh", "arccosh"), method=("acosh", "arccosh"))
def acosh(x):
    """Inverse hyperbolic cosine."""
    return _unary(x, "arccosh", AcoshBackward0, save_input=True)


declare(Kernel("atanh_backward", ("g", "x"), "g / (1 - x * x)"))
class AtanhBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.atanh_backward(g, x),)


@export(torch=("atanh", "arctanh"), method=("atanh", "arctanh"))
def atanh(x):
    """Inverse hyperbolic tangent."""
    return _unary(x, "arctanh", AtanhBackward0, save_input=True)


# PyTorch has no derivative for asinh_, acosh_ and atanh_: they run, and a backward pass
# through them raises
class InPlaceWithoutDerivative(Node):
    def apply(self, F, g):
        raise NotImplementedError(f"the derivative for 'inplace version of {self.op}' is "
                                  "not implemented.")

    def name(self):  # PyTorch's AsinhBackward1, ...
        return f"{self.op.capitalize()}Backward1"


def without_derivative_in_place(op, fn):
    """The out-of-place form of ``x.<op>_()``: ``fn(x)``, whose node, when ``x`` requires
    grad, raises PyTorch's error in backward."""
    def in_place(x):
        r = fn(x)
        if r.grad_fn is None:
            return r
        t = record1(r._data, InPlaceWithoutDerivative, x)
        t.grad_fn.op = op
        return t
    in_place.__name__ = op
    return in_place


declare(Kernel("log2_backward", ("g", "x"), "g / (x * 0.6931471805599453)"))
class Log2Backward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.log2_backward(g, x),)


@export(torch=True, method=True)
def log2(x):
    """Base-2 logarithm."""
    return _unary(x, "log2", Log2Backward0, save_input=True)


declare(Kernel("log10_backward", ("g", "x"), "g / (x * 2.3025850929940456)"))
class Log10Backward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.log10_backward(g, x),)


@export(torch=True, method=True)
def log10(x):
    """Base-10 logarithm."""
    return _unary(x, "log10", Log10Backward0, save_input=True)


declare(Kernel("exp2_backward", ("g", "y"), "g * y * 0.6931471805599453"))
class Exp2Backward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        return (F.exp2_backward(g, self.output(F)),)


@export(torch=True, method=True)
def exp2(x):
    """``2 ** x``."""
    return _unary(x, "exp2", Exp2Backward0, save_output=True)


# ---- rounding: zero gradient (PyTorch's zeros_like(grad)), integers returned as they are
class _ZeroGradient(Node):
    fresh_grads = True

    def apply(self, F, g):
        return (F.zeros_like(g),)


class FloorBackward0(_ZeroGradient):
    pass


class CeilBackward0(_ZeroGradient):
    pass


class RoundBackward0(_ZeroGradient):
    pass


class TruncBackward0(_ZeroGradient):
    pass


def _rounding(x, fn_name, cls, op):
    """floor/ceil/round/trunc: floats rounded, integers copied (PyTorch keeps their dtype),
    bool refused as PyTorch's CPU kernels refuse it."""
    if not isinstance(x, Tensor):
        x = as_tensor(x)
    kind = x._data.dtype.kind
    if kind == "b":
        raise NotImplementedError(f"\"{op}_vml_cpu\" not implemented for 'Bool'")
    if kind != "f":
        return wrap(x._data.copy())
    return _unary(x, fn_name, cls)


@export(torch=True, method=True)
def floor(x):
    """The largest integer not above ``x`` (zero gradient)."""
    return _rounding(x, "floor", FloorBackward0, "floor")


@export(torch=True, method=True)
def ceil(x):
    """The smallest integer not below ``x`` (zero gradient)."""
    return _rounding(x, "ceil", CeilBackward0, "ceil")


class RoundBackward1(_ZeroGradient):  # (PyTorch's name with decimals)
    pass


@export(torch=True, method=True)
def round(x, *, decimals=0):  # noqa: A001 - PyTorch's name
    """The nearest integer, halves to even (zero gradient). ``decimals``: round to that
    many decimal places instead (``rint(x * 10**d) / 10**d``, or ``rint(x / 10**-d) *
    10**-d`` for negative ``d``, as PyTorch; floating inputs only).

    >>> import gradcore as gc
    >>> gc.round(gc.tensor([1.2345, 15.5, 25.0]), decimals=-1)
    tensor([ 0., 20., 20.])
    """
    if decimals == 0:
        return _rounding(x, "rint", RoundBackward0, "round")
    if not isinstance(x, Tensor):
        x = as_tensor(x)
    _floats_only("round", x)
    xd = x._data
    m = math_of(xd)
    xu = xd.astype(np.float32) if xd.dtype == np.float16 else xd  # (half in float)
    scale = 10.0 ** (decimals if decimals > 0 else -decimals)  # (abs is the op here)
    out = (m.rint(xu * scale) / scale if decimals > 0 else m.rint(xu / scale) * scale)
    out = out.astype(xd.dtype, copy=False)
    return record1(out, RoundBackward1, x) if mode.enabled and x._rg else wrap(out)


@export(torch=("trunc", "fix"), method=("trunc", "fix"))
def trunc(x):
    """``x`` rounded toward zero (zero gradient)."""
    return _rounding(x, "trunc", TruncBackward0, "trunc")


class FracBackward0(Node):
    passes = (0,)

    def apply(self, F, g):
        return (g,)


@export(torch=True, method=True)
def frac(x):
    """``x - trunc(x)`` (gradient ``g``)."""
    if not isinstance(x, Tensor):
        x = as_tensor(x)
    _floats_only("frac", x)
    xd = x._data
    out = xd - math_of(xd).trunc(xd)
    if not (mode.enabled and x._rg):
        return wrap(out)
    return record1(out, FracBackward0, x)


declare(Kernel("sigmoid_backward", ("g", "y"), "g * (y * (1 - y))"))
class SigmoidBackward0(Node):
    fresh_grads = True
    writes_into_grad = True

    def apply(self, F, g, out=None):
        return (F.sigmoid_backward(g, self.output(F), out=out),)


@export(torch=True, method=True)
def sigmoid(x):
    """``1 / (1 + exp(-x))``."""
    x = _float(as_tensor(x))
    xd = x._data
    out = math_of(xd).sigmoid(xd)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record(out, SigmoidBackward0, x)
    t.grad_fn.save_output(t)
    return t


# y is relu's output: positive, +-0 or NaN. PyTorch's threshold_backward gives no
# gradient where y <= 0, that is where y == 0 (NaN passes the gradient)
declare(Kernel("relu_backward", ("g", "y"), "where(y != 0, g, 0)",
               cpu=_twins.relu_backward_cpu))
class ReluBackward0(Node):
    fresh_grads = True
    writes_into_grad = True

    def apply(self, F, g, out=None):
        return (F.relu_backward(g, self.output(F), out=out),)


# relu's forward: x itself where it is not below 0, so that -0.0 and NaN come back as
# they are, as from PyTorch's clamp_min (a CUDA max() takes -0.0 for below +0.0)
declare(Kernel("relu_forward", ("x",), "where(x < 0, 0, x)", cpu=_twins.relu_forward_cpu))


@export(torch=True, method=True)
@op_function
def relu(x):
    """``max(x, 0)``."""
    xd = x._data
    if xd.dtype.kind == "b":
        raise RuntimeError("Boolean inputs not supported for relu")
    m = math_of(xd)
    if xd.dtype.kind != "f":  # (integers: no signed zeros, no NaN)
        out = m.maximum(xd, 0)
    elif xd.nbytes < MIN_BYTES or (o := reusable(x, xd)) is None:
        out = m.relu_forward(xd)
    else:
        out = m.relu_forward(xd, out=o)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record(out, ReluBackward0, x)
    t.grad_fn.save_output(t)
    return t


declare(Kernel("clamp_backward", ("g", "x", "lo", "hi"),
               "where((x >= lo) & (x <= hi), g, 0)", cpu=_twins.clamp_backward_cpu))
class ClampBackward1(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.clamp_backward(g, x, self.lo, self.hi),)


@export(torch=("clamp", "clip"), method=("clamp", "clip"))
def clamp(x, min=None, max=None):  # noqa: A002
    """Limit ``x`` to ``[min, max]``; the gradient passes where ``min <= x <= max``."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = x
        if min is not None:
            out = maximum(out, min)
        if max is not None:
            out = minimum(out, max)
        return out
    xd = x._data
    if xd.dtype.kind != "f" and (isinstance(min, float) or isinstance(max, float)):
        x = _float(x)
        xd = x._data
    m = math_of(xd)
    out = m.clip(xd, min, max)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record(out, ClampBackward1, x)
    node = t.grad_fn
    node.lo = -np.inf if min is None else min
    node.hi = np.inf if max is None else max
    node.save(x)
    return t


clip = clamp


# ---- binary functions of floats: atan2, logaddexp, logaddexp2, hypot, copysign, xlogy
def _tensor_pair(op, a, b):
    """PyTorch's refusal of a number where ``op`` takes two tensors."""
    for v, name, pos in ((a, "input", 1), (b, "other", 2)):
        if not isinstance(v, Tensor):
            raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not "
                            f"{type(v).__name__}")


def _floats_only(op, *operands):
    """PyTorch's CPU kernels of ``op`` exist for floating dtypes only."""
    for v in operands:
        if isinstance(v, Tensor) and v._data.dtype.kind != "f":
            raise NotImplementedError(f"\"{op}_cpu\" not implemented for "
                                      f"'{dtypes.torch_name(v.dtype)}'")


# d/da atan2(a, b) = b / (a^2 + b^2), d/db = -a / (a^2 + b^2); 0 at the origin, as PyTorch
declare(Kernel("atan2_backward", ("g", "a", "b"),
               ("where(d == 0, 0, g * b / d)", "where(d == 0, 0, -g * a / d)"),
               lets=(("d", "a * a + b * b"),), upcast="a"))
class Atan2Backward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        a, b = self.unpack(F)
        ga, gb = F.atan2_backward(g, a, b)
        return (ga if self.needs(0) else None), (gb if self.needs(1) else None)


def _np_atan2(x, y):
    return math_of(x).arctan2(x, y)


@export(torch=("atan2", "arctan2"), method=("atan2", "arctan2"))
def atan2(input, other):  # noqa: A002
    """The angle of the point ``(other, input)``, ``atan(input / other)`` in the right
    quadrant, in ``[-pi, pi]``; integers give float32.

    >>> import gradcore as gc
    >>> gc.atan2(gc.tensor([1.0, -1.0]), gc.tensor([-1.0, -1.0]))
    tensor([ 2.3562, -2.3562])
    """
    _tensor_pair("atan2", input, other)
    return _binary("atan2", Atan2Backward0, None, None, _np_atan2, input, other,
                   save_inputs=True, float_result=True)


# PyTorch's LogaddexpBackward0: g / (1 + exp(b - a)) and g / (1 + exp(a - b))
declare(Kernel("logaddexp_backward", ("g", "a", "b"),
               ("g / (1 + exp(b - a))", "g / (1 + exp(a - b))"), upcast="a"))
class LogaddexpBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        a, b = self.unpack(F)
        ga, gb = F.logaddexp_backward(g, a, b)
        return (ga if self.needs(0) else None), (gb if self.needs(1) else None)


def _np_logaddexp(x, y):
    return math_of(x).logaddexp(x, y)


@export(torch=True, method=True)
def logaddexp(input, other):  # noqa: A002
    """``log(exp(input) + exp(other))`` without overflow (floating tensors).

    >>> import gradcore as gc
    >>> gc.logaddexp(gc.tensor([0.0, 100.0]), gc.tensor([0.0, 100.0]))
    tensor([  0.6931, 100.6931])
    """
    _tensor_pair("logaddexp", input, other)
    _floats_only("logaddexp", input, other)
    return _binary("logaddexp", LogaddexpBackward0, None, None, _np_logaddexp, input, other,
                   save_inputs=True)


# PyTorch's Logaddexp2Backward0: g / (1 + 2 ** (b - a)) and g / (1 + 2 ** (a - b))
declare(Kernel("logaddexp2_backward", ("g", "a", "b"),
               ("g / (1 + pow(2.0, b - a))", "g / (1 + pow(2.0, a - b))"), upcast="a"))
class Logaddexp2Backward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        a, b = self.unpack(F)
        ga, gb = F.logaddexp2_backward(g, a, b)
        return (ga if self.needs(0) else None), (gb if self.needs(1) else None)


def _np_logaddexp2(x, y):
    return math_of(x).logaddexp2(x, y)


@export(torch=True, method=True)
def logaddexp2(input, other):  # noqa: A002
    """``log2(2 ** input + 2 ** other)`` without overflow (floating tensors)."""
    _tensor_pair("logaddexp2", input, other)
    _floats_only("logaddexp2", input, other)
    return _binary("logaddexp2", Logaddexp2Backward0, None, None, _np_logaddexp2, input,
                   other, save_inputs=True)


# PyTorch's HypotBackward0: g * a / y and g * b / y, y the result (NaN at the origin)
declare(Kernel("hypot_backward", ("g", "a", "b", "y"), ("g * a / y", "g * b / y"),
               upcast="a"))
class HypotBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        a, b = self.unpack(F)
        ga, gb = F.hypot_backward(g, a, b, self.output(F))
        return (ga if self.needs(0) else None), (gb if self.needs(1) else None)


def _np_hypot(x, y):
    return math_of(x).hypot(x, y)


@export(torch=True, method=True)
def hypot(input, other):  # noqa: A002
    """``sqrt(input ** 2 + other ** 2)`` without overflow (floating tensors).

    >>> import gradcore as gc
    >>> gc.hypot(gc.tensor([3.0, 5.0]), gc.tensor([4.0, 12.0]))
    tensor([ 5., 13.])
    """
    _tensor_pair("hypot", input, other)
    _floats_only("hypot", input, other)
    return _binary("hypot", HypotBackward0, None, None, _np_hypot, input, other,
                   save_inputs=True, save_out=True)


# PyTorch's copysign_tensor_self_backward: g * result / input, 0 where input is 0 (the
# sign taken from `other` has no gradient)
declare(Kernel("copysign_backward", ("g", "a", "y"), "where(a == 0, 0, g * (y / a))"))
class CopysignBackward0(Node):  # copysign(tensor, tensor)
    fresh_grads = True

    def apply(self, F, g):
        a, _ = self.unpack(F)
        return (F.copysign_backward(g, a, self.output(F)) if self.needs(0) else None,
                F.zeros_like(g) if self.needs(1) else None)


class CopysignBackward1(Node):  # copysign(tensor, number)
    fresh_grads = True

    def apply(self, F, g):
        (a,) = self.unpack(F)
        return (F.copysign_backward(g, a, self.output(F)),)


def _np_copysign(x, y):
    return math_of(x).copysign(x, y)


@export(torch=True, method=True)
def copysign(input, other):  # noqa: A002
    """The magnitude of ``input`` with the sign of ``other`` (a tensor or a number);
    integers give float32.

    >>> import gradcore as gc
    >>> gc.copysign(gc.tensor([1.0, -2.0, 3.0]), -1)
    tensor([-1., -2., -3.])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"copysign(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return _binary("copysign", CopysignBackward0, CopysignBackward1, None, _np_copysign,
                   input, other, save_inputs=True, save_out=True, float_result=True)


# PyTorch's XlogyBackward0: g * xlogy(a != 0, b) (0 where a is 0, unless b is NaN) and
# g * a / b
declare(Kernel("xlogy_backward", ("g", "a", "b"),
               ("where((a == 0) & (b == b), 0, g * log(b))", "g * a / b"), upcast="a"))
class XlogyBackward0(Node):  # xlogy(tensor, tensor)
    fresh_grads = True

    def apply(self, F, g):
        a, b = self.unpack(F)
        ga, gb = F.xlogy_backward(g, a, b)
        return (ga if self.needs(0) else None), (gb if self.needs(1) else None)


class XlogyBackward1(Node):  # xlogy(number, tensor)
    fresh_grads = True

    def apply(self, F, g):
        (b,) = self.unpack(F)
        return (g * self.scalar / b,)


class XlogyBackward2(Node):  # xlogy(tensor, number)
    fresh_grads = True

    def apply(self, F, g):
        (a,) = self.unpack(F)
        c = self.scalar
        log_c = float(np.log(np.float64(c))) if c == c else c
        return (F.where(a == 0, 0, g * log_c) if c == c else g * log_c,)


def _np_xlogy(x, y):
    m = math_of(x if hasattr(x, "dtype") and not isinstance(x, np.generic) else y)
    if not hasattr(y, "dtype"):  # a number: its log as a Python float (a weak scalar)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_y = float(np.log(np.float64(y)))
        not_nan = y == y
    else:
        with np.errstate(divide="ignore", invalid="ignore"):  # (0 * log(0): taken as 0)
            log_y, not_nan = m.log(y), y == y
    with np.errstate(invalid="ignore"):
        return m.where((x == 0) & not_nan, 0, x * log_y)


@export(torch=True, method=True)
def xlogy(input, other):  # noqa: A002
    """``input * log(other)``, and 0 where ``input`` is 0 (unless ``other`` is NaN);
    either may be a number, integers give float32.

    >>> import gradcore as gc
    >>> gc.xlogy(gc.tensor([0.0, 2.0]), gc.tensor([0.0, 1.0]))
    tensor([0., 0.])
    """
    return _binary("xlogy", XlogyBackward0, XlogyBackward2, XlogyBackward1, _np_xlogy,
                   input, other, save_inputs=True, float_result=True)


# ---- lerp ----------
declare(Kernel("lerp_backward", ("g", "a", "b", "w"),
               ("g * (1 - w)", "g * w", "g * (b - a)")))
class LerpBackward1(Node):  # lerp(input, end, weight tensor)
    fresh_grads = True

    def apply(self, F, g):
        a, b, w = self.unpack(F)
        ga, gb, gw = F.lerp_backward(g, a, b, w)
        return (ga if self.needs(0) else None, gb if self.needs(1) else None,
                gw if self.needs(2) else None)


class LerpBackward0(Node):  # lerp(input, end, weight number)
    fresh_grads = True

    def apply(self, F, g):
        return (g * (1 - self.weight) if self.needs(0) else None,
                g * self.weight if self.needs(1) else None)


def _np_lerp(a, b, w):
    """PyTorch's lerp: ``a + w * (b - a)`` for ``|w| < 0.5``, else
    ``b - (b - a) * (1 - w)`` (exact at both ends); float16 computed in float32."""
    m = math_of(a)
    dtype = a.dtype
    if dtype == np.float16:
        a, b = a.astype(np.float32), b.astype(np.float32)
        w = w.astype(np.float32) if hasattr(w, "dtype") else w
    d = b - a
    if hasattr(w, "dtype"):
        out = m.where(m.abs(w) < 0.5, a + w * d, b - d * (1 - w))  # (abs: the op)
    else:  # a number: the formula chosen on the host (where() takes array conditions)
        out = a + w * d if -0.5 < w < 0.5 else b - d * (1 - w)
    return out.astype(dtype, copy=False)


# ---- what a tensor is: real tensors have no conjugate or negative bit ----------
@export(torch=True, method=True)
def is_signed(input):  # noqa: A002
    """Whether the dtype holds negative numbers (every dtype but bool and uint8)."""
    return input._data.dtype.kind in "if"


@export(torch=True, method=True)
def is_complex(input):  # noqa: A002
    """Whether the dtype is complex: never, gradcore's tensors are real."""
    return False


@export(torch=True, method=True)
def is_conj(input):  # noqa: A002
    """Whether the tensor is a lazily conjugated view: never for real tensors."""
    return False


@export(torch=True, method=True)
def is_neg(input):  # noqa: A002
    """Whether the tensor is a lazily negated view: never for real tensors."""
    return False


@export(torch=True, method=True)
def conj(input):  # noqa: A002
    """The complex conjugate: ``input`` itself for a real tensor."""
    return input


@export(torch=True, method=True)
def resolve_conj(input):  # noqa: A002
    """``input`` with a lazy conjugation applied: itself for a real tensor."""
    return input


@export(torch=True, method=True)
def resolve_neg(input):  # noqa: A002
    """``input`` with a lazy negation applied: itself for a real tensor."""
    return input


@export(torch=True, method=True)
def is_nonzero(input):  # noqa: A002
    """Whether the one element of ``input`` is not zero (a RuntimeError for more or
    fewer elements)."""
    n = input._data.size
    if n != 1:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous" if n == 0 else
                           "Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


@export(torch=True, method=True)
def is_same_size(input, other):  # noqa: A002
    """Whether ``input`` and ``other`` have the same shape."""
    return tuple(input._data.shape) == tuple(other._data.shape)


@export(torch=True, method=True)
def is_inference(input):  # noqa: A002
    """Whether ``input`` is an inference tensor: never, as gradcore's
    ``inference_mode`` makes ordinary tensors (it only stops recording)."""
    return False


@export(method=True)
def byte(input, *, memory_format=None):  # noqa: A002
    """``input`` as uint8 (itself when it is uint8 already;
    ``memory_format`` is accepted as PyTorch's: the copy is row-major)."""
    return to_dtype(input, dtypes.uint8)


@export(method=True)
def char(input, *, memory_format=None):  # noqa: A002
    """``input`` as int8 (itself when it is int8 already;
    ``memory_format`` is accepted as PyTorch's: the copy is row-major)."""
    return to_dtype(input, dtypes.int8)


@export(method=True)
def short(input, *, memory_format=None):  # noqa: A002
    """``input`` as int16 (itself when it is int16 already;
    ``memory_format`` is accepted as PyTorch's: the copy is row-major)."""
    return to_dtype(input, dtypes.int16)


@export(torch=True, method=True)
def addcmul(input, tensor1, tensor2, *, value=1):  # noqa: A002
    """``input + value * tensor1 * tensor2``, broadcast.

    >>> import gradcore as gc
    >>> gc.addcmul(gc.ones(2), gc.tensor([1., 2.]), gc.tensor([3., 4.]), value=0.5)
    tensor([2.5000, 5.0000])
    """
    prod = mul(tensor1, tensor2)
    return add(input, prod if value == 1 else mul(prod, value))


@export(torch=True, method=True)
def addcdiv(input, tensor1, tensor2, *, value=1):  # noqa: A002
    """``input + value * tensor1 / tensor2``, broadcast (integer ``tensor1`` and
    ``tensor2`` are refused, as PyTorch does)."""
    t1 = tensor1 if isinstance(tensor1, Tensor) else None
    t2 = tensor2 if isinstance(tensor2, Tensor) else None
    if t1 is not None and t2 is not None and t1._data.dtype.kind in "biu" and \
            t2._data.dtype.kind in "biu":
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic "
            "addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / "
            "tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
            "tensor2) for float inputs. The future addcdiv behavior is just the latter "
            "implementation: (input + value * tensor1 / tensor2), for all dtypes.")
    q = div(tensor1, tensor2)
    return add(input, q if value == 1 else mul(q, value))


@export(torch=True, method=True)
def lerp(input, end, weight):  # noqa: A002
    """``input + weight * (end - input)``, broadcasting; ``weight`` a number or a
    tensor, of ``input``'s (floating) dtype as ``end`` is (a 0-d weight is cast to it).

    >>> import gradcore as gc
    >>> gc.lerp(gc.tensor([0.0, 10.0]), gc.tensor([1.0, 20.0]), 0.25)
    tensor([ 0.2500, 12.5000])
    """
    if not isinstance(end, Tensor):
        raise TypeError(f"lerp(): argument 'end' (position 2) must be Tensor, not "
                        f"{type(end).__name__}")
    w_tensor = isinstance(weight, Tensor)
    if w_tensor and weight._data.ndim == 0 and weight.dtype != input.dtype:
        weight = weight.to(dtype=input.dtype)  # (a 0-d weight takes input's dtype)
    for name, v in (("end", end), ("weight", weight)):
        if isinstance(v, Tensor) and v.dtype != input.dtype:
            raise RuntimeError(f"expected dtype {dtypes.torch_name(input.dtype).lower()} for "
                               f"`{name}` but got dtype {dtypes.torch_name(v.dtype).lower()}")
    if input._data.dtype.kind != "f":
        raise NotImplementedError(f"\"lerp_kernel_{'tensor' if w_tensor else 'scalar'}\" not "
                                  f"implemented for '{dtypes.torch_name(input.dtype)}'")
    ad, bd = input._data, end._data
    wd = weight._data if w_tensor else float(weight)
    check_same_device(ad, bd, "lerp")
    if w_tensor:
        check_same_device(ad, wd, "lerp")
    try:
        out = _np_lerp(ad, bd, wd)
    except ValueError as exc:
        shapes = [tuple(ad.shape), tuple(bd.shape)] + ([tuple(wd.shape)] if w_tensor else [])
        raise RuntimeError(f"lerp: shapes {shapes} cannot be broadcast together "
                           f"({exc})") from None
    ins = (input, end, weight) if w_tensor else (input, end)
    if not (mode.enabled and any(t._rg for t in ins)):
        return wrap(out)
    if w_tensor:
        t = record(out, LerpBackward1, input, end, weight)
        t.grad_fn.save(input, end, weight)
    else:
        t = record(out, LerpBackward0, input, end)
        t.grad_fn.weight = wd
    shapes = tuple(v._data.shape for v in ins)
    if any(s != out.shape for s in shapes):
        t.grad_fn.shapes = shapes
    return t


# ---- erfc / erfinv ----------
declare(Kernel("erfc_backward", ("g", "x"), "-1.1283791670955126 * g * exp(-(x * x))",
               upcast="x"))  # -2 / sqrt(pi) * exp(-x^2)
class ErfcBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.erfc_backward(g, x),)


@export(torch=True, method=True)
def erfc(input):  # noqa: A002
    """``1 - erf(input)``, accurate where it is small (large ``input``).

    >>> import gradcore as gc
    >>> gc.erfc(gc.tensor([0.0, 10.0], dtype=gc.float64))
    tensor([1.0000e+00, 2.0885e-45], dtype=gradcore.float64)
    """
    return _unary(input, "erfc", ErfcBackward0, save_input=True)


declare(Kernel("erfinv_backward", ("g", "y"), "0.886226925452758 * g * exp(y * y)",
               upcast="y"))  # sqrt(pi) / 2 * exp(erfinv(x)^2)
class ErfinvBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        return (F.erfinv_backward(g, self.output(F)),)


@export(torch=True, method=True)
def erfinv(input):  # noqa: A002
    """The inverse error function: ``erf(erfinv(y)) == y`` on ``(-1, 1)``; inf at -1
    and 1, NaN outside.

    >>> import gradcore as gc
    >>> gc.erfinv(gc.tensor([0.0, 0.5, 1.0]))
    tensor([0.0000, 0.4769,    inf])
    """
    return _unary(input, "erfinv", ErfinvBackward0, save_output=True)


# ---- clamp_min / clamp_max ----------
@export(torch=True, method=True)
def clamp_min(input, min):  # noqa: A002
    """``clamp(input, min=min)``: ``min`` a number or a tensor."""
    return clamp(input, min=min)


@export(torch=True, method=True)
def clamp_max(input, max):  # noqa: A002
    """``clamp(input, max=max)``: ``max`` a number or a tensor."""
    return clamp(input, max=max)


# ---- nan_to_num ----------
class NanToNumBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):  # PyTorch's g * isfinite(x)
        return (F.where_backward_a(g, F.constant(self.finite)),)


@export(torch=True, method=True)
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):  # noqa: A002
    """``input`` with NaN replaced by ``nan``, inf by ``posinf`` and -inf by ``neginf``
    (by default the largest and the lowest finite value of its dtype); integers are
    copied. The gradient passes where ``input`` is finite.

    >>> import gradcore as gc
    >>> gc.nan_to_num(gc.tensor([float("nan"), float("inf"), 1.0]), posinf=9.0)
    tensor([0., 9., 1.])
    """
    xd = input._data
    m = math_of(xd)
    if xd.dtype.kind != "f":
        return wrap(xd.copy())
    out = m.nan_to_num(xd, copy=True, nan=nan, posinf=posinf, neginf=neginf)
    if not (mode.enabled and input._rg):
        return wrap(out)
    t = record1(out, NanToNumBackward0, input)
    t.grad_fn.finite = m.isfinite(xd)
    return t


# ---- maximum / minimum / where ----------
# PyTorch's rule: the side that is smaller gets nothing, a tie half, otherwise (a NaN
# on either side included) the whole gradient (minimum: the same with a and b swapped)
declare(Kernel("maximum_backward_a", ("g", "a", "b"),
               "where(a < b, 0, where(a == b, 0.5 * g, g))",
               cpu=_twins.maximum_backward_a_cpu))
declare(Kernel("maximum_backward_b", ("g", "a", "b"),
               "where(b < a, 0, where(a == b, 0.5 * g, g))",
               cpu=_twins.maximum_backward_b_cpu))
class MaximumBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        a, b = self.unpack(F)
        return (F.maximum_backward_a(g, a, b) if self.needs(0) else None,
                F.maximum_backward_b(g, a, b) if self.needs(1) else None)


@export(torch=True, method=True)
def maximum(a, b):
    """Elementwise maximum; at ties each side gets half the gradient."""
    a, b = _both_tensors(a, b)
    return _binary("maximum", MaximumBackward0, None, None, _np_maximum, a, b,
                   save_inputs=True)


def _np_maximum(x, y):
    return math_of(x).maximum(x, y)


class MinimumBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        a, b = self.unpack(F)
        # min(a, b) = -max(-a, -b): the same tie rule, mirrored
        return (F.maximum_backward_a(g, b, a) if self.needs(0) else None,
                F.maximum_backward_b(g, b, a) if self.needs(1) else None)


@export(torch=True, method=True)
def minimum(a, b):
    """Elementwise minimum; at ties each side gets half the gradient."""
    a, b = _both_tensors(a, b)
    return _binary("minimum", MinimumBackward0, None, None, _np_minimum, a, b,
                   save_inputs=True)


def _np_minimum(x, y):
    return math_of(x).minimum(x, y)


def _both_tensors(a, b):
    if not isinstance(a, Tensor):
        a = as_tensor(a, b)
    if not isinstance(b, Tensor):
        b = as_tensor(b, a)
    return a, b


declare(Kernel("where_backward", ("g", "c"), ("where(c, g, 0)", "where(c, 0, g)"),
               masks=("c",), cpu=_twins.where_backward_cpu))
# ... one side of it (the other side needs no gradient)
declare(Kernel("where_backward_a", ("g", "c"), "where(c, g, 0)", masks=("c",),
               cpu=_twins.where_backward_a_cpu))
declare(Kernel("where_backward_b", ("g", "c"), "where(c, 0, g)", masks=("c",),
               cpu=_twins.where_backward_b_cpu))
class WhereBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        cond = F.constant(self.cond)
        if self.needs(0) and self.needs(1):
            return F.where_backward(g, cond)  # both in one pass
        return (F.where_backward_a(g, cond) if self.needs(0) else None,
                F.where_backward_b(g, cond) if self.needs(1) else None)


@export(torch=True)
def where(condition, a=None, b=None):
    """``a`` where ``condition`` holds, else ``b`` (broadcasting all three)."""
    if a is None and b is None:
        return _index.nonzero(condition, as_tuple=True)
    cond = as_tensor(condition)
    if cond._data.dtype.kind != "b":
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a "
                           f"tensor with dtype {cond.dtype!r}")
    x, y = binary_operands(a, b, "where") if (isinstance(a, Tensor) or isinstance(b, Tensor)) \
        else _both_tensors(as_tensor(a), as_tensor(b))
    x, y = _both_tensors(x, y)
    cd, xd, yd = cond._data, x._data, y._data
    m = math_of(xd)
    try:
        out = m.where(cd, xd, yd)
    except ValueError as exc:
        raise RuntimeError(f"where: shapes {tuple(cd.shape)}, {tuple(xd.shape)} and "
                           f"{tuple(yd.shape)} cannot be broadcast together ({exc})") from None
    if not (mode.enabled and (x._rg or y._rg)):
        return wrap(out)
    t = record(out, WhereBackward0, x, y)
    node = t.grad_fn
    node.cond = cd
    if xd.shape != out.shape or yd.shape != out.shape:
        node.shapes = (xd.shape, yd.shape)
    return t


# ---- casts ----------
class ToCopyBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        return (F.astype(g, self.src_dtype),)


def to_dtype(x: Tensor, dtype) -> Tensor:
    """``x`` converted to ``dtype``; differentiable (the gradient comes back converted)."""
    d = dtypes.to_dtype(dtype)
    xd = x._data
    if xd.dtype == d.np:
        return x
    out = xd.astype(d.np)
    if not (mode.enabled and x._rg) or not d.is_floating_point:
        return wrap(out)
    t = record(out, ToCopyBackward0, x)
    t.grad_fn.src_dtype = xd.dtype
    return t


# ---- comparisons and logic: results are bool and never tracked ----------
def _compare(op, fwd):
    def compare(a, b):
        x, y = binary_operands(a, b, op)
        xd = x._data if isinstance(x, Tensor) else x
        yd = y._data if isinstance(y, Tensor) else y
        try:
            return wrap(fwd(xd, yd))
        except ValueError as exc:
            raise _broadcast_error(op, x, y, exc) from None
    compare.__name__ = op
    compare.__doc__ = f"Elementwise ``{op}``: a bool tensor, never tracked."
    return compare


eq = export(torch=True, method=True)(_compare("eq", lambda x, y: x == y))
ne = export(torch=("ne", "not_equal"), method=("ne", "not_equal"))(
    _compare("ne", lambda x, y: x != y))
lt = export(torch=("lt", "less"), method=("lt", "less"))(_compare("lt", lambda x, y: x < y))
le = export(torch=("le", "less_equal"), method=("le", "less_equal"))(
    _compare("le", lambda x, y: x <= y))
gt = export(torch=("gt", "greater"), method=("gt", "greater"))(
    _compare("gt", lambda x, y: x > y))
ge = export(torch=("ge", "greater_equal"), method=("ge", "greater_equal"))(
    _compare("ge", lambda x, y: x >= y))
logical_and = export(torch=True, method=True)(_compare(
    "logical_and", lambda x, y: math_of(x if hasattr(x, "dtype") else y).logical_and(x, y)))
logical_or = export(torch=True, method=True)(_compare(
    "logical_or", lambda x, y: math_of(x if hasattr(x, "dtype") else y).logical_or(x, y)))
logical_xor = export(torch=True, method=True)(_compare(
    "logical_xor", lambda x, y: math_of(x if hasattr(x, "dtype") else y).logical_xor(x, y)))


class ComparisonBackward(Node):
    """``x.eq_(other)`` and the other comparisons in place: zero gradients (PyTorch's
    ``EqBackward0`` for a number, ``EqBackward1`` for a tensor)."""
    fresh_grads = True

    def apply(self, F, g):
        return tuple(F.zeros_like(g) for _ in self.next_functions)

    def name(self):
        return self.node_name


def comparison_in_place(compare):
    """The out-of-place form of ``x.<op>_(other)``: ``compare``'s bool result (which the
    in-place method writes into ``x`` as 1 and 0), recorded with a zero gradient when an
    operand requires grad, so that ``x``'s old history gets nothing."""
    op = compare.__name__

    def in_place(x, other):
        r = compare(x, other)
        inputs = [v for v in (x, other) if isinstance(v, Tensor)]
        if not (mode.enabled and any(v._rg for v in inputs)):
            return r
        t = record(r._data, ComparisonBackward, *inputs)
        node = t.grad_fn
        node.node_name = "".join(w.capitalize() for w in op.split("_")) + \
            f"Backward{len(inputs) - 1}"
        if len(inputs) == 2 and tuple(x.shape) != tuple(other.shape):
            node.shapes = (tuple(x.shape), tuple(other.shape))
        return t
    in_place.__name__ = op
    return in_place


def _bitwise(op, fwd, kernel=None):
    """``op`` of integer or bool operands computed by ``fwd`` on their arrays; floats
    raise PyTorch's error, naming its kernel (``kernel``, else ``op``)."""
    def bitwise(a, b):
        x, y = binary_operands(a, b, op)
        for v in (x, y):
            if isinstance(v, Tensor) and v._data.dtype.kind == "f":
                raise NotImplementedError(f'"{kernel or op}_cpu" not implemented for '
                                          f"'{dtypes.torch_name(v._data.dtype)}'")
        xd = x._data if isinstance(x, Tensor) else x
        yd = y._data if isinstance(y, Tensor) else y
        try:
            return wrap(fwd(xd, yd))
        except ValueError as exc:
            raise _broadcast_error(op, x, y, exc) from None
    bitwise.__name__ = op
    bitwise.__doc__ = (f"Elementwise ``{op}`` of integer or bool tensors (or Python ints), "
                       "with broadcasting; floating dtypes raise. Never tracked.")
    return bitwise


bitwise_and = export(torch=True, method=True)(_bitwise("bitwise_and", lambda x, y: x & y))
bitwise_or = export(torch=True, method=True)(_bitwise("bitwise_or", lambda x, y: x | y))
bitwise_xor = export(torch=True, method=True)(_bitwise("bitwise_xor", lambda x, y: x ^ y))


def _shift(op, left):
    """``x << y`` / ``x >> y`` as PyTorch computes them: a shift by a negative amount or
    by the type's width or more gives 0 (a right shift of a negative value: -1)."""
    def fwd(xd, yd):
        m = math_of(xd if hasattr(xd, "dtype") else yd)
        dt = m.result_type(xd, yd)
        if dt == np.bool_:  # (bool shifted: PyTorch promotes to int64)
            dt = np.dtype(np.int64)
        xa, ya = m.asarray(xd, dtype=dt), m.asarray(yd, dtype=dt)
        inside = (ya >= 0) & (ya < np.dtype(dt).itemsize * 8)
        amount = m.where(inside, ya, 0)
        if left:
            out = m.where(inside, m.left_shift(xa, amount), 0)
        else:
            out = m.where(inside, m.right_shift(xa, amount), m.where(xa < 0, -1, 0))
        return m.astype(out, dt)

    shift = _bitwise(op, fwd, "lshift" if left else "rshift")
    shift.__doc__ = (f"Elementwise ``{'x << y' if left else 'x >> y'}`` of integer tensors "
                     "(or Python ints), with broadcasting, as PyTorch: a shift by a negative "
                     "amount or by the type's width or more gives 0"
                     f"{'' if left else ' (-1 for a negative x)'}; floating dtypes raise. "
                     "Never tracked.")
    return shift


bitwise_left_shift = export(torch=True, method=True)(_shift("bitwise_left_shift", True))
bitwise_right_shift = export(torch=True, method=True)(_shift("bitwise_right_shift", False))


@export(torch=True, method=True)
def logical_not(x):
    """``True`` where ``x`` is zero (False), as a bool tensor; never tracked."""
    return wrap(math_of(x._data).logical_not(x._data))


@export(torch=True, method=True)
def bitwise_not(x):
    """Elementwise ``~x`` of an integer or bool tensor (logical not for bool); floating
    dtypes raise. Never tracked."""
    if x._data.dtype.kind == "f":
        raise NotImplementedError(f"\"bitwise_not_cpu\" not implemented for "
                                  f"'{dtypes.torch_name(x._data.dtype)}'")
    return wrap(~x._data)


@export(torch=True, method=True)
def isnan(x):
    """Where ``x`` is NaN (a bool tensor, never tracked).

    >>> import gradcore as gc
    >>> gc.tensor([1., float("nan"), float("inf")]).isnan()
    tensor([False,  True, False])
    """
    return wrap(math_of(x._data).isnan(x._data))


@export(torch=True, method=True)
def isfinite(x):
    """Where ``x`` is neither inf nor NaN (a bool tensor, never tracked; all True for
    integers)."""
    return wrap(math_of(x._data).isfinite(x._data))


@export(torch=True, method=True)
def isinf(x):
    """Where ``x`` is +inf or -inf (a bool tensor, never tracked)."""
    return wrap(math_of(x._data).isinf(x._data))


@export(torch=True, method=True)
def isposinf(input):  # noqa: A002
    """Where ``input`` is +inf (a bool tensor, never tracked)."""
    xd = input._data
    m = math_of(xd)
    if xd.dtype.kind != "f":
        return wrap(m.zeros(xd.shape, dtype=bool))
    return wrap(xd == np.inf)


@export(torch=True, method=True)
def isneginf(input):  # noqa: A002
    """Where ``input`` is -inf (a bool tensor, never tracked)."""
    xd = input._data
    m = math_of(xd)
    if xd.dtype.kind != "f":
        return wrap(m.zeros(xd.shape, dtype=bool))
    return wrap(xd == -np.inf)


@export(torch=True, method=True)
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    """Where ``|input - other| <= atol + rtol * |other|`` (broadcasting), or the two are
    equal (infinities included; NaNs too with ``equal_nan``): a bool tensor. Both
    tensors of one dtype, as in PyTorch.

    >>> import gradcore as gc
    >>> gc.isclose(gc.tensor([1.0, 2.0]), gc.tensor([1.0 + 1e-7, 2.1]))
    tensor([ True, False])
    """
    _tensor_pair("isclose", input, other)
    if input.dtype != other.dtype:
        raise RuntimeError(f"{dtypes.torch_name(input.dtype)} did not match "
                           f"{dtypes.torch_name(other.dtype)}")
    for name, v in (("rtol", rtol), ("atol", atol)):
        if v < 0:
            raise RuntimeError(f"{name} must be greater than or equal to zero, but got "
                               f"{v:g}")
    a, b = input._data, other._data
    check_same_device(a, b, "isclose")
    m = math_of(a)
    try:
        close = a == b
    except ValueError as exc:
        raise _broadcast_error("isclose", a, b, exc) from None
    if equal_nan and a.dtype.kind == "f":
        close = close | (m.isnan(a) & m.isnan(b))
    if rtol == 0 and atol == 0:
        return wrap(m.asarray(close))
    if a.dtype.kind != "f":  # integers and bools: the tolerance in the default float
        f = dtypes.default_float.np
        a, b = a.astype(f), b.astype(f)
    allowed = atol + m.abs(rtol * b)
    actual = m.abs(a - b)
    return wrap(m.asarray(close | (m.isfinite(actual) & (actual <= allowed))))


@export(torch=True, method=True)
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:  # noqa: A002
    """Whether :func:`isclose` holds everywhere (a Python bool)."""
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


@export(torch=True, method=True)
def equal(input, other) -> bool:  # noqa: A002
    """Whether the two tensors have the same shape and the same elements (a Python
    bool; values compared after type promotion, NaN equal to nothing)."""
    _tensor_pair("equal", input, other)
    check_same_device(input._data, other._data, "equal")
    if input._data.shape != other._data.shape:
        return False
    return bool(eq(input, other)._data.all())


# ---- issue 14: more pointwise ops of PyTorch (forward, rule and kernel together) ----------
class SgnBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        return (0 * g,)


@export(torch=True, method=True)
def sgn(input):  # noqa: A002
    """The sign of ``input``: :func:`sign` for real tensors (-1, 0 or 1, 0 at NaN; a
    bool tensor is itself); zero gradient.

    >>> import gradcore as gc
    >>> gc.sgn(gc.tensor([-2.0, 0.0, 3.0]))
    tensor([-1.,  0.,  1.])
    """
    if isinstance(input, Tensor) and input._data.dtype.kind == "b":
        return wrap(input._data.copy())
    return _unary(input, "sign", SgnBackward0, floating=False)


@export(torch=True, method=True)
def signbit(input):  # noqa: A002
    """Where the sign bit of ``input`` is set (``-0.0`` and NaNs with the bit included),
    as a bool tensor; never tracked.

    >>> import gradcore as gc
    >>> gc.signbit(gc.tensor([-1.0, -0.0, 0.0, 2.0]))
    tensor([ True,  True, False, False])
    """
    xd = input._data
    m = math_of(xd)
    if xd.dtype.kind == "f":
        return wrap(m.signbit(xd))
    if xd.dtype.kind in "ub":
        return wrap(m.zeros(xd.shape, dtype=bool))
    return wrap(xd < 0)


# PyTorch's logit_backward: without eps, g / (x * (1 - x)), NaN outside [0, 1]; with eps,
# g / (x * (1 - x)) inside [eps, 1 - eps] and 0 outside (sqrt(negative) is the NaN)
declare(Kernel("logit_backward", ("g", "x"),
               "where(x * (1 - x) < 0, sqrt(x * (1 - x)), g / (x * (1 - x)))"))
declare(Kernel("logit_backward_eps", ("g", "x", "lo", "hi"),
               "where(x < lo, 0, where(x > hi, 0, g / (x * (1 - x))))"))
class LogitBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        if self.eps is None or self.eps < 0:
            return (F.logit_backward(g, x),)
        # the bounds in x's dtype, as PyTorch's kernel holds them (x == eps in float16)
        dt = getattr(x.dtype, "np", x.dtype)  # (a tensor's, for create_graph: its NumPy dtype)
        lo = float(np.asarray(self.eps, dtype=dt))
        return (F.logit_backward_eps(g, x, lo, float(np.asarray(1.0 - self.eps, dt))),)


@export(torch=True, method=True)
def logit(input, eps=None):  # noqa: A002
    """``log(p / (1 - p))``, ``p`` being ``input`` clamped to ``[eps, 1 - eps]`` when
    ``eps`` is given (its gradient is then 0 outside that range); integers give
    float32.

    >>> import gradcore as gc
    >>> gc.logit(gc.tensor([0.0, 0.5, 0.75]), eps=1e-6)
    tensor([-13.8155,   0.0000,   1.0986])
    """
    x = _float(as_tensor(input))
    xd = x._data
    m = math_of(xd)
    z = xd
    if eps is not None:  # (PyTorch's clamp: lo wins where lo > 1 - eps)
        z = m.where(xd < eps, eps, m.where(xd > 1 - eps, 1 - eps, xd)).astype(xd.dtype,
                                                                             copy=False)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = m.log(z / (1 - z)).astype(xd.dtype, copy=False)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record1(out, LogitBackward0, x)
    t.grad_fn.eps = eps
    t.grad_fn.saved = (x,)
    t.grad_fn.versions = (x._version,)
    return t


# d/dx sin(pi x) / (pi x) = (p cos(p) - sin(p)) / (p x), p = pi x; 0 at 0 (PyTorch's)
declare(Kernel("sinc_backward", ("g", "x"),
               "where(x == 0, 0, g * ((p * cos(p) - sin(p)) / (p * x)))",
               lets=(("p", "x * 3.141592653589793"),)))
class SincBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (F.sinc_backward(g, x),)


@export(torch=True, method=True)
def sinc(input):  # noqa: A002
    """The normalized sinc, ``sin(pi x) / (pi x)``, and 1 at 0; integers give float32.

    >>> import gradcore as gc
    >>> gc.sinc(gc.tensor([0.0, 0.5]))
    tensor([1.0000, 0.6366])
    """
    x = _float(as_tensor(input))
    xd = x._data
    m = math_of(xd)
    p = xd * np.pi  # (in x's dtype, as PyTorch: sinc(1.0) is sin(float(pi)) / float(pi))
    with np.errstate(divide="ignore", invalid="ignore"):
        out = m.where(xd == 0, 1, m.sin(p) / p).astype(xd.dtype, copy=False)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record1(out, SincBackward0, x)
    t.grad_fn.saved = (x,)
    t.grad_fn.versions = (x._version,)
    return t


class Deg2RadBackward0(Node):
    fresh_grads = True
    factor = np.pi / 180

    def apply(self, F, g):
        return (g * self.factor,)


class Rad2DegBackward0(Deg2RadBackward0):
    factor = 180 / np.pi


def _scaled(input, cls):
    x = _float(as_tensor(input))
    out = x._data * cls.factor
    if not (mode.enabled and x._rg):
        return wrap(out)
    return record1(out, cls, x)


@export(torch=True, method=True)
def deg2rad(input):  # noqa: A002
    """Degrees to radians, ``input * pi / 180``; integers give float32.

    >>> import gradcore as gc
    >>> gc.deg2rad(gc.tensor([180.0, 90.0]))
    tensor([3.1416, 1.5708])
    """
    return _scaled(input, Deg2RadBackward0)


@export(torch=True, method=True)
def rad2deg(input):  # noqa: A002
    """Radians to degrees, ``input * 180 / pi``; integers give float32.

    >>> import gradcore as gc
    >>> gc.rad2deg(gc.tensor([3.141592653589793]))
    tensor([180.])
    """
    return _scaled(input, Rad2DegBackward0)


def _as_double(v):
    if isinstance(v, Tensor):
        return to_dtype(v, dtypes.float64)
    if isinstance(v, (bool, np.bool_)):
        return float(v)
    return v


@export(torch=True, method=True)
def float_power(input, exponent):  # noqa: A002
    """``input ** exponent`` computed in float64 (the result is float64 whatever the
    operands' dtypes); either may be a number. Gradients as :func:`pow`'s.

    >>> import gradcore as gc
    >>> gc.float_power(gc.tensor([2, -3]), 2)
    tensor([4., 9.], dtype=gradcore.float64)
    """
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError(f"float_power(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if isinstance(exponent, complex) or isinstance(input, complex):
        raise TypeError("float_power: complex operands are not supported by gradcore")
    return pow(_as_double(input), _as_double(exponent))


def float_power_in_place_form(input, exponent):  # noqa: A002
    """The out-of-place form of ``input.float_power_(exponent)``: ``input`` must be
    float64 already, as PyTorch requires."""
    if input._data.dtype != np.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype "
                           f"{dtypes.torch_name(input.dtype)} but the "
                           f"operation's result requires dtype Double")
    return float_power(input, exponent)


# PyTorch's FmaxBackward0: `input` takes the gradient where input >= other or other is
# NaN, `other` elsewhere (fmin: the same with <=)
declare(Kernel("fmax_backward", ("g", "a", "b"),
               ("where(a >= b, g, where(b != b, g, 0))", "where(a >= b, 0, where(b != b, 0, g))")))
class FmaxBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        a, b = self.unpack(F)
        ga, gb = F.fmax_backward(g, a, b)
        return (ga if self.needs(0) else None), (gb if self.needs(1) else None)


declare(Kernel("fmin_backward", ("g", "a", "b"),
               ("where(a <= b, g, where(b != b, g, 0))", "where(a <= b, 0, where(b != b, 0, g))")))
class FminBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        a, b = self.unpack(F)
        ga, gb = F.fmin_backward(g, a, b)
        return (ga if self.needs(0) else None), (gb if self.needs(1) else None)


def _np_fmax(x, y):
    return math_of(x).fmax(x, y)


def _np_fmin(x, y):
    return math_of(x).fmin(x, y)


@export(torch=True, method=True)
def fmax(input, other):  # noqa: A002
    """The elementwise maximum that ignores NaN: the other value where one is NaN (NaN
    where both are); tensors of any dtypes (promoted). At ties ``input`` takes the
    gradient.

    >>> import gradcore as gc
    >>> gc.fmax(gc.tensor([1.0, float("nan"), 3.0]), gc.tensor([2.0, 0.5, float("nan")]))
    tensor([2.0000, 0.5000, 3.0000])
    """
    _tensor_pair("fmax", input, other)
    return _binary("fmax", FmaxBackward0, None, None, _np_fmax, input, other,
                   save_inputs=True)


@export(torch=True, method=True)
def fmin(input, other):  # noqa: A002
    """The elementwise minimum that ignores NaN: the other value where one is NaN (NaN
    where both are); tensors of any dtypes (promoted). At ties ``input`` takes the
    gradient.

    >>> import gradcore as gc
    >>> gc.fmin(gc.tensor([1.0, float("nan")]), gc.tensor([2.0, 0.5]))
    tensor([1.0000, 0.5000])
    """
    _tensor_pair("fmin", input, other)
    return _binary("fmin", FminBackward0, None, None, _np_fmin, input, other,
                   save_inputs=True)


def _integer_pair(op, input, other):
    """Two tensors of integer dtypes (after promotion), as PyTorch's ``<op>_cpu``
    kernels take."""
    _tensor_pair(op, input, other)
    x, y = binary_operands(input, other, op)
    kind = x._data.dtype
    if kind.kind not in "iu":
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for "
                                  f"'{dtypes.torch_name(dtypes.from_numpy_dtype(kind))}'")
    return x, y


@export(torch=True, method=True)
def gcd(input, other):  # noqa: A002
    """The greatest common divisor of integer tensors, elementwise (non-negative;
    ``gcd(0, 0)`` is 0); never tracked.

    >>> import gradcore as gc
    >>> gc.gcd(gc.tensor([4, -6, 0]), gc.tensor([6, 4, 5]))
    tensor([2, 2, 5])
    """
    x, y = _integer_pair("gcd", input, other)
    return _no_grad_binary("gcd", x, y, lambda a, b: math_of(a).gcd(a, b))


@export(torch=True, method=True)
def lcm(input, other):  # noqa: A002
    """The least common multiple of integer tensors, elementwise (non-negative; 0 where
    either is 0); never tracked.

    >>> import gradcore as gc
    >>> gc.lcm(gc.tensor([4, -6, 0]), gc.tensor([6, 4, 5]))
    tensor([12, 12,  0])
    """
    x, y = _integer_pair("lcm", input, other)
    return _no_grad_binary("lcm", x, y, lambda a, b: math_of(a).lcm(a, b))


class NotDifferentiable(Node):
    """An op PyTorch records without a derivative: backward through it raises."""
    def apply(self, F, g):
        raise RuntimeError(f"derivative for aten::{self.op} is not implemented")

    def name(self):
        return "NotImplemented"


@export(torch=True, method=True)
def heaviside(input, values):  # noqa: A002
    """The Heaviside step: 0 where ``input < 0``, 1 where ``input > 0`` (and NaN),
    ``values`` where ``input == 0``; two tensors of one dtype, broadcast. Not
    differentiable (backward through it raises, as in PyTorch).

    >>> import gradcore as gc
    >>> gc.heaviside(gc.tensor([-1.5, 0.0, 2.0]), gc.tensor(0.5))
    tensor([0.0000, 0.5000, 1.0000])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"heaviside(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if not isinstance(values, Tensor):
        raise TypeError(f"heaviside(): argument 'values' (position 2) must be Tensor, not "
                        f"{type(values).__name__}")
    if input._data.dtype != values._data.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different "
                           "dtypes.")
    xd, vd = input._data, values._data
    check_same_device(xd, vd, "heaviside")
    m = math_of(xd)
    try:
        out = m.where(xd == 0, vd, (xd > 0).astype(xd.dtype)).astype(xd.dtype, copy=False)
    except ValueError as exc:
        raise _broadcast_error("heaviside", input, values, exc) from None
    if not (mode.enabled and (input._rg or values._rg)):
        return wrap(out)
    t = record(out, NotDifferentiable, input, values)
    t.grad_fn.op = "heaviside"
    return t


frexp_result = namedtuple("frexp", ["mantissa", "exponent"])


class FrexpBackward0(Node):  # g / 2 ** exponent
    fresh_grads = True
    half = False  # float16: the scale is float32, the gradient rounded back

    def apply(self, F, g):
        out = g * F.constant(self.scale)
        return (F.astype(out, np.float16) if self.half else out,)


@export(torch=True, method=True)
def frexp(input):  # noqa: A002
    """``(mantissa, exponent)`` with ``input == mantissa * 2 ** exponent``, the
    mantissa in ``[0.5, 1)`` in magnitude (0, inf and NaN as they are, exponent 0) and
    the exponent int32; floating tensors only. The mantissa's gradient is
    ``g / 2 ** exponent``.

    >>> import gradcore as gc
    >>> gc.frexp(gc.tensor([3.0, -0.25]))
    frexp(mantissa=tensor([ 0.7500, -0.5000]), exponent=tensor([ 2, -1], dtype=gradcore.int32))
    """
    xd = input._data
    if xd.dtype.kind != "f":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    m = math_of(xd)
    mantissa, exponent = m.frexp(xd)
    exponent = exponent.astype(np.int32, copy=False)
    mantissa = mantissa.astype(xd.dtype, copy=False)
    if not (mode.enabled and input._rg):
        return frexp_result(wrap(mantissa), wrap(exponent))
    t = record1(mantissa, FrexpBackward0, input)
    # 2 ** -exponent, exact (float16's subnormals need exponents float16 cannot scale by)
    scale_dtype = np.float32 if xd.dtype == np.float16 else xd.dtype
    t.grad_fn.scale = m.ldexp(m.ones(xd.shape, dtype=scale_dtype), -exponent)
    t.grad_fn.half = xd.dtype == np.float16
    return frexp_result(t, wrap(exponent))


# PyTorch's LdexpBackward0: g * 2 ** other, and g * input * log(2) * 2 ** other
class LdexpBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        a, b = self.unpack(F)
        scale = 2.0 ** b
        return (g * scale if self.needs(0) else None,
                g * a * scale * 0.6931471805599453 if self.needs(1) else None)


@export(torch=True, method=True)
def ldexp(input, other):  # noqa: A002
    """``input * 2 ** other``, two tensors broadcast, computed in their promoted
    floating dtype (integers give float32).

    >>> import gradcore as gc
    >>> gc.ldexp(gc.tensor([1.0, 3.0]), gc.tensor([2, -1]))
    tensor([4.0000, 1.5000])
    """
    _tensor_pair("ldexp", input, other)
    if input._data.dtype.kind == "f" and other._data.dtype.kind == "b":
        raise NotImplementedError("\"ldexp_cpu_exp\" not implemented for 'Bool'")
    x, y = binary_operands(input, other, "ldexp", float_result=True)
    xd, yd = x._data, y._data
    try:
        out = xd * math_of(xd).exp2(yd)
    except ValueError as exc:
        raise _broadcast_error("ldexp", x, y, exc) from None
    if not (mode.enabled and (x._rg or y._rg)):
        return wrap(out)
    t = record(out, LdexpBackward0, x, y)
    node = t.grad_fn
    node.save(x, y)
    if xd.shape != yd.shape:
        node.shapes = (xd.shape, yd.shape)
    return t


# PyTorch's NextafterBackward0: g for input, but 0 where input == other (the result is
# other there); zeros for other
declare(Kernel("nextafter_backward", ("g", "a", "b"), "where(a == b, 0, g)"))
class NextafterBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        a, b = self.unpack(F)
        return (F.nextafter_backward(g, a, b) if self.needs(0) else None,
                F.zeros_like(g) if self.needs(1) else None)


def _np_nextafter(x, y):
    return math_of(x).nextafter(x, y)


@export(torch=True, method=True)
def nextafter(input, other):  # noqa: A002
    """The next floating-point value after ``input`` toward ``other``, elementwise
    (floating tensors, broadcast).

    >>> import gradcore as gc
    >>> gc.nextafter(gc.tensor([1.0], dtype=gc.float64), gc.tensor([2.0], dtype=gc.float64)) - 1
    tensor([2.2204e-16], dtype=gradcore.float64)
    """
    _tensor_pair("nextafter", input, other)
    x, y = binary_operands(input, other, "nextafter")
    if x._data.dtype.kind != "f":
        raise NotImplementedError(f"\"nextafter_cpu\" not implemented for "
                                  f"'{dtypes.torch_name(x.dtype)}'")
    return _binary("nextafter", NextafterBackward0, None, None, _np_nextafter, x, y,
                   save_inputs=True)


# ---- the gamma family and the Bessel function i0 (gradcore.backend's formulas) ----------
class LgammaBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (g * F.digamma(x),)


@export(torch=True, method=True)
def lgamma(input):  # noqa: A002
    """``log|Gamma(input)|`` (inf at 0 and the negative integers); integers give
    float32. Its gradient is :func:`digamma`.

    >>> import gradcore as gc
    >>> gc.lgamma(gc.tensor([0.5, 1.0, 10.0]))
    tensor([ 0.5724,  0.0000, 12.8018])
    """
    return _unary(input, "lgamma", LgammaBackward0, save_input=True)


class DigammaBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (g * F.polygamma(1, x),)


@export(torch=True, method=True)
def digamma(input):  # noqa: A002
    """The logarithmic derivative of Gamma, ``Gamma'(x) / Gamma(x)``: -inf at 0 (inf at
    -0), NaN at the negative integers; integers give float32.

    >>> import gradcore as gc
    >>> gc.digamma(gc.tensor([1.0, 0.5]))
    tensor([-0.5772, -1.9635])
    """
    return _unary(input, "digamma", DigammaBackward0, save_input=True)


class PolygammaBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (g * F.polygamma(self.n + 1, x),)


@export(torch=True)
def polygamma(n, input):  # noqa: A002
    """The ``n``-th derivative of :func:`digamma` (``n = 0``: digamma itself), as
    PyTorch computes it; integers give float32. ``Tensor.polygamma(n)`` is
    ``polygamma(n, self)``.

    >>> import gradcore as gc
    >>> gc.polygamma(1, gc.tensor([1.0, 2.0]))
    tensor([1.6449, 0.6449])
    """
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    x = _float(as_tensor(input))
    xd = x._data
    out = math_of(xd).polygamma(int(n), xd)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record1(out, PolygammaBackward0, x)
    t.grad_fn.n = int(n)
    t.grad_fn.saved = (x,)
    t.grad_fn.versions = (x._version,)
    return t


def polygamma_method(self, n):
    """``polygamma(n, self)``: the ``n``-th derivative of :func:`digamma`."""
    return polygamma(n, self)


@export(torch=True, method=True)
def mvlgamma(input, p):  # noqa: A002
    """The multivariate log-gamma function of dimension ``p``: ``sum_i lgamma(input - i /
    2)`` over ``i < p``, plus ``p (p - 1) / 4 * log(pi)``; integers give float32.

    >>> import gradcore as gc
    >>> gc.mvlgamma(gc.tensor([2.5, 3.0]), 2)
    tensor([0.8570, 1.5502])
    """
    if not isinstance(p, (int, np.integer)) or isinstance(p, bool):
        raise TypeError(f"mvlgamma(): argument 'p' (position 2) must be int, not "
                        f"{type(p).__name__}")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = _float(as_tensor(input))
    m = math_of(x._data)
    offsets = wrap(m.asarray(np.arange(-(p - 1) / 2, 0.5, 0.5), dtype=x._data.dtype))
    terms = lgamma(add(x.unsqueeze(-1), offsets))
    return add(terms.sum(-1), p * (p - 1) / 4 * float(np.log(np.pi)))


class I0Backward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (g * F.i1(x),)


@export(torch=True, method=True)
def i0(input):  # noqa: A002
    """The modified Bessel function of the first kind of order 0; integers give
    float32. Its gradient is ``i1``.

    >>> import gradcore as gc
    >>> gc.i0(gc.tensor([0.0, 1.0]))
    tensor([1.0000, 1.2661])
    """
    x = _float(as_tensor(input))
    xd = x._data
    out = math_of(xd).i0(xd).astype(xd.dtype, copy=False)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record1(out, I0Backward0, x)
    t.grad_fn.saved = (x,)
    t.grad_fn.versions = (x._version,)
    return t


class SpecialI1Backward0(Node):  # i0(x) - i1(x) / x, and 1/2 at 0
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        y = self.output(F)
        safe = F.where(x == 0, 1.0, x)
        return (g * F.where(x == 0, 0.5, F.i0(x) - y / safe),)


def i1(input):  # noqa: A002
    """The modified Bessel function of the first kind of order 1 (PyTorch's
    ``torch.special.i1``): :func:`i0`'s derivative, differentiable itself."""
    x = _float(as_tensor(input))
    xd = x._data
    out = math_of(xd).i1(xd)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record1(out, SpecialI1Backward0, x)
    t.grad_fn.saved = (x,)
    t.grad_fn.versions = (x._version,)
    t.grad_fn.save_output(t)
    return t


# ---- torch.special's scaled and normal-distribution functions (gradcore.special) -------
class SpecialI0EBackward0(Node):  # i1e(x) - sign(x) i0e(x)
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (g * (F.i1e(x) - F.sign(x) * self.output(F)),)


def i0e(input):  # noqa: A002
    """``exp(-|x|) * i0(x)``, finite where :func:`i0` overflows (PyTorch's
    ``torch.special.i0e``); integers give float32."""
    return _unary(input, "i0e", SpecialI0EBackward0, save_input=True, save_output=True)


class SpecialI1EBackward0(Node):  # i0e(x) - i1e(x) (sign(x) + 1 / x), and 1/2 at 0
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        y = self.output(F)
        safe = F.where(x == 0, 1.0, x)
        return (g * F.where(x == 0, 0.5, F.i0e(x) - y * (F.sign(x) + 1.0 / safe)),)


def i1e(input):  # noqa: A002
    """``exp(-|x|) * i1(x)`` (PyTorch's ``torch.special.i1e``); integers give float32."""
    return _unary(input, "i1e", SpecialI1EBackward0, save_input=True, save_output=True)


class SpecialErfcxBackward0(Node):  # 2 x erfcx(x) - 2 / sqrt(pi)
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (g * (2.0 * x * self.output(F) - 1.1283791670955126),)


def erfcx(input):  # noqa: A002
    """The scaled complementary error function ``exp(x**2) * erfc(x)`` (PyTorch's
    ``torch.special.erfcx``), accurate where ``erfc`` underflows; integers give
    float32."""
    return _unary(input, "erfcx", SpecialErfcxBackward0, save_input=True, save_output=True)


class SpecialNdtriBackward0(Node):  # sqrt(2 pi) exp(ndtri(p)**2 / 2)
    fresh_grads = True

    def apply(self, F, g):
        y = self.output(F)
        return (g * 2.5066282746310002 * F.exp(0.5 * y * y),)


def ndtri(input):  # noqa: A002
    """The inverse of the standard normal distribution function (PyTorch's
    ``torch.special.ndtri``): -inf at 0, inf at 1, NaN outside; integers give float32."""
    return _unary(input, "ndtri", SpecialNdtriBackward0, save_input=True, save_output=True)


class SpecialLogNdtrBackward0(Node):  # pdf / cdf = sqrt(2 / pi) / erfcx(-x / sqrt(2))
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (g * 0.7978845608028654 / F.erfcx(x * -0.7071067811865476),)


def log_ndtr(input):  # noqa: A002
    """``log(ndtr(x))``, accurate in both tails (PyTorch's ``torch.special.log_ndtr``):
    ``log(erfcx(-x / sqrt(2)) / 2) - x**2 / 2`` below 0, ``log1p(-erfc(x / sqrt(2)) /
    2)`` above; integers give float32."""
    x = _float(as_tensor(input))
    xd = x._data
    m = math_of(xd)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        neg = m.minimum(xd, 0).astype(np.float64)
        low = m.log(0.5 * m.erfcx(neg * -0.7071067811865476)) - 0.5 * neg * neg
        high = m.log1p(-0.5 * m.erfc(m.maximum(xd, 0).astype(np.float64) *
                                     0.7071067811865476))
    out = m.where(xd < 0, low, high).astype(xd.dtype)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record1(out, SpecialLogNdtrBackward0, x)
    t.grad_fn.saved = (x,)
    t.grad_fn.versions = (x._version,)
    return t


class SpecialEntrBackward0(Node):  # -(1 + log(x)), as PyTorch's (inf at 0)
    fresh_grads = True

    def apply(self, F, g):
        (x,) = self.unpack(F)
        return (g * -(1.0 + F.log(x)),)


def entr(input):  # noqa: A002
    """The elementwise entropy ``-x log(x)``: 0 at 0, -inf below (PyTorch's
    ``torch.special.entr``); integers give float32."""
    x = _float(as_tensor(input))
    xd = x._data
    m = math_of(xd)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = m.where(xd > 0, -xd * m.log(m.where(xd > 0, xd, 1)),
                      m.where(xd == 0, 0, m.where(xd < 0, -np.inf, xd))).astype(xd.dtype)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record1(out, SpecialEntrBackward0, x)
    t.grad_fn.saved = (x,)
    t.grad_fn.versions = (x._version,)
    return t


class SpecialZetaBackward0(Node):  # other: -x zeta(x + 1, q); PyTorch has none for x
    fresh_grads = True

    def apply(self, F, g):
        if self.needs(0):
            raise NotImplementedError("the derivative for 'zeta' is not implemented.")
        x, q = self.unpack(F)
        return None, g * -x * F.zeta(x + 1.0, q)


def zeta(input, other):  # noqa: A002
    """The Hurwitz zeta function ``sum_k (k + other)**-input`` (PyTorch's
    ``torch.special.zeta``); either may be a number, integers give float32. The
    gradient of ``other`` only (PyTorch has none for ``input``: backward through it
    raises)."""
    x, y = binary_operands(input, other, "zeta", True)
    if not isinstance(x, Tensor):
        x = as_tensor(x, y).to(dtype=y.dtype)
    if not isinstance(y, Tensor):
        y = as_tensor(y, x).to(dtype=x.dtype)
    xd, yd = x._data, y._data
    try:
        math_of(xd).broadcast_shapes(xd.shape, yd.shape)
    except ValueError as exc:
        raise _broadcast_error("zeta", x, y, exc) from None
    out = math_of(xd).zeta(xd, yd).astype(xd.dtype, copy=False)
    if not (mode.enabled and (x._rg or y._rg)):
        return wrap(out)
    t = record(out, SpecialZetaBackward0, x, y)
    node = t.grad_fn
    node.save(x, y)
    if xd.shape != yd.shape:
        node.shapes = (xd.shape, yd.shape)
    return t


# PyTorch's IgammaBackward0: no derivative for `input` (backward raises), and
# g * exp((a - 1) log(x) - x - lgamma(a)) for `other` (igammac: its negative)
class IgammaBackward0(Node):
    fresh_grads = True
    op = "igamma"

    def apply(self, F, g):
        if self.needs(0):
            raise NotImplementedError(f"the derivative for '{self.op}: input' is not "
                                      "implemented.")
        a, x = self.unpack(F)
        d = g * F.exp((a - 1) * F.log(x) - x - F.lgamma(a))
        return None, (-d if self.op == "igammac" else d)


class IgammacBackward0(IgammaBackward0):
    op = "igammac"


def _incomplete_gamma(op, cls, input, other):  # noqa: A002
    _tensor_pair(op, input, other)
    x, y = binary_operands(input, other, op)
    if x._data.dtype.kind != "f":
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for "
                                  f"'{dtypes.torch_name(x.dtype)}'")
    xd, yd = x._data, y._data
    try:
        math_of(xd).broadcast_shapes(xd.shape, yd.shape)
    except ValueError as exc:
        raise _broadcast_error(op, x, y, exc) from None
    out = math_of(xd).igamma(xd, yd, upper=op == "igammac").astype(xd.dtype, copy=False)
    if not (mode.enabled and (x._rg or y._rg)):
        return wrap(out)
    t = record(out, cls, x, y)
    node = t.grad_fn
    node.save(x, y)
    if xd.shape != yd.shape:
        node.shapes = (xd.shape, yd.shape)
    return t


@export(torch=True, method=True)
def igamma(input, other):  # noqa: A002
    """The regularized lower incomplete gamma function ``P(input, other)``: ``1 /
    Gamma(a) * integral_0^x t^(a-1) e^-t dt``; floating tensors, broadcast. The gradient
    of ``other`` only (PyTorch has none for ``input``: backward through it raises).

    >>> import gradcore as gc
    >>> gc.igamma(gc.tensor([1.0, 2.0]), gc.tensor([1.0, 0.5]))
    tensor([0.6321, 0.0902])
    """
    return _incomplete_gamma("igamma", IgammaBackward0, input, other)


@export(torch=True, method=True)
def igammac(input, other):  # noqa: A002
    """The regularized upper incomplete gamma function ``Q(input, other) = 1 -
    igamma(input, other)``, accurate where it is small; gradients as :func:`igamma`'s.

    >>> import gradcore as gc
    >>> gc.igammac(gc.tensor([1.0, 2.0]), gc.tensor([1.0, 0.5]))
    tensor([0.3679, 0.9098])
    """
    return _incomplete_gamma("igammac", IgammacBackward0, input, other)



# ---- torch.special's Bessel functions and orthogonal polynomials (gradcore.special):
# PyTorch defines no derivatives for them and its outputs never require grad; computed by
# gradcore._cephes as PyTorch's Math.h
def _no_half(op, data):
    if data.dtype == np.float16:
        raise NotImplementedError(f"\"{op}_{'cpu' if math_of(data).values_on_host else 'cuda'}"
                                  f"\" not implemented for 'Half'")


def special_bessel(name, input):  # noqa: A002
    """The Bessel-type function ``name`` of gradcore._cephes at ``input`` (a tensor;
    integers give float32), without a graph."""
    if not isinstance(input, Tensor):
        raise TypeError(f"special_{name}(): argument 'input' (position 1) must be Tensor, "
                        f"not {type(input).__name__}")
    xd = _float(input)._data
    _no_half(name, xd)
    return wrap(math_of(xd).bessel(name, xd))


def special_polynomial(name, input, n):  # noqa: A002
    """The orthogonal polynomial ``name`` of degree ``n`` at ``input`` (either may be a
    number; computed in their promoted floating dtype, ``n`` truncated to an integer and
    NaN, infinite or out-of-range degrees read as negative: 0), without a graph."""
    if not isinstance(input, Tensor) and not isinstance(n, Tensor):
        raise TypeError(
            f"special_{name}() received an invalid combination of arguments - got "
            f"({type(input).__name__}, {type(n).__name__}), but expected one of:\n"
            " * (Tensor x, Tensor n, *, Tensor out = None)\n"
            " * (Number x, Tensor n, *, Tensor out = None)\n"
            " * (Tensor x, Number n, *, Tensor out = None)\n")
    x, y = binary_operands(input, n, name, True)
    if not isinstance(x, Tensor):
        x = as_tensor(x, y).to(dtype=y.dtype)
    if not isinstance(y, Tensor):
        y = as_tensor(y, x).to(dtype=x.dtype)
    xd, nd = x._data, y._data
    _no_half(name, xd)
    m = math_of(xd)
    try:
        m.broadcast_shapes(xd.shape, nd.shape)
    except ValueError as exc:
        raise _broadcast_error(name, x, y, exc) from None
    with np.errstate(invalid="ignore"):
        degree = m.where(m.isfinite(nd) & (m.abs(nd) < 9.2e18), nd, -1.0).astype(np.int64)
    return wrap(m.orthogonal_polynomial(name, xd, degree))

# The NumPy ufunc behind each elementwise forward, for writing into a temporary operand
# (only NumPy arrays are reusable).
_UFUNCS = {_np_add: np.add, _np_sub: np.subtract, _np_mul: np.multiply, _np_div: np.divide}
