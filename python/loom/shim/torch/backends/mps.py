"""torch.backends.mps: never available."""
from loom.shim import unsupported


def is_available():
    return False


def is_built():
    return False


__getattr__ = unsupported(__name__)
