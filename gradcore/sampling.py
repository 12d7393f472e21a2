"""Sampling from distributions: ``gc.multinomial``, ``gc.normal``, ``gc.bernoulli``,
``gc.poisson``, and the in-place fills ``Tensor.normal_``, ``uniform_``, ``bernoulli_``,
``random_``, ``exponential_``, ``geometric_``, ``cauchy_``, ``log_normal_``.

Each takes ``generator=`` (a ``gc.Generator``; None draws from the default generator).
The random numbers are drawn on the host (gradcore._random) and moved to the tensor's
device, where whatever combines them with tensor arguments runs (a threshold against
probabilities, a scale and a shift): a GPU tensor's probabilities or means never travel
to the host, except ``poisson``'s rates. The checks of tensor arguments (probabilities
in [0, 1], ``std >= 0``) are PyTorch's, with its messages; on a GPU they are read at the
next read of values, as the index checks are (``backend.check_range``), instead of
making the draw wait.

Nothing here is differentiable except ``gc.normal`` with tensor ``mean``/``std``
(``mean + std * eps``, built from tensor ops, so that its gradients are PyTorch's:
1 for ``mean``, ``eps`` for ``std``). The in-place fills are recorded as writes (no
gradient reaches the old values), as PyTorch's are.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from . import _random, backend, dtypes
from .autograd.tensor_base import _wrap
from .creation import (
    C_NAMES,
    _dev,
    _finish,
    _size,
    check_integer_range,
    normal_samples,
    uniform_samples,
)
from .ops import index
from .tensor import Tensor

__all__ = ["multinomial", "normal", "bernoulli", "poisson", "normal_", "uniform_",
           "bernoulli_", "random_", "exponential_", "geometric_", "cauchy_", "log_normal_"]

_MISSING = object()


# ---- helpers ---------------------------------------------------------------------------
def _num(v) -> str:
    """A number as PyTorch's messages print it (``-1``, ``0.5``, ``1e-05``)."""
    return f"{float(v):g}"


def _scalar(v, what: str) -> float:
    if isinstance(v, Tensor):
        return float(v.item())
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
        return float(v)
    raise TypeError(f"{what} must be a number, not {type(v).__name__}")


def _tensor_arg(x, name: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    return x


def _stream(generator, x: Tensor, name: str):
    return _random.stream(generator, x.device.type, name)


def _host_to(x: Tensor, host):
    """A host array of draws on ``x``'s device."""
    return x.device.asarray(host) if x.device.type != "cpu" else host


def _fill(x: Tensor, values) -> Tensor:
    """Write ``values`` (an array) into ``x`` in place, as one recorded write."""
    index.setitem(x, Ellipsis, x.device.asarray(values, x._data.dtype))
    return x


def _check(bad, message: str) -> None:
    """Raise ``RuntimeError(message)`` if any element of the boolean array ``bad`` is
    set: now on the CPU, at the next read of values on a GPU (no wait now)."""
    backend.check_range(bad.reshape(-1).astype(np.int8), 0, 1, lambda _: RuntimeError(message))


def _floating_only(x: Tensor, kernel: str) -> None:
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{dtypes.torch_name(x.dtype)}'")


def _continuous_only(x: Tensor, distribution: str, type_name: str) -> None:
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{distribution} distribution is a continuous probability "
                           f"distribution. dtype must be a floating point but you specified "
                           f"{type_name}")


def _draw_dtype(npd):
    """The dtype draws for an ``npd`` tensor are made in (float16's in float32)."""
    return np.float64 if npd == np.float64 else np.float32


# ---- in-place fills (Tensor methods) -----------------------------------------------------
def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill with samples of N(mean, std**2) in place.

    >>> import gradcore as gc
    >>> gc.zeros(2).normal_(5.0, 0.0)
    tensor([5., 5.])
    """
    _floating_only(self, "normal_kernel_cpu")
    mean, std = _scalar(mean, "mean"), _scalar(std, "std")
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")
    rng = _stream(generator, self, "normal_")
    eps = normal_samples(rng, tuple(self.shape), _draw_dtype(self._data.dtype))
    return _fill(self, eps * std + mean)


_FLOAT_C_NAMES = {"float16": "c10::Half", "float32": "float", "float64": "double"}


def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kwargs):
    """Fill with samples of U[from, to) in place (``from`` may be given by keyword as in
    PyTorch, ``**{"from": 1}``)."""
    if "from" in kwargs:
        from_ = kwargs.pop("from")
    if kwargs:
        raise TypeError(f"uniform_() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if not self.dtype.is_floating_point:
        raise NotImplementedError(f"\"check_uniform_bounds\" not implemented for "
                                  f"'{dtypes.torch_name(self.dtype)}'")
    low, high = _scalar(from_, "from"), _scalar(to, "to")
    limit = float(np.finfo(self._data.dtype).max)
    for name, v in (("from", low), ("to", high)):
        if abs(v) > limit:
            raise RuntimeError(f"{name} is out of bounds for {_FLOAT_C_NAMES[self.dtype.name]}")
    if low > high:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={_num(low)} > to={_num(high)}")
    rng = _stream(generator, self, "uniform_")
    u = uniform_samples(rng, tuple(self.shape), _draw_dtype(self._data.dtype))
    return _fill(self, u * (high - low) + low)


def bernoulli_(self, p=0.5, *, generator=None):
    """Fill with 0/1 samples of Bernoulli(p) in place; ``p`` is a number or a tensor of
    probabilities broadcastable to this tensor's shape. Any dtype."""
    shape = tuple(self.shape)
    if isinstance(p, Tensor):
        if not p.dtype.is_floating_point:
            raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for "
                                      f"'{dtypes.torch_name(p.dtype)}'")
        pd = p.to(self.device).expand(shape)._data  # (PyTorch's expand message)
        _check(~((pd >= 0) & (pd <= 1)),
               "Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
        rng = _stream(generator, self, "bernoulli_")
        u = _host_to(self, uniform_samples(rng, shape, _draw_dtype(pd.dtype)))
        return _fill(self, u < pd)
    prob = _scalar(p, "p")
    if not 0 <= prob <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_num(prob)}")
    rng = _stream(generator, self, "bernoulli_")
    return _fill(self, uniform_samples(rng, shape, np.float64) < prob)


def _int_or_none(v, what):
    if v is None:
        return None
    if isinstance(v, Tensor) and v.ndim == 0 and v.dtype.category == 1:
        v = v.item()
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"random_(): argument '{what}' must be int, not {type(v).__name__}")
    v = int(v)
    if not -(1 << 63) <= v < (1 << 63):
        raise ValueError("Overflow when unpacking long long")
    return v


def random_(self, *args, generator=None, **kwargs):
    """Fill with integers drawn uniformly from ``[from, to - 1]`` in place:
    ``random_()`` (from 0 to the dtype's largest value; ``2**mantissa`` for floats, so that
    every value is exact), ``random_(to)``, ``random_(from, to)`` (``to=None``: up to the
    dtype's largest value)."""
    frm, to = kwargs.pop("from", 0), kwargs.pop("to", _MISSING)
    if kwargs:
        raise TypeError(f"random_() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if len(args) > 2:
        raise TypeError(f"random_() takes at most 2 positional arguments ({len(args)} given)")
    if len(args) == 2:
        frm, to = args
    elif len(args) == 1:
        if to is _MISSING:
            to = args[0]
            if to is None:
                raise TypeError("random_(): argument 'to' must be int, not NoneType")
        else:
            frm = args[0]
    to = None if to is _MISSING else to
    frm, to = _int_or_none(frm, "from"), _int_or_none(to, "to")
    dt = self.dtype
    if dt.is_floating_point:
        digits = np.finfo(dt.np).nmant + 1
        top = 1 << digits
    elif dt.np == np.bool_:
        top = 1
    else:
        top = int(np.iinfo(dt.np).max)
    if to is None:
        last = top
    else:
        if frm >= to:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                               f"from={frm} >= to={to}")
        last = to - 1
    if dt.is_floating_point:
        if to is not None and (last > top or frm < -top):
            warnings.warn(f"to - 1 is out of bounds [-(2^{digits}), 2^{digits}]. Due to "
                          f"precision limitations {_FLOAT_C_NAMES[dt.name]} can support discrete "
                          f"uniform distribution only within this range. This warning will "
                          f"become an error in version 1.7 release, please fix the code in "
                          f"advance", UserWarning, stacklevel=2)
    else:
        check_integer_range(frm, last, dt)
    rng = _stream(generator, self, "random_")
    return _fill(self, rng.integers(frm, last, size=tuple(self.shape), dtype=np.int64,
                                    endpoint=True))


def exponential_(self, lambd=1.0, *, generator=None):
    """Fill with samples of the exponential distribution of rate ``lambd`` in place."""
    _continuous_only(self, "Exponential", dtypes.torch_name(self.dtype))
    rate = _scalar(lambd, "lambd")
    if not rate > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_num(rate)}")
    rng = _stream(generator, self, "exponential_")
    e = rng.standard_exponential(tuple(self.shape), dtype=_draw_dtype(self._data.dtype))
    return _fill(self, e / rate)


def geometric_(self, p, *, generator=None):
    """Fill with samples of the geometric distribution in place: the number of Bernoulli(p)
    trials up to and including the first success (1, 2, ...)."""
    if self.dtype.np == np.bool_:
        raise NotImplementedError("\"geometric_cpu\" not implemented for 'Bool'")
    prob = _scalar(p, "p")
    if not 0 < prob < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_num(prob)}")
    rng = _stream(generator, self, "geometric_")
    return _fill(self, rng.geometric(prob, size=tuple(self.shape)))


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill with samples of the Cauchy distribution (``median``, scale ``sigma``) in place."""
    _continuous_only(self, "Cauchy", C_NAMES.get(self.dtype.name, self.dtype.name))
    med, scale = _scalar(median, "median"), _scalar(sigma, "sigma")
    if not scale > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_num(scale)}")
    rng = _stream(generator, self, "cauchy_")
    return _fill(self, rng.standard_cauchy(tuple(self.shape)) * scale + med)


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill with samples of exp(N(mean, std**2)) in place."""
    _floating_only(self, "log_normal_cpu")
    mu, sd = _scalar(mean, "mean"), _scalar(std, "std")
    if not sd > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_num(sd)}")
    rng = _stream(generator, self, "log_normal_")
    return _fill(self, rng.lognormal(mu, sd, tuple(self.shape)))


# ---- samples of a tensor's distributions --------------------------------------------------
def bernoulli(input, p=None, *, generator=None) -> Tensor:
    """0/1 samples of Bernoulli(``input``) (probabilities, any floating dtype; the result
    has ``input``'s dtype), or of Bernoulli(``p``) in ``input``'s shape when ``p`` is a
    number.

    >>> import gradcore as gc
    >>> gc.bernoulli(gc.tensor([0.0, 1.0, 1.0]))
    tensor([0., 1., 1.])
    """
    _tensor_arg(input, "bernoulli")
    if p is None:
        _floating_only(input, "bernoulli_tensor_cpu_p_")
    out = _wrap(input.device.math.empty(tuple(input.shape), dtype=input._data.dtype))
    return bernoulli_(out, input.detach() if p is None else p, generator=generator)


def multinomial(input, num_samples, replacement=False, *, generator=None) -> Tensor:
    """Indices (int64) drawn from the categorical distributions given by the rows of
    ``input`` (1-D: one distribution, 2-D: one per row; non-negative weights, not
    necessarily summing to one): ``num_samples`` per row, without replacement unless
    ``replacement=True``.

    >>> import gradcore as gc
    >>> gc.multinomial(gc.tensor([0.0, 1.0, 0.0]), 1)
    tensor([1])
    """
    _tensor_arg(input, "multinomial")
    if isinstance(num_samples, (bool, np.bool_)) or not isinstance(num_samples,
                                                                   (int, np.integer)):
        raise TypeError(f"multinomial(): argument 'num_samples' (position 2) must be int, not "
                        f"{type(num_samples).__name__}")
    n = int(num_samples)
    probs = input._data
    if probs.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{dtypes.torch_name(input.dtype)}")
    if n <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    categories = probs.shape[-1]
    if not replacement and n > categories:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    if categories > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    m = input.device.math
    n_rows = 1 if probs.ndim == 1 else probs.shape[0]
    out_shape = (n,) if probs.ndim == 1 else (n_rows, n)
    if n_rows == 0:
        return _wrap(m.zeros(out_shape, dtype=np.int64))
    if categories == 0:
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rows = probs.reshape(n_rows, categories).astype(np.float64)
    rng = _stream(generator, input, "multinomial")
    if not replacement or n == 1:
        # PyTorch's algorithm: the n largest of p / q, q ~ Exp(1) (an exponential race)
        _check(~((rows < math.inf) & (rows >= 0)),
               "probability tensor contains either `inf`, `nan` or element < 0")
        _check(rows.sum(axis=1) == 0,
               "invalid multinomial distribution (sum of probabilities <= 0)")
        q = _host_to(input, rng.standard_exponential(rows.shape))
        keys = rows / q
        if n == 1:
            picked = m.argmax(keys, axis=1)[:, None]
        else:
            picked = m.argsort(-keys, axis=1, kind="stable")[:, :n]
    else:
        _check(~(rows >= 0),
               "invalid multinomial distribution (encountering probability entry < 0)")
        _check(rows == math.inf,
               "invalid multinomial distribution (encountering probability entry = infinity "
               "or NaN)")
        _check(~(rows.sum(axis=1) > 0),
               "invalid multinomial distribution (sum of probabilities <= 0)")
        cdf = m.cumsum(rows, axis=1)
        cdf = cdf / cdf[:, -1:]
        u = _host_to(input, rng.random((rows.shape[0], n)))
        # one search for all rows: row r's cdf and draws are shifted into [r, r + 1)
        shift = m.arange(rows.shape[0], dtype=np.float64)[:, None]
        found = m.searchsorted((cdf + shift).reshape(-1), (u + shift).reshape(-1),
                               side="right").reshape(u.shape)
        picked = found - (shift * categories).astype(np.int64)
        # a draw rounded up to its row's end takes the row's last category of weight > 0
        last = categories - 1 - m.argmax(rows[:, ::-1] > 0, axis=1)[:, None]
        picked = m.where(picked >= categories, last, picked)
    return _wrap(picked.astype(np.int64, copy=False).reshape(out_shape))


def _broadcast_shape(a: tuple, b: tuple) -> tuple:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        for k in range(1, min(len(a), len(b)) + 1):
            if a[-k] != b[-k] and 1 not in (a[-k], b[-k]):
                raise RuntimeError(f"The size of tensor a ({a[-k]}) must match the size of "
                                   f"tensor b ({b[-k]}) at non-singleton dimension "
                                   f"{max(len(a), len(b)) - k}") from None
        raise


def normal(mean, std=_MISSING, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False) -> Tensor:
    """Samples of N(mean, std**2), as ``torch.normal``: ``normal(mean_tensor, std=1.0)``,
    ``normal(mean, std_tensor)``, ``normal(mean_tensor, std_tensor)`` (broadcast; the
    result has the mean's dtype, else the std's) or ``normal(mean, std, size)`` with two
    numbers (float32 unless ``dtype`` says otherwise). Differentiable with respect to
    tensor ``mean`` and ``std``, as PyTorch's.

    >>> import gradcore as gc
    >>> gc.normal(2.0, 0.0, size=(2,))
    tensor([2., 2.])
    """
    mean_t, std_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not (mean_t or std_t):
        if std is _MISSING or size is None:
            raise TypeError("normal(): with a float mean and std, give the size too: "
                            "normal(mean, std, size) (or pass a tensor mean or std)")
        shape = _size((size,), "normal")
        dt = dtypes.to_dtype(dtype) if dtype is not None else dtypes.default_float
        if not dt.is_floating_point:
            raise NotImplementedError(f"\"normal_kernel_cpu\" not implemented for "
                                      f"'{dtypes.torch_name(dt)}'")
        mu, sd = _scalar(mean, "mean"), _scalar(std, "std")
        if sd < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(sd)}")
        dev = _dev(device)
        rng = _random.stream(generator, dev.type, "normal")
        host = (normal_samples(rng, shape, _draw_dtype(dt.np)) * sd + mu).astype(dt.np)
        return _finish(dev.asarray(host) if dev.type != "cpu" else host, requires_grad)
    if size is not None or dtype is not None or device is not None or requires_grad:
        raise TypeError("normal(): size, dtype, device and requires_grad are taken only with "
                        "a float mean and std; a tensor mean or std gives the output's shape, "
                        "dtype and device")
    if std is _MISSING:
        std = 1.0
    ref = mean if mean_t else std
    _floating_only(ref, "normal_kernel_cpu")
    dt = ref.dtype
    if std_t:
        if std.dtype != dt:
            std = std.to(dtype=dt)
        _check(~(std._data >= 0), "normal expects all elements of std >= 0.0")
    else:
        sd = _scalar(std, "std")
        if sd < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(sd)}")
    if not mean_t:
        mean = _scalar(mean, "mean")
    shape = _broadcast_shape(tuple(mean.shape) if mean_t else (),
                             tuple(std.shape) if std_t else ())
    rng = _stream(generator, ref, "normal")
    eps = _wrap(_host_to(ref, normal_samples(rng, shape, _draw_dtype(dt.np)).astype(dt.np)))
    return std * eps + mean


def poisson(input, generator=None) -> Tensor:
    """Samples of Poisson(rate) for each rate in ``input`` (a floating tensor; the result
    has its dtype). On a GPU the rates are read to the host (the draws are made there).

    >>> import gradcore as gc
    >>> gc.poisson(gc.tensor([0.0, 0.0]))
    tensor([0., 0.])
    """
    _tensor_arg(input, "poisson")
    _floating_only(input, "poisson_cpu")
    rates = np.asarray(backend.to_host(input._data), dtype=np.float64)
    if (rates < 0).any():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    rng = _stream(generator, input, "poisson")
    counts = rng.poisson(rates).astype(input._data.dtype)
    return _wrap(_host_to(input, counts))


# ---- binding: Tensor methods (normal_ and uniform_ replace the ops' first versions, which
# took NumPy generators only) ----------
def _tensor_bernoulli(self, p=None, *, generator=None):
    """``gc.bernoulli(self, p, generator=...)``."""
    return bernoulli(self, p, generator=generator)


def _tensor_multinomial(self, num_samples, replacement=False, *, generator=None):
    """``gc.multinomial(self, ...)``."""
    return multinomial(self, num_samples, replacement, generator=generator)


for _name, _fn in (("normal_", normal_), ("uniform_", uniform_), ("bernoulli_", bernoulli_),
                   ("random_", random_), ("exponential_", exponential_),
                   ("geometric_", geometric_), ("cauchy_", cauchy_),
                   ("log_normal_", log_normal_), ("bernoulli", _tensor_bernoulli),
                   ("multinomial", _tensor_multinomial)):
    _fn.__qualname__ = f"Tensor.{_name}"
    setattr(Tensor, _name, _fn)
del _name, _fn
