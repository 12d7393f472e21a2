"""What the engine does with gradients it does not compute itself (issue 11, items 9, 10
and part of 18): concurrent accumulation into a shared leaf, gradients of the wrong
shape, dtype or device returned by a custom ``Function.backward`` or by a hook, the root
gradient given to ``backward(gradient=)``, and the warning on reading ``.grad`` of a
non-leaf. PyTorch 2.13 is the reference; each test states the expected values and, where
torch is installed, checks them against it.
"""

from __future__ import annotations

import sys
import threading
import warnings

import numpy as np
import pytest

import gradcore as gc

from conftest import HAVE_TORCH, host

if HAVE_TORCH:
    import torch


# ---- item 9: concurrent backward into a shared leaf ------------------------------------
def _hammer(n_threads, work):
    """Run ``work(k)`` in ``n_threads`` threads released at once; re-raise any error."""
    barrier = threading.Barrier(n_threads, timeout=60)
    errors = []

    def run(k):
        try:
            barrier.wait()
            work(k)
        except BaseException as e:  # noqa: BLE001 - reported in the main thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]


def test_concurrent_backward_into_shared_leaf_is_exact(device):
    """4 threads x 150 backward passes into one 100k-element leaf: every one lands
    (without a lock per leaf, `.grad += g` from two threads lost up to 11%)."""
    n, passes = 100_000, 150
    x = gc.zeros(n, requires_grad=True)

    def work(k):
        for _ in range(passes):
            (x * float(k + 1)).sum().backward()

    _hammer(4, work)
    expected = passes * (1 + 2 + 3 + 4)  # exact in float32
    g = host(x.grad)
    assert g.shape == (n,)
    assert (g == expected).all(), f"lost gradient: min {g.min()}, expected {expected}"


def test_concurrent_first_use_of_a_leaf_shares_one_accumulator(device):
    """Threads that build their first graphs on a new leaf at once must share its one
    AccumulateGrad (and its lock), and the first gradients must all land. (A tiny
    switch interval makes the threads interleave inside the node's creation.)"""
    prev = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        _first_use_rounds()
    finally:
        sys.setswitchinterval(prev)


def _first_use_rounds():
    for _ in range(200):
        x = gc.zeros(1000, requires_grad=True)
        nodes = []

        def work(k, x=x, nodes=nodes):
            y = x * 2.0
            nodes.append(y.grad_fn.next_functions[0][0])
            y.sum().backward()

        _hammer(4, work)
        assert len({id(node) for node in nodes}) == 1
        assert (host(x.grad) == 8.0).all()


def test_concurrent_backward_with_inputs_is_exact(device):
    """``backward(inputs=...)`` accumulates under the same lock."""
    x = gc.zeros(100_000, requires_grad=True)
    passes = 100

    def work(k):
        for _ in range(passes):
            (x * 1.0).sum().backward(inputs=[x])

    _hammer(4, work)
    assert (host(x.grad) == 4 * passes).all()


# ---- item 10: gradients from a custom Function.backward ---------------------------------
def _custom_fn(lib, backward, name="MyFn"):
    """A Function of ``lib`` (gradcore or torch) computing ``x * 2`` whose backward is
    ``backward(g)`` (its name is ``name``, so errors name ``{name}Backward``)."""
    def fwd(ctx, x):
        return x * 2

    def bwd(ctx, g):
        return backward(g)

    return type(name, (lib.autograd.Function,), {"forward": staticmethod(fwd),
                                                  "backward": staticmethod(bwd)})


def _function_grad(lib, ret_shape, ret_dtype="float32", in_dtype="float32"):
    """.grad of a (3,) leaf through a Function whose backward returns ones of
    ``ret_shape``/``ret_dtype``; or the error (class, message) it raises."""
    fn = _custom_fn(lib, lambda g: lib.ones(ret_shape, dtype=getattr(lib, ret_dtype)))
    x = lib.ones(3, dtype=getattr(lib, in_dtype), requires_grad=True)
    try:
        fn.apply(x).sum().backward()
    except Exception as e:  # noqa: BLE001 - the error is the result compared
        return type(e), str(e)
    return tuple(x.grad.shape), str(x.grad.dtype).split(".")[-1], x.grad.tolist()


@pytest.mark.parametrize("ret_shape,expected", [
    ((1,), "got [1] but expected shape compatible with [3]"),
    ((), "got [] but expected shape compatible with [3]"),
    ((4,), "got [4] but expected shape compatible with [3]"),
    ((3, 1), "got [3, 1] but expected shape compatible with [3]"),
    ((2, 3), ((3,), "float32", [2.0, 2.0, 2.0])),  # the input was broadcast: summed
    ((1, 3), ((3,), "float32", [1.0, 1.0, 1.0])),
    ((3,), ((3,), "float32", [1.0, 1.0, 1.0])),
])
def test_function_gradient_of_another_shape(ret_shape, expected):
    """PyTorch's validate_outputs: a gradient whose shape the input broadcasts to is summed
    to the input's shape; any other shape raises, naming the Function and the index
    (before: .grad became (1,), () or (2, 3) for a (3,) leaf)."""
    got = _function_grad(gc, ret_shape)
    if isinstance(expected, str):
        assert got == (RuntimeError, "Function MyFnBackward returned an invalid gradient at "
                                     f"index 0 - {expected}")
    else:
        assert got == expected
    if HAVE_TORCH:
        assert _function_grad(torch, ret_shape) == got


@pytest.mark.parametrize("ret_dtype,in_dtype,expected", [
    ("float64", "float32", "float32"),
    ("int64", "float32", "float32"),
    ("float32", "float16", "float16"),
    ("float16", "float64", "float64"),
])
def test_function_gradient_of_another_dtype_is_cast_to_the_input(ret_dtype, in_dtype, expected):
    got = _function_grad(gc, (3,), ret_dtype, in_dtype)
    assert got == ((3,), expected, [1.0, 1.0, 1.0])
    if HAVE_TORCH:
        assert _function_grad(torch, (3,), ret_dtype, in_dtype) == got


def test_function_gradient_checks_with_create_graph(device):
    """The same rule serves create_graph: the gradient is summed and cast by
    differentiable ops, so a second derivative goes through them."""
    class Square(gc.autograd.Function):  # backward: 2 x g, as float64, broadcast to (2, 3)
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return (x * g).double().expand(2, 3)

    x = gc.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (gx,) = gc.autograd.grad(Square.apply(x).sum(), x, create_graph=True)
    assert gx.shape == (3,) and gx.dtype == gc.float32 and gx.grad_fn is not None
    np.testing.assert_array_equal(host(gx), [2.0, 4.0, 6.0])
    (ggx,) = gc.autograd.grad(gx.sum(), x)
    np.testing.assert_array_equal(host(ggx), [2.0, 2.0, 2.0])
    bad = _custom_fn(gc, lambda g: g[:2])
    with pytest.raises(RuntimeError, match=r"Function MyFnBackward returned an invalid "
                                           r"gradient at index 0 - got \[2\] but expected "
                                           r"shape compatible with \[3\]"):
        gc.autograd.grad(bad.apply(x).sum(), x, create_graph=True)


def _two_arg_fn(lib, backward):
    def fwd(ctx, a, x):
        return x * a

    return type("MyFn", (lib.autograd.Function,),
                {"forward": staticmethod(fwd), "backward": staticmethod(lambda ctx, g:
                                                                        backward(lib, g))})


@pytest.mark.parametrize("backward,expected", [
    # the index counts tensor inputs only: x is gradient 0
    (lambda lib, g: (None, lib.ones(4)), "Function MyFnBackward returned an invalid gradient "
                                         "at index 0 - got [4] but expected shape compatible "
                                         "with [3]"),
    (lambda lib, g: (lib.ones(1), g), "function MyFnBackward returned a gradient different "
                                      "than None at position 1, but the corresponding forward "
                                      "input was not a Variable"),
    (lambda lib, g: (None, g, g), "function MyFnBackward returned an incorrect number of "
                                  "gradients (expected 2, got 3)"),
    (lambda lib, g: g, "function MyFnBackward returned an incorrect number of gradients "
                       "(expected 2, got 1)"),
    (lambda lib, g: (None, g, None), [1.0, 1.0, 1.0]),  # extra Nones are allowed
])
def test_function_gradients_per_forward_argument(backward, expected):
    def run(lib):
        x = lib.ones(3, requires_grad=True)
        try:
            _two_arg_fn(lib, backward).apply(2, x).sum().backward()
        except RuntimeError as e:
            return str(e)
        return x.grad.tolist()

    got = run(gc)
    assert got == expected
    if HAVE_TORCH:
        assert run(torch) == got


def test_function_gradient_for_an_input_without_grad_is_not_checked():
    """PyTorch validates only the gradients it will send on (an input that requires no
    grad has no edge): a gradient of any shape for it is dropped."""
    def run(lib):
        def fwd(ctx, x, c):
            return x * c

        def bwd(ctx, g):
            return g, lib.ones(7, dtype=lib.float64)

        fn = type("MyFn", (lib.autograd.Function,), {"forward": staticmethod(fwd),
                                                     "backward": staticmethod(bwd)})
        x, c = lib.ones(3, requires_grad=True), lib.ones(3)
        fn.apply(x, c).sum().backward()
        return x.grad.tolist(), c.grad

    assert run(gc) == ([1.0, 1.0, 1.0], None)
    if HAVE_TORCH:
        assert run(torch) == ([1.0, 1.0, 1.0], None)


def test_function_returning_a_non_tensor_raises():
    fn = _custom_fn(gc, lambda g: 1.0)
    x = gc.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Function MyFnBackward returned an invalid "
                                           r"gradient at index 0 - expected Variable or None "
                                           r"\(got float\)"):
        fn.apply(x).sum().backward()
    if HAVE_TORCH:
        tx = torch.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match=r"expected Variable or None \(got float\)"):
            _custom_fn(torch, lambda g: 1.0).apply(tx).sum().backward()


def test_function_gradient_on_another_device(standin):
    """A gradient on another device raises (naming the Function, index and devices),
    except a 0-d one, which is moved, as PyTorch does."""
    fn = _custom_fn(gc, lambda g: gc.ones(3, device="cuda"))
    x = gc.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Function MyFnBackward returned an invalid "
                                           r"gradient at index 0 - expected device cpu but got "
                                           r"cuda"):
        fn.apply(x).sum().backward()
    scalar = _custom_fn(gc, lambda g: gc.tensor(3.0, device="cuda"))
    s = gc.tensor(1.0, requires_grad=True)
    scalar.apply(s).backward()
    assert s.grad.device == gc.device("cpu") and s.grad.item() == 3.0


# ---- item 10 and 18: what a tensor hook returns ---------------------------------------
def _hook_result(lib, hook, leaf):
    x = lib.ones(3, requires_grad=True)
    if leaf:
        x.register_hook(hook)
        y = x * 2
    else:
        h = x * 1
        h.register_hook(hook)
        y = h * 2
    try:
        y.sum().backward()
    except Exception as e:  # noqa: BLE001 - the error is the result compared
        return type(e), str(e)
    return x.grad.tolist()


def named_hook(g):
    return g[:1] * 5


class _CallableHook:  # no __name__: PyTorch calls it '<unknown>'
    def __call__(self, g):
        return g.sum()


@pytest.mark.parametrize("leaf", [True, False], ids=["leaf", "non-leaf"])
@pytest.mark.parametrize("hook,error,message", [
    (lambda g: g[:1], RuntimeError, "hook '<lambda>' has changed the size of value (was [3] "
                                    "got [1])"),
    (lambda g: g.sum(), RuntimeError, "hook '<lambda>' has changed the size of value (was [3] "
                                      "got [])"),
    (lambda g: g.expand(2, 3), RuntimeError, "hook '<lambda>' has changed the size of value "
                                             "(was [3] got [2, 3])"),
    (named_hook, RuntimeError, "hook 'named_hook' has changed the size of value (was [3] "
                               "got [1])"),
    (_CallableHook(), RuntimeError, "hook '<unknown>' has changed the size of value (was [3] "
                                    "got [])"),
    (lambda g: g.double(), RuntimeError, "hook '<lambda>' has changed the type of value (was "
                                         "gradcore.FloatTensor got gradcore.DoubleTensor)"),
    (lambda g: 1.0, TypeError, "expected Variable, but hook returned 'float'"),
    (lambda g: [1.0, 1.0, 1.0], TypeError, "expected Variable, but hook returned 'list'"),
])
def test_hook_returning_another_shape_dtype_or_a_non_tensor_raises(leaf, hook, error, message):
    """PyTorch's check of a hook's result: the same type and size as the gradient it
    was given, or an error naming the hook (before: .grad took the shape or dtype the hook
    returned, and a float gave "'float' object has no attribute '_data'")."""
    assert _hook_result(gc, hook, leaf) == (error, message)
    if HAVE_TORCH:
        cls, text = _hook_result(torch, hook, leaf)
        assert cls is error
        assert message.replace("gradcore.", "torch.").startswith(text.split(" (was [")[0])


def test_hook_result_of_the_same_type_and_size_is_used(device):
    assert _hook_result(gc, lambda g: g * 3, leaf=True) == [6.0, 6.0, 6.0]
    assert _hook_result(gc, lambda g: g * 3, leaf=False) == [6.0, 6.0, 6.0]


def test_hook_moving_the_gradient_to_another_device_raises(standin):
    x = gc.ones(3, requires_grad=True)
    x.register_hook(lambda g: g.to("cuda"))
    with pytest.raises(RuntimeError, match=r"hook '<lambda>' has changed the type of value "
                                           r"\(was gradcore.FloatTensor got "
                                           r"gradcore.cuda.FloatTensor\)"):
        (x * 2).sum().backward()


def test_hook_checks_apply_to_autograd_grad():
    x = gc.ones(3, requires_grad=True)
    x.register_hook(lambda g: g[:1])
    with pytest.raises(RuntimeError, match="hook '<lambda>' has changed the size of value"):
        gc.autograd.grad((x * 2).sum(), x)


# ---- item 10: the root gradient of backward(gradient=) ---------------------------------
@pytest.mark.parametrize("gdtype", ["int64", "int32", "bool", "float64", "float16"])
@pytest.mark.parametrize("through", ["op", "leaf", "grad"])
def test_root_gradient_is_cast_to_the_output_dtype(device, gdtype, through):
    """An integer (or other) gradient= is cast to the output's dtype, as PyTorch does;
    .grad of a float32 leaf stays float32 (before: backward(gc.ones(3, dtype=int64))
    made x.grad int64)."""
    def run(lib, dev):
        x = lib.ones(3, requires_grad=True, device=dev)
        g = lib.ones(3, dtype=getattr(lib, gdtype), device=dev)
        if through == "grad":
            (r,) = lib.autograd.grad(x * 2, x, g)
        else:
            (x * 2 if through == "op" else x).backward(g)
            r = x.grad
        return str(r.dtype).split(".")[-1], r.tolist()

    expected = ("float32", [1.0, 1.0, 1.0] if through == "leaf" else [2.0, 2.0, 2.0])
    assert run(gc, device) == expected
    if HAVE_TORCH:
        assert run(torch, "cpu") == expected


# ---- item 18: reading .grad of a non-leaf warns ---------------------------------------
_NONLEAF_MESSAGE = ("The .grad attribute of a Tensor that is not a leaf Tensor is being "
                    "accessed. Its .grad attribute won't be populated during "
                    "autograd.backward(). If you indeed want the .grad field to be populated "
                    "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
                    "access the non-leaf Tensor by mistake, make sure you access the leaf "
                    "Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more "
                    "information.")


def test_reading_grad_of_a_non_leaf_warns(device):
    x = gc.ones(3, requires_grad=True)
    y = x * 2
    with pytest.warns(UserWarning) as record:
        assert y.grad is None
    assert len(record) == 1 and str(record[0].message) == _NONLEAF_MESSAGE
    assert record[0].filename == __file__  # points at the user's line
    if HAVE_TORCH:
        ty = torch.ones(3, requires_grad=True) * 2
        with pytest.warns(UserWarning) as trecord:
            assert ty.grad is None
        assert str(trecord[0].message).startswith(_NONLEAF_MESSAGE)


def test_no_warning_for_leaves_retained_or_assigned_grads(device):
    x = gc.ones(3, requires_grad=True)
    c = gc.ones(3)
    p = gc.nn.Parameter(gc.ones(3))
    y, z, w = x * 2, x * 3, x * 4
    y.retain_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.grad is None and c.grad is None and p.grad is None
        assert y.grad is None  # retain_grad(): no warning, as in PyTorch
        (y + z).sum().backward(inputs=[z])
        np.testing.assert_array_equal(host(z.grad), [1.0, 1.0, 1.0])  # now set: no warning
        w.grad = gc.zeros(3)
        assert w.grad is not None
        (y * 1).sum().backward()
        np.testing.assert_array_equal(host(y.grad), [1.0, 1.0, 1.0])
        np.testing.assert_array_equal(host(x.grad), [2.0, 2.0, 2.0])
        assert p.grad is None


def test_leaf_grad_reads_bypass_the_warning():
    """The warning costs nothing on a set .grad (an instance attribute, read first) and
    nothing at all on Parameters, whose class keeps a plain None default (the optimizers'
    loops read p.grad twice a step per parameter)."""
    assert gc.nn.Parameter.__dict__["grad"] is None
    x = gc.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    assert "grad" in vars(x)
