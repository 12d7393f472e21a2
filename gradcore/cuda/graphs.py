"""CUDA graphs captured by hand: PyTorch's ``torch.cuda.graphs``.

``with gc.cuda.graph(g):`` captures the work its block issues into the
:class:`CUDAGraph` ``g`` (CuPy's stream capture, on a side stream), and ``g.replay()``
runs that work again, over the same memory: whatever the static input tensors hold then
(``static_in.copy_(x)``), it writes into the tensors the block made (the static outputs,
which live in the graph's private memory pool and stay valid). It is built on the same
primitives as ``gc.compile``'s CUDA graphs (:mod:`gradcore.capture.cuda`): the private
pool, gradcore's own cuBLAS binding (CuPy's refuses capture), the dropout masks drawn
from a Philox state on the device (each replay draws fresh numbers and moves the
offset, as eager draws do), and the optimizers' scalars in device memory.

Differences from PyTorch, all on the side of refusing rather than freezing:

* SGD, Adam and AdamW may step inside a graph (``capturable=True`` or not: their
  updates read their scalars from device memory, which each replay sets from the host
  first, so the step counts and a learning rate a scheduler changed are eager's). The
  step of any other optimizer, or of a scheduler, raises: a replay would not repeat its
  Python.
* What CuPy refuses during a capture (a read of values by the host: ``.item()``,
  printing, ``if`` on a tensor, a boolean mask, ``.cpu()``; a copy from the host: a
  tensor made from Python data, random numbers other than dropout's, which are drawn
  on the host; a synchronization) raises a ``RuntimeError`` saying what and where; the
  capture is ended and the stream put back, so that gradcore is usable after it.
* The capture runs in CUDA's relaxed mode whatever ``capture_error_mode`` says (the
  graph's pool takes memory from the driver while it captures, which the global and
  thread-local modes refuse); the mode is checked as PyTorch checks it.
"""

from __future__ import annotations

import warnings

from .. import _live
from .. import backend as _backend
from .. import random as _random
from ..autograd import Function, functional, grad_mode
from ..autograd.tensor_base import Tensor
from ..capture import cuda as _capture

__all__ = ["CUDAGraph", "graph", "graph_pool_handle", "make_graphed_callables"]

_MODES = ("global", "thread_local", "relaxed")


class _PoolHandle:
    """An opaque token naming a graph memory pool (:func:`graph_pool_handle`,
    :meth:`CUDAGraph.pool`): graphs captured with the same token take their memory from
    the same pool, and must then be replayed in the order they were captured."""

    __slots__ = ("_pool",)

    def __init__(self, pool):
        self._pool = pool

    def __eq__(self, other):
        return isinstance(other, _PoolHandle) and other._pool is self._pool

    def __hash__(self):
        return id(self._pool)

    def __repr__(self):
        return f"<gradcore.cuda graph pool {id(self._pool):#x}>"


def graph_pool_handle() -> _PoolHandle:
    """A token naming a new graph memory pool, to pass as ``pool=`` to
    :class:`graph` or :meth:`CUDAGraph.capture_begin` of graphs that may share it."""
    return _PoolHandle(_backend.cuda_module().cuda.MemoryPool())


def _refuse_step(obj):
    raise RuntimeError(
        f"Attempting CUDA graph capture of step() for an instance of {type(obj).__name__}, "
        "whose Python (its step count, the scalars it forms on the host) a replay would "
        "not repeat: on CUDA, SGD, Adam and AdamW read their scalars from device memory "
        "and may be captured; step other optimizers and schedulers outside the graph")


class CUDAGraph:
    """A CUDA graph (CuPy's ``cupy.cuda.graph.Graph``): the work captured between
    :meth:`capture_begin` and :meth:`capture_end` (or in a ``with gc.cuda.graph(g):``
    block), run again by :meth:`replay`. ``keep_graph`` is accepted for PyTorch's
    programs (CuPy instantiates the graph when the capture ends). Raises
    ``CudaUnavailableError`` without a GPU."""

    def __init__(self, keep_graph: bool = False):
        self._xp = _backend.cuda_module()
        self._graph = None
        self._pool = None
        self._session = None
        self._watched = []
        self._host_work = ()
        self._checks = ()
        self._debug = False

    def capture_begin(self, pool=None, capture_error_mode: str = "global") -> None:
        """Begin capturing the work issued to the current stream (not the default
        stream). ``pool``: a token of :func:`graph_pool_handle` or another graph's
        :meth:`pool`, whose memory this graph may share; a new private pool by default.
        ``capture_error_mode``: ``"global"``, ``"thread_local"`` or ``"relaxed"``
        (checked; the capture runs relaxed, see the module's note). Prefer
        :class:`graph`, which calls this."""
        if capture_error_mode not in _MODES:
            raise RuntimeError("Unknown capture error mode. Expected `global`, "
                               f"`thread_local`, or `relaxed`, got {capture_error_mode}")
        if self._graph is not None or self._session is not None:
            raise RuntimeError("This CUDAGraph instance already owns a captured graph. To "
                               "capture a new graph, create a new instance.")
        if pool is not None and not isinstance(pool, _PoolHandle):
            raise TypeError("pool must be a token of gc.cuda.graph_pool_handle() or "
                            f"CUDAGraph.pool(), got {type(pool).__name__}")
        xp = self._xp
        stream = xp.cuda.get_current_stream()
        if stream.ptr in (0, 1, 2):  # (the legacy and the per-thread default streams)
            raise RuntimeError("CUDA graphs must be captured on a non-default stream. "
                               "(However, after capture, it's ok to replay them on the "
                               "default stream.)")
        # dropout's Philox state on this device, made now if it is not yet (making it
        # copies from the host, which the capture would refuse)
        index = xp.cuda.runtime.getDevice()
        _random.device_state(None, _backend.device(f"cuda:{index}"))
        self._pool = pool if pool is not None else graph_pool_handle()
        from ..optim.lr_scheduler import LRScheduler  # noqa: PLC0415
        from ..optim.optimizer import Optimizer  # noqa: PLC0415

        self._watched = _capture.watch_steps(_live.live((Optimizer, LRScheduler)),
                                             _refuse_step)
        try:
            self._session = _capture.begin(xp, stream, self._pool._pool)
        except BaseException:
            _capture.unwatch_steps(self._watched)
            self._watched = []
            raise

    def capture_end(self) -> None:
        """End the capture :meth:`capture_begin` began (on the same stream); the graph
        is then ready to :meth:`replay`."""
        session = self._session
        if session is None:
            raise RuntimeError("Called CUDAGraph::capture_end without a preceding "
                               "capture_begin")
        if self._xp.cuda.get_current_stream() != session.stream:
            raise RuntimeError("Capture must end on the same stream it began on.")
        self._session = None
        _capture.unwatch_steps(self._watched)
        self._watched = []
        try:
            graph = _capture.end(session)
        except Exception as exc:
            why = _capture.refusal(exc)
            if why is None:
                raise
            raise RuntimeError(why) from exc
        self._graph, self._host_work, self._checks = graph, session.host_work, session.checks

    def _abort(self) -> None:
        """End a capture whose code raised, keeping nothing of it."""
        session, self._session = self._session, None
        _capture.unwatch_steps(self._watched)
        self._watched = []
        if session is not None:
            _capture.end(session, failed=True)

    def replay(self) -> None:
        """Run the captured work again on the current stream: first the host work the
        optimizers left (their scalars, copied to the device), then the graph."""
        if self._graph is None:
            raise RuntimeError("Called CUDAGraph::replay without a preceding successful "
                               "capture.")
        for work in self._host_work:
            work()
        self._graph.launch(self._xp.cuda.get_current_stream())
        _capture.pend(self._checks)

    def reset(self) -> None:
        """Drop the captured graph (and this graph's hold on its pool); the instance
        may capture again."""
        if self._session is not None:
            self._abort()
        self._graph, self._pool, self._host_work, self._checks = None, None, (), ()

    def pool(self) -> _PoolHandle:
        """The token of this graph's memory pool, to pass to another graph's capture
        (which may then share its memory)."""
        if self._pool is None or (self._graph is None and self._session is None):
            raise RuntimeError("Called CUDAGraph::pool() without a preceding successful "
                               "capture.")
        return self._pool

    def enable_debug_mode(self) -> None:
        """Let :meth:`debug_dump` write the graph."""
        self._debug = True

    def debug_dump(self, debug_path: str) -> None:
        """Write the graph, as a Graphviz DOT file, to ``debug_path`` (after
        :meth:`enable_debug_mode`), where CuPy's graph offers it (``debug_dot_graph``);
        raises ``RuntimeError`` where it does not."""
        if not self._debug:
            warnings.warn("CUDA Graphs debug not enabled, set with "
                          "[graph].enable_debug_mode()", stacklevel=2)
            return
        if self._graph is None:
            raise RuntimeError("Called CUDAGraph::debug_dump without a preceding "
                               "successful capture.")
        dump = getattr(self._graph, "debug_dot_graph", None)
        if dump is None:
            raise RuntimeError("CUDAGraph.debug_dump: this CuPy's graph cannot write "
                               "itself out (cupy.cuda.graph.Graph has no debug_dot_graph)")
        dump(str(debug_path))


class graph:  # noqa: N801 - PyTorch's name
    """``with gc.cuda.graph(g):``: capture the block's work into the
    :class:`CUDAGraph` ``g``. On entry the device is synchronized and the default
    pool's unused memory freed, as PyTorch does; the block runs on ``stream`` (a side
    stream shared by every ``graph`` by default), and what it makes lives in ``g``'s
    pool (``pool``: a token another graph's memory may be shared through). An error
    raised in the block ends the capture (nothing is kept) and the stream is put back;
    what CuPy refused is said as a ``RuntimeError``."""

    default_capture_stream = None

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        from . import Stream  # noqa: PLC0415

        _backend.cuda_module()  # (the error saying why, without a GPU)
        if stream is None and self.__class__.default_capture_stream is None:
            self.__class__.default_capture_stream = Stream()
        self.pool = () if pool is None else (pool,)
        self.capture_stream = stream if stream is not None else \
            self.__class__.default_capture_stream
        from . import stream as _stream_context  # noqa: PLC0415

        self.stream_ctx = _stream_context(self.capture_stream)
        self.cuda_graph = cuda_graph
        self.capture_error_mode = capture_error_mode

    def __enter__(self) -> None:
        from . import empty_cache, synchronize  # noqa: PLC0415

        synchronize()
        empty_cache()
        self.stream_ctx.__enter__()
        try:
            self.cuda_graph.capture_begin(*self.pool,
                                          capture_error_mode=self.capture_error_mode)
        except BaseException:
            self.stream_ctx.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type, exc, tb):
        if exc is None:
            try:
                self.cuda_graph.capture_end()
            finally:
                self.stream_ctx.__exit__(None, None, None)
            return False
        try:
            self.cuda_graph._abort()
        finally:
            self.stream_ctx.__exit__(exc_type, exc, tb)
        why = _capture.refusal(exc) if isinstance(exc, Exception) else None
        if why is not None:
            raise RuntimeError(why) from exc
        return False


# ------------------------------------------------------------------ make_graphed_callables

def _leaves(x, out):
    """The tensors of ``x`` (nested tuples, lists and dicts) in order, and its spec."""
    if isinstance(x, Tensor):
        out.append(x)
        return None
    if type(x) in (tuple, list):
        return (type(x), [_leaves(v, out) for v in x])
    if type(x) is dict:
        return (dict, {k: _leaves(v, out) for k, v in x.items()})
    raise TypeError(f"graphed callables return tensors (in tuples, lists, dicts), got "
                    f"{type(x).__name__}")


def _unflatten(spec, it):
    if spec is None:
        return next(it)
    kind, parts = spec
    if kind is dict:
        return {k: _unflatten(v, it) for k, v in parts.items()}
    return kind(_unflatten(v, it) for v in parts)


def _arg_leaves(args):
    flat = []
    for a in args:
        if type(a) in (tuple, list, dict):
            _leaves(a, flat)
        else:
            flat.append(a)
    return flat


def make_graphed_callables(callables, sample_args, num_warmup_iters: int = 3,
                           allow_unused_input: bool = False, pool=None):
    """Graphed versions of ``callables`` (a module or function, or a tuple of them):
    each one's forward runs as a CUDA graph inside one autograd node, whose backward
    runs the callable's backward as another graph, so that it replaces the callable in
    a training loop (a module keeps its parameters; its forward is replaced, and runs
    eagerly when its ``training`` flag differs from the one captured).

    ``sample_args``: a tuple of tensors (a tuple of such tuples for several callables),
    shaped, typed and ``requires_grad`` as the real arguments will be; the graphed
    callable must be called with arguments in the same order and format. Each callable
    is run ``num_warmup_iters`` times on a side stream first, then captured; several
    callables share one memory pool (``pool``, or a new one) and must run in the order
    given. ``allow_unused_input``: whether an input the outputs do not depend on is
    allowed (its gradient is then None). No double backward through the result."""
    from ..nn.modules import Module  # noqa: PLC0415
    from . import Stream, synchronize  # noqa: PLC0415
    from . import stream as _stream_context  # noqa: PLC0415

    just_one = not isinstance(callables, tuple)
    if just_one:
        callables, sample_args = (callables,), (sample_args,)
    flat_samples = []
    for c, args in zip(callables, sample_args):
        if isinstance(c, Module):
            if c._backward_hooks or c._forward_hooks or c._forward_pre_hooks:
                raise AssertionError(
                    "Modules must not have hooks registered at the time they are passed. "
                    "However, registering hooks on modules after passing them through "
                    "make_graphed_callables is allowed.")
            if not all(b.requires_grad is False for b in c.buffers()):
                raise AssertionError(
                    "In any :class:`~torch.nn.Module` passed to :func:`~make_graphed_"
                    "callables`, only parameters may be trainable. All buffers must have "
                    "``requires_grad=False``.")
        flat = _arg_leaves(args)
        if not all(isinstance(a, Tensor) for a in flat):
            raise AssertionError("In the beta API, sample_args for each callable must "
                                 "contain only Tensors. Other types are not allowed.")
        flat_samples.append(tuple(flat))
    n_user = [len(a) for a in flat_samples]
    params = [tuple(c.parameters()) if isinstance(c, Module) else () for c in callables]
    surfaces = [flat_samples[i] + params[i] for i in range(len(callables))]
    fwd_graphs = [CUDAGraph() for _ in callables]
    bwd_graphs = [CUDAGraph() for _ in callables]
    mempool = graph_pool_handle() if pool is None else pool

    synchronize()
    with _stream_context(Stream()):
        for func, args, surface in zip(callables, sample_args, surfaces):
            for _ in range(num_warmup_iters):
                outputs = []
                _leaves(func(*args), outputs)
                needing = tuple(o for o in outputs if o.requires_grad)
                if needing:
                    functional.grad(needing, tuple(i for i in surface if i.requires_grad),
                                    grad_outputs=tuple(o.new_empty(o.shape) for o in needing),
                                    only_inputs=True, allow_unused=allow_unused_input)
    synchronize()

    static_outputs, specs = [], []
    for func, args, fwd in zip(callables, sample_args, fwd_graphs):
        with graph(fwd, pool=mempool):
            out = func(*args)
        flat = []
        specs.append(_leaves(out, flat))
        static_outputs.append(tuple(flat))

    static_grad_outputs, static_grad_inputs = [], []
    for surface, outs, bwd in zip(reversed(surfaces), reversed(static_outputs),
                                  reversed(bwd_graphs)):
        grad_outs = tuple(o.new_empty(o.shape) if o.requires_grad else None for o in outs)
        needing = tuple(o for o in outs if o.requires_grad)
        grads = None
        if needing:
            with graph(bwd, pool=mempool):
                grads = functional.grad(needing, tuple(i for i in surface if i.requires_grad),
                                        grad_outputs=tuple(g for g in grad_outs
                                                           if g is not None),
                                        only_inputs=True, allow_unused=allow_unused_input)
        grad_ins, k = [], 0
        for a in surface:
            if a.requires_grad and grads is not None:
                grad_ins.append(grads[k])
                k += 1
            else:
                grad_ins.append(None)
        static_grad_outputs.append(grad_outs)
        static_grad_inputs.append(tuple(grad_ins))
    static_grad_outputs.reverse()
    static_grad_inputs.reverse()

    ret = []
    for i, func in enumerate(callables):
        graphed = _graphed_function(fwd_graphs[i], bwd_graphs[i], params[i], n_user[i],
                                    specs[i], surfaces[i], static_outputs[i],
                                    static_grad_outputs[i], static_grad_inputs[i])
        if isinstance(func, Module):
            func.forward = _graphed_forward(func, func.training, graphed, func.forward)
            ret.append(func)
        else:
            ret.append(graphed)
    return ret[0] if just_one else tuple(ret)


def _graphed_function(fwd_graph, bwd_graph, module_params, n_user, spec, surface,
                      static_outputs, static_grad_outputs, static_grad_inputs):
    class Graphed(Function):
        @staticmethod
        def forward(ctx, *inputs):
            for i in range(n_user):
                if surface[i].data_ptr() != inputs[i].data_ptr():
                    surface[i].copy_(inputs[i])
            fwd_graph.replay()
            return tuple(o.detach() for o in static_outputs)

        @staticmethod
        def backward(ctx, *grads):
            if grad_mode.state.enabled:
                raise RuntimeError("the backward of a graphed callable "
                                   "(gc.cuda.make_graphed_callables) replays a CUDA graph "
                                   "and cannot be differentiated again")
            if len(grads) != len(static_grad_outputs):
                raise AssertionError(f"len(grads)={len(grads)} != "
                                     f"len(static_grad_outputs)={len(static_grad_outputs)}")
            for g, grad in zip(static_grad_outputs, grads):
                if g is not None and grad is not None and g.data_ptr() != grad.data_ptr():
                    g.copy_(grad)
                elif g is not None and grad is None:
                    g.zero_()
            bwd_graph.replay()
            return tuple(b.detach() if b is not None else b for b in static_grad_inputs)

    def functionalized(*user_args):
        flat = _arg_leaves(user_args)
        out = Graphed.apply(*(tuple(flat) + module_params))
        return _unflatten(spec, iter(out))

    return functionalized


def _graphed_forward(module, training, graphed, orig_forward):
    def new_forward(*args, **kwargs):
        if module.training == training:
            return graphed(*args, **kwargs)
        return orig_forward(*args, **kwargs)
    return new_forward
