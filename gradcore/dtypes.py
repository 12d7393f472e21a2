"""Dtypes and PyTorch's type promotion.

``gc.float32`` and friends are :class:`DType` objects that compare equal to the matching
NumPy dtype.  :func:`result_type` implements PyTorch's promotion, which differs from
NumPy 2 in three places: ``int / int`` is float32, 0-d tensors and Python scalars do
not widen a tensor within its category, and Python floats meeting integer tensors
give the default float dtype (float32).
"""

from __future__ import annotations

import numpy as np

_pyfloat, _pyint, _pybool = float, int, bool

__all__ = ["DType", "float16", "float32", "float64", "int32", "int64", "bool_",
           "to_dtype", "result_type", "is_floating", "default_float"]


class DType:
    """A tensor element type (``gc.float32``, ``gc.int64``, ...); ``repr`` gives
    ``gradcore.float32``. Equal to the matching NumPy dtype (``gc.float32 ==
    np.float32``), which gradcore accepts wherever a dtype is asked for.

    Attributes:
        name: ``"float32"``.
        itemsize: the size of one element in bytes.
        is_floating_point: True for float16, float32 and float64.
        np: the NumPy dtype that holds the elements.
    """

    __slots__ = ("name", "np", "category", "is_floating_point", "itemsize")

    def __init__(self, name: str, np_dtype, category: int):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.category = category  # 0 bool, 1 integer, 2 floating
        self.is_floating_point = category == 2
        self.itemsize = self.np.itemsize

    def __repr__(self):
        return f"gradcore.{self.name}"

    __str__ = __repr__

    def __eq__(self, other):
        if isinstance(other, DType):
            return self is other
        try:
            return self.np == np.dtype(other)
        except TypeError:
            return False

    def __hash__(self):
        return hash(self.np)

    def __reduce__(self):
        return (to_dtype, (self.name,))


float16 = DType("float16", np.float16, 2)
float32 = DType("float32", np.float32, 2)
float64 = DType("float64", np.float64, 2)
int8 = DType("int8", np.int8, 1)
uint8 = DType("uint8", np.uint8, 1)
int16 = DType("int16", np.int16, 1)
int32 = DType("int32", np.int32, 1)
int64 = DType("int64", np.int64, 1)
bool_ = DType("bool", np.bool_, 0)

# PyTorch's names of the scalar types, for the messages that quote them ("... for 'Bool'")
_TORCH_NAMES = {"float16": "Half", "float32": "Float", "float64": "Double", "int8": "Char",
                "uint8": "Byte", "int16": "Short", "int32": "Int", "int64": "Long",
                "bool": "Bool"}


def torch_name(dt) -> str:
    """PyTorch's name of a dtype's scalar type: ``Float``, ``Long``, ``Bool``..."""
    return _TORCH_NAMES.get(to_dtype(dt).name, str(dt))


_ALL = (float16, float32, float64, int8, uint8, int16, int32, int64, bool_)
_BY_NP: dict[np.dtype, DType] = {d.np: d for d in _ALL}
_BY_NAME: dict[str, DType] = {d.name: d for d in _ALL}
_BY_NAME.update(half=float16, float=float32, double=float64, long=int64, int=int32,
                bool_=bool_)

default_float = float32
default_int = int64


class _Missing:
    """A dtype PyTorch has and gradcore cannot hold (NumPy has no such type): its name
    exists, so that programs that only name it (``{"bfloat16": torch.bfloat16, ...}``)
    run; making a tensor of it raises, saying so."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"gradcore.{self.name}"

    is_floating_point = True


bfloat16 = _Missing("bfloat16")


def to_dtype(spec) -> DType:
    """Accept a DType, a NumPy dtype or type, a name, or Python's float/int/bool."""
    if isinstance(spec, DType):
        return spec
    if isinstance(spec, _Missing) or spec in ("bfloat16", "torch.bfloat16",
                                              "gradcore.bfloat16"):
        raise TypeError("gradcore has no bfloat16 (NumPy has no such type): use float16 "
                        "or float32")
    if spec is None:
        raise TypeError("dtype must not be None here")
    if spec is _pyfloat:
        return default_float
    if spec is _pyint:
        return default_int
    if spec is _pybool:
        return bool_
    if isinstance(spec, str):
        d = _BY_NAME.get(spec.removeprefix("gradcore.").removeprefix("torch."))
        if d is not None:
            return d
    try:
        npd = np.dtype(spec)
    except TypeError:
        npd = None
    if npd is not None and npd in _BY_NP:
        return _BY_NP[npd]
    name = getattr(spec, "name", None) or str(spec)
    raise TypeError(f"unsupported dtype {name}: gradcore supports "
                    + ", ".join(d.name for d in _ALL))


def from_numpy_dtype(npd) -> DType:
    d = _BY_NP.get(npd)
    if d is None:
        raise TypeError(f"unsupported dtype {npd}: gradcore supports "
                        + ", ".join(x.name for x in _ALL))
    return d


def is_floating(d: DType) -> bool:
    return d.category == 2


def _promote2(a: DType, b: DType) -> DType:
    if a is b:
        return a
    if a.category != b.category:
        return a if a.category > b.category else b
    return _BY_NP[np.promote_types(a.np, b.np)]


_promote_cache: dict[tuple[DType, DType], DType] = {}


def promote_types(a: DType, b: DType) -> DType:
    """PyTorch's promotion of two tensor dtypes (a float beats any integer)."""
    key = (a, b)
    r = _promote_cache.get(key)
    if r is None:
        r = _promote_cache[key] = _promote2(a, b)
    return r


def scalar_category(x) -> int:
    if isinstance(x, _pybool) or isinstance(x, np.bool_):
        return 0
    if isinstance(x, (_pyint, np.integer)):
        return 1
    if isinstance(x, (_pyfloat, np.floating)):
        return 2
    raise TypeError(f"unsupported scalar type {type(x).__name__}")


_DEFAULT_FOR_CATEGORY = {0: bool_, 1: int64, 2: float32}


def result_type(dims: list[DType], zero_dims: list[DType], scalar_cats: list[int]) -> DType:
    """PyTorch's result dtype from operands grouped by priority.

    ``dims``: dtypes of tensors with ndim > 0; ``zero_dims``: dtypes of 0-d tensors;
    ``scalar_cats``: categories of Python scalars.  A lower group only matters when
    its category is higher than the result so far.
    """
    state = None
    for d in dims:
        state = d if state is None else promote_types(state, d)
    zstate = None
    for d in zero_dims:
        zstate = d if zstate is None else promote_types(zstate, d)
    if state is None:
        state = zstate
    elif zstate is not None and zstate.category > state.category:
        state = zstate
    if scalar_cats:
        cat = max(scalar_cats)
        if state is None or cat > state.category:
            state = _DEFAULT_FOR_CATEGORY[cat] if cat < 2 else default_float
    return state


# ---- the default floating dtype, and PyTorch's dtype queries ------------------------------
def set_default_dtype(d) -> None:
    """Make ``d`` (``float32``, ``float64`` or ``float16``) the dtype of new floating
    tensors: ``gc.tensor(1.5)``, ``zeros``, ``randn``, layers' parameters, and the
    result of integer-with-float arithmetic (PyTorch's ``torch.set_default_dtype``).

    >>> import gradcore as gc
    >>> gc.set_default_dtype(gc.float64); gc.tensor([1.5]).dtype
    gradcore.float64
    >>> gc.set_default_dtype(gc.float32); gc.get_default_dtype()
    gradcore.float32
    """
    global default_float
    dt = to_dtype(d)
    if not dt.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, "
                        f"got {dt!r}")
    default_float = dt


def get_default_dtype() -> DType:
    """The dtype of new floating tensors (``float32`` unless :func:`set_default_dtype`)."""
    return default_float


class finfo:
    """Machine limits of a floating dtype, PyTorch's ``torch.finfo``: ``bits``, ``eps``,
    ``max``, ``min``, ``tiny`` (= ``smallest_normal``), ``resolution``, ``dtype``.

    >>> import gradcore as gc
    >>> gc.finfo(gc.float32).eps == 2.0 ** -23, gc.finfo().bits
    (True, 32)
    """

    def __init__(self, type=None):  # noqa: A002  (PyTorch's argument name)
        dt = default_float if type is None else to_dtype(type)
        if not dt.is_floating_point:
            raise TypeError(f"torch.finfo() requires a floating point input type. Use "
                            f"torch.iinfo to handle '{torch_name(dt)}'")
        info = np.finfo(dt.np)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)
        self.dtype = dt.name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype, PyTorch's ``torch.iinfo``: ``bits``, ``max``, ``min``,
    ``dtype``."""

    def __init__(self, type):  # noqa: A002
        dt = to_dtype(type)
        if dt.category != 1:
            raise TypeError(f"torch.iinfo() requires an integer input type. Use torch.finfo "
                            f"to handle '{torch_name(dt)}'")
        info = np.iinfo(dt.np)
        self.bits, self.max, self.min, self.dtype = int(info.bits), int(info.max), \
            int(info.min), dt.name

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def can_cast(from_, to) -> bool:
    """Whether PyTorch's casting rules allow ``from_`` to ``to`` (no float to integer, no
    non-bool to bool; ``torch.can_cast``)."""
    a, b = to_dtype(from_), to_dtype(to)
    return a.category <= b.category


class layout:  # noqa: N801  (PyTorch's class name)
    """The memory layout of a tensor's elements (PyTorch's ``torch.layout``). gradcore
    has one, ``gc.strided``: elements at strides through one block of memory (PyTorch
    also has sparse layouts)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return f"gradcore.{self.name}"

    def __reduce__(self):
        return (_layout_named, (self.name,))


def _layout_named(name: str) -> layout:
    return strided


strided = layout("strided")  # every tensor's layout
