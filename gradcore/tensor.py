"""The user-facing :class:`Tensor`: an array, and where its gradient comes from.

The class is thin: it owns the array (``_data``; ``.data`` is PyTorch's untracked
tensor over it), the autograd bookkeeping and the conversions; every operation is a
function in :mod:`gradcore.ops`, bound here as a method.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np

from . import backend, dtypes
from ._format import tensor_repr
from .autograd.functional import _root_grads
from .autograd.graph import AccumulateGrad, run_backward

__all__ = ["Tensor"]

_new = object.__new__
_ndarray = np.ndarray
_accum_lock = threading.Lock()  # creation of a leaf's AccumulateGrad node


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
        fn = t.grad_fn
        if fn is not None and (fn._retains is None or t._out_nr not in fn._retains):
            warnings.warn(_NONLEAF_GRAD, UserWarning, stacklevel=2)
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
    grad_fn = None
    _rg = False            # requires_grad
    _out_nr = 0            # which output of grad_fn this tensor is
    _vc = None             # version cell [int], shared with views; made when first needed
    _accum = None          # this leaf's AccumulateGrad node (made when first needed)
    _leaf_hooks = None     # {0: [hooks]} of a leaf
    _base = None           # the tensor this one is a view of
    __array_priority__ = 1000  # NumPy defers `ndarray * tensor` to Tensor.__rmul__

    def __init__(self, *args, dtype=None, device=None, requires_grad=False):
        # PyTorch's legacy constructor: Tensor([[1, 2]]) copies data as float32,
        # Tensor(2, 3) makes an uninitialized (here: zero) tensor of that shape.
        from .creation import tensor as _tensor

        if len(args) == 1 and not isinstance(args[0], int):
            src = _tensor(args[0], dtype=dtype or dtypes.float32, device=device)
        else:
            shape = tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list)) \
                else tuple(args)
            dev = backend.device(device)
            src = _wrap(dev.math.zeros(shape, dtype=(dtype and dtypes.to_dtype(dtype).np)
                                       or np.float32))
        self._data = src._data
        if requires_grad:
            self.requires_grad = True

    # -- autograd state -----------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._rg

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
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

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
        fn = self.grad_fn if self._base is None else _fresh_history(self)
        if fn is None:
            if not self._rg:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        fn.retain(self._out_nr, self)

    @property
    def retains_grad(self) -> bool:
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
            _fresh_history(self)
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

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad``.

        ``gradient`` is required unless the tensor has one element.  The graph's saved
        values are freed afterwards unless ``retain_graph=True``.
        """
        if retain_graph is None:
            retain_graph = create_graph
        (g,) = _root_grads([self], [gradient], create_graph)
        fn = self.grad_fn if self._base is None else _fresh_history(self)
        node = fn if fn is not None else self._accumulator()
        if inputs is not None:
            from .autograd.functional import backward_to_inputs
            backward_to_inputs(self, g, inputs, retain_graph, create_graph)
            return
        run_backward([(node, self._out_nr)], [g], retain_graph=retain_graph,
                     create_graph=create_graph)

    # -- description ----------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self._data.shape

    def size(self, dim=None):
        if dim is None:
            return self._data.shape
        shape = self._data.shape
        if type(dim) is int:
            try:
                return shape[dim]  # (negative dims wrap as PyTorch's do)
            except IndexError:
                pass
        from .ops._core import int_arg, normalize_dim
        if not shape:
            raise IndexError(f"Dimension specified as {int_arg(dim, 'size')} but tensor has "
                             "no dimensions")
        return shape[normalize_dim(dim, len(shape), "size")]

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return int(self._data.size)

    nelement = numel

    @property
    def dtype(self) -> dtypes.DType:
        return dtypes.from_numpy_dtype(self._data.dtype)

    @property
    def device(self) -> backend.Device:
        return backend.device_of(self._data)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f"

    def element_size(self) -> int:
        return self._data.dtype.itemsize

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __repr__(self):
        fn = self.grad_fn if self._base is None else _fresh_history(self)
        return tensor_repr(backend.to_host(self._data), self.dtype, self.device, fn, self._rg)

    __str__ = __repr__

    # -- conversion -----------------------------------------------------------------------
    def numpy(self, force: bool = False) -> np.ndarray:
        """The data as a NumPy array (shares memory on the CPU, copies from a GPU)."""
        if self._rg and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if self.device.type != "cpu" and not force:
            raise TypeError(f"can't convert {self.device} tensor to numpy. Use "
                            "Tensor.cpu() to copy the tensor to host memory first.")
        return backend.to_host(self._data)

    def item(self):
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                               "to Scalar")
        return self._data.reshape(()).item() if self.device.type == "cpu" \
            else backend.to_host(self._data).item()

    def tolist(self):
        return backend.to_host(self._data).tolist()

    def __array__(self, dtype=None, copy=None):
        if self._rg:
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
        if self._base is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self.grad_fn = None
        self._out_nr = 0
        self._rg = False
        return self

    def equal(self, other) -> bool:
        """True when ``other`` has the same shape and elements (``torch.equal``)."""
        return tuple(self.shape) == tuple(other.shape) and bool((self._data == other._data).all())

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
        return self.permute(*reversed(range(self._data.ndim)))

    @property
    def mT(self) -> Tensor:
        if self._data.ndim < 2:
            raise RuntimeError(f"tensor.mT is only supported on matrices or batches of "
                               f"matrices. Got {self._data.ndim}-D tensor.")
        return self.transpose(-2, -1)

    @property
    def H(self) -> Tensor:
        return self.T

    @property
    def mH(self) -> Tensor:
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

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = _wrap(np.empty((0,), dtype=np.float32))
        if not isinstance(data, Tensor):
            from .creation import tensor as _tensor
            data = _tensor(data)
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



# Methods: every operation lives in gradcore.ops; see ops/__init__.py for the binding.
from . import ops as _ops  # noqa: E402

_ops.bind_methods(Tensor)

from .ops._core import fresh_history as _fresh_history  # noqa: E402
