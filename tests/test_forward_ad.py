"""``gc.autograd.forward_ad`` (PyTorch's ``torch.autograd.forward_ad``): dual tensors'
tangents against PyTorch's forward mode and ``gc.func.jvp``, what the results report
(``requires_grad``, ``is_leaf``, ``backward()``), levels and errors."""

import numpy as np
import pytest

import gradcore as gc
import gradcore.autograd.forward_ad as fwAD

from conftest import host

torch = pytest.importorskip("torch", reason="the tangents are compared with PyTorch's")
tfwAD = torch.autograd.forward_ad

RNG = np.random.default_rng(0)


def _arr(*shape):
    return RNG.standard_normal(shape)


# name -> (function of (lib, *inputs), input shapes, tangent shapes: None for the same;
# a tangent of another shape is broadcast to its input's with expand)
CASES = {
    "pointwise": (lambda L, x: (x.sin() * x.exp() + x ** 3).tanh(), [(3, 4)], None),
    "two inputs": (lambda L, x, y: x * y + y.sigmoid() / (1 + x * x), [(3, 4), (3, 4)], None),
    "broadcast inputs": (lambda L, x, y: x * y - x, [(3, 1), (4,)], None),
    "matmul": (lambda L, a, b: a @ b, [(3, 4), (4, 2)], None),
    "reductions": (lambda L, x: L.stack([x.sum(), x.mean(), x.amax(), x.norm(),
                                         x.logsumexp(dim=0).sum()]), [(3, 4)], None),
    "softmax": (lambda L, x: L.softmax(x, dim=-1), [(2, 5)], None),
    "log_softmax": (lambda L, x: L.nn.functional.log_softmax(x, dim=0), [(4, 3)], None),
    "conv2d": (lambda L, x, w: L.nn.functional.conv2d(x, w, padding=1), [(1, 2, 5, 5),
                                                                       (3, 2, 3, 3)], None),
    "indexing": (lambda L, x: x[1:, [0, 2]] * x[0, 1] + x[1:, -1:], [(3, 4)], None),
    "shapes": (lambda L, x: x.t().reshape(2, 6).cumsum(1)[:, ::2], [(3, 4)], None),
    "expanded tangents": (lambda L, x, y: x * y.cos(), [(3, 4), (3, 4)],
                          [(1, 4), (3, 1)]),
}


def _tangents(case):
    _, shapes, tshapes = CASES[case]
    tshapes = tshapes or shapes
    return [_arr(*s) for s in shapes], [_arr(*s) for s in tshapes], shapes


def _lib_tangent(lib, fw, fn, xs, ts, shapes):
    with fw.dual_level():
        duals = [fw.make_dual(lib.tensor(x), lib.tensor(t).expand(*s))
                 for x, t, s in zip(xs, ts, shapes)]
        out = fn(lib, *duals)
        primal, tangent = fw.unpack_dual(out)
    return primal, tangent


@pytest.mark.parametrize("case", list(CASES))
def test_tangents_match_pytorch(case, device):
    fn = CASES[case][0]
    xs, ts, shapes = _tangents(case)
    p, t = _lib_tangent(gc, fwAD, fn, xs, ts, shapes)
    tp, tt = _lib_tangent(torch, tfwAD, fn, xs, ts, shapes)
    np.testing.assert_allclose(host(p), tp.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(host(t), tt.numpy(), rtol=1e-9, atol=1e-10)
    assert t.dtype == gc.float64 and tuple(t.shape) == tuple(tt.shape)
    assert t.device == gc.device(device)


def test_a_tangent_on_another_device_is_refused(device):
    if gc.device(device).type == "cpu":
        pytest.skip("needs a second device")
    with fwAD.dual_level(), pytest.raises(RuntimeError, match="different device"):
        fwAD.make_dual(gc.zeros(3), gc.zeros(3, device="cpu"))


@pytest.mark.parametrize("case", ["two inputs", "matmul", "conv2d"])
def test_tangents_match_func_jvp(case):
    fn = CASES[case][0]
    xs, ts, _ = _tangents(case)
    _, t = _lib_tangent(gc, fwAD, fn, xs, ts, [x.shape for x in xs])
    out, jvp = gc.func.jvp(lambda *a: fn(gc, *a), tuple(gc.tensor(x) for x in xs),
                           tuple(gc.tensor(t) for t in ts))
    np.testing.assert_allclose(host(t), host(jvp), rtol=1e-12, atol=1e-12)


def test_only_the_dual_inputs_a_result_depends_on_count():
    x, y, tx, ty = (gc.tensor(_arr(3)) for _ in range(4))
    with fwAD.dual_level():
        dx, dy = fwAD.make_dual(x, tx), fwAD.make_dual(y, ty)
        np.testing.assert_allclose(host(fwAD.unpack_dual(dx * 2).tangent), host(2 * tx))
        np.testing.assert_allclose(host(fwAD.unpack_dual(dx + dy).tangent), host(tx + ty))
        assert fwAD.unpack_dual(x * 2).tangent is None  # the primal is no dual tensor
        assert fwAD.unpack_dual(gc.ones(3)).tangent is None
        assert fwAD.unpack_dual(dx > 0).tangent is None  # not floating point
        assert fwAD.unpack_dual(dx.detach() * 3).tangent is None
        assert fwAD.unpack_dual(dx).tangent is tx  # the tangent given, as it is


def test_requires_grad_and_history_as_pytorch_reports_them():
    for lib, fw in ((gc, fwAD), (torch, tfwAD)):
        x = lib.tensor(_arr(3))
        w = lib.tensor(_arr(3), requires_grad=True)
        xr = lib.tensor(_arr(3), requires_grad=True)
        with fw.dual_level():
            d = fw.make_dual(x, lib.ones(3))
            out = (d * 2).sin()
            mixed = out * w
            dr = fw.make_dual(xr, lib.ones(3))
            outr = dr * 3
            report = (d.requires_grad, d.is_leaf, out.requires_grad, out.is_leaf,
                      mixed.requires_grad, dr.requires_grad, outr.requires_grad,
                      fw.unpack_dual(outr).primal.requires_grad,
                      fw.unpack_dual(out).primal.requires_grad)
            with pytest.raises(RuntimeError, match="does not require grad"):
                out.sum().backward()
            mixed.sum().backward()
            outr.sum().backward()
        assert report == (False, True, False, True, True, True, True, True, False), lib
        np.testing.assert_allclose(np.asarray(host(w.grad) if lib is gc else w.grad),
                                   np.sin(2 * np.asarray(host(x) if lib is gc else x)),
                                   rtol=1e-6)
        assert np.allclose(host(xr.grad) if lib is gc else xr.grad.numpy(), 3)
    assert "grad_fn" not in repr(out) and "requires_grad" not in repr(out)


def test_tangents_are_reverse_differentiable_where_they_depend_on_leaves():
    """The tangent of a function of a dual tensor of a leaf that requires grad keeps its
    history (reverse over forward): d/dx of (J(x) t) . 1 against PyTorch's."""
    x, t = _arr(4), _arr(4)
    grads = []
    for lib, fw in ((gc, fwAD), (torch, tfwAD)):
        xr = lib.tensor(x, requires_grad=True)
        with fw.dual_level():
            tangent = fw.unpack_dual((fw.make_dual(xr, lib.tensor(t)) ** 3).sin()).tangent
        assert tangent.requires_grad
        tangent.sum().backward()
        grads.append(host(xr.grad) if lib is gc else xr.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10)


def test_in_place_operations_on_a_dual_tensor():
    x, t = _arr(3), _arr(3)
    got = []
    for lib, fw in ((gc, fwAD), (torch, tfwAD)):
        with fw.dual_level():
            d = fw.make_dual(lib.tensor(x), lib.tensor(t).clone())
            d.mul_(2).sin_()
            y = lib.zeros(3)
            y.add_(d)  # a plain tensor that takes a dual's value in place
            got.append([host(v) if lib is gc else v.numpy()
                        for v in (fw.unpack_dual(d).tangent, fw.unpack_dual(y).tangent)])
        xr = lib.tensor(x, requires_grad=True)
        with fw.dual_level(), pytest.raises(RuntimeError, match="leaf Variable"):
            fw.make_dual(xr, lib.tensor(t)).mul_(2)
    # (y is float32: PyTorch keeps its tangent in the dual's float64, gradcore in y's dtype)
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_exiting_the_level_drops_the_tangents():
    x = gc.tensor([1., 2.])
    with fwAD.dual_level() as level:
        d = fwAD.make_dual(x, gc.ones(2))
        out = d * d
        assert level == 0 and fwAD.unpack_dual(out).tangent is not None
    assert fwAD.unpack_dual(out).tangent is None and fwAD.unpack_dual(d).tangent is None
    assert not out.requires_grad
    assert fwAD.enter_dual_level() == 0
    assert fwAD.unpack_dual(out).tangent is None  # a new level: the old duals are not its
    fwAD.exit_dual_level(level=0)

    @fwAD.dual_level()
    def jvp_of_square(v):
        return fwAD.unpack_dual(fwAD.make_dual(v, gc.ones(2)) ** 2).tangent
    np.testing.assert_allclose(host(jvp_of_square(x)), [2., 4.])


def _error(call):
    with pytest.raises(Exception) as info:
        call()
    return type(info.value), str(info.value)


def test_errors_are_pytorchs():
    def cases(lib, fw):
        x, t = lib.zeros(3), lib.zeros(3)
        found = [_error(lambda: fw.make_dual(x, t)), _error(fw.exit_dual_level)]
        with fw.dual_level():
            found += [_error(lambda: fw.make_dual(x, lib.zeros(2))),
                      _error(lambda: fw.make_dual(x, lib.zeros(3, 1))),
                      _error(lambda: fw.make_dual(lib.arange(3), t)),
                      _error(lambda: fw.make_dual(x, lib.arange(3))),
                      _error(lambda: fw.make_dual(x, t, level=5)),
                      _error(lambda: fw.make_dual(fw.make_dual(x, t), t)),
                      _error(fw.enter_dual_level),
                      _error(lambda: fw.exit_dual_level(level=3)),
                      _error(lambda: fw.unpack_dual(3.0))]
            with pytest.raises(RuntimeError) as nested:
                with fw.dual_level():
                    pass
            found.append(str(nested.value))
        found.append(_error(lambda: fw.make_dual(x, t, level=0)))
        return found

    ours, theirs = cases(gc, fwAD), cases(torch, tfwAD)
    for a, b in zip(ours, theirs):  # (gradcore's dtypes print as gradcore.int64)
        assert str(a).replace("gradcore.", "torch.") == str(b)
    assert fwAD.unpack_dual(3.0) == (3.0, None)  # no level: as it is


def test_no_grad_is_refused_rather_than_silently_wrong():
    with fwAD.dual_level(), gc.no_grad(), pytest.raises(NotImplementedError, match="no_grad"):
        fwAD.make_dual(gc.zeros(2), gc.ones(2))


def test_the_module_paths():
    import gradcore.autograd.forward_ad as by_path

    assert gc.autograd.forward_ad is by_path
    assert fwAD.__all__ == tfwAD.__all__
    assert fwAD.UnpackedDualTensor._fields == ("primal", "tangent")
