"""The user-facing :class:`Tensor`: an array, and where its gradient comes from.

The class is defined with its state, conversions and autograd bookkeeping in
:mod:`gradcore.autograd.tensor_base`, the engine's layer, so that the engine and the
ops can hold tensors without importing this module; its name is
``gradcore.tensor.Tensor``. This module, above the ops, makes it the tensor users
use: every operation of :mod:`gradcore.ops` is bound as a method (``add``, ``+``,
``__getitem__``, ``to``, ``add_``, ...), and so are ``backward`` and ``size``, which
need the engine's user-facing entry points and the ops' argument parsing.
"""

from __future__ import annotations

from . import backend, dtypes
from . import ops as _ops
from ._size import Size
from .autograd.functional import _root_grads, backward_to_inputs
from .autograd.graph import run_backward
from .autograd.tensor_base import Parameter, Tensor, _wrap, fresh_history, from_data
from .backend import math_of
from .ops._core import int_arg, normalize_dim

__all__ = ["Tensor", "Parameter"]


def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(self)/d(leaf) into every leaf's ``.grad``.

    ``gradient`` is required unless the tensor has one element.  The graph's saved
    values are freed afterwards unless ``retain_graph=True``.
    """
    if retain_graph is None:
        retain_graph = create_graph
    (g,) = _root_grads([self], [gradient], create_graph)
    fn = self.grad_fn if self._base is None else fresh_history(self)
    node = fn if fn is not None else self._accumulator()
    if inputs is not None:
        backward_to_inputs(self, g, inputs, retain_graph, create_graph)
        return
    run_backward([(node, self._out_nr)], [g], retain_graph=retain_graph,
                 create_graph=create_graph)


def size(self, dim=None):
    """The shape (a ``gc.Size``), or its length along ``dim``."""
    if dim is None:
        return Size(self._data.shape)
    shape = self._data.shape
    if type(dim) is int:
        try:
            return shape[dim]  # (negative dims wrap as PyTorch's do)
        except IndexError:
            pass
    if not shape:
        raise IndexError(f"Dimension specified as {int_arg(dim, 'size')} but tensor has "
                         "no dimensions")
    return shape[normalize_dim(dim, len(shape), "size")]


# PyTorch's legacy tensor type names (Tensor.type())
_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
               "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
               "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor"}
_TYPE_DTYPES = {v: k for k, v in _TYPE_NAMES.items()}


def legacy_new(args, dtype, device, what="new"):
    """PyTorch's legacy constructor (``torch.Tensor(...)``, ``torch.FloatTensor(...)``):
    no argument: an empty tensor; sizes (ints or a ``Size``): an uninitialized (here:
    zero) tensor of that shape; a tensor of ``dtype``: an alias of it; else data copied
    as ``dtype``. CPU tensors only, as PyTorch's CPU type objects make."""
    if device is not None and backend.device(device).type != "cpu":
        raise RuntimeError(f"legacy constructor expects device type: cpu but device type: "
                           f"{backend.device(device).type} was passed")
    if len(args) == 1 and isinstance(args[0], Tensor):
        other = args[0]
        if other.dtype != dtype or other.device.type != "cpu":
            raise TypeError(f"expected {dtype} on cpu (got {other.dtype} on "
                            f"{other.device.type})")
        return other.view_as(other)
    if len(args) == 1 and isinstance(args[0], Size):
        args = tuple(args[0])
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        shape = args if args else (0,)
        for d in shape:
            if d < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {d}: "
                                   f"{list(shape)}")
        return _wrap(backend.device("cpu").math.zeros(shape, dtype=dtype.np))
    if len(args) != 1:
        bad = next(a for a in args if not isinstance(a, int) or isinstance(a, bool))
        raise TypeError(f"{what}(): argument 'size' failed to unpack the object at pos "
                        f"{args.index(bad) + 1} with error \"type must be tuple of ints,but "
                        f"got {type(bad).__name__}\"")
    return from_data(args[0], dtype=dtype, device="cpu")


class _TensorType(type):
    """The type of ``gc.FloatTensor``, ``gc.LongTensor``, ...: PyTorch's legacy typed
    constructors. Calling one makes a ``Tensor`` of its dtype (:func:`legacy_new`);
    ``isinstance(t, gc.FloatTensor)`` is whether ``t`` is a float32 CPU tensor;
    ``t.type(gc.LongTensor)`` casts."""

    def __call__(cls, *args, device=None):
        return legacy_new(args, cls.dtype, device)

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype and obj.device.type == "cpu"

    def __repr__(cls):
        return f"<class 'gradcore.{cls.__name__}'>"


def _tensor_type(name, dtype_name):
    dt = dtypes.to_dtype(dtype_name)
    return _TensorType(name, (), {"dtype": dt, "is_cuda": False, "is_sparse": False,
                                  "__module__": "gradcore",
                                  "__doc__": f"The legacy constructor of {dt} CPU tensors "
                                             f"(``torch.{name}``): ``{name}(data)``, "
                                             f"``{name}(*sizes)``."})


_TENSOR_TYPES = {name: _tensor_type(name, dt) for dt, name in _TYPE_NAMES.items()}
globals().update(_TENSOR_TYPES)
__all__ += list(_TENSOR_TYPES)


def type_(self, dtype=None, non_blocking=False, **kwargs):
    """Without ``dtype``: PyTorch's type name (``'torch.FloatTensor'``,
    ``'torch.cuda.LongTensor'``). With one (a dtype or such a name): the tensor cast to
    it (itself when it has it already).

    >>> import gradcore as gc
    >>> gc.ones(2).type(), gc.ones(2).type(gc.int64).dtype
    ('torch.FloatTensor', gradcore.int64)
    """
    if dtype is None:
        where = "torch.cuda." if self._data.__class__.__module__ != "numpy" else "torch."
        return where + _TYPE_NAMES[self.dtype.name]
    if isinstance(dtype, _TensorType):
        return self.to(dtype=dtype.dtype)
    if isinstance(dtype, str):
        name = dtype.rsplit(".", 1)[-1]
        if name in _TYPE_DTYPES:
            target = dtypes.to_dtype(_TYPE_DTYPES[name])
            if ".cuda." in dtype and self.device.type != "cuda":
                return self.to(device="cuda", dtype=target)
            return self.to(dtype=target)
    return self.to(dtype=dtypes.to_dtype(dtype))


def _new_like(self, make, size, dtype, device, requires_grad, what):
    shape = _shape_arg(size, what)
    dt = self.dtype if dtype is None else dtypes.to_dtype(dtype)
    dev = self.device if device is None else backend.device(device)
    out = _wrap(make(dev.math, shape, dt.np))
    if requires_grad:
        out.requires_grad = True
    return out


def _shape_arg(size, what):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for d in size:
        if not isinstance(d, int) or isinstance(d, bool):
            raise TypeError(f"{what}(): argument 'size' must be tuple of ints, but found "
                            f"element of type {d.__class__.__name__}")
        if d < 0:
            raise RuntimeError(f"{what}(): trying to create tensor with negative dimension "
                               f"{d}: {list(size)}")
    return tuple(size)


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False, **kwargs):
    """Zeros of ``size``, with this tensor's dtype and device unless given."""
    return _new_like(self, lambda m, s, d: m.zeros(s, dtype=d), size, dtype, device,
                     requires_grad, "new_zeros")


def new_ones(self, *size, dtype=None, device=None, requires_grad=False, **kwargs):
    """Ones of ``size``, with this tensor's dtype and device unless given."""
    return _new_like(self, lambda m, s, d: m.ones(s, dtype=d), size, dtype, device,
                     requires_grad, "new_ones")


def new_empty(self, *size, dtype=None, device=None, requires_grad=False, **kwargs):
    """A tensor of ``size`` (zeros here), with this tensor's dtype and device unless given."""
    return _new_like(self, lambda m, s, d: m.zeros(s, dtype=d), size, dtype, device,
                     requires_grad, "new_empty")


def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False,
                      **kwargs):
    """A tensor of ``size`` (zeros here) whose elements lie ``stride`` elements apart
    along each dimension in memory of its own (``stride()`` reads them back), with this
    tensor's dtype and device unless given.

    >>> import gradcore as gc
    >>> gc.zeros(1).new_empty_strided((2, 3), (1, 2)).stride()
    (1, 2)
    """
    shape = _shape_arg((size,), "new_empty_strided")
    stride = tuple(stride)
    for s in stride:
        if not isinstance(s, int) or isinstance(s, bool):
            raise TypeError(f"new_empty_strided(): argument 'stride' must be tuple of ints, "
                            f"but found element of type {type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"as_strided: Negative strides are not supported at the "
                               f"moment, got strides: {list(stride)}")
    if len(stride) != len(shape):
        raise RuntimeError(f"mismatch in length of strides and shape (new_empty_strided: "
                           f"size {list(shape)}, stride {list(stride)})")
    need = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, stride))
    flat = _new_like(self, lambda m, s, d: m.zeros(s, dtype=d), (need,), dtype, device,
                     False, "new_empty_strided")._data
    m = math_of(flat)
    out = _wrap(m.lib.stride_tricks.as_strided(
        flat, shape=shape, strides=tuple(s * flat.itemsize for s in stride)))
    if requires_grad:
        out.requires_grad = True
    return out


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False,
             **kwargs):
    """``fill_value`` everywhere in ``size``, with this tensor's dtype and device unless
    given."""
    return _new_like(self, lambda m, s, d: m.full(s, fill_value, dtype=d), (size,), dtype,
                     device, requires_grad, "new_full")


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, **kwargs):
    """A copy of ``data`` as a new leaf tensor, with this tensor's dtype and device unless
    given (``torch.tensor(data, dtype=self.dtype, device=self.device)``)."""
    return from_data(data.detach() if isinstance(data, Tensor) else data,
                     dtype=self.dtype if dtype is None else dtype,
                     device=self.device if device is None else device,
                     requires_grad=requires_grad)


def data_ptr(self) -> int:
    """The address of the first element."""
    return math_of(self._data).address(self._data)


def get_device(self) -> int:
    """The CUDA device index, or -1 on the CPU."""
    dev = self.device
    return -1 if dev.type == "cpu" else (dev.index or 0)


Tensor.nbytes = property(lambda self: int(self._data.nbytes),
                         doc="The number of bytes of the elements.")
Tensor.is_cpu = property(lambda self: self.device.type == "cpu",
                         doc="Whether the data is in the CPU's memory.")
# PyTorch's other device and layout kinds, none of which gradcore has: always False
# (programs test `x.is_xpu` or `x.is_sparse` before choosing a path)
for _kind in ("is_xpu", "is_mps", "is_meta", "is_xla", "is_ipu", "is_vulkan", "is_maia",
              "is_mtia", "is_mkldnn", "is_sparse", "is_sparse_csr", "is_quantized",
              "is_nested"):
    setattr(Tensor, _kind, property(lambda self: False,
                                    doc="False: gradcore has no such tensors."))
del _kind
Tensor.itemsize = property(lambda self: self._data.dtype.itemsize,
                           doc="The size of one element in bytes.")

type_.__name__ = "type"  # (Tensor.type; `type` stays the builtin in this module)
for _fn in (backward, size, type_, new_zeros, new_ones, new_empty, new_empty_strided, new_full,
            new_tensor, data_ptr, get_device):
    _fn.__qualname__ = f"Tensor.{_fn.__name__}"
    setattr(Tensor, _fn.__name__, _fn)
del _fn

# Methods: every operation lives in gradcore.ops; see ops/__init__.py for the binding.
_ops.bind_methods(Tensor)
