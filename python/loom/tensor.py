"""Tensor methods written in Python over the C++ ones: operators, indexing,
in-place updates, conversions and printing, with torch's spelling."""
import collections
import numbers

import numpy as np

from . import _C
from ._C import Tensor

_dt = _C.dtype
_DTYPE_NAMES = {v: k for k, v in _dt.__members__.items()}
_dt.__repr__ = _dt.__str__ = lambda self: "loom." + _DTYPE_NAMES[self]
_MinMax = collections.namedtuple("_MinMax", ["values", "indices"])


def _method(name):
    def install(fn):
        setattr(Tensor, name, fn)
        return fn
    return install


# ---- operators
for _name, _impl in {
    "__add__": "add", "__radd__": "add", "__sub__": "sub", "__rsub__": "_rsub", "__mul__": "mul",
    "__rmul__": "mul", "__truediv__": "div", "__rtruediv__": "_rdiv", "__pow__": "pow", "__rpow__": "_rpow",
    "__floordiv__": "floor_divide", "__rfloordiv__": "_rfloor_divide", "__mod__": "remainder",
    "__rmod__": "_rremainder", "__eq__": "eq", "__ne__": "ne", "__lt__": "lt", "__le__": "le", "__gt__": "gt",
    "__ge__": "ge", "__and__": "bitwise_and", "__rand__": "bitwise_and", "__or__": "bitwise_or",
    "__ror__": "bitwise_or", "__xor__": "bitwise_xor", "__rxor__": "bitwise_xor",
    "__lshift__": "bitwise_left_shift", "__rshift__": "bitwise_right_shift",
}.items():
    setattr(Tensor, _name, getattr(Tensor, _impl))
Tensor.__neg__ = Tensor.neg
Tensor.__abs__ = Tensor.abs
Tensor.__invert__ = Tensor.bitwise_not
Tensor.__matmul__ = Tensor.matmul
Tensor.__hash__ = object.__hash__  # tensors hash by identity, as in torch
Tensor.__array_priority__ = 1000  # numpy scalars on the left defer to the tensor's reflected operators


@_method("__rmatmul__")
def _rmatmul(self, other):
    return other.matmul(self)


for _name, _op in {"__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_", "__itruediv__": "div_"}.items():
    setattr(Tensor, _name, (lambda op: lambda self, other: getattr(self, op)(other))(_op))


# ---- properties and conversions
Tensor.requires_grad = property(Tensor.requires_grad.fget, lambda self, v: self._requires_grad_(bool(v)))
Tensor.T = property(lambda self: self.permute(list(range(self.ndim))[::-1]))
Tensor.is_floating_point = lambda self: self.dtype.is_floating_point


class _GradFn:
    def __init__(self, name):
        self._name = name

    def name(self):
        return self._name

    def __repr__(self):
        return f"<{self._name}>"


Tensor.grad_fn = property(lambda self: _GradFn(self._grad_fn_name) if self._grad_fn_name else None)


@_method("requires_grad_")
def requires_grad_(self, requires_grad=True):
    self._requires_grad_(requires_grad)
    return self


@_method("item")
def item(self):
    return self._item()


@_method("tolist")
def tolist(self):
    return self.numpy().tolist()


@_method("__bool__")
def _bool(self):
    if self.numel() != 1:
        raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous")
    return bool(self._item())


Tensor.__float__ = lambda self: float(self._item())
Tensor.__int__ = lambda self: int(self._item())


@_method("__index__")
def _index(self):
    if self.dtype.is_floating_point or self.numel() != 1:
        raise TypeError("only integer tensors of a single element can be converted to an index")
    return int(self._item())


@_method("__array__")
def _array(self, dtype=None):
    a = self.numpy()
    return a if dtype is None else a.astype(dtype)


for _name, _dtype in {"float": _dt.float32, "double": _dt.float64, "half": _dt.float16, "bfloat16": _dt.bfloat16,
                      "long": _dt.int64, "int": _dt.int32, "short": _dt.int16, "char": _dt.int8,
                      "byte": _dt.uint8, "bool": _dt.bool}.items():
    setattr(Tensor, _name, (lambda d: lambda self: self.to(d))(_dtype))


@_method("type")
def _type(self, dtype=None):
    if dtype is None:
        return str(self.dtype)
    return self.to(dtype)


@_method("clone")
def clone(self):
    """A copy that later in-place updates of either tensor do not reach."""
    return self.mul(True)


def _varargs(args):
    """f(2, 3), f((2, 3)) and f([2, 3]) all mean [2, 3], as in torch."""
    if len(args) == 1 and not isinstance(args[0], numbers.Integral):
        args = tuple(args[0])
    return list(args)


def _dims_varargs(name):
    """x.flip(0), x.flip(0, 1) and x.flip((0, 1)) all mean the same dims, as in torch."""
    impl = getattr(Tensor, name)

    def call(self, *dims):
        return impl(self, _varargs(dims))
    call.__name__ = name
    return call


for _name in ("reshape", "permute", "expand", "flip", "repeat", "tile"):
    setattr(Tensor, _name, _dims_varargs(_name))


def _viewable(shape, strides, new):
    """Whether `new` can view a tensor of this shape and these strides (torch's
    computeStride: each run of dims contiguous with each other must split into
    whole runs of the new shape)."""
    if 0 in shape or not shape:
        return True
    view_d, base, numel, view_numel = len(new) - 1, strides[-1], 1, 1
    for d in range(len(shape) - 1, -1, -1):
        numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != numel * base):
            while view_d >= 0 and (view_numel < numel or new[view_d] == 1):
                view_numel *= new[view_d]
                view_d -= 1
            if view_numel != numel:
                return False
            if d > 0:
                base, numel, view_numel = strides[d - 1], 1, 1
    return view_d == -1


@_method("view")
def view(self, *shape):
    if len(shape) == 1 and isinstance(shape[0], _dt):
        raise NotImplementedError("Tensor.view(dtype) is not supported by loom")
    out = self.reshape(*shape)  # raises for a shape that does not fit the size
    if not _viewable(list(self.shape), list(self._strides()), list(out.shape)):
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one dimension "
                           "spans across two contiguous subspaces). Use .reshape(...) instead.")
    return out


@_method("t")
def t(self):
    if self.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return self if self.ndim < 2 else self.transpose(0, 1)


@_method("max")
def _max(self, dim=None, keepdim=False):
    if isinstance(dim, Tensor):
        return self.maximum(dim)
    return self._max_all() if dim is None else _MinMax(*self._max_dim(dim, keepdim))


@_method("min")
def _min(self, dim=None, keepdim=False):
    if isinstance(dim, Tensor):
        return self.minimum(dim)
    return self._min_all() if dim is None else _MinMax(*self._min_dim(dim, keepdim))


def _correction(unbiased, correction):
    if correction is not None:
        return int(correction)
    return 1 if unbiased is None or unbiased else 0


@_method("std_mean")
def std_mean(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return self._std_mean(dim, _correction(unbiased, correction), keepdim)


@_method("cov")
def cov(self, *, correction=1, fweights=None, aweights=None):
    if fweights is not None or aweights is not None:
        raise NotImplementedError("cov with fweights or aweights is not supported by loom")
    return self._cov(int(correction))


# ---- in-place updates: the tensor (and every view sharing its storage) takes the new value
@_method("copy_")
def copy_(self, src):
    self._assign(src if isinstance(src, Tensor) else _C.full([], src, None))
    return self


def _inplace(name):
    def update(self, *args, **kwargs):
        # torch's checks (an operand partly sharing the written memory, the leaf rules) before computing
        operands = [a for a in args if isinstance(a, Tensor)]
        if kwargs:
            operands += [a for a in kwargs.values() if isinstance(a, Tensor)]
        self._check_in_place(operands)
        self._assign(getattr(self, name)(*args, **kwargs))
        return self
    update.__name__ = name + "_"
    return update


for _name in ("add", "sub", "mul", "div", "pow", "clamp", "neg", "abs", "exp", "log", "sqrt", "sigmoid", "tanh",
              "relu", "masked_fill", "floor_divide", "remainder", "fmod"):
    setattr(Tensor, _name + "_", _inplace(_name))


@_method("fill_")
def fill_(self, value):
    self._assign(_C.full(list(self.shape), value, self.dtype))
    return self


@_method("zero_")
def zero_(self):
    return self.fill_(0)


# ---- indexing
def _is_int(x):
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _index_tensor(it):
    if isinstance(it, Tensor):
        return it
    return _C.from_numpy(np.asarray(it, dtype=np.bool_ if all(isinstance(v, bool) for v in it) else np.int64))


def _consumed(it):
    if it is None or it is Ellipsis:
        return 0
    if isinstance(it, Tensor) and it.dtype == _dt.bool:
        return it.ndim
    return 1


def _split_index(self, idx):
    """The view that an index's ints, slices, None and ... select, and the index list
    (one entry per dim of that view: None or a tensor, a mask spanning its ndim dims)
    that its tensors leave for advanced indexing; None when it has no tensor."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    if sum(1 for it in idx if it is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    idx = tuple(_index_tensor(it) if isinstance(it, list) else it for it in idx)
    specified = sum(_consumed(it) for it in idx)
    if specified > self.ndim:
        raise IndexError(f"too many indices for tensor of dimension {self.ndim}")
    out, dim, listing = self, 0, []
    for it in idx:
        if it is None:
            out = out.unsqueeze(dim)
            listing.append(None)
            dim += 1
        elif it is Ellipsis:
            listing += [None] * (self.ndim - specified)
            dim += self.ndim - specified
        elif _is_int(it):
            size = out.shape[dim]
            if not -size <= it < size:
                raise IndexError(f"index {it} is out of bounds for dimension {dim} with size {size}")
            it = it + size if it < 0 else it
            out = out.slice(dim, it, it + 1).squeeze(dim)
        elif isinstance(it, slice):
            step = 1 if it.step is None else it.step
            if step <= 0:
                raise ValueError("step must be greater than zero")
            out = out.slice(dim, it.start, it.stop, step)
            listing.append(None)
            dim += 1
        elif isinstance(it, Tensor):
            listing.append(it)
            dim += _consumed(it)
        elif isinstance(it, bool):
            raise NotImplementedError("indexing with a Python bool is not supported by loom")
        else:
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or bool tensors are "
                             f"valid indices (got {type(it).__name__})")
    return out, (listing if any(isinstance(e, Tensor) for e in listing) else None)


def _apply_index(self, idx):
    """Basic indexing (ints, slices, None, ...) gives a view; tensor indices give a copy."""
    view, listing = _split_index(self, idx)
    return view if listing is None else view._index_list(listing)


Tensor.__getitem__ = _apply_index


def _lone_mask(view, listing):
    """The bool mask of an index list that holds only it, shaped to broadcast over
    the view (so that a number can be written with masked_fill); else None."""
    tensors = [(d, e) for d, e in enumerate(listing) if isinstance(e, Tensor)]
    if len(tensors) != 1 or tensors[0][1].dtype != _dt.bool or tensors[0][1].ndim == 0:
        return None
    at, mask = tensors[0]
    covered = list(view.shape[at:at + mask.ndim])
    for j, (m, s) in enumerate(zip(mask.shape, covered)):
        if m != s:
            raise IndexError(f"The shape of the mask {list(mask.shape)} at index {j} does not match the shape of the "
                             f"indexed tensor {list(view.shape)} at index {at + j}")
    return mask.reshape([1] * at + list(mask.shape) + [1] * (view.ndim - at - mask.ndim))


@_method("__setitem__")
def _setitem(self, idx, value):
    view, listing = _split_index(self, idx)
    if listing is None:
        view._assign(value if isinstance(value, Tensor) else _C.full([], value, None))
        return
    if not isinstance(value, Tensor):
        mask = _lone_mask(view, listing)
        if mask is not None:  # no host read of the mask
            view._assign(view.masked_fill(mask, value))
            return
        value = _C.full([], value, view.dtype)
    view._check_in_place([value])
    view._assign(view._index_put(listing, value, False))


@_method("index_put")
def index_put(self, indices, values, accumulate=False):
    return self._index_put(list(indices), values, accumulate)


@_method("index_put_")
def index_put_(self, indices, values, accumulate=False):
    self._check_in_place([values] + [i for i in indices if isinstance(i, Tensor)])
    self._assign(self._index_put(list(indices), values, accumulate))
    return self


# ---- printing
@_method("__repr__")
def _repr(self):
    values = (self if self.dtype != _dt.bfloat16 else self._cast(_dt.float32)).numpy()
    body = np.array2string(values, separator=", ", prefix="tensor(")
    extra = ""
    if self.dtype not in (_dt.float32, _dt.int64, _dt.bool):
        extra += f", dtype={self.dtype!r}"
    if self.requires_grad:
        extra += f", grad_fn={self.grad_fn!r}" if self.grad_fn else ", requires_grad=True"
    return f"tensor({body}{extra})"


Tensor.__str__ = _repr
