"""The tensor as the engine knows it: the :class:`Tensor` class, its autograd state,
and the few ways of making one from data.

This is the bottom of everything that holds a tensor: the engine's own modules
(``function``, ``functional``, ``gradcheck``), every op and the user-facing modules
build on it. The class is the one users see, ``gradcore.tensor.Tensor`` (its
``__module__`` says so): :mod:`gradcore.tensor` binds the operations of
:mod:`gradcore.ops` to it as methods (``add``, ``__getitem__``, ``to``, ...), and
``size``. Here it owns the array (``_data``; ``.data`` is PyTorch's untracked tensor
over it), the autograd bookkeeping and the conversions.

Also here, because a tensor's history needs them: :func:`edge` (the graph edge to a
tensor), :func:`new_node` (the one maker of nodes: a node of a class, wired to its
inputs), :func:`fresh_history` and :func:`view_history` (a view whose base changed in
place gets "these elements of the base's history", :class:`AsStridedBackward0`), and
:func:`from_data`, the one implementation of "a new tensor holding a copy of this
data" (``gc.tensor``, a list or an array meeting an op, a root gradient).
"""

from __future__ import annotations

import threading
import warnings

import numpy as np

from .. import backend, dtypes
from .._format import tensor_repr
from .._size import Size
from ..backend import math_of
from .grad_mode import state as _grad_state
from .graph import AccumulateGrad, Node, new_seq

__all__ = ["Tensor", "Parameter", "edge", "new_node", "fresh_history", "view_history",
           "from_data", "zeros", "zeros_like", "AsStridedBackward0"]

_new = object.__new__
_ndarray = np.ndarray
_accum_lock = threading.Lock()  # creation of a leaf's AccumulateGrad node

# Set by autograd.forward_ad once a dual tensor exists: fw_hidden[0](t) says whether a
# recorded tensor (t._rg) requires grad as the user sees it (not when its graph reaches
# only the leaves hidden under dual tensors of tensors that do not require grad).
fw_hidden = [None]


def user_requires_grad(t) -> bool:
    """Whether ``t`` requires grad as the user sees it: recorded (``t._rg``), and not
    computed only from forward AD's dual tensors of tensors that do not require grad."""
    return t._rg and (fw_hidden[0] is None or fw_hidden[0](t))


_NONLEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad "
    "field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. "
    "If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor "
    "instead. See github.com/pytorch/pytorch/pull/30531 for more information.")


class _UnsetGrad:
    """``Tensor.grad`` while a tensor has none: None, with PyTorch's warning for a
    non-leaf that does not retain its gradient.

    A non-data descriptor: once ``.grad`` is assigned it lives in the instance's
    ``__dict__``, which Python reads first, so no code runs when a gradient is there;
    only reads of an unset ``.grad`` come here. (CPython 3.11 does not specialize a read
    or write through a class-level descriptor, which costs a set ``.grad`` of a plain
    tensor about 15 ns a read; ``Parameter``, the optimizers' case, keeps a plain
    ``None`` default and pays nothing.)
    """

    def __get__(self, t, owner=None):
        if t is None:
            return self
        return self.read(t)

    @staticmethod
    def read(t):
        """None, warning (at the frame two above: the reader of ``.grad``, through this
        descriptor or one that stands in front of it while gc.compile records) for a
        non-leaf that does not retain its gradient."""
        fn = t.grad_fn
        if fn is not None and (fn._retains is None or t._out_nr not in fn._retains):
            warnings.warn(_NONLEAF_GRAD, UserWarning, stacklevel=3)
        return None


class Tensor:
    """An n-dimensional array that can record the operations applied to it.

    >>> import gradcore as gc
    >>> x = gc.tensor([[1., 2.], [3., 4.]], requires_grad=True)
    >>> x.sum().backward()
    >>> x.grad
    tensor([[1., 1.],
            [1., 1.]])
    """

    # Class-level defaults keep the per-op cost of a new tensor to a few attribute writes.
    grad = _UnsetGrad()  # None until assigned (the warning of a non-leaf's unset .grad)
    """The gradient ``backward()`` accumulated into this tensor: None until the first
    backward reaches it (for a leaf that requires grad, or a tensor after
    ``retain_grad()``); then a tensor of its shape, added to by each backward until set to
    None (``optimizer.zero_grad()``). Settable."""
    grad_fn = None
    """The node of the graph that made this tensor (``<MulBackward0 ...>``), None for a
    leaf: what ``backward()`` starts from. Its ``name()`` and ``next_functions`` walk the
    graph (``gradcore.autograd.Node``)."""
    _rg = False            # requires_grad
    _out_nr = 0            # which output of grad_fn this tensor is
    _vc = None             # version cell [int], shared with views; made when first needed
    _accum = None          # this leaf's AccumulateGrad node (made when first needed)
    _leaf_hooks = None     # {0: [hooks]} of a leaf
    _base = None           # the tensor this one is a view of
    __array_priority__ = 1000  # NumPy defers `ndarray * tensor` to Tensor.__rmul__
    # The class users see is gradcore.tensor.Tensor (that module binds the ops to it):
    # its name for repr, pickling by name and error messages.
    __module__ = "gradcore.tensor"

    def __init__(self, *args, dtype=None, device=None, requires_grad=False):
        # PyTorch's legacy constructor: Tensor([[1, 2]]) copies data as float32,
        # Tensor(2, 3) or Tensor(Size([2, 3])) makes an uninitialized (here: zero) tensor
        # of that shape; Tensor() an empty one.
        if len(args) == 1 and not isinstance(args[0], (int, Size)):
            src = from_data(args[0], dtype=dtype or dtypes.float32, device=device)
        else:
            shape = tuple(args[0]) if len(args) == 1 and isinstance(args[0], Size) \
                else tuple(args) or (0,)
            dev = backend.device(device)
            src = _wrap(dev.math.zeros(shape, dtype=(dtype and dtypes.to_dtype(dtype).np)
                                       or np.float32))
        self._data = src._data
        if requires_grad:
            self.requires_grad = True

    # -- autograd state -----------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        """Whether operations on this tensor are recorded for ``backward()``. Settable
        on leaves (floating point ones only); a result requires grad when an input does
        and recording is on."""
        return user_requires_grad(self)

    @requires_grad.setter
    def requires_grad(self, flag):
        flag = bool(flag)
        if self.grad_fn is not None:
            if not flag:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want "
                    "to use a computed variable in a subgraph that doesn't require "
                    "differentiation use var_no_grad = var.detach().")
            return
        if flag and not self.dtype.is_floating_point:
            raise RuntimeError(f"only Tensors of floating point dtype can require gradients, "
                               f"got {self.dtype!r}")
        self._rg = flag

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` in place (a leaf's); returns the tensor.

        >>> import gradcore as gc
        >>> gc.zeros(2).requires_grad_()
        tensor([0., 0.], requires_grad=True)
        """
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        """True for a tensor no recorded operation made (``grad_fn`` is None): the
        tensors whose ``.grad`` backward fills."""
        return self.grad_fn is None or not user_requires_grad(self)

    @property
    def _version(self) -> int:
        vc = self._vc
        return 0 if vc is None else vc[0]

    def _version_cell(self):
        vc = self._vc
        if vc is None:
            vc = self._vc = [0]
        return vc

    def _bump(self):
        """Record an in-place change (saved copies of this tensor become stale)."""
        vc = self._vc
        if vc is None:
            self._vc = [1]
        else:
            vc[0] += 1

    def _accumulator(self) -> AccumulateGrad:
        # Made once and kept (a parameter feeds a graph every step); the node refers
        # back to this tensor weakly, so no reference cycle keeps either alive.
        node = self._accum
        if node is None:
            # Once per leaf, under a lock: two threads building graphs on a new leaf at
            # once must share one node (and so one lock around .grad).
            with _accum_lock:
                node = self._accum
                if node is None:
                    node = AccumulateGrad(self)
                    if self._leaf_hooks is not None:
                        node._pre_hooks = self._leaf_hooks
                    self._accum = node
        return node

    def retain_grad(self) -> None:
        """Keep ``.grad`` of this non-leaf tensor after backward (a no-op on leaves)."""
        fn = self.grad_fn if self._base is None else fresh_history(self)
        if fn is None:
            if not self._rg:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        fn.retain(self._out_nr, self)

    @property
    def retains_grad(self) -> bool:
        """True for a non-leaf after ``retain_grad()``: its ``.grad`` is kept."""
        fn = self.grad_fn
        return fn is not None and fn._retains is not None and self._out_nr in fn._retains

    def register_hook(self, hook):
        """Call ``hook(grad)`` when the gradient of this tensor is computed.

        The hook may return a new gradient to use instead.  Returns a handle whose
        ``remove()`` unregisters it.
        """
        if not self._rg:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require "
                               "gradient")
        if self._base is not None:
            fresh_history(self)
        if self.grad_fn is not None:
            self.grad_fn.register_prehook(self._out_nr, hook)
            hooks = self.grad_fn._pre_hooks[self._out_nr]
        else:
            if self._leaf_hooks is None:
                self._leaf_hooks = {0: []}
                if self._accum is not None:
                    self._accum._pre_hooks = self._leaf_hooks
            hooks = self._leaf_hooks[0]
            hooks.append(hook)
        return _HookHandle(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(tensor)`` each time backward has added into this leaf's ``.grad``
        (an optimizer step per parameter, as its gradient is ready). The hook returns
        None. Returns a handle whose ``remove()`` unregisters it."""
        if not self._rg:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require "
                               "gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                               "tensors")
        node = self._accumulator()
        if node._post_hooks is None:
            node._post_hooks = []
        node._post_hooks.append(hook)
        return _HookHandle(node._post_hooks, hook)

    # -- description ----------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        """The size of each dimension, a ``gc.Size`` (a tuple); ``size()`` too.

        >>> import gradcore as gc
        >>> gc.zeros(2, 3).shape
        gradcore.Size([2, 3])
        """
        return Size(self._data.shape)

    # size(dim) is bound by gradcore.tensor (a dim is parsed as the ops parse one)

    @property
    def ndim(self) -> int:
        """The number of dimensions (0 for a scalar tensor)."""
        return self._data.ndim

    def dim(self) -> int:
        """The number of dimensions (``ndim``; ``ndimension()`` too)."""
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        """The number of elements (``nelement()`` too)."""
        return int(self._data.size)

    nelement = numel

    @property
    def dtype(self) -> dtypes.DType:
        """The element type, a ``gc.DType`` (``gradcore.float32``)."""
        return dtypes.from_numpy_dtype(self._data.dtype)

    @property
    def device(self) -> backend.Device:
        """Where the data lives, a ``gc.device`` (``device(type='cpu')``,
        ``device(type='cuda', index=0)``)."""
        return backend.device_of(self._data)

    @property
    def is_cuda(self) -> bool:
        """Whether the data is on a GPU."""
        return self.device.type == "cuda"

    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating point one (float16, float32, float64)."""
        return self._data.dtype.kind == "f"

    def element_size(self) -> int:
        """The size of one element in bytes (``itemsize``)."""
        return self._data.dtype.itemsize

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __repr__(self):
        fn = self.grad_fn if self._base is None else fresh_history(self)
        rg = user_requires_grad(self)
        if self._rg and not rg:
            fn = None  # computed from forward AD's dual tensors only
        return tensor_repr(backend.to_host(self._data), self.dtype, self.device, fn, rg)

    __str__ = __repr__

    # -- conversion -----------------------------------------------------------------------
    def numpy(self, force: bool = False) -> np.ndarray:
        """The data as a NumPy array (shares memory on the CPU, copies from a GPU).
        Refused for a tensor that requires grad while grad mode is on (under ``no_grad``,
        in a custom op's kernel, it is allowed, as in PyTorch)."""
        if self._rg and not force and _grad_state.enabled:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if self.device.type != "cpu" and not force:
            raise TypeError(f"can't convert {self.device} tensor to numpy. Use "
                            "Tensor.cpu() to copy the tensor to host memory first.")
        return backend.to_host(self._data)

    def item(self):
        """The value of a one-element tensor as a Python number (a host read on a GPU).

        >>> import gradcore as gc
        >>> gc.tensor([[2.5]]).item()
        2.5
        """
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                               "to Scalar")
        return self._data.reshape(()).item() if self.device.type == "cpu" \
            else backend.to_host(self._data).item()

    def tolist(self):
        """The data as nested Python lists of numbers (a number for a 0-d tensor)."""
        return backend.to_host(self._data).tolist()

    def __array__(self, dtype=None, copy=None):
        if self._rg and _grad_state.enabled:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        arr = backend.to_host(self._data)
        if dtype is not None:
            arr = arr.astype(dtype, copy=False)
        return arr

    def __dlpack__(self, *args, **kwargs):
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def __float__(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return float(self.item())

    def __int__(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return int(self.item())

    def __index__(self):
        if self._data.dtype.kind not in "iu" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to "
                            "an index")
        return int(self.item())

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with " +
                               ("no values" if self._data.size == 0 else "more than one value")
                               + " is ambiguous")
        return bool(self.item())

    def __format__(self, spec):
        # PyTorch's rule: a 0-d tensor formats its value (f"{loss:.4f}"); any other
        # tensor takes object's, which accepts only the empty spec (str(t))
        if self._data.ndim == 0 and type(self) is Tensor:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    @property
    def data(self) -> Tensor:
        """This tensor's values as a tensor outside autograd, as PyTorch's ``.data``.

        It shares the memory but not the version counter, so an in-place change through
        it (``p.data.mul_(2)``, ``p.data += -lr * p.grad``) changes ``p`` without
        recording anything and without failing the saved-tensor checks of a graph that
        used ``p``. Assigning ``p.data = t`` makes ``p`` hold ``t``'s memory.
        """
        t = _new(Tensor)
        t._data = self._data
        return t

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            cls = type(value)
            name = cls.__qualname__ if cls.__module__ == "builtins" else \
                f"{cls.__module__}.{cls.__qualname__}"
            raise TypeError(f"Variable data has to be a tensor, but got {name}")
        self._data = value._data

    def detach(self) -> Tensor:
        """A tensor sharing this one's data, cut from the graph."""
        t = _new(Tensor)
        t._data = self._data
        t._vc = self._version_cell()  # detach shares the version counter, as in PyTorch
        return t

    def detach_(self) -> Tensor:
        """Cut this tensor from the graph in place: it becomes a leaf that does not
        require grad. Views raise (use ``detach()``)."""
        if self._base is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self.grad_fn = None
        self._out_nr = 0
        self._rg = False
        return self

    def __hash__(self):
        return id(self)

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __reduce_ex__(self, protocol):
        raise TypeError("gradcore tensors are not picklable; save them with gradcore.save")

    def __deepcopy__(self, memo):
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol")
        t = _wrap(self._data.copy())
        t._rg = self._rg
        if self.grad is not None:
            t.grad = _wrap(self.grad._data.copy())
        memo[id(self)] = t
        return t

    @property
    def T(self) -> Tensor:
        """The dimensions in reverse order (a view): a matrix's transpose."""
        return self.permute(*reversed(range(self._data.ndim)))

    @property
    def mT(self) -> Tensor:
        """The last two dimensions swapped (a view): the transpose of each matrix of a
        batch. Needs at least 2 dimensions."""
        if self._data.ndim < 2:
            raise RuntimeError(f"tensor.mT is only supported on matrices or batches of "
                               f"matrices. Got {self._data.ndim}-D tensor.")
        return self.transpose(-2, -1)

    @property
    def H(self) -> Tensor:
        """The conjugate transpose: ``T`` (gradcore has no complex dtypes)."""
        return self.T

    @property
    def mH(self) -> Tensor:
        """The conjugate transpose of each matrix: ``mT`` (no complex dtypes)."""
        return self.mT


class Parameter(Tensor):
    """A tensor that is a module's parameter: a leaf that requires grad by default.

    ``Parameter(t)`` shares ``t``'s memory, as in PyTorch; operations on parameters
    return plain tensors.

    >>> import gradcore as gc
    >>> w = gc.nn.Parameter(gc.zeros(2))
    >>> w.requires_grad, w.is_leaf
    (True, True)
    """

    # Always a leaf: a plain default, so that reading .grad (twice a step per parameter
    # in every optimizer) stays a specialized attribute read (CPython 3.11 does not
    # specialize reads through a class-level descriptor such as Tensor's).
    grad = None
    __module__ = "gradcore.tensor"

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = _wrap(np.empty((0,), dtype=np.float32))
        if not isinstance(data, Tensor):
            data = from_data(data)
        self._data = data._data
        self._vc = data._version_cell()  # the same memory, the same version counter
        if requires_grad:
            self.requires_grad = True

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)

    __str__ = __repr__

    def __deepcopy__(self, memo):
        p = Parameter(_wrap(self._data.copy()), requires_grad=self._rg)
        if self.grad is not None:
            p.grad = _wrap(self.grad._data.copy())
        memo[id(self)] = p
        return p


class _HookHandle:
    def __init__(self, hooks, fn):
        self._hooks = hooks
        self._fn = fn

    def remove(self):
        try:
            self._hooks.remove(self._fn)
        except ValueError:
            pass


def _wrap(data) -> Tensor:
    """A new untracked tensor holding ``data`` (no copy)."""
    if type(data) is not _ndarray and isinstance(data, np.generic):
        data = np.asarray(data)
    t = _new(Tensor)
    t._data = data
    return t


# ---- a tensor's place in the graph ----------
_NO_EDGE = (None, 0)


def edge(t: Tensor):
    """The graph edge to ``t``: its grad_fn, its leaf accumulator, or none."""
    fn = t.grad_fn
    if fn is not None:
        if t._base is not None:  # a view: its base may have changed in place since
            fn = fresh_history(t)
        return (fn, t._out_nr)
    if t._rg:
        return (t._accumulator(), 0)
    return _NO_EDGE


def new_node(cls, inputs):
    """A new node of class ``cls`` (a :class:`Node` subclass) wired to ``inputs`` (a
    sequence of tensors): its edges (``next_functions``, :func:`edge` of each) and its
    sequence number, later than its inputs' nodes (``seq``). Every node but a leaf's
    :class:`AccumulateGrad` is made here (the ops' through ``ops._core.record``, whose
    ``record1`` has the one-input case inlined), with no ``__init__``: the class's
    defaults stand until the caller sets what its rule reads on the node returned."""
    node = _new(cls)
    n = len(inputs)
    if n == 1:  # edge(x), inlined: most ops have one input
        x = inputs[0]
        fn = x.grad_fn
        if fn is not None:
            if x._base is not None:  # a view: its base may have changed in place since
                fn = fresh_history(x)
            node.next_functions = ((fn, x._out_nr),)
        else:
            node.next_functions = ((x._accumulator(), 0),) if x._rg else (_NO_EDGE,)
    elif n == 2:  # the binary ops: without a generator
        node.next_functions = (edge(inputs[0]), edge(inputs[1]))
    else:
        node.next_functions = tuple([edge(t) for t in inputs])
    node.seq = new_seq()
    return node


def fresh_history(t: Tensor):
    """``t.grad_fn``, after rebasing it if ``t`` is a view whose base changed in place
    since the view's history was recorded: the base's history is then newer (higher
    sequence number) than the view's, and the view becomes "these elements of the
    base's current history" (PyTorch regenerates a view's grad_fn the same way, as an
    ``AsStridedBackward0``). For other tensors it is ``t.grad_fn``."""
    fn = t.grad_fn
    base = t._base
    if base is not None and fn is not None:
        bf = base.grad_fn
        if bf is not None and bf.seq > fn.seq:
            view_history(t, base)
            return t.grad_fn
    return fn


class AsStridedBackward0(Node):
    """The history of a view whose base changed in place after the view was taken:
    its elements' gradient goes to their positions in the base (repeated positions,
    as in an expanded view, accumulate)."""

    fresh_grads = True

    def apply(self, F, g):
        index = self.index
        if index is None:  # found once, from where the view lies in the base's memory
            index = self.index = math_of(self.base_arr).positions_in(self.view_arr,
                                                                     self.base_arr)
        return (F.index_add_into_zeros(g, index, self.in_shape),)


def view_history(v: Tensor, root: Tensor, index=None) -> None:
    """Give the view ``v`` the history "these elements of ``root``" (``index``: their
    positions in ``root``, found from the memory offsets when first needed)."""
    node = new_node(AsStridedBackward0, (root,))
    node.view_arr, node.base_arr, node.index = v._data, root._data, index
    node.in_shape = root._data.shape
    v.grad_fn, v._out_nr, v._rg = node, 0, True


# ---- new tensors from data ----------
# The wrap of the array a new tensor is made of (from_data, zeros). gradcore.profile
# replaces it while it counts memory traffic, so it is looked up at each call.
_wrap_new = _wrap


def _dev(device):
    return backend.device(device) if device is not None else backend.get_default_device()


def _finish(arr, requires_grad):
    t = _wrap_new(arr)
    if requires_grad:
        t.requires_grad = True
    return t


def _infer_dtype(data):
    """PyTorch's inference: bools stay bool, ints are int64, floats float32."""
    flat = data
    while isinstance(flat, (list, tuple)) and flat:
        flat = flat[0]
    arr = np.asarray(data)
    if arr.dtype.kind == "b":
        return np.bool_
    if arr.dtype.kind in "iu":
        return np.int64
    if arr.dtype.kind == "f":
        return dtypes.default_float.np
    if arr.dtype.kind == "O" or arr.dtype.kind in "US":
        raise TypeError(f"can't build a tensor from {type(flat).__name__} values")
    raise TypeError(f"unsupported data type {arr.dtype}")


def from_data(data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new tensor holding a copy of ``data`` (scalar, nested lists, NumPy/CuPy array,
    Tensor): ``gc.tensor``, which the ops (a list meeting a tensor) and the engine (a
    root gradient given as data) use too."""
    dev = _dev(device) if device is not None or not isinstance(data, Tensor) else data.device
    npd = None if dtype is None else dtypes.to_dtype(dtype).np
    if isinstance(data, Tensor):
        src = data._data
        arr = src.astype(npd) if npd is not None else src.copy()
        arr = dev.asarray(arr) if backend.device_of(arr) != dev else arr
        return _finish(arr, requires_grad)
    if backend.is_device_array(data):
        if npd is None:
            npd = data.dtype
            dtypes.from_numpy_dtype(np.dtype(npd))  # raises on unsupported dtypes
        src_dev = backend.device_of(data)
        arr = data.astype(npd, copy=True) if src_dev == dev else \
            dev.asarray(backend.to_host(data) if src_dev.type != "cpu" else data, npd)
        return _finish(arr, requires_grad)
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in _flatten(data)):
        data = _nested_tensors_to_lists(data)
    if npd is None:
        if isinstance(data, np.generic):
            npd = data.dtype
        else:
            npd = _infer_dtype(data)
    try:
        host = np.array(data, dtype=npd)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"can't build a tensor from {type(data).__name__}: {exc}") from None
    if host.dtype.kind == "O":
        raise TypeError(f"can't build a tensor from {type(data).__name__}")
    dtypes.from_numpy_dtype(host.dtype)
    return _finish(dev.asarray(host) if dev.type != "cpu" else host, requires_grad)


def _flatten(data):
    for x in data:
        if isinstance(x, (list, tuple)):
            yield from _flatten(x)
        else:
            yield x


def _nested_tensors_to_lists(data):
    if isinstance(data, Tensor):
        return data.tolist()
    if isinstance(data, (list, tuple)):
        return [_nested_tensors_to_lists(x) for x in data]
    return data


def zeros(shape, dtype=None, device=None) -> Tensor:
    """A new tensor of zeros (``shape``: a tuple of ints), of the default float dtype on
    the default device unless given."""
    npd = dtypes.to_dtype(dtype).np if dtype is not None else dtypes.default_float.np
    return _finish(_dev(device).math.zeros(tuple(shape), dtype=npd), False)


def zeros_like(t: Tensor) -> Tensor:
    """A new tensor of zeros of ``t``'s shape, dtype and device."""
    return zeros(t._data.shape, t.dtype, t.device)

