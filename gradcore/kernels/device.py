"""gradcore's kernels on a CUDA device: one launch per call through ``cupy.RawModule``.

The generated source (:mod:`.source`) is compiled for a device and dtype on first use
(never at import), once per process; CuPy caches the binary on disk. Should the compiler
fail (a CUDA or CuPy version this source has not met), the device warns once and flips
its namespace to the same formulas over CuPy's own ufuncs (:func:`fall_back`:
``math.use_device_kernels(False)``). :func:`pointwise` and :func:`update` wrap a
declaration as a launcher; the row kernels' launchers (softmax, cross-entropy,
layer_norm, attention's safe softmax, the unbroadcasting product) are below, each
taking the arguments of its NumPy twin in :mod:`.rows`, and the convolution's (im2col,
col2im), taking those of their twins in :mod:`.conv`.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import numpy as np

from ..backend import cuda_kernels_enabled, summed_axes
from .pointwise import KERNELS
from .rows import _acc, row_block
from .source import (
    DTYPES,
    GENERATED,
    _entry_name,
    _same_shape_arguments,
    dtype_name,
    kernel_arguments,
    kernels_dir,
)
from .spec import Update
from .updates import ENTRIES

device_kernels_enabled = cuda_kernels_enabled  # (read by the benchmarks and tests)


class KernelsUnavailable(RuntimeError):
    """The kernels did not compile on a device, which has fallen back to CuPy's own."""


BLOCK = 256
MAX_GRID = 65535


def nvrtc_options(dtype: str, folder: Path | None = None) -> tuple[str, ...]:
    """The compiler options for ``dtype``'s kernels: the other dtypes are left out."""
    folder = kernels_dir() if folder is None else folder
    skip = tuple(f"-DGRADCORE_NO_{d}" for d in DTYPES if d != dtype)
    return ("-std=c++17", f"-I{folder}", *skip)


def _module(math, dtype: str):
    """The generated source compiled for ``math``'s device and ``dtype``: on first use
    (never at import), once per process; CuPy caches the binary on disk.

    Should the compiler fail (a CUDA or CuPy version this source has not met), the
    device warns once and falls back to CuPy's own kernels for the same formulas
    (:func:`fall_back`), and this raises :class:`KernelsUnavailable` so that the caller
    can run the fallback."""
    modules = math.__dict__.setdefault("_kernel_modules", {})  # lives with the namespace
    mod = modules.get(dtype)
    if mod is None:
        folder = kernels_dir()
        code = (folder / GENERATED).read_text()
        try:
            mod = math.xp.RawModule(code=code, options=nvrtc_options(dtype, folder))
            # CuPy compiles on the first lookup: make it happen here
            mod.get_function(_entry_name(next(iter(KERNELS.values())), dtype))
        except Exception as exc:  # noqa: BLE001 - any compiler or driver failure
            fall_back(math, exc)
            raise KernelsUnavailable(str(exc)) from exc
        modules[dtype] = mod
    return mod


def fall_back(math, exc) -> None:
    """Give ``math`` back the kernels written over its array module (CuPy's ufuncs),
    with a warning that says why."""
    warnings.warn(f"gradcore's CUDA kernels did not compile on {math.device} "
                  f"({type(exc).__name__}: {str(exc).strip()[:500]}); using CuPy's own "
                  "kernels for the same formulas instead (GRADCORE_CUDA_KERNELS=0 skips "
                  "this attempt)", RuntimeWarning, stacklevel=4)
    math.use_device_kernels(False)


def with_fallback(math, name: str, fn):
    """``fn`` (a device launcher), running ``math.<name>`` instead when the kernels
    turn out not to compile on the device."""
    def run(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except KernelsUnavailable:
            replacement = getattr(math, name)
            if replacement is run:  # the fallback did not take: never loop
                raise
            return replacement(*args, **kwargs)

    run.__name__ = name
    return run


def launch(math, entry_name: str, values, grid: int, block: int) -> None:
    """One launch of entry point ``entry_name`` (``<kernel>_<dtype>``) on ``math``'s
    device with the argument ``values`` (device arrays and NumPy scalars)."""
    functions = math.__dict__.setdefault("_kernel_functions", {})
    fn = functions.get(entry_name)
    if fn is None:
        fn = functions[entry_name] = \
            _module(math, entry_name.rpartition("_")[2]).get_function(entry_name)
    fn((grid,), (block,), tuple(values))


def device_kernel(math, k):
    """Kernel ``k`` as a function on ``math``'s device, one launch per call: a pointwise
    kernel takes arrays (or numbers) and returns new arrays; an update writes into its
    arrays (see :func:`kernel_arguments`)."""
    xp = math.xp
    update = isinstance(k, Update)
    single = not update and len(k.exprs) == 1
    constants = math.__dict__.setdefault("_kernel_constants", {})

    def run(*args, out=None):
        fast = None if update else _same_shape_arguments(k, args, xp)
        entry_name, values, outs, n = fast or kernel_arguments(k, args, xp,
                                                               constants=constants)
        if out is not None and fast is not None:
            outs = _given_output(outs, values, out)
        if n:
            launch(math, entry_name, values, min(-(-n // BLOCK), MAX_GRID), BLOCK)
        if update:
            return None
        return outs[0] if single else outs

    run.__name__ = k.name
    # an update is called by optimizer_update's wrappers, which fall back as a whole
    return run if update else with_fallback(math, k.name, run)


def _given_output(outs, values, out):
    """The outputs with the last one replaced by the caller's ``out`` (one array, or
    one entry per output) where it fits: a contiguous array of the output's shape and
    dtype. (An earlier output written into an input would change what a later output
    reads.) ``values``, the launch's arguments, is updated alike."""
    given = out[-1] if isinstance(out, tuple) else out
    last = outs[-1]
    if given is None or type(given) is not type(last) or given.shape != last.shape or \
            given.dtype != last.dtype or not given.flags.c_contiguous:
        return outs
    values[-2] = given  # (the outputs come last, before the element count)
    return outs[:-1] + (given,)


# ---- the row kernels' launchers ---------------------------------------------
def _dense(xp, a, dtype):
    return xp.ascontiguousarray(a, dtype=dtype)


def _launch(math, name, dtype, values, rows, cols, over):
    """One launch of ``<name>_<dtype>`` with ``values`` then ``rows`` and ``cols``: a
    block per row (``over="rows"``), per 32 columns (``"columns"``) or a thread per
    element (``"elements"``)."""
    units = {"rows": rows, "columns": -(-cols // 32),
             "elements": -(-(rows * cols) // BLOCK)}[over]
    if units and (rows or over == "columns"):
        launch(math, f"{name}_{dtype_name(dtype)}", [*values, np.int64(rows), np.int64(cols)],
               min(units, MAX_GRID), row_block(cols) if over == "rows" else BLOCK)


def _rows_kernel(math, name, g, y):
    xp = math.xp
    dtype = y.dtype
    g, y = _dense(xp, g, dtype), _dense(xp, y, dtype)
    out = xp.empty(y.shape, dtype=dtype)
    cols = y.shape[-1] if y.ndim else 1
    rows = y.size // cols if cols else 0
    _launch(math, name, dtype, [g, y, out], rows, cols, "rows")
    return out


def _xent_kernel(math, logp, target, g, coef):
    xp = math.xp
    dtype = logp.dtype
    logp = _dense(xp, logp, dtype)
    rows, cols = logp.shape
    g = xp.asarray(g, dtype=dtype)
    g_stride = 1 if g.size == rows and rows != 1 else 0
    g = _dense(xp, g.reshape(-1)[:1] if g_stride == 0 else g, dtype)
    out = xp.empty(logp.shape, dtype=dtype)
    _launch(math, "softmax_xent_backward", dtype,
            [logp, _dense(xp, target, np.int64), g, np.int64(g_stride),
             _dense(xp, coef, dtype), out], rows, cols, "elements")
    return out


def _xent_rows(xp, x, target, weight, ignore_index):
    """The arguments cross_entropy's row kernels share, from ``x`` to ``tsafe`` (the
    inputs made dense, the outputs made), and ``x`` and its compute dtype."""
    dtype = x.dtype
    acc = _acc(dtype)
    x = _dense(xp, x, dtype)
    rows = x.shape[0]
    w = _dense(xp, weight, acc) if weight is not None else xp.empty((1,), dtype=acc)
    return [x, _dense(xp, target, np.int64), w, np.int64(weight is not None),
            np.int64(ignore_index), xp.empty(x.shape, dtype=dtype),
            xp.empty((rows,), dtype=acc), xp.empty((rows,), dtype=acc),
            xp.empty((rows,), dtype=np.int64)], x, acc


def _xent_forward_kernel(math, x, target, weight, ignore_index):
    values, x, _acc_dtype = _xent_rows(math.xp, x, target, weight, ignore_index)
    _launch(math, "softmax_xent_forward", x.dtype, values, *x.shape, "rows")
    return tuple(values[5:])  # logp, loss, wt, tsafe


def _xent_small_kernel(math, x, target, weight, ignore_index, mode):
    xp = math.xp
    values, x, acc = _xent_rows(xp, x, target, weight, ignore_index)
    rows, cols = x.shape
    out, coef = xp.empty((1,), dtype=acc), xp.empty((rows,), dtype=acc)
    bounds = xp.empty((2,), dtype=np.int64)
    # (one block for all the rows; the mode goes before the outputs)
    launch(math, f"softmax_xent_small_{dtype_name(x.dtype)}",
           [*values[:5], np.int64(mode), *values[5:], out, coef, bounds, np.int64(rows),
            np.int64(cols)], 1, row_block(rows))
    return (*values[5:], out.reshape(()) if mode else None, coef, bounds[0], bounds[1])


def _index_bounds_kernel(math, idx):
    xp = math.xp
    bounds = xp.empty((2,), dtype=np.int64)
    # (any dtype's entry point: that of a module loaded already, else float32's)
    dtype = next(iter(math.__dict__.get("_kernel_modules", ())), "float32")
    _launch(math, "index_bounds", np.dtype(dtype), [_dense(xp, idx, np.int64), bounds], 1,
            idx.size, "rows")
    return bounds[0], bounds[1]


def _nll_reduce_kernel(math, loss, wt, tsafe, mode):
    xp = math.xp
    dtype = loss.dtype  # (the compute type: the entry point of that dtype)
    n = loss.shape[0]
    out = xp.empty((1,), dtype=dtype)
    coef = xp.empty((n,), dtype=dtype)
    bounds = xp.empty((2,), dtype=np.int64)
    _launch(math, "nll_reduce", dtype,
            [_dense(xp, loss, dtype), _dense(xp, wt, dtype), _dense(xp, tsafe, np.int64),
             np.int64(mode), out, coef, bounds], 1, n, "rows")
    return (out.reshape(()) if mode else None), coef, bounds[0], bounds[1]


def _softmax_forward_kernel(math, x, log):
    xp = math.xp
    dtype = x.dtype
    x = _dense(xp, x, dtype)
    y = xp.empty(x.shape, dtype=dtype)
    _launch(math, "softmax_forward_rows", dtype, [x, np.int64(bool(log)), y], *x.shape,
            "rows")
    return y


def _attention_kernel(math, s, bias, scale, n_q):
    xp = math.xp
    dtype = s.dtype
    s = _dense(xp, s, dtype)
    y = xp.empty(s.shape, dtype=dtype)
    _launch(math, "attention_softmax_rows", dtype,
            [s, s if bias is None else _dense(xp, bias, dtype), np.int64(bias is not None),
             _acc(dtype).type(scale), np.int64(n_q), y], *s.shape, "rows")
    return y


def _attention_backward_kernel(math, g, y, scale, need_d):
    xp = math.xp
    dtype = y.dtype
    acc = _acc(dtype)
    y = _dense(xp, y, dtype)
    out = xp.empty(y.shape, dtype=dtype)
    # (without need_d: a valid pointer, never written)
    d = xp.empty(y.shape if need_d else (1,), dtype=acc)
    _launch(math, "attention_softmax_backward_rows", dtype,
            [_dense(xp, g, dtype), y, acc.type(scale), np.int64(bool(need_d)), out, d],
            *y.shape, "rows")
    return out, (d if need_d else None)


def _ln_forward_kernel(math, x, w, b, eps, inv_n):
    xp = math.xp
    dtype = x.dtype
    acc = _acc(dtype)
    x = _dense(xp, x, dtype)
    rows = x.shape[0]
    y = xp.empty(x.shape, dtype=dtype)
    mean, rstd = xp.empty((rows,), dtype=acc), xp.empty((rows,), dtype=acc)
    dummy = x.reshape(-1)[:1]  # a valid pointer where there is no weight or bias
    _launch(math, "layer_norm_forward_rows", dtype,
            [x, dummy if w is None else _dense(xp, w, dtype),
             dummy if b is None else _dense(xp, b, dtype), np.int64(w is not None),
             np.int64(b is not None), acc.type(eps), acc.type(inv_n), y, mean, rstd],
            *x.shape, "rows")
    return y, mean, rstd


def _ln_backward_kernel(math, g, x, w, mean, rstd, inv_n):
    xp = math.xp
    dtype = x.dtype
    acc = _acc(dtype)
    x = _dense(xp, x, dtype)
    dx = xp.empty(x.shape, dtype=dtype)
    _launch(math, "layer_norm_backward_rows", dtype,
            [_dense(xp, g, dtype), x, x.reshape(-1)[:1] if w is None else
             _dense(xp, w, dtype), np.int64(w is not None), _dense(xp, mean, acc),
             _dense(xp, rstd, acc), acc.type(inv_n), dx], *x.shape, "rows")
    return dx


def _ln_params_kernel(math, g, x, mean, rstd):
    xp = math.xp
    dtype = x.dtype
    acc = _acc(dtype)
    x = _dense(xp, x, dtype)
    cols = x.shape[1]
    dw, db = xp.empty((cols,), dtype=dtype), xp.empty((cols,), dtype=dtype)
    _launch(math, "layer_norm_param_grads", dtype,
            [_dense(xp, g, dtype), x, _dense(xp, mean, acc), _dense(xp, rstd, acc),
             np.int64(1), np.int64(1), dw, db], *x.shape, "columns")
    return dw, db


def _channels_launch(math, name, dtype, values, outer, rows, cols):
    """One launch of a channel kernel (batch norm's layout): a block per channel."""
    launch(math, f"{name}_{dtype_name(dtype)}",
           [*values, np.int64(outer), np.int64(rows), np.int64(cols)], min(rows, MAX_GRID),
           row_block(outer * cols))


def _norm_forward_channels_kernel(math, x, w, b, eps, inv_n):
    xp = math.xp
    dtype = x.dtype
    acc = _acc(dtype)
    x = _dense(xp, x, dtype)
    outer, rows, cols = x.shape
    y = xp.empty(x.shape, dtype=dtype)
    mean, rstd = xp.empty((rows,), dtype=acc), xp.empty((rows,), dtype=acc)
    _channels_launch(math, "norm_forward_channels", dtype,
                     [x, mean if w is None else _dense(xp, w, acc),
                      mean if b is None else _dense(xp, b, acc), np.int64(w is not None),
                      np.int64(b is not None), acc.type(eps), acc.type(inv_n), y, mean, rstd],
                     outer, rows, cols)
    return y, mean, rstd


def _norm_backward_channels_kernel(math, g, x, w, mean, rstd, inv_n, need_x, need_params):
    xp = math.xp
    dtype = x.dtype
    acc = _acc(dtype)
    x = _dense(xp, x, dtype)
    outer, rows, cols = x.shape
    mean, rstd = _dense(xp, mean, acc), _dense(xp, rstd, acc)
    dx = xp.empty(x.shape, dtype=dtype) if need_x else x.reshape(-1)[:1]
    dw, db = ((xp.empty((rows,), dtype=acc), xp.empty((rows,), dtype=acc)) if need_params
              else (mean, mean))  # (a valid pointer where nothing is written)
    _channels_launch(math, "norm_backward_channels", dtype,
                     [_dense(xp, g, dtype), x, mean if w is None else _dense(xp, w, acc),
                      np.int64(w is not None), mean, rstd, acc.type(inv_n),
                      np.int64(bool(need_x)), np.int64(bool(need_params)), dx, dw, db],
                     outer, rows, cols)
    return (dx if need_x else None), *((dw, db) if need_params else (None, None))


def _mul_sum_rows_kernel(math, g, x):
    xp = math.xp
    dtype = g.dtype
    g, x = _dense(xp, g, dtype), _dense(xp, x, dtype)
    out = xp.empty((g.shape[1],), dtype=dtype)
    _launch(math, "mul_sum_rows", dtype, [g, x, out], *g.shape, "columns")
    return out


def _split_rows(full, shape):
    """``(rows, cols)`` when summing ``full`` to ``shape`` adds up whole leading axes (a
    row-broadcast operand such as a bias or a per-feature scale), else None."""
    axes = summed_axes(full, shape)
    k = len(axes)
    if not k or axes != tuple(range(k)):
        return None
    return int(np.prod(full[:k], dtype=np.int64)), int(np.prod(full[k:], dtype=np.int64))


def _mul_sum_to_kernel(math, fallback, g, other, shape):
    """``sum_to(g * other, shape)``: one pass (``mul_sum_rows``) when the reduction is
    over whole leading axes and ``other`` has ``g``'s shape and dtype; else ``fallback``
    (the namespace's general ``mul_sum_to_any``)."""
    split = _split_rows(g.shape, shape) if getattr(other, "shape", None) == g.shape and \
        other.dtype == g.dtype and any(g.strides) else None
    if split is None:
        return fallback(g, other, shape)
    rows, cols = split
    out = _mul_sum_rows_kernel(math, g.reshape(rows, cols), other.reshape(rows, cols))
    return out.reshape(shape)


# ---- the convolution's window kernels ------------------------------------------------
def _window_values(n, c, h, w, kernel, dilation, padding, stride, windows):
    """The shape parameters of im2col and col2im, in their order (CONV_KERNELS)."""
    (kh, kw), (dh, dw), (ph, pw), (sh, sw), (oh, ow) = kernel, dilation, padding, stride, \
        windows
    return [np.int64(v) for v in (n, c, h, w, kh, kw, ph, pw, sh, sw, dh, dw, oh, ow)]


def _im2col_kernel(math, twin, x, kernel, dilation, padding, stride, windows,
                   batch_inner=False):
    """im2col as one launch, a thread per column element (floating dtypes, the batch
    outside; the twin over the device's arrays otherwise)."""
    xp = math.xp
    dtype = x.dtype
    if dtype_name(dtype) not in DTYPES or batch_inner:
        return twin(x, kernel, dilation, padding, stride, windows, batch_inner)
    n, c, h, w = x.shape
    (kh, kw), (oh, ow) = kernel, windows
    cols = xp.empty((c * kh * kw, n, oh * ow), dtype=dtype)
    if cols.size:
        launch(math, f"im2col_{dtype_name(dtype)}",
               [_dense(xp, x, dtype), cols,
                *_window_values(n, c, h, w, kernel, dilation, padding, stride, windows)],
               min(-(-cols.size // BLOCK), MAX_GRID), BLOCK)
    return cols


def _col2im_kernel(math, twin, cols, size, kernel, dilation, padding, stride, windows,
                   batch_inner=False):
    """col2im as one launch, a thread per input element gathering what the columns hold
    for it (no atomics)."""
    xp = math.xp
    dtype = cols.dtype
    if dtype_name(dtype) not in DTYPES or batch_inner:
        return twin(cols, size, kernel, dilation, padding, stride, windows, batch_inner)
    k, n, _ = cols.shape
    (kh, kw), (h, w) = kernel, size
    c = k // (kh * kw)
    out = xp.empty((n, c, h, w), dtype=dtype)
    if out.size:
        launch(math, f"col2im_{dtype_name(dtype)}",
               [_dense(xp, cols, dtype), out,
                *_window_values(n, c, h, w, kernel, dilation, padding, stride, windows)],
               min(-(-out.size // BLOCK), MAX_GRID), BLOCK)
    return out


def _max_pool_forward_kernel(math, twin, x, kernel, dilation, padding, stride, windows):
    """max pooling as one launch, a thread per output element: the maxima and their
    positions (floating dtypes; the twin over the device's arrays otherwise)."""
    xp = math.xp
    dtype = x.dtype
    if dtype_name(dtype) not in DTYPES:
        return twin(x, kernel, dilation, padding, stride, windows)
    n, c, h, w = x.shape
    y = xp.empty((n, c) + tuple(windows), dtype=dtype)
    idx = xp.empty(y.shape, dtype=np.int64)
    if y.size:
        launch(math, f"max_pool_forward_{dtype_name(dtype)}",
               [_dense(xp, x, dtype), y, idx,
                *_window_values(n, c, h, w, kernel, dilation, padding, stride, windows)],
               min(-(-y.size // BLOCK), MAX_GRID), BLOCK)
    return y, idx


def _max_pool_backward_kernel(math, formula, g, idx, size, kernel, dilation, padding, stride):
    """max pooling's gradient as one launch, a thread per input element gathering the
    gradients of the windows it is the maximum of (no atomics)."""
    xp = math.xp
    dtype = g.dtype
    if dtype_name(dtype) not in DTYPES:
        return formula(g, idx, size, kernel, dilation, padding, stride)
    n, c, oh, ow = g.shape
    h, w = size
    dx = xp.empty((n, c, h, w), dtype=dtype)
    if dx.size:
        launch(math, f"max_pool_backward_{dtype_name(dtype)}",
               [_dense(xp, g, dtype), _dense(xp, idx, np.int64), dx,
                *_window_values(n, c, h, w, kernel, dilation, padding, stride, (oh, ow))],
               min(-(-dx.size // BLOCK), MAX_GRID), BLOCK)
    return dx


_CONV_LAUNCHERS = {"im2col": _im2col_kernel, "col2im": _col2im_kernel,
                   "max_pool_forward": _max_pool_forward_kernel,
                   "max_pool_backward": _max_pool_backward_kernel}


def conv(math, name, twin):
    """Window kernel ``name`` (im2col, col2im) on ``math``'s device: one launch per call
    for floating dtypes, ``twin`` (the strided formula over the device's arrays) for
    others."""
    return with_fallback(math, name, functools.partial(_CONV_LAUNCHERS[name], math, twin))


# ---- what the registry (gradcore.kernels) asks for -----------------------------------
def pointwise(math, k):
    """Pointwise kernel ``k`` on ``math``'s device: one launch per call."""
    return device_kernel(math, k)


def update(math, k):
    """Update kernel ``k`` on ``math``'s device, writing into its arrays."""
    return device_kernel(math, k)


def multi_update(math, k):
    """Update kernel ``k`` over many tensors in one launch (``<step>_multi``; see
    ``gradcore.kernels._update_multi`` for the arguments). Every array must be
    contiguous, of the first parameter's dtype and shape within its tensor: the kernel
    reads them through their addresses alone."""
    width = len(k.params)

    def run(table, rows, arrays):
        dtype = arrays[0][0].dtype
        n = 0
        for a in arrays:
            shape = a[0].shape
            if len(a) != width or any(x.dtype != dtype or x.shape != shape or
                                      not x.flags.c_contiguous for x in a):
                raise ValueError(f"{k.name}: each tensor's {width} arrays must be "
                                 f"contiguous {dtype} arrays of one shape, got "
                                 f"{[(str(x.dtype), x.shape) for x in a]}")
            n += a[0].size
        if n:
            tensors = len(arrays)
            launch(math, f"{k.name}_{dtype_name(dtype)}",
                   [table[tensors + 1:].view(np.uint64), table[:tensors + 1], rows,
                    np.int64(n)], min(-(-n // BLOCK), MAX_GRID), BLOCK)

    run.__name__ = k.name
    return run


_ROW_LAUNCHERS = {
    "softmax_backward_rows": lambda math: functools.partial(_rows_kernel, math,
                                                            "softmax_backward_rows"),
    "log_softmax_backward_rows": lambda math: functools.partial(
        _rows_kernel, math, "log_softmax_backward_rows"),
    "softmax_xent_backward": lambda math: functools.partial(_xent_kernel, math),
    "softmax_xent_forward": lambda math: functools.partial(_xent_forward_kernel, math),
    "nll_reduce": lambda math: functools.partial(_nll_reduce_kernel, math),
    "index_bounds": lambda math: functools.partial(_index_bounds_kernel, math),
    "softmax_xent_small": lambda math: functools.partial(_xent_small_kernel, math),
    "mul_sum_rows": lambda math: functools.partial(_mul_sum_rows_kernel, math),
    "softmax_forward_rows": lambda math: functools.partial(_softmax_forward_kernel, math),
    "attention_softmax_rows": lambda math: functools.partial(_attention_kernel, math),
    "attention_softmax_backward_rows": lambda math: functools.partial(
        _attention_backward_kernel, math),
    "layer_norm_forward_rows": lambda math: functools.partial(_ln_forward_kernel, math),
    "layer_norm_backward_rows": lambda math: functools.partial(_ln_backward_kernel, math),
    "layer_norm_param_grads": lambda math: functools.partial(_ln_params_kernel, math),
    "norm_forward_channels": lambda math: functools.partial(_norm_forward_channels_kernel,
                                                            math),
    "norm_backward_channels": lambda math: functools.partial(_norm_backward_channels_kernel,
                                                             math),
}


def rows(math, name, generic=None):
    """Row kernel ``name`` on ``math``'s device (``mul_sum_to``: the gradient of a
    row-broadcast factor in one pass, not two, else ``generic``)."""
    if name == "mul_sum_to":
        fn = functools.partial(_mul_sum_to_kernel, math, generic)
    else:
        fn = _ROW_LAUNCHERS[name](math)
    return with_fallback(math, name, fn)


class _Launches:
    """The declared steps as launches on ``math``'s device (``math.adam_step``, ...),
    the gradient first made contiguous and of the parameter's dtype, as the kernels
    read it."""

    def __init__(self, math):
        self._math = math

    def __getattr__(self, name):
        math = self._math

        def step(param, grad, *rest):
            grad = grad.astype(param.dtype, copy=False)
            if not grad.flags.c_contiguous:
                grad = math.xp.ascontiguousarray(grad)
            getattr(math, name)(param, grad, *rest)

        self.__dict__[name] = step
        return step


def optimizer_update(math, name):
    """``sgd_update`` / ``adam_update`` on ``math``'s device: one launch per parameter."""
    return with_fallback(math, name, functools.partial(ENTRIES[name], _Launches(math)))
