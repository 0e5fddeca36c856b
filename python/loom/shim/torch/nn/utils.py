"""torch.nn.utils: gradient clipping."""
from loom import no_grad, stack, Tensor
from loom.shim import unsupported


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scales every gradient by max_norm / (total norm + 1e-6) when that is below 1; returns the total norm."""
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        from loom import tensor
        return tensor(0.0)
    with no_grad():
        if norm_type == float("inf"):
            total = stack([g.detach().abs().amax() for g in grads]).amax()
        else:
            total = stack([g.detach().norm(norm_type) for g in grads]).norm(norm_type)
        if error_if_nonfinite and not bool((total == total).item() and abs(total.item()) != float("inf")):
            raise RuntimeError(f"The total norm of order {float(norm_type)} for gradients from `parameters` is "
                               "non-finite, so it cannot be clipped.")
        coef = (max_norm / (total + 1e-6)).clamp(None, 1.0)
        for p in params:
            if p.grad is not None:
                p.grad = p.grad.detach() * coef.to(p.grad.dtype)
    return total


def clip_grad_value_(parameters, clip_value):
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    for p in params:
        if p.grad is not None:
            p.grad = p.grad.detach().clamp(-clip_value, clip_value)


__getattr__ = unsupported(__name__)
