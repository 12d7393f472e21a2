"""Optimizers and schedulers against PyTorch: same weights after 20 steps, same rates,
exact resumption from state dicts (through gc.save / gc.load), clear errors."""

import math
from collections import Counter

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
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.08), maximize=True)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=5, weight_decay=0.1)),
    ("ASGD", dict(lr=0.02, t0=0, maximize=True)),
]
NEW_OPTIMIZERS = ["RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "Rprop",
                  "ASGD"]


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
@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", *NEW_OPTIMIZERS])
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
    ("Rprop", dict(lr=-1.0)), ("Rprop", dict(etas=(1.0, 1.2))), ("Rprop", dict(etas=(0.5, 1.0))),
    ("ASGD", dict(lr=-1.0)), ("ASGD", dict(weight_decay=-1.0)),
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


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", *NEW_OPTIMIZERS])
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
                 "adadelta_update", "adamax_update", "nadam_update", "radam_update",
                 "rprop_update", "asgd_update"):
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
                            (optim.NAdam, {}, "nadam_update"), (optim.RAdam, {}, "radam_update"),
                            (optim.Rprop, {}, "rprop_update"), (optim.ASGD, {}, "asgd_update")]:
        calls.clear()
        w, b = _gc_params(pb)
        _gc_run(cls([w, b], **kw), w, b, pb, 3)
        assert calls == [kernel] * 6


# ---- learning-rate schedules ------------------------------------------------------------
def _schedule(module, optimizers, make, opt_name="SGD", lrs=(0.1, 0.02)):
    """An optimizer of ``opt_name`` over one parameter per rate and the schedule
    ``make(lr_scheduler module, optimizer)``, in gradcore or PyTorch."""
    params = [module.nn.Parameter(module.ones(1)) for _ in lrs]
    opt = getattr(optimizers, opt_name)([{"params": [p], "lr": lr}
                                         for p, lr in zip(params, lrs)])
    return opt, make(optimizers.lr_scheduler, opt)


def _run_schedule(opt, sched, epochs):
    """Each epoch's rates and momenta (``momentum``, ``betas``) as the schedule left them."""
    out = []
    for _ in range(epochs):
        out.append((list(sched.get_last_lr()),
                    [(g.get("momentum"), g.get("betas")) for g in opt.param_groups]))
        opt.step()
        sched.step()
    return out


def _gc_lrs(make, epochs, lrs=(0.1, 0.02), opt_name="SGD"):
    opt, sched = _schedule(gc, optim, make, opt_name, lrs)
    return [lr for lr, _ in _run_schedule(opt, sched, epochs)], opt, sched


SCHEDULES = {
    "StepLR(3, 0.5)": lambda m, o: m.StepLR(o, step_size=3, gamma=0.5),
    "StepLR(1)": lambda m, o: m.StepLR(o, step_size=1),
    "Cosine(7)": lambda m, o: m.CosineAnnealingLR(o, T_max=7),
    "Cosine(5, 0.01)": lambda m, o: m.CosineAnnealingLR(o, T_max=5, eta_min=0.01),
    "LambdaLR": lambda m, o: m.LambdaLR(o, lambda e: 0.9 ** e + 0.01 * e),
    "LambdaLR(per group)": lambda m, o: m.LambdaLR(o, [lambda e: 1 / (e + 1),
                                                       lambda e: 0.95 ** e]),
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lambda e: 0.9 if e % 3 else 1.1),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[3, 7, 7, 12], gamma=0.3),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.9),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.2, total_iters=8),
    "LinearLR(down)": lambda m, o: m.LinearLR(o, start_factor=1.0, end_factor=0.1,
                                              total_iters=12),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.25, total_iters=6),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=20, power=2.0),
    "PolynomialLR(0.5)": lambda m, o: m.PolynomialLR(o, total_iters=9, power=0.5),
    "OneCycleLR(cos)": lambda m, o: m.OneCycleLR(o, max_lr=[0.5, 0.1], total_steps=30),
    "OneCycleLR(linear, three phases)": lambda m, o: m.OneCycleLR(
        o, max_lr=0.3, epochs=3, steps_per_epoch=10, anneal_strategy="linear",
        three_phase=True, pct_start=0.25),
    "OneCycleLR(no momentum)": lambda m, o: m.OneCycleLR(
        o, max_lr=0.2, total_steps=40, cycle_momentum=False, div_factor=10.0,
        final_div_factor=100.0, pct_start=0.5),
    "OneCycleLR(three phases, momenta)": lambda m, o: m.OneCycleLR(
        o, max_lr=[0.3, 0.2], total_steps=32, three_phase=True,
        base_momentum=[0.8, 0.7], max_momentum=0.9),
    "CyclicLR(triangular)": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1,
                                                    step_size_up=4),
    "CyclicLR(triangular2)": lambda m, o: m.CyclicLR(
        o, base_lr=[0.01, 0.002], max_lr=0.1, step_size_up=3, step_size_down=5,
        mode="triangular2", base_momentum=[0.7, 0.8], max_momentum=0.95),
    "CyclicLR(exp_range)": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1,
                                                   step_size_up=5, mode="exp_range",
                                                   gamma=0.95, cycle_momentum=False),
    "CyclicLR(scale_fn)": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3,
                                                  scale_fn=lambda x: 0.9 ** x,
                                                  scale_mode="iterations"),
    "WarmRestarts(5)": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=5),
    "WarmRestarts(3, 2, 0.001)": lambda m, o: m.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2, eta_min=0.001),
    "SequentialLR": lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.1, total_iters=5), m.CosineAnnealingLR(o, T_max=10),
            m.ExponentialLR(o, gamma=0.8)], milestones=[5, 15]),
    "SequentialLR(constant, step)": lambda m, o: m.SequentialLR(
        o, [m.ConstantLR(o, factor=0.5, total_iters=4), m.StepLR(o, step_size=3)],
        milestones=[6]),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler(
        [m.ConstantLR(o, factor=0.5, total_iters=4), m.ExponentialLR(o, gamma=0.9)]),
    "ChainedScheduler(nested)": lambda m, o: m.ChainedScheduler(
        [m.SequentialLR(o, [m.LinearLR(o, start_factor=0.5, total_iters=3),
                            m.ExponentialLR(o, gamma=0.9)], milestones=[3]),
         m.MultiStepLR(o, milestones=[8, 16])], optimizer=o),
}
# the schedules that cycle the momentum, with an Adam-like optimizer (betas[0] cycles)
ADAM_SCHEDULES = {
    "OneCycleLR(Adam)": lambda m, o: m.OneCycleLR(o, max_lr=0.01, total_steps=30),
    "CyclicLR(Adam)": lambda m, o: m.CyclicLR(o, base_lr=1e-3, max_lr=1e-2, step_size_up=4,
                                              base_momentum=0.85, max_momentum=0.95),
}
ALL_SCHEDULES = [(name, "SGD") for name in SCHEDULES] + [(name, "Adam")
                                                          for name in ADAM_SCHEDULES]


def _make(name):
    return SCHEDULES.get(name) or ADAM_SCHEDULES[name]


@needs_torch
@pytest.mark.parametrize("name, opt_name", ALL_SCHEDULES)
def test_schedules_equal_pytorchs_exactly(name, opt_name):
    """The rates and momenta of every epoch and the state dicts equal PyTorch's, to the
    last bit."""
    import torch
    make = _make(name)
    opt, sched = _schedule(gc, optim, make, opt_name)
    topt, tsched = _schedule(torch, torch.optim, make, opt_name)
    ours, theirs = _run_schedule(opt, sched, 30), _run_schedule(topt, tsched, 30)
    assert ours == theirs   # (beyond T_max: the cosine's restart branch too)
    assert len({tuple(lrs) for lrs, _ in ours}) > 1
    assert sched.state_dict() == tsched.state_dict()
    assert [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups] == \
        [{k: g[k] for k in ours_group if k != "params"}
         for g, ours_group in zip(topt.param_groups, opt.param_groups)]


def test_schedules_known_values():
    ours, opt, sched = _gc_lrs(SCHEDULES["StepLR(3, 0.5)"], 7)
    assert [x[0] for x in ours] == pytest.approx([0.1] * 3 + [0.05] * 3 + [0.025])
    assert opt.param_groups[1]["initial_lr"] == 0.02
    ours, _, _ = _gc_lrs(lambda m, o: m.CosineAnnealingLR(o, T_max=4), 5, lrs=(1.0,))
    closed = [(1 + math.cos(math.pi * t / 4)) / 2 for t in range(5)]
    assert [x[0] for x in ours] == pytest.approx(closed, abs=1e-15)
    # up from max_lr / div_factor in the first pct_start * total_steps - 1 steps, then down
    # to that / final_div_factor
    ours, _, _ = _gc_lrs(lambda m, o: m.OneCycleLR(o, max_lr=1.0, total_steps=10,
                                                   pct_start=0.5, anneal_strategy="linear",
                                                   div_factor=2.0, final_div_factor=5.0),
                         10, lrs=(1.0,))
    assert [x[0] for x in ours] == pytest.approx(
        [0.5, 0.625, 0.75, 0.875, 1.0] + [1.0 - 0.9 * k / 5 for k in range(1, 6)])


CLOSED_FORMS = {
    "StepLR": lambda m, o: m.StepLR(o, step_size=3, gamma=0.5),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[2, 5, 5], gamma=0.5),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=4),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.25, total_iters=6),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.8),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=6, power=1.5),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=10, eta_min=0.001),
    "LambdaLR": lambda m, o: m.LambdaLR(o, lambda e: 1 / (1 + e)),  # (no closed form)
}


@needs_torch
@pytest.mark.parametrize("name", list(CLOSED_FORMS))
def test_schedule_step_with_an_epoch_uses_the_closed_form_like_pytorch(name):
    import torch

    def run(module, optimizers):
        opt, sched = _schedule(module, optimizers, CLOSED_FORMS[name])
        out = []
        for epoch in (3, 4, 9, 2, 5, 0, 7):
            opt.step()
            with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step"):
                sched.step(epoch)
            out.append((sched.get_last_lr(), sched.last_epoch))
        return out

    assert run(gc, optim) == run(torch, torch.optim)


@needs_torch
@pytest.mark.parametrize("T_mult", [1, 2, 3])
def test_warm_restarts_take_fractional_epochs_like_pytorch(T_mult):
    import torch

    def run(module, optimizers):
        opt, sched = _schedule(module, optimizers, lambda m, o: m.CosineAnnealingWarmRestarts(
            o, T_0=4, T_mult=T_mult, eta_min=1e-3))
        out = []
        for epoch in range(6):   # the documented use: step(epoch + i / iters) per batch
            for i in range(5):
                opt.step()
                sched.step(epoch + i / 5)
                out.append((sched.get_last_lr(), sched.T_cur, sched.T_i, sched.last_epoch))
        for epoch in (30.5, 2.25, 13.0, 0.0, 41.75):   # and jumps
            sched.step(epoch)
            out.append((sched.get_last_lr(), sched.T_cur, sched.T_i, sched.last_epoch))
        sched.step()
        out.append((sched.get_last_lr(), sched.T_cur, sched.T_i, sched.last_epoch))
        return out

    assert run(gc, optim) == run(torch, torch.optim)


PLATEAUS = [
    dict(),
    dict(mode="max", factor=0.5, patience=1),
    dict(factor=0.5, patience=0, threshold=0.1, threshold_mode="abs", cooldown=2),
    dict(mode="max", factor=0.3, patience=2, threshold=0.05, threshold_mode="abs",
         min_lr=[0.005, 0.001]),
    dict(factor=0.2, patience=1, min_lr=0.0025, eps=1e-3),
]


@needs_torch
@pytest.mark.parametrize("kw", PLATEAUS, ids=[str(kw) for kw in PLATEAUS])
def test_reduce_lr_on_plateau_equals_pytorchs(kw, tmp_path):
    import torch
    rng = np.random.default_rng(4)
    # improving, then not: above the best so far by a varying margin
    metrics = [1.0 / n for n in range(1, 16)] + list(0.07 + 0.1 * rng.random(25))

    def run(module, optimizers, values, sched=None, opt=None):
        if sched is None:
            opt, _ = _schedule(module, optimizers, lambda m, o: None)
            sched = optimizers.lr_scheduler.ReduceLROnPlateau(opt, **kw)
        out = []
        for value in values:
            opt.step()
            sched.step(module.tensor(value) if len(out) % 2 else value)  # 0-d tensors too
            out.append((sched.get_last_lr(), sched.num_bad_epochs, sched.cooldown_counter,
                        sched.best, sched.last_epoch))
        return out, opt, sched

    ours, opt, sched = run(gc, optim, metrics)
    theirs, _, tsched = run(torch, torch.optim, metrics)
    assert ours == theirs
    assert len({tuple(x[0]) for x in ours}) > 2
    assert sched.state_dict() == tsched.state_dict()
    # resumed from a checkpoint halfway: the same second half
    _, opt1, sched1 = run(gc, optim, metrics[:20])
    gc.save({"optim": opt1.state_dict(), "sched": sched1.state_dict()}, tmp_path / "p")
    ckpt = gc.load(tmp_path / "p")
    opt2, _ = _schedule(gc, optim, lambda m, o: None, lrs=(5.0, 5.0))
    sched2 = optim.lr_scheduler.ReduceLROnPlateau(opt2)
    opt2.load_state_dict(ckpt["optim"])
    sched2.load_state_dict(ckpt["sched"])
    rest, _, _ = run(gc, optim, metrics[20:], sched2, opt2)
    assert rest == ours[20:]


@pytest.mark.parametrize("name, opt_name", ALL_SCHEDULES)
def test_scheduler_state_dict_round_trips_through_gc_save(name, opt_name, tmp_path):
    """Half a schedule, a checkpoint (optimizer and schedule), a fresh optimizer and
    schedule made as PyTorch asks (the schedule before loading the optimizer's state):
    the same second half."""
    make = _make(name)
    opt, sched = _schedule(gc, optim, make, opt_name)
    straight = _run_schedule(opt, sched, 24)
    opt1, sched1 = _schedule(gc, optim, make, opt_name)
    _run_schedule(opt1, sched1, 12)
    gc.save({"optim": opt1.state_dict(), "sched": sched1.state_dict()}, tmp_path / "s")
    ckpt = gc.load(tmp_path / "s")
    assert "optimizer" not in ckpt["sched"]
    opt2, sched2 = _schedule(gc, optim, make, opt_name, lrs=(9.0, 9.0))
    opt2.load_state_dict(ckpt["optim"])
    sched2.load_state_dict(ckpt["sched"])
    assert _run_schedule(opt2, sched2, 12) == straight[12:]
    if name == "MultiStepLR":
        assert isinstance(sched2.milestones, Counter)  # (a dict in the checkpoint)


def test_lambda_schedules_save_callable_objects_state():
    class Warmup:
        def __init__(self, n):
            self.n = n

        def __call__(self, epoch):
            return min(1.0, (epoch + 1) / self.n)

    for cls in (optim.lr_scheduler.LambdaLR, optim.lr_scheduler.MultiplicativeLR):
        opt, _ = _schedule(gc, optim, lambda m, o: None)
        sched = cls(opt, [Warmup(4), lambda e: 0.5])
        sd = sched.state_dict()
        assert sd["lr_lambdas"] == [{"n": 4}, None]
        other = cls(opt, [Warmup(9), lambda e: 0.5])
        other.load_state_dict(sd)
        assert other.lr_lambdas[0].n == 4 and "lr_lambdas" in sd


@needs_torch
def test_get_lr_outside_step_warns_like_pytorch():
    import torch
    for module, optimizers in ((gc, optim), (torch, torch.optim)):
        opt, sched = _schedule(module, optimizers, SCHEDULES["ExponentialLR"])
        with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
            sched.get_lr()


BAD_SCHEDULES = [
    lambda m, o: m.StepLR(o, step_size=1, last_epoch=3),
    lambda m, o: m.LambdaLR(o, [lambda e: 1.0]),
    lambda m, o: m.MultiplicativeLR(o, [lambda e: 1.0]),
    lambda m, o: m.MultiplicativeLR(o, 0.5),
    lambda m, o: m.ConstantLR(o, factor=1.5),
    lambda m, o: m.LinearLR(o, start_factor=0.0),
    lambda m, o: m.LinearLR(o, end_factor=1.5),
    lambda m, o: m.SequentialLR(o, [], milestones=[]),
    lambda m, o: m.SequentialLR(o, [m.ExponentialLR(o, 0.9)], milestones=[3]),
    lambda m, o: m.SequentialLR(o, [m.ReduceLROnPlateau(o), m.ExponentialLR(o, 0.9)],
                                milestones=[3]),
    lambda m, o: m.ChainedScheduler([]),
    lambda m, o: m.ChainedScheduler([m.ExponentialLR(o, 0.9), m.ReduceLROnPlateau(o)]),
    lambda m, o: m.ReduceLROnPlateau(o, factor=1.0),
    lambda m, o: m.ReduceLROnPlateau(o, mode="low"),
    lambda m, o: m.ReduceLROnPlateau(o, threshold_mode="ratio"),
    lambda m, o: m.ReduceLROnPlateau(o, min_lr=[0.1]),
    lambda m, o: m.CyclicLR(o, base_lr=0.1, max_lr=1.0, mode="sawtooth"),
    lambda m, o: m.CyclicLR(o, base_lr=[0.1], max_lr=1.0),
    lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=0),
    lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=2.5),
    lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0),
    lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=2, eta_min="0"),
    lambda m, o: m.OneCycleLR(o, max_lr=0.1),
    lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=0),
    lambda m, o: m.OneCycleLR(o, max_lr=0.1, epochs=0, steps_per_epoch=3),
    lambda m, o: m.OneCycleLR(o, max_lr=0.1, epochs=2, steps_per_epoch=1.5),
    lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=10, pct_start=1),
    lambda m, o: m.OneCycleLR(o, max_lr=0.1, total_steps=10, anneal_strategy="exp"),
    lambda m, o: m.OneCycleLR(o, max_lr=[0.1, 0.2, 0.3], total_steps=10),
]


@needs_torch
@pytest.mark.parametrize("case", range(len(BAD_SCHEDULES)))
def test_bad_schedules_raise_pytorchs_errors(case):
    import torch
    make = BAD_SCHEDULES[case]
    with pytest.raises(Exception) as theirs:
        _schedule(torch, torch.optim, make)
    with pytest.raises(type(theirs.value)) as ours:
        _schedule(gc, optim, make)
    assert str(ours.value) == str(theirs.value)


@needs_torch
def test_cycling_the_momentum_needs_an_optimizer_that_has_one():
    import torch
    for module, optimizers in ((gc, optim), (torch, torch.optim)):
        with pytest.raises(ValueError, match="must support momentum or beta1"):
            _schedule(module, optimizers, lambda m, o: m.OneCycleLR(o, 0.1, total_steps=9),
                      "Adagrad")
        with pytest.raises(ValueError, match="must support momentum or beta1"):
            _schedule(module, optimizers, lambda m, o: m.CyclicLR(o, 0.01, 0.1), "Adagrad")
        # without cycling it, any optimizer does
        _schedule(module, optimizers, lambda m, o: m.CyclicLR(o, 0.01, 0.1,
                                                              cycle_momentum=False), "Adagrad")


@needs_torch
def test_one_cycle_refuses_to_step_past_its_end_like_pytorch():
    import torch
    errors = []
    for module, optimizers in ((gc, optim), (torch, torch.optim)):
        opt, sched = _schedule(module, optimizers, lambda m, o: m.OneCycleLR(o, 0.1,
                                                                             total_steps=4))
        _run_schedule(opt, sched, 4)
        with pytest.raises(ValueError) as err:
            sched.step()
        errors.append(str(err.value))
    assert errors[0] == errors[1] == ("Tried to step 5 times. The specified number of "
                                      "total steps is 4")


def test_scheduler_errors():
    with pytest.raises(TypeError, match="is not an Optimizer"):
        optim.lr_scheduler.StepLR(object(), step_size=1)
    opt = optim.SGD([gc.nn.Parameter(gc.ones(1))], lr=0.1)
    with pytest.raises(KeyError, match="initial_lr"):
        optim.lr_scheduler.StepLR(opt, step_size=1, last_epoch=3)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        optim.lr_scheduler.ReduceLROnPlateau(object())


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
    "rprop_update": ("any", "positive"),             # prev, step_size
    "asgd_update": ("any",),                         # ax
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
    "rprop_update": [dict(step_size_min=1e-6, step_size_max=50, **kw) for kw in _options(
        etaminus=[0.5, 0.3], etaplus=[1.2, 1.5], maximize=[False, True])],
    "asgd_update": [dict(eta=0.01, lambd=1e-4, **kw) for kw in _options(
        mu=[1.0, 0.25], weight_decay=[0.0, 0.1], maximize=[False, True])],
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
