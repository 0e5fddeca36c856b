"""torch.linalg on loom: eigh (LAPACK, through loom.linalg)."""
from loom.linalg import eigh  # noqa: F401
from loom.shim import unsupported as _unsupported

__getattr__ = _unsupported(__name__)
