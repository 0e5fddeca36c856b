"""Module-level functions (loom.exp(x), loom.sum(x, dim=1), ...) that call the
Tensor method of the same name, as torch's functions do."""
from ._C import Tensor

_METHODS = (
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
    "logical_or", "logical_not", "floor_divide", "remainder", "fmod", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_not", "neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "relu", "erf",
    "clamp", "matmul", "sum", "prod", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "var", "std",
    "cumsum", "cumprod", "sort", "argsort", "topk", "gather", "scatter", "scatter_add", "index_select",
    "masked_fill", "masked_select", "reshape", "permute", "flatten", "unflatten", "squeeze", "unsqueeze",
    "transpose", "flip", "roll", "tril", "triu", "split", "chunk", "unbind", "tile", "as_strided", "numel",
    "clone", "t", "std_mean", "cov", "multinomial",
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
clip = globals()["clamp"]

__all__ = list(_METHODS) + ["clip"]
