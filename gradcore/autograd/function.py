"""``gc.autograd.Function``: custom ops with a hand-written backward."""

from __future__ import annotations

from ..backend import math_of
from .grad_mode import no_grad
from .grad_mode import state as _mode
from .graph import _FREED, Node, _Packed, _raise_modified, differentiable
from .tensor_base import Tensor, _wrap, new_node, zeros


class FunctionCtx:
    """What ``forward`` leaves for ``backward``: saved tensors and any attributes.

    ``needs_input_grad`` is a tuple of booleans, one per argument of ``apply``: whether
    that argument is a tensor that requires grad (``backward`` may return None for the
    others).
    """

    def __init__(self):
        self._saved = ()
        self._versions = ()
        self.needs_input_grad = ()
        self._non_differentiable = set()
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        """Keep tensors (inputs or outputs, or None) for ``backward``, which reads them
        from ``saved_tensors``; modifying one in place before then makes that read
        raise. Call it at most once, in ``forward``."""
        self._saved = tensors
        self._versions = tuple(None if t is None else t._version for t in tensors)

    @property
    def saved_tensors(self):
        """The tensors given to ``save_for_backward``, as a tuple. Raises when the graph
        has been freed (a second ``backward`` without ``retain_graph=True``) or when one
        of them was modified in place since."""
        # once the node exists it holds them (node.saved), so that backward frees them
        saved = self._node.saved if getattr(self, "_node", None) is not None else self._saved
        if saved is None:
            raise RuntimeError(_FREED)
        if type(saved) is _Packed:  # saved under saved_tensors_hooks
            return saved.unpack()
        for t, v in zip(saved, self._versions):
            if t is not None and t._version != v:
                _raise_modified(self._node, t, v)
        return saved

    def mark_non_differentiable(self, *tensors):
        """Declare outputs of ``forward`` that have no gradient (indices, masks): they do
        not require grad, and ``backward`` receives zeros for them."""
        self._non_differentiable.update(id(t) for t in tensors)

    def set_materialize_grads(self, value: bool):
        """With False, ``backward`` receives None (not zeros) for the gradients of
        outputs that did not take part in the loss."""
        self.materialize_grads = value


def _expandable(shape, to):
    """Whether ``shape`` broadcasts to ``to`` (PyTorch's ``is_expandable_to``)."""
    if len(shape) > len(to):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(shape), reversed(to)))


def _validate_grad(g, meta, error, F):
    """A gradient from user code made fit for the input ``meta`` = (shape, dtype, device)
    describes, as PyTorch's engine does (``validate_outputs``): a gradient of a shape the
    input broadcasts to is summed down to it (the input was broadcast), any other shape
    raises ``error(message)``; another dtype is cast to the input's; another device
    raises, except for a 0-d gradient, which is moved. ``F``: the math of the backward
    pass, whose ``sum_to`` is differentiable when it builds a graph.
    """
    shape, dtype, device = meta
    if g.shape != shape:
        if not _expandable(shape, g.shape):
            raise RuntimeError(error(f"got {list(g.shape)} but expected shape compatible "
                                     f"with {list(shape)}"))
        # create_graph: the tensor ops' sum_to; else g is outside any graph (the engine
        # runs with grad mode off) and its array is summed
        g = F.sum_to(g, shape) if differentiable(F) else _wrap(math_of(g._data).sum_to(g._data,
                                                                                    shape))
    if g.dtype != dtype:
        g = g.to(dtype)
    if g.device != device:
        if g.ndim != 0:
            raise RuntimeError(error(f"expected device {device} but got {g.device}"))
        g = g.to(device)
    return g


class _FunctionNode(Node):
    fixed_outputs = False  # as many outputs as forward returned

    def apply(self, F, grads):
        single = self.n_outputs == 1
        gs = [grads] if single else list(grads)
        wrapped = []
        for g, (shape, dtype, dev) in zip(gs, self.out_meta):
            if g is None:
                if self.ctx.materialize_grads:
                    g = zeros(shape, dtype=dtype, device=dev)
                wrapped.append(g)
            else:
                wrapped.append(g if isinstance(g, Tensor) else _wrap(g))
        if differentiable(F):
            result = self.fn_cls.backward(self.ctx, *wrapped)
        else:
            with no_grad():
                result = self.fn_cls.backward(self.ctx, *wrapped)
        if not isinstance(result, tuple):
            result = (result,)
        n_args = self.n_args
        if len(result) != n_args:
            # extra Nones past the inputs are allowed, as in PyTorch
            if len(result) < n_args or any(g is not None for g in result[n_args:]):
                raise RuntimeError(f"function {self.name()} returned an incorrect number of "
                                   f"gradients (expected {n_args}, got {len(result)})")
        slots = self.input_slots
        if len(slots) != n_args:  # a non-tensor input must get None
            for pos, g in enumerate(result[:n_args]):
                if g is not None and pos not in slots:
                    raise RuntimeError(f"function {self.name()} returned a gradient different "
                                       f"than None at position {pos + 1}, but the corresponding "
                                       "forward input was not a Variable")
        out = []
        for i, (slot, meta) in enumerate(zip(slots, self.in_meta)):
            g = result[slot]
            if g is None:
                out.append(None)
                continue
            if not isinstance(g, Tensor):
                raise RuntimeError(f"Function {self.name()} returned an invalid gradient at "
                                   f"index {i} - expected Variable or None (got "
                                   f"{type(g).__name__})")
            if self.next_functions[i][0] is None:  # no gradient wanted: PyTorch drops it
                out.append(None)
                continue
            g = _validate_grad(g, meta, lambda msg, i=i: f"Function {self.name()} returned an "
                               f"invalid gradient at index {i} - {msg}", F)
            out.append(g if differentiable(F) else g._data)
        return tuple(out)

    def name(self):
        return f"{self.fn_cls.__name__}Backward"


class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``; call
    ``apply``.

    >>> import gradcore as gc
    >>> class Square(gc.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return 2 * x * g
    >>> x = gc.tensor([3.], requires_grad=True)
    >>> Square.apply(x).backward()
    >>> x.grad
    tensor([6.])
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        """Compute the outputs from the arguments (run without recording); save what
        ``backward`` needs on ``ctx``. Written by the subclass."""
        raise NotImplementedError("subclasses of Function implement forward(ctx, ...)")

    @staticmethod
    def backward(ctx, *grads):
        """Given one gradient per output of ``forward``, return one per argument of
        ``apply`` (None for an argument that needs none). Written by the subclass; it is
        recorded when ``create_graph=True``, so it may be differentiated again."""
        raise NotImplementedError("subclasses of Function implement backward(ctx, ...)")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward`` on the arguments and, when a tensor among them requires grad
        (and recording is on), record the call so that ``backward`` gives the gradients.
        """
        ctx = FunctionCtx()
        tensor_slots = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._rg for a in args)
        track = _mode.enabled and any(ctx.needs_input_grad)
        with no_grad():
            outputs = cls.forward(ctx, *args, **kwargs)
        if not track:
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        inputs = [args[i] for i in tensor_slots]
        node = new_node(_FunctionNode, inputs)
        node.fn_cls, node.ctx = cls, ctx
        node.saved, ctx._saved = ctx._saved, None  # the engine frees node.saved
        ctx._node = node
        node.input_slots = tensor_slots
        node.n_args = len(args)
        node.in_meta = [(t.shape, t.dtype, t.device) for t in inputs]
        node.n_outputs = len(outs)
        node.out_meta = [(o.shape, o.dtype, o.device) if isinstance(o, Tensor) else ((), None,
                                                                                     None)
                         for o in outs]
        results = []
        for nr, o in enumerate(outs):
            if not isinstance(o, Tensor):
                results.append(o)
                continue
            if id(o) in ctx._non_differentiable or not o.dtype.is_floating_point:
                results.append(o)
                continue
            # `o in inputs` would compare with == (elementwise): test identity
            if o.grad_fn is not None or any(o is t for t in inputs):
                o = _wrap(o._data)  # the output of apply is always a fresh node output
            o.grad_fn, o._out_nr, o._rg = node, nr, True
            results.append(o)
        return results[0] if single else tuple(results)
