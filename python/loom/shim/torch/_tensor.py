"""torch.Tensor on loom: the loom Tensor, with a missing method reported as
NotImplementedError naming it (e.g. "torch.Tensor.to_sparse is not supported by
loom") instead of a bare AttributeError."""
from loom import Tensor
from loom.shim import UnsupportedError


def _missing(self, name):
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(f"'Tensor' object has no attribute '{name}'")
    raise UnsupportedError(f"torch.Tensor.{name} is not supported by loom")


Tensor.__getattr__ = _missing
