"""Every name of API.md's sections exists where PyTorch has it (method and/or function),
and the reductions take both PyTorch's and NumPy's spellings of their arguments."""

import numpy as np
import pytest

import gradcore as gc

from conftest import host

FUNCTIONS = """tensor from_numpy zeros ones full empty arange linspace eye randn rand randint
zeros_like ones_like full_like randn_like manual_seed from_dlpack matmul mm bmm dot outer
exp log log1p expm1 sqrt rsqrt square abs sign sin cos tanh sigmoid relu clamp maximum
minimum where pow reciprocal sum mean prod var std max min amax amin argmax argmin
logsumexp norm cumsum cumprod reshape flatten unflatten squeeze unsqueeze transpose permute swapaxes
broadcast_to cat stack split chunk gather scatter_add index_select masked_fill isnan
isfinite any all no_grad enable_grad set_grad_enabled is_grad_enabled get_default_device
set_default_device device float16 float32 float64 int32 int64 bool softmax log_softmax erf
nn optim save load""".split()

METHODS = """numel size requires_grad_ numpy item tolist detach clone to cpu cuda float double
half long int bool type_as backward retain_grad register_hook matmul mm bmm dot outer exp
log log1p expm1 sqrt rsqrt square abs sign sin cos tanh sigmoid relu clamp maximum minimum
pow reciprocal sum mean prod var std max min amax amin argmax argmin logsumexp norm
cumsum cumprod reshape view flatten unflatten squeeze unsqueeze transpose permute swapaxes
broadcast_to expand repeat split chunk gather scatter_add index_select masked_fill isnan
isfinite any all add_ sub_ mul_ div_ zero_ fill_ copy_ __iadd__ __isub__ __imul__ __itruediv__
__setitem__ __getitem__ __matmul__ __floordiv__ __pow__ __rpow__ __neg__ softmax log_softmax
erf""".split()


@pytest.mark.parametrize("name", FUNCTIONS)
def test_function_exists(name):
    assert hasattr(gc, name), f"gc.{name} is missing"


@pytest.mark.parametrize("name", METHODS)
def test_method_exists(name):
    assert callable(getattr(gc.Tensor, name, None)), f"Tensor.{name} is missing"


def test_attributes(device):
    t = gc.zeros(2, 3, requires_grad=True)
    assert t.shape == (2, 3) and t.ndim == 2 and t.numel() == 6 and t.size(1) == 3
    assert t.dtype == gc.float32 and t.is_leaf and t.grad is None and t.grad_fn is None
    assert t.T.shape == (3, 2) and t.mT.shape == (3, 2)
    assert gc.zeros((2, 3)).shape == gc.zeros(2, 3).shape == (2, 3)


@pytest.mark.parametrize("name", ["sum", "mean", "var", "std", "amax", "amin", "logsumexp",
                                  "norm", "any", "all", "prod", "argmax", "argmin"])
def test_reductions_take_dim_or_axis_and_keepdim_or_keepdims(name, device):
    x = gc.tensor(np.arange(1.0, 13.0).reshape(3, 4))
    fn = getattr(x, name)
    a = fn(dim=1, keepdim=True)
    b = fn(axis=1, keepdims=True)
    a = a.values if hasattr(a, "values") else a
    b = b.values if hasattr(b, "values") else b
    assert a.shape == b.shape == (3, 1)
    np.testing.assert_array_equal(host(a), host(b))


def test_max_and_min_with_dim_return_values_and_indices(device):
    x = gc.tensor([[1.0, 5.0, 5.0], [7.0, 2.0, 0.0]])
    values, indices = x.max(dim=1)
    np.testing.assert_array_equal(host(values), [5.0, 7.0])
    np.testing.assert_array_equal(host(indices), [1, 0])
    assert x.min(1, keepdims=True).values.shape == (2, 1)


def test_a_program_aliasing_gradcore_as_torch_imports_its_submodules():
    """sys.modules["torch"] = gradcore, then `from torch.utils.data import DataLoader`,
    `import torch.nn.functional as F`: the same modules (one Tensor class), not second
    copies loaded under torch.* names."""
    import subprocess
    import sys
    code = (
        "import sys, gradcore\n"
        "sys.modules['torch'] = gradcore\n"
        "from torch.utils.data import DataLoader, TensorDataset\n"
        "import torch.nn.functional as F\n"
        "import torch.optim.lr_scheduler as S\n"
        "import torch\n"
        "batch = next(iter(DataLoader(TensorDataset(torch.ones(4, 2)), batch_size=2)))\n"
        "assert type(batch[0]) is gradcore.Tensor\n"
        "assert F is gradcore.nn.functional and S is gradcore.optim.lr_scheduler\n"
        "assert sys.modules['torch.utils.data'] is gradcore.utils.data\n"
        "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
