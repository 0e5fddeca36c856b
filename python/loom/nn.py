"""loom.nn: functional layers with torch.nn.functional's names and arguments."""
from ._C import nn as _nn
from ._C import Tensor

linear = _nn.linear
conv2d = _nn.conv2d
max_pool2d = _nn.max_pool2d
avg_pool2d = _nn.avg_pool2d
adaptive_avg_pool2d = _nn.adaptive_avg_pool2d
batch_norm = _nn.batch_norm
layer_norm = _nn.layer_norm
softmax = _nn.softmax
log_softmax = _nn.log_softmax
silu = _nn.silu
leaky_relu = _nn.leaky_relu
elu = _nn.elu
softplus = _nn.softplus
hardtanh = _nn.hardtanh
dropout = _nn.dropout
cross_entropy = _nn.cross_entropy
nll_loss = _nn.nll_loss
mse_loss = _nn.mse_loss
binary_cross_entropy_with_logits = _nn.binary_cross_entropy_with_logits
relu = Tensor.relu
gelu = Tensor.gelu
sigmoid = Tensor.sigmoid
tanh = Tensor.tanh
