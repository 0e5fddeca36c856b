"""torch.nn.parallel: DistributedDataParallel."""
from loom.shim import unsupported
from .distributed import DistributedDataParallel  # noqa: F401

__getattr__ = unsupported(__name__)
