"""torch.nn.functional on loom.nn, with torch's signatures (the legacy
size_average/reduce arguments are accepted when None)."""

import numpy as np

from loom import Tensor, cat
from loom import nn as _f
from loom.shim import unsupported


def _reduction(size_average, reduce, reduction):
    if size_average is not None or reduce is not None:
        raise NotImplementedError("torch.nn.functional: size_average and reduce are not supported by loom; "
                                  "use reduction=")
    return reduction


def linear(input, weight, bias=None):
    return _f.linear(input, weight, bias)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """weight's rows at input's indices: input.shape + (embedding_dim,). The row
    at padding_idx gets no gradient, as in torch."""
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("torch.nn.functional.embedding: max_norm, scale_grad_by_freq and sparse are not "
                                  "supported by loom")
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    out = weight[input]
    if padding_idx is not None:
        padding_idx = padding_idx + weight.shape[0] if padding_idx < 0 else padding_idx
        out = (input == padding_idx).unsqueeze(-1).where(out.detach(), out)
    return out


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _f.conv2d(input, weight, bias, stride, padding, dilation, groups)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    if return_indices:
        raise NotImplementedError("torch.nn.functional.max_pool2d(return_indices=True) is not supported by loom")
    return _f.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _f.avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def _out_size(input, output_size):
    size = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
    return tuple(input.shape[-2 + i] if s is None else s for i, s in enumerate(size))


def adaptive_avg_pool2d(input, output_size):
    return _f.adaptive_avg_pool2d(input, list(_out_size(input, output_size)))


def _adaptive_max_1d(x, dim, n):
    """Window i of n over length L spans [floor(i*L/n), ceil((i+1)*L/n)), as torch's adaptive pools."""
    length = x.shape[dim]
    if length % n == 0:
        return None
    parts = [x.slice(dim, (i * length) // n, -((-(i + 1) * length) // n)).amax(dim, True) for i in range(n)]
    return cat(parts, dim)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    if return_indices:
        raise NotImplementedError("torch.nn.functional.adaptive_max_pool2d(return_indices=True) is not supported "
                                  "by loom")
    oh, ow = _out_size(input, output_size)
    h, w = input.shape[-2], input.shape[-1]
    if h % oh == 0 and w % ow == 0:
        return _f.max_pool2d(input, [h // oh, w // ow], None, 0, 1, False)
    x = input
    rows = _adaptive_max_1d(x, x.ndim - 2, oh)
    x = x if rows is None else rows
    if rows is None:
        x = _f.max_pool2d(x, [h // oh, 1], None, 0, 1, False)
    cols = _adaptive_max_1d(x, x.ndim - 1, ow)
    return cols if cols is not None else _f.max_pool2d(x, [1, w // ow], None, 0, 1, False)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    return _f.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    return _f.layer_norm(input, shape, weight, bias, eps)



def relu(input, inplace=False):
    return input.relu_() if inplace else input.relu()


def gelu(input, approximate="none"):
    return input.gelu(approximate)


def silu(input, inplace=False):
    out = _f.silu(input)
    return input.copy_(out) if inplace else out


def leaky_relu(input, negative_slope=0.01, inplace=False):
    out = _f.leaky_relu(input, negative_slope)
    return input.copy_(out) if inplace else out


def elu(input, alpha=1.0, inplace=False):
    out = _f.elu(input, alpha)
    return input.copy_(out) if inplace else out


def softplus(input, beta=1.0, threshold=20.0):
    return _f.softplus(input, beta, threshold)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    out = _f.hardtanh(input, min_val, max_val)
    return input.copy_(out) if inplace else out


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def _softmax_dim(input, dim):
    if dim is None:  # torch's legacy choice of dim
        dim = 0 if input.ndim in (0, 1, 3) else 1
    return dim


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    x = input if dtype is None else input.to(dtype)
    return _f.softmax(x, _softmax_dim(x, dim))


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    x = input if dtype is None else input.to(dtype)
    return _f.log_softmax(x, _softmax_dim(x, dim))


def dropout(input, p=0.5, training=True, inplace=False):
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    out = _f.dropout(input, p, training)
    return input.copy_(out) if inplace else out


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    return _f.cross_entropy(input, target, weight, _reduction(size_average, reduce, reduction), label_smoothing,
                            ignore_index)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    return _f.nll_loss(input, target, weight, _reduction(size_average, reduce, reduction), ignore_index)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _f.mse_loss(input, target, _reduction(size_average, reduce, reduction))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    d = (input - target).abs()
    reduction = _reduction(size_average, reduce, reduction)
    return d if reduction == "none" else d.sum() if reduction == "sum" else d.mean()


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    return _f.binary_cross_entropy_with_logits(input, target, weight, _reduction(size_average, reduce, reduction),
                                               pos_weight)


def one_hot(tensor, num_classes=-1):
    return tensor.one_hot(num_classes)


def _source_index(out_size, in_size, scale_factor, align_corners, nearest):
    """torch's source coordinate of each output position along one dim (float32, as its kernels compute it)."""
    if align_corners:
        scale = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    elif scale_factor is not None:
        scale = 1.0 / scale_factor
    else:
        scale = in_size / out_size
    dst = np.arange(out_size, dtype=np.float32)
    scale = np.float32(scale)
    if nearest:
        return np.minimum(np.floor(dst * scale).astype(np.int64), in_size - 1)
    src = dst * scale if align_corners else np.maximum(scale * (dst + np.float32(0.5)) - np.float32(0.5), 0)
    return src.astype(np.float32)


def _resize_dim(x, dim, out_size, scale_factor, mode, align_corners):
    from loom import from_numpy
    n = x.shape[dim]
    if mode == "nearest":
        return x.index_select(dim, from_numpy(_source_index(out_size, n, scale_factor, False, True)))
    src = _source_index(out_size, n, scale_factor, align_corners, False)
    lo = np.floor(src).astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    frac = (src - lo).astype(np.float32)
    shape = [1] * x.ndim
    shape[dim] = out_size
    w1 = from_numpy(frac.reshape(shape))._cast(x.dtype)
    return x.index_select(dim, from_numpy(lo)) * (1 - w1) + x.index_select(dim, from_numpy(hi)) * w1


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """torch.nn.functional.interpolate for 'nearest', 'linear', 'bilinear' over the trailing (spatial) dims."""
    modes = {"nearest": 1, "linear": 1, "bilinear": 2}
    spatial = input.ndim - 2
    if mode not in modes and mode not in ("trilinear", "bicubic", "area", "nearest-exact"):
        raise NotImplementedError(f"Got {mode} mode, which is not a valid interpolation mode")
    if mode not in modes or antialias or recompute_scale_factor:
        raise NotImplementedError(f"torch.nn.functional.interpolate(mode={mode!r}, antialias, "
                                  f"recompute_scale_factor) is not supported by loom")
    if mode != "nearest" and modes[mode] != spatial:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {modes[mode] + 2}D input")
    if mode == "nearest" and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "bicubic | trilinear")
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    sizes = [size] * spatial if isinstance(size, int) else list(size) if size is not None else None
    scales = [scale_factor] * spatial if isinstance(scale_factor, (int, float)) else \
        list(scale_factor) if scale_factor is not None else [None] * spatial
    if sizes is None:
        sizes = [int(np.floor(input.shape[2 + i] * scales[i])) for i in range(spatial)]
    out = input
    for i in range(spatial):
        out = _resize_dim(out, 2 + i, sizes[i], scales[i], mode, bool(align_corners))
    return out


def pad(input, pad, mode="constant", value=None):
    """pad lists (before, after) pairs from the last dim backwards, as torch's."""
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise RuntimeError("Padding length must be divisible by 2 and at most twice the number of dimensions")
    pairs = [(pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)][::-1]
    if mode == "constant":
        if any(a < 0 or b < 0 for a, b in pairs):
            raise NotImplementedError("torch.nn.functional.pad with negative padding is not supported by loom")
        return input.pad([(0, 0)] * (input.ndim - len(pairs)) + pairs, 0 if value is None else value)
    if mode in ("reflect", "replicate"):
        return input._pad_mode(pairs, mode)
    raise NotImplementedError(f"torch.nn.functional.pad(mode={mode!r}) is not supported by loom")


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    return input / input.norm(p, dim, True).clamp(eps)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    n = (x1 * x1).sum(dim).sqrt().clamp(eps) * (x2 * x2).sum(dim).sqrt().clamp(eps)
    return (x1 * x2).sum(dim) / n


from .attention import scaled_dot_product_attention  # noqa: E402,F401  (torch 2's; nanoGPT uses it)
from .losses import (binary_cross_entropy, smooth_l1_loss, huber_loss, kl_div, margin_ranking_loss,  # noqa: E402,F401
                     soft_margin_loss)

__all__ = [n for n in dir() if not n.startswith("_") and n not in ("Tensor", "cat", "unsupported")]
__getattr__ = unsupported(__name__)
