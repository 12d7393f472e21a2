"""PyTorch's API where gradcore differed (issue 11, items 16-19): formatting, factory
signatures, errors that leaked NumPy's, and what PyTorch refuses.

Every refusal is one row: the call (written once, for gradcore and torch alike), the
class and a fragment of PyTorch's message. The gradcore test asserts the row; the torch
test asserts that the row is what PyTorch 2.13 does, so the stated values mean something
without torch and cannot drift from it with torch.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import gradcore as gc

from conftest import host, needs_torch, pinned_torch_only

OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers "
           "to a single memory location. Please clone() the tensor before performing the "
           "operation.")


def _F(m):
    return m.nn.functional


# (id, call on a module (gradcore or torch), exception class, fragment of torch's message)
REFUSALS = [
    # item 17: factory signatures and int arguments
    ("zeros(2.5)", lambda m: m.zeros(2.5), TypeError,
     "zeros(): argument 'size' (position 1) must be tuple of ints, not float"),
    ("zeros((2.5,))", lambda m: m.zeros((2.5,)), TypeError,
     "zeros(): argument 'size' (position 1) must be tuple of ints, but found element of "
     "type float at pos 0"),
    ("ones(2, 3.0)", lambda m: m.ones(2, 3.0), TypeError,
     "ones(): argument 'size' failed to unpack the object at pos 2"),
    ("randn(2.5)", lambda m: m.randn(2.5), TypeError,
     "randn(): argument 'size' (position 1) must be tuple of ints, not float"),
    ("rand(True)", lambda m: m.rand(True), TypeError,
     "rand(): argument 'size' (position 1) must be tuple of ints, not bool"),
    ("empty('a')", lambda m: m.empty("a"), TypeError,
     "empty(): argument 'size' (position 1) must be tuple of ints, not str"),
    ("zeros(None)", lambda m: m.zeros(None), TypeError,
     "zeros(): argument 'size' (position 1) must be tuple of ints, not NoneType"),
    ("zeros(2, size=(3,))", lambda m: m.zeros(2, size=(3,)), TypeError,
     "zeros() got multiple values for argument 'size'"),
    ("zeros(size=2)", lambda m: m.zeros(size=2), TypeError,
     "zeros(): argument 'size' must be tuple of ints, not int"),
    ("zeros(foo=1)", lambda m: m.zeros(2, foo=1), TypeError,
     "zeros() got an unexpected keyword argument 'foo'"),
    ("zeros()", lambda m: m.zeros(), TypeError, "zeros() missing 1 required positional"),
    ("full(2.5, 1.)", lambda m: m.full(2.5, 1.0), TypeError,
     "full(): argument 'size' (position 1) must be tuple of ints, not float"),
    ("full(2, 1.)", lambda m: m.full(2, 1.0), TypeError,
     "full(): argument 'size' (position 1) must be tuple of ints, not int"),
    ("randint(5.5, (2,))", lambda m: m.randint(5.5, (2,)), TypeError,
     "randint(): argument 'high' (position 1) must be int, not float"),
    ("randint(5, size=3)", lambda m: m.randint(5, size=3), TypeError,
     "randint(): argument 'size' must be tuple of ints, not int"),
    ("randint(5, (2.5,))", lambda m: m.randint(5, (2.5,)), TypeError,
     "must be tuple of ints, but found element of type float at pos 0"),
    ("randn(dtype=int64)", lambda m: m.randn(2, dtype=m.int64), NotImplementedError,
     "not implemented for 'Long'"),
    ("rand(dtype=bool)", lambda m: m.rand(2, dtype=m.bool), NotImplementedError,
     "not implemented for 'Bool'"),
    ("linspace(0, 1, 2.5)", lambda m: m.linspace(0, 1, 2.5), TypeError, "linspace()"),
    ("linspace(0, 1, -1)", lambda m: m.linspace(0, 1, -1), RuntimeError,
     "number of steps must be non-negative"),
    ("eye(2.5)", lambda m: m.eye(2.5), TypeError, "eye(): argument 'n' (position 1) must be "
                                                    "int, not float"),
    ("eye(-1)", lambda m: m.eye(-1), RuntimeError, "n must be greater or equal to 0, got -1"),
    ("sum(dim=1.5)", lambda m: m.ones(2, 3).sum(dim=1.5), TypeError, "sum()"),
    ("sum(dim=True)", lambda m: m.ones(2, 3).sum(dim=True), TypeError, "sum()"),
    ("sum(dim=(0, 1.0))", lambda m: m.ones(2, 3).sum(dim=(0, 1.0)), TypeError,
     "sum(): argument 'dim'"),
    ("mean(dim=1.5)", lambda m: m.ones(2, 3).mean(dim=1.5), TypeError, "mean()"),
    ("argmax(dim=1.5)", lambda m: m.ones(2, 3).argmax(dim=1.5), TypeError,
     "argmax(): argument 'dim' must be int, not float"),
    ("softmax(dim=1.5)", lambda m: m.ones(2, 3).softmax(dim=1.5), TypeError,
     "softmax(): argument 'dim' must be int, not float"),
    ("unsqueeze(True)", lambda m: m.ones(2, 3).unsqueeze(True), TypeError,
     "unsqueeze(): argument 'dim'"),
    ("transpose(0, 1.5)", lambda m: m.ones(2, 3).transpose(0, 1.5), TypeError,
     "transpose(): argument"),
    ("view(2.0, 3)", lambda m: m.ones(2, 3).view(2.0, 3), TypeError, "view()"),
    # item 18: errors that leaked NumPy's (AxisError, tuple index out of range, ...)
    ("size(5)", lambda m: m.ones(2, 3).size(5), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 5)"),
    ("size(-3)", lambda m: m.ones(2, 3).size(-3), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    ("0-d size(0)", lambda m: m.tensor(1.).size(0), IndexError,
     "Dimension specified as 0 but tensor has no dimensions"),
    ("0-d unbind", lambda m: m.tensor(1.).unbind(0), IndexError,
     "Dimension specified as 0 but tensor has no dimensions"),
    ("0-d split", lambda m: m.tensor(1.).split(1), RuntimeError,
     "split expects at least a 1-dimensional tensor"),
    ("0-d chunk", lambda m: m.tensor(1.).chunk(1), RuntimeError,
     "chunk expects at least a 1-dimensional tensor"),
    ("0-d softmax(1)", lambda m: m.tensor(1.).softmax(1), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    ("0-d log_softmax(-2)", lambda m: m.tensor(1.).log_softmax(-2), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got -2)"),
    ("0-d flatten(1)", lambda m: m.tensor(1.).flatten(1), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    ("0-d index_select(1)", lambda m: m.tensor(1.).index_select(1, m.tensor([0])),
     IndexError, "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    ("transpose(0, 5)", lambda m: m.ones(2, 3).transpose(0, 5), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 5)"),
    ("unsqueeze(5)", lambda m: m.ones(2, 3).unsqueeze(5), IndexError,
     "Dimension out of range (expected to be in range of [-3, 2], but got 5)"),
    ("cat(dim=5)", lambda m: m.cat([m.ones(2), m.ones(2)], dim=5), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 5)"),
    ("cat of 0-d", lambda m: m.cat([m.tensor(1.), m.tensor(2.)]), RuntimeError,
     "zero-dimensional tensor (at position 0) cannot be concatenated"),
    ("cat of 1-d and 0-d", lambda m: m.cat([m.ones(3), m.tensor(2.)]), RuntimeError,
     "zero-dimensional tensor (at position 1) cannot be concatenated"),
    ("cat sizes", lambda m: m.cat([m.ones(2, 3), m.ones(2, 4)]), RuntimeError,
     "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 "
     "for tensor number 1 in the list"),
    ("cat ndims", lambda m: m.cat([m.ones(2, 3), m.ones(3)]), RuntimeError,
     "Tensors must have same number of dimensions: got 2 and 1"),
    ("cat([])", lambda m: m.cat([]), ValueError, "expected a non-empty list of Tensors"),
    ("stack([])", lambda m: m.stack([]), RuntimeError, "stack expects a non-empty TensorList"),
    ("div rounding_mode", lambda m: m.div(m.ones(2), m.ones(2), rounding_mode="foo"),
     RuntimeError, "div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                   "found 'foo'"),
    ("reshape of an ndarray", lambda m: m.reshape(np.ones((2, 3)), (3, 2)), TypeError,
     "reshape(): argument 'input' (position 1) must be Tensor, not numpy.ndarray"),
    ("float() of 2 elements", lambda m: float(m.ones(2)), ValueError,
     "only one element tensors can be converted to Python scalars"),
    ("int() of 2 elements", lambda m: int(m.ones(2)), ValueError,
     "only one element tensors can be converted to Python scalars"),
    ("bool() of 0 elements", lambda m: bool(m.ones(0)), RuntimeError,
     "Boolean value of Tensor with no values is ambiguous"),
    ("x[5]", lambda m: m.ones(2, 3)[5], IndexError,
     "index 5 is out of bounds for dimension 0 with size 2"),
    ("x[:, -4]", lambda m: m.ones(2, 3)[:, -4], IndexError,
     "index -4 is out of bounds for dimension 1 with size 3"),
    ("x[0, 0, 0]", lambda m: m.ones(2, 3)[0, 0, 0], IndexError,
     "too many indices for tensor of dimension 2"),
    # (old programs' loss.data[0]: PyTorch's words point to item())
    ("x0[0]", lambda m: m.tensor(1.0)[0], IndexError,
     "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` "
     "in C++ to convert a 0-dim tensor to a number"),
    ("x0[0:1]", lambda m: m.tensor(1.0)[0:1], IndexError,
     "slice() cannot be applied to a 0-dim tensor."),
    ("x[1.5]", lambda m: m.ones(2, 3)[1.5], IndexError,
     "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
     "valid indices (got float)"),
    ("x[..., 7] = 1", lambda m: m.ones(2, 3).__setitem__((Ellipsis, 7), 1.), IndexError,
     "index 7 is out of bounds for dimension 1 with size 3"),
    # (CuPy takes int() of a scalar index: a float is refused before it gets there)
    ("x[0, 1.0] = 1", lambda m: m.ones(2, 3).__setitem__((0, 1.0), 1.), IndexError,
     "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
     "valid indices (got float)"),
    ("add of (2, 3) and (2, 4)", lambda m: m.ones(2, 3) + m.ones(2, 4), RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (4) at non-singleton "
     "dimension 1"),
    ("sub of (5, 2, 3) and (4, 3)", lambda m: m.ones(5, 2, 3) - m.ones(4, 3), RuntimeError,
     "The size of tensor a (2) must match the size of tensor b (4) at non-singleton "
     "dimension 1"),
    ("expand (3,) to (2, 4)", lambda m: m.ones(3).expand(2, 4), RuntimeError,
     "The expanded size of the tensor (4) must match the existing size (3) at non-singleton "
     "dimension 1.  Target sizes: [2, 4].  Tensor sizes: [3]"),
    ("expand (2, 3) to (1, 3)", lambda m: m.ones(2, 3).expand(1, 3), RuntimeError,
     "The expanded size of the tensor (1) must match the existing size (2) at non-singleton "
     "dimension 0.  Target sizes: [1, 3].  Tensor sizes: [2, 3]"),
    ("mm of (2, 3) and (2, 3)", lambda m: m.ones(2, 3) @ m.ones(2, 3), RuntimeError,
     "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"),
    # item 19: what PyTorch refuses
    ("relu(bool)", lambda m: m.relu(m.tensor([True, False])), RuntimeError,
     "Boolean inputs not supported for relu"),
    ("F.relu(bool)", lambda m: _F(m).relu(m.tensor([True, False])), RuntimeError,
     "Boolean inputs not supported for relu"),
    ("abs(bool)", lambda m: m.tensor([True, False]).abs(), NotImplementedError,
     "not implemented for 'Bool'"),
    ("neg(bool)", lambda m: -m.tensor([True, False]), RuntimeError,
     "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
     "invert a mask, use the `~` or `logical_not()` operator instead."),
    ("matmul(bool)", lambda m: m.tensor([[True]]) @ m.tensor([[True]]),
     NotImplementedError, "not implemented for 'Bool'"),
    ("dot(bool)", lambda m: m.dot(m.tensor([True]), m.tensor([True])), NotImplementedError,
     "not implemented for 'Bool'"),
    ("matmul(bool, float)", lambda m: m.tensor([[True]]) @ m.ones(1, 1), RuntimeError,
     "expected m1 and m2 to have the same dtype"),
    ("argmax(bool)", lambda m: m.tensor([True, False]).argmax(), RuntimeError,
     "argmax(): does not support bool input"),
    ("argmin(bool, dim)", lambda m: m.tensor([True, False]).argmin(0), RuntimeError,
     "argmin(): does not support bool input"),
    ("norm(bool)", lambda m: m.tensor([True, False]).norm(), RuntimeError,
     "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Bool"),
    ("norm(int64)", lambda m: m.tensor([1, 2]).norm(), RuntimeError,
     "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"),
    ("norm(int32, dim)", lambda m: m.tensor([[1, 2]], dtype=m.int32).norm(dim=1),
     RuntimeError, "Expected a floating point or complex tensor as input. Got Int"),
    ("bool // bool", lambda m: m.tensor([True]) // m.tensor([True]), NotImplementedError,
     "not implemented for 'Bool'"),
    ("bool % bool", lambda m: m.tensor([True]) % True, NotImplementedError,
     "not implemented for 'Bool'"),
    ("bool.pow(bool)", lambda m: m.tensor([True]).pow(m.tensor([True])),
     NotImplementedError, "\"pow\" not implemented for 'Bool'"),
    ("expand().add_", lambda m: m.ones(1, 3).expand(2, 3).add_(1), RuntimeError, OVERLAP),
    ("expand().mul_", lambda m: m.ones(3, 1).expand(3, 4).mul_(m.ones(3, 4)), RuntimeError,
     OVERLAP),
    ("expand() +=", lambda m: m.ones(1, 3).expand(2, 3).__iadd__(m.ones(2, 3)), RuntimeError,
     OVERLAP),
    ("broadcast_to().sub_", lambda m: m.broadcast_to(m.ones(3), (2, 3)).sub_(1.),
     RuntimeError, OVERLAP),
    ("expand().copy_", lambda m: m.ones(1, 3).expand(2, 3).copy_(m.zeros(2, 3)),
     RuntimeError, OVERLAP),
    ("expand()[:] = 4", lambda m: m.ones(1, 3).expand(2, 3).__setitem__(slice(None), 4.),
     RuntimeError, OVERLAP),
    ("expand()[:, 1] = 4", lambda m: m.ones(3)[None].expand(2, 3).__setitem__(
        (slice(None), 1), 4.), RuntimeError, OVERLAP),
    ("expand().normal_", lambda m: m.ones(1, 3).expand(2, 3).normal_(), RuntimeError,
     OVERLAP),
    ("expand().add_ under no_grad",
     lambda m: _no_grad(m, lambda: m.ones(1, 3).expand(2, 3).add_(m.ones(2, 3))),
     RuntimeError, OVERLAP),
]


def _no_grad(m, fn):
    with m.no_grad():
        return fn()


@pytest.mark.parametrize("call,exc,fragment", [r[1:] for r in REFUSALS],
                         ids=[r[0] for r in REFUSALS])
def test_refused_as_pytorch_refuses(device, call, exc, fragment):
    with pytest.raises(exc, match=re.escape(fragment)):
        call(gc)


# rows whose message PyTorch 2.13's argument parser words as it does: older ones (2.11)
# answer these calls with "zeros() received an invalid combination of arguments - got ..."
PARSER_WORDING_OF_2_13 = {"zeros(2, size=(3,))", "zeros(foo=1)", "zeros()", "softmax(dim=1.5)",
                          "transpose(0, 1.5)"}
assert PARSER_WORDING_OF_2_13 <= {r[0] for r in REFUSALS}


@needs_torch
@pytest.mark.parametrize("call,exc,fragment", [
    pytest.param(*r[1:], id=r[0], marks=pinned_torch_only(
        "PyTorch 2.11's argument parser says 'received an invalid combination of arguments'"))
    if r[0] in PARSER_WORDING_OF_2_13 else pytest.param(*r[1:], id=r[0]) for r in REFUSALS])
def test_the_refusals_are_pytorchs(call, exc, fragment):
    import torch

    with pytest.raises(exc, match=re.escape(fragment)):
        call(torch)


def test_errors_name_the_public_function_never_an_internal_one(device):
    for call in (lambda: gc.randn(2, foo=1), lambda: gc.zeros(2, layout=1),
                 lambda: gc.empty(2, bar=1), lambda: gc.rand(size=(2,), x=1),
                 lambda: gc.ones(size=(2,), y=2)):
        with pytest.raises(TypeError) as info:
            call()
        msg = str(info.value)
        assert "factory" not in msg and "locals" not in msg and "_random" not in msg, msg
        assert re.match(r"(randn|zeros|empty|rand|ones)\(\) got an unexpected keyword", msg)


def test_dimension_errors_name_the_op_with_pytorchs_wording(device):
    t = gc.ones(2, 3)
    for name, call in [("sum", lambda: t.sum(5)), ("mean", lambda: t.mean(-3)),
                       ("amax", lambda: t.amax(2)), ("var", lambda: t.var(5)),
                       ("logsumexp", lambda: t.logsumexp(5)), ("norm", lambda: t.norm(dim=5)),
                       ("argmax", lambda: t.argmax(5)), ("max", lambda: t.max(5)),
                       ("softmax", lambda: t.softmax(5)), ("squeeze", lambda: t.squeeze(5)),
                       ("flatten", lambda: t.flatten(0, 5)), ("permute", lambda: t.permute(0, 5)),
                       ("movedim", lambda: t.movedim(5, 0)), ("split", lambda: t.split(1, 5)),
                       ("chunk", lambda: t.chunk(2, 5)), ("unbind", lambda: t.unbind(5)),
                       ("gather", lambda: t.gather(5, gc.zeros(2, 3, dtype=gc.int64))),
                       ("index_select", lambda: t.index_select(5, gc.zeros(1, dtype=gc.int64))),
                       ("stack", lambda: gc.stack([t, t], 5))]:
        with pytest.raises(IndexError) as info:
            call()
        msg = str(info.value)
        assert msg.startswith(f"{name}: Dimension out of range (expected to be in range of "), msg


# ---- item 17: the signatures PyTorch accepts ------------------------------------------------
def test_randint_signatures(device):
    gc.manual_seed(0)
    for t, lo, hi in [(gc.randint(5, (40,)), 0, 5), (gc.randint(3, 7, (40,)), 3, 7),
                      (gc.randint(5, size=(40,)), 0, 5), (gc.randint(2, 4, size=[40]), 2, 4),
                      (gc.randint(high=5, size=(40,)), 0, 5),
                      (gc.randint(low=1, high=3, size=(40,)), 1, 3),
                      (gc.randint(np.int64(5), (np.int32(40),)), 0, 5)]:
        assert tuple(t.shape) == (40,) and t.dtype == gc.int64
        v = host(t)
        assert v.min() >= lo and v.max() < hi
    assert gc.randint(5, (2, 3), dtype=gc.float32).dtype == gc.float32
    assert tuple(gc.randint(5, ()).shape) == ()
    with pytest.raises(RuntimeError, match="randint.*low.*less than.*high"):
        gc.randint(5, 5, (3,))
    with pytest.raises(TypeError, match="randint"):
        gc.randint(5)


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "randn", "rand"])
def test_size_keyword_of_the_factories(device, name):
    fn = getattr(gc, name)
    for t in (fn(size=(2, 3)), fn(size=[2, 3]), fn(2, 3), fn((2, 3)), fn([2, 3]),
              fn(np.int64(2), gc.tensor(3)), fn(size=(2, 3), dtype=gc.float64)):
        assert tuple(t.shape) == (2, 3)
    assert fn(size=(2,), dtype=gc.float64).dtype == gc.float64
    assert tuple(fn(()).shape) == () and tuple(fn([]).shape) == ()


def test_full_and_likes_keep_working(device):
    assert tuple(gc.full((2, 3), 1.5).shape) == (2, 3)
    assert gc.full(size=(2,), fill_value=3).dtype == gc.int64
    assert tuple(gc.zeros_like(gc.ones(2, 3)).shape) == (2, 3)
    assert tuple(gc.randn_like(gc.ones(4)).shape) == (4,)


@needs_torch
def test_factory_signatures_match_torch():
    import torch
    for name in ["zeros", "ones", "empty", "randn", "rand"]:
        for args, kw in [((), {"size": (2, 3)}), ((2, 3), {}), (((2, 3),), {}),
                         ((np.int64(2), 3), {})]:
            assert tuple(getattr(torch, name)(*args, **kw).shape) == \
                tuple(getattr(gc, name)(*args, **kw).shape)
    assert tuple(torch.randint(5, (3,)).shape) == tuple(gc.randint(5, (3,)).shape)
    assert tuple(torch.randint(1, 5, (3,)).shape) == tuple(gc.randint(1, 5, (3,)).shape)


def test_dims_take_numpy_ints_and_0d_int_tensors(device):
    t = gc.ones(2, 3)
    assert tuple(t.sum(dim=np.int64(1)).shape) == (2,)
    assert tuple(t.sum(gc.tensor(1)).shape) == (2,)
    assert tuple(t.sum(dim=[np.int32(0)]).shape) == (3,)
    assert t.size(np.int64(-1)) == 3


# ---- item 16: formatting ------------------------------------------------------------------
def test_format_of_a_0d_tensor(device):
    loss = gc.tensor(1.234567)
    assert f"{loss:.4f}" == "1.2346"
    assert f"{loss:>10.2f}" == "      1.23"
    assert f"{gc.tensor(7):d}" == "7" and f"{gc.tensor(7):03d}" == "007"
    assert f"{gc.tensor(True)}" == "True"
    x = gc.tensor(2.0, requires_grad=True)
    assert f"{x * 3:.3f}" == "6.000"  # no detach() needed, as in PyTorch
    assert f"{loss}" == str(loss.item())  # an empty spec formats the value too


def test_format_of_other_tensors(device):
    t = gc.ones(2)
    assert f"{t}" == str(t) and format(t, "") == str(t)
    with pytest.raises(TypeError, match="unsupported format string passed to Tensor.__format__"):
        f"{t:.2f}"
    # PyTorch formats 0-d tensors only: a one-element 1-d tensor refuses a spec
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{gc.tensor([1.5]):.2f}"


@needs_torch
def test_format_matches_torch():
    import torch
    for v, spec in [(1.234567, ".4f"), (3.0, "e"), (-2.5, "+.1f"), (1e-8, "g"), (7, "d"),
                    (7, ">5"), (1.5, "")]:
        assert format(gc.tensor(v), spec) == format(torch.tensor(v), spec)
    assert format(gc.tensor(1.5, dtype=gc.float64), ".17g") == \
        format(torch.tensor(1.5, dtype=torch.float64), ".17g")
    for t in (torch.ones(2), torch.tensor([1.5])):
        with pytest.raises(TypeError):
            format(t, ".2f")


# ---- item 18/19: what gradcore now does as PyTorch does --------------------------------------
def test_sign_of_bool_is_itself(device):
    t = gc.tensor([True, False, True])
    s = t.sign()
    assert s.dtype == gc.bool_ and host(s).tolist() == [True, False, True]
    assert gc.sign(gc.tensor(False)).dtype == gc.bool_


@needs_torch
def test_sign_of_bool_matches_torch():
    import torch
    assert torch.tensor([True, False]).sign().tolist() == \
        gc.tensor([True, False]).sign().tolist()


def test_operations_on_0d_tensors_take_dims_0_and_minus_1(device):
    x = gc.tensor(3.0, requires_grad=True)
    for d in (0, -1):
        y = x.transpose(0, d)
        assert tuple(y.shape) == () and y.item() == 3.0
        assert tuple(x.movedim(d, 0).shape) == ()
    x.transpose(0, -1).backward()
    assert x.grad.item() == 1.0
    assert tuple(gc.tensor(1.).softmax(0).shape) == ()
    assert tuple(gc.tensor(1.).flatten(0, -1).shape) == (1,)


def test_bool_ops_pytorch_accepts_still_work(device):
    b = gc.tensor([True, False])
    assert host(b.sum()).item() == 1
    assert host(b.max()).item() is True or host(b.max()).item() == 1
    assert host(b ** True).tolist() == [True, False]
    assert host(b // 1).tolist() == [1, 0]
    assert host(~b).tolist() == [False, True]
    assert host(gc.tensor([1, 2]) @ gc.tensor([3, 4])).item() == 11
    assert host(gc.tensor([3., -4.]).abs()).tolist() == [3., 4.]
    assert host(gc.tensor([-3, 4]).abs()).tolist() == [3, 4]
    assert host(gc.tensor([-1, 2]).relu()).tolist() == [0, 2]


def test_writes_pytorch_allows_on_an_expanded_tensor(device):
    # fill_, zero_ and a region without repeated elements write through the shared memory
    a = gc.ones(3, device=device)
    e = a[None].expand(2, 3)
    e.fill_(2.)
    assert host(a).tolist() == [2., 2., 2.] and host(e).tolist() == [[2., 2., 2.]] * 2
    e.zero_()
    assert host(a).tolist() == [0., 0., 0.]
    e[0] = 4.
    assert host(a).tolist() == [4., 4., 4.]
    e[1] = gc.arange(3., device=device)
    assert host(a).tolist() == [0., 1., 2.] and host(e).tolist() == [[0., 1., 2.]] * 2
    with pytest.warns(UserWarning, match="index_put_ on expanded tensors is deprecated"):
        e[gc.tensor([0, 1], device=device)] = 5.
    assert host(a).tolist() == [5., 5., 5.]


@needs_torch
def test_writes_on_an_expanded_tensor_match_torch():
    import torch
    for m in (torch, gc):
        a = m.ones(3)
        e = a[None].expand(2, 3)
        e.fill_(2.)
        e[0] = m.arange(3.)
        assert a.tolist() == [0., 1., 2.]


def test_an_empty_dim_list_reduces_every_dimension(device):
    # PyTorch: sum(dim=[]) is sum() (was: the tensor unchanged, silently)
    t = gc.arange(6., device=device).reshape(2, 3)
    for op, value in [("sum", 15.), ("mean", 2.5), ("amax", 5.), ("amin", 0.), ("var", 3.5)]:
        for d in ([], ()):
            r = getattr(t, op)(dim=d)
            assert tuple(r.shape) == () and host(r).item() == value, (op, d)
    assert host(t.norm(dim=[])).item() == pytest.approx(55 ** 0.5)
    assert tuple(t.sum(dim=[], keepdim=True).shape) == (1, 1)
    assert tuple(t.any(dim=[]).shape) == (2, 3)  # any and all keep the shape, as PyTorch's
    x = gc.ones(2, 3, device=device, requires_grad=True)
    x.sum(dim=[]).backward()
    assert host(x.grad).tolist() == [[1.] * 3] * 2


@needs_torch
def test_an_empty_dim_list_matches_torch():
    import torch
    for op in ("sum", "mean", "amax", "amin", "var", "std", "norm", "any", "all"):
        ta, ga = torch.arange(6.).reshape(2, 3), gc.arange(6.).reshape(2, 3)
        r, g = getattr(ta, op)(dim=[]), getattr(ga, op)(dim=[])
        assert tuple(r.shape) == tuple(g.shape), op
        np.testing.assert_allclose(host(g), r.numpy(), rtol=1e-6)


def test_gather_and_scatter_add_of_a_0d_tensor(device):
    x = gc.tensor(2., device=device, requires_grad=True)
    y = x.gather(0, gc.tensor([0, 0], device=device))
    assert host(y).tolist() == [2., 2.]
    y.sum().backward()
    assert host(x.grad).item() == 2.
    assert host(x.gather(-1, gc.tensor(0, device=device))).item() == 2.
    s = gc.tensor(1., device=device).scatter_add(0, gc.tensor([0, 0], device=device),
                                                  gc.tensor([5., 1.], device=device))
    assert tuple(s.shape) == () and host(s).item() == 7.
    with pytest.raises(IndexError, match=re.escape("Dimension out of range (expected to be in "
                                                   "range of [-1, 0], but got 1)")):
        x.gather(1, gc.tensor(0, device=device))


def test_a_broadcast_error_names_the_op_and_shapes(device):
    with pytest.raises(RuntimeError, match=re.escape("(mul of shapes (2, 3) and (4,))")):
        gc.ones(2, 3, device=device) * gc.ones(4, device=device)
