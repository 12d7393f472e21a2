"""Shape ops: views and rearrangements (reshape, permute, expand, cat, split, ...)."""

from __future__ import annotations

import builtins
import itertools
import warnings

import numpy as np

from .. import dtypes
from ..backend import check_range, math_of
from . import device as _device_ops
from . import index as _index
from ._core import (  # noqa: F401
    Node,
    Tensor,
    int_arg,
    make_view,
    mode,
    normalize_dim,
    normalize_dims,
    record,
    wrap,
)
from ._export import export


def _shape_arg(shape, op=""):
    """``(2, 3)``, ``[2, 3]`` or ``2, 3`` as a tuple of ints (a float is PyTorch's
    TypeError, not truncated)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    return tuple(s if type(s) is int else int_arg(s, op, "shape", i) for i, s in enumerate(shape))


def _no_dims_error(dim):
    return IndexError(f"Dimension specified as {dim} but tensor has no dimensions")


def _view_of(out, x: Tensor, node_cls, **attrs) -> Tensor:
    """Result of a view op: shares ``x``'s version counter, records ``node_cls``."""
    if mode.enabled and x._rg:
        t = record(out, node_cls, x)
        node = t.grad_fn
        for k, v in attrs.items():
            setattr(node, k, v)
    else:
        t = wrap(out)
    if out.base is not None or out is x._data:
        make_view(t, x)
    return t


def _copied(out, xd) -> bool:
    """Whether ``out``, the result of a reshape of ``xd``, is a copy: a view's base is
    the owner of ``xd``'s memory (NumPy and CuPy point views at it), a copy's is not."""
    if out is xd:  # (an array module may return the array itself for its own shape)
        return False
    owner = xd.base
    return out.base is not (xd if owner is None else owner)


# ---- reshape family ----------
class ViewBackward0(Node):
    def apply(self, F, g):
        return (g.reshape(self.in_shape),)


def _infer_shape(shape, size, op, in_shape):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError(f"{op}: only one dimension can be inferred")
    known = int(np.prod([s for s in shape if s != -1])) if shape else 1
    if neg:
        if known == 0 or size % known:
            raise RuntimeError(f"{op}: shape '{list(shape)}' is invalid for input of size "
                               f"{size} (input shape {tuple(in_shape)})")
        shape[neg[0]] = size // known
    elif known != size:
        raise RuntimeError(f"{op}: shape '{list(shape)}' is invalid for input of size {size} "
                           f"(input shape {tuple(in_shape)})")
    return tuple(shape)


@export(torch=True, method=True)
def reshape(x, *shape):
    """The same elements in a new shape (a view when possible; ``-1`` is inferred)."""
    xd = x._data
    shape = _infer_shape(_shape_arg(shape, "reshape"), xd.size, "reshape", xd.shape)
    out = xd.reshape(shape)
    if _copied(out, xd):  # (not a view of x: in-place changes of either stay apart)
        if not (mode.enabled and x._rg):
            return wrap(out)
        t = record(out, ViewBackward0, x)
        t.grad_fn.in_shape = xd.shape
        return t
    return _view_of(out, x, ViewBackward0, in_shape=xd.shape)


@export(method=True)
def view(x, *shape):
    """Like :func:`reshape`, but raises when the result cannot share memory."""
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int)):
        return _view_as_dtype(x, shape[0])
    xd = x._data
    shape = _infer_shape(_shape_arg(shape, "view"), xd.size, "view", xd.shape)
    out = xd.reshape(shape)
    if out is xd:  # (an array module may return the array itself for its own shape)
        out = xd.view()
    elif _copied(out, xd):
        # NumPy and CuPy copy exactly where PyTorch's stride rule refuses (a view merges
        # or splits only dimensions whose strides chain). (Not by setting the shape of a
        # view, which raises there instead: NumPy 2.5 deprecates that; nor by reshape's
        # copy=False, which NumPy has from 2.1 on only.)
        strides = tuple(s // xd.itemsize for s in xd.strides)
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead. "
            f"(view: input shape {tuple(xd.shape)} with strides {strides}, requested "
            f"{shape})")
    return _view_of(out, x, ViewBackward0, in_shape=xd.shape)


def _view_as_dtype(x, dtype):
    """``x.view(dtype)``: the same memory read as ``dtype`` (PyTorch's reinterpretation,
    not a cast); with another element size the last dimension (contiguous) scales.
    Never tracked, as PyTorch's."""
    xd = x._data
    new = dtypes.to_dtype(dtype)
    old_name, new_name = dtypes.torch_name(xd.dtype), dtypes.torch_name(new)
    size, old_size = new.np.itemsize, xd.dtype.itemsize
    if size != old_size:
        what = f"to view {old_name} as {new_name} (different element sizes)"
        if xd.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        if xd.shape[-1] != 1 and xd.strides[-1] != old_size:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got "
                               f"{xd.strides[-1] // old_size}")
        if size > old_size and (xd.shape[-1] * old_size) % size:
            raise RuntimeError(f"self.size(-1) must be divisible by {size // old_size} "
                               f"{what}, but got {xd.shape[-1]}")
    t = wrap(xd.view(new.np))
    t._vc = x._version_cell()  # (the same memory: in-place writes show through)
    return t


@export(torch=True, method=True)
def flatten(x, start_dim=0, end_dim=-1):
    """Merge dimensions ``start_dim..end_dim`` into one."""
    nd = x._data.ndim
    if nd == 0:
        normalize_dim(start_dim, 0, "flatten"), normalize_dim(end_dim, 0, "flatten")
        return reshape(x, (1,))
    s, e = normalize_dim(start_dim, nd, "flatten"), normalize_dim(end_dim, nd, "flatten")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shp = x._data.shape
    return reshape(x, shp[:s] + (-1 if 0 not in shp[s:e + 1] else 0,) + shp[e + 1:])


@export(torch=True, method=True)
def unflatten(x, dim, sizes):
    """Split dimension ``dim`` into ``sizes``."""
    shp = x._data.shape
    d = normalize_dim(dim, len(shp), "unflatten")
    if not shp:
        raise RuntimeError(f"unflatten: {_no_dims_error(d)}")
    sizes = tuple(sizes)
    inner = _infer_shape(sizes, shp[d], "unflatten", shp)
    return reshape(x, shp[:d] + inner + shp[d + 1:])


class SqueezeBackward(Node):
    def apply(self, F, g):
        return (g.reshape(self.in_shape),)

    def name(self):
        return self._name


@export(torch=True, method=True)
def squeeze(x, dim=None, *, axis=None):
    """Drop dimensions of size 1 (only ``dim`` when given)."""
    if axis is not None:  # (NumPy's names, which PyTorch accepts too)
        dim = axis
    xd = x._data
    if dim is None:
        axes = tuple(i for i, n in enumerate(xd.shape) if n == 1)
        name = "SqueezeBackward0"
    else:
        axes = tuple(a for a in normalize_dims(dim, xd.ndim, "squeeze") if xd.ndim and
                     xd.shape[a] == 1)
        name = "SqueezeBackward1" if not isinstance(dim, (tuple, list)) else "SqueezeBackward2"
    out = xd.squeeze(axis=axes) if axes else xd.view()
    return _view_of(out, x, SqueezeBackward, in_shape=xd.shape, _name=name)


class UnsqueezeBackward0(Node):
    def apply(self, F, g):
        return (g.reshape(self.in_shape),)


@export(torch=True, method=True)
def unsqueeze(x, dim=None, *, axis=None):
    """Insert a dimension of size 1 at ``dim``."""
    if axis is not None:  # (NumPy's names, which PyTorch accepts too)
        dim = axis
    if dim is None:
        raise TypeError("unsqueeze() missing 1 required positional argument: 'dim'")
    xd = x._data
    d = normalize_dim(dim, xd.ndim + 1, "unsqueeze")
    return _view_of(np.expand_dims(xd, d) if type(xd) is np.ndarray
                    else math_of(xd).expand_dims(xd, d), x, UnsqueezeBackward0,
                    in_shape=xd.shape)


# ---- transpose / permute ----------
class TransposeBackward0(Node):
    def apply(self, F, g):
        return (g.swapaxes(self.d0, self.d1),)


@export(torch=("transpose", "swapaxes", "swapdims"),
        method=("transpose", "swapaxes", "swapdims"))
def transpose(x, dim0, dim1):
    """Swap two dimensions (a view)."""
    xd = x._data
    d0, d1 = normalize_dim(dim0, xd.ndim, "transpose"), normalize_dim(dim1, xd.ndim, "transpose")
    if not xd.ndim:  # a 0-d tensor takes dims 0 and -1 and stays as it is, as in PyTorch
        return _view_of(xd.view(), x, ViewBackward0, in_shape=xd.shape)
    return _view_of(xd.swapaxes(d0, d1), x, TransposeBackward0, d0=d0, d1=d1)


swapaxes = transpose
swapdims = transpose


@export(torch=True, method=True)
def t(input):  # noqa: A002
    """The transpose of a matrix (a view); 0-d and 1-D tensors come back as they are
    (as views), as PyTorch's ``t``.

    >>> import gradcore as gc
    >>> gc.arange(6).reshape(2, 3).t().shape
    gradcore.Size([3, 2])
    """
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    return transpose(input, 0, -1 if nd else 0)


@export(torch=True, method=True)
def adjoint(input):  # noqa: A002
    """The last two dimensions swapped (a view): each matrix's conjugate transpose
    (``Tensor.mH``; gradcore has no complex dtypes)."""
    if input._data.ndim < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of "
                           f"matrices. Got {input._data.ndim}-D tensor.")
    return transpose(input, -2, -1)


class PermuteBackward0(Node):
    def apply(self, F, g):
        return (F.transpose(g, self.inverse),)


@export(torch=True, method=True)
def permute(x, *dims):
    """Reorder dimensions (a view)."""
    xd = x._data
    dims = _shape_arg(dims)
    if len(dims) != xd.ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {xd.ndim} is not equal to len(dims) = {len(dims)}")
    axes = tuple(normalize_dim(d, xd.ndim, "permute") for d in dims)
    if len(set(axes)) != len(axes):
        raise RuntimeError(f"permute(): duplicate dims are not allowed, got {list(dims)}")
    inverse = tuple(int(i) for i in np.argsort(axes))
    return _view_of(xd.transpose(axes), x, PermuteBackward0, inverse=inverse)


@export(torch=("movedim", "moveaxis"), method=("movedim", "moveaxis"))
def movedim(x, source, destination):
    """Move the dimensions ``source`` (an int or a sequence) to the positions
    ``destination``, the others keeping their order (a view).

    >>> import gradcore as gc
    >>> gc.zeros(2, 3, 4).movedim(0, -1).shape
    gradcore.Size([3, 4, 2])
    """
    nd = x._data.ndim
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    src = [normalize_dim(s, nd, "movedim") for s in src]
    dst = [normalize_dim(d, nd, "movedim") for d in dst]
    if not nd:
        return permute(x)
    order = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(x, *order)


moveaxis = movedim


# ---- expand / broadcast / repeat ----------
class ExpandBackward0(Node):
    def apply(self, F, g):
        return (F.sum_to(g, self.in_shape),)


@export(torch=True, method=True)
def broadcast_to(x, *shape):
    """A read-only broadcast view of ``x`` with ``shape``."""
    xd = x._data
    shape = _shape_arg(shape)
    lead = len(shape) - xd.ndim
    if lead < 0:
        raise RuntimeError(f"expand: the number of sizes provided ({len(shape)}) must be "
                           f"greater or equal to the number of dimensions in the tensor "
                           f"({xd.ndim}); shape {tuple(xd.shape)} cannot expand to {shape}")
    target = tuple(xd.shape[i - lead] if (s == -1 and i >= lead) else s
                   for i, s in enumerate(shape))
    try:
        out = math_of(xd).broadcast_to(xd, target)
    except ValueError:
        bad = next((i for i in range(lead, len(target))
                    if xd.shape[i - lead] not in (1, target[i])), lead)
        raise RuntimeError(f"The expanded size of the tensor ({target[bad]}) must match the "
                           f"existing size ({xd.shape[bad - lead]}) at non-singleton dimension "
                           f"{bad}.  Target sizes: {list(shape)}.  Tensor sizes: "
                           f"{list(xd.shape)} (expand: shape {tuple(xd.shape)} cannot be "
                           f"broadcast to {target})") from None
    return _view_of(out, x, ExpandBackward0, in_shape=xd.shape)


@export(torch=True, method=True)
def expand(x, *sizes):
    """PyTorch's name for :func:`broadcast_to` (``-1`` keeps a size)."""
    return broadcast_to(x, *sizes)


def expand_as(x, other):
    return broadcast_to(x, other.shape)


class RepeatBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        shape, reps = self.in_shape, self.reps
        lead = len(reps) - len(shape)
        full = (1,) * lead + tuple(shape)
        split = []
        for r, n in zip(reps, full):
            split += [r, n]
        g = g.reshape(tuple(split))
        g = F.sum(g, axis=tuple(range(0, 2 * len(full), 2)), keepdims=False)
        return (g.reshape(shape),)


@export(torch=True, method=True)
def repeat(x, *repeats):
    """Tile ``x``: ``repeat(2, 3)`` repeats twice along dim 0 and 3 times along dim 1."""
    xd = x._data
    reps = _shape_arg(repeats)
    if len(reps) < xd.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           f"of dimensions of tensor (repeat dims {list(reps)}, tensor shape "
                           f"{tuple(xd.shape)})")
    out = math_of(xd).tile(xd, reps)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record(out, RepeatBackward0, x)
    node = t.grad_fn
    node.in_shape, node.reps = xd.shape, reps
    return t


@export(torch=True)
class memory_format:
    """How a tensor's elements are laid out in memory (PyTorch's ``torch.memory_format``):
    ``contiguous_format`` (row-major), ``channels_last`` (a 4-d ``(N, C, H, W)`` tensor
    stored as ``(N, H, W, C)``), ``channels_last_3d`` (5-d, stored as ``(N, D, H, W,
    C)``) and ``preserve_format`` (keep the input's). A layout changes strides, never
    values."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"gradcore.{self._name}"

    def __reduce__(self):
        return self._name


contiguous_format = export(torch=("contiguous_format", "legacy_contiguous_format"))(
    memory_format("contiguous_format"))
preserve_format = export(torch="preserve_format")(memory_format("preserve_format"))
channels_last = export(torch="channels_last")(memory_format("channels_last"))
channels_last_3d = export(torch="channels_last_3d")(memory_format("channels_last_3d"))

# the order in which each channels-last layout stores the dimensions, outermost first
_STORED_ORDER = {channels_last: (0, 2, 3, 1), channels_last_3d: (0, 2, 3, 4, 1)}


def _check_rank(fmt, ndim):
    order = _STORED_ORDER[fmt]
    if ndim != len(order):
        raise RuntimeError(f"required rank {len(order)} tensor to use {fmt._name} format")


def _check_format(fmt, op, ndim=None):
    """PyTorch's errors for a layout ``op`` cannot use; with ``ndim``, a channels-last
    layout's rank checked against it too."""
    if fmt is contiguous_format:
        return
    if fmt in _STORED_ORDER:
        if ndim is not None:
            _check_rank(fmt, ndim)
        return
    if fmt is preserve_format and op == "contiguous":
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    if fmt is preserve_format:
        raise RuntimeError("unsupported memory format Preserve")
    raise TypeError(f"{op}(): argument 'memory_format' must be torch.memory_format, not "
                    f"{type(fmt).__name__}")


def _row_major(xd) -> bool:
    """PyTorch's contiguity: each dimension of more than one element steps over the
    ones after it (dimensions of size 1 do not count; an empty tensor is contiguous)."""
    if xd.flags.c_contiguous:
        return True
    if 0 in xd.shape:
        return True
    return _packed_in(xd, range(xd.ndim))


def _packed_in(xd, order) -> bool:
    """Whether ``xd``'s dimensions, taken in ``order`` (outermost first), each step over
    the ones after it with no gaps (dimensions of size 1 do not count)."""
    shape, strides = xd.shape, xd.strides
    expected = xd.itemsize
    for d in reversed(order):
        n = shape[d]
        if n != 1:
            if strides[d] != expected:
                return False
            expected *= n
    return True


def _in_layout(xd, fmt) -> bool:
    """Whether ``xd`` is laid out in ``fmt`` (contiguous or a channels-last format), by
    PyTorch's rule: dimensions of size 1 do not count."""
    if fmt is contiguous_format:
        return _row_major(xd)
    order = _STORED_ORDER[fmt]
    return xd.ndim == len(order) and _packed_in(xd, order)


def laid_out(xd, fmt):
    """``xd``'s elements in a new array laid out in ``fmt`` (contiguous or channels-last:
    a transposed view of a row-major copy), with PyTorch's strides for it (those of
    dimensions of size 1 included)."""
    if fmt is contiguous_format:
        return xd.copy(order="C")
    return permuted_empty(math_of(xd), xd.shape, _STORED_ORDER[fmt], xd.dtype,
                          fill=xd)


def permuted_empty(m, shape, order, dtype, fill=None):
    """An array of ``shape`` whose dimensions lie in memory in ``order`` (outermost
    first): a transposed view of a row-major one; ``fill``'s elements copied in."""
    arr = m.empty(tuple(shape[d] for d in order), dtype=dtype).transpose(undo(order))
    if fill is not None:
        arr[...] = fill
    return arr


def undo(order) -> tuple:
    """The permutation that undoes ``order``."""
    return tuple(order.index(d) for d in range(len(order)))


def suggest_format(xd):
    """The layout ``xd``'s strides suggest, by PyTorch's rule (``suggest_memory_format``):
    channels-last when the strides grow in that order (ties between dimensions of size
    1 read as contiguous), else contiguous."""
    for fmt, order in _STORED_ORDER.items():
        if xd.ndim != len(order):
            continue
        shape, strides = xd.shape, xd.strides
        if strides[1] == 0:
            return contiguous_format
        low = 0
        for d in (1, *reversed(order[1:-1]), 0):
            if shape[d] == 0 or strides[d] < low or (d == 0 and low == strides[1]):
                return contiguous_format
            low = strides[d] * (shape[d] if shape[d] > 1 else 1)
        return fmt
    return contiguous_format


@export(method=True)
def is_contiguous(x, memory_format=contiguous_format) -> bool:
    """Whether the elements lie in memory in ``memory_format``'s order with no gaps: row
    major by default (a transposed, strided or expanded view is not), or channels-last
    (``x.contiguous(memory_format=gc.channels_last)`` is)."""
    if memory_format is preserve_format:  # (PyTorch's answer: row-major contiguity)
        return _row_major(x._data)
    if memory_format is not contiguous_format:
        _check_format(memory_format, "is_contiguous")
    return _in_layout(x._data, memory_format)


@export(method=True)
def contiguous(x, *, memory_format=contiguous_format):
    """``x`` itself when it is laid out in ``memory_format`` already, else a copy so laid
    out (differentiable, as ``clone``: ``CloneBackward0``). ``gc.channels_last`` needs a
    4-d tensor, ``gc.channels_last_3d`` a 5-d one."""
    if memory_format is preserve_format and _row_major(x._data):
        return x
    if memory_format is not contiguous_format:
        _check_format(memory_format, "contiguous", x._data.ndim)
        if _in_layout(x._data, memory_format):
            return x
        return _device_ops.clone(x, laid_out(x._data, memory_format))
    if _row_major(x._data):
        return x
    return _device_ops.clone(x)


# ---- cat / stack / split ----------
class CatBackward0(Node):
    def apply(self, F, g):
        axis = self.axis
        pre = (slice(None),) * axis
        grads, start = [], 0
        for n in self.sizes:
            grads.append(g[pre + (slice(start, start + n),)])
            start += n
        return tuple(grads)


class _EmptyListError(ValueError, RuntimeError):
    """``cat([])``: PyTorch's ValueError (a RuntimeError here before, kept for callers)."""


def _tensors_on_one_device(tensors, op):
    if not tensors:
        if op == "stack":
            raise RuntimeError("stack expects a non-empty TensorList")
        raise _EmptyListError(f"{op}(): expected a non-empty list of Tensors")
    ts = [t if isinstance(t, Tensor) else None for t in tensors]
    if builtins.any(t is None for t in ts):
        raise TypeError(f"{op}(): expected a sequence of Tensors, got "
                        f"{[type(t).__name__ for t in tensors]}")
    devs = {t.device for t in ts}
    if len(devs) > 1:
        a, b = list(devs)[:2]
        raise RuntimeError(f"{op}: expected all tensors to be on the same device, but found at "
                           f"least two devices, {a} and {b}!")
    rt = ts[0].dtype
    for t in ts[1:]:
        rt = dtypes.promote_types(rt, t.dtype)
    return [t.to(dtype=rt) for t in ts]


@export(torch=("cat", "concat", "concatenate"))
def cat(tensors, dim=0, *, axis=None):
    """Join tensors along an existing dimension."""
    if axis is not None:  # (NumPy's names, which PyTorch accepts too)
        dim = axis
    ts = _tensors_on_one_device(list(tensors), "cat")
    # PyTorch skips 1-D empty tensors in cat (legacy behaviour)
    ts_nonempty = [t for t in ts if not (t._data.ndim == 1 and t._data.shape[0] == 0)] or ts[:1]
    for i, t in enumerate(ts):
        if not t._data.ndim:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               "concatenated")
    ref = ts_nonempty[0]._data
    axis = normalize_dim(dim, ref.ndim, "cat")
    for t in ts_nonempty[1:]:
        s = t._data.shape
        if len(s) != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} "
                               f"and {len(s)} (cat of shapes {tuple(ref.shape)} and "
                               f"{tuple(s)})")
        for i, (a, b) in enumerate(zip(ref.shape, s)):
            if i != axis and a != b:
                number = next(j for j, u in enumerate(ts) if u is t)
                raise RuntimeError(f"Sizes of tensors must match except in dimension {axis}. "
                                   f"Expected size {a} but got size {b} for tensor number "
                                   f"{number} in the list (cat of shapes {tuple(ref.shape)} "
                                   f"and {tuple(s)}).")
    out = math_of(ref).concatenate([t._data for t in ts_nonempty], axis=axis)
    if not (mode.enabled and builtins.any(t._rg for t in ts_nonempty)):
        return wrap(out)
    t = record(out, CatBackward0, *ts_nonempty)
    node = t.grad_fn
    node.axis, node.sizes = axis, [u._data.shape[axis] for u in ts_nonempty]
    return t


concat = cat
concatenate = cat


class StackBackward0(Node):
    def apply(self, F, g):
        pre = (slice(None),) * self.axis
        return tuple(g[pre + (i,)] for i in range(self.n))


@export(torch=True)
def stack(tensors, dim=0, *, axis=None):
    """Join same-shaped tensors along a new dimension."""
    if axis is not None:  # (NumPy's names, which PyTorch accepts too)
        dim = axis
    ts = _tensors_on_one_device(list(tensors), "stack")
    s0 = ts[0]._data.shape
    for t in ts[1:]:
        if t._data.shape != s0:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{tuple(s0)} at entry 0 and {tuple(t._data.shape)} at another "
                               "entry")
    axis = normalize_dim(dim, len(s0) + 1, "stack")
    out = math_of(ts[0]._data).stack([t._data for t in ts], axis=axis)
    if not (mode.enabled and builtins.any(t._rg for t in ts)):
        return wrap(out)
    t = record(out, StackBackward0, *ts)
    node = t.grad_fn
    node.axis, node.n = axis, len(ts)
    return t


# ---- atleast_nd, the *stack family, broadcast_tensors, cartesian_prod, combinations ----
def _tensor_list(tensors, op):
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        return list(tensors[0]), True
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected Tensors, got {type(t).__name__}")
    return list(tensors), len(tensors) != 1


def _atleast(tensors, nd, op):
    ts, many = _tensor_list(tensors, op)
    out = []
    for t in ts:
        n = t._data.ndim
        if n >= nd:
            out.append(t)
        elif nd == 3 and n == 2:
            out.append(unsqueeze(t, -1))
        elif nd == 3 and n == 1:
            out.append(reshape(t, (1, -1, 1)))
        else:  # 0-d, or 1-d made 2-d: ones in front
            out.append(reshape(t, (1,) * (nd - n) + tuple(t._data.shape)))
    return tuple(out) if many else out[0]


@export(torch=True)
def atleast_1d(*tensors):
    """Each tensor with at least one dimension (a 0-d one as one element); one tensor
    in, one out, else a tuple."""
    return _atleast(tensors, 1, "atleast_1d")


@export(torch=True)
def atleast_2d(*tensors):
    """Each tensor with at least two dimensions (ones in front); one tensor in, one
    out, else a tuple."""
    return _atleast(tensors, 2, "atleast_2d")


@export(torch=True)
def atleast_3d(*tensors):
    """Each tensor with at least three dimensions: ``(n,)`` as ``(1, n, 1)``, ``(m, n)``
    as ``(m, n, 1)``; one tensor in, one out, else a tuple."""
    return _atleast(tensors, 3, "atleast_3d")


def _stack_list(tensors, op):
    ts = list(tensors)
    if not ts:
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    return ts


@export(torch=True)
def hstack(tensors):
    """Join tensors column-wise: along dim 1, or dim 0 for 1-D ones (0-d count as 1-D).

    >>> import gradcore as gc
    >>> gc.hstack([gc.tensor([1, 2]), gc.tensor([3])])
    tensor([1, 2, 3])
    """
    ts = list(atleast_1d(_stack_list(tensors, "hstack")))
    return cat(ts, 0 if ts[0]._data.ndim == 1 else 1)


@export(torch=("vstack", "row_stack"))
def vstack(tensors):
    """Join tensors row-wise, along dim 0, each made at least 2-D (``row_stack`` too)."""
    return cat(list(atleast_2d(_stack_list(tensors, "vstack"))), 0)


@export(torch=True)
def dstack(tensors):
    """Join tensors depth-wise, along dim 2, each made at least 3-D."""
    return cat(list(atleast_3d(_stack_list(tensors, "dstack"))), 2)


@export(torch=True)
def column_stack(tensors):
    """Join tensors as the columns of a matrix: 0-d and 1-D ones become columns
    (``(n, 1)``), the others join along dim 1."""
    ts = [reshape(t, (-1, 1)) if t._data.ndim <= 1 else t
          for t in _stack_list(tensors, "column_stack")]
    return cat(ts, 1)


@export(torch=True)
def broadcast_tensors(*tensors):
    """The tensors expanded to their common broadcast shape (views).

    >>> import gradcore as gc
    >>> [t.shape for t in gc.broadcast_tensors(gc.zeros(2, 1), gc.zeros(3))]
    [gradcore.Size([2, 3]), gradcore.Size([2, 3])]
    """
    ts, _ = _tensor_list(tensors, "broadcast_tensors")
    shape = ()
    for t in ts:
        try:
            shape = np.broadcast_shapes(shape, tuple(t._data.shape))
        except ValueError:
            a, b = shape, tuple(t._data.shape)
            n = builtins.max(len(a), len(b))
            a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
            bad = next(i for i in range(n) if a[i] != b[i] and 1 not in (a[i], b[i]))
            raise RuntimeError(f"The size of tensor a ({a[bad]}) must match the size of tensor "
                               f"b ({b[bad]}) at non-singleton dimension {bad}") from None
    return tuple(broadcast_to(t, shape) for t in ts)


def _vectors(tensors, op):
    for t in tensors:
        if t._data.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t._data.shape)}")


@export(torch=True)
def cartesian_prod(*tensors):
    """The rows of every combination of one element of each 1-D tensor, the last
    varying fastest (one tensor: itself).

    >>> import gradcore as gc
    >>> gc.cartesian_prod(gc.tensor([1, 2]), gc.tensor([3, 4]))
    tensor([[1, 3],
            [1, 4],
            [2, 3],
            [2, 4]])
    """
    ts, _ = _tensor_list(tensors, "cartesian_prod")
    _vectors(ts, "cartesian_prod")
    if len(ts) == 1:
        return ts[0]
    grids = meshgrid(*ts, indexing="ij")
    return stack([reshape(g, -1) for g in grids], 1)


@export(torch=True)
def combinations(input, r=2, with_replacement=False):  # noqa: A002
    """The rows of the ``r``-element combinations of a 1-D tensor's elements, in
    order (``with_replacement``: an element may repeat), as ``itertools.combinations``.

    >>> import gradcore as gc
    >>> gc.combinations(gc.tensor([1, 2, 3]))
    tensor([[1, 2],
            [1, 3],
            [2, 3]])
    """
    _vectors([input], "combinations")
    r = int_arg(r, "combinations", "r")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return wrap(math_of(input._data).zeros((0,), dtype=input._data.dtype))
    n = input._data.shape[0]
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = np.array(list(pick(range(n), r)), dtype=np.int64).reshape(-1, r)
    m = math_of(input._data)
    cols = [_index.index_select(input, 0, wrap(m.asarray(rows[:, k]))) for k in range(r)]
    return stack(cols, 1)


class SplitBackward0(Node):
    """One node, several outputs: the pieces' gradients are joined back (zeros if unused)."""

    fixed_outputs = False  # one output per piece

    def apply(self, F, grads):
        if self.n_outputs == 1:  # one piece, the whole input: the engine passes its
            return (grads,)      # gradient alone, not in a list
        ref = next(g for g in grads if g is not None)  # zeros go on its device
        parts = []
        for g, shape in zip(grads, self.shapes_out):
            parts.append(g if g is not None else F.zeros_like(ref, shape=shape,
                                                               dtype=self.dtype))
        return (F.concatenate(parts, axis=self.axis),)


@export(torch=True, method=True)
def split(x, split_size_or_sections, dim=0):
    """Pieces of ``split_size`` along ``dim`` (the last may be smaller), or of listed sizes."""
    xd = x._data
    if not xd.ndim:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    axis = normalize_dim(dim, xd.ndim, "split")
    n = xd.shape[axis]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0 and n:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                               f"dimension size of {n}")
        sizes = [builtins.min(step, n - i) for i in range(0, n, step)] if n else [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if builtins.sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                               f"(input tensor's size at dimension {axis}), but got "
                               f"split_sizes={sizes}")
    pre = (slice(None),) * axis
    pieces, start = [], 0
    for s in sizes:
        pieces.append(xd[pre + (slice(start, start + s),)])
        start += s
    if not (mode.enabled and x._rg and pieces):  # (split_with_sizes of [] gives none)
        outs = [wrap(p) for p in pieces]
    else:
        first = record(pieces[0], SplitBackward0, x)
        node = first.grad_fn
        node.n_outputs, node.axis, node.dtype = len(pieces), axis, xd.dtype
        node.shapes_out = [p.shape for p in pieces]
        outs = [first] + [_extra_output(p, node, i) for i, p in enumerate(pieces[1:], 1)]
    for t in outs:
        make_view(t, x)
    return tuple(outs)


def _extra_output(data, node, nr):
    t = wrap(data)
    t.grad_fn, t._out_nr, t._rg = node, nr, True
    return t


@export(torch=True, method=True)
def chunk(x, chunks, dim=0, *, axis=None):
    """``chunks`` nearly equal pieces along ``dim``."""
    if axis is not None:  # (NumPy's names, which PyTorch accepts too)
        dim = axis
    if not x._data.ndim:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    n = x._data.shape[normalize_dim(dim, x._data.ndim, "chunk")]
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    step = -(-n // chunks) if n else 1
    return split(x, step, dim)


@export(torch=True, method=True)
def unbind(x, dim=0, *, axis=None):
    """The slices along ``dim``, each without that dimension."""
    if axis is not None:  # (NumPy's names, which PyTorch accepts too)
        dim = axis
    if not x._data.ndim:
        raise _no_dims_error(normalize_dim(dim, 0, "unbind"))
    axis = normalize_dim(dim, x._data.ndim, "unbind")
    return tuple(squeeze(p, axis) for p in split(x, 1, axis))


# ---- narrow / select / ravel / tile / rot90 / tensor_split ----------
@export(torch=True, method=True)
def narrow(input, dim, start, length):  # noqa: A002
    """The ``length`` slices of ``input`` along ``dim`` from ``start`` (a view; a
    negative ``start`` counts from the end).

    >>> import gradcore as gc
    >>> gc.arange(6).reshape(2, 3).narrow(1, 1, 2)
    tensor([[1, 2],
            [4, 5]])
    """
    xd = input._data
    if not xd.ndim:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = normalize_dim(dim, xd.ndim, "narrow")
    start = int_arg(start, "narrow", "start")
    length = int_arg(length, "narrow", "length")
    n = xd.shape[d]
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but "
                         f"got {start})")
    if start < 0:
        start += n
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size "
                           f"({n}).")
    return _index.getitem(input, (slice(None),) * d + (slice(start, start + length),))


@export(torch=True, method=True)
def narrow_copy(input, dim, start, length):  # noqa: A002
    """:func:`narrow` as a copy with its own memory."""
    return _device_ops.clone(narrow(input, dim, start, length))


@export(torch=True, method=True)
def select(input, dim, index):  # noqa: A002
    """The slice ``index`` of ``input`` along ``dim``, that dimension removed (a view:
    ``x.select(1, 2)`` is ``x[:, 2]``)."""
    xd = input._data
    if not xd.ndim:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = normalize_dim(dim, xd.ndim, "select")
    i = int_arg(index, "select", "index")
    n = xd.shape[d]
    if not -n <= i < n:
        raise IndexError(f"select(): index {i} out of range for tensor of size "
                         f"{list(xd.shape)} at dimension {d}")
    return _index.getitem(input, (slice(None),) * d + (i % n,))


@export(torch=True, method=True)
def ravel(input):  # noqa: A002
    """The elements as a 1-D tensor (a view when the memory allows: ``reshape(-1)``)."""
    return reshape(input, -1)


@export(torch=True, method=True)
def tile(input, *dims):  # noqa: A002
    """``input`` repeated ``dims[i]`` times along each dimension; ``dims`` shorter than
    ``input.ndim`` is padded with ones in front (unlike :func:`repeat`).

    >>> import gradcore as gc
    >>> gc.tensor([1, 2]).tile((2,))
    tensor([1, 2, 1, 2])
    """
    reps = _shape_arg(dims, "tile")  # (a tuple, or ints: x.tile(2, 1))
    nd = input._data.ndim
    if len(reps) < nd:
        reps = (1,) * (nd - len(reps)) + reps
    return repeat(input, reps)


@export(torch=True, method=True)
def rot90(input, k=1, dims=(0, 1)):  # noqa: A002
    """``input`` rotated by 90 degrees ``k`` times in the plane of ``dims``, from the
    first towards the second.

    >>> import gradcore as gc
    >>> gc.tensor([[1, 2], [3, 4]]).rot90()
    tensor([[2, 4],
            [1, 3]])
    """
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    nd = input._data.ndim
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    d0, d1 = (normalize_dim(d, nd, "rot90") for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k = int_arg(k, "rot90", "k") % 4
    if k == 1:
        return transpose(flip(input, (d1,)), d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return transpose(flip(input, (d0,)), d0, d1)
    return _device_ops.clone(input)


@export(torch=True, method=True)
def split_with_sizes(input, split_sizes, dim=0):  # noqa: A002
    """Pieces of the listed sizes along ``dim`` (views), as ``split(x, [sizes])``."""
    return split(input, list(split_sizes), dim)


def _sections(x, sections, op):
    if isinstance(sections, Tensor):
        sd = sections._data
        if sd.dtype.kind not in "iu":
            raise RuntimeError(f"{op} expected tensor_indices_or_sections to have integer "
                               f"dtype, but got {dtypes.torch_name(sections.dtype)}")
        if sd.ndim > 1:
            raise RuntimeError(f"{op} expected tensor_indices_or_sections to be a "
                               f"zero-dimensional or one-dimensional tensor, but got a tensor "
                               f"with {sd.ndim} dims")
        if sd.ndim == 0:
            return int(sections.item())
        return [int(v) for v in sections.tolist()]
    if isinstance(sections, (tuple, list)):
        return [int_arg(v, op, "indices", i) for i, v in enumerate(sections)]
    return int_arg(sections, op, "sections")


@export(torch=True, method=True)
def tensor_split(input, indices_or_sections, dim=0):  # noqa: A002
    """``input`` cut along ``dim`` into views: into ``n`` pieces as equal as possible
    (the first ``size % n`` one longer) for an int ``n``, or before each of the listed
    indices.

    >>> import gradcore as gc
    >>> [p.tolist() for p in gc.arange(5).tensor_split(3)]
    [[0, 1], [2, 3], [4]]
    >>> [p.tolist() for p in gc.arange(5).tensor_split([1, 4])]
    [[0], [1, 2, 3], [4]]
    """
    xd = input._data
    if not xd.ndim:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got "
                           "a tensor with 0 dims")
    axis = normalize_dim(dim, xd.ndim, "tensor_split")
    n = xd.shape[axis]
    spec = _sections(indices_or_sections, indices_or_sections, "tensor_split")
    if isinstance(spec, int):
        if spec <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {spec}")
        size, extra = divmod(n, spec)
        bounds, start = [], 0
        for i in range(spec):
            stop = start + size + (i < extra)
            bounds.append((start, stop))
            start = stop
    else:
        cuts = [0] + spec + [n]
        bounds = list(zip(cuts[:-1], cuts[1:]))
    pre = (slice(None),) * axis
    return tuple(_index.getitem(input, pre + (slice(a, b),)) for a, b in bounds)


def _split_along(x, sections, dim, op, least):
    nd = x._data.ndim
    if nd < least:
        which = "dimension" if least == 1 else "dimension"
        raise RuntimeError(f"torch.{op} requires a tensor with at least {least} {which}, but "
                           f"got a tensor with {nd} dimensions!")
    spec = _sections(sections, sections, op)
    if isinstance(spec, int):
        size = x._data.shape[dim]
        if spec == 0 or size % spec:
            raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the "
                               f"size of the dimension {size} is not divisible by the "
                               f"split_size {spec}!")
    return tensor_split(x, spec, dim)


@export(torch=True, method=True)
def hsplit(input, indices_or_sections):  # noqa: A002
    """:func:`tensor_split` along dim 1 (dim 0 of a 1-D tensor); an int must divide the
    size."""
    return _split_along(input, indices_or_sections, 1 if input._data.ndim > 1 else 0,
                        "hsplit", 1)


@export(torch=True, method=True)
def vsplit(input, indices_or_sections):  # noqa: A002
    """:func:`tensor_split` along dim 0 of a tensor of at least 2 dimensions; an int
    must divide the size."""
    return _split_along(input, indices_or_sections, 0, "vsplit", 2)


@export(torch=True, method=True)
def dsplit(input, indices_or_sections):  # noqa: A002
    """:func:`tensor_split` along dim 2 of a tensor of at least 3 dimensions; an int
    must divide the size."""
    return _split_along(input, indices_or_sections, 2, "dsplit", 3)


@export(method=True)
def sum_to_size(x, *size):
    """``x`` summed down to ``size``, a shape ``x`` broadcasts from (the gradient of an
    ``expand``).

    >>> import gradcore as gc
    >>> gc.ones(2, 3).sum_to_size(1, 3)
    tensor([[2., 2., 2.]])
    """
    shape = _shape_arg(size, "sum_to_size")
    xs = tuple(x._data.shape)
    lead = len(xs) - len(shape)
    if lead < 0 or builtins.any(s not in (1, xs[lead + i]) for i, s in enumerate(shape)):
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size {{{list(xs)}}}.")
    return sum_to(x, shape)


# ---- in-place view ops: x.squeeze_(), x.transpose_(0, 1), ... ----------
class _InplaceViewBackward(Node):
    """An in-place view op's rule: the gradient transposed (``dims``) or reshaped back."""

    def apply(self, F, g):
        if self.dims is not None:
            return (g.swapaxes(*self.dims),)
        return (g.reshape(self.in_shape),)

    def name(self):
        return self._name


def _inplace_view(x, op, out, name, dims=None):
    """Make ``x`` itself the view ``out`` of its memory: its shape and strides change,
    its memory and version counter stay (the version moves on, as PyTorch's), and its
    history becomes the view's, a node named ``name``."""
    _index._check_inplace(x, op)
    if mode.enabled and x._rg:
        t = record(out, _InplaceViewBackward, x)
        node = t.grad_fn
        node.dims, node.in_shape, node._name = dims, x._data.shape, name
        x.grad_fn, x._out_nr = node, 0
    x._data = out
    x._bump()
    return x


@export(method=True)
def squeeze_(x, dim=None):
    """:func:`squeeze` in place: ``x`` loses its dimensions of size 1 (only ``dim``'s
    when given)."""
    out = squeeze(wrap(x._data), dim)._data
    name = "SqueezeBackward3" if dim is None else \
        ("SqueezeBackward5" if isinstance(dim, (tuple, list)) else "SqueezeBackward4")
    return _inplace_view(x, "squeeze_", out, name)


@export(method=True)
def unsqueeze_(x, dim):
    """:func:`unsqueeze` in place: ``x`` gains a dimension of size 1 at ``dim``."""
    return _inplace_view(x, "unsqueeze_", unsqueeze(wrap(x._data), dim)._data,
                         "UnsqueezeBackward1")


def _transpose_(x, dim0, dim1, op):
    xd = x._data
    a, b = normalize_dim(dim0, xd.ndim, "transpose"), normalize_dim(dim1, xd.ndim, "transpose")
    out = xd.swapaxes(a, b) if xd.ndim else xd.view()
    return _inplace_view(x, op, out, "TransposeBackward1", (a, b) if xd.ndim else None)


@export(method=True)
def transpose_(x, dim0, dim1):
    """:func:`transpose` in place: ``x`` becomes its view with ``dim0`` and ``dim1``
    swapped."""
    return _transpose_(x, dim0, dim1, "transpose_")


@export(method=True)
def t_(x):
    """:func:`t` in place: a matrix becomes its transpose (0-d and 1-D tensors stay as
    they are)."""
    nd = x._data.ndim
    if nd > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {nd}D")
    return _transpose_(x, 0, -1 if nd else 0, "t_")


@export(method=True)
def swapaxes_(x, axis0, axis1):
    """:func:`transpose_` by NumPy's name."""
    return _transpose_(x, axis0, axis1, "swapaxes_")


@export(method=True)
def swapdims_(x, dim0, dim1):
    """:func:`transpose_` by another of PyTorch's names."""
    return _transpose_(x, dim0, dim1, "swapdims_")


# ---- strides and storage ----------
def _storage_root(xd):
    """The array that owns ``xd``'s memory (PyTorch's storage)."""
    root = xd
    while root.base is not None and type(root.base) is type(xd):
        root = root.base
    return root


@export(method=True)
def stride(x, dim=None):
    """The step in elements between neighbours along each dimension (a tuple), or along
    ``dim``: PyTorch's strides, read from the array's.

    >>> import gradcore as gc
    >>> gc.zeros(2, 3).stride(), gc.zeros(2, 3).mT.stride()
    ((3, 1), (1, 3))
    """
    xd = x._data
    if xd.size:
        strides = tuple(s // xd.itemsize for s in xd.strides)
    else:  # (NumPy gives an empty array zero strides; PyTorch its contiguous ones)
        strides, step = [], 1
        for n in reversed(xd.shape):
            strides.insert(0, step)
            step *= max(n, 1)
        strides = tuple(strides)
    if dim is None:
        return strides
    if not xd.ndim:
        raise _no_dims_error(int_arg(dim, "stride"))
    return strides[normalize_dim(dim, xd.ndim, "stride")]


@export(method=True)
def storage_offset(x) -> int:
    """Where the first element lies in the memory ``x`` shares, in elements (0 unless
    ``x`` is a view starting past the start of its base).

    >>> import gradcore as gc
    >>> gc.arange(6)[2:].storage_offset()
    2
    """
    return _offset_of(x._data)


def _offset_of(xd) -> int:
    m = math_of(xd)
    return (m.address(xd) - m.address(_storage_root(xd))) // xd.itemsize


class AsStridedBackward0(Node):
    fresh_grads = True

    def apply(self, F, g):
        index = self.index
        if index is None:
            index = self.index = math_of(self.base_arr).positions_in(self.view_arr,
                                                                     self.base_arr)
        return (F.index_add_into_zeros(g, index, self.in_shape),)


@export(torch=True, method=True)
def as_strided(input, size, stride, storage_offset=None):  # noqa: A002
    """A view of the memory ``input`` shares with the given ``size`` and ``stride`` (in
    elements), starting ``storage_offset`` elements in (``input``'s own offset by
    default). Its gradient reaches the elements of ``input`` it reads (an element read
    twice gets both).

    >>> import gradcore as gc
    >>> gc.arange(6).as_strided((2, 2), (1, 2))
    tensor([[0, 2],
            [1, 3]])
    """
    xd = input._data
    size = tuple(int_arg(s, "as_strided", "size", i) for i, s in enumerate(size))
    stride = tuple(int_arg(s, "as_strided", "stride", i) for i, s in enumerate(stride))
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape (as_strided: size "
                           f"{list(size)}, stride {list(stride)})")
    for s in stride:
        if s < 0:
            raise RuntimeError("as_strided: Negative strides are not supported at the moment, "
                               f"got strides: {list(stride)}")
    root = _storage_root(xd)
    m = math_of(xd)
    offset = _offset_of(xd) if storage_offset is None else \
        int_arg(storage_offset, "as_strided", "storage_offset")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if not root.flags.c_contiguous:
        raise RuntimeError("as_strided: the memory of this tensor is not one contiguous "
                           "block gradcore can address (copy it with .contiguous() first)")
    total = root.size
    need = 0 if 0 in size else offset + 1 + builtins.sum((n - 1) * s
                                                         for n, s in zip(size, stride))
    if need > total:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {offset}, and itemsize {xd.itemsize} requiring a storage "
                           f"size of {need * xd.itemsize} are out of bounds for storage of "
                           f"size {total * xd.itemsize}")
    flat = root.reshape(-1)[builtins.min(offset, total):]
    out = m.lib.stride_tricks.as_strided(flat, shape=size,
                                         strides=tuple(s * xd.itemsize for s in stride))
    if mode.enabled and input._rg:
        t = record(out, AsStridedBackward0, input)
        node = t.grad_fn
        node.view_arr, node.base_arr, node.index = out, xd, None
        node.in_shape = xd.shape
    else:
        t = wrap(out)
    return make_view(t, input)


# ---- the differentiable sum_to (used by the engine when create_graph=True) ----------
class SumToBackward(Node):
    def apply(self, F, g):
        return (F.broadcast_to(g, self.in_shape),)

    def name(self):
        return "SumBackward1"


def sum_to(x, shape):
    """Sum ``x`` down to ``shape``: the one rule that undoes broadcasting."""
    xd = x._data
    shape = tuple(shape)
    if xd.shape == shape:
        return x
    out = math_of(xd).sum_to(xd, shape)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record(out, SumToBackward, x)
    t.grad_fn.in_shape = xd.shape
    return t



# ---- flip / roll ----------
def _dims_arg(dims, op):
    """``dims`` given as a tuple or list, or (a method's varargs) as ints, as a tuple."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = dims[0]
    return tuple(int_arg(d, op, "dims", i) for i, d in enumerate(dims))


class FlipBackward0(Node):
    def apply(self, F, g):
        return (g[self.index],)  # flipped back: the same reversal


@export(torch=True, method=True)
def flip(input, *dims_args, dims=None):  # noqa: A002
    """``input`` reversed along ``dims`` (a copy, as PyTorch's): ``gc.flip(x, (0, 1))``,
    ``x.flip(0, 1)``.

    >>> import gradcore as gc
    >>> gc.flip(gc.tensor([[1, 2], [3, 4]]), (1,))
    tensor([[2, 1],
            [4, 3]])
    """
    if dims is not None:
        dims_args = (dims,)
    if not dims_args:
        raise TypeError("flip() missing required argument 'dims' (pos 2)")
    xd = input._data
    axes = _dims_arg(dims_args, "flip")
    index = [slice(None)] * xd.ndim
    for a in axes:
        a = normalize_dim(a, xd.ndim, "flip")
        if xd.ndim and index[a] != slice(None):
            raise RuntimeError(f"dim {a} appears multiple times in the list of dims")
        if xd.ndim:
            index[a] = slice(None, None, -1)
    index = tuple(index)
    out = xd[index].copy()
    if not (mode.enabled and input._rg):
        return wrap(out)
    t = record(out, FlipBackward0, input)
    t.grad_fn.index = index
    return t


@export(torch=True, method=True)
def fliplr(input):  # noqa: A002
    """``input`` reversed left to right (along dim 1; at least 2-D)."""
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


@export(torch=True, method=True)
def flipud(input):  # noqa: A002
    """``input`` reversed upside down (along dim 0; at least 1-D)."""
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


class UnfoldBackward0(Node):
    """The windows' gradients added back where the windows lie in the input (overlapping
    windows accumulate)."""

    fresh_grads = True

    def apply(self, F, g):
        return (F.index_add_into_zeros(g, self.index, self.in_shape),)


def _window_index(m, shape, axis, windows, size, step):
    """Where each element of an unfolded tensor lies in its input of ``shape``: a tuple
    of int arrays, one per input dimension, broadcasting to the unfolded shape."""
    nd = len(shape)
    index = []
    for d in range(nd):
        if d == axis:
            where = [1] * (nd + 1)
            where[d] = windows
            starts = m.arange(windows, dtype=np.int64).reshape(where) * step
            where = [1] * nd + [size]
            index.append(starts + m.arange(size, dtype=np.int64).reshape(where))
        else:
            where = [1] * (nd + 1)
            where[d] = shape[d]
            index.append(m.arange(shape[d], dtype=np.int64).reshape(where))
    return tuple(index)


@export(method=True)
def unfold(self, dimension, size, step):
    """A view of every window of ``size`` elements along ``dimension``, one every
    ``step``: that dimension becomes the number of windows, and each window is a new
    last dimension. Windows may overlap; their gradients add up.

    >>> import gradcore as gc
    >>> gc.arange(5.).unfold(0, 2, 2)
    tensor([[0., 1.],
            [2., 3.]])
    """
    for position, (name, value) in enumerate((("dimension", dimension), ("size", size),
                                               ("step", step)), 1):
        if type(value) is not int:
            try:
                int_arg(value, "unfold", name)
            except TypeError:
                kind = type(value).__name__ if not isinstance(value, Tensor) else "Tensor"
                raise TypeError(f"unfold(): argument '{name}' (position {position}) must "
                                f"be int, not {kind}") from None
    dimension, size, step = (int_arg(v, "unfold") for v in (dimension, size, step))
    xd = self._data
    axis = normalize_dim(dimension, xd.ndim)
    length = xd.shape[axis] if xd.ndim else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {axis} is {length} but "
                           f"size is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if not xd.ndim:  # the one element, or none: a 1-D view
        return _index.getitem(reshape(self, (1,)), slice(0, size))
    windows = (length - size) // step + 1
    shape = xd.shape[:axis] + (windows,) + xd.shape[axis + 1:] + (size,)
    strides = xd.strides[:axis] + (xd.strides[axis] * step,) + xd.strides[axis + 1:] + \
        (xd.strides[axis],)
    m = math_of(xd)
    if type(xd) is np.ndarray:
        # (subok: gc.compile's recording finds what the view reads through its base)
        out = np.lib.stride_tricks.as_strided(xd, shape, strides, subok=True)
    else:
        out = m.lib.stride_tricks.as_strided(xd, shape, strides)
    if not (mode.enabled and self._rg):
        return make_view(wrap(out), self)  # (a view, whatever the array's .base says)
    t = record(out, UnfoldBackward0, self)
    node = t.grad_fn
    node.in_shape = xd.shape
    node.index = _window_index(m, xd.shape, axis, windows, size, step)
    return make_view(t, self)


class RollBackward0(Node):
    def apply(self, F, g):
        return (F.roll(g, self.back, self.axes),)


@export(torch=True, method=True)
def roll(input, shifts, dims=None):  # noqa: A002
    """``input`` shifted circularly by ``shifts`` along ``dims`` (ints or tuples of one
    length); without ``dims``, over the flattened elements, the shape kept.

    >>> import gradcore as gc
    >>> gc.roll(gc.tensor([[1, 2, 3], [4, 5, 6]]), 1, 1)
    tensor([[3, 1, 2],
            [6, 4, 5]])
    """
    xd = input._data
    shifts = (shifts,) if not isinstance(shifts, (tuple, list)) else tuple(shifts)
    shifts = tuple(int_arg(s, "roll", "shifts", i) for i, s in enumerate(shifts))
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                               f"dims:0")
        axes, shift = None, shifts[0]
    else:
        dims = (dims,) if not isinstance(dims, (tuple, list)) else tuple(dims)
        if not shifts:
            raise RuntimeError("`shifts` required")
        if len(shifts) != len(dims):
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                               f"dims:{len(dims)}")
        if not xd.ndim:
            raise _no_dims_error(dims[0])
        axes = tuple(normalize_dim(d, xd.ndim, "roll") for d in dims)
        shift = shifts
    out = math_of(xd).roll(xd, shift, axes)
    if not (mode.enabled and input._rg):
        return wrap(out)
    t = record(out, RollBackward0, input)
    node = t.grad_fn
    node.axes = axes
    node.back = -shift if axes is None else tuple(-s for s in shift)
    return t


# ---- repeat_interleave ----------
def _repeat_positions(m, repeats, n, total=None):
    """The index ``[0] * r0 + [1] * r1 + ...`` of ``repeats`` (an int array of ``n``
    counts): NumPy's ``repeat`` on the host; on a device, where CuPy takes no array of
    counts, the positions where the running total passes each output slot (the total
    read back once, unless given)."""
    if m.values_on_host:
        return m.repeat(m.arange(n), repeats)
    ends = m.cumsum(repeats, 0)
    if total is None:
        total = int(ends[-1]) if n else 0
    return m.searchsorted(ends, m.arange(total), side="right")


@export(torch=True, method=True)
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None, axis=None):  # noqa: A002
    """Each element (each slice along ``dim``) repeated ``repeats`` times, in place;
    ``repeats`` an int or a tensor of counts (one per slice, or one for all); without
    ``dim``, over the flattened elements. ``repeat_interleave(counts)`` alone gives
    ``[0] * counts[0] + [1] * counts[1] + ...``.

    >>> import gradcore as gc
    >>> gc.repeat_interleave(gc.tensor([[1, 2], [3, 4]]), gc.tensor([1, 2]), dim=0)
    tensor([[1, 2],
            [3, 4],
            [3, 4]])
    """
    if axis is not None:  # (NumPy's names, which PyTorch accepts too)
        dim = axis
    if repeats is None:  # repeat_interleave(counts): the positions, counts times each
        counts = _repeat_counts(input, None)
        m = math_of(counts)
        return wrap(_repeat_positions(m, counts, counts.shape[0], output_size)
                    .astype(np.int64, copy=False))
    if dim is None:
        input = reshape(input, -1)
        dim = 0
    xd = input._data
    if not xd.ndim:
        raise IndexError(f"repeat_interleave: a 0-d tensor has no dimension {dim}")
    axis = normalize_dim(dim, xd.ndim, "repeat_interleave")
    n = xd.shape[axis]
    m = math_of(xd)
    if isinstance(repeats, Tensor):
        counts = _repeat_counts(repeats, n)
        if counts.shape[0] == 1 and n != 1:
            counts = m.broadcast_to(counts, (n,))
        positions = _repeat_positions(m, counts, n, output_size)
    else:
        r = int_arg(repeats, "repeat_interleave", "repeats")
        if r < 0:
            raise RuntimeError("Repeats must be non-negative")
        positions = m.repeat(m.arange(n), r)
    if output_size is not None and m.values_on_host and positions.shape[0] != output_size:
        raise RuntimeError(f"repeat_interleave: allocated size does not match required size "
                           f"(output_size={output_size}, required {positions.shape[0]})")
    return _index.index_select(input, axis, wrap(positions.astype(np.int64, copy=False)))


def _repeat_counts(repeats, n):
    """The counts of a tensor ``repeats`` as an int64 array, checked as PyTorch does."""
    rd = repeats._data
    if rd.dtype.kind not in "iu":
        raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for "
                                  f"'{dtypes.torch_name(repeats.dtype)}'")
    if rd.ndim > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    rd = rd.reshape(-1).astype(np.int64, copy=False)
    if n is not None and rd.shape[0] not in (1, n):
        raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                           f"repeats.size(0) = {rd.shape[0]} and input.size(0) = {n}")
    m = math_of(rd)
    if m.values_on_host:
        if rd.size and rd.min() < 0:
            raise RuntimeError("repeats can not be negative")
    else:  # on a GPU, at the next read of values
        check_range(rd, 0, np.iinfo(np.int64).max,
                    lambda value: RuntimeError("repeats can not be negative"))
    return rd


# ---- meshgrid ----------
@export(torch=True)
def meshgrid(*tensors, indexing=None):
    """Coordinate grids of 1-D tensors (0-d count as one element): output ``k`` holds
    ``tensors[k]`` along its own dimension, expanded over the others (views).
    ``indexing="ij"`` (PyTorch's default, with its warning when not given): the
    dimensions in the order of the tensors; ``"xy"``: the first two swapped.

    >>> import gradcore as gc
    >>> xs, ys = gc.meshgrid(gc.tensor([1, 2]), gc.tensor([3, 4, 5]), indexing="xy")
    >>> xs
    tensor([[1, 2],
            [1, 2],
            [1, 2]])
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass "
                      "the indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"meshgrid(): expected Tensors, got {type(t).__name__}")
        if t._data.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list "
                               f"but got a tensor of shape {tuple(t.shape)}")
        if t.dtype != tensors[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if t.device != tensors[0].device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    positions = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) > 1:
        positions[0], positions[1] = 1, 0
    sizes = [0] * len(tensors)
    for t, p in zip(tensors, positions):
        sizes[p] = t._data.size
    grids = []
    for t, p in zip(tensors, positions):
        view_shape = [1] * len(tensors)
        view_shape[p] = -1
        grids.append(broadcast_to(reshape(t, tuple(view_shape)), tuple(sizes)))
    return tuple(grids)



class _RearrangeBackward(Node):
    """The gradient of :func:`_rearrange`: the same steps undone."""

    def apply(self, F, g):
        g = F.transpose(g.reshape(self.mid_shape), self.inverse)
        return (g.reshape(self.in_shape),)


class PixelShuffleBackward0(_RearrangeBackward):
    pass


class PixelUnshuffleBackward0(_RearrangeBackward):
    pass


def _rearrange(x, split, perm, shape, node_cls):
    """``x`` split to ``split``, its axes permuted by ``perm`` and merged to ``shape``
    (a copy, as PyTorch's pixel shuffles are): one node of ``node_cls``."""
    xd = x._data
    mid = xd.reshape(split).transpose(perm)
    out = math_of(xd).ascontiguousarray(mid).reshape(shape)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record(out, node_cls, x)
    node = t.grad_fn
    node.mid_shape, node.in_shape = mid.shape, xd.shape
    node.inverse = tuple(int(i) for i in np.argsort(perm))
    return t

def _pixel_factor(x, factor, op, name):
    if isinstance(factor, bool) or not isinstance(factor, (int, np.integer)):
        raise TypeError(f"{op}(): argument '{name}' (position 2) must be int, not "
                        f"{type(factor).__name__}")
    r = int(factor)
    if x._data.ndim < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input "
                           f"with {x._data.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"{op} expects a positive {name}, but got {r}")
    return r


@export(torch=True)
def pixel_shuffle(input, upscale_factor):  # noqa: A002
    """``(*, C * r * r, H, W)`` rearranged to ``(*, C, H * r, W * r)``, ``r`` the
    ``upscale_factor`` (sub-pixel convolution's last step).

    >>> import gradcore as gc
    >>> pixel_shuffle(gc.arange(4.0).reshape(1, 4, 1, 1), 2)
    tensor([[[[0., 1.],
              [2., 3.]]]])
    """
    r = _pixel_factor(input, upscale_factor, "pixel_shuffle", "upscale_factor")
    *batch, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    n = len(batch)
    return _rearrange(input, (*batch, c // (r * r), r, r, h, w),
                      (*range(n), n, n + 3, n + 1, n + 4, n + 2),
                      (*batch, c // (r * r), h * r, w * r), PixelShuffleBackward0)


@export(torch=True)
def pixel_unshuffle(input, downscale_factor):  # noqa: A002
    """The inverse of :func:`pixel_shuffle`: ``(*, C, H * r, W * r)`` to
    ``(*, C * r * r, H, W)``, ``r`` the ``downscale_factor``. An empty input comes back
    as its clone, of its own shape, as PyTorch's does."""
    r = _pixel_factor(input, downscale_factor, "pixel_unshuffle", "downscale_factor")
    *batch, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by "
                           f"downscale_factor, but input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by "
                           f"downscale_factor, but input.size(-1)={w} is not divisible by {r}")
    if input._data.size == 0:  # (PyTorch's pixel_unshuffle returns an empty input's clone)
        return input.clone()
    n = len(batch)
    return _rearrange(input, (*batch, c, h // r, r, w // r, r),
                      (*range(n), n, n + 2, n + 4, n + 1, n + 3),
                      (*batch, c * r * r, h // r, w // r), PixelUnshuffleBackward0)
