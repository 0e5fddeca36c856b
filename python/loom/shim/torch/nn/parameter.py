"""torch.nn.Parameter: a leaf tensor that modules register as a parameter."""
from loom import empty, no_grad
from loom.shim import unsupported
from .._tensor import Tensor


class Parameter(Tensor):
    """Parameter(data, requires_grad=True): shares data's storage, as torch's does, and is a leaf."""

    def __init__(self, data=None, requires_grad=True):
        Tensor.__init__(self, (empty(0) if data is None else data).detach())
        if requires_grad:
            self._requires_grad_(True)

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        with no_grad():
            result = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce__(self):
        return _rebuild_parameter, (self.detach(), self.requires_grad)


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


__getattr__ = unsupported(__name__)
