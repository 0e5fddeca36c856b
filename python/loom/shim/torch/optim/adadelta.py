"""torch.optim.Adadelta (torch's single-tensor algorithm)."""
from loom import no_grad, zeros_like
from loom.shim import unsupported
from .optimizer import Optimizer


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, maximize=False,
                 differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure=None):
        loss = self._loss_of(closure)
        for group in self.param_groups:
            lr, rho, eps, wd = group["lr"], group["rho"], group["eps"], group["weight_decay"]
            for p, grad, state in self._with_grads(group):
                if not state:
                    state["step"] = 0
                    state["square_avg"] = zeros_like(p)
                    state["acc_delta"] = zeros_like(p)
                state["step"] += 1
                if wd != 0:
                    grad = grad.add(p.detach(), alpha=wd)
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                # the running averages of squared gradients and of squared updates
                square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
                update = (acc_delta + eps).sqrt() / (square_avg + eps).sqrt() * grad
                acc_delta.mul_(rho).addcmul_(update, update, value=1 - rho)
                p.add_(update, alpha=-lr)
        self._finish_step()
        return loss


__getattr__ = unsupported(__name__)
