"""Tensor methods training scripts use that loom composes from its own ops in
Python, with torch's results: rounding (trunc, floor, ceil, round half to
even, sign; exact, signed zeros kept), value tests (isnan, isinf, isfinite,
any, all), softmax spellings, div's rounding_mode, clamp and masked_fill with
tensors, sum and mean with dtype=, sort and topk results with names, and
shaping helpers (movedim, repeat_interleave, tensor_split, rot90, narrow,
select, swapaxes), mm, bmm and tensordot with their shape checks, nonzero,
median, mode, quantile, var_mean, detach_."""
import builtins
import collections

import numpy as np

from . import _C
from ._C import Tensor
from . import nn as _nn
from .tensor import _MinMax, _correction, _inplace

_dt = _C.dtype
_Sorted = collections.namedtuple("_Sorted", ["values", "indices"])


def _method(fn):
    setattr(Tensor, fn.__name__, fn)
    return fn


def _zeros_like(x, dtype):
    return _C.full(list(x.shape), 0, dtype)


# ---- rounding: exact, through fmod (the remainder is exact in floating point)
@_method
def trunc(self):
    if not self.dtype.is_floating_point:
        return self.clone()
    t = self - self.fmod(1)
    t = (self - self == 0).where(t, self)  # inf and nan stay
    return (t == 0).where(self * 0, t)     # a zero keeps the input's sign


@_method
def floor(self):
    t = self.trunc()
    return t if not self.dtype.is_floating_point else (self < t).where(t - 1, t)


@_method
def ceil(self):
    t = self.trunc()
    return t if not self.dtype.is_floating_point else (self > t).where(t + 1, t)


@_method
def round(self, decimals=0):
    if decimals:
        raise NotImplementedError("Tensor.round(decimals=) is not supported by loom")
    t = self.trunc()
    if not self.dtype.is_floating_point:
        return t
    frac = self - t
    step = (frac > 0).where(_C.full([], 1, self.dtype), _C.full([], -1, self.dtype))
    half = frac.abs() == 0.5
    odd = t.fmod(2) != 0
    up = (frac.abs() > 0.5).logical_or(half.logical_and(odd))
    return up.where(t + step, t)


@_method
def sign(self):
    if self.dtype == _dt.bool:
        return self.clone()
    one = _C.full([], 1, self.dtype)
    zero = _zeros_like(self, self.dtype)
    return (self > 0).where(one, (self < 0).where(-one if self.dtype != _dt.uint8 else zero, zero))


Tensor.fix = Tensor.trunc
for _name in ("trunc", "fix", "floor", "ceil", "round", "sign", "tril", "triu"):
    setattr(Tensor, _name + "_", _inplace(_name))


# ---- value tests
@_method
def isnan(self):
    return self != self if self.dtype.is_floating_point else _zeros_like(self, _dt.bool)


@_method
def isinf(self):
    return self.abs() == float("inf") if self.dtype.is_floating_point else _zeros_like(self, _dt.bool)


@_method
def isfinite(self):
    return self - self == 0 if self.dtype.is_floating_point else _zeros_like(self, _dt.bool).logical_not()


def _count(x, dim, keepdim):
    return x.sum() if dim is None else x.sum(dim, keepdim)


@_method
def any(self, dim=None, keepdim=False):
    out = _count(self != 0, dim, keepdim) > 0
    return out._cast(_dt.uint8) if self.dtype == _dt.uint8 else out


@_method
def all(self, dim=None, keepdim=False):
    out = _count(self == 0, dim, keepdim) == 0
    return out._cast(_dt.uint8) if self.dtype == _dt.uint8 else out


# ---- softmax spellings
@_method
def softmax(self, dim, dtype=None):
    return _nn.softmax(self if dtype is None else self._cast(dtype), dim)


@_method
def log_softmax(self, dim, dtype=None):
    return _nn.log_softmax(self if dtype is None else self._cast(dtype), dim)


# ---- arguments the C++ methods do not take
_div, _clamp, _masked_fill, _sum, _mean = Tensor.div, Tensor.clamp, Tensor.masked_fill, Tensor.sum, Tensor.mean
_sort, _topk = Tensor.sort, Tensor.topk


@_method
def div(self, other, rounding_mode=None):
    """torch.div: true division, or rounded toward zero ('trunc') or -inf ('floor')."""
    if rounding_mode is None:
        return _div(self, other)
    if rounding_mode == "floor":
        return self.floor_divide(other)
    if rounding_mode != "trunc":
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                         f"'{rounding_mode}'")
    q = self.floor_divide(other)
    if q.dtype.is_floating_point:
        return _div(self, other).trunc()
    other_t = other if isinstance(other, Tensor) else _C.full([], other, q.dtype)
    # floor and trunc differ where the remainder is nonzero and the signs differ
    fix_up = (self.remainder(other) != 0).logical_and((self < 0) != (other_t < 0))
    return fix_up.where(q + 1, q)


Tensor.divide = div


@_method
def clamp(self, min=None, max=None):
    if not isinstance(min, Tensor) and not isinstance(max, Tensor):
        return _clamp(self, min, max)
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    out = self
    if min is not None:
        out = out.maximum(min if isinstance(min, Tensor) else _C.full([], min, self.dtype))
    if max is not None:
        out = out.minimum(max if isinstance(max, Tensor) else _C.full([], max, self.dtype))
    return out


Tensor.clip = clamp


@_method
def masked_fill(self, mask, value):
    if not isinstance(value, Tensor):
        return _masked_fill(self, mask, value)
    if value.ndim != 0:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.ndim} dimension(s).")
    return mask.where(value._cast(self.dtype), self)


@_method
def sum(self, dim=None, keepdim=False, dtype=None):
    return _sum(self if dtype is None else self._cast(dtype), dim, keepdim)


@_method
def mean(self, dim=None, keepdim=False, dtype=None):
    return _mean(self if dtype is None else self._cast(dtype), dim, keepdim)


@_method
def sort(self, dim=-1, descending=False, stable=False):
    return _Sorted(*_sort(self, dim, descending))


@_method
def topk(self, k, dim=-1, largest=True, sorted=True):
    return _Sorted(*_topk(self, k, dim, largest, sorted))


# ---- shaping
@_method
def movedim(self, source, destination):
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should contain the "
                           f"same number of dims as destination ({dst} dims)")
    n = self.ndim
    src, dst = [d % n if n else 0 for d in src], [d % n if n else 0 for d in dst]
    order = [None] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(n) if d not in src)
    return self.permute(*[o if o is not None else next(rest) for o in order])


Tensor.moveaxis = movedim


@_method
def repeat_interleave(self, repeats, dim=None, output_size=None):
    x = self.flatten() if dim is None else self
    d = 0 if dim is None else dim % max(x.ndim, 1)
    if isinstance(repeats, Tensor):
        reps = repeats.numpy().reshape(-1).tolist()
        if len(reps) == 1:
            repeats = int(reps[0])
        else:
            picks = np.repeat(np.arange(x.shape[d]), reps)
            return x.index_select(d, _C.from_numpy(picks.astype(np.int64)))
    shape = list(x.shape)
    y = x.unsqueeze(d + 1).expand(*(shape[:d + 1] + [repeats] + shape[d + 1:]))
    return y.flatten(d, d + 1)


@_method
def tensor_split(self, indices_or_sections, dim=0):
    n = self.shape[dim]
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if k <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {k}")
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        bounds = np.cumsum([0] + sizes).tolist()
    else:
        bounds = [0] + [min(max(int(i), 0), n) for i in indices_or_sections] + [n]
    return tuple(self.slice(dim, bounds[i], max(bounds[i], bounds[i + 1])) for i in range(len(bounds) - 1))


@_method
def rot90(self, k=1, dims=(0, 1)):
    d0, d1 = dims
    k %= 4
    if k == 1:
        return self.flip(d1).transpose(d0, d1)
    if k == 2:
        return self.flip(d0, d1)
    if k == 3:
        return self.flip(d0).transpose(d0, d1)
    return self.clone()


def _wrap(index, size):
    """torch's maybe_wrap_dim: an index in [-size, size) made non-negative, else its IndexError."""
    if not -size <= index < size:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-size}, {size - 1}], but got {index})")
    return index % size


@_method
def narrow(self, dim, start, length):
    """A view of `length` elements of dim from start (negative start counts from the end)."""
    if self.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    start = int(start.item()) if isinstance(start, Tensor) else start
    dim = _wrap(dim, self.ndim)
    size = self.shape[dim]
    start = start if start == size else _wrap(start, size)  # the end is a valid start, not a valid index
    if length < 0 or start > size - length:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return self.slice(dim, start, start + length)


@_method
def select(self, dim, index):
    if self.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    dim = _wrap(dim, self.ndim)
    size = self.shape[dim]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(self.shape)} at "
                         f"dimension {dim}")
    index = index % size
    return self.slice(dim, index, index + 1).squeeze(dim)


Tensor.swapaxes = Tensor.swapdims = Tensor.transpose


def _matrix_product(self, other, rank, names):
    for t, name in zip((self, other), names):
        if t.ndim != rank:
            raise RuntimeError(f"{name} must be a matrix" if rank == 2 else f"{name} must be a 3D tensor")
    if rank == 2 and self.shape[1] != other.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({self.shape[0]}x{self.shape[1]} and "
                           f"{other.shape[0]}x{other.shape[1]})")
    if rank == 3 and (other.shape[0], other.shape[1]) != (self.shape[0], self.shape[2]):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{self.shape[0]}, {self.shape[2]}] but got: [{other.shape[0]}, {other.shape[1]}].")
    return self.matmul(other)


@_method
def mm(self, mat2):
    return _matrix_product(self, mat2, 2, ("self", "mat2"))


@_method
def bmm(self, mat2):
    return _matrix_product(self, mat2, 3, ("batch1", "batch2"))


# ---- values read on the host, as torch reads them
@_method
def nonzero(self, as_tuple=False):
    where = np.nonzero(self.numpy())
    if as_tuple:
        return tuple(_C.from_numpy(w.astype(np.int64)) for w in where)
    return _C.from_numpy(np.stack(where, axis=1).astype(np.int64).reshape(-1, self.ndim))


@_method
def median(self, dim=None, keepdim=False):
    """The lower of the two middle values (torch's median), over all elements or along dim."""
    if dim is None:
        flat = self.flatten()
        return flat.sort()[0][(flat.numel() - 1) // 2]
    values, indices = self.sort(dim)
    mid = (self.shape[dim] - 1) // 2
    values, indices = values.slice(dim, mid, mid + 1), indices.slice(dim, mid, mid + 1)
    return _MinMax(values if keepdim else values.squeeze(dim), indices if keepdim else indices.squeeze(dim))


@_method
def mode(self, dim=-1, keepdim=False):
    """The most frequent value along dim (the smallest of a tie) and the index of its last occurrence."""
    dim = _wrap(dim, max(self.ndim, 1))
    a = np.moveaxis(self.numpy().reshape(self.shape or (1,)), dim, -1)
    flat = a.reshape(-1, a.shape[-1])
    index = np.empty(flat.shape[0], np.int64)
    for r, row in enumerate(flat):
        values, counts = np.unique(row, return_counts=True)  # sorted: argmax takes the smallest of a tie
        index[r] = np.flatnonzero(row == values[np.argmax(counts)])[-1]
    index = _C.from_numpy(index.reshape(a.shape[:-1] + (1,))).movedim(-1, dim) if self.ndim else _C.from_numpy(index)
    values = self.gather(dim, index) if self.ndim else self.reshape([1]).gather(0, index)
    if not keepdim or not self.ndim:
        values, index = (values.squeeze(dim), index.squeeze(dim)) if self.ndim else (values[0], index[0])
    return _MinMax(values, index)


_QUANTILE_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


@_method
def quantile(self, q, dim=None, keepdim=False, interpolation="linear"):
    """torch's: sorted values at q * (n - 1), interpolated; a slice with a nan gives nan. A 1-d q
    adds a leading dim."""
    if interpolation not in _QUANTILE_MODES:
        raise RuntimeError("quantile() interpolation must be one of linear, lower, higher, midpoint or nearest. "
                           f"Got {interpolation}")
    qs = q.tolist() if isinstance(q, Tensor) else q
    scalar = not isinstance(qs, (list, tuple))
    qs = [qs] if scalar else list(qs)
    if builtins.any(not 0 <= v <= 1 for v in qs):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    x = self.flatten() if dim is None else self
    d = 0 if dim is None else _wrap(dim, x.ndim)
    n = x.shape[d]
    if n == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    ordered = x.sort(d)[0]
    has_nan = (x != x).any(d, keepdim=True)
    out = []
    for v in qs:
        rank = v * (n - 1)
        lo, hi = int(np.floor(rank)), int(np.ceil(rank))
        if interpolation == "nearest":
            lo = hi = int(np.round(rank))  # half to even, as torch rounds the rank
        a, b = ordered.narrow(d, lo, 1), ordered.narrow(d, hi, 1)
        w = {"lower": 0.0, "higher": 1.0, "midpoint": 0.5}.get(interpolation, rank - lo)
        r = a if interpolation in ("lower", "nearest") or lo == hi else a.lerp(b, w)
        r = r.masked_fill(has_nan, float("nan"))
        out.append(r if keepdim and dim is not None else r.squeeze(d))
    if dim is None and keepdim:
        out = [r.reshape([1] * self.ndim) for r in out]
    return out[0] if scalar else _C.stack(out, 0)


@_method
def tensordot(self, other, dims=2):
    """Contracts the last `dims` dims of self with the first of other (or the listed pairs)."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(self.ndim - dims, self.ndim)), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    da, db = [d % self.ndim for d in da], [d % other.ndim for d in db]
    for i, j in zip(da, db):
        if self.shape[i] != other.shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {self.shape[i]} in dim "
                               f"{i} and second has size {other.shape[j]} in dim {j}")
    keep_a = [d for d in range(self.ndim) if d not in da]
    keep_b = [d for d in range(other.ndim) if d not in db]
    k = int(np.prod([self.shape[d] for d in da], dtype=np.int64))
    a = self.permute(*(keep_a + da)).reshape([-1, k])
    b = other.permute(*(db + keep_b)).reshape([k, -1])
    return a.matmul(b).reshape([self.shape[d] for d in keep_a] + [other.shape[d] for d in keep_b])


_var, _std = Tensor.var, Tensor.std


@_method
def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _var(self, dim, _correction(unbiased, correction), keepdim)


@_method
def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _std(self, dim, _correction(unbiased, correction), keepdim)


@_method
def var_mean(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return self.var(dim, _correction(unbiased, correction), keepdim), self.mean(dim, keepdim)


@_method
def detach_(self):
    """Makes this handle its detached value (torch: the tensor leaves the graph in place)."""
    self._set_data(self.detach())
    return self
