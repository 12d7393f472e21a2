"""Activation checkpointing, PyTorch's ``torch.utils.checkpoint``: a region of the
forward pass keeps none of its intermediate tensors for backward; backward runs the
region again (with the random-number state it first ran with, so that dropout draws the
same masks) and differentiates the recomputation.

>>> import gradcore as gc
>>> from gradcore.utils.checkpoint import checkpoint
>>> x = gc.tensor([1., 2.], requires_grad=True)
>>> y = checkpoint(lambda t: (t.sin() * t).sum(), x, use_reentrant=False)
>>> y.backward()
>>> x.grad
tensor([1.3818, 0.0770])

gradcore's checkpoint is one node of the graph (``CheckpointFunctionBackward``) whose
backward recomputes the region. With ``use_reentrant=True`` (PyTorch's default, with a
warning when not passed) its edges go to the tensor arguments, and the tensors the
function uses from elsewhere (a module's parameters) get their gradients in ``.grad``
from the recomputation's own backward, as PyTorch's reentrant variant does (and, as
there, ``autograd.grad`` through the region raises). With
``use_reentrant=False`` the region runs recorded once, to find every tensor requiring
grad it reads (arguments, parameters, tensors from before the region), the recording is
dropped, and the node's edges go to all of them: ``autograd.grad`` works through it and
keyword arguments are passed on.
"""

from __future__ import annotations

import contextlib
import warnings

from .. import random as _random
from ..autograd.grad_mode import enable_grad, no_grad
from ..autograd.grad_mode import state as _mode
from ..autograd.graph import Node, differentiable, new_seq, run_backward, saved_inputs
from ..autograd.tensor_base import Tensor, _wrap, edge

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "noop_context_fn"]


class CheckpointError(RuntimeError):
    """Raised when the recomputation differs from the first run (shapes, dtypes or
    devices of the outputs): the region is not deterministic enough to checkpoint."""


def noop_context_fn():
    """The default ``context_fn`` of :func:`checkpoint`: two contexts that do nothing."""
    return contextlib.nullcontext(), contextlib.nullcontext()


_DETERMINISM = ("default", "none")


def _flatten(tree):
    if isinstance(tree, (list, tuple)) and not hasattr(tree, "_fields"):
        leaves, specs = [], []
        for item in tree:
            sub, spec = _flatten(item)
            leaves += sub
            specs.append(spec)
        return leaves, (type(tree), specs)
    if isinstance(tree, dict):
        leaves, specs = [], []
        for item in tree.values():
            sub, spec = _flatten(item)
            leaves += sub
            specs.append(spec)
        return leaves, (type(tree), list(tree), specs)
    return [tree], None


def _unflatten(leaves, spec):
    it = iter(leaves)

    def build(spec):
        if spec is None:
            return next(it)
        if len(spec) == 3:
            kind, keys, specs = spec
            return kind(zip(keys, [build(s) for s in specs]))
        kind, specs = spec
        return kind([build(s) for s in specs])
    return build(spec)


def _meta(t):
    return {"shape": t.shape, "dtype": t.dtype, "device": t.device}


class CheckpointFunctionBackward(Node):
    """The node of a checkpointed region: its backward runs the region again and
    differentiates that run."""

    fixed_outputs = False

    def apply(self, F, grad):
        grads = [grad] if self.n_outputs == 1 else list(grad)
        saved = saved_inputs(self)  # the tensor arguments (freed by the engine after use)
        create_graph = differentiable(F)
        inputs, outputs = self.recompute(saved, create_graph and not self.reentrant)
        roots, root_grads = [], []
        for out, g in zip(outputs, grads):
            if g is None or not isinstance(out, Tensor) or not out.requires_grad:
                continue
            roots.append((out.grad_fn if out.grad_fn is not None else out._accumulator(),
                          out._out_nr))
            if create_graph and not isinstance(g, Tensor):
                g = _wrap(g)
            elif not create_graph and isinstance(g, Tensor):
                g = g._data
            root_grads.append(g)
        if not roots:
            return (None,) * len(self.next_functions)
        if self.reentrant:
            if _mode.capturing:
                raise RuntimeError("When use_reentrant=True, torch.utils.checkpoint is "
                                   "incompatible with .grad() or passing an `inputs` parameter "
                                   "to .backward(). To resolve this error, you can either set "
                                   "use_reentrant=False, or call .backward() without passing "
                                   "the `inputs` argument.")
            # the recomputation's own backward: its leaves (parameters) get their .grad
            with enable_grad() if create_graph else no_grad():
                run_backward(roots, root_grads, retain_graph=create_graph,
                             create_graph=create_graph)
            out = []
            for t in inputs:
                g = t.__dict__.get("grad") if isinstance(t, Tensor) and t.requires_grad \
                    else None
                out.append(None if g is None else g if create_graph else g._data)
            return tuple(out[i] for i in self.edge_args)
        capture, slots = {}, []
        for i, key in enumerate(self.next_functions):
            if key[0] is None:  # an argument that requires no grad
                slots.append(None)
                continue
            if i < len(self.edge_args):  # an argument: its stand-in in the recomputation
                t = inputs[self.edge_args[i]]
                key = (t.grad_fn, 0) if t.grad_fn is not None else (t._accumulator(), 0)
            slots.append(capture.setdefault(key, len(capture)))
        captured = run_backward(roots, root_grads, retain_graph=create_graph,
                                create_graph=create_graph,
                                capture=capture, accumulate=False)
        result = []
        for slot in slots:
            g = None if slot is None else captured[slot]
            if g is not None and create_graph and not isinstance(g, Tensor):
                g = _wrap(g)
            result.append(g)
        return tuple(result)


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check="default", debug=False, early_stop=True, **kwargs):
    """``function(*args, **kwargs)``, keeping none of its intermediate tensors for
    backward: backward runs it again to get them.

    Pass ``preserve_rng_state=False`` among the keyword arguments to skip restoring the
    random-number state for the recomputation (dropout would then draw other masks).

    Args:
        function: the region to checkpoint (a module, or a function of tensors).
        *args: its positional arguments.
        use_reentrant: True (the default, with PyTorch's warning when not given): only
            the tensor arguments are edges of the graph, and keyword arguments are
            refused; False: every tensor requiring grad that the region reads is (see
            the module's description), and ``autograd.grad`` works through it.
        context_fn: returns two context managers, entered around the first run and
            around the recomputation (``use_reentrant=False`` only).
        determinism_check: ``"default"``: the recomputed outputs must have the shapes,
            dtypes and devices of the first run's (``CheckpointError`` otherwise);
            ``"none"``: no check.
        debug: accepted (``use_reentrant=False`` only).
        early_stop: accepted (gradcore recomputes the whole region).
        **kwargs: keyword arguments of ``function`` (``use_reentrant=False`` only).
    """
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed "
                      "explicitly. Starting in PyTorch 2.9, calling checkpoint without "
                      "use_reentrant will raise an exception. use_reentrant=False is "
                      "recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the "
                      "differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant and (context_fn is not noop_context_fn or debug is not False):
        raise ValueError("Passing `context_fn` or `debug` is only supported when "
                         "use_reentrant=False.")
    if determinism_check not in _DETERMINISM:
        raise ValueError(f"determinism_check should be one of {list(_DETERMINISM)}, but got "
                         f"{determinism_check}")
    if use_reentrant:
        return _reentrant(function, preserve, args)
    return _non_reentrant(function, preserve, context_fn, determinism_check, args, kwargs)


def _make_recompute(function, preserve, args, kwargs, recompute_ctx, first_meta,
                    determinism_check):
    """The recomputation: given the saved tensor arguments, the region run again on
    detached copies of them, with the random-number state of the first run."""
    state = _random.get_rng_state() if preserve else None
    slots = [i for i, a in enumerate(args) if isinstance(a, Tensor)]

    def recompute(saved, connected=False):
        # connected (a differentiable backward): the recomputation hangs off the
        # arguments through views, so that its gradients can be differentiated again
        inputs = list(args)
        for i, t in zip(slots, saved):
            if connected and t.requires_grad:
                with enable_grad():
                    inputs[i] = t.view_as(t)
            else:
                inputs[i] = t.detach().requires_grad_(t.requires_grad)
        now = _random.get_rng_state() if preserve else None
        try:
            if preserve:
                _random.set_rng_state(state)
            with enable_grad(), recompute_ctx:
                outputs = function(*inputs, **kwargs)
        finally:
            if preserve:
                _random.set_rng_state(now)
        flat, _ = _flatten(outputs)
        if determinism_check == "default":
            _check_same(first_meta, flat)
        return inputs, flat
    return recompute


def _check_same(first_meta, flat):
    now = [_meta(t) if isinstance(t, Tensor) else None for t in flat]
    different = [(i, a, b) for i, (a, b) in enumerate(zip(first_meta, now)) if a != b]
    if len(now) != len(first_meta) or different:
        text = "".join(f"tensor at position {i}:\nsaved metadata: {a}\nrecomputed metadata: "
                       f"{b}\n" for i, a, b in different)
        raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following "
                              "tensors have different metadata than during the forward pass.\n"
                              f"{text}.")


def _attach(outputs, args, edges, edge_args, reentrant, recompute):
    """Outputs of a new CheckpointFunctionBackward node with these edges, holding the
    tensor arguments ``args`` for the recomputation."""
    flat, spec = _flatten(outputs)
    node = Node.__new__(CheckpointFunctionBackward)
    node.next_functions = tuple(edges)
    node.seq = new_seq()
    node.edge_args, node.reentrant, node.recompute = edge_args, reentrant, recompute
    node.saved = tuple(args)
    node.versions = tuple(t._version for t in args)
    node.n_outputs = len(flat)
    result = []
    for nr, o in enumerate(flat):
        if isinstance(o, Tensor) and o.dtype.is_floating_point:
            o = _wrap(o._data)
            o.grad_fn, o._out_nr, o._rg = node, nr, True
        result.append(o)
    return _unflatten(result, spec)


def _reentrant(function, preserve, args):
    tensors = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    if not any(args[i].requires_grad for i in tensors):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=3)
    track = _mode.enabled and any(args[i].requires_grad for i in tensors)
    recompute = _make_recompute(function, preserve, args, {}, contextlib.nullcontext(),
                                None, "none")
    with no_grad():
        outputs = function(*args)
    if not track:
        return outputs
    return _attach(outputs, [args[i] for i in tensors], [edge(args[i]) for i in tensors],
                   tensors, True, recompute)


def _non_reentrant(function, preserve, context_fn, determinism_check, args, kwargs):
    if not _mode.enabled:
        return function(*args, **kwargs)
    forward_ctx, recompute_ctx = context_fn()
    first_meta = []  # (filled below: what the recomputation must match)
    recompute = _make_recompute(function, preserve, args, kwargs, recompute_ctx, first_meta,
                                determinism_check)
    start = new_seq()
    with forward_ctx:
        outputs = function(*args, **kwargs)
    flat, _ = _flatten(outputs)
    # the edges out of the region: the arguments first, then what else it read
    tensors = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    edges = [edge(args[i]) for i in tensors]
    known = {e for e in edges if e[0] is not None}
    stack = [o.grad_fn for o in flat if isinstance(o, Tensor) and o.grad_fn is not None
             and o.grad_fn.seq > start]
    seen = set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        for e in node.next_functions:
            nxt = e[0]
            if nxt is None:
                continue
            if nxt.seq > start:
                stack.append(nxt)
            elif e not in known:
                known.add(e)
                edges.append(e)
    if all(e[0] is None for e in edges):
        return outputs  # nothing in the region requires grad
    first_meta[:] = [_meta(t) if isinstance(t, Tensor) else None for t in flat]
    detached = [o.detach() if isinstance(o, Tensor) and o.requires_grad else o for o in flat]
    keep = [isinstance(o, Tensor) and o.requires_grad for o in flat]
    result = _attach(_unflatten(detached, _flatten(outputs)[1]), [args[i] for i in tensors],
                     edges, tensors, False, recompute)
    # outputs that did not require grad in the first run do not now either
    flat_result, spec = _flatten(result)
    flat_result = [r if k or not isinstance(r, Tensor) else o
                   for r, k, o in zip(flat_result, keep, flat)]
    return _unflatten(flat_result, spec)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):  # noqa: A002
    """Run ``functions`` (an ``nn.Sequential`` or a list of modules or functions) one
    after the other on ``input``, checkpointing them in ``segments`` parts; the last part
    runs normally.

    Args:
        functions: an ``nn.Sequential``, or a list of modules or functions.
        segments: the number of parts.
        input: the input of the first function.
        use_reentrant: as :func:`checkpoint`'s (True, with PyTorch's warning, when not
            given).
        **kwargs: ``preserve_rng_state`` only.
    """
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant "
                      "parameter should be passed explicitly. In version 2.9 we will raise an "
                      "exception if use_reentrant is not passed. use_reentrant=False is "
                      "recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the "
                      "differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,  # noqa: A001
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
