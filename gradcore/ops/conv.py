"""Convolutions, their windows (unfold/fold) and padding.

``conv1d``, ``conv2d``, ``conv_transpose1d``, ``conv_transpose2d`` (PyTorch's functions,
its argument checks and error messages), ``unfold``/``fold`` (``F.unfold``, ``F.fold``)
and ``pad`` (``F.pad``: constant, reflect, replicate, circular).

Two primitives carry everything: ``im2col`` (the sliding windows of an image as the
columns of a matrix) and ``col2im`` (its adjoint: columns summed back into place). Each
is a differentiable op whose backward node calls the other (``Im2ColBackward0`` ->
``F.col2im``, ``Col2ImBackward0`` -> ``F.im2col``). A convolution records ONE node,
``ConvolutionBackward0``, whose rule is one call of a formula written once over a
namespace (:mod:`gradcore.kernels.conv`): ``F.conv_backward(g, x, w, ...)``, which is
``col2im(w^T @ g)`` for the input, ``g @ im2col(x)^T`` for the weight. Over arrays it runs
on the CPU (strided windows, one BLAS product per layer) or a GPU (one kernel launch per
window step, cuBLAS for the product); over tensors (``create_graph=True``) the same lines
build a differentiable graph, so second derivatives come from them. One node class
serves convolutions and transposed convolutions, 1-D and 2-D (a 1-D convolution is a
2-D one of height 1).

>>> import gradcore as gc
>>> import gradcore.nn.functional as F
>>> x = gc.arange(16.0).reshape(1, 1, 4, 4).requires_grad_()
>>> y = F.conv2d(x, gc.ones(1, 1, 2, 2), stride=2)
>>> y
tensor([[[[10., 18.],
          [42., 50.]]]], grad_fn=<ConvolutionBackward0>)
>>> y.sum().backward()
>>> x.grad[0, 0]
tensor([[1., 1., 1., 1.],
        [1., 1., 1., 1.],
        [1., 1., 1., 1.],
        [1., 1., 1., 1.]])
"""

from __future__ import annotations

import warnings

import numpy as np

from ..autograd.grad_mode import autocast_blocks as _autocast_blocks
from ..backend import math_of
from ..kernels.conv import Geometry
from . import _autocast
from . import shape as _shape
from ._core import Node, Tensor, check_same_device, mode, record, record1, wrap
from ._export import export

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "unfold", "fold",
           "pad", "constant_pad_nd", "im2col", "col2im"]

_TORCH_NAMES = {"float16": "Half", "float32": "Float", "float64": "Double", "int64": "Long",
                "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                "bool": "Bool"}


def _scalar_name(dtype) -> str:
    return _TORCH_NAMES.get(np.dtype(dtype).name, np.dtype(dtype).name)


def _ints(value, n, name, op):
    """PyTorch's int-list argument: an int (repeated ``n`` times) or a sequence of ints,
    as a tuple; anything else a TypeError naming the argument."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),) * n
    if isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
                raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, but found "
                                f"element of type {type(v).__name__} at pos {i}")
        return tuple(int(v) for v in value)
    raise TypeError(f"{op}(): argument '{name}' must be tuple of ints, not "
                    f"{type(value).__name__}")


def _tensor_arg(t, name, op, position, optional=False):
    if (t is None and optional) or isinstance(t, Tensor):
        return t
    raise TypeError(f"{op}(): argument '{name}' (position {position}) must be Tensor, not "
                    f"{type(t).__name__}")


# ---- the window primitives, differentiable ----------
class Im2ColBackward0(Node):
    """``col2im`` of the gradient (the adjoint of the windows)."""

    fresh_grads = True

    def apply(self, F, g):
        if self.batch_first:  # (N, C*kh*kw, L) as im2col's (C*kh*kw, N, L)
            g = F.transpose(g, (1, 0, 2))
        return (F.col2im(g, self.size, self.kernel, self.dilation, self.padding,
                         self.stride, self.windows, self.batch_inner),)


def im2col(x, kernel, dilation, padding, stride, windows, batch_inner=False,
           batch_first=False):
    """The sliding windows of ``x`` (N, C, H, W) as columns ``(C*kh*kw, N, oh*ow)``
    (``batch_inner``: ``(C*kh*kw, oh*ow, N)``; ``batch_first``: ``(N, C*kh*kw, oh*ow)``,
    ``F.unfold``'s layout); differentiable. Arguments are pairs; ``windows`` is
    ``(oh, ow)``. (``tensor_math.im2col``.)"""
    xd = x._data
    m = math_of(xd)
    out = m.im2col(xd, kernel, dilation, padding, stride, windows, batch_inner)
    if batch_first:
        out = m.ascontiguousarray(m.transpose(out, (1, 0, 2)))
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record1(out, Im2ColBackward0, x)
    node = t.grad_fn
    node.kernel, node.dilation, node.padding, node.stride, node.windows = \
        kernel, dilation, padding, stride, windows
    node.size, node.batch_inner, node.batch_first = tuple(xd.shape[2:]), batch_inner, \
        batch_first
    return t


class Col2ImBackward0(Node):
    """``im2col`` of the gradient (the windows are col2im's adjoint)."""

    fresh_grads = True

    def apply(self, F, g):
        cols = F.im2col(g, self.kernel, self.dilation, self.padding, self.stride,
                        self.windows, self.batch_inner)
        if self.batch_first:
            cols = F.ascontiguousarray(F.transpose(cols, (1, 0, 2)))
        return (cols,)


def col2im(cols, size, kernel, dilation, padding, stride, windows, batch_inner=False,
           batch_first=False):
    """The adjoint of :func:`im2col`: columns (in one of its layouts) summed into an
    ``(N, C, H, W)`` image, ``size = (H, W)``; differentiable. (``tensor_math.col2im``.)"""
    cd = cols._data
    m = math_of(cd)
    out = m.col2im(m.transpose(cd, (1, 0, 2)) if batch_first else cd, size, kernel,
                   dilation, padding, stride, windows, batch_inner)
    if not (mode.enabled and cols._rg):
        return wrap(out)
    t = record1(out, Col2ImBackward0, cols)
    node = t.grad_fn
    node.kernel, node.dilation, node.padding, node.stride, node.windows = \
        kernel, dilation, padding, stride, windows
    node.batch_inner, node.batch_first = batch_inner, batch_first
    return t


# ---- convolution ----------
class ConvolutionBackward0(Node):
    """The gradients of a convolution or transposed convolution, 1-D or 2-D: one call
    of ``kernels.conv.conv_backward`` (``col2im(w^T @ g)``, ``g @ im2col(x)^T``,
    ``sum(g)``), over arrays or, for ``create_graph``, tensors."""

    fresh_grads = True

    def apply(self, F, g):
        x, w = self.unpack(F)
        gx, gw, gb = F.conv_backward(g, x, w, self.geometry, self.transposed, self.needs(0),
                                     self.needs(1), self.has_bias and self.needs(2))
        return (gx, gw, gb) if self.has_bias else (gx, gw)


def _expand(values, name, dim):
    """ATen's ``expand_param_if_needed``: one value for every spatial dimension."""
    if len(values) == 1:
        return values * dim
    if len(values) != dim:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {dim} "
                           f"values to match the convolution dimensions, but got "
                           f"{name}={list(values)}")
    return values


def _check_dtypes(x, w, b, transposed):
    xdt, wdt = x._data.dtype, w._data.dtype
    if transposed and (xdt.kind in "biu" and xdt != np.int64):  # (PyTorch's CPU kernels)
        raise NotImplementedError(f"\"slow_conv_transpose2d_out_cpu\" not implemented for "
                                  f"'{_scalar_name(xdt)}'")
    if xdt == np.bool_:
        raise NotImplementedError("\"slow_conv2d_cpu\" not implemented for 'Bool'")
    if b is not None and b._data.dtype != xdt:
        names = {"float16": "c10::Half", "float32": "float", "float64": "double",
                 "int64": "long int", "int32": "int"}
        raise RuntimeError(f"Input type ({names.get(xdt.name, xdt.name)}) and bias type "
                           f"({names.get(b._data.dtype.name, b._data.dtype.name)}) should "
                           f"be the same")
    if wdt != xdt:
        if xdt == np.float32:
            where = "" if type(x._data) is np.ndarray else "cuda."
            raise RuntimeError(f"Input type (torch.{where}{_scalar_name(xdt)}Tensor) and "
                               f"weight type (torch.{where}{_scalar_name(wdt)}Tensor) should "
                               f"be the same or input should be a MKLDNN tensor and weight "
                               f"is a dense tensor")
        raise RuntimeError(f"expected scalar type {_scalar_name(xdt)} but found "
                           f"{_scalar_name(wdt)}")


def _convolution(x, w, b, stride, padding, dilation, groups, transposed, output_padding,
                 op):
    """ATen's ``_convolution`` for a batched input: the checks, in PyTorch's order and
    words, then one node."""
    k = w.ndim
    dim = k - 2
    if dim <= 0:
        raise RuntimeError("weight should have at least three dimensions")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    stride = _expand(stride, "stride", dim)
    padding = _expand(padding, "padding", dim)
    dilation = _expand(dilation, "dilation", dim)
    output_padding = _expand(output_padding, "output_padding", dim)
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d < 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    ws, xs = list(w.shape), list(x.shape)
    if k != x.ndim:
        raise RuntimeError(f"Expected {k}-dimensional input for {k}-dimensional weight {ws}, "
                           f"but got {x.ndim}-dimensional input of size {xs} instead")
    if ws[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} "
                           f"at dimension 0, but got weight of size {ws} instead")
    if ws[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                           f"{groups} at dimension 0, but got weight of size [{ws}] instead")
    spatial = xs[2:]
    kernel = ws[2:]
    span = [d * (kk - 1) + 1 for d, kk in zip(dilation, kernel)]  # the dilated kernel
    if not transposed:
        if xs[1] != ws[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size {ws}, expected input"
                               f"{xs} to have {ws[1] * groups} channels, but got {xs[1]} "
                               f"channels instead")
        if b is not None and (b.ndim != 1 or b.shape[0] != ws[0]):
            raise RuntimeError(f"Given weight of size {ws}, expected bias to be 1-dimensional "
                               f"with {ws[0]} elements, but got bias of size "
                               f"{list(b.shape)} instead")
        padded = [s + 2 * p for s, p in zip(spatial, padding)]
        if any(p < s for p, s in zip(padded, span)):
            raise RuntimeError(f"Calculated padded input size per channel: "
                               f"({' x '.join(map(str, padded))}). Kernel size: "
                               f"({' x '.join(map(str, span))}). Kernel size can't be "
                               f"greater than actual input size")
    else:
        if xs[1] != ws[0]:
            raise RuntimeError(f"Given transposed=1, weight of size {ws}, expected input{xs} "
                               f"to have {ws[0]} channels, but got {xs[1]} channels instead")
        if b is not None and (b.ndim != 1 or b.shape[0] != ws[1] * groups):
            raise RuntimeError(f"Given transposed=1, weight of size {ws}, expected bias to be "
                               f"1-dimensional with {ws[1] * groups} elements, but got bias "
                               f"of size {list(b.shape)} instead")
    if any(d == 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if transposed:
        if any(o >= s and o >= d for o, s, d in zip(output_padding, stride, dilation)):
            # (in 2-D terms: a 1-D convolution is one of height 1)
            (oph, sth, dih), (opw, stw, diw) = ((0, 1, 1), (output_padding[0], stride[0],
                                                             dilation[0])) if dim == 1 else \
                tuple(zip(output_padding, stride, dilation))[-2:]
            raise RuntimeError(
                f"output padding must be smaller than either stride or dilation, but got "
                f"output_padding_height: {oph} output_padding_width: {opw} stride_height: "
                f"{sth} stride_width: {stw} dilation_height: {dih} dilation_width: {diw}")
        out_spatial = [(s - 1) * st - 2 * p + d * (kk - 1) + o + 1 for s, st, p, d, kk, o in
                       zip(spatial, stride, padding, dilation, kernel, output_padding)]
        if any(o <= 0 for o in out_spatial):
            raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, spatial))}"
                               f"). Calculated output size per channel: "
                               f"({' x '.join(map(str, out_spatial))}). Output size is too "
                               f"small")
    if _autocast_blocks[0]:  # inside gc.autocast: the block's lower precision
        x, w, b = _autocast.lower(x, w, b)
    _check_dtypes(x, w, b, transposed)
    xd, wd = x._data, w._data
    bd = None if b is None else b._data
    check_same_device(xd, wd, op)
    if bd is not None:
        check_same_device(xd, bd, op)
    if dim == 3:
        return _convolution3d(x, w, b, stride, padding, dilation, groups, transposed,
                              output_padding, op)

    # the geometry in 2-D terms (a 1-D convolution: height 1)
    def pair(values, fill):
        return tuple(values) if dim == 2 else (fill, values[0])

    n = xs[0]
    size = pair(spatial, 1)
    if transposed:
        b_size = size
        a_size = pair(out_spatial, 1)
        out4 = (n, ws[1] * groups) + a_size
    else:
        a_size = size
        b_size = tuple((s + 2 * p - sp) // st + 1 for s, p, sp, st in
                       zip(size, pair(padding, 0), pair(span, 1), pair(stride, 1)))
        out4 = (n, ws[0]) + b_size
    geo = Geometry(stride=pair(stride, 1), padding=pair(padding, 0),
                   dilation=pair(dilation, 1), groups=groups, a_size=a_size, b_size=b_size,
                   x4=(n, xs[1]) + size, w4=tuple(ws[:2]) + pair(kernel, 1), out4=out4,
                   out_shape=out4 if dim == 2 else out4[:2] + out4[3:])
    m = math_of(xd)
    out = (m.conv_transpose_forward if transposed else m.conv_forward)(xd, wd, bd, geo)
    if not (mode.enabled and (x._rg or w._rg or (b is not None and b._rg))):
        return wrap(out)
    t = record(out, ConvolutionBackward0, x, w) if b is None else \
        record(out, ConvolutionBackward0, x, w, b)
    node = t.grad_fn
    node.geometry, node.transposed, node.has_bias = geo, transposed, b is not None
    node.save(x, w)
    return t


def _convolution3d(x, w, b, stride, padding, dilation, groups, transposed, output_padding,
                   op):
    """A 3-D convolution (checked) as 2-D ones: for each depth position ``i`` of the
    kernel, the depth slices it meets, taken as a batch, convolved with the kernel's
    slice ``i`` and summed; a transposed one adds each slice's transposed convolution at
    the depths it reaches. Composed of differentiable ops: gradients of any order."""
    (sd, sh, sw), (pd, ph, pw), (dd, dh, dw) = stride, padding, dilation
    n, c = x.shape[0], x.shape[1]
    kd = w.shape[2]
    if not transposed:
        xp = constant_pad_nd(x, (0, 0, 0, 0, pd, pd), 0) if pd else x
        od = (xp.shape[2] - dd * (kd - 1) - 1) // sd + 1
        total = None
        for i in range(kd):
            slab = xp[:, :, i * dd:i * dd + sd * (od - 1) + 1:sd]  # (N, C, OD, H, W)
            slab = _shape.reshape(_shape.permute(slab, 0, 2, 1, 3, 4),
                                  (n * od, c) + tuple(x.shape[3:]))
            y = _convolution(slab, w[:, :, i], None, (sh, sw), (ph, pw), (dh, dw), groups,
                             False, (0, 0), op)
            total = y if total is None else total + y
        c_out = w.shape[0]
        out = _shape.permute(_shape.reshape(total, (n, od, c_out) + tuple(total.shape[2:])),
                             0, 2, 1, 3, 4)
    else:
        d_in = x.shape[2]
        c_out = w.shape[1] * groups
        slab = _shape.reshape(_shape.permute(x, 0, 2, 1, 3, 4), (n * d_in, c) +
                              tuple(x.shape[3:]))
        full = (d_in - 1) * sd + dd * (kd - 1) + 1 + output_padding[0]
        total = None
        m = math_of(x._data)
        for i in range(kd):
            y = _convolution(slab, w[:, :, i], None, (sh, sw), (ph, pw), (dh, dw), groups,
                             True, tuple(output_padding[1:]), op)
            y = _shape.reshape(y, (n, d_in) + tuple(y.shape[1:]))
            if total is None:
                total = wrap(m.zeros((n, full) + tuple(y.shape[2:]), dtype=y._data.dtype))
            at = wrap(m.arange(d_in, dtype=np.int64) * sd + i * dd)
            total = total.index_add(1, at, y)
        out = _shape.permute(total[:, pd:full - pd], 0, 2, 1, 3, 4)
    if b is not None:
        out = out + _shape.reshape(b, (1, c_out, 1, 1, 1))
    return out.contiguous()


_warned_same = [False]


def _convolution_same(x, w, b, stride, dilation, groups, op):
    """``padding='same'``: the padding that keeps the input's size (stride 1); an odd
    total puts the extra element after, by a zero padding of the input first."""
    k = w.ndim
    if k < 3:
        raise RuntimeError("weight should have at least three dimensions")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    dim = k - 2
    if k != x.ndim:
        raise RuntimeError(f"Expected {k}-dimensional input for {k}-dimensional weight"
                           f"{list(w.shape)}, but got {x.ndim}-dimensional input of size "
                           f"{list(x.shape)} instead")
    for name, values in (("stride", stride), ("dilation", dilation)):
        if len(values) not in (dim, 1):
            raise RuntimeError(f"{name} cannot broadcast to {dim} dimensions")
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    left, right = [], []
    for i in range(dim):
        d = dilation[0] if len(dilation) == 1 else dilation[i]
        total = d * (w.shape[i + 2] - 1)
        left.append(total // 2)
        right.append(total - total // 2)
    if left != right:
        if not _warned_same[0]:
            _warned_same[0] = True
            warnings.warn("Using padding='same' with even kernel lengths and odd dilation may "
                          "require a zero-padded copy of the input be created", UserWarning,
                          stacklevel=4)
        extra = [0] * (2 * dim)
        for i in range(dim):
            extra[2 * (dim - 1 - i) + 1] = right[i] - left[i]  # F.pad goes last dim first
        x = constant_pad_nd(x, extra, 0)
    return _convolution(x, w, b, stride, tuple(left), dilation, groups, False, (0,), op)


def _conv(op, nd, input, weight, bias, stride, padding, dilation, groups,
          transposed=False, output_padding=0):
    """The user-facing entry of the four convolutions: argument types, the input's
    dimensions (an unbatched input gets a batch of one), string paddings."""
    x = _tensor_arg(input, "input", op, 1)
    w = _tensor_arg(weight, "weight", op, 2)
    b = _tensor_arg(bias, "bias", op, 3, optional=True)
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                           f"{op}, but got input of size: {list(x.shape)}")
    if not isinstance(groups, (int, np.integer)) or isinstance(groups, bool):
        raise TypeError(f"{op}(): argument 'groups' must be int, not {type(groups).__name__}")
    stride, dilation = _ints(stride, nd, "stride", op), _ints(dilation, nd, "dilation", op)
    if isinstance(padding, str) and not transposed:
        if padding not in ("same", "valid"):
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        padding = _ints(padding, nd, "padding", op)
    output_padding = _ints(output_padding, nd, "output_padding", op)
    if x.ndim == nd + 1:  # unbatched: a batch of one, as PyTorch (unsqueeze, squeeze)
        return _shape.squeeze(_conv(op, nd, _shape.unsqueeze(x, 0), w, b, stride, padding,
                                    dilation, groups, transposed, output_padding), 0)
    if padding == "same":
        return _convolution_same(x, w, b, stride, dilation, int(groups), op)
    if padding == "valid":
        padding = (0,) * nd
    return _convolution(x, w, b, stride, padding, dilation, int(groups), transposed,
                        output_padding, op)


@export(torch=True)
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution (cross-correlation) of ``input`` (N, C_in, L) or (C_in, L) with
    ``weight`` (C_out, C_in / groups, k); ``padding`` an int, a 1-tuple, ``"valid"`` or
    ``"same"``."""
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


@export(torch=True)
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation) of ``input`` (N, C_in, H, W) or (C_in, H, W)
    with ``weight`` (C_out, C_in / groups, kh, kw), plus ``bias`` (C_out); ``stride``,
    ``padding``, ``dilation`` an int or a pair, ``padding`` also ``"valid"`` or
    ``"same"``; ``groups`` splits the channels (``groups == C_in``: depthwise).

    >>> import gradcore as gc
    >>> gc.conv2d(gc.ones(1, 2, 5, 5), gc.ones(3, 2, 3, 3), padding=1).shape
    gradcore.Size([1, 3, 5, 5])
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


@export(torch=True)
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution (cross-correlation) of ``input`` (N, C_in, D, H, W) or (C_in, D,
    H, W) with ``weight`` (C_out, C_in / groups, kd, kh, kw), plus ``bias`` (C_out);
    ``stride``, ``padding``, ``dilation`` an int or a triple, ``padding`` also
    ``"valid"`` or ``"same"``. Computed as 2-D convolutions over the depth slices the
    kernel meets (one per depth position of the kernel), summed.

    >>> import gradcore as gc
    >>> gc.conv3d(gc.ones(1, 2, 4, 5, 5), gc.ones(3, 2, 3, 3, 3), padding=1).shape
    gradcore.Size([1, 3, 4, 5, 5])
    """
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


@export(torch=True)
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """3-D transposed convolution of ``input`` (N, C_in, D, H, W) with ``weight`` (C_in,
    C_out / groups, kd, kh, kw): each output size ``(S - 1) * stride - 2 * padding +
    dilation * (k - 1) + output_padding + 1``."""
    return _conv("conv_transpose3d", 3, input, weight, bias, stride, padding, dilation,
                 groups, True, output_padding)


@export(torch=True)
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """1-D transposed convolution (the gradient of :func:`conv1d` with respect to its
    input) of ``input`` (N, C_in, L) with ``weight`` (C_in, C_out / groups, k)."""
    return _conv("conv_transpose1d", 1, input, weight, bias, stride, padding, dilation,
                 groups, True, output_padding)


@export(torch=True)
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """2-D transposed convolution of ``input`` (N, C_in, H, W) with ``weight`` (C_in,
    C_out / groups, kh, kw): output size ``(H - 1) * stride - 2 * padding + dilation *
    (kh - 1) + output_padding + 1``.

    >>> import gradcore as gc
    >>> gc.conv_transpose2d(gc.ones(1, 2, 4, 4), gc.ones(2, 3, 3, 3), stride=2,
    ...                     padding=1, output_padding=1).shape
    gradcore.Size([1, 3, 8, 8])
    """
    return _conv("conv_transpose2d", 2, input, weight, bias, stride, padding, dilation,
                 groups, True, output_padding)


# ---- unfold / fold ----------
def _pair(value, name, op):
    """``F.unfold``'s and ``F.fold``'s ``_pair``: an int twice, else the values, which
    must be two."""
    values = _ints(value, 2, name, op)
    if len(values) != 2:
        raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(values)}")
    return values


def _check_windows(kernel, dilation, padding, stride, stride_first):
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = kernel, dilation, padding, stride
    if kh <= 0 or kw <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: "
                           f"{kh} kernel_width: {kw}")
    checks = [
        (sh <= 0 or sw <= 0, f"stride should be greater than zero, but got stride_height: "
                             f"{sh} stride_width: {sw}"),
        (dh <= 0 or dw <= 0, f"dilation should be greater than zero, but got "
                             f"dilation_height: {dh} dilation_width: {dw}"),
        (ph < 0 or pw < 0, f"padding should be non-negative, but got pad_height: {ph} "
                           f"pad_width: {pw}"),
    ]
    if not stride_first:  # (im2col checks the stride last, col2im first)
        checks = checks[1:] + checks[:1]
    for bad, message in checks:
        if bad:
            raise RuntimeError(message)


def _blocks(size, kernel, dilation, padding, stride):
    """The number of windows along each axis (floor division, as ATen's div_rtn)."""
    return tuple((s + 2 * p - (d * (k - 1) + 1)) // st + 1
                 for s, k, d, p, st in zip(size, kernel, dilation, padding, stride))


def _floating_windows(t, name):
    if t._data.dtype.kind not in "f":
        raise NotImplementedError(f"\"{name}\" not implemented for "
                                  f"'{_scalar_name(t._data.dtype)}'")


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """The sliding blocks of ``input`` (N, C, H, W) or (C, H, W) as columns: ``(N, C *
    kh * kw, L)`` with ``L`` the number of blocks (``F.unfold``, ``nn.Unfold``).

    >>> import gradcore as gc
    >>> import gradcore.nn.functional as F
    >>> F.unfold(gc.arange(9.0).reshape(1, 1, 3, 3), 2)
    tensor([[[0., 1., 3., 4.],
             [1., 2., 4., 5.],
             [3., 4., 6., 7.],
             [4., 5., 7., 8.]]])
    """
    x = _tensor_arg(input, "input", "im2col", 1)
    kernel = _pair(kernel_size, "kernel_size", "im2col")
    dilation = _pair(dilation, "dilation", "im2col")
    padding = _pair(padding, "padding", "im2col")
    stride = _pair(stride, "stride", "im2col")
    _check_windows(kernel, dilation, padding, stride, stride_first=False)
    shape = tuple(x.shape)
    if len(shape) < 3:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-len(shape)}, {len(shape) - 1}], but got {len(shape)})")
    if not ((len(shape) == 3 and all(shape)) or (len(shape) == 4 and all(shape[1:]))):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                           f"and other non-zero dimensions for input, but got: {list(shape)}")
    size = shape[-2:]
    windows = _blocks(size, kernel, dilation, padding, stride)
    if windows[0] < 1 or windows[1] < 1:
        raise RuntimeError(f"Given input with spatial size ({size[0]}, {size[1]}), "
                           f"kernel_size=({kernel[0]}, {kernel[1]}), dilation=({dilation[0]}, "
                           f"{dilation[1]}), padding=({padding[0]}, {padding[1]}), calculated "
                           f"shape of the array of sliding blocks as ({windows[0]}, "
                           f"{windows[1]}), but its components must be at least one.")
    _floating_windows(x, "im2col_out_cpu")
    if len(shape) == 3:
        return _shape.squeeze(im2col(_shape.unsqueeze(x, 0), kernel, dilation, padding,
                                     stride, windows, batch_first=True), 0)
    return im2col(x, kernel, dilation, padding, stride, windows, batch_first=True)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sums an array of sliding blocks ``(N, C * kh * kw, L)`` (or ``(C * kh * kw, L)``)
    into an ``(N, C, *output_size)`` image, each block where :func:`unfold` read it
    (``F.fold``, ``nn.Fold``; overlapping blocks add up)."""
    x = _tensor_arg(input, "input", "col2im", 1)
    size = _pair(output_size, "output_size", "col2im")
    kernel = _pair(kernel_size, "kernel_size", "col2im")
    dilation = _pair(dilation, "dilation", "col2im")
    padding = _pair(padding, "padding", "col2im")
    stride = _pair(stride, "stride", "col2im")
    _check_windows(kernel, dilation, padding, stride, stride_first=True)
    shape = tuple(x.shape)
    if not ((len(shape) == 2 and all(shape)) or (len(shape) == 3 and all(shape[1:]))):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           f"batch size and non-zero dimensions for input, but got: "
                           f"{list(shape)}")
    planes, length = shape[-2], shape[-1]
    if planes % (kernel[0] * kernel[1]):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the "
                           f"product of kernel_size, but got input.size(1)={planes} and "
                           f"kernel_size=({kernel[0]}, {kernel[1]}).")
    windows = _blocks(size, kernel, dilation, padding, stride)
    described = (f"Given output_size=({size[0]}, {size[1]}), kernel_size=({kernel[0]}, "
                 f"{kernel[1]}), dilation=({dilation[0]}, {dilation[1]}), padding=({padding[0]}"
                 f", {padding[1]}), stride=({stride[0]}, {stride[1]})")
    if length != windows[0] * windows[1]:
        raise RuntimeError(f"{described}, expected size of input's dimension 2 to match the "
                           f"calculated number of sliding blocks {windows[0]} * {windows[1]} "
                           f"= {windows[0] * windows[1]}, but got input.size(2)={length}.")
    if windows[0] < 1 or windows[1] < 1:
        raise RuntimeError(f"{described}, calculated shape of the array of sliding blocks as "
                           f"({windows[0]}, {windows[1]}), which is too small (non-positive)")
    if size[0] < 1 or size[1] < 1:
        raise RuntimeError(f"Expected output spatial size to be positive, but got: "
                           f"output_size=({size[0]}, {size[1]}).")
    _floating_windows(x, "col2im_out_cpu")
    if len(shape) == 2:
        return _shape.squeeze(col2im(_shape.unsqueeze(x, 0), size, kernel, dilation, padding,
                                     stride, windows, batch_first=True), 0)
    return col2im(x, size, kernel, dilation, padding, stride, windows, batch_first=True)


# ---- padding ----------
class _PadBackward(Node):
    """The gradient of a padding: constant, the gradient's region over the input (zeros
    where the padding cropped); the other modes, the gradient summed back onto the
    elements each padded position copied, one padded dimension at a time."""

    def apply(self, F, g):
        if self.steps is None:  # constant
            g = g[self.out_region]
            if self.cropped:
                return (F.place_into_zeros(g, self.in_region, self.in_shape),)
            return (F.ascontiguousarray(g),)  # (as PyTorch's: callers view gradients)
        for axis, index, shape in reversed(self.steps):
            g = F.index_add_into_zeros(g, (slice(None),) * axis + (index,), shape)
        return (g,)

    def name(self):
        return self._name


def _pad_ints(pad):
    if not isinstance(pad, (tuple, list)):
        raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, not "
                        f"{type(pad).__name__}")
    for i, v in enumerate(pad):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but "
                            f"found element of type {type(v).__name__} at pos {i}")
    return [int(v) for v in pad]


def _constant_pad(x, pad, value):
    xd = x._data
    shape = list(xd.shape)
    in_region, out_region = [slice(None)] * xd.ndim, [slice(None)] * xd.ndim
    cropped = False
    for i in range(len(pad) // 2):
        axis = xd.ndim - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        n = shape[axis]
        new = n + left + right
        if new < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        start = max(-left, 0)
        stop = max(start, n - max(-right, 0))
        cropped = cropped or start > 0 or stop < n
        in_region[axis] = slice(start, stop)
        out_region[axis] = slice(max(left, 0), max(left, 0) + stop - start)
        shape[axis] = new
    in_region, out_region = tuple(in_region), tuple(out_region)
    m = math_of(xd)
    out = m.full(tuple(shape), 0 if value is None else value, dtype=xd.dtype)
    out[out_region] = xd[in_region]
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record1(out, _PadBackward, x)
    node = t.grad_fn
    node.steps, node._name = None, "ConstantPadNdBackward0"
    node.out_region, node.in_region, node.in_shape, node.cropped = \
        out_region, in_region, xd.shape, cropped
    return t


_MODES = ("constant", "reflect", "replicate", "circular")
_COMBINATIONS = ("Supported combinations for non-constant padding:\n"
                 "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                 "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                 "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def _source_positions(mode_, n, left, right):
    """Where each position of a padded axis of length ``n`` reads from (host ints)."""
    if mode_ == "circular":
        kept = n - max(-left, 0) - max(-right, 0)  # cropped first, then wrapped around
        pos = np.arange(-max(left, 0), kept + max(right, 0))
        return max(-left, 0) + pos % max(kept, 1)
    pos = np.arange(-left, n + right)
    if mode_ == "reflect":
        pos = np.abs(pos)
        return np.where(pos > n - 1, 2 * (n - 1) - pos, pos)
    return np.clip(pos, 0, n - 1)  # replicate


def _mode_pad(x, pad, mode_):
    xd = x._data
    k = len(pad) // 2
    if len(pad) not in (2, 4, 6) or xd.ndim not in (k + 1, k + 2):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for {xd.ndim}D "
                                  f"input tensor.\n{_COMBINATIONS}")
    lead = xd.ndim - k - 1  # the batch dimension, which may be empty
    if not all(xd.shape[lead:]) and mode_ != "circular":
        raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 "
                           f"batch size and other non-zero dimensions for input, but got: "
                           f"{list(xd.shape)}")
    if xd.dtype == np.bool_:
        kind = {"reflect": "reflection", "replicate": "replication"}.get(mode_, mode_)
        raise NotImplementedError(f"\"{kind}_pad{k}d\" not implemented for 'Bool'")
    sizes = []
    for i in range(k):
        axis = xd.ndim - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        n = xd.shape[axis]
        if mode_ == "reflect" and (left >= n or right >= n):
            raise RuntimeError(f"Argument #{4 + 2 * i}: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({left}, "
                               f"{right}) at dimension {axis} of input {list(xd.shape)}")
        if mode_ == "circular":
            if left > n or right > n:
                raise RuntimeError("Padding value causes wrapping around more than once.")
            kept = n - max(-left, 0) - max(-right, 0)
            if n + left + right < 0 or (kept <= 0 and n + left + right > 0):
                raise RuntimeError("Negative padding value is resulting in an empty dimension")
        sizes.append(n + left + right)
    if any(s < 0 for s in sizes):
        shape = list(xd.shape[:xd.ndim - k]) + sizes[::-1]
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: "
                           f"{shape}")
    m = math_of(xd)
    steps = []
    out = xd
    for i in range(k):
        axis = xd.ndim - 1 - i
        positions = _source_positions(mode_, out.shape[axis], pad[2 * i], pad[2 * i + 1])
        index = m.asarray(positions.astype(np.int64))
        steps.append((axis, index, out.shape))
        out = m.take(out, index, axis=axis)
    if not (mode.enabled and x._rg):
        return wrap(out)
    t = record1(out, _PadBackward, x)
    node = t.grad_fn
    node.steps = steps
    node._name = "CopySlices" if mode_ == "circular" else \
        f"{'Reflection' if mode_ == 'reflect' else 'Replication'}Pad{k}DBackward0"
    return t


def pad(input, pad, mode="constant", value=None):
    """Pads ``input``'s last ``len(pad) // 2`` dimensions: ``pad`` is ``(left, right)``
    for the last dimension, then for the one before, and so on (``F.pad``). ``mode``:
    ``"constant"`` (``value``, default 0; any number of dimensions; negative padding
    crops), ``"reflect"`` (mirrored without repeating the edge), ``"replicate"`` (the
    edge repeated) or ``"circular"`` (wrapped around), which pad the last 1, 2 or 3
    dimensions of a batched or unbatched input.

    >>> import gradcore as gc
    >>> import gradcore.nn.functional as F
    >>> F.pad(gc.tensor([[1.0, 2.0, 3.0]]), (2, 1), mode="reflect")
    tensor([[3., 2., 1., 2., 3., 2.]])
    """
    x = _tensor_arg(input, "input", "pad", 1)
    if mode not in _MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    pad = _pad_ints(pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) > 2 * x.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the "
                           f"input dimension but got padding length {len(pad)} and input of "
                           f"dimension {x.ndim}")
    if mode == "constant":
        return _constant_pad(x, pad, value)
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    return _mode_pad(x, pad, mode)


@export(torch=True)
def constant_pad_nd(input, pad, value=0):
    """``input`` padded with ``value`` (``F.pad``'s constant mode; negative padding
    crops)."""
    x = _tensor_arg(input, "input", "constant_pad_nd", 1)
    pad = _pad_ints(pad)
    if len(pad) % 2:
        raise RuntimeError("Length of pad must be even but instead it equals "
                           f"{len(pad)}")
    if len(pad) > 2 * x.ndim:
        raise RuntimeError(f"Length of pad should be no more than twice the number of "
                           f"dimensions of the input. Pad length is {len(pad)}while the "
                           f"input has {x.ndim}dimensions.")  # (PyTorch's words, spaces)
    return _constant_pad(x, pad, value)
