"""Graph nodes and the backward engine.

A :class:`Node` is the backward function of one forward op.  It knows the edges to
the nodes of its inputs (``next_functions``) and what it saved for backward; its
``apply(F, grad)`` returns one gradient per input.  ``F`` is the math the formulas
run on: an array namespace (NumPy/CuPy plus fused kernels) for a plain backward, or
:data:`gradcore.ops.tensor_math` when ``create_graph=True`` so that the same formulas
build a differentiable graph.  The engine knows nothing about individual ops and
imports none: the ops hand it ``tensor_math`` once, at import
(:func:`set_differentiable_namespace`).
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import weakref
from heapq import heapify, heappop, heappush
from sys import getrefcount

from numpy import ndarray as _ndarray

from .. import backend as _backend
from ..backend import math_of
from .grad_mode import state as _mode

__all__ = ["Node", "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks"]


class SavedTensorError(RuntimeError):
    pass


# The large saved output a backward rule has just read, in this thread (a weak reference
# and its version cell); how large it must be (gradcore.ops._elide.MIN_BYTES: a test
# checks).
dying = threading.local()
OFFER_BYTES = 256 * 1024

_FREED = ("Trying to backward through the graph a second time (or directly access saved "
          "tensors after they have already been freed). Saved intermediate values of the "
          "graph are freed when you call .backward() or autograd.grad(). Specify "
          "retain_graph=True if you need to backward through the graph a second time or "
          "if you need to access saved tensors after calling backward.")


class Node:
    """A node of the graph: the backward function of one recorded op, what a tensor's
    ``grad_fn`` is (PyTorch's ``torch.autograd.graph.Node``).

    ``name()`` says which op (``"MulBackward0"``); ``next_functions`` holds one pair
    ``(node, output index)`` per input, the node None for an input that needs no
    gradient, and walks the graph back to the leaves' ``AccumulateGrad`` nodes.

    >>> import gradcore as gc
    >>> x = gc.ones(2, requires_grad=True)
    >>> y = (x * 2).sum()
    >>> y.grad_fn.name(), y.grad_fn.next_functions[0][0].name()
    ('SumBackward0', 'MulBackward0')

    For the engine: subclasses implement ``apply(F, grad)``. ``saved`` holds the input
    tensors the formula needs and ``versions`` their version numbers when saved; ``out``
    holds (array, version cell, version) of a saved output. ``shapes`` (input shapes) is
    set by broadcasting ops: the engine then sums each gradient back to its input's shape
    with the shared ``sum_to``.
    """

    # Class-level defaults: nodes are made without __init__ by one factory
    # (tensor_base.new_node, which ops reach through record) and set only what they use.
    seq = 0  # creation order, set when the node is wired to its inputs (see new_seq)
    next_functions = ()
    saved = None
    versions = ()
    out = None
    shapes = None
    _pre_hooks = None
    _retains = None
    n_outputs = 1
    # True when apply() always returns new arrays that nothing else references: the
    # engine may then update them in place (accumulation, out=, .grad).
    fresh_grads = False
    # Indices of the outputs that are the incoming gradient itself (add's, sub's first):
    # an owned gradient stays owned along the one edge that keeps it unreduced.
    passes = ()
    # True when apply takes ``out``: the engine then calls ``apply(F, grad, grad)`` when
    # it owns ``grad`` exclusively (never for tensors), and the rule hands ``out`` to the
    # array namespace (``F.tanh_backward(g, y, out=out)``), which writes its result
    # there where it can (same shape and dtype) and returns a new array otherwise.
    writes_into_grad = False
    is_sink = False  # True for AccumulateGrad
    fixed_outputs = True  # False where instances set their own n_outputs

    def __init_subclass__(cls, **kwargs):
        # What the engine asks of every node, read once per class: one attribute
        # lookup on the hot path instead of five. (These are class-body settings.)
        super().__init_subclass__(**kwargs)
        cls._kind = (cls.is_sink, cls.fixed_outputs and cls.n_outputs == 1,
                     cls.writes_into_grad, cls.fresh_grads, cls.passes)

    def needs(self, i: int) -> bool:
        """Whether input ``i`` wants a gradient (formulas skip the others)."""
        return self.next_functions[i][0] is not None

    def name(self) -> str:
        """The node's name: the op's, as PyTorch's (``"MulBackward0"``)."""
        return type(self).__name__

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"

    # -- what backward needs ----------------------------------------------------------
    def save(self, *tensors):
        self.saved = tensors
        self.versions = tuple(t._version for t in tensors)

    def save_output(self, tensor):
        vc = tensor._vc
        if vc is None:  # a fresh output (the usual case): start its version counter
            vc = tensor._vc = [0]
        data = tensor._data if not _hooks_on[0] else _pack_output(tensor)
        self.out = (data, vc, vc[0], tensor._out_nr)

    def unpack(self, F):
        """The saved inputs: arrays, or tensors when building a differentiable graph."""
        saved = self.saved
        if saved is None:
            raise SavedTensorError(_FREED)
        if type(saved) is _Packed:  # saved under saved_tensors_hooks
            saved = saved.unpack()
            return saved if F is _tm else tuple([t._data for t in saved])
        for t, v in zip(saved, self.versions):
            if t._version != v:
                _raise_modified(self, t, v)
        if F is _tm:  # create_graph=True: the tensors themselves
            return saved
        if len(saved) == 2:  # the common case, without a generator
            return saved[0]._data, saved[1]._data
        return tuple([t._data for t in saved])

    def output(self, F):
        """The saved output of this op (array, or a tensor whose grad_fn is this node)."""
        out = self.out
        if out is None:
            raise SavedTensorError(_FREED)
        data, vc, v, nr = out
        if type(data) is _Packed:  # saved under saved_tensors_hooks (no version check)
            data = data.unpack()[0]._data
        elif vc[0] != v:
            _raise_modified(self, None, v, vc[0])
        if F is _tm:
            return F.wrap_output(data, self, nr)
        if _mode.releasing and type(data) is _ndarray and data.nbytes >= OFFER_BYTES and \
                getrefcount(data) == 3:
            # the rule reads its saved output for the last time and only this node holds
            # it (this local, getrefcount's argument): a kernel may reuse its memory
            # (gradcore.ops._elide.dead_argument, which the generated CPU twins ask)
            dying.offer = (weakref.ref(data), vc)
        return data

    # -- hooks --------------------------------------------------------------------------
    def register_prehook(self, nr, fn):
        if self._pre_hooks is None:
            self._pre_hooks = {}
        self._pre_hooks.setdefault(nr, []).append(fn)

    def retain(self, nr, tensor):
        if self._pre_hooks is None:
            self._pre_hooks = {}  # the engine checks this one attribute for both
        if self._retains is None:
            self._retains = {}
        self._retains[nr] = weakref.ref(tensor)

    def apply(self, F, grad):  # pragma: no cover - abstract
        raise NotImplementedError


# ---- saved-tensor hooks (torch.autograd.graph.saved_tensors_hooks) ----------------------
# What a node saves for backward goes through one of two doors: its ``saved`` attribute
# (the inputs: Node.save, or set directly by the hot paths of the ops) and
# ``save_output``. While a saved_tensors_hooks block is open in some thread, ``saved``
# is a property of Node whose setter packs the tensors with the innermost hooks of the
# current thread (a _Packed in their place); ``save_output`` packs the output. Outside
# such blocks ``saved`` is a plain attribute again: no cost when no hooks are used.

class _HookState(threading.local):
    def __init__(self):
        self.stack = []  # (pack_hook, unpack_hook), innermost last
        self.disabled = None  # the message of disable_saved_tensors_hooks, or None


_hook_state = _HookState()
_hooks_on = [0]  # open saved_tensors_hooks blocks, in all threads
_hooks_lock = threading.Lock()


class _Packed:
    """Tensors a node saved, as the pack hook returned them, with the unpack hook."""

    __slots__ = ("items", "unpack_hook", "ids")

    def __init__(self, tensors, pack_hook, unpack_hook):
        items = []
        for t in tensors:
            if t is None:
                items.append(None)
                continue
            version = t._version
            state = _hook_state
            outer, state.stack = state.stack, []  # the hook's own ops save unhooked
            try:
                packed = pack_hook(t)
            finally:
                state.stack = outer
            if t._version != version:
                raise RuntimeError("A saved tensor pack hook is modifying its input in place. "
                                   "Tensors provided as input to pack hook cannot be modified "
                                   "by in-place operations as this can lead to unexpected "
                                   "side-effects. Please open an issue if you need to perform "
                                   "in-place operations on the input to a pack hook.")
            items.append((packed,))
        self.items = items
        self.unpack_hook = unpack_hook
        self.ids = tuple(id(t) for t in tensors)  # (which tensors, without keeping them)

    def unpack(self):
        from .tensor_base import Tensor  # noqa: PLC0415  (tensor_base imports this module)

        out = []
        for item in self.items:
            if item is None:
                out.append(None)
                continue
            t = self.unpack_hook(item[0])
            if not isinstance(t, Tensor):
                raise TypeError("Output of saved tensor unpack_hook expected to be a Tensor "
                                f"but got result of type {type(t).__name__}")
            out.append(t)
        return tuple(out)

    def __len__(self):
        return len(self.items)


def holds(node, tensor) -> bool:
    """Whether ``node`` saved ``tensor`` itself as one of its inputs (packed or not)."""
    saved = node.saved
    if saved is None:
        return False
    if type(saved) is _Packed:
        return id(tensor) in saved.ids
    return any(s is tensor for s in saved)


def saved_inputs(node):
    """The tensors ``node`` saved as its inputs (unpacked when packed by hooks), checked
    against later in-place changes; raises when they were freed by a backward."""
    saved = node.saved
    if saved is None:
        raise SavedTensorError(_FREED)
    if type(saved) is _Packed:
        return saved.unpack()
    for t, v in zip(saved, node.versions):
        if t is not None and t._version != v:
            _raise_modified(node, t, v)
    return saved


def _get_saved(node):
    return node.__dict__.get("saved")


def _set_saved(node, value):
    stack = _hook_state.stack
    if stack and value is not None and type(value) is not _Packed:
        pack, unpack = stack[-1]
        value = _Packed(value, pack, unpack)
    node.__dict__["saved"] = value


_SAVED = property(_get_saved, _set_saved, doc="What the node saved of its inputs.")


def _pack_output(tensor):
    stack = _hook_state.stack
    if not stack:
        return tensor._data
    pack, unpack = stack[-1]
    return _Packed((tensor,), pack, unpack)


class saved_tensors_hooks:
    """Context manager: every tensor an op saves for backward inside the block (its
    inputs, its output, ``ctx.save_for_backward``'s) goes through ``pack_hook(tensor)``,
    whose result the graph keeps instead; backward calls ``unpack_hook(packed)`` for
    the tensor back (PyTorch's ``torch.autograd.graph.saved_tensors_hooks``). The hooks
    of this thread's innermost block apply.

    Args:
        pack_hook: ``tensor -> anything``; it must not modify the tensor in place.
        unpack_hook: ``packed -> tensor`` with the content of the tensor given to
            ``pack_hook``.

    >>> import gradcore as gc
    >>> from gradcore.autograd.graph import saved_tensors_hooks
    >>> x = gc.ones(2, requires_grad=True)
    >>> seen = []
    >>> with saved_tensors_hooks(lambda t: seen.append(t.shape) or t, lambda p: p):
    ...     y = (x * x).sum()
    >>> y.backward()
    >>> len(seen), x.grad
    (2, tensor([2., 2.]))

    Tensors saved under hooks are not checked for in-place changes at backward (PyTorch
    does not check them either); what an op keeps that is not a tensor (indices, masks
    as arrays) does not go through the hooks.
    """

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _hook_state.disabled is not None:
            raise RuntimeError(_hook_state.disabled)
        _hook_state.stack.append((self.pack_hook, self.unpack_hook))
        with _hooks_lock:
            _hooks_on[0] += 1
            Node.saved = _SAVED

    def __exit__(self, *exc):
        _hook_state.stack.pop()
        with _hooks_lock:
            _hooks_on[0] -= 1
            if not _hooks_on[0]:
                Node.saved = None
        return False


class save_on_cpu(saved_tensors_hooks):
    """Context manager: tensors saved for backward inside the block are kept on the
    host and moved back to their device for backward (PyTorch's
    ``torch.autograd.graph.save_on_cpu``): GPU memory for host memory and two copies.
    CPU tensors stay where they are.

    Args:
        pin_memory: accepted (gradcore copies through ordinary host memory).
        device_type: accepted (``"cuda"``: gradcore's one accelerator).
    """

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack_to_cpu(tensor):
            return (tensor.device, tensor.cpu())

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message):
    """Context manager: inside it, opening a :class:`saved_tensors_hooks` block (or this
    one inside such a block) raises ``RuntimeError(error_message)``.

    Args:
        error_message: the message of the error.
    """
    if _hook_state.stack:
        raise RuntimeError(error_message)
    previous = _hook_state.disabled
    _hook_state.disabled = error_message
    try:
        yield
    finally:
        _hook_state.disabled = previous


def _raise_modified(node, tensor, saved_version, now=None):
    if tensor is not None:
        now = tensor._version
        what = f"a tensor of shape {list(tensor.shape)}"
    else:
        what = "its output"
    raise RuntimeError(
        f"one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: {what}, saved by {node.name()}, is at version {now}; expected "
        f"version {saved_version} instead. Hint: the op that saved it is {node.name()}; "
        "use .clone() before modifying it in place, or enable "
        "gradcore.autograd.detect_anomaly() to find the forward call.")


_sequence = itertools.count(1)
new_seq = _sequence.__next__  # a node's sequence number: later than its inputs' nodes


class AccumulateGrad(Node):
    """Sink of a leaf tensor that requires grad: adds what arrives into ``.grad``.

    ``lock`` makes the read-modify-write of ``.grad`` atomic, so that backward passes
    run at once from several threads into graphs sharing this leaf all land (one
    uncontended acquire per leaf per backward; NumPy drops the GIL inside ``+=``).
    """

    is_sink = True
    _post_hooks = None  # Tensor.register_post_accumulate_grad_hook's, run after each add

    def __init__(self, variable):
        self._variable = weakref.ref(variable)  # the leaf holds this node, not vice versa
        self.seq = -new_seq()  # leaves run last (below every op's node)
        self.lock = threading.Lock()

    @property
    def variable(self):
        """The leaf tensor (None once it is gone: then no gradient is wanted)."""
        return self._variable()

    def apply(self, F, grad):  # never called: the engine accumulates itself
        raise RuntimeError("AccumulateGrad is handled by the engine")


_nonleaf_lock = threading.Lock()  # .grad of non-leaves (retain_grad, inputs=): rare


def grad_lock(t):
    """The lock that guards ``t.grad``: its AccumulateGrad's for a leaf."""
    return t._accumulator().lock if t.grad_fn is None else _nonleaf_lock


def _leaf_accumulate(node, leaf, grad, F, create_graph, owned=False):
    """Add ``grad`` (array, or Tensor in tensor mode) into ``leaf.grad``, atomically.

    ``owned``: the engine made this array and nobody else can see it, so ``.grad`` may
    take it as is; otherwise it gets a copy (the array may be a read-only broadcast,
    a view, or shared with another leaf).
    """
    _wrap = _tm.wrap
    with node.lock:  # ``node`` is the leaf's AccumulateGrad
        old = leaf.grad
        if F is _tm:
            if old is None:
                leaf.grad = grad if create_graph else grad.detach()
            else:
                leaf.grad = old + grad if create_graph else (old.detach() + grad.detach())
        elif old is None:
            leaf.grad = _wrap(grad if owned else grad.copy())
        elif old.grad_fn is None:
            # Accumulate in place: the .grad tensor keeps its identity, as in PyTorch.
            od = old._data
            if od.shape == grad.shape and od.dtype == grad.dtype and F.owns(od):
                od += grad
                old._bump()
            else:
                leaf.grad = _wrap(od + grad)
        else:
            leaf.grad = _wrap(old._data + grad)
    hooks = node._post_hooks
    if hooks:
        for hook in list(hooks):
            result = hook(leaf)
            if result is not None:
                raise TypeError(f"expected Variable, but hook returned "
                                f"'{type(result).__name__}'")


def _collect(roots):
    """Dependency counts of every node reachable from ``roots`` (no recursion).

    Returns ``(deps, roots)``: how many edges lead into each reached node, and the set
    of roots (together: every node reached).
    """
    deps: dict[Node, int] = {}
    stack = [n for n in roots if n is not None]
    root_set = set(stack)
    push, pop, get = stack.append, stack.pop, deps.get
    while stack:
        for nxt, _ in pop().next_functions:
            if nxt is None:
                continue
            d = get(nxt)
            if d is None:
                deps[nxt] = 1
                if nxt not in root_set:
                    push(nxt)
            else:
                deps[nxt] = d + 1
    return deps, root_set


def _needed(roots, targets, seen):
    """Nodes from which some target node is reachable through an edge: the ones
    autograd.grad runs. A target itself only receives its gradient (captured): it runs
    only when another target lies below it, as in PyTorch, so that its saved tensors stay
    for a later backward."""
    parents: dict[Node, list[Node]] = {}
    for node in seen:
        for nxt, _ in node.next_functions:
            if nxt is not None:
                parents.setdefault(nxt, []).append(node)
    needed = set()
    stack = [t for t in targets if t in seen]
    while stack:
        node = stack.pop()
        for p in parents.get(node, ()):
            if p not in needed:
                needed.add(p)
                stack.append(p)
    return needed


def run_backward(roots, root_grads, *, retain_graph=False, create_graph=False,
                 capture=None, accumulate=True):
    """Backpropagate ``root_grads`` from ``roots`` (a list of (node, output_nr)).

    ``capture`` maps (node, output_nr) to a slot index: the gradient arriving there is
    returned in that slot instead of (or besides) being accumulated (autograd.grad).

    Order: every node has a sequence number from its creation, and an op's node is
    created after the nodes of its inputs, so running nodes from the highest number
    down is a reverse topological order.  Nodes with a pending gradient wait in a heap;
    the one with the highest number cannot receive anything more (everything that
    could feed it has a higher number and already ran).  No pass over the graph is
    needed first, and along a chain the gradient goes straight to the next node.
    Each gradient buffer is dropped as soon as it has been consumed.
    """
    tensor_math = _tm
    root_nodes = [n for n, _ in roots]
    captured = [None] * (len(capture) if capture else 0)
    needed = targets = None
    if capture is not None and not accumulate:
        deps, root_set = _collect(root_nodes)
        targets = {n for n, _ in capture}
        needed = _needed(root_nodes, targets, root_set.union(deps))

    buffers: dict[Node, object] = {}
    for (node, nr), g in zip(roots, root_grads):
        _add_to_buffer(buffers, node, nr, g)
    heap = [(-n.seq, n) for n in dict.fromkeys(root_nodes)]
    heapify(heap)
    # ids of buffered arrays that only the engine can see (fresh results of fresh_grads
    # nodes, sums and accumulations): those may be overwritten in place.  An id leaves
    # the set as soon as its array leaves the buffers, so ids are never stale.
    owned: set[int] = set()
    anomaly = _mode.anomaly and _mode.check_nan
    prev_mode, prev_releasing, prev_capturing = _mode.enabled, _mode.releasing, _mode.capturing
    _mode.capturing = not accumulate
    _mode.enabled = bool(create_graph)
    _mode.releasing = not retain_graph and not create_graph
    math_by_type = _backend._math_by_type
    pop_buffer = buffers.pop
    track_owned = not create_graph and not capture
    f_type = F = None
    try:
        while heap:
            node = heappop(heap)[1]
            grad = pop_buffer(node)
            is_owned = False
            if owned:
                gid = id(grad)
                if gid in owned:
                    owned.discard(gid)
                    is_owned = True
            # Follow the graph from `node`; along a chain the gradient is handed on
            # directly, without the buffer dict and the heap.
            while True:
                if needed is not None and node not in needed and node not in targets:
                    break
                if node._pre_hooks is not None:  # hooks or retain_grad
                    grad = _run_prehooks(node, grad)
                    is_owned = False
                if capture:
                    _capture(capture, captured, node, grad)
                    if needed is not None and node not in needed:
                        break  # a target with no other target below: it does not run
                sink, single, writes_into_grad, fresh_grads, passes = node._kind
                if sink:  # an AccumulateGrad: the gradient lands in a leaf
                    if accumulate:
                        Fs = tensor_math if create_graph else math_of(grad)
                        if create_graph and not isinstance(grad, tensor_math.Tensor):
                            grad = tensor_math.wrap(grad)
                        leaf = node.variable
                        if leaf is not None:
                            _leaf_accumulate(node, leaf, grad, Fs, create_graph, is_owned)
                    break
                if create_graph or not single:
                    grads = _apply(node, grad, create_graph, anomaly)
                    NF = None  # the node's array namespace: none for tensors
                else:  # the hot path: one output, arrays
                    if type(grad) is not f_type:  # the array namespace, found once a type
                        f_type = type(grad)
                        F = math_by_type.get(f_type) or math_of(grad)
                    NF = F
                    if is_owned and writes_into_grad:
                        grads = node.apply(F, grad, grad)  # out=: the engine's own array
                    else:
                        grads = node.apply(F, grad)
                    if anomaly:
                        _check_nan(node, grads, F)
                if not retain_graph:  # what the node saved goes as soon as it is used
                    node.saved = node.out = None
                shapes = node.shapes
                fresh = track_owned and fresh_grads and NF is not None
                # `passes`: the outputs that are `grad` itself, not fresh arrays
                edges = node.next_functions
                if len(edges) == 1:
                    nxt = edges[0][0]
                    g = grads[0]
                    if nxt is not None and g is not None and nxt.n_outputs == 1 and \
                            not (buffers and nxt in buffers) and \
                            (not heap or nxt.seq > -heap[0][0]):
                        # nxt would be next off the heap anyway: hand the gradient over
                        # (still owned when the node passed its owned gradient through)
                        g_owned = (is_owned if passes else fresh) and NF is not None and \
                            type(g) is NF.ndarray
                        if shapes is not None and g.shape != shapes[0]:
                            g = _sum_to(g, shapes[0], create_graph)
                            g_owned = track_owned and type(g) is NF.ndarray
                        if g_owned and owned and id(g) in owned:
                            g_owned = False
                        node, grad, is_owned = nxt, g, g_owned
                        continue
                # Prepare every edge's gradient before delivering any: a delivery may
                # add into an owned gradient in place, which another edge still reads.
                prepared = []
                keepers = 0
                for i, (nxt, nr) in enumerate(edges):
                    g = grads[i]
                    if nxt is None or g is None:
                        continue
                    g_owned = fresh and i not in passes and type(g) is NF.ndarray
                    if shapes is not None and g.shape != shapes[i]:
                        g = _sum_to(g, shapes[i], create_graph)
                        g_owned = track_owned and type(g) is (NF or math_of(g)).ndarray
                    elif i in passes:
                        keepers += 1  # this edge gets the node's own (owned) gradient
                    prepared.append((nxt, nr, g, g_owned, i in passes))
                for nxt, nr, g, g_owned, passed in prepared:
                    if passed and keepers == 1 and is_owned and g is grad:
                        g_owned = True  # the one edge that keeps the owned gradient
                    if g_owned and id(g) in owned:
                        g_owned = False  # the same array went to two edges
                    if nxt.n_outputs == 1:
                        old = buffers.get(nxt)
                        if old is None:
                            buffers[nxt] = g
                            heappush(heap, (-nxt.seq, nxt))
                            if g_owned:
                                owned.add(id(g))
                        else:
                            buffers[nxt] = _accumulate(old, g, owned, g_owned, track_owned)
                    else:
                        if nxt not in buffers:
                            heappush(heap, (-nxt.seq, nxt))
                        _add_to_buffer(buffers, nxt, nr, g)
                break
    finally:
        _mode.enabled, _mode.releasing = prev_mode, prev_releasing
        _mode.capturing = prev_capturing
    return captured


def _accumulate(old, g, owned, g_owned, track_owned):
    """``old + g`` for a gradient buffer, in place into an array the engine owns."""
    if not track_owned:
        return old + g  # tensors (create_graph): build the graph of the sum
    oid = id(old)
    same = old.shape == g.shape and old.dtype == g.dtype
    if same and oid in owned:
        old += g
        return old
    if same and g_owned:
        g += old
        owned.discard(oid)
        owned.add(id(g))
        return g
    new = old + g
    owned.discard(oid)
    if type(new) is math_of(new).ndarray:  # 0-d NumPy results are scalars
        owned.add(id(new))
    return new


# The differentiable namespace: the module gradcore.ops.tensor_math, which offers an
# ArrayMath's names as tensor ops, its Tensor class and wrap(); a formula's F is this
# namespace exactly when it builds a differentiable graph (differentiable(F)).
# The ops set it when they are imported (gradcore's import does); the engine reads it
# once per backward call, and for the tensor-level work of hooks and leaves.
_tm = None


def differentiable(F) -> bool:
    """Whether ``F`` is the differentiable namespace (``create_graph=True``): tensors in
    and out, rather than arrays."""
    return F is _tm


def set_differentiable_namespace(namespace) -> None:
    """Give the engine the math of ``create_graph=True`` (``gradcore.ops.tensor_math``);
    called once, by ``gradcore.ops``."""
    global _tm
    _tm = namespace


def _apply(node, grad, create_graph, anomaly):
    tensor_math = _tm
    if create_graph:
        F = tensor_math
        if node.n_outputs == 1:
            if not isinstance(grad, tensor_math.Tensor):
                grad = tensor_math.wrap(grad)
        else:
            grad = [g if g is None or isinstance(g, tensor_math.Tensor) else tensor_math.wrap(g)
                    for g in grad]
    else:
        if node.n_outputs == 1:
            if isinstance(grad, tensor_math.Tensor):
                grad = grad._data
            F = math_of(grad)
        else:
            grad = [g._data if isinstance(g, tensor_math.Tensor) else g for g in grad]
            F = math_of(next(g for g in grad if g is not None))
    grads = node.apply(F, grad)
    if anomaly:
        _check_nan(node, grads, F)
    return grads


def _check_nan(node, grads, F):
    for i, g in enumerate(grads):
        if g is None:
            continue
        arr = g._data if F is _tm else g
        m = math_of(arr)
        if m.xp.isnan(arr).any():
            where = getattr(node, "_trace", None)
            extra = f"\nThe forward call that created it:\n{where}" if where else ""
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its "
                               f"{i}th output.{extra}")


def _sum_to(g, shape, create_graph):
    if create_graph:
        return _tm.sum_to(g, shape)
    return math_of(g).sum_to(g, shape)


def _add_to_buffer(buffers, node, nr, g):
    if node.n_outputs == 1:
        old = buffers.get(node)
        # never add in place: the old buffer may be aliased by another edge
        buffers[node] = g if old is None else old + g
    else:
        slot = buffers.get(node)
        if slot is None:
            slot = buffers[node] = [None] * node.n_outputs
        slot[nr] = g if slot[nr] is None else slot[nr] + g


def _run_prehooks(node, grad):
    tensor_math = _tm

    single = node.n_outputs == 1
    grads = [grad] if single else list(grad)
    hooks = node._pre_hooks or {}
    for nr, fns in hooks.items():
        g = grads[nr]
        if g is None:
            continue
        for fn in fns:
            gt = g if isinstance(g, tensor_math.Tensor) else tensor_math.wrap(g)
            res = fn(gt)
            if res is not None:
                _check_hook_result(fn, gt, res, tensor_math.Tensor)
                g = res if isinstance(g, tensor_math.Tensor) else res._data
        grads[nr] = g
    if node._retains:
        for nr, ref in node._retains.items():
            t = ref()
            g = grads[nr]
            if t is None or g is None:
                continue
            gt = g if isinstance(g, tensor_math.Tensor) else tensor_math.wrap(g)
            gt = gt.detach() if not _mode.enabled else gt
            with _nonleaf_lock:
                if t.grad is None:
                    t.grad = tensor_math.wrap(gt._data.copy()) if not _mode.enabled else gt
                else:
                    t.grad = t.grad + gt
    return grads[0] if single else grads


_LEGACY_TYPE = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
                "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                "bool": "Bool"}


def _type_name(t):
    """PyTorch's legacy type string of a tensor (``torch.cuda.FloatTensor``), gradcore's."""
    where = "cuda." if t.device.type == "cuda" else ""
    return f"gradcore.{where}{_LEGACY_TYPE.get(t.dtype.name, t.dtype.name)}Tensor"


def _check_hook_result(fn, original, result, tensor_cls):
    """A tensor hook may replace the gradient only by a tensor of the same dtype, device
    type and shape: PyTorch's errors (``check_variable_result``) otherwise."""
    if not isinstance(result, tensor_cls):
        raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}'")
    if result.dtype != original.dtype or result.device.type != original.device.type:
        raise RuntimeError(f"hook '{_hook_name(fn)}' has changed the type of value (was "
                           f"{_type_name(original)} got {_type_name(result)})")
    if result.shape != original.shape:
        raise RuntimeError(f"hook '{_hook_name(fn)}' has changed the size of value (was "
                           f"{list(original.shape)} got {list(result.shape)})")


def _hook_name(fn):
    name = getattr(fn, "__name__", None)
    return name if isinstance(name, str) else "<unknown>"


def _capture(capture, captured, node, grad):
    n = node.n_outputs
    for nr in range(n):
        slot = capture.get((node, nr))
        if slot is None:
            continue
        g = grad if n == 1 else grad[nr]
        if g is None:
            continue
        captured[slot] = g if captured[slot] is None else captured[slot] + g
