"""Function transforms and their neighbours, checked against PyTorch: the Jacobians and
vector products of ``gc.autograd.functional``, ``gc.func`` (grad, vjp, jacrev, vmap,
functional_call, ...), saved-tensor hooks, activation checkpointing, and the
``gc.jit`` / ``gc.compiler`` names that let PyTorch programs run unchanged."""

import sys

import numpy as np
import pytest

import gradcore as gc
import gradcore.autograd.functional as GF

torch = pytest.importorskip("torch", reason="the results are compared with PyTorch's")
TF = torch.autograd.functional

RNG = np.random.default_rng(0)
X = RNG.standard_normal(3).astype(np.float32)
Y = RNG.standard_normal((2, 2)).astype(np.float32)


def _to(lib, value):
    if isinstance(value, tuple):
        return tuple(_to(lib, v) for v in value)
    return lib.tensor(value) if isinstance(value, np.ndarray) else value


def same(t, g, rtol=1e-5):
    """Nested tuples of tensors (or one tensor) alike in structure, shape and value."""
    if isinstance(t, (tuple, list)):
        assert type(g) is type(t) and len(g) == len(t), (t, g)
        for a, b in zip(t, g):
            same(a, b, rtol)
        return
    if isinstance(t, dict):
        assert isinstance(g, dict) and g.keys() == t.keys()
        for k in t:
            same(t[k], g[k], rtol)
        return
    if not isinstance(t, torch.Tensor):
        assert t == g
        return
    assert isinstance(g, gc.Tensor), type(g)
    assert tuple(g.shape) == tuple(t.shape), (g.shape, t.shape)
    assert g.requires_grad == t.requires_grad
    np.testing.assert_allclose(g.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=1e-6)


def both(fn, args, **kwargs):
    """``fn(lib)(*args)`` with torch and with gradcore, compared."""
    expected = fn(torch)(*_to(torch, args), **kwargs)
    got = fn(gc)(*_to(gc, args), **kwargs)
    same(expected, got)
    return got


def same_error(fn, args, **kwargs):
    """Both raise the same error type with the same message (torch -> gradcore)."""
    with pytest.raises(Exception) as expected:
        fn(torch)(*_to(torch, args), **kwargs)
    with pytest.raises(type(expected.value)) as got:
        fn(gc)(*_to(gc, args), **kwargs)
    assert str(got.value) == str(expected.value).replace("torch.Size", "gradcore.Size"), \
        (str(got.value), str(expected.value))


# ------------------------------------------------------------- autograd.functional

def _af(name, f):
    return lambda lib: lambda *a, **k: getattr(lib.autograd.functional, name)(f(lib), *a, **k)


ONE = lambda lib: lambda a: a ** 2 * a.sum()  # noqa: E731
TWO = lambda lib: lambda a, b: (a.sum() * b, a.exp() * 3)  # noqa: E731
SCALAR = lambda lib: lambda a: (a ** 3).sum() + a.prod()  # noqa: E731
SCALAR2 = lambda lib: lambda a, b: (a ** 2).sum() * (b ** 3).sum()  # noqa: E731


@pytest.mark.parametrize("kwargs", [{}, {"create_graph": True}, {"vectorize": True},
                                    {"vectorize": True, "strategy": "forward-mode"}])
def test_jacobian_one_input_and_tuples(kwargs):
    both(_af("jacobian", ONE), (X,), **kwargs)
    both(_af("jacobian", TWO), ((X, Y),), **kwargs)
    both(_af("jacobian", lambda lib: lambda a: (a * 2,)), (X,), **kwargs)
    both(_af("jacobian", lambda lib: lambda a, b: a.sum() * b), ((X, Y),), **kwargs)


def test_jacobian_of_an_unused_input_is_zeros_and_strict_raises():
    f = _af("jacobian", lambda lib: lambda a, b: a * 2)
    both(f, ((X, Y),))
    same_error(f, ((X, Y),), strict=True)
    same_error(_af("jacobian", lambda lib: lambda a: a.detach()), (X,), strict=True)
    same_error(f, ((X, Y),), strict=True, vectorize=True)


def test_jacobian_argument_errors():
    f = _af("jacobian", ONE)
    same_error(f, (X,), strategy="sideways")
    same_error(f, (X,), strategy="forward-mode")
    same_error(f, (X,), strategy="forward-mode", create_graph=True, vectorize=True)
    same_error(f, (X,), strategy="forward-mode", strict=True, vectorize=True)
    same_error(f, ([X],))
    same_error(f, ((X, 3.0),))
    same_error(_af("jacobian", lambda lib: lambda a: 3.0), (X,))


def test_jacobian_with_create_graph_is_differentiable():
    for lib in (torch, gc):
        x = lib.tensor(X, requires_grad=True)
        jac = lib.autograd.functional.jacobian(lambda a: a ** 3, x, create_graph=True)
        assert jac.requires_grad
        (g,) = lib.autograd.grad(jac.sum(), x)
        if lib is torch:
            expected = g
    same(expected, g)
    x = gc.tensor(X, requires_grad=True)
    assert not gc.autograd.functional.jacobian(lambda a: a ** 3, x).requires_grad


@pytest.mark.parametrize("kwargs", [{}, {"create_graph": True}, {"vectorize": True}])
def test_hessian(kwargs):
    both(_af("hessian", SCALAR), (X,), **kwargs)
    both(_af("hessian", SCALAR2), ((X, Y),), **kwargs)


def test_hessian_errors():
    same_error(_af("hessian", ONE), (X,))
    same_error(_af("hessian", lambda lib: lambda a: (a.sum(), a.sum())), (X,))
    same_error(_af("hessian", lambda lib: lambda a: (a * 2).sum()), (X,), strict=True)
    same_error(_af("hessian", SCALAR), (X,), outer_jacobian_strategy="up")


@pytest.mark.parametrize("name", ["vjp", "jvp", "vhp", "hvp"])
@pytest.mark.parametrize("create_graph", [False, True])
def test_vector_products(name, create_graph):
    vy = RNG.standard_normal((2, 2)).astype(np.float32)
    vx = RNG.standard_normal(3).astype(np.float32)
    if name in ("vjp", "jvp"):
        v_one = X * 0.5 if name == "jvp" else vx
        both(_af(name, ONE), (X, v_one), create_graph=create_graph)
        v_two = (vx, vy) if name == "jvp" else (vy, vx)
        both(_af(name, TWO), ((X, Y), v_two), create_graph=create_graph)
    else:
        both(_af(name, SCALAR), (X, vx), create_graph=create_graph)
        both(_af(name, SCALAR2), ((X, Y), (vx, vy)), create_graph=create_graph)


@pytest.mark.parametrize("name", ["vjp", "jvp", "vhp", "hvp"])
def test_vector_product_errors(name):
    f = SCALAR if name in ("vhp", "hvp") else ONE
    same_error(_af(name, f), (X,))  # v None but more than one element
    same_error(_af(name, f), (X, Y))  # v of the wrong size
    same_error(_af(name, SCALAR2), ((X, Y), (X,)))  # a tuple of the wrong length
    same_error(_af(name, SCALAR2), ((X, Y), (X, X)))  # entry 1 of the wrong size
    same_error(_af(name, lambda lib: lambda a: a.detach().sum()), (X, X), strict=True)


def test_vector_products_with_a_one_element_input_need_no_v():
    one = np.array([1.5], dtype=np.float32)
    for name in ("vjp", "jvp", "vhp", "hvp"):
        both(_af(name, lambda lib: lambda a: (a ** 3).sum()), (one,))


def test_unused_inputs_give_zeros_or_raise_in_strict_mode():
    f = _af("vjp", lambda lib: lambda a, b: a * 2)
    both(f, ((X, Y), X))
    same_error(f, ((X, Y), X), strict=True)
    f = _af("vhp", lambda lib: lambda a, b: (a ** 2).sum())
    both(f, ((X, Y), (X, Y)))
    same_error(f, ((X, Y), (X, Y)), strict=True)
    f = _af("hvp", lambda lib: lambda a: (a * 2).sum())
    both(f, (X, X))
    same_error(f, (X, X), strict=True)


ALIASED = {"torch.autograd.functional": "gradcore.autograd.functional"}


def test_torch_aliased_imports_reach_the_new_modules():
    """With gradcore as ``sys.modules["torch"]``, ``import torch.func`` and the like
    give gradcore's modules (gradcore's meta-path finder)."""
    import importlib  # noqa: PLC0415

    saved = sys.modules.get("torch")
    stashed = {name: sys.modules.pop(name) for name in ALIASED if name in sys.modules}
    sys.modules["torch"] = gc
    try:
        for alias, real in ALIASED.items():
            assert importlib.import_module(alias) is importlib.import_module(real)
        namespace = {}
        exec("from torch.autograd.functional import jacobian", namespace)
        assert namespace["jacobian"] is GF.jacobian
    finally:
        for name in ALIASED:
            sys.modules.pop(name, None)
        sys.modules.update(stashed)
        sys.modules["torch"] = saved
