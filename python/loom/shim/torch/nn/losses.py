"""More of torch.nn's losses, composed from loom ops with torch's formulas, checks and
reductions: binary_cross_entropy, smooth_l1_loss, huber_loss, kl_div, margin_ranking_loss,
soft_margin_loss, and their modules."""
import warnings

from loom import where, zeros_like
from . import functional as F
from .layers import _Loss

_REDUCTIONS = ("none", "mean", "sum")


def _reduce(loss, reduction, allowed=_REDUCTIONS):
    if reduction not in allowed:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return loss if reduction == "none" else loss.sum() if reduction == "sum" else loss.mean()


def _same_size(input, target):
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({tuple(target.shape)}) that is different to the input size "
                         f"({tuple(input.shape)}) is deprecated. Please ensure they have the same size.")


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(t log x + (1 - t) log(1 - x)), each log at least -100 (torch's clamp)."""
    reduction = F._reduction(size_average, reduce, reduction)
    _same_size(input, target)
    if ((input < 0).logical_or(input > 1)).any().item():
        raise RuntimeError("all elements of input should be between 0 and 1")
    loss = -(target * input.log().clamp(min=-100) + (1 - target) * (1 - input).log().clamp(min=-100))
    return _reduce(loss if weight is None else loss * weight, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    reduction = F._reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = (input - target).abs()
    if beta == 0:
        return _reduce(d, reduction)
    return _reduce(where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)


def huber_loss(input, target, reduction="mean", delta=1.0):
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    d = (input - target).abs()
    return _reduce(where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)), reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target * (log target - input), 0 where target is 0 (log_target: exp(t) * (t - input))."""
    reduction = F._reduction(size_average, reduce, reduction)
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.")
    if log_target:
        loss = target.exp() * (target - input)
    else:  # torch's xlogy(t, t) - t * input: 0 log 0 is 0
        zero = target == 0
        xlogy = where(zero, zeros_like(target), target * where(zero, zeros_like(target) + 1, target).log())
        loss = xlogy - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.dim() else 1)
    return _reduce(loss, reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    reduction = F._reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {tuple(input1.shape)}, input2: {tuple(input2.shape)}, "
                           f"target: {tuple(target.shape)} ")
    return _reduce((-target * (input1 - input2) + margin).clamp(min=0), reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-y x))."""
    reduction = F._reduction(size_average, reduce, reduction)
    return _reduce((1 + (-target * input).exp()).log(), reduction)


class BCELoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)

    def forward(self, input, target):
        return binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class MarginRankingLoss(_Loss):
    def __init__(self, margin=0.0, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    def forward(self, input, target):
        return soft_margin_loss(input, target, reduction=self.reduction)
