"""`torch` on loom: tensors, dtypes, creation, math, grad mode, devices,
seeding, save/load, and the subpackages nn, optim, utils.data, cuda, backends.
A name torch has and this package lacks raises NotImplementedError naming it."""
import builtins as _builtins
import math as _math

import loom as _loom
from loom import _C
from loom.shim import unsupported as _unsupported

from ._tensor import Tensor, dtype, DTYPES as _DTYPES
from loom import (device, tensor, as_tensor, from_numpy, zeros, ones, empty, full, arange, rand,
                  randn, randint, randperm, zeros_like, ones_like, empty_like, full_like, rand_like, randn_like,
                  cat, stack, where, no_grad, enable_grad, set_grad_enabled, is_grad_enabled, promote_types,
                  memory_format, contiguous_format, channels_last, channels_last_3d, preserve_format, empty_strided)
from loom.functions import *  # noqa: F401,F403  (exp, sum, matmul, ... as functions)

float32, float64, float16, bfloat16 = (_DTYPES[n] for n in ("float32", "float64", "float16", "bfloat16"))
int64, int32, int16, int8, uint8, bool = (_DTYPES[n] for n in ("int64", "int32", "int16", "int8", "uint8", "bool"))
float, double, half, long, int, short = float32, float64, float16, int64, int32, int16

__version__ = "1.13.1+loom"

from ._random import (Generator, default_generator, manual_seed, seed, initial_seed, get_rng_state,  # noqa: E402,F401
                      set_rng_state, with_generator as _with_generator)
from .serialization import save, load  # noqa: E402
from ._compile import compile  # noqa: E402
from . import autograd, cuda, backends, distributed, linalg, nn, optim, utils  # noqa: E402,F401
from .nn.parameter import Parameter as _Parameter  # noqa: E402,F401

concatenate = concat = cat
rand, randn, randint, randperm = (_with_generator(f) for f in (rand, randn, randint, randperm))
inference_mode = no_grad
Size = tuple
e, pi, inf, nan = _math.e, _math.pi, _math.inf, _math.nan


def is_tensor(obj):
    return isinstance(obj, Tensor)


def is_floating_point(input):
    return input.dtype.is_floating_point


def numel(input):
    return input.numel()


_threads = [2]


def set_num_threads(n):
    _threads[0] = n


def get_num_threads():
    return _threads[0]


def set_printoptions(*args, **kwargs):
    pass


def set_default_dtype(d):
    if d != float32:
        raise NotImplementedError(f"torch.set_default_dtype({d}) is not supported by loom (float32 only)")


def get_default_dtype():
    return float32


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    if steps == 1:
        t = full([1], start, dtype=dtype or float32)
    else:
        step = (end - start) / (steps - 1)
        t = arange(steps, dtype=float64) * step + start
        t = t.to(dtype or float32)
    return t.requires_grad_(requires_grad) if requires_grad else t


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    m = n if m is None else m
    t = (arange(n).unsqueeze(1) == arange(m).unsqueeze(0)).to(dtype or float32)
    return t.requires_grad_(requires_grad) if requires_grad else t


def clamp(input, min=None, max=None):
    return input.clamp(min, max)


clip = clamp


def flatten(input, start_dim=0, end_dim=-1):
    return input.flatten(start_dim, end_dim)


def lerp(input, end, weight):
    return input.lerp(end, weight)


def addcmul(input, tensor1, tensor2, value=1):
    return input.addcmul(tensor1, tensor2, value=value)


def addcdiv(input, tensor1, tensor2, value=1):
    return input.addcdiv(tensor1, tensor2, value=value)


def square(input):
    return input.square()


def norm(input, p="fro", dim=None, keepdim=False):
    return input.norm(p, dim, keepdim)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    import numpy as np
    return _builtins.bool(np.allclose(input.numpy(), other.numpy(), rtol=rtol, atol=atol, equal_nan=equal_nan))


def equal(input, other):
    return tuple(input.shape) == tuple(other.shape) and (input != other).sum().item() == 0


__getattr__ = _unsupported(__name__)
