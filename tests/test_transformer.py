"""nn.Transformer and its encoder and decoder (layers) against PyTorch: a torch
state_dict loads, and outputs, input and parameter gradients agree in float64."""

import warnings

import numpy as np
import pytest

import gradcore as gc
import gradcore.nn.functional as F
from gradcore import nn

from conftest import PINNED_TORCH, host, needs_torch

# (both libraries warn alike where a boolean key padding mask meets a float mask, and
# where an encoder's layers rule its nested-tensor path out: checked where it matters)
pytestmark = [pytest.mark.filterwarnings("ignore:Support for mismatched:UserWarning"),
              pytest.mark.filterwarnings("ignore:enable_nested_tensor is True:UserWarning")]

D, HEADS, FF = 8, 2, 16
N, S, T = 3, 6, 4  # batch, source and target lengths


def _load_torch_s(ours, theirs):
    ours.load_state_dict({k: gc.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})


def _pair(name, *args, **kw):
    """The same module in torch (float64) and gradcore, gradcore's loaded with torch's
    weights; construction warnings are compared."""
    import torch

    with warnings.catch_warnings(record=True) as theirs_warned:
        warnings.simplefilter("always")
        theirs = getattr(torch.nn, name)(*args, **kw).double()
    kw = {k: (getattr(nn, type(v).__name__)() if isinstance(v, torch.nn.Module) else
              getattr(F, v.__name__) if callable(v) and v.__module__.startswith("torch")
              else v) for k, v in kw.items()}
    with warnings.catch_warnings(record=True) as ours_warned:
        warnings.simplefilter("always")
        ours = getattr(nn, name)(*args, **kw, dtype=gc.float64)
    assert [str(w.message) for w in ours_warned] == [str(w.message) for w in theirs_warned]
    if PINNED_TORCH:  # (LayerNorm prints bias= from PyTorch 2.12 on)
        assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _load_torch_s(ours, theirs)
    return ours, theirs


def _masks(batch_first, rng):
    pad_src = np.zeros((N, S), bool)
    pad_src[0, 4:] = True
    pad_src[2, 5:] = True
    pad_tgt = np.zeros((N, T), bool)
    pad_tgt[1, 3:] = True
    return dict(
        src_bool=np.triu(rng.random((S, S)) > 0.6, 1),
        src_float=rng.standard_normal((S, S)),
        src_heads=rng.standard_normal((N * HEADS, S, S)),
        causal_t=np.triu(np.full((T, T), -np.inf), 1),
        causal_s=np.triu(np.full((S, S), -np.inf), 1),
        memory=rng.random((T, S)) > 0.7,
        pad_src=pad_src, pad_tgt=pad_tgt)


def _compare(ours, theirs, inputs, kw, device, rng):
    """Run both on the same arrays (masks named by kw's values); compare outputs, input
    gradients and parameter gradients."""
    import torch

    masks = _masks(getattr(ours, "batch_first", None), rng)
    g_in = [gc.tensor(a, device=device, requires_grad=True) for a in inputs]
    t_in = [torch.tensor(a, requires_grad=True) for a in inputs]
    g_kw = {k: gc.tensor(masks[v], device=device) if isinstance(v, str) else v
            for k, v in kw.items()}
    t_kw = {k: torch.tensor(masks[v]) if isinstance(v, str) else v for k, v in kw.items()}
    ours.to(device)
    a = ours(*g_in, **g_kw)
    b = theirs(*t_in, **t_kw)
    np.testing.assert_allclose(host(a.detach()), b.detach().numpy(), rtol=1e-9, atol=1e-10)
    w = rng.standard_normal(tuple(b.shape))
    (a * gc.tensor(w, device=device)).sum().backward()
    (b * torch.tensor(w)).sum().backward()
    for x, y in zip(g_in, t_in):
        np.testing.assert_allclose(host(x.grad), y.grad.numpy(), rtol=1e-8, atol=1e-9)
    ours_grads = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(host(ours_grads[name].grad), p.grad.numpy(), rtol=1e-8,
                                   atol=1e-9, err_msg=name)


def _seq(length, batch_first, rng, batched=True):
    if not batched:
        return rng.standard_normal((length, D))
    return rng.standard_normal((N, length, D) if batch_first else (length, N, D))


# (constructor arguments, forward arguments, training): each mode on half the cases
LAYER_CASES = [
    (dict(), dict(), True),
    (dict(), dict(), False),
    (dict(batch_first=True), dict(src_mask="src_bool"), False),
    (dict(norm_first=True), dict(src_key_padding_mask="pad_src"), True),
    (dict(batch_first=True, norm_first=True, activation="gelu"),
     dict(src_mask="causal_s", is_causal=True), False),
    (dict(activation="gelu_module", bias=False), dict(src_mask="src_float"), True),
    (dict(activation="tanh", layer_norm_eps=1e-3), dict(src_mask="src_heads"), False),
    (dict(batch_first=True), dict(src_mask="src_bool", src_key_padding_mask="pad_src"), True),
]


def _activation(kw):
    import torch

    kw = dict(kw)
    if kw.get("activation") == "gelu_module":
        kw["activation"] = torch.nn.GELU()
    elif kw.get("activation") == "tanh":
        kw["activation"] = torch.tanh  # (gradcore's F.tanh)
    return kw


@needs_torch
@pytest.mark.parametrize("make, call, training", LAYER_CASES)
def test_encoder_layer_is_pytorch_s(make, call, training, device):
    rng = np.random.default_rng(0)
    ours, theirs = _pair("TransformerEncoderLayer", D, HEADS, FF, dropout=0.0,
                         **_activation(make))
    ours.train(training)
    theirs.train(training)
    _compare(ours, theirs, [_seq(S, make.get("batch_first", False), rng)], call, device, rng)


DECODER_CASES = [
    (dict(), dict(), True),
    (dict(batch_first=True), dict(tgt_mask="causal_t", tgt_is_causal=True), False),
    (dict(norm_first=True), dict(tgt_mask="causal_t", memory_mask="memory",
                                 tgt_key_padding_mask="pad_tgt"), True),
    (dict(batch_first=True, norm_first=True, activation="gelu"),
     dict(memory_key_padding_mask="pad_src"), False),
    (dict(bias=False), dict(tgt_mask="causal_t", memory_key_padding_mask="pad_src"), True),
]


@needs_torch
@pytest.mark.parametrize("make, call, training", DECODER_CASES)
def test_decoder_layer_is_pytorch_s(make, call, training, device):
    rng = np.random.default_rng(1)
    ours, theirs = _pair("TransformerDecoderLayer", D, HEADS, FF, dropout=0.0, **make)
    ours.train(training)
    theirs.train(training)
    first = make.get("batch_first", False)
    _compare(ours, theirs, [_seq(T, first, rng), _seq(S, first, rng)], call, device, rng)


STACK_CASES = [
    (dict(), dict(mask="causal_s"), True),  # is_causal=None: detected
    (dict(batch_first=True), dict(src_key_padding_mask="pad_src"), False),
    (dict(batch_first=True, norm=True), dict(mask="src_bool", is_causal=False), True),
    (dict(norm_first=True, norm=True, enable_nested_tensor=False), dict(), False),
]


@needs_torch
@pytest.mark.parametrize("make, call, training", STACK_CASES)
def test_encoder_is_pytorch_s(make, call, training):
    import torch

    rng = np.random.default_rng(2)
    make = dict(make)
    norm = make.pop("norm", False)
    extra = {k: make.pop(k) for k in ("enable_nested_tensor",) if k in make}
    layer = torch.nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0, **make)
    with warnings.catch_warnings(record=True) as theirs_warned:
        warnings.simplefilter("always")
        theirs = torch.nn.TransformerEncoder(
            layer, 2, torch.nn.LayerNorm(D) if norm else None, **extra).double()
    with warnings.catch_warnings(record=True) as ours_warned:
        warnings.simplefilter("always")
        ours = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0, **make),
                                     2, nn.LayerNorm(D) if norm else None, **extra)
    assert [str(w.message) for w in ours_warned] == [str(w.message) for w in theirs_warned]
    assert ours.use_nested_tensor == theirs.use_nested_tensor
    if PINNED_TORCH:  # (LayerNorm prints bias= from PyTorch 2.12 on)
        assert repr(ours) == repr(theirs)
    _load_torch_s(ours, theirs)
    ours.to(dtype=gc.float64).train(training)
    theirs.train(training)
    _compare(ours, theirs, [_seq(S, make.get("batch_first", False), rng)], call, "cpu", rng)


@needs_torch
@pytest.mark.parametrize("batch_first, training", [(False, True), (True, False)])
def test_transformer_is_pytorch_s(batch_first, training, device):
    rng = np.random.default_rng(3)
    ours, theirs = _pair("Transformer", D, HEADS, 2, 2, FF, dropout=0.0,
                         batch_first=batch_first)
    ours.train(training)
    theirs.train(training)
    call = dict(tgt_mask="causal_t", src_key_padding_mask="pad_src",
                memory_key_padding_mask="pad_src", tgt_key_padding_mask="pad_tgt")
    _compare(ours, theirs, [_seq(S, batch_first, rng), _seq(T, batch_first, rng)], call,
             device, rng)


@needs_torch
def test_unbatched_inputs_and_norm_first_transformer():
    rng = np.random.default_rng(4)
    ours, theirs = _pair("Transformer", D, HEADS, 1, 1, FF, dropout=0.0, norm_first=True,
                         activation="gelu")
    _compare(ours, theirs, [_seq(S, False, rng, batched=False),
                            _seq(T, False, rng, batched=False)],
             dict(tgt_mask="causal_t", tgt_is_causal=True), "cpu", rng)


@needs_torch
@pytest.mark.parametrize("mask_check", [True, False])
def test_encoder_in_inference_zeros_the_padded_positions_as_pytorch_s_nested_path(mask_check):
    """PyTorch's eval-mode, no-grad encoder runs nested tensors when the key padding mask
    pads at the ends: the padded positions come out as zeros (then through ``norm``)."""
    import torch

    rng = np.random.default_rng(5)
    layer = torch.nn.TransformerEncoderLayer(D, HEADS, FF, batch_first=True)
    theirs = torch.nn.TransformerEncoder(layer, 2, torch.nn.LayerNorm(D),
                                         mask_check=mask_check).double().eval()
    ours = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, HEADS, FF, batch_first=True),
                                 2, nn.LayerNorm(D), mask_check=mask_check)
    _load_torch_s(ours, theirs)
    ours.to(dtype=gc.float64).eval()
    x = rng.standard_normal((N, S, D))
    for pad in (_masks(True, rng)["pad_src"], np.array([[False, True] * 3] * N)):
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (PyTorch's note on its nested tensors)
            b = theirs(torch.tensor(x), src_key_padding_mask=torch.tensor(pad)).numpy()
        with gc.no_grad():
            a = ours(gc.tensor(x), src_key_padding_mask=gc.tensor(pad))
        np.testing.assert_allclose(host(a), b, rtol=1e-9, atol=1e-10)
    # with gradients the padded positions are computed as any other (both libraries)
    a = ours(gc.tensor(x), src_key_padding_mask=gc.tensor(pad))
    b = theirs(torch.tensor(x), src_key_padding_mask=torch.tensor(pad))
    np.testing.assert_allclose(host(a.detach()), b.detach().numpy(), rtol=1e-9, atol=1e-10)
    assert np.all(np.abs(host(a.detach())[:, 1]) > 0)


def test_generate_square_subsequent_mask():
    mask = nn.Transformer.generate_square_subsequent_mask(4, dtype=gc.float64)
    expected = np.triu(np.full((4, 4), -np.inf), 1)
    np.testing.assert_array_equal(host(mask), expected)
    assert mask.dtype == gc.float64
    assert nn.Transformer.generate_square_subsequent_mask(2).dtype == gc.float32


def test_causal_hint_is_detected_from_the_mask():
    from gradcore.nn.transformer import _detect_is_causal_mask

    causal = nn.Transformer.generate_square_subsequent_mask(5)
    assert _detect_is_causal_mask(causal) is True
    assert _detect_is_causal_mask(causal, size=4) is False
    assert _detect_is_causal_mask(gc.zeros(5, 5)) is False
    assert _detect_is_causal_mask(gc.zeros(5, 5), is_causal=True) is True
    assert _detect_is_causal_mask(causal, is_causal=False) is False


def test_constructor_arguments_names_and_defaults():
    layer = nn.TransformerEncoderLayer(8, 2)
    assert layer.linear1.out_features == 2048 and layer.dropout.p == 0.1
    assert layer.activation is F.relu and layer.activation_relu_or_gelu == 1
    assert nn.TransformerEncoderLayer(8, 2, activation="gelu").activation_relu_or_gelu == 2
    assert nn.TransformerEncoderLayer(8, 2, activation=nn.GELU()).activation_relu_or_gelu == 2
    assert nn.TransformerEncoderLayer(8, 2, activation=gc.tanh).activation_relu_or_gelu == 0
    assert layer.norm1.eps == 1e-5 and not layer.norm_first and not layer.self_attn.batch_first
    names = [n for n, _ in nn.TransformerDecoderLayer(8, 2, 16).named_children()]
    assert names == ["self_attn", "multihead_attn", "linear1", "dropout", "linear2", "norm1",
                     "norm2", "norm3", "dropout1", "dropout2", "dropout3"]
    nobias = nn.TransformerDecoderLayer(8, 2, 16, bias=False)
    assert all(not n.endswith("bias") for n, _ in nobias.named_parameters())
    model = nn.Transformer(8, 2, 1, 1, 16, dtype=gc.float64)
    assert all(p.dtype == gc.float64 for p in model.parameters())
    assert (model.d_model, model.nhead, model.batch_first) == (8, 2, False)
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 3)
    assert len(encoder.layers) == 3 and encoder.num_layers == 3 and encoder.norm is None
    assert encoder.layers[0].linear1.weight is not encoder.layers[1].linear1.weight
    assert encoder.use_nested_tensor and encoder.mask_check


def test_construction_warnings_and_custom_parts():
    with pytest.warns(UserWarning, match="enable_nested_tensor is True, but "
                                         "self.use_nested_tensor is False because "
                                         "encoder_layer.self_attn.batch_first was not True"):
        encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 1)
    assert not encoder.use_nested_tensor
    with pytest.warns(UserWarning, match="encoder_layer.norm_first was True"):
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, norm_first=True), 1)
    with pytest.warns(UserWarning, match="encoder_layer.self_attn.num_heads is odd"):
        nn.TransformerEncoder(nn.TransformerEncoderLayer(9, 3, 16, batch_first=True), 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 1,
                              enable_nested_tensor=False)
        decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16), 2)
        encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 1,
                                        enable_nested_tensor=False)
        model = nn.Transformer(8, 2, custom_encoder=encoder, custom_decoder=decoder)
    assert model.encoder is encoder and model.decoder is decoder
    src, tgt = gc.randn(5, 2, 8), gc.randn(3, 2, 8)
    assert model(src, tgt).shape == (3, 2, 8)


def test_errors():
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not swish"):
        nn.TransformerDecoderLayer(8, 2, activation="swish")
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.TransformerEncoderLayer(8, 3)
    model = nn.Transformer(8, 2, 1, 1, 16)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(gc.randn(5, 2, 8), gc.randn(3, 4, 8))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be "
                                           "equal to d_model"):
        model(gc.randn(5, 2, 8), gc.randn(3, 2, 6))
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    with pytest.raises(AssertionError, match="only bool and floating types of src_mask"):
        layer(gc.randn(5, 2, 8), src_mask=gc.zeros(5, 5, dtype=gc.int64))
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is "
                                           r"gradcore.Size\(\[4, 4\]\), but should be "
                                           r"\(5, 5\)."):
        layer(gc.randn(5, 2, 8), src_mask=gc.zeros(4, 4))
    with pytest.warns(UserWarning, match="Support for mismatched src_key_padding_mask and "
                                         "src_mask is deprecated"):
        layer(gc.randn(5, 2, 8), src_mask=gc.zeros(5, 5),
              src_key_padding_mask=gc.zeros(2, 5, dtype=gc.bool))


def test_train_step_with_dropout_is_reproducible():
    model = nn.Transformer(8, 2, 1, 1, 16, dropout=0.5)
    src, tgt = gc.randn(5, 2, 8), gc.randn(3, 2, 8)
    gc.manual_seed(11)
    a = model(src, tgt)
    gc.manual_seed(11)
    b = model(src, tgt)
    np.testing.assert_array_equal(host(a.detach()), host(b.detach()))
    c = model(src, tgt)
    assert not np.allclose(host(a.detach()), host(c.detach()))
    a.sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.eval()
    np.testing.assert_array_equal(host(model(src, tgt).detach()),
                                  host(model(src, tgt).detach()))
