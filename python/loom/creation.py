"""Tensor creation with torch's signatures (sizes as varargs or one sequence)."""
import numbers

import numpy as np

from . import _C
from ._C import Tensor

_DEFAULT_FLOAT = _C.dtype.float32


def _size(size):
    """zeros(2, 3), zeros((2, 3)) and zeros([2, 3]) all mean shape (2, 3)."""
    if len(size) == 1 and not isinstance(size[0], numbers.Integral):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, numbers.Integral):
            raise TypeError(f"size must be a sequence of ints, got {type(s).__name__}")
    return [int(s) for s in size]


def _finish(t, requires_grad):
    if requires_grad:
        t._requires_grad_(True)
    return t


def from_numpy(array):
    """A tensor holding a copy of the array's values (loom does not share numpy's memory)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    return _C.from_numpy(array)


def tensor(data, dtype=None, device=None, requires_grad=False):
    """torch.tensor: Python floats become float32, ints int64, bools bool; arrays keep their dtype."""
    if isinstance(data, Tensor):
        t = data.detach().clone()
    else:
        if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in data):
            data = [x.numpy() if isinstance(x, Tensor) else x for x in data]
        arr = np.asarray(data)
        if arr.dtype == np.float64 and not isinstance(data, np.ndarray) and not isinstance(data, np.generic):
            arr = arr.astype(np.float32)
        if arr.dtype.kind in "OUS":
            raise TypeError(f"Could not infer dtype of {type(data).__name__}")
        t = _C.from_numpy(np.asarray(arr, order="C"))  # ascontiguousarray would make a 0-d array 1-d
    if dtype is not None and t.dtype != dtype:
        t = t._cast(dtype)
    return _finish(t, requires_grad)


def as_tensor(data, dtype=None, device=None):
    if isinstance(data, Tensor) and (dtype is None or data.dtype == dtype):
        return data
    return tensor(data, dtype=dtype)


def zeros(*size, dtype=None, device=None, requires_grad=False):
    return _finish(_C.zeros(_size(size), dtype or _DEFAULT_FLOAT), requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False):
    return _finish(_C.ones(_size(size), dtype or _DEFAULT_FLOAT), requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False):
    return _finish(_C.empty(_size(size), dtype or _DEFAULT_FLOAT), requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    return _finish(_C.full(_size((size,)), fill_value, dtype), requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    return _finish(_C.arange(start, end, step, dtype), requires_grad)


def rand(*size, dtype=None, device=None, requires_grad=False):
    return _finish(_C.rand(_size(size), dtype or _DEFAULT_FLOAT), requires_grad)


def randn(*size, dtype=None, device=None, requires_grad=False):
    return _finish(_C.randn(_size(size), dtype or _DEFAULT_FLOAT), requires_grad)


def randint(low, high=None, size=None, dtype=None, device=None, requires_grad=False):
    if size is None:  # randint(high, size)
        low, high, size = 0, low, high
    return _finish(_C.randint(low, high, _size((size,)), dtype or _C.dtype.int64), requires_grad)


def randperm(n, dtype=None, device=None, requires_grad=False):
    return _finish(_C.randperm(n, dtype or _C.dtype.int64), requires_grad)


def zeros_like(t, dtype=None, device=None, requires_grad=False):
    return zeros(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)


def ones_like(t, dtype=None, device=None, requires_grad=False):
    return ones(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)


def empty_like(t, dtype=None, device=None, requires_grad=False):
    return empty(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)


def full_like(t, fill_value, dtype=None, device=None, requires_grad=False):
    return full(t.shape, fill_value, dtype=dtype or t.dtype, requires_grad=requires_grad)


def rand_like(t, dtype=None, device=None, requires_grad=False):
    return rand(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)


def randn_like(t, dtype=None, device=None, requires_grad=False):
    return randn(t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)


def cat(tensors, dim=0):
    return _C.cat(list(tensors), dim)


def stack(tensors, dim=0):
    return _C.stack(list(tensors), dim)


def where(condition, input, other):
    return condition.where(input, other)
