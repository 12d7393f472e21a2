"""``gradcore.testing``: PyTorch's ``torch.testing``: ``assert_close`` (with PyTorch's
default tolerances, its handling of numbers, sequences and mappings and its messages),
the deprecated ``assert_allclose``, and ``make_tensor``.

>>> import gradcore as gc
>>> gc.testing.assert_close(gc.tensor([1.0, 2.0]), gc.tensor([1.0, 2.0 + 1e-7]))
>>> gc.testing.make_tensor(2, 3, dtype=gc.int64, device="cpu").shape
gradcore.Size([2, 3])
"""

from __future__ import annotations

import cmath
import collections.abc
import contextlib
import math
import warnings

import numpy as _np

from . import creation as _creation
from . import dtypes as _dtypes
from .autograd.grad_mode import no_grad as _no_grad
from .tensor import Tensor

__all__ = ["assert_close", "assert_allclose", "make_tensor"]

# {dtype: (rtol, atol)}: PyTorch's defaults (other dtypes compare exactly)
_DTYPE_PRECISIONS = {
    _dtypes.float16: (0.001, 1e-5),
    _dtypes.float32: (1.3e-6, 1e-5),
    _dtypes.float64: (1e-7, 1e-7),
}
# Python numbers compare as these dtypes (complex as PyTorch's complex128)
_NUMBER_PRECISIONS = {int: (0.0, 0.0), float: (1e-7, 1e-7), complex: (1e-7, 1e-7)}


class _ErrorMeta(Exception):
    """A failure: the exception type and message to raise, and where it occurred."""

    def __init__(self, type, msg: str, *, id=()):  # noqa: A002
        super().__init__(msg)
        self.type, self.msg, self.id = type, msg, id

    def to_error(self, msg=None) -> Exception:
        if not isinstance(msg, str):
            generated = self.msg
            if self.id:
                generated += ("\n\nThe failure occurred for item "
                              f"{''.join(str([item]) for item in self.id)}")
            msg = msg(generated) if callable(msg) else generated
        return self.type(msg)


class _Unsupported(Exception):
    pass


def _tolerances(rtol, atol, defaults, id):  # noqa: A002
    if (rtol is None) ^ (atol is None):
        raise _ErrorMeta(ValueError, "Both 'rtol' and 'atol' must be either specified or "
                         f"omitted, but got no {'rtol' if rtol is None else 'atol'}.", id=id)
    if rtol is not None:
        return rtol, atol
    return max(r for r, _ in defaults), max(a for _, a in defaults)


def _mismatch_msg(identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol):
    equality = rtol == 0 and atol == 0

    def diff(kind, value, idx, tol):
        line = (f"{kind.title()} difference: {value}" if idx is None else
                f"Greatest {kind} difference: {value} at index {idx}")
        return line + ("" if equality else f" (up to {tol} allowed)") + "\n"

    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += diff("absolute", abs_diff, abs_idx, atol)
    msg += diff("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _scalar_msg(actual, expected, rtol, atol):
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None,
                         atol, rel_diff, None, rtol)


def _compare_none(actual, expected, **_):
    if actual is not None and expected is not None:
        raise _Unsupported
    if not (actual is None and expected is None):
        return f"None mismatch: {actual} is not {expected}"
    return None


def _compare_bool(actual, expected, **_):
    if not all(isinstance(v, (bool, _np.bool_)) for v in (actual, expected)):
        raise _Unsupported
    actual, expected = bool(actual), bool(expected)
    if actual is not expected:
        return f"Booleans mismatch: {actual} is not {expected}"
    return None


def _compare_number(actual, expected, *, id, rtol, atol, equal_nan, check_dtype,  # noqa: A002
                    **_):
    kinds = (int, float, complex, _np.number)
    if not all(isinstance(v, kinds) and not isinstance(v, (bool, _np.bool_))
               for v in (actual, expected)):
        raise _Unsupported
    actual, expected = (v.item() if isinstance(v, _np.number) else v
                        for v in (actual, expected))
    rtol, atol = _tolerances(rtol, atol, [_NUMBER_PRECISIONS[_number_kind(v)]
                                          for v in (actual, expected)], id)
    if check_dtype and type(actual) is not type(expected):
        return f"The (d)types do not match: {type(actual)} != {type(expected)}."
    if actual == expected:
        return None
    if equal_nan and cmath.isnan(actual) and cmath.isnan(expected):
        return None
    abs_diff = abs(actual - expected)
    if cmath.isfinite(abs_diff) and abs_diff <= atol + rtol * abs(expected):
        return None
    return _scalar_msg(actual, expected, rtol, atol)


def _number_kind(v):
    return complex if isinstance(v, complex) else float if isinstance(v, float) else int


def _compare_tensors(actual, expected, *, id, allow_subclasses, rtol, atol,  # noqa: A002
                     equal_nan, check_device, check_dtype, check_layout, check_stride, **_):
    if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
        raise _Unsupported
    if not allow_subclasses and type(actual) is not type(expected):
        raise _Unsupported
    if not isinstance(actual, Tensor):  # (two NumPy arrays, say)
        try:
            actual, expected = _creation.as_tensor(actual), _creation.as_tensor(expected)
        except Exception:
            raise _Unsupported from None
    rtol, atol = _tolerances(rtol, atol, [_DTYPE_PRECISIONS.get(t.dtype, (0.0, 0.0))
                                          for t in (actual, expected)], id)

    def mismatch(attribute, a, e):
        return f"The values for attribute '{attribute}' do not match: {a} != {e}."

    if actual.shape != expected.shape:
        return mismatch("shape", actual.shape, expected.shape)
    if check_stride and actual.stride() != expected.stride():
        return mismatch("stride()", actual.stride(), expected.stride())
    if check_device and actual.device != expected.device:
        return mismatch("device", actual.device, expected.device)
    if check_dtype and actual.dtype != expected.dtype:
        return mismatch("dtype", actual.dtype, expected.dtype)
    with _no_grad():
        a = actual.detach().cpu()
        e = expected.detach().cpu()
        if a.dtype != e.dtype:
            common = _dtypes.promote_types(a.dtype, e.dtype)
            a, e = a.to(dtype=common), e.to(dtype=common)
    return _compare_values(a.numpy(), e.numpy(), rtol, atol, equal_nan)


def _compare_values(a, e, rtol, atol, equal_nan):
    """PyTorch's ``isclose`` over two arrays of one dtype, and its message where some
    elements differ."""
    floating = a.dtype.kind == "f"
    with _np.errstate(invalid="ignore", over="ignore"):
        if floating:
            error = _np.abs(a - e)
            matches = (a == e) | (_np.isfinite(error) & (error <= atol + rtol * _np.abs(e)))
            if equal_nan:
                matches |= _np.isnan(a) & _np.isnan(e)
        else:
            wide_a, wide_e = a.astype(_np.int64), e.astype(_np.int64)
            matches = wide_a == wide_e
            if rtol or atol:
                diff = _np.abs(wide_a - wide_e).astype(_np.float32)
                matches |= diff <= atol + rtol * _np.abs(wide_e).astype(_np.float32)
    if matches.all():
        return None
    if a.ndim == 0:
        return _scalar_msg(a.item(), e.item(), rtol, atol)
    total = matches.size
    wrong = total - int(matches.sum())
    extra = f"Mismatched elements: {wrong} / {total} ({wrong / total:.1%})"
    if not floating:  # (as PyTorch: the differences in int64, the ratio in float32)
        a, e = a.astype(_np.int64), e.astype(_np.int64)
    with _np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        abs_diff = _np.abs(a - e).reshape(-1)
        abs_diff[matches.reshape(-1)] = 0
        rel_diff = (abs_diff / _np.abs(e).reshape(-1)) if floating else \
            (abs_diff.astype(_np.float32) / _np.abs(e).reshape(-1).astype(_np.float32))
        rel_diff[matches.reshape(-1)] = 0
    i, j = int(_np.argmax(abs_diff)), int(_np.argmax(rel_diff))
    unravel = lambda k: tuple(int(v) for v in _np.unravel_index(k, matches.shape))  # noqa: E731
    return _mismatch_msg("Tensor-likes", extra, abs_diff[i].item(), unravel(i), atol,
                         rel_diff[j].item(), unravel(j), rtol)


_PAIRS = (_compare_none, _compare_bool, _compare_number, _compare_tensors)


def _originate(actual, expected, id, options):  # noqa: A002
    """The ``(compare, actual, expected, id)`` of each leaf, recursing through sequences
    and mappings as PyTorch does."""
    seq = collections.abc.Sequence
    if isinstance(actual, seq) and not isinstance(actual, str) and \
            isinstance(expected, seq) and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _ErrorMeta(AssertionError, "The length of the sequences mismatch: "
                             f"{len(actual)} != {len(expected)}", id=id)
        return [leaf for k in range(len(actual))
                for leaf in _originate(actual[k], expected[k], (*id, k), options)]
    mapping = collections.abc.Mapping
    if isinstance(actual, mapping) and isinstance(expected, mapping):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            raise _ErrorMeta(
                AssertionError,
                "The keys of the mappings do not match:\n"
                f"Missing keys in the actual mapping: {sorted(expected_keys - actual_keys)}\n"
                f"Additional keys in the actual mapping: {sorted(actual_keys - expected_keys)}",
                id=id)
        keys = actual_keys
        with contextlib.suppress(Exception):
            keys = sorted(keys)
        return [leaf for key in keys
                for leaf in _originate(actual[key], expected[key], (*id, key), options)]
    return [(actual, expected, id)]


def _compare_leaf(actual, expected, id, options):  # noqa: A002
    for compare in _PAIRS:
        try:
            return compare(actual, expected, id=id, **options)
        except _Unsupported:
            continue
    raise _ErrorMeta(TypeError, "No comparison pair was able to handle inputs of type "
                     f"{type(actual)} and {type(expected)}.", id=id)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Assert that ``actual`` and ``expected`` are close, as PyTorch's
    ``torch.testing.assert_close``: tensors (or two NumPy arrays) elementwise within
    ``atol + rtol * |expected|``, with the same shape and, unless told otherwise, the same
    device and dtype; Python numbers the same way; ``None`` and booleans exactly;
    sequences and mappings element by element. Without ``rtol`` and ``atol`` (give both
    or neither), each dtype's defaults: float16 ``1e-3``/``1e-5``, float32
    ``1.3e-6``/``1e-5``, float64 (and Python floats) ``1e-7``/``1e-7``, integers and
    booleans exactly. A tensor and a NumPy array are not compared (TypeError).

    Raises ``AssertionError`` with PyTorch's message: the number of mismatched elements
    and the greatest absolute and relative differences with their indices. ``msg``
    replaces it (a string) or rewrites it (a callable given the message).

    >>> import gradcore as gc
    >>> gc.testing.assert_close(gc.tensor([1.0, 2.0, 3.0]), gc.tensor([1.0, 4.0, 3.0]))
    Traceback (most recent call last):
    ...
    AssertionError: Tensor-likes are not close!
    <BLANKLINE>
    Mismatched elements: 1 / 3 (33.3%)
    Greatest absolute difference: 2.0 at index (1,) (up to 1e-05 allowed)
    Greatest relative difference: 0.5 at index (1,) (up to 1.3e-06 allowed)
    """
    __tracebackhide__ = True
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol,
                   equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype,
                   check_layout=check_layout, check_stride=check_stride)
    try:
        leaves = _originate(actual, expected, (), options)
        for a, e, id in leaves:  # noqa: A001
            failure = _compare_leaf(a, e, id, options)
            if failure is not None:
                raise _ErrorMeta(AssertionError, failure, id=id)
    except _ErrorMeta as meta:
        error = meta.to_error(msg)
    else:
        return
    raise error


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated (as in PyTorch since 1.12): :func:`assert_close` with NaNs equal, no
    dtype check, and looser defaults (float16 ``1e-3``/``1e-3``, float32
    ``1e-4``/``1e-5``, float64 ``1e-5``/``1e-8``); non-tensors are made tensors (the
    expected one in the actual one's dtype). Warns with a ``FutureWarning``."""
    __tracebackhide__ = True
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `torch.testing.assert_close()` "
                  "instead. You can find detailed upgrade instructions in "
                  "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning,
                  stacklevel=2)
    if not isinstance(actual, Tensor):
        actual = _creation.tensor(actual)
    if not isinstance(expected, Tensor):
        expected = _creation.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        loose = {_dtypes.float16: (1e-3, 1e-3), _dtypes.float32: (1e-4, 1e-5),
                 _dtypes.float64: (1e-5, 1e-8)}
        pairs = [loose.get(t.dtype, (0.0, 0.0)) for t in (actual, expected)]
        rtol, atol = max(r for r, _ in pairs), max(a for _, a in pairs)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_device=True, check_dtype=False, check_stride=False, msg=msg or None)


_INTEGRAL = (_dtypes.uint8, _dtypes.int8, _dtypes.int16, _dtypes.int32, _dtypes.int64)
_FLOATING = (_dtypes.float16, _dtypes.float32, _dtypes.float64)


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """A tensor of ``shape`` (ints, or one sequence) filled with values drawn uniformly
    from ``[low, high)``, as PyTorch's ``torch.testing.make_tensor`` (the values differ:
    gradcore's generator is not PyTorch's). Defaults by dtype: bool ``[0, 2)``, uint8
    ``[0, 10)``, signed integers ``[-9, 10)``, floating ``[-9, 9)``; ``low`` and
    ``high`` are clamped to the dtype's finite range (integers: rounded up).
    ``exclude_zero`` replaces zeros by 1 (bool, integers) or the dtype's ``tiny``;
    ``noncontiguous`` gives a strided view (for two or more elements).

    >>> import gradcore as gc
    >>> t = gc.testing.make_tensor(3, dtype=gc.float32, device="cpu", low=-1, high=1)
    >>> bool(((t >= -1) & (t < 1)).all())
    True
    """
    if not isinstance(dtype, _dtypes.DType):
        try:
            dtype = _dtypes.to_dtype(dtype)
        except (TypeError, ValueError, KeyError):
            raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                            "torch.testing.make_tensor().") from None

    def modify_low_high(low, high, *, lowest_inclusive, highest_exclusive, default_low,
                        default_high):
        low = low if low is not None else default_low
        high = high if high is not None else default_high
        if any(isinstance(value, float) and math.isnan(value) for value in (low, high)):
            raise ValueError(f"`low` and `high` cannot be NaN, but got {low=} and {high=}")
        if low == high and dtype in _FLOATING:
            warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating "
                          "or complex types is deprecated since 2.1 and will be removed in "
                          "2.3. Use `torch.full(...)` instead.", FutureWarning, stacklevel=3)
        elif low >= high:
            raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
        elif high < lowest_inclusive or low >= highest_exclusive:
            raise ValueError(f"The value interval specified by `low` and `high` is [{low}, "
                             f"{high}), but {dtype} only supports [{lowest_inclusive}, "
                             f"{highest_exclusive})")
        low = min(max(low, lowest_inclusive), highest_exclusive)
        high = min(max(high, lowest_inclusive), highest_exclusive)
        if dtype is _dtypes.bool_ or dtype in _INTEGRAL:
            return math.ceil(low), math.ceil(high)
        return low, high

    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got {noncontiguous=} and {memory_format=}")
    if requires_grad and (dtype is _dtypes.bool_ or dtype in _INTEGRAL):
        raise ValueError("`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got {dtype=}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype is _dtypes.bool_:
        low, high = modify_low_high(low, high, lowest_inclusive=0, highest_exclusive=2,
                                    default_low=0, default_high=2)
        result = _creation.randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _INTEGRAL:
        info = _dtypes.iinfo(dtype)
        low, high = modify_low_high(
            low, high, lowest_inclusive=info.min,
            highest_exclusive=info.max + (1 if dtype is not _dtypes.int64 else 0),
            default_low=-9, default_high=10)
        result = _creation.randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _FLOATING:
        info = _dtypes.finfo(dtype)
        low, high = modify_low_high(low, high, lowest_inclusive=info.min,
                                    highest_exclusive=info.max, default_low=-9,
                                    default_high=9)
        result = _creation.empty(shape, device=device, dtype=dtype)
        if high - low >= info.max:  # (the width would overflow: halves, doubled)
            result.uniform_(low / 2, high / 2).mul_(2)
        else:
            result.uniform_(low, high)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                        "torch.testing.make_tensor().")
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone()  # (gradcore's memory formats are all contiguous)
    if exclude_zero:
        result[result == 0] = 1 if dtype is _dtypes.bool_ or dtype in _INTEGRAL else \
            _dtypes.finfo(dtype).tiny
    if dtype in _FLOATING:
        result.requires_grad = requires_grad
    return result
