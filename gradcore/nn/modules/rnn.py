"""``torch.nn.modules.rnn``: the recurrent layers. The names programs import from here,
bound to gradcore's own classes (those ``gradcore.nn`` holds)."""


from ..rnn import (  # noqa: F401  (re-exported)
    GRU,
    LSTM,
    RNN,
    GRUCell,
    LSTMCell,
    RNNBase,
    RNNCell,
    RNNCellBase,
)

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]
