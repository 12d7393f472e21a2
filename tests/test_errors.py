"""Every error case of API.md, and that each message names what was wrong: the shapes of
a broadcasting or matmul error, the dtypes and op of a dtype error, the devices of a
device error, and why CUDA cannot be used when it is asked for."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import gradcore as gc

CUDA = gc.cuda.is_available()
needs_no_cuda = pytest.mark.skipif(CUDA, reason="CUDA is usable on this machine; this error "
                                   "path needs one where it is not")
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs a usable CUDA device (CuPy and a GPU) "
                                "to put two tensors on different devices")


def _raises(exc, *fragments):
    """pytest.raises that also checks every fragment appears in the message."""
    return pytest.raises(exc, match="(?s)" + "".join(f"(?=.*{re.escape(f)})" for f in fragments))


# ---- broadcasting: both shapes ----------------------------------------------------------
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow", "maximum", "minimum",
                                "iadd_rhs"])
def test_broadcast_error_names_both_shapes(device, op):
    a, b = gc.ones(2, 3), gc.ones(4)
    with _raises(RuntimeError, "(2, 3)", "(4,)"):
        if op == "add":
            a + b
        elif op == "sub":
            a - b
        elif op == "mul":
            a * b
        elif op == "div":
            a / b
        elif op == "pow":
            a ** b
        elif op == "maximum":
            gc.maximum(a, b)
        elif op == "minimum":
            gc.minimum(a, b)
        else:
            b + a


def test_broadcast_error_with_requires_grad(device):
    a = gc.ones(2, 3, requires_grad=True)
    with _raises(RuntimeError, "(2, 3)", "(3, 2)"):
        a * gc.ones(3, 2)


def test_where_broadcast_error_names_all_shapes(device):
    with _raises(RuntimeError, "(2, 3)", "(3,)", "(4,)"):
        gc.where(gc.ones(2, 3) > 0, gc.ones(3), gc.ones(4))


@pytest.mark.parametrize("method", ["broadcast_to", "expand"])
def test_broadcast_to_error_names_both_shapes(device, method):
    with _raises(RuntimeError, "(3,)", "(2, 4)"):
        getattr(gc.ones(3), method)((2, 4))


def test_in_place_broadcast_error_names_both_shapes(device):
    with _raises(RuntimeError, "add_", "[3]", "[2, 3]"):
        gc.ones(3).add_(gc.ones(2, 3))


# ---- matmul: both shapes ---------------------------------------------------------------
@pytest.mark.parametrize("sa,sb", [((2, 3), (2, 3)), ((3,), (4,)), ((2, 3), (4,)),
                                   ((5,), (4, 2)), ((2, 2, 3), (3, 3, 2)),
                                   ((2, 4, 3), (2, 4, 3))])
def test_matmul_error_names_both_shapes(device, sa, sb):
    with _raises(RuntimeError, str(sa), str(sb)):
        gc.ones(*sa) @ gc.ones(*sb)


def test_matmul_of_0d_names_dims(device):
    with _raises(RuntimeError, "at least 1D", "0D"):
        gc.tensor(1.) @ gc.ones(2)


def test_mm_bmm_dot_errors_name_shapes(device):
    with _raises(RuntimeError, "mm", "(3,)", "(3, 2)"):
        gc.mm(gc.ones(3), gc.ones(3, 2))
    with _raises(RuntimeError, "bmm", "(2, 2, 3)", "(3, 3, 2)"):
        gc.bmm(gc.ones(2, 2, 3), gc.ones(3, 3, 2))
    with _raises(RuntimeError, "[3]", "[4]"):
        gc.dot(gc.ones(3), gc.ones(4))


def test_matmul_dtype_mismatch_names_dtypes(device):
    with _raises(RuntimeError, "gradcore.float32", "gradcore.float64"):
        gc.ones(2, 2) @ gc.ones(2, 2, dtype=gc.float64)


# ---- dtypes: the dtypes and the op ------------------------------------------------------
@pytest.mark.parametrize("dtype", [gc.int64, gc.int32, gc.bool])
def test_requires_grad_on_non_float_names_dtype(device, dtype):
    with _raises(RuntimeError, "floating point", repr(dtype)):
        gc.zeros(2, dtype=dtype, requires_grad=True)
    t = gc.zeros(2, dtype=dtype)
    with _raises(RuntimeError, "floating point", repr(dtype)):
        t.requires_grad = True
    with _raises(RuntimeError, "floating point", repr(dtype)):
        t.requires_grad_()


@pytest.mark.parametrize("values", [[1, 2], [True, False]])
def test_mean_of_non_float_names_op_and_dtype(device, values):
    t = gc.tensor(values)
    with _raises(RuntimeError, "mean", repr(t.dtype)):
        t.mean()


@pytest.mark.parametrize("op", ["var", "std"])
def test_var_std_of_int_names_dtype(device, op):
    with _raises(RuntimeError, op, "gradcore.int64"):
        getattr(gc.tensor([1, 2, 3]), op)()


@pytest.mark.parametrize("op", ["iadd", "add_", "div_", "mul_", "exp_"])
def test_in_place_result_that_cannot_be_cast_names_dtypes_and_op(device, op):
    t = gc.tensor([1, 2])
    # (PyTorch's words: "result type Float can't be cast to the desired output type Long")
    with _raises(RuntimeError, "result type Float", "output type Long", "cast", op):
        if op == "iadd":
            t += gc.tensor([0.5, 1.5])
        elif op == "add_":
            t.add_(0.5)
        elif op == "div_":
            t.div_(2)
        elif op == "mul_":
            t.mul_(gc.tensor([2.0, 3.0]))
        else:
            t.exp_()
    assert t.tolist() == [1, 2]


def test_in_place_error_names_the_op(device):
    t = gc.tensor([1, 2])
    with _raises(RuntimeError, "div_"):
        t.div_(2)


def test_index_with_float_tensor_names_dtype(device):
    with _raises(IndexError, "gradcore.float32"):
        gc.ones(3)[gc.tensor([0., 1.])]


def test_masked_fill_with_non_bool_mask_names_dtype(device):
    with _raises(RuntimeError, "masked_fill", "gradcore.int64"):
        gc.ones(2).masked_fill(gc.tensor([1, 0]), 0.)


def test_where_with_non_bool_condition_names_dtype(device):
    with _raises(RuntimeError, "where", "gradcore.float32"):
        gc.where(gc.ones(2), gc.ones(2), gc.ones(2))


def test_gather_with_float_index_names_dtype(device):
    with _raises(RuntimeError, "gather", "gradcore.float32"):
        gc.ones(2, 3).gather(1, gc.tensor([[0., 1.]]))


def test_sub_of_bool_tensors(device):
    # PyTorch's two messages: two bool operands (a Python bool counts), or one
    with _raises(RuntimeError, "two bool tensors", "logical_xor"):
        gc.tensor([True]) - gc.tensor([False])
    with _raises(RuntimeError, "two bool tensors", "logical_xor"):
        gc.tensor([True]) - True
    with _raises(RuntimeError, "with a bool tensor", "logical_not"):
        1 - gc.tensor([True])
    with _raises(RuntimeError, "with a bool tensor", "logical_not"):
        gc.ones(1) - gc.tensor([True])


def test_integer_to_negative_power(device):
    with _raises(RuntimeError, "negative integer powers"):
        gc.tensor([2]) ** -1


def test_unknown_dtype_names_it(device):
    with _raises(TypeError, "float8", "float32"):
        gc.ones(2).to(dtype="float8")


# ---- shapes of shape ops --------------------------------------------------------------
@pytest.mark.parametrize("method", ["reshape", "view"])
def test_reshape_view_invalid_shape_names_shape_and_size(device, method):
    with _raises(RuntimeError, method, "[4, 4]", "size 6", "(2, 3)"):
        getattr(gc.ones(2, 3), method)(4, 4)


def test_reshape_two_inferred_dims(device):
    with _raises(RuntimeError, "only one dimension can be inferred"):
        gc.ones(2, 3).reshape(-1, -1)


def test_view_of_non_contiguous_points_to_reshape(device):
    with _raises(RuntimeError, "(3, 2)", "(6,)", "reshape"):
        gc.ones(2, 3).T.view(6)


def test_unflatten_invalid(device):
    with _raises(RuntimeError, "unflatten", "[4, 2]", "size 6"):
        gc.ones(6).unflatten(0, (4, 2))


@pytest.mark.parametrize("op", ["sum", "mean", "squeeze", "unsqueeze", "transpose", "flatten",
                                "logsumexp", "softmax_like_amax"])
def test_dim_out_of_range_names_op_and_range(device, op):
    t = gc.ones(2, 3)
    with _raises(IndexError, "Dimension out of range", "[-2, 1]" if op != "unsqueeze"
                 else "[-3, 2]", "got 5"):
        if op == "sum":
            t.sum(dim=5)
        elif op == "mean":
            t.mean(dim=5)
        elif op == "squeeze":
            t.squeeze(5)
        elif op == "unsqueeze":
            t.unsqueeze(5)
        elif op == "transpose":
            t.transpose(0, 5)
        elif op == "flatten":
            t.flatten(0, 5)
        elif op == "logsumexp":
            t.logsumexp(5)
        else:
            t.amax(5)


def test_repeated_dims(device):
    # PyTorch's wording: "dim 0 appears multiple times in the list of dims"
    with _raises(RuntimeError, "sum", "dim 0 appears multiple times in the list of dims"):
        gc.ones(2, 3).sum(dim=(0, 0))
    with _raises(RuntimeError, "dim 1 appears multiple times"):
        gc.ones(2, 3).sum(dim=(1, -1))


def test_permute_errors(device):
    with _raises(RuntimeError, "permute", "duplicate", "[0, 0]"):
        gc.ones(2, 3).permute(0, 0)
    with _raises(RuntimeError, "permute", "input.dim() = 2", "len(dims) = 1"):
        gc.ones(2, 3).permute(0)


def test_repeat_with_too_few_dims(device):
    with _raises(RuntimeError, "repeat", "[2]", "(2, 3)"):
        gc.ones(2, 3).repeat(2)


def test_split_and_chunk_errors(device):
    with _raises(RuntimeError, "split", "sum exactly to 4", "[1, 2]"):
        gc.ones(4).split([1, 2])
    with _raises(RuntimeError, "chunk", "greater than 0"):
        gc.ones(4).chunk(0)


def test_cat_shape_mismatch_names_shapes(device):
    with _raises(RuntimeError, "cat", "(2, 3)", "(2, 2)"):
        gc.cat([gc.ones(2, 3), gc.ones(2, 2)])
    with _raises(RuntimeError, "cat", "(2, 3)", "(3,)"):
        gc.cat([gc.ones(2, 3), gc.ones(3)])
    with _raises(RuntimeError, "cat", "non-empty"):
        gc.cat([])


def test_stack_shape_mismatch_names_shapes(device):
    with _raises(RuntimeError, "stack", "(2, 3)", "(2, 2)"):
        gc.stack([gc.ones(2, 3), gc.ones(2, 2)])


@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin", "prod"])
def test_index_reductions_take_an_int_dim_only(device, op):
    with _raises(TypeError, f"{op}()", "must be int, not tuple"):
        getattr(gc.ones(2, 3), op)(dim=(0, 1))


def test_max_of_empty_needs_dim(device):
    with _raises(RuntimeError, "max()", "numel() == 0"):
        gc.zeros(0).max()


# ---- indexing -------------------------------------------------------------------------
@pytest.mark.parametrize("index,fragments", [
    (5, ["5", "(3,)"]),
    (-4, ["-4", "(3,)"]),
    ((0, 0), ["(3,)"]),
])
def test_index_out_of_range_names_index_and_shape(device, index, fragments):
    with _raises(IndexError, *fragments):
        gc.ones(3)[index]


def test_index_out_of_range_in_second_dim_and_with_tensor(device):
    with _raises(IndexError, "3", "(2, 3)"):
        gc.ones(2, 3)[:, 3]
    # an index tensor's values: on a GPU found without waiting, raised at the next read
    with _raises(IndexError, "3", "(3,)"):
        gc.ones(3)[gc.tensor([0, 3])].tolist()
    with _raises(IndexError, "-4", "(2, 3)"):
        gc.ones(2, 3)[gc.tensor([0, 1]), gc.tensor([2, -4])].sum().item()
    with _raises(IndexError, "2", "(2, 3)"):
        x = gc.zeros(2, 3)
        x[gc.tensor([2])] = 1.0
        x.tolist()
    with _raises(IndexError, "The shape of the mask [2] at index 0 does not match the "
                 "shape of the indexed tensor [3] at index 0", "(3,)"):
        gc.ones(3)[gc.tensor([True, False])]
    with _raises(IndexError, "mask [2] at index 0", "[2, 3] at index 1"):
        gc.ones(2, 3)[:, gc.tensor([True, False])]
    with _raises(IndexError, "mask [3] at index 0", "[2, 3] at index 0"):
        gc.ones(2, 3)[gc.tensor([True, False, True]), ...]


def test_index_arrays_are_checked_along_the_axis_they_pick(device):
    """An Ellipsis, None and boolean masks (a 0-d one included) shift the axis an index
    array picks along; its range is that axis's."""
    x = gc.arange(24.0).reshape(2, 3, 4)
    assert x[..., gc.tensor([3, 0])].tolist()[1][2] == [23.0, 20.0]
    assert x[gc.tensor(True), 1].shape == (1, 3, 4)
    assert x[None, 1, gc.tensor([True, False, True])].shape == (1, 2, 4)
    assert x[gc.tensor([True, False]), :, gc.tensor([3])].tolist() == [[3.0, 7.0, 11.0]]
    with _raises(IndexError, "4", "(2, 3, 4)"):
        x[..., gc.tensor([4])].tolist()
    with _raises(IndexError, "3", "(2, 3, 4)"):
        x[None, :, gc.tensor([3])].tolist()
    with _raises(IndexError, "2", "(2, 3, 4)"):
        x[gc.tensor(True), gc.tensor([2])].tolist()


def test_index_out_of_range_on_tracked_tensor(device):
    x = gc.ones(3, requires_grad=True)
    with _raises(IndexError, "7", "(3,)"):
        x[7]


def test_gather_and_index_select_out_of_range(device):
    with _raises(RuntimeError, "gather", "(2, 3)", "5"):
        gc.ones(2, 3).gather(1, gc.tensor([[0, 5]])).tolist()
    with pytest.raises(IndexError, match="3"):
        gc.ones(2, 3).index_select(1, gc.tensor([3])).tolist()
    with pytest.raises(RuntimeError, match="3"):  # PyTorch's class along dim 1
        gc.ones(2, 3).index_select(1, gc.tensor([3])).tolist()
    with pytest.raises(RuntimeError, match="3"):
        gc.zeros(2, 3).scatter_add(1, gc.tensor([[3]]), gc.ones(1, 1)).tolist()
    # negative indices are out of range too, as in PyTorch (NumPy would take the last)
    msg = "index -1 is out of bounds for dimension 1 with size 3"
    with _raises(RuntimeError, "gather(): " + msg):
        gc.ones(2, 3).gather(1, gc.tensor([[0, -1]])).tolist()
    with _raises(RuntimeError, "scatter_add(): " + msg):
        gc.zeros(2, 3).scatter_add(1, gc.tensor([[-1]]), gc.ones(1, 1)).tolist()
    with _raises(IndexError, "index_select(): " + msg):
        gc.ones(2, 3).index_select(1, gc.tensor([-1])).tolist()


def test_setitem_shape_mismatch_names_shapes(device):
    with _raises(RuntimeError, "setitem", "(2,)", "(3,)", "(2, 3)"):
        gc.zeros(2, 3)[0] = gc.ones(2)


# ---- autograd errors ------------------------------------------------------------------
def test_backward_of_non_scalar_without_gradient(device):
    with _raises(RuntimeError, "scalar outputs", "(2,)"):
        (gc.ones(2, requires_grad=True) * 2).backward()


def test_backward_gradient_shape_mismatch_names_shapes(device):
    with _raises(RuntimeError, "Mismatch in shape", "(3,)", "(2,)"):
        (gc.ones(2, requires_grad=True) * 2).backward(gc.ones(3))


def test_backward_of_tensor_without_grad(device):
    with _raises(RuntimeError, "does not require grad", "grad_fn"):
        gc.ones(2).sum().backward()


def test_floor_divide_is_not_differentiable(device):
    x = gc.ones(2, requires_grad=True)
    y = x // 2
    assert y.grad_fn is None and not y.requires_grad
    with _raises(RuntimeError, "does not require grad"):
        y.sum().backward()


def test_numpy_on_requires_grad_points_to_detach(device):
    with _raises(RuntimeError, "requires grad", "detach().numpy()"):
        gc.ones(2, requires_grad=True).numpy()
    with _raises(RuntimeError, "requires grad", "detach()"):
        np.asarray(gc.ones(2, requires_grad=True))


def test_in_place_on_leaf_requiring_grad_names_op(device):
    with _raises(RuntimeError, "leaf", "in-place", "add_"):
        gc.ones(2, requires_grad=True).add_(1)


def test_requires_grad_false_on_non_leaf(device):
    y = gc.ones(2, requires_grad=True) * 2
    with _raises(RuntimeError, "leaf", "detach()"):
        y.requires_grad = False


def test_autograd_grad_errors(device):
    x = gc.ones(1, requires_grad=True)
    unused = gc.ones(1, requires_grad=True)
    with _raises(RuntimeError, "input 0", "allow_unused=True"):
        gc.autograd.grad((x * 2).sum(), [unused])
    with _raises(RuntimeError, "input 0", "does not require grad"):
        gc.autograd.grad((x * 2).sum(), [gc.ones(1)])


def test_saved_tensor_modified_in_place_names_op(device):
    x = gc.ones(3, requires_grad=True)
    a = x * 1
    b = a.sigmoid()
    b.mul_(2)
    with _raises(RuntimeError, "SigmoidBackward0", "inplace operation", "version 1"):
        (b * 1).sum().backward()


# ---- conversions ----------------------------------------------------------------------
def test_item_and_bool_of_many_elements(device):
    with _raises(RuntimeError, "2 elements", "Scalar"):
        gc.ones(2).item()
    with _raises(RuntimeError, "more than one value", "ambiguous"):
        bool(gc.ones(2))


def test_len_of_0d(device):
    with _raises(TypeError, "0-d"):
        len(gc.tensor(1.))


# ---- creation -------------------------------------------------------------------------
def test_creation_errors(device):
    with _raises(RuntimeError, "arange", "step"):
        gc.arange(0, 5, 0)
    for make in (gc.ones, gc.zeros, gc.empty, gc.randn, gc.rand):
        with pytest.raises(RuntimeError, match=r"negative dimension -1: \[2, -1\]"):
            make(2, -1)
    with pytest.raises(ValueError, match="negative"):  # NumPy's class, too
        gc.ones(-1)


# ---- devices --------------------------------------------------------------------------
def test_unknown_device_string_names_it():
    # (gc.device is torch.device: PyTorch's RuntimeError and words)
    with _raises(RuntimeError, "device string: tpu", "cpu", "cuda"):
        gc.device("tpu")
    with _raises(RuntimeError, "'cuda:x'"):
        gc.device("cuda:x")
    for kind in (RuntimeError, ValueError):  # (a tensor's device=: PyTorch's kind, and
        with _raises(kind, "'tpu'", "cpu", "cuda"):  # gradcore's before)
            gc.zeros(2, device="tpu")


@needs_no_cuda
def test_tensor_on_cuda_when_unusable_says_why():
    reason = gc.cuda.unavailable_reason()
    assert reason and re.search("CuPy|driver|device", reason)
    with _raises(RuntimeError, "CUDA", reason):
        gc.zeros(2, device="cuda")
    with _raises(RuntimeError, "CUDA", reason):
        gc.tensor([1.0], device="cuda:0")
    with _raises(RuntimeError, "CUDA", reason):
        gc.ones(2).cuda()
    with _raises(RuntimeError, "CUDA", reason):
        gc.ones(2).to("cuda")
    with _raises(RuntimeError, "CUDA", reason):
        gc.device("cuda").xp  # noqa: B018  (like torch.device, the object itself is fine)


@needs_no_cuda
def test_cuda_missing_cupy_is_named():
    try:
        import cupy  # noqa: F401
    except ImportError:
        assert "CuPy is not installed" in gc.cuda.unavailable_reason()
    else:  # pragma: no cover - CuPy present but no GPU or driver
        assert re.search("driver|device", gc.cuda.unavailable_reason())


@needs_no_cuda
def test_set_default_device_cuda_when_unusable_says_why():
    before = gc.get_default_device()
    with _raises(RuntimeError, "CUDA", gc.cuda.unavailable_reason()):
        gc.set_default_device("cuda")
    assert gc.get_default_device() == before


def _run_with_env(value, code="import gradcore as gc; print(gc.zeros(2).device)"):
    env = dict(os.environ, GRADCORE_DEVICE=value)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=60, cwd=os.path.dirname(os.path.dirname(__file__)))


@needs_no_cuda
def test_gradcore_device_env_cuda_when_unusable_says_why():
    out = _run_with_env("cuda")
    assert out.returncode != 0
    assert "CUDA was requested but cannot be used" in out.stderr
    assert gc.cuda.unavailable_reason().split(" (")[0] in out.stderr
    # auto (and unset) falls back to the CPU silently; cpu is the CPU
    for value in ("auto", "cpu"):
        out = _run_with_env(value)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "cpu"


@needs_cuda
def test_mixing_devices_names_both():  # pragma: no cover - runs only with a GPU
    a = gc.ones(2, device="cpu")
    b = gc.ones(2, device="cuda")
    for fn in (lambda: a + b, lambda: a * b, lambda: gc.ones(2, 2, device="cpu") @
               gc.ones(2, 2, device="cuda"), lambda: gc.cat([a, b])):
        with _raises(RuntimeError, "cpu", "cuda"):
            fn()


def test_type_promotion_matches_pytorch_for_every_pair():
    """Every pair of dtypes, tensor or 0-d, and tensor-scalar, as PyTorch promotes."""
    import itertools

    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    names = ["float16", "float32", "float64", "int32", "int64", "bool"]
    for da, db in itertools.product(names, names):
        for sa, sb in [((2,), (2,)), ((2,), ()), ((), (2,)), ((), ())]:
            for op in ["add", "mul", "div", "maximum"]:
                a, b = np.ones(sa, dtype=da), np.ones(sb, dtype=db)
                expected = getattr(torch, op)(torch.tensor(a), torch.tensor(b)).dtype
                got = getattr(gc, op)(gc.tensor(a), gc.tensor(b)).dtype
                assert got.name == str(expected).replace("torch.", ""), (op, da, sa, db, sb)
    for da in names:
        for scalar in (2, 2.5, True):
            for op in ["add", "mul", "div"]:
                t = torch.ones(2, dtype=getattr(torch, da))
                expected = getattr(torch, op)(t, scalar).dtype
                got = getattr(gc, op)(gc.ones(2, dtype=da), scalar).dtype
                assert got.name == str(expected).replace("torch.", ""), (op, da, scalar)


def test_inf_and_nan_arithmetic_is_silent_like_pytorch():
    """A user's script sees no NumPy RuntimeWarning from gradcore's inf/NaN arithmetic
    (run in a fresh interpreter: pytest shows every warning on purpose)."""
    script = (
        "import gradcore as gc\n"
        "x = gc.tensor([1.0, 0.0, -2.0], requires_grad=True)\n"
        "y = (x / 0.0) * 0 + gc.tensor([1000.0]).exp() + x.log()\n"
        "y.sum().backward()\n"
        "import numpy as np\n"
        "assert np.isnan(x.grad.numpy()).all()\n"
    )
    env = dict(os.environ, GRADCORE_DEVICE="cpu")  # NumPy's warnings, also beside a GPU
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env)
    assert done.returncode == 0, done.stderr
    assert "RuntimeWarning" not in done.stderr
