"""Strides and memory formats with torch's spelling: `stride()`,
`storage_offset()`, `is_contiguous(memory_format=...)`,
`contiguous(memory_format=...)`, `empty_strided`, and the memory-format
objects. The strides are those of the storage `as_strided` addresses: a view's
own; an op's result is stored in the layout torch gives it (an elementwise
result in its permuted or channels_last inputs' order, a convolution or pool
of a channels_last input channels_last)."""
from ._C import Tensor


class memory_format:
    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return "torch." + self._name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

# The dims of a channels_last (3d) layout, innermost first.
_LAST = {channels_last: (4, (1, 3, 2, 0)), channels_last_3d: (5, (1, 4, 3, 2, 0))}


def _check_format(fmt, what):
    if fmt not in (contiguous_format, channels_last, channels_last_3d, preserve_format):
        raise TypeError(f"{what}(): argument 'memory_format' must be torch.memory_format, not {type(fmt).__name__}")


def _dense_in_order(shape, strides, order):
    expected = 1
    for d in order:
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def stride(self, dim=None):
    s = tuple(self._strides())
    if dim is None:
        return s
    n = len(s)
    if n == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return s[dim]


def is_contiguous(self, memory_format=contiguous_format):
    _check_format(memory_format, "is_contiguous")
    shape, strides = tuple(self.shape), self._strides()
    if memory_format in _LAST:
        rank, order = _LAST[memory_format]
        return len(shape) == rank and _dense_in_order(shape, strides, order)
    if memory_format is preserve_format:
        raise RuntimeError("Unsupported memory format. Supports only ChannelsLast, ChannelsLast3d, Contiguous")
    return self.numel() == 0 or _dense_in_order(shape, strides, range(len(shape) - 1, -1, -1))


def _to_format(t, fmt, what):
    """t laid out in `fmt` (t itself when it already is): a copy permuted so the channels come last."""
    _check_format(fmt, what)
    if fmt is preserve_format:
        return t
    if fmt in _LAST:
        rank, order = _LAST[fmt]
        if t.ndim != rank:
            raise RuntimeError(f"required rank {rank} tensor to use {fmt._name} format")
        if is_contiguous(t, fmt):
            return t
        outer_first = list(reversed(order))  # N, H, W, C (N, D, H, W, C)
        back = [outer_first.index(d) for d in range(rank)]
        return t.permute(outer_first)._contiguous().permute(back)
    return t._contiguous()


def contiguous(self, memory_format=contiguous_format):
    return _to_format(self, memory_format, "contiguous")


def empty_strided(size, stride, dtype=None, device=None, requires_grad=False, **kwargs):
    """torch.empty_strided: a new storage just large enough, viewed with these strides."""
    from . import creation
    size, stride = tuple(int(v) for v in size), tuple(int(v) for v in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    need = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    storage = creation.empty(need, dtype=dtype, device=device)
    out = storage.as_strided(size, stride, 0)
    return out.requires_grad_() if requires_grad else out


Tensor._contiguous = Tensor.contiguous
Tensor.stride = stride
Tensor.is_contiguous = is_contiguous
Tensor.contiguous = contiguous
Tensor.storage_offset = lambda self: self._storage_offset()
