"""``autograd.grad`` and ``backward(inputs=...)``: gradients of chosen inputs only."""

from __future__ import annotations

from ..backend import math_of
from .graph import grad_lock, run_backward
from .tensor_base import Tensor, _wrap, fresh_history, from_data, zeros_like


def _as_list(x):
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _root_grads(outputs, grad_outputs, create_graph):
    """The gradients that start a backward pass: arrays, or tensors for create_graph.

    A missing one is ones (scalar outputs only); a given one must match its output's
    shape and device.
    """
    grads = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if not out._rg:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               "a grad_fn")
        if g is None:
            if out._data.size != 1:
                raise RuntimeError(f"grad can be implicitly created only for scalar outputs, "
                                   f"got a tensor of shape {tuple(out.shape)}")
            arr = math_of(out._data).ones_like(out._data)
            grads.append(_wrap(arr) if create_graph else arr)
            continue
        if not isinstance(g, Tensor):
            g = from_data(g, dtype=out.dtype, device=out.device)
        if tuple(g.shape) != tuple(out.shape):
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                               f"{tuple(g.shape)} and output[{i}] has a shape of "
                               f"{tuple(out.shape)}.")
        if g.device != out.device:
            raise RuntimeError(f"grad_output[{i}] is on {g.device} but output[{i}] is on "
                               f"{out.device}")
        if g.dtype != out.dtype:  # PyTorch casts the root gradient to its output's dtype
            g = g.to(out.dtype)
        grads.append(g if create_graph else g._data)
    return grads


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=None, materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs`` (nothing goes to ``.grad``).

    >>> import gradcore as gc
    >>> x = gc.tensor([1., 2.], requires_grad=True)
    >>> (g,) = gc.autograd.grad((x * x).sum(), x)
    >>> g
    tensor([2., 4.])
    """
    single_input = isinstance(inputs, Tensor)
    outputs, inputs = _as_list(outputs), _as_list(inputs)
    grad_outputs = _as_list(grad_outputs) or [None] * len(outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad requires one grad_output per output: got "
                           f"{len(grad_outputs)} for {len(outputs)} outputs")
    if retain_graph is None:
        retain_graph = create_graph
    if allow_unused is None:
        allow_unused = materialize_grads
    _fresh_views(outputs, inputs)
    for i, t in enumerate(inputs):
        if not t._rg:
            raise RuntimeError(f"One of the differentiated Tensors (input {i}) does not require "
                               "grad")
    roots = [(o.grad_fn if o.grad_fn is not None else o._accumulator(), o._out_nr)
             for o in outputs]
    capture = {}
    keys = []
    for t in inputs:
        key = (t.grad_fn, t._out_nr) if t.grad_fn is not None else (t._accumulator(), 0)
        keys.append(key)
        capture.setdefault(key, len(capture))
    captured = run_backward(roots, _root_grads(outputs, grad_outputs, create_graph),
                            retain_graph=retain_graph, create_graph=create_graph,
                            capture=capture, accumulate=False)
    result = []
    for i, (t, key) in enumerate(zip(inputs, keys)):
        g = captured[capture[key]]
        if g is None:
            if materialize_grads:
                result.append(zeros_like(t))
                continue
            if not allow_unused:
                raise RuntimeError(f"One of the differentiated Tensors (input {i}) appears to "
                                   "not have been used in the graph. Set allow_unused=True if "
                                   "this is the desired behavior.")
            result.append(None)
            continue
        if not isinstance(g, Tensor):
            g = _wrap(g)
        if g.shape != t.shape:
            g = _wrap(math_of(g._data).sum_to(g._data, t.shape)) if not create_graph else g
        result.append(g if create_graph else g.detach())
    return tuple(result) if not single_input or len(result) != 1 else (result[0],)


def _fresh_views(*groups):
    """Views among these tensors whose base changed in place get their history rebased
    first (``tensor_base.fresh_history``), as PyTorch's grad_fn of a view is."""
    for group in groups:
        for t in group:
            if t._base is not None:
                fresh_history(t)


def backward_to_inputs(output, root_grad, inputs, retain_graph, create_graph):
    """``output.backward(inputs=...)``: accumulate into the listed tensors' ``.grad`` only."""
    inputs = _as_list(inputs)
    grads = grad([output], inputs, [root_grad if isinstance(root_grad, Tensor) or
                                    root_grad is None else _wrap(root_grad)],
                 retain_graph=retain_graph, create_graph=create_graph, allow_unused=True)
    for t, g in zip(inputs, grads):
        if g is None:
            continue
        with grad_lock(t):
            old = t.__dict__.get("grad")  # not t.grad: no warning for a non-leaf input
            t.grad = g if old is None else old + g


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Backpropagate from several outputs at once (``gc.autograd.backward``)."""
    tensors = _as_list(tensors)
    grad_tensors = _as_list(grad_tensors) or [None] * len(tensors)
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        for t, g in zip(tensors, grad_tensors):
            t.backward(g, retain_graph=True, create_graph=create_graph, inputs=inputs)
        return
    _fresh_views(tensors)
    roots = [(t.grad_fn if t.grad_fn is not None else t._accumulator(), t._out_nr)
             for t in tensors]
    run_backward(roots, _root_grads(tensors, grad_tensors, create_graph),
                 retain_graph=retain_graph, create_graph=create_graph)
