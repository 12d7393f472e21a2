"""Randomness (issue 14, item 2): ``gc.Generator``, the default generator and its seeding
functions, ``generator=`` on every random function, and the samplers ``randperm``,
``multinomial``, ``normal``, ``bernoulli``, ``poisson`` and the in-place fills.

gradcore's streams are not PyTorch's (NumPy's PCG64 draws them), so values are checked
by their statistics over large samples with fixed seeds; what is deterministic (shapes,
dtypes, ranges, the errors and their messages, the seeds' bookkeeping) is compared with
PyTorch itself."""

from __future__ import annotations

import copy
import math
import pickle
import warnings

import numpy as np
import pytest

import gradcore as gc
from gradcore import _random

from conftest import host, needs_torch


# ---- the Generator -------------------------------------------------------------------------
@needs_torch
def test_a_new_generator_starts_from_pytorchs_seed():
    import torch
    g = gc.Generator()
    assert g.initial_seed() == torch.Generator().initial_seed() == 67280421310721
    np.testing.assert_array_equal(host(gc.rand(5, generator=g)),
                                  host(gc.rand(5, generator=gc.Generator())))


@needs_torch
@pytest.mark.parametrize("seed", [0, 7, -1, -5, 2**63, 2**64 - 1, -2**63])
def test_manual_seed_returns_the_generator_and_wraps_seeds_as_pytorch(seed):
    import torch
    g = gc.Generator()
    assert g.manual_seed(seed) is g
    assert g.initial_seed() == torch.Generator().manual_seed(seed).initial_seed()
    assert gc.manual_seed(seed) is gc.default_generator
    assert gc.initial_seed() == torch.manual_seed(seed).initial_seed()


@needs_torch
@pytest.mark.parametrize("seed", [2**64, -2**63 - 1])
def test_a_seed_beyond_64_bits_raises_as_pytorch(seed):
    import torch
    with pytest.raises(ValueError) as expected:
        torch.Generator().manual_seed(seed)
    with pytest.raises(ValueError) as got:
        gc.Generator().manual_seed(seed)
    assert str(got.value) == str(expected.value)


@needs_torch
@pytest.mark.parametrize("seed", [1.5, True])
def test_generator_manual_seed_refuses_floats_and_bools_as_pytorch(seed):
    import torch
    with pytest.raises(RuntimeError) as expected:
        torch.Generator().manual_seed(seed)
    with pytest.raises(RuntimeError) as got:
        gc.Generator().manual_seed(seed)
    assert str(got.value) == str(expected.value)


@needs_torch
def test_module_manual_seed_takes_what_int_takes_as_pytorch():
    import torch
    for seed in (1.5, "3", np.int64(4), True):
        assert gc.manual_seed(seed).initial_seed() == torch.manual_seed(seed).initial_seed()
    gc.manual_seed(1.9)
    a = host(gc.rand(4))
    gc.manual_seed(1)
    np.testing.assert_array_equal(host(gc.rand(4)), a)


def test_seed_draws_a_fresh_64_bit_seed_and_uses_it():
    g = gc.Generator()
    s1, s2 = g.seed(), g.seed()
    assert isinstance(s1, int) and 0 <= s1 < 2**64 and s1 != s2
    assert g.initial_seed() == s2
    a = host(gc.rand(4, generator=g))
    np.testing.assert_array_equal(host(gc.rand(4, generator=gc.Generator().manual_seed(s2))), a)
    s = gc.seed()
    assert gc.initial_seed() == s


def test_get_state_is_a_uint8_tensor_and_set_state_replays_exactly(device):
    g = gc.Generator(device).manual_seed(11)
    gc.randn(3, generator=g)
    gc.rand(1, generator=g)  # (a float32 draw leaves half a 64-bit word buffered)
    state = g.get_state()
    assert state.dtype == gc.uint8 and state.ndim == 1 and state.device.type == "cpu"
    a = host(gc.randn(7, generator=g)), host(gc.randint(0, 100, (5,), generator=g))
    g.manual_seed(99)
    assert g.set_state(state) is g
    assert g.initial_seed() == 11  # (the seed is part of the state, as in PyTorch)
    b = host(gc.randn(7, generator=g)), host(gc.randint(0, 100, (5,), generator=g))
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_array_equal(host(g.get_state()), host(g.clone_state().get_state()))


def test_default_generator_state_round_trips_through_the_module_functions(device):
    gc.manual_seed(5)
    state = gc.get_rng_state()
    a = host(gc.randn(4)), host(gc.zeros(6).bernoulli_())
    gc.manual_seed(6)
    gc.set_rng_state(state)
    b = host(gc.randn(4)), host(gc.zeros(6).bernoulli_())
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_array_equal(host(gc.default_generator.get_state()),
                                  host(gc.get_rng_state()))


@needs_torch
def test_set_state_refuses_what_pytorch_refuses():
    import torch
    for bad, kind in ((torch.zeros(5056), TypeError), ([1, 2], TypeError)):
        with pytest.raises(kind):
            torch.Generator().set_state(bad)
    g = gc.Generator()
    with pytest.raises(TypeError, match="RNG state must be a uint8 tensor"):
        g.set_state(gc.zeros(48))
    with pytest.raises(TypeError, match="expected a uint8 tensor .* but got list"):
        g.set_state([1, 2])
    with pytest.raises(RuntimeError, match="of size 48 but found the input RNG state size "
                                           "to be 3"):
        g.set_state(gc.zeros(3, dtype=gc.uint8))
    with pytest.raises(RuntimeError, match="input RNG state size to be 3"):
        torch.Generator().set_state(torch.zeros(3, dtype=torch.uint8))


def test_generators_pickle_and_copy_in_their_state():
    g = gc.Generator().manual_seed(3)
    gc.rand(2, generator=g)
    for other in (pickle.loads(pickle.dumps(g)), copy.deepcopy(g), g.clone_state()):
        assert other is not g and other.initial_seed() == 3
        np.testing.assert_array_equal(host(gc.rand(5, generator=other)),
                                      host(gc.rand(5, generator=g.clone_state())))
    gc.manual_seed(4)
    twin = copy.deepcopy(gc.default_generator)  # an independent copy of the default
    assert not twin._is_default
    np.testing.assert_array_equal(host(gc.rand(3, generator=twin)), host(gc.rand(3)))


def test_device_of_a_generator_and_the_check_pytorch_makes(device):
    assert gc.Generator().device == gc.device("cpu")
    assert gc.Generator(device=device).device.type == gc.device(device).type
    assert gc.default_generator.device == gc.device("cpu")
    other = "cpu" if gc.device(device).type == "cuda" else "cuda"
    with pytest.raises(RuntimeError, match=f"Expected a '{gc.device(device).type}' device "
                                           f"type for generator but found '{other}'"):
        gc.rand(2, generator=gc.Generator(other), device=device)
    # the default generator serves every device (draws are made on the host)
    gc.manual_seed(8)
    a = host(gc.rand(4, device=device))
    gc.manual_seed(8)
    np.testing.assert_array_equal(host(gc.rand(4, device="cpu")), a)


def test_the_seed_fixes_the_values_on_every_device(device):
    g = gc.Generator(device).manual_seed(21)
    on_device = host(gc.randn(6, generator=g, device=device))
    on_cpu = host(gc.randn(6, generator=gc.Generator().manual_seed(21), device="cpu"))
    np.testing.assert_array_equal(on_device, on_cpu)


def test_cuda_seeding_functions_seed_the_default_generator():
    assert gc.cuda.manual_seed(12) is None
    assert gc.initial_seed() == 12
    a = host(gc.rand(3))
    gc.cuda.manual_seed_all(12)
    np.testing.assert_array_equal(host(gc.rand(3)), a)
    gc.cuda.seed_all()
    assert gc.cuda.initial_seed() == gc.initial_seed() != 12
    gc.cuda.manual_seed(3)
    state = gc.cuda.get_rng_state()
    b = host(gc.rand(3))
    gc.cuda.set_rng_state(state)
    np.testing.assert_array_equal(host(gc.rand(3)), b)


def test_fork_rng_restores_the_default_generator():
    gc.manual_seed(1)
    with gc.random.fork_rng():
        gc.randn(100)
    after = host(gc.rand(3))
    gc.manual_seed(1)
    np.testing.assert_array_equal(host(gc.rand(3)), after)


def test_the_default_generator_is_the_numpy_generator_dropout_and_init_draw_from():
    gc.manual_seed(17)
    assert _random.seed_generator() is gc.default_generator._stream
    a = _random.seed_generator().random(3)
    np.testing.assert_array_equal(a, np.random.default_rng(17).random(3))
    g = gc.Generator()
    assert _random.stream(g) is g._stream and _random.stream(None) is _random.seed_generator()


def test_random_module_mirrors_torch_random():
    for name in ("manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
                 "default_generator", "Generator"):
        assert getattr(gc.random, name) is getattr(gc, name), name
    assert callable(gc.random.fork_rng)
    assert "random" not in gc.__all__  # (a star import keeps Python's random module)


# ---- generator= on every random function ----------------------------------------------------
def _fill(method, *args, shape=(40,), dtype=None, **kw):
    return lambda g, d: getattr(gc.zeros(shape, dtype=dtype or gc.float32, device=d),
                                method)(*args, generator=g, **kw)


RANDOM_FUNCTIONS = {
    "rand": lambda g, d: gc.rand(40, generator=g, device=d),
    "randn": lambda g, d: gc.randn(4, 10, generator=g, device=d),
    "randint": lambda g, d: gc.randint(0, 1000, (40,), generator=g, device=d),
    "randint-high": lambda g, d: gc.randint(1000, (40,), generator=g, device=d),
    "randperm": lambda g, d: gc.randperm(40, generator=g, device=d),
    "rand_like": lambda g, d: gc.rand_like(gc.zeros(40, device=d), generator=g),
    "randn_like": lambda g, d: gc.randn_like(gc.zeros(40, device=d), generator=g),
    "randint_like": lambda g, d: gc.randint_like(gc.zeros(40, device=d), 3, 1000, generator=g),
    "normal-floats": lambda g, d: gc.normal(1.0, 2.0, (40,), generator=g, device=d),
    "normal-tensor-mean": lambda g, d: gc.normal(gc.zeros(40, device=d), 1.0, generator=g),
    "normal-tensor-std": lambda g, d: gc.normal(0.0, gc.ones(40, device=d), generator=g),
    "normal-tensors": lambda g, d: gc.normal(gc.zeros(40, device=d), gc.ones(40, device=d),
                                             generator=g),
    "bernoulli": lambda g, d: gc.bernoulli(gc.full((40,), 0.5, device=d), generator=g),
    "bernoulli-p": lambda g, d: gc.bernoulli(gc.zeros(40, device=d), 0.5, generator=g),
    "multinomial": lambda g, d: gc.multinomial(gc.ones(3, 40, device=d), 20, generator=g),
    "multinomial-replacement": lambda g, d: gc.multinomial(gc.ones(3, 40, device=d), 20, True,
                                                           generator=g),
    "Tensor.multinomial": lambda g, d: gc.ones(40, device=d).multinomial(10, generator=g),
    "Tensor.bernoulli": lambda g, d: gc.full((40,), 0.5, device=d).bernoulli(generator=g),
    "poisson": lambda g, d: gc.poisson(gc.full((40,), 4.0, device=d), generator=g),
    "normal_": _fill("normal_", 1.0, 2.0),
    "uniform_": _fill("uniform_", -1.0, 3.0),
    "bernoulli_": _fill("bernoulli_", 0.5),
    "bernoulli_-tensor": lambda g, d: gc.zeros(40, device=d).bernoulli_(
        gc.full((40,), 0.5, device=d), generator=g),
    "random_": _fill("random_", 0, 1000),
    "random_-int": _fill("random_", dtype=gc.int64),
    "exponential_": _fill("exponential_", 2.0),
    "geometric_": _fill("geometric_", 0.3),
    "cauchy_": _fill("cauchy_"),
    "log_normal_": _fill("log_normal_"),
    "init.uniform_": lambda g, d: gc.nn.init.uniform_(gc.zeros(40, device=d), generator=g),
    "init.normal_": lambda g, d: gc.nn.init.normal_(gc.zeros(40, device=d), generator=g),
    "init.trunc_normal_": lambda g, d: gc.nn.init.trunc_normal_(gc.zeros(40, device=d),
                                                                generator=g),
    "init.kaiming_uniform_": lambda g, d: gc.nn.init.kaiming_uniform_(
        gc.zeros(4, 10, device=d), generator=g),
    "init.xavier_normal_": lambda g, d: gc.nn.init.xavier_normal_(gc.zeros(4, 10, device=d),
                                                                  generator=g),
}


@pytest.mark.parametrize("name", sorted(RANDOM_FUNCTIONS))
def test_generator_keyword_fixes_the_values_and_leaves_the_default_alone(name, device):
    fn = RANDOM_FUNCTIONS[name]

    def draw(seed):
        return host(fn(gc.Generator(device).manual_seed(seed), device))

    a, b, c = draw(1), draw(1), draw(2)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    # draws with generator= do not advance the default generator
    gc.manual_seed(30)
    expected = host(gc.rand(5))
    gc.manual_seed(30)
    fn(gc.Generator(device).manual_seed(1), device)
    np.testing.assert_array_equal(host(gc.rand(5)), expected)
    # and without generator=, the default generator fixes them
    gc.manual_seed(31)
    d = host(fn(None, device))
    gc.manual_seed(31)
    np.testing.assert_array_equal(host(fn(None, device)), d)


@pytest.mark.parametrize("name", sorted(RANDOM_FUNCTIONS))
def test_results_live_on_the_device_asked_for(name, device):
    out = RANDOM_FUNCTIONS[name](None, device)
    assert out.device.type == gc.device(device).type


def test_generator_must_be_a_generator():
    with pytest.raises(TypeError, match=r"randn\(\): argument 'generator' must be "
                                        r"gradcore.Generator, not int"):
        gc.randn(3, generator=3)
    # (a NumPy generator is taken too: nn.init took them before gc.Generator existed)
    a = host(gc.rand(3, generator=np.random.default_rng(0)))
    np.testing.assert_array_equal(a, np.random.default_rng(0).random(3, dtype=np.float32))


# ---- statistics over large samples (fixed seeds) --------------------------------------------
N = 200_000


def _g(seed=1234, device="cpu"):
    return gc.Generator(device).manual_seed(seed)


def _moments_close(x, mean, std, k=6.0):
    """The sample mean within k standard errors, the sample std within 2%."""
    x = np.asarray(x, dtype=np.float64)
    assert abs(x.mean() - mean) < k * std / math.sqrt(x.size), (x.mean(), mean)
    assert abs(x.std() - std) < 0.02 * std, (x.std(), std)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_rand_is_uniform_on_the_half_open_interval(dtype, device):
    x = host(gc.rand(N, generator=_g(device=device), dtype=getattr(gc, dtype), device=device))
    assert x.dtype == np.dtype(dtype) and x.min() >= 0 and x.max() < 1
    _moments_close(x, 0.5, math.sqrt(1 / 12))


def test_randn_and_normal_moments(device):
    _moments_close(host(gc.randn(N, generator=_g(device=device), device=device)), 0.0, 1.0)
    _moments_close(host(gc.normal(2.0, 3.0, (N,), generator=_g(device=device),
                                  device=device)), 2.0, 3.0)
    mean = gc.full((N,), -1.0, device=device)
    _moments_close(host(gc.normal(mean, 0.5, generator=_g(device=device))), -1.0, 0.5)
    std = gc.full((N,), 4.0, dtype=gc.float64, device=device)
    out = gc.normal(1.0, std, generator=_g(device=device))
    assert out.dtype == gc.float64
    _moments_close(host(out), 1.0, 4.0)
    filled = gc.zeros(N, device=device).normal_(3.0, 0.25, generator=_g(device=device))
    _moments_close(host(filled), 3.0, 0.25)


def test_normal_broadcasts_mean_and_std(device):
    mean = gc.tensor([[0.0], [100.0]], device=device)
    std = gc.tensor([1.0, 2.0, 3.0], device=device)
    out = host(gc.normal(mean, std, generator=_g(device=device)))
    assert out.shape == (2, 3)
    assert np.all(np.abs(out[1] - 100) < 30) and np.all(np.abs(out[0]) < 30)


def test_uniform_and_exponential_and_log_normal(device):
    u = host(gc.zeros(N, device=device).uniform_(-2.0, 6.0, generator=_g(device=device)))
    assert u.min() >= -2 and u.max() < 6
    _moments_close(u, 2.0, 8 / math.sqrt(12))
    e = host(gc.zeros(N, dtype=gc.float64, device=device).exponential_(
        2.0, generator=_g(device=device)))
    assert e.min() >= 0
    _moments_close(e, 0.5, 0.5)
    ln = host(gc.zeros(N, dtype=gc.float64, device=device).log_normal_(1.0, 0.5,
                                                                         generator=_g(device=device)))
    _moments_close(np.log(ln), 1.0, 0.5)


def test_cauchy_median_and_quartiles(device):
    c = host(gc.zeros(N, dtype=gc.float64, device=device).cauchy_(
        3.0, 2.0, generator=_g(device=device)))
    q1, med, q3 = np.quantile(c, [0.25, 0.5, 0.75])
    assert abs(med - 3.0) < 0.03 and abs((q3 - q1) - 4.0) < 0.08  # IQR = 2 sigma


def test_geometric_counts_trials_to_the_first_success(device):
    x = host(gc.zeros(N, dtype=gc.int64, device=device).geometric_(
        0.25, generator=_g(device=device)))
    assert x.min() == 1
    _moments_close(x, 4.0, math.sqrt(0.75) / 0.25)


def test_poisson_mean_and_variance(device):
    rates = gc.full((N,), 3.5, dtype=gc.float64, device=device)
    x = host(gc.poisson(rates, generator=_g(device=device)))
    assert x.dtype == np.float64 and np.all(x == np.round(x)) and x.min() >= 0
    _moments_close(x, 3.5, math.sqrt(3.5))
    np.testing.assert_array_equal(host(gc.poisson(gc.zeros(5, device=device))), np.zeros(5))


def test_bernoulli_frequencies(device):
    x = host(gc.zeros(N, device=device).bernoulli_(0.3, generator=_g(device=device)))
    assert set(np.unique(x)) <= {0.0, 1.0}
    _moments_close(x, 0.3, math.sqrt(0.21))
    p = gc.tensor([0.0, 0.2, 0.9, 1.0], dtype=gc.float64, device=device)
    draws = np.stack([host(gc.bernoulli(p, generator=_g(seed, device))) for seed in range(2000)])
    assert draws.dtype == np.float64
    np.testing.assert_array_equal(draws[:, 0], 0)
    np.testing.assert_array_equal(draws[:, 3], 1)
    assert abs(draws[:, 1].mean() - 0.2) < 0.04 and abs(draws[:, 2].mean() - 0.9) < 0.03
    # bernoulli_ with a tensor of probabilities broadcast to the tensor's shape
    rows = host(gc.zeros(3, 20000, dtype=gc.int64, device=device).bernoulli_(
        gc.tensor([[0.1], [0.5], [1.0]], device=device), generator=_g(device=device)))
    assert rows.dtype == np.int64
    np.testing.assert_allclose(rows.mean(axis=1), [0.1, 0.5, 1.0], atol=0.015)


def test_random_ranges_and_frequencies(device):
    x = host(gc.zeros(N, device=device).random_(2, 7, generator=_g(device=device)))
    counts = np.bincount(x.astype(np.int64), minlength=7)
    assert counts[:2].sum() == 0 and counts[2:].sum() == N
    np.testing.assert_allclose(counts[2:] / N, 0.2, atol=0.006)
    assert set(np.unique(host(gc.zeros(1000, device=device).random_(3)))) == {0.0, 1.0, 2.0}
    for dtype, top in (("int8", 127), ("uint8", 255), ("bool", 1), ("float16", 2**11)):
        v = host(gc.zeros(20000, dtype=getattr(gc, dtype), device=device).random_(
            generator=_g(device=device)))
        assert v.min() == 0 and v.max() == top  # (every value of the range is reached)
    big = host(gc.zeros(N, dtype=gc.int64, device=device).random_(generator=_g(device=device)))
    assert big.min() >= 0 and big.max() > 2**62  # [0, 2**63 - 1]
    f32 = host(gc.zeros(N, device=device).random_(generator=_g(device=device)))
    assert f32.min() >= 0 and f32.max() <= 2**24 and f32.max() > 2**23
    neg = host(gc.zeros(N, dtype=gc.int8, device=device).random_(
        -128, 0, generator=_g(device=device)))
    assert neg.min() == -128 and neg.max() == -1


def test_randint_and_randperm(device):
    x = host(gc.randint(-3, 3, (N,), generator=_g(device=device), device=device))
    assert x.dtype == np.int64
    np.testing.assert_allclose(np.bincount(x + 3) / N, 1 / 6, atol=0.005)
    p = host(gc.randperm(1000, generator=_g(device=device), device=device))
    assert p.dtype == np.int64 and sorted(p.tolist()) == list(range(1000))
    firsts = [int(host(gc.randperm(4, generator=_g(s, device), device=device))[0])
              for s in range(4000)]
    np.testing.assert_allclose(np.bincount(firsts) / 4000, 0.25, atol=0.03)
    assert host(gc.randperm(10, dtype=gc.float16, device=device)).dtype == np.float16


def test_multinomial_with_replacement_follows_the_weights(device):
    w = gc.tensor([[1.0, 0.0, 3.0, 4.0], [0.0, 0.0, 0.0, 2.5]], device=device)
    x = host(gc.multinomial(w, 50000, replacement=True, generator=_g(device=device)))
    assert x.shape == (2, 50000) and x.dtype == np.int64
    np.testing.assert_allclose(np.bincount(x[0], minlength=4) / 50000, [0.125, 0, 0.375, 0.5],
                               atol=0.01)
    assert np.all(x[1] == 3)


def test_multinomial_without_replacement_draws_distinct_in_weight_order(device):
    w = gc.tensor([0.1, 0.0, 0.6, 0.3], device=device)
    draws = np.stack([host(gc.multinomial(w, 3, generator=_g(s, device)))
                      for s in range(3000)])
    assert all(len(set(row)) == 3 for row in draws.tolist())
    assert not np.any(draws == 1)  # (weight 0: never, while others remain)
    np.testing.assert_allclose(np.bincount(draws[:, 0], minlength=4) / 3000,
                               [0.1, 0.0, 0.6, 0.3], atol=0.03)
    # more samples than nonzero weights: the zero-weight categories come last
    assert sorted(host(gc.multinomial(gc.tensor([0.0, 1.0, 0.0], device=device), 3)
                       )[1:].tolist()) == [0, 2]


# ---- shapes, dtypes and errors against PyTorch ----------------------------------------------
@needs_torch
@pytest.mark.parametrize("case", [
    ("randperm", lambda m: m.randperm(7)),
    ("randperm-int32", lambda m: m.randperm(7, dtype=m.int32)),
    ("randperm-float", lambda m: m.randperm(7, dtype=m.float32)),
    ("randperm-0", lambda m: m.randperm(0)),
    ("multinomial-1d", lambda m: m.multinomial(m.ones(5), 3)),
    ("multinomial-2d", lambda m: m.multinomial(m.ones(2, 5), 3)),
    ("multinomial-replacement", lambda m: m.multinomial(m.ones(2, 5), 9, True)),
    ("multinomial-empty-rows", lambda m: m.multinomial(m.ones(0, 3), 2)),
    ("multinomial-half", lambda m: m.multinomial(m.ones(3, dtype=m.float16), 2)),
    ("normal-floats", lambda m: m.normal(0.0, 1.0, (2, 3))),
    ("normal-ints", lambda m: m.normal(2, 3, (2,))),
    ("normal-float64", lambda m: m.normal(0.0, 1.0, (2,), dtype=m.float64)),
    ("normal-mean64", lambda m: m.normal(m.zeros(3, dtype=m.float64), 1.0)),
    ("normal-mean32-std64", lambda m: m.normal(m.zeros(3), m.ones(3, dtype=m.float64))),
    ("normal-broadcast", lambda m: m.normal(m.zeros(1, 3), m.ones(4, 1))),
    ("normal-mean-only", lambda m: m.normal(mean=m.zeros(3))),
    ("bernoulli", lambda m: m.bernoulli(m.zeros(2, 3, dtype=m.float64))),
    ("bernoulli-p", lambda m: m.bernoulli(m.zeros(2, 3), 0.5)),
    ("bernoulli_-int", lambda m: m.zeros(3, dtype=m.int64).bernoulli_(0.5)),
    ("bernoulli_-bool", lambda m: m.zeros(3, dtype=m.bool).bernoulli_(0.5)),
    ("Tensor.bernoulli", lambda m: m.zeros(4).bernoulli(0.3)),
    ("poisson", lambda m: m.poisson(m.ones(2, dtype=m.float64))),
    ("random_-int32", lambda m: m.zeros(3, dtype=m.int32).random_()),
    ("geometric_-int", lambda m: m.zeros(3, dtype=m.int64).geometric_(0.5)),
    ("randint-uint8", lambda m: m.randint(5, (3,), dtype=m.uint8)),
    ("randint-float", lambda m: m.randint(0, 10, (3,), dtype=m.float32)),
    ("randint_like", lambda m: m.randint_like(m.zeros(2, dtype=m.float64), 5)),
    ("randint_like-low", lambda m: m.randint_like(m.zeros(2, dtype=m.int32), 2, 5)),
    ("rand_like", lambda m: m.rand_like(m.zeros(2, dtype=m.float64))),
])
def test_shapes_and_dtypes_match_pytorch(case):
    import torch
    _, fn = case
    ours, theirs = fn(gc), fn(torch)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]


ERRORS = [
    lambda m: m.randperm(-1),
    lambda m: m.randperm(2.5),
    lambda m: m.randperm(300, dtype=m.uint8),
    lambda m: m.randperm(129, dtype=m.int8),
    lambda m: m.randperm(3, dtype=m.bool),
    lambda m: m.randperm(3000, dtype=m.float16),
    lambda m: m.multinomial(m.tensor([0.1, 0.9]), 3),
    lambda m: m.multinomial(m.tensor([0.0, 0.0]), 1),
    lambda m: m.multinomial(m.tensor([-1.0, 2.0]), 1),
    lambda m: m.multinomial(m.tensor([1.0, float("nan")]), 1),
    lambda m: m.multinomial(m.tensor([1.0, float("inf")]), 1),
    lambda m: m.multinomial(m.tensor([-1.0, 2.0]), 2, True),
    lambda m: m.multinomial(m.tensor([0.0, 0.0]), 2, True),
    lambda m: m.multinomial(m.tensor([1.0, float("nan")]), 2, True),
    lambda m: m.multinomial(m.tensor([1.0, float("inf")]), 2, True),
    lambda m: m.multinomial(m.ones(2, 3, 4), 1),
    lambda m: m.multinomial(m.tensor(1.0), 1),
    lambda m: m.multinomial(m.ones(3), 0),
    lambda m: m.multinomial(m.ones(3), -1),
    lambda m: m.multinomial(m.ones(3), 2.0),
    lambda m: m.multinomial(m.tensor([1, 2]), 1),
    lambda m: m.multinomial(m.ones(2, 0), 1),
    lambda m: m.normal(m.zeros(3), -1.0),
    lambda m: m.normal(0.0, -1.0, (2,)),
    lambda m: m.normal(m.zeros(3), m.tensor([1.0, -1.0, 1.0])),
    lambda m: m.normal(m.zeros(3, dtype=m.int64), 1.0),
    lambda m: m.normal(m.zeros(3), m.ones(2)),
    lambda m: m.normal(m.zeros(2, 3), m.ones(6)),
    lambda m: m.normal(0.0, 1.0),
    lambda m: m.normal(m.zeros(3), m.ones(3), size=(3,)),
    lambda m: m.bernoulli(m.tensor([0.0, 1.5])),
    lambda m: m.bernoulli(m.tensor([0.0, float("nan")])),
    lambda m: m.bernoulli(m.tensor([0, 1])),
    lambda m: m.bernoulli(m.tensor([0.0, 1.0]), p=2.0),
    lambda m: m.zeros(3).bernoulli_(1.5),
    lambda m: m.zeros(3).bernoulli_(m.tensor([0.0, 1.0])),
    lambda m: m.zeros(2, 3).bernoulli_(m.ones(3, 1)),
    lambda m: m.zeros(3).bernoulli_(m.tensor([0.0, 2.0, 1.0])),
    lambda m: m.poisson(m.tensor([-1.0])),
    lambda m: m.poisson(m.tensor([1, 2])),
    lambda m: m.zeros(3).random_(5, 2),
    lambda m: m.zeros(3).random_(0),
    lambda m: m.zeros(3).random_(-1),
    lambda m: m.zeros(3).random_(1.5),
    lambda m: m.zeros(3).random_(None),
    lambda m: m.zeros(3, dtype=m.uint8).random_(300),
    lambda m: m.zeros(3, dtype=m.int16).random_(2**16),
    lambda m: m.zeros(3, dtype=m.int32).random_(2**33),
    lambda m: m.zeros(3, dtype=m.int8).random_(-200, 5),
    lambda m: m.zeros(3, dtype=m.uint8).random_(-1, 5),
    lambda m: m.zeros(3, dtype=m.bool).random_(3),
    lambda m: m.zeros(3, dtype=m.int64).random_(2**64),
    lambda m: m.zeros(3).exponential_(-1.0),
    lambda m: m.zeros(3).exponential_(0.0),
    lambda m: m.zeros(3, dtype=m.int64).exponential_(),
    lambda m: m.zeros(3, dtype=m.bool).exponential_(),
    lambda m: m.zeros(3).geometric_(0.0),
    lambda m: m.zeros(3).geometric_(1.0),
    lambda m: m.zeros(3).geometric_(1.5),
    lambda m: m.zeros(3, dtype=m.bool).geometric_(0.5),
    lambda m: m.zeros(3).cauchy_(0, -1.0),
    lambda m: m.zeros(3, dtype=m.int8).cauchy_(),
    lambda m: m.zeros(3, dtype=m.int32).cauchy_(),
    lambda m: m.zeros(3).log_normal_(1, -1.0),
    lambda m: m.zeros(3).log_normal_(1, 0.0),
    lambda m: m.zeros(3, dtype=m.int64).log_normal_(),
    lambda m: m.zeros(3).normal_(0, -1.0),
    lambda m: m.zeros(3, dtype=m.int64).normal_(),
    lambda m: m.zeros(3, dtype=m.uint8).normal_(),
    lambda m: m.zeros(3).uniform_(2, 1),
    lambda m: m.zeros(3, dtype=m.int64).uniform_(),
    lambda m: m.zeros(3, dtype=m.bool).uniform_(),
    lambda m: m.zeros(3, dtype=m.float16).uniform_(0, 70000),
    lambda m: m.zeros(3, requires_grad=True).normal_(),
    lambda m: m.zeros(3, requires_grad=True).bernoulli_(),
    lambda m: m.zeros(3, requires_grad=True).random_(),
    lambda m: m.rand(3, dtype=m.int64),
    lambda m: m.randn(3, dtype=m.int64),
    lambda m: m.randint(0, 10, (3,), dtype=m.bool),
    lambda m: m.manual_seed(2**64),
]


@needs_torch
@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_match_pytorch(k):
    """The same exception class as PyTorch's; the same message where PyTorch's says what
    was wrong (its invalid-combination TypeErrors list its overloads: those are only
    checked for the class)."""
    import torch
    with pytest.raises(Exception) as expected:
        ERRORS[k](torch)
    with pytest.raises(Exception) as got:
        ERRORS[k](gc)
    assert isinstance(got.value, type(expected.value)), (got.value, expected.value)
    theirs, ours = str(expected.value), str(got.value)
    if "invalid combination of arguments" in theirs or "received an invalid" in theirs:
        return
    ours = ours.replace(" (setitem)", "")  # (gradcore names the op after PyTorch's text)
    assert ours.startswith(theirs.split("  (Could this")[0].rstrip(".")) or \
        theirs.startswith(ours), (ours, theirs)


@needs_torch
def test_random_out_of_float_precision_warns_as_pytorch():
    import torch
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        torch.zeros(3).random_(2**25)
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        gc.zeros(3).random_(2**25)
    assert [str(w.message) for w in ours] == [str(w.message).split(" (Triggered")[0]
                                              for w in theirs]


# ---- normal is differentiable; the rest records no graph ------------------------------------
def test_normal_gradients_are_one_for_mean_and_eps_for_std(device):
    mean = gc.tensor([1.0, -2.0, 0.5], dtype=gc.float64, requires_grad=True, device=device)
    std = gc.tensor([0.5, 2.0, 1.0], dtype=gc.float64, requires_grad=True, device=device)
    out = gc.normal(mean, std, generator=_g(device=device))
    assert out.requires_grad
    (out * gc.tensor([1.0, 2.0, 3.0], dtype=gc.float64, device=device)).sum().backward()
    np.testing.assert_allclose(host(mean.grad), [1.0, 2.0, 3.0])
    eps = (host(out) - host(mean.detach())) / host(std.detach())
    np.testing.assert_allclose(host(std.grad), eps * [1.0, 2.0, 3.0], rtol=1e-12)


def test_samples_record_no_graph(device):
    p = gc.full((4,), 0.5, requires_grad=True, device=device)
    for out in (gc.bernoulli(p), gc.multinomial(p, 2), gc.poisson(p)):
        assert not out.requires_grad and out.grad_fn is None
    w = gc.zeros(3, requires_grad=True, device=device)
    with gc.no_grad():
        w.normal_()
        w.uniform_()
    assert w.grad_fn is None and w.requires_grad


def test_expanded_tensors_refuse_random_fills():
    with pytest.raises(RuntimeError, match="more than one element"):
        gc.ones(1, 3).expand(2, 3).bernoulli_()


# ---- the CUDA path: no wait for the checks of tensor arguments --------------------------
TENSOR_SAMPLERS = {
    "bernoulli": lambda p: gc.bernoulli(p),
    "bernoulli_": lambda p: gc.zeros(p.shape, device=p.device).bernoulli_(p),
    "multinomial": lambda p: gc.multinomial(p, 2),
    "multinomial-replacement": lambda p: gc.multinomial(p, 5, replacement=True),
    "normal": lambda p: gc.normal(p, p),
}


@pytest.mark.parametrize("name", sorted(TENSOR_SAMPLERS))
def test_tensor_arguments_on_a_gpu_are_not_read_back(name, standin):
    p = gc.tensor([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]], device="cuda")
    standin.reset_syncs(log=True)
    out = TENSOR_SAMPLERS[name](p)
    assert out.device.type == "cuda"
    assert standin.host_syncs() == 0, standin.sync_log()
    out.cpu()  # (the pending checks pass)


@pytest.mark.parametrize("name", sorted(TENSOR_SAMPLERS))
def test_bad_tensor_arguments_on_a_gpu_raise_at_the_next_read(name, standin):
    p = gc.tensor([[0.2, -0.3, 0.5], [0.1, 0.1, 0.8]], device="cuda")
    standin.reset_syncs()
    out = TENSOR_SAMPLERS[name](p)
    assert standin.host_syncs() == 0
    with pytest.raises(RuntimeError, match="std >= 0.0|p_in >= 0|element < 0|entry < 0"):
        out.cpu()


# ---- gc.compile: draws with generator= are replayed fresh, as eager draws them --------------
def test_compiled_step_draws_from_its_generators_as_eager_does():
    def run(compiled):
        g = gc.Generator().manual_seed(5)
        gc.manual_seed(7)
        w = gc.ones(4)

        def step(x):
            noise = gc.randn(4, generator=g) + gc.rand(4)
            return x * w + noise + gc.zeros(4).normal_(generator=g)

        fn = gc.compile(step) if compiled else step
        outs = [host(fn(gc.ones(4))) for _ in range(5)]
        return outs, fn

    eager, _ = run(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (nothing refused: no eager fallback)
        compiled, fn = run(True)
    assert fn.replays >= 3
    for a, b in zip(eager, compiled):
        np.testing.assert_array_equal(a, b)
    assert len({a.tobytes() for a in compiled}) == 5
