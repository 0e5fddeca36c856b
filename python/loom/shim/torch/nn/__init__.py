"""torch.nn on loom: Module and containers, Parameter, layer modules, and the
functional, init and utils submodules."""
from loom.shim import unsupported
from . import functional, init, parallel, utils  # noqa: F401
from . import parameter  # noqa: F401
from .parameter import Parameter  # noqa: F401
from .module import Module, Sequential, ModuleList, ModuleDict  # noqa: F401
from .layers import (Identity, Linear, Embedding, Conv2d, BatchNorm1d, BatchNorm2d, LayerNorm, MaxPool2d, AvgPool2d,  # noqa: F401
                     AdaptiveAvgPool2d, AdaptiveMaxPool2d, ReLU, GELU, SiLU, LeakyReLU, ELU, Hardtanh, Softplus,
                     Sigmoid, Tanh, Softmax, LogSoftmax, Dropout, Flatten, Unflatten, CrossEntropyLoss, NLLLoss,
                     MSELoss, L1Loss, BCEWithLogitsLoss)
from .losses import BCELoss, SmoothL1Loss, HuberLoss, KLDivLoss, MarginRankingLoss, SoftMarginLoss  # noqa: F401
from .rnn import RNNBase, RNN, LSTM, GRU, RNNCellBase, RNNCell, LSTMCell, GRUCell  # noqa: F401
from .transformer import (MultiheadAttention, Transformer, TransformerEncoder, TransformerDecoder,  # noqa: F401
                          TransformerEncoderLayer, TransformerDecoderLayer)

__getattr__ = unsupported(__name__)
