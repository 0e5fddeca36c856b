"""More Tensor methods with torch's spelling, the ones training scripts lean
on: devices (`to('cuda')`, `.cuda()`, `.device`), `.data`, in-place updates
with `alpha`/`value`/`weight`, `new_*` creation, `copy.deepcopy` and pickling."""

import contextlib
import weakref

from . import _C
from ._C import Tensor
from .devices import HOST, is_device, resolve
from . import creation
from .tensor import _inplace
from . import layout

_dt = _C.dtype


def _method(fn):
    setattr(Tensor, fn.__name__, fn)
    return fn


# ---- devices: every tensor is on the process's device (see loom/devices.py)
Tensor.device = property(lambda self: HOST)
Tensor.is_cuda = property(lambda self: HOST.type == "cuda")


@_method
def to(self, *args, **kwargs):
    """to(dtype), to(device), to(device, dtype), to(other); non_blocking, copy and memory_format accepted."""
    dtype, dev = kwargs.pop("dtype", None), kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    fmt = kwargs.pop("memory_format", layout.preserve_format)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for a in args:
        if isinstance(a, _dt):
            dtype = a
        elif isinstance(a, Tensor):
            dtype = a.dtype
        elif isinstance(a, bool):
            continue  # positional non_blocking
        elif is_device(a):
            dev = a
        else:
            raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
    resolve(dev)
    out = self if dtype is None or dtype == self.dtype else self._cast(dtype)
    out = layout._to_format(out, fmt, "to")
    return out.clone() if copy and out is self else out


@_method
def cuda(self, device=None, non_blocking=False):
    resolve("cuda" if device is None else device)
    return self


@_method
def cpu(self):
    return self


@_method
def pin_memory(self):
    return self


# ---- .data: the same storage, outside autograd; assigning rebinds the tensor (torch's `p.data = t`)
def _set_data(self, value):
    if not isinstance(value, Tensor):
        raise TypeError(f"data must be a Tensor, not {type(value).__name__}")
    requires_grad = self.requires_grad
    self._set_data(value.detach())
    if requires_grad:
        self._requires_grad_(True)


Tensor.data = property(lambda self: self.detach(), _set_data)


# ---- arithmetic with torch's extra arguments
_add, _sub = Tensor.add, Tensor.sub


def _add_scaled(self, other, alpha):
    """self + alpha * other with one rounding for float32, as torch's fused multiply-add kernel rounds."""
    if isinstance(other, Tensor):
        fused = self._add_scaled_f32(other, alpha)  # None unless both are float32
        if fused is not None:
            return fused
    return _add(self, other * alpha)


@_method
def add(self, other, alpha=1):
    return _add(self, other) if alpha == 1 else _add_scaled(self, other, alpha)


@_method
def sub(self, other, alpha=1):
    return _sub(self, other) if alpha == 1 else _add_scaled(self, other, -alpha)


@_method
def lerp(self, end, weight):
    """self + weight * (end - self), evaluated from the nearer end as torch does."""
    diff = end - self
    if isinstance(weight, Tensor):
        return (weight.abs() < 0.5).where(self + weight * diff, end - diff * (1 - weight))
    return self + weight * diff if abs(weight) < 0.5 else end - diff * (1 - weight)


def _all_float32(*ts):
    return all(isinstance(t, Tensor) and t.dtype == _dt.float32 for t in ts)


@_method
def addcmul(self, tensor1, tensor2, value=1):
    """self + (value * tensor1) * tensor2, the last multiply-add rounded once as torch's kernel rounds."""
    scaled = tensor1 * value
    if _all_float32(self, scaled, tensor2):
        return (self._cast(_dt.float64) + scaled._cast(_dt.float64) * tensor2._cast(_dt.float64))._cast(_dt.float32)
    return self + scaled * tensor2


@_method
def addcdiv(self, tensor1, tensor2, value=1):
    """self + (value * tensor1) / tensor2, in torch's order of roundings."""
    return self + (tensor1 * value) / tensor2


@_method
def square(self):
    return self * self


@_method
def norm(self, p="fro", dim=None, keepdim=False):
    if p in ("fro", 2):
        return (self * self).sum(dim, keepdim).sqrt()
    if p == 1:
        return self.abs().sum(dim, keepdim)
    if p == float("inf"):
        return self.abs().amax(dim, keepdim)
    return self.abs().pow(p).sum(dim, keepdim).pow(1.0 / p)



for _name in ("add", "sub", "lerp", "addcmul", "addcdiv", "square"):
    setattr(Tensor, _name + "_", _inplace(_name))


# ---- shapes and sizes
@_method
def logsumexp(self, dim, keepdim=False):
    """log(sum(exp(x))) over dim, shifted by the max (an infinite max is not subtracted), as torch computes it."""
    m = self.amax(dim, True)
    m = (m.abs() == float("inf")).where(creation.zeros_like(m), m).detach()
    out = (self - m).exp().sum(dim, True).log() + m
    return out if keepdim else out.squeeze(dim)


@_method
def multinomial(self, num_samples, replacement=False, generator=None):
    """torch.multinomial from loom's generator: indices drawn with the rows'
    (unnormalized) weights; without replacement by the Gumbel top-k rule."""
    if self.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not self.dtype.is_floating_point:
        raise RuntimeError("multinomial only supports floating-point dtypes for input")
    n = self.shape[-1]
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    p = self._cast(_dt.float32)
    if (p < 0).logical_or(p != p).logical_or(p.abs() == float("inf")).sum()._item():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if (p.sum(-1) <= 0).sum()._item():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    by_cdf = replacement or num_samples == 1
    # a torch.Generator from the shim draws with its own state (shim/torch/_random.py)
    with generator.drawing() if generator is not None else contextlib.nullcontext():
        u = creation.rand(*self.shape[:-1], num_samples) if by_cdf else creation.rand(*self.shape)
    if by_cdf:
        cdf = p.cumsum(-1)
        u = u * cdf[..., -1:]
        # the first index whose cumulative weight passes u: never one of weight 0
        return (cdf.unsqueeze(-2) <= u.unsqueeze(-1)).sum(-1).clamp(max=n - 1)
    keys = p.log() - (-u.clamp(min=1e-20).log()).log()
    return keys.topk(num_samples, -1)[1]


@_method
def nelement(self):
    return self.numel()


@_method
def element_size(self):
    return self.dtype.itemsize


@_method
def type_as(self, other):
    return self.to(other.dtype)


@_method
def view_as(self, other):
    return self.reshape(list(other.shape))


@_method
def reshape_as(self, other):
    return self.reshape(list(other.shape))


@_method
def expand_as(self, other):
    return self.expand(list(other.shape))


# ---- new_* creation: the dtype of self unless given
def _new(fn):
    def new(self, *size, dtype=None, device=None, requires_grad=False, **kwargs):
        return fn(*size, dtype=dtype or self.dtype, device=device, requires_grad=requires_grad, **kwargs)
    return new


Tensor.new_zeros = _new(creation.zeros)
Tensor.new_ones = _new(creation.ones)
Tensor.new_empty = _new(creation.empty)


@_method
def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
    return creation.full(size, fill_value, dtype=dtype or self.dtype, requires_grad=requires_grad)


@_method
def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    return creation.tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)


# ---- copy.deepcopy and pickle
@_method
def __deepcopy__(self, memo):
    if not self.is_leaf:
        raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                           "protocol at the moment")
    if id(self) in memo:
        return memo[id(self)]
    new = self.detach().clone()
    if self.requires_grad:
        new._requires_grad_(True)
    memo[id(self)] = new
    if self.grad is not None:
        new.grad = self.grad.__deepcopy__(memo)
    return new


def rebuild_tensor(array, dtype_name, requires_grad):
    """A tensor of the pickled values (the storage of the views that __reduce__ writes)."""
    t = _C.from_numpy(array)
    dtype = _dt.__members__[dtype_name]
    if t.dtype != dtype:
        t = t._cast(dtype)
    if requires_grad:
        t._requires_grad_(True)
    return t


def rebuild_view(storage, shape, strides, offset, requires_grad):
    """The inverse of Tensor.__reduce__: a view of the storage's tensor, which
    every tensor pickled with it shares (writes through one reach the others)."""
    if isinstance(storage, _Storage):  # copy.copy: no pickling between, a copy of the values
        storage = rebuild_tensor(*storage.__reduce__()[1])
    t = storage.as_strided(list(shape), list(strides), offset)
    if requires_grad:
        t._requires_grad_(True)
    return t


class _Storage:
    """A storage in a pickle: every tensor pickled over it refers to this one
    object, which pickle writes once (its memo) and reads back once."""

    def __init__(self, values):
        self.values = values

    def __reduce__(self):
        value = self.values.detach()
        if value.dtype == _dt.bfloat16:  # float32 holds it exactly
            value = value._cast(_dt.float32)
        return rebuild_tensor, (value.numpy().reshape(-1), self.values.dtype.name, False)


# The storages of tensors being pickled: alive while a pickler's memo holds them.
_storages = weakref.WeakValueDictionary()


@_method
def __reduce__(self):
    """Pickles a view of its storage, so that tensors sharing a storage (a
    tensor and its views) share it again when loaded, as torch's do."""
    base, key = self._storage_base()
    storage = _storages.get(key)
    if storage is None:
        storage = _storages[key] = _Storage(base if base is not None else self)
    if base is None:
        shape = list(self.shape)
        strides = [1] * len(shape)
        for d in range(len(shape) - 2, -1, -1):
            strides[d] = strides[d + 1] * shape[d + 1]
        offset = 0
    else:
        strides, offset = list(self._strides()), self._storage_offset()
    return rebuild_view, (storage, tuple(self.shape), tuple(strides), offset, self.requires_grad)


