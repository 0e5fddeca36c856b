"""torch.nn.init: in-place initializers, run under no_grad, with torch's gain
and fan rules (the random numbers are loom's)."""
import math

import numpy as np

from loom import from_numpy, no_grad
from loom.shim import unsupported


def calculate_gain(nonlinearity, param=None):
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
    if nonlinearity in linear or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0):
    with no_grad():
        return tensor.uniform_(a, b)


def normal_(tensor, mean=0.0, std=1.0):
    with no_grad():
        return tensor.normal_(mean, std)


def constant_(tensor, val):
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def _copy_from(tensor, array):
    with no_grad():
        return tensor.copy_(from_numpy(array))


def eye_(tensor):
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _copy_from(tensor, np.eye(*tensor.shape, dtype=np.float32))


def dirac_(tensor, groups=1):
    """The identity convolution: output channel g*out_per_group + d copies input channel d of its group."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    shape = tensor.shape
    if shape[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = shape[0] // groups
    w = np.zeros(shape, dtype=np.float32)
    centre = tuple(s // 2 for s in shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, shape[1])):
            w[(g * out_per_group + d, d) + centre] = 1
    return _copy_from(tensor, w)


def xavier_uniform_(tensor, gain=1.0):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a)


def xavier_normal_(tensor, gain=1.0):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)))


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    if 0 in tensor.shape:
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    if 0 in tensor.shape:
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))
    return normal_(tensor, 0.0, std)


def orthogonal_(tensor, gain=1):
    """A (semi-)orthogonal matrix from the QR decomposition of loom's normal draws."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    from loom import randn
    flat = randn(rows, cols).numpy().astype(np.float64)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _copy_from(tensor, (gain * q).reshape(tensor.shape).astype(np.float32))


__getattr__ = unsupported(__name__)
