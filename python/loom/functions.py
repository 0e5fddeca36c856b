"""Module-level functions (loom.exp(x), loom.sum(x, dim=1), ...) that call the
Tensor method of the same name, as torch's functions do."""
import builtins

from ._C import UNARY_METHODS, Tensor

_METHODS = UNARY_METHODS + (
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
    "logical_or", "logical_not", "floor_divide", "remainder", "fmod", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_not", "clamp", "matmul", "sum", "prod", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "var", "std",
    "cumsum", "cumprod", "sort", "argsort", "topk", "gather", "scatter", "scatter_add", "index_select",
    "masked_fill", "masked_select", "reshape", "permute", "flatten", "unflatten", "squeeze", "unsqueeze",
    "transpose", "flip", "roll", "tril", "triu", "split", "chunk", "unbind", "tile", "as_strided", "numel",
    "clone", "t", "std_mean", "cov", "multinomial", "logsumexp", "trunc", "fix", "floor", "ceil", "round",
    "sign", "isnan", "isinf", "isfinite", "any", "all", "softmax", "log_softmax", "divide", "clip", "movedim",
    "moveaxis", "repeat_interleave", "tensor_split", "rot90", "nonzero", "median", "var_mean", "narrow", "select",
    "swapaxes", "swapdims", "mm", "bmm", "mode", "quantile", "tensordot",
)


def _function(name):
    def call(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
        return getattr(input, name)(*args, **kwargs)
    call.__name__ = name
    call.__qualname__ = name
    return call


for _name in _METHODS:
    globals()[_name] = _function(_name)


def einsum(equation, *operands):
    """torch.einsum: each operand's subscripts placed on one axis per letter
    (`...` for the broadcast dims), the product summed over the letters the
    output lacks (implicit output: the letters seen once, in order). A letter
    twice in one operand (a diagonal) is not supported."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError(f"einsum(): {len(terms)} subscripts for {len(operands)} operands")
    ell = builtins.max((op.ndim - len(t.replace("...", "")) for t, op in zip(terms, operands) if "..." in t), default=0)
    dots = [chr(0x100 + i) for i in range(ell)]  # letters for the broadcast dims
    labels = []
    for t, op in zip(terms, operands):
        own = list(t.replace("...", "."))
        if "." in own:
            at = own.index(".")
            n = op.ndim - (len(own) - 1)
            own[at:at + 1] = dots[ell - n:]
        if len(own) != op.ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(own)}) does not match "
                               f"the number of dimensions ({op.ndim}) for operand {len(labels)}")
        if len(set(own)) != len(own):
            raise NotImplementedError("einsum() with a subscript repeated in one operand is not supported by loom")
        labels.append(own)
    sizes = {}
    for k, (own, op) in enumerate(zip(labels, operands)):
        for letter, n in zip(own, op.shape):
            seen = sizes.get(letter, 1)
            if n != 1 and seen != 1 and n != seen:
                raise RuntimeError(f"einsum(): subscript {letter} has size {n} for operand {k} which does not "
                                   f"broadcast with previously seen size {seen}")
            sizes[letter] = n if n != 1 else seen
    if arrow:
        out = list(rhs.replace("...", "."))
        if "." in out:
            at = out.index(".")
            out[at:at + 1] = dots
        for letter in out:
            if letter not in sizes:
                raise RuntimeError(f"einsum(): output subscript {letter} does not appear in the equation for any "
                                   f"input operand")
    else:
        counts = {}
        for own in labels:
            for letter in own:
                counts[letter] = counts.get(letter, 0) + 1
        out = dots + sorted(l for l, c in counts.items() if c == 1 and l not in dots)
    order = out + [l for l in sizes if l not in out]
    product = None
    for own, op in zip(labels, operands):
        # this operand's axes in `order`, a size-1 axis for each letter it lacks
        x = op.permute(*[own.index(l) for l in order if l in own])
        x = x.reshape([op.shape[own.index(l)] if l in own else 1 for l in order])
        product = x if product is None else product * x
    summed = list(range(len(out), len(order)))
    return product.sum(summed) if summed else product  # one operand, nothing summed: a view, as in torch


__all__ = list(_METHODS) + ["einsum"]
