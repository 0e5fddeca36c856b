"""torch.Tensor on loom: the loom Tensor, with a missing method reported as
NotImplementedError naming it (e.g. "torch.Tensor.to_sparse is not supported by
loom") instead of a bare AttributeError. Under the shim, dtypes print as torch
prints them (`torch.float32`): scripts print, log and compare these strings."""
from loom import Tensor, dtype
from loom.shim import unsupported_error
from loom.tensor import _DTYPE_NAMES

dtype.__repr__ = dtype.__str__ = lambda self: "torch." + _DTYPE_NAMES[self]


def _missing(self, name):
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(f"'Tensor' object has no attribute '{name}'")
    raise unsupported_error("torch.Tensor", name)


Tensor.__getattr__ = _missing
