"""Optimizers and schedulers against PyTorch: same weights after 20 steps, same rates,
exact resumption from state dicts (through gc.save / gc.load), clear errors."""

import math
import warnings

import numpy as np
import pytest

import gradcore as gc
import gradcore.optim as optim
from gradcore.kernels.updates import adam_scalars

from conftest import host, needs_torch

STEPS = 20
# Agreement with PyTorch "to the rounding of the dtype": PyTorch's CPU kernels fuse
# multiply-adds and its sqrt is not correctly rounded, so a few ulps differ per step.
TOL = {"float32": dict(rtol=2e-5, atol=2e-6), "float64": dict(rtol=1e-12, atol=1e-13)}

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.3)),
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.05)),
    ("SGD", dict(lr=0.1, weight_decay=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.5, maximize=True, weight_decay=0.01)),
    ("Adam", dict()),
    ("Adam", dict(lr=0.02)),
    ("Adam", dict(lr=0.02, weight_decay=0.1)),
    ("Adam", dict(lr=0.02, amsgrad=True)),
    ("Adam", dict(lr=0.02, betas=(0.3, 0.5), eps=1e-6, maximize=True)),  # lerp's other branch
    ("AdamW", dict()),
    ("AdamW", dict(lr=0.02, weight_decay=0.1)),
    ("AdamW", dict(lr=0.02, amsgrad=True)),
    ("AdamW", dict(lr=0.02, amsgrad=True, weight_decay=0.3, betas=(0.8, 0.9), maximize=True)),
    ("RMSprop", dict()),
    ("RMSprop", dict(lr=0.01, momentum=0.9)),
    ("RMSprop", dict(centered=True)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, centered=True, momentum=0.5, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.005, weight_decay=0.05, maximize=True)),
    ("Adagrad", dict()),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.5)),
    ("Adagrad", dict(lr=0.05, eps=1e-6, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.5, weight_decay=0.1, maximize=True)),
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.02, weight_decay=0.1)),
    ("Adamax", dict(lr=0.005, betas=(0.3, 0.5), maximize=True)),  # lerp's other branch
    ("NAdam", dict()),
    ("NAdam", dict(lr=0.02, weight_decay=0.1)),
    ("NAdam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("NAdam", dict(lr=0.01, momentum_decay=0.1, betas=(0.3, 0.9), eps=1e-6)),
    # RAdam rectifies from step 6 on (rho_t > 5) with these beta2s: both forms are compared
    ("RAdam", dict()),
    ("RAdam", dict(lr=0.02, weight_decay=0.1)),
    ("RAdam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.01, betas=(0.3, 0.9))),
]
NEW_OPTIMIZERS = ["RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam"]


def _ids(case):
    name, kw = case
    return name + "(" + ",".join(f"{k}={v}" for k, v in kw.items()) + ")"


def _problem(dtype, seed=0):
    """Initial weights and data of a small tanh layer fit by mean squared error."""
    rng = np.random.default_rng(seed)
    return dict(w=rng.standard_normal((4, 3)).astype(dtype),
                b=rng.standard_normal(3).astype(dtype),
                x=rng.standard_normal((16, 4)).astype(dtype),
                y=rng.standard_normal((16, 3)).astype(dtype))


def _gc_params(pb):
    return gc.nn.Parameter(gc.tensor(pb["w"])), gc.nn.Parameter(gc.tensor(pb["b"]))


def _gc_loss(w, b, x, y):
    return ((gc.tanh(x @ w + b) - y) ** 2).mean()


def _gc_run(opt, w, b, pb, steps, sched=None):
    x, y = gc.tensor(pb["x"]), gc.tensor(pb["y"])
    for _ in range(steps):
        opt.zero_grad()
        _gc_loss(w, b, x, y).backward()
        opt.step()
        if sched is not None:
            sched.step()


def _torch_weights(name, kw, pb, steps, groups=False):
    import torch
    w = torch.nn.Parameter(torch.from_numpy(pb["w"].copy()))
    b = torch.nn.Parameter(torch.from_numpy(pb["b"].copy()))
    x, y = torch.from_numpy(pb["x"]), torch.from_numpy(pb["y"])
    params = [{"params": [w], "lr": 0.03}, {"params": [b]}] if groups else [w, b]
    opt = getattr(torch.optim, name)(params, **kw)
    for _ in range(steps):
        opt.zero_grad()
        ((torch.tanh(x @ w + b) - y) ** 2).mean().backward()
        opt.step()
    return w.detach().numpy(), b.detach().numpy()


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_twenty_steps_match_pytorch(case, dtype, device):
    name, kw = case
    pb = _problem(dtype)
    w, b = _gc_params(pb)
    _gc_run(getattr(optim, name)([w, b], **kw), w, b, pb, STEPS)
    tw, tb = _torch_weights(name, kw, pb, STEPS)
    assert host(w).dtype == np.dtype(dtype)
    assert not np.allclose(host(w), pb["w"], rtol=1e-3, atol=1e-4), "the weights did not move"
    np.testing.assert_allclose(host(w), tw, **TOL[dtype])
    np.testing.assert_allclose(host(b), tb, **TOL[dtype])


@needs_torch
@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9)),
                                     ("Adam", dict(lr=0.02)), ("AdamW", dict(amsgrad=True)),
                                     ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True)),
                                     ("Adagrad", dict(lr=0.1, lr_decay=0.05)),
                                     ("Adadelta", dict(lr=0.5)), ("Adamax", dict(lr=0.01)),
                                     ("NAdam", dict(lr=0.01)), ("RAdam", dict(lr=0.01))])
def test_param_groups_with_their_own_options_match_pytorch(name, kw, device):
    pb = _problem("float64", seed=1)
    w, b = _gc_params(pb)
    opt = getattr(optim, name)([{"params": [w], "lr": 0.03}, {"params": [b]}], **kw)
    assert opt.param_groups[0]["lr"] == 0.03
    assert opt.param_groups[1]["lr"] == kw.get("lr", 1e-3)
    _gc_run(opt, w, b, pb, STEPS)
    tw, tb = _torch_weights(name, kw, pb, STEPS, groups=True)
    np.testing.assert_allclose(host(w), tw, **TOL["float64"])
    np.testing.assert_allclose(host(b), tb, **TOL["float64"])


@needs_torch
@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", {}),
                                     ("AdamW", dict(amsgrad=True)), ("RMSprop", {}),
                                     ("RMSprop", dict(momentum=0.9, centered=True)),
                                     ("Adagrad", dict(initial_accumulator_value=0.1)),
                                     ("Adadelta", {}), ("Adamax", {}), ("NAdam", {}),
                                     ("RAdam", {})])
def test_state_dict_layout_matches_pytorch(name, kw):
    import torch
    pb = _problem("float32")
    w, b = _gc_params(pb)
    opt = getattr(optim, name)([w, b], **kw)
    _gc_run(opt, w, b, pb, 3)
    tw = torch.nn.Parameter(torch.from_numpy(pb["w"].copy()))
    tb = torch.nn.Parameter(torch.from_numpy(pb["b"].copy()))
    topt = getattr(torch.optim, name)([tw, tb], **kw)
    ((tw.sum() + tb.sum()) ** 2).backward()
    topt.step()
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert list(sd) == ["state", "param_groups"]
    assert sorted(sd["state"]) == sorted(tsd["state"]) == [0, 1]
    assert list(sd["state"][0]) == list(tsd["state"][0])
    if name != "SGD":
        assert sd["state"][0]["step"] == 3 and isinstance(sd["state"][0]["step"], int)
    ours, theirs = sd["param_groups"][0], tsd["param_groups"][0]
    assert ours["params"] == theirs["params"] == [0, 1]
    for key, value in ours.items():  # every option we keep, PyTorch keeps with this value
        assert theirs[key] == value, key


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True,
                                                  weight_decay=0.01)),
                                     ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.5)),
                                     ("Adam", dict(lr=0.02, amsgrad=True, weight_decay=0.1)),
                                     ("AdamW", dict(lr=0.02)),
                                     ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True,
                                                      weight_decay=0.01)),
                                     ("Adagrad", dict(lr=0.1, lr_decay=0.01,
                                                      initial_accumulator_value=0.1)),
                                     ("Adadelta", dict(weight_decay=0.01)),
                                     ("Adamax", dict(lr=0.01)),
                                     ("NAdam", dict(lr=0.01, weight_decay=0.1,
                                                    decoupled_weight_decay=True)),
                                     ("RAdam", dict(lr=0.01))])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_resume_from_a_saved_state_dict_is_exact(name, kw, dtype, tmp_path, device):
    pb = _problem(dtype, seed=2)
    # 20 steps straight, with a schedule
    w, b = _gc_params(pb)
    opt = getattr(optim, name)([w, b], **kw)
    sched = optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.7)
    _gc_run(opt, w, b, pb, STEPS, sched)

    # 10 steps, a checkpoint on disk, then a fresh model, optimizer and schedule
    w1, b1 = _gc_params(pb)
    opt1 = getattr(optim, name)([w1, b1], **kw)
    sched1 = optim.lr_scheduler.StepLR(opt1, step_size=4, gamma=0.7)
    _gc_run(opt1, w1, b1, pb, STEPS // 2, sched1)
    path = tmp_path / "ckpt.safetensors"
    gc.save({"model": {"w": w1, "b": b1}, "optim": opt1.state_dict(),
             "sched": sched1.state_dict()}, path)
    del w1, b1, opt1, sched1

    ckpt = gc.load(path, map_location=device)  # checkpoints load on the CPU by default
    w2 = gc.nn.Parameter(ckpt["model"]["w"])
    b2 = gc.nn.Parameter(ckpt["model"]["b"])
    opt2 = getattr(optim, name)([w2, b2], lr=123.0)  # options come from the state dict
    sched2 = optim.lr_scheduler.StepLR(opt2, step_size=1, gamma=0.5)
    opt2.load_state_dict(ckpt["optim"])
    sched2.load_state_dict(ckpt["sched"])
    _gc_run(opt2, w2, b2, pb, STEPS - STEPS // 2, sched2)

    np.testing.assert_array_equal(host(w2), host(w))
    np.testing.assert_array_equal(host(b2), host(b))
    assert sched2.get_last_lr() == sched.get_last_lr()
    assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    for s_straight, s_resumed in zip(opt.state_dict()["state"].values(),
                                     opt2.state_dict()["state"].values()):
        assert s_straight.keys() == s_resumed.keys()
        for k in s_straight:
            a, r = s_straight[k], s_resumed[k]
            if isinstance(a, gc.Tensor):
                np.testing.assert_array_equal(host(r), host(a))
            else:
                assert type(r) is type(a) and r == a


def test_loaded_state_is_a_copy_not_an_alias():
    pb = _problem("float32")
    w, b = _gc_params(pb)
    opt = optim.SGD([w, b], lr=0.1, momentum=0.9)
    _gc_run(opt, w, b, pb, 2)
    sd = opt.state_dict()
    before = host(sd["state"][0]["momentum_buffer"]).copy()
    opt2 = optim.SGD([w, b], lr=0.1, momentum=0.9)
    opt2.load_state_dict(sd)
    _gc_run(opt2, w, b, pb, 1)
    np.testing.assert_array_equal(host(sd["state"][0]["momentum_buffer"]), before)
    assert not np.array_equal(host(opt2.state[w]["momentum_buffer"]), before)


def test_mismatched_state_dicts_give_clear_errors(tmp_path):
    pb = _problem("float32")
    w, b = _gc_params(pb)
    adam = optim.Adam([w, b], lr=0.01)
    _gc_run(adam, w, b, pb, 1)
    gc.save(adam.state_dict(), tmp_path / "adam.safetensors")
    sd = gc.load(tmp_path / "adam.safetensors")

    with pytest.raises(ValueError, match="parameter group 0 holds 2 parameter.* but 1"):
        optim.Adam([gc.nn.Parameter(gc.zeros(3))]).load_state_dict(sd)
    with pytest.raises(ValueError, match="1 parameter group.* has 2"):
        optim.Adam([{"params": [w]}, {"params": [b]}]).load_state_dict(sd)
    with pytest.raises(ValueError, match=r"lacks the option\(s\) \['momentum'"):
        optim.SGD([w, b], lr=0.1).load_state_dict(sd)
    wrong = [gc.nn.Parameter(gc.zeros(3, 4)), gc.nn.Parameter(gc.zeros(3))]
    with pytest.raises(ValueError, match=r"'exp_avg' for parameter 0 has shape \(4, 3\) but "
                                         r"the parameter has shape \(3, 4\)"):
        optim.Adam(wrong).load_state_dict(sd)
    with pytest.raises(ValueError, match="keys 'state' and 'param_groups'"):
        optim.Adam([w, b]).load_state_dict({"w": gc.zeros(2)})
    # a failed load leaves the optimizer as it was
    fresh = optim.Adam([w, b], lr=0.5)
    with pytest.raises(ValueError):
        fresh.load_state_dict({**sd, "param_groups": sd["param_groups"] * 2})
    assert fresh.param_groups[0]["lr"] == 0.5 and not fresh.state


def test_state_dict_numbers_parameters_across_groups_and_skips_gradless_ones():
    a, b, c = (gc.nn.Parameter(gc.ones(2)) for _ in range(3))
    opt = optim.SGD([{"params": [a, b]}, {"params": [c], "momentum": 0.5}], lr=0.1,
                    momentum=0.9)
    (a.sum() + c.sum()).backward()   # b gets no gradient: no state, not moved
    opt.step()
    sd = opt.state_dict()
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sorted(sd["state"]) == [0, 2]
    assert sd["param_groups"][1]["momentum"] == 0.5
    np.testing.assert_array_equal(host(b), [1, 1])
    np.testing.assert_allclose(host(a), [0.9, 0.9])


def test_zero_grad_sets_to_none_or_zeros_in_place(device):
    w = gc.nn.Parameter(gc.ones(3))
    opt = optim.SGD([w], lr=0.1)
    (w * 2).sum().backward()
    g = w.grad
    opt.zero_grad(set_to_none=False)
    assert w.grad is g
    np.testing.assert_array_equal(host(w.grad), [0, 0, 0])
    opt.zero_grad()
    assert w.grad is None


def test_step_takes_a_closure_and_returns_its_loss():
    w = gc.nn.Parameter(gc.tensor([2.0]))
    opt = optim.SGD([w], lr=0.25)
    calls = []

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        calls.append(loss.item())
        return loss

    with gc.no_grad():  # the closure still records its graph, as in PyTorch
        loss = opt.step(closure)
    assert calls == [4.0] and loss.item() == 4.0
    assert w.item() == 1.0


def test_step_bumps_the_version_so_stale_saved_tensors_are_caught():
    w = gc.nn.Parameter(gc.tensor([1.0, 2.0]))
    opt = optim.SGD([w], lr=0.1)
    (w * w).sum().backward()
    y = (w * w).sum()
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_constructor_errors():
    w = gc.nn.Parameter(gc.ones(2))
    with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
        optim.SGD(w, lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.Adam([])
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero "
                                         "dampening"):
        optim.SGD([w], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.SGD([w], lr=-1)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1"):
        optim.Adam([w], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="can't optimize a non-leaf"):
        optim.SGD([w * 2], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [w]}, {"params": [w]}], lr=0.1)
    with pytest.raises(TypeError, match="can only optimize Tensors"):
        optim.SGD([np.ones(2)], lr=0.1)


def test_defaults_are_pytorchs():
    w = gc.nn.Parameter(gc.ones(2))
    g = optim.Adam([w]).param_groups[0]
    assert (g["lr"], g["betas"], g["eps"], g["weight_decay"], g["amsgrad"]) == \
        (1e-3, (0.9, 0.999), 1e-8, 0, False)
    g = optim.AdamW([w]).param_groups[0]
    assert (g["lr"], g["betas"], g["eps"], g["weight_decay"], g["amsgrad"]) == \
        (1e-3, (0.9, 0.999), 1e-8, 1e-2, False)
    assert g["decoupled_weight_decay"] is True
    g = optim.SGD([w]).param_groups[0]
    assert (g["lr"], g["momentum"], g["dampening"], g["weight_decay"], g["nesterov"]) == \
        (1e-3, 0, 0, 0, False)


@needs_torch
@pytest.mark.parametrize("name", NEW_OPTIMIZERS)
def test_signatures_and_defaults_are_pytorchs(name):
    """Every parameter of PyTorch's constructor, in its place and kind, with its default;
    every option a group keeps is PyTorch's default."""
    import inspect

    import torch
    ours = inspect.signature(getattr(optim, name))
    theirs = inspect.signature(getattr(torch.optim, name))
    assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == \
        [(p.name, p.kind, p.default) for p in theirs.parameters.values()]
    group = getattr(optim, name)([gc.nn.Parameter(gc.ones(2))]).param_groups[0]
    tgroup = getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(2))]).param_groups[0]
    assert set(group) - {"params"} <= set(tgroup)
    for key, value in group.items():
        if key != "params":
            assert value == tgroup[key] and type(value) is type(tgroup[key]), key


BAD_OPTIONS = [
    ("RMSprop", dict(lr=-0.1)), ("RMSprop", dict(eps=-1.0)), ("RMSprop", dict(momentum=-0.5)),
    ("RMSprop", dict(weight_decay=-1e-2)), ("RMSprop", dict(alpha=-0.9)),
    ("Adagrad", dict(lr=-1.0)), ("Adagrad", dict(lr_decay=-0.1)),
    ("Adagrad", dict(weight_decay=-0.1)), ("Adagrad", dict(initial_accumulator_value=-1.0)),
    ("Adagrad", dict(eps=-1e-10)),
    ("Adadelta", dict(lr=-1.0)), ("Adadelta", dict(rho=1.5)), ("Adadelta", dict(rho=-0.1)),
    ("Adadelta", dict(eps=-1.0)), ("Adadelta", dict(weight_decay=-1.0)),
    ("Adamax", dict(lr=-1.0)), ("Adamax", dict(eps=-1.0)), ("Adamax", dict(betas=(1.0, 0.9))),
    ("Adamax", dict(betas=(0.9, -0.1))), ("Adamax", dict(weight_decay=-1.0)),
    ("NAdam", dict(lr=-1.0)), ("NAdam", dict(betas=(0.9, 1.0))),
    ("NAdam", dict(weight_decay=-1.0)), ("NAdam", dict(momentum_decay=-4e-3)),
    ("RAdam", dict(lr=-1.0)), ("RAdam", dict(eps=-1.0)), ("RAdam", dict(betas=(-0.1, 0.9))),
    ("RAdam", dict(weight_decay=-1.0)),
]


@needs_torch
@pytest.mark.parametrize("name, kw", BAD_OPTIONS, ids=[_ids(c) for c in BAD_OPTIONS])
def test_bad_options_raise_pytorchs_errors(name, kw):
    import torch
    with pytest.raises(Exception) as theirs:
        getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(2))], **kw)
    with pytest.raises(type(theirs.value)) as ours:
        getattr(optim, name)([gc.nn.Parameter(gc.ones(2))], **kw)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("name", NEW_OPTIMIZERS)
def test_differentiable_steps_are_refused_clearly(name):
    with pytest.raises(NotImplementedError, match="differentiable=True is not supported"):
        getattr(optim, name)([gc.nn.Parameter(gc.ones(2))], differentiable=True)
    # foreach and the other implementation choices give the same updates
    getattr(optim, name)([gc.nn.Parameter(gc.ones(2))], foreach=True)


@needs_torch
def test_nadam_keeps_pytorchs_float32_product_of_momentum_coefficients(tmp_path):
    """mu_product is a float32 0-d tensor in PyTorch: the same value here, to the bit,
    after every step and through a checkpoint."""
    import torch
    pb = _problem("float64")
    w, b = _gc_params(pb)
    opt = optim.NAdam([w, b], lr=0.01, momentum_decay=0.05)
    tw = torch.nn.Parameter(torch.from_numpy(pb["w"].copy()))
    tb = torch.nn.Parameter(torch.from_numpy(pb["b"].copy()))
    topt = torch.optim.NAdam([tw, tb], lr=0.01, momentum_decay=0.05)
    for step in range(1, 31):
        for p, tp in ((w, tw), (b, tb)):
            p.grad, tp.grad = gc.ones_like(p), torch.ones_like(tp)
        opt.step()
        topt.step()
        for p, tp in ((w, tw), (b, tb)):
            ours, theirs = opt.state[p], topt.state[tp]
            assert ours["step"] == theirs["step"].item() == step
            assert type(ours["mu_product"]) is float
            assert ours["mu_product"] == theirs["mu_product"].item()
    gc.save(opt.state_dict(), tmp_path / "nadam")
    opt2 = optim.NAdam([w, b])
    opt2.load_state_dict(gc.load(tmp_path / "nadam"))
    assert opt2.state[w]["mu_product"] == opt.state[w]["mu_product"]
    # a state dict holding PyTorch's 0-d tensors loads as numbers
    sd = opt.state_dict()
    sd["state"][0] = dict(sd["state"][0], step=gc.tensor(30.0), mu_product=gc.tensor(0.25))
    opt2.load_state_dict(sd)
    assert opt2.state[w]["step"] == 30 and type(opt2.state[w]["step"]) is int
    assert opt2.state[w]["mu_product"] == 0.25 and type(opt2.state[w]["mu_product"]) is float


def test_radam_cases_compare_both_forms_of_the_update():
    """RAdam's rectification (rho_t > 5) depends on the step count alone; the 20 steps of
    test_twenty_steps_match_pytorch cover steps with and without it."""
    from gradcore.kernels.updates import radam_rho
    for name, kw in CASES:
        if name == "RAdam":
            beta2 = kw.get("betas", (0.9, 0.999))[1]
            rectified = [radam_rho(t, beta2)[1] > 5 for t in range(1, STEPS + 1)]
            assert rectified[0] is False and rectified[-1] is True


def test_adagrad_makes_every_state_at_construction_like_pytorch():
    a, b = gc.nn.Parameter(gc.ones(2)), gc.nn.Parameter(gc.ones(3))
    opt = optim.Adagrad([{"params": [a]}, {"params": [b], "initial_accumulator_value": 9.0}],
                        initial_accumulator_value=0.5)
    sd = opt.state_dict()
    assert sorted(sd["state"]) == [0, 1] and sd["state"][1]["step"] == 0
    # like PyTorch, every sum starts at the constructor's value, whatever its group says
    np.testing.assert_array_equal(host(sd["state"][1]["sum"]), [0.5] * 3)
    c = gc.nn.Parameter(gc.ones(2))
    opt.add_param_group({"params": [c]})
    (c * c).sum().backward()
    opt.step()  # a group added later gets its state at its first step
    assert opt.state[c]["step"] == 1
    np.testing.assert_allclose(host(opt.state[c]["sum"]), [4.5, 4.5])


def test_rmsprop_refuses_a_state_without_the_buffers_its_options_need():
    w = gc.nn.Parameter(gc.ones(2))
    opt = optim.RMSprop([w])
    (w * w).sum().backward()
    opt.step()
    opt.param_groups[0]["centered"] = True
    with pytest.raises(RuntimeError, match="no 'grad_avg'"):
        opt.step()


def test_adam_bias_correction_scalars_follow_pytorchs_order():
    # step_size = lr / (1 - beta1 ** t); bias_correction2 ** 0.5, all in Python floats
    for t in (1, 2, 7, 1000):
        step_size, bc2_sqrt = adam_scalars(t, 1e-3, 0.9, 0.999)
        assert step_size == 1e-3 / (1 - 0.9 ** t)
        assert bc2_sqrt == (1 - 0.999 ** t) ** 0.5


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_updates_match_a_plain_numpy_formula_and_work_in_place(dtype):
    """The kernels' NumPy twins against the per-element formula of kernels.updates'
    docstring, on a 0-d, a non-multiple-of-8 and a 2-D parameter; grads are read-only."""
    m = gc.backend.cpu.math
    rng = np.random.default_rng(5)
    for shape in [(), (13,), (5, 7)]:
        p0 = rng.standard_normal(shape).astype(dtype)
        g = rng.standard_normal(shape).astype(dtype)
        g.flags.writeable = False
        buf0 = rng.standard_normal(shape).astype(dtype)
        p, buf = p0.copy(), buf0.copy()
        m.sgd_update(p, g, buf, lr=0.1, momentum=0.9, dampening=0.2, weight_decay=0.01)
        d = g + 0.01 * p0
        want_buf = 0.9 * buf0 + 0.8 * d
        np.testing.assert_allclose(buf, want_buf, rtol=1e-6)
        np.testing.assert_allclose(p, p0 - 0.1 * want_buf, rtol=1e-6)

        p, buf = p0.copy(), np.empty_like(p0)
        m.sgd_update(p, g, buf, lr=0.1, momentum=0.9, nesterov=True, first_step=True)
        np.testing.assert_array_equal(buf, g)
        np.testing.assert_allclose(p, p0 - 0.1 * (g + 0.9 * g), rtol=1e-6)

        mom, sq = rng.random(shape).astype(dtype), rng.random(shape).astype(dtype)
        vmax = np.array(sq + dtype(0.5), dtype=dtype)
        p, m1, v1, vm1 = p0.copy(), mom.copy(), sq.copy(), vmax.copy()
        m.adam_update(p, g, m1, v1, vm1, step=3, lr=0.01, beta1=0.9, beta2=0.99, eps=1e-8,
                      weight_decay=0.1, amsgrad=True, decoupled_weight_decay=True)
        want_m = 0.9 * mom + 0.1 * g
        want_v = 0.99 * sq + 0.01 * g * g
        want_vmax = np.maximum(vmax, want_v)
        step_size, bc2 = 0.01 / (1 - 0.9 ** 3), (1 - 0.99 ** 3) ** 0.5
        want_p = p0 * (1 - 0.01 * 0.1) - step_size * want_m / (np.sqrt(want_vmax) / bc2 + 1e-8)
        for got, want in [(m1, want_m), (v1, want_v), (vm1, want_vmax), (p, want_p)]:
            assert got.shape == shape and got.dtype == dtype
            np.testing.assert_allclose(got, want, rtol=1e-5)


def test_optimizers_call_the_fused_update_of_the_parameters_namespace(monkeypatch):
    """The seam issue 4 swaps a CUDA kernel into: one call per parameter per step."""
    m = gc.backend.cpu.math
    calls = []
    for name in ("sgd_update", "adam_update", "rmsprop_update", "adagrad_update",
                 "adadelta_update", "adamax_update", "nadam_update", "radam_update"):
        real = getattr(m, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            calls.append(_name)
            return _real(*args, **kwargs)
        monkeypatch.setattr(m, name, spy)
    pb = _problem("float32")
    for cls, kw, kernel in [(optim.SGD, dict(lr=0.1, momentum=0.9), "sgd_update"),
                            (optim.Adam, {}, "adam_update"), (optim.AdamW, {}, "adam_update"),
                            (optim.RMSprop, dict(centered=True), "rmsprop_update"),
                            (optim.Adagrad, {}, "adagrad_update"),
                            (optim.Adadelta, {}, "adadelta_update"),
                            (optim.Adamax, {}, "adamax_update"),
                            (optim.NAdam, {}, "nadam_update"), (optim.RAdam, {}, "radam_update")]:
        calls.clear()
        w, b = _gc_params(pb)
        _gc_run(cls([w, b], **kw), w, b, pb, 3)
        assert calls == [kernel] * 6


# ---- learning-rate schedules ------------------------------------------------------------
def _gc_lrs(make, epochs, lrs=(0.1, 0.02)):
    params = [gc.nn.Parameter(gc.ones(1)) for _ in lrs]
    opt = optim.SGD([{"params": [p], "lr": lr} for p, lr in zip(params, lrs)])
    sched = make(optim.lr_scheduler, opt)
    out = []
    for _ in range(epochs):
        out.append(list(sched.get_last_lr()))
        opt.step()
        sched.step()
    return out, opt, sched


def _torch_lrs(make, epochs, lrs=(0.1, 0.02)):
    import torch
    params = [torch.nn.Parameter(torch.ones(1)) for _ in lrs]
    opt = torch.optim.SGD([{"params": [p], "lr": lr} for p, lr in zip(params, lrs)])
    sched = make(torch.optim.lr_scheduler, opt)
    out = []
    for _ in range(epochs):
        out.append(list(sched.get_last_lr()))
        opt.step()
        sched.step()
    return out


SCHEDULES = {
    "StepLR(3, 0.5)": lambda m, o: m.StepLR(o, step_size=3, gamma=0.5),
    "StepLR(1)": lambda m, o: m.StepLR(o, step_size=1),
    "Cosine(7)": lambda m, o: m.CosineAnnealingLR(o, T_max=7),
    "Cosine(5, 0.01)": lambda m, o: m.CosineAnnealingLR(o, T_max=5, eta_min=0.01),
}


@needs_torch
@pytest.mark.parametrize("name", list(SCHEDULES))
def test_schedules_equal_pytorchs_exactly(name):
    make = SCHEDULES[name]
    ours, _, _ = _gc_lrs(make, 30)   # beyond T_max: the cosine's restart branch too
    assert ours == _torch_lrs(make, 30)
    assert len({tuple(x) for x in ours}) > 3


def test_schedules_known_values():
    ours, opt, sched = _gc_lrs(SCHEDULES["StepLR(3, 0.5)"], 7)
    assert [x[0] for x in ours] == pytest.approx([0.1] * 3 + [0.05] * 3 + [0.025])
    assert opt.param_groups[1]["initial_lr"] == 0.02
    ours, _, _ = _gc_lrs(lambda m, o: m.CosineAnnealingLR(o, T_max=4), 5, lrs=(1.0,))
    closed = [(1 + math.cos(math.pi * t / 4)) / 2 for t in range(5)]
    assert [x[0] for x in ours] == pytest.approx(closed, abs=1e-15)


@needs_torch
def test_schedule_step_with_an_epoch_uses_the_closed_form_like_pytorch():
    def run(m, opt_mod, make_params):
        opt = opt_mod.SGD(make_params(), lr=0.3)
        sched = m.CosineAnnealingLR(opt, T_max=10, eta_min=0.001)
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for epoch in (3, 4, 9, 2):
                sched.step(epoch)
                out.append(sched.get_last_lr()[0])
        return out

    import torch
    ours = run(optim.lr_scheduler, optim, lambda: [gc.nn.Parameter(gc.ones(1))])
    theirs = run(torch.optim.lr_scheduler, torch.optim,
                 lambda: [torch.nn.Parameter(torch.ones(1))])
    assert ours == theirs


def test_scheduler_state_dict_round_trips_through_gc_save(tmp_path):
    make = SCHEDULES["Cosine(5, 0.01)"]
    straight, _, _ = _gc_lrs(make, 12)
    _, opt, sched = _gc_lrs(make, 6)
    gc.save({"optim": opt.state_dict(), "sched": sched.state_dict()}, tmp_path / "s")
    ckpt = gc.load(tmp_path / "s")
    assert "optimizer" not in ckpt["sched"] and ckpt["sched"]["last_epoch"] == 6
    params = [gc.nn.Parameter(gc.ones(1)) for _ in range(2)]
    opt2 = optim.SGD([{"params": [p], "lr": 9.0} for p in params])
    opt2.load_state_dict(ckpt["optim"])
    sched2 = optim.lr_scheduler.CosineAnnealingLR(opt2, T_max=5, eta_min=0.01)
    sched2.load_state_dict(ckpt["sched"])
    rest = []
    for _ in range(6):
        rest.append(list(sched2.get_last_lr()))
        opt2.step()
        sched2.step()
    assert rest == straight[6:]


def test_scheduler_errors():
    with pytest.raises(TypeError, match="is not an Optimizer"):
        optim.lr_scheduler.StepLR(object(), step_size=1)
    opt = optim.SGD([gc.nn.Parameter(gc.ones(1))], lr=0.1)
    with pytest.raises(KeyError, match="initial_lr"):
        optim.lr_scheduler.StepLR(opt, step_size=1, last_epoch=3)


# each update's arrays after the gradient, by what they hold: "any" (a parameter, a first
# moment, a buffer), "small" (a mean gradient: its square stays below a square average)
# or "positive" (a square average, a sum of squares, an infinity norm)
UPDATE_ARRAYS = {
    "sgd_update": ("any",),                          # momentum_buffer
    "adam_update": ("any", "positive", "positive"),  # exp_avg, exp_avg_sq, max_exp_avg_sq
    "rmsprop_update": ("positive", "any", "small"),  # square_avg, momentum_buffer, grad_avg
    "adagrad_update": ("positive",),                 # sum
    "adadelta_update": ("positive", "positive"),     # square_avg, acc_delta
    "adamax_update": ("any", "positive"),            # exp_avg, exp_inf
    "nadam_update": ("any", "positive"),             # exp_avg, exp_avg_sq
    "radam_update": ("any", "positive"),             # exp_avg, exp_avg_sq
}


def _update_arrays(name, shape, dtype, rng):
    """A parameter, a read-only gradient and the state arrays of update ``name``."""
    def make(kind):
        a = rng.standard_normal(shape)
        a = {"any": a, "small": 0.1 * a, "positive": np.abs(a) + 0.5}[kind]
        return np.asarray(a, dtype=dtype)

    grad = make("any")
    grad.flags.writeable = False  # the gradient is only read
    return [make("any"), grad, *[make(kind) for kind in UPDATE_ARRAYS[name]]]


def _options(**choices):
    """Every combination of the options' values, as keyword dicts."""
    import itertools
    return [dict(zip(choices, values)) for values in itertools.product(*choices.values())]


# every option of every update, each value that takes another branch
UPDATE_OPTIONS = {
    "sgd_update": [
        dict(lr=0.1, **kw) for kw in _options(
            momentum=[0.0, 0.9], nesterov=[False, True], dampening=[0.0, 0.3],
            weight_decay=[0.0, 0.05], maximize=[False, True], first_step=[False, True])
        if not (kw["nesterov"] and (kw["momentum"] == 0 or kw["dampening"] != 0))
        and not (kw["momentum"] == 0 and kw["first_step"])],
    "adam_update": [dict(step=3, lr=1e-2, beta2=0.99, eps=1e-8, **kw) for kw in _options(
        weight_decay=[0.0, 0.1], decoupled_weight_decay=[False, True], amsgrad=[False, True],
        maximize=[False, True], beta1=[0.9, 0.3])],
    "rmsprop_update": [dict(lr=1e-2, eps=1e-8, **kw) for kw in _options(
        alpha=[0.99, 0.3], weight_decay=[0.0, 0.1], momentum=[0.0, 0.9],
        centered=[False, True], maximize=[False, True])],
    "adagrad_update": [dict(lr=1e-2, eps=1e-10, **kw) for kw in _options(
        step=[1, 5], lr_decay=[0.0, 0.1], weight_decay=[0.0, 0.1], maximize=[False, True])],
    "adadelta_update": [dict(lr=1.0, eps=1e-6, **kw) for kw in _options(
        rho=[0.9, 0.5], weight_decay=[0.0, 0.1], maximize=[False, True])],
    "adamax_update": [dict(step=3, lr=2e-3, beta2=0.999, eps=1e-8, **kw) for kw in _options(
        beta1=[0.9, 0.3], weight_decay=[0.0, 0.1], maximize=[False, True])],
    "nadam_update": [dict(lr=2e-3, beta2=0.999, eps=1e-8, momentum_decay=4e-3, **kw)
                     for kw in _options(step=[1, 4], mu_product=[0.5], beta1=[0.9, 0.3],
                                        weight_decay=[0.0, 0.1],
                                        decoupled_weight_decay=[False, True],
                                        maximize=[False, True])],
    "radam_update": [dict(lr=1e-3, beta2=0.999, eps=1e-8, **kw) for kw in _options(
        step=[2, 9], beta1=[0.9, 0.3], weight_decay=[0.0, 0.1],
        decoupled_weight_decay=[False, True], maximize=[False, True])],
}


@pytest.mark.parametrize("name, kw", [
    ("adam_update", dict(step=4, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                         weight_decay=0.01, amsgrad=True)),
    ("adam_update", dict(step=2, lr=1e-3, beta1=0.3, beta2=0.99, eps=1e-8,
                         weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("sgd_update", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)),
    ("sgd_update", dict(lr=0.1, momentum=0.9, dampening=0.5, first_step=True)),
    ("sgd_update", dict(lr=0.1)),
    ("rmsprop_update", dict(lr=1e-2, alpha=0.99, eps=1e-8, momentum=0.9, centered=True,
                            weight_decay=0.01)),
    ("rmsprop_update", dict(lr=1e-2, alpha=0.99, eps=1e-8)),
    ("adagrad_update", dict(step=3, lr=1e-2, eps=1e-10, lr_decay=0.1)),
    ("adadelta_update", dict(lr=1.0, rho=0.9, eps=1e-6, maximize=True)),
    ("adamax_update", dict(step=3, lr=2e-3, beta1=0.9, beta2=0.999, eps=1e-8)),
    ("nadam_update", dict(step=3, mu_product=0.7, lr=2e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                          weight_decay=0.1)),
    ("radam_update", dict(step=7, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8,
                          weight_decay=0.1, decoupled_weight_decay=True)),
])
def test_cpu_updates_by_slices_equal_the_whole_update(name, kw):
    """The CPU updates a large parameter a cache-sized slice at a time: bit for bit what
    one pass over the whole arrays gives, a non-contiguous gradient included."""
    from gradcore.backend import cpu
    from gradcore.kernels import updates as fused_optim

    rng = np.random.default_rng(0)
    shape = (3 * fused_optim.CHUNK // 100 + 7, 100)  # several slices and a partial one
    arrays = _update_arrays(name, shape, np.float32, rng)
    arrays[1] = np.ascontiguousarray(arrays[1].T).T  # not contiguous
    arrays[1].flags.writeable = False
    assert not arrays[1].flags.c_contiguous
    want = [a if i == 1 else a.copy() for i, a in enumerate(arrays)]
    fused_optim.UPDATES[name](np, *want, **kw)
    getattr(cpu.math, name)(*arrays, **kw)
    for a, b in zip(arrays, want):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_generated_cpu_updates_equal_the_declarations_composed_naively(dtype):
    """The CPU runs NumPy code generated from each Update (in place, flags decided when
    the code is made): bit for bit the declaration over plain array calls
    (updates.UPDATES), for every option, on a 0-d, a small and a sliced parameter."""
    from gradcore.backend import cpu
    from gradcore.kernels import updates

    assert set(UPDATE_OPTIONS) == set(updates.ENTRIES) == set(UPDATE_ARRAYS)
    rng = np.random.default_rng(3)
    for shape in [(), (13,), (4 * updates.CHUNK + 5,)]:
        for name, options in UPDATE_OPTIONS.items():
            for kw in options:
                arrays = _update_arrays(name, shape, dtype, rng)
                want = [a if i == 1 else a.copy() for i, a in enumerate(arrays)]
                updates.UPDATES[name](np, *want, **kw)
                getattr(cpu.math, name)(*arrays, **kw)
                for a, b in zip(arrays, want):
                    assert np.array_equal(a, b), (name, kw)
