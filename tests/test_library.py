"""gradcore.library (torch.library's custom ops) and gc.ops.<namespace>.<name>.

Most tests take ``lib``: they run once on gradcore and once on PyTorch (skipped when it is
absent) with the same definitions and the same assertions, so what is asserted is what
PyTorch does.
"""

import itertools
import typing

import numpy as np
import pytest

import gradcore as gc

from conftest import HAVE_TORCH, host, needs_torch

LIBS = ["gc", pytest.param("torch", marks=needs_torch)]
_ids = itertools.count()


def _lib(name):
    if name == "gc":
        return gc
    import torch
    return torch


def _name(stem):
    """A fresh op name (PyTorch's registry is process-wide)."""
    return f"gctest::{stem}_{next(_ids)}"


def _values(t):
    return host(t) if isinstance(t, gc.Tensor) else t.detach().numpy()


def _ops_attr(L, qualname):
    ns, name = qualname.split("::")
    return getattr(getattr(L.ops, ns), name)


@pytest.mark.parametrize("lib", LIBS)
def test_sin_with_fake_and_autograd(lib):
    L = _lib(lib)
    name = _name("mysin")

    @L.library.custom_op(name, mutates_args=())
    def mysin(x: L.Tensor) -> L.Tensor:
        return L.from_numpy(np.sin(x.numpy()))

    @mysin.register_fake
    def _(x):
        return L.empty_like(x)

    x = L.tensor([0.5, -1.0, 2.0], dtype=L.float64, requires_grad=True)
    y = mysin(x)
    np.testing.assert_allclose(_values(y), np.sin([0.5, -1.0, 2.0]))
    assert y.requires_grad
    with pytest.raises(RuntimeError, match=r"Trying to backward through gctest\.mysin_\d+\."
                                           r"default but no autograd formula was registered. "
                                           r"Please use register_autograd to add one\."):
        y.sum().backward()
    assert not mysin(x.detach()).requires_grad

    def setup_context(ctx, inputs, output):
        assert type(inputs) is tuple
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()

    mysin.register_autograd(backward, setup_context=setup_context)
    op = _ops_attr(L, name)
    op(x).sum().backward()
    np.testing.assert_allclose(_values(x.grad), np.cos([0.5, -1.0, 2.0]))
    assert str(op) == name.replace("::", ".")
    assert str(op.default) == name.replace("::", ".") + ".default"
    np.testing.assert_allclose(_values(op.default(x)), np.sin([0.5, -1.0, 2.0]))
    assert repr(mysin) == f"<CustomOpDef({name})>"
    assert L.autograd.gradcheck(mysin, (x,))


@pytest.mark.parametrize("lib", LIBS)
def test_composite_kernel_second_derivative(lib):
    L = _lib(lib)

    @L.library.custom_op(_name("cube"), mutates_args=())
    def cube(x: L.Tensor) -> L.Tensor:
        return x * x * x

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * grad * x * x

    cube.register_autograd(backward, setup_context=setup_context)
    x = L.tensor([1.0, 2.0], requires_grad=True)
    (g,) = L.autograd.grad(cube(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(_values(g), [3.0, 12.0])
    (gg,) = L.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(_values(gg), [6.0, 12.0])


@pytest.mark.parametrize("lib", LIBS)
def test_non_tensor_and_keyword_only_args(lib):
    L = _lib(lib)
    seen = {}

    @L.library.custom_op(_name("scale"), mutates_args=())
    def scale(x: L.Tensor, a: float, *, k: int = 2) -> L.Tensor:
        return x * a * k

    def setup(ctx, inputs, keyword_only_inputs, output):
        seen["inputs"] = [type(v).__name__ for v in inputs]
        seen["kw"] = dict(keyword_only_inputs)
        ctx.a, ctx.k = inputs[1], keyword_only_inputs["k"]

    def backward(ctx, g):
        seen["needs"] = ctx.needs_input_grad
        return g * ctx.a * ctx.k, None

    scale.register_autograd(backward, setup_context=setup)
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    scale(x, 2.0).sum().backward()
    np.testing.assert_allclose(_values(x.grad), [4.0, 4.0, 4.0])
    assert seen == {"inputs": ["Tensor", "float"], "kw": {"k": 2}, "needs": (True, False)}
    np.testing.assert_allclose(_values(scale(x, a=1.0, k=1)), [1.0, 2.0, 3.0])
    assert str(scale._opoverload._schema).endswith("(Tensor x, float a, *, SymInt k=2) -> Tensor")

    # an op with keyword-only arguments calls setup_context with keyword_only_inputs
    @L.library.custom_op(_name("scale2"), mutates_args=())
    def scale2(x: L.Tensor, *, k: int = 2) -> L.Tensor:
        return x * k

    def setup2(ctx, inputs, output):
        pass

    scale2.register_autograd(lambda ctx, g: g, setup_context=setup2)
    with pytest.raises(TypeError, match="keyword_only_inputs"):
        scale2(x)


@pytest.mark.parametrize("lib", LIBS)
def test_call_checked_against_schema(lib):
    L = _lib(lib)
    name = _name("sc")

    @L.library.custom_op(name, mutates_args=())
    def sc(x: L.Tensor, a: float, s: str = "m", o: L.Tensor | None = None,
           *, k: int = 2) -> L.Tensor:
        return x * a

    x = L.ones(2)
    decl = rf"Declaration: {name}\(Tensor x, float a, str s=\"m\", Tensor\? o=None, \*, " \
           r"SymInt k=2\) -> Tensor"
    with pytest.raises(RuntimeError, match=rf"^{name}\(\) Expected a value of type 'Tensor' for "
                                           r"argument 'x' but instead found type 'int'\.\n"
                                           r"Position: 0\nValue: 3\n" + decl):
        sc(3, 2.0)
    with pytest.raises(RuntimeError, match=rf"^{name}\(\) is missing value for argument 'a'\. "
                                           + decl):
        sc(x)
    with pytest.raises(RuntimeError, match=rf"^{name}\(\) takes 4 positional argument\(s\) "
                                           r"but 5 was/were given\.  " + decl):
        sc(x, 1.0, "m", None, 3)
    with pytest.raises(RuntimeError, match=r"Expected a value of type 'Optional\[Tensor\]' for "
                                           r"argument 'o' but instead found type 'int'"):
        sc(x, 1.0, "m", 3)
    with pytest.raises(RuntimeError, match=r"Expected a value of type 'int' for argument 'k' "
                                           r"but instead found type 'float'"):
        sc(x, 1.0, k=1.5)
    with pytest.raises(RuntimeError, match=rf"^{name}\(\) expected at most 5 argument\(s\) but "
                                           r"received 6 argument\(s\)\. " + decl):
        sc(x, 1.0, "m", None, k=3, z=3)
    with pytest.raises(RuntimeError, match=rf"^Unknown keyword argument 'z' for operator "
                                           rf"'{name}'\. Schema: {name}\(Tensor x"):
        sc(x, 1.0, z=3)
    np.testing.assert_allclose(_values(sc(x, True)), [1.0, 1.0])  # (a bool is a float)


@pytest.mark.parametrize("lib", LIBS)
def test_outputs_must_not_alias_inputs(lib):
    L = _lib(lib)
    msg = r"The output of this custom operator \(1\) must not also be an input"

    @L.library.custom_op(_name("ident"), mutates_args=())
    def ident(x: L.Tensor) -> L.Tensor:
        return x

    @L.library.custom_op(_name("view"), mutates_args=())
    def view(x: L.Tensor) -> L.Tensor:
        return x.view(-1)

    @L.library.custom_op(_name("twice"), mutates_args=())
    def twice(x: L.Tensor) -> typing.Tuple[L.Tensor, L.Tensor]:  # noqa: UP006
        y = x.clone()
        return y, y[:1]

    for op in (ident, view, twice):
        with pytest.raises(RuntimeError, match=msg):
            op(L.ones(2))
        with pytest.raises(RuntimeError, match=msg):
            op(L.ones(2, requires_grad=True))


@pytest.mark.parametrize("lib", LIBS)
def test_tuple_and_list_outputs(lib):
    L = _lib(lib)
    got = {}

    @L.library.custom_op(_name("two"), mutates_args=())
    def two(x: L.Tensor) -> typing.Tuple[L.Tensor, L.Tensor]:  # noqa: UP006
        return x * 2, x * 3

    def b2(ctx, g1, g2):
        got["g2"] = _values(g2)
        return g1 * 2 + g2 * 3

    two.register_autograd(b2)
    x = L.tensor([1.0, 2.0], requires_grad=True)
    out = two(x)
    assert type(out) is tuple and len(out) == 2
    out[0].sum().backward()
    np.testing.assert_allclose(_values(x.grad), [2.0, 2.0])
    np.testing.assert_allclose(got["g2"], [0.0, 0.0])  # (materialized zeros)

    @L.library.custom_op(_name("lst"), mutates_args=())
    def lst(xs: typing.List[L.Tensor], w: float) -> typing.List[L.Tensor]:  # noqa: UP006
        return [t * w for t in xs]

    def bl(ctx, gs):
        got["needs"] = ctx.needs_input_grad
        got["gs"] = type(gs).__name__
        return [g * 2.0 for g in gs], None

    lst.register_autograd(bl)
    x.grad = None
    y = L.tensor([1.0, 1.0, 1.0])
    r = lst([x, y], 2.0)
    assert type(r) is list and len(r) == 2
    (r[0].sum() + r[1].sum()).backward()
    np.testing.assert_allclose(_values(x.grad), [2.0, 2.0])
    assert got["needs"] == ([True, False], False) and got["gs"] == "list"

    lst.register_autograd(lambda ctx, gs: (gs[0], gs[1], None))
    with pytest.raises(RuntimeError, match="Expected the return from backward to be of the "
                                           "same structure as the inputs"):
        lst([x, y], 2.0)[0].sum().backward()

    @L.library.custom_op(_name("mixed"), mutates_args=())
    def mixed(x: L.Tensor) -> typing.Tuple[L.Tensor, int]:  # noqa: UP006
        return x * 2, 3

    def bm(ctx, g, gi):
        got["gi"] = gi
        return g * 2

    mixed.register_autograd(bm)
    x.grad = None
    o, n = mixed(x)
    assert n == 3
    o.sum().backward()
    assert got["gi"] is None
    np.testing.assert_allclose(_values(x.grad), [2.0, 2.0])


@pytest.mark.parametrize("lib", LIBS)
def test_kernel_result_must_fit_the_schema(lib):
    L = _lib(lib)

    @L.library.custom_op(_name("badret"), mutates_args=())
    def badret(x: L.Tensor) -> L.Tensor:
        return 3

    with pytest.raises(RuntimeError, match="Unable to cast 3 to Tensor"):
        badret(L.ones(1))


@pytest.mark.parametrize("lib", LIBS)
def test_wrong_number_of_gradients(lib):
    L = _lib(lib)

    @L.library.custom_op(_name("wn"), mutates_args=())
    def wn(x: L.Tensor, y: L.Tensor) -> L.Tensor:
        return x * y

    wn.register_autograd(lambda ctx, g: g)
    x = L.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"function GeneratedBackwardFor_gctest_wn_\d+_"
                                           r"defaultBackward returned an incorrect number of "
                                           r"gradients \(expected 3, got 2\)"):
        wn(x, L.ones(3)).sum().backward()


@pytest.mark.parametrize("lib", LIBS)
def test_mutating_op(lib):
    L = _lib(lib)
    name = _name("addone_")

    @L.library.custom_op(name, mutates_args={"x"})
    def addone_(x: L.Tensor) -> None:
        x.numpy()[...] += 1  # (behind autograd's back: the op bumps the version)

    z = L.zeros(2)
    v0 = z._version
    assert addone_(z) is None
    np.testing.assert_allclose(_values(z), [1.0, 1.0])
    assert z._version > v0
    with pytest.raises(RuntimeError, match=r"Cannot register autograd formula for non-"
                                           r"functional operator <CustomOpDef\(" + name +
                                           r"\)> with schema " + name +
                                           r"\(Tensor\(a0!\) x\) -> \(\)\. Please create"):
        addone_.register_autograd(lambda ctx, g: g)
    # saved for a backward, then mutated by the op: the backward refuses
    w = L.ones(2, requires_grad=True)
    h = w * 1
    s = (h * h).sum()
    addone_(h)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        s.backward()


@pytest.mark.parametrize("lib", LIBS)
def test_infer_schema_errors(lib):
    L = _lib(lib)
    cases = []

    def noann(x):
        return x
    cases.append((noann, (), r"infer_schema\(func\): Parameter x must have a type annotation"))

    def noret(x: L.Tensor):
        return x
    cases.append((noret, (), "No return type annotation was provided. Please add one."))

    def tup(x: typing.Tuple[int, int]) -> L.Tensor:  # noqa: UP006
        return x
    cases.append((tup, (), "We do not support Tuple inputs in schema"))

    def va(*x: L.Tensor) -> L.Tensor:
        return x
    cases.append((va, (), "We do not support positional-only args, varargs, or varkwargs"))

    def mut(x: L.Tensor) -> L.Tensor:
        return x
    cases.append((mut, ("y",), r"\{'y'\} in mutates_args were not found in the custom op's "
                               "signature"))

    def mutint(x: L.Tensor, n: int) -> L.Tensor:
        return x
    cases.append((mutint, ("n",), "Parameter n is in mutable_args but only Tensors or "
                                  "collections of Tensors can be mutated"))

    def badret(x: L.Tensor) -> dict:
        return x
    cases.append((badret, (), "Return has unsupported type"))
    for fn, mutates, msg in cases:
        with pytest.raises(ValueError, match=msg):
            L.library.custom_op(_name("bad"), mutates_args=mutates)(fn)

    def kwt(x: L.Tensor, *, y: L.Tensor) -> L.Tensor:
        return x
    with pytest.raises(NotImplementedError, match="custom_op with kwarg-only Tensor args"):
        L.library.custom_op(_name("kwt"), mutates_args=())(kwt)


@needs_torch
def test_infer_schema_matches_torch():
    import torch

    def make(L):  # (typing's spellings on purpose: the schema knows them as PyTorch does)
        def many(x: L.Tensor, ys: typing.List[L.Tensor], a: int,  # noqa: UP006
                 b: float = 2.0, c: bool = True, s: str = "hi",
                 o: typing.Optional[L.Tensor] = None,  # noqa: UP045
                 d: typing.Optional[L.dtype] = None,  # noqa: UP045
                 z: typing.Optional[typing.Sequence[float]] = None, *, k: int = 3,  # noqa: UP045
                 n: typing.Union[int, float, bool] = 1  # noqa: UP007
                 ) -> typing.Tuple[L.Tensor, L.Tensor]:  # noqa: UP006
            return x, x

        def single(x: L.Tensor, dt: L.dtype = L.float32) -> typing.Tuple[L.Tensor]:  # noqa: UP006
            return (x,)

        def lists(xs: list[typing.Optional[L.Tensor]],  # noqa: UP045
                  m: list[int] | None) -> list[L.Tensor]:
            return xs

        def nothing(x: L.Tensor, y: L.Tensor) -> None:
            return None

        def count(x: L.Tensor) -> int:
            return 1
        return [many, single, lists, nothing, count]

    for g, t in zip(make(gc), make(torch)):
        for mutates in ((), "unknown"):
            assert gc.library.infer_schema(g, mutates_args=mutates) == \
                torch.library.infer_schema(t, mutates_args=mutates)
        assert gc.library.infer_schema(g, mutates_args=(), op_name="foo") == \
            torch.library.infer_schema(t, mutates_args=(), op_name="foo")
    g, t = make(gc)[3], make(torch)[3]
    assert gc.library.infer_schema(g, mutates_args={"y"}) == \
        torch.library.infer_schema(t, mutates_args={"y"}) == "(Tensor x, Tensor(a1!) y) -> ()"


def test_explicit_schema():
    @gc.library.custom_op(_name("ex"), mutates_args=(), schema="(Tensor x, int n=2) -> Tensor")
    def ex(x, n=2):
        return x * n

    np.testing.assert_allclose(host(ex(gc.ones(2))), [2.0, 2.0])
    np.testing.assert_allclose(host(ex(gc.ones(2), n=3)), [3.0, 3.0])
    with pytest.raises(ValueError, match="The schema suggests that the op mutates"):
        gc.library.custom_op(_name("ex2"), lambda x: None, mutates_args=(),
                             schema="(Tensor(a0!) x) -> ()")


@pytest.mark.parametrize("lib", LIBS)
def test_register_functions_by_name(lib):
    L = _lib(lib)
    name = _name("f")

    @L.library.custom_op(name, mutates_args=())
    def f(x: L.Tensor) -> L.Tensor:
        return x * 2

    L.library.register_autograd(name, lambda ctx, g: g * 2)
    x = L.ones(2, requires_grad=True)
    f(x).sum().backward()
    np.testing.assert_allclose(_values(x.grad), [2.0, 2.0])

    @L.library.register_kernel(name, "cpu")
    def _(x):
        return x * 5

    np.testing.assert_allclose(_values(f(L.ones(1))), [5.0])
    fake = L.library.register_fake(name)(lambda x: L.empty_like(x))
    assert callable(fake)
    with pytest.raises(RuntimeError, match="operator gctest::undefined does not exist"):
        L.library.register_fake("gctest::undefined")(lambda x: x)
    with pytest.raises(AttributeError, match="has no attribute 'undefined'"):
        L.library.register_autograd("gctest::undefined", lambda ctx, g: g)
    with pytest.raises(AttributeError, match="has no attribute 'undefined'"):
        _ops_attr(L, "gctest::undefined")


def test_set_kernel_enabled():
    @gc.library.custom_op(_name("zero"), mutates_args=())
    def f(x: gc.Tensor) -> gc.Tensor:
        return gc.zeros(1)

    @f.register_kernel("cpu")
    def _(x):
        return gc.ones(1)

    assert f(gc.ones(1)).item() == 1.0
    with f.set_kernel_enabled("cpu", enabled=False):
        assert f(gc.ones(1)).item() == 0.0
    assert f(gc.ones(1)).item() == 1.0


def test_kernel_per_device(device):
    @gc.library.custom_op(_name("which"), mutates_args=())
    def which(x: gc.Tensor) -> gc.Tensor:
        return x + 0

    @which.register_kernel("cpu")
    def _(x):
        return x + 1

    @which.register_kernel("cuda")
    def _(x):
        return x + 2

    x = gc.zeros(2, device=device)
    out = which(x)
    assert out.device == x.device
    np.testing.assert_allclose(host(out), [1.0, 1.0] if device == "cpu" else [2.0, 2.0])

    @gc.library.custom_op(_name("cudaonly"), mutates_args=(), device_types="cuda")
    def cudaonly(x: gc.Tensor) -> gc.Tensor:
        return x * 3

    if device == "cpu":
        with pytest.raises(NotImplementedError, match="Could not run 'gctest::cudaonly_\\d+' "
                                                      "with arguments from the 'CPU' backend"):
            cudaonly(x)
    else:
        np.testing.assert_allclose(host(cudaonly(x + 1)), [3.0, 3.0])


@pytest.mark.parametrize("lib", LIBS)
def test_factory_op_needs_a_device_argument(lib):
    L = _lib(lib)
    with pytest.raises(ValueError, match="Functions without tensor inputs are required to have "
                                         "a `device: torch.device` argument"):
        @L.library.custom_op(_name("fac"), mutates_args=(), device_types="cpu")
        def fac(n: int) -> L.Tensor:
            return L.ones(n)

    @L.library.custom_op(_name("fac2"), mutates_args=(), device_types="cpu")
    def fac2(n: int, device: L.device) -> L.Tensor:
        return L.ones(n)

    np.testing.assert_allclose(_values(fac2(2, "cpu")), [1.0, 1.0])


def _opcheck_ops(L):
    @L.library.custom_op(_name("s"), mutates_args=())
    def s(x: L.Tensor, a: float = 1.0) -> L.Tensor:
        return L.from_numpy(np.sin(x.numpy()) * a)

    def setup(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.a = inputs[1]
    return s, setup


@pytest.mark.filterwarnings("ignore:Error detected in")  # (PyTorch's opcheck, anomaly mode)
@pytest.mark.parametrize("lib", LIBS)
def test_opcheck(lib):
    L = _lib(lib)
    s, setup = _opcheck_ops(L)
    x = L.tensor([0.3, -1.2, 2.0], dtype=L.float64, requires_grad=True)
    r = L.library.opcheck(s, (x,), raise_exception=False)
    assert r["test_schema"] == "SUCCESS" and r["test_autograd_registration"] == "SUCCESS"
    assert "There was no fake impl registered for <CustomOpDef(" in str(r["test_faketensor"])
    assert "no autograd formula was registered" in str(r["test_aot_dispatch_dynamic"])

    s.register_fake(lambda x, a=1.0: L.empty_like(x))
    s.register_autograd(lambda ctx, g: (g * ctx.saved_tensors[0].cos() * ctx.a, None),
                        setup_context=setup)
    assert set(L.library.opcheck(s, (x,)).values()) == {"SUCCESS"}
    assert set(L.library.opcheck(s, (x.detach(), 2.0)).values()) == {"SUCCESS"}

    s.register_fake(lambda x, a=1.0: L.empty(2, dtype=L.float64))
    r = L.library.opcheck(s, (x,), raise_exception=False)
    assert "Shapes" in str(r["test_faketensor"]) and "are not equal" in str(r["test_faketensor"])
    with pytest.raises(Exception, match=r"opcheck\(op, \.\.\.\): test_faketensor failed with"):
        L.library.opcheck(s, (x,), test_utils="test_faketensor")
    s.register_fake(lambda x, a=1.0: L.empty_like(x, dtype=L.float32))
    r = L.library.opcheck(s, (x,), test_utils=("test_faketensor",), raise_exception=False)
    assert r["test_faketensor"] != "SUCCESS"

    @L.library.custom_op(_name("m"), mutates_args=())
    def m(x: L.Tensor) -> L.Tensor:
        x.numpy()[...] += 1
        return x.clone()

    t = L.zeros(2)
    r = L.library.opcheck(m, (t,), test_utils="test_schema", raise_exception=False)
    assert str(r["test_schema"]) == "Argument x is not defined as mutable but was mutated"
    np.testing.assert_allclose(_values(t), [0.0, 0.0])  # (opcheck works on copies)
    with pytest.raises(ValueError, match="expected test_utils to be subset of"):
        L.library.opcheck(m, (t,), test_utils="test_nothing")
    with pytest.raises(ValueError, match="if you specify one of rtol/atol, you must specify "
                                         "both"):
        L.library.opcheck(m, (t,), atol=1e-3)


def test_opcheck_compares_gradients_with_differences():
    """gradcore's opcheck also compares a float64 backward with central differences."""
    s, setup = _opcheck_ops(gc)
    s.register_fake(lambda x, a=1.0: gc.empty_like(x))
    s.register_autograd(lambda ctx, g: (g * 2, None), setup_context=setup)  # (wrong)
    x = gc.tensor([0.3, -1.2, 2.0], dtype=gc.float64, requires_grad=True)
    r = gc.library.opcheck(s, (x,), raise_exception=False)
    assert "disagrees with central differences" in str(r["test_aot_dispatch_dynamic"])
    with pytest.raises(gc.library.OpCheckError, match="test_aot_dispatch_dynamic failed"):
        gc.library.opcheck(s, (x,))
    # float32: the gradients' shapes and dtypes only
    x32 = gc.tensor([0.3, -1.2], requires_grad=True)
    assert gc.library.opcheck(s, (x32,))["test_aot_dispatch_dynamic"] == "SUCCESS"
    s.register_autograd(lambda ctx, g: (g[:1], None), setup_context=setup)
    r = gc.library.opcheck(s, (x32,), raise_exception=False)
    assert r["test_aot_dispatch_dynamic"] != "SUCCESS"


def test_ops_module_keeps_its_own_names():
    import gradcore.ops as ops

    assert ops.add is gc.add.__wrapped__ if hasattr(gc.add, "__wrapped__") else callable(ops.add)
    assert ops.shape.__name__ == "gradcore.ops.shape"
    with pytest.raises(AttributeError, match="module 'gradcore.ops' has no attribute "
                                             "'no_such_namespace'"):
        ops.no_such_namespace  # noqa: B018
    assert not hasattr(ops, "__no_such__")
    name = _name("visible")

    @gc.library.custom_op(name, mutates_args=())
    def visible(x: gc.Tensor) -> gc.Tensor:
        return x + 1

    assert name.split("::")[1] in dir(ops.gctest)
    assert ops.gctest is not None and gc.ops.gctest.__getattr__(name.split("::")[1])._op \
        is visible


def test_gradients_compared_with_torch():
    """Gradients through a custom op with two tensor inputs and a float equal PyTorch's."""
    if not HAVE_TORCH:
        pytest.skip("PyTorch is not installed (pip install torch==2.13.0)")
    import torch

    def define(L):
        @L.library.custom_op(_name("lerpish"), mutates_args=())
        def lerpish(a: L.Tensor, b: L.Tensor, w: float) -> L.Tensor:
            return a + (b - a) * w

        def setup(ctx, inputs, output):
            ctx.w = inputs[2]

        def backward(ctx, g):
            return (g * (1 - ctx.w) if ctx.needs_input_grad[0] else None,
                    g * ctx.w if ctx.needs_input_grad[1] else None, None)
        lerpish.register_autograd(backward, setup_context=setup)
        return lerpish

    rng = np.random.default_rng(0)
    a0, b0 = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    res = []
    for L in (gc, torch):
        op = define(L)
        a = L.tensor(a0, requires_grad=True)
        b = L.tensor(b0, requires_grad=True)
        (op(a, b, 0.25) ** 2).sum().backward()
        res.append((_values(a.grad), _values(b.grad)))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-12)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-12)


def test_aliasing_checked_on_every_device(device):
    @gc.library.custom_op(_name("slice"), mutates_args=())
    def first(x: gc.Tensor) -> gc.Tensor:
        return x[:1]

    @gc.library.custom_op(_name("fresh"), mutates_args=())
    def fresh(x: gc.Tensor) -> gc.Tensor:
        return x[:1].clone()

    x = gc.arange(3.0, device=device)
    with pytest.raises(RuntimeError, match="must not also be an input"):
        first(x)
    np.testing.assert_allclose(host(fresh(x)), [0.0])


@pytest.mark.parametrize("lib", LIBS)
def test_numpy_of_a_tensor_requiring_grad_under_no_grad(lib):
    """What custom-op kernels rely on: ``x.numpy()`` is refused only while grad mode is on."""
    L = _lib(lib)
    x = L.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires "
                                           "grad"):
        x.numpy()
    with pytest.raises(RuntimeError, match="requires grad"):
        np.asarray(x)
    with L.no_grad():
        np.testing.assert_allclose(x.numpy(), [1.0, 1.0])
        np.testing.assert_allclose(np.asarray(x), [1.0, 1.0])
