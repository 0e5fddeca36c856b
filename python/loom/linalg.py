"""loom.linalg: eigh through LAPACK (Debian's numpy calls the system
LAPACK's ?syevd, as torch does), with torch's signature and output order."""
import collections

import numpy as np

from . import _C
from ._C import Tensor

_Eigh = collections.namedtuple("_Eigh", ["eigenvalues", "eigenvectors"])


def eigh(A, UPLO="L"):
    """Eigenvalues (ascending) and eigenvectors (columns) of symmetric matrices (..., n, n);
    only the UPLO triangle is read."""
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg.eigh(): argument 'A' must be Tensor, not {type(A).__name__}")
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"linalg.eigh: UPLO must be 'L' or 'U', but got {UPLO}")
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.eigh: A must be batches of square matrices, but they are "
                           f"{A.shape[-2] if A.ndim >= 2 else 1} by {A.shape[-1] if A.ndim else 1} matrices")
    if A.dtype not in (_C.dtype.float32, _C.dtype.float64):
        raise RuntimeError(f"linalg.eigh: Expected a floating point or complex tensor as input. Got {A.dtype}")
    if A.requires_grad and _C.is_grad_enabled():
        raise NotImplementedError("loom.linalg.eigh does not compute gradients (call it under no_grad)")
    values, vectors = np.linalg.eigh(A.numpy(), UPLO=UPLO)
    return _Eigh(_C.from_numpy(np.ascontiguousarray(values)), _C.from_numpy(np.ascontiguousarray(vectors)))
