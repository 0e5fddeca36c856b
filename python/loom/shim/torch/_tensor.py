"""torch.Tensor and torch.dtype on loom. torch.Tensor is the subclass of
loom.Tensor that loom's engine makes its tensors while the shim presents them
(loom._C.PresentedTensor); torch's dtypes are instances of a loom.dtype
subclass, which the engine returns in place of its own. Importing the shim
turns that presentation on and changes nothing of loom.Tensor or loom.dtype.

A missing torch.Tensor method raises NotImplementedError naming it (e.g.
"torch.Tensor.to_sparse is not supported by loom") instead of a bare
AttributeError; torch.dtype prints as torch prints it (`torch.float32`):
scripts print, log and compare these strings, and `x.dtype is torch.float32`
holds, as in torch."""
import loom
from loom import _C
from loom.shim import unsupported_error


class dtype(loom.dtype):
    __module__ = "torch"

    def __repr__(self):
        return "torch." + self.name

    __str__ = __repr__

    # Equal to loom's dtype of the same value (and hashing as it does), so
    # either kind keys the same dict entries and compares as one.
    def __eq__(self, other):
        return isinstance(other, loom.dtype) and int(self) == int(other)

    def __ne__(self, other):
        return not self == other

    __hash__ = loom.dtype.__hash__

    def __reduce__(self):
        return _dtype_named, (self.name,)


DTYPES = {name: dtype(int(value)) for name, value in loom.dtype.__members__.items()}


def _dtype_named(name):
    return DTYPES[name]


def _missing(tensor, name):
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(f"'Tensor' object has no attribute '{name}'")
    raise unsupported_error("torch.Tensor", name)


Tensor = _C.PresentedTensor
_C._set_presentation("torch", DTYPES, _missing)
