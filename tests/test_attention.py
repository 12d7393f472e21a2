"""F.scaled_dot_product_attention against PyTorch and by finite differences."""

import warnings

import numpy as np
import pytest

import gradcore as gc
import gradcore.nn.functional as F
from gradcore.autograd import gradcheck, gradgradcheck

from conftest import host, needs_torch

CASES = [
    (((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 7)), {}),
    (((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 7)), dict(is_causal=True)),
    (((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 7)), dict(scale=0.3, mask="bool")),
    (((2, 3, 5, 4), (1, 3, 6, 4), (1, 3, 6, 7)), dict(mask="float")),
    (((2, 4, 5, 4), (2, 2, 6, 4), (2, 2, 6, 7)), dict(enable_gqa=True)),
    (((5, 4), (6, 4), (6, 7)), dict(is_causal=True)),
]


@needs_torch
@pytest.mark.parametrize("shapes, kw", CASES)
def test_values_and_gradients_are_pytorch_s(shapes, kw, device):
    import torch

    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    kw = dict(kw)
    mask = kw.pop("mask", None)
    if mask == "bool":
        mask = rng.random((5, 6)) > 0.3
        mask[:, 0] = True  # (no query without a key)
    elif mask == "float":
        mask = rng.standard_normal((3, 1, 6))
    ours = [gc.tensor(a, device=device, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    a = F.scaled_dot_product_attention(
        *ours, attn_mask=None if mask is None else gc.tensor(mask, device=device), **kw)
    b = torch.nn.functional.scaled_dot_product_attention(
        *theirs, attn_mask=None if mask is None else torch.tensor(mask), **kw)
    np.testing.assert_allclose(host(a.detach()), b.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = rng.standard_normal(tuple(b.shape))
    (a * gc.tensor(w, device=device)).sum().backward()
    (b * torch.tensor(w)).sum().backward()
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(host(x.grad), y.grad.numpy(), rtol=1e-9, atol=1e-11)


def test_second_derivatives_dropout_and_errors():
    rng = np.random.default_rng(1)
    q, k, v = (gc.tensor(rng.standard_normal(s), requires_grad=True)
               for s in ((2, 3, 2), (2, 4, 2), (2, 4, 3)))
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    assert gradcheck(fn, (q, k, v))
    assert gradgradcheck(fn, (q, k, v))
    gc.manual_seed(5)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    gc.manual_seed(5)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    np.testing.assert_array_equal(host(a.detach()), host(b.detach()))
    with pytest.raises(RuntimeError, match="should not be set when is_causal=True"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=gc.ones(3, 4), is_causal=True)



@needs_torch
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_a_query_with_every_key_masked_gets_zeros_and_finite_gradients(kind, device):
    """PyTorch's math path (its ``_safe_softmax``): zeros for such a row, not NaN, and
    zero gradients through it; the other rows are untouched."""
    import torch

    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s) for s in ((2, 2, 4, 3), (2, 2, 5, 3), (2, 2, 5, 6))]
    keep = rng.random((2, 1, 4, 5)) > 0.4
    keep[:, :, 1] = False  # query 1 attends to nothing
    keep[0, :, 3] = False  # and query 3 of the first batch
    mask = keep if kind == "bool" else np.where(keep, rng.standard_normal(keep.shape), -np.inf)
    ours = [gc.tensor(a, device=device, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    a = F.scaled_dot_product_attention(*ours, attn_mask=gc.tensor(mask, device=device))
    b = torch.nn.functional.scaled_dot_product_attention(*theirs, attn_mask=torch.tensor(mask))
    assert np.all(host(a.detach())[:, :, 1] == 0) and np.all(host(a.detach())[0, :, 3] == 0)
    np.testing.assert_allclose(host(a.detach()), b.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = rng.standard_normal(tuple(b.shape))
    (a * gc.tensor(w, device=device)).sum().backward()
    (b * torch.tensor(w)).sum().backward()
    for x, y in zip(ours, theirs):
        assert np.all(np.isfinite(host(x.grad)))
        np.testing.assert_allclose(host(x.grad), y.grad.numpy(), rtol=1e-9, atol=1e-11)
    assert np.all(host(ours[0].grad)[:, :, 1] == 0)


def test_fully_masked_rows_are_differentiable_twice():
    rng = np.random.default_rng(4)
    q, k, v = (gc.tensor(rng.standard_normal(s), requires_grad=True)
               for s in ((3, 2), (4, 2), (4, 3)))
    keep = gc.tensor(np.array([[True, False, True, False], [False] * 4, [True] * 4]))
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=keep)  # noqa: E731
    assert gradcheck(fn, (q, k, v))
    assert gradgradcheck(fn, (q, k, v))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind", [None, "causal", "bool", "float"])
def test_attention_runs_its_fused_kernels_on_cuda(kind, dtype, standin, launched):
    """On the CuPy stand-in's CUDA device, what lies between the two matmuls (scale,
    mask, safe softmax) is one launch forward and one backward (SafeSoftmaxBackward0's
    kernels), with the CPU's values and gradients, a float mask's included, and zeros
    for a query left with no key."""
    rng = np.random.default_rng(6)
    arrays = [rng.standard_normal(s).astype(dtype) for s in ((2, 3, 5, 4), (2, 3, 6, 4),
                                                             (2, 3, 6, 7))]
    w = rng.standard_normal((2, 3, 5, 7)).astype(dtype)
    keep = rng.random((5, 6)) > 0.3
    keep[2] = False  # query 2 attends to nothing
    mask = {"bool": keep, "float": np.where(keep, rng.standard_normal((5, 6)),
                                            -np.inf).astype(dtype)}.get(kind)
    results = []
    for dev in ("cpu", "cuda"):
        ts = [gc.tensor(a, device=dev, requires_grad=True) for a in arrays]
        m = None if mask is None else gc.tensor(mask, device=dev,
                                                requires_grad=kind == "float")
        launched.clear()
        out = F.scaled_dot_product_attention(*ts, attn_mask=m, is_causal=kind == "causal")
        forward = list(launched)
        launched.clear()
        (out * gc.tensor(w, device=dev)).sum().backward()
        grads = [t.grad for t in ts] + ([m.grad] if kind == "float" else [])
        results.append((host(out.detach()), [host(g) for g in grads], forward,
                        list(launched)))
    (y0, g0, _, _), (y1, g1, forward, backward) = results
    tol = dict(rtol=1e-12, atol=1e-13) if dtype == "float64" else dict(rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(y1, y0, **tol)
    for a, b in zip(g1, g0):
        np.testing.assert_allclose(a, b, **tol)
    if kind in ("bool", "float"):
        assert np.all(y1[:, :, 2] == 0) and np.all(g1[0][:, :, 2] == 0)
    assert forward == [f"attention_softmax_rows_{dtype}"]
    assert backward == [f"attention_softmax_backward_rows_{dtype}"]


def test_attention_is_one_safe_softmax_node_between_the_matmuls():
    q, k, v = (gc.randn(2, 3, 4, requires_grad=True) for _ in range(3))
    for kw in ({}, dict(is_causal=True), dict(attn_mask=gc.ones(3, 3, dtype=gc.bool)),
               dict(attn_mask=gc.zeros(3, 3, requires_grad=True))):
        out = F.scaled_dot_product_attention(q, k, v, **kw)
        node = out.grad_fn
        while node.name() != "SafeSoftmaxBackward0":
            node = node.next_functions[0][0]
        below = [fn.name() for fn, _ in node.next_functions if fn is not None]
        assert below[0] in ("BmmBackward0", "UnsafeViewBackward0", "ViewBackward0"), below
        assert below[1:] == (["AccumulateGrad"] if kw.get("attn_mask") is not None and
                             kw["attn_mask"].requires_grad else []), below


@pytest.mark.parametrize("kind", [None, "causal", "bool", "float"])
def test_attention_replays_under_compile(kind, device):
    """A compiled step with attention (its masks included) replays, bit for bit as
    eager, and refuses nothing."""
    rng = np.random.default_rng(8)
    q = gc.tensor(rng.standard_normal((2, 5, 4)), requires_grad=True)
    mask = {"bool": gc.tensor(rng.random((5, 6)) > 0.3),
            "float": gc.tensor(rng.standard_normal((5, 6)))}.get(kind)

    def step(x):
        q.grad = None
        out = F.scaled_dot_product_attention(q, x, x, attn_mask=mask,
                                             is_causal=kind == "causal")
        out.sum().backward()
        return out.detach()

    fn = gc.compile(step)
    xs = [gc.tensor(rng.standard_normal((2, 6, 4))) for _ in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [(host(fn(x)).copy(), host(q.grad).copy()) for x in xs]
    assert fn.replays == (1 if device == "cuda" else 2)  # (CUDA: a graph captured first)
    want = [(host(step(x)).copy(), host(q.grad).copy()) for x in xs]
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])


@needs_torch
@pytest.mark.parametrize("kind", ["float", "bool", "causal"])
def test_attention_under_autocast_is_pytorch_s(kind):
    """Under float16 autocast the scores, a float32 mask and the weights are float16, as
    PyTorch casts every floating argument of scaled_dot_product_attention."""
    import torch

    rng = np.random.default_rng(9)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((2, 3, 4), (2, 5, 4),
                                                                  (2, 5, 6))]
    mask = {"float": rng.standard_normal((3, 5)).astype(np.float32),
            "bool": rng.random((3, 5)) > 0.3}.get(kind)
    kw = dict(is_causal=kind == "causal")
    ours = [gc.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    with gc.autocast("cpu", dtype=gc.float16):
        a = F.scaled_dot_product_attention(
            *ours, attn_mask=None if mask is None else gc.tensor(mask), **kw)
    with torch.autocast("cpu", dtype=torch.float16):
        b = torch.nn.functional.scaled_dot_product_attention(
            *theirs, attn_mask=None if mask is None else torch.tensor(mask), **kw)
    assert a.dtype == gc.float16 and b.dtype == torch.float16
    np.testing.assert_allclose(host(a.detach()).astype(np.float64),
                               b.detach().double().numpy(), rtol=5e-3, atol=5e-3)
    a.float().sum().backward()
    b.float().sum().backward()
    for x, y in zip(ours, theirs):
        assert x.grad.dtype == gc.float32
        np.testing.assert_allclose(host(x.grad), y.grad.numpy(), rtol=2e-2, atol=2e-2)


@needs_torch
@pytest.mark.filterwarnings("ignore:invalid value encountered in matmul")
def test_a_row_of_minus_inf_scores_gets_zeros_without_a_mask(device):
    """PyTorch's math path is its safe softmax with or without a mask: a query whose
    scores are all -inf gets zeros, not NaN."""
    import torch

    q = np.array([[-np.inf, 0.0], [1.0, 0.0]])
    k = np.array([[1.0, 0.0], [2.0, 0.0]])
    v = np.eye(2)
    for causal in (False, True):
        ours = [gc.tensor(a, device=device, requires_grad=True) for a in (q, k, v)]
        theirs = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
        a = F.scaled_dot_product_attention(*ours, is_causal=causal)
        b = torch.nn.functional.scaled_dot_product_attention(*theirs, is_causal=causal)
        np.testing.assert_allclose(host(a.detach()), b.detach().numpy(), rtol=1e-12)
        assert np.all(host(a.detach())[0] == 0)
        a.sum().backward()
        b.sum().backward()
        for x, y in zip(ours, theirs):  # (k's gradient is 0 * -inf: NaN in both)
            np.testing.assert_allclose(host(x.grad), y.grad.numpy(), rtol=1e-12)


# (arguments, PyTorch 2.13's error) for shapes, dtypes and masks it refuses
BAD_CALLS = [
    (dict(dtypes=("float64", "float32", "float64")),
     "Expected query, key, and value to have the same dtype, but got query.dtype: double "
     "key.dtype: float and value.dtype: double instead."),
    (dict(dtypes=("int64",) * 3), "expected scalar type Float but found Long"),
    (dict(shapes=((4,), (2, 5, 4), (2, 5, 6))),
     "Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: 1 "
     "key.dim: 3 and value.dim: 3 instead."),
    (dict(shapes=((2, 3, 4), (2, 5, 3), (2, 5, 6))),
     "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 3]."),
    (dict(shapes=((2, 3, 4), (2, 5, 4), (2, 4, 6))),
     "Expected size for first two dimensions of batch2 tensor to be: [2, 5] but got: [2, 4]."),
    (dict(shapes=((2, 3, 4), (3, 5, 4), (3, 5, 6))),
     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton "
     "dimension 0"),
    (dict(mask=((3, 4), "bool")),
     "The size of tensor a (5) must match the size of tensor b (4) at non-singleton "
     "dimension 2"),
    (dict(mask=((1, 1, 3, 5), "bool")),
     "output with shape [2, 3, 5] doesn't match the broadcast shape [1, 2, 3, 5]"),
    (dict(mask=((3, 5), "int64")),
     "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
     "attn_mask.dtype: long int and  query.dtype: double instead."),
    (dict(dtypes=("float32",) * 3, mask=((3, 5), "float64")),
     "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
     "attn_mask.dtype: double and  query.dtype: float instead."),
    (dict(dropout_p=1.5), "dropout probability has to be between 0 and 1, but got 1.5"),
    (dict(shapes=((2, 4, 3, 4), (2, 3, 5, 4), (2, 3, 5, 4)), enable_gqa=True),
     "Number of heads in key and value must divide the number of heads in "),
]


def _bad_call(lib, F_, shapes=((2, 3, 4), (2, 5, 4), (2, 5, 6)), dtypes=("float64",) * 3,
              mask=None, **kw):
    rng = np.random.default_rng(0)
    tensors = [lib.tensor(rng.standard_normal(s)).to(getattr(lib, d))
               for s, d in zip(shapes, dtypes)]
    if mask is not None:
        mask = lib.ones(*mask[0]).to(getattr(lib, mask[1]))
    return F_.scaled_dot_product_attention(*tensors, attn_mask=mask, **kw)


@pytest.mark.parametrize("call, message", BAD_CALLS)
def test_bad_shapes_dtypes_and_masks_raise_pytorch_s_errors(call, message):
    with pytest.raises(RuntimeError) as ours:
        _bad_call(gc, F, **call)
    assert str(ours.value).startswith(message)


@needs_torch
@pytest.mark.parametrize("call, message", BAD_CALLS)
def test_the_errors_are_pytorch_s(call, message):
    import torch

    with pytest.raises(RuntimeError) as theirs:
        _bad_call(torch, torch.nn.functional, **call)
    assert str(theirs.value) == message


def test_what_pytorch_accepts_is_accepted():
    """A float32 mask with any query dtype, a mask of fewer dimensions, broadcast batch
    dimensions, a negative dropout (no dropout), key and value heads shared unevenly."""
    for call in (dict(mask=((3, 5), "float32")), dict(mask=((5,), "bool")),
                 dict(shapes=((1, 3, 4), (2, 5, 4), (2, 5, 6))), dict(dropout_p=-0.5),
                 dict(shapes=((2, 4, 3, 4), (2, 2, 5, 4), (2, 1, 5, 6)), enable_gqa=True)):
        out = _bad_call(gc, F, **call)
        assert out.dtype == gc.float64 and out.shape[-2:] == (3, 6)


MHA = [({}, {}), (dict(batch_first=True), dict(average_attn_weights=False)),
       (dict(kdim=4, vdim=6), dict(key_padding_mask="pad")),
       ({}, dict(attn_mask="causal")),
       ({}, dict(attn_mask="float", need_weights=False)),
       (dict(add_bias_kv=True, add_zero_attn=True), dict(key_padding_mask="pad",
                                                         attn_mask="causal")),
       (dict(bias=False), {})]


@needs_torch
@pytest.mark.parametrize("kw, call", MHA)
def test_multihead_attention_is_pytorch_s(kw, call, device):
    import torch

    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(8, 2, **kw).double()
    ours = gc.nn.MultiheadAttention(8, 2, **kw).to(device=device, dtype=gc.float64)
    assert repr(ours) == repr(theirs)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    ours.load_state_dict({k: gc.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})
    masks = {"pad": np.array([[False] * 5 + [True]] * 3),
             "causal": np.triu(np.ones((5, 6), bool), 1), "float": rng.standard_normal((5, 6))}
    call = {k: masks.get(v, v) for k, v in call.items()}
    first = kw.get("batch_first", False)
    shape = lambda n, d: (3, n, d) if first else (n, 3, d)  # noqa: E731
    arrays = [rng.standard_normal(shape(5, 8)), rng.standard_normal(shape(6, kw.get("kdim", 8))),
              rng.standard_normal(shape(6, kw.get("vdim", 8)))]
    g_in = [gc.tensor(a, device=device, requires_grad=True) for a in arrays]
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    a, aw = ours(*g_in, **{k: gc.tensor(v, device=device) if isinstance(v, np.ndarray) else v
                           for k, v in call.items()})
    b, bw = theirs(*t_in, **{k: torch.tensor(v) if isinstance(v, np.ndarray) else v
                             for k, v in call.items()})
    np.testing.assert_allclose(host(a.detach()), b.detach().numpy(), rtol=1e-9, atol=1e-12)
    assert (aw is None) == (bw is None)
    if bw is not None:
        np.testing.assert_allclose(host(aw.detach()), bw.detach().numpy(), rtol=1e-9,
                                   atol=1e-12)
    w = rng.standard_normal(tuple(b.shape))
    (a * gc.tensor(w, device=device)).sum().backward()
    (b * torch.tensor(w)).sum().backward()
    for x, y in zip(g_in, t_in):
        np.testing.assert_allclose(host(x.grad), y.grad.numpy(), rtol=1e-8, atol=1e-11)
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(host(p.grad), q.grad.numpy(), rtol=1e-8, atol=1e-11,
                                   err_msg=name)


def test_multihead_attention_checks_and_unbatched_inputs():
    with pytest.raises(AssertionError, match="divisible by num_heads"):
        gc.nn.MultiheadAttention(7, 2)
    mha = gc.nn.MultiheadAttention(4, 2)
    out, weights = mha(gc.randn(5, 4), gc.randn(6, 4), gc.randn(6, 4))
    assert tuple(out.shape) == (5, 4) and tuple(weights.shape) == (5, 6)
    assert abs(host(mha.in_proj_bias).sum()) == 0 and abs(host(mha.out_proj.bias).sum()) == 0


# ------------------------------------------------- F.multi_head_attention_forward
E, HEADS, L, S, N = 8, 2, 4, 5, 3
PACKED = ("in_proj_weight", "in_proj_bias", "out_proj_weight", "out_proj_bias")
SEPARATE = ("q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias",
            "out_proj_weight", "out_proj_bias")
PADDED = np.zeros((N, S), bool)
PADDED[:, -1] = True
EVERY_KEY = np.zeros((N, S), bool)
EVERY_KEY[1] = True  # (the second batch element attends to nothing)
CAUSAL = np.triu(np.ones((L, L), bool), 1)
FORWARD_CASES = [
    ("self", PACKED, {}),
    ("kv", PACKED, dict(key_padding_mask=PADDED)),
    ("kv", PACKED, dict(key_padding_mask=PADDED, need_weights=False)),
    ("cross", PACKED, dict(key_padding_mask=EVERY_KEY, need_weights=False)),  # zeros
    ("cross", PACKED, dict(key_padding_mask=EVERY_KEY)),  # NaN, as PyTorch
    ("self", PACKED, dict(attn_mask=CAUSAL, is_causal=True, need_weights=False)),
    ("self", PACKED, dict(attn_mask=CAUSAL, is_causal=True)),
    ("self", PACKED, dict(attn_mask="heads", average_attn_weights=False)),
    ("self", PACKED + ("bias_k", "bias_v"), dict(attn_mask=CAUSAL, add_zero_attn=True)),
    ("cross", PACKED, dict(add_zero_attn=True, key_padding_mask=PADDED)),
    ("separate", SEPARATE, dict(use_separate_proj_weight=True)),
    ("cross", PACKED, dict(static_k="static", static_v="static")),
    ("unbatched", PACKED, dict(key_padding_mask=PADDED[0])),
    ("unbatched", PACKED, dict(attn_mask="heads", need_weights=False)),
    ("cross", PACKED, dict(dropout_p=0.5, training=False)),
]


def _forward_inputs(kind, rng):
    x = rng.standard_normal((L, N, E))
    if kind == "self":
        return x, x, x
    if kind == "kv":
        kv = rng.standard_normal((S, N, E))
        return x, kv, kv
    if kind == "separate":
        return x, rng.standard_normal((S, N, 6)), rng.standard_normal((S, N, 7))
    k, v = rng.standard_normal((S, N, E)), rng.standard_normal((S, N, E))
    return (x[:, 0], k[:, 0], v[:, 0]) if kind == "unbatched" else (x, k, v)


def _run_forward(lib, F_, inputs, weights, kw):
    """The forward and backward of ``F_.multi_head_attention_forward`` on one library's
    tensors (``query is key`` where the arrays are one): output, weights, gradients."""
    made = {}
    tensors = [made.setdefault(id(a), lib.tensor(a, requires_grad=True)) for a in inputs]
    params = {n: lib.tensor(w, requires_grad=True) for n, w in weights.items()}
    args = dict(in_proj_weight=None, in_proj_bias=None, bias_k=None, bias_v=None,
                add_zero_attn=False, dropout_p=0.0, out_proj_weight=None, out_proj_bias=None)
    args.update(params)
    args.update({k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()})
    out, attn = F_.multi_head_attention_forward(*tensors, E, HEADS, **args)
    upstream = np.random.default_rng(1).standard_normal(tuple(out.shape))
    (out * lib.tensor(upstream)).sum().backward()
    grads = [None if t.grad is None else host(t.grad) if lib is gc else t.grad.numpy()
             for t in [*made.values(), *params.values()]]
    as_array = (lambda t: host(t.detach())) if lib is gc else (lambda t: t.detach().numpy())
    return as_array(out), None if attn is None else as_array(attn), grads


@needs_torch
@pytest.mark.parametrize("kind, names, kw", FORWARD_CASES)
# (NumPy's note on the softmax of a row of -inf, the NaN case: PyTorch gives NaN silently)
@pytest.mark.filterwarnings("ignore:invalid value encountered in subtract:RuntimeWarning")
def test_multi_head_attention_forward_is_pytorch_s(kind, names, kw):
    import torch

    rng = np.random.default_rng(0)
    shapes = dict(in_proj_weight=(3 * E, E), in_proj_bias=(3 * E,), out_proj_weight=(E, E),
                  out_proj_bias=(E,), q_proj_weight=(E, E), k_proj_weight=(E, 6),
                  v_proj_weight=(E, 7), bias_k=(1, 1, E), bias_v=(1, 1, E))
    weights = {n: rng.standard_normal(shapes[n]) for n in names}
    inputs = _forward_inputs(kind, rng)
    kw = dict(kw)
    if isinstance(kw.get("attn_mask"), str):  # ("heads": one per head)
        batch = 1 if kind == "unbatched" else N
        kw["attn_mask"] = rng.standard_normal((batch * HEADS, L, inputs[1].shape[0]))
    for name in ("static_k", "static_v"):
        if name in kw:
            kw[name] = rng.standard_normal((N * HEADS, 7, E // HEADS))
    ours = _run_forward(gc, F, inputs, weights, kw)
    theirs = _run_forward(torch, torch.nn.functional, inputs, weights, kw)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-9, atol=1e-11)
    assert (ours[1] is None) == (theirs[1] is None)
    if ours[1] is not None:
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-9, atol=1e-11)
    for a, b in zip(ours[2], theirs[2]):
        assert (a is None) == (b is None)  # (static keys and values: no key gradient)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)
    if kw.get("key_padding_mask") is EVERY_KEY and not kw.get("need_weights", True):
        assert np.all(ours[0][:, 1] == ours[0][0, 1])  # (zeros through out_proj: its bias)


def test_multi_head_attention_forward_checks_its_arguments():
    rng = np.random.default_rng(0)
    x, k, v = (gc.tensor(a) for a in _forward_inputs("cross", rng))
    w = {n: gc.randn(*s, dtype=gc.float64) for n, s in
         dict(in_proj_weight=(3 * E, E), out_proj_weight=(E, E)).items()}

    def call(q=x, key=k, value=v, **kw):
        args = dict(in_proj_bias=None, bias_k=None, bias_v=None, add_zero_attn=False,
                    dropout_p=0.0, out_proj_bias=None, **w)
        args.update(kw)
        return F.multi_head_attention_forward(q, key, value, E, HEADS, **args)

    cases = [
        (dict(q=x[0, 0]), AssertionError, "query should be unbatched 2D or batched 3D tensor "
                                          "but received 1-D query tensor"),
        (dict(key=k[:, 0]), AssertionError, "For batched (3-D) `query`, expected `key` and "
                                            "`value` to be 3-D but found 2-D and 3-D"),
        (dict(q=x[..., :6]), AssertionError, "was expecting embedding dimension of 8, but got 6"),
        (dict(value=v[:2]), AssertionError, "key shape gradcore.Size([5, 3, 8]) does not match "
                                            "value shape gradcore.Size([2, 3, 8])"),
        (dict(attn_mask=gc.zeros(L, S + 1, dtype=gc.bool)), RuntimeError,
         "The shape of the 2D attn_mask is gradcore.Size([4, 6]), but should be (4, 5)."),
        (dict(attn_mask=gc.zeros(L, S, dtype=gc.int64)), AssertionError,
         "only bool and floating types of attn_mask are supported"),
        (dict(key_padding_mask=gc.zeros(N, S + 1, dtype=gc.bool)), AssertionError,
         "Expected key_padded_mask.shape[1] to be 5, but got 6"),
        (dict(is_causal=True), RuntimeError, "Need attn_mask if specifying the is_causal hint"),
        (dict(static_k=gc.zeros(N * HEADS, 7, 3)), AssertionError,
         "expecting static_k.size(2) of 4, but got 3"),
        (dict(bias_k=gc.zeros(1, 1, E)), AssertionError, "bias_k is set but bias_v is None"),
        (dict(use_separate_proj_weight=True), AssertionError,
         "use_separate_proj_weight is True but q_proj_weight is None"),
    ]
    for kw, error, message in cases:
        with pytest.raises(error) as caught:
            call(**kw)
        assert str(caught.value).startswith(message), (kw, str(caught.value))
    with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and "
                                         "attn_mask is deprecated"):
        call(key_padding_mask=gc.zeros(N, S), attn_mask=gc.zeros(L, S, dtype=gc.bool))


def test_multihead_attention_goes_through_the_functional_form(monkeypatch):
    """As PyTorch's module: ``F.multi_head_attention_forward`` with the module's weights,
    self-attention (``batch_first`` too) keeping ``query is key is value``."""
    seen = []
    original = F.multi_head_attention_forward

    def spy(query, key, value, *args, **kwargs):
        seen.append((query is key is value, kwargs.get("use_separate_proj_weight", False)))
        return original(query, key, value, *args, **kwargs)

    monkeypatch.setattr(F, "multi_head_attention_forward", spy)
    x = gc.randn(2, 3, 4)
    gc.nn.MultiheadAttention(4, 2, batch_first=True)(x, x, x)
    gc.nn.MultiheadAttention(4, 2, kdim=3, vdim=5)(x, gc.randn(2, 3, 3), gc.randn(2, 3, 5))
    assert seen == [(True, False), (False, True)]
