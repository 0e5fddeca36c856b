"""Grad mode and loom.autograd.grad, as torch spells them."""
import functools

from . import _C

is_grad_enabled = _C.is_grad_enabled


class _GradMode:
    """A context manager and decorator that sets grad mode, then restores it."""

    _mode = True

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C.set_grad_enabled(self._mode)
        return self

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)
        return wrapped


class no_grad(_GradMode):
    """torch.no_grad: operations inside record nothing for backward."""
    _mode = False


class enable_grad(_GradMode):
    """torch.enable_grad: recording on, inside a no_grad region too."""
    _mode = True


class set_grad_enabled(_GradMode):
    """torch.set_grad_enabled(mode): sets the mode now; as a context manager, restores it on exit."""

    def __init__(self, mode):
        self._prev = _C.is_grad_enabled()
        self._mode = mode
        _C.set_grad_enabled(mode)

    def __enter__(self):
        return self


def _tensor_list(x):
    """torch's tensors-or-sequence arguments as a list: one tensor, or the sequence's items."""
    from ._C import Tensor
    return [x] if isinstance(x, Tensor) else list(x)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """torch.autograd.backward: accumulates the gradients of `tensors` (weighted by `grad_tensors`) into
    the .grad of the leaves, realizing them and the tensors together."""
    tensors = _tensor_list(tensors)
    grad_tensors = [] if grad_tensors is None else _tensor_list(grad_tensors)
    if create_graph:
        raise NotImplementedError("torch.autograd.backward(create_graph=True) is not supported by loom")
    if inputs is not None:
        raise NotImplementedError("torch.autograd.backward(inputs=...) is not supported by loom")
    if any(g is None for g in grad_tensors):
        if not all(g is None for g in grad_tensors):
            raise NotImplementedError("torch.autograd.backward with some grad_tensors None is not supported by loom")
        grad_tensors = []
    _C.backward(tensors, grad_tensors, bool(retain_graph))


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False):
    """torch.autograd.grad: gradients of outputs with respect to inputs, nothing accumulated into .grad."""
    from ._C import Tensor
    single = isinstance(inputs, Tensor)
    outputs, inputs = _tensor_list(outputs), _tensor_list(inputs)
    grad_outputs = [] if grad_outputs is None else _tensor_list(grad_outputs)
    if create_graph:
        raise NotImplementedError("torch.autograd.grad(create_graph=True) is not supported by loom")
    return tuple(_C.grad(outputs, inputs, grad_outputs, allow_unused, bool(retain_graph)))
