"""gradcore: PyTorch-style autograd over NumPy (CPU) and CuPy (NVIDIA GPUs).

>>> import gradcore as gc
>>> x = gc.tensor([1., 2., 3.], requires_grad=True)
>>> y = gc.tensor([4.], requires_grad=True)
>>> (x * y).sum().backward()
>>> y.grad
tensor([6.])
"""

import builtins as _builtins
import functools as _functools
import math as _math
import warnings as _warnings

from . import (
    _dynamo,
    amp,
    autograd,
    backend,
    backends,
    compiler,
    cpu,
    cuda,
    distributed,
    dtypes,
    fft,
    func,
    jit,
    kernels,
    library,
    linalg,
    mps,
    multiprocessing,
    nn,
    onnx,
    optim,
    profiler,
    random,
    sampling,
    serialization,
    signal,
    special,
    testing,
    utils,
    version,
    xpu,
)
from . import tensor as _tensor_module
from ._functional import INPLACE_FUNCTIONS as _INPLACE_FUNCTIONS
from ._functional import (
    alpha_dropout,
    alpha_dropout_,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    dropout,
    dropout_,
    embedding,
    empty_strided,
    feature_alpha_dropout,
    feature_alpha_dropout_,
    feature_dropout,
    feature_dropout_,
    get_device,
    hinge_embedding_loss,
    is_floating_point,
    kl_div,
    margin_ranking_loss,
    max_pool1d_with_indices,
    native_batch_norm,
    native_channel_shuffle,
    native_dropout,
    native_group_norm,
    native_layer_norm,
    poisson_nll_loss,
    rrelu,
    rrelu_,
    threshold,
    threshold_,
    triplet_margin_loss,
)
from ._settings import (
    are_deterministic_algorithms_enabled,
    get_deterministic_debug_mode,
    get_float32_matmul_precision,
    get_num_interop_threads,
    get_num_threads,
    is_anomaly_enabled,
    is_deterministic_algorithms_warn_only_enabled,
    is_warn_always_enabled,
    set_anomaly_enabled,
    set_deterministic_debug_mode,
    set_float32_matmul_precision,
    set_flush_denormal,
    set_num_interop_threads,
    set_num_threads,
    set_printoptions,
    set_warn_always,
    typename,
    use_deterministic_algorithms,
)
from ._size import Size
from .amp import (
    autocast,
    get_autocast_cpu_dtype,
    get_autocast_dtype,
    get_autocast_gpu_dtype,
    is_autocast_cpu_enabled,
    is_autocast_enabled,
)
from .autograd import (
    enable_grad,
    inference_mode,
    is_anomaly_check_nan_enabled,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from .autograd import grad_mode as _grad_mode
from .backend import Device, OutOfMemoryError, get_default_device, set_default_device
from .backend import Device as device  # (PyTorch's torch.device: the class)
from .capture import compile
from .creation import (
    arange,
    as_tensor,
    asarray,
    bartlett_window,
    blackman_window,
    empty,
    empty_like,
    empty_permuted,
    eye,
    from_dlpack,
    from_numpy,
    frombuffer,
    full,
    full_like,
    hamming_window,
    hann_window,
    kaiser_window,
    linspace,
    logspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    range,
    scalar_tensor,
    tensor,
    zeros,
    zeros_like,
)
from .dtypes import (
    DType,
    bfloat16,
    bool_,
    can_cast,
    finfo,
    float16,
    float32,
    float64,
    get_default_dtype,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    layout,
    set_default_dtype,
    strided,
    uint8,
)
from .func import vmap
from .io import load, save
from .nn.functional import (  # (torch.<name> too)
    bilinear,
    channel_shuffle,
    cosine_similarity,
    pairwise_distance,
    pdist,
    pixel_shuffle,
    pixel_unshuffle,
    rms_norm,
)
from .ops import _export
from .profile import profile
from .random import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)
from .sampling import bernoulli, multinomial, normal, poisson
from .tensor import (
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    Parameter,
    ShortTensor,
    Tensor,
)

# PyTorch's torch.<name> functions among the ops: each is declared where it is written
# (`@export(torch=...)` above its `def` in gradcore/ops/; `grep "def tanh"` finds it).
globals().update(_export.FUNCTIONS)
del _export
globals().update(_INPLACE_FUNCTIONS)  # torch.relu_(x), torch.clamp_(x, 0), ...: x.<name>_()

bool = bool_  # noqa: A001  (gc.bool, as torch.bool)
dtype = DType  # (torch.dtype, the class of the dtypes: isinstance(x, gc.dtype))
half, double, long, short = float16, float64, int64, int16
pi = _math.pi
"""The number pi (PyTorch's ``torch.pi``, ``math.pi``)."""
e = _math.e
"""Euler's number (PyTorch's ``torch.e``, ``math.e``)."""
inf = _math.inf
"""Positive infinity, a Python float (PyTorch's ``torch.inf``)."""
nan = _math.nan
"""Not a number, a Python float (PyTorch's ``torch.nan``)."""
newaxis = None
"""``None``: ``x[:, gc.newaxis]`` adds a dimension (PyTorch's ``torch.newaxis``)."""
float = float32  # noqa: A001
int = int32  # noqa: A001

from .version import __version__  # noqa: E402


class _Accelerator:
    """``gc.accelerator``: PyTorch's device-generic queries (CUDA is gradcore's one
    accelerator)."""

    @staticmethod
    def is_available() -> "builtins.bool":  # noqa: F821
        """Whether a GPU can be used (``gc.cuda.is_available()``)."""
        return backend.cuda_is_available()

    @staticmethod
    def current_accelerator(check_available: "builtins.bool" = False):  # noqa: F821
        """``device(type='cuda')`` where a GPU can be used, else None."""
        return device("cuda") if backend.cuda_is_available() else None

    @staticmethod
    def device_count() -> "builtins.int":  # noqa: F821
        """The number of usable GPUs (0 without one)."""
        return backend.cuda_device_count()

    @staticmethod
    def current_device_index() -> "builtins.int":  # noqa: F821
        """The index of the current GPU."""
        return backend.cuda_current_device()

    @staticmethod
    def synchronize(device=None) -> None:
        """Wait for the work queued on the GPU; nothing to wait for without one."""
        if backend.cuda_is_available():
            backend.cuda_synchronize(device)


accelerator = _Accelerator()


def is_inference_mode_enabled() -> "builtins.bool":  # noqa: F821
    """True inside ``inference_mode()`` or ``no_grad`` (gradcore has no inference
    tensors: both turn recording off)."""
    return not _grad_mode.state.enabled


def promote_types(type1, type2):
    """The dtype two tensors of these dtypes combine to (``torch.promote_types``)."""
    return dtypes.promote_types(dtypes.to_dtype(type1), dtypes.to_dtype(type2))


def result_type(tensor1, tensor2):
    """The dtype of an arithmetic op on these operands, tensors or Python numbers, by
    PyTorch's rules (``torch.result_type``)."""
    dims, zero, cats = [], [], []
    for x in (tensor1, tensor2):
        if isinstance(x, Tensor):
            (dims if x.ndim else zero).append(x.dtype)
        else:
            cats.append(dtypes.scalar_category(x))
    return dtypes.result_type(dims, zero, cats)


def is_tensor(obj) -> "builtins.bool":  # noqa: F821
    """Whether ``obj`` is a gradcore tensor (a ``Parameter`` is one)."""
    return isinstance(obj, Tensor)


def is_storage(obj) -> "builtins.bool":  # noqa: F821
    """Whether ``obj`` is a storage: what ``Tensor.untyped_storage()`` and
    ``Tensor.storage()`` return (a tensor is not one)."""
    return isinstance(obj, _tensor_module._UntypedStorage)


def set_default_tensor_type(t) -> None:
    """PyTorch's deprecated ``torch.set_default_tensor_type``: ``'torch.FloatTensor'``,
    ``'torch.DoubleTensor'``, ``'torch.HalfTensor'`` or their classes
    (``gc.DoubleTensor``) set the default floating dtype (:func:`set_default_dtype`);
    the ``'torch.cuda.*'`` names also make CUDA the default device
    (:func:`set_default_device`). Warns, as PyTorch does."""
    if isinstance(t, str):
        name = t.rsplit(".", 1)[-1]
        cuda = t.startswith(("torch.cuda.", "gradcore.cuda."))
        if not t.startswith(("torch.", "gradcore.")) or \
                name not in _tensor_module._TYPE_DTYPES:
            raise TypeError(f"invalid type: '{t}'")
    elif isinstance(t, _tensor_module._TensorType):
        name, cuda = t.__name__, t.is_cuda  # (gc.cuda.FloatTensor: CUDA too)
    else:
        raise TypeError("invalid type object: only floating-point types are supported as the "
                        "default type")
    dt = dtypes.to_dtype(_tensor_module._TYPE_DTYPES[name])
    if not dt.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    if cuda and not backend.cuda_is_available():
        raise TypeError(f"type torch.cuda.{name} not available. Torch not compiled with "
                        "CUDA enabled.")
    _warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please "
                   "use torch.set_default_dtype() and torch.set_default_device() as "
                   "alternatives.", UserWarning, stacklevel=2)
    set_default_dtype(dt)
    if cuda:
        set_default_device("cuda")


def numel(t) -> "builtins.int":  # noqa: F821
    """The number of elements of ``t`` (``t.numel()``)."""
    return t.numel()


def clone(t):
    """A copy of ``t`` with its own memory, differentiable (``t.clone()``)."""
    return t.clone()


def detach(t):
    """``t``'s data cut from the graph, sharing its memory (``t.detach()``)."""
    return t.detach()


def index_put_(input, indices, values, accumulate=False):  # noqa: A002
    """``input.index_put_(indices, values, accumulate)``: ``values`` written (or added)
    into ``input`` at ``indices``, in place."""
    return input.index_put_(indices, values, accumulate)


def addmv_(input, mat, vec, *, beta=1, alpha=1):  # noqa: A002
    """``input.addmv_(mat, vec)``: ``beta * input + alpha * (mat @ vec)`` into ``input``."""
    return input.addmv_(mat, vec, beta=beta, alpha=alpha)


# Like PyTorch, gradcore computes inf and NaN silently: NumPy's floating-point warnings
# raised inside gradcore's own modules (1/0, inf*0, exp overflow) are not shown. User
# code calling NumPy directly keeps its warnings.
_warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"gradcore(\.|$)",
                         message=r".*(divide by zero|invalid value|overflow) encountered")


def _tensor_input(fn):
    """``fn`` refusing a first argument that is not a tensor with PyTorch's TypeError
    (``gc.reshape(ndarray, ...)`` raised NumPy's AttributeError). The check runs only
    when ``fn`` fails: a call with a tensor costs one frame. Not for the pointwise ops,
    whose temporary elision counts the references the caller's frames hold."""
    name = fn.__name__

    @_functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AttributeError:
            if not args or isinstance(args[0], Tensor):
                raise
            kind = type(args[0])
            kind = kind.__name__ if kind.__module__ == "builtins" else \
                f"{kind.__module__.split('.')[0]}.{kind.__qualname__}"
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{kind}") from None
    return call


# (the ops' own names, as PyTorch's messages say them)
for _name in ("all", "amax", "amin", "any", "argmax", "argmin", "broadcast_to", "diag",
              "diagonal", "expand", "flatten", "max", "mean", "min", "movedim", "nonzero",
              "norm", "permute", "prod", "repeat", "reshape", "squeeze", "std", "sum",
              "unbind", "unflatten", "unsqueeze", "transpose", "swapaxes", "swapdims", "var",
              "numel",
              "clone", "detach", "aminmax", "argsort", "bincount", "count_nonzero", "cross",
              "flip", "fliplr", "flipud", "histc", "index_add", "index_copy", "kthvalue",
              "masked_scatter", "masked_select", "msort", "nan_to_num", "repeat_interleave",
              "roll", "scatter", "sort", "std_mean", "take_along_dim", "topk", "trace",
              "tril", "triu", "unique", "var_mean", "scatter_reduce", "cummax", "cummin",
              "logcumsumexp"):
    globals()[_name] = _tensor_input(globals()[_name])
del _name

# (last: the distributions are written against the finished top-level namespace)
from . import distributions  # noqa: E402

# `from gradcore import *`: every public name (generated: the ops' come from their
# declarations), less the modules `random` and `multiprocessing` (they would hide
# Python's own), `utils`, `distributions` and the modules of torch's other import paths
# (`version`, `serialization`, `profiler`, the device modules `cpu`, `mps`, `xpu`), which torch's
# __all__ leaves out too (each has a reference page of its own)
__all__ = sorted(_n for _n in globals() if not _n.startswith("_") and
                 _n not in ("random", "utils", "multiprocessing", "distributions", "version",
                            "serialization", "cpu", "mps", "xpu", "profiler"))


class _TorchAlias:
    """A meta-path finder that lets a program aliasing gradcore as ``torch`` in
    ``sys.modules`` import ``torch.utils.data``, ``torch.nn.functional``, ...: while
    ``sys.modules["torch"]`` is gradcore, ``torch.X`` is gradcore's ``gradcore.X`` (the
    same module objects, so one Tensor class). Otherwise it finds nothing."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        import sys  # noqa: PLC0415  (read at each lookup)

        if not fullname.startswith("torch.") or sys.modules.get("torch") is not _self():
            return None
        import importlib  # noqa: PLC0415
        import importlib.util  # noqa: PLC0415

        real = "gradcore." + fullname[len("torch."):]
        try:
            module = importlib.import_module(real)
        except ImportError:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(module))


class _AliasLoader:
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


def _self():
    import sys  # noqa: PLC0415

    return sys.modules[__name__]


def _install_torch_alias():
    import sys  # noqa: PLC0415

    if not _builtins.any(type(f) is _TorchAlias for f in sys.meta_path):
        sys.meta_path.insert(0, _TorchAlias())


_install_torch_alias()
