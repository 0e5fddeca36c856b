"""torch.backends: flags scripts set (cudnn.benchmark, matmul.allow_tf32) are
accepted and change nothing loom computes."""
from . import cudnn, cuda, mps  # noqa: F401
from loom.shim import unsupported

__getattr__ = unsupported(__name__)
