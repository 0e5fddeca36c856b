"""torch.backends.cuda: matmul flags accepted."""
import types

from loom.shim import unsupported

matmul = types.SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True)


def is_built():
    return False


__getattr__ = unsupported(__name__)
