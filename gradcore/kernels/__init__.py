"""gradcore's kernels, each declared once, and the registry the array namespaces read.

An op's backward calls ``F.tanh_backward(g, y)``; ``F`` is an array namespace
(:class:`gradcore.backend.ArrayMath`), which has no such attribute of its own. The first
time a namespace is asked for a kernel's name, it asks :func:`implementation` here and
keeps the answer:

* on a CUDA device with gradcore's kernels (``math.device_kernels``), one launch of the
  generated or hand-written CUDA kernel (:mod:`.device`);
* on the CPU, the kernel's NumPy twin: generated from the expression (:mod:`.twin`), or
  a faster twin with the same meaning written beside it (``cpu=`` in :mod:`.pointwise`);
  float16 computed in float32 where the declaration says so (``upcast``), as PyTorch
  computes half ops;
* on a CUDA device without them (``GRADCORE_CUDA_KERNELS=0``, or after the compiler
  failed: :func:`.device.fall_back` flips ``math.use_device_kernels(False)``), the same
  expressions over CuPy's ufuncs.

Where each name is declared:

* beside the op each serves, in its stanza of ``gradcore/ops/<family>.py``: a pointwise
  kernel (``tanh_backward``, ``gelu_forward``, ...; each takes ``out=``) is declared
  there with :func:`declare`, next to the node that calls it and the forward, and joins
  :data:`.pointwise.KERNELS` and the names answered here when the op's module is
  imported (``import gradcore`` imports every op);
* :mod:`.pointwise`: the pointwise kernels that serve no single op (none now), the
  hand-written CPU twins the ops' declarations name (``cpu=``), the in-place forms
  (``tanh_backward_``), and forwards that keep a value for their backward where that
  pays (``gelu_forward_keep``: ``KEEPING``);
* :mod:`.rows`: the row formulas the ops call (``softmax_backward(g, y, axis)``,
  ``layer_norm_backward``, ``cross_entropy_backward``, ...: ``FORMULAS``), each written
  once over a namespace and served here over the array namespace, or as one launch of
  its row kernel where that applies; the row kernels themselves (softmax, cross-entropy,
  layer_norm, attention's safe softmax, ``mul_sum_rows``) and ``mul_sum_to``'s
  one-pass form on a device;
* :mod:`.updates`: the optimizers' updates (``sgd_update``, ``adam_update``) and their
  single-kernel steps (``sgd_step``, ``adam_step``, ...);
* :mod:`.conv`: the convolution's window kernels (``im2col``, ``col2im``: a launch each
  on a device with kernels, the strided NumPy twin on the CPU), the columns' order the
  namespace prefers (``windows_batch_inner``) and the formulas (``conv_forward``,
  ``conv_transpose_forward``, ``conv_backward``: float16 computed in float32 on the
  CPU).
* :mod:`.philox`: counter-based random numbers on a device (``dropout_mask``,
  ``philox_advance``); :mod:`.gemm`: ``matmul`` on a CUDA device, cuBLAS called
  directly, and ``linear``/``linear_weight_grads`` (nn.Linear's products), whose bias
  goes through cuBLASLt's epilogues there (``matmul_bias``, ``matmul_bgrad``).

The other modules are machinery: :mod:`.spec` (the declaration forms), :mod:`.source`
(CUDA C generation and the calling convention), :mod:`.host` (the host build the tests
run kernels through) and :mod:`.device` (launches). See docs/kernels.md.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import backend
from . import conv, device, gemm, philox, pointwise, rows, twin, updates
from .spec import Kernel

__all__ = ["NAMES", "Kernel", "declare", "implementation", "declarations"]


def _pointwise(math, name):
    # every pointwise kernel takes out= (an array to write the result into where it can)
    k = pointwise.KERNELS[name]
    if math.device_kernels:
        return device.pointwise(math, k)
    if math.xp is np:
        fn = pointwise.cpu_twin(name)
    else:
        fn = twin.expression(k, pointwise.namespace_names(math))
    if k.upcast is None:
        return fn
    return _upcasting(math, fn, tuple(range(len(k.params))), k.params.index(k.upcast))


_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)


def _upcasting(math, fn, positions, like, rounded=None):
    """``fn`` computing float16 arrays in float32 (the type PyTorch computes half ops
    in): the arguments at ``positions`` cast up, the results (the first ``rounded``)
    rounded back to the dtype of argument ``like``; results that NumPy makes scalars
    (0-d) come back as arrays. ``out=`` is passed on where nothing is upcast."""
    ndarray = math.ndarray

    def run(*args, **out):
        for i in positions:
            # (an operand may be a Python number: div's backward of 2 / b)
            if getattr(args[i], "dtype", None) == _F16:
                break
        else:  # nothing to upcast (the usual case)
            out = fn(*args, **out)
            return out if type(out) is ndarray else _as_arrays(math, out)
        dt = args[like].dtype
        args = list(args)
        for i in positions:
            if getattr(args[i], "dtype", None) == _F16:
                args[i] = args[i].astype(_F32)
        out = fn(*args)
        if type(out) is tuple:
            n = len(out) if rounded is None else rounded
            return tuple(_array(math, o, dt if j < n else None) for j, o in enumerate(out))
        return _array(math, out, dt)

    run.__name__ = getattr(fn, "__name__", "kernel")
    run.__wrapped__ = fn
    return run


def _as_arrays(math, result):
    """``result`` (an array, a tuple of arrays or Nones, or a NumPy scalar from a 0-d
    computation) with every value an array of ``math``."""
    ndarray = math.ndarray
    if type(result) is ndarray:
        return result
    if type(result) is tuple:
        return tuple(o if o is None or type(o) is ndarray else math.asarray(o)
                     for o in result)
    return math.asarray(result)


def _array(math, a, dtype):
    if a is None:
        return a
    if type(a) is not math.ndarray:
        a = math.asarray(a)
    return a if dtype is None else a.astype(dtype, copy=False)


def _formula(math, name):
    """A formula of :mod:`.rows` over ``math``: one row-kernel launch where its
    declaration says one applies (a device with kernels), else the formula itself over
    the namespace (float16 in float32). (Decided at each call: ``gradcore.profile``
    turns ``device_kernels`` on over the CPU, whose row kernels are their twins.)"""
    f = rows.FORMULAS[name]
    plain = _upcasting(math, functools.partial(f.fn, math), f.upcast,
                       f.upcast[0] if f.upcast else None, f.rounded)
    fn, upcast = functools.partial(f.fn, math), f.upcast
    kernel, launch = f.kernel, f.launch
    ndarray = math.ndarray

    def run(*args, out=None):
        if launch is not None and math.device_kernels:
            kernels = (getattr(math, kernel) if isinstance(kernel, str) else
                       tuple(getattr(math, k) for k in kernel))
            result = launch(kernels, *args)
            if result is not None:
                return result
        for i in upcast:
            a = args[i]
            if a is not None and a.dtype == _F16:
                return plain(*args)
        if out is not None and out.dtype != _F16 and \
                all(args[i] is None or args[i].dtype == out.dtype for i in upcast):
            return fn(*args, out=out)  # (nothing to upcast: into `out`)
        result = fn(*args)  # (nothing to upcast: the usual case, without plain's call)
        return result if type(result) is ndarray else _as_arrays(math, result)

    run.__name__ = name
    return run


def _keeping(math, name):
    keeping, plain = pointwise.KEEPING[name]
    k = pointwise.KERNELS[keeping]
    # the value kept stays in float32 for float16 (the backward computes in float32)
    fn = pointwise.cpu_twin(keeping) if math.xp is np else \
        twin.expression(k, pointwise.namespace_names(math))
    keep = _upcasting(math, fn, tuple(range(len(k.params))), k.params.index(k.upcast),
                      rounded=1)

    def run(*args):  # (decided at each call, as _formula)
        if math.device_kernels:
            return getattr(math, plain)(*args), None
        return keep(*args)

    run.__name__ = name
    return run


def _inplace(math, name):
    if math.xp is np:
        return pointwise.INPLACE_CPU[name]
    kernel = getattr(math, name[:-1])
    return lambda g, *args: kernel(g, *args, out=g)  # one launch, into g where it fits


def _row(math, name):
    if math.device_kernels:
        return device.rows(math, name)
    return functools.partial(rows.TWINS[name], math.xp)


def _mul_sum_to(math, name):
    generic = math.mul_sum_to_any
    if math.device_kernels:
        return device.rows(math, name, generic)
    return generic


def _update_step(math, name):
    k = updates.UPDATE_KERNELS[name]
    if math.device_kernels:
        return device.update(math, k)
    # the declaration as in-place array code, by slices on the CPU (a slice is a launch
    # more on a device)
    return updates.inplace_step(k, updates.array_names(math), sliced=math.xp is np)


def _update_dev(math, name):
    """An update reading its scalars from a device array (``<step>_dev``): one launch on
    a device with kernels; else the step's expressions over the array module, the
    scalars as 0-d views of that array (nothing read back to the host)."""
    k = updates.DEVICE_SCALAR_UPDATES[name]
    if math.device_kernels:
        return device.update(math, k)
    # the step by value (the same body), its scalars 0-d views of the row: nothing is
    # read back to the host
    plain = updates.UPDATE_KERNELS[name[:-len("_dev")]].compile(updates.array_names(math),
                                                                skip=True)
    count = len(k.scalars)

    def run(*args):
        *arrays, row = args
        plain(*arrays, *(row[j] for j in range(count)), row[updates.SKIP_COLUMN])

    run.__name__ = name
    return run


def _update_multi(math, name):
    """An update over many tensors (``<step>_multi``), called as ``fn(table, rows,
    arrays)``: ``arrays`` a tuple of the step's arrays per tensor, ``rows`` a row of
    scalars per tensor (device memory, as ``<step>_dev`` reads), ``table`` an int64
    device array holding where each tensor begins in their concatenation (one more
    than the tensors: the total last) then their arrays' addresses (a row per tensor).
    One launch on a device with kernels; else the ``<step>_dev`` step per tensor."""
    k = updates.MULTI_TENSOR_UPDATES[name]
    if math.device_kernels:
        return device.multi_update(math, k)
    single = getattr(math, name[:-len("_multi")] + "_dev")

    def run(table, rows, arrays):
        for r, a in enumerate(arrays):
            single(*a, rows[r])

    run.__name__ = name
    return run


def _update(math, name):
    if math.device_kernels:
        return device.optimizer_update(math, name)
    return functools.partial(updates.ENTRIES[name], math)  # math.<step> (above)


def _window(math, name):
    """im2col / col2im: a launch on a device with kernels, else the strided twin over the
    namespace's arrays."""
    fn = functools.partial(conv.TWINS[name], math.xp)
    if math.device_kernels:
        return device.conv(math, name, fn)
    return fn


def _windows_order(math, name):
    """Whether the columns take the batch innermost: the CPU's choice for small images
    (:func:`.conv.batch_inner_cpu`); a CUDA device's kernels read and write rows."""
    if math.xp is np:
        return conv.batch_inner_cpu
    return lambda a, windows: False


def _conv_formula(math, name):
    """A convolution formula over ``math``; on the CPU, float16 computed in float32 and
    rounded once (NumPy's float16 products are not BLAS's: slow and rounded at every
    step). A GPU's cuBLAS sums float16 products in float32 itself."""
    fn, upcast = conv.FORMULAS[name]
    fn = functools.partial(fn, math)
    if math.xp is not np:
        return fn
    return _upcasting(math, fn, upcast, upcast[0])
def _max_pool_backward(math, name):
    """max pooling's gradient: one launch on a device with kernels, else the formula
    (an index add) over the namespace, float16 summed in float32 as the kernel does."""
    formula = _upcasting(math, functools.partial(conv.max_pool_backward, math), (0,), 0)
    if math.device_kernels:
        return device.conv(math, name, formula)
    return formula


def _philox(math, name):
    """A draw of Philox numbers from a device state (:mod:`.philox`): one launch of its
    kernel on a device with kernels, its twin over the array module otherwise."""
    twin = functools.partial(philox.TWINS[name], math.xp)
    if not math.device_kernels:
        return twin
    if name == "philox_advance":
        def run(state, n):
            device.launch(math, "philox_advance_float32", (state, np.int64(n)), 1, 1)
    else:
        def run(out, state, keep, scale):
            dtype = out.dtype.name
            compute = np.float64 if dtype == "float64" else np.float32
            n = out.size
            if n:
                device.launch(math, f"dropout_mask_{dtype}",
                              (out, state, compute(keep), compute(scale), np.int64(n)),
                              min(-(-n // device.BLOCK), device.MAX_GRID), device.BLOCK)
    run.__name__ = name
    return device.with_fallback(math, name, run)


def _matmul(math, name):
    # on a CUDA device, cuBLAS called directly: products a CUDA graph can capture
    return np.matmul if math.xp is np else gemm.matmul_for(math)


def _linear(math, name):
    """``linear(x2, w, b)`` and ``linear_weight_grads(g2, x2, need_bias)``: the formulas
    of :mod:`.gemm` over the namespace, the bias going through one product with an
    epilogue (``matmul_bias``, ``matmul_bgrad``) where one applies: on CUDA,
    cuBLASLt's, for the operands it supports; on the CPU always (the two steps, which
    ``gc.profile`` counts as the one launch a GPU makes)."""
    applies = gemm.always if math.xp is np else gemm.epilogues_for(math).applies
    return functools.partial(getattr(gemm, name), math, applies)


def _epilogue_product(math, name):
    """``matmul_bias(x2, w, b)`` / ``matmul_bgrad(g2, x2)``: one ``cublasLtMatmul`` on
    CUDA (called where ``applies`` said so); the two steps on the CPU."""
    if math.xp is np:
        plain = gemm.matmul_bias_plain if name == "matmul_bias" else gemm.matmul_bgrad_plain
        return functools.partial(plain, math)
    epilogue = gemm.EPILOGUE_BIAS if name == "matmul_bias" else gemm.EPILOGUE_BGRADB
    product = gemm.epilogues_for(math).product

    def run(*ops):
        return product(epilogue, *ops)

    run.__name__ = name
    return run


_PROVIDERS = {
    **dict.fromkeys(pointwise.KERNELS, _pointwise),
    **dict.fromkeys(pointwise.INPLACE_CPU, _inplace),
    **dict.fromkeys(pointwise.KEEPING, _keeping),
    **dict.fromkeys(rows.TWINS, _row),
    **dict.fromkeys(rows.FORMULAS, _formula),
    "mul_sum_to": _mul_sum_to,
    **dict.fromkeys(updates.UPDATE_KERNELS, _update_step),
    **dict.fromkeys(updates.DEVICE_SCALAR_UPDATES, _update_dev),
    **dict.fromkeys(updates.MULTI_TENSOR_UPDATES, _update_multi),
    **dict.fromkeys(updates.ENTRIES, _update),
    **dict.fromkeys(conv.TWINS, _window),
    **dict.fromkeys(conv.FORMULAS, _conv_formula),
    "max_pool_backward": _max_pool_backward,
    "windows_batch_inner": _windows_order,
    "matmul": _matmul,
    "linear": _linear, "linear_weight_grads": _linear,
    "matmul_bias": _epilogue_product, "matmul_bgrad": _epilogue_product,
    **dict.fromkeys(philox.TWINS, _philox),
}

# every name the registry answers: a set that declare() adds to, which the array
# namespaces read as it is (backend.register_kernels keeps it, not a copy)
NAMES = set(_PROVIDERS)


def declare(kernel: Kernel) -> Kernel:
    """Declare a pointwise kernel (an op's, in its stanza): from now on every array
    namespace answers ``kernel.name`` (``F.<name>``), :func:`.source.generate` writes its
    CUDA kernel and ``tensor_math`` its differentiable composite. Returns ``kernel``.
    Declaring a name again with another declaration is an error."""
    old = pointwise.KERNELS.get(kernel.name)
    if old is not None and old != kernel:
        raise ValueError(f"kernel {kernel.name!r} is declared twice, differently")
    if kernel.name in NAMES and old is None:
        raise ValueError(f"kernel {kernel.name!r}: the registry already answers that name")
    pointwise.KERNELS[kernel.name] = kernel
    _PROVIDERS[kernel.name] = _pointwise
    NAMES.add(kernel.name)
    return kernel


def declarations() -> dict:
    """Each kernel's declaration by name (a ``Kernel`` or ``Update``, or the NumPy
    function of an update or a row kernel), from the tables as they are now: what
    :mod:`gradcore.profile` counts as one launch. (The formulas of :mod:`.rows` and the
    forwards of ``pointwise.KEEPING`` and the convolution formulas are not kernels: they
    count as what they call.)"""
    return {**pointwise.INPLACE_CPU, **rows.TWINS, **philox.TWINS, **updates.UPDATES,
            **updates.UPDATE_KERNELS, **updates.DEVICE_SCALAR_UPDATES,
            **updates.MULTI_TENSOR_UPDATES, **pointwise.KERNELS,
            **conv.TWINS}


def implementation(math, name: str):
    """Kernel ``name`` as a function on the array namespace ``math``."""
    return _PROVIDERS[name](math, name)


backend.register_kernels(implementation, NAMES)
