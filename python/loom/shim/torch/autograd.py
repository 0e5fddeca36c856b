"""torch.autograd: backward, grad, grad mode, and the no_grad family."""
from loom.autograd import backward, grad, no_grad, enable_grad, set_grad_enabled, is_grad_enabled  # noqa: F401
from loom.shim import unsupported

__getattr__ = unsupported(__name__)
