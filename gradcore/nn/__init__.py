"""Neural-network building blocks: modules, functional ops, initializers.

``gradcore.nn`` mirrors ``torch.nn``: :class:`Module` and its layers and losses,
:class:`Parameter`, ``gradcore.nn.functional`` (PyTorch's ``F``) and
``gradcore.nn.init``.
"""

from ..tensor import Parameter
from . import functional, init, parallel
from .conv import (
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
    Fold,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    Unfold,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
)
from .modules import (
    CELU,
    ELU,
    GELU,
    GLU,
    SELU,
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CosineSimilarity,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    Flatten,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    HuberLoss,
    Identity,
    KLDivLoss,
    L1Loss,
    LayerNorm,
    LeakyReLU,
    Linear,
    LogSigmoid,
    LogSoftmax,
    MarginRankingLoss,
    Mish,
    Module,
    ModuleDict,
    ModuleList,
    MSELoss,
    MultiLabelSoftMarginLoss,
    NLLLoss,
    PairwiseDistance,
    ParameterDict,
    ParameterList,
    PReLU,
    ReLU,
    ReLU6,
    RemovableHandle,
    Sequential,
    Sigmoid,
    SiLU,
    SmoothL1Loss,
    SoftMarginLoss,
    Softmax,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanh,
    Tanhshrink,
    TripletMarginLoss,
    Unflatten,
)
from .parallel import DataParallel

__all__ = ["Parameter", "functional", "init", "Module", "Sequential", "ModuleList", "Linear",
           "Embedding", "LayerNorm", "Dropout", "ReLU", "Tanh", "Sigmoid", "GELU", "Softplus",
           "Softmax", "LogSoftmax", "Flatten", "Identity", "MSELoss", "CrossEntropyLoss",
           "NLLLoss", "BCEWithLogitsLoss", "ModuleDict", "ParameterList", "ParameterDict",
           "Unflatten", "RemovableHandle", "SiLU", "Mish", "LeakyReLU", "ELU", "SELU", "CELU",
           "Hardtanh", "ReLU6", "Hardswish", "Hardsigmoid", "LogSigmoid", "Softsign",
           "Tanhshrink", "Softshrink", "Hardshrink", "PReLU", "GLU", "Softmin", "L1Loss",
           "SmoothL1Loss", "HuberLoss", "BCELoss", "KLDivLoss", "CosineEmbeddingLoss",
           "MarginRankingLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss", "TripletMarginLoss",
           "PairwiseDistance", "CosineSimilarity", "parallel", "DataParallel"]

# recurrent layers (gradcore/nn/rnn.py) and nn.utils (nn.utils.rnn: pad_sequence, packing)
from . import utils
from .attention import MultiheadAttention

# normalization and pooling layers (gradcore/nn/normalization.py, pooling.py)
from .normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    Dropout1d,
    Dropout2d,
    GroupNorm,
)
from .pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
    MaxUnpool1d,
    MaxUnpool2d,
)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .upsampling import (
    PixelShuffle,
    PixelUnshuffle,
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)

__all__ += ["utils", "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell",
            "GRUCell"]
__all__ += ["Conv3d", "ConvTranspose3d"]
__all__ += ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "Unfold", "Fold",
            "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
            "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
            "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
            "CircularPad2d", "CircularPad3d"]
__all__ += ["MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d",
            "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "MaxUnpool1d",
            "MaxUnpool2d", "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d"]
__all__ += ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "GroupNorm"]
__all__ += ["Dropout1d", "Dropout2d"]
__all__ += ["MultiheadAttention"]
__all__ += ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle",
            "PixelUnshuffle"]

# instance normalization (gradcore/nn/normalization.py)
from .normalization import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: E402

__all__ += ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]

# transformers (gradcore/nn/transformer.py)
from .transformer import (  # noqa: E402
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ += ["TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer",
            "TransformerDecoder", "Transformer"]

# more layers, losses and pools: RMSNorm, shuffles, lazy layers, EmbeddingBag, ...
from .lazy import (  # noqa: E402
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    LazyConv1d,
    LazyConv2d,
    LazyConv3d,
    LazyConvTranspose1d,
    LazyConvTranspose2d,
    LazyConvTranspose3d,
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
    LazyLinear,
    UninitializedBuffer,
    UninitializedParameter,
)
from .modules import (  # noqa: E402
    Bilinear,
    Buffer,
    ChannelShuffle,
    Container,
    EmbeddingBag,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    MultiLabelMarginLoss,
    MultiMarginLoss,
    NLLLoss2d,
    PoissonNLLLoss,
    RReLU,
    Softmax2d,
    Threshold,
    TripletMarginWithDistanceLoss,
)
from .normalization import (  # noqa: E402
    AlphaDropout,
    Dropout3d,
    FeatureAlphaDropout,
    LocalResponseNorm,
    RMSNorm,
    SyncBatchNorm,
)
from .pooling import AdaptiveMaxPool3d, LPPool1d, LPPool2d, LPPool3d, MaxUnpool3d  # noqa: E402

__all__ += ["Buffer", "Threshold", "RReLU", "Bilinear", "Softmax2d", "ChannelShuffle",
            "GaussianNLLLoss", "PoissonNLLLoss", "HingeEmbeddingLoss", "MultiMarginLoss",
            "MultiLabelMarginLoss",
            "TripletMarginWithDistanceLoss", "EmbeddingBag", "UninitializedParameter",
            "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "AlphaDropout",
            "FeatureAlphaDropout", "Dropout3d", "RMSNorm", "LocalResponseNorm", "SyncBatchNorm",
            "AdaptiveMaxPool3d", "MaxUnpool3d", "LPPool1d", "LPPool2d", "LPPool3d",
            "Container", "NLLLoss2d", "UninitializedBuffer", "LazyConvTranspose1d",
            "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
            "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]

# the CTC loss, the adaptive softmax, fractional max pools (gradcore/nn/modules.py,
# adaptive.py, pooling.py)
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: E402
from .modules import CTCLoss  # noqa: E402
from .pooling import FractionalMaxPool2d, FractionalMaxPool3d  # noqa: E402

__all__ += ["CTCLoss", "AdaptiveLogSoftmaxWithLoss", "FractionalMaxPool2d",
            "FractionalMaxPool3d"]

# torch.nn's module paths that programs import from (the same objects as above):
# nn.parameter, nn.common_types and nn.modules' submodules (nn.modules.conv, ...)
from . import common_types, parameter  # noqa: E402, F401

for _name in ("module", "linear", "conv", "batchnorm", "instancenorm", "normalization",
              "loss", "activation", "container", "dropout", "sparse", "rnn", "pooling",
              "padding", "pixelshuffle", "upsampling", "flatten", "distance", "fold",
              "transformer", "channelshuffle", "utils", "adaptive"):
    __import__(f"{__name__}.modules.{_name}")
del _name
