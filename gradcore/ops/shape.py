"""Shape ops: views and rearrangements (reshape, permute, expand, cat, split, ...)."""

from __future__ import annotations

import builtins
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
        return x.to(dtype=shape[0])  # view(dtype): a cast is the honest NumPy equivalent
    xd = x._data
    shape = _infer_shape(_shape_arg(shape, "view"), xd.size, "view", xd.shape)
    try:
        out = xd.view()
        out.shape = shape  # NumPy raises instead of copying
    except AttributeError:
        # NumPy refuses exactly where PyTorch's stride rule does (a view merges or
        # splits only dimensions whose strides chain)
        strides = tuple(s // xd.itemsize for s in xd.strides)
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead. "
            f"(view: input shape {tuple(xd.shape)} with strides {strides}, requested "
            f"{shape})") from None
    return _view_of(out, x, ViewBackward0, in_shape=xd.shape)


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


@export(torch=True, method=True)
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
    """How a tensor's elements are laid out in memory (PyTorch's ``torch.memory_format``);
    gradcore's tensors know one: ``contiguous_format``, row-major."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"gradcore.{self._name}"

    def __reduce__(self):
        return self._name


contiguous_format = export(torch="contiguous_format")(memory_format("contiguous_format"))
preserve_format = export(torch="preserve_format")(memory_format("preserve_format"))


def _check_format(fmt, op):
    if fmt is contiguous_format:
        return
    if fmt is preserve_format and op == "contiguous":
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    raise RuntimeError(f"{op}: memory format {fmt!r} is not supported (gradcore tensors are "
                       f"laid out in gradcore.contiguous_format)")


def _row_major(xd) -> bool:
    """PyTorch's contiguity: each dimension of more than one element steps over the
    ones after it (dimensions of size 1 do not count; an empty tensor is contiguous)."""
    if xd.flags.c_contiguous:
        return True
    shape = xd.shape
    if 0 in shape:
        return True
    expected = xd.itemsize
    for n, stride in zip(reversed(shape), reversed(xd.strides)):
        if n != 1:
            if stride != expected:
                return False
            expected *= n
    return True


@export(method=True)
def is_contiguous(x, memory_format=contiguous_format) -> bool:
    """Whether the elements lie in memory in row-major order with no gaps (a transposed,
    strided or expanded view does not)."""
    if memory_format is not contiguous_format:
        _check_format(memory_format, "is_contiguous")
    return _row_major(x._data)


@export(method=True)
def contiguous(x, *, memory_format=contiguous_format):
    """``x`` itself when it is contiguous, else a contiguous copy (differentiable, as
    ``clone``: ``CloneBackward0``)."""
    if memory_format is not contiguous_format:
        _check_format(memory_format, "contiguous")
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


@export(torch=("cat", "concat"))
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
