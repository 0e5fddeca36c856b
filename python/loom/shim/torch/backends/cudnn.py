"""torch.backends.cudnn: flags accepted; loom has no cuDNN."""
from loom.shim import unsupported

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available():
    return False


def version():
    return None


__getattr__ = unsupported(__name__)
