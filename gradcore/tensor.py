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

import warnings
import weakref as _weakref
from multiprocessing import shared_memory as _shared_memory

import numpy as np

from . import backend, dtypes
from . import ops as _ops
from ._size import Size
from .autograd.functional import _root_grads, backward_to_inputs
from .autograd.graph import run_backward
from .autograd.tensor_base import (
    Parameter,
    Tensor,
    _wrap,
    fresh_history,
    from_data,
    user_requires_grad,
)
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
    fn = self.grad_fn
    if self._rg and not user_requires_grad(self):
        _root_grads([self], [gradient], create_graph)  # (raises: see forward_ad)
    if gradient is None and fn is not None and fn._pre_hooks is None and inputs is None \
            and not create_graph and self._base is None and self._data.size == 1:
        # the usual loss.backward(): a kept one (no hook nor .grad shows it; the rules
        # only read it)
        g = math_of(self._data).backward_seed(self._data)
    else:
        (g,) = _root_grads([self], [gradient], create_graph)
        fn = fn if self._base is None else fresh_history(self)
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


def legacy_new(args, dtype, device, what="new", place="cpu"):
    """PyTorch's legacy constructor (``torch.Tensor(...)``, ``torch.FloatTensor(...)``):
    no argument: an empty tensor; sizes (ints or a ``Size``): an uninitialized (here:
    zero) tensor of that shape; a tensor of ``dtype``: an alias of it; else data copied
    as ``dtype``. Tensors of the device type ``place`` only (``cpu``; ``cuda`` for
    ``torch.cuda.FloatTensor``, on the current GPU), as PyTorch's type objects make."""
    if device is not None and backend.device(device).type != place:
        raise RuntimeError(f"legacy constructor expects device type: {place} but device "
                           f"type: {backend.device(device).type} was passed")
    target = backend.device(place if device is None else device)
    if target.type == "cuda" and target.index is None:
        target = backend.device(f"cuda:{backend.cuda_current_device()}")
    if len(args) == 1 and isinstance(args[0], Tensor):
        other = args[0]
        if other.dtype != dtype or other.device.type != place:
            raise TypeError(f"expected {dtype} on {place} (got {other.dtype} on "
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
        return _wrap(target.math.zeros(shape, dtype=dtype.np))
    if len(args) != 1:
        bad = next(a for a in args if not isinstance(a, int) or isinstance(a, bool))
        raise TypeError(f"{what}(): argument 'size' failed to unpack the object at pos "
                        f"{args.index(bad) + 1} with error \"type must be tuple of ints,but "
                        f"got {type(bad).__name__}\"")
    return from_data(args[0], dtype=dtype, device=target)


class _TensorType(type):
    """The type of ``gc.FloatTensor``, ``gc.LongTensor``, ... (and of
    ``gc.cuda.FloatTensor``, ...): PyTorch's legacy typed constructors. Calling one makes
    a ``Tensor`` of its dtype on its device type (:func:`legacy_new`);
    ``isinstance(t, gc.FloatTensor)`` is whether ``t`` is a float32 CPU tensor;
    ``t.type(gc.LongTensor)`` casts."""

    def __call__(cls, *args, device=None):
        return legacy_new(args, cls.dtype, device, place="cuda" if cls.is_cuda else "cpu")

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype and \
            obj.device.type == ("cuda" if cls.is_cuda else "cpu")

    def __repr__(cls):
        return f"<class '{cls.__module__}.{cls.__name__}'>"


def _tensor_type(name, dtype_name, cuda=False):
    dt = dtypes.to_dtype(dtype_name)
    where, kind = ("gradcore.cuda", "CUDA") if cuda else ("gradcore", "CPU")
    return _TensorType(name, (), {"dtype": dt, "is_cuda": cuda, "is_sparse": False,
                                  "__module__": where,
                                  "__doc__": f"The legacy constructor of {dt} {kind} tensors "
                                             f"(``torch{where[8:]}.{name}``): "
                                             f"``{name}(data)``, ``{name}(*sizes)``."})


_TENSOR_TYPES = {name: _tensor_type(name, dt) for dt, name in _TYPE_NAMES.items()}
# torch.cuda's (gc.cuda.FloatTensor, ...): tensors on the current GPU
CUDA_TENSOR_TYPES = {name: _tensor_type(name, dt, cuda=True) for dt, name in _TYPE_NAMES.items()}
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
        if dtype.is_cuda != (self.device.type == "cuda"):
            return self.to(device="cuda" if dtype.is_cuda else "cpu", dtype=dtype.dtype)
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


def fill_diagonal_(self, fill_value, wrap=False):
    """Write ``fill_value`` on the main diagonal in place: ``self[i, i, ..., i]`` for a
    tensor of 2 or more equal dimensions, or a 2-D one of any shape; with ``wrap``, a
    tall matrix's diagonal starts again below every ``columns + 1`` rows, as NumPy's
    ``fill_diagonal``. Differentiable (the written places get no gradient).

    >>> import gradcore as gc
    >>> gc.zeros(2, 3).fill_diagonal_(5)
    tensor([[5., 0., 0.],
            [0., 5., 0.]])
    """
    shape = tuple(self.shape)
    if len(shape) < 2:
        raise RuntimeError("dimensions must larger than 1")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    n = min(shape)
    if len(shape) == 2 and wrap and shape[0] > shape[1] + 1:
        step = shape[1] + 1
        flat = list(range(0, shape[0] * shape[1], step))
        rows, cols = [f // shape[1] for f in flat], [f % shape[1] for f in flat]
        key = (rows, cols)
    else:
        key = (list(range(n)),) * len(shape)
    if n:
        m = math_of(self._data)
        self[tuple(_wrap(m.asarray(k, dtype="int64")) for k in key)] = fill_value
    return self


def new(self, *args, device=None, **kwargs):
    """PyTorch's legacy constructor, with this tensor's dtype and device (or ``device``):
    ``new()`` is empty, ``new(2, 3)`` or ``new(gc.Size(...))`` has that shape (zeros
    here; uninitialized in PyTorch), ``new([1, 2])`` holds the data, and
    ``new(other_tensor)`` shares ``other``'s memory."""
    if kwargs:
        raise TypeError(f"new() received an invalid combination of arguments - got "
                        f"unexpected keyword arguments {sorted(kwargs)}")
    dev = self.device if device is None else backend.device(device)
    if not args:
        return _wrap(dev.math.zeros((0,), dtype=self._data.dtype))
    if len(args) == 1 and isinstance(args[0], Tensor):
        return args[0].detach()
    if len(args) == 1 and isinstance(args[0], Size):
        args = tuple(args[0])
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return _new_like(self, lambda m, s, d: m.zeros(s, dtype=d), args, None, dev, False,
                         "new")
    if len(args) == 1:
        if not isinstance(args[0], (list, tuple)) and \
                type(args[0]).__module__.split(".")[0] != "numpy":
            raise TypeError(f"new(): data must be a sequence (got {type(args[0]).__name__})")
        return from_data(args[0], dtype=self.dtype, device=dev)
    raise TypeError(f"new() received an invalid combination of arguments - got "
                    f"{tuple(type(a).__name__ for a in args)}")


def _host_elements(self, op):
    if self.requires_grad:
        raise RuntimeError(f"Can't call {op}() on Variable that requires grad. Use "
                           f"var.detach().{op}() instead.")
    if self.device.type != "cpu":
        raise TypeError(f"{op}_ is only implemented on CPU tensors")


def apply_(self, callable):  # noqa: A002
    """Replace each element ``v`` by ``callable(v)`` (a Python number to a number), in
    place; CPU tensors outside autograd only, and slow, as in PyTorch."""
    _host_elements(self, "apply_")
    d = self._data
    out = [callable(v) for v in d.reshape(-1).tolist()]
    d[...] = math_of(d).asarray(out, dtype=d.dtype).reshape(d.shape)
    self._bump()
    return self


def map_(self, tensor, callable):  # noqa: A002
    """Replace each element ``v`` by ``callable(v, w)``, ``w`` the matching element of
    ``tensor`` (broadcast to this shape, of the same dtype), in place; CPU tensors
    outside autograd only."""
    _host_elements(self, "map_")
    if tensor.dtype != self.dtype:
        raise TypeError(f"map_: expected {self.type()} for 'other' (got {tensor.type()})")
    d = self._data
    other = math_of(d).broadcast_to(tensor._data, d.shape)
    out = [callable(v, w) for v, w in zip(d.reshape(-1).tolist(), other.reshape(-1).tolist())]
    d[...] = math_of(d).asarray(out, dtype=d.dtype).reshape(d.shape)
    self._bump()
    return self


def pin_memory(self, device=None):
    """A copy in page-locked host memory, for faster copies to a GPU. gradcore does not
    page-lock: with a GPU this is a copy; without one it raises, as PyTorch does."""
    if not backend.cuda_is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    if self.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
    return self.clone()


def is_pinned(self, device=None) -> bool:
    """Whether the memory is page-locked: never, in gradcore."""
    return False


def share_memory_(self):
    """Move the data into shared memory (a ``multiprocessing.shared_memory`` block) and
    return ``self``: processes forked afterwards, and processes handed the tensor
    through ``multiprocessing`` (pickled: by the block's name, not by value, as
    PyTorch's ``torch.multiprocessing`` does), read and write the same memory (Hogwild
    training). A CUDA tensor is left as it is (as in PyTorch). The block lives as long
    as this tensor: keep it alive until the processes it was handed to have started
    (a block already freed is a FileNotFoundError there). Views of this tensor made
    before the call keep the old memory; other tensors still refuse pickling."""
    if self.device.type == "cuda" or self.__dict__.get("_shm") is not None:
        return self
    d = self._data
    block = _shared_memory.SharedMemory(create=True, size=max(d.nbytes, 1))
    shared = np.ndarray(d.shape, dtype=d.dtype, buffer=block.buf)
    shared[...] = d
    self._data = self._shm_array = shared
    self._shm = block
    _weakref.finalize(self, _unlink_block, block)  # (the creator frees the block)
    return self


def _unlink_block(block) -> None:
    try:
        block.unlink()
    except FileNotFoundError:
        pass


_refuse_pickle = Tensor.__reduce_ex__


def _reduce_shared(self, protocol):
    """Pickling (what ``multiprocessing`` does to a process's arguments): a tensor in
    shared memory goes by its block's name, any other is refused."""
    if self.__dict__.get("_shm_array") is None or self._data is not self._shm_array:
        return _refuse_pickle(self, protocol)
    return (_attach_shared, (self._shm.name, self._data.dtype.str, self._data.shape,
                             self._rg, isinstance(self, Parameter)))


def _attach_shared(name, dtype, shape, requires_grad, parameter):
    """A tensor over the shared block ``name`` (in the process that unpickles it)."""
    # (the creating process unlinks the block; its children share its resource
    # tracker, for which attaching again changes nothing)
    block = _shared_memory.SharedMemory(name=name)
    arr = np.ndarray(shape, dtype=np.dtype(dtype), buffer=block.buf)
    t = Parameter(_wrap(arr), requires_grad=requires_grad) if parameter else _wrap(arr)
    if not parameter:
        t._rg = requires_grad
    t._shm, t._shm_array = block, arr
    return t


def is_shared(self) -> bool:
    """Whether ``share_memory_()`` was called on it (or it is on a GPU, as in PyTorch)."""
    return self.__dict__.get("_shm") is not None or self.device.type == "cuda"


def record_stream(self, stream) -> None:
    """Nothing to do: gradcore queues all GPU work on one stream."""


def _resize(self, shape, op):
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    shape = _shape_arg(shape, op)
    d = self._data
    m = math_of(d)
    n = 1
    for s in shape:
        n *= s
    flat = d.reshape(-1)
    if n <= flat.size:  # the first n elements, in memory order for a contiguous tensor
        new = flat[:n].reshape(shape) if d.flags.c_contiguous else flat[:n].copy().reshape(shape)
    else:  # grown: the old elements first; PyTorch leaves the rest uninitialized (zeros here)
        new = m.zeros(n, dtype=d.dtype)
        new[:flat.size] = flat
        new = new.reshape(shape)
    self._data = new
    self._bump()
    return self


def resize_(self, *sizes, memory_format=None):
    """Give the tensor shape ``sizes`` in place: its first elements in memory order are
    kept (shrinking keeps the data), new ones are zeros (uninitialized in PyTorch).
    Not for a tensor that requires grad.

    >>> import gradcore as gc
    >>> gc.arange(6.).resize_(2, 2)
    tensor([[0., 1.],
            [2., 3.]])
    """
    return _resize(self, sizes, "resize_")


def resize_as_(self, the_template, memory_format=None):
    """``resize_(the_template.shape)``."""
    return _resize(self, tuple(the_template.shape), "resize_as_")


def set_(self, source=None):
    """Make the tensor hold ``source``'s memory (a tensor; it then has ``source``'s
    shape, dtype and device), or, with no argument, an empty one. PyTorch's storage
    forms are not supported."""
    if source is None:
        self._data = math_of(self._data).zeros((0,), dtype=self._data.dtype)
    elif isinstance(source, Tensor):
        self._data = source._data
    else:
        raise TypeError(f"set_(): gradcore has no storages: source must be a tensor, not "
                        f"{type(source).__name__}")
    self._bump()
    return self


def as_subclass(self, cls):
    """A tensor of the subclass ``cls`` sharing this one's data and place in the graph."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass(): argument 'cls' must be a subclass of Tensor, not "
                        f"{cls!r}")
    out = self.view_as(self)
    out.__class__ = cls
    return out


def resize(self, *sizes):
    """``self`` with the shape ``sizes`` and as many elements (PyTorch's deprecated
    non-in-place ``resize``, which warns so): a differentiable reshape."""
    warnings.warn("non-inplace resize is deprecated", stacklevel=2)
    return _resize_copy(self, sizes[0] if len(sizes) == 1 and not isinstance(sizes[0], int)
                        else sizes)


def resize_as(self, tensor):
    """``self`` with ``tensor``'s shape (PyTorch's deprecated non-in-place
    ``resize_as``, which warns so); the numbers of elements must agree."""
    warnings.warn("non-inplace resize_as is deprecated", stacklevel=2)
    return _resize_copy(self, tuple(tensor.shape))


def _resize_copy(self, sizes):
    sizes = tuple(int(n) for n in sizes)
    n = 1
    for d in sizes:
        n *= d
    if n != self.numel():
        raise RuntimeError(
            f"requested resize to {'x'.join(map(str, sizes))} ({n} elements in total), but the "
            f"given tensor has a size of {'x'.join(map(str, self.shape))} ({self.numel()} "
            f"elements). autograd's resize can only change the shape of a given tensor, while "
            f"preserving the number of elements. ")
    return self.contiguous().view(sizes)


class _UntypedStorage:
    """The memory a tensor's elements lie in, as bytes (what ``Tensor.untyped_storage()``
    returns): every view of one base has the same storage, whose ``data_ptr()`` is the
    address where that memory starts."""

    def __init__(self, root):
        self._root = root  # the array that owns (or first exposes) the memory

    def data_ptr(self) -> int:
        """The address where the memory starts."""
        return math_of(self._root).address(self._root)

    def nbytes(self) -> int:
        """The size of the memory, in bytes."""
        return int(self._root.nbytes)

    def size(self) -> int:
        """The number of elements: bytes, for an untyped storage."""
        return self.nbytes() // self.element_size()

    def element_size(self) -> int:
        """The size of an element in bytes: 1 here."""
        return 1

    def __len__(self):
        return self.size()

    @property
    def device(self):
        """Where the memory is."""
        return backend.device_of(self._root)

    def _flat(self):
        root = self._root
        return backend.to_host(root).reshape(-1).view(np.uint8)

    def tolist(self) -> list:
        """The bytes, as Python ints."""
        return self._flat().tolist()

    def __getitem__(self, i):
        return self.tolist()[i]

    def __eq__(self, other):
        return type(other) is type(self) and other._root is self._root

    def __hash__(self):
        return id(self._root)

    def __repr__(self):
        return (f"gradcore.storage.UntypedStorage(device={self.device}) of size "
                f"{self.size()}")


class _TypedStorage(_UntypedStorage):
    """The memory of a tensor as elements of its dtype (what the deprecated
    ``Tensor.storage()`` returns)."""

    def __init__(self, root, dtype):
        super().__init__(root)
        self.dtype = dtype

    def element_size(self) -> int:
        """The size of an element in bytes."""
        return int(self._root.itemsize)

    def _flat(self):
        return backend.to_host(self._root).reshape(-1)

    def untyped(self):
        """The same memory as bytes."""
        return _UntypedStorage(self._root)

    def __eq__(self, other):
        return type(other) is type(self) and other._root is self._root and \
            other.dtype == self.dtype

    def __hash__(self):
        return id(self._root)

    def __repr__(self):
        return (f"[gradcore.storage.TypedStorage(dtype={self.dtype}, device={self.device}) "
                f"of size {self.size()}]")


def untyped_storage(self):
    """The memory the elements lie in, as bytes: ``data_ptr()``, ``nbytes()``,
    ``size()``, ``element_size()``, ``device``, ``tolist()``. Views of one tensor share
    one storage (equal ``data_ptr()``); tensors with their own memory do not.

    >>> import gradcore as gc
    >>> x = gc.zeros(2, 3)
    >>> x[1].untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    True
    """
    return _UntypedStorage(_ops.shape._storage_root(self._data))


def storage(self):
    """The memory the elements lie in, as elements of the tensor's dtype (PyTorch's
    deprecated ``TypedStorage``, with its warning): ``dtype``, ``size()`` (elements),
    ``data_ptr()``, ``nbytes()``, ``element_size()``, ``tolist()``."""
    warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                  "UntypedStorage will be the only storage class. This should only matter to "
                  "you if you are using storages directly.  To access UntypedStorage "
                  "directly, use tensor.untyped_storage() instead of tensor.storage()",
                  UserWarning, stacklevel=2)
    return _TypedStorage(_ops.shape._storage_root(self._data), self.dtype)


def dim_order(self, *, ambiguity_check=False) -> tuple:
    """The dimensions from outermost to innermost in memory, by the strides (PyTorch's
    rule: a contiguous tensor gives ``(0, 1, ...)``, a channels-last one ``(0, 2, 3,
    1)``; dimensions of stride 0 do not move others; ties go by size, then keep order).

    >>> import gradcore as gc
    >>> gc.zeros(3, 4).t().dim_order()
    (1, 0)
    """
    bad = TypeError("The ambiguity_check argument must be a bool or a list of memory formats.")
    if not isinstance(ambiguity_check, bool) and not (
            isinstance(ambiguity_check, list) and
            all(isinstance(f, _ops.shape.memory_format) for f in ambiguity_check)):
        raise bad
    ndim, shape, strides = self.ndim, tuple(self.shape), self.stride()
    formats = ambiguity_check if isinstance(ambiguity_check, list) else []
    if ambiguity_check is not False:  # (a list of formats checks too)
        several = any(a == b for a, b in zip(strides, strides[1:])) or 1 in shape
        if several and sum(self.is_contiguous(memory_format=f) for f in formats) != 1:
            raise RuntimeError("The tensor does not have unique dim order, or cannot map to "
                               "exact one of the given memory formats.")
    if ndim <= 1:
        return tuple(range(ndim))
    contiguous = self.is_contiguous()
    channels_last = self.is_contiguous(memory_format=_ops.shape.channels_last)
    if contiguous and not channels_last:
        return tuple(range(ndim))
    if channels_last and not contiguous:
        return (0, *range(2, ndim), 1)

    def at_least(a, b):
        return b == 0 or (a != 0 and (a >= b or a % b == 0))

    def should_swap(a, b):
        sa, sb = strides[a], strides[b]
        if sa == 0 or sb == 0:
            return 0
        if sa == sb:
            return 0 if at_least(shape[b], shape[a]) else 1
        return -1 if at_least(sb, sa) else 1

    perm = list(reversed(range(ndim)))  # (sorted back to front: PyTorch's insertion sort)
    for i in range(1, ndim):
        dim1 = i
        for dim0 in reversed(range(i)):
            comparison = should_swap(perm[dim0], perm[dim1])
            if comparison > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif comparison < 0:
                break
    if ambiguity_check and any(should_swap(perm[i], perm[i + 1]) != -1
                               for i in range(ndim - 1)):
        raise RuntimeError("The tensor does not have unique dim order.")
    return tuple(reversed(perm))


def const_data_ptr(self) -> int:
    """The address of the first element (``data_ptr()``; PyTorch's read-only form)."""
    return math_of(self._data).address(self._data)

for _fn in (fill_diagonal_, new, apply_, map_, pin_memory, is_pinned, share_memory_,
            is_shared, record_stream, resize_, resize_as_, set_, as_subclass, resize, resize_as,
            untyped_storage, storage, dim_order, const_data_ptr):
    _fn.__qualname__ = f"Tensor.{_fn.__name__}"
    setattr(Tensor, _fn.__name__, _fn)
del _fn
Tensor.__reduce_ex__ = _reduce_shared

Tensor.output_nr = property(lambda self: self._out_nr,
                            doc="Which output of its ``grad_fn`` this tensor is (0 for most).")
Tensor.layout = property(lambda self: dtypes.strided,
                         doc="The memory layout: ``gc.strided``, gradcore's only one.")
for _name, _what in (("is_sparse", "in a sparse layout"), ("is_quantized", "quantized"),
                     ("is_meta", "on the meta device"), ("is_mps", "on Apple's MPS"),
                     ("is_xpu", "on an Intel XPU"), ("is_mkldnn", "in MKL-DNN's layout"),
                     ("is_nested", "a nested tensor")):
    setattr(Tensor, _name, property(lambda self: False,
                                    doc=f"False: gradcore's tensors are never {_what}."))
del _name, _what


def _imag(self):
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


Tensor.real = property(lambda self: self, doc="The real part: the tensor itself (gradcore's "
                                               "tensors are real).")
Tensor.imag = property(_imag, doc="The imaginary part: gradcore's tensors are real, and, as "
                                  "PyTorch for them, reading it raises.")

# Methods: every operation lives in gradcore.ops; see ops/__init__.py for the binding.
_ops.bind_methods(Tensor)
