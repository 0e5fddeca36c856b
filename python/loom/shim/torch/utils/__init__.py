"""torch.utils: data loading."""
from . import data  # noqa: F401
from loom.shim import unsupported

__getattr__ = unsupported(__name__)
