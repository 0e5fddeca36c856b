"""loom: a lazy tensor engine that computes what PyTorch computes.

Tensors build a graph; nothing runs until a value is needed (``.numpy()``,
``.item()``, ``print``) or ``.realize()`` is called. The API follows torch's
spelling: ``loom.zeros(2, 3)``, ``x.sum(dim=1)``, ``x[1:, None]``,
``loss.backward()``, ``with loom.no_grad():``. Errors are the exception types
torch raises, with loom's messages.
"""
from . import _C
from ._C import Tensor, dtype, promote_types, manual_seed, realize_all
from ._C import run_stats, reset_run_stats, memory_stats, reset_peak_memory
from . import tensor as _tensor_methods  # noqa: F401  (installs the Python-level Tensor methods)
from . import tensor_compat as _tensor_compat  # noqa: F401  (devices, .data, deepcopy, pickling)
from . import tensor_more as _tensor_more  # noqa: F401  (rounding, any/all, div modes, shaping helpers)
from .layout import (memory_format, contiguous_format, channels_last, channels_last_3d, preserve_format,
                     empty_strided)
from .devices import device
from .autograd import no_grad, enable_grad, set_grad_enabled, is_grad_enabled
from . import autograd
from . import nn
from .jit import Jit, jit
from .kernels import schedule
from . import linalg
from .creation import (tensor, as_tensor, from_numpy, zeros, ones, empty, full, arange, rand, randn, randint,
                       randperm, zeros_like, ones_like, empty_like, full_like, rand_like, randn_like, cat, stack,
                       where)
from .functions import *  # noqa: F401,F403  (exp, sum, matmul, ... as module functions)

float32 = float = dtype.float32
float64 = double = dtype.float64
float16 = half = dtype.float16
bfloat16 = dtype.bfloat16
int64 = long = dtype.int64
int32 = int = dtype.int32
int16 = short = dtype.int16
int8 = dtype.int8
uint8 = dtype.uint8
bool = dtype.bool
