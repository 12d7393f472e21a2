"""Recurrent layers, as ``torch.nn``'s: :class:`RNN`, :class:`LSTM`, :class:`GRU` and
their one-step cells :class:`RNNCell`, :class:`LSTMCell`, :class:`GRUCell`.

Same constructor arguments, parameter names and shapes (``weight_ih_l0``,
``bias_hh_l1_reverse``, ...; gates stacked in PyTorch's order, LSTM ``i, f, g, o`` and
GRU ``r, z, n``), initialization (every parameter uniform in ``±1/sqrt(hidden_size)``),
input and output layouts, checks and messages as PyTorch 2.13, so a PyTorch state dict
loads as is and gives the same outputs.

Each layer is composed from differentiable ops (``linear``, ``sigmoid``, ``tanh``,
``split``, ``stack``): its gradient comes from theirs and it runs on every device and
under ``gc.compile``. The input's projection ``x @ W_ih.T + b_ih`` is one matrix product
for all time steps of a layer and direction; only the hidden state's projection is
computed step by step, as PyTorch's CPU implementation does.

>>> import gradcore as gc
>>> from gradcore import nn
>>> lstm = nn.LSTM(input_size=4, hidden_size=3, num_layers=2, batch_first=True)
>>> output, (h_n, c_n) = lstm(gc.randn(5, 7, 4))      # 5 sequences of 7 steps
>>> output.shape, h_n.shape, c_n.shape
(gradcore.Size([5, 7, 3]), gradcore.Size([2, 5, 3]), gradcore.Size([2, 5, 3]))
"""

from __future__ import annotations

import math
import numbers
import warnings

from ..autograd.grad_mode import autocast_blocks as _ac_blocks
from ..creation import empty, zeros
from ..ops import activation as _act
from ..ops import index as _index
from ..ops import pointwise as _pw
from ..ops import shape as _shape
from ..tensor import Parameter
from . import functional as F
from . import init
from .modules import Module
from .utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


# ---- one time step ----------
# Each takes the step's input projection ``gi = x_t @ W_ih.T + b_ih`` (computed for all
# steps at once by the layers, per step by the cells), the state before the step (a
# tuple: ``(h,)``, or ``(h, c)`` for the LSTM) and the recurrent weights, and returns the
# state after it. The formulas and their order of operations are PyTorch's (ATen's
# RNN.cpp cells).

def _rnn_tanh_step(gi, state, w_hh, b_hh, w_hr):
    return (_pw.tanh(_act.linear(state[0], w_hh, b_hh) + gi),)


def _rnn_relu_step(gi, state, w_hh, b_hh, w_hr):
    return (_pw.relu(_act.linear(state[0], w_hh, b_hh) + gi),)


def _lstm_step(gi, state, w_hh, b_hh, w_hr):
    h, c = state
    ingate, forgetgate, cellgate, outgate = _shape.chunk(_act.linear(h, w_hh, b_hh) + gi, 4, 1)
    c = _pw.sigmoid(forgetgate) * c + _pw.sigmoid(ingate) * _pw.tanh(cellgate)
    h = _pw.sigmoid(outgate) * _pw.tanh(c)
    if w_hr is not None:  # LSTM with proj_size: h is projected down
        h = _act.linear(h, w_hr)
    return h, c


def _gru_step(gi, state, w_hh, b_hh, w_hr):
    h = state[0]
    i_r, i_z, i_n = _shape.chunk(gi, 3, 1)
    h_r, h_z, h_n = _shape.chunk(_act.linear(h, w_hh, b_hh), 3, 1)
    resetgate = _pw.sigmoid(h_r + i_r)
    inputgate = _pw.sigmoid(h_z + i_z)
    newgate = _pw.tanh(i_n + h_n * resetgate)
    return ((h - newgate) * inputgate + newgate,)


_STEPS = {"RNN_TANH": _rnn_tanh_step, "RNN_RELU": _rnn_relu_step, "LSTM": _lstm_step,
          "GRU": _gru_step}


def _run_direction(step, gis, state, w_hh, b_hh, w_hr, sizes, reverse):
    """Run ``step`` over the time steps' input projections ``gis`` from ``state``.

    ``sizes[t]`` is how many sequences run at step ``t`` (all of them in a padded batch;
    fewer and fewer in a packed one, longest first): forwards, the sequences that end
    leave the state (their final state is kept), backwards they join it from their
    initial state. Returns the per-step outputs (in time order) and the final state,
    each sequence's at its own last step.
    """
    n = len(gis)
    outs = [None] * n
    if not reverse:
        ended = []
        last = sizes[0]
        for t in range(n):
            bs = sizes[t]
            if bs < last:
                ended.append(tuple(s[bs:last] for s in state))
                state = tuple(s[:bs] for s in state)
                last = bs
            state = step(gis[t], state, w_hh, b_hh, w_hr)
            outs[t] = state[0]
        if ended:
            ended.append(state)
            ended.reverse()
            state = tuple(_shape.cat([e[k] for e in ended], 0) for k in range(len(state)))
        return outs, state
    initial = state
    last = sizes[-1]
    if last < sizes[0]:
        state = tuple(s[:last] for s in initial)
    for t in range(n - 1, -1, -1):
        bs = sizes[t]
        if bs > last:
            state = tuple(_shape.cat([s, s0[last:bs]], 0) for s, s0 in zip(state, initial))
            last = bs
        state = step(gis[t], state, w_hh, b_hh, w_hr)
        outs[t] = state[0]
    return outs, state


# ---- the layers ----------
class RNNBase(Module):
    """What :class:`RNN`, :class:`LSTM` and :class:`GRU` share: the parameters of each
    layer and direction, their initialization, the checks of inputs and states, and the
    loop over layers, directions and time steps.

    ``mode`` is ``'RNN_TANH'``, ``'RNN_RELU'``, ``'LSTM'`` or ``'GRU'``; the other
    arguments are the layers' (see :class:`LSTM`).
    """

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if (not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1
                or isinstance(dropout, bool)):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, "
                          "so non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=3)
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first should be of type bool, got: "
                            f"{type(batch_first).__name__}")
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: "
                            f"{type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: "
                            f"{type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        gate_sizes = {"LSTM": 4 * hidden_size, "GRU": 3 * hidden_size,
                      "RNN_TANH": hidden_size, "RNN_RELU": hidden_size}
        if mode not in gate_sizes:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = gate_sizes[mode]
        self._flat_weights_names = []
        self._all_weights = []
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input_size = input_size if layer == 0 else \
                    real_hidden_size * num_directions
                suffix = "_reverse" if direction == 1 else ""
                shapes = {"weight_ih": (gate_size, layer_input_size),
                          "weight_hh": (gate_size, real_hidden_size)}
                if bias:
                    shapes["bias_ih"] = (gate_size,)
                    shapes["bias_hh"] = (gate_size,)
                if proj_size > 0:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                names = []
                for kind, shape in shapes.items():
                    name = f"{kind}_l{layer}{suffix}"
                    setattr(self, name, Parameter(empty(shape, device=device, dtype=dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        """The parameters in PyTorch's flat order (layer, direction, then ``weight_ih``,
        ``weight_hh``, ``bias_ih``, ``bias_hh``, ``weight_hr``)."""
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        """The parameters of each layer and direction: a list of lists, in
        ``_flat_weights`` order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """Does nothing, and exists because PyTorch programs call it: PyTorch packs the
        weights into one cuDNN buffer here; gradcore keeps each parameter as it is."""

    def reset_parameters(self) -> None:
        """Every parameter uniform in ``[-1/sqrt(hidden_size), 1/sqrt(hidden_size)]``,
        from gradcore's generator."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    # -- checks (PyTorch's, with its messages) ----------
    def check_input(self, input, batch_sizes) -> None:  # noqa: A002
        """Refuse an input of the wrong dtype, number of dimensions or feature size."""
        weight = self._flat_weights[0]
        if input.dtype != weight.dtype and not _ac_blocks[0]:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype "
                             f"({weight.dtype}). Convert input: input.to({weight.dtype}), or "
                             f"convert model: model.to({input.dtype})")
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got "
                               f"{input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.size(-1)}")

    def get_expected_hidden_size(self, input, batch_sizes):  # noqa: A002
        """``(num_layers * num_directions, batch, proj_size or hidden_size)``."""
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, size)

    def check_hidden_size(self, hx, expected_hidden_size,
                          msg="Expected hidden size {}, got {}") -> None:
        """Refuse a state whose shape is not ``expected_hidden_size``."""
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes) -> None:  # noqa: A002
        """The input's checks, then the initial state's."""
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        """``hx`` with its batch dimension in the order ``permutation`` (None: as is)."""
        if permutation is None:
            return hx
        return _index.index_select(hx, 1, permutation)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- the computation ----------
    def _run(self, data, state, sizes):
        """All layers and directions over ``data`` from ``state``; returns the last
        layer's output and the final states, stacked as ``state``.

        ``data`` holds the time steps one after the other, ``sizes[t]`` rows for step
        ``t`` (the layout of a packed sequence's data; a padded batch is the case of
        equal sizes), ``state`` is a tuple of ``(num_layers * num_directions, batch, *)``
        tensors (``(h,)``, or ``(h, c)`` for the LSTM).
        """
        step = _STEPS[self.mode]
        num_directions = 2 if self.bidirectional else 1
        initial = [_shape.unbind(s, 0) for s in state]
        finals = []
        layer_input = data
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(num_directions):
                index = layer * num_directions + direction
                # (read by name at each call: a program may replace a weight by a
                # tensor computed from it, as weight-dropping LSTMs do)
                suffix = self._all_weights[index][0][len("weight_ih"):]
                w_ih = getattr(self, "weight_ih" + suffix)
                w_hh = getattr(self, "weight_hh" + suffix)
                b_ih = getattr(self, "bias_ih" + suffix) if self.bias else None
                b_hh = getattr(self, "bias_hh" + suffix) if self.bias else None
                w_hr = getattr(self, "weight_hr" + suffix) if self.proj_size > 0 else None
                # the input's projection for every time step at once
                gis = _shape.split(_act.linear(layer_input, w_ih, b_ih), sizes, 0)
                outs, final = _run_direction(step, gis, tuple(s[index] for s in initial),
                                             w_hh, b_hh, w_hr, sizes, direction == 1)
                outputs.append(_shape.cat(outs, 0))
                finals.append(final)
            layer_output = outputs[0] if num_directions == 1 else _shape.cat(outputs, 1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_output = F.dropout(layer_output, self.dropout, True)
            layer_input = layer_output
        return layer_input, tuple(_shape.stack([f[k] for f in finals], 0)
                                  for k in range(len(state)))

    def _run_input(self, input, state, batch_sizes):  # noqa: A002
        """:meth:`_run` over a padded (3-D) input or a packed sequence's data."""
        if batch_sizes is not None:
            return self._run(input, state, [int(n) for n in batch_sizes.tolist()])
        if self.batch_first:  # computed time-major; the output is a transposed view, as
            input = _shape.transpose(input, 0, 1)  # PyTorch's
        steps, batch = input.shape[0], input.shape[1]
        if steps == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        data = _shape.reshape(input, (steps * batch, input.shape[2]))
        output, hidden = self._run(data, state, [batch] * steps)
        output = _shape.reshape(output, (steps, batch, output.shape[1]))
        if self.batch_first:
            output = _shape.transpose(output, 0, 1)
        return output, hidden

    def _zeros(self, input, batch, size):  # noqa: A002
        num_directions = 2 if self.bidirectional else 1
        return zeros(self.num_layers * num_directions, batch, size, dtype=input.dtype,
                     device=input.device)

    def forward(self, input, hx=None):  # noqa: A002
        """``(output, h_n)`` (RNN, GRU). ``input``: ``(L, N, H_in)``, ``(N, L, H_in)``
        with ``batch_first``, ``(L, H_in)`` unbatched, or a :class:`PackedSequence`;
        ``hx``: ``(D * num_layers, N, H_out)`` (``(D * num_layers, H_out)`` unbatched),
        zeros when None. ``output``: ``(L, N, D * H_out)`` (``(N, L, D * H_out)`` with
        ``batch_first``; a PackedSequence for one); ``h_n`` the final states, as ``hx``.
        """
        name = "RNN" if self.mode.startswith("RNN") else self.mode
        orig_input = input
        is_batched = True
        batch_dim = 0 if self.batch_first else 1
        if isinstance(orig_input, PackedSequence):
            input, batch_sizes, sorted_indices, unsorted_indices = input
            if hx is None:
                hx = self._zeros(input, int(batch_sizes[0]), self.hidden_size)
            else:
                hx = self.permute_hidden(hx, sorted_indices)
        else:
            batch_sizes = sorted_indices = unsorted_indices = None
            if input.dim() not in (2, 3):
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                                 + ("tensor instead" if name == "RNN" else "instead"))
            is_batched = input.dim() == 3
            if not is_batched:
                input = _shape.unsqueeze(input, batch_dim)
                if hx is not None:
                    if hx.dim() != 2:
                        raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D "
                                           f"but got {hx.dim()}-D tensor")
                    hx = _shape.unsqueeze(hx, 1)
            elif hx is not None and hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                                   f"{hx.dim()}-D tensor")
            if hx is None:
                hx = self._zeros(input, input.size(batch_dim), self.hidden_size)
        self.check_forward_args(input, hx, batch_sizes)
        output, (hidden,) = self._run_input(input, (hx,), batch_sizes)
        if isinstance(orig_input, PackedSequence):
            return (PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices),
                    self.permute_hidden(hidden, unsorted_indices))
        if not is_batched:
            output = _shape.squeeze(output, batch_dim)
            hidden = _shape.squeeze(hidden, 1)
        return output, hidden


class RNN(RNNBase):
    r"""A multi-layer Elman RNN: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T +
    b_hh)`` (``nonlinearity='relu'``: relu) for each layer, the next layer's input the
    previous layer's output.

    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False, device=None, dtype=None)``;
    ``forward(input, hx=None)`` returns ``(output, h_n)`` (see
    :meth:`RNNBase.forward`). ``dropout`` applies to each layer's output but the last,
    in training. Parameters: ``weight_ih_l{k}`` ``(hidden_size, input_size)`` (then
    ``(hidden_size, D * hidden_size)``), ``weight_hh_l{k}``, ``bias_ih_l{k}``,
    ``bias_hh_l{k}``, and ``..._reverse`` for the backward direction.

    >>> import gradcore as gc
    >>> from gradcore import nn
    >>> rnn = nn.RNN(10, 20, 2)
    >>> output, h_n = rnn(gc.randn(5, 3, 10), gc.randn(2, 3, 20))
    >>> output.shape, h_n.shape
    (gradcore.Size([5, 3, 20]), gradcore.Size([2, 3, 20]))
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' "
                             "or 'relu'.")
        super().__init__(mode, *args, **kwargs)


class LSTM(RNNBase):
    r"""A multi-layer long short-term memory RNN. For each step of each layer:

    ``i, f, g, o = chunks of x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh`` (in that order),
    ``c_t = sigmoid(f) * c_{t-1} + sigmoid(i) * tanh(g)``,
    ``h_t = sigmoid(o) * tanh(c_t)`` (then ``h_t W_hr^T`` with ``proj_size > 0``).

    ``LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
    dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None)``.
    ``forward(input, hx=None)``: ``input`` ``(L, N, H_in)`` (``(N, L, H_in)`` with
    ``batch_first``, ``(L, H_in)`` unbatched, or a :class:`PackedSequence`), ``hx`` a
    tuple ``(h_0, c_0)`` of ``(D * num_layers, N, H_out)`` and ``(D * num_layers, N,
    hidden_size)`` (zeros when None; ``H_out`` is ``proj_size`` or ``hidden_size``).
    Returns ``(output, (h_n, c_n))``, ``output`` ``(L, N, D * H_out)``.
    ``dropout`` applies to each layer's output but the last, in training.

    >>> import gradcore as gc
    >>> from gradcore import nn
    >>> lstm = nn.LSTM(10, 20, 2, bidirectional=True)
    >>> output, (h_n, c_n) = lstm(gc.randn(5, 3, 10))
    >>> output.shape, h_n.shape, c_n.shape
    (gradcore.Size([5, 3, 40]), gradcore.Size([4, 3, 20]), gradcore.Size([4, 3, 20]))
    >>> [name for name, _ in lstm.named_parameters()][:4]
    ['weight_ih_l0', 'weight_hh_l0', 'bias_ih_l0', 'bias_hh_l0']
    """

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):  # noqa: A002
        """``(num_layers * num_directions, batch, hidden_size)``."""
        if batch_sizes is not None:
            mini_batch = int(batch_sizes[0])
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, mini_batch, self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes) -> None:  # noqa: A002
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return (_index.index_select(hx[0], 1, permutation),
                _index.index_select(hx[1], 1, permutation))

    def forward(self, input, hx=None):  # noqa: A002
        """``(output, (h_n, c_n))``; see :class:`LSTM`."""
        orig_input = input
        is_batched = True
        batch_dim = 0 if self.batch_first else 1
        real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        if isinstance(orig_input, PackedSequence):
            input, batch_sizes, sorted_indices, unsorted_indices = input
            if hx is None:
                batch = int(batch_sizes[0])
                hx = (self._zeros(input, batch, real_hidden_size),
                      self._zeros(input, batch, self.hidden_size))
            else:
                hx = self.permute_hidden(hx, sorted_indices)
            self.check_forward_args(input, hx, batch_sizes)
        else:
            batch_sizes = sorted_indices = unsorted_indices = None
            if input.dim() not in (2, 3):
                raise ValueError(f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D "
                                 "instead")
            is_batched = input.dim() == 3
            if not is_batched:
                input = _shape.unsqueeze(input, batch_dim)
            if hx is None:
                batch = input.size(batch_dim)
                hx = (self._zeros(input, batch, real_hidden_size),
                      self._zeros(input, batch, self.hidden_size))
            else:
                if is_batched:
                    if hx[0].dim() != 3 or hx[1].dim() != 3:
                        raise RuntimeError(f"For batched 3-D input, hx and cx should also be "
                                           f"3-D but got ({hx[0].dim()}-D, {hx[1].dim()}-D) "
                                           "tensors")
                else:
                    if hx[0].dim() != 2 or hx[1].dim() != 2:
                        raise RuntimeError(f"For unbatched 2-D input, hx and cx should also "
                                           f"be 2-D but got ({hx[0].dim()}-D, "
                                           f"{hx[1].dim()}-D) tensors")
                    hx = (_shape.unsqueeze(hx[0], 1), _shape.unsqueeze(hx[1], 1))
            self.check_forward_args(input, hx, batch_sizes)
        output, hidden = self._run_input(input, tuple(hx), batch_sizes)
        if isinstance(orig_input, PackedSequence):
            return (PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices),
                    self.permute_hidden(hidden, unsorted_indices))
        if not is_batched:
            output = _shape.squeeze(output, batch_dim)
            hidden = (_shape.squeeze(hidden[0], 1), _shape.squeeze(hidden[1], 1))
        return output, hidden


class GRU(RNNBase):
    r"""A multi-layer gated recurrent unit RNN. For each step of each layer, with
    ``W_i* x_t + b_i*`` and ``W_h* h + b_h*`` the chunks of the two projections (in the
    order ``r, z, n``):

    ``r = sigmoid(W_ir x_t + b_ir + W_hr h_{t-1} + b_hr)``,
    ``z = sigmoid(W_iz x_t + b_iz + W_hz h_{t-1} + b_hz)``,
    ``n = tanh(W_in x_t + b_in + r * (W_hn h_{t-1} + b_hn))``,
    ``h_t = (1 - z) * n + z * h_{t-1}``.

    ``GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
    dropout=0.0, bidirectional=False, device=None, dtype=None)``; ``forward(input,
    hx=None)`` returns ``(output, h_n)`` as :class:`RNN`'s.

    >>> import gradcore as gc
    >>> from gradcore import nn
    >>> gru = nn.GRU(10, 20, batch_first=True)
    >>> output, h_n = gru(gc.randn(3, 5, 10))
    >>> output.shape, h_n.shape
    (gradcore.Size([3, 5, 20]), gradcore.Size([1, 3, 20]))
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


# ---- the cells ----------
def _check_cell_hidden(input, hx, hidden_size, label):  # noqa: A002
    if input.size(0) != hx.size(0):
        raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{label} "
                           f"batch size {hx.size(0)}")
    if hx.size(1) != hidden_size:
        raise RuntimeError(f"hidden{label} has inconsistent hidden_size: got {hx.size(1)}, "
                           f"expected {hidden_size}")


class RNNCellBase(Module):
    """What the cells share: ``weight_ih`` ``(num_chunks * hidden_size, input_size)``,
    ``weight_hh`` ``(num_chunks * hidden_size, hidden_size)``, ``bias_ih`` and
    ``bias_hh`` (None with ``bias=False``), every one uniform in
    ``±1/sqrt(hidden_size)``."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size),
                                         device=device, dtype=dtype))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size),
                                         device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, device=device,
                                           dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, device=device,
                                           dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += f", bias={self.bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def reset_parameters(self) -> None:
        """Every parameter uniform in ``±1/sqrt(hidden_size)``, from gradcore's
        generator."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _prepare(self, name, input, hx, n_states):  # noqa: A002
        """``input`` and the states batched, zeros for absent ones (PyTorch's checks of
        their dimensions)."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D "
                             "instead")
        if hx is not None:
            for i, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    what = "hidden" if n_states == 1 else f"hx[{i}]"
                    raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got "
                                     f"{value.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = _shape.unsqueeze(input, 0)
        if hx is None:
            state = zeros(input.size(0), self.hidden_size, dtype=input.dtype,
                          device=input.device)
            hx = (state,) * n_states
        elif not is_batched:
            hx = tuple(_shape.unsqueeze(h, 0) for h in hx)
        return input, tuple(hx), is_batched

    def _step(self, step, input, state, is_batched):  # noqa: A002
        """One ``step`` after the checks of sizes (ATen's, with its messages)."""
        if step is _lstm_step and len(state) != 2:
            raise RuntimeError("lstm_cell expects two hidden states")
        if input.size(1) != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} "
                               f"expected {self.input_size}")
        for i, h in enumerate(state):
            _check_cell_hidden(input, h, self.hidden_size, i)
        gi = _act.linear(input, self.weight_ih, self.bias_ih)
        state = step(gi, state, self.weight_hh, self.bias_hh, None)
        if not is_batched:
            state = tuple(_shape.squeeze(s, 0) for s in state)
        return state


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)``
    (``nonlinearity='relu'``: relu).

    ``RNNCell(input_size, hidden_size, bias=True, nonlinearity='tanh', device=None,
    dtype=None)``; ``forward(input, hx=None)``: ``input`` ``(N, input_size)`` or
    ``(input_size,)``, ``hx`` ``(N, hidden_size)`` or ``(hidden_size,)`` (zeros when
    None); returns ``h'``, shaped as ``hx``.

    >>> import gradcore as gc
    >>> from gradcore import nn
    >>> cell = nn.RNNCell(10, 20)
    >>> h = gc.zeros(3, 20)
    >>> for x in gc.randn(6, 3, 10):
    ...     h = cell(x, h)
    >>> h.shape
    gradcore.Size([3, 20])
    """

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device,
                         dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):  # noqa: A002
        input, state, is_batched = self._prepare("RNNCell", input,
                                                 None if hx is None else (hx,), 1)
        if self.nonlinearity == "tanh":
            step = _rnn_tanh_step
        elif self.nonlinearity == "relu":
            step = _rnn_relu_step
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return self._step(step, input, state, is_batched)[0]


class LSTMCell(RNNCellBase):
    """One step of an LSTM: the gates ``i, f, g, o`` (in that order) from ``x W_ih^T +
    b_ih + h W_hh^T + b_hh``, ``c' = sigmoid(f) * c + sigmoid(i) * tanh(g)``,
    ``h' = sigmoid(o) * tanh(c')``.

    ``LSTMCell(input_size, hidden_size, bias=True, device=None, dtype=None)``;
    ``forward(input, hx=None)`` with ``hx = (h, c)`` (zeros when None) returns
    ``(h', c')``.

    >>> import gradcore as gc
    >>> from gradcore import nn
    >>> cell = nn.LSTMCell(10, 20)
    >>> h, c = cell(gc.randn(3, 10))
    >>> h.shape, c.shape
    (gradcore.Size([3, 20]), gradcore.Size([3, 20]))
    """

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device,
                         dtype=dtype)

    def forward(self, input, hx=None):  # noqa: A002
        input, state, is_batched = self._prepare("LSTMCell", input, hx, 2)
        return self._step(_lstm_step, input, state, is_batched)


class GRUCell(RNNCellBase):
    """One step of a GRU: ``r, z`` the sigmoids of the sums of the two projections'
    chunks, ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``, ``h' = (1 - z) * n + z *
    h``.

    ``GRUCell(input_size, hidden_size, bias=True, device=None, dtype=None)``;
    ``forward(input, hx=None)`` returns ``h'``.

    >>> import gradcore as gc
    >>> from gradcore import nn
    >>> cell = nn.GRUCell(10, 20)
    >>> cell(gc.randn(10)).shape
    gradcore.Size([20])
    """

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device,
                         dtype=dtype)

    def forward(self, input, hx=None):  # noqa: A002
        input, state, is_batched = self._prepare("GRUCell", input,
                                                 None if hx is None else (hx,), 1)
        return self._step(_gru_step, input, state, is_batched)[0]
